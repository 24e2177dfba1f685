"""Op table rows: ``grid_sampler_2d`` / ``grid_sampler_3d``, behind ``F.grid_sample``, under
PyTorch's node names (``GridSampler2DBackward0``, ``GridSampler3DBackward0``).

NOTE [Grid sampler rows]
each output point reads the input at ``pos``, a position in pixels
along each spatial dim computed from its grid coordinate (unnormalised, then folded in by the
padding mode), bilinearly from the ``2 ** k`` corners around it (or from the nearest pixel):
``out = sum_corner V_corner(input) * W_corner(pos)``, with ``W`` a product of ``frac`` or
``1 - frac`` per dim and a corner outside the input reading 0. The output is linear in the
input, so the input's gradient is the matching scatter-add of ``grad * W``; the grid's is
``sum_channels grad * dout/dpos`` times ``dpos/dgrid``, the constant slope of the padding
mode's fold, as ATen's ``*_set_grad`` functions give it (0 on a clipped border). Both formulas
are Tensor ops of ``grad``, ``input`` and ``grid``, so the gradients have gradients too.
"""

from __future__ import annotations

import itertools
import math

from nbgrad._tensor import creation as _C
from nbgrad.derivatives.opinfo import op
from nbgrad.kernels.grid_sampler import _grid_sampler, _twice_bounds, _unnormalize


# ---- the gradients, as Tensor ops ---------------------------------------------------------------
def _positions(grid, size, padding_mode, align_corners):
    """``[(pos, slope)]`` per spatial dim: ``pos`` a Tensor function of ``grid``, ``slope``
    the constant ``dpos / dgrid`` (ATen's ``clip_`` / ``reflect_coordinates_set_grad``)."""
    k = len(size)
    out = []
    for i, s in enumerate(size):
        coord = grid[..., k - 1 - i]
        pos = _unnormalize(coord, s, align_corners)
        slope = _C.full_like(pos, (s - 1) / 2 if align_corners else s / 2).detach()
        if padding_mode == "reflection":
            lo2, hi2 = _twice_bounds(s, align_corners)
            if lo2 == hi2:
                pos, slope = pos * 0, slope * 0
            else:
                low, span = lo2 / 2, (hi2 - lo2) / 2
                dist = (pos - low).abs()
                flips = (dist / span).floor().detach()
                extra = dist - flips * span
                even = flips % 2 == 0
                pos = _C.where(even, extra + low, span - extra + low)
                before = (_unnormalize(coord, s, align_corners) - low).detach()
                side = 1 - 2 * (before < 0).to(pos.dtype)  # the sign of ``abs``
                slope = slope * side * (2 * even.to(pos.dtype) - 1)
        if padding_mode != "zeros":
            kept = ((pos > 0) & (pos < s - 1)).detach()
            pos = pos.clamp(0, s - 1)
            slope = slope * kept.to(pos.dtype)
        out.append((pos, slope))
    return out


def _corners(input, grid, mode, padding_mode, align_corners):
    """``(index, inside, weight factors, sides)`` of each corner read: ``index`` the flat
    input position ``(N, 1, P)``, ``inside`` 1 or 0, the factors ``frac`` or ``1 - frac`` per
    dim (none for "nearest"), and per dim the sign of ``d factor / d pos``; with the slopes."""
    size = tuple(input.shape[2:])
    n = input.shape[0]
    positions = _positions(grid, size, padding_mode, align_corners)
    pos = [p for p, _ in positions]
    if mode == "nearest":
        corners = [([p.detach().round() for p in pos], [], [])]
    else:
        low = [p.detach().floor() for p in pos]
        frac = [p - lo for p, lo in zip(pos, low)]
        corners = [
            (
                [lo + u for lo, u in zip(low, upper)],
                [f if u else 1 - f for f, u in zip(frac, upper)],
                [1.0 if u else -1.0 for u in upper],
            )
            for upper in itertools.product((0, 1), repeat=len(size))
        ]
    out = []
    for points, factors, sides in corners:
        inside, index = None, 0
        for p, s in zip(points, size):
            ok = (p >= 0) & (p <= s - 1)
            inside = ok if inside is None else inside & ok
            index = index * s + p.clamp(0, s - 1)
        out.append((index.long().reshape(n, 1, -1), inside.to(input.dtype), factors, sides))
    return out, [slope for _, slope in positions]


def _grid_sampler_input_grad(grad, input, grid, mode, padding_mode, align_corners):
    n, c = input.shape[0], input.shape[1]
    corners, _ = _corners(input, grid, mode, padding_mode, align_corners)
    out = _C.zeros((n, c, math.prod(input.shape[2:])), dtype=grad.dtype, device=grad.device)
    for index, inside, factors, _ in corners:
        weight = inside
        for f in factors:
            weight = weight * f
        values = (grad * weight.unsqueeze(1)).reshape(n, c, -1)
        out = out.scatter_add(2, index.expand(n, c, -1), values)
    return out.reshape(input.shape)


def _grid_sampler_grid_grad(grad, input, grid, mode, padding_mode, align_corners):
    if mode == "nearest":
        return _C.zeros_like(grid)
    n, c, k = input.shape[0], input.shape[1], input.dim() - 2
    corners, slopes = _corners(input, grid, mode, padding_mode, align_corners)
    flat = input.reshape(n, c, -1)
    by_pos = [0] * k
    for index, inside, factors, sides in corners:
        values = flat.gather(2, index.expand(n, c, -1)).reshape(grad.shape)
        seen = (grad * values).sum(1) * inside
        for i in range(k):
            others = seen * sides[i]
            for j, f in enumerate(factors):
                if j != i:
                    others = others * f
            by_pos[i] = by_pos[i] + others
    # the grid's last dim is (x, y[, z]): the input's spatial dims reversed
    return _C.stack([by_pos[k - 1 - j] * slopes[k - 1 - j] for j in range(k)], -1)


for _k in (2, 3):
    # fmt: off
    op(f"grid_sampler_{_k}d", f"GridSampler{_k}DBackward0", "input grid", lambda xp, input, grid, mode, padding_mode, align_corners: _grid_sampler(xp, input, grid, mode, padding_mode, align_corners),
       attrs="mode padding_mode align_corners", promote="binary",
       input=lambda grad, input, grid, mode, padding_mode, align_corners: _grid_sampler_input_grad(grad, input, grid, mode, padding_mode, align_corners),
       grid=lambda grad, input, grid, mode, padding_mode, align_corners: _grid_sampler_grid_grad(grad, input, grid, mode, padding_mode, align_corners))
    # fmt: on
