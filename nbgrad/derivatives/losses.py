"""Op table rows: the losses PyTorch runs as one op each (``soft_margin_loss``,
``multi_margin_loss``, ``ctc_loss``). The other losses of ``nbgrad.nn.functional`` are
composed from Tensor ops, as PyTorch composes them."""

from __future__ import annotations

import numpy as np

from nbgrad._kernels import _bce, _bce_logits, _nll_loss, _nll_loss2d, _smooth_l1
from nbgrad._tensor import creation as _C
from nbgrad._tensor.dispatch import OPS, _dispatch
from nbgrad.backend import to_host
from nbgrad.derivatives.opinfo import op

_CTC_ATTRS = "targets input_lengths target_lengths blank zero_infinity"

# fmt: off
op("soft_margin_loss", "SoftMarginLossBackward0", "self target", lambda xp, self, target, reduction: _loss_reduction(xp.logaddexp(0, -self * target), reduction),
   attrs="reduction", promote="binary", nondiff=("target",),
   self=lambda grad, self, target, reduction: _loss_grad(grad, self, reduction) * -target * (-target * self).sigmoid())
# input (N, C) or (C,), target (N,) class indices; weight (C,) or None: constants
op("multi_margin_loss", "MultiMarginLossBackward0", "self target weight", lambda xp, self, target, weight, p, margin, reduction: _multi_margin(xp, self, target, weight, p, margin, reduction),
   attrs="p margin reduction", nondiff=("target", "weight"),
   self=lambda grad, self, target, weight, p, margin, reduction: _multi_margin_backward(grad, self, target, weight, p, margin, reduction))
# NOTE [CTC as one op]: the loss of each sample is a log-space dynamic programme over time;
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


def _multi_margin(xp, x, target, weight, p, margin, reduction):
    c = x.shape[-1]
    x2 = x.reshape(-1, c)
    y = target.reshape(-1)
    z = margin - xp.take_along_axis(x2, y[:, None], 1) + x2
    z = xp.where((z > 0) & (xp.arange(c)[None, :] != y[:, None]), z, 0) ** p
    if weight is not None:
        z = z * weight[y][:, None]
    losses = z.sum(1) / c
    if x.ndim < 2 and target.ndim == 0:
        losses = losses.reshape(())
    return _loss_reduction(losses, reduction).astype(x.dtype, copy=False)


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


def _ctc_alpha(lp, ext, t_len):
    """``log_alpha`` (``t_len x S``) of one sample: ``lp`` is ``(T, C)``, ``ext`` the target
    with blanks around and between its labels."""
    s = len(ext)
    skip = np.zeros(s, dtype=bool)
    skip[2:] = (ext[2:] != ext[0]) & (ext[2:] != ext[:-2])
    la = np.full((t_len, s), -np.inf)
    la[0, 0] = lp[0, ext[0]]
    if s > 1:
        la[0, 1] = lp[0, ext[1]]
    for t in range(1, t_len):
        prev = la[t - 1]
        acc = prev.copy()
        acc[1:] = np.logaddexp(acc[1:], prev[:-1])
        acc[2:] = np.where(skip[2:], np.logaddexp(acc[2:], prev[:-2]), acc[2:])
        la[t] = acc + lp[t, ext]
    return la, skip


def _ctc_beta(lp, ext, t_len, skip):
    s = len(ext)
    lb = np.full((t_len, s), -np.inf)
    lb[t_len - 1, s - 1] = lp[t_len - 1, ext[s - 1]]
    if s > 1:
        lb[t_len - 1, s - 2] = lp[t_len - 1, ext[s - 2]]
    for t in range(t_len - 2, -1, -1):
        nxt = lb[t + 1]
        acc = nxt.copy()
        acc[:-1] = np.logaddexp(acc[:-1], nxt[1:])
        acc[:-2] = np.where(skip[2:], np.logaddexp(acc[:-2], nxt[2:]), acc[:-2])
        lb[t] = acc + lp[t, ext]
    return lb


def _ctc(xp, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity, grad=None):
    """The negative log likelihood of each sample, and (given ``grad``) PyTorch's gradient.

    ``log_probs`` is ``(T, N, C)``; ``targets`` ``(N, S)`` padded or the labels of
    all samples one after another; the lengths are tuples of ints."""
    lp_all = to_host(log_probs).astype(np.float64)
    tg = to_host(targets).astype(np.int64)
    n = lp_all.shape[1]
    nll = np.zeros(n)
    gout = np.zeros_like(lp_all) if grad is not None else None
    if grad is not None:
        gr = np.broadcast_to(to_host(grad).reshape(-1), (n,))
    offset = 0
    for b in range(n):
        tl, il = target_lengths[b], input_lengths[b]
        if tg.ndim == 2:
            labels = tg[b, :tl]
        else:
            labels = tg[offset : offset + tl]
            offset += tl
        ext = np.full(2 * tl + 1, blank, dtype=np.int64)
        ext[1::2] = labels
        lp = lp_all[:, b, :]
        if il == 0:
            nll[b] = 0.0 if tl == 0 else np.inf
            continue
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            la, skip = _ctc_alpha(lp, ext, il)
            end = la[il - 1, -1] if len(ext) == 1 else np.logaddexp(la[il - 1, -1], la[il - 1, -2])
            nll[b] = -end
            if grad is None:
                continue
            if zero_infinity and np.isinf(nll[b]):
                continue
            lb = _ctc_beta(lp, ext, il, skip)
            lab = la + lb
            acc = np.full((il, lp.shape[1]), -np.inf)
            for s, c in enumerate(ext):
                acc[:, c] = np.logaddexp(acc[:, c], lab[:, s])
            gout[:il, b, :] = (np.exp(lp[:il]) - np.exp(acc + nll[b] - lp[:il])) * gr[b]
    dtype = log_probs.dtype
    out = xp.asarray(nll.astype(dtype))
    return out, (None if gout is None else xp.asarray(gout.astype(dtype)))


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


def _loss_reduction(losses, reduction):
    if reduction == "mean":
        return losses.mean()
    if reduction == "sum":
        return losses.sum()
    return losses


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
