"""``nbgrad.nn.functional``: the functions behind the layers and losses.

Mirrors ``torch/nn/functional.py``: same names, signatures, defaults, and the same ``grad_fn``
names where PyTorch has one op (``AddmmBackward0`` for ``linear``, ``ConvolutionBackward0``,
``NllLossBackward0``, ``MseLossBackward0``, ``NativeLayerNormBackward0``,
``EmbeddingBackward0``): those are rows of the op table in ``nbgrad/derivatives/``, so they
are differentiable to any order. The rest is composed from Tensor ops, as in PyTorch.
"""

from __future__ import annotations

import warnings

import numpy as np

from nbgrad import dtypes
from nbgrad._tensor import creation as _creation
from nbgrad._tensor.dispatch import _dispatch
from nbgrad.autograd.grad_mode import no_grad
from nbgrad.derivatives import OPS
from nbgrad.kernels.common import _user_stacklevel
from nbgrad.tensor import Tensor, tensor

__all__ = [
    "linear",
    "conv2d",
    "relu",
    "leaky_relu",
    "silu",
    "elu",
    "softplus",
    "hardtanh",
    "relu6",
    "logsigmoid",
    "tanh",
    "sigmoid",
    "gelu",
    "softmax",
    "log_softmax",
    "threshold",
    "prelu",
    "glu",
    "mish",
    "hardswish",
    "hardsigmoid",
    "selu",
    "celu",
    "softmin",
    "softsign",
    "softshrink",
    "hardshrink",
    "tanhshrink",
    "dropout",
    "embedding",
    "layer_norm",
    "instance_norm",
    "batch_norm",
    "max_pool2d",
    "avg_pool2d",
    "adaptive_avg_pool2d",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "nll_loss",
    "cross_entropy",
    "linear_cross_entropy",
    "kl_div",
    "cosine_embedding_loss",
    "margin_ranking_loss",
    "triplet_margin_loss",
    "hinge_embedding_loss",
    "gaussian_nll_loss",
    "poisson_nll_loss",
    "soft_margin_loss",
    "multilabel_soft_margin_loss",
    "multi_margin_loss",
    "ctc_loss",
    "cosine_similarity",
    "pairwise_distance",
    "scaled_dot_product_attention",
    "multi_head_attention_forward",
    "conv1d",
    "conv_transpose1d",
    "conv_transpose2d",
    "max_pool1d",
    "avg_pool1d",
    "adaptive_avg_pool1d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "conv3d",
    "conv_transpose3d",
    "max_pool3d",
    "max_pool3d_with_indices",
    "avg_pool3d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
    "pad",
    "affine_grid",
    "grid_sample",
    "unfold",
    "fold",
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
    "relu_",
    "elu_",
    "celu_",
    "selu_",
    "leaky_relu_",
    "hardtanh_",
    "threshold_",
    "rrelu",
    "rrelu_",
    "normalize",
    "one_hot",
    "pdist",
    "gumbel_softmax",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "channel_shuffle",
    "bilinear",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
    "multilabel_margin_loss",
    "triplet_margin_with_distance_loss",
]


def _generator():
    return _creation._rng  # read now: manual_seed replaces it


def _pair(x, name="argument"):
    if isinstance(x, (list, tuple)):
        if len(x) != 2:
            raise ValueError(f"expected {name} to be a single int or a pair of ints, got {x}")
        return tuple(int(v) for v in x)
    return (int(x), int(x))


