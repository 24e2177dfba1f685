"""``nbgrad.nn.utils``: gradient clipping, as ``torch.nn.utils`` (``clip_grad.py``)."""

from __future__ import annotations

import math

from nbgrad.autograd.grad_mode import no_grad
from nbgrad.tensor import Tensor, stack, tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


@no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients of ``parameters`` in place so that their total norm (the norm of the
    vector of every gradient's norm) is at most ``max_norm``; return the total norm before.

    As PyTorch: the scale is ``max_norm / (total_norm + 1e-6)`` clamped to 1, and it is applied
    to every gradient (``mul_``) even when it is 1. ``foreach`` is accepted and ignored.
    """
    grads = _grads(parameters)
    max_norm, norm_type = float(max_norm), float(norm_type)
    if not grads:
        return tensor(0.0)
    norms = [g.detach().norm(norm_type) for g in grads]
    total_norm = stack([n.to(norms[0].dtype) for n in norms]).norm(norm_type)
    if error_if_nonfinite and not math.isfinite(total_norm.item()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    clip_coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(clip_coef.to(g.dtype))
    return total_norm


@no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp the gradients of ``parameters`` in place to ``[-clip_value, clip_value]``."""
    clip_value = float(clip_value)
    for g in _grads(parameters):
        g.clamp_(min=-clip_value, max=clip_value)
