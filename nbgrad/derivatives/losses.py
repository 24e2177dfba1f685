"""Op table rows: the losses PyTorch runs as one op each (``mse_loss``, ``smooth_l1_loss``,
``huber_loss``, ``binary_cross_entropy`` and ``_with_logits``, ``nll_loss``, ``nll_loss2d``,
``soft_margin_loss``, ``multi_margin_loss``, ``ctc_loss``). The other losses of ``nbgrad.nn.functional`` are
composed from Tensor ops, as PyTorch composes them."""

from __future__ import annotations

from nbgrad._tensor import creation as _C
from nbgrad._tensor.dispatch import OPS, _dispatch
from nbgrad.derivatives.opinfo import op
from nbgrad.kernels.losses import (
    _bce,
    _bce_logits,
    _ctc,
    _loss_reduction,
    _multi_margin,
    _nll_loss,
    _nll_loss2d,
    _smooth_l1,
)

_CTC_ATTRS = "targets input_lengths target_lengths blank zero_infinity"

# fmt: off
op("soft_margin_loss", "SoftMarginLossBackward0", "self target", lambda xp, self, target, reduction: _loss_reduction(xp.logaddexp(0, -self * target), reduction),
   attrs="reduction", promote="binary", nondiff=("target",),
   self=lambda grad, self, target, reduction: _loss_grad(grad, self, reduction) * -target * (-target * self).sigmoid())
# input (N, C) or (C,), target (N,) class indices; weight (C,) or None: constants
op("multi_margin_loss", "MultiMarginLossBackward0", "self target weight", lambda xp, self, target, weight, p, margin, reduction: _multi_margin(xp, self, target, weight, p, margin, reduction),
   attrs="p margin reduction", nondiff=("target", "weight"),
   self=lambda grad, self, target, weight, p, margin, reduction: _multi_margin_backward(grad, self, target, weight, p, margin, reduction))
# NOTE [CTC as one op]
# the loss of each sample is a log-space dynamic programme over time;
# composing it from Tensor ops would make T * N small nodes. As PyTorch, it is one op whose
# backward (the alpha-beta recursion) is an op without a derivative of its own, and whose
# gradient is PyTorch's: ``exp(log_probs) - exp(log(alpha * beta) + nll - log_probs)``, the
# gradient w.r.t. the logits under a log_softmax, not w.r.t. log_probs (the two agree once
# back through log_softmax, as the softmax sums to 1). With ``zero_infinity`` the op still
# gives the infinite losses (F.ctc_loss zeroes them with a ``where``, as ATen) but zero
# gradients for them.
op("ctc_loss", "CtcLossBackward0", "log_probs", lambda xp, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity: _ctc(xp, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity)[0],
   attrs=_CTC_ATTRS, promote="float", quiet=True,
   log_probs=lambda grad, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity: _dispatch(
       OPS["ctc_loss_backward"], (grad, log_probs),
       {"targets": targets, "input_lengths": input_lengths, "target_lengths": target_lengths, "blank": blank, "zero_infinity": zero_infinity}))
op("ctc_loss_backward", "CtcLossBackwardBackward0", "grad_output log_probs", lambda xp, grad_output, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity: _ctc(xp, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity, grad_output)[1],
   attrs=_CTC_ATTRS, quiet=True)
# fmt: on


def _multi_margin_backward(grad, x, target, weight, p, margin, reduction):
    c = x.shape[-1]
    x2 = x.reshape(-1, c)
    y = target.reshape(-1, 1)
    z = margin - x2.gather(1, y) + x2
    others = _C.arange(c, device=x.device).view(1, c) != y
    active = (z > 0).logical_and(others)
    g = active.to(x.dtype) if p == 1 else _C.where(active, 2 * z, 0.0)
    if weight is not None:
        g = g * weight[target.reshape(-1)].view(-1, 1)
    g = g / c
    g = g - others.logical_not().to(x.dtype) * g.sum(1, keepdim=True)
    if reduction == "none":
        g = g * grad.reshape(-1, 1)
    else:
        g = g * (grad / x2.shape[0] if reduction == "mean" else grad)
    return g.reshape(x.shape)


# fmt: off
op("mse_loss", "MseLossBackward0", "self target", lambda xp, self, target, reduction: _loss_reduction((self - target) ** 2, reduction),
   attrs="reduction", promote="binary",
   self=lambda grad, self, target, reduction: _mse_loss_backward(grad, self, target, reduction),
   target=lambda grad, self, target, reduction: -_mse_loss_backward(grad, self, target, reduction))
op("smooth_l1_loss", "SmoothL1LossBackward0", "self target", lambda xp, self, target, reduction, beta: _loss_reduction(_smooth_l1(xp, self - target, beta), reduction),
   attrs="reduction beta", promote="binary",
   self=lambda grad, self, target, reduction, beta: _smooth_l1_backward(grad, self - target, reduction, beta),
   target=lambda grad, self, target, reduction, beta: -_smooth_l1_backward(grad, self - target, reduction, beta))
