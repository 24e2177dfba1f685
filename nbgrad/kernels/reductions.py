"""The array kernels of the rows in ``nbgrad/derivatives/reductions.py``: functions of ``xp``
(NumPy or CuPy) and arrays."""

from __future__ import annotations

import math
import warnings

import numpy as np

from nbgrad.kernels.common import _contiguous, _summand, _user_stacklevel, _vector_norm

_add_reduce = np.add.reduce


def _var_std(xp, name, a, dim, correction, keepdim):
    """``var`` / ``std`` with PyTorch's warning when there are no degrees of freedom left (the
    result is nan or inf, as in PyTorch; NumPy would warn in its own words)."""
    n = math.prod(a.shape[d] for d in dim) if dim is not None else a.size
    kernel = xp.var if name == "var" else xp.std
    if n - correction > 0:
        return kernel(a, axis=dim, ddof=correction, keepdims=keepdim)
    warnings.warn(
        f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
        "reduction factor (input numel divided by output numel).",
        UserWarning,
        stacklevel=_user_stacklevel(),
    )
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return kernel(a, axis=dim, ddof=correction, keepdims=keepdim)


def _sum(xp, a, dim, keepdim, dtype):
    if xp is np:  # np.sum's Python wrapper costs twice the reduction of a small array
        return _add_reduce(_summand(a, dtype), axis=dim, keepdims=keepdim, out=...)
    return xp.sum(_summand(a, dtype), axis=dim, keepdims=keepdim)


def _mean(xp, a, dim, keepdim):
    if a.size:
        return xp.mean(a, axis=dim, keepdims=keepdim)
    # the mean of nothing is nan, quietly, as in PyTorch (NumPy warns "Mean of empty slice")
    n = math.prod(a.shape[d] for d in dim) if dim is not None else 0
    with np.errstate(all="ignore"):
        return (
            xp.sum(a, axis=dim, keepdims=keepdim) / n
            if n
            else xp.sum(a, axis=dim, keepdims=keepdim) * math.nan
        )


def _value_and_index(xp, argfn, a, dim, keepdim):
    if a.shape and a.shape[dim] == 0:
        raise IndexError(f"max(): Expected reduction dim {dim} to have non-zero size.")
    idx = argfn(a, axis=dim) if a.ndim else xp.zeros((), dtype=np.int64)
    idx = idx.astype(np.int64)
    idx_k = xp.expand_dims(idx, dim) if a.ndim else idx
    values = xp.take_along_axis(a, idx_k, axis=dim) if a.ndim else a.copy()
    if not keepdim and a.ndim:
        values = xp.squeeze(values, dim)
        return values, idx
    return values, idx_k


def _sort(xp, a, dim, descending):
    if a.ndim == 0:
        return a.copy(), xp.zeros((), dtype=np.int64)
    # descending and stable: sort the reversed order ascending, then map indices back
    key = -a if descending and a.dtype.kind != "b" else a
    if descending and a.dtype.kind == "b":
        key = ~a
    idx = xp.argsort(key, axis=dim, kind="stable").astype(np.int64)
    return xp.take_along_axis(a, idx, axis=dim), idx


def _topk(xp, a, k, dim, largest):
    n = a.shape[dim] if a.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    values, idx = _sort(xp, a, dim, largest)
    if a.ndim == 0:
        return values, idx
    keep = [slice(None)] * a.ndim
    keep[dim] = slice(0, k)
    return _contiguous(xp, values[tuple(keep)]), _contiguous(xp, idx[tuple(keep)])


def _logsumexp(xp, a, dim, keepdim):
    if a.size == 0:
        return xp.log(xp.sum(xp.exp(a), axis=dim, keepdims=keepdim))
    m = xp.amax(a, axis=dim, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)
    out = xp.log(xp.sum(xp.exp(a - m), axis=dim, keepdims=True)) + m
    return out if keepdim else xp.squeeze(out, axis=dim)


def _softmax(xp, a, dim):
    if a.size == 0:
        return a.copy()
    e = xp.exp(a - xp.amax(a, axis=dim, keepdims=True))
    return _contiguous(xp, e / xp.sum(e, axis=dim, keepdims=True))


def _log_softmax(xp, a, dim):
    if a.size == 0:
        return a.copy()
    s = a - xp.amax(a, axis=dim, keepdims=True)
    return _contiguous(xp, s - xp.log(xp.sum(xp.exp(s), axis=dim, keepdims=True)))


