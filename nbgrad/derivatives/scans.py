"""Op table rows: the scans (``cumsum``, ``cumprod``, ``cummax``, ``cummin``,
``logcumsumexp``)."""

from __future__ import annotations

from nbgrad._tensor import creation as _C
from nbgrad.derivatives.opinfo import op
from nbgrad.kernels.scans import _cumextreme, _cumprod, _cumsum, _logcumsumexp

# fmt: off
# scans and reductions
op("cummax", "CummaxBackward0", "self", lambda xp, self, dim: _cumextreme(xp, self, dim, xp.greater_equal), attrs="dim",
   outputs=2, diff_outputs=(0,), self=lambda grad, self, result1, dim: _cumextreme_backward(grad, self, result1, dim))
op("cummin", "CumminBackward0", "self", lambda xp, self, dim: _cumextreme(xp, self, dim, xp.less_equal), attrs="dim",
   outputs=2, diff_outputs=(0,), self=lambda grad, self, result1, dim: _cumextreme_backward(grad, self, result1, dim))
op("logcumsumexp", "LogcumsumexpBackward0", "self", lambda xp, self, dim: _logcumsumexp(xp, self, dim), attrs="dim", promote="float", quiet=True,
   self=lambda grad, self, result, dim: _logcumsumexp_backward(grad, self, result, dim))
# fmt: on


def _cumextreme_backward(grad, self, indices, dim):
    """PyTorch's cummaxmin_backward: each grad to the index its running extreme came from."""
    if self.ndim == 0:
        return grad
    return _C.zeros_like(grad).scatter_add(dim, indices, grad)


def _logcumsumexp_backward(grad, self, result, dim):
    """``grad_i = sum_{k >= i} grad_k exp(self_i - result_k)``, scaled by the first running
    value of each slice (``result`` grows along ``dim``) so that nothing overflows there."""
    if self.ndim == 0:
        return grad
    if self.shape[dim] == 0:
        return grad
    first = result.narrow(dim, 0, 1)
    tail = (grad * (first - result).exp()).flip((dim,)).cumsum(dim).flip((dim,))
    return tail * (self - first).exp()


# fmt: off
op("cumsum", "CumsumBackward0", "self", lambda xp, self, dim, dtype: _cumsum(xp, self, dim, dtype), attrs="dim dtype",
   self=lambda grad, dim: grad.flip((dim,)).cumsum(dim).flip((dim,)))
# fmt: on


# fmt: off
op("cumprod", "CumprodBackward0", "self", lambda xp, self, dim, dtype: _cumprod(xp, self, dim, dtype), attrs="dim dtype", quiet=True,
   self=lambda grad, self, result, dim: _cumprod_backward(grad, self, result, dim))
# fmt: on


def _cumprod_backward(grad, self, result, dim):
    """The gradient of ``cumprod`` along ``dim``: at ``i``, the sum over ``k >= i`` of
    ``grad[k]`` times the product of ``self[:k + 1]`` without ``self[i]``."""
    if self.ndim == 0 or self.shape[dim] == 0:
        return grad
    if bool((self != 0).all()):  # each such product is result[k] / self[i]
        return (grad * result).flip((dim,)).cumsum(dim).flip((dim,)) / self
    # with zeros: the products, computed without dividing (one cumprod per position)
    n = self.shape[dim]
    parts = []
    for i in range(n):
        one = _C.ones_like(self.narrow(dim, i, 1))
        others = _C.cat([self.narrow(dim, 0, i), one, self.narrow(dim, i + 1, n - i - 1)], dim)
        parts.append((grad * others.cumprod(dim)).narrow(dim, i, n - i).sum(dim, keepdim=True))
    return _C.cat(parts, dim)
