"""``Parameter``: a Tensor that a Module registers as one of its parameters.

Mirrors ``torch/nn/parameter.py``. A Parameter is a real ``Tensor`` subclass (``isinstance(p,
ng.Tensor)`` holds), a leaf that requires grad by default; ops on it return plain Tensors.
"""

from __future__ import annotations

import numpy as np

from nbgrad import backend
from nbgrad.tensor import Tensor, empty, tensor

__all__ = ["Parameter"]

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
        source = data.detach()
        param = Tensor.__new__(cls)
        for slot in _TENSOR_SLOTS:
            if hasattr(source, slot):  # optional slots (``_views``) may be unset
                setattr(param, slot, getattr(source, slot))
        param._base = None
        param._view_chain = None
        param.requires_grad_(requires_grad)
        return param

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
        data = backend.to_numpy(self._data, self._device).copy()
        return (_rebuild_parameter, (data, str(self._device), self._requires_grad))


def _rebuild_parameter(array: np.ndarray, device: str, requires_grad: bool) -> Parameter:
    return Parameter(tensor(array, device=device), requires_grad)
