"""``Parameter`` and ``Buffer``: Tensors that a Module registers as one of its parameters or
buffers when assigned to one of its attributes.

Mirrors ``torch/nn/parameter.py``. A Parameter is a real ``Tensor`` subclass (``isinstance(p,
ng.Tensor)`` holds), a leaf that requires grad by default; ops on it return plain Tensors.
"""

from __future__ import annotations

import numpy as np

from nbgrad import backend
from nbgrad.tensor import Tensor, empty, tensor

__all__ = ["Parameter", "Buffer"]

# NOTE [Parameter is a Tensor subclass]
# As in PyTorch, a Parameter is a Tensor subclass that shares memory (and the version counter)
# with the tensor it was made from. The dispatcher accepts Tensor subclasses as Tensors
# (``isinstance`` checks in ``nbgrad/tensor.py``'s slow path and ``_record``); every op result is
# a plain Tensor. A subclass has a ``__dict__``, so user attributes on a Parameter work.
_TENSOR_SLOTS = tuple(s for s in Tensor.__slots__ if s != "__weakref__")


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning one to a Module attribute registers it.

    Example:
        >>> import nbgrad as ng
        >>> p = ng.nn.Parameter(ng.zeros(2))
        >>> p.requires_grad, p.is_leaf, isinstance(p, ng.Tensor)
        (True, True, True)
        >>> type(p * 2).__name__
        'Tensor'
    """

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Parameter data must be a Tensor, got {type(data).__name__}; wrap it with "
                "nbgrad.tensor(...) first"
            )
        return _detached_as(cls, data).requires_grad_(requires_grad)

    def __init__(self, data=None, requires_grad=True):
        pass  # everything happens in __new__ (Tensor.__init__ refuses direct construction)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        data = backend.to_host(self._data).copy()
        return (_rebuild_parameter, (data, str(self._device), self._requires_grad))


def _detached_as(cls, data: Tensor) -> Tensor:
    """A ``cls`` instance sharing ``data``'s memory (and version counter), detached."""
    source = data.detach()
    out = Tensor.__new__(cls)
    for slot in _TENSOR_SLOTS:
        if hasattr(source, slot):  # optional slots (``_views``) may be unset
            setattr(out, slot, getattr(source, slot))
    out._base = None
    out._view_chain = None
    return out


class Buffer(Tensor):
    """A Tensor that is module state but not a parameter: assigning one to a Module attribute
    registers it as a buffer (``persistent=False``: left out of the ``state_dict``).

    NOTE [Buffer is a Tensor subclass]
    PyTorch's ``Buffer(data)`` is ``data`` detached, with
    ``persistent`` and ``_is_buffer`` attributes (its ``type`` is ``torch.Tensor``); nbgrad's
    Tensor has slots, so a Buffer here is a Tensor subclass, as ``Parameter``. It keeps
    ``data``'s ``requires_grad``, and ops on it return plain Tensors.

    Example:
        >>> import nbgrad as ng
        >>> m = ng.nn.Module()
        >>> m.stats = ng.nn.Buffer(ng.zeros(2))
        >>> [name for name, _ in m.named_buffers()]
        ['stats']
    """

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = empty(0)
        buf = _detached_as(cls, data).requires_grad_(data.requires_grad)
        buf.persistent = persistent
        return buf

    def __init__(self, data=None, *, persistent=True):
        pass  # everything happens in __new__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), persistent=self.persistent)
        memo[id(self)] = result
        return result


def _rebuild_parameter(array: np.ndarray, device: str, requires_grad: bool) -> Parameter:
    return Parameter(tensor(array, device=device), requires_grad)
