"""The array kernels of the rows in ``nbgrad/derivatives/shape.py``: functions of ``xp``
(NumPy or CuPy) and arrays."""

from __future__ import annotations

import numpy as np

from nbgrad._tensor.memory_formats import _storage_of
from nbgrad.kernels.common import _ndarray


def _expand(xp, a, size):
    """A view of ``a`` broadcast to ``size``, writable where ``a`` is (as PyTorch's expand; an
    in-place op on the whole of it is refused, see ``_check_no_internal_overlap``)."""
    if xp is np and type(a) is not _ndarray:  # a 0-d gradient as a NumPy scalar (NOTE [0-d
        a = np.array(a)  # gradients as NumPy scalars]): a view of an array of its own, writable
    # NOTE [Expand as one ndarray call]
    # a contiguous array is viewed with stride 0 along its
    # broadcast dimensions by one ndarray constructor over its memory (what as_strided does
    # after broadcast_to, both pure-Python wrappers that cost ten times more): the backward of
    # every ``sum()`` and ``mean()`` expands its 0-d gradient this way, with stride 0 throughout
    if xp is np and not a.ndim:  # (a negative size raises ValueError, as broadcast_to's)
        if a.flags.writeable and not a.dtype.hasobject:
            return _ndarray(tuple(size), a.dtype, a, 0, (0,) * len(size))
    elif xp is np and a.flags.c_contiguous and a.flags.writeable and not a.dtype.hasobject:
        lead = len(size) - a.ndim
        if lead >= 0:
            strides = [0] * lead
            for n, s, st in zip(a.shape, size[lead:], a.strides):
                if n == s:
                    strides.append(st)
                elif n == 1 and s >= 0:
                    strides.append(0)
                else:
                    break
            else:
                if all(s >= 0 for s in size[:lead]):
                    return _ndarray(tuple(size), a.dtype, a, 0, tuple(strides))
    out = xp.broadcast_to(a, size)
    if xp is np and a.flags.writeable:  # (NumPy's broadcast views are read-only; CuPy's not)
        out = np.lib.stride_tricks.as_strided(a, out.shape, out.strides)
    return out


def _view(xp, a, shape):
    try:
        if xp is np:  # (the method: np.reshape is a Python wrapper around it)
            return a.reshape(shape, copy=False)
        return xp.reshape(a, shape, copy=False)
    except ValueError:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        ) from None


def _unsqueeze(a, dim):
    """A view of ``a`` with a dimension of size 1 inserted at ``dim`` (what ``expand_dims``
    does for one dim, without its Python-level argument handling)."""
    shape = a.shape
    if dim < 0:
        dim += len(shape) + 1
    return a.reshape(shape[:dim] + (1,) + shape[dim:])


def _diagonal(xp, a, offset, dim1, dim2):
    d = xp.diagonal(a, offset, dim1, dim2)
    # NumPy's diagonal is a read-only view; PyTorch's may be written (CuPy's flags have no
    # writeable: its views are always writable)
    if not getattr(d.flags, "writeable", True) and a.flags.writeable:
        d.flags.writeable = True
    return d


def _diagonal_backward(xp, grad, shape, offset, dim1, dim2):
    out = xp.zeros(shape, dtype=grad.dtype)
    _diagonal(xp, out, offset, dim1, dim2)[...] = grad
    return out


def _split(xp, a, sizes, dim):
    outs, start = [], 0
    for s in sizes:
        outs.append(a[(slice(None),) * dim + (slice(start, start + s),)])
        start += s
    return tuple(outs)


def _diag_embed(xp, a, offset):
    """``a``'s last dim as the ``offset`` diagonal of new last two dims (``diag`` of a vector)."""
    n = (a.shape[-1] if a.ndim else 1) + abs(offset)
    shape = a.shape[:-1] + (n, n)
    return _diagonal_backward(xp, a, shape, offset, len(shape) - 2, len(shape) - 1)


def _unfold(xp, a, dim, size, step):
    """``Tensor.unfold``: a view of the windows of ``size`` elements every ``step`` along
    ``dim``, the window as a new last dim (a 0-d tensor is one element)."""
    if not a.ndim:
        return a.reshape(1)[:size]
    n = (a.shape[dim] - size) // step + 1
    shape = a.shape[:dim] + (n,) + a.shape[dim + 1 :] + (size,)
    strides = a.strides[:dim] + (a.strides[dim] * step,) + a.strides[dim + 1 :]
    return xp.lib.stride_tricks.as_strided(a, shape, strides + (a.strides[dim],))


def _unfold_backward(xp, grad, shape, dim, size, step):
    """The gradient of ``unfold``: each window's gradient summed into the elements it covers."""
    out = xp.zeros(shape, dtype=grad.dtype)
    if not len(shape):
        out[...] = grad.sum()
        return out
    n = grad.shape[dim]
    for k in range(size):  # the k-th element of every window: k, k + step, ... along dim
        out[(slice(None),) * dim + (slice(k, k + step * (n - 1) + 1, step),)] += grad[..., k]
    return out


def _as_strided(xp, a, size, stride, storage_offset):
    flat, _ = _storage_of(a)
    needed = storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
    if all(size) and needed > flat.size:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
            f"{storage_offset}, and itemsize {a.itemsize} requiring a storage size of "
            f"{needed * a.itemsize} are out of bounds for storage of size "
            f"{flat.size * a.itemsize}"
        )
    item = a.itemsize
    strides = tuple(s * item for s in stride)
    if not all(size):  # (no element to reach: the strides as given)
        return xp.lib.stride_tricks.as_strided(xp.empty(1, a.dtype), size, strides)
    # (an ndarray over the storage: its base chain leads back there)
    return xp.ndarray(size, a.dtype, flat.data, storage_offset * item, strides)


def _squeezed(xp, a, dims):
    """``a`` without those of ``dims`` that have size 1 (a view)."""
    return xp.squeeze(a, tuple(d for d in dims if a.shape[d] == 1)) if a.ndim else a[...]
