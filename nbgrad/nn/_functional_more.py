"""Group, RMS and local response norm, ``embedding_bag``, the feature and alpha dropouts,
``interpolate`` and the pixel shuffles of ``nbgrad.nn.functional`` (kept here so that
``functional.py`` stays small).

All are composed from table ops, so their gradients are the table's, to any order.
``rms_norm``, ``local_response_norm`` and the dropouts follow PyTorch's own composition (the
same ``grad_fn`` names: ``MulBackward0``, ``DivBackward0``, ``AddBackward0``); ``embedding_bag`` is
PyTorch's ``EmbeddingBagBackward0`` row (NOTE [Embedding bag row]); ``group_norm``
is PyTorch's ``NativeGroupNormBackward0`` row. ``interpolate`` and the pixel shuffles are the
index-map rows of PyTorch's names (NOTE [Index-map rows]).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

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
from nbgrad.tensor import Tensor, tensor

__all__ = [
    "group_norm",
    "rms_norm",
    "local_response_norm",
    "embedding_bag",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "alpha_dropout",
    "feature_alpha_dropout",
    "interpolate",
    "upsample",
    "upsample_nearest",
    "upsample_bilinear",
    "pixel_shuffle",
    "pixel_unshuffle",
]


# ---- normalisation ----------------------------------------------------------------------------
def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each sample's channels in ``num_groups`` groups (over the group's channels and
    the spatial dims), then scale and shift per channel.

    One node, PyTorch's ``NativeGroupNormBackward0`` (its row in nbgrad/derivatives/nn.py).
    """
    if input.dim() < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {input.dim()}"
        )
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got "
            f"input of shape {list(input.shape)} and num_groups={num_groups}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != c):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in "
                f"input, but got {name} of shape {list(t.shape)} and input of shape "
                f"{list(input.shape)}"
            )
    size = [n * c // num_groups, num_groups, *input.shape[2:]]
    if math.prod(size) // num_groups == 1:  # PyTorch's _verify_batch_size
        raise ValueError(
            f"Expected more than 1 value per channel when training, got input size {size}"
        )
    attrs = {"num_groups": num_groups, "eps": eps}
    return _dispatch(OPS["native_group_norm"], (input, weight, bias), attrs)


def rms_norm(
    input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None
) -> Tensor:
    """``input * rsqrt(mean(input ** 2) + eps) * weight`` over the trailing
    ``normalized_shape`` dims, as PyTorch's composite; ``eps`` defaults to the dtype's
    machine epsilon."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    n = len(normalized_shape)
    if n == 0 or input.dim() < n or tuple(input.shape[-n:]) != normalized_shape:
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[*, {', '.join(map(str, normalized_shape))}], but got input of size"
            f"{list(input.shape)}"
        )
    if eps is None:
        eps = float(np.finfo(input.dtype.np).eps)
    dims = tuple(range(input.dim() - n, input.dim()))
    out = input * (input.pow(2).mean(dims, keepdim=True) + eps).rsqrt()
    return out * weight if weight is not None else out


def local_response_norm(
    input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor:
    """Divide each element by ``(k + alpha * mean of the squares of the ``size`` neighbouring
    channels) ** beta``, as PyTorch's composite (its 3-d average pool is the 2-d one over the
    flattened spatial dims)."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = div.unsqueeze(1)
    else:
        div = div.view(input.shape[0], 1, input.shape[1], -1)
    div = nbgrad.nn.functional.pad(div, (0, 0, size // 2, (size - 1) // 2))
    div = nbgrad.nn.functional.avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    if dim > 3:
        div = div.view(input.shape)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


# ---- embedding bags ---------------------------------------------------------------------------
def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """The sum, mean or max of the embeddings of each bag of indices: the rows of a 2-d
    ``input``, or the runs of a 1-d ``input`` that start at ``offsets``.
    An empty bag gives zeros; ``padding_idx`` entries count for nothing (nor in a bag's size).
    """
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, "
            f"then it must have the same shape as the input ({input.shape})"
        )
    if weight.dim() != 2:
        raise ValueError(
            f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}"
        )
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a "
                "mini-batch of fixed length sequences. However, found offsets of type "
                f"{type(offsets)}"
            )
        starts = np.arange(0, input.numel(), input.shape[1])
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        starts = np.asarray(offsets).astype(np.int64)
    else:
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}"
        )
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding_bag: scale_grad_by_freq and sparse are not supported")
    if max_norm is not None:
        nbgrad.nn.functional._embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub."
        )
    indices = np.asarray(input).astype(np.int64)
    total = len(indices)
    if include_last_offset:
        bounds = starts
    else:
        bounds = np.append(starts, total)
    if len(starts) and starts[0] != 0:
        raise RuntimeError(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
            f"from position 0. However, got {starts[0]}"
        )
    bags = len(bounds) - 1
    bag_of = np.repeat(np.arange(bags), np.diff(bounds))
    indices = indices[: len(bag_of)]
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    keep = indices != padding_idx if padding_idx is not None else np.ones(len(bag_of), bool)
    counts = np.bincount(bag_of[keep], minlength=bags)
    scale = keep / np.maximum(counts, 1)[bag_of] if mode == "mean" else keep
    kept = np.flatnonzero(keep)
    slots = np.full((bags, max(1, counts.max(initial=0))), -1, dtype=np.int64)
    slots[bag_of[kept], np.arange(len(kept)) - np.searchsorted(bag_of[kept], bag_of[kept])] = kept
    if per_sample_weights is not None and len(per_sample_weights) != len(bag_of):
        per_sample_weights = per_sample_weights[: len(bag_of)]
    device = weight.device
    inputs = (
        weight,
        per_sample_weights,
        tensor(indices, device=device),
        tensor(bag_of, device=device),
        tensor(scale.astype(weight.dtype.np), device=device),
    )
    return _dispatch(OPS["_embedding_bag"], inputs, {"slots": slots, "mode": mode})[0]


