"""``affine_grid`` and ``grid_sample`` of ``nbgrad.nn.functional`` (spatial transformers).

``affine_grid`` is a row of the op table (``AffineGridGeneratorBackward0``, as PyTorch's).
NOTE [grid_sample composed]: ``grid_sample`` is composed of Tensor ops (each corner's values
gathered from the flattened input and weighted by functions of the grid), so its gradients
w.r.t. the input and the grid, to any order, are those of the table's rows; PyTorch has one
node of its own (``GridSampler2DBackward0``), which nbgrad does not give.
"""

from __future__ import annotations

import itertools
import warnings

from nbgrad._tensor.creation import where
from nbgrad._tensor.dispatch import _dispatch
from nbgrad.derivatives import OPS
from nbgrad.tensor import Tensor

__all__ = ["affine_grid", "grid_sample"]

_ALIGN_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since "
    "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
    "documentation of grid_sample for details."
)


def _align(align_corners):
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=3)
        return False
    return bool(align_corners)


def affine_grid(theta: Tensor, size, align_corners=None) -> Tensor:
    """The ``(N, H, W, 2)`` (or ``(N, D, H, W, 3)``) sampling grid of the affine maps
    ``theta`` (``(N, 2, 3)`` or ``(N, 3, 4)``) for an output of ``size``."""
    align_corners = _align(align_corners)
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = [int(s) for s in size]
    k = len(size) - 2
    if k not in (2, 3):
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}."
        )
    if theta.dim() != 3 or tuple(theta.shape[-2:]) != (k, k + 1):
        what = (
            "2D affine matrices of shape Nx2x3" if k == 2 else "3D affine matrices of shape Nx3x4"
        )
        raise ValueError(f"Expected a batch of {what} for size {size}. Got {tuple(theta.shape)}.")
    if align_corners and min(size[2:]) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
            "align_corners=True. This is not an intended use case of affine_grid. See the "
            "documentation of affine_grid for details.",
            stacklevel=2,
        )
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    attrs = {"size": tuple(size), "align_corners": align_corners}
    return _dispatch(OPS["affine_grid_generator"], (theta,), attrs)


def _reflect(coord, twice_low, twice_high):
    """PyTorch's ``reflect_coordinates``: ``coord`` folded back into [low, high]."""
    if twice_low == twice_high:
        return coord * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    dist = (coord - low).abs()
    flips = (dist / span).floor()
    extra = dist - flips * span
    return where(flips % 2 == 0, extra + low, span - extra + low)


def _source_index(coord, size, padding_mode, align_corners):
    """A grid coordinate in [-1, 1] as a position in pixels along a dim of ``size``."""
    if align_corners:
        pos = (coord + 1) / 2 * (size - 1)
    else:
        pos = ((coord + 1) * size - 1) / 2
    if padding_mode == "border":
        pos = pos.clamp(0, size - 1)
    elif padding_mode == "reflection":
        twice = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        pos = _reflect(pos, *twice).clamp(0, size - 1)
    return pos


def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners=None,
) -> Tensor:
    """Sample ``input`` (``(N, C, H, W)`` or ``(N, C, D, H, W)``) at the points of ``grid``
    (``(N, Ho, Wo, 2)`` or ``(N, Do, Ho, Wo, 3)``, ``(x, y[, z])`` in [-1, 1]), bilinearly
    (trilinearly) or at the nearest pixel; outside the input by ``padding_mode``."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            f"'bicubic', but got: '{mode}'"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    align_corners = _align(align_corners)
    k = input.dim() - 2
    if k not in (2, 3) or grid.dim() != input.dim() or grid.shape[-1] != k:
        raise RuntimeError(
            f"grid_sampler(): expected a {k + 2}D grid with a last dim of {k} for a "
            f"{input.dim()}D input, but got grid of shape {list(grid.shape)}"
        )
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got input "
            f"with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
        )
    if mode == "bicubic":
        raise NotImplementedError("grid_sample: mode='bicubic' is not supported by nbgrad")
    n, c, size = input.shape[0], input.shape[1], tuple(input.shape[2:])
    out_size = tuple(grid.shape[1:-1])
    # positions along the input's spatial dims (D,) H, W: the grid's last entries reversed
    pos = [
        _source_index(grid[..., k - 1 - i], size[i], padding_mode, align_corners) for i in range(k)
    ]
    flat = input.reshape(n, c, -1)

    def corner(points):
        """The input's values at integer ``points`` (one per dim), zero outside it."""
        inside, index = None, 0
        for p, s in zip(points, size):
            ok = (p >= 0) & (p <= s - 1)
            inside = ok if inside is None else inside & ok
            index = index * s + p.clamp(0, s - 1)
        index = index.long().reshape(n, 1, -1).expand(n, c, -1)
        values = flat.gather(2, index).reshape(n, c, *out_size)
        return values * inside.unsqueeze(1).to(values.dtype)

    if mode == "nearest":
        nearest = [p.round() for p in pos]
        # zero, with round's zero derivative: the grid gets a (zero) gradient, as PyTorch's
        joined = sum(r - r.detach() for r in nearest)
        return corner(nearest) + joined.unsqueeze(1)
    low = [p.floor().detach() for p in pos]
    frac = [p - lo for p, lo in zip(pos, low)]
    out = None
    for upper in itertools.product((0, 1), repeat=k):
        weight = None
        for i, u in enumerate(upper):
            w = frac[i] if u else 1 - frac[i]
            weight = w if weight is None else weight * w
        term = corner([lo + u for lo, u in zip(low, upper)]) * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out
