"""The array kernels of the rows in :mod:`nbgrad.derivatives.wider`: functions of ``xp`` (NumPy
or CuPy) and arrays, as those of ``nbgrad/_kernels.py``."""

from __future__ import annotations

import math

import numpy as np

from nbgrad._kernels import _along_axis_key, _contiguous, _vector_norm
from nbgrad._tensor import creation as _C
from nbgrad.backend import erf, to_host


# ---- pointwise -----------------------------------------------------------------------------
def _erfc(xp, a):
    return (1 - erf(xp, a)).astype(a.dtype, copy=False)


def _xlogy(xp, self, other):
    """``self * log(other)``, 0 where ``self`` is 0 (unless ``other`` is NaN), as PyTorch's."""
    out = xp.where(self == 0, xp.zeros((), self.dtype), self * xp.log(other))
    return _contiguous(xp, xp.where(xp.isnan(other), other, out).astype(self.dtype, copy=False))


def _logit(xp, a, eps):
    if eps is not None:
        a = xp.clip(a, eps, 1 - eps)
    return xp.log(a / (1 - a))


def _frexp(xp, a):
    mantissa, exponent = xp.frexp(a)
    return mantissa, exponent.astype("int32")


def _ldexp(xp, self, other):
    return self * xp.exp2(other)


def _heaviside(xp, self, values):
    if self.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
    return _contiguous(xp, xp.heaviside(self, values).astype(self.dtype, copy=False))


def _copysign(xp, self, other):
    return xp.copysign(self, other)


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


# ---- linear algebra ------------------------------------------------------------------------
def _scaled_sum(self, product, beta, alpha):
    """``beta * self + alpha * product``; with ``beta`` 0, ``self`` (even its NaN) is ignored."""
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return _contiguous(np, product) if isinstance(product, np.ndarray) else product
    return (self * beta if beta != 1 else self) + product


def _addmv(xp, self, mat, vec, beta, alpha):
    return _scaled_sum(self, xp.matmul(mat, vec), beta, alpha).astype(mat.dtype, copy=False)


def _addr(xp, self, vec1, vec2, beta, alpha):
    return _scaled_sum(self, xp.outer(vec1, vec2), beta, alpha).astype(vec1.dtype, copy=False)


def _addbmm(xp, self, batch1, batch2, beta, alpha):
    prod = xp.matmul(batch1, batch2).sum(axis=0)
    return _scaled_sum(self, prod, beta, alpha).astype(batch1.dtype, copy=False)


def _dist(xp, self, other, p):
    return _vector_norm(xp, self - other, p, None, False)


def _block_diag(xp, tensors):
    blocks = [t.reshape(1, -1) if t.ndim < 2 else t for t in tensors]
    rows = sum(b.shape[0] for b in blocks)
    cols = sum(b.shape[1] for b in blocks)
    dtype = tensors[0].dtype if tensors else np.float32
    out = xp.zeros((rows, cols), dtype=dtype)
    r = c = 0
    for b in blocks:
        out[r : r + b.shape[0], c : c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def _renorm_factor(xp, a, p, dim, maxnorm):
    dims = tuple(d for d in range(a.ndim) if d != dim)
    norm = _vector_norm(xp, a, p, dims, True)
    return xp.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0).astype(a.dtype)


def _renorm(xp, a, p, dim, maxnorm):
    return a * _renorm_factor(xp, a, p, dim, maxnorm)


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


