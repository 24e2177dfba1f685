"""Op table rows: the losses PyTorch runs as one op each (``soft_margin_loss``,
``multi_margin_loss``, ``ctc_loss``). The other losses of ``nbgrad.nn.functional`` are
composed from Tensor ops, as PyTorch composes them."""

from __future__ import annotations

import numpy as np

from nbgrad._kernels import _vector_norm
from nbgrad._tensor import creation as _C
from nbgrad._tensor.dispatch import OPS, _dispatch
from nbgrad.backend import to_host
from nbgrad.derivatives.nn import _loss_grad, _loss_reduction
from nbgrad.derivatives.opinfo import op
from nbgrad.derivatives.reductions import _norm_backward

_CTC_ATTRS = "targets input_lengths target_lengths blank zero_infinity"

# fmt: off
# at::norm(self, p, dim, keepdim), which pairwise_distance calls: the vector norm's kernel and
# formula under PyTorch's node name for this overload
op("norm_scalar_dim", "NormBackward1", "self", lambda xp, self, ord, dim, keepdim: _vector_norm(xp, self, ord, dim, keepdim), attrs="ord dim keepdim", promote="float",
   self=lambda grad, self, result, ord, dim, keepdim: _norm_backward(grad, self, result, ord, dim, keepdim))
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
