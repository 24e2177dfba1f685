"""Custom autograd Functions, and the engine-built nodes that are not rows of the op table.

Mirrors ``torch/autograd/function.py`` (``Function``, ``FunctionCtx``, ``once_differentiable``)
and ``torch/csrc/autograd/functions/tensor.h`` (``CopySlices``, ``ToCopyBackward0`` across
devices). As in PyTorch, ``ctx`` *is* the node: ``y.grad_fn`` of a custom Function's output is
the object its ``forward`` received as ``ctx``, named ``<ClassName>Backward``.
"""

from __future__ import annotations

import functools
import inspect
import math
import warnings

from nbgrad._graph import anomaly_state as _anomaly
from nbgrad._graph.forward_grad import _state as _fw
from nbgrad._graph.grad_state import _state as _grad_state
from nbgrad._graph.node import Edge, InputMetadata, Node
from nbgrad._graph.saved_tensor import ERR_FREED, FREED, SavedTensor, unpack_saved
from nbgrad._tensor.dispatch import _edge_of
from nbgrad._tensor.inplace import CopySlices  # (re-exported: PyTorch lists it here)
from nbgrad._tensor.views import _IN_CUSTOM_FUNCTION, _multiple_views_message
from nbgrad.autograd.forward_ad import _function_input_tangents, _function_output_tangents
from nbgrad.backend import CPU
from nbgrad.dtypes import float32
from nbgrad.tensor import Tensor, zeros

__all__ = [
    "Function",
    "FunctionCtx",
    "InplaceFunction",
    "once_differentiable",
    "BackwardCFunction",
    "CopySlices",
]


# ``ctx._saved`` after ``saved_tensors`` was read with ``clear_saved_tensors_on_access``
_CLEARED = object()
ERR_CLEARED = (
    "saved_tensors can only be accessed once when clear_saved_tensors_on_access=True is set on "
    "the autograd.Function. Either access saved_tensors only once, or set "
    "clear_saved_tensors_on_access=False."
)