# ---- counting and searching (no gradient) --------------------------------------------------
def _histc(xp, a, bins, min, max):
    lo, hi = float(min), float(max)
    if lo == hi and a.size:
        lo, hi = float(a.min()), float(a.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    counts, _ = xp.histogram(a, bins=bins, range=(lo, hi))
    return counts.astype(a.dtype)


def _bincount(xp, a, weights, minlength):
    if a.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if a.size and a.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    out = xp.bincount(a, weights=weights, minlength=minlength)
    if weights is None:
        return out.astype("int64")
    return out.astype(weights.dtype if weights.dtype.kind == "f" else "float64")


def _searchsorted(xp, sorted_sequence, values, right, out_int32):
    side = "right" if right else "left"
    if sorted_sequence.ndim == 1:
        out = xp.searchsorted(sorted_sequence, values, side=side)
    else:
        rows = sorted_sequence.reshape(-1, sorted_sequence.shape[-1])
        vals = values.reshape(-1, values.shape[-1])
        out = xp.stack([xp.searchsorted(r, v, side=side) for r, v in zip(rows, vals)])
        out = out.reshape(values.shape)
    return _contiguous(xp, xp.asarray(out).astype("int32" if out_int32 else "int64"))


def _isin(xp, elements, test_elements, invert):
    return xp.isin(elements, test_elements, invert=invert)


def _unique_consecutive(xp, a, dim):
    """The first of each run of equal values (along ``dim``, or of the flattened tensor), the
    run each element is in, and the runs' lengths."""
    flat = a.reshape(-1) if dim is None else xp.moveaxis(a, dim, 0)
    n = flat.shape[0]
    if n == 0:
        starts = xp.zeros(0, dtype=bool)
    else:
        differs = flat[1:] != flat[:-1]
        if differs.ndim > 1:
            differs = differs.reshape(n - 1, -1).any(axis=1)
        starts = xp.concatenate([xp.ones(1, dtype=bool), differs])
    run = xp.cumsum(starts) - 1
    first = xp.nonzero(starts)[0]
    values = flat[first]
    counts = xp.diff(xp.concatenate([first, xp.asarray([n])])).astype("int64")
    if dim is not None:
        values = xp.moveaxis(values, 0, dim)
    inverse = run.astype("int64") if dim is not None else run.astype("int64").reshape(a.shape)
    return _contiguous(xp, values), inverse, counts


def _histogram(xp, a, bins, range, weight, density):
    counts, edges = xp.histogram(
        a.reshape(-1),
        bins=bins,
        range=range,
        weights=None if weight is None else weight.reshape(-1),
        density=density,
    )
    return counts.astype(a.dtype), edges.astype(a.dtype)


def _gcd_lcm(xp, name, a, b):
    if a.dtype.kind not in "iub" or b.dtype.kind not in "iub":
        raise RuntimeError(f"\"{name}_cpu\" not implemented for '{_type_name(a, b)}'")
    return getattr(xp, name)(a, b)


def _type_name(a, b):
    kind = a if a.dtype.kind == "f" else b
    return {"float64": "Double", "float32": "Float", "float16": "Half"}.get(str(kind.dtype), "?")


def _bitwise(xp, name, a, b):
    for t in (a, b):
        if getattr(t, "dtype", np.dtype("int64")).kind == "f":
            raise RuntimeError(f"\"{name}_cpu\" not implemented for '{_type_name(a, b)}'")
    return getattr(xp, name)(a, b)


# ---- draws: Poisson and binomial counts ------------------------------------------------------
def _host_rng(generator):
    """The NumPy generator that draws: ``generator``'s, else nbgrad's (``manual_seed``)."""
    return _C._rng if generator is None else generator._rng


def _poisson(xp, rate, generator):
    """Poisson counts of rate ``rate``, in its dtype, drawn on the host."""
    if rate.dtype.kind != "f":
        name = {"i": "Long", "u": "Byte", "b": "Bool"}.get(rate.dtype.kind, str(rate.dtype))
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for '{name}'")
    host = to_host(rate)
    if host.size and not bool((host >= 0).all()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return xp.asarray(np.asarray(_host_rng(generator).poisson(host), dtype=rate.dtype))


def _binomial(xp, count, prob, generator):
    """Binomial counts of ``count`` trials of probability ``prob``, drawn on the host; as
    PyTorch's sampler, a negative count gives 0 and ``prob`` is clipped to [0, 1]."""
    n, p = to_host(count), to_host(prob)
    n, p = np.broadcast_arrays(np.maximum(np.floor(n), 0), np.clip(p, 0, 1))
    draws = _host_rng(generator).binomial(n.astype(np.int64), p)
    return xp.asarray(np.asarray(draws, dtype=count.dtype))


def _histogramdd(xp, points, weight, edges, density):
    """The counts (weighted, or a density) of the ``(N, D)`` ``points`` in the bins between
    ``edges`` (one host array per dim; the last bin takes its right edge), as NumPy's
    ``histogramdd``, from ``searchsorted`` and ``bincount`` (which CuPy has too)."""
    sizes = tuple(len(e) - 1 for e in edges)
    flat = xp.zeros(points.shape[0], dtype=np.int64)
    inside = xp.ones(points.shape[0], dtype=bool)
    for k, e in enumerate(edges):
        column, e = points[:, k], xp.asarray(e, dtype=points.dtype)
        at = xp.searchsorted(e, column, side="right") - 1
        at = xp.where(column == e[-1], sizes[k] - 1, at)  # the right edge closes the last bin
        inside = inside & (at >= 0) & (at < sizes[k])
        flat = flat * sizes[k] + xp.clip(at, 0, sizes[k] - 1)
    values = xp.ones(points.shape[0], dtype=points.dtype) if weight is None else weight
    values = xp.where(inside, values, 0)
    counts = xp.bincount(flat, weights=values, minlength=math.prod(sizes)).reshape(sizes)
    if density:
        volume = xp.ones(sizes, dtype=np.float64)
        for k, e in enumerate(edges):
            shape = [1] * len(sizes)
            shape[k] = sizes[k]
            volume = volume * xp.asarray(np.diff(e).astype(np.float64)).reshape(shape)
        counts = counts / counts.sum() / volume
    return counts.astype(points.dtype, copy=False)


def _unfold(xp, a, dim, size, step):
    """``Tensor.unfold``: a view of the windows of ``size`` elements every ``step`` along
    ``dim``, the window as a new last dim (a 0-d tensor is one element)."""
    if not a.ndim:
        return a.reshape(1)[:size]
    n = (a.shape[dim] - size) // step + 1
    shape = a.shape[:dim] + (n,) + a.shape[dim + 1 :] + (size,)
    strides = a.strides[:dim] + (a.strides[dim] * step,) + a.strides[dim + 1 :]
    return xp.lib.stride_tricks.as_strided(a, shape, strides + (a.strides[dim],))


def _unfold_backward(xp, grad, shape, dim, size, step):
    """The gradient of ``unfold``: each window's gradient summed into the elements it covers."""
    out = xp.zeros(shape, dtype=grad.dtype)
    if not len(shape):
        out[...] = grad.sum()
        return out
    n = grad.shape[dim]
    for k in range(size):  # the k-th element of every window: k, k + step, ... along dim
        out[(slice(None),) * dim + (slice(k, k + step * (n - 1) + 1, step),)] += grad[..., k]
    return out
