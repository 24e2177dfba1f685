"""Op table rows: views and shape ops (``view``, ``permute``, ``expand``, ``select``, ``cat``,
``split``, ``unfold``...), their in-place forms, and copies and fills."""

from __future__ import annotations

import numpy as np

from nbgrad._tensor import creation as _C
from nbgrad._tensor.dispatch import OPS, _dispatch
from nbgrad._tensor.math_methods import sum_to
from nbgrad._tensor.memory_formats import _storage_places
from nbgrad.derivatives.opinfo import op
from nbgrad.kernels.common import _contiguous, _index_backward
from nbgrad.kernels.shape import (
    _as_strided,
    _diag_embed,
    _diagonal,
    _diagonal_backward,
    _expand,
    _split,
    _squeezed,
    _unfold,
    _unfold_backward,
    _unsqueeze,
    _view,
)

# fmt: off
# views (share memory with their base) and shape ops
op("view", "ViewBackward0", "self", lambda xp, self, shape: _view(xp, self, shape), attrs="shape", view=True,
   self=lambda grad, self_shape: grad.reshape(self_shape))
# the legacy constructor's alias of a tensor of its own type (``FloatTensor(t)``)
op("alias", "AliasBackward0", "self", lambda xp, self: self.view(), on_arrays=True, view=True, self=lambda grad: grad)
# reshape of a viewable but non-contiguous tensor (PyTorch's _reshape_alias)
op("reshape_alias", "ReshapeAliasBackward0", "self", lambda xp, self, shape: _view(xp, self, shape), attrs="shape", view=True,
   self=lambda grad, self_shape: grad.reshape(self_shape))
# _unsafe_view: a reshape of a fresh tensor that PyTorch does not track as a view (no copy)
op("unsafe_view", "UnsafeViewBackward0", "self", lambda xp, self, shape: xp.reshape(self, shape), attrs="shape",
   self=lambda grad, self_shape: grad.reshape(self_shape))
# squeeze_(dim) on a fresh (non-view) tensor, as matmul's 1-D @ 2-D case does
op("squeeze_dim_", "SqueezeBackward4", "self", lambda xp, self, dim: xp.squeeze(self, dim) if self.ndim and self.shape[dim] == 1 else self, attrs="dim",
   self=lambda grad, self_shape: grad.reshape(self_shape))
# unsqueeze_ and transpose_ on a fresh (non-view) tensor, as quantile's last steps
op("unsqueeze_", "UnsqueezeBackward1", "self", lambda xp, self, dim: xp.expand_dims(self, dim), attrs="dim",
   self=lambda grad, dim: grad.squeeze(dim))
op("transpose_", "TransposeBackward1", "self", lambda xp, self, dim0, dim1: xp.swapaxes(self, dim0, dim1), attrs="dim0 dim1",
   self=lambda grad, dim0, dim1: grad.transpose(dim0, dim1))
op("t", "TBackward0", "self", lambda xp, self: self.T, view=True, self=lambda grad: grad.t())
# (a 0-d tensor takes dims 0 and -1, as PyTorch, and comes back as a view of itself)
op("transpose", "TransposeBackward0", "self", lambda xp, self, dim0, dim1: self.swapaxes(dim0, dim1) if self.ndim else self[...], attrs="dim0 dim1", view=True,
   self=lambda grad, dim0, dim1: grad.transpose(dim0, dim1))
op("permute", "PermuteBackward0", "self", lambda xp, self, dims: self.transpose(dims), attrs="dims", view=True,
   self=lambda grad, dims: grad.permute(tuple(np.argsort(dims))))
op("flip", "FlipBackward0", "self", lambda xp, self, dims: _contiguous(xp, xp.flip(self, dims)), attrs="dims",
   self=lambda grad, dims: grad.flip(dims))
op("roll", "RollBackward0", "self", lambda xp, self, shifts, dims: xp.roll(self, shifts, dims), attrs="shifts dims",
   self=lambda grad, shifts, dims: grad.roll(-shifts if dims is None else tuple(-k for k in shifts), dims))
op("tril", "TrilBackward0", "self", lambda xp, self, diagonal: xp.tril(self, diagonal), attrs="diagonal",
   self=lambda grad, diagonal: grad.tril(diagonal))