def _check_reduction(reduction):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _legacy_reduction(size_average, reduce, reduction):
    """``size_average`` / ``reduce`` (deprecated) -> ``reduction``, as ``_Reduction``."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn(
        "size_average and reduce args will be deprecated, please use reduction='"
        f"{_legacy_string(size_average, reduce)}' instead.",
        stacklevel=3,
    )
    return _legacy_string(size_average, reduce)


def _legacy_string(size_average, reduce):
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


# ---- linear and convolution -------------------------------------------------------------------
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` (``AddmmBackward0`` for a 2-d input with a bias, as PyTorch)."""
    if bias is None:
        return input.matmul(weight.t())
    if input.dim() == 2:
        return _dispatch(OPS["addmm"], (bias, input, weight.t()), {"beta": 1, "alpha": 1})
    lead = tuple(input.shape[:-1])
    flat = input.reshape(-1, input.shape[-1])
    out = _dispatch(OPS["addmm"], (bias, flat, weight.t()), {"beta": 1, "alpha": 1})
    return out.view(*lead, weight.shape[0])


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    dilation=1,
    groups: int = 1,
) -> Tensor:
    """2-d cross-correlation over an ``(N, C, H, W)`` (or unbatched ``(C, H, W)``) input.

    ``padding`` is an int, a pair, ``"valid"`` or ``"same"`` (stride 1 only; an odd total
    padding puts the extra row and column at the bottom and right, as PyTorch).
    """
    if input.dim() == 3:
        return conv2d(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(
            0
        )
    if input.dim() != 4:
        raise RuntimeError(
            "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: "
            f"{list(input.shape)}"
        )
    if weight.dim() != 4:
        raise RuntimeError(
            f"weight should have at least three dimensions, got weight of size {list(weight.shape)}"
        )
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    out_channels, in_per_group, kh, kw = weight.shape
    if input.shape[1] != in_per_group * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected "
            f"input{list(input.shape)} to have {in_per_group * groups} channels, but got "
            f"{input.shape[1]} channels instead"
        )
    if out_channels % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
            f"but got weight of size [{list(weight.shape)}] instead"
        )
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0), (0, 0))
        elif padding == "same":
            if stride != (1, 1):
                raise ValueError("padding='same' is not supported for strided convolutions")
            pads = tuple(
                (d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                for d, k in zip(dilation, (kh, kw))
            )
        else:
            raise ValueError(f"Invalid padding string '{padding}'")
    else:
        ph, pw = _pair(padding, "padding")
        pads = ((ph, ph), (pw, pw))
    attrs = {"stride": stride, "padding": pads, "dilation": dilation, "groups": groups}
    return _dispatch(OPS["convolution"], (input, weight, bias), attrs)


# ---- activations ------------------------------------------------------------------------------
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return input._inplace(OPS["relu"], (), {})
    return input.relu()


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``value`` where ``input <= threshold``, else ``input`` (``ThresholdBackward0``)."""
    attrs = {"threshold": threshold, "value": value}
    return _activation("threshold", input, attrs, inplace, "threshold_")


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    attrs = {"negative_slope": float(negative_slope)}
    if inplace:
        return input._inplace(OPS["leaky_relu_"], (), attrs)
    return _dispatch(OPS["leaky_relu"], (input,), attrs)


def _activation(name, input, attrs, inplace, inplace_row=None):
    if inplace:
        return input._inplace(OPS[inplace_row or name], (), attrs)
    return _dispatch(OPS[name], (input,), attrs)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    return _activation("silu", input, {}, inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    return _activation("elu", input, {"alpha": float(alpha)}, inplace, "elu_")


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    return _activation(
        "softplus", input, {"beta": float(beta), "threshold": float(threshold)}, False
    )


def hardtanh(
    input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
) -> Tensor:
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _activation("hardtanh", input, {"min_val": min_val, "max_val": max_val}, inplace)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return hardtanh(input, 0.0, 6.0, inplace)


def logsigmoid(input: Tensor) -> Tensor:
    return _activation("log_sigmoid", input, {}, False)


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    return input.gelu(approximate)


def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.",
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    if dtype is not None:
        input = input.to(dtypes.as_dtype(dtype))
    return input.softmax(dim)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    if dtype is not None:
        input = input.to(dtypes.as_dtype(dtype))
    return input.log_softmax(dim)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    As PyTorch on the CPU, the result is ``input * noise`` (``MulBackward0``); with
    ``training=False`` or ``p=0`` it is ``input`` itself.
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    if p == 1:
        noise = np.zeros(tuple(input.shape), dtype=input.dtype.np)
    else:
        keep = _generator().random(tuple(input.shape)) >= p
        noise = (keep / (1 - p)).astype(input.dtype.np)
    noise = tensor(noise, device=input.device)
    return input.mul_(noise) if inplace else input * noise


# ---- embedding and normalisation --------------------------------------------------------------
def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of ``weight`` picked by the integer tensor ``input`` (``EmbeddingBackward0``)."""
    if not isinstance(input, Tensor) or input.dtype not in (dtypes.int64, dtypes.int32):
        name = input.dtype if isinstance(input, Tensor) else type(input).__name__
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {name} instead (while checking arguments for embedding)"
        )
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: scale_grad_by_freq and sparse are not supported")
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= weight.shape[0]:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -weight.shape[0]:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.shape[0] + padding_idx
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return _dispatch(OPS["embedding"], (weight, input), {"padding_idx": padding_idx})


