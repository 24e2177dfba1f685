"""``Rprop``: resilient backpropagation. Mirrors ``torch/optim/rprop.py`` (the single-tensor
code path: same operations in the same order, so trajectories match PyTorch's)."""

from __future__ import annotations

from nbgrad import dtypes
from nbgrad.optim.optimizer import Optimizer, _check_plain_only
from nbgrad.tensor import full_like, zeros, zeros_like

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """For each parameter ``p`` with gradient ``g`` (element-wise; ``prev`` is the last ``g``
    used, zero where it changed sign)::

        s = g * prev
        step_size = clamp(step_size * (etaplus if s > 0, etaminus if s < 0, 1 otherwise),
                          *step_sizes)
        g = 0 where s < 0
        p = p - sign(g) * step_size;  prev = g
    """

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        _check_plain_only(self, capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr,
            etas=etas,
            step_sizes=step_sizes,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    def _update_group(self, group):
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        for p in self._params_with_grad(group):
            state = self.state[p]
            if not state:
                state["step"] = zeros((), dtype=dtypes.float32)
                state["prev"] = zeros_like(p)
                state["step_size"] = full_like(p.grad, group["lr"])
            grad = -p.grad if group["maximize"] else p.grad
            prev, step_size = state["prev"], state["step_size"]
            state["step"] += 1
            sign = grad.mul(prev).sign()
            flipped = sign.lt(0)
            sign[sign.gt(0)] = etaplus
            sign[flipped] = etaminus
            sign[sign.eq(0)] = 1
            step_size.mul_(sign).clamp_(step_size_min, step_size_max)
            grad = grad.clone()
            grad[flipped] = 0  # no step where the gradient changed sign
            p.sub_(grad.sign() * step_size)
            prev.copy_(grad)