op("triu", "TriuBackward0", "self", lambda xp, self, diagonal: xp.triu(self, diagonal), attrs="diagonal",
   self=lambda grad, diagonal: grad.triu(diagonal))
op("expand", "ExpandBackward0", "self", lambda xp, self, size: _expand(xp, self, size), attrs="size", view=True,
   self=lambda grad, self_shape: sum_to(grad, self_shape))
op("squeeze", "SqueezeBackward0", "self", lambda xp, self: xp.reshape(self, tuple(s for s in self.shape if s != 1)), view=True,
   self=lambda grad, self_shape: grad.reshape(self_shape))
op("squeeze_dim", "SqueezeBackward1", "self", lambda xp, self, dim: xp.squeeze(self, dim) if self.ndim and self.shape[dim] == 1 else self[...], attrs="dim", view=True,
   self=lambda grad, self_shape: grad.reshape(self_shape))
op("unsqueeze", "UnsqueezeBackward0", "self", lambda xp, self, dim: _unsqueeze(self, dim), attrs="dim", view=True,
   self=lambda grad, dim: grad.squeeze(dim))
# the trailing Ellipsis keeps a full index a 0-d view (NumPy would return a scalar copy)
op("select", "SelectBackward0", "self", lambda xp, self, dim, index: self[(slice(None),) * dim + (index, Ellipsis)], attrs="dim index", view=True,
   self=lambda grad, self_shape, dim, index: _dispatch(OPS["select_backward"], (grad,), {"shape": self_shape, "dim": dim, "index": index}))
op("slice", "SliceBackward0", "self", lambda xp, self, dim, start, end, step: self[(slice(None),) * dim + (slice(start, end, step),)],
   attrs="dim start end step", view=True,
   self=lambda grad, self_shape, dim, start, end, step: _dispatch(OPS["slice_backward"], (grad,), {"shape": self_shape, "dim": dim, "start": start, "end": end, "step": step}))
# the backward formulas of select, slice and index, as ops of their own (double backward)
op("select_backward", "SelectBackwardBackward0", "self", lambda xp, self, shape, dim, index: _index_backward(xp, self, shape, (slice(None),) * dim + (index,), False),
   attrs="shape dim index", self=lambda grad, dim, index: _dispatch(OPS["select"], (grad,), {"dim": dim, "index": index}))
op("slice_backward", "SliceBackwardBackward0", "self", lambda xp, self, shape, dim, start, end, step: _index_backward(xp, self, shape, (slice(None),) * dim + (slice(start, end, step),), False),
   attrs="shape dim start end step", self=lambda grad, dim, start, end, step: _dispatch(OPS["slice"], (grad,), {"dim": dim, "start": start, "end": end, "step": step}))
# as_strided: a view of the input's memory (its storage) in any geometry; ``geometry`` is the
# input's own (size, stride, offset, storage size), for the gradient
op("as_strided", "AsStridedBackward0", "self", lambda xp, self, size, stride, storage_offset, geometry: _as_strided(xp, self, size, stride, storage_offset), attrs="size stride storage_offset geometry", view=True,
   self=lambda grad, size, stride, storage_offset, geometry: _as_strided_backward(grad, size, stride, storage_offset, geometry))
op("as_strided_", "AsStridedBackward1", "self", lambda xp, self, size, stride, storage_offset, geometry: _as_strided(xp, self, size, stride, storage_offset), attrs="size stride storage_offset geometry",
   self=lambda grad, size, stride, storage_offset, geometry: _as_strided_backward(grad, size, stride, storage_offset, geometry))
# diagonal: a (writable) view whose last dim is the diagonal of dims dim1 and dim2
op("diagonal", "DiagonalBackward0", "self", lambda xp, self, offset, dim1, dim2: _diagonal(xp, self, offset, dim1, dim2), attrs="offset dim1 dim2", view=True,
   self=lambda grad, self_shape, offset, dim1, dim2: _dispatch(OPS["diagonal_backward"], (grad,), {"shape": self_shape, "offset": offset, "dim1": dim1, "dim2": dim2}))
op("diagonal_backward", "DiagonalBackwardBackward0", "self", lambda xp, self, shape, offset, dim1, dim2: _diagonal_backward(xp, self, shape, offset, dim1, dim2),
   attrs="shape offset dim1 dim2", self=lambda grad, offset, dim1, dim2: grad.diagonal(offset, dim1, dim2))
