"""Products: ``matmul``, ``mm``, ``bmm``, ``dot``, ``outer``, ``addmm``, ``addmv``, ``addr``,
``inner``, ``kron``, ``einsum``, ``tensordot``; ``cross``, ``trace``, ``dist``, ``cdist``,
``renorm``; and the composites of ``torch/functional.py`` and ATen made of products
(``block_diag``, ``cartesian_prod``, ``combinations``, ``cov``, ``corrcoef``, ``vander``)."""

from __future__ import annotations

import builtins
import itertools
import warnings

import numpy as np

from .. import dtypes
from .._tensor.dispatch import OPS, _dispatch
from .._tensor.linalg_methods import einsum, meshgrid, tensordot
from ..tensor import Tensor, ones, stack, tensor
from .out import _out_variant
from .shapes import broadcast_shapes

__all__ = [
    "matmul",
    "mm",
    "bmm",
    "mv",
    "dot",
    "einsum",
    "outer",
    "ger",
    "cross",
    "trace",
    "addmm",
    "baddbmm",
    "kron",
    "tensordot",
    "cdist",
    "addmv",
    "addr",
    "addbmm",
    "inner",
    "vdot",
    "dist",
    "renorm",
    "block_diag",
    "cartesian_prod",
    "combinations",
    "cov",
    "corrcoef",
    "vander",
]


@_out_variant
def matmul(input, other):
    return input.matmul(other)


@_out_variant
def mm(input, mat2):
    return input.mm(mat2)


@_out_variant
def bmm(input, mat2):
    return input.bmm(mat2)


@_out_variant
def mv(input, vec):
    return input.mv(vec)


@_out_variant
def dot(input, tensor):
    return input.dot(tensor)


@_out_variant
def outer(input, vec2):
    return input.outer(vec2)


ger = outer


def cross(input, other, dim=None):
    return input.cross(other, dim)


def trace(input):
    return input.trace()


@_out_variant
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    return input.addmm(mat1, mat2, beta=beta, alpha=alpha)


@_out_variant
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return input.baddbmm(batch1, batch2, beta=beta, alpha=alpha)


@_out_variant
def kron(input, other):
    return input.kron(other)


@_out_variant
def addmv(input, mat, vec, *, beta=1, alpha=1):
    return input.addmv(mat, vec, beta=beta, alpha=alpha)


@_out_variant
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    return input.addr(vec1, vec2, beta=beta, alpha=alpha)


@_out_variant
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return input.addbmm(batch1, batch2, beta=beta, alpha=alpha)


@_out_variant
def inner(input, other):
    return input.inner(other)


@_out_variant
def vdot(input, other):
    return input.vdot(other)


def dist(input, other, p=2):
    return input.dist(other, p)


@_out_variant
def renorm(input, p, dim, maxnorm):
    return input.renorm(p, dim, maxnorm)


def block_diag(*tensors):
    """The tensors (0-d, 1-d or 2-d) as the blocks of a block-diagonal matrix
    (``BlockDiagBackward0``)."""
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} "
                f"has {t.ndim} dimensions"
            )
    return _dispatch(OPS["block_diag"], (list(tensors),))


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-d tensor, as rows (a ``stack`` of the
    flattened ``meshgrid``, as PyTorch's)."""
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.flatten() for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The ``r``-element combinations of a 1-d tensor's elements, as rows (a ``stack`` of
    ``index_select``s)."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty(0)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(builtins.range(input.shape[0]), r))
    if not rows:
        return input.new_empty((0, r))
    columns = np.asarray(rows, dtype=np.int64).T
    return stack([input.index_select(0, tensor(c, device=input.device)) for c in columns], 1)


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance of the rows (variables) over the columns (observations), as PyTorch's
    composite: ``mm`` of the centred data, divided, then ``squeeze``."""
    if input.ndim > 2:
        raise RuntimeError(
            "cov(): expected input to have two or fewer dimensions but got an input with "
            f"{input.ndim} dimensions"
        )
    x = input.view(1, -1) if input.ndim < 2 else input
    if not x.is_floating_point():
        x = x.to(dtypes.get_default_dtype())
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    if w is None:
        avg = x.mean(1)
        norm = n - correction
    else:
        w = w.to(x.dtype)
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = w_sum - correction
        else:
            norm = w_sum - correction * (w * aweights).sum() / w_sum
    if not isinstance(norm, Tensor) and norm <= 0:
        warnings.warn(
            "cov(): degrees of freedom is <= 0. Correction should be strictly less than the "
            "number of observations.",
            UserWarning,
            stacklevel=2,
        )
        norm = 0
    centred = x - avg.unsqueeze(1)
    c = centred.mm((centred if w is None else centred * w).t())
    return c.div(norm).squeeze()


def corrcoef(input):
    """The Pearson correlation coefficients of the rows: ``cov`` scaled by the standard
    deviations, then clipped to [-1, 1], as PyTorch's."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    stddev = c.diagonal().sqrt()
    c = c / stddev.view(-1, 1)
    c = c / stddev.view(1, -1)
    return c.clip(-1, 1)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-d tensor: powers 0 to ``N - 1`` (decreasing unless
    ``increasing``), a ``cumprod`` written into ones, as PyTorch's."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = dtypes.promote_types(x.dtype, dtypes.int64)
    result = ones((x.shape[0], n), dtype=dtype, device=x.device)
    if n > 1:
        result[:, 1:] = x.unsqueeze(1).expand(x.shape[0], n - 1).cumprod(1).to(dtype)
    return result if increasing else result.flip(1)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The ``p``-norm distance between each row of ``x1`` (``B x P x M``) and each row of
    ``x2`` (``B x R x M``): ``B x P x R``; batch dimensions broadcast. ``compute_mode`` is
    accepted (nbgrad always takes the differences, PyTorch's exact mode)."""
    if x1.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    batch = tuple(broadcast_shapes(x1.shape[:-2], x2.shape[:-2]))
    if tuple(x1.shape[:-2]) != batch:
        x1 = x1.expand(*batch, *x1.shape[-2:])
    if tuple(x2.shape[:-2]) != batch:
        x2 = x2.expand(*batch, *x2.shape[-2:])
    return _dispatch(OPS["_cdist_forward"], (x1, x2), {"p": float(p)})