op("huber_loss", "HuberLossBackward0", "self target", lambda xp, self, target, reduction, delta: _loss_reduction(_smooth_l1(xp, self - target, delta) * delta, reduction),
   attrs="reduction delta", promote="binary",
   self=lambda grad, self, target, reduction, delta: _smooth_l1_backward(grad, self - target, reduction, delta) * delta,
   target=lambda grad, self, target, reduction, delta: -_smooth_l1_backward(grad, self - target, reduction, delta) * delta)
# weight: a constant (PyTorch gives it no gradient either)
op("binary_cross_entropy", "BinaryCrossEntropyBackward0", "self target weight", lambda xp, self, target, weight, reduction: _loss_reduction(_bce(xp, self, target, weight), reduction),
   attrs="reduction", promote="binary", nondiff=("weight",),
   self=lambda grad, self, target, weight, reduction: _loss_grad(grad, self, reduction) * (self - target) / ((1 - self) * self).clamp(min=1e-12) * _weight_or_1(weight),
   target=lambda grad, self, weight, reduction: _loss_grad(grad, self, reduction) * (_clamped_log(1 - self) - _clamped_log(self)) * _weight_or_1(weight))
op("binary_cross_entropy_with_logits", "BinaryCrossEntropyWithLogitsBackward0", "self target weight pos_weight",
   lambda xp, self, target, weight, pos_weight, reduction: _loss_reduction(_bce_logits(xp, self, target, weight, pos_weight), reduction),
   attrs="reduction", promote="binary", nondiff=("weight", "pos_weight"),
   self=lambda grad, self, target, weight, pos_weight, reduction: _loss_grad(grad, self, reduction) * _bce_logits_self_grad(self, target, pos_weight) * _weight_or_1(weight),
   target=lambda grad, self, weight, pos_weight, reduction: _loss_grad(grad, self, reduction) * _bce_logits_target_grad(self, pos_weight) * _weight_or_1(weight))
op("nll_loss", "NllLossBackward0", "self target weight", lambda xp, self, target, weight, reduction, ignore_index: _nll_loss(xp, self, target, weight, reduction, ignore_index),
   attrs="reduction ignore_index", nondiff=("target", "weight"), quiet=True,
   self=lambda grad, self_shape, target, weight, reduction, ignore_index: _nll_loss_backward(grad, self_shape, target, weight, reduction, ignore_index))
# (N, C, H, W) log-probabilities and (N, H, W) targets
op("nll_loss2d", "NllLoss2DBackward0", "self target weight", lambda xp, self, target, weight, reduction, ignore_index: _nll_loss2d(xp, self, target, weight, reduction, ignore_index),
   attrs="reduction ignore_index", nondiff=("target", "weight"), quiet=True,
   self=lambda grad, self_shape, target, weight, reduction, ignore_index: _nll_loss2d_backward(grad, self_shape, target, weight, reduction, ignore_index))
# fmt: on


def _weight_or_1(weight):
    return 1.0 if weight is None else weight


def _smooth_l1_backward(grad, d, reduction, beta):
    return _loss_grad(grad, d, reduction) * _C.where(d.abs() < beta, d / beta, d.sign())


def _loss_grad(grad, self, reduction):
    """The upstream gradient of a reduced loss, per element: divided by the count for "mean"."""
    return grad / max(self.numel(), 1) if reduction == "mean" else grad


def _clamped_log(t):
    """``log`` clamped below at -100, as PyTorch's binary cross entropy does."""
    return t.log().clamp(min=-100.0)


def _bce_logits_self_grad(x, t, pos_weight):
    if pos_weight is None:
        return x.sigmoid() - t
    return (1 - t) - ((pos_weight - 1) * t + 1) * (-x).sigmoid()


def _bce_logits_target_grad(x, pos_weight):
    if pos_weight is None:
        return -x
    softplus_neg = (-x).relu() + (-x.abs()).exp().log1p()  # log(1 + exp(-x)), stably
    return -x + (pos_weight - 1) * softplus_neg


def _mse_loss_backward(grad, self, target, reduction):
    diff = self - target
    if reduction == "mean":
        return grad * diff * (2 / max(diff.numel(), 1))
    return grad * diff * 2


def _nll_loss2d_backward(grad, self_shape, target, weight, reduction, ignore_index):
    n, c, h, w = self_shape
    flat = _nll_loss_backward(grad, (n * h * w, c), target, weight, reduction, ignore_index)
    return flat.reshape(n, h, w, c).permute(0, 3, 1, 2)


def _nll_loss_backward(grad, self_shape, target, weight, reduction, ignore_index):
    t = target.reshape(-1)
    valid = t != ignore_index
    safe = _C.where(valid, t, 0)
    if weight is not None:
        w = weight.index_select(0, safe).to(grad.dtype) * valid
    else:
        w = valid.to(grad.dtype)
    if reduction == "mean":
        w = w / w.sum()
    g = grad.reshape(-1) if reduction == "none" else grad
    n_classes = self_shape[-1] if self_shape else 1
    out = _C.zeros((t.shape[0], n_classes), dtype=grad.dtype, device=grad.device)
    return out.scatter_add(1, safe.unsqueeze(1), (-w * g).unsqueeze(1)).reshape(self_shape)
