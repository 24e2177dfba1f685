"""``SavedTensor``: a tensor saved for backward, its version check, pack and unpack hooks.

Mirrors ``torch/csrc/autograd/saved_variable.h``. The hooks in force are set by
``saved_tensors_hooks`` (in ``hooks.py``).
"""

from __future__ import annotations

import weakref

from nbgrad import dtypes

from . import tensor_class as _tc
from .anomaly_state import _state as _anomaly_state
from .grad_state import _inference_tensors
from .grad_state import _state as _grad_state
from .hooks import _saved_hooks, _saved_hooks_used

__all__ = ["SavedTensor", "FREED"]

ERR_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


class _Freed:
    __slots__ = ()

    def __repr__(self):
        return "<freed>"


FREED = _Freed()


ERR_HOOKS_SET = (
    "Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one "
    "pair of hooks is allowed at a time."
)
ERR_HOOKS_FREED = (
    "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate values "
    "of the graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or if you need to "
    "access saved variables after calling backward."
)
ERR_HOOKS_NONE = "Calling register_hooks on a saved tensor with value None is forbidden"
ERR_PACK_INPLACE = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack "
    "hook can not be modified by in-place operations as this can lead to unexpected side-effects. "
    "Please open an issue if you need to perform in-place operations on the input to a pack hook."
)
ERR_INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
    "`torch.inference_mode()`."
)
ERR_DETACHED = (
    "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This is "
    "not supported, please use out-of-place `.detach()` instead"
)


