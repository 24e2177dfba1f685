"""``autograd.functional`` and ``gradcheck`` against PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

X = np.array([0.3, -1.2, 0.8])
Y = np.array([[0.5, 1.5], [-0.7, 0.2]])


def f_vec(lib):
    return lambda x: (x.tanh() ** 3) * x.sin()


def f_scalar(lib):
    return lambda x: (x.tanh() ** 3).sum() + (x * x).prod()


def f_two(lib):
    return lambda x, y: (x.unsqueeze(1) * y.sum(0)).exp().sum(1)


def _np(t):
    if isinstance(t, (tuple, list)):
        return [_np(u) for u in t]
    return np.asarray(t.detach().numpy())


def _both(name, build, *args, **kwargs):
    """Run ``<lib>.autograd.functional.<name>`` on both libraries; return (ours, theirs)."""
    out = []
    for lib in (ng, torch):
        conv = [lib.tensor(a, dtype=lib.float64) for a in args]
        kw = {k: (lib.tensor(v, dtype=lib.float64) if isinstance(v, np.ndarray) else v)
              for k, v in kwargs.items()}  # fmt: skip
        fn = getattr(lib.autograd.functional, name)
        inputs = conv[0] if len(conv) == 1 else tuple(conv)
        out.append(_np(fn(build(lib), inputs, **kw)))
    return out


def _assert_close(a, b):
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b):
            _assert_close(x, y)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_vjp():
    _assert_close(*_both("vjp", f_vec, X, v=np.array([1.0, -2.0, 0.5])))


def test_jvp():
    _assert_close(*_both("jvp", f_vec, X, v=np.array([1.0, -2.0, 0.5])))


def test_jacobian_single_and_tuple_inputs():
    _assert_close(*_both("jacobian", f_vec, X))
    _assert_close(*_both("jacobian", f_two, X[:2], Y))


def test_hessian():
    _assert_close(*_both("hessian", f_scalar, X))


@pytest.mark.parametrize("name", ["hvp", "vhp"])
def test_hessian_vector_products(name):
    _assert_close(*_both(name, f_scalar, X, v=np.array([0.1, 0.2, -0.3])))


def test_vjp_needs_v_for_non_scalar_output():
    for lib in (ng, torch):
        with pytest.raises(RuntimeError, match="The vector v can only be None"):
            lib.autograd.functional.vjp(f_vec(lib), lib.tensor(X))


def test_gradcheck_catches_a_wrong_backward():
    class WrongSin(ng.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos() * 1.01  # 1% off

    x = ng.tensor(X, requires_grad=True)
    from nbgrad.autograd.gradcheck import GradcheckError

    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        ng.autograd.gradcheck(WrongSin.apply, (x,))
    assert ng.autograd.gradcheck(WrongSin.apply, (x,), raise_exception=False) is False


def test_gradgradcheck_catches_a_wrong_double_backward():
    class NotTwiceDifferentiable(ng.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * (x * x).detach()  # first order right, second order lost

    x = ng.tensor(X, requires_grad=True)
    assert ng.autograd.gradcheck(NotTwiceDifferentiable.apply, (x,))
    assert not ng.autograd.gradgradcheck(NotTwiceDifferentiable.apply, (x,), raise_exception=False)


def _batched(lib, create_graph):
    x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
    unused = lib.tensor(X, dtype=lib.float64, requires_grad=True)
    y = (x.tanh() ** 3) * x.sin()
    basis = lib.eye(3, dtype=lib.float64)  # one vector per row: the rows of the Jacobian
    jac, none = lib.autograd.grad(
        y, [x, unused], basis, is_grads_batched=True, create_graph=create_graph, allow_unused=True
    )
    out = [jac.detach().numpy().tolist(), none, jac.requires_grad]
    if create_graph:
        out.append(lib.autograd.grad(jac.sum(), x)[0].numpy().tolist())
    return out


@pytest.mark.parametrize("create_graph", [False, True])
def test_grad_with_batched_grad_outputs_like_pytorch(create_graph):
    ours, theirs = _batched(ng, create_graph), _batched(torch, create_graph)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    assert ours[1:3] == theirs[1:3]
    if create_graph:
        np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-12)


def test_batched_grad_outputs_of_the_wrong_shape_raise_like_pytorch():
    for lib in (ng, torch):
        x = lib.tensor(X, requires_grad=True)
        with pytest.raises(RuntimeError, match="we interpret the first dimension of each"):
            lib.autograd.grad(x * 2, x, lib.ones(3), is_grads_batched=True)