def _median(xp, a, dim, keepdim):
    """The lower median along ``dim`` and its index (PyTorch's ``median(dim)``)."""
    if a.ndim == 0:
        return a.copy(), xp.zeros((), dtype=np.int64)
    n = a.shape[dim]
    if n == 0:
        raise IndexError(f"median(): Expected reduction dim {dim} to have non-zero size.")
    order = xp.argsort(a, axis=dim, kind="stable")
    # NaN sorts last; as PyTorch, the median of a slice with a NaN is that NaN
    has_nan = xp.isnan(a).any(axis=dim, keepdims=True) if a.dtype.kind == "f" else None
    k = (n - 1) // 2
    idx = xp.take(order, [k], axis=dim)
    if has_nan is not None:
        first_nan = xp.argmax(xp.isnan(a), axis=dim).reshape(idx.shape)
        idx = xp.where(has_nan, first_nan, idx)
    idx = idx.astype(np.int64)
    values = xp.take_along_axis(a, idx, axis=dim)
    if not keepdim:
        values, idx = values.squeeze(dim), idx.squeeze(dim)
    return values, idx


def _median_all(xp, a):
    if a.size == 0:
        return xp.asarray(np.nan, dtype=a.dtype) if a.dtype.kind == "f" else a.reshape(-1)[:0]
    flat = a.reshape(-1)
    if a.dtype.kind == "f" and bool(xp.isnan(flat).any()):
        return xp.asarray(np.nan, dtype=a.dtype)
    return xp.sort(flat)[(flat.size - 1) // 2].copy()


def _nansum(xp, a, dim, keepdim, dtype):
    out = xp.nansum(a, axis=dim, keepdims=keepdim)
    if dtype is not None:
        return xp.asarray(out).astype(dtype.np)
    if a.dtype.kind in "biu":
        return xp.asarray(out).astype("int64")
    return xp.asarray(out).astype(a.dtype, copy=False)


def _nanmedian_sorted(xp, a, dim):
    """The order along ``dim`` (NaN last) and the position of each slice's lower median of its
    numbers (its first NaN where it has no number)."""
    order = xp.argsort(a, axis=dim, kind="stable")
    count = xp.sum(~xp.isnan(a), axis=dim, keepdims=True)
    pos = xp.where(count > 0, (count - 1) // 2, 0)
    return order, pos


def _nanmedian(xp, a, dim, keepdim):
    if a.ndim == 0:
        return a.copy(), xp.zeros((), "int64")
    order, pos = _nanmedian_sorted(xp, a, dim)
    index = xp.take_along_axis(order, pos, axis=dim)
    values = xp.take_along_axis(a, index, axis=dim)
    if not keepdim:
        values, index = xp.squeeze(values, dim), xp.squeeze(index, dim)
    return _contiguous(xp, values), _contiguous(xp, index)


def _nanmedian_all(xp, a):
    values, _ = _nanmedian(xp, a.reshape(-1), 0, False)
    return values


def _kthvalue(xp, a, k, dim, keepdim):
    if a.ndim == 0:
        return a.copy(), xp.zeros((), "int64")
    n = a.shape[dim]
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    order = xp.argsort(a, axis=dim, kind="stable")
    index = xp.take(order, [k - 1], axis=dim)
    values = xp.take_along_axis(a, index, axis=dim)
    if not keepdim:
        values, index = xp.squeeze(values, dim), xp.squeeze(index, dim)
    return _contiguous(xp, values), _contiguous(xp, index)


def _mode(xp, a, dim, keepdim):
    """The most frequent value of each slice (the smallest of equally frequent ones) and the
    last index where it is, as PyTorch's CPU ``mode``."""
    if a.ndim == 0:
        return a.copy(), xp.zeros((), "int64")
    moved = xp.moveaxis(a, dim, -1)
    n = moved.shape[-1]
    counts = (moved[..., :, None] == moved[..., None, :]).sum(axis=-1)
    best = counts.max(axis=-1, keepdims=True)
    values = xp.where(counts == best, moved, xp.asarray(moved).max(axis=-1, keepdims=True))
    values = values.min(axis=-1, keepdims=True)
    last = n - 1 - xp.argmax(xp.flip(moved == values, -1), axis=-1)
    values, index = values[..., 0], last.astype("int64")
    if keepdim:
        values, index = xp.expand_dims(values, dim), xp.expand_dims(index, dim)
    return _contiguous(xp, values), _contiguous(xp, index)


def _aminmax(xp, a, dim, keepdim):
    if a.size == 0 and dim is None:
        raise RuntimeError(
            "aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
            "identity."
        )
    return (
        xp.asarray(xp.amin(a, axis=dim, keepdims=keepdim)),
        xp.asarray(xp.amax(a, axis=dim, keepdims=keepdim)),
    )


def _dist(xp, self, other, p):
    return _vector_norm(xp, self - other, p, None, False)


def _renorm_factor(xp, a, p, dim, maxnorm):
    dims = tuple(d for d in range(a.ndim) if d != dim)
    norm = _vector_norm(xp, a, p, dims, True)
    return xp.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0).astype(a.dtype)


def _renorm(xp, a, p, dim, maxnorm):
    return a * _renorm_factor(xp, a, p, dim, maxnorm)


def _argreduce(fn, xp, a, dim, keepdim):
    if dim is None:
        r = fn(a)
        return xp.reshape(r, (1,) * a.ndim) if keepdim else r
    r = fn(a, axis=dim)
    return xp.expand_dims(r, dim) if keepdim else r
