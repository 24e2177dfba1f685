"""The array kernels of the rows in ``nbgrad/derivatives/indexing.py``: functions of ``xp``
(NumPy or CuPy) and arrays."""

from __future__ import annotations

import numpy as np

from nbgrad.kernels.common import _contiguous


def _index_put(xp, a, values, indices):
    out = a.copy()
    out[indices] = values
    return out


def _along_axis_key(xp, index, dim):
    key = list(xp.indices(index.shape, sparse=True))
    key[dim] = index
    return tuple(key)


def _gather(xp, a, index, dim):
    """``out[i][j] = a[i][index[i][j]]`` (dim 1) over the index's own extent: as PyTorch, the
    index may be smaller than ``a`` in the other dims (NumPy's take_along_axis broadcasts)."""
    if index.ndim == 0:
        return a.reshape(-1)[index].copy() if a.ndim <= 1 else a[index]
    return a[_along_axis_key(xp, index, dim)]


def _scatter_add(xp, a, dim, index, src):
    out = a.copy()
    src = src[tuple(slice(0, s) for s in index.shape)]
    xp.add.at(out, _along_axis_key(xp, index, dim), src)
    return out


def _index_add(xp, a, dim, index, source):
    out = a.copy()
    xp.add.at(out, (slice(None),) * dim + (index,), source)
    return out


# ---- helpers of the rows added for PyTorch's wider surface (indexing, random, reductions) -------
def _scatter(xp, a, dim, index, src):
    """``a`` with ``src`` (an array, or a number) written at ``index`` along ``dim``."""
    out = a.copy()
    if index.size:
        if not isinstance(src, (int, float, bool)):
            src = src[tuple(slice(0, s) for s in index.shape)]
        out[_along_axis_key(xp, index, dim)] = src
    return out


def _masked_select(xp, a, mask):
    shape = np.broadcast_shapes(a.shape, mask.shape)
    return xp.broadcast_to(a, shape)[xp.broadcast_to(mask, shape)]


def _take(xp, a, index):
    return a.reshape(-1)[index] if a.size else xp.zeros(index.shape, a.dtype)


def _nonzero(xp, a):
    """The indices of the nonzero elements, one row each (``(n, ndim)``, int64)."""
    if a.ndim == 0:
        return xp.zeros((1 if bool(a) else 0, 0), dtype=np.int64)
    return xp.stack(xp.nonzero(a), axis=1).astype(np.int64).reshape(-1, a.ndim)


# ---- indexing ------------------------------------------------------------------------------
def _index_copy(xp, a, dim, index, source):
    out = a.copy()
    out[(slice(None),) * dim + (index,)] = source
    return out


def _index_fill(xp, a, dim, index, value):
    out = a.copy()
    out[(slice(None),) * dim + (index,)] = value
    return out


def _index_put_accumulate(xp, a, values, indices):
    out = a.copy()
    xp.add.at(out, indices, xp.broadcast_to(values, out[indices].shape))
    return out


_SCATTER_REDUCE_UFUNCS = {"sum": "add", "prod": "multiply", "amax": "maximum", "amin": "minimum"}


def _scatter_reduce(xp, a, dim, index, src, reduce, include_self):
    """PyTorch's ``scatter_reduce``: each ``src[i][j]`` reduced into ``a[index[i][j]][j]`` (for
    ``dim`` 0) with ``reduce``; ``include_self=False`` leaves out the values there before."""
    key = _along_axis_key(xp, index, dim)
    src = src[tuple(slice(0, s) for s in index.shape)]
    out = a.copy()
    if not include_self:
        identity = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}[reduce]
        if a.dtype.kind != "f" and reduce in ("amax", "amin"):
            info = np.iinfo(a.dtype)
            identity = info.min if reduce == "amax" else info.max
        out[key] = identity
    ufunc = getattr(xp, _SCATTER_REDUCE_UFUNCS.get(reduce, "add"))
    ufunc.at(out, key, src)
    if reduce == "mean":
        count = xp.ones_like(a) if include_self else xp.zeros_like(a)
        xp.add.at(count, key, 1)
        count = xp.where(count == 0, 1, count)
        out = out / count if a.dtype.kind == "f" else out // count
        out = out.astype(a.dtype, copy=False)
    if not include_self:  # a place that nothing was scattered to keeps its value
        touched = xp.zeros(a.shape, dtype=bool)
        touched[key] = True
        out = xp.where(touched, out, a)
    return _contiguous(xp, out)


def _masked_scatter(xp, a, mask, source):
    shape = np.broadcast_shapes(a.shape, mask.shape)
    out = xp.broadcast_to(a, shape).copy()
    mask = xp.broadcast_to(mask, shape)
    n = int(mask.sum())
    if n > source.size:
        raise RuntimeError("masked_scatter: expected source to have at least as many elements")
    out[mask] = source.reshape(-1)[:n]
    return out


def _put(xp, a, index, source, accumulate):
    out = a.copy().reshape(-1)
    flat = index.reshape(-1)
    n = out.size
    if flat.size and (flat.max() >= n or flat.min() < -n):
        bad = int(flat.max() if flat.max() >= n else flat.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    if accumulate:
        xp.add.at(out, (flat,), source.reshape(-1))
    else:
        out[flat] = source.reshape(-1)
    return out.reshape(a.shape)