def _embedding_renorm_(weight, input, max_norm, norm_type):
    """Scale, in place, the rows that ``input`` picks whose norm exceeds ``max_norm``."""
    with no_grad():
        idx = np.unique(np.asarray(input))
        rows = weight[idx]
        norms = rows.norm(norm_type, dim=1, keepdim=True)
        scale = (max_norm / (norms + 1e-7)).clamp(max=1.0)
        weight[idx] = rows * scale


def layer_norm(
    input: Tensor,
    normalized_shape,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise over the last ``len(normalized_shape)`` dims (``NativeLayerNormBackward0``)."""
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
    attrs = {"normalized_shape": normalized_shape, "eps": eps}
    return _dispatch(OPS["layer_norm"], (input, weight, bias), attrs)


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each channel (dim 1) over the batch and the other dims
    (``NativeBatchNormBackward0``); in training, also update the running stats in place."""
    if input.dim() < 2:
        raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")
    c = input.shape[1]
    if training:
        if input.numel() // max(c, 1) == 1:
            raise ValueError(
                "Expected more than 1 value per channel when training, got input size "
                f"{input.shape}"
            )
    elif running_mean is None or running_var is None:
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    if not training:  # what backward uses: the stats of now, not of a later training step
        running_mean, running_var = running_mean.detach().clone(), running_var.detach().clone()
    attrs = {
        "running_mean": running_mean,
        "running_var": running_var,
        "training": bool(training),
        "momentum": float(momentum),
        "eps": float(eps),
    }
    return _dispatch(OPS["batch_norm"], (input, weight, bias), attrs)


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each channel of each sample over its spatial dims, as ATen's
    ``_instance_norm``: batch norm of the input viewed as one sample of ``N * C`` channels
    (``ViewBackward0`` over ``NativeBatchNormBackward0``, the per-channel tensors repeated
    ``N`` times); running stats, when given, take the mean of the ``N`` updates."""
    if use_input_stats:
        spatial = 1
        for s in input.shape[2:]:
            spatial *= s
        if spatial == 1:
            raise ValueError(
                f"Expected more than 1 spatial element when training, got input size {input.shape}"
            )
    b, c = input.shape[0], input.shape[1]
    reshaped = input.contiguous().view((1, b * c) + tuple(input.shape[2:]))

    def repeated(t):
        return t.repeat(b) if t is not None else None

    mean_, var_ = repeated(running_mean), repeated(running_var)
    out = batch_norm(
        reshaped, mean_, var_, repeated(weight), repeated(bias), use_input_stats, momentum, eps
    )
    with no_grad():
        for buf, updated in ((running_mean, mean_), (running_var, var_)):
            if buf is not None:
                buf.copy_(updated.view(b, c).mean(0))
    return out.view(input.shape)


# ---- pooling ----------------------------------------------------------------------------------
def _check_pool_input(input):
    """A batch ``(N, C, H, W)`` or one unbatched ``(C, H, W)``, as PyTorch's pooling."""
    if input.dim() not in (3, 4):
        raise ValueError(f"expected 3D or 4D input (got {input.dim()}D input)")


def max_pool2d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """The maximum of each window (``MaxPool2DWithIndicesBackward0``); with
    ``return_indices``, also the flat index of each maximum in its ``H x W`` plane."""
    attrs = {
        "kernel_size": _pair(kernel_size),
        "stride": _pair(kernel_size if stride is None or stride == [] else stride),
        "padding": _pair(padding),
        "dilation": _pair(dilation),
        "ceil_mode": bool(ceil_mode),
    }
    _check_pool_input(input)
    values, indices = _dispatch(OPS["max_pool2d"], (input,), attrs)
    return (values, indices) if return_indices else values


def avg_pool2d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override=None,
) -> Tensor:
    """The mean of each window (``AvgPool2DBackward0``)."""
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    attrs = {
        "kernel_size": _pair(kernel_size),
        "stride": _pair(kernel_size if stride is None or stride == [] else stride),
        "padding": _pair(padding),
        "ceil_mode": bool(ceil_mode),
        "count_include_pad": bool(count_include_pad),
        "divisor_override": divisor_override,
    }
    _check_pool_input(input)
    return _dispatch(OPS["avg_pool2d"], (input,), attrs)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """The mean over ``output_size`` windows that tile the input (as PyTorch: a mean,
    ``MeanBackward1``, for a 1 x 1 output; ``AdaptiveAvgPool2DBackward0`` otherwise)."""
    size = output_size if isinstance(output_size, (list, tuple)) else (output_size, output_size)
    size = tuple(input.shape[-2 + i] if s is None else int(s) for i, s in enumerate(size))
    if size == (1, 1):
        return input.mean((-1, -2), keepdim=True)
    _check_pool_input(input)
    return _dispatch(OPS["adaptive_avg_pool2d"], (input,), {"output_size": size})


