"""Op table rows: indexing by index tensors and masks (``index``, ``gather``, ``scatter``,
``index_add``, ``index_copy``, ``scatter_reduce``, ``masked_select``, ``put``, ``take``...)."""

from __future__ import annotations

import math

import nbgrad
from nbgrad._tensor import creation as _C
from nbgrad.derivatives.opinfo import op
from nbgrad.derivatives.shape import _broadcast
from nbgrad.kernels.common import _contiguous, _index_backward
from nbgrad.kernels.indexing import (
    _gather,
    _index_add,
    _index_copy,
    _index_fill,
    _index_put,
    _index_put_accumulate,
    _masked_scatter,
    _masked_select,
    _nonzero,
    _put,
    _scatter,
    _scatter_add,
    _scatter_reduce,
    _take,
)

# fmt: off
# indexing
op("index_copy", "IndexCopyBackward0", "self index source", lambda xp, self, index, source, dim: _index_copy(xp, self, dim, index, source), attrs="dim",
   nondiff=("index",), promote="binary",
   self=lambda grad, dim, index: grad.index_fill(dim, index, 0),
   source=lambda grad, dim, index: grad.index_select(dim, index))
op("index_fill", "IndexFillBackward0", "self index", lambda xp, self, index, dim, value: _index_fill(xp, self, dim, index, value), attrs="dim value",
   nondiff=("index",), self=lambda grad, dim, index: grad.index_fill(dim, index, 0))
op("index_put_accumulate", "IndexPutBackward0", "self values", lambda xp, self, values, indices: _index_put_accumulate(xp, self, values, indices),
   attrs="indices", promote="binary",
   self=lambda grad: grad,
   values=lambda grad, indices: grad[indices])
op("scatter_reduce", "ScatterReduceBackward0", "self index src", lambda xp, self, index, src, dim, reduce, include_self: _scatter_reduce(xp, self, dim, index, src, reduce, include_self),
   attrs="dim reduce include_self", nondiff=("index",), quiet=True,
   self=lambda grad, self, index, src, result, dim, reduce, include_self: _scatter_reduce_backward(grad, self, index, src, result, dim, reduce, include_self)[0],
   src=lambda grad, self, index, src, result, dim, reduce, include_self: _scatter_reduce_backward(grad, self, index, src, result, dim, reduce, include_self)[1])
# index_reduce: scatter_reduce with the index vector spread over source's other dims
op("index_reduce", "IndexReduceBackward0", "self index source", lambda xp, self, index, source, dim, reduce, include_self: _scatter_reduce(xp, self, dim, xp.broadcast_to(index.reshape(_along(source.ndim, dim)), source.shape), source, reduce, include_self),
   attrs="dim reduce include_self", nondiff=("index",), quiet=True,
   self=lambda grad, self, index, source, result, dim, reduce, include_self: _index_reduce_backward(grad, self, index, source, result, dim, reduce, include_self)[0],
   source=lambda grad, self, index, source, result, dim, reduce, include_self: _index_reduce_backward(grad, self, index, source, result, dim, reduce, include_self)[1])
op("masked_scatter", "MaskedScatterBackward0", "self mask source", lambda xp, self, mask, source: _masked_scatter(xp, self, mask, source), nondiff=("mask",),
   self=lambda grad, mask: grad.masked_fill(mask, 0),
   source=lambda grad, mask, source_shape: _masked_scatter_source_backward(grad, mask, source_shape))
op("put", "PutBackward0", "self index source", lambda xp, self, index, source, accumulate: _put(xp, self, index, source, accumulate), attrs="accumulate",
   nondiff=("index",), promote="binary",
   self=lambda grad, index, source, accumulate: grad if accumulate else grad.put(index, _C.zeros_like(source)),
   source=lambda grad, index, source_shape: grad.take(index).reshape(source_shape))
# fmt: on


def _masked_scatter_source_backward(grad, mask, source_shape):
    """The masked elements of ``grad``, in order, padded with zeros to ``source``'s size."""
    picked = grad.masked_select(mask)
    pad = _C.zeros(math.prod(source_shape) - picked.numel(), dtype=grad.dtype, device=grad.device)
    return _C.cat([picked, pad]).reshape(source_shape)


def _index_reduce_backward(grad, self, index, source, result, dim, reduce, include_self):
    """PyTorch's index_reduce_backward: scatter_reduce's, the index spread over source."""
    index = _spread_index(index, source, dim)
    return _scatter_reduce_backward(
        grad, self, index, source, result, dim, reduce, include_self, "index_reduce", "source"
    )


def _spread_index(index, source, dim):
    return index.reshape(_along(source.dim(), dim)).expand(source.shape)


def _along(ndim, dim):
    """The shape that lays a vector along ``dim`` of ``ndim`` dims."""
    return tuple(-1 if d == dim else 1 for d in range(ndim))


