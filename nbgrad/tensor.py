"""``Tensor``: an array on a device plus its place in the autograd graph.

Mirrors ``torch/_tensor.py``: the class with its autograd metadata (``requires_grad``,
``grad``, ``grad_fn``, hooks, ``backward``), conversions and ``detach``. Its other methods are
inherited from the modules of :mod:`nbgrad._tensor`, split by job: ``math_methods``,
``shape_methods`` (views and indexing), ``inplace``; every op goes through
:func:`nbgrad._tensor.dispatch._dispatch`, which runs a row of the op table
(:mod:`nbgrad.derivatives`).
"""

from __future__ import annotations

import warnings
from weakref import ref as _weakref

import nbgrad
import nbgrad._tensor as _parts
from nbgrad import backend, dtypes
from nbgrad._graph import forward_grad as _forward_grad
from nbgrad._graph import tensor_class as _tc
from nbgrad._graph.accumulate_grad import AccumulateGrad
from nbgrad._graph.grad_state import _inference_tensors
from nbgrad._graph.grad_state import _state as _grad_state
from nbgrad._graph.hooks import HookList, RemovableHandle
from nbgrad._graph.node import InputMetadata
from nbgrad._tensor import legacy_types as _legacy_types
from nbgrad._tensor.conversion import (
    _is_inference,
    _set_inference,
    as_tensor,
    from_dlpack,
    from_numpy,
    tensor,
)
from nbgrad._tensor.creation import (
    arange,
    cat,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    stack,
    where,
    zeros,
    zeros_like,
)
from nbgrad._tensor.dispatch import (
    _FROM_NP,
    Size,
    _check_device,
    _dim,
    _dispatch,
    _op,
    _to_device,
    _weakref_type,
    _wrap,
)
from nbgrad._tensor.index_methods import IndexMethods
from nbgrad._tensor.inplace import _PRESERVE, InplaceMethods
from nbgrad._tensor.inplace_variants import InplaceVariantMethods
from nbgrad._tensor.legacy_types import legacy_new
from nbgrad._tensor.linalg_methods import LinalgMethods
from nbgrad._tensor.math_methods import MathMethods
from nbgrad._tensor.memory_formats import (
    _format_strides,
    _is_contiguous_as,
    contiguous_format,
    preserve_format,
)
from nbgrad._tensor.printing import _format_tensor
from nbgrad._tensor.reduction_methods import ReductionMethods
from nbgrad._tensor.shape_methods import ShapeMethods
from nbgrad._tensor.tangents import propagate as _propagate_tangents  # noqa: F401 (binds them)
from nbgrad._tensor.views import (
    _INFERENCE,
    _NO_GRAD,
    _check_no_internal_overlap,
    _NoGrad,
    _track_view,
)
from nbgrad.backend import CPU, Device

__all__ = [
    "Tensor",
    "Size",
    "tensor",
    "as_tensor",
    "from_numpy",
    "from_dlpack",
    "zeros",
    "ones",
    "full",
    "empty",
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
    "rand",
    "randn",
    "randint",
    "arange",
    "linspace",
    "eye",
    "manual_seed",
    "cat",
    "stack",
    "where",
]

_SAME_DEVICE = "Please ensure that the gradient and the tensor are on the same device"

# NOTE [Views made in no-grad mode]
# As in PyTorch, an in-place op that would be recorded (grad mode on, a tensor that requires
# grad involved) may not modify a view made in no-grad mode, or a view made from one: whether
# the view should see the op's history is ambiguous, so it is an error that says how to choose
# (checked before the leaf checks, as PyTorch does). In place inside no_grad, or on the base
# itself, stays allowed. As PyTorch, such a view of a tensor that requires grad requires grad
# too, yet is a leaf with no gradient edge: ops on it are recorded, but no gradient reaches it
# or its base, and hooks registered on it never run. Once its base (or another view of the
# base) is modified in place by a recorded op, reading its ``grad_fn`` (so ``is_leaf``, or an op
# that records) raises PyTorch's error for a view on rebase: the view's class becomes one whose
# ``grad_fn`` raises (``_mark_base_changed``), so that no ordinary tensor pays for the check.
# (PyTorch raises too after a change to the base made under no_grad, which nbgrad sees only
# when printing: ``grad_fn=<Invalid>``.)
# (PyTorch's CreationMeta: the kinds of view an in-place op may not modify; odd: made from one)


