"""In-place Tensor methods (``add_``, ``copy_``, ``__setitem__``'s writes...) and the version
counter and history rewrite they share (PyTorch's ``rebase_history``, ``CopySlices``).
:class:`nbgrad.Tensor` inherits them.
"""

from __future__ import annotations

import numpy as np

from nbgrad._graph.forward_grad import _state as _fw
from nbgrad._graph.forward_grad import get_tangent, set_tangent
from nbgrad._graph.grad_state import _inference_tensors
from nbgrad._graph.grad_state import _state as _grad_state
from nbgrad._graph.node import Node
from nbgrad._graph.observer import forward_observer as _observed
from nbgrad._graph.saved_mutation import before_write, mutation_contexts
from nbgrad._graph.saved_tensor import SavedTensor
from nbgrad._tensor.conversion import (
    _arg,
    _ndarray,
    _opt_scalar,
    _scalar,
    _sub_arg,
    _tensor_arg,
    _wrap,
)
from nbgrad._tensor.creation import zeros_like
from nbgrad._tensor.dispatch import (
    _FROM_NP,
    _NO_ATTRS,
    OPS,
    _dispatch,
    _edge_of,
    _op,
    _perf_counter,
    _shapes_message,
)
from nbgrad._tensor.math_methods import sum_to
from nbgrad._tensor.views import (
    _check_no_internal_overlap,
    _EnableGrad,
    _made_without_grad,
    _mark_base_changed,
    _multiple_views_message,
    _no_grad_view_message,
    _NoGrad,
)
from nbgrad.backend import quiet_float_errors

Tensor = None  # the Tensor class: see NOTE [The Tensor class, bound late]