# diag of a vector (DiagEmbedBackward0) and of a matrix (a copy of its diagonal)
op("diag_embed", "DiagEmbedBackward0", "self", lambda xp, self, offset: _diag_embed(xp, self, offset), attrs="offset",
   self=lambda grad, offset: grad.diagonal(offset, -2, -1))
op("diagonal_copy", "DiagonalBackward0_copy", "self", lambda xp, self, offset, dim1, dim2: _diagonal(xp, self, offset, dim1, dim2).copy(), attrs="offset dim1 dim2",
   self=lambda grad, self_shape, offset, dim1, dim2: _dispatch(OPS["diagonal_backward"], (grad,), {"shape": self_shape, "offset": offset, "dim1": dim1, "dim2": dim2}))
op("cat", "CatBackward0", "tensors*", lambda xp, tensors, dim: _contiguous(xp, xp.concatenate(tensors, axis=dim)), attrs="dim", promote="binary",
   tensors=lambda grad, tensors_shape, dim: _split_like(grad, [s[dim] for s in tensors_shape], dim))
op("stack", "StackBackward0", "tensors*", lambda xp, tensors, dim: _contiguous(xp, xp.stack(tensors, axis=dim)), attrs="dim", promote="binary",
   tensors=lambda grad, tensors_shape, dim: [grad.select(dim, i) for i in range(len(tensors_shape))])
op("split", "SplitBackward0", "self", lambda xp, self, sizes, dim: _split(xp, self, sizes, dim), attrs="sizes dim", outputs=-1, view=True,
   self=lambda grads, self_shape, sizes, dim: _cat_grads(grads, self_shape, sizes, dim))
op("split_with_sizes", "SplitWithSizesBackward0", "self", lambda xp, self, sizes, dim: _split(xp, self, sizes, dim), attrs="sizes dim", outputs=-1, view=True,
   self=lambda grads, self_shape, sizes, dim: _cat_grads(grads, self_shape, sizes, dim))
op("unbind", "UnbindBackward0", "self", lambda xp, self, dim: tuple(xp.moveaxis(self, dim, 0)), attrs="dim", outputs=-1, view=True,
   self=lambda grads, self_shape, dim: _unbind_backward(grads, self_shape, dim))
op("repeat", "RepeatBackward0", "self", lambda xp, self, repeats: _contiguous(xp, xp.tile(self, repeats)), attrs="repeats",
   self=lambda grad, self_shape, repeats: _repeat_backward(grad, self_shape, repeats))


# in-place forms (their out-of-place kernels; see Tensor._inplace)
op("copy", "CopyBackwards", "self src", lambda xp, self, src: xp.broadcast_to(src.astype(self.dtype, copy=False), self.shape).copy(),
   self=lambda grad: _C.zeros_like(grad), src=lambda grad: grad)
op("fill", "FillBackward2", "self", lambda xp, self, value: xp.full(self.shape, value, dtype=self.dtype), attrs="value",
   self=lambda grad: _C.zeros_like(grad))
op("zero", "ZeroBackward0", "self", lambda xp, self: xp.zeros_like(self), self=lambda grad: _C.zeros_like(grad))

# fmt: on


def _broadcast(*shapes):
    return tuple(np.broadcast_shapes(*shapes))


def _repeat_backward(grad, self_shape, repeats):
    """Sum the tiles: ``grad`` as ``(r0, s0, r1, s1, ...)``, summed over each ``r``."""
    if not repeats:  # a 0-d tensor repeated ``()``
        return grad
    shape = (1,) * (len(repeats) - len(self_shape)) + tuple(self_shape)
    tiled = []
    for r, s in zip(repeats, shape):
        tiled += [r, s]
    summed = grad.reshape(tiled).sum(tuple(range(0, len(tiled), 2)))
    return summed.reshape(self_shape)


def _split_like(grad, sizes, dim):
    outs, start = [], 0
    for s in sizes:
        outs.append(grad.narrow(dim, start, s))
        start += s
    return outs


def _cat_grads(grads, self_shape, sizes, dim):
    # split's backward saves sizes, not the input (PyTorch's SplitWithSizesBackward0 keeps
    # ``self_sym_sizes``), so it runs again after the graph is freed, as in PyTorch
    like = next(g for g in grads if g is not None)
    parts = []
    for g, s in zip(grads, sizes):
        if g is None:
            shape = list(self_shape)
            shape[dim] = s
            g = _C.zeros(shape, dtype=like.dtype, device=like.device)
        parts.append(g)
    return _C.cat(parts, dim)


