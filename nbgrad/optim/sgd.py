"""``SGD``: stochastic gradient descent with momentum, dampening, weight decay and Nesterov.

Mirrors ``torch/optim/sgd.py`` (the single-tensor code path: same operations in the same
order, so trajectories match PyTorch's).
"""

from __future__ import annotations

from nbgrad.optim.optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    """For each parameter ``p`` with gradient ``g``::

        g = g + weight_decay * p
        buf = g (first step), else momentum * buf + (1 - dampening) * g
        g = g + momentum * buf if nesterov else buf        (when momentum != 0)
        p = p - lr * g

    Example:
        >>> import nbgrad as ng
        >>> w = ng.nn.Parameter(ng.tensor([1.0, 2.0]))
        >>> opt = ng.optim.SGD([w], lr=0.1)
        >>> (w * w).sum().backward(); opt.step()
        >>> w
        Parameter containing:
        tensor([0.8000, 1.6000], requires_grad=True)
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        if differentiable or fused:
            raise NotImplementedError("SGD: differentiable=True and fused=True are not supported")
        defaults = dict(
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
            foreach=foreach,
            differentiable=differentiable,
            fused=fused,
        )
        super().__init__(params, defaults)

    def _update_group(self, group):
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay, nesterov, maximize = (
            group["weight_decay"],
            group["nesterov"],
            group["maximize"],
        )
        for p in self._params_with_grad(group):
            grad = -p.grad if maximize else p.grad
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = grad.clone().detach()
                    state["momentum_buffer"] = buf
                else:
                    buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                grad = grad.add(buf, alpha=momentum) if nesterov else buf
            p.add_(grad, alpha=-lr)
