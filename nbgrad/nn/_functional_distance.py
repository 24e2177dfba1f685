"""The distances of ``nbgrad.nn.functional``: ``pairwise_distance``, ``cosine_similarity`` and
``pdist``, composed from Tensor ops in the order ATen's ``Distance.cpp`` uses, so their
``grad_fn`` names match PyTorch's (``pdist``: NOTE [Composed gaps]).
"""

from __future__ import annotations

import numpy as np

from nbgrad._tensor.creation import where
from nbgrad._tensor.dispatch import _dispatch
from nbgrad.autograd.grad_mode import no_grad
from nbgrad.derivatives import OPS
from nbgrad.tensor import Tensor

__all__ = [
    "pdist",
    "cosine_similarity",
    "pairwise_distance",
]


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm distance between every pair of rows ``i < j`` of an ``(N, M)`` input, in
    the order of the upper triangle of the distance matrix."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    return _dispatch(OPS["_pdist_forward"], (input,), {"p": float(p)})


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """The ``p``-norm of ``x1 - x2 + eps`` along the last dim."""
    dim = max(x1.dim(), x2.dim()) - 1
    if dim < 0:  # two scalars: the norm of a 0-d tensor is its absolute value
        return (x1 - x2 + eps).abs()
    attrs = {"ord": p, "dim": (dim,), "keepdim": keepdim}
    return _dispatch(OPS["norm_scalar_dim"], (x1 - x2 + eps,), attrs)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``sum(x1 * x2, dim) / (|x1| |x2|)``, each norm at least ``eps``.

    NOTE [cosine_similarity's clamp]
    PyTorch clamps the norms in place under no_grad, so that
    the clamp does not enter the gradient; nbgrad clamps them with ``where`` on a constant mask,
    which gives the same values and, above ``eps``, the same gradient."""
    shape = tuple(np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape)))
    x1 = x1 if tuple(x1.shape) == shape else x1.expand(shape)
    x2 = x2 if tuple(x2.shape) == shape else x2.expand(shape)
    n1 = x1.norm(2, dim, True)
    n2 = x2.norm(2, dim, True)
    with no_grad():
        small1, small2 = n1 < eps, n2 < eps
    n1 = where(small1, eps, n1)
    n2 = where(small2, eps, n2)
    return ((x1 / n1) * (x2 / n2)).sum(dim)
