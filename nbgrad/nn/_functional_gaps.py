"""The in-place activation forms (``relu_``, ``elu_``...), ``normalize``, ``one_hot``,
``pdist``, ``gumbel_softmax``, the ``*_with_indices`` poolings, ``channel_shuffle``,
``bilinear``, the power-average (``lp_pool*``) poolings, ``rrelu``, ``max_unpool*`` and two
losses (``multilabel_margin_loss``, ``triplet_margin_with_distance_loss``) of
``nbgrad.nn.functional`` (kept here so that ``functional.py`` stays small).

NOTE [Composed gaps]: all of these are composed from table ops (``index_select``, ``scatter``,
``norm``, ``matmul``, ``avg_pool2d``...), with index arrays computed once in NumPy, so their
gradients are the table's, to any order; where PyTorch has one ATen node (``PdistBackward0``,
``MaxUnpool2DBackward0``, ``RreluWithNoiseBackward0``, ``MultilabelMarginLossBackward0``,
``TrilinearBackward0`` for ``bilinear``), the ``grad_fn`` here is the last op composed.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

import nbgrad  # nbgrad.nn.functional, read at call time: that module imports this one
from nbgrad import dtypes
from nbgrad._tensor import creation as _creation
from nbgrad._tensor.dispatch import _dispatch
from nbgrad.derivatives import OPS
from nbgrad.nn._functional_conv import _tuple
from nbgrad.tensor import Tensor, tensor

__all__ = [
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


def _F():  # noqa: N802
    return nbgrad.nn.functional


# ---- in-place activations ---------------------------------------------------------------------
def relu_(input: Tensor) -> Tensor:
    """``relu`` in place."""
    return _F().relu(input, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``elu`` in place (``EluBackward1``)."""
    return _F().elu(input, alpha, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``celu`` in place (``CeluBackward1``)."""
    return _F().celu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:
    """``selu`` in place (``EluBackward1``)."""
    return _F().selu(input, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``leaky_relu`` in place (``LeakyReluBackward1``)."""
    return _F().leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``hardtanh`` in place."""
    return _F().hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """``threshold`` in place (``ThresholdBackward1``)."""
    return _F().threshold(input, threshold, value, inplace=True)


def rrelu(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
) -> Tensor:
    """Randomised leaky ReLU: in training, each non-positive entry times a slope drawn
    uniformly from ``[lower, upper]``; in evaluation, ``leaky_relu`` with the mean slope.

    NOTE [RReLU as leaky ReLU or a product]: PyTorch's one node is ``RreluWithNoiseBackward0``;
    here evaluation is the ``leaky_relu`` row and training ``input * noise`` with the noise
    (the slopes, and 1 where positive) drawn in NumPy: the gradients are the same.
    """
    if not training:
        return _F().leaky_relu(input, (lower + upper) / 2, inplace)
    x = np.asarray(input.detach())
    slopes = _creation._rng.uniform(lower, upper, size=x.shape)
    noise = tensor(np.where(x <= 0, slopes, 1.0).astype(input.dtype.np), device=input.device)
    return input.mul_(noise) if inplace else input * noise


def rrelu_(
    input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False
) -> Tensor:
    """``rrelu`` in place."""
    return rrelu(input, lower, upper, training, inplace=True)


# ---- normalize, one_hot, pdist, gumbel_softmax ------------------------------------------------
def normalize(
    input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None
) -> Tensor:
    """``input`` divided by its ``p``-norm along ``dim`` (at least ``eps``)."""
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is None:
        return input / denom
    out.copy_(input / denom)
    return out


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """An int64 tensor of shape ``(*tensor.shape, num_classes)``, 1 at each class index
    (``num_classes=-1``: one more than the largest index)."""
    if tensor.dtype != dtypes.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    idx = np.asarray(tensor)
    if num_classes == -1:
        if idx.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(idx.max()) + 1
    if idx.size and idx.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if idx.size and idx.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = (idx[..., None] == np.arange(num_classes)).astype(np.int64)
    return nbgrad.tensor(out, device=tensor.device)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm distance between every pair of rows ``i < j`` of an ``(N, M)`` input, in
    the order of the upper triangle of the distance matrix."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    return _dispatch(OPS["_pdist_forward"], (input,), {"p": float(p)})


def gumbel_softmax(
    logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1
) -> Tensor:
    """A sample of the Gumbel-softmax distribution: ``softmax((logits + g) / tau)`` for Gumbel
    noise ``g``; with ``hard``, the one-hot of its argmax, with the soft sample's gradient."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    draws = _creation._rng.exponential(size=tuple(logits.shape)).astype(logits.dtype.np)
    gumbels = -tensor(draws, device=logits.device).log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = _creation.zeros_like(logits).scatter(dim, index, value=1.0)
    return y_hard - y_soft.detach() + y_soft


# ---- pooling with indices, channel shuffle, bilinear, power-average pooling, unpooling ---------
def max_pool1d_with_indices(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """``max_pool1d``'s values and indices (always both, as PyTorch's)."""
    return _F().max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """``max_pool2d``'s values and indices (always both, as PyTorch's)."""
    return _F().max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    """``adaptive_max_pool1d``'s values and indices (always both)."""
    return _F().adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    """``adaptive_max_pool2d``'s values and indices (always both)."""
    return _F().adaptive_max_pool2d(input, output_size, True)


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


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None):
    """``y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o]``."""
    if input1.dim() != input2.dim():
        raise RuntimeError(
            f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}"
        )
    if tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise RuntimeError(
            "bilinear(): input batch dimensions do not match: got "
            f"{list(input1.shape)} and {list(input2.shape)}"
        )
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be three-dimensional, got {weight.dim()}")
    n_out, n1, n2 = weight.shape
    if input1.shape[-1] != n1 or input2.shape[-1] != n2:
        raise RuntimeError(
            f"bilinear(): input sizes do not match weight: got {list(input1.shape)}, "
            f"{list(input2.shape)} and weight {list(weight.shape)}"
        )
    lead = tuple(input1.shape[:-1])
    x1, x2 = input1.reshape(-1, n1), input2.reshape(-1, n2)
    left = x1.matmul(weight.permute(1, 0, 2).reshape(n1, n_out * n2)).view(-1, n_out, n2)
    out = (left * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        out = out + bias
    return out.view(*lead, n_out)


def _lp_finish(out, norm_type, window):
    return (out.sign() * out.abs().relu()).mul(window).pow(1.0 / norm_type)


def lp_pool1d(
    input: Tensor, norm_type: float, kernel_size: int, stride=None, ceil_mode: bool = False
) -> Tensor:
    """``(sum of x ** p over each window) ** (1 / p)`` (max of ``|x|`` for ``p = inf``)."""
    F = _F()  # noqa: N806
    if norm_type == math.inf:
        return F.max_pool1d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -F.max_pool1d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = F.avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kernel_size)


