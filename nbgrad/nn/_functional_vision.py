"""The vision functions of ``nbgrad.nn.functional``: ``interpolate`` and ``upsample*``, the pixel
and channel shuffles, ``affine_grid`` and ``grid_sample`` (spatial transformers).

``interpolate`` and the pixel shuffles are the index-map rows of PyTorch's names (NOTE [Index-map
rows]). ``affine_grid`` is a row of the op table (``AffineGridGeneratorBackward0``, as
PyTorch's); ``grid_sample`` is the row of PyTorch's ``grid_sampler_2d`` / ``grid_sampler_3d``
(``GridSampler2DBackward0``; NOTE [Grid sampler rows] in nbgrad/derivatives/grid_sampler.py).
"""

from __future__ import annotations

import math
import warnings

import nbgrad  # nbgrad.nn.functional, read at call time: that module imports this one
from nbgrad._tensor.dispatch import _dispatch
from nbgrad.derivatives import OPS
from nbgrad.nn._index_maps import (
    apply_map,
    cubic_weights,
    linear_weights,
    nearest_index,
    pixel_shuffle_index,
    pixel_unshuffle_index,
    separable_map,
)
from nbgrad.tensor import Tensor

__all__ = [
    "channel_shuffle",
    "affine_grid",
    "grid_sample",
    "interpolate",
    "upsample",
    "upsample_nearest",
    "upsample_bilinear",
    "pixel_shuffle",
    "pixel_unshuffle",
]


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """The channels (dim 1) of ``groups`` groups interleaved: ``(g, c / g)`` transposed."""
    if groups <= 0:
        raise RuntimeError(
            f"Number of groups to divide channels in must be positive. Value of groups:{groups}"
        )
    if input.dim() <= 2:
        raise RuntimeError(
            "channel_shuffle expects input to have at least 3 dimensions, but got input with "
            f"sizes {list(input.shape)}"
        )
    n, c, rest = input.shape[0], input.shape[1], tuple(input.shape[2:])
    if c % groups:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups."
        )
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


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


# mode -> the number of spatial dims it takes (None: any of 1, 2, 3) and the row of each
_MODES = {
    "nearest": (None, "upsample_nearest{n}d"),
    "nearest-exact": (None, "_upsample_nearest_exact{n}d"),
    "linear": (1, "upsample_linear1d"),
    "bilinear": (2, "upsample_bilinear2d"),
    "bicubic": (2, "upsample_bicubic2d"),
    "trilinear": (3, "upsample_trilinear3d"),
}


def _output_sizes(input, size, scale_factor, recompute_scale_factor, n):
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        sizes = list(size) if isinstance(size, (list, tuple)) else [size] * n
        if len(sizes) != n:
            raise ValueError(
                f"Input and output must have the same number of spatial dimensions, but got "
                f"input with spatial dimensions of {list(input.shape[2:])} and output size of "
                f"{sizes}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                "output size in (o1, o2, ...,oK) format."
            )
        return [int(s) for s in sizes], [None] * n
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [scale_factor] * n
    if len(scales) != n:
        raise ValueError(
            f"Input and scale_factor must have the same number of spatial dimensions, but got "
            f"input with spatial dimensions of {list(input.shape[2:])} and scale_factor of "
            f"shape {scales}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
            "scale_factor in (s1, s2, ...,sK) format."
        )
    sizes = [math.floor(float(input.shape[i + 2]) * float(s)) for i, s in enumerate(scales)]
    return sizes, ([None] * n if recompute_scale_factor else [float(s) for s in scales])


def interpolate(
    input: Tensor,
    size=None,
    scale_factor=None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resize the 1, 2 or 3 spatial dims of an ``(N, C, ...)`` input to ``size`` (or by
    ``scale_factor``): ``"nearest"``, ``"nearest-exact"``, ``"area"`` (adaptive average
    pooling), or ``"linear"`` / ``"bilinear"`` / ``"bicubic"`` / ``"trilinear"`` with or
    without ``align_corners``; source indices and weights as PyTorch's CPU kernels compute
    them, one index-map row per PyTorch node (``UpsampleBilinear2DBackward0``...).
    """
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    if antialias:
        raise NotImplementedError("interpolate: antialias is not supported")
    n = input.dim() - 2
    if mode == "area" and n in (1, 2, 3):
        sizes, _ = _output_sizes(input, size, scale_factor, recompute_scale_factor, n)
        return getattr(nbgrad.nn.functional, f"adaptive_avg_pool{n}d")(input, sizes)
    dims, row = _MODES.get(mode, (-1, None))
    if n not in (1, 2, 3) or dims not in (None, n):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
            f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact"
            f" (got {mode})"
        )
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    sizes, scales = _output_sizes(input, size, scale_factor, recompute_scale_factor, n)
    per_dim = []
    for in_size, out_size, scale in zip(input.shape[2:], sizes, scales):
        if mode.startswith("nearest"):
            exact = mode == "nearest-exact"
            per_dim.append((nearest_index(in_size, out_size, scale, exact), None))
        else:
            weights = cubic_weights if mode == "bicubic" else linear_weights
            per_dim.append(weights(in_size, out_size, scale, align_corners, input.dtype.np))
    index, weight = separable_map(tuple(input.shape[2:]), per_dim)
    return apply_map(input, row.format(n=n), index, weight, input.shape[2:])


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of ``interpolate``, as PyTorch's."""
    warnings.warn(
        "`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode="nearest")``."""
    warnings.warn(
        "`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode="bilinear", align_corners=True)``."""
    warnings.warn(
        "`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``(*, C * r * r, H, W)`` -> ``(*, C, H * r, W * r)``."""
    r = int(upscale_factor)
    if input.dim() < 3:
        raise RuntimeError(
            f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
            f"{input.dim()} dimension(s)"
        )
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
            f"square of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    return apply_map(input, "pixel_shuffle", pixel_shuffle_index(c, h, w, r), None, (c, h, w))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``(*, C, H * r, W * r)`` -> ``(*, C * r * r, H, W)``: the inverse of ``pixel_shuffle``."""
    r = int(downscale_factor)
    if input.dim() < 3:
        raise RuntimeError(
            f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
            f"{input.dim()} dimension(s)"
        )
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError(
            f"pixel_unshuffle expects height and width to be divisible by downscale_factor, "
            f"but got height={h}, width={w} and downscale_factor={r}"
        )
    index = pixel_unshuffle_index(c, h, w, r)
    return apply_map(input, "pixel_unshuffle", index, None, (c, h, w))
