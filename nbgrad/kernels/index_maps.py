"""The array kernels of the rows in ``nbgrad/derivatives/index_maps.py``: functions of ``xp``
(NumPy or CuPy) and arrays."""

from __future__ import annotations

import math


def _gather_map(xp, self, index, weight, size):
    """``out[..., o] = sum_k weight[o, k] * self[..., index[o, k]]`` (flat over ``size``)."""
    lead = self.shape[: self.ndim - len(size)]
    flat = self.reshape(lead + (-1,))
    if (index < 0).any():  # -1 reads the zero appended here
        flat = xp.concatenate([flat, xp.zeros(lead + (1,), dtype=self.dtype)], axis=-1)
    picked = flat[..., xp.asarray(index.reshape(-1))].reshape(lead + index.shape)
    if weight is None:
        return picked[..., 0]
    return (picked * xp.asarray(weight, dtype=self.dtype)).sum(-1)


def _scatter_map(xp, grad_output, index, weight, size):
    """The adjoint of ``_gather_map``: each position's value, times its weights, added into
    the input positions it was read from; the result's trailing dims are ``size``."""
    lead = grad_output.shape[: grad_output.ndim - (index.ndim - 1)]
    rows, cols = math.prod(lead), math.prod(size) + 1  # the last column takes reads of zeros
    values = grad_output.reshape(lead + index.shape[:-1] + (1,))
    if weight is None:
        values = xp.broadcast_to(values, lead + index.shape)
    else:
        values = values * xp.asarray(weight, dtype=grad_output.dtype)
    where = xp.asarray(index.reshape(-1) % cols)
    flat = (xp.arange(rows)[:, None] * cols + where[None, :]).reshape(-1)
    out = xp.bincount(flat, weights=values.reshape(-1), minlength=rows * cols)
    out = out.reshape(rows, cols)[:, :-1].astype(grad_output.dtype, copy=False)
    return out.reshape(lead + tuple(size))
