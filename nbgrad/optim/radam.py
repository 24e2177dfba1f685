"""``RAdam``: Adam with a rectified adaptive rate (and, optionally, decoupled weight decay).

Mirrors ``torch/optim/radam.py`` (the single-tensor code path: same operations in the same
order, so trajectories match PyTorch's).
"""

from __future__ import annotations

from nbgrad import dtypes
from nbgrad.optim.optimizer import Optimizer, _check_plain_only
from nbgrad.tensor import tensor, zeros_like

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """For each parameter ``p`` with gradient ``g``, at step ``t``::

        g = g + weight_decay * p        (or p = p * (1 - lr * weight_decay) if decoupled)
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
        rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)
        p = p - lr * m / (1 - beta1**t) * r_t * sqrt(1 - beta2**t) / (sqrt(v) + eps)
                                                                    if rho_t > 5
        p = p - lr * m / (1 - beta1**t)                             otherwise
    with ``r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))``.
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_plain_only(self, capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            decoupled_weight_decay=decoupled_weight_decay,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _update_group(self, group):
        beta1, beta2 = group["betas"]
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        for p in self._params_with_grad(group):
            state = self.state[p]
            if not state:
                state["step"] = tensor(0.0, dtype=dtypes.float32)
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
            grad = -p.grad if group["maximize"] else p.grad
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            state["step"] += 1
            step = state["step"].item()
            if weight_decay != 0:
                if group["decoupled_weight_decay"]:
                    p.mul_(1 - lr * weight_decay)
                else:
                    grad = grad.add(p, alpha=weight_decay)
            exp_avg.add_(grad - exp_avg, alpha=1 - beta1)  # lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
            bias_correction1 = 1 - beta1**step
            bias_correction2 = 1 - beta2**step
            bias_corrected_exp_avg = exp_avg / bias_correction1
            rho_inf = 2 / (1 - beta2) - 1
            rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
            if rho_t > 5.0:
                rect = (
                    (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
                ) ** 0.5
                adaptive_lr = (bias_correction2**0.5) / exp_avg_sq.sqrt().add_(eps)
                p.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
            else:
                p.add_(bias_corrected_exp_avg * lr, alpha=-1.0)
