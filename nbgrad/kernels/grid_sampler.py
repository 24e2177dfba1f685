"""The array kernels of the rows in ``nbgrad/derivatives/grid_sampler.py``: functions of ``xp``
(NumPy or CuPy) and arrays."""

from __future__ import annotations

import itertools
import math

import numpy as np


def _twice_bounds(size, align_corners):
    return (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


# ---- the forward, on arrays ---------------------------------------------------------------
def _positions_array(xp, grid, size, padding_mode, align_corners):
    """Per spatial dim of the input (D, H, W order), the pixel position of each grid point."""
    k = len(size)
    out = []
    for i, s in enumerate(size):
        pos = _unnormalize(grid[..., k - 1 - i], s, align_corners)
        if padding_mode == "reflection":
            lo2, hi2 = _twice_bounds(s, align_corners)
            if lo2 == hi2:
                pos = pos * 0
            else:
                low, span = lo2 / 2, (hi2 - lo2) / 2
                dist = xp.abs(pos - low)
                flips = xp.floor(dist / span)
                extra = dist - flips * span
                pos = xp.where(flips % 2 == 0, extra + low, span - extra + low)
        if padding_mode != "zeros":
            pos = xp.clip(pos, 0, s - 1)
        out.append(pos)
    return out


def _grid_sampler(xp, input, grid, mode, padding_mode, align_corners):
    n, c, *size = input.shape
    out_size = grid.shape[1:-1]
    pos = _positions_array(xp, grid, size, padding_mode, align_corners)
    flat = input.reshape(n, c, -1)

    def corner(points):
        inside, index = True, 0
        for p, s in zip(points, size):
            inside = inside & (p >= 0) & (p <= s - 1)
            index = index * s + xp.clip(p, 0, s - 1).astype(np.int64)
        values = xp.take_along_axis(flat, index.reshape(n, 1, -1), axis=2)
        return values.reshape((n, c) + out_size) * inside[:, None].astype(input.dtype)

    if mode == "nearest":
        return corner([xp.round(p) for p in pos])
    low = [xp.floor(p) for p in pos]
    frac = [p - lo for p, lo in zip(pos, low)]
    out = 0
    for upper in itertools.product((0, 1), repeat=len(size)):
        weight = math.prod(f if u else 1 - f for f, u in zip(frac, upper))
        out = out + corner([lo + u for lo, u in zip(low, upper)]) * weight[:, None]
    return out.astype(input.dtype, copy=False)
