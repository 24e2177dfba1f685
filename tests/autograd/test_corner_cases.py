"""Corner cases of autograd where a gradient or an error could silently differ from PyTorch's
(zero bases, create_graph, custom Functions, views made without grad...), each compared with
PyTorch.

Found by PyTorch's own TestAutograd run against nbgrad and by differential testing; each test
runs the same program in nbgrad and in torch and compares what a user would see.
"""

import warnings
import weakref

import numpy as np
import pytest
import torch

import nbgrad as ng


def _close(a, b):
    a = a.detach().numpy() if isinstance(a, ng.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("base", ["tensor0", 0, 0.0, -2.0, 2.0, "tensor_mixed"])
def test_pow_exponent_gradient_at_base_zero(base):
    """d(a ** b)/db where a is 0: -inf for b < 0 and 0 for b >= 0, first and second order,
    with no NumPy warning."""

    def run(lib):
        b = lib.tensor([-1.0, 0.0, 1.0, 0.5, 2.0], requires_grad=True)
        if base == "tensor0":
            a = lib.zeros(5)
        elif base == "tensor_mixed":
            a = lib.tensor([0.0, 3.0, 0.0, -1.0, 0.0])
        else:
            a = base
        c = (a**b).sum()
        (g,) = lib.autograd.grad(c, b, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), b)
        return g, gg

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g, gg = run(ng)
    tg, tgg = run(torch)
    _close(g, tg)
    _close(gg, tgg)


def test_constants_as_pytorch():
    for name in ("inf", "nan", "e", "pi"):
        assert repr(getattr(ng, name)) == repr(getattr(torch, name)), name
    assert ng.newaxis is torch.newaxis


@pytest.mark.parametrize("where", ["forward", "backward", "both"])
def test_saved_tensors_hooks_double_backward_flows_to_the_original(where):
    """A pack hook that changes the value changes what backward computes with, but a gradient
    taken through the unpacked tensor flows to the saved original, not through the hook."""

    def run(lib):
        hooks = lib.autograd.graph.saved_tensors_hooks(lambda x: 2 * x, lambda x: x)
        lib.manual_seed(0)
        a = lib.tensor([0.5, -1.5, 2.0, 3.0], requires_grad=True)
        b = lib.tensor([1.0, 2.0, -0.5, 0.25], requires_grad=True)
        if where in ("forward", "both"):
            with hooks:
                s = (a**3 * b.exp()).sum()
        else:
            s = (a**3 * b.exp()).sum()
        if where in ("backward", "both"):
            with hooks:
                ga, gb = lib.autograd.grad(s, (a, b), create_graph=True)
                (ga.sum() + gb.sum()).backward()
        else:
            ga, gb = lib.autograd.grad(s, (a, b), create_graph=True)
            (ga.sum() + gb.sum()).backward()
        return ga, gb, a.grad, b.grad

    for got, want in zip(run(ng), run(torch)):
        _close(got, want)


_TWICE = {
    "setitem": lambda lib, b: _setitem(lib.zeros(3, dtype=lib.double), [1, 2], b[[1, 1]]),
    "index": lambda lib, b: b[[0, 2, 2]],
    "index_bool": lambda lib, b: b[lib.tensor([True, False, True])],
    "gather": lambda lib, b: b.gather(0, lib.tensor([2, 0])),
    "add": lambda lib, b: b + 1,
    "mul_const": lambda lib, b: b * 2,
    "mul": lambda lib, b: b * b,
    "slice": lambda lib, b: b[1:],
}


def _setitem(t, index, value):
    t[index] = value
    return t


@pytest.mark.parametrize("name", sorted(_TWICE))
def test_backward_twice_raises_where_pytorch_does(name):
    """A second backward through freed saved values raises PyTorch's error; nodes that saved
    nothing run again, as in PyTorch."""

    def run(lib):
        b = lib.tensor([0.5, -1.0, 2.0], dtype=lib.double, requires_grad=True)
        c = _TWICE[name](lib, b)
        c.sum().backward()
        try:
            c.sum().backward()
        except RuntimeError as e:
            return str(e).split(".")[0], b.grad
        return None, b.grad

    (msg, grad), (tmsg, tgrad) = run(ng), run(torch)
    assert msg == tmsg
    _close(grad, tgrad)


def _never_called(lib):
    class Never(lib.autograd.Function):
        calls = 0

        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            Never.calls += 1
            return g

    return Never