class FunctionCtx:
    """What ``forward`` can tell ``backward`` (the ``ctx`` argument)."""

    def save_for_backward(self, *tensors):
        """Save tensors (or None) for ``backward``; read them back with ``saved_tensors``."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    "save_for_backward can only save variables, but argument "
                    f"{tensors.index(t)} is of type {type(t).__name__}"
                )
        self.to_save = tensors

    def mark_dirty(self, *args):
        """Mark input tensors that ``forward`` modified in place."""
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args):
        """Mark outputs that have no gradient."""
        self.non_differentiable = args

    def set_materialize_grads(self, value: bool):
        """Whether ``None`` gradients reach ``backward`` as zeros (default True)."""
        self.materialize_grads = value

    def save_for_forward(self, *tensors):
        self.saved_for_forward = tensors


class BackwardCFunction(Node, FunctionCtx):
    """The node of a custom Function (``<ClassName>Backward``); also its ``ctx``."""

    _forward_cls = None

    def __init__(self):
        super().__init__(())
        self.to_save = ()
        self.dirty_tensors = ()
        self.non_differentiable = ()
        self.materialize_grads = True
        # PyTorch's private switch: None (not zeros) for the outputs that have no gradient
        # (marked non-differentiable, or not floating point) even when grads are materialized
        self._materialize_non_diff_grads = True
        self._non_diff_outputs = ()
        self.needs_input_grad = ()
        self._saved = None
        self._input_positions = ()
        self._n_args = 0
        self._tensor_outputs = ()  # the positions of the outputs that are tensors

    def name(self):
        return type(self).__name__

    @property
    def saved_tensors(self):
        """The tensors passed to ``save_for_backward``, checked for in-place changes.

        With ``clear_saved_tensors_on_access = True`` on the Function, the first access also
        releases them (the caller's references are then the only ones), and a second raises.
        """
        saved = self._saved
        if saved is None:  # inside forward, before apply() packs them
            return tuple(self.to_save or ())
        if saved is _CLEARED:
            raise RuntimeError(ERR_CLEARED)
        if saved is FREED:
            raise RuntimeError(ERR_FREED)
        out = tuple(None if s is None else unpack_saved(s, self) for s in saved)
        if getattr(self._forward_cls, "clear_saved_tensors_on_access", False):
            self._saved = _CLEARED
            for s in saved:
                if s is not None:
                    s._free()
        return out

    @property
    def _raw_saved_tensors(self):
        """The SavedTensor objects of ``save_for_backward`` (PyTorch's ``_raw_saved_tensors``)."""
        saved = self._saved
        if saved is FREED:
            raise RuntimeError(ERR_FREED)
        if saved is None or saved is _CLEARED:
            return ()
        return tuple(SavedTensor(None) if s is None else s for s in saved)

    @property
    def saved_variables(self):
        """The old name of ``saved_tensors`` (deprecated, as in PyTorch)."""
        warnings.warn(
            "'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning, stacklevel=2
        )
        return self.saved_tensors

    def release_variables(self):
        saved = self._saved
        if saved is not None and saved is not _CLEARED:
            if saved is not FREED:
                for s in saved:
                    if s is not None:
                        s._free()
            self._saved = FREED

    def apply(self, grads):
        cls = self._forward_cls
        if self.materialize_grads:
            keep_none = () if self._materialize_non_diff_grads else self._non_diff_outputs
            tensor_outputs = self._tensor_outputs
            grads = [
                zeros(m.shape, dtype=m.dtype, device=m.device)
                if g is None and k not in keep_none and k in tensor_outputs
                else g
                for k, (g, m) in enumerate(zip(grads, self._input_metadata_))
            ]
        results = _backward_or_vjp(cls)(self, *grads)
        if not isinstance(results, tuple):
            results = (results,)

        for r in results:
            if r is not None and not isinstance(r, Tensor):
                raise RuntimeError(
                    f"function {self.name()} returned a {type(r).__name__}: expected Variable "
                    "or None (a Tensor or None per input of forward)"
                )
        n = self._n_args
        if len(results) != n:
            if len(results) > n and all(r is None for r in results[n:]):
                results = results[:n]
            else:
                raise RuntimeError(
                    f"function {self.name()} returned an incorrect number of gradients (expected "
                    f"{n}, got {len(results)})"
                )
        out = []
        for pos in self._input_positions:
            out.append(results[pos])
        for pos, r in enumerate(results):
            if r is not None and pos not in self._input_positions:
                raise RuntimeError(
                    f"function {self.name()} returned a gradient different than None at position "
                    f"{pos + 1}, but the corresponding forward input was not a Variable"
                )
        return out


def _backward_or_vjp(cls):
    """The backward formula a Function defines, as ``backward`` or as ``vjp`` (PyTorch's
    ``BackwardCFunction._get_user_fn``)."""
    backward, vjp = cls.backward, cls.vjp
    if backward is not Function.backward and vjp is not Function.vjp:
        raise RuntimeError(
            "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You "
            "should only implement one of them."
        )
    return vjp if vjp is not Function.vjp else backward


class _FunctionMeta(type):
    """Gives each Function subclass its node class, ``<ClassName>Backward``."""

    def __init__(cls, name, bases, attrs):
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class Function(metaclass=_FunctionMeta):
    """Base class for custom differentiable operations (``torch.autograd.Function``).

    Example:
        >>> import nbgrad as ng
        >>> class Square(ng.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         (x,) = ctx.saved_tensors
        ...         return 2 * x * grad
        >>> x = ng.tensor([3.0], requires_grad=True)
        >>> y = Square.apply(x)
        >>> y.grad_fn.name()
        'SquareBackward'
        >>> y.backward(); x.grad
        tensor([6.])
    """

    # NOTE [Instantiating a Function]
    # As in PyTorch, a Function subclass may still be instantiated (old code does, to call its
    # methods directly), with a DeprecationWarning; calling the instance, the legacy
    # ``MyFunction()(x)`` of PyTorch before 0.4, raises. Everything goes through ``apply``.
    def __init__(self, *args, **kwargs):
        warnings.warn(
            f"{self.__class__} should not be instantiated. Methods on autograd functions "
            "are all static, so you should invoke them on the class itself. "
            "Instantiating an autograd function will raise an "
            "error in a future version of PyTorch.",
            DeprecationWarning,
            stacklevel=2,
        )

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. "
            "Please use new-style autograd function with static forward method. "
            "(Example: https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
        )

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    vjp = backward  # an alias: a Function defines one or the other (``_backward_or_vjp``)

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """The tangents of the outputs from those of the inputs (forward-mode AD); see NOTE
        [A custom Function's forward mode]."""
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with "
            "forward mode AD."
        )

    # True: ``ctx.saved_tensors`` releases them when read, so that backward can free each
    # tensor as soon as it is done with it; a second read raises
    clear_saved_tensors_on_access = False

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Fill ``ctx`` from ``inputs`` and ``output``: for a ``forward(*args)`` without ctx
        (PyTorch 2's style). Not overridden: ``forward(ctx, *args)`` fills it itself."""
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args, **kwargs):
        setup_style = cls.setup_context is not Function.setup_context
        if setup_style:  # forward's defaults are part of ``inputs``, as PyTorch binds them
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, {}
        ctx = cls._backward_cls()
        tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        is_executable = _grad_state.enabled and any(
            args[i]._requires_grad for i in tensor_positions
        )
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        ctx._n_args = len(args)
        ctx._input_positions = tuple(tensor_positions)
        # see NOTE [A custom Function's forward mode]
        tangents = _function_input_tangents(args) if _fw.active else None
        prev = _grad_state.enabled
        _grad_state.enabled = False
        _fw.enabled = tangents is None and _fw.enabled
        _fw.refresh()
        try:
            if setup_style:
                # PyTorch 2's style: a forward without ctx, then setup_context fills it
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            _grad_state.enabled = prev
            _fw.enabled = _fw.enabled or tangents is not None
            _fw.refresh()
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        if not is_executable:
            for o in outs:  # see NOTE [Views made in no-grad mode]
                if isinstance(o, Tensor) and o._base is not None and all(o is not a for a in args):
                    o._no_grad_view = _IN_CUSTOM_FUNCTION
            if tangents is not None:
                _function_output_tangents(cls, ctx, args, tangents, outs)
            return outputs
        ctx._next_edges = tuple(_edge_of(args[i]) for i in tensor_positions)
        if _anomaly._state.enabled:
            _anomaly.record_traceback(ctx)
        dirty = _check_dirty(ctx, args, tensor_positions, outs)
        new_outs = _wrap_outputs(ctx, args, tensor_positions, outs, dirty)
        if tangents is not None:  # (while ctx still knows what forward marked)
            _function_output_tangents(cls, ctx, args, tangents, tuple(new_outs))
        _save_variables(ctx, new_outs, dirty)
        # as PyTorch, the ctx keeps no reference to what forward marked or saved (a dirty input
        # is the output: ctx -> output -> ctx would be a cycle)
        ctx.to_save = ctx.dirty_tensors = ctx.non_differentiable = None
        if getattr(cls.backward, "_once_differentiable", False):
            pass
        return new_outs[0] if single else tuple(new_outs)


