"""Op table rows: linear algebra: the products (``mm``, ``bmm``, ``mv``, ``dot``, ``vdot``,
``addmm``, ``baddbmm``, ``addmv``, ``addr``, ``addbmm``), ``cross``, ``trace``, ``block_diag``."""

from __future__ import annotations

from nbgrad._tensor import creation as _C
from nbgrad.derivatives.opinfo import op
from nbgrad.kernels.linalg import (
    _addbmm,
    _addmm,
    _addmv,
    _addr,
    _block_diag,
    _cross,
    _mm_check,
    _trace,
)

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


# fmt: off
# products
op("addmv", "AddmvBackward0", "self mat vec", lambda xp, self, mat, vec, beta, alpha: _addmv(xp, self, mat, vec, beta, alpha), attrs="beta alpha",
   self=lambda grad, beta: grad if beta == 1 else grad * beta,
   mat=lambda grad, vec, alpha: grad.outer(vec) * alpha,
   vec=lambda grad, mat, alpha: mat.t().mv(grad) * alpha)
op("addr", "AddrBackward0", "self vec1 vec2", lambda xp, self, vec1, vec2, beta, alpha: _addr(xp, self, vec1, vec2, beta, alpha), attrs="beta alpha",
   self=lambda grad, beta: grad if beta == 1 else grad * beta,
   vec1=lambda grad, vec2, alpha: grad.mv(vec2) * alpha,
   vec2=lambda grad, vec1, alpha: grad.t().mv(vec1) * alpha)
op("addbmm", "AddbmmBackward0", "self batch1 batch2", lambda xp, self, batch1, batch2, beta, alpha: _addbmm(xp, self, batch1, batch2, beta, alpha), attrs="beta alpha",
   self=lambda grad, beta: grad if beta == 1 else grad * beta,
   batch1=lambda grad, batch1, batch2, alpha: grad.expand((batch1.shape[0],) + tuple(grad.shape)).bmm(batch2.transpose(1, 2)) * alpha,
   batch2=lambda grad, batch1, alpha: batch1.transpose(1, 2).bmm(grad.expand((batch1.shape[0],) + tuple(grad.shape))) * alpha)
op("vdot", "VdotBackward0", "self other", lambda xp, self, other: xp.asarray(xp.vdot(self, other)),
   on_arrays=True, self=lambda grad, other: grad * other,
   other=lambda grad, self: grad * self)
op("block_diag", "BlockDiagBackward0", "tensors*", lambda xp, tensors: _block_diag(xp, tensors), promote="binary",
   tensors=lambda grad, tensors_shape: _block_diag_backward(grad, tensors_shape))
# fmt: on


def _block_diag_backward(grad, tensors_shape):
    grads, r, c = [], 0, 0
    for shape in tensors_shape:
        rows, cols = (1, shape[0]) if len(shape) == 1 else (1, 1) if not shape else shape
        block = grad[r : r + rows, c : c + cols]
        grads.append(block.reshape(shape))
        r, c = r + rows, c + cols
    return grads


# fmt: off
# nn: linear, convolution, losses, normalisation, embedding (reached through nbgrad.nn.functional)
op("addmm", "AddmmBackward0", "self mat1 mat2", lambda xp, self, mat1, mat2, beta, alpha: _addmm(xp, self, mat1, mat2, beta, alpha),
   attrs="beta alpha",
   self=lambda grad, beta: grad if beta == 1 else grad * beta,
   mat1=lambda grad, mat2, alpha: grad.mm(mat2.t()) if alpha == 1 else grad.mm(mat2.t()) * alpha,
   mat2=lambda grad, mat1, alpha: mat1.t().mm(grad) if alpha == 1 else mat1.t().mm(grad) * alpha)
# fmt: on


# fmt: off
# linear algebra
op("mm", "MmBackward0", "self mat2", _mm_check,
   self=lambda grad, mat2: grad.mm(mat2.t()),
   mat2=lambda grad, self: self.t().mm(grad))
op("dot", "DotBackward0", "self tensor", lambda xp, self, tensor: xp.dot(self, tensor),
   on_arrays=True, self=lambda grad, tensor: grad * tensor,
   tensor=lambda grad, self: grad * self)
op("mv", "MvBackward0", "self vec", _mm_check,
   self=lambda grad, vec: grad.unsqueeze(1) * vec.unsqueeze(0),
   vec=lambda grad, self: self.t().mv(grad))
op("bmm", "BmmBackward0", "self mat2", lambda xp, self, mat2: xp.matmul(self, mat2),
   self=lambda grad, mat2: grad.bmm(mat2.transpose(1, 2)),
   mat2=lambda grad, self: self.transpose(1, 2).bmm(grad))
# fmt: on
