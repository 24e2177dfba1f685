"""Shape functions: views and their copies (``reshape``, ``transpose``, ``permute``, ``squeeze``,
``movedim``, ``broadcast_to``...), ``atleast_1d``..``atleast_3d``, the stacks (``hstack``,
``vstack``, ``dstack``, ``column_stack``), the splits (``split``, ``chunk``, ``tensor_split``,
``hsplit``...), flips and rotations, diagonals, ``tril``/``triu``, ``unflatten``, ``ravel``,
``take_along_dim`` and ``unravel_index``; a composite is made of the ops PyTorch's uses, so the
graph shows its nodes."""

from __future__ import annotations

import math

from .. import backend
from .._tensor.linalg_methods import meshgrid
from ..tensor import Size, Tensor, cat, tensor
from .out import _out_variant

__all__ = [
    "as_strided",
    "flip",
    "roll",
    "tril",
    "triu",
    "t",
    "transpose",
    "permute",
    "reshape",
    "squeeze",
    "unsqueeze",
    "flatten",
    "split",
    "chunk",
    "unbind",
    "narrow",
    "select",
    "diagonal",
    "expand_copy",
    "diag",
    "diag_embed",
    "meshgrid",
    "repeat_interleave",
    "tile",
    "broadcast_to",
    "broadcast_tensors",
    "broadcast_shapes",
    "movedim",
    "moveaxis",
    "swapaxes",
    "swapdims",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "hstack",
    "vstack",
    "row_stack",
    "dstack",
    "column_stack",
    "tensor_split",
    "hsplit",
    "vsplit",
    "dsplit",
    "split_with_sizes",
    "unsafe_chunk",
    "unsafe_split",
    "unsafe_split_with_sizes",
    "fliplr",
    "flipud",
    "rot90",
    "unflatten",
    "ravel",
    "adjoint",
    "take_along_dim",
    "unravel_index",
    "concat",
    "concatenate",
    "diagflat",
]


def flip(input, dims):
    return input.flip(dims)


def roll(input, shifts, dims=None):
    return input.roll(shifts, dims)


@_out_variant
def tril(input, diagonal=0):
    return input.tril(diagonal)


@_out_variant
def triu(input, diagonal=0):
    return input.triu(diagonal)


def t(input):
    return input.t()


def transpose(input, dim0, dim1):
    return input.transpose(dim0, dim1)


def permute(input, dims):
    return input.permute(dims)


def reshape(input, shape):
    return input.reshape(shape)


def squeeze(input, dim=None):
    return input.squeeze(dim)


def unsqueeze(input, dim):
    return input.unsqueeze(dim)


def flatten(input, start_dim=0, end_dim=-1):
    return input.flatten(start_dim, end_dim)


def split(tensor, split_size_or_sections, dim=0):
    return tensor.split(split_size_or_sections, dim)


def chunk(input, chunks, dim=0):
    return input.chunk(chunks, dim)


def unbind(input, dim=0):
    return input.unbind(dim)


def narrow(input, dim, start, length):
    return input.narrow(dim, start, length)


def select(input, dim, index):
    return input.select(dim, index)


def diagonal(input, offset=0, dim1=0, dim2=1):
    return input.diagonal(offset, dim1, dim2)


def as_strided(input, size, stride, storage_offset=None):
    return input.as_strided(size, stride, storage_offset)


def expand_copy(input, size):
    return input.expand(size).clone()


def diag(input, diagonal=0):
    return input.diag(diagonal)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    return input.diag_embed(offset, dim1, dim2)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    return input.repeat_interleave(repeats, dim, output_size=output_size)


def tile(input, dims):
    return input.tile(dims)


def broadcast_to(input, size):
    return input.broadcast_to(size)


def broadcast_shapes(*shapes):
    """The shape that ``shapes`` broadcast to (PyTorch's RuntimeError when they do not)."""
    shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    ndims = sorted(len(s) for s in shapes)  # (``max`` here is nbgrad's)
    result = [1] * (ndims[-1] if ndims else 0)
    for k, shape in enumerate(shapes):
        for i in range(1, len(shape) + 1):
            have, new = result[-i], shape[-i]
            if new == 1 or have == new:
                continue
            if have != 1:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {new} at {-i}! Mismatching "
                    f"argument at index {k} had {shape}; but expected shape should be "
                    f"broadcastable to {result}"
                )
            result[-i] = new
    return Size(result)


def broadcast_tensors(*tensors):
    """The tensors expanded to one shape (views, ``ExpandBackward0``)."""
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)


def movedim(input, source, destination):
    return input.movedim(source, destination)


moveaxis = movedim