def _scatter_reduce_backward(
    grad, self, index, src, result, dim, reduce, include_self, name="scatter_reduce", src_name="src"
):
    """PyTorch's scatter_reduce_backward (and index_reduce_backward, ``name``, whose ``src`` is
    called ``source``): the gradients for ``self`` and ``src``."""
    if reduce == "sum":
        grad_self, grad_src = grad, grad.gather(dim, index)
    elif reduce == "mean":
        n = _C.ones_like(grad) if include_self else _C.zeros_like(grad)
        n = n.scatter_add(dim, index, _C.ones_like(src))
        n = n.masked_fill(n == 0, 1)
        grad_self = grad / n
        grad_src = grad.gather(dim, index) / n.gather(dim, index)
    elif reduce in ("amax", "amin"):
        value = result.gather(dim, index)
        self_is_result = (self == result).to(self.dtype)
        src_is_result = (src == value).to(self.dtype)
        count = self_is_result.scatter_add(dim, index, src_is_result)
        distributed = grad / count
        grad_self = (self == result) * distributed
        grad_src = (src == value) * distributed.gather(dim, index)
    else:  # prod
        masked_self = self.masked_fill(self == 0, 1)
        masked_self_result = masked_self.scatter_reduce(
            dim, index, src, reduce, include_self=include_self
        )
        grad_self = grad * masked_self_result / masked_self
        src_zero = src == 0
        zeros_there = _C.zeros_like(self).scatter_add(dim, index, src_zero.to(self.dtype))
        src_num_zeros = zeros_there.gather(dim, index)
        src_single_zero = src_zero.logical_and(src_num_zeros == 1)
        masked_src = src.masked_fill(src_single_zero, 1)
        masked_src_result = self.scatter_reduce(
            dim, index, masked_src, reduce, include_self=include_self
        )
        grad_src = _C.where(
            src_single_zero,
            (grad * masked_src_result).gather(dim, index),
            (grad * result).gather(dim, index) / src.masked_fill(src_zero, 1),
        )
        if grad_src._requires_grad and bool((src_num_zeros > 1).any()):
            # (two zeros in one place: the formula has no derivative there)
            grad_src = nbgrad.autograd.function._delayed_error(
                f"{name}(): Double backward is unsupported for {src_name} when >1 zeros in "
                f"{src_name} are scattered to the same position in self",
                grad_src,
            )
    if not include_self:
        grad_self = grad_self.scatter(dim, index, 0.0)
    return grad_self, grad_src


# fmt: off
op("index", "IndexBackward0", "self", lambda xp, self, indices: _contiguous(xp, self[indices]), attrs="indices",
   self=lambda grad, self_shape, indices: grad._index_backward(self_shape, indices, True))
# PyTorch's index backward is _index_put_impl_(zeros, indices, grad, accumulate=True)
op("index_backward", "IndexPutImplBackward0", "self", lambda xp, self, shape, indices, accumulate: _index_backward(xp, self, shape, indices, accumulate),
   attrs="shape indices accumulate", self=lambda grad, indices: grad[indices])
op("index_put", "IndexPutBackward0", "self values", lambda xp, self, values, indices: _index_put(xp, self, values, indices),
   attrs="indices", promote="binary",
   self=lambda grad, indices: grad._index_put(indices, 0.0),
   values=lambda grad, indices: grad[indices])
op("gather", "GatherBackward0", "self index", lambda xp, self, index, dim: _gather(xp, self, index, dim), attrs="dim", nondiff=("index",),
   self=lambda grad, self_shape, dim, index: _C.zeros(self_shape, dtype=grad.dtype, device=grad.device).scatter_add(dim, index, grad))
op("scatter_add", "ScatterAddBackward0", "self index src", lambda xp, self, index, src, dim: _scatter_add(xp, self, dim, index, src), attrs="dim",
   nondiff=("index",), promote="binary",
   self=lambda grad: grad,
   src=lambda grad, dim, index: grad.gather(dim, index))
op("index_select", "IndexSelectBackward0", "self index", lambda xp, self, index, dim: xp.take(self, index, axis=dim), attrs="dim", nondiff=("index",),
   self=lambda grad, self_shape, dim, index: _C.zeros(self_shape, dtype=grad.dtype, device=grad.device).index_add(dim, index, grad))
op("index_add", "IndexAddBackward0", "self index source", lambda xp, self, index, source, dim: _index_add(xp, self, dim, index, source), attrs="dim",
   nondiff=("index",), promote="binary",
   self=lambda grad: grad,
   source=lambda grad, dim, index: grad.index_select(dim, index))
op("scatter", "ScatterBackward0", "self index src", lambda xp, self, index, src, dim: _scatter(xp, self, dim, index, src), attrs="dim", nondiff=("index",),
   self=lambda grad, dim, index: grad.scatter(dim, index, 0.0),
   src=lambda grad, index, dim: grad.gather(dim, index))
op("scatter_value", "ScatterBackward1", "self index", lambda xp, self, index, dim, value: _scatter(xp, self, dim, index, value), attrs="dim value", nondiff=("index",),
   self=lambda grad, dim, index: grad.scatter(dim, index, 0.0))
op("masked_select", "MaskedSelectBackward0", "self mask", lambda xp, self, mask: _masked_select(xp, self, mask), nondiff=("mask",),
   self=lambda grad, self_shape, mask: _masked_select_backward(grad, self_shape, mask))
op("take", "TakeBackward0", "self index", lambda xp, self, index: _take(xp, self, index), nondiff=("index",),
   self=lambda grad, self_shape, index: _put_flat(grad.reshape(-1), math.prod(self_shape), index.reshape(-1)).reshape(self_shape))
op("nonzero", None, "self", lambda xp, self: _nonzero(xp, self), differentiable=False)
# fmt: on


def _masked_select_backward(grad, self_shape, mask):
    """``grad`` put back where the (broadcast) mask is True; the engine sums it to self's
    shape where the mask broadcast it."""
    shape = _broadcast(self_shape, mask.shape)
    positions = mask.expand(shape).reshape(-1).nonzero().reshape(-1)
    return _put_flat(grad, math.prod(shape), positions).reshape(shape)


def _put_flat(values, numel, positions):
    """A flat tensor of ``numel`` zeros with ``values`` added at ``positions`` (index_add)."""
    zeros = _C.zeros(numel, dtype=values.dtype, device=values.device)
    return zeros.index_add(0, positions, values)
