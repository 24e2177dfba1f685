"""The array kernels of the rows in ``nbgrad/derivatives/scans.py``: functions of ``xp``
(NumPy or CuPy) and arrays."""

from __future__ import annotations

import numpy as np

from nbgrad.kernels.common import _contiguous, _summand


def _cumsum(xp, a, dim, dtype):
    return xp.cumsum(_summand(a, dtype), axis=dim)


def _cumprod(xp, a, dim, dtype):
    if dtype is not None:
        a = a.astype(dtype.np)
    elif a.dtype.kind in "biu":
        a = a.astype(np.int64)
    return xp.cumprod(a, axis=dim) if a.ndim else a.copy()


# ---- scans and reductions ------------------------------------------------------------------
def _cumextreme(xp, a, dim, better):
    """Running max (``better`` is ``>=``) or min (``<=``) along ``dim`` with the index where
    each was reached, the last of equal values, as PyTorch's cummax and cummin; a NaN stays."""
    values = xp.moveaxis(a.copy(), dim, 0)
    indices = xp.zeros(values.shape, dtype="int64")
    for i in range(1, values.shape[0] if values.ndim else 0):
        prev, cur = values[i - 1], values[i]
        take = better(cur, prev) | xp.isnan(cur) if a.dtype.kind == "f" else better(cur, prev)
        if a.dtype.kind == "f":
            take &= ~xp.isnan(prev)
        values[i] = xp.where(take, cur, prev)
        indices[i] = xp.where(take, i, indices[i - 1])
    return (
        _contiguous(xp, xp.moveaxis(values, 0, dim)),
        _contiguous(xp, xp.moveaxis(indices, 0, dim)),
    )


def _logcumsumexp(xp, a, dim):
    if a.ndim == 0:
        return a.copy()
    return xp.logaddexp.accumulate(a, axis=dim)