def swapaxes(input, axis0, axis1):
    return input.swapaxes(axis0, axis1)


def swapdims(input, dim0, dim1):
    return input.swapdims(dim0, dim1)


def _each(tensors, fn):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(fn(t) for t in tensors[0])
    if len(tensors) == 1:
        return fn(tensors[0])
    return tuple(fn(t) for t in tensors)


def _atleast_1d(t):
    return t.reshape(1) if t.ndim == 0 else t


def _atleast_2d(t):
    if t.ndim == 0:
        return t.reshape(1, 1)
    return t.unsqueeze(0) if t.ndim == 1 else t


def _atleast_3d(t):
    if t.ndim == 0:
        return t.reshape(1, 1, 1)
    if t.ndim == 1:
        return t.unsqueeze(0).unsqueeze(-1)
    return t.unsqueeze(-1) if t.ndim == 2 else t


def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (a 0-d one viewed as 1-d)."""
    return _each(tensors, _atleast_1d)


def atleast_2d(*tensors):
    """Each tensor with at least 2 dims (new leading dims)."""
    return _each(tensors, _atleast_2d)


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims (as NumPy: a vector becomes ``(1, n, 1)``)."""
    return _each(tensors, _atleast_3d)


def _tensor_sequence(tensors, name):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(
            f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
            f"{type(tensors).__name__}"
        )
    return list(tensors)


@_out_variant
def hstack(tensors):
    """The tensors side by side: ``cat`` along dim 1 (dim 0 for vectors)."""
    ts = [_atleast_1d(t) for t in _tensor_sequence(tensors, "hstack")]
    return cat(ts, 0 if ts and ts[0].ndim == 1 else 1)


@_out_variant
def vstack(tensors):
    """The tensors one above the other: ``cat`` of their 2-d forms along dim 0."""
    return cat([_atleast_2d(t) for t in _tensor_sequence(tensors, "vstack")], 0)


row_stack = vstack


@_out_variant
def dstack(tensors):
    """The tensors in depth: ``cat`` of their 3-d forms along dim 2."""
    return cat([_atleast_3d(t) for t in _tensor_sequence(tensors, "dstack")], 2)


@_out_variant
def column_stack(tensors):
    """The tensors as columns: vectors (and numbers) as ``(n, 1)``, then ``cat`` along dim 1."""
    ts = [
        t.reshape(t.numel(), 1) if t.ndim <= 1 else t
        for t in _tensor_sequence(tensors, "column_stack")
    ]
    return cat(ts, 1)


def tensor_split(input, indices_or_sections, dim=0):
    return input.tensor_split(indices_or_sections, dim)


def hsplit(input, indices_or_sections):
    return input.hsplit(indices_or_sections)


def vsplit(input, indices_or_sections):
    return input.vsplit(indices_or_sections)


def dsplit(input, indices_or_sections):
    return input.dsplit(indices_or_sections)


def split_with_sizes(input, split_sizes, dim=0):
    return input.split_with_sizes(split_sizes, dim)


def unsafe_chunk(input, chunks, dim=0):
    return input.unsafe_chunk(chunks, dim)


def unsafe_split(tensor, split_size, dim=0):
    return tensor.unsafe_split(split_size, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return input.unsafe_split_with_sizes(split_sizes, dim)


def fliplr(input):
    return input.fliplr()


def flipud(input):
    return input.flipud()


def rot90(input, k=1, dims=(0, 1)):
    return input.rot90(k, dims)


def unflatten(input, dim, sizes):
    return input.unflatten(dim, sizes)


def ravel(input):
    return input.ravel()


def adjoint(input):
    return input.adjoint()


@_out_variant
def take_along_dim(input, indices, dim=None):
    return input.take_along_dim(indices, dim)


def unravel_index(indices, shape):
    """The coordinates in a tensor of ``shape`` of each flat index: one tensor per dim."""
    if not isinstance(indices, Tensor):
        indices = tensor(indices)
    if indices._data.dtype.kind not in "iu":
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    n = math.prod(shape)
    flat = indices._data
    if flat.size and (int(flat.max()) >= n or int(flat.min()) < -n):
        raise RuntimeError("'indices' must be in range [-" + f"{n}, {n - 1}]")
    xp = backend.get_xp(indices.device)
    coords = xp.unravel_index(xp.where(flat < 0, flat + n, flat), shape)
    return tuple(tensor(c.astype("int64"), device=indices.device) for c in coords)


@_out_variant
def concat(tensors, dim=0):
    return cat(tensors, dim)


@_out_variant
def concatenate(tensors, axis=0):
    return cat(tensors, axis)


def diagflat(input, offset=0):
    return input.diagflat(offset)
