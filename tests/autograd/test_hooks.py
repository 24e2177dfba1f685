"""Hook order, custom Functions, saved-tensor hooks and anomaly mode, compared with PyTorch.

Each scenario is written once against a library module ``lib`` (``nbgrad`` or ``torch``) and
returns the sequence of hook calls (and gradients); the test runs both and compares.
See NOTE [Hook order] in nbgrad/autograd/engine.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng
from nbgrad.autograd.graph import hook_inventory

torch = pytest.importorskip("torch")


def _leaf(lib, values, requires_grad=True):
    return lib.tensor(values, dtype=lib.float64, requires_grad=requires_grad)


def _name(node):
    return node.name().replace("torch::autograd::", "")


def _grads(*ts):
    return [None if t.grad is None else np.asarray(t.grad.detach()).tolist() for t in ts]


def scenario_reference_example(lib, log):
    x = _leaf(lib, [1.0, 2.0, 3.0])
    w = _leaf(lib, [2.0, 2.0, 2.0], requires_grad=False)
    y = x * w
    y.register_hook(lambda g: log.append("h1") or g * 2)
    y.retain_grad()
    y.register_hook(lambda g: log.append("h2") or g + 1)
    z = y.sum()
    for node in (z.grad_fn, y.grad_fn, y.grad_fn.next_functions[0][0]):
        n = _name(node)
        node.register_prehook(lambda g, n=n: log.append(f"{n} pre"))
        node.register_hook(lambda gi, go, n=n: log.append(f"{n} post"))
    x.register_hook(lambda g: log.append("x hook"))
    x.register_post_accumulate_grad_hook(lambda t: log.append("x post-acc"))
    z.backward()
    return log, _grads(x, y)


def scenario_several_tensor_hooks_chain(lib, log):
    x = _leaf(lib, [1.0, -2.0])
    y = x.exp()
    for k in range(4):
        y.register_hook(lambda g, k=k: log.append(f"h{k}") or g * (k + 1))
    y.sum().backward()
    return log, _grads(x)


def scenario_hook_replaces_leaf_grad(lib, log):
    x = _leaf(lib, [1.0, 2.0])
    x.register_hook(lambda g: log.append("leaf") or g.clamp(max=1.5))
    (x * x * 3).sum().backward()
    return log, _grads(x)


def scenario_shared_leaf_reached_twice(lib, log):
    x = _leaf(lib, [0.5, 1.5])
    x.register_hook(lambda g: log.append(f"x {np.asarray(g.detach()).round(4).tolist()}"))
    a = x.sin()
    b = x * 2
    (a * b).sum().backward()
    return log, _grads(x)


def scenario_retain_grad_between_hooks(lib, log):
    x = _leaf(lib, [1.0, 2.0])
    y = x * 3
    y.register_hook(lambda g: log.append("first") or g * 10)
    y.retain_grad()
    y.register_hook(lambda g: log.append("second") or g - 1)
    (y * y).sum().backward()
    return log, _grads(x, y)


def scenario_removal_midway(lib, log):
    x = _leaf(lib, [1.0, 2.0])
    y = x * 2
    handles = []

    def remover(g):
        log.append("remover")
        handles[0].remove()

    handles.append(y.register_hook(lambda g: log.append("removed-later") or g * 100))
    y.register_hook(remover)
    z = y.sum()
    z.backward(retain_graph=True)
    z.backward()
    return log, _grads(x)


def scenario_grad_inputs_unneeded_node(lib, log):
    x = _leaf(lib, [1.0, 2.0])
    w = _leaf(lib, [3.0, 4.0])
    y = x * w
    w.register_hook(lambda g: log.append("w hook"))
    x.register_hook(lambda g: log.append("x hook"))
    acc_w = y.grad_fn.next_functions[1][0]
    acc_w.register_prehook(lambda g: log.append("w acc pre"))
    (g,) = lib.autograd.grad(y.sum(), [x])
    return log, [np.asarray(g).tolist(), _grads(x, w)]


def scenario_node_hooks_on_accumulate_grad(lib, log):
    x = _leaf(lib, [1.0, 2.0])
    y = (x * x).sum()
    acc = y.grad_fn.next_functions[0][0].next_functions[0][0]
    acc.register_prehook(lambda g: log.append("acc pre"))
    acc.register_hook(lambda gi, go: log.append(f"acc post {len(gi)}"))
    x.register_post_accumulate_grad_hook(lambda t: log.append("post-acc"))
    x.register_hook(lambda g: log.append("tensor"))
    y.backward()
    return log, _grads(x)


def scenario_prehook_replaces(lib, log):
    x = _leaf(lib, [1.0, 2.0])
    y = x.tanh()
    y.grad_fn.register_prehook(lambda go: log.append("pre") or (go[0] * 0.5,))
    y.grad_fn.register_hook(lambda gi, go: log.append("post") or (gi[0] + 1,))
    y.sum().backward()
    return log, _grads(x)


def scenario_diamond_order(lib, log):
    x = _leaf(lib, [1.0, 2.0])
    a = x.exp()
    b = a * 2
    c = a.sin()
    d = b + c
    for t, n in ((a, "a"), (b, "b"), (c, "c"), (d, "d")):
        t.register_hook(lambda g, n=n: log.append(n))
    d.sum().backward()
    return log, _grads(x)


def scenario_multiple_roots(lib, log):
    x = _leaf(lib, [1.0, 2.0])
    y1 = x * 2
    y2 = x.exp()
    y1.register_hook(lambda g: log.append("y1"))
    y2.register_hook(lambda g: log.append("y2"))
    lib.autograd.backward([y1.sum(), y2.sum()])
    return log, _grads(x)


def scenario_hooks_survive_passes(lib, log):
    x = _leaf(lib, [1.0, 2.0])
    (x * 2).sum()  # the AccumulateGrad lives with the leaf
    x.register_hook(lambda g: log.append("leaf"))
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    return log, _grads(x)


SCENARIOS = [v for k, v in sorted(globals().items()) if k.startswith("scenario_")]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__[9:])
def test_hook_sequence_matches_pytorch(scenario):
    ours = scenario(ng, [])
    theirs = scenario(torch, [])
    assert ours[0] == theirs[0]
    assert _round(ours[1]) == _round(theirs[1])


def _round(v):
    if isinstance(v, list):
        return [_round(x) for x in v]
    if isinstance(v, float):
        return round(v, 9)
    return v


def test_reference_example_has_documented_order():
    log, grads = scenario_reference_example(ng, [])
    assert log == [
        "SumBackward0 pre", "SumBackward0 post", "h1", "h2", "MulBackward0 pre",
        "MulBackward0 post", "x hook", "AccumulateGrad pre", "x post-acc", "AccumulateGrad post",
    ]  # fmt: skip
    assert grads[1] == [3.0, 3.0, 3.0]  # y.grad holds h2's result: 1 * 2 + 1


# -- validation of hook results ---------------------------------------------------------------
@pytest.mark.parametrize(
    "ret, phrase",
    [
        (lambda g: g[:1], "has changed the size of value"),
        (lambda g: g.float(), "has changed the type of value"),
    ],
)
def test_tensor_hook_result_validated(ret, phrase):
    for lib in (ng, torch):
        x = _leaf(lib, [1.0, 2.0])
        y = x * 2

        def my_hook(g):
            return ret(g)

        y.register_hook(my_hook)
        with pytest.raises(RuntimeError, match=phrase) as info:
            y.sum().backward()
        assert "my_hook" in str(info.value)
        if lib is ng:
            assert "MulBackward0" in str(info.value)  # nbgrad also names the node


def test_prehook_wrong_count_raises():
    for lib in (ng, torch):
        x = _leaf(lib, [1.0, 2.0])
        y = x.exp()

        def bad_prehook(go):
            return (go[0], go[0])

        y.grad_fn.register_prehook(bad_prehook)
        with pytest.raises(RuntimeError, match="returned an incorrect number of values"):
            y.sum().backward()


@pytest.mark.parametrize("where", ["hook", "custom_backward", "unpack"])
def test_exception_propagates_and_engine_recovers(where):
    class Boom(ValueError):
        pass

    def fail(*_):
        raise Boom("from " + where)

    x = ng.tensor([1.0, 2.0], requires_grad=True)
    if where == "hook":
        y = x * 2
        y.register_hook(fail)
    elif where == "custom_backward":

        class F(ng.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                fail()

        y = F.apply(x)
    else:
        with ng.autograd.graph.saved_tensors_hooks(lambda t: t, fail):
            y = x.exp()
    with pytest.raises(Boom, match="from " + where):
        y.sum().backward()
    z = (x * 3).sum()
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_hook_registration_errors_match_pytorch():
    for lib in (ng, torch):
        t = lib.tensor([1.0])
        with pytest.raises(RuntimeError, match="doesn't require gradient"):
            t.register_hook(lambda g: g)
        x = lib.tensor([1.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered"):
            (x * 2).register_post_accumulate_grad_hook(lambda t: None)
        with pytest.raises(
            RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"
        ):
            t.retain_grad()


# -- custom Functions --------------------------------------------------------------------------
def _custom_functions(lib):
    class MulConst(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k, y):
            ctx.save_for_backward(x, y)
            ctx.k = k
            ctx.flags = ctx.needs_input_grad
            return x * k * y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * ctx.k * y, None, g * ctx.k * x

    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * out

    class AddOneInplace(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    class SortWithIndex(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            idx = x.argmax(0, keepdim=True)
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(idx)
            ctx.shape = x.shape
            return x.amax(0, keepdim=True), idx

        @staticmethod
        def backward(ctx, g, g_idx):
            (idx,) = ctx.saved_tensors
            out = lib.zeros(ctx.shape, dtype=g.dtype)
            return out.scatter_add(0, idx, g)

    class NoMaterialize(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            ctx.seen = (g1 is None, g2 is None)
            total = 0
            if g1 is not None:
                total = total + g1 * 2
            if g2 is not None:
                total = total + g2 * 3
            return total

    return MulConst, Exp, AddOneInplace, SortWithIndex, NoMaterialize


def _run_functions(lib):
    MulConst, Exp, AddOneInplace, SortWithIndex, NoMaterialize = _custom_functions(lib)
    out = {}
    x = _leaf(lib, [1.0, 2.0])
    y = _leaf(lib, [3.0, -1.0])
    z = MulConst.apply(x, 2.0, y)
    out["name"] = z.grad_fn.name()
    out["flags"] = z.grad_fn.flags
    out["next"] = [(_name(f), n) for f, n in z.grad_fn.next_functions]
    z.sum().backward()
    out["mul"] = _grads(x, y)
    x2 = _leaf(lib, [0.5, 1.0])
    e = Exp.apply(x2)
    (g,) = lib.autograd.grad(e.sum(), x2, create_graph=True)
    (gg,) = lib.autograd.grad(g.sum(), x2)
    out["exp"] = [np.asarray(g.detach()).tolist(), np.asarray(gg).tolist()]
    x3 = _leaf(lib, [1.0, 2.0])
    c = x3.clone()
    v0 = c._version
    r = AddOneInplace.apply(c)
    out["dirty"] = [r is c, c._version > v0, _name(r.grad_fn)]
    (r * r).sum().backward()
    out["dirty_grad"] = _grads(x3)
    x4 = _leaf(lib, [[1.0, 5.0], [3.0, 2.0]])
    m, idx = SortWithIndex.apply(x4)
    out["nondiff"] = [m.requires_grad, idx.requires_grad]
    m.sum().backward()
    out["nondiff_grad"] = _grads(x4)
    x5 = _leaf(lib, [1.0])
    a, _b = NoMaterialize.apply(x5)
    a.sum().backward()
    out["materialize"] = [a.grad_fn.seen, _grads(x5)]
    return out


def test_custom_function_ctx_parity():
    ours, theirs = _run_functions(ng), _run_functions(torch)
    # exp(x) by NumPy's kernel and by PyTorch's (each picked by CPU: SIMD code or C's exp),
    # each within an ulp of the exact value: they may differ by one ulp
    np.testing.assert_array_max_ulp(np.array(ours.pop("exp")), np.array(theirs.pop("exp")), 1)
    # the rest: names, flags, and gradients of whole numbers, exact
    assert ours == theirs


def test_custom_function_errors_match_pytorch():
    for lib in (ng, torch):

        class WrongShape(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return lib.ones(4, dtype=g.dtype)  # noqa: B023 - used within the iteration

        class WrongCount(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g, g

        x = _leaf(lib, [1.0, 2.0, 3.0])
        with pytest.raises(
            RuntimeError,
            match=r"invalid gradient at index 0 - got \[4\] but expected shape compatible with "
            r"\[3\]",
        ):
            WrongShape.apply(x).sum().backward()
        with pytest.raises(
            RuntimeError, match=r"incorrect number of gradients \(expected 1, got 2\)"
        ):
            WrongCount.apply(x).sum().backward()


def test_once_differentiable_double_backward_raises():
    for lib in (ng, torch):

        class Sq(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @lib.autograd.function.once_differentiable
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        x = _leaf(lib, [1.0, 2.0])
        v = _leaf(lib, [1.0, 1.0])  # a gradient that requires grad makes the result need one
        (g,) = lib.autograd.grad(Sq.apply(x), x, grad_outputs=v, create_graph=True)
        np.testing.assert_allclose(np.asarray(g.detach()), [2.0, 4.0])
        with pytest.raises(RuntimeError, match="marked with @once_differentiable"):
            g.sum().backward()


# -- saved-tensor hooks -------------------------------------------------------------------------
# each saved tensor is unpacked once per apply, whichever of the node's edges are live
SAVED_HOOK_PROGRAMS = {
    "mul-sin-exp": lambda x, w: (x * x).sin().exp(),
    "div, both saved": lambda x, w: x / w,
    "tanh result": lambda x, w: (x * w).tanh(),
    "sigmoid, w constant": lambda x, w: (x * w.detach()).sigmoid(),
}


def _saved_hooks_counts(lib, program):
    calls = {"pack": 0, "unpack": 0}

    def pack(t):
        calls["pack"] += 1
        return t * 1  # a copy, as a user's offloading hook would make

    def unpack(t):
        calls["unpack"] += 1
        return t

    x = _leaf(lib, [0.5, 1.0, 2.0])
    w = _leaf(lib, [1.5, -1.0, 0.25])
    with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = program(x, w)
    y.sum().backward()
    return calls, _grads(x), _grads(w)


@pytest.mark.parametrize("program", SAVED_HOOK_PROGRAMS)
def test_saved_tensors_hooks_parity(program):
    fn = SAVED_HOOK_PROGRAMS[program]
    ours, theirs = _saved_hooks_counts(ng, fn), _saved_hooks_counts(torch, fn)
    assert ours[0] == theirs[0]  # pack and unpack calls
    for (a,), (b,) in zip(ours[1:], theirs[1:]):  # the gradients of x and w
        assert (a is None) == (b is None)
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-6)


# -- anomaly mode --------------------------------------------------------------------------------
def test_anomaly_mode_names_the_nan_node():
    for lib in (ng, torch):
        x = _leaf(lib, [0.0, 1.0])
        with pytest.warns(UserWarning):
            with lib.autograd.detect_anomaly():
                y = x.sqrt() * 0.0
                with pytest.raises(
                    RuntimeError,
                    match="Function 'SqrtBackward0' returned nan values in its 0th output",
                ):
                    y.sum().backward()


def test_anomaly_mode_records_forward_traceback():
    x = ng.tensor([1.0], requires_grad=True)
    with pytest.warns(UserWarning):
        with ng.autograd.detect_anomaly():
            y = x.exp()  # the line recorded
    assert any("y = x.exp()" in line for line in y.grad_fn.metadata["traceback_"])


def test_queue_callback_runs_after_backward_and_raises_outside():
    for lib in (ng, torch):
        engine = lib.autograd.Variable._execution_engine
        log = []
        x = _leaf(lib, [1.0])
        y = x * 2
        y.register_hook(
            lambda g, e=engine, log=log, x=x: e.queue_callback(
                lambda: log.append(x.grad is not None)
            )
        )
        y.sum().backward()
        assert log == [True]
        with pytest.raises(
            RuntimeError, match="Final callbacks can only be installed during backward pass"
        ):
            engine.queue_callback(lambda: None)


# -- the hook inventory --------------------------------------------------------------------------
def test_hook_inventory_lists_disables_and_removes():
    x = ng.tensor([1.0, 2.0], dtype=ng.float64, requires_grad=True)
    h1 = x * 2
    h2 = h1.tanh()
    out = (h2 * 3).sum()
    h1.register_hook(lambda g: g * 10)  # layer 1
    h2.grad_fn.register_prehook(lambda go: (go[0] * 2,))  # layer 2
    x.register_post_accumulate_grad_hook(lambda t: None)
    inv = hook_inventory(out)
    assert [(i.kind, i.target_kind) for i in inv] == [
        ("node_prehook", "node"), ("tensor_hook", "tensor"), ("post_accumulate_grad", "tensor"),
    ]  # fmt: skip
    assert inv[1].target is h1 and inv[0].target is h2.grad_fn and all(i.enabled for i in inv)

    def grad_x():
        x.grad = None
        out.backward(retain_graph=True)
        return x.grad.numpy().copy()

    base = 2 * (1 - np.tanh(np.array([2.0, 4.0])) ** 2) * 3
    np.testing.assert_allclose(grad_x(), base * 2 * 10)
    inv[1].handle.disable()
    assert not hook_inventory(out)[1].enabled
    np.testing.assert_allclose(grad_x(), base * 2)
    inv[1].handle.enable()
    np.testing.assert_allclose(grad_x(), base * 2 * 10)
    inv[0].handle.remove()
    assert len(hook_inventory(out)) == 2
    np.testing.assert_allclose(grad_x(), base * 10)


def _function_styles(lib):
    """A forward with ctx, a forward without it plus ``setup_context``, and a forward that
    returns numbers among its tensors (``backward`` gets None for each number)."""

    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x**3

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x, output)

        @staticmethod
        def backward(ctx, grad):
            x, out = ctx.saved_tensors
            return grad * 3 * out / x

    class Mixed(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return 7, x * 2, "label", x * 3

        @staticmethod
        def backward(ctx, g_seven, g_double, g_label, g_triple):
            ctx.seen = (g_seven, g_label)
            return g_double * 2 + g_triple * 3

    x = _leaf(lib, [1.0, 2.0])
    y = Cube.apply(x)
    y.sum().backward()
    out = {"setup_context": [y.grad_fn.name(), _grads(x)]}
    x2 = _leaf(lib, [1.0, -1.0])
    seven, double, label, triple = Mixed.apply(x2)
    (double * triple).sum().backward()
    out["mixed"] = [seven, label, double.grad_fn.seen, _grads(x2), triple.grad_fn.name()]
    return out


def test_custom_function_styles_like_pytorch():
    assert _function_styles(ng) == _function_styles(torch)