def lp_pool2d(
    input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False
) -> Tensor:
    """``(sum of x ** p over each window) ** (1 / p)`` over the last two dims."""
    F = _F()  # noqa: N806
    kw, kh = F._pair(kernel_size)
    if norm_type == math.inf:
        return F.max_pool2d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -F.max_pool2d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = F.avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kw * kh)


def lp_pool3d(
    input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False
) -> Tensor:
    """``(sum of x ** p over each window) ** (1 / p)`` over the last three dims."""
    F = _F()  # noqa: N806
    if norm_type == math.inf:
        return F.max_pool3d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -F.max_pool3d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = F.avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, math.prod(_tuple(kernel_size, 3, "kernel_size")))


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    n = len(kernel_size)
    default = [
        (input.shape[-n + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(n)
    ]
    if output_size is None:
        ret = default
    else:
        output_size = list(output_size)
        if len(output_size) == n + 2:
            output_size = output_size[2:]
        if len(output_size) != n:
            raise ValueError(
                f"output_size should be a sequence containing {n} or {n + 2} elements, but it "
                f"has a length of '{len(output_size)}'"
            )
        for d in range(n):
            lo, hi = default[d] - stride[d], default[d] + stride[d]
            if not lo < output_size[d] < hi:
                raise ValueError(
                    f'invalid output_size "{output_size}" (dim {d} must be between {lo} and {hi})'
                )
        ret = output_size
    for d in range(n):
        if ret[d] < 0:
            raise ValueError(
                "max_unpooling: output_size must contain non-negative spatial dimensions, but "
                f"got output_size[{d}]={ret[d]}"
            )
    return [int(v) for v in ret]


def _max_unpool(input, indices, size):
    """Each value of ``input`` written at its flat index ``indices`` in a zero volume of
    ``size`` (``MaxUnpool2DBackward0`` / ``MaxUnpool3DBackward0``)."""
    if indices.dtype != dtypes.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {indices.dtype}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor "
            f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}"
        )
    volume = math.prod(size)
    idx = np.asarray(indices)
    if idx.size and (idx.min() < 0 or idx.max() >= volume):
        bad = int(idx.max() if idx.max() >= volume else idx.min())
        raise RuntimeError(
            f"Found an invalid max index: {bad} (output volumes are of size "
            f"{'x'.join(map(str, size))}"
        )
    row = OPS[f"max_unpool{len(size)}d"]
    return _dispatch(row, (input, indices), {"output_size": tuple(size)})


