"""Every layer's initial parameters drawn from PyTorch's distributions: bounds, mean and std over
many draws, and the constant ones exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import nbgrad as ng

# (constructor, how many layers to draw): each as the layer is made in PyTorch's nn
LAYERS = {
    "Linear(6, 5)": (lambda nn: nn.Linear(6, 5), 300),
    "Linear(40, 3)": (lambda nn: nn.Linear(40, 3), 300),
    "Linear(1, 1)": (lambda nn: nn.Linear(1, 1), 2000),
    "Conv2d(3, 4, 3)": (lambda nn: nn.Conv2d(3, 4, 3), 150),
    "Conv2d(2, 6, (1, 5), groups=2)": (lambda nn: nn.Conv2d(2, 6, (1, 5), groups=2), 300),
    "Embedding(10, 4)": (lambda nn: nn.Embedding(10, 4), 200),
    "Embedding(10, 4, padding_idx=2)": (lambda nn: nn.Embedding(10, 4, padding_idx=2), 200),
    "LayerNorm(5)": (lambda nn: nn.LayerNorm(5), 3),
    "BatchNorm1d(4)": (lambda nn: nn.BatchNorm1d(4), 3),
    "BatchNorm2d(3)": (lambda nn: nn.BatchNorm2d(3), 3),
}


def _draws(lib, make, n):
    """Each parameter and buffer of ``n`` fresh layers, stacked: name -> array (n, ...)."""
    out = {}
    for _ in range(n):
        layer = make(lib.nn)
        named = list(layer.named_parameters()) + list(layer.named_buffers())
        for name, p in named:
            out.setdefault(name, []).append(p.detach().numpy().astype(np.float64))
    return {k: np.stack(v) for k, v in out.items()}


def _excess_kurtosis(x):
    x = x[x != 0] if np.any(x == 0) else x.ravel()  # (a padding row of zeros left out)
    z = (x - x.mean()) / x.std()
    return float(np.mean(z**4) - 3)


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_layer_init_distribution_matches_pytorch(layer):
    make, n = LAYERS[layer]
    ng.manual_seed(0)
    torch.manual_seed(0)
    ours, theirs = _draws(ng, make, n), _draws(torch, make, n)
    assert sorted(ours) == sorted(theirs)
    for name in theirs:
        a, b = ours[name], theirs[name]
        assert a.shape == b.shape, name
        if np.all(b == b.reshape(n, -1)[:1].reshape(b.shape[1:])):  # constant: ones, zeros
            # constants (ones, zeros) written, not computed
            np.testing.assert_array_equal(a, b, err_msg=f"{layer}.{name}")
            continue
        # the same shape of distribution (excess kurtosis: uniform -1.2, normal 0), and for a
        # uniform the same bounds (many draws come within 5% of them)
        kurt_a, kurt_b = _excess_kurtosis(a), _excess_kurtosis(b)
        assert abs(kurt_a - kurt_b) < 0.3, (name, kurt_a, kurt_b)
        if kurt_b < -0.9:
            lo, hi = b.min(), b.max()
            assert a.min() >= lo - 0.02 * (hi - lo) and a.max() <= hi + 0.02 * (hi - lo), name
            assert abs(a.min() - lo) < 0.05 * (hi - lo), name
            assert abs(a.max() - hi) < 0.05 * (hi - lo), name
        # mean and std, per element position pooled: within 5 standard errors
        se = b.std() / np.sqrt(b.size)
        assert abs(a.mean() - b.mean()) < 5 * se + 1e-12, (name, a.mean(), b.mean())
        assert abs(a.std() / b.std() - 1) < 0.05, (name, a.std(), b.std())
        # zeros exactly where PyTorch has them (a padding row)
        # (booleans)
        np.testing.assert_array_equal(a == 0, b == 0, err_msg=f"{layer}.{name} zeros")
