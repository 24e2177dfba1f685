"""The array kernels of the rows in ``nbgrad/derivatives/losses.py``: functions of ``xp``
(NumPy or CuPy) and arrays."""

from __future__ import annotations

import numpy as np

from nbgrad.backend import to_host


def _smooth_l1(xp, d, beta):
    """PyTorch's smooth L1 of the differences ``d`` (``beta`` > 0): quadratic below ``beta``,
    linear above; Huber's loss is this times ``delta``."""
    a = xp.abs(d)
    return xp.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta)


def _bce(xp, x, t, weight):
    if bool(xp.any((x < 0) | (x > 1))):
        raise RuntimeError("all elements of input should be between 0 and 1")
    with np.errstate(divide="ignore"):
        log_x = xp.maximum(xp.log(x), -100.0)
        log_1mx = xp.maximum(xp.log(1 - x), -100.0)
    losses = -(t * log_x + (1 - t) * log_1mx)
    return losses if weight is None else losses * weight


def _bce_logits(xp, x, t, weight, pos_weight):
    """``-w [pw t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))]``, written stably."""
    softplus_neg = xp.logaddexp(0, -x)  # log(1 + exp(-x)) = -log sigmoid(x)
    if pos_weight is None:
        losses = (1 - t) * x + softplus_neg
    else:
        losses = (1 - t) * x + ((pos_weight - 1) * t + 1) * softplus_neg
    return losses if weight is None else losses * weight


def _nll_loss(xp, self, target, weight, reduction, ignore_index):
    """``-self[i, target[i]]`` weighted by ``weight[target[i]]``; for 1-d or 2-d ``self``."""
    x = self.reshape(1, -1) if self.ndim == 1 else self
    t = target.reshape(-1)
    valid = t != ignore_index
    bad = (t < 0) | (t >= x.shape[1])
    if bool((bad & valid).any()):
        raise IndexError(f"Target {int(t[bad & valid][0])} is out of bounds.")
    safe = xp.where(valid, t, 0)
    w = weight[safe] if weight is not None else xp.ones(t.shape, dtype=x.dtype)
    w = w * valid
    losses = -x[xp.arange(t.shape[0]), safe] * w
    if reduction == "none":
        return losses.reshape(target.shape)
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / w.sum()


def _nll_loss2d(xp, self, target, weight, reduction, ignore_index):
    """``_nll_loss`` with the classes in dim 1 of a 4-d ``self``, one row per pixel."""
    flat = xp.transpose(self, (0, 2, 3, 1)).reshape(-1, self.shape[1])
    return _nll_loss(xp, flat, target, weight, reduction, ignore_index)


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


def _loss_reduction(losses, reduction):
    if reduction == "mean":
        return losses.mean()
    if reduction == "sum":
        return losses.sum()
    return losses