# ---- losses -----------------------------------------------------------------------------------
def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean squared error (``MseLossBackward0``); ``weight`` weighs each element."""
    _warn_if_sizes_differ(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if weight is None:
        return _elementwise_loss("mse_loss", input, target, reduction)
    _check_loss_weight(weight, input)
    input, target = _broadcast_pair(input, target)
    weighted = (input - target) ** 2 * weight
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return weighted.sum()
    return weighted.sum() / weight.sum()


def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Mean absolute error; as in PyTorch, made of ``abs`` and ``mean`` (``MeanBackward0``)."""
    _warn_if_sizes_differ(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    losses = (input - target).abs()
    return losses if reduction == "none" else losses.sum() if reduction == "sum" else losses.mean()


def _warn_if_sizes_differ(input, target):
    if target.shape != input.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            stacklevel=_user_stacklevel(),
        )


def _check_loss_weight(weight, input):
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")


def _broadcast_pair(input, target):
    """``input`` and ``target`` expanded to their common shape (each only where needed)."""
    shape = tuple(np.broadcast_shapes(tuple(input.shape), tuple(target.shape)))
    input = input if tuple(input.shape) == shape else input.expand(shape)
    target = target if tuple(target.shape) == shape else target.expand(shape)
    return input, target


def _elementwise_loss(name, input, target, reduction, **attrs):
    """A loss row of the table on ``input`` and ``target`` broadcast to one shape."""
    _check_reduction(reduction)
    return _dispatch(OPS[name], _broadcast_pair(input, target), {"reduction": reduction, **attrs})


def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """Quadratic below ``beta``, absolute above (``SmoothL1LossBackward0``)."""
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if beta == 0:  # as PyTorch: the L1 loss itself (which warns of different sizes)
        return l1_loss(input, target, reduction=reduction)
    _warn_if_sizes_differ(input, target)
    return _elementwise_loss("smooth_l1_loss", input, target, reduction, beta=float(beta))


