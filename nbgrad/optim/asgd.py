"""``ASGD``: averaged stochastic gradient descent. Mirrors ``torch/optim/asgd.py`` (the
single-tensor code path: same operations in the same order, so trajectories match PyTorch's).
"""

from __future__ import annotations

from nbgrad import dtypes
from nbgrad.optim.optimizer import Optimizer, _check_plain_only
from nbgrad.tensor import ones, tensor, zeros, zeros_like

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """For each parameter ``p`` with gradient ``g``, at step ``t``::

        g = g + weight_decay * p
        p = p * (1 - lambd * eta) - eta * g
        ax = p if mu == 1 else ax + mu * (p - ax)          (the averaged parameter)
        eta = lr / (1 + lambd * lr * t) ** alpha;  mu = 1 / max(1, t - t0)

    ``eta`` and ``mu`` are float32 scalars in the state, as PyTorch's.
    """

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_plain_only(self, differentiable=differentiable, capturable=capturable)
        defaults = dict(
            lr=lr,
            lambd=lambd,
            alpha=alpha,
            t0=t0,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    def _update_group(self, group):
        lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
        weight_decay = group["weight_decay"]
        for p in self._params_with_grad(group):
            state = self.state[p]
            if not state:
                state["step"] = zeros((), dtype=dtypes.float32)
                state["eta"] = tensor(float(lr), dtype=dtypes.float32)
                state["mu"] = ones((), dtype=dtypes.float32)
                state["ax"] = zeros_like(p)
            grad = -p.grad if group["maximize"] else p.grad
            mu, ax, eta = state["mu"], state["ax"], state["eta"]
            state["step"] += 1
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            eta_value = eta.item()
            p.mul_(1 - lambd * eta_value)  # decay term
            p.add_(grad, alpha=-eta_value)
            if mu.item() != 1:
                ax.add_((p - ax).mul_(mu))
            else:
                ax.copy_(p)
            step = state["step"].item()
            eta.fill_(lr / ((1 + lambd * lr * step) ** alpha))
            mu.fill_(1 / max(1, step - t0))
