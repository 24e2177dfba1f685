"""``nbgrad.autograd.forward_ad`` against ``torch.autograd.forward_ad``: levels, dual tensors,
PyTorch's errors, in-place ops and views with tangents, grad modes, custom Functions' ``jvp``
and ``autograd.functional``'s forward-mode Jacobian and Hessian (NOTE [Forward-mode AD]).

Each scenario runs the same code on both libraries (``lib``) and compares what it returns.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import nbgrad as ng
import nbgrad.autograd.forward_ad as ng_fwAD
from nbgrad._graph import forward_grad

LIBS = [ng, torch]


def fw(lib):
    return ng_fwAD if lib is ng else torch.autograd.forward_ad


def _np(t):
    return None if t is None else np.asarray(t.detach().numpy(), dtype=np.float64)


def _both(scenario):
    """Run ``scenario(lib)`` on both libraries; compare the arrays (or Nones) it returns."""
    got, expected = scenario(ng), scenario(torch)
    assert len(got) == len(expected)
    for k, (a, b) in enumerate(zip(got, expected)):
        if b is None or isinstance(b, (bool, str, int)):
            assert a == b, f"item {k}: nbgrad {a!r}, torch {b!r}"
        else:
            np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-12, err_msg=f"item {k}")


def _raises_both(scenario, exc, match):
    for lib in LIBS:
        with pytest.raises(exc, match=match):
            scenario(lib)


@pytest.fixture(autouse=True)
def no_level_left():
    yield
    assert forward_grad._state.level == -1
    while torch.autograd.forward_ad._current_level >= 0:  # (a failed torch scenario)
        torch.autograd.forward_ad.exit_dual_level()


def _values(lib, *shape, seed=0):
    rng = np.random.default_rng(seed)
    return lib.tensor(rng.standard_normal(shape))


# ---- levels and packing ----------------------------------------------------------------------
def test_level_numbers_and_tangent_deleted_on_exit():
    def scenario(lib):
        x, t = _values(lib, 3), _values(lib, 3, seed=1)
        with fw(lib).dual_level() as level:
            d = fw(lib).make_dual(x, t)
            inside = fw(lib).unpack_dual(d).tangent
        return level, inside, fw(lib).unpack_dual(d).tangent, fw(lib).unpack_dual(d).primal

    _both(scenario)


def test_enter_and_exit_by_hand():
    def scenario(lib):
        level = fw(lib).enter_dual_level()
        d = fw(lib).make_dual(_values(lib, 2), _values(lib, 2, seed=1))
        y = fw(lib).unpack_dual(d * d).tangent
        fw(lib).exit_dual_level(level=level)
        return level, y

    _both(scenario)


@pytest.mark.parametrize(
    "scenario, exc, match",
    [
        (lambda lib: fw(lib).make_dual(_values(lib, 2), _values(lib, 2)), RuntimeError,
         "no level exists, make sure to enter_dual_level"),
        (lambda lib: fw(lib).exit_dual_level(), RuntimeError, "Dual level must be a positive"),
    ],
    ids=["make_dual-outside-a-level", "exit-without-a-level"],
)  # fmt: skip
def test_errors_outside_a_level(scenario, exc, match):
    _raises_both(scenario, exc, match)


def _in_level(body):
    def scenario(lib):
        with fw(lib).dual_level():
            return body(lib)

    return scenario


@pytest.mark.parametrize(
    "body, exc, match",
    [
        (lambda lib: fw(lib).enter_dual_level(), RuntimeError,
         "Nested forward mode AD is not supported at the moment"),
        (lambda lib: fw(lib).make_dual(_values(lib, 2), _values(lib, 3)), RuntimeError,
         re.escape("different size than that of the original Tensor, this is not supported. "
                   "Tensor is of size [2] while the given forward gradient is of size [3].")),
        (lambda lib: fw(lib).make_dual(_values(lib, 2), lib.ones(2, dtype=lib.int64)),
         ValueError, "Expected tangent to be floating point or complex, but got"),
        (lambda lib: fw(lib).make_dual(lib.ones(2, dtype=lib.int64), _values(lib, 2)),
         ValueError, "Expected primal to be floating point or complex, but got"),
        (lambda lib: fw(lib).make_dual(fw(lib).make_dual(_values(lib, 2), _values(lib, 2)),
                                       _values(lib, 2)), RuntimeError,
         "based on a Tensor that already has a forward gradient at the same level 0"),
        (lambda lib: fw(lib).make_dual(_values(lib, 2),
                                       fw(lib).make_dual(_values(lib, 2), _values(lib, 2))),
         RuntimeError, "has a forward gradient at the same level"),
        (lambda lib: fw(lib).exit_dual_level(level=1), RuntimeError,
         "Trying to exit a forward AD level that was not the last one"),
        (lambda lib: fw(lib).unpack_dual(fw(lib).make_dual(_values(lib, 2), _values(lib, 2)),
                                         level=1), RuntimeError,
         "Invalid level given to _fw_primal"),
        (lambda lib: lib.add(_values(lib, 2), _values(lib, 2),
                             out=fw(lib).make_dual(_values(lib, 2), _values(lib, 2))),
         NotImplementedError, "Trying to use forward AD with add_out .* out= function"),
    ],
    ids=["nested-level", "tangent-size", "integral-tangent", "integral-primal",
         "dual-of-a-dual", "tangent-is-dual", "exit-another-level", "unpack-another-level",
         "out="],
)  # fmt: skip
def test_errors_in_a_level(body, exc, match):
    _raises_both(_in_level(body), exc, match)


def test_make_dual_is_a_view_sharing_memory_and_version():
    def scenario(lib):
        x, t = _values(lib, 3), _values(lib, 3, seed=1)
        with fw(lib).dual_level():
            d = fw(lib).make_dual(x, t)
            same_tangent = fw(lib).unpack_dual(d).tangent is t
            x.add_(1)
            p = fw(lib).unpack_dual(d).primal
            return same_tangent, d._is_view(), d._version == x._version, p, d.grad_fn is None

    _both(scenario)


def test_tangent_of_another_layout_is_copied():
    def scenario(lib):
        x = _values(lib, 3, 2).t()
        t = _values(lib, 2, 3, seed=1)
        with fw(lib).dual_level():
            d = fw(lib).make_dual(x, t)
            tangent = fw(lib).unpack_dual(d).tangent
            return tangent is t, tangent.stride() == x.stride(), tangent

    _both(scenario)


def test_printing_shows_the_tangent():
    with ng_fwAD.dual_level():
        d = ng_fwAD.make_dual(ng.tensor([1.0, 2.0]), ng.tensor([3.0, 4.0]))
        assert repr(d) == "tensor([1., 2.], tangent=tensor([3., 4.]))"
        assert "tangent=" not in repr(ng_fwAD.unpack_dual(d).primal)
    assert "tangent=" not in repr(d)


# ---- grad modes, reverse mode through tangents -----------------------------------------------
def test_tangents_are_computed_under_no_grad_and_not_in_inference_mode():
    def scenario(lib):
        x = _values(lib, 3).requires_grad_()
        t = _values(lib, 3, seed=1).requires_grad_()
        with fw(lib).dual_level():
            d = fw(lib).make_dual(x, t)
            with lib.no_grad():
                y = d.exp() * 3
            p, ty = fw(lib).unpack_dual(y)
            with lib.inference_mode():
                z = fw(lib).unpack_dual(d.clone().sin()).tangent
            return p.requires_grad, ty.requires_grad, ty, z

    _both(scenario)


def test_detach_drops_the_tangent():
    def scenario(lib):
        with fw(lib).dual_level():
            d = fw(lib).make_dual(_values(lib, 3), _values(lib, 3, seed=1))
            a = fw(lib).unpack_dual(d.detach() * 2).tangent
            c = d.clone()
            c.detach_()
            return a, fw(lib).unpack_dual(c * 2).tangent

    _both(scenario)


def test_reverse_mode_through_packing_and_tangents():
    def scenario(lib):
        x = _values(lib, 3).requires_grad_()
        t = _values(lib, 3, seed=1).requires_grad_()
        with fw(lib).dual_level():
            d = fw(lib).make_dual(x, t)
            p, tangent = fw(lib).unpack_dual(d)
            gp = lib.autograd.grad(p.sum(), (x, t), allow_unused=True, retain_graph=True)
            gt = lib.autograd.grad(tangent.sum(), (x, t), allow_unused=True)
            y = (d.sin() * d).sum()
            # the tangent of y depends on x and t: reverse over forward
            jv = fw(lib).unpack_dual(y).tangent
            g = lib.autograd.grad(jv, (x, t))
            return (*gp, *gt, jv, *g)

    _both(scenario)


def test_forward_over_reverse_gives_a_hessian_vector_product():
    def scenario(lib):
        x = _values(lib, 4).requires_grad_()
        v = _values(lib, 4, seed=1)
        with fw(lib).dual_level():
            d = fw(lib).make_dual(x, v)
            (g,) = lib.autograd.grad((d.tanh() * d.exp()).sum() ** 2, d, create_graph=True)
            return g, fw(lib).unpack_dual(g).tangent

    _both(scenario)


def test_forward_over_reverse_without_create_graph():
    def scenario(lib):
        with fw(lib).dual_level():
            d = fw(lib).make_dual(_values(lib, 4).requires_grad_(), _values(lib, 4, seed=1))
            (g,) = lib.autograd.grad((d.tanh() * d.sigmoid()).sum(), d)
            return g, fw(lib).unpack_dual(g).tangent

    _both(scenario)


# ---- in place and views ----------------------------------------------------------------------
def test_in_place_updates_the_tangent_in_place():
    def scenario(lib):
        x, t = _values(lib, 3), _values(lib, 3, seed=1)
        with fw(lib).dual_level():
            d = fw(lib).make_dual(x, t)
            d *= 2
            d.add_(d.sin())
            return fw(lib).unpack_dual(x).tangent, t, fw(lib).unpack_dual(d).tangent

    _both(scenario)


def test_in_place_on_a_plain_tensor_gives_it_a_tangent():
    def scenario(lib):
        with fw(lib).dual_level():
            d = fw(lib).make_dual(_values(lib, 3), _values(lib, 3, seed=1))
            a = _values(lib, 3, seed=2)
            a += d
            b = _values(lib, 3, seed=3)
            b.mul_(d)
            c = _values(lib, 3, seed=4)
            c.copy_(d.exp())
            a_t = fw(lib).unpack_dual(a).tangent
            a.mul_(3)  # a's own tangent, not d's, changes
            return (
                a_t,
                fw(lib).unpack_dual(d).tangent,
                *(fw(lib).unpack_dual(z).tangent for z in (b, c)),
            )

    _both(scenario)


def test_views_share_their_tangent_with_the_base():
    def scenario(lib):
        x, t = _values(lib, 2, 3), _values(lib, 2, 3, seed=1)
        with fw(lib).dual_level():
            d = fw(lib).make_dual(x, t)
            row = d[1]
            row.mul_(d[0])
            col = d.transpose(0, 1)[2]
            col.exp_()
            return fw(lib).unpack_dual(d).tangent, fw(lib).unpack_dual(row).tangent, t

    _both(scenario)


def test_in_place_on_a_view_of_a_plain_tensor_gives_the_base_a_tangent():
    def scenario(lib):
        with fw(lib).dual_level():
            d = fw(lib).make_dual(_values(lib, 2), _values(lib, 2, seed=1))
            base = _values(lib, 2, 2, seed=2)
            view = base.transpose(0, 1)
            view[0] = d
            view *= 2
            baz = _values(lib, 3, seed=3)
            baz[1:] = d.sin()
            detached = _values(lib, 2, seed=4)
            detached.detach().add_(d)
            return (
                fw(lib).unpack_dual(base).tangent,
                fw(lib).unpack_dual(view).tangent,
                fw(lib).unpack_dual(baz).tangent,
                fw(lib).unpack_dual(detached).tangent,
            )

    _both(scenario)


def test_in_place_view_ops_change_the_tangent_layout():
    def scenario(lib):
        with fw(lib).dual_level():
            d = fw(lib).make_dual(_values(lib, 2, 3), _values(lib, 2, 3, seed=1)).clone()
            d.t_()
            d.unsqueeze_(0)
            return (fw(lib).unpack_dual(d).tangent,)

    _both(scenario)


def test_non_differentiable_outputs_have_no_tangent():
    def scenario(lib):
        with fw(lib).dual_level():
            d = fw(lib).make_dual(_values(lib, 4), _values(lib, 4, seed=1))
            values, indices = d.sort()
            eq = fw(lib).unpack_dual(d == d).tangent
            return fw(lib).unpack_dual(values).tangent, fw(lib).unpack_dual(indices).tangent, eq

    _both(scenario)


# ---- custom Functions ------------------------------------------------------------------------
def _functions(lib, seen=None):
    seen = {} if seen is None else seen

    class MySin(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_forward(x)
            ctx.k = k
            seen["inner"] = fw(lib).unpack_dual(x).tangent  # forward runs with forward AD off
            return x.sin() * k

        @staticmethod
        def backward(ctx, g):
            return g, None

        @staticmethod
        def jvp(ctx, x_t, k_t):
            (x,) = ctx.saved_tensors
            seen["k_t"] = k_t
            return x_t * x.cos() * ctx.k

    class Two(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * 2, y * 3

        @staticmethod
        def backward(ctx, a, b):
            return a * 2, b * 3

        @staticmethod
        def jvp(ctx, x_t, y_t):
            return x_t * 2, y_t * 3  # y has no tangent: zeros

    class NoJvp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class TooMany(NoJvp):
        @staticmethod
        def jvp(ctx, x_t):
            return x_t, x_t

    class WrongShape(NoJvp):
        @staticmethod
        def jvp(ctx, x_t):
            return x_t.sum()

    return MySin, Two, NoJvp, TooMany, WrongShape


def test_custom_function_jvp():
    def scenario(lib):
        seen = {}
        MySin, Two, NoJvp, _, _ = _functions(lib, seen)
        x = _values(lib, 3)
        with fw(lib).dual_level():
            d = fw(lib).make_dual(x, _values(lib, 3, seed=1))
            y = MySin.apply(d, 2.0)
            a, b = Two.apply(d, x)
            plain = NoJvp.apply(x)  # no input has a tangent: jvp is not needed
            return (
                fw(lib).unpack_dual(y).tangent,
                seen["inner"],
                seen["k_t"],
                fw(lib).unpack_dual(a).tangent,
                fw(lib).unpack_dual(b).tangent,
                fw(lib).unpack_dual(plain).tangent,
            )

    _both(scenario)


@pytest.mark.parametrize(
    "which, exc, match",
    [
        (2, NotImplementedError, "You must implement the jvp function for custom autograd"),
        (3, RuntimeError, re.escape("invalid number of forward gradients (expected 1 but got 2)")),
        (4, RuntimeError, "different size than that of the original Tensor"),
    ],
    ids=["no-jvp", "too-many", "wrong-shape"],
)
def test_custom_function_jvp_errors(which, exc, match):
    def body(lib):
        fn = _functions(lib)[which]
        return fn.apply(fw(lib).make_dual(_values(lib, 3), _values(lib, 3, seed=1)))

    _raises_both(_in_level(body), exc, match)


# ---- autograd.functional -----------------------------------------------------------------------
def _f(a, b):
    return a.sin() * b.sum(), (a[:2] * b).exp()


@pytest.mark.parametrize(
    "func, shapes",
    [
        (_f, [(3,), (1, 2)]),
        (lambda a: a.tanh().cumsum(0), [(4,)]),
        (lambda a, b: a @ b, [(2, 3), (3,)]),
        (lambda a: (a.exp(), a.sum()), [(2, 2)]),
    ],
    ids=["two-in-two-out", "one-in-one-out", "matmul", "one-in-two-out"],
)
def test_forward_mode_jacobian(func, shapes):
    def scenario(lib):
        inputs = tuple(_values(lib, *s, seed=k) for k, s in enumerate(shapes))
        inputs = inputs[0] if len(inputs) == 1 else inputs
        fwd = lib.autograd.functional.jacobian(
            func, inputs, vectorize=True, strategy="forward-mode"
        )
        rev = lib.autograd.functional.jacobian(func, inputs)
        flat = []
        for part in (fwd, rev):
            stack = [part]
            while stack:
                item = stack.pop(0)
                if isinstance(item, (tuple, list)):
                    flat.append(type(item).__name__)
                    stack[:0] = list(item)
                else:
                    flat.append(item)
        return flat

    _both(scenario)


def test_forward_over_reverse_hessian():
    def scenario(lib):
        x, y = _values(lib, 3), _values(lib, 2, seed=1)
        h = lib.autograd.functional.hessian(
            lambda a, b: (a.pow(3) * a.sin()).sum() * b.exp().sum(),
            (x, y),
            vectorize=True,
            outer_jacobian_strategy="forward-mode",
        )
        return [block for row in h for block in row]

    _both(scenario)


@pytest.mark.parametrize(
    "kw, exc, match",
    [
        (dict(strategy="forward-mode"), NotImplementedError,
         "only implemented for `vectorize=True`"),
        (dict(strategy="forward-mode", vectorize=True, create_graph=True),
         NotImplementedError, "`create_graph=True` and `strategy=\"forward-mode\"`"),
        (dict(strategy="forward-mode", vectorize=True, strict=True), RuntimeError,
         "`strict=True` and `strategy=\"forward-mode\"`"),
        (dict(strategy="sideways"), AssertionError, "Expected strategy to be either"),
    ],
    ids=["not-vectorized", "create-graph", "strict", "unknown-strategy"],
)  # fmt: skip
def test_forward_mode_jacobian_errors(kw, exc, match):
    _raises_both(lambda lib: lib.autograd.functional.jacobian(lib.sin, _values(lib, 2), **kw),
                 exc, match)  # fmt: skip


def test_jvp_and_hvp_agree_with_forward_mode():
    x, v = _values(ng, 4), _values(ng, 4, seed=1)
    f = lambda a: (a.sin() * a.exp()).cumsum(0)  # noqa: E731
    _, jv = ng.autograd.functional.jvp(f, x, v)
    with ng_fwAD.dual_level():
        forward = ng_fwAD.unpack_dual(f(ng_fwAD.make_dual(x, v))).tangent
    np.testing.assert_allclose(_np(jv), _np(forward), rtol=1e-12)
    g = lambda a: (a.sin() * a.exp()).sum()  # noqa: E731
    _, hv = ng.autograd.functional.hvp(g, x, v)
    with ng_fwAD.dual_level():
        d = ng_fwAD.make_dual(x.clone().requires_grad_(), v)
        (grad,) = ng.autograd.grad(g(d), d, create_graph=True)
        np.testing.assert_allclose(_np(hv), _np(ng_fwAD.unpack_dual(grad).tangent), rtol=1e-12)


# ---- what a custom Function's jvp must return ------------------------------------------------
def _jvp_function(lib, forward, jvp, mark=None, scale=1):
    class Fn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = forward(ctx, x)
            if mark == "non_differentiable":
                ctx.mark_non_differentiable(out)
            elif mark == "dirty":
                ctx.mark_dirty(out)
            return out

        @staticmethod
        def vjp(ctx, g):
            return g * scale

        @staticmethod
        def jvp(ctx, t):
            return jvp(t)

    return Fn


@pytest.mark.parametrize(
    "forward, jvp, mark, match",
    [
        (lambda ctx, x: x, lambda t: t.view_as(t), None, None),
        (lambda ctx, x: x, lambda t: t * 2, None, r"is returning a view \(or an input as-is\)"),
        (lambda ctx, x: x.narrow(0, 0, 1), lambda t: t.narrow(0, 0, 1), None, None),
        (lambda ctx, x: x.narrow(0, 0, 1), lambda t: t.narrow(0, 0, 1).clone().view(1),
         None, "jvp is not returning a view of the given"),
        (lambda ctx, x: x.mul_(2), lambda t: t.mul_(2), "dirty", None),
        (lambda ctx, x: x.mul_(2), lambda t: t * 2, "dirty",
         "not modifying the forward mode gradients inplace"),
        (lambda ctx, x: x * 2, lambda t: t * 2, "non_differentiable",
         "You should return None at that position instead"),
        (lambda ctx, x: x * 2, lambda t: None, "non_differentiable", None),
    ],
    ids=["input-as-is", "input-as-is-not-a-view", "view", "view-of-another", "dirty",
         "dirty-not-in-place", "non-differentiable-with-tangent", "non-differentiable"],
)  # fmt: skip
def test_custom_function_jvp_checks(forward, jvp, mark, match):
    def body(lib):
        fn = _jvp_function(lib, forward, jvp, mark)
        x = fw(lib).make_dual(_values(lib, 2), _values(lib, 2, seed=1)).clone()
        out = fn.apply(x)
        return fw(lib).unpack_dual(out).tangent, fw(lib).unpack_dual(x).tangent

    if match is None:
        _both(_in_level(body))
    else:
        _raises_both(_in_level(body), RuntimeError, match)


def test_gradcheck_in_forward_mode():
    def scenario(lib):
        right = _jvp_function(lib, lambda ctx, x: x * 2, lambda t: t * 2, scale=2)
        wrong = _jvp_function(lib, lambda ctx, x: x * 2, lambda t: t * 3, scale=2)
        x = _values(lib, 3).requires_grad_()
        ok = lib.autograd.gradcheck(right.apply, (x,), check_forward_ad=True)
        bad = lib.autograd.gradcheck(
            wrong.apply, (x,), check_forward_ad=True, check_backward_ad=False,
            raise_exception=False,
        )  # fmt: skip
        sin = lib.autograd.gradcheck(lambda a: a.sin().cumsum(0), (x,), check_forward_ad=True)
        return ok, bad, sin

    _both(scenario)
    wrong = _jvp_function(ng, lambda ctx, x: x * 2, lambda t: t * 3)
    with pytest.raises(
        RuntimeError, match="Jacobian computed with forward mode mismatch for output 0"
    ):
        ng.autograd.gradcheck(
            wrong.apply, (_values(ng, 3).requires_grad_(),), check_forward_ad=True
        )


@pytest.mark.parametrize("primal_grad", [False, True])
@pytest.mark.parametrize("tangent_grad", [False, True])
def test_a_tangent_requires_grad_where_torchs_does(primal_grad, tangent_grad):
    def scenario(lib):
        x = _values(lib, 3).requires_grad_(primal_grad)
        v = _values(lib, 3, seed=1).requires_grad_(tangent_grad)
        with fw(lib).dual_level():
            d = fw(lib).make_dual(x, v)
            outs = [d.pow(3), d.atan(), d.cumprod(0), d * d, d.sum(), d[1:]]  # generic and rules
            tangents = [fw(lib).unpack_dual(o).tangent for o in outs]
            return [t.requires_grad for t in tangents] + tangents

    _both(scenario)


def test_a_long_level_keeps_no_dead_tensors():
    with ng_fwAD.dual_level():
        x = ng_fwAD.make_dual(_values(ng, 3), _values(ng, 3, seed=1))
        for _ in range(5000):
            y = (x * 2).sin()
        assert len(forward_grad._state.duals) < 2100  # 10000 tensors had a tangent
        assert ng_fwAD.unpack_dual(y).tangent is not None
    assert ng_fwAD.unpack_dual(x).tangent is None and ng_fwAD.unpack_dual(y).tangent is None