@pytest.mark.parametrize("how", ["grad_one", "grad_two", "backward_inputs"])
def test_nodes_that_cannot_reach_the_inputs_do_not_run(how):
    def run(lib):
        Never = _never_called(lib)
        x = Never.apply(lib.tensor([1.5], requires_grad=True) * 2)
        y = lib.tensor([0.5], requires_grad=True)
        z = lib.tensor([2.0], requires_grad=True)
        if how == "grad_one":
            got = lib.autograd.grad(x, (y,), allow_unused=True)
        elif how == "grad_two":
            got = lib.autograd.grad(x + z, (y, z), allow_unused=True)
        else:
            lib.autograd.backward(x, inputs=(y,))
            got = (y.grad,)
        return Never.calls, [None if g is None else g.tolist() for g in got]

    assert run(ng) == run(torch)


def test_tensor_hook_of_an_output_with_no_gradient_sees_none():
    """A hook on one output of a multi-output node is called with None when that output got
    no gradient, as PyTorch calls it."""

    def run(lib):
        x = lib.tensor([1.0, 2.0, 3.0, 4.0, 5.0], requires_grad=True)
        seen = []
        parts = x.unbind()
        parts[0].register_hook(lambda g: seen.append(None if g is None else g.tolist()))
        parts[0].backward()
        parts[3].backward()
        a, b = x.split([2, 3])
        a.register_hook(lambda g: seen.append(None if g is None else g.tolist()))
        (b * 2).sum().backward()
        lib.autograd.grad(b.sum(), x)
        return seen, x.grad.tolist()

    assert run(ng) == run(torch)


@pytest.mark.parametrize("create_graph", [False, True])
def test_materialized_grads_are_leaves_under_create_graph(create_graph):
    def run(lib):
        x = lib.tensor(0.5, requires_grad=True)
        a = lib.tensor(1.0, requires_grad=True)
        y = x * a
        (dydx,) = lib.autograd.grad(y, x, create_graph=True)
        (d2,) = lib.autograd.grad(dydx, x, create_graph=create_graph, materialize_grads=True)
        out = [d2.item(), d2.requires_grad, d2.grad_fn is None]
        if create_graph:
            (d3,) = lib.autograd.grad(d2, x, materialize_grads=True)
            out.append(d3.item())
        return out

    assert run(ng) == run(torch)