def max_unpool1d(
    input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None
) -> Tensor:
    """The inverse of ``max_pool1d``: each value put back at its index, zeros elsewhere."""
    kernel_size = _tuple(kernel_size, 1, "kernel_size")
    stride = kernel_size if stride is None else _tuple(stride, 1, "stride")
    padding = _tuple(padding, 1, "padding")
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"max_unpool1d: Expected 2D or 3D input, but got input of size {list(input.shape)}"
        )
    size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    out = _max_unpool(input.unsqueeze(-2), indices.unsqueeze(-2), (1, *size))
    return out.squeeze(-2)


def max_unpool2d(
    input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None
) -> Tensor:
    """The inverse of ``max_pool2d``: each value put back at its flat index in its plane."""
    F = _F()  # noqa: N806
    kernel_size = F._pair(kernel_size)
    stride = kernel_size if stride is None else F._pair(stride)
    padding = F._pair(padding)
    if input.dim() not in (3, 4):
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor for input with possibly 0 batch size and "
            f"non-zero dimensions for input, but got: {list(input.shape)}"
        )
    size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return _max_unpool(input, indices, size)


def max_unpool3d(
    input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None
) -> Tensor:
    """The inverse of ``max_pool3d``: each value put back at its flat index in its volume."""
    kernel_size = _tuple(kernel_size, 3, "kernel_size")
    stride = kernel_size if stride is None else _tuple(stride, 3, "stride")
    padding = _tuple(padding, 3, "padding")
    if input.dim() not in (4, 5):
        raise RuntimeError(
            "Expected 4D or 5D (batch mode) tensor for input with possibly 0 batch size and "
            f"non-zero dimensions for input, but got: {list(input.shape)}"
        )
    size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return _max_unpool(input, indices, size)


# ---- losses -----------------------------------------------------------------------------------
def multilabel_margin_loss(
    input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:
    """``sum over target classes j and non-target classes i of max(0, 1 - (x[j] - x[i])) / C``
    per sample; ``target`` lists each sample's classes, ended by the first ``-1``."""
    F = _F()  # noqa: N806
    reduction = F._legacy_reduction(size_average, reduce, reduction)
    F._check_reduction(reduction)
    if target.dtype != dtypes.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype._legacy[:-6]}")
    one = input.dim() <= 1
    if input.dim() > 2 or tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(
            f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}"
        )
    x = input.reshape(1, -1) if one else input
    t = np.asarray(target).reshape(x.shape)
    c = x.shape[1]
    # valid[n, k]: position k of the target list is before its first -1
    valid = np.cumprod(t != -1, axis=1).astype(bool)
    if np.any(valid & ((t < 0) | (t >= c))):
        raise RuntimeError(f"multilabel_margin_loss: target out of range for {c} classes")
    is_target = np.zeros(x.shape, dtype=bool)
    rows = np.nonzero(valid)
    is_target[rows[0], t[valid]] = True
    weight = (valid[:, :, None] & ~is_target[:, None, :]).astype(input.dtype.np)
    picked = x.gather(1, tensor(np.where(valid, t, 0)))  # x[n, y_k]
    margins = (1 - picked.unsqueeze(2) + x.unsqueeze(1)).relu()
    losses = (margins * tensor(weight, device=input.device)).sum((1, 2)) / c
    if one:
        losses = losses.squeeze(0)
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.mean()


def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function=None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` for a distance ``d`` (default:
    ``pairwise_distance``); with ``swap``, ``d(a, n)`` is ``min(d(a, n), d(p, n))``."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.dim(), positive.dim(), negative.dim()
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number "
            f"of dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative "
            f"{n_dim}D inputs"
        )
    if distance_function is None:
        distance_function = _F().pairwise_distance
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        dist_neg = nbgrad.minimum(dist_neg, distance_function(positive, negative))
    loss = (margin + dist_pos - dist_neg).clamp_min(0)
    if reduction == "sum":
        return loss.sum()
    return loss.mean() if reduction == "mean" else loss
