"""Forward-mode AD: dual tensors that carry a tangent through every op (mirrors
``torch/autograd/forward_ad.py``).

Example:
    >>> import nbgrad as ng
    >>> import nbgrad.autograd.forward_ad as fwAD
    >>> x = ng.tensor([1.0, 2.0])
    >>> with fwAD.dual_level():
    ...     y = fwAD.make_dual(x, ng.ones(2)) ** 2
    ...     fwAD.unpack_dual(y).tangent
    tensor([2., 4.])

How tangents are computed: see NOTE [Forward-mode AD] in ``nbgrad/_tensor/tangents.py``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import nbgrad
from nbgrad import backend
from nbgrad._graph import forward_grad as _fg
from nbgrad._graph.grad_state import _DecoratorContextManager
from nbgrad._tensor.conversion import _wrap
from nbgrad._tensor.dispatch import OPS, _dispatch
from nbgrad._tensor.memory_formats import _storage_of
from nbgrad.tensor import Tensor

__all__ = [
    "UnpackedDualTensor",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
    "dual_level",
]


_current_level = -1  # as PyTorch's module global: the level entered, or -1


def enter_dual_level():
    """Enter a new forward grad level (only level 0 exists, as in PyTorch); returns it."""
    global _current_level
    _current_level = _fg.enter_level()
    return _current_level


def exit_dual_level(*, level=None):
    """Exit the current forward grad level, deleting every tangent it holds."""
    current = _fg._state.level
    if level is None:
        level = current
    if level != current:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. This "
            "is not supported."
        )
    global _current_level
    _fg.exit_level(level)
    _current_level = _fg._state.level


def _check_level(level, fn_name):
    if level != _fg._state.level:
        raise RuntimeError(f"Invalid level given to {fn_name}")


def _storage_layout(data):
    """(strides, storage size, offset), in elements: PyTorch's "same layout" of a tangent."""
    flat, offset = _storage_of(data)
    strides = tuple(s // data.itemsize for s in data.strides)
    return strides, flat.size, offset if data.size else 0


def _laid_out_as(primal, tangent):
    """A copy of ``tangent`` (recorded, so that gradients reach it) in a fresh storage laid out
    as ``primal``'s: its size, offset and strides."""
    data = primal._data
    strides, size, offset = _storage_layout(data)
    xp = backend.get_xp(primal._device)
    dtype = tangent._data.dtype
    storage = xp.zeros(size, dtype)
    item = storage.itemsize
    view = xp.ndarray(data.shape, dtype, storage.data, offset * item, [s * item for s in strides])
    return _wrap(view, primal._device).copy_(tangent)


def make_dual(tensor, tangent, *, level=None):
    """A new tensor aliasing ``tensor`` (a view of it) with ``tangent`` as its forward grad:
    ``tangent`` itself when its storage layout is ``tensor``'s, else a copy laid out as it."""
    if level is None:
        level = _fg._state.level
    if level < 0:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first."
        )
    if not tensor.is_floating_point():
        raise ValueError(
            f"Expected primal to be floating point or complex, but got: {tensor.dtype}"
        )
    if not tangent.is_floating_point():
        raise ValueError(
            f"Expected tangent to be floating point or complex, but got: {tangent.dtype}"
        )
    _check_level(level, "_make_dual")
    if _fg.get_tangent(tensor) is not None:
        raise RuntimeError(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at the "
            f"same level {level} is not supported."
        )
    if _fg.get_tangent(tangent) is not None:
        raise RuntimeError(
            "Trying to set a forward gradient that has a forward gradient at the same level "
            f"{level}. This is not supported."
        )
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
            f"while the given forward gradient is of size {list(tangent.shape)}."
        )
    if tangent._device != tensor._device:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different device than that of the "
            "original Tensor, this is not supported."
        )
    with _fg.suspended():
        if _storage_layout(tangent._data) != _storage_layout(tensor._data):
            tangent = _laid_out_as(tensor, tangent)
        dual = tensor.view(tuple(tensor.shape))
    _fg.set_tangent(dual, tangent)
    return dual


