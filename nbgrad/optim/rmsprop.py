"""``RMSprop``, plain, centered and with momentum.

Mirrors ``torch/optim/rmsprop.py`` (the single-tensor code path: same operations in the same
order, so trajectories match PyTorch's).
"""

from __future__ import annotations

from nbgrad import dtypes
from nbgrad.optim.optimizer import Optimizer, _check_plain_only
from nbgrad.tensor import tensor, zeros_like

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """For each parameter ``p`` with gradient ``g``::

    g = g + weight_decay * p
    v = alpha * v + (1 - alpha) * g * g
    avg = sqrt(v - m * m) + eps     with m = alpha * m + (1 - alpha) * g if centered,
          sqrt(v) + eps             otherwise
    buf = momentum * buf + g / avg;  p = p - lr * buf      (momentum > 0)
    p = p - lr * g / avg                                    (otherwise)
    """

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        _check_plain_only(self, capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr,
            momentum=momentum,
            alpha=alpha,
            eps=eps,
            centered=centered,
            weight_decay=weight_decay,
            capturable=capturable,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        state = self.state[p]
        if not state:
            state["step"] = tensor(0.0, dtype=dtypes.float32)
            state["square_avg"] = zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = zeros_like(p)
        return state

    def _update_group(self, group):
        lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
        weight_decay, momentum = group["weight_decay"], group["momentum"]
        for p in self._params_with_grad(group):
            state = self._init_state(p, group)
            grad = -p.grad if group["maximize"] else p.grad
            state["step"] += 1
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            square_avg = state["square_avg"]
            square_avg.mul_(alpha).add_(grad * grad, alpha=1 - alpha)
            if group["centered"]:
                grad_avg = state["grad_avg"]
                grad_avg.add_(grad - grad_avg, alpha=1 - alpha)  # lerp_(grad, 1 - alpha)
                avg = (square_avg - grad_avg * grad_avg).sqrt()
            else:
                avg = square_avg.sqrt()
            avg.add_(eps)
            if momentum > 0:
                buf = state["momentum_buffer"]
                buf.mul_(momentum).add_(grad / avg)
                p.add_(buf, alpha=-lr)
            else:
                p.add_(grad / avg, alpha=-lr)
