"""``Tensor.grad_dtype`` against PyTorch: its default, setting it (leaves only), ``.grad``
assignments it refuses, and the dtype of the gradient backward stores (cast to it, or left as
it comes with None); NOTE [grad_dtype]."""

from __future__ import annotations

import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")


def _outcome(fn):
    try:
        value = fn()
        return "ok", str(value).split(".")[-1]
    except RuntimeError as e:
        return "RuntimeError", str(e)


def _mismatched(lib):
    """The identity, whose backward hands back a float64 gradient."""

    class ToDouble(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g.to(lib.float64)

    return ToDouble.apply


def _story(lib):
    facts = []
    leaf = lib.tensor([1.0, 2.0], requires_grad=True)
    facts.append(_outcome(lambda: leaf.grad_dtype))
    leaf.grad_dtype = lib.float16
    facts.append(_outcome(lambda: leaf.grad_dtype))
    leaf.grad_dtype = None
    facts.append(leaf.grad_dtype is None)
    non_leaf = leaf * 2
    facts.append(_outcome(lambda: non_leaf.grad_dtype))

    def set_on_non_leaf():
        non_leaf.grad_dtype = lib.float16

    facts.append(_outcome(set_on_non_leaf))
    for grad_dtype, assigned in [
        ("default", lib.float32),
        ("default", lib.float64),
        (lib.float16, lib.float32),
        (lib.float64, lib.int64),
        (None, lib.float64),
    ]:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        if grad_dtype != "default":
            x.grad_dtype = grad_dtype

        def assign(x=x, assigned=assigned):
            x.grad = lib.ones(2, dtype=assigned)
            return x.grad.dtype

        facts.append(_outcome(assign))
    for grad_dtype, make_acc in [
        ("default", False),
        (None, False),
        (lib.float16, False),
        (None, True),
        (lib.float64, True),
    ]:
        d = lib.tensor([1.0, 2.0], requires_grad=True)
        if make_acc:  # an AccumulateGrad made before grad_dtype is set must follow it
            keep = d.clone()  # noqa: F841
        if grad_dtype != "default":
            d.grad_dtype = grad_dtype
        _mismatched(lib)(d).sum().backward()
        facts.append((str(d.grad.dtype).split(".")[-1], d.grad.tolist()))
    g = lib.tensor([1.0, 2.0], requires_grad=True)
    g.grad = lib.ones(2)
    g.grad_dtype = lib.float32

    def change_with_a_grad():
        g.grad_dtype = lib.float16

    facts.append(_outcome(change_with_a_grad))
    g.grad_dtype = None
    g.grad = None
    g.grad_dtype = lib.float16
    facts.append(_outcome(lambda: g.grad_dtype))
    k = lib.tensor([1.0, 2.0], requires_grad=True)
    k.grad_dtype = None
    (k * 2).sum().backward()
    k.grad = k.grad.to(lib.float64)
    (k * 3).sum().backward()  # accumulates into the float64 gradient, which stays float64
    facts.append((str(k.grad.dtype).split(".")[-1], k.grad.tolist()))
    return facts


@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf")
def test_grad_dtype_matches_pytorch():
    assert _story(ng) == _story(torch)
