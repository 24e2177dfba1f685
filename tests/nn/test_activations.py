"""PReLU, GLU, Mish, Hardswish, Hardsigmoid, SELU, CELU, Softmin, Softsign, Softshrink,
Hardshrink, Tanhshrink, Threshold (``nbgrad/nn/_functional_activations.py``, rows in
``nbgrad/derivatives/activation.py``) against PyTorch: values, gradients, second derivatives,
``grad_fn`` names, in-place forms, reprs and errors."""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

TOL = dict(rtol=1e-6, atol=1e-6)

# (name, kwargs of the functional form) ; the input has entries near the kinks too
CASES = [
    ("glu", {}),
    ("glu", {"dim": 0}),
    ("mish", {}),
    ("hardswish", {}),
    ("hardsigmoid", {}),
    ("selu", {}),
    ("celu", {}),
    ("celu", {"alpha": 0.5}),
    ("softmin", {"dim": 1}),
    ("softmin", {"dim": 0}),
    ("softsign", {}),
    ("softshrink", {}),
    ("softshrink", {"lambd": 1.5}),
    ("hardshrink", {}),
    ("hardshrink", {"lambd": 0.2}),
    ("tanhshrink", {}),
    ("threshold", {"threshold": 0.3, "value": -2.0}),
]
IDS = [f"{n}-{kw}" for n, kw in CASES]


def _input(shape=(4, 6), seed=0):
    x = np.random.default_rng(seed).standard_normal(shape) * 3
    return x


def _pair(x):
    return ng.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_functional_matches_pytorch(name, kw):
    x = _input()
    a, b = _pair(x)
    out_a = getattr(ng.nn.functional, name)(a, **kw)
    out_b = getattr(torch.nn.functional, name)(b, **kw)
    np.testing.assert_allclose(out_a.detach().numpy(), out_b.detach().numpy(), **TOL)
    assert out_a.grad_fn.name() == out_b.grad_fn.name()
    g = np.random.default_rng(1).standard_normal(tuple(out_b.shape))
    (ga,) = ng.autograd.grad(out_a, a, ng.tensor(g), create_graph=True)
    (gb,) = torch.autograd.grad(out_b, b, torch.tensor(g), create_graph=True)
    np.testing.assert_allclose(ga.detach().numpy(), gb.detach().numpy(), **TOL)
    # second order: the gradient of sum(grad ** 2); where nbgrad's gradient has no graph
    # (piecewise linear), PyTorch's second derivative is zero, or not implemented (hardsigmoid)
    if name == "hardsigmoid":
        assert not ga.requires_grad
        with pytest.raises(RuntimeError, match="not implemented"):
            torch.autograd.grad((gb * gb).sum(), b)
        return
    if name in ("softshrink", "hardshrink"):
        assert not ga.requires_grad
        (ggb,) = torch.autograd.grad((gb * gb).sum(), b)
        assert not ggb.abs().max().item()
        return
    (gga,) = ng.autograd.grad((ga * ga).sum(), a)
    (ggb,) = torch.autograd.grad((gb * gb).sum(), b)
    np.testing.assert_allclose(gga.numpy(), ggb.numpy(), **TOL)


# one slope per channel (dim 1), or a single slope; a 1-d input has no channel dim: one slope
PRELU_CASES = [(c, s) for s in [(2, 3, 4, 5), (5, 3)] for c in (1, 3)] + [(1, (3,))]


@pytest.mark.parametrize("channels, shape", PRELU_CASES, ids=str)
def test_prelu_matches_pytorch(channels, shape):
    x = _input(shape)
    w = np.random.default_rng(2).random(channels)
    a, b = _pair(x)
    wa, wb = _pair(w)
    out_a, out_b = ng.nn.functional.prelu(a, wa), torch.nn.functional.prelu(b, wb)
    np.testing.assert_allclose(out_a.detach().numpy(), out_b.detach().numpy(), **TOL)
    assert out_a.grad_fn.name() == out_b.grad_fn.name() == "PreluKernelBackward0"
    g = np.random.default_rng(3).standard_normal(shape)
    ga = ng.autograd.grad(out_a, (a, wa), ng.tensor(g), create_graph=True)
    gb = torch.autograd.grad(out_b, (b, wb), torch.tensor(g), create_graph=True)
    for u, v in zip(ga, gb):
        np.testing.assert_allclose(u.detach().numpy(), v.detach().numpy(), **TOL)
    gga = ng.autograd.grad(sum((u * u).sum() for u in ga), (a, wa))
    ggb = torch.autograd.grad(sum((u * u).sum() for u in gb), (b, wb))
    for u, v in zip(gga, ggb):
        np.testing.assert_allclose(u.numpy(), v.numpy(), **TOL)


