"""``affine_grid`` and ``grid_sample`` of ``nbgrad.nn.functional`` (spatial transformers).

``affine_grid`` is a row of the op table (``AffineGridGeneratorBackward0``, as PyTorch's).
``grid_sample`` is the row of PyTorch's ``grid_sampler_2d`` / ``grid_sampler_3d``
(``GridSampler2DBackward0``; NOTE [Grid sampler rows] in nbgrad/derivatives/grid_sampler.py).
"""

from __future__ import annotations

import warnings

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
    attrs = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}
    return _dispatch(OPS[f"grid_sampler_{k}d"], (input, grid), attrs)
