"""The array kernels of the rows in ``nbgrad/derivatives/linalg.py``: functions of ``xp``
(NumPy or CuPy) and arrays."""

from __future__ import annotations

import numpy as np

from nbgrad.kernels.common import _contiguous


def _mm_check(xp, a, b):
    if a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, a.shape))} and "
            f"{'x'.join(map(str, b.shape))})"
        )
    return a @ b


# ---- helpers of the nn rows: linear, convolution, losses, normalisation --------------------------
def _addmm(xp, self, mat1, mat2, beta, alpha):
    prod = _mm_check(xp, mat1, mat2)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:  # as PyTorch: self is ignored, even its nan and inf
        return prod
    return prod + (self if beta == 1 else beta * self)


def _cross(xp, a, b, dim):
    shape = np.broadcast_shapes(a.shape, b.shape)
    a, b = xp.broadcast_to(a, shape), xp.broadcast_to(b, shape)
    return xp.moveaxis(xp.cross(xp.moveaxis(a, dim, -1), xp.moveaxis(b, dim, -1)), -1, dim).copy()


# ---- linear algebra ------------------------------------------------------------------------
def _scaled_sum(self, product, beta, alpha):
    """``beta * self + alpha * product``; with ``beta`` 0, ``self`` (even its NaN) is ignored."""
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return _contiguous(np, product) if isinstance(product, np.ndarray) else product
    return (self * beta if beta != 1 else self) + product


def _addmv(xp, self, mat, vec, beta, alpha):
    return _scaled_sum(self, xp.matmul(mat, vec), beta, alpha).astype(mat.dtype, copy=False)


def _addr(xp, self, vec1, vec2, beta, alpha):
    return _scaled_sum(self, xp.outer(vec1, vec2), beta, alpha).astype(vec1.dtype, copy=False)


def _addbmm(xp, self, batch1, batch2, beta, alpha):
    prod = xp.matmul(batch1, batch2).sum(axis=0)
    return _scaled_sum(self, prod, beta, alpha).astype(batch1.dtype, copy=False)


def _block_diag(xp, tensors):
    blocks = [t.reshape(1, -1) if t.ndim < 2 else t for t in tensors]
    rows = sum(b.shape[0] for b in blocks)
    cols = sum(b.shape[1] for b in blocks)
    dtype = tensors[0].dtype if tensors else np.float32
    out = xp.zeros((rows, cols), dtype=dtype)
    r = c = 0
    for b in blocks:
        out[r : r + b.shape[0], c : c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def _trace(xp, a):
    """The sum of the main diagonal; integer tensors sum in int64, as PyTorch's."""
    out = xp.trace(a)
    return out.astype(a.dtype) if a.dtype.kind == "f" else out.astype("int64")
