"""``nbgrad.functional``: PyTorch's ``torch.functional``, the module where a few of ``torch``'s
functions are written in Python; here the same functions as ``nbgrad``'s own, re-exported."""

from nbgrad._functions.linalg import block_diag, cartesian_prod, cdist
from nbgrad._functions.reductions import norm, unique, unique_consecutive
from nbgrad._functions.shapes import (
    atleast_1d,
    atleast_2d,
    atleast_3d,
    broadcast_shapes,
    broadcast_tensors,
    split,
    unravel_index,
)
from nbgrad._tensor.linalg_methods import einsum, meshgrid, tensordot
from nbgrad.tensor import Tensor

__all__ = [
    "Tensor",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "block_diag",
    "broadcast_shapes",
    "broadcast_tensors",
    "cartesian_prod",
    "cdist",
    "einsum",
    "meshgrid",
    "norm",
    "split",
    "tensordot",
    "unique",
    "unique_consecutive",
    "unravel_index",
]
