"""``affine_grid`` and ``grid_sample`` against PyTorch: outputs and the gradients w.r.t. the
input, the grid and theta (float64, 1e-6) in 2 and 3 dims, every mode, padding mode and
``align_corners``; gradcheck and gradgradcheck; node names, errors and warnings."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

CASES = list(
    itertools.product((2, 3), ("bilinear", "nearest"), ("zeros", "border", "reflection"), (0, 1))
)


@pytest.mark.parametrize("k, mode, padding_mode, align_corners", CASES)
def test_grid_sample_and_affine_grid_match_pytorch(k, mode, padding_mode, align_corners):
    rng = np.random.default_rng(k)
    x = rng.standard_normal((2, 3) + (4, 5, 3)[:k])
    grid = rng.uniform(-1.3, 1.3, (2,) + (3, 4, 2)[:k] + (k,))  # some points outside
    theta = rng.standard_normal((2, k, k + 1))
    upstream = rng.standard_normal((2, 3) + (3, 4, 2)[:k])
    results = []
    for lib in (torch, ng):
        F = lib.nn.functional
        xi, gi, ti = (lib.tensor(a, requires_grad=True) for a in (x, grid, theta))
        sampled = F.grid_sample(xi, gi, mode, padding_mode, bool(align_corners))
        affine = F.affine_grid(ti, (2, 3) + (3, 2, 4)[:k], align_corners=bool(align_corners))
        resampled = F.grid_sample(xi, affine, mode, padding_mode, bool(align_corners))
        loss = (sampled * lib.tensor(upstream)).sum() + (resampled**2).sum() + affine.sum()
        grads = lib.autograd.grad(loss, (xi, gi, ti))
        arrays = [t.detach().numpy() for t in (sampled, affine, resampled, *grads)]
        names = (affine.grad_fn.name(), sampled.grad_fn.name(), resampled.grad_fn.name())
        results.append((arrays, names))
    (theirs, their_names), (ours, our_names) = results
    sampler = f"GridSampler{k}DBackward0"
    assert our_names == their_names == ("AffineGridGeneratorBackward0", sampler, sampler)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


F = ng.nn.functional


@pytest.mark.parametrize(
    "fn, shapes",
    [
        (
            lambda x, g: F.grid_sample(x, g.tanh() * 1.2, align_corners=False),
            [(1, 2, 3, 4), (1, 2, 3, 2)],
        ),
        (
            lambda x, g: F.grid_sample(x, g.tanh(), padding_mode="reflection", align_corners=True),
            [(1, 1, 2, 3, 2), (1, 2, 1, 2, 3)],
        ),
        (lambda t: F.affine_grid(t, (1, 1, 2, 3), align_corners=False), [(1, 2, 3)]),
        (lambda t: F.affine_grid(t, (2, 1, 2, 1, 3), align_corners=True), [(2, 3, 4)]),
    ],
)
def test_gradcheck(fn, shapes):
    rng = np.random.default_rng(5)
    inputs = [ng.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]
    assert ng.autograd.gradcheck(fn, inputs)
    assert ng.autograd.gradgradcheck(fn, inputs)


def test_errors_and_warnings_as_pytorch():
    for lib in (torch, ng):
        f = lib.nn.functional
        x, g = lib.zeros(1, 1, 2, 2), lib.zeros(1, 2, 2, 2)
        with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
            f.grid_sample(x, g)
        with pytest.raises(ValueError, match="expected mode to be 'bilinear'"):
            f.grid_sample(x, g, mode="cubic", align_corners=False)
        with pytest.raises(ValueError, match="expected padding_mode"):
            f.grid_sample(x, g, padding_mode="wrap", align_corners=False)
        with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices"):
            f.affine_grid(lib.zeros(1, 3, 3), (1, 1, 2, 2), align_corners=False)
        with pytest.raises(NotImplementedError, match="only supports 4D and 5D sizes"):
            f.affine_grid(lib.zeros(1, 2, 3), (1, 1, 2), align_corners=False)
