"""The array kernels of the rows in ``nbgrad/derivatives/searching.py``: functions of ``xp``
(NumPy or CuPy) and arrays."""

from __future__ import annotations

import math

import numpy as np

from nbgrad.kernels.common import _contiguous


def _unique(xp, a, sorted, dim):
    """Values, inverse indices and counts, as PyTorch's ``_unique2`` / ``unique_dim``."""
    if dim is None:
        values, inverse, counts = xp.unique(a.reshape(-1), return_inverse=True, return_counts=True)
        return values, inverse.reshape(a.shape).astype(np.int64), counts.astype(np.int64)
    values, inverse, counts = xp.unique(a, return_inverse=True, return_counts=True, axis=dim)
    return values, inverse.reshape(-1).astype(np.int64), counts.astype(np.int64)


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
