"""More losses of ``nbgrad.nn.functional`` (``functional.py`` holds ``mse_loss``, ``l1_loss``,
the smooth and Huber losses, the binary cross entropies, ``nll_loss`` and ``cross_entropy``).

As PyTorch, ``soft_margin_loss``, ``multi_margin_loss`` and ``ctc_loss`` are one op each (rows of
``nbgrad/derivatives/losses.py``); the rest are composed from Tensor ops in the order ATen's
composite implementations (``Loss.cpp``) or ``torch/nn/functional.py`` use, so their ``grad_fn``
names match PyTorch's (``multilabel_margin_loss``: NOTE [Composed gaps]).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

import nbgrad  # nbgrad.nn.functional, read at call time: that module imports this one
from nbgrad import dtypes
from nbgrad._tensor.creation import ones_like, where, zeros_like
from nbgrad._tensor.dispatch import _dispatch
from nbgrad.autograd.grad_mode import is_grad_enabled, no_grad
from nbgrad.derivatives import OPS
from nbgrad.nn._functional_conv import _F
from nbgrad.nn._functional_distance import pairwise_distance
from nbgrad.tensor import Tensor, tensor

__all__ = [
    "multilabel_margin_loss",
    "triplet_margin_with_distance_loss",
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
    "linear_cross_entropy",
]


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


def _reduction(size_average, reduce, reduction):
    # nbgrad.nn.functional, read at call time: that module imports this one
    _check_reduction = nbgrad.nn.functional._check_reduction
    _legacy_reduction = nbgrad.nn.functional._legacy_reduction

    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    return reduction


def _reduce(losses, reduction):
    if reduction == "mean":
        return losses.mean()
    return losses.sum() if reduction == "sum" else losses


def _xlogy_self(t):
    """``t * log(t)``, 0 where ``t`` is 0 (``xlogy(t, t)``), without a NaN gradient there."""
    zero = t == 0
    return where(zero, 0.0, t * where(zero, 1.0, t).log())


def kl_div(
    input: Tensor,
    target: Tensor,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """``target * (log(target) - input)`` for log-probabilities ``input``; ``"batchmean"``
    divides the sum by the batch size (the KL divergence), ``"mean"`` by the element count."""
    if size_average is not None or reduce is not None:
        reduction = _reduction(size_average, reduce, reduction)
    else:
        if reduction == "mean":
            warnings.warn(
                "reduction: 'mean' divides the total loss by both the batch size and the support "
                "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
                "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
                "major release.",
                stacklevel=2,
            )
        if reduction != "batchmean":
            _reduction(None, None, reduction)
    if log_target:
        losses = target.exp() * (target - input)
    else:
        losses = _xlogy_self(target) - target * input
    reduced = _reduce(losses, "sum" if reduction == "batchmean" else reduction)
    if reduction == "batchmean" and input.dim() != 0:
        reduced = reduced / input.shape[0]
    return reduced


def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``1 - cos(x1, x2)`` where ``target`` is 1, ``max(0, cos - margin)`` where it is -1."""
    reduction = _reduction(size_average, reduce, reduction)
    if target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target.dim() == 1 and (input1.dim() != 2 or input2.dim() != 2):
        raise RuntimeError(
            "1D target tensor expects 2D input tensors, but found inputs with sizes "
            f"{list(input1.shape)} and {list(input2.shape)}."
        )
    if target.dim() == 0 and (input1.dim() != 1 or input2.dim() != 1):
        raise RuntimeError(
            "0D target tensor expects 1D input tensors, but found inputs with sizes "
            f"{list(input1.shape)} and {list(input2.shape)}."
        )
    dim = input1.dim() - 1
    eps = 1e-12
    prod_sum = (input1 * input2).sum(dim)
    mag_square1 = (input1 * input1).sum(dim) + eps
    mag_square2 = (input2 * input2).sum(dim) + eps
    cos = prod_sum / (mag_square1 * mag_square2).sqrt()
    zeros = zeros_like(cos)
    pos = 1 - cos
    neg = (cos - margin).clamp_min(0)
    losses = where(target == 1, pos, zeros) + where(target == -1, neg, zeros)
    return _reduce(losses, reduction)


