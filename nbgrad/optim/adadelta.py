"""``Adadelta``. Mirrors ``torch/optim/adadelta.py`` (the single-tensor code path: same
operations in the same order, so trajectories match PyTorch's)."""

from __future__ import annotations

from nbgrad import dtypes
from nbgrad.optim.optimizer import Optimizer, _check_plain_only
from nbgrad.tensor import tensor, zeros_like

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """For each parameter ``p`` with gradient ``g``::

    g = g + weight_decay * p
    v = rho * v + (1 - rho) * g * g
    delta = sqrt(u + eps) / sqrt(v + eps) * g
    u = rho * u + (1 - rho) * delta * delta
    p = p - lr * delta
    """

    def __init__(
        self,
        params,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_plain_only(self, capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr,
            rho=rho,
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            capturable=capturable,
            foreach=foreach,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _update_group(self, group):
        lr, rho, eps, weight_decay = group["lr"], group["rho"], group["eps"], group["weight_decay"]
        for p in self._params_with_grad(group):
            state = self.state[p]
            if not state:
                state["step"] = tensor(0.0, dtype=dtypes.float32)
                state["square_avg"] = zeros_like(p)
                state["acc_delta"] = zeros_like(p)
            state["step"] += 1
            grad = -p.grad if group["maximize"] else p.grad
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            square_avg, acc_delta = state["square_avg"], state["acc_delta"]
            square_avg.mul_(rho).add_(grad * grad, alpha=1 - rho)
            std = square_avg.add(eps).sqrt()
            delta = acc_delta.add(eps).sqrt().div_(std).mul_(grad)
            acc_delta.mul_(rho).add_(delta * delta, alpha=1 - rho)
            p.add_(delta, alpha=-lr)
