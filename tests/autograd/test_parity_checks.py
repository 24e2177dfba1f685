"""Checks and small behaviours PyTorch has that nbgrad once lacked, each compared with torch.

Found by PyTorch's own TestAutograd run against nbgrad.
"""

import warnings

import numpy as np
import pytest
import torch

import nbgrad as ng


def _outcome(fn):
    """What a call does: ("ok", value) or (exception type name, message)."""
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001 - the outcome is compared
        return (type(e).__name__, str(e))


def test_post_accumulate_grad_hook_must_return_none():
    def run(lib):
        t = lib.ones(2, 3, requires_grad=True)
        t.register_post_accumulate_grad_hook(lambda t: t.grad)
        return _outcome(lambda: t.sum().backward())

    assert run(ng) == run(torch)


@pytest.mark.parametrize("n_args", [0, 1, 2])
def test_calling_a_node_checks_its_argument_count(n_args):
    def run(lib):
        x = lib.ones(1, requires_grad=True)
        y = x**2
        kind, value = _outcome(lambda: y.grad_fn(*[x.detach()] * n_args))
        if kind == "ok":
            return kind, [v.tolist() for v in value] if isinstance(value, list) else value.tolist()
        return kind, value.split(": ")[-1]  # (PyTorch names no node in the message)

    got, want = run(ng), run(torch)
    assert got[0] == want[0]
    if got[0] == "ok":
        assert got[1] in (want[1], [want[1]])
    else:
        assert got[1] == want[1]


def test_numpy_of_a_tensor_that_requires_grad_in_no_grad_mode():
    def run(lib):
        x = lib.ones(2, 2, requires_grad=True)
        out = [_outcome(lambda: x.numpy().tolist())[0]]
        with lib.no_grad():
            out.append(x.numpy().tolist())
            out.append((x * 2).numpy().tolist())
        with lib.inference_mode():
            out.append(x.numpy().tolist())
        return out

    assert run(ng) == run(torch)


def test_legacy_backward_hooks_attribute():
    def run(lib):
        a = lib.ones(2)
        before = a._backward_hooks
        a._backward_hooks = {"k": print}
        return before, list(a._backward_hooks)

    assert run(ng) == run(torch)


def test_node_hooks_take_any_object_as_pytorch():
    """A node keeps whatever is registered on it (PyTorch's own tests hang a sentinel object
    there to watch the node's lifetime); the object goes when the graph goes."""
    import gc

    def run(lib):
        freed = []

        class Sentinel:
            def __del__(self):
                freed.append(True)

        def scope():
            root = lib.ones(3, 3, requires_grad=True)
            copy = root.clone()
            copy.grad_fn.register_hook(Sentinel())
            lib.nn.functional.relu(copy.view(9), inplace=True)

        scope()
        gc.collect()
        return freed

    assert run(ng) == run(torch) == [True]


@pytest.mark.parametrize("style", ["staticmethod", "classmethod"])
@pytest.mark.parametrize("call", ["default", "positional", "keyword"])
def test_setup_context_sees_forwards_defaults(style, call):
    def run(lib):
        def forward(x, y=3):
            return lib.pow(x, y)

        def setup_context(ctx, inputs, output):
            x, y = inputs
            ctx.save_for_backward(x)
            ctx.y = y

        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * ctx.y * lib.pow(x, ctx.y - 1), None

        wrap = staticmethod if style == "staticmethod" else classmethod
        if style == "classmethod":
            fwd, setup, bwd = forward, setup_context, backward
            forward = lambda cls, x, y=3: fwd(x, y)  # noqa: E731
            setup_context = lambda cls, ctx, inputs, output: setup(ctx, inputs, output)  # noqa: E731
            backward = lambda cls, ctx, g: bwd(ctx, g)  # noqa: E731
        Pow = type(
            "Pow",
            (lib.autograd.Function,),
            {
                "forward": wrap(forward),
                "setup_context": wrap(setup_context),
                "backward": wrap(backward),
            },
        )
        x = lib.tensor([1.5, -2.0], requires_grad=True)
        if call == "default":
            y = Pow.apply(x)
        elif call == "positional":
            y = Pow.apply(x, 2)
        else:
            y = Pow.apply(x, y=2)
        y.sum().backward()
        return y.tolist(), x.grad.tolist()

    assert run(ng) == run(torch)