# ---- dropout ----------------------------------------------------------------------------------
def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


_ALPHA = 1.7580993408473766  # -SELU's lambda * alpha: the value a dropped unit takes


def _dropout_impl(input, p, training, inplace, feature, alpha):
    """ATen's ``_dropout_impl``: a keep mask drawn with probability ``1 - p`` (one per channel
    for the feature dropouts), scaled by ``1 / (1 - p)``; the alpha dropouts scale by ``a`` and
    shift by ``b`` instead, keeping a standard normal input's mean and variance."""
    _check_p(p)
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        zero = tensor(0.0, dtype=input.dtype, device=input.device)
        return input.mul_(zero) if inplace else input * zero
    shape = tuple(input.shape)
    if feature:
        shape = shape[:2] + (1,) * (len(shape) - 2)
    keep = (nbgrad.nn.functional._generator().random(shape) >= p).astype(input.dtype.np)
    if not alpha:
        noise = tensor(keep / (1 - p), device=input.device)
        return input.mul_(noise) if inplace else input * noise
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    b = tensor((keep - 1) * (_ALPHA * a) + _ALPHA * a * p, device=input.device)
    noise = tensor(keep * a, device=input.device)
    return input.mul_(noise).add_(b) if inplace else input * noise + b


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of an ``(N, C, L)`` or ``(C, L)`` input with probability ``p``."""
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note "
            "that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs)."
        )
    if input.dim() == 2:
        return _dropout_impl(input.unsqueeze(0), p, training, inplace, True, False).squeeze(0)
    return _dropout_impl(input, p, training, inplace, True, False)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of an ``(N, C, H, W)`` input with probability ``p`` (a 3-d input is
    taken as ``(N, C, L)``, with PyTorch's warning)."""
    _check_p(p)
    if input.dim() not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is deprecated "
            "and will result in an error in a future release. To retain the behavior and "
            "silence this warning, please use dropout instead. Note that dropout2d exists to "
            "provide channel-wise dropout on inputs with 2 spatial dimensions, a channel "
            "dimension, and an optional batch dimension (i.e. 3D or 4D inputs).",
            stacklevel=2,
        )
    if input.dim() == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret "
            "the input as one without a batch dimension, i.e. shape (C, H, W). To maintain "
            "the 1D channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _dropout_impl(input, p, training, inplace, True, False)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of an ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input with
    probability ``p``."""
    _check_p(p)
    if input.dim() not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.dim()}-D input to dropout3d, which is deprecated "
            "and will result in an error in a future release. To retain the behavior and "
            "silence this warning, please use dropout instead. Note that dropout3d exists to "
            "provide channel-wise dropout on inputs with 3 spatial dimensions, a channel "
            "dimension, and an optional batch dimension (i.e. 4D or 5D inputs).",
            stacklevel=2,
        )
    if input.dim() != 5:  # in place: through a batched view of the input, which is returned
        out = _dropout_impl(input.unsqueeze(0), p, training, inplace, True, False)
        return input if inplace else out.squeeze(0)
    return _dropout_impl(input, p, training, inplace, True, False)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Dropout for SELU networks: dropped units take SELU's negative saturation value, and an
    affine map keeps the mean and variance."""
    return _dropout_impl(input, p, training, inplace, False, True)


def feature_alpha_dropout(
    input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
):
    """``alpha_dropout`` of whole channels."""
    return _dropout_impl(input, p, training, inplace, True, True)


# ---- interpolation and pixel shuffles ---------------------------------------------------------
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