@pytest.mark.parametrize(
    "name,kw",
    [("mish", {}), ("hardswish", {}), ("hardsigmoid", {}), ("selu", {}), ("celu", {"alpha": 2.0})],
)
def test_inplace_matches_pytorch(name, kw):
    x = _input()
    a, b = _pair(x)
    ya, yb = a * 1.0, b * 1.0
    out_a = getattr(ng.nn.functional, name)(ya, inplace=True, **kw)
    out_b = getattr(torch.nn.functional, name)(yb, inplace=True, **kw)
    assert out_a is ya and out_b is yb
    assert out_a.grad_fn.name() == out_b.grad_fn.name()
    np.testing.assert_allclose(out_a.detach().numpy(), out_b.detach().numpy(), **TOL)
    g = np.random.default_rng(1).standard_normal(x.shape)
    out_a.backward(ng.tensor(g))
    out_b.backward(torch.tensor(g))
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **TOL)


@pytest.mark.parametrize(
    "name,kw",
    [
        ("glu", {}),
        ("mish", {}),
        ("hardswish", {}),
        ("selu", {}),
        ("celu", {"alpha": 0.7}),
        ("softmin", {"dim": -1}),
        ("softsign", {}),
        ("softshrink", {}),
        ("tanhshrink", {}),
    ],
)
def test_gradcheck_and_gradgradcheck(name, kw):
    # away from the kinks, where finite differences are smooth
    x = np.random.default_rng(4).uniform(0.6, 2.5, (3, 4)) * np.array([1, -1, 1, -1])
    a = ng.tensor(x, requires_grad=True)

    def f(t):
        return getattr(ng.nn.functional, name)(t, **kw)

    assert ng.autograd.gradcheck(f, (a,))
    assert ng.autograd.gradgradcheck(f, (a,))


def test_prelu_gradgradcheck():
    x = np.random.default_rng(5).uniform(0.5, 2.0, (3, 2)) * np.array([1, -1])
    a = ng.tensor(x, requires_grad=True)
    w = ng.tensor([0.3, -0.2], dtype=ng.float64, requires_grad=True)
    assert ng.autograd.gradcheck(ng.nn.functional.prelu, (a, w))
    assert ng.autograd.gradgradcheck(ng.nn.functional.prelu, (a, w))


MODULES = [
    ("PReLU", (), {}),
    ("PReLU", (3,), {"init": 0.1}),
    ("GLU", (), {}),
    ("GLU", (0,), {}),
    ("Mish", (), {}),
    ("Mish", (True,), {}),
    ("Hardswish", (True,), {}),
    ("Hardsigmoid", (), {}),
    ("SELU", (), {}),
    ("SELU", (True,), {}),
    ("CELU", (), {}),
    ("CELU", (2.0, True), {}),
    ("Softmin", (1,), {}),
    ("Softmin", (), {}),
    ("Softsign", (), {}),
    ("Softshrink", (), {}),
    ("Softshrink", (0.3,), {}),
    ("Hardshrink", (), {}),
    ("Hardshrink", (1.2,), {}),
    ("Tanhshrink", (), {}),
    ("Threshold", (0.1, 20.0), {}),
    ("Threshold", (0.1, 20.0, True), {}),
]


@pytest.mark.parametrize("name,args,kw", MODULES, ids=[f"{m[0]}{m[1]}" for m in MODULES])
def test_module_repr_and_forward_match_pytorch(name, args, kw):
    ours, theirs = getattr(ng.nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(ours) == repr(theirs)
    ours, theirs = ours.double(), theirs.double()
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    for (_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), **TOL)
    x = _input((4, 3, 2)) if name == "PReLU" else _input()
    a, b = ng.tensor(x), torch.tensor(x)
    if name == "Softmin" and not args:
        with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
            out_a = ours(a)
        with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
            out_b = theirs(b)
    else:
        out_a, out_b = ours(a), theirs(b)
    np.testing.assert_allclose(out_a.detach().numpy(), out_b.detach().numpy(), **TOL)


def _raises_like(fn_ng, fn_torch):
    with pytest.raises(Exception) as expected:
        fn_torch()
    with pytest.raises(type(expected.value)) as got:
        fn_ng()
    return str(got.value), str(expected.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x: lib.nn.functional.glu(x[:, :5]),
        lambda lib, x: lib.nn.functional.glu(x.sum()),
        lambda lib, x: lib.nn.functional.glu(x, dim=2),
        lambda lib, x: lib.nn.functional.prelu(x, lib.ones(4, dtype=x.dtype)),
        lambda lib, x: lib.nn.functional.softshrink(x, -1.0),
        lambda lib, x: lib.nn.functional.celu(x, 0.0),
        lambda lib, x: lib.nn.functional.prelu(x, lib.ones(1)),
    ],
    ids=[
        "glu-odd",
        "glu-scalar",
        "glu-dim",
        "prelu-channels",
        "softshrink-neg",
        "celu-zero",
        "prelu-dtype",
    ],
)
def test_errors_match_pytorch(call):
    x = _input()
    ours, theirs = _raises_like(
        lambda: call(ng, ng.tensor(x)), lambda: call(torch, torch.tensor(x))
    )
    assert ours == theirs
