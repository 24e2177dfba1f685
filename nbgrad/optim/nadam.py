"""``NAdam``: Adam with Nesterov momentum (and, optionally, decoupled weight decay).

Mirrors ``torch/optim/nadam.py`` (the single-tensor code path: same operations in the same
order, so trajectories match PyTorch's).
"""

from __future__ import annotations

from nbgrad import dtypes
from nbgrad.optim.optimizer import Optimizer, _check_plain_only
from nbgrad.tensor import tensor, zeros_like

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """For each parameter ``p`` with gradient ``g``, at step ``t``::

    g = g + weight_decay * p        (or p = p * (1 - lr * weight_decay) if decoupled)
    mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay));  P_t = mu_1 * ... * mu_t
    m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
    denom = sqrt(v / (1 - beta2**t)) + eps
    p = p - lr * (1 - mu_t) / (1 - P_t) * g / denom
          - lr * mu_{t+1} / (1 - P_t * mu_{t+1}) * m / denom
    """

    def __init__(
        self,
        params,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
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
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        _check_plain_only(self, capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _update_group(self, group):
        beta1, beta2 = group["betas"]
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        momentum_decay = group["momentum_decay"]
        for p in self._params_with_grad(group):
            state = self.state[p]
            if not state:
                # NOTE [float32 scalar state]
                # as in PyTorch, ``step`` and ``mu_product`` are
                # float32 scalars whatever the parameters' dtype; the running product is
                # rounded to float32 at each step, and the update reads it back as a float.
                state["step"] = tensor(0.0, dtype=dtypes.float32)
                state["mu_product"] = tensor(1.0, dtype=dtypes.float32)
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
            grad = -p.grad if group["maximize"] else p.grad
            exp_avg, exp_avg_sq, mu_product = (
                state["exp_avg"],
                state["exp_avg_sq"],
                state["mu_product"],
            )
            state["step"] += 1
            step = state["step"].item()
            bias_correction2 = 1 - beta2**step
            if weight_decay != 0:
                if group["decoupled_weight_decay"]:
                    p.mul_(1 - lr * weight_decay)
                else:
                    grad = grad.add(p, alpha=weight_decay)
            mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
            mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
            mu_product *= mu
            exp_avg.add_(grad - exp_avg, alpha=1 - beta1)  # lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
            denom = exp_avg_sq.div(bias_correction2).sqrt().add_(eps)
            product = mu_product.item()
            mu_product_next = product * mu_next
            p.add_(grad / denom, alpha=-lr * (1.0 - mu) / (1.0 - product))
            p.add_(exp_avg / denom, alpha=(-lr * mu_next) / (1.0 - mu_product_next))
