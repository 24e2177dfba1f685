"""``Tensor.unfold`` against PyTorch: its errors, that it is a view of its input (written
through, sharing the version counter), and the gradient through a write into it (the op-table
test checks its values, gradients and node names)."""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "shape, args",
    [((7,), (0, 8, 1)), ((7,), (0, -1, 1)), ((7,), (0, 3, 0)), ((7,), (0, 3, -2)),
     ((7,), (1, 1, 1)), ((), (0, 2, 1)), ((2, 3), (-3, 1, 1))],
)  # fmt: skip
def test_unfold_errors_match_pytorch(shape, args):
    errors = []
    for lib in (ng, torch):
        with pytest.raises((RuntimeError, IndexError)) as info:
            lib.zeros(shape).unfold(*args)
        errors.append((type(info.value).__name__, str(info.value)))
    assert errors[0] == errors[1]


def test_unfold_is_a_view_and_a_write_into_it_is_differentiated_as_pytorch():
    results = []
    for lib in (ng, torch):
        x = lib.tensor(np.arange(1.0, 9.0).reshape(2, 4), dtype=lib.float64, requires_grad=True)
        y = x * 1
        windows = y.unfold(1, 2, 2)
        same_memory = windows._base is y
        windows[:, 1].mul_(3)  # writes y[:, 2:4] through the view
        (y * y).sum().backward()
        results.append(
            (same_memory, y._version, type(y.grad_fn).__name__, y.detach().numpy(), x.grad.numpy())
        )
    ours, theirs = results
    assert ours[:3] == theirs[:3] == (True, 1, "CopySlices")
    # bits: whole numbers times 3, exact
    np.testing.assert_array_equal(ours[3], theirs[3])
    np.testing.assert_allclose(ours[4], theirs[4], rtol=1e-12)