def _check_dirty(ctx, args, tensor_positions, outs):
    """The checks of ``ctx.mark_dirty`` (PyTorch's ``_process_dirty`` checks in
    ``custom_function.cpp``); returns the ids of the inputs modified in place."""
    if not {id(t) for t in ctx.dirty_tensors} <= {id(o) for o in outs}:
        raise RuntimeError(
            "Some elements marked as dirty during the forward method were not returned as "
            "output. The inputs that are modified inplace must all be outputs of the Function."
        )
    input_ids = {id(args[i]) for i in tensor_positions}
    for t in ctx.dirty_tensors:
        if id(t) not in input_ids:  # PyTorch warns, and refuses it only for a view
            message = (
                "ctx.mark_dirty() received a tensor that was not an input. Only input Tensors "
                "that have been mutated should be passed to ctx.mark_dirty()."
            )
            warnings.warn(message, UserWarning, stacklevel=3)  # (the caller of apply)
            if t._base is not None:
                raise RuntimeError(message)
    dirty = {id(t) for t in ctx.dirty_tensors if id(t) in input_ids}
    n_tensor_outputs = sum(1 for o in outs if isinstance(o, Tensor))
    if n_tensor_outputs > 1 and any(
        id(args[i]) in dirty and args[i]._base is not None for i in tensor_positions
    ):
        raise RuntimeError(
            "If your Function modifies inplace an input that is a view of another Tensor, your "
            "Function cannot return more than one Tensor. This is not supported by the "
            "current autograd engine. You should either make sure the input is not a view "
            "(using .clone() for example) or make your Function only return one Tensor "
            "(potentially splitting it into two Functions: one doing the inplace that returns "
            "a single Tensor and a second one that does the other operations)."
        )
    return dirty


