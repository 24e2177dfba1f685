"""``sum`` and ``mean`` with ``dim=None, keepdim=True`` keep every dimension with size 1, as
PyTorch's (they gave a 0-d result), with PyTorch's node and gradient."""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["sum", "mean"])
@pytest.mark.parametrize("shape", [(2, 3), (4,), (2, 1, 3)])
def test_keepdim_with_no_dim(name, shape):
    def run(lib):
        x = lib.tensor(np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape), requires_grad=True)
        out = getattr(x, name)(dim=None, keepdim=True)
        as_function = getattr(lib, name)(x, dim=None, keepdim=True)
        (out * 3).sum().backward()
        return (
            tuple(out.shape),
            tuple(as_function.shape),
            out.grad_fn.name(),
            out.detach().numpy().tolist(),
            x.grad.numpy().tolist(),
        )

    assert run(ng) == run(torch)
