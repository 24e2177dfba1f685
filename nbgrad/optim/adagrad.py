"""``Adagrad``, with learning-rate decay.

Mirrors ``torch/optim/adagrad.py`` (the single-tensor code path: same operations in the same
order, so trajectories match PyTorch's).
"""

from __future__ import annotations

from nbgrad import dtypes
from nbgrad.optim.optimizer import Optimizer, _check_plain_only
from nbgrad.tensor import full_like, tensor

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """For each parameter ``p`` with gradient ``g``, at step ``t``::

    g = g + weight_decay * p
    sum = sum + g * g                    (sum starts at initial_accumulator_value)
    p = p - lr / (1 + (t - 1) * lr_decay) * g / (sqrt(sum) + eps)
    """

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(
                f"Invalid initial_accumulator_value value: {initial_accumulator_value}"
            )
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_plain_only(self, differentiable=differentiable, fused=fused)
        defaults = dict(
            lr=lr,
            lr_decay=lr_decay,
            eps=eps,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            fused=fused,
        )
        super().__init__(params, defaults)
        # NOTE [Adagrad's eager state]
        # unlike the other optimizers, PyTorch's Adagrad makes
        # the state of every parameter at construction (not at its first gradient), so a
        # state dict lists parameters that never had a gradient; nbgrad does the same.
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = tensor(0.0, dtype=dtypes.float32)
                state["sum"] = full_like(p, initial_accumulator_value)

    def _update_group(self, group):
        lr, lr_decay, eps = group["lr"], group["lr_decay"], group["eps"]
        weight_decay = group["weight_decay"]
        for p in self._params_with_grad(group):
            state = self.state[p]
            state["step"] += 1
            step = state["step"].item()
            grad = -p.grad if group["maximize"] else p.grad
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            clr = lr / (1 + (step - 1) * lr_decay)
            state_sum = state["sum"]
            state_sum.add_(grad * grad)
            std = state_sum.sqrt().add_(eps)
            p.add_(grad / std, alpha=-clr)