def _wrap_outputs(ctx, args, tensor_positions, outs, dirty):
    """Set ``ctx`` as the ``grad_fn`` of each differentiable output (PyTorch's
    ``_wrap_outputs``): an input returned as is becomes a view of it, a dirty one is rebased,
    a non-differentiable one gets no history; fills the node's input metadata."""
    non_diff = {id(t) for t in ctx.non_differentiable}
    inputs_by_id = {id(args[i]): args[i] for i in tensor_positions}
    new_outs = []
    meta = []
    non_diff_outputs = []
    positions = []  # of the tensor outputs (NOTE [Outputs that are not tensors])
    for o in outs:
        if not isinstance(o, Tensor):
            meta.append(_UNDEFINED_INPUT)
            new_outs.append(o)
            continue
        k = len(new_outs)
        positions.append(k)
        original = o
        if id(o) in dirty:
            if o._requires_grad and o.grad_fn is None:
                raise RuntimeError(
                    "a leaf Variable that requires grad has been used in an in-place operation."
                )
            base = o._base
            if base is not None and o._view_chain is None:
                raise RuntimeError(_multiple_views_message(o))
            if base is not None and base._requires_grad and base.grad_fn is None:
                raise RuntimeError(
                    "a view of a leaf Variable that requires grad is being used in an in-place "
                    "operation."
                )
        elif id(o) in inputs_by_id:
            o = o.view_as(o) if o._requires_grad else o.detach()
            o = o.detach() if id(o) in non_diff else o
        if id(original) in non_diff:
            o._requires_grad = False
            o.grad_fn = None
            non_diff_outputs.append(k)
        elif o.is_floating_point():
            # (a dirty view: its base's history goes through CopySlices, as PyTorch's
            # rebase_history; other views of what was modified see the new history)
            o._rebase_history(ctx, k) if id(original) in dirty else _set_output(o, ctx, k)
        else:
            non_diff_outputs.append(k)
        if o._base is not None and id(original) not in dirty:
            # an in-place op may not modify it: it would bypass the custom backward (NOTE
            # [Views made in no-grad mode])
            o._no_grad_view = _IN_CUSTOM_FUNCTION
        meta.append(o._metadata_tuple())
        new_outs.append(o)
    ctx._input_metadata_ = tuple(meta)
    ctx._tensor_outputs = frozenset(positions)
    ctx._non_diff_outputs = tuple(non_diff_outputs)
    return new_outs


def _save_variables(ctx, new_outs, dirty):
    """Turn what forward passed to ``ctx.save_for_backward`` into SavedTensors (PyTorch's
    ``_save_variables``)."""
    out_ids = {id(o) for o in new_outs if isinstance(o, Tensor)}
    # a saved output is named in a version error as PyTorch names it: by the Function
    # (``Exp``), not its node (``ExpBackward``)
    name = ctx._forward_cls.__name__ if ctx._forward_cls is not None else ctx.name()

    def saved(t):
        if id(t) in out_ids and t.grad_fn is ctx:
            return SavedTensor(t, is_output=True, grad_fn_name=name)
        if id(t) in out_ids and id(t) in dirty and t._base is not None:
            # a dirty view, rebased: saved as its data, standing for the view replayed on
            # the base (see NOTE [In place on a view: the saved result]); that node is held
            # here (the view may die first), in a cycle of nodes only, not of the tensor
            s = SavedTensor(t, is_output=True, grad_fn_name=name)
            s._view_grad_fn = functools.partial(_itself, t.grad_fn)
            return s
        return SavedTensor(t)

    ctx._saved = tuple(None if t is None else saved(t) for t in ctx.to_save)


