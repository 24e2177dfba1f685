"""``InputBuffer``: the gradients arriving at one node, summed per input (PyTorch's
``input_buffer.cpp``)."""

from __future__ import annotations

import numpy as np

from nbgrad._graph.accumulate_grad import _SOLE_LOCAL, _STEAL, _getrefcount
from nbgrad._graph.forward_grad import _state as _fw
from nbgrad._graph.grad_state import _state as _grad_state
from nbgrad._graph.table_node import RAW_GRADS, as_tensors
from nbgrad._tensor.conversion import _wrap
from nbgrad._tensor.dispatch import _F64

__all__ = ["InputBuffer"]

_ndarray = np.ndarray
_np_add = np.add


class InputBuffer(list):
    """Gradients arriving at one node, summed per input (``InputBuffer``): a list with one
    slot per input of the node."""

    __slots__ = ()

    @classmethod
    def of_size(cls, size):
        return cls((None,) * size)

    @property
    def buffer(self):
        return self

    def add(self, pos, grad):
        if grad is None:
            return
        self[pos] = grad if self[pos] is None else _accumulate(self, pos, grad)


# NOTE [Accumulate in place]
# As PyTorch's ``InputBuffer::accumulate``, a gradient that nothing but the input buffer holds
# is summed into in place instead of into a new array and tensor: a node whose gradients come
# from many places (a leaf used by every step of a loop, a shared activation) then adds into
# one array. PyTorch asks the tensor's use count; ``_accumulate`` asks the rule of NOTE
# [Stealing the gradient]: it takes the old gradient out of its slot, and sums into it in place
# when its own local is then the only holder of the tensor (``_SOLE_LOCAL``; a hook, the
# recorder, another buffer or a ``.grad`` that kept it adds one) and the tensor the only holder
# of its array besides the local ``a`` (``_SOLE_LOCAL + 1``; a carried gradient is its array,
# counted as the tensor). The array must also own its memory (no view of another array; a view
# of it holds it too), be of the other gradient's dtype and take the sum's shape (else the sum
# is new, as before); the sum in place bumps the gradient's version, as a changed value.
_IN_PLACE = _STEAL

# NOTE [A 0-d sum on floats]
# ``np.add(a, b, out=a)`` costs about 1 us on 0-d arrays (the ufunc's ``out`` handling), where
# a leaf of a graph of 0-d tensors sums one gradient per use. For float64 the sum of the two
# Python floats is the same IEEE double addition, and storing it into ``a`` costs a tenth.


def _accumulate(buffer, pos, new):
    """``buffer[pos] + new``, to be stored in ``buffer[pos]``: in place into the old gradient
    when only the buffer holds it (NOTE [Accumulate in place])."""
    old = buffer[pos]
    buffer[pos] = None  # (so that ``old`` is the only name left when only the buffer held it)
    if _grad_state.enabled or _fw.active:  # create_graph: record the sum (a tangent: sum it)
        return old + new
    t = type(old)
    if t in RAW_GRADS or type(new) in RAW_GRADS:  # NOTE [Gradients carried as arrays]
        # two of one dtype and shape sum as arrays, in place when only the buffer holds ``old``;
        # NumPy scalars (the 0-d path) into a new scalar, one addition. Others: as Tensors.
        if (
            t in RAW_GRADS
            and type(new) in RAW_GRADS
            and new.dtype is old.dtype
            and new.shape == old.shape
        ):
            if (
                t is _ndarray
                and _IN_PLACE
                and _getrefcount(old) == _SOLE_LOCAL
                and old.base is None
                and old.flags.writeable
            ):
                return _np_add(old, new, out=old)
            return old + new
        old, new = as_tensors([old, new])
    a = old._data
    if type(a) is _ndarray:
        b = new._data
        if (
            _IN_PLACE
            and _getrefcount(old) == _SOLE_LOCAL
            and _getrefcount(a) == _SOLE_LOCAL + 1
            and a.base is None
            and b.dtype is a.dtype
            and b.ndim <= a.ndim
            and a.flags.writeable
        ):
            try:
                if a.ndim or a.dtype is not _F64:
                    _np_add(a, b, out=a)
                else:  # NOTE [A 0-d sum on floats]
                    a[()] = a.item() + b.item()
            except ValueError:  # ``b`` does not broadcast to ``a``'s shape: a new sum
                pass
            else:
                # a new version of the value: what read the old one (the notebook's recorder
                # keeps a gradient's facts by tensor and version) must read it again
                counter = old._version_counter
                if counter is None:
                    old._version_counter = [1]
                else:
                    counter[0] += 1
                return old
        if not a.ndim:  # NOTE [0-d results stay arrays] in dispatch.py
            return _wrap(_np_add(a, b, out=...), old._device)
        return _wrap(a + b, old._device)
    return _wrap(a + new._data, old._device)
