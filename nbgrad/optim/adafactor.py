"""``Adafactor``: Adam-like steps with a factored second moment (a row and a column factor for
each matrix), relative step sizes and update clipping. Mirrors ``torch/optim/_adafactor.py``
(the single-tensor code path: same operations in the same order, so trajectories match
PyTorch's).
"""

from __future__ import annotations

import numpy as np

from nbgrad import dtypes
from nbgrad.optim.optimizer import Optimizer, _lerp_
from nbgrad.tensor import tensor, zeros, zeros_like

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """For each parameter ``p`` with gradient ``g``, at step ``t``::

    beta2_t = 1 - t ** beta2_decay;  rho = min(lr, 1 / sqrt(t))
    alpha = max(eps2, rms(p)) * rho;  p = p * (1 - lr * weight_decay)
    matrices: R = beta2_t R + (1 - beta2_t) mean(g^2, -1),  C likewise over dim -2,
              v = R C / max(mean(R, -2), eps1);  vectors: v = beta2_t v + (1 - beta2_t) g^2
    u = g / sqrt(max(v, eps1^2));  p = p - alpha / max(1, rms(u) / d) * u
    """

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(
            lr=lr,
            beta2_decay=beta2_decay,
            eps=eps,
            d=d,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def _update_group(self, group):
        lr, d, weight_decay = group["lr"], group["d"], group["weight_decay"]
        eps1, eps2 = group["eps"]
        for p in self._params_with_grad(group):
            state = self.state[p]
            grad = -p.grad if group["maximize"] else p.grad
            if not state:
                state["step"] = tensor(0.0, dtype=dtypes.float32)
                if grad.dim() > 1:
                    shape = list(grad.shape)
                    state["row_var"] = zeros(shape[:-1] + [1], dtype=grad.dtype, device=grad.device)
                    state["col_var"] = zeros(
                        shape[:-2] + [1, shape[-1]], dtype=grad.dtype, device=grad.device
                    )
                else:
                    state["variance"] = zeros_like(grad)
            if eps1 is None:  # (as PyTorch: set by the first parameter, kept for the group)
                eps1 = float(np.finfo(p.dtype.np).eps)
            state["step"] += 1
            step = state["step"].item()
            one_minus_beta2_t = step ** group["beta2_decay"]
            rho_t = min(lr, 1 / (step**0.5))
            alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho_t
            if weight_decay != 0:
                p.mul_(1 - lr * weight_decay)
            if grad.dim() > 1:
                row_var, col_var = state["row_var"], state["col_var"]
                row_mean = grad.norm(dim=-1, keepdim=True).square() / grad.shape[-1]
                _lerp_(row_var, row_mean, one_minus_beta2_t)
                col_mean = grad.norm(dim=-2, keepdim=True).square() / grad.shape[-2]
                _lerp_(col_var, col_mean, one_minus_beta2_t)
                var_estimate = row_var @ col_var
                var_estimate = var_estimate / row_var.mean(dim=-2, keepdim=True).clamp(min=eps1)
            else:
                var_estimate = _lerp_(state["variance"], grad * grad, one_minus_beta2_t).clone()
            update = var_estimate.clamp(min=eps1 * eps1).rsqrt() * grad
            denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
            p.add_(update, alpha=-alpha / denom)