# ---- Tensor -----------------------------------------------------------------------------------
class Tensor(
    MathMethods,
    ShapeMethods,
    LinalgMethods,
    ReductionMethods,
    IndexMethods,
    InplaceMethods,
    InplaceVariantMethods,
):
    """A multi-dimensional array that can record the operations applied to it.

    Example:
        >>> import nbgrad as ng
        >>> x = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
        >>> y = (x * x).sum()
        >>> y.backward()
        >>> x.grad
        tensor([2., 4., 6.])
    """

    __slots__ = (
        "_data",
        "_device",
        "_requires_grad",
        "grad_fn",
        "_grad",
        "_output_nr",
        "_version_counter",
        "_base",
        "_view_chain",
        "_retains_grad",
        "_acc",  # the AccumulateGrad: weakly, or strongly once it has hooks
        "_post_accumulate_grad_hooks",
        "_views",  # on a base: weakrefs to its views (see NOTE [Views of a modified base])
        "_no_grad_view",  # on a view: made in no-grad mode, or from such a view (NOTE below)
        "_legacy_backward_hooks",
        "_view_version",  # on a no-grad view that requires grad: the version it was made at
        "_inference",  # set on an inference tensor only (see NOTE [Inference tensors])
        "_grad_dtype",  # on a leaf whose grad_dtype was set (see NOTE [grad_dtype])
        "_fw_grad",  # set on a dual tensor only: its tangent (see NOTE [Forward-mode AD])
        "__weakref__",
    )

    __array_priority__ = 1000  # numpy scalars defer to Tensor's reflected operators

    def __init__(self, *args, **kwargs):
        """PyTorch's legacy constructor, of the default dtype on the CPU: ``Tensor(2, 3)``
        (uninitialised), ``Tensor([1, 2])`` (data), ``Tensor()`` (empty); see NOTE [Legacy
        constructors] in ``nbgrad/_tensor/legacy_types.py``. New code uses ``nbgrad.tensor`` and the
        creation functions."""
        made = legacy_new(dtypes.get_default_dtype(), CPU, args, kwargs)
        for slot in _TENSOR_SLOTS:
            if hasattr(made, slot):  # optional slots (``_views``) may be unset
                setattr(self, slot, getattr(made, slot))
        if self._base is not None:  # ``Tensor(t)``: an alias, a view of ``t``
            _track_view(self._base, self)

    @property
    def _backward_hooks(self):
        """PyTorch's legacy hook dict: None until set; stored, not called (hooks are added with
        ``register_hook``)."""
        return getattr(self, "_legacy_backward_hooks", None)

    @_backward_hooks.setter
    def _backward_hooks(self, hooks):
        self._legacy_backward_hooks = hooks

    @_backward_hooks.deleter
    def _backward_hooks(self):
        raise RuntimeError("Deletion of _backwards_hooks not allowed!")

    @property
    def _grad_fn(self):
        """PyTorch's alias of ``grad_fn``."""
        return self.grad_fn

    @_grad_fn.deleter
    def _grad_fn(self):
        raise RuntimeError("Deletion of _grad_fn not allowed. Detach tensor instead!")

    # -- metadata ---------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_dim(dim, self._data.ndim)]

    def dim(self) -> int:
        return self._data.ndim

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    def nelement(self) -> int:
        return int(self._data.size)

    def __len__(self):
        if not self._data.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    @property
    def dtype(self):
        return _FROM_NP[self._data.dtype]

    @property
    def device(self) -> Device:
        return self._device

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f"

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.deleter
    def requires_grad(self):
        raise RuntimeError("requires_grad must be a bool")

    @requires_grad.setter
    def requires_grad(self, value):
        if self.grad_fn is not None:  # as PyTorch, the setter refuses either value on a non-leaf
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables."
                + (
                    ""
                    if value
                    else " If you want to use a computed variable in a subgraph that "
                    "doesn't require differentiation use var_no_grad = var.detach()."
                )
            )
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` on a leaf in place; returns self."""
        if not isinstance(requires_grad, bool):
            raise TypeError(f"requires_grad must be a bool, got {type(requires_grad).__name__}")
        if self.grad_fn is not None:
            if requires_grad:
                return self
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        if requires_grad and _is_inference(self) and not _grad_state.inference:
            raise RuntimeError(
                "Setting requires_grad=True on inference tensor outside InferenceMode is not "
                "allowed."
            )
        if requires_grad and self._data.dtype.kind not in "fc":
            raise RuntimeError(
                "Only Tensors of floating point and complex dtype can require gradients "
                f"(got {self.dtype}). Convert it first, e.g. t.float().requires_grad_()"
            )
        self._requires_grad = requires_grad
        return self

    @property
    def grad(self):
        if self.grad_fn is not None and not self._retains_grad:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
                ".grad attribute won't be populated during autograd.backward(). If you indeed "
                "want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() "
                "on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
                "you access the leaf Tensor instead.",
                UserWarning,
                stacklevel=2,
            )
        return self._grad

    @grad.setter
    def grad(self, value):
        """Checked as PyTorch's ``THPVariable_set_grad``, in its order."""
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    "assigned grad expected to be a Tensor or None but got grad of type "
                    f"{type(value).__name__}"
                )
            if value is self:
                raise RuntimeError("can't assign Variable as its own grad")
            grad_dtype = getattr(self, "_grad_dtype", self.dtype)
            if grad_dtype is not None and value.dtype is not grad_dtype:
                raise RuntimeError(
                    "attempting to assign a gradient with dtype "
                    f"'{dtypes.type_meta_name(value.dtype)}' to a tensor with grad_dtype "
                    f"'{grad_dtype._legacy[:-6]}'. The gradient must match the tensor's "
                    "grad_dtype (defaults to the tensor's dtype). You can set the tensor's "
                    "grad_dtype attribute with a specific dtype, or None to allow any dtype. Set "
                    "grad_dtype with caution. Diverging the dtypes of a tensor and its gradient "
                    "may break downstream systems that assume they match."
                )
            there, here = value._device, self._device
            if there.type != here.type:
                raise RuntimeError(
                    f"attempting to assign a gradient with device type '{there.type}' to a tensor "
                    f"with device type '{here.type}'. {_SAME_DEVICE}"
                )
            if there != here:
                raise RuntimeError(
                    f"attempting to assign a gradient located on device with index "
                    f"'{there.index}' to a tensor located on device with index '{here.index}'. "
                    f"{_SAME_DEVICE}"
                )
            if value.shape != self.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor "
                    f"of size '{list(self.shape)}'. Please ensure that the gradient and the "
                    "tensor are the same size"
                )
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None  # as PyTorch: ``del t.grad`` is ``t.grad = None``

    # NOTE [grad_dtype]
    # As PyTorch's: a leaf's gradient has the leaf's dtype unless ``grad_dtype`` says another,
    # or None for any. The leaf's AccumulateGrad expects that dtype (its input metadata), so the
    # engine casts a gradient of another dtype to it, as to any node's input; with None it casts
    # nothing (``Engine._validate`` asks the leaf). Only a leaf has one.
    @property
    def grad_dtype(self):
        if self.grad_fn is not None:
            raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
        return getattr(self, "_grad_dtype", self.dtype)

    @grad_dtype.setter
    def grad_dtype(self, value):
        if self.grad_fn is not None:
            raise RuntimeError("grad_dtype can only be set on leaf tensors.")
        value = None if value is None else dtypes.as_dtype(value)
        grad = self._grad
        if grad is not None and value is not None and grad.dtype is not value:
            raise RuntimeError(
                f"Cannot set grad_dtype to '{value._legacy[:-6]}' because there is already a "
                f"gradient with dtype '{dtypes.type_meta_name(grad.dtype)}'. Please clear the "
                "gradient (.grad = None) before changing grad_dtype, or ensure the new "
                "grad_dtype matches the existing gradient's dtype."
            )
        self._grad_dtype = value
        acc = self._grad_accumulator
        if acc is not None:
            acc._input_metadata_ = (self._metadata_tuple(value or self.dtype),)

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def output_nr(self) -> int:
        return self._output_nr

    # NOTE [Lazy version counters]
    # A tensor's version counter (a one-item list shared with its views, its detached aliases
    # and the SavedTensors that remember it) is made on first need. Most results of a forward
    # pass are never viewed, saved or modified in place: they go without one, which is one
    # object fewer per op for the cyclic garbage collector to scan in a long graph.
    def _counter(self):
        counter = self._version_counter
        if counter is None:
            counter = self._version_counter = [0]
        return counter

    @property
    def _version(self) -> int:
        if _is_inference(self):
            raise RuntimeError("Inference tensors do not track version counter.")
        counter = self._version_counter
        return 0 if counter is None else counter[0]

    @property
    def volatile(self) -> bool:
        """Removed in PyTorch 0.4 (use ``no_grad``): always False, with a warning, as PyTorch."""
        warnings.warn("volatile was removed (Variable.volatile is always False)", stacklevel=2)
        return False

    @volatile.setter
    def volatile(self, value):
        warnings.warn(VOLATILE_REMOVED, stacklevel=2)

    @property
    def data(self):
        """A tensor sharing this one's memory, detached, with its own version counter."""
        t = _wrap(self._data, self._device)
        return t

    @data.deleter
    def data(self):
        raise RuntimeError("Deleting tensor data is not allowed. Delete tensor instead!")

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        if self._requires_grad and value._data.dtype.kind not in "fc":
            raise RuntimeError(
                "data set to a tensor that requires gradients must be floating point or complex "
                "dtype"
            )
        if value._data.dtype != self._data.dtype or value._device != self._device:
            self._acc = None  # as PyTorch: a leaf of another type gets a new AccumulateGrad
        self._data = value._data
        self._device = value._device

    @property
    def T(self):
        return self.permute(tuple(range(self.ndim - 1, -1, -1))) if self.ndim > 2 else self.t()

    @property
    def mT(self):
        return self.transpose(-2, -1)

    def _metadata_tuple(self, dtype=None):
        return InputMetadata(self.shape, dtype or self.dtype, self._device)

    # NOTE [A leaf and its AccumulateGrad]
    # The graph holds a leaf's AccumulateGrad, which holds the leaf. As in PyTorch, the leaf
    # refers to its AccumulateGrad weakly, so a leaf that no one holds is freed by reference
    # counting, with no cycle. Once a hook is registered on the AccumulateGrad (a tensor hook on
    # the leaf, a node pre/post hook, a post-accumulate-grad hook), the leaf holds it strongly,
    # so that "a live leaf keeps one AccumulateGrad" and its hooks persist across passes.
    def _get_grad_accumulator(self):
        acc = self._acc
        if acc is not None:
            if type(acc) is not _weakref_type:
                return acc
            acc = acc()
            if acc is not None:
                return acc
        if self._base is not None and getattr(self, "_no_grad_view", 0) in (_NO_GRAD, _INFERENCE):
            return None  # a no-grad view of a tensor that requires grad: no gradient edge
        acc = AccumulateGrad(self)
        self._acc = _weakref(acc)
        return acc

    @property
    def _grad_accumulator(self):
        """This leaf's AccumulateGrad if one is alive, else None."""
        acc = self._acc
        return acc() if type(acc) is _weakref_type else acc

    @_grad_accumulator.setter
    def _grad_accumulator(self, acc):
        self._acc = acc  # a strong reference (None drops it)

    def _pin_grad_accumulator(self):
        """Keep this leaf's AccumulateGrad alive with the leaf (it has hooks now)."""
        acc = self._get_grad_accumulator()
        self._acc = acc
        return acc

    # -- conversions ------------------------------------------------------------------------
    def numpy(self, *, force=False):
        """The data as a NumPy array sharing memory (RuntimeError if it requires grad, unless
        in no-grad mode, as PyTorch)."""
        if self._requires_grad and not force and _grad_state.enabled:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        if self._device.type != "cpu" and not force:
            raise TypeError(
                f"can't convert {self._device} device type tensor to numpy. Use Tensor.cpu() to "
                "copy the tensor to host memory first."
            )
        return backend.to_host(self._data)

    def __array__(self, dtype=None, copy=None):
        a = self.detach().numpy() if self._device.type == "cpu" else self.detach().cpu().numpy()
        return a if dtype is None else a.astype(dtype)

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        return backend.to_host(self._data).reshape(()).item()

    def tolist(self):
        return backend.to_host(self._data).tolist()

    def __float__(self):
        if self._requires_grad:
            warnings.warn(
                "Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
                "behavior.\nConsider using tensor.detach() first.",
                UserWarning,
                stacklevel=2,
            )
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(
                "Boolean value of Tensor with more than one value is ambiguous"
                if self._data.size
                else "Boolean value of Tensor with no values is ambiguous"
            )
        return bool(self.item())

    def __index__(self):
        if self._data.dtype.kind not in "iu" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __dlpack__(self, stream=None, **kwargs):
        return (
            self.detach()._data.__dlpack__(**kwargs)
            if not stream
            else self._data.__dlpack__(stream=stream)
        )

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def detach(self):
        """A tensor sharing memory and version counter, outside the graph."""
        t = _wrap(self._data, self._device)
        t._version_counter = self._counter()  # in place on it bumps this tensor's version too
        if _inference_tensors.made:  # an alias of an inference tensor is one, and only then
            _set_inference(t, getattr(self, "_inference", False))
        return t  # not a view for autograd (``_base`` None, as PyTorch's detach)

    def _is_view(self) -> bool:
        """True for a view of another tensor (``_base``), as PyTorch's."""
        return self._base is not None

    def is_inference(self) -> bool:
        """True for a tensor made in inference mode (see NOTE [Inference tensors])."""
        return bool(_is_inference(self))

    def detach_(self):
        if self._base is not None and self._base._requires_grad:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead, or use the base tensor."
            )
        self.grad_fn = None
        self._requires_grad = False
        self._output_nr = 0
        _forward_grad.set_tangent(self, None)  # as PyTorch, detach_ drops the tangent too
        return self

    def set_(self, source=None):
        """Make this tensor share ``source``'s memory, shape and strides (an empty tensor when
        no source is given), as PyTorch's ``set_``: the version goes up, and a leaf gets a new
        gradient edge, so a graph recorded before no longer reaches it (its hooks stay).

        nbgrad records no graph through ``set_``: on a tensor that requires grad (or from one
        that does) it runs in no-grad mode only.
        """
        if source is None:
            source = _wrap(backend.get_xp(self._device).empty((0,), self._data.dtype), self._device)
        elif not isinstance(source, Tensor):
            raise TypeError(
                f"set_(): argument 'source' must be Tensor, not {type(source).__name__}"
            )
        if source._data.dtype != self._data.dtype:
            theirs, ours = source.dtype._legacy[:-6].lower(), self.dtype._legacy[:-6].lower()
            raise RuntimeError(f"Could not set tensor of type {theirs} to a tensor of type {ours}")
        _check_device(source, self._device)
        if _grad_state.enabled:
            if self._requires_grad and self.grad_fn is None:
                raise RuntimeError(
                    "a leaf Variable that requires grad is being used in an in-place operation."
                )
            if self._requires_grad or source._requires_grad:
                raise RuntimeError(
                    "set_(): nbgrad records no derivative for set_ (PyTorch's is not implemented "
                    "either); call it in no_grad mode"
                )
        self._data = source._data
        self._counter()[0] += 1
        if self._requires_grad and self.grad_fn is None:
            # a new AccumulateGrad: the old one, in graphs recorded before, is not this leaf's
            old = self._grad_accumulator
            self._acc = None
            if old is not None and old._tensor_pre_hooks:  # the leaf's hooks go with it
                self._pin_grad_accumulator()._tensor_pre_hooks = old._tensor_pre_hooks
        return self

    def _detached_alias(self):
        return _wrap(self._data, self._device)

    def _detached_copy(self):
        return _wrap(self._data.copy(), self._device)

    def _add_inplace_data(self, other):
        if 0 in self._data.strides:
            _check_no_internal_overlap(self._data)
        self._data += other._data
        self._counter()[0] += 1

    def clone(self, *, memory_format=preserve_format):
        """A copy in the same layout (PyTorch's ``preserve_format``): ``x.t().clone()`` is
        transposed too, so ``reshape`` on it copies (and ``view`` raises) as in PyTorch; or in
        the layout ``memory_format`` names."""
        if memory_format is preserve_format:
            return _dispatch(_op("clone"), (self,), _PRESERVE)
        if memory_format is contiguous_format:
            return self._clone("contiguous")
        return self._clone(_format_strides(self.shape, memory_format))

    def _clone(self, memory_format):
        """``clone`` into ``"contiguous"`` order or the layout of a tuple of strides."""
        return _dispatch(_op("clone"), (self,), {"memory_format": memory_format})

    def contiguous(self, memory_format=contiguous_format):
        """Self when contiguous (in ``memory_format``), else a copy that is
        (``CloneBackward0``), as PyTorch."""
        if memory_format is contiguous_format or memory_format is preserve_format:
            return self if self._data.flags.c_contiguous else self._clone("contiguous")
        if self.is_contiguous(memory_format):
            return self
        return self._clone(_format_strides(self.shape, memory_format))

    def is_contiguous(self, memory_format=contiguous_format):
        if memory_format is contiguous_format:
            return bool(self._data.flags.c_contiguous)
        return _is_contiguous_as(self.shape, self.stride(), memory_format)

    def stride(self, dim=None):
        """Strides in elements (PyTorch's; NumPy counts bytes), all or of one dimension."""
        item = self._data.itemsize
        strides = tuple(s // item for s in self._data.strides)
        return strides if dim is None else strides[_dim(dim, self.ndim)]

    def to(self, *args, dtype=None, device=None, copy=False, memory_format=preserve_format):
        """Move to a device and/or convert to a dtype (differentiable: ``ToCopyBackward0``);
        a ``memory_format`` the result is not in gives a copy in it (``CloneBackward0``, where
        PyTorch's one node is ``ToCopyBackward0``)."""
        for a in args:
            if isinstance(a, dtypes.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, (str, Device)) or (isinstance(a, int) and not isinstance(a, bool)):
                device = a  # an int is a CUDA device index, as in PyTorch
            else:
                raise TypeError(f"to() received an invalid argument {a!r}")
        result = self
        if device is not None:
            device = backend.as_device(device)
            if device != self._device:
                result = _to_device(result, device)
        if dtype is not None:
            dtype = dtypes.as_dtype(dtype)
            if dtype is not result.dtype and dtype.is_floating_point:
                result = _dispatch(_op("to_dtype"), (result,), {"dtype": dtype})
            elif dtype is not result.dtype:  # integral and bool results are not differentiable:
                with _NoGrad():  # they never require grad, as in PyTorch
                    result = _dispatch(_op("to_dtype"), (result,), {"dtype": dtype})
        if memory_format is not preserve_format and not result.is_contiguous(memory_format):
            result = result.clone(memory_format=memory_format)
        if copy and result is self:
            result = self.clone()
        return result

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to(backend.as_device("cuda" if device is None else device))

    def float(self):
        return self.to(dtypes.float32)

    def double(self):
        return self.to(dtypes.float64)

    def half(self):
        return self.to(dtypes.float16)

    def long(self):
        return self.to(dtypes.int64)

    def int(self):
        return self.to(dtypes.int32)

    def bool(self):
        return self.to(dtypes.bool)

    def type(self, dtype=None, non_blocking=False, **kwargs):
        """The legacy type name (``"nbgrad.FloatTensor"``) with no argument; else this tensor
        converted to a type (``nbgrad.DoubleTensor`` or its name) or a dtype (self if it is
        already that type)."""
        if dtype is None:
            return _legacy_types.type_name(self)
        if isinstance(dtype, str):
            dtype = _legacy_types.type_from_name(dtype)
        if isinstance(dtype, _legacy_types.tensortype):
            device = self.device if dtype._device_type == self.device.type else dtype._device_type
            return self.to(device=device, dtype=dtype.dtype)
        if not isinstance(dtype, dtypes.dtype):
            raise TypeError("dtype must be a type, str, or dtype object")
        return self.to(dtype)

    def new(self, *args, **kwargs):
        """PyTorch's legacy constructor with this tensor's dtype and device: ``t.new(2, 3)``
        (uninitialised), ``t.new([1, 2])`` (data), ``t.new()`` (empty). New code uses
        ``new_empty`` and ``new_tensor``."""
        return legacy_new(self.dtype, self._device, args, kwargs)

    # -- autograd ---------------------------------------------------------------------------
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate the gradient of this tensor into the ``.grad`` of the graph's leaves."""
        nbgrad.autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook):
        """Register ``hook(grad) -> Tensor or None``, run when this tensor's gradient is computed.

        See NOTE [Hook order] in ``nbgrad/autograd/engine.py``.

        Example:
            >>> import nbgrad as ng
            >>> x = ng.ones(2, requires_grad=True)
            >>> h = x.register_hook(lambda g: g * 10)
            >>> (x * 3).sum().backward()
            >>> x.grad
            tensor([30., 30.])
        """
        if not callable(hook):
            raise TypeError(f"register_hook() expects a callable, got {type(hook).__name__}")
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return self.grad_fn._register_tensor_pre_hook(hook, self._output_nr, self)
        acc = self._pin_grad_accumulator()
        if acc is None:  # a no-grad view: no gradient ever reaches it, so the hook never runs
            return RemovableHandle(HookList(), hook, "tensor", owner=self)
        return acc._register_tensor_pre_hook(hook, 0, self)

    def register_post_accumulate_grad_hook(self, hook):
        """Register ``hook(tensor)``, run after a leaf's ``.grad`` has been accumulated."""
        if not callable(hook):
            raise TypeError(
                "register_post_accumulate_grad_hook() expects a callable, got "
                f"{type(hook).__name__}"
            )
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        if self._post_accumulate_grad_hooks is None:
            self._post_accumulate_grad_hooks = HookList()
        self._get_grad_accumulator()
        return RemovableHandle(
            self._post_accumulate_grad_hooks, hook, "post_accumulate_grad", owner=self
        )

    def retain_grad(self):
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains_grad:
            return
        self.grad_fn._add_retains_grad_hook(self, self._output_nr)
        self._retains_grad = True

    @classmethod
    def _from_saved_output(cls, data, device, node, output_nr, counter):
        t = _wrap(data, device, True)
        t.grad_fn = node
        t._output_nr = output_nr
        t._version_counter = counter
        if _forward_grad._state.active:  # the output's tangent too (NOTE [Forward-mode AD])
            _forward_grad.restore_saved_tangent(t)
        return t

    def _alias_with_grad_fn(self, node, output_nr):
        t = _wrap(self._data, self._device, True)
        t.grad_fn = node
        t._output_nr = output_nr
        return t

    def _alias_as_leaf(self, requires_grad, accumulator):
        """This data as a leaf whose gradient goes to ``accumulator`` (another leaf's)."""
        t = _wrap(self._data, self._device, requires_grad)
        if requires_grad and accumulator is not None:
            t._acc = _weakref(accumulator)
        return t

    # -- printing ---------------------------------------------------------------------------
    def __repr__(self):
        return _format_tensor(self)

    def __str__(self):
        return _format_tensor(self)

    def __format__(self, spec):
        if self._data.ndim == 0 and spec:
            return format(self.item(), spec)
        return str(self)

    def __iter__(self):
        if not self._data.ndim:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __reduce_ex__(self, protocol):
        return (
            _rebuild,
            (
                backend.to_host(self._data).copy(),
                str(self._device),
                self._requires_grad,
            ),
        )


def _zero_grads(tensors, set_to_none):
    """``zero_grad`` of Module and Optimizer: each ``.grad`` to None, or detached and zeroed."""
    for t in tensors:
        grad = t._grad
        if grad is None:
            continue
        if set_to_none:
            t._grad = None
        else:
            if grad.grad_fn is not None:
                grad.detach_()
            else:
                grad.requires_grad_(False)
            grad.zero_()


_TENSOR_SLOTS = tuple(s for s in Tensor.__slots__ if s != "__weakref__")

# The Tensor class, bound late (see NOTE [The Tensor class, bound late]): the modules under
# nbgrad/_tensor and nbgrad/_graph sit below this class yet make tensors
# (``_wrap``) and ask ``isinstance(x, Tensor)``. Each names the class as a module global that is
# bound here, once, when the class exists (as PyTorch binds ``torch.Tensor`` into its C++ core,
# ``THPVariableClass``, at import), so that every import goes one way: down.
_tc.bind_tensor(Tensor, _wrap, tensor)
for _module in (
    _parts.conversion,
    _parts.dispatch,
    _parts.views,
    _parts.math_methods,
    _parts.shape_methods,
    _parts.linalg_methods,
    _parts.reduction_methods,
    _parts.index_methods,
    _parts.inplace,
    _parts.printing,
    _parts.creation,
    _legacy_types,
):
    _module.Tensor = Tensor
del _module


def _rebuild(array, device, requires_grad):
    return tensor(array, device=device, requires_grad=requires_grad)


VOLATILE_REMOVED = (
    "volatile was removed and now has no effect. Use `with nbgrad.no_grad():` instead."
)