class InplaceMethods:
    """Mixed into :class:`nbgrad.Tensor`."""

    __slots__ = ()

    def _view_copy_(self, src):
        return self._inplace(_op("copy"), (src,), _NO_ATTRS)

    # -- in-place ops -----------------------------------------------------------------------
    def _inplace(self, op, others, attrs):
        """Apply ``op`` in place: check, write the data, bump the version, rebase history.

        NOTE [In-place ops and views]
        The row's out-of-place kernel computes the new value, which is written into this
        tensor's memory (so every view and the base see it) and the shared version counter is
        bumped, which makes saved copies of the old value fail their check in backward. For the
        graph, the row's node is created with a shadow of ``self`` (same autograd identity; a
        copy of the old data if the formulas need it). On a plain tensor the node becomes
        ``grad_fn``. On a view, the base's history is rebased through ``CopySlices`` (which
        wraps the node and the view chain) and the view's ``grad_fn`` is regenerated from it.
        """
        if 0 in self._data.strides and op.name not in _OVERLAP_ALLOWED:
            _check_no_internal_overlap(self._data)
        grad_on = self._check_inplace(op.differentiable, others)
        needs_graph = (
            grad_on
            and op.differentiable
            and (
                self._requires_grad
                or any(isinstance(o, Tensor) and o._requires_grad for o in others)
            )
        )
        if needs_graph and self._base is not None and self._view_chain is None:
            raise RuntimeError(_multiple_views_message(self))
        if not needs_graph:
            ufunc = None if _fw.active else _INPLACE_UFUNCS.get(op.name)  # NOTE [Forward-mode AD]
            other = others[0] if others else None
            if (
                ufunc is not None
                and type(attrs.get("alpha", 1)) in (int, float)
                and self._data.dtype.kind == "f"
                and (
                    type(other) is float
                    or type(other) is int
                    or (
                        type(other) is Tensor
                        and other._data.dtype == self._data.dtype
                        and other._device == self._device
                    )
                )
            ):
                # an optimizer's ``p.sub_(g, alpha=lr)``: write in place, no temporary copy
                operand = other._data if type(other) is Tensor else other
                alpha = attrs.get("alpha", 1)
                t0 = _perf_counter() if _observed else 0.0  # NOTE [Forward observers]
                if mutation_contexts:  # See NOTE [Clone before mutate]
                    before_write(self)
                try:  # NumPy checks the shapes before it writes anything
                    if op.quiet:  # 0 / 0 and the like: nan or inf quietly, as PyTorch
                        with quiet_float_errors():
                            _ufunc_inplace(ufunc, self._data, operand, alpha)
                    else:
                        _ufunc_inplace(ufunc, self._data, operand, alpha)
                except ValueError as e:
                    raise _inplace_shape_error(op, self, other, e) from None
                self._counter()[0] += 1
                if _observed:
                    _observed[0].forward(op, (self, *others), attrs, self, _perf_counter() - t0)
                return self
            with _NoGrad():
                result = _dispatch(op, (self, *others), attrs)
            self._write(result)
            return self
        shadow = self._shadow("self" in op.node_class._saved_names)
        result = _dispatch(op, (shadow, *others), attrs)
        self._write(result)
        self._rebase_history(result.grad_fn)
        return self

    def _inplace_via(self, compute, others, differentiable=True):
        """Apply an out-of-place computation in place: ``compute(t)`` is the out-of-place
        method on ``t`` with its arguments bound, ``others`` the tensors among them.

        The same steps as :meth:`_inplace` (see NOTE [In-place ops and views]), for an
        out-of-place method rather than one row: the method runs on the shadow of ``self``
        (always a copy of the old data: which of its nodes save it is not known here), so the
        node it records, PyTorch's node for the in-place op too, has ``self`` as its input 0.
        A result that does not require grad is written without touching the history; an op
        that is not ``differentiable`` (a logical op) skips the checks of autograd too, as
        PyTorch's.
        """
        if 0 in self._data.strides:
            _check_no_internal_overlap(self._data)
        grad_on = self._check_inplace(None, others) if differentiable else False
        if not (grad_on and (self._requires_grad or any(o._requires_grad for o in others))):
            with _NoGrad():
                self._write(compute(self))
            return self
        result = compute(self._shadow(True))
        if not result._requires_grad:
            self._write(result)
            return self
        self._check_inplace(True, others)
        if self._base is not None and self._view_chain is None:
            raise RuntimeError(_multiple_views_message(self))
        self._write(result)
        self._rebase_history(result.grad_fn)
        return self

    def _check_inplace(self, differentiable, others):
        """PyTorch's checks before an in-place op (inference tensors, leaves and their views,
        views made in no-grad mode, for a ``differentiable`` op; ``None``: not known yet, that
        check is left for later); returns whether grad mode is on."""
        if _inference_tensors.made and not _grad_state.inference:  # NOTE [Inference tensors]
            _check_not_inference(self)
        grad_on = _grad_state.enabled
        base = self._base
        if grad_on:
            if (
                base is not None
                and getattr(self, "_no_grad_view", 0)
                and differentiable
                and (
                    base._requires_grad
                    or self._requires_grad
                    or any(isinstance(o, Tensor) and o._requires_grad for o in others)
                )
            ):
                raise RuntimeError(_no_grad_view_message(self))  # NOTE [Views made in no-grad mode]
            if self._requires_grad and self.grad_fn is None:
                if base is not None and base._requires_grad and base.grad_fn is None:
                    raise RuntimeError(
                        "a view of a leaf Variable that requires grad is being used in an in-place "
                        "operation."
                    )
                raise RuntimeError(
                    "a leaf Variable that requires grad is being used in an in-place operation."
                )
            if base is not None and base._requires_grad and base.grad_fn is None:
                raise RuntimeError(
                    "a view of a leaf Variable that requires grad is being used in an in-place "
                    "operation."
                )
        return grad_on

    def _shadow(self, copy):
        """A tensor with this one's autograd identity (grad_fn, output_nr, grad accumulator)
        and its data, or a copy of it."""
        shadow = _wrap(self._data.copy() if copy else self._data, self._device, self._requires_grad)
        shadow.grad_fn = self.grad_fn
        shadow._output_nr = self._output_nr
        if self.grad_fn is None and self._requires_grad:
            shadow._grad_accumulator = self._get_grad_accumulator()
        if _fw.active:  # the op computes the new tangent from the old (NOTE [Forward-mode AD])
            set_tangent(shadow, get_tangent(self))
        return shadow

    def _rebase_history(self, node, output_nr=0):
        """Make output ``output_nr`` of ``node``, which computed this tensor's new value, its
        history (through ``CopySlices`` on a view, whose node has one output)."""
        base = self._base
        if base is None or self._view_chain is None:
            self._set_history(node, output_nr)
            if base is None:
                _regenerate_views(self, self)  # see NOTE [Views of a modified base]
        else:
            base_edge = _edge_of(base)
            copy_slices = CopySlices(
                base_edge, node, self._view_chain, base._metadata_tuple(), base._data.strides
            )
            base._set_history(copy_slices, 0)
            with _EnableGrad():
                regenerated = base
                regenerated = _apply_view_chain(base, self._view_chain)
            self._set_history(regenerated.grad_fn, 0)
            # (a custom Function's node keeps no slots: see NOTE [In place on a view: the saved
            # result])
            for slot in getattr(node, "_tensor_slots", ()):
                saved = getattr(node, slot, None)
                if type(saved) is SavedTensor and saved._is_output:
                    saved._mark_inplace_on_view(self.grad_fn)
            _regenerate_views(base, self)  # see NOTE [Views of a modified base]

    def _write(self, result):
        data = result._data
        if data.dtype != self._data.dtype:
            if (
                data.dtype.kind == "f"
                and self._data.dtype.kind in "biu"
                or (data.dtype.kind in "iu" and self._data.dtype.kind == "b")
            ):
                raise RuntimeError(
                    f"result type {_FROM_NP[data.dtype]._legacy[:-6]} can't be cast to the desired "
                    f"output type {self.dtype._legacy[:-6]}"
                )
        if data.shape != self._data.shape:  # the other operand broadcast self to a new shape
            raise RuntimeError(
                f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                f"{list(data.shape)}"
            )
        if mutation_contexts:  # See NOTE [Clone before mutate]
            before_write(self)
        try:
            if self._data.ndim:
                self._data[...] = data
            else:
                self._data[()] = data
        except ValueError as e:
            raise RuntimeError(
                f"in-place operation failed: {e}. An expanded tensor can't be written in place; "
                "clone() it first."
            ) from None
        self._counter()[0] += 1
        if _fw.active:  # see NOTE [Forward-mode AD]
            _fw.inplace(self, result)

    def _set_history(self, node, output_nr):
        retained = self._retains_grad
        old = self.grad_fn
        if retained and old is not None and old._retains_grad_hooks:
            # as PyTorch, the retain_grad hook moves to the new grad_fn: ``.grad`` is the
            # gradient of the tensor's current value, not also of the value it had before
            ref = old._retains_grad_hooks.get(self._output_nr)
            if ref is not None and ref() is self:
                del old._retains_grad_hooks[self._output_nr]
        self.grad_fn = node
        self._output_nr = output_nr
        self._requires_grad = node is not None or self._requires_grad
        if retained and node is not None:
            node._add_retains_grad_hook(self, output_nr)

    def add_(self, other, *, alpha=1):
        return self._inplace(OPS["add"], (_arg(other),), {"alpha": alpha})

    def sub_(self, other, *, alpha=1):
        return self._inplace(OPS["sub"], (_sub_arg(self, other),), {"alpha": alpha})

    def mul_(self, other):
        return self._inplace(OPS["mul"], (_arg(other),), _NO_ATTRS)

    def div_(self, other):
        return self._inplace(OPS["div"], (_arg(other),), _NO_ATTRS)

    def floor_divide_(self, other):
        return self._inplace(_op("floor_divide"), (_arg(other),), _NO_ATTRS)

    def remainder_(self, other):
        other = _arg(other)
        if isinstance(other, Tensor):
            return self._inplace(_op("remainder"), (other,), _NO_ATTRS)
        return self._inplace(_op("remainder_scalar"), (), {"other": other})

    def clamp_(self, min=None, max=None):
        if min is None and max is None:
            raise RuntimeError("clamp_(): At least one of 'min' or 'max' must not be None")
        return self._inplace(_op("clamp"), (), {"min": _opt_scalar(min), "max": _opt_scalar(max)})

    def bernoulli_(self, p=0.5):
        """Fill with 1s drawn with probability ``p`` (a number or a tensor broadcast to self)
        and 0s otherwise, keeping the dtype."""
        if isinstance(p, Tensor):
            return self._inplace(_op("bernoulli_tensor"), (p,), _NO_ATTRS)
        return self._inplace(_op("bernoulli_float"), (), {"p": _scalar(p)})

    def exp_(self):
        return self._inplace(_op("exp"), (), _NO_ATTRS)

    def relu_(self):
        return self._inplace(_op("relu"), (), _NO_ATTRS)

    def zero_(self):
        return self._inplace(_op("zero"), (), _NO_ATTRS)

    def fill_(self, value):
        if isinstance(value, Tensor):
            if value.dim():
                raise RuntimeError(
                    f"fill_ only supports 0-dimension value tensor but got tensor with "
                    f"{value.dim()} dimensions."
                )
            return self.copy_(value)
        return self._inplace(_op("fill"), (), {"value": _scalar(value)})

    def copy_(self, src):
        src = _tensor_arg(src, self)
        if src._device != self._device:
            src = src.to(self._device)
        try:
            np.broadcast_shapes(src.shape, self.shape)
        except ValueError:
            raise RuntimeError(
                f"The size of tensor a ({list(self.shape)}) must match the size of tensor b "
                f"({list(src.shape)}): copy_() can't broadcast the source to the destination"
            ) from None
        return self._inplace(_op("copy"), (src,), _NO_ATTRS)