def _unbind_backward(grads, self_shape, dim):
    like = next(g for g in grads if g is not None)
    shape = self_shape[:dim] + self_shape[dim + 1 :]
    zeros = lambda: _C.zeros(shape, dtype=like.dtype, device=like.device)  # noqa: E731
    return _C.stack([zeros() if g is None else g for g in grads], dim)


def _as_strided_backward(grad, size, stride, storage_offset, geometry):
    """PyTorch's as_strided_backward: the gradient summed into the storage's places (an output
    place seen twice gets both), then read at the input's places (an input place seen twice
    shares it)."""
    in_size, in_stride, in_offset, storage_size = geometry
    out_places = _C.tensor(_storage_places(size, stride, storage_offset).reshape(-1))
    in_places = _storage_places(in_size, in_stride, in_offset)
    storage = _C.zeros(storage_size, dtype=grad.dtype, device=grad.device)
    storage = storage.index_add(0, out_places.to(grad.device), grad.reshape(-1))
    result = storage[_C.tensor(in_places).to(grad.device)]
    counts = np.bincount(in_places.reshape(-1), minlength=storage_size)[in_places]
    if counts.size and counts.max() > 1:
        result = result / _C.tensor(counts.astype(np.float64)).to(grad.device, grad.dtype)
    return result


# fmt: off
op("rot90", "Rot90Backward0", "self", lambda xp, self, k, dims: _contiguous(xp, xp.rot90(self, k, dims)), attrs="k dims",
   self=lambda grad, k, dims: grad.rot90(-k, dims))
op("unsafe_split", "UnsafeSplitBackward0", "self", lambda xp, self, sizes, dim: tuple(_contiguous(xp, p.copy()) for p in _split(xp, self, sizes, dim)), attrs="sizes dim", outputs=-1,
   self=lambda grads, self_shape, sizes, dim: _cat_grads(grads, self_shape, sizes, dim))
op("unsafe_split_with_sizes", "UnsafeSplitWithSizesBackward0", "self", lambda xp, self, sizes, dim: tuple(_contiguous(xp, p.copy()) for p in _split(xp, self, sizes, dim)), attrs="sizes dim", outputs=-1,
   self=lambda grads, self_shape, sizes, dim: _cat_grads(grads, self_shape, sizes, dim))
# Tensor.unfold: a (writable) view of sliding windows; its backward sums them back
op("unfold", "UnfoldBackward0", "self", lambda xp, self, dim, size, step: _unfold(xp, self, dim, size, step),
   attrs="dim size step", view=True,
   self=lambda grad, self_shape, dim, size, step: _unfold_backward_op(grad, self_shape, dim, size, step))
op("unfold_backward", "UnfoldBackwardBackward0", "self",
   lambda xp, self, shape, dim, size, step: _unfold_backward(xp, self, shape, dim, size, step),
   attrs="shape dim size step", self=lambda grad, dim, size, step: grad.unfold(dim, size, step))
# squeeze of several dims, and the in-place view ops' own nodes (NOTE [In-place view ops] in
# nbgrad/_tensor/inplace_variants.py; transpose_, unsqueeze_ and squeeze_(dim) are in shape.py)
op("squeeze_dims", "SqueezeBackward2", "self", lambda xp, self, dims: _squeezed(xp, self, dims), attrs="dims", view=True,
   self=lambda grad, self_shape: grad.reshape(self_shape))
op("squeeze_dims_", "SqueezeBackward5", "self", lambda xp, self, dims: _squeezed(xp, self, dims), attrs="dims",
   self=lambda grad, self_shape: grad.reshape(self_shape))
op("squeeze_", "SqueezeBackward3", "self", lambda xp, self: xp.squeeze(self), self=lambda grad, self_shape: grad.reshape(self_shape))
op("t_", "TBackward1", "self", lambda xp, self: self.T, self=lambda grad: grad.t())
# fmt: on


def _unfold_backward_op(grad, shape, dim, size, step):
    return _dispatch(
        OPS["unfold_backward"],
        (grad,),
        {"shape": tuple(shape), "dim": dim, "size": size, "step": step},
    )