class InplaceFunction(Function):
    """A ``Function`` with an ``inplace`` flag; kept only for old code, as in PyTorch (new code
    subclasses ``Function``)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


# NOTE [Outputs that are not tensors]
# As PyTorch's custom Function node, a Function's node has an input per output of ``forward``,
# tensor or not: a tensor output's ``output_nr`` is its position among all the outputs, and a
# non-tensor output has default metadata (PyTorch's ``Node::undefined_input()``: shape [],
# float32, CPU). Hooks on the node see a gradient per output, None for a non-tensor one, which
# ``materialize_grads`` leaves None.
_UNDEFINED_INPUT = InputMetadata((), float32, CPU)


def _set_output(t, node, output_nr):
    t.grad_fn = node
    t._output_nr = output_nr
    t._requires_grad = True


class Error(Node):
    """Raises when differentiated: the node over the gradients a ``once_differentiable``
    backward returns (PyTorch's ``DelayedError``, whose node is named ``Error``)."""

    __slots__ = ("msg",)
    _name = "Error"

    def __init__(self, msg, edges):
        super().__init__(edges)
        self.msg = msg

    def apply(self, grads):
        raise RuntimeError(self.msg)


def _itself(x):
    return x


def _delayed_error(msg, grad):
    """``grad`` behind an ``Error`` node that raises ``msg`` when differentiated, for a formula
    whose result has no derivative (PyTorch's ``DelayedError``); ``grad`` itself when it does not
    require grad."""
    if not grad._requires_grad:
        return grad
    err = Error(msg, (_edge_of(grad),))
    out = grad.detach()
    _set_output(out, err, 0)
    err._input_metadata_ = (out._metadata_tuple(),)
    return out


def once_differentiable(fn):
    """Decorate a custom ``backward`` that cannot itself be differentiated."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        prev = _grad_state.enabled
        _grad_state.enabled = False
        try:
            outputs = fn(ctx, *args)
        finally:
            _grad_state.enabled = prev
        if not prev:
            return outputs
        if not any(isinstance(a, Tensor) and a._requires_grad for a in args):
            return outputs
        # as PyTorch: each gradient becomes a leaf that requires grad, and one Error node over
        # them hands out aliases; differentiating through it raises
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        leaves = [o.detach().requires_grad_() if isinstance(o, Tensor) else o for o in outs]
        err = Error(
            "trying to differentiate twice a function that was marked with @once_differentiable",
            tuple(_edge_of(v) if isinstance(v, Tensor) else Edge(None, 0) for v in leaves),
        )
        wrapped = []
        meta = []
        for k, v in enumerate(leaves):
            if isinstance(v, Tensor):
                v = v.detach()
                _set_output(v, err, k)
                meta.append(v._metadata_tuple())
            else:
                meta.append(None)
            wrapped.append(v)
        err._input_metadata_ = tuple(meta)
        return wrapped[0] if single else tuple(wrapped)

    wrapper._once_differentiable = True
    return wrapper


class Resize(Function):
    """The deprecated out-of-place ``Tensor.resize``: a new shape of as many elements
    (``ResizeBackward``), as PyTorch's ``torch.autograd._functions.Resize``."""

    @staticmethod
    def forward(ctx, tensor, sizes):
        ctx.sizes = sizes
        ctx.numel = math.prod(sizes)
        if tensor.numel() != ctx.numel:
            raise RuntimeError(
                f"requested resize to {'x'.join(map(str, sizes))} ({ctx.numel} elements in "
                f"total), but the given tensor has a size of {'x'.join(map(str, tensor.size()))} "
                f"({tensor.numel()} elements). autograd's resize can only change the shape of a "
                "given tensor, while preserving the number of elements. "
            )
        ctx.input_sizes = tensor.size()
        return tensor.contiguous().view(*sizes).clone()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.contiguous().view(ctx.input_sizes), None


__all__ += ["Edge"]