# as PyTorch: writing one number everywhere (``fill_(2.0)``, ``zero_()``) is allowed where
# elements share memory; every other in-place op there raises (``_check_no_internal_overlap``)
_OVERLAP_ALLOWED = frozenset({"fill", "zero"})


def _check_not_inference(t):
    if getattr(t, "_inference", False):
        raise RuntimeError(
            "Inplace update to inference tensor outside InferenceMode is not allowed.You can make "
            "a clone to get a normal tensor before doing inplace update.See "
            "https://github.com/pytorch/rfcs/pull/17 for more details."
        )


def _inplace_shape_error(op, self, other, err):
    """PyTorch's error for ``self.op_(other)`` whose shapes do not fit ``self``."""
    if not isinstance(other, Tensor):
        return RuntimeError(f"{op.name}_(): {err}")
    try:
        shape = np.broadcast_shapes(self.shape, other.shape)
    except ValueError:
        return RuntimeError(f"{op.name}_(): {_shapes_message((self, other), err)}")
    return RuntimeError(
        f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(shape)}"
    )


_PRESERVE = {"memory_format": "preserve"}


_INPLACE_UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide}


# NOTE [Blocked scaled updates]
# ``p.sub_(g, alpha=lr)`` is ``p -= lr * g``: written plainly, ``lr * g`` is a temporary the
# size of the parameter, which the allocator often takes fresh from the system (page faults)
# and which leaves the cache before the subtraction reads it back. For a large contiguous
# operand that does not overlap ``p``, the same two ufuncs run block by block through one small
# scratch buffer that stays in cache: the same operations on each element, so the same result,
# bit for bit.
_BLOCK = 16384  # elements