def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``."""
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} "
        )
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, d(a, p) - d(a, n) + margin)`` with the ``p``-norm pairwise distance ``d``;
    ``swap`` uses ``min(d(a, n), d(p, n))``."""
    reduction = _reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a, pd, nd = anchor.dim(), positive.dim(), negative.dim()
    if not (a == pd == nd):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {a}D, positive {pd}D, and negative {nd}D inputs"
        )
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = dist_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + dist_pos - dist_neg).clamp_min(0), reduction)


def hinge_embedding_loss(
    input: Tensor,
    target: Tensor,
    margin: float = 1.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``input`` where ``target`` is 1, ``max(0, margin - input)`` where it is -1."""
    reduction = _reduction(size_average, reduce, reduction)
    zeros = zeros_like(input)
    margin_clamp = (margin - input).clamp_min(0)
    losses = where(target != 1, margin_clamp, zeros) + where(target != -1, input, zeros)
    return _reduce(losses, reduction)


def gaussian_nll_loss(
    input: Tensor,
    target: Tensor,
    var: Tensor | float,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """``0.5 * (log(var) + (input - target) ** 2 / var)`` (plus ``0.5 * log(2 pi)`` if
    ``full``); ``var`` clamped below at ``eps`` (outside the gradient, as PyTorch)."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * ones_like(input)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif (
            input.dim() == var.dim()
            and sum(y for x, y in zip(input.shape, var.shape) if x != y) == 1
        ):
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    size_average=None,
    eps: float = 1e-8,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``exp(input) - target * input`` (``log_input``) or ``input - target * log(input + eps)``;
    ``full`` adds Stirling's approximation of ``log(target!)`` where ``target > 1``."""
    if size_average is not None or reduce is not None:
        # nbgrad.nn.functional, read at call time: that module imports this one
        _legacy_string = nbgrad.nn.functional._legacy_string

        reduction = _legacy_string(size_average, reduce)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


