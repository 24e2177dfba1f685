"""``Adamax``: Adam with the infinity norm. Mirrors ``torch/optim/adamax.py`` (the
single-tensor code path: same operations in the same order, so trajectories match PyTorch's).
"""

from __future__ import annotations

from nbgrad import dtypes
from nbgrad.optim.optimizer import Optimizer, _check_plain_only
from nbgrad.tensor import tensor, zeros_like

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """For each parameter ``p`` with gradient ``g``, at step ``t``::

    g = g + weight_decay * p
    m = beta1 * m + (1 - beta1) * g
    u = max(beta2 * u, |g| + eps)
    p = p - lr / (1 - beta1**t) * m / u
    """

    def __init__(
        self,
        params,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
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
        _check_plain_only(self, differentiable=differentiable, capturable=capturable)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
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
                state["exp_inf"] = zeros_like(p)
            grad = -p.grad if group["maximize"] else p.grad
            exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
            state["step"] += 1
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            exp_avg.add_(grad - exp_avg, alpha=1 - beta1)  # lerp_(grad, 1 - beta1)
            exp_inf.copy_(exp_inf.mul_(beta2).maximum(grad.abs().add_(eps)))
            clr = lr / (1 - beta1 ** state["step"].item())
            p.add_(exp_avg / exp_inf, alpha=-clr)