class SavedTensor:
    """A tensor saved for backward (``SavedVariable``; in Python, PyTorch's
    ``torch._C._autograd.SavedTensor``, reached as ``grad_fn._raw_saved_self``).

    It remembers its version to detect in-place changes, and for a node's own output stores
    only the data, no reference to the node (no cycle). ``register_hooks(pack, unpack)`` packs
    it now; ``data`` is what it holds (the packed object once it has hooks; None once freed).
    """

    __slots__ = (
        "_tensor",
        "_data",
        "_counter",
        "_version",
        "_is_output",
        "_is_leaf",
        "_output_nr",
        "_requires_grad",
        "_device",
        "_grad_fn_name",
        "_packed",
        "_unpack_hook",
        "_weak_grad_fn",
        "_accumulator",
        "_freed",
        "_view_grad_fn",
    )

    def __init__(self, tensor, is_output=False, grad_fn_name=None):
        self._freed = False
        self._view_grad_fn = None  # see NOTE [In place on a view: the saved result]
        if tensor is None:  # PyTorch's default-constructed SavedVariable: a saved None
            self._tensor = self._data = self._packed = self._unpack_hook = None
            self._counter = self._version = self._grad_fn_name = None
            self._is_output = self._requires_grad = False
            self._is_leaf = True
            return
        if _inference_tensors.made and getattr(tensor, "_inference", False):
            raise RuntimeError(ERR_INFERENCE_SAVED)  # see NOTE [Inference tensors]
        counter = tensor._version_counter
        if counter is None:  # see NOTE [Lazy version counters]
            counter = tensor._version_counter = [0]
        self._counter = counter
        self._version = counter[0]
        self._is_output = is_output
        self._output_nr = tensor._output_nr
        self._requires_grad = tensor._requires_grad
        self._packed = None
        self._unpack_hook = None
        grad_fn = tensor.grad_fn
        self._is_leaf = grad_fn is None
        # an input saved as itself is named by its grad_fn when an error needs it (see
        # _raise_version_error); a packed one or an output by the name it has now
        self._grad_fn_name = grad_fn_name
        if _saved_hooks_used.entered and _saved_hooks.stack:
            stack = _saved_hooks.stack
            if grad_fn_name is None and grad_fn is not None:
                self._grad_fn_name = grad_fn.name()
            self._tensor = self._data = None
            if is_output:
                self._pack(stack[-1], tensor.detach(), None)
            else:
                self._pack(stack[-1], tensor, tensor)
            return
        if is_output:
            self._tensor = None
            self._data = tensor._data
            self._device = tensor._device
        else:
            self._tensor = tensor
            self._data = None
        self._weak_grad_fn = None

    @classmethod
    def _of_input(cls, tensor, saved_version):
        """The SavedTensor an input stored as itself stands for (NOTE [A saved input stored
        as itself]): ``saved_version`` is what ``saved_input_version`` gave when it was saved."""
        saved = cls.__new__(cls)
        saved._freed = False
        saved._view_grad_fn = None
        saved._tensor = tensor
        saved._data = saved._packed = saved._unpack_hook = saved._grad_fn_name = None
        saved._weak_grad_fn = None
        saved._counter = tensor._counter()
        saved._is_leaf = saved_version >= 0
        saved._version = saved_version if saved_version >= 0 else ~saved_version
        saved._is_output = False
        saved._output_nr = tensor._output_nr
        saved._requires_grad = tensor._requires_grad
        return saved

    def _pack(self, hooks, value, original):
        """``set_hooks_and_pack_data``: ``pack(value)`` in no-grad mode, which must not modify
        ``value`` in place; remembers what the unpacked tensor will stand for: ``original``'s
        grad_fn or leaf (None for a node's output, which stands for the node's)."""
        pack, unpack = hooks
        self._unpack_hook = unpack
        stack = _saved_hooks.stack
        _saved_hooks.stack = ()  # a pack hook's own saves are not packed again
        prev = _grad_state.enabled
        _grad_state.enabled = False
        try:
            self._packed = pack(value)
        finally:
            _grad_state.enabled = prev
            _saved_hooks.stack = stack
        if self._counter[0] != self._version:
            raise RuntimeError(ERR_PACK_INPLACE)
        # what the unpacked tensor will be, for autograd: the original (see NOTE [Unpacked is
        # the original])
        grad_fn = original.grad_fn if original is not None else None
        self._weak_grad_fn = grad_fn
        self._accumulator = None
        if original is not None and grad_fn is None and self._requires_grad:
            self._accumulator = weakref.ref(original._get_grad_accumulator())

    # -- the Python object (``torch._C._autograd.SavedTensor``) ---------------------------------
    def register_hooks(self, *args):
        """Pack the saved tensor with ``pack_hook`` now; backward unpacks it with
        ``unpack_hook``. Once per saved tensor, before it is freed."""
        if len(args) != 2 or not all(callable(a) for a in args):
            raise TypeError(
                "register_hooks(): incompatible function arguments. The following argument "
                "types are supported:\n    1. (self: SavedTensor, arg0: Callable, "
                f"arg1: Callable) -> None\n\nInvoked with: {self!r}, "
                + ", ".join(repr(a) for a in args)
            )
        if self._unpack_hook is not None:
            raise RuntimeError(ERR_HOOKS_SET)
        if self._freed:
            raise RuntimeError(ERR_HOOKS_FREED)
        if self._counter is None:
            raise RuntimeError(ERR_HOOKS_NONE)
        original = self._tensor
        if original is not None:  # the original: packed detached, standing for it
            if self._grad_fn_name is None and original.grad_fn is not None:
                self._grad_fn_name = original.grad_fn.name()
            self._requires_grad = original._requires_grad
            self._output_nr = original._output_nr
            value = original.detach()
        else:  # a node's output: its data, sharing its version counter
            value = self._data_tensor()
        self._tensor = self._data = None
        self._pack(args, value, original)

    @property
    def data(self):
        """What is saved: the packed object (with hooks), the original tensor, or a node's
        output detached; None once freed."""
        if self._freed:
            return None
        if self._unpack_hook is not None:
            return self._packed
        if self._tensor is not None or not self._is_output:
            return self._tensor
        return self._data_tensor()

    @property
    def unpack_hook(self):
        return self._unpack_hook

    # -- read-only facts, for tools (never raise, never unpack) --------------------------------
    @property
    def shape(self) -> tuple:
        """The saved tensor's shape (``()`` once freed; a packed object's own ``shape``)."""
        return tuple(self._shape())

    @property
    def dtype(self):
        """The saved tensor's dtype, or None (a saved None, a freed or packed one)."""
        src = self._tensor._data if self._tensor is not None else self._data
        return None if src is None else dtypes.from_numpy_dtype(src.dtype)

    @property
    def version(self):
        """The version counter's value when the tensor was saved (None for a saved None);
        backward raises if the tensor's version differs then."""
        return self._version

    @property
    def is_output(self) -> bool:
        """Whether the node saved its own output (stored as data only: no cycle)."""
        return bool(self._is_output)

    @property
    def is_freed(self) -> bool:
        """Whether the graph was released (after a backward without ``retain_graph``)."""
        return self._freed

    def _data_tensor(self):
        """A saved output's data as a tensor outside the graph (PyTorch's ``tensor_data()``)."""
        t = _tc._wrap(self._data, self._device)
        t._version_counter = self._counter  # in place on it bumps the output's version
        return t

    def _free(self):
        """Drop what is saved (``SavedVariable::reset_data``): the graph was released."""
        self._freed = True
        self._tensor = self._data = self._packed = self._unpack_hook = None
        self._weak_grad_fn = None

    # -- backward -----------------------------------------------------------------------------
    def unpack(self, node):
        """The saved tensor, checked against in-place changes (``SavedVariable::unpack``)."""
        if self._unpack_hook is not None:  # as PyTorch: no version check through hooks
            t = self._unpack_hook(self._packed)
            if not isinstance(t, _tc._Tensor):
                raise TypeError(
                    f"Output of saved tensor unpack_hook expected to be a Tensor but got result "
                    f"of type {type(t).__name__}"
                )
            # NOTE [Unpacked is the original]
            # As ``SavedVariable::unpack``: whatever the hooks did to the value, the unpacked
            # tensor stands for the tensor that was saved, so a gradient taken through it (a
            # double backward) flows to the original's grad_fn or leaf, never through the
            # pack hook's own ops.
            if self._is_output:
                return t._alias_with_grad_fn(*self._output_of(node))
            if self._weak_grad_fn is not None:
                return t._alias_with_grad_fn(self._weak_grad_fn, self._output_nr)
            if not self._requires_grad and not t._requires_grad:
                return t  # nothing to stand for: the hook's tensor itself, as PyTorch
            acc = self._accumulator() if self._accumulator is not None else None
            return t._alias_as_leaf(self._requires_grad, acc)
        if self._freed:
            raise RuntimeError(ERR_FREED)
        if self._counter is None:  # a saved None
            return None
        tensor = self._tensor
        if tensor is not None and tensor.grad_fn is None and not self._is_leaf:
            raise RuntimeError(ERR_DETACHED)
        if self._counter[0] != self._version:
            self._raise_version_error()
        if self._is_output:
            owner, output_nr = self._output_of(node)
            return _tc._Tensor._from_saved_output(
                self._data, self._device, owner, output_nr, self._counter
            )
        return tensor

    # NOTE [In place on a view: the saved result]
    # An in-place op on a view that saves its result (``relu_``) is wrapped in CopySlices, and
    # the view's grad_fn is then the view op replayed on the base. As PyTorch's SavedVariable
    # with ``is_inplace_on_view``, the saved result stands for the view as it is after the op
    # (a weak reference to that grad_fn), not for the wrapped node: a double backward through
    # the result goes through CopySlices, which runs the wrapped node inside, so the wrapped
    # node is never also a node of the graph (where it would run, and be released, twice).
    def _output_of(self, node):
        """The node and output number an unpacked saved output stands for."""
        ref = self._view_grad_fn
        if ref is not None:
            fn = ref()
            if fn is not None:
                return fn, 0
        return node, self._output_nr

    def _mark_inplace_on_view(self, view_grad_fn):
        self._view_grad_fn = weakref.ref(view_grad_fn)

    def _raise_version_error(self):
        shape = list(self._shape())
        dtype = self._dtype_name()
        # as PyTorch: a saved input is named by its grad_fn now (the in-place op that changed
        # it), a saved output by the node that produced it
        name, output_nr = self._grad_fn_name, self._output_nr
        if self._tensor is not None and self._tensor.grad_fn is not None:
            name, output_nr = self._tensor.grad_fn.name(), self._tensor._output_nr
        which = f", which is output {output_nr} of {name}," if name else ""
        if _anomaly_state.enabled:  # the warning above the error shows the forward traceback
            hint = (
                "the backtrace further above shows the operation that failed to compute its "
                "gradient. The variable in question was changed in there or anywhere later. "
                "Good luck!"
            )
        else:
            hint = (
                "enable anomaly detection to find the operation that failed to compute its "
                "gradient, with nbgrad.autograd.set_detect_anomaly(True)."
            )
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [nbgrad.{dtype} {shape}]{which} is at version "
            f"{self._counter[0]}; expected version {self._version} instead. Hint: {hint}"
        )

    def _shape(self):
        if self._tensor is not None:
            return self._tensor.shape
        if self._data is not None:
            return self._data.shape
        return getattr(self._packed, "shape", ())

    def _dtype_name(self):
        src = self._tensor._data if self._tensor is not None else self._data
        if src is None:
            return "Tensor"
        return dtypes.from_numpy_dtype(src.dtype)._legacy


def unpack_saved(value, node):
    """Unpack one saved slot: a plain value, a SavedTensor, or FREED (raises)."""
    if type(value) is SavedTensor:
        return value.unpack(node)
    if value is FREED:
        raise RuntimeError(ERR_FREED)
    return value