@pytest.mark.parametrize("materialize_non_diff", [True, False])
@pytest.mark.parametrize("materialize", [True, False])
def test_custom_function_non_differentiable_outputs_grads(materialize, materialize_non_diff):
    def run(lib):
        seen = []

        class Func(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                ctx._materialize_non_diff_grads = materialize_non_diff
                out1 = x.clone()
                ctx.mark_non_differentiable(out1)
                return x.clone(), out1, x.clone(), (x > 0).long()

            @staticmethod
            def backward(ctx, g0, g1, g2, g3):
                seen.extend(None if g is None else g.tolist() for g in (g0, g1, g2, g3))
                return g0

        a = lib.tensor([1.0, -2.0], requires_grad=True)
        Func.apply(a)[0].sum().backward()
        return seen, a.grad.tolist()

    assert run(ng) == run(torch)


@pytest.mark.parametrize("view", ["view", "slice", "select", "unsqueeze", "split"])
def test_view_made_under_no_grad_requires_grad(view):
    """A view made in no-grad mode of a tensor that requires grad requires grad too, yet is a
    leaf with no gradient edge: ops on it are recorded and backward runs, but no gradient
    reaches it or its base, and hooks on it never run."""

    def make(lib, x):
        if view == "view":
            return x.view(3)
        if view == "slice":
            return x[1:]
        if view == "select":
            return x[0]
        if view == "unsqueeze":
            return x.unsqueeze(0)
        return x.split([1, 2])[1]

    def run(lib):
        out = []
        for source in ("leaf", "nonleaf"):
            x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
            src = x if source == "leaf" else x * 2
            with lib.no_grad():
                v = make(lib, src)
            calls = []
            v.register_hook(calls.append)
            y = v * 2
            out += [v.requires_grad, v.is_leaf, v.grad_fn is None, y.requires_grad]
            y.sum().backward()
            out += [calls, v.grad, x.grad]
            w = make(lib, v) if view not in ("select", "split") else v.unsqueeze(0)
            out += [w.requires_grad, w.grad_fn is not None]
            try:
                lib.autograd.grad((v * 3).sum(), v)
            except RuntimeError as e:
                out.append(str(e))
        return out

    assert run(ng) == run(torch)


_PIECEWISE = {
    "relu": lambda lib, x: x.relu(),
    "relu_": lambda lib, x: x.clone().relu_() if hasattr(x, "relu_") else x.relu(),
    "hardtanh": lambda lib, x: lib.nn.functional.hardtanh(x),
    "relu6": lambda lib, x: lib.nn.functional.relu6(x * 4),
    "leaky_relu": lambda lib, x: lib.nn.functional.leaky_relu(x, 0.2),
    "leaky_relu_": lambda lib, x: lib.nn.functional.leaky_relu(x.clone(), 0.2, inplace=True),
    "clamp": lambda lib, x: x.clamp(-1, 1),
    "clamp_min": lambda lib, x: x.clamp(min=0.5),
    "abs": lambda lib, x: x.abs(),
}


@pytest.mark.parametrize("name", sorted(_PIECEWISE))
def test_constant_gradient_under_create_graph_as_pytorch(name):
    """Under create_graph, relu's, hardtanh's and leaky_relu's gradient requires grad (their
    backwards are ops whose derivative is zero), clamp's does not: a second grad gives zeros
    or raises exactly as in PyTorch. NaN inputs take PyTorch's branch."""

    def run(lib):
        x = lib.tensor([0.5, -2.0, 3.0, 0.0, -1.0, 1.0, float("nan")], requires_grad=True)
        y = _PIECEWISE[name](lib, x)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        out = [g.tolist(), g.requires_grad, g.grad_fn.name() if g.grad_fn else None]
        try:
            (gg,) = lib.autograd.grad(g.sum(), x)
            out.append((lib.zeros_like(x) + gg).tolist())  # (torch: a lazy zero tensor)
        except RuntimeError as e:
            out.append(str(e)[:60])
        return out

    got, want = run(ng), run(torch)
    # the gradients of piecewise-linear ops: 0, 1, the slope 0.2 itself or nan, no rounding
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1:] == want[1:]


_MATMUL_SHAPES = [
    ((2, 3, 3), (1, 3, 4)),
    ((1, 3, 3), (2, 3, 3)),
    ((1, 1, 1), (2, 1, 1)),
    ((2, 1, 1), (1, 1, 1)),
    ((1, 4, 3), (1, 3, 5)),
    ((2, 4, 3), (2, 3, 5)),
    ((2, 2, 3, 3), (1, 3, 3)),
    ((2, 3, 3), (1, 1, 3, 3)),
    ((3, 1, 4, 3), (2, 3, 5)),
    ((1, 4, 3), (2, 1, 3, 5)),
    ((3,), (1, 3, 3)),
    ((1, 3, 3), (3,)),
    ((3, 3), (1, 3, 3)),
    ((1, 3, 3), (3, 3)),
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 2)),
]


