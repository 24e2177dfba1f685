"""Op table rows: the scans (``cumsum``, ``cumprod``, ``cummax``, ``cummin``,
``logcumsumexp``)."""

from __future__ import annotations

from nbgrad._tensor import creation as _C
from nbgrad.derivatives._kernels_wider import _cumextreme, _logcumsumexp
from nbgrad.derivatives.opinfo import op

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
