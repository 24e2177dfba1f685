"""Memory formats, as PyTorch's ``torch.memory_format``: the layouts that ``contiguous``,
``clone``, ``to`` and ``is_contiguous`` take (``c10/core/MemoryFormat.h``); and a tensor's
storage, the memory its array views (for ``as_strided`` and ``storage_offset``)."""

from __future__ import annotations

import numpy as np


class memory_format:  # noqa: N801 (PyTorch's name)
    """A layout of a tensor's elements in memory."""

    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"nbgrad.{self._name}"

    def __reduce__(self):  # (pickled by name: one object per format)
        return self._name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

# the rank each format needs, and its dims from innermost to outermost (channels first)
_CHANNELS_LAST = {channels_last: (4, (1, 3, 2, 0)), channels_last_3d: (5, (1, 4, 3, 2, 0))}


def _channels_last_dims(fmt, ndim):
    """The dims of ``fmt`` innermost first; PyTorch's error for a tensor of another rank."""
    rank, dims = _CHANNELS_LAST[fmt]
    if ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")
    return dims


def _format_strides(shape, fmt):
    """The strides, in elements, of a dense tensor of ``shape`` in the layout ``fmt``."""
    strides = [0] * len(shape)
    step = 1
    for d in _channels_last_dims(fmt, len(shape)):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def _is_contiguous_as(shape, strides, fmt):
    """Whether ``strides`` (in elements) lay ``shape`` out in ``fmt``, as PyTorch's
    ``compute_channels_last_contiguous_2d/3d`` (a dim of size 1 may have any stride)."""
    if len(shape) != _CHANNELS_LAST[fmt][0]:
        return False
    expected = 1
    for d in _CHANNELS_LAST[fmt][1]:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def _storage_of(a):
    """The array whose memory ``a`` views (PyTorch's storage, flat), and ``a``'s offset in it,
    in elements."""
    root = a
    while isinstance(root.base, type(a)):
        root = root.base
    if root is a or not (root.flags.c_contiguous or root.flags.f_contiguous):
        # (``a`` owns its memory, or NumPy holds it in a way it does not say: ``a``'s own)
        return a.reshape(-1, order="A") if a.flags.forc else a.reshape(-1), 0
    flat = root.reshape(-1, order="A")
    return flat, (_address(a) - _address(flat)) // a.itemsize


def _address(a):
    interface = getattr(a, "__cuda_array_interface__", None) or a.__array_interface__
    return interface["data"][0]


def _storage_places(size, stride, offset):
    """The place in the storage of each element of the geometry (an int64 array of ``size``)."""
    places = np.full(size, offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(size, stride)):
        places += (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(size) - d - 1))
    return places