@pytest.mark.parametrize("requires_grad", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("shapes", _MATMUL_SHAPES, ids=str)
def test_matmul_builds_pytorchs_graph(shapes, requires_grad):
    """matmul folds, squeezes and transposes as ATen's, so the nodes, the gradients and the
    order in which the leaves' hooks fire are PyTorch's."""

    def run(lib):
        rng = np.random.default_rng(0)
        a, b = (
            lib.tensor(rng.standard_normal(s), requires_grad=r)
            for s, r in zip(shapes, requires_grad)
        )
        order = []
        for name, t in (("a", a), ("b", b)):
            if t.requires_grad:
                t.register_hook(lambda g, name=name: order.append(name))
        c = a @ b
        (c * lib.tensor(rng.standard_normal(tuple(c.shape)))).sum().backward()
        grads = [None if t.grad is None else t.grad.tolist() for t in (a, b)]
        return _desc(c.grad_fn), order, tuple(c.shape), grads

    got, want = run(ng), run(torch)
    assert got[:3] == want[:3]
    for g, w in zip(got[3], want[3]):
        assert (g is None) == (w is None)
        if g is not None:
            _close(np.array(g), np.array(w))


def _desc(fn):
    """PyTorch's TestAutograd ``graph_desc``: node class names, nested."""
    if fn is None:
        return "None"
    return type(fn).__name__ + "(" + ", ".join(_desc(f) for f, _ in fn.next_functions) + ")"


@pytest.mark.parametrize("case", ["mul", "mul_go", "sum", "sum_go", "twice", "user_grad"])
def test_grad_accumulated_under_create_graph_is_a_differentiable_copy(case):
    """Under create_graph the first ``.grad`` is a copy of the gradient (CopyBackwards over its
    graph when it requires grad), never the gradient tensor itself."""

    def run(lib):
        x = lib.tensor([[1.0, 2.0], [3.0, -1.0]], requires_grad=True)
        go = lib.ones((), requires_grad=True)
        user = lib.full((2, 2), 0.5, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the create_graph reference-cycle warning
            if case == "mul":
                (x * 2).sum().backward(create_graph=True)
            elif case == "mul_go":
                (x * 2).sum().backward(go, create_graph=True)
            elif case == "sum":
                x.sum().backward(create_graph=True)
            elif case == "sum_go":
                x.sum().backward(go, create_graph=True)
            elif case == "twice":
                (x * x).sum().backward(create_graph=True)
                (x * 3).sum().backward(go, create_graph=True)
            else:
                (x * 1).backward(user, create_graph=True)
        g = x.grad
        out = [_desc(g.grad_fn), g.requires_grad, g is user, g.tolist()]
        if g.requires_grad:
            (g * g).sum().backward()
            out += [None if t.grad is None else t.grad.tolist() for t in (x, go, user)]
        return out

    assert run(ng) == run(torch)


def test_once_differentiable_gradient_graph_as_pytorch():
    def run(lib):
        class Fn(lib.autograd.Function):
            @staticmethod
            def forward(ctx, t1, scalar, t2):
                ctx.scalar = scalar
                ctx.save_for_backward(t1, t2)
                return t1 + scalar * t2 + t1 * t2

            @staticmethod
            @lib.autograd.function.once_differentiable
            def backward(ctx, g):
                t1, t2 = ctx.saved_tensors
                return g + g * t2, None, g * ctx.scalar + g * t1

        x = lib.tensor([[1.0, 2.0]], requires_grad=True)
        y = lib.tensor([[3.0, -1.0]], requires_grad=True)
        go = lib.ones((), requires_grad=True)
        gx, gy = lib.autograd.grad(Fn.apply(x, 2, y).sum(), (x, y), go, create_graph=True)
        try:
            gx.sum().backward()
            err = None
        except RuntimeError as e:
            err = str(e)
        return _desc(gx.grad_fn), _desc(gy.grad_fn), gx.tolist(), gy.tolist(), err

    assert run(ng) == run(torch)


@pytest.mark.parametrize("live", [1, 2], ids=["one edge", "two edges"])
def test_a_gradient_of_another_dtype_is_cast_to_its_inputs(live):
    """As PyTorch's validate_outputs: a Function whose backward returns float32 gradients for
    float64 inputs has them cast, on the single-edge path and on the path of several edges."""

    def run(lib):
        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * 2 + b * 3

            @staticmethod
            def backward(ctx, grad):
                return (grad * 2).float(), (grad * 3).float()

        a = lib.tensor([1.0, 2.0], dtype=lib.double, requires_grad=True)
        b = lib.tensor([3.0, 4.0], dtype=lib.double, requires_grad=live == 2)
        Scale.apply(a, b).sum().backward()  # straight into the leaves: .grad shows the dtype
        return [(t.grad.dtype, t.grad.tolist()) for t in (a, b) if t.requires_grad]

    mine, theirs = run(ng), run(torch)
    assert [str(d).split(".")[-1] for d, _ in mine] == ["float64"] * live
    assert [str(d).split(".")[-1] for d, _ in theirs] == ["float64"] * live
    for (_, m), (_, t) in zip(mine, theirs):
        np.testing.assert_allclose(m, t, rtol=1e-7)


@pytest.mark.parametrize("marked", ["view", "base"])
def test_custom_function_marking_a_view_dirty_keeps_every_gradient(marked):
    """A Function that modifies in place (``mark_dirty``) a view rebases the view's base on
    CopySlices around its node, as PyTorch's rebase_history: the other input's gradient reaches
    it, first and second order. Marking the base dirty gives its live views the new history."""

    def run(lib):
        class PyAdd(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.mark_dirty(x)
                x.add_(y)
                return x

            @staticmethod
            def backward(ctx, grad):
                return grad, grad * 2

        a = lib.arange(16, dtype=lib.float64).reshape(4, 4).requires_grad_()
        b = lib.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=lib.float64, requires_grad=True)
        x = a.clone()
        if marked == "view":
            PyAdd.apply(x.narrow(1, 2, 2).narrow(0, 1, 2), b)
            PyAdd.apply(x.narrow(1, 0, 2).narrow(0, 1, 2), b)
            out = x
        else:
            out = x[1:3, :2]
            PyAdd.apply(x, b.repeat(2, 2))
        w = lib.linspace(-1, 1, out.numel(), dtype=lib.float64).reshape(out.shape)
        ga, gb = lib.autograd.grad((out * out * w).sum(), (a, b), create_graph=True)
        gga, ggb = lib.autograd.grad(ga.sum() + gb.sum(), (a, b))
        return out, ga, gb, gga, ggb

    for mine, theirs in zip(run(ng), run(torch)):
        _close(mine, theirs)


INFERENCE_VIEWS = {
    "view": lambda c: c.view(-1),
    "x[0]": lambda c: c[0],
    "t": lambda c: c.t(),
    "narrow of a view": lambda c: c.view(3, 2).narrow(0, 1, 2),
    "unbind": lambda c: c.unbind()[1],
    "expand": lambda c: c[:1].expand(4, 3),
}


@pytest.mark.parametrize("mode", ["inference_mode", "no_grad", "normal"])
@pytest.mark.parametrize("view", INFERENCE_VIEWS)
def test_a_view_of_an_inference_tensor_never_requires_grad(view, mode):
    """As PyTorch's: a view of an inference tensor (one that requires grad included), made in
    any mode, is an inference tensor with no history that autograd does not see as a view."""

    def run(lib):
        seen = []
        for requires_grad in (True, False):
            with lib.inference_mode():
                c = lib.ones(2, 3, requires_grad=requires_grad)
            with getattr(lib, mode)() if mode != "normal" else lib.enable_grad():
                out = INFERENCE_VIEWS[view](c)
            seen.append(
                (out.requires_grad, out.grad_fn, out.is_inference(), out._base, out.is_leaf)
            )
        return seen

    assert run(ng) == run(torch)


VIEW_BASE_CHANGES = {
    "add_": lambda a: a.add_(2),
    "transpose_": lambda a: a.transpose_(0, 1),
    "a view's mul_": lambda a: a[0].mul_(2),
    "unsqueeze_": lambda a: a.unsqueeze_(0),
}


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
@pytest.mark.parametrize("change", VIEW_BASE_CHANGES)
def test_a_view_made_without_grad_after_its_base_changed_raises_as_pytorch(change, mode):
    """A view made in no-grad or inference mode of a tensor that requires grad, after its base
    (or another view of it) is modified in place with grad mode on: reading its grad_fn, is_leaf,
    or an op that records on it raises PyTorch's error; what needs no history still works."""

    def run(lib):
        seen = []
        for requires_grad in (True, False):
            a = lib.ones(2, 3, requires_grad=requires_grad).clone()
            with getattr(lib, mode)():
                view = a.view(-1)
            VIEW_BASE_CHANGES[change](a)
            for use in (
                lambda v: v.grad_fn,
                lambda v: v.is_leaf,
                lambda v: (v * 2).requires_grad,
                lambda v: v.requires_grad,
                lambda v: repr(v).replace("torch.", "").replace("nbgrad.", ""),
                lambda v: (isinstance(v, lib.Tensor), v.tolist()),
            ):
                try:
                    seen.append(use(view))
                except RuntimeError as e:
                    seen.append(str(e))
        return seen

    assert run(ng) == run(torch)


def test_a_dirty_view_a_function_saves_is_freed_and_differentiable():
    """A Function that marks a view dirty and saves it: the saved view holds no cycle that
    keeps it alive (as PyTorch's), and its gradient, first and second order, is PyTorch's."""

    def run(lib):
        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_dirty(x)
                ctx.save_for_backward(x)
                return x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * x

        def scope():
            x = lib.tensor(1.0, requires_grad=True).clone()
            x = x.view_as(x)
            Square.apply(x)
            return weakref.ref(x)

        ref = scope()
        a = lib.tensor([2.0, 3.0], dtype=lib.float64, requires_grad=True)
        b = a.clone()
        Square.apply(b[1:])
        (g,) = lib.autograd.grad((b * b).sum(), a, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), a)
        return ref() is None, g.tolist(), gg.tolist()

    assert run(ng) == run(torch)