def _ufunc_inplace(ufunc, data, operand, alpha):
    if alpha == 1:
        ufunc(data, operand, out=data)
    else:
        _scaled_inplace(ufunc, data, operand, alpha)


def _scaled_inplace(ufunc, data, operand, alpha):
    """``ufunc(data, operand * alpha, out=data)``; see NOTE [Blocked scaled updates]."""
    if (
        type(operand) is not _ndarray
        or type(data) is not _ndarray
        or operand.size <= _BLOCK
        or operand.shape != data.shape
        or not (data.flags.c_contiguous and operand.flags.c_contiguous)
        or np.may_share_memory(data, operand)
    ):
        ufunc(data, operand * alpha, out=data)  # same dtype: a Python number stays weak
        return
    flat, src = data.reshape(-1), operand.reshape(-1)
    scratch = np.empty(_BLOCK, data.dtype)
    for start in range(0, flat.size, _BLOCK):
        part = src[start : start + _BLOCK]
        scaled = scratch[: part.size]
        np.multiply(part, alpha, out=scaled)
        block = flat[start : start + _BLOCK]
        ufunc(block, scaled, out=block)


class CopySlices(Node):
    """The base's node after an in-place op on one of its views (PyTorch's ``CopySlices``).

    It wraps the in-place op's node ``fn``: the gradient for the view's region goes through
    ``fn``; the rest of the base's gradient passes through unchanged.
    """

    __slots__ = ("fn", "chain", "layout")
    _name = "CopySlices"

    def __init__(self, base_edge, fn, chain, base_meta, layout="contiguous"):
        super().__init__((base_edge,) + tuple(fn._next_edges[1:]))
        self.fn = fn
        self.chain = chain
        self.layout = layout  # the base's strides: the chain of views replays on that layout
        self._input_metadata_ = (base_meta,)

    def apply(self, grads):
        grad = grads[0]
        if grad is None:
            return [None] * len(self._next_fns)
        # as PyTorch: the base's gradient is a copy of ``grad`` whose view region is then
        # overwritten in place with ``fn``'s gradient; with create_graph that copy_ is itself
        # recorded, so a double backward goes through CopySlices again
        result = grad._clone(self.layout)  # (PyTorch: new_empty_strided(base's strides))
        grad_slice = _apply_view_chain(result, self.chain)
        res = list(self.fn.apply([grad_slice.clone()]))
        region = res[0] if res and res[0] is not None else zeros_like(grad_slice)
        if region.shape != grad_slice.shape:
            region = sum_to(region, grad_slice.shape)
        grad_slice.copy_(region)
        return [result] + res[1:]

    def release_variables(self):
        self.fn.release_variables()


def _regenerate_views(base, modified):
    """Give each live view of ``base`` but ``modified`` a grad_fn through base's new history."""
    views = getattr(base, "_views", None)
    if not views:
        return
    _mark_base_changed(base, modified)
    with _EnableGrad():
        for ref in tuple(views):
            view = ref()
            if view is None or view is modified or view._view_chain is None:
                continue
            if _made_without_grad(view):  # (see NOTE [Views made in no-grad mode])
                continue
            view._set_history(_apply_view_chain(base, view._view_chain).grad_fn, 0)


def _apply_view_chain(t, chain):
    for view_op, attrs in chain:
        t = _dispatch(OPS[view_op], (t,), attrs)
    return t