class UnpackedDualTensor(NamedTuple):
    """What :func:`unpack_dual` returns: the primal and the tangent (or None) of a tensor."""

    primal: Tensor
    tangent: Tensor | None


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)``: a new view of ``tensor`` without tangent, and its tangent as-is
    (None outside a level or for a tensor without one)."""
    if level is None:
        level = _fg._state.level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    if _fg.get_tangent(tensor) is not None:
        _check_level(level, "_fw_primal")
    enabled = _fg._state.enabled  # (off in a custom Function's forward: no tangent there)
    with _fg.suspended():
        primal = _dispatch(OPS["alias"], (tensor,), {})
    return UnpackedDualTensor(primal, _fg.get_tangent(tensor) if enabled else None)


class dual_level(_DecoratorContextManager):
    """Context manager for forward AD: enters level 0 and exits it, deleting its tangents.

    Example:
        >>> import nbgrad as ng
        >>> import nbgrad.autograd.forward_ad as fwAD
        >>> with fwAD.dual_level():
        ...     x = fwAD.make_dual(ng.tensor(3.0), ng.tensor(1.0))
        ...     fwAD.unpack_dual(x.sin()).tangent
        tensor(-0.9900)
    """

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        exit_dual_level()


# NOTE [A custom Function's forward mode]
# As PyTorch's: ``forward`` runs with forward AD off (its inputs show no tangent), then
# ``jvp(ctx, *tangents)`` gives the outputs' tangents from the inputs': one per ``forward``
# argument, zeros for a tensor without one (None for any other argument), and
# ``ctx.saved_tensors`` gives what ``ctx.save_for_forward`` kept. A Function without ``jvp``
# raises NotImplementedError; a ``jvp`` giving the wrong number of tangents, or one of the wrong
# shape, raises as PyTorch's.
def _function_input_tangents(args):
    """The tangents ``jvp`` takes for ``args`` (None when no argument has one)."""
    found = False
    tangents = []
    for a in args:
        t = _fg.get_tangent(a) if isinstance(a, Tensor) else None
        found = found or t is not None
        tangents.append(t)
    if not found:
        return None
    return [
        nbgrad.zeros_like(a) if t is None and isinstance(a, Tensor) and a.is_floating_point() else t
        for a, t in zip(args, tangents)
    ]


def _function_output_tangents(cls, ctx, args, tangents, outs):
    """Give the tensor outputs ``outs`` of ``cls.apply(*args)`` the tangents ``cls.jvp``
    computes from ``tangents``, with PyTorch's checks of what it returns."""
    saved, to_save = ctx._saved, ctx.to_save
    ctx._saved, ctx.to_save = None, getattr(ctx, "saved_for_forward", None) or ()
    try:
        with _fg.suspended():
            result = cls.jvp(ctx, *tangents)
    finally:
        ctx._saved, ctx.to_save = saved, to_save
    result = result if isinstance(result, tuple) else (result,)
    if len(result) != len(outs):
        raise RuntimeError(
            "Function's jvp returned an invalid number of forward gradients (expected "
            f"{len(outs)} but got {len(result)})"
        )
    non_diff = {id(t) for t in ctx.non_differentiable or ()}
    dirty = {id(t) for t in ctx.dirty_tensors or ()}
    for k, (o, t) in enumerate(zip(outs, result)):
        if not isinstance(o, Tensor) or t is None:
            continue
        if id(o) in non_diff or k in ctx._non_diff_outputs:
            raise RuntimeError(
                f"Function {cls.__name__} returned a tangent at position {k} for an output that "
                "was marked as non-differentiable in forward. You should return None at that "
                "position instead."
            )
        if not o.is_floating_point():
            continue
        if tuple(t.shape) != tuple(o.shape):
            raise RuntimeError(
                "Trying to set a forward gradient that has a different size than that of the "
                f"original Tensor, this is not supported. Tensor is of size {list(o.shape)} "
                f"while the given forward gradient is of size {list(t.shape)}."
            )
        source = _aliased_input(o, args)
        if id(o) in dirty:
            if source is not None and t is not tangents[source]:
                raise RuntimeError(
                    "inplace custom Function is not modifying the forward mode gradients "
                    "inplace. If the forward is modifying an input inplace, then the jvp "
                    "function must modify the corresponding gradient inplace."
                )
        elif source is not None:
            _check_view_tangent(t, tangents[source])
        _fg.set_tangent(o, t)


def _aliased_input(output, args):
    """The position of the tensor argument ``output`` is, or is a view of, or None."""
    for i, a in enumerate(args):
        if isinstance(a, Tensor) and (a is output or np.may_share_memory(a._data, output._data)):
            return i
    return None


def _check_view_tangent(t, input_tangent):
    """PyTorch's checks on the tangent of an output that is an input, or a view of one: the
    same view of the input's tangent."""
    message = "A custom Function's forward is returning a view (or an input as-is) but the jvp "
    if t._base is None:
        raise RuntimeError(message + "is not returning a view.")
    if input_tangent._base is not None:
        if t._base is not input_tangent._base:
            raise RuntimeError(
                message + "is not returning a view of the same base as the given grad input."
            )
    elif t._base is not input_tangent:
        raise RuntimeError(message + "is not returning a view of the given grad input.")