def _custom_view_programs(lib):
    class ViewFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.view_as(inp)

        @staticmethod
        def backward(ctx, grad):
            return grad

    class Identity(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp

        @staticmethod
        def backward(ctx, grad):
            return grad

    def inplace(fn, of_view=False, no_grad_input=False, op="mul"):
        def program():
            a = lib.rand(2) if no_grad_input else lib.rand(2, requires_grad=True).clone()
            b = lib.rand(1, requires_grad=True)
            v = fn.apply(a)
            if of_view:
                v = v[:1]
            if op == "mul":
                v.mul_(2)
            elif op == "add":
                v += b
            else:
                v.copy_(b.expand_as(v))
            return v.requires_grad

        return program

    return {
        "view_fn": inplace(ViewFn),
        "view_fn_slice": inplace(ViewFn, of_view=True),
        "identity": inplace(Identity),
        "identity_slice": inplace(Identity, of_view=True),
        "not_requires_grad_add": inplace(ViewFn, no_grad_input=True, op="add"),
        "not_requires_grad_copy": inplace(ViewFn, no_grad_input=True, op="copy"),
        "not_requires_grad_mul": inplace(ViewFn, no_grad_input=True),
    }


@pytest.mark.parametrize("name", sorted(_custom_view_programs(ng)))
def test_inplace_on_a_custom_functions_view_output(name):
    """A view a custom Function returns may not be modified in place where it would bypass the
    custom backward: PyTorch's error and message, and no error where PyTorch allows it."""
    got = _outcome(_custom_view_programs(ng)[name])
    want = _outcome(_custom_view_programs(torch)[name])
    assert got == want


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_inplace_on_a_view_of_a_view_made_in_a_no_grad_block(mode):
    def run(lib):
        x = lib.zeros(2)
        with getattr(lib, mode)():
            y = x.view(2)
        y.requires_grad_(True)
        z = y.view(2)
        return _outcome(lambda: z.div_(2))

    assert run(ng) == run(torch)


def _dirty_programs(lib):
    def make(forward):
        return type(
            "Func",
            (lib.autograd.Function,),
            {"forward": staticmethod(forward), "backward": staticmethod(lambda ctx, g: g)},
        )

    def dirty_intermediate(ctx, inp):
        out = inp.clone().view_as(inp)
        ctx.mark_dirty(out)
        return out

    def dirty_input(ctx, inp):
        inp.add_(1)
        ctx.mark_dirty(inp)
        return inp

    leaf = lambda: lib.tensor([1.0, 2.0], requires_grad=True)  # noqa: E731
    return {
        "intermediate": lambda: make(dirty_intermediate).apply(leaf().clone()).tolist(),
        "intermediate_no_grad": lambda: make(dirty_intermediate).apply(lib.ones(2)).tolist(),
        "view_of_leaf": lambda: make(dirty_input).apply(leaf().view_as(leaf())).tolist(),
        "leaf": lambda: make(dirty_input).apply(leaf()).tolist(),
        "clone": lambda: make(dirty_input).apply(leaf().clone()).tolist(),
        "view_of_clone": lambda: make(dirty_input).apply(leaf().clone()[:1]).tolist(),
    }


@pytest.mark.filterwarnings("ignore:ctx.mark_dirty\\(\\) received a tensor:UserWarning")
@pytest.mark.parametrize("name", sorted(_dirty_programs(ng)))
def test_mark_dirty_checks(name):
    assert _outcome(_dirty_programs(ng)[name]) == _outcome(_dirty_programs(torch)[name])


@pytest.mark.parametrize("requires_grad", [False, True])
def test_inplace_on_one_of_several_views_from_one_op(requires_grad):
    def run(lib):
        a = lib.rand(1, 2, requires_grad=requires_grad)
        a = a.clone() if requires_grad else a
        b = lib.rand(1, requires_grad=True)
        view = a.unbind()[0]
        return _outcome(lambda: view.copy_(b.expand(2)).requires_grad)

    assert run(ng) == run(torch)


def _inplace_function_programs(lib):
    import warnings

    def fn(forward, backward):
        return type(
            "Fn",
            (lib.autograd.Function,),
            {"forward": staticmethod(forward), "backward": staticmethod(backward)},
        )

    def add_(ctx, a, b):
        a.add_(b)
        ctx.mark_dirty(a)
        return a

    def dirty_non_input(ctx, a, b):
        c = 3 * a
        c.add_(b)
        ctx.mark_dirty(c)
        return c

    def two_outputs(ctx, a, b):
        a.add_(b)
        ctx.mark_dirty(a)
        return a, a + b

    def dirty_not_returned(ctx, a, b):
        a.add_(b)
        ctx.mark_dirty(a)
        return a.clone(), a + b

    adder = fn(add_, lambda ctx, g: (g, g))
    bad = fn(dirty_non_input, lambda ctx, g: (3 * g, g))
    two = fn(two_outputs, lambda ctx, ga, gab: (ga + gab, ga + gab))
    not_returned = fn(dirty_not_returned, lambda ctx, ga, gab: (ga + gab, ga + 2 * gab))

    def run(function, a_of, extra_inplace=False):
        def program():
            a = lib.ones(2, requires_grad=True)
            b = lib.tensor([1.0, 2.0], requires_grad=True)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out = function.apply(a_of(a), b)
            outs = out if isinstance(out, tuple) else (out,)
            if extra_inplace:
                outs[0].add_(2)
            loss = outs[0].sum() if len(outs) == 1 else (outs[0] * outs[1]).sum()
            loss.backward()
            messages = [str(w.message).split(" (Triggered")[0] for w in caught]
            return messages, a.grad.tolist(), b.grad.tolist()

        return program

    return {
        "single": run(adder, lambda a: a.clone()),
        "single_extra_inplace": run(adder, lambda a: a.clone(), True),
        "single_view_input": run(adder, lambda a: a.clone().view_as(a)),
        "dirty_non_input_warns": run(bad, lambda a: a.clone()),
        "two_outputs": run(two, lambda a: a.clone()),
        "two_outputs_extra_inplace": run(two, lambda a: a.clone(), True),
        "two_outputs_view_input": run(two, lambda a: a.clone().view_as(a)),
        "dirty_not_returned": run(not_returned, lambda a: a.clone().view_as(a)),
    }


@pytest.mark.parametrize("name", sorted(_inplace_function_programs(ng)))
def test_custom_function_inplace_rules(name):
    got = _outcome(_inplace_function_programs(ng)[name])
    want = _outcome(_inplace_function_programs(torch)[name])
    if want[0] == "RuntimeError" and got[0] == "RuntimeError":  # (PyTorch adds a forum link)
        assert want[1].startswith(got[1].removesuffix(")."))
    else:
        assert got == want


@pytest.mark.parametrize("new", ["float", "int", "double"])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_setting_data(new, requires_grad):
    def run(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=requires_grad)
        value = {
            "float": lib.tensor([3.0, 4.0]),
            "int": lib.tensor([3, 4]),
            "double": lib.tensor([3.0, 4.0], dtype=lib.float64),
        }[new]

        def set_and_use():
            a.data = value
            if requires_grad:
                (a * 2).sum().backward()
            return str(a.dtype).split(".")[-1], a.tolist(), a.grad is not None and a.grad.tolist()

        return _outcome(set_and_use)

    assert run(ng) == run(torch)


def test_printing_a_no_grad_view_changed_in_place():
    def run(lib):
        a = lib.ones(1, requires_grad=True)
        out = [repr(a), repr(a.clone())]
        with lib.no_grad():
            b = a[:]
            out.append(repr(b))
            b *= 2
        out.append(repr(b))
        return out

    assert run(ng) == run(torch)


def test_a_retained_grad_is_its_own_copy():
    """``retain_grad`` keeps a copy of the gradient that flows on: changing the leaf's ``.grad``
    in place later leaves the retained one as it was (and the other way round)."""

    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        v = x + 0  # (its gradient flows on to x unchanged)
        v.retain_grad()
        x.register_hook(lambda g: g.mul_(2))  # changes the flowing gradient in place
        (v * 3).sum().backward()
        x.grad.mul_(10)
        before = v.grad.tolist()
        v.grad.add_(1)
        return before, x.grad.tolist(), v.grad.tolist()

    assert run(ng) == run(torch)


def test_a_disabled_post_accumulate_grad_hook_does_not_run():
    x = ng.ones(2, requires_grad=True)
    calls = []
    handle = x.register_post_accumulate_grad_hook(lambda t: calls.append(1))
    handle.enabled = False
    x.sum().backward()
    assert calls == []
    handle.enabled = True
    x.sum().backward()
    assert calls == [1]


def test_nodes_are_numbered_in_creation_order():
    def run(lib):
        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = lib.ones(2, requires_grad=True)
        a = x * 2
        b = Twice.apply(a)
        c = Twice.apply(b).exp()
        d = c.sum()
        nodes = [a.grad_fn, b.grad_fn, c.grad_fn.next_functions[0][0], c.grad_fn, d.grad_fn]
        return [n._sequence_nr() - a.grad_fn._sequence_nr() for n in nodes]

    assert run(ng) == run(torch) == [0, 1, 2, 3, 4]


def test_a_node_that_returns_too_many_gradients_is_refused():
    from nbgrad.autograd.engine import get_default_engine
    from nbgrad.autograd.graph import Edge, Node

    x = ng.ones(2, requires_grad=True)
    y = x * 2

    class TooMany(Node):
        def apply(self, grads):
            return [grads[0], grads[0]]

    node = TooMany((Edge(y.grad_fn, 0),))
    node._input_metadata_ = y.grad_fn._input_metadata_
    with pytest.raises(RuntimeError, match="returned an invalid number of gradients - expected 1"):
        get_default_engine().execute([Edge(node, 0)], [ng.ones(2)], False, False)
    assert x.grad is None


# ---- .grad never aliases a gradient someone else holds -------------------------------------
# (nbgrad is stricter than PyTorch here: PyTorch's AccumulateGrad steals a gradient whose
# storage another tensor shares, so a later accumulation changes that tensor too)
def test_grad_does_not_alias_an_array_a_hook_kept():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    kept = []
    x.register_hook(lambda g: kept.append(g.detach()))
    for _ in range(2):
        (x * 3).sum().backward()
    assert [k.tolist() for k in kept] == [[3.0, 3.0], [3.0, 3.0]]
    assert x.grad.tolist() == [6.0, 6.0]


def test_grad_does_not_alias_the_users_gradient_through_a_view():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    g = ng.tensor([[1.0, 1.0]])
    for _ in range(2):
        x.unsqueeze(0).backward(g)  # x's gradient is a view of g's memory
    assert g.tolist() == [[1.0, 1.0]] and x.grad.tolist() == [2.0, 2.0]


def test_grad_does_not_alias_a_gradient_that_requires_grad():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        g = lib.tensor([1.0, 1.0], requires_grad=True)
        for _ in range(2):
            (x + 0).backward(g)
        return g.tolist(), x.grad.tolist(), x.grad.requires_grad

    assert run(ng) == run(torch)


def test_retain_grad_on_one_output_of_several():
    def run(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        a, b, c = (x * 1).unbind()
        b.retain_grad()
        (a + 2 * b + 3 * c).backward()
        with warnings.catch_warnings(record=True) as caught:  # (.grad of a non-leaf warns)
            warnings.simplefilter("always")
            out = a.grad, b.grad.item(), c.grad, x.grad.tolist()
        return out, len(caught)

    assert run(ng) == run(torch)


def test_mark_non_differentiable_outputs():
    def run(lib):
        class Sorted(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                values, idx = x.sort()
                flag = x.clone()
                ctx.mark_non_differentiable(idx, flag, x)
                return values, idx, flag, x  # (x returned as it is, marked too)

            @staticmethod
            def backward(ctx, g, g_idx, g_flag, g_x):
                return g

        x = lib.tensor([3.0, 1.0, 2.0], requires_grad=True)
        outs = Sorted.apply(x)
        return [(t.requires_grad, t.grad_fn is None) for t in outs]

    assert run(ng) == run(torch)


@pytest.mark.parametrize("attr", ["grad", "data", "requires_grad", "_grad_fn", "_backward_hooks"])
def test_deleting_tensor_attributes(attr):
    def run(lib):
        x = lib.ones(2, requires_grad=True)
        (x * 2).sum().backward()
        out = _outcome(lambda: exec(f"del x.{attr}"))
        return out, x.grad is None

    assert run(ng) == run(torch)


def test_increment_version():
    def run(lib):
        out = []
        for t in (lib.rand(3, requires_grad=True), lib.zeros(3, dtype=lib.int32)):
            v = t._version
            lib.autograd.graph.increment_version(t)
            out.append(t._version - v)
        a = lib.ones(2, requires_grad=True)
        b = a * 1
        c = b * b
        lib.autograd.graph.increment_version(b)  # b's saved value is now stale for c's node
        out.append(_outcome(lambda: c.sum().backward())[0])
        return out

    assert run(ng) == run(torch)


def test_relu_in_place_and_split_with_sizes():
    def run(lib):
        a = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        b = a.clone()
        b.relu_()
        p, q = a.split_with_sizes([1, 2])
        (b.sum() + (p * 2).sum() + (q * 3).sum()).backward()
        return b.grad_fn.name(), p.grad_fn.name(), b.tolist(), a.grad.tolist()

    assert run(ng) == run(torch)


def test_mark_dirty_on_one_of_several_views():
    def run(lib):
        class AddOne(lib.autograd.Function):
            @staticmethod
            def forward(ctx, inp):
                inp.add_(1)
                ctx.mark_dirty(inp)
                return inp

            @staticmethod
            def backward(ctx, g):
                return g

        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b, _ = a.split_with_sizes([1, 1], dim=0)
        return _outcome(lambda: AddOne.apply(b).tolist())

    assert run(ng) == run(torch)


@pytest.mark.filterwarnings("ignore:Backwards compatibility:UserWarning")
@pytest.mark.parametrize("case", ["no_outputs", "constant_output", "depends_no_grad", "hook"])
def test_gradcheck_checks_as_pytorch(case):
    """gradcheck's verdicts where PyTorch's gradcheck makes extra checks: outputs with no
    differentiable part, and backward with undefined output gradients."""

    def fn_for(lib):
        if case == "no_outputs":
            return lambda x: ()
        if case == "constant_output":
            return lambda x: lib.ones(2)
        if case == "depends_no_grad":
            return lambda x: lib.tensor([x.detach().sum().item()])

        def with_hook(x):
            y = x.clone()
            y.register_hook(
                lambda g: (
                    (_ for _ in ()).throw(RuntimeError("x is undefined")) if g is None else None
                )
            )
            return y

        return with_hook

    def run(lib):
        x = lib.ones(1, dtype=lib.float64, requires_grad=True)
        verdict = lib.autograd.gradcheck(fn_for(lib), (x,), raise_exception=False)
        try:
            lib.autograd.gradcheck(fn_for(lib), (x,))
            message = None
        except RuntimeError as e:
            message = str(e).split(".")[0]
        return verdict, message

    assert run(ng) == run(torch)


def _nondeterministic(lib, jitter):
    """The identity, whose backward scales its gradient by up to ``1 + jitter`` at random."""

    class NonDet(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g * (1 + lib.rand_like(g) * jitter)

    return NonDet.apply


@pytest.mark.parametrize("check", ["gradcheck", "gradgradcheck"])
@pytest.mark.parametrize("jitter, nondet_tol", [(0.0, 0.0), (1e-7, 0.0), (1e-7, 1e-5)])
def test_gradcheck_refuses_a_backward_that_is_not_reentrant(check, jitter, nondet_tol):
    """As PyTorch: each vector-Jacobian product is built twice, and two that differ by more than
    ``nondet_tol`` fail with "Backward is not reentrant", though both match the numbers."""

    def run(lib):
        x = lib.randn(3, dtype=lib.float64, requires_grad=True)
        # (the finite differences of a second derivative would see a larger jitter)
        fn = _nondeterministic(lib, jitter if check == "gradcheck" else jitter * 1e-5)
        fn2 = (lambda t: fn(t) * t) if check == "gradgradcheck" else fn
        try:
            getattr(lib.autograd, check)(fn2, (x,), nondet_tol=nondet_tol)
            return "passed"
        except RuntimeError as e:
            return type(e).__name__, str(e).split(",")[0]

    ours = run(ng)
    assert ours == run(torch)
    assert (ours == "passed") == (jitter == 0.0 or nondet_tol > 0)


@pytest.mark.parametrize("change", ["shape", "dtype"])
def test_gradcheck_refuses_outputs_that_change_shape_or_dtype_when_perturbed(change):
    """An output whose shape or dtype depends on the input's value fails gradcheck with
    PyTorch's AssertionError (it was compared by broadcasting before)."""

    def run(lib):
        def fn(x):
            if bool((x >= 1).all()):
                return lib.cat([x, x]) if change == "shape" else x.to(lib.float32)
            return x

        x = lib.ones(2, 2, dtype=lib.float64, requires_grad=True)
        with pytest.raises(AssertionError) as info:
            lib.autograd.gradcheck(fn, (x,))
        return str(info.value).replace("torch", "nbgrad")

    assert run(ng) == run(torch)


@pytest.mark.parametrize("op", ["setitem", "add_", "index_div", "grad_set"])
def test_writing_into_an_expanded_tensor(op):
    """One element of an expanded tensor may be written (all its aliases change); an in-place
    op on the whole of it raises PyTorch's internal-overlap error."""

    def run(lib):
        t = lib.tensor([1.0]).expand(3)
        if op == "setitem":
            t[0] = 5.0
        elif op == "add_":
            return _outcome(lambda: t.add_(1).tolist())
        elif op == "index_div":
            t[0] = 0
            t[0] /= 0
        else:
            x = lib.ones(3, requires_grad=True)
            x.grad = lib.ones(1).expand(3)
            return _outcome(lambda: (x * 2).sum().backward())
        return t.tolist()

    got, want = run(ng), run(torch)
    # whole numbers, nan (0 / 0) or an outcome: exact
    np.testing.assert_equal(got, want)


def _anomaly_log(lib, program):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = _outcome(program)
    return outcome[0], [str(w.message).strip().split("\n")[0].split(". ")[0] for w in caught]


class _NanInBackward:
    """A custom Function whose backward (or its own double backward) returns nan."""

    @staticmethod
    def make(lib, fail_first):
        class Inner(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * 2.0 + b

            @staticmethod
            def backward(ctx, g):
                g1, g2 = g.clone(), g.clone()
                (g1 if fail_first else g2)[0] = float("nan")
                return g1, g2

        class Outer(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.sum(0, keepdim=True)

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return Inner.apply(g.expand(3), x)

        return Outer


@pytest.mark.parametrize("fail_first", [False, True])
@pytest.mark.parametrize("forward_in_anomaly", [False, True])
def test_anomaly_mode_reports_the_failing_node_and_its_parent(forward_in_anomaly, fail_first):
    """A nan from a backward made during another backward: the error names the node; the
    warnings give its forward traceback, or say there is none, and the parent's."""

    def run(lib):
        outer = _NanInBackward.make(lib, fail_first)

        def program():
            x = lib.rand(3, requires_grad=True)
            if forward_in_anomaly:
                with lib.autograd.detect_anomaly():
                    (g,) = lib.autograd.grad(outer.apply(x).sum(), x, create_graph=True)
                    g.sum().backward()
            else:
                (g,) = lib.autograd.grad(outer.apply(x).sum(), x, create_graph=True)
                with lib.autograd.detect_anomaly():
                    g.sum().backward()

        return _anomaly_log(lib, program)

    assert run(ng) == run(torch)


def test_anomaly_warning_under_warnings_as_errors_goes_to_stderr(capsys):
    def run(lib):
        a = lib.randn(5, requires_grad=True)
        d1 = a + 1
        d2 = d1**2
        d1 += 1
        with warnings.catch_warnings(record=True):
            with lib.autograd.detect_anomaly():
                warnings.simplefilter("error")
                out = _outcome(lambda: lib.autograd.grad(d2.sum(), a))
        return out[0], "Error detected in PowBackward0" in capsys.readouterr().err

    assert run(ng) == run(torch) == ("RuntimeError", True)