def huber_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0, weight=None
) -> Tensor:
    """Quadratic below ``delta``, linear above (``HuberLossBackward0``); with ``weight``, as
    PyTorch: the weighted losses, then their mean or sum."""
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _warn_if_sizes_differ(input, target)
    if weight is None:
        return _elementwise_loss("huber_loss", input, target, reduction, delta=float(delta))
    _check_loss_weight(weight, input)
    weighted = _elementwise_loss("huber_loss", input, target, "none", delta=float(delta)) * weight
    _check_reduction(reduction)
    return (
        weighted
        if reduction == "none"
        else weighted.sum()
        if reduction == "sum"
        else weighted.mean()
    )


def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``-(t log(x) + (1 - t) log(1 - x))`` for probabilities ``x`` (the logs clamped at
    -100, as PyTorch) (``BinaryCrossEntropyBackward0``)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size."
        )
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        weight = weight.expand(input.shape)
    attrs = {"reduction": reduction}
    return _dispatch(OPS["binary_cross_entropy"], (input, target, weight), attrs)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Binary cross entropy of ``sigmoid(input)``, computed stably from the logits
    (``BinaryCrossEntropyWithLogitsBackward0``); ``pos_weight`` weighs the positive class."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(
            f"Target size ({target.shape}) must be the same as input size ({input.shape})"
        )
    attrs = {"reduction": reduction}
    return _dispatch(
        OPS["binary_cross_entropy_with_logits"], (input, target, weight, pos_weight), attrs
    )


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log likelihood of the class indices ``target`` under log-probabilities
    ``input`` of shape ``(C,)``, ``(N, C)`` or ``(N, C, d1, ...)`` (``NllLossBackward0``)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.dtype not in (dtypes.int64, dtypes.uint8):
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {target.dtype._legacy[:-6]}"
        )
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if (
        input.dim() == 1
        and target.dim() != 0
        or input.dim() >= 2
        and target.shape[:1] != input.shape[:1]
    ):
        raise ValueError(
            f"Expected input batch_size ({input.shape[0] if input.dim() > 1 else 1}) to match "
            f"target batch_size ({target.shape[0] if target.dim() else 1})."
        )
    n_classes = input.shape[1] if input.dim() > 1 else input.shape[0]
    if weight is not None and tuple(weight.shape) != (n_classes,):
        raise RuntimeError(
            f"weight tensor should be defined either for all {n_classes} classes or no classes "
            f"but got weight tensor of shape: {list(weight.shape)}"
        )
    attrs = {"reduction": reduction, "ignore_index": ignore_index}
    if input.dim() <= 2:
        return _dispatch(OPS["nll_loss"], (input, target, weight), attrs)
    if tuple(target.shape) != (input.shape[0],) + tuple(input.shape[2:]):
        raise ValueError(
            f"Expected target size {[input.shape[0]] + list(input.shape[2:])}, got "
            f"{list(target.shape)}"
        )
    if input.dim() == 4:
        return _dispatch(OPS["nll_loss2d"], (input, target, weight), attrs)
    # (N, C, d1, ...) other than 4-d: viewed as (N, C, 1, d1 * ...), as PyTorch's nll_loss_nd
    n = input.shape[0]
    flat_input = input.contiguous().view(n, n_classes, 1, -1)
    flat_target = target.contiguous().view(n, 1, -1)
    out = _dispatch(OPS["nll_loss2d"], (flat_input, flat_target, weight), attrs)
    return out.view(target.shape) if reduction == "none" else out


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """``nll_loss(log_softmax(input, class_dim), target)`` for class indices; for class
    probabilities (a floating ``target`` shaped like ``input``), ``-sum(target * log_softmax)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.dim() == 1 else 1
    n_classes = input.shape[class_dim]
    logp = log_softmax(input, class_dim)
    weight_shape = [1] * input.dim()
    weight_shape[class_dim] = n_classes
    if target.is_floating_point():
        if target.shape != input.shape:
            raise RuntimeError(
                "Expected target with class probabilities to have the same shape as input "
                f"(got {list(target.shape)} and {list(input.shape)})"
            )
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        terms = logp * target
        if weight is not None:
            terms = terms * weight.view(weight_shape)
        loss = -terms.sum(class_dim)
        if reduction == "mean":
            count = max(input.numel() // max(n_classes, 1), 1)  # ATen's div_ by a number:
            return _dispatch(OPS["div_scalar"], (loss.sum(),), {"other": count})  # DivBackward1
        return loss.sum() if reduction == "sum" else loss
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0:
        return nll
    ignore_mask = target == ignore_index
    if weight is not None:
        smooth = -(logp * weight.view(weight_shape)).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    smooth = smooth.masked_fill(ignore_mask, 0.0)
    if reduction == "mean":
        if weight is not None:
            kept = np.asarray(target)[~np.asarray(ignore_mask)]
            smooth_loss = smooth.sum() / weight[tensor(kept.reshape(-1))].sum()
        else:
            smooth_loss = smooth.sum() / (~ignore_mask).sum()
    elif reduction == "sum":
        smooth_loss = smooth.sum()
    else:
        smooth_loss = smooth
    return (1 - label_smoothing) * nll + smooth_loss * (label_smoothing / n_classes)


# ---- attention (in nbgrad/nn/_attention.py, which uses the functions above) --------------------
from nbgrad.nn._attention import (  # noqa: E402
    multi_head_attention_forward,
    scaled_dot_product_attention,
)

# ---- more activations and their in-place forms (in _functional_activations.py) -------------------
from nbgrad.nn._functional_activations import (  # noqa: E402
    celu,
    celu_,
    elu_,
    glu,
    gumbel_softmax,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh_,
    leaky_relu_,
    mish,
    prelu,
    relu_,
    rrelu,
    rrelu_,
    selu,
    selu_,
    softmin,
    softshrink,
    softsign,
    tanhshrink,
    threshold_,
)

# ---- 1-d, 3-d and transposed convolution, bilinear, padding, fold (in _functional_conv.py) -------
from nbgrad.nn._functional_conv import (  # noqa: E402
    bilinear,
    conv1d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    fold,
    pad,
    unfold,
)

# ---- distances (in _functional_distance.py) ------------------------------------------------------
from nbgrad.nn._functional_distance import (  # noqa: E402
    cosine_similarity,
    pairwise_distance,
    pdist,
)

# ---- feature and alpha dropouts (in _functional_dropout.py) --------------------------------------
from nbgrad.nn._functional_dropout import (  # noqa: E402
    alpha_dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)

# ---- embedding bags, one_hot (in _functional_embedding.py) ---------------------------------------
from nbgrad.nn._functional_embedding import (  # noqa: E402
    embedding_bag,
    one_hot,
)

# ---- more losses (in _functional_losses.py) ------------------------------------------------------
from nbgrad.nn._functional_losses import (  # noqa: E402
    cosine_embedding_loss,
    ctc_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    kl_div,
    linear_cross_entropy,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    poisson_nll_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)

# ---- more normalisation (in _functional_norm.py) -------------------------------------------------
from nbgrad.nn._functional_norm import (  # noqa: E402
    group_norm,
    local_response_norm,
    normalize,
    rms_norm,
)

# ---- more pooling: 1-d, 3-d, adaptive, fractional, lp, unpooling (in _functional_pooling.py) ---
from nbgrad.nn._functional_pooling import (  # noqa: E402
    adaptive_avg_pool1d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    avg_pool1d,
    avg_pool3d,
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d_with_indices,
    max_pool3d,
    max_pool3d_with_indices,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)

# ---- interpolation, shuffles, spatial transformers (in _functional_vision.py) --------------------
from nbgrad.nn._functional_vision import (  # noqa: E402
    affine_grid,
    channel_shuffle,
    grid_sample,
    interpolate,
    pixel_shuffle,
    pixel_unshuffle,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)
