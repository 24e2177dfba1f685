"""The layout of ``.grad`` (PyTorch's layout contract in AccumulateGrad): a leaf that is dense
gets its gradient in its own strides, whatever the layout of the gradient that arrives (a
product with a channels-last tensor, a broadcast); a leaf that is not dense gets a row-major
gradient. Checked against torch."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

SHAPE = (2, 3, 4, 5)


def strides(lib, fmt_a, fmt_b):
    rng = np.random.default_rng(0)
    a = lib.tensor(rng.random(SHAPE)).to(memory_format=getattr(lib, fmt_a))
    b = lib.tensor(rng.random(SHAPE)).to(memory_format=getattr(lib, fmt_b))
    a.requires_grad_()
    b.requires_grad_()
    out = []
    a.sum().backward()  # a broadcast gradient
    b.sum().backward()
    out += [a.grad.stride(), b.grad.stride()]
    a.grad = b.grad = None
    (a * b).sum().backward()  # each gets a gradient in the other's layout
    out += [a.grad.stride(), b.grad.stride(), a.stride(), b.stride()]
    np.testing.assert_allclose(np.asarray(a.grad.detach()), np.asarray(b.detach()))
    return out


@pytest.mark.parametrize(
    "fmt_a, fmt_b",
    list(itertools.product(("contiguous_format", "channels_last"), repeat=2)),
)
def test_a_dense_leaf_gets_its_own_strides(fmt_a, fmt_b):
    ours = strides(ng, fmt_a, fmt_b)
    assert ours == strides(torch, fmt_a, fmt_b)
    assert ours[2] == ours[4] and ours[3] == ours[5]


def test_a_leaf_that_is_not_dense_gets_a_row_major_gradient():
    def run(lib):
        c = lib.empty_strided((2, 2), (4, 2)).copy_(lib.ones(2, 2))  # not dense
        c.requires_grad_()
        d = lib.tensor([[1.0, 2.0], [3.0, 4.0]]).t()  # column-major gradient for c
        c.sum().backward()
        out = [c.stride(), c.grad.stride()]
        c.grad = None
        (c * d).sum().backward()
        return out + [c.grad.stride()]

    assert run(ng) == run(torch) == [(4, 2), (2, 1), (2, 1)]


def test_empty_strided():
    def run(lib):
        t = lib.empty_strided((2, 3), (1, 2), dtype=lib.float64, requires_grad=True)
        out = [t.shape, t.stride(), t.is_contiguous(), t.requires_grad, t.is_leaf]
        try:
            lib.empty_strided((2,), (1, 2))
        except RuntimeError as e:
            out.append(str(e))
        return out

    ours, theirs = run(ng), run(torch)
    assert ours[1:] == theirs[1:] and tuple(ours[0]) == tuple(theirs[0])
