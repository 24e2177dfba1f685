"""``Variable``: PyTorch's legacy name for a tensor that takes part in autograd.

Mirrors ``torch/autograd/variable.py`` and the legacy constructor of
``torch/csrc/autograd/python_legacy_variable.cpp``. Since PyTorch 0.4 a Variable *is* a Tensor:
``Variable(t, requires_grad=True)`` returns a plain ``Tensor`` (``t`` detached, sharing its
memory and version counter) and ``isinstance(t, Variable)`` holds for every tensor. Old
tutorials still spell it; new code writes ``t.detach().requires_grad_()``.
"""

from __future__ import annotations

import warnings

from nbgrad import tensor as _T
from nbgrad.tensor import VOLATILE_REMOVED

from .engine import get_default_engine
from .function import BackwardCFunction

__all__ = ["VariableMeta", "Variable"]


class VariableMeta(type):
    """Makes ``isinstance(t, Variable)`` true for every Tensor, as in PyTorch."""

    def __instancecheck__(cls, other):
        return isinstance(other, _T.Tensor)


class Variable(metaclass=VariableMeta):
    """``Variable(data=None, requires_grad=False, volatile=False)``: ``data`` detached, as a
    new leaf that requires grad if asked; with no ``data``, an empty tensor of the default dtype.

    Example:
        >>> import nbgrad as ng
        >>> from nbgrad.autograd import Variable
        >>> v = Variable(ng.ones(2), requires_grad=True)
        >>> type(v).__name__, v.is_leaf, isinstance(v, Variable)
        ('Tensor', True, True)
    """

    # As in PyTorch, the engine that ``backward`` and ``grad`` run on.
    _execution_engine = get_default_engine()

    def __new__(cls, data=None, requires_grad=False, volatile=False, _grad_fn=None, name=None):
        T = _T
        if volatile:
            warnings.warn(VOLATILE_REMOVED, UserWarning, stacklevel=2)
        if volatile and requires_grad:
            raise ValueError("Variable can't be volatile and require_grad at the same time!")
        if _grad_fn is not None:
            if not isinstance(_grad_fn, BackwardCFunction):
                raise TypeError(
                    "_grad_fn has to be a Function object or None, but got "
                    f"{type(_grad_fn).__name__}"
                )
        if data is None:
            var = T.empty(0)
        elif isinstance(data, T.Tensor):
            var = data.detach()
        else:
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if _grad_fn is not None:
            raise RuntimeError(
                "_grad_fn argument to legacy Variable constructor is no longer supported.  "
                "Instead, please invoke your _grad_fn to produce a variable with it as the "
                "_grad_fn."
            )
        if requires_grad:
            if not var.is_floating_point():
                raise RuntimeError(
                    "Only Tensors of floating point and complex dtype can require gradients"
                )
            var.requires_grad_(True)
        return var