def soft_margin_loss(
    input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:
    """``log(1 + exp(-target * input))`` (``SoftMarginLossBackward0``)."""
    # nbgrad.nn.functional, read at call time: that module imports this one
    _broadcast_pair = nbgrad.nn.functional._broadcast_pair

    reduction = _reduction(size_average, reduce, reduction)
    if target.requires_grad and is_grad_enabled():
        raise RuntimeError(
            "The function 'soft_margin_loss' is not differentiable with respect to argument "
            "'target'. This input cannot have requires_grad True."
        )
    return _dispatch(
        OPS["soft_margin_loss"], _broadcast_pair(input, target), {"reduction": reduction}
    )


def multilabel_soft_margin_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """The mean over classes of the binary cross entropy of ``sigmoid(input)``."""
    # nbgrad.nn.functional, read at call time: that module imports this one
    _legacy_string = nbgrad.nn.functional._legacy_string
    logsigmoid = nbgrad.nn.functional.logsigmoid

    if size_average is not None or reduce is not None:
        reduction = _legacy_string(size_average, reduce)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``sum_{j != y} max(0, margin - x[y] + x[j]) ** p / C`` per sample
    (``MultiMarginLossBackward0``)."""
    reduction = _reduction(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    if input.dim() > 2 or input.dim() == 2 and input.shape[1] == 0:
        raise RuntimeError(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{list(input.shape)}"
        )
    n = input.shape[0] if input.dim() == 2 else 1
    if target.dim() > 1 or target.numel() != n:
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of "
            f"input samples (batch size). Expected target size [{n}], but got "
            f"{list(target.shape)}. Input has shape {list(input.shape)}."
        )
    if input.dim() == 0:
        input = input.view(1)
    attrs = {"p": p, "margin": float(margin), "reduction": reduction}
    return _dispatch(OPS["multi_margin_loss"], (input, target, weight), attrs)


def _lengths(lengths, name):
    if isinstance(lengths, Tensor):
        return tuple(int(v) for v in np.asarray(lengths.detach()).reshape(-1))
    if isinstance(lengths, int):
        return (lengths,)
    return tuple(int(v) for v in lengths)


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths,
    target_lengths,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """Connectionist temporal classification loss of ``log_probs`` ``(T, N, C)`` (or
    ``(T, C)``) against ``targets`` ``(N, S)`` padded, or concatenated ``(sum(lengths),)``
    (``CtcLossBackward0``; ``"mean"`` divides each loss by its target length, then averages)."""
    _reduction(None, None, reduction)
    il = _lengths(input_lengths, "input_lengths")
    tl = _lengths(target_lengths, "target_lengths")
    t_max = log_probs.shape[0]
    n = log_probs.shape[1] if log_probs.dim() == 3 else 1
    if len(il) != n:
        raise RuntimeError(f"input_lengths must be of size batch_size, but got {len(il)}")
    if len(tl) != n:
        raise RuntimeError(f"target_lengths must be of size batch_size, but got {len(tl)}")
    for v in il:
        if v > t_max:
            raise RuntimeError(
                f"Expected input_lengths to have value at most {t_max}, but got value {v} "
                "(while checking arguments for ctc_loss_allocate_outputs)"
            )
    if targets.dim() == 2 and log_probs.dim() == 3 and max(tl, default=0) > targets.shape[1]:
        raise RuntimeError(
            f"Expected tensor to have size at least {max(tl)} at dimension 1, but got size "
            f"{targets.shape[1]} for argument #2 'targets' (while checking arguments for "
            "ctc_loss_allocate_outputs)"
        )
    attrs = {
        "targets": np.asarray(targets.detach()).astype(np.int64),
        "input_lengths": il,
        "target_lengths": tl,
        "blank": int(blank),
        "zero_infinity": bool(zero_infinity),
    }
    unbatched = log_probs.dim() == 2
    if unbatched:  # as ATen: batched, then the loss squeezed (SqueezeBackward1)
        log_probs = log_probs.unsqueeze(1)
        attrs["targets"] = attrs["targets"].reshape(1, -1)
    losses = _dispatch(OPS["ctc_loss"], (log_probs,), attrs)
    if zero_infinity:
        losses = where(losses == math.inf, zeros_like(losses), losses)
    if reduction == "mean":
        lengths = tensor(list(tl), dtype=dtypes.int64, device=log_probs.device).clamp(min=1)
        return (losses / lengths).mean()
    if reduction == "sum":
        return losses.sum()
    return losses.squeeze(0) if unbatched else losses


# ---- linear cross entropy (NOTE [Linear cross entropy in one piece]) --------------------------
def linear_cross_entropy(
    input: Tensor,
    linear_weight: Tensor,
    target: Tensor,
    *,
    linear_bias: Tensor | None = None,
    weight: Tensor | None = None,
    reduction: str = "mean",
    ignore_index: int | None = None,
    label_smoothing: float = 0.0,
    options=None,
) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``; a
    ``linear_weight`` of shape ``(C, d_1, ..., d_K, in_features)`` gives a K-dimensional loss.
    ``ignore_index`` None means -100 for class indices."""
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(
            f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}"
        )
    num_batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(
            "expected equal input and linear_weight last dimensions (in_features), "
            f"got {input.shape[-1]} and {linear_weight.shape[-1]}, respectively"
        )
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(
            f"expected linear_bias shape {(num_classes, *out_features)}, got "
            f"{tuple(linear_bias.shape)}"
        )
    if out_features and not num_batches:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
            f"requires batched input, (N, {in_features}), got unbatched input with shape "
            f"{tuple(input.shape)}"
        )
    logits_shape = (*num_batches, num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if options is not None and (
        out_features
        or reduction not in {"mean", "sum", "none"}
        or label_smoothing != 0.0
        or target.dtype is not dtypes.int64
    ):
        bias_shape = tuple(linear_bias.shape) if linear_bias is not None else None
        warnings.warn(
            "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
            "{'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, "
            f"out_features == (). Got reduction={reduction!r}, label_smoothing="
            f"{label_smoothing}, target.dtype={target.dtype}, out_features={out_features}, "
            f"tracing=False, linear_bias.shape={bias_shape}.",
            stacklevel=2,
        )
    functional = nbgrad.nn.functional
    if out_features:
        rows = math.prod(out_features, start=num_classes)
        linear_weight = linear_weight.reshape((rows, in_features))
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(linear_weight.shape[0])
    logits = functional.linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return functional.cross_entropy(
        logits,
        target,
        weight=weight,
        reduction=reduction,
        ignore_index=ignore_index,
        label_smoothing=label_smoothing,
    )
