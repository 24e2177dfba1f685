"""``Adam`` (and, with ``decoupled_weight_decay=True``, AdamW's update).

Mirrors ``torch/optim/adam.py`` (the single-tensor code path: same operations in the same
order, so trajectories match PyTorch's).
"""

from __future__ import annotations

from nbgrad import dtypes
from nbgrad.optim.optimizer import Optimizer
from nbgrad.tensor import tensor, zeros_like

__all__ = ["Adam"]


class Adam(Optimizer):
    """For each parameter ``p`` with gradient ``g``, at step ``t``::

        g = g + weight_decay * p        (or p = p * (1 - lr * weight_decay) if decoupled)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    With ``amsgrad``, ``v`` in the last line is the running maximum of ``v``.
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
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
        if differentiable or fused or capturable:
            raise NotImplementedError(
                f"{type(self).__name__}: differentiable, fused and capturable are not supported"
            )
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=decoupled_weight_decay,
        )
        super().__init__(params, defaults)

    def _init_state(self, p, amsgrad):
        state = self.state[p]
        if not state:
            state["step"] = tensor(0.0, dtype=dtypes.float32)
            state["exp_avg"] = zeros_like(p)
            state["exp_avg_sq"] = zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = zeros_like(p)
        return state

    def _update_group(self, group):
        beta1, beta2 = group["betas"]
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        amsgrad, maximize = group["amsgrad"], group["maximize"]
        decoupled = group.get("decoupled_weight_decay", False)
        for p in self._params_with_grad(group):
            state = self._init_state(p, amsgrad)
            grad = -p.grad if maximize else p.grad
            exp_avg, exp_avg_sq, step_t = state["exp_avg"], state["exp_avg_sq"], state["step"]
            step_t += 1
            if weight_decay != 0:
                if decoupled:
                    p.mul_(1 - lr * weight_decay)
                else:
                    grad = grad.add(p, alpha=weight_decay)
            exp_avg.add_(grad - exp_avg, alpha=1 - beta1)  # lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
            step = step_t.item()
            bias_correction1 = 1 - beta1**step
            bias_correction2_sqrt = (1 - beta2**step) ** 0.5
            step_size = lr / bias_correction1
            if amsgrad:
                max_exp_avg_sq = state["max_exp_avg_sq"]
                max_exp_avg_sq.copy_(max_exp_avg_sq.maximum(exp_avg_sq))
                denom = (max_exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            else:
                denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            p.add_(exp_avg / denom, alpha=-step_size)
