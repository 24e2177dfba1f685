"""Op table rows: linear algebra beyond the matrix products (``cross``, ``trace``,
``baddbmm``); ``mm``, ``bmm`` and their kin are with the reductions, ``addmm`` with nn."""

from __future__ import annotations

from nbgrad._kernels import _addmm, _cross
from nbgrad._tensor import creation as _C
from nbgrad.derivatives.opinfo import op

# fmt: off
op("cross", "LinalgCrossBackward0", "self other", lambda xp, self, other, dim: _cross(xp, self, other, dim), attrs="dim", promote="binary",
   self=lambda grad, other, dim: other.cross(grad, dim=dim),
   other=lambda grad, self, dim: grad.cross(self, dim=dim))
op("trace", "TraceBackward0", "self", lambda xp, self: _trace(xp, self),
   self=lambda grad, self_shape: _C.eye(*self_shape, dtype=grad.dtype, device=grad.device) * grad)
op("baddbmm", "BaddbmmBackward0", "self batch1 batch2", lambda xp, self, batch1, batch2, beta, alpha: _addmm(xp, self, batch1, batch2, beta, alpha),
   attrs="beta alpha",
   self=lambda grad, beta: grad if beta == 1 else grad * beta,
   batch1=lambda grad, batch2, alpha: grad.bmm(batch2.transpose(1, 2)) * alpha,
   batch2=lambda grad, batch1, alpha: batch1.transpose(1, 2).bmm(grad) * alpha)
# fmt: on


def _trace(xp, a):
    """The sum of the main diagonal; integer tensors sum in int64, as PyTorch's."""
    out = xp.trace(a)
    return out.astype(a.dtype) if a.dtype.kind == "f" else out.astype("int64")
