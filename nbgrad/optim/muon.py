"""``Muon``: momentum SGD whose update, for each 2-d parameter, is orthogonalised by a quintic
Newton-Schulz iteration. Mirrors ``torch/optim/_muon.py`` (same operations in the same order).

NOTE [Muon's bfloat16]
PyTorch runs the Newton-Schulz iteration in bfloat16, which nbgrad
has no dtype for. It is emulated on the host: each PyTorch bfloat16 op is computed in float32
from bfloat16 values and rounded once to bfloat16 (round to nearest, ties to even), as
PyTorch's CPU kernels do (``addmm``'s ``beta * C + alpha * A @ B`` rounded once), so the
updates, and thus the trajectories, are PyTorch's.
"""

from __future__ import annotations

import math

import numpy as np

from nbgrad.optim.optimizer import Optimizer, _lerp_
from nbgrad.tensor import tensor, zeros_like

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _bfloat16(x):
    """float32 values rounded to the nearest bfloat16 (ties to even), as float32."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    """PyTorch's orthogonalisation of the 2-d array ``grad`` (NOTE [Muon's bfloat16])."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = (np.float32(v) for v in ns_coefficients)
    tall = grad.shape[0] > grad.shape[1]
    x = _bfloat16(grad.astype(np.float32))
    if tall:
        x = x.T
    norm = _bfloat16(np.sqrt(np.square(x).sum(dtype=np.float32)))
    x = _bfloat16(x / np.maximum(norm, _bfloat16(np.float32(eps))))
    for _ in range(ns_steps):
        gram = _bfloat16(x @ x.T)
        gram_update = _bfloat16(b * gram + c * (gram @ gram))
        x = _bfloat16(a * x + gram_update @ x)
    return x.T if tall else x


def _adjust_lr(lr, adjust_lr_fn, param_shape):
    """Muon's learning rate for a parameter of ``param_shape``."""
    rows, cols = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """For each 2-d parameter ``p`` with gradient ``g``::

    buf = momentum * buf + (1 - momentum) * g
    u = momentum * buf + (1 - momentum) * g  (nesterov; else u = buf)
    p = p * (1 - lr * weight_decay) - adjusted_lr * NewtonSchulz(u)
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_coefficients: tuple = (DEFAULT_A, DEFAULT_B, DEFAULT_C),
        eps: float = EPS,
        ns_steps: int = DEFAULT_NS_STEPS,
        adjust_lr_fn: str | None = None,
    ):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(
            lr=lr,
            weight_decay=weight_decay,
            momentum=momentum,
            nesterov=nesterov,
            ns_coefficients=ns_coefficients,
            eps=eps,
            ns_steps=ns_steps,
            adjust_lr_fn=adjust_lr_fn,
        )
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(
                        "Muon only supports 2D parameters whereas we found a parameter with "
                        f"size: {p.size()}"
                    )

    def _update_group(self, group):
        lr, momentum = group["lr"], group["momentum"]
        for p in self._params_with_grad(group):
            grad = p.grad
            state = self.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = zeros_like(grad)
            buf = _lerp_(state["momentum_buffer"], grad, 1 - momentum)
            update = _lerp_(grad.clone(), buf, momentum) if group["nesterov"] else buf
            ortho = _zeropower_via_newtonschulz(
                update.cpu().numpy(), group["ns_coefficients"], group["ns_steps"], group["eps"]
            )
            update = tensor(ortho, device=p.device).to(p.dtype)
            p.mul_(1 - lr * group["weight_decay"])
            p.add_(update, alpha=-_adjust_lr(lr, group["adjust_lr_fn"], p.shape))
