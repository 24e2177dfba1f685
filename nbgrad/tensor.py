"""``Tensor``: an array on a device plus its place in the autograd graph.

Mirrors ``torch/_tensor.py`` and the dispatch in ``torch/csrc/autograd/generated``: every op
goes through :func:`_dispatch`, which promotes dtypes as PyTorch does, runs the row's forward
kernel from ``nbgrad/derivatives.py`` on the device's array module, and, when gradients are
being recorded, creates the row's Node with one Edge per input and saves what its formulas
name. In-place ops go through :meth:`Tensor._inplace` (version counters, leaf checks, and
``CopySlices`` for views).
"""

from __future__ import annotations

import math
import numbers
import time
import warnings
from weakref import ref as _weakref

import numpy as np

from nbgrad import backend, dtypes, return_types
from nbgrad._graph import anomaly_mode as _anomaly
from nbgrad._graph import graph as _graph
from nbgrad._graph.grad_mode import _state as _grad_state
from nbgrad._graph.graph import (
    NO_EDGE,
    AccumulateGrad,
    Edge,
    HookList,
    InputMetadata,
    RemovableHandle,
    SavedTensor,
    next_sequence_nr,
)
from nbgrad.backend import CPU, Device

_weakref_type = _weakref

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

_ndarray = np.ndarray
_FROM_NP = dtypes._FROM_NP
bool_ = dtypes.bool


class Size(tuple):
    """A tensor's shape: a tuple that prints as ``nbgrad.Size([2, 3])``."""

    def __repr__(self):
        return f"nbgrad.Size({list(self)})"

    def numel(self):
        return math.prod(self)


# ---- dispatch ---------------------------------------------------------------------------------
_NO_ATTRS: dict = {}


def _result_dtype(op, args, attrs):
    """The dtype PyTorch would compute in, for a row with ``promote`` set."""
    tensors = []
    scalars = []
    for a, promoted in zip(args, op.promoted):
        if not promoted:
            continue
        if isinstance(a, Tensor):  # Tensor or a subclass (nn.Parameter)
            tensors.append(a)
        elif type(a) is list:
            tensors.extend(a)
        elif a is not None:
            scalars.append(a)
    for name in op.promote_attrs:
        scalars.append(attrs[name])
    first = tensors[0]._data.dtype if tensors else None
    if first is not None and all(t._data.dtype == first for t in tensors):
        d = _FROM_NP[first]
        kind = d._kind
        if all(
            (type(s) is not float or kind == 2) and (type(s) is not int or kind >= 1)
            for s in scalars
        ):
            if op.promote == "float" and kind < 2:
                return dtypes.get_default_dtype()
            return d
    d = dtypes.result_type(tensors, scalars)
    if op.promote == "float" and not d.is_floating_point:
        return dtypes.get_default_dtype()
    return d


def _check_device(t, device):
    if t._device != device:
        raise RuntimeError(
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"{device} and {t._device}! Move them with .to(device) first."
        )


def _binary(op, a, b, attrs=_NO_ATTRS):
    """``op(a, b)`` for a float CPU ``a`` and a Python number or same-dtype CPU tensor ``b``.

    The arithmetic operators' path: the same result as ``_dispatch`` (which it falls back to
    for anything else) without its general argument handling. See NOTE [Dispatch fast path].
    """
    t0 = _perf_counter() if _forward_listeners else 0.0  # see NOTE [Forward listeners]
    da = a._data
    if a._device is CPU and da.dtype.kind == "f":
        tb = type(b)
        if tb is float or tb is int:
            db = b
            rg = a._requires_grad
        elif tb is Tensor and b._device is CPU and b._data.dtype == da.dtype:
            db = b._data
            rg = a._requires_grad or b._requires_grad
        else:
            return _dispatch(op, (a, _arg(b)), attrs)
        try:
            if op.quiet:
                with np.errstate(all="ignore"):
                    out = op.forward(np, da, db, **attrs)
            else:
                out = op.forward(np, da, db, **attrs)
        except ValueError as e:
            raise RuntimeError(f"{op.name}(): {_shapes_message((a, b), e)}") from None
        result = _wrap(out if type(out) is _ndarray else np.asarray(out))
        if rg and _grad_state.enabled:
            _record(op, (a, b), attrs, (result,))
        if _forward_listeners:
            _notify_forward(op, (a, b), attrs, result, _perf_counter() - t0)
        return result
    return _dispatch(op, (a, _arg(b)), attrs)


def _prepare(op, args, attrs):
    """The general path of dispatch: device check, PyTorch type promotion, array extraction."""
    device = None
    requires_grad = False
    promote = op.promote
    if promote is not None:
        rdtype = _result_dtype(op, args, attrs).np
        pmask = op.promoted
    arrays = []
    for i, a in enumerate(args):
        if isinstance(a, Tensor):  # Tensor or a subclass (nn.Parameter)
            if device is None:
                device = a._device
            elif a._device is not device and a._device != device:
                _check_device(a, device)
            data = a._data
            if promote is not None and pmask[i] and data.dtype != rdtype:
                data = data.astype(rdtype)
            arrays.append(data)
            if a._requires_grad:
                requires_grad = True
        elif type(a) is list:
            datas = []
            for t in a:
                if device is None:
                    device = t._device
                else:
                    _check_device(t, device)
                data = t._data
                if promote is not None and data.dtype != rdtype:
                    data = data.astype(rdtype)
                datas.append(data)
                if t._requires_grad:
                    requires_grad = True
            arrays.append(datas)
        else:
            arrays.append(a)
    return arrays, device if device is not None else CPU, requires_grad


# NOTE [Forward listeners]
# The notebook's recorder (nbgrad/notebook/recorder.py) sees every forward call through this
# list of callables ``listener(op, args, attrs, result, elapsed)``; ``result`` is a Tensor or a
# tuple of them, ``elapsed`` the op's wall time in seconds. With no listener, ``_dispatch`` and
# ``_binary`` pay one empty-list check at entry and one before they return; nothing is timed.
_forward_listeners: list = []
_perf_counter = time.perf_counter


def _notify_forward(op, args, attrs, result, elapsed):
    if len(_forward_listeners) == 1:  # the usual case: one recorder
        _forward_listeners[0](op, args, attrs, result, elapsed)
        return
    for listener in tuple(_forward_listeners):  # a copy: a listener may remove itself
        listener(op, args, attrs, result, elapsed)


def _dispatch(op, args, attrs=_NO_ATTRS, out=None):
    """Run one row of the op table on ``args`` (Tensors, lists of Tensors, scalars or None)."""
    t0 = _perf_counter() if _forward_listeners else 0.0
    # NOTE [Dispatch fast path]
    # Most calls are CPU tensors of one floating dtype, possibly with Python numbers: no
    # promotion or device check can change anything, so skip straight to the kernel.
    arrays = []
    requires_grad = False
    dtype = None
    for a in args:
        ta = type(a)
        if ta is Tensor or (ta is not float and ta is not int and isinstance(a, Tensor)):
            data = a._data
            if a._device is not CPU or (dtype is not None and data.dtype != dtype):
                break
            dtype = data.dtype
            arrays.append(data)
            if a._requires_grad:
                requires_grad = True
        elif ta is not float and ta is not int:
            break
        else:
            arrays.append(a)
    else:
        if dtype is None or dtype.kind != "f":
            arrays = None
    if arrays is None or len(arrays) != len(args):
        arrays, device, requires_grad = _prepare(op, args, attrs)
    else:
        device = CPU
    if out is None:
        xp = np if device is CPU else backend.get_xp(device)
        try:
            if op.quiet:
                with np.errstate(all="ignore"):
                    out = op.forward(xp, *arrays, **attrs)
            else:
                out = op.forward(xp, *arrays, **attrs)
        except ValueError as e:
            raise RuntimeError(f"{op.name}(): {_shapes_message(args, e)}") from None
    record = requires_grad and op.differentiable and _grad_state.enabled
    if op.outputs != 1:
        results = tuple(_wrap(o, device) for o in out)
        if op.view:
            for r in results:
                _mark_view(r, args[0], None)
        if record:
            _record(op, args, attrs, results)
        if _forward_listeners:
            _notify_forward(op, args, attrs, results, _perf_counter() - t0)
        return results
    if type(out) is not _ndarray:
        out = (np if device is CPU else backend.get_xp(device)).asarray(out)
    result = Tensor.__new__(Tensor)
    result._data = out
    result._device = device
    result._grad = None
    result._output_nr = 0
    result._retains_grad = False
    result._acc = None
    result._post_accumulate_grad_hooks = None
    if op.view:
        _mark_view(result, args[0], (op.name, attrs))
    else:
        result._version_counter = None  # see NOTE [Lazy version counters]
        result._base = None
        result._view_chain = None
    if record:
        result._requires_grad = True
        result.grad_fn = None
        _record(op, args, attrs, (result,))
    else:
        # a view made in no-grad mode requires grad when its source does (NOTE [Views made in
        # no-grad mode])
        result._requires_grad = op.view and not _grad_state.enabled and args[0]._requires_grad
        result.grad_fn = None
    if _forward_listeners:
        _notify_forward(op, args, attrs, result, _perf_counter() - t0)
    return result


def _shapes_message(args, err):
    shapes = [list(a.shape) for a in args if isinstance(a, Tensor)]
    if len(shapes) >= 2:
        return (
            f"The size of tensor a ({shapes[0]}) must match the size of tensor b ({shapes[1]}): "
            f"shapes {shapes[0]} and {shapes[1]} cannot be broadcast together ({err})"
        )
    return str(err)


def _mark_view(result, src, step):
    # the base is the root of the chain of views; but a leaf that requires grad is the base of
    # its views even when it is itself a view (``arange(6.).view(2, 3).requires_grad_()``), as
    # PyTorch's differentiable views: an in-place op on its views must see the leaf
    if src._base is None or (
        src._requires_grad and src.grad_fn is None and not getattr(src, "_no_grad_view", 0)
    ):
        base, chain = src, ()
    else:
        base, chain = src._base, src._view_chain
    result._base = base
    result._version_counter = src._counter()
    # NOTE [Views made in no-grad mode]: how the view was made (_NO_GRAD, _INFERENCE, or
    # _IN_CUSTOM_FUNCTION, set by Function.apply), plus 1 when made from such a view; else 0
    if not _grad_state.enabled:
        result._no_grad_view = _INFERENCE if _grad_state.inference else _NO_GRAD
        if src._requires_grad:  # see NOTE [Views made in no-grad mode]
            result._requires_grad = True
            result._view_version = result._version_counter[0]
    elif base is not src and getattr(src, "_no_grad_view", 0):
        result._no_grad_view = src._no_grad_view | 1
    else:
        result._no_grad_view = 0
    if step is None or (base is not src and chain is None):
        result._view_chain = None  # several views from one op: no in-place on them
    else:
        result._view_chain = (chain or ()) + (step,)
        _track_view(base, result)


# NOTE [Views made in no-grad mode]
# As in PyTorch, an in-place op that would be recorded (grad mode on, a tensor that requires
# grad involved) may not modify a view made in no-grad mode, or a view made from one: whether
# the view should see the op's history is ambiguous, so it is an error that says how to choose
# (checked before the leaf checks, as PyTorch does). In place inside no_grad, or on the base
# itself, stays allowed. As PyTorch, such a view of a tensor that requires grad requires grad
# too, yet is a leaf with no gradient edge: ops on it are recorded, but no gradient reaches it
# or its base, and hooks registered on it never run. (PyTorch also raises when one is used
# after its base was modified in place with grad mode on; nbgrad's view takes the base's new
# history.)
# (PyTorch's CreationMeta: the kinds of view an in-place op may not modify; odd: made from one)
_NO_GRAD, _INFERENCE, _IN_CUSTOM_FUNCTION = 2, 4, 6
_NO_GRAD_VIEW_ADVICE = (
    "is being modified inplace with grad mode enabled. Given that this use case is ambiguous "
    "and error-prone, it is forbidden. You can clarify your code by moving both the view and "
    "the inplace either both inside the no_grad block (if you don't want the inplace to be "
    "tracked) or both outside (if you want the inplace to be tracked)."
)
_INFERENCE_VIEW_ADVICE = (
    "is being modified inplace in normal mode. Given that this use case is ambiguous and "
    "error-prone, it is forbidden. You can clarify your code by moving both the view and the "
    "inplace either both inside the inference_mode block (if you don't want the inplace to be "
    "tracked) or both outside (if you want the inplace to be tracked)."
)
_A_NO_GRAD_VIEW = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled."
)
_CUSTOM_FUNCTION_VIEW_ADVICE = (
    "This view was created inside a custom Function (or because an input was returned as-is) "
    "and the autograd logic to handle view+inplace would override the custom backward "
    "associated with the custom Function, leading to incorrect gradients. This behavior is "
    "forbidden. You can fix this by cloning the output of the custom Function."
)


def _view_node_name(node):
    """A view's node as PyTorch's view errors name it: ``UnbindBackward0`` -> ``Unbind``."""
    return node.name().removesuffix("0").removesuffix("Backward")


def _check_no_internal_overlap(data):
    """As PyTorch: an in-place op may not write a tensor whose elements share memory (an
    expanded tensor); one element of it (``t[0] = v``) may be written."""
    if data.size and any(s == 0 and n > 1 for s, n in zip(data.strides, data.shape)):
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation."
        )


def _multiple_views_message(view):
    """PyTorch's error for an in-place op on one of several views that one op returned."""
    if view.grad_fn is not None:
        made = (
            f"Output {view._output_nr} of {_view_node_name(view.grad_fn)} is a view and is being "
            "modified inplace."
        )
    else:
        made = _A_NO_GRAD_VIEW
    return (
        made + " This view is the output of a function that returns multiple views. Such "
        "functions do not allow the output views to be modified inplace. You should replace the "
        "inplace operation by an out-of-place one."
    )


def _no_grad_view_message(view):
    """PyTorch's error for an in-place op on a view of one of the kinds above; it names the
    view's node when it has one (a view made in grad mode from such a view)."""
    kind = view._no_grad_view & ~1
    node = view.grad_fn
    name = _view_node_name(node) if node is not None else None
    if kind == _IN_CUSTOM_FUNCTION:
        if node is None:
            return f"{_A_NO_GRAD_VIEW} {_CUSTOM_FUNCTION_VIEW_ADVICE}"
        return (
            f"Output {view._output_nr} of {name} is a view and is being modified inplace. "
            + _CUSTOM_FUNCTION_VIEW_ADVICE
        )
    made = "created in inference mode and" if kind == _INFERENCE else "created in no_grad mode and"
    advice = _INFERENCE_VIEW_ADVICE if kind == _INFERENCE else _NO_GRAD_VIEW_ADVICE
    if node is None:
        return f"A view was {made} {advice}"
    return f"Output {view._output_nr} of {name} is a view of a view which was {made} {advice}"


# NOTE [Views of a modified base]
# An in-place op on a base (or on one of its views) gives the base a new history; every other
# live view of that base must then take its gradient through that new history, or a later use
# of the view would silently skip the in-place op. PyTorch regenerates a view's grad_fn lazily
# when it sees that the version counter moved (``AsStridedBackward0``); nbgrad does it eagerly,
# in ``Tensor._inplace``, by replaying each live view's chain of view ops on the base (so the
# regenerated node has the view op's own name, e.g. ``SelectBackward0``). The base keeps
# weakrefs to its views, pruned as they grow, so tracking costs one weakref per view.
#
# NOTE [Regenerated view nodes]
# One visible difference follows: PyTorch's regenerated node is made when the view is next
# used, nbgrad's at the in-place op, so its sequence number (and with it the engine's order
# among nodes ready at the same time) can differ when other ops come in between. Gradients are
# the same; a hook log on such a view's node may show it at another place.
def _track_view(base, view):
    views = getattr(base, "_views", None)
    if views is None:
        base._views = views = []
    elif len(views) >= 8 and not len(views) & (len(views) - 1):  # prune at powers of two
        views[:] = [ref for ref in views if ref() is not None]
    views.append(_weakref(view))


def _regenerate_views(base, modified):
    """Give each live view of ``base`` but ``modified`` a grad_fn through base's new history."""
    views = getattr(base, "_views", None)
    if not views:
        return
    from nbgrad.derivatives import _apply_view_chain

    with _EnableGrad():
        for ref in tuple(views):
            view = ref()
            if view is None or view is modified or view._view_chain is None:
                continue
            view._set_history(_apply_view_chain(base, view._view_chain).grad_fn, 0)


def _edge_of(t):
    """``gradient_edge``: where a gradient for tensor ``t`` should flow."""
    fn = t.grad_fn
    if fn is not None:
        return Edge(fn, t._output_nr)
    if t._requires_grad:
        return Edge(t._get_grad_accumulator(), 0)
    return NO_EDGE


_new_tuple = tuple.__new__  # NamedTuple instances without the Python-level __new__

# NOTE [Shared input metadata]
# A node's input metadata is immutable (shape, dtype, device), and a forward pass makes the same
# few shapes over and over: CPU nodes share one metadata tuple per (shape, dtype) instead of
# each allocating two more objects for the cyclic garbage collector to scan.
_CPU_METADATA: dict = {}


def _record(op, args, attrs, results):
    """Create the row's Node: edges to the inputs, saved values, input metadata."""
    edges = []
    for a in args:
        if isinstance(a, Tensor):  # Tensor or a subclass (nn.Parameter)
            fn = a.grad_fn
            if fn is not None:
                edges.append(_new_tuple(Edge, (fn, a._output_nr)))
            elif a._requires_grad:
                edges.append(_new_tuple(Edge, (a._get_grad_accumulator(), 0)))
            else:
                edges.append(NO_EDGE)
        elif type(a) is list:
            edges.extend(_edge_of(t) for t in a)
        else:
            edges.append(NO_EDGE)
    if op.nondiff:  # as PyTorch: a non-differentiable input (index, mask) gets no edge
        edges = [e for inp, e in zip(op.inputs, edges) if inp not in op.nondiff]
    cls = op.node_class
    node = cls.__new__(cls)
    node._next_edges = tuple(edges)
    node._sequence_nr_ = next_sequence_nr()
    node._pre_hooks = node._post_hooks = node._tensor_pre_hooks = None
    node._retains_grad_hooks = node._metadata = None
    cls._save(node, node._next_edges, args, attrs, results)  # see NOTE [Generated apply]
    if len(results) == 1:
        r = results[0]
        data = r._data
        if r._device is CPU:  # NOTE [Shared input metadata]
            key = (data.shape, data.dtype)
            meta = _CPU_METADATA.get(key)
            if meta is None:
                if len(_CPU_METADATA) > 4096:
                    _CPU_METADATA.clear()
                meta = _CPU_METADATA[key] = (
                    _new_tuple(InputMetadata, (data.shape, _FROM_NP[data.dtype], CPU)),
                )
            node._input_metadata_ = meta
        else:
            node._input_metadata_ = (
                _new_tuple(InputMetadata, (data.shape, _FROM_NP[data.dtype], r._device)),
            )
        r.grad_fn = node
        r._requires_grad = True
    else:
        meta = []
        for k, r in enumerate(results):
            data = r._data
            meta.append(_new_tuple(InputMetadata, (data.shape, _FROM_NP[data.dtype], r._device)))
            if op.diff_outputs is None or k in op.diff_outputs:
                r.grad_fn = node
                r._output_nr = k
                r._requires_grad = True
        node._input_metadata_ = tuple(meta)
    if _anomaly._state.enabled:
        _anomaly.record_traceback(node)
    return node


def _wrap(data, device=CPU, requires_grad=False):
    if type(data) is not _ndarray and device is CPU:
        data = np.asarray(data)
    t = Tensor.__new__(Tensor)
    t._data = data
    t._device = device
    t._requires_grad = requires_grad
    t.grad_fn = None
    t._grad = None
    t._output_nr = 0
    t._version_counter = None  # see NOTE [Lazy version counters]
    t._base = None
    t._view_chain = None
    t._retains_grad = False
    t._acc = None
    t._post_accumulate_grad_hooks = None
    return t


def _op(name):
    try:
        return _derivatives.OPS[name]
    except NameError:  # while nbgrad.derivatives itself is being imported
        from nbgrad.derivatives import OPS

        return OPS[name]


def _dim(d, ndim):
    """Normalise a (possibly negative) dimension index."""
    n = max(ndim, 1)
    if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
        raise TypeError(f"dim must be an int, got {type(d).__name__}")
    if not -n <= d < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})"
        )
    return int(d) % n if ndim else 0


def _dims(dim, ndim):
    if isinstance(dim, (list, tuple)):
        if not dim:  # as PyTorch, an empty list of dims reduces over all of them
            return None
        listed = [_dim(d, ndim) for d in dim]
        dims = tuple(sorted(set(listed)))
        if len(dims) != len(listed) and ndim:
            twice = next(d for i, d in enumerate(listed) if d in listed[:i])
            raise RuntimeError(f"dim {twice} appears multiple times in the list of dims")
    else:
        dims = (_dim(dim, ndim),)
    # a 0-d tensor accepts dim 0 or -1 as PyTorch does; reducing over it reduces nothing
    return dims if ndim else ()


def _shape_arg(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = size[0]
    for s in size:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(
                f"size must be a tuple of ints, but got an element of type {type(s).__name__}"
            )
    return tuple(int(s) for s in size)


# ---- Tensor -----------------------------------------------------------------------------------
class Tensor:
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
        "__weakref__",
    )

    __array_priority__ = 1000  # numpy scalars defer to Tensor's reflected operators

    def __init__(self, *args, **kwargs):
        """PyTorch's legacy constructor, of the default dtype on the CPU: ``Tensor(2, 3)``
        (uninitialised), ``Tensor([1, 2])`` (data), ``Tensor()`` (empty); see NOTE [Legacy
        constructors] in ``nbgrad/_tensor_types.py``. New code uses ``nbgrad.tensor`` and the
        creation functions."""
        from nbgrad._tensor_types import legacy_new

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
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got {type(value).__name__}"
                )
            if value.shape != self.shape:
                raise RuntimeError(
                    f"assigned grad has data of a different size: {list(value.shape)} vs "
                    f"{list(self.shape)}"
                )
            if value.dtype is not self.dtype:
                raise RuntimeError("assigned grad has data of a different type")
            if value._device != self._device:
                raise RuntimeError("assigned grad has data located on a different device")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None  # as PyTorch: ``del t.grad`` is ``t.grad = None``

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
        counter = self._version_counter
        return 0 if counter is None else counter[0]

    @property
    def volatile(self) -> bool:
        """Removed in PyTorch 0.4 (use ``no_grad``): always False, with a warning, as PyTorch."""
        warnings.warn("volatile was removed (Variable.volatile is always False)", stacklevel=2)
        return False

    @volatile.setter
    def volatile(self, value):
        from nbgrad.autograd.variable import VOLATILE_REMOVED

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

    def _metadata_tuple(self):
        return InputMetadata(self.shape, self.dtype, self._device)

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
        return backend.to_numpy(self._data, self._device)

    def __array__(self, dtype=None, copy=None):
        a = self.detach().numpy() if self._device.type == "cpu" else self.detach().cpu().numpy()
        return a if dtype is None else a.astype(dtype)

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        return backend.to_numpy(self._data, self._device).reshape(()).item()

    def tolist(self):
        return backend.to_numpy(self._data, self._device).tolist()

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
        return t  # not a view for autograd (``_base`` None, as PyTorch's detach)

    def detach_(self):
        if self._base is not None and self._base._requires_grad:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead, or use the base tensor."
            )
        self.grad_fn = None
        self._requires_grad = False
        self._output_nr = 0
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

    def clone(self):
        """A copy in the same layout (PyTorch's ``preserve_format``): ``x.t().clone()`` is
        transposed too, so ``reshape`` on it copies (and ``view`` raises) as in PyTorch."""
        return _dispatch(_op("clone"), (self,), _PRESERVE)

    def _clone(self, memory_format):
        """``clone`` into ``"contiguous"`` order or the layout of a tuple of strides."""
        return _dispatch(_op("clone"), (self,), {"memory_format": memory_format})

    def contiguous(self):
        """Self when contiguous, else a contiguous copy (``CloneBackward0``), as PyTorch."""
        return self if self._data.flags.c_contiguous else self._clone("contiguous")

    def is_contiguous(self):
        return bool(self._data.flags.c_contiguous)

    def stride(self, dim=None):
        """Strides in elements (PyTorch's; NumPy counts bytes), all or of one dimension."""
        item = self._data.itemsize
        strides = tuple(s // item for s in self._data.strides)
        return strides if dim is None else strides[_dim(dim, self.ndim)]

    def to(self, *args, dtype=None, device=None, copy=False):
        """Move to a device and/or convert to a dtype (differentiable: ``ToCopyBackward0``)."""
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
                from nbgrad.autograd.function import _to_device

                result = _to_device(result, device)
        if dtype is not None:
            dtype = dtypes.as_dtype(dtype)
            if dtype is not result.dtype:
                result = _dispatch(_op("to_dtype"), (result,), {"dtype": dtype})
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
        from nbgrad import _tensor_types

        if dtype is None:
            return _tensor_types.type_name(self)
        if isinstance(dtype, str):
            dtype = _tensor_types.type_from_name(dtype)
        if isinstance(dtype, _tensor_types.tensortype):
            device = self.device if dtype._device_type == self.device.type else dtype._device_type
            return self.to(device=device, dtype=dtype.dtype)
        if not isinstance(dtype, dtypes.dtype):
            raise TypeError("dtype must be a type, str, or dtype object")
        return self.to(dtype)

    def new(self, *args, **kwargs):
        """PyTorch's legacy constructor with this tensor's dtype and device: ``t.new(2, 3)``
        (uninitialised), ``t.new([1, 2])`` (data), ``t.new()`` (empty). New code uses
        ``new_empty`` and ``new_tensor``."""
        from nbgrad._tensor_types import legacy_new

        return legacy_new(self.dtype, self._device, args, kwargs)

    # -- autograd ---------------------------------------------------------------------------
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate the gradient of this tensor into the ``.grad`` of the graph's leaves."""
        from nbgrad.autograd import backward

        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

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

    # -- operators --------------------------------------------------------------------------
    def __add__(self, other):
        return _binary(_ADD, self, other, _ALPHA1)

    def __radd__(self, other):
        return _binary(_ADD, self, other, _ALPHA1)

    def __sub__(self, other):
        return _dispatch(_SUB, (self, _sub_arg(self, other)), _ALPHA1)

    def __rsub__(self, other):
        _sub_arg(self, other)
        return _dispatch(_op("rsub"), (self,), {"other": _scalar(other), "alpha": 1})

    def __mul__(self, other):
        return _binary(_MUL, self, other)

    def __rmul__(self, other):
        return _binary(_MUL, self, other)

    def __truediv__(self, other):
        return _binary(_DIV, self, other)

    def __rtruediv__(self, other):
        return self.reciprocal() * other

    def __pow__(self, exponent):
        if isinstance(exponent, Tensor):
            return _dispatch(_op("pow_tensor"), (self, exponent))
        return _dispatch(_op("pow"), (self,), {"exponent": _scalar(exponent)})

    def __floordiv__(self, other):
        return self.floor_divide(other)

    def __rfloordiv__(self, other):
        return _dispatch(_op("floor_divide"), (_tensor_arg(other, self), self))

    def __mod__(self, other):
        return self.remainder(other)

    def __rmod__(self, other):
        return _dispatch(_op("rremainder"), (self,), {"self": _scalar(other)})

    def __rpow__(self, other):
        return _dispatch(_op("rpow"), (self,), {"self": _scalar(other)})

    def __matmul__(self, other):
        return self.matmul(other)

    def __rmatmul__(self, other):
        return as_tensor(other, device=self._device).matmul(self)

    def __neg__(self):
        return self.neg()

    def __pos__(self):
        return self

    def __abs__(self):
        return self.abs()

    def __eq__(self, other):
        return _dispatch(_op("eq"), (self, _arg(other)))

    def __ne__(self, other):
        return _dispatch(_op("ne"), (self, _arg(other)))

    def __lt__(self, other):
        return _dispatch(_op("lt"), (self, _arg(other)))

    def __le__(self, other):
        return _dispatch(_op("le"), (self, _arg(other)))

    def __gt__(self, other):
        return _dispatch(_op("gt"), (self, _arg(other)))

    def __ge__(self, other):
        return _dispatch(_op("ge"), (self, _arg(other)))

    def __and__(self, other):
        return self.logical_and(other)

    def __or__(self, other):
        return self.logical_or(other)

    def __xor__(self, other):
        return self.logical_xor(other)

    def __invert__(self):
        if self._data.dtype.kind != "b":
            raise TypeError("~ is only supported for bool tensors in nbgrad")
        return self.logical_not()

    __hash__ = object.__hash__

    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    def __ifloordiv__(self, other):
        return self.floor_divide_(other)

    def __imod__(self, other):
        return self.remainder_(other)

    # -- elementwise ops --------------------------------------------------------------------
    def add(self, other, *, alpha=1):
        return _dispatch(_ADD, (self, _arg(other)), {"alpha": alpha})

    def sub(self, other, *, alpha=1):
        return _dispatch(_SUB, (self, _sub_arg(self, other)), {"alpha": alpha})

    def mul(self, other):
        return _dispatch(_MUL, (self, _arg(other)))

    def div(self, other):
        return _dispatch(_DIV, (self, _arg(other)))

    def floor_divide(self, other):
        return _dispatch(_op("floor_divide"), (self, _arg(other)))

    def remainder(self, other):
        other = _arg(other)
        if isinstance(other, Tensor):
            return _dispatch(_op("remainder"), (self, other))
        return _dispatch(_op("remainder_scalar"), (self,), {"other": other})

    def pow(self, exponent):
        return self.__pow__(exponent)

    def neg(self):
        if self._data.dtype.kind == "b":
            raise RuntimeError(
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                "to invert a mask, use the `~` or `logical_not()` operator instead."
            )
        return _dispatch(_op("neg"), (self,))

    def abs(self):
        return _dispatch(_op("abs"), (self,))

    def sign(self):
        return _dispatch(_op("sign"), (self,))

    def bernoulli(self, p=None):
        """0s and 1s, each 1 with the probability in ``self`` (or with ``p``, a number)."""
        if p is None:
            return _dispatch(_op("bernoulli"), (self,))
        return _dispatch(_op("bernoulli_p"), (self,), {"p": _scalar(p)})

    def exp(self):
        return _dispatch(_op("exp"), (self,))

    def log(self):
        return _dispatch(_op("log"), (self,))

    def log1p(self):
        return _dispatch(_op("log1p"), (self,))

    def sqrt(self):
        return _dispatch(_op("sqrt"), (self,))

    def rsqrt(self):
        return _dispatch(_op("rsqrt"), (self,))

    def reciprocal(self):
        return _dispatch(_op("reciprocal"), (self,))

    def sin(self):
        return _dispatch(_op("sin"), (self,))

    def tan(self):
        return _dispatch(_op("tan"), (self,))

    def asin(self):
        return _dispatch(_op("asin"), (self,))

    def acos(self):
        return _dispatch(_op("acos"), (self,))

    def atan(self):
        return _dispatch(_op("atan"), (self,))

    def sinh(self):
        return _dispatch(_op("sinh"), (self,))

    def cosh(self):
        return _dispatch(_op("cosh"), (self,))

    def expm1(self):
        return _dispatch(_op("expm1"), (self,))

    def exp2(self):
        return _dispatch(_op("exp2"), (self,))

    def log2(self):
        return _dispatch(_op("log2"), (self,))

    def log10(self):
        return _dispatch(_op("log10"), (self,))

    def floor(self):
        return _dispatch(_op("floor"), (self,))

    def ceil(self):
        return _dispatch(_op("ceil"), (self,))

    def round(self):
        return _dispatch(_op("round"), (self,))

    def trunc(self):
        return _dispatch(_op("trunc"), (self,))

    def frac(self):
        return _dispatch(_op("frac"), (self,))

    def square(self):
        return self**2  # as PyTorch: PowBackward0

    def flip(self, *dims):
        dims = _shape_arg(dims)
        return _dispatch(_op("flip"), (self,), {"dims": tuple(_dim(d, self.ndim) for d in dims)})

    def roll(self, shifts, dims=None):
        shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
        if dims is None:  # as PyTorch: the flattened tensor rolls, the shape stays
            if len(shifts) != 1:
                raise RuntimeError(
                    f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0"
                )
            return _dispatch(_op("roll"), (self,), {"shifts": shifts[0], "dims": None})
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        if len(shifts) != len(dims):
            raise RuntimeError(
                f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}"
            )
        attrs = {"shifts": shifts, "dims": tuple(_dim(d, self.ndim) for d in dims)}
        return _dispatch(_op("roll"), (self,), attrs)

    def cumsum(self, dim, dtype=None):
        return _dispatch(_op("cumsum"), (self,), {"dim": _dim(dim, self.ndim), "dtype": dtype})

    def tril(self, diagonal=0):
        if self.ndim < 2:
            raise RuntimeError("tril: input tensor must have at least 2 dimensions")
        return _dispatch(_op("tril"), (self,), {"diagonal": diagonal})

    def triu(self, diagonal=0):
        if self.ndim < 2:
            raise RuntimeError("triu: input tensor must have at least 2 dimensions")
        return _dispatch(_op("triu"), (self,), {"diagonal": diagonal})

    def cos(self):
        return _dispatch(_op("cos"), (self,))

    def tanh(self):
        return _dispatch(_TANH, (self,))

    def sigmoid(self):
        return _dispatch(_op("sigmoid"), (self,))

    def relu(self):
        return _dispatch(_op("relu"), (self,))

    def erf(self):
        return _dispatch(_op("erf"), (self,))

    def gelu(self, approximate="none"):
        if approximate not in ("none", "tanh"):
            raise RuntimeError(
                f"approximate argument must be either none or tanh, got {approximate!r}"
            )
        return _dispatch(_op("gelu"), (self,), {"approximate": approximate})

    def clamp(self, min=None, max=None):
        if min is None and max is None:
            raise RuntimeError("clamp(): At least one of 'min' or 'max' must not be None")
        return _dispatch(_op("clamp"), (self,), {"min": _opt_scalar(min), "max": _opt_scalar(max)})

    clip = clamp

    def clamp_min(self, min):
        return _dispatch(_op("clamp_min"), (self,), {"min": _scalar(min)})

    def clamp_max(self, max):
        return _dispatch(_op("clamp_max"), (self,), {"max": _scalar(max)})

    def isnan(self):
        return _dispatch(_op("isnan"), (self,))

    def isinf(self):
        return _dispatch(_op("isinf"), (self,))

    def isfinite(self):
        return _dispatch(_op("isfinite"), (self,))

    def sort(self, dim=-1, descending=False, stable=False):
        """``(values, indices)`` along ``dim`` (always stable here)."""
        attrs = {"dim": _dim(dim, max(self.ndim, 1)) if self.ndim else 0, "descending": descending}
        return return_types.sort(*_dispatch(_op("sort"), (self,), attrs))

    def argsort(self, dim=-1, descending=False, stable=False):
        return self.sort(dim, descending, stable).indices

    def topk(self, k, dim=-1, largest=True, sorted=True):
        """The ``k`` largest (or smallest) values along ``dim`` and their indices, in order."""
        attrs = {"k": int(k), "dim": _dim(dim, max(self.ndim, 1)) if self.ndim else 0}
        attrs["largest"] = largest
        return return_types.topk(*_dispatch(_op("topk"), (self,), attrs))

    # -- new tensors like this one ----------------------------------------------------------
    def _like(self, dtype, device):
        return {
            "dtype": self.dtype if dtype is None else dtype,
            "device": self.device if device is None else device,
        }

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        return zeros(*size, **self._like(dtype, device), requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        return ones(*size, **self._like(dtype, device), requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        return empty(*size, **self._like(dtype, device), requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        return full(size, fill_value, **self._like(dtype, device), requires_grad=requires_grad)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        return tensor(data, **self._like(dtype, device), requires_grad=requires_grad)

    def type_as(self, other):
        return self.to(dtype=other.dtype, device=other.device)

    def maximum(self, other):
        return _dispatch(_op("maximum"), (self, _tensor_arg(other, self)))

    def minimum(self, other):
        return _dispatch(_op("minimum"), (self, _tensor_arg(other, self)))

    def masked_fill(self, mask, value):
        mask = _tensor_arg(mask, self)
        if mask._data.dtype.kind != "b":
            raise RuntimeError(
                f"masked_fill only supports boolean masks, but got mask with dtype {mask.dtype}"
            )
        if isinstance(value, Tensor):
            if value.dim() != 0:
                raise RuntimeError(
                    "masked_fill only supports a 0-dimensional value tensor, but got tensor with "
                    f"{value.dim()} dimension(s)."
                )
            return where(mask, value.to(self.dtype), self)
        return _dispatch(_op("masked_fill"), (self, mask), {"value": _scalar(value)})

    def logical_and(self, other):
        return _dispatch(_op("logical_and"), (self, _tensor_arg(other, self)))

    def logical_or(self, other):
        return _dispatch(_op("logical_or"), (self, _tensor_arg(other, self)))

    def logical_xor(self, other):
        return _dispatch(_op("logical_xor"), (self, _tensor_arg(other, self)))

    def logical_not(self):
        return _dispatch(_op("logical_not"), (self,))

    def eq(self, other):
        return self.__eq__(other)

    def ne(self, other):
        return self.__ne__(other)

    def lt(self, other):
        return self.__lt__(other)

    def le(self, other):
        return self.__le__(other)

    def gt(self, other):
        return self.__gt__(other)

    def ge(self, other):
        return self.__ge__(other)

    def any(self, dim=None, keepdim=False):
        return _bool_reduction(self, "any", dim, keepdim)

    def all(self, dim=None, keepdim=False):
        return _bool_reduction(self, "all", dim, keepdim)

    def data_ptr(self) -> int:
        """The address of the first element (the same for tensors sharing that memory)."""
        data = self._data
        interface = getattr(data, "__cuda_array_interface__", None) or data.__array_interface__
        return int(interface["data"][0])

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return bool(np.allclose(np.asarray(self), np.asarray(other), rtol, atol, equal_nan))

    def equal(self, other):
        return self.shape == other.shape and bool(
            np.array_equal(np.asarray(self), np.asarray(other))
        )

    # -- reductions -------------------------------------------------------------------------
    def sum(self, dim=None, keepdim=False, *, dtype=None):
        if dim is None:
            return _dispatch(_op("sum"), (self,), {"dtype": dtype})
        dims = _dims(dim, self.ndim)
        return _dispatch(_op("sum_dim"), (self,), {"dim": dims, "keepdim": keepdim, "dtype": dtype})

    def mean(self, dim=None, keepdim=False, *, dtype=None):
        if dtype is not None:
            return self.to(dtype).mean(dim, keepdim)
        if not self.is_floating_point():
            raise RuntimeError(
                "mean(): could not infer output dtype. Input dtype must be either a floating "
                f"point or complex dtype. Got: {self.dtype._legacy[:-6]}"
            )
        if dim is None:
            return _dispatch(_op("mean"), (self,))
        return _dispatch(
            _op("mean_dim"), (self,), {"dim": _dims(dim, self.ndim), "keepdim": keepdim}
        )

    def prod(self, dim=None, keepdim=False):
        if dim is None:
            return _dispatch(_op("prod"), (self,))
        return _dispatch(
            _op("prod_dim"), (self,), {"dim": _dims(dim, self.ndim), "keepdim": keepdim}
        )

    def _minmax(self, name, dim, keepdim):
        if dim is None:
            return _dispatch(_op(name), (self,))
        if isinstance(dim, Tensor):
            return self.maximum(dim) if name == "max" else self.minimum(dim)
        values, indices = _dispatch(
            _op(name + "_dim"), (self,), {"dim": _dim(dim, self.ndim), "keepdim": keepdim}
        )
        return getattr(return_types, name)(values, indices)

    def max(self, dim=None, keepdim=False):
        return self._minmax("max", dim, keepdim)

    def min(self, dim=None, keepdim=False):
        return self._minmax("min", dim, keepdim)

    def amax(self, dim=(), keepdim=False):
        dims = _dims(dim, self.ndim) if dim not in ((), None) else None
        return _dispatch(_op("amax"), (self,), {"dim": dims, "keepdim": keepdim})

    def amin(self, dim=(), keepdim=False):
        dims = _dims(dim, self.ndim) if dim not in ((), None) else None
        return _dispatch(_op("amin"), (self,), {"dim": dims, "keepdim": keepdim})

    def argmax(self, dim=None, keepdim=False):
        d = None if dim is None else _dim(dim, self.ndim)
        return _dispatch(_op("argmax"), (self,), {"dim": d, "keepdim": keepdim})

    def argmin(self, dim=None, keepdim=False):
        d = None if dim is None else _dim(dim, self.ndim)
        return _dispatch(_op("argmin"), (self,), {"dim": d, "keepdim": keepdim})

    def _var_args(self, dim, unbiased, keepdim, correction):
        if correction is None:
            correction = 1 if unbiased in (None, True) else 0
        dims = None if dim is None else _dims(dim, self.ndim)
        return {"dim": dims, "correction": correction, "keepdim": keepdim}

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        return _dispatch(_op("var"), (self,), self._var_args(dim, unbiased, keepdim, correction))

    def _spread_mean(self, name, dim, unbiased, keepdim, correction):
        """``var_mean`` / ``std_mean`` (functions only in PyTorch): one node, two outputs."""
        return _dispatch(_op(name), (self,), self._var_args(dim, unbiased, keepdim, correction))

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        return _dispatch(_op("std"), (self,), self._var_args(dim, unbiased, keepdim, correction))

    def norm(self, p="fro", dim=None, keepdim=False):
        ord = 2 if p in ("fro", None) else p
        if not isinstance(ord, (int, float)):  # (a RuntimeError in PyTorch too)
            raise RuntimeError(f"norm(): order {p!r} not supported: p must be a number or 'fro'")
        dims = None if dim is None else _dims(dim, self.ndim)
        return _dispatch(_op("norm"), (self,), {"ord": ord, "dim": dims, "keepdim": keepdim})

    def logsumexp(self, dim, keepdim=False):
        return _dispatch(
            _op("logsumexp"), (self,), {"dim": _dims(dim, self.ndim), "keepdim": keepdim}
        )

    def softmax(self, dim):
        return _dispatch(_op("softmax"), (self,), {"dim": _dim(dim, self.ndim)})

    def log_softmax(self, dim):
        return _dispatch(_op("log_softmax"), (self,), {"dim": _dim(dim, self.ndim)})

    # -- linear algebra ---------------------------------------------------------------------
    def matmul(self, other):
        """Matrix product with PyTorch's dispatch: dot, mv, mm, bmm, or broadcast matmul."""
        other = _tensor_arg(other, self)
        a, b = self.ndim, other.ndim
        if a == 0 or b == 0:
            raise RuntimeError(
                f"both arguments to matmul need to be at least 1D, but they are {a}D and {b}D"
            )
        if a == 1 and b == 1:
            return self.dot(other)
        if a == 2 and b == 1:
            return self.mv(other)
        if a == 1 and b == 2:
            out = self.unsqueeze(0).mm(other)
            return _dispatch(_op("squeeze_dim_"), (out,), {"dim": 0})
        if a == 2 and b == 2:
            return self.mm(other)
        if a == 3 and b == 3 and self.shape[0] != other.shape[0]:
            # a batch of one that requires grad is squeezed, so that the product folds into
            # one mm and its gradient is not expanded over the other's batch (as ATen)
            if self.shape[0] == 1 and self._requires_grad:
                return self.squeeze(0).matmul(other)
            if other.shape[0] == 1 and other._requires_grad:
                return self.matmul(other.squeeze(0))
        if _should_fold(self, other):
            return _matmul_folded(self, other)
        return _matmul_batched(self, other)

    def mm(self, mat2):
        _expect_tensor(mat2, "mm", "mat2", 1)
        if self.ndim != 2 or mat2.ndim != 2:
            raise RuntimeError(f"mm(): expected 2-D tensors, got {self.ndim}-D and {mat2.ndim}-D")
        if self._data.dtype != mat2._data.dtype:
            _same_dtype("mm", self, mat2)
        return _dispatch(_MM, (self, mat2))

    def mv(self, vec):
        _expect_tensor(vec, "mv", "vec", 1)
        if self.ndim != 2 or vec.ndim != 1:
            raise RuntimeError(
                f"vector + matrix @ vector expected, got 1, {self.ndim}, {vec.ndim} (shapes "
                f"{list(self.shape)} and {list(vec.shape)})"
            )
        _same_dtype("mv", self, vec)
        return _dispatch(_op("mv"), (self, vec))

    def dot(self, tensor):
        _expect_tensor(tensor, "dot", "tensor", 1)
        _same_dtype("dot", self, tensor)
        if self.ndim != 1 or tensor.ndim != 1:
            raise RuntimeError(
                f"1D tensors expected, but got {self.ndim}D and {tensor.ndim}D tensors"
            )
        if self.shape[0] != tensor.shape[0]:
            raise RuntimeError(
                f"inconsistent tensor size, expected tensor [{self.shape[0]}] and src "
                f"[{tensor.shape[0]}] to have the same number of elements, but got "
                f"{self.shape[0]} and {tensor.shape[0]} elements respectively"
            )
        return _dispatch(_op("dot"), (self, tensor))

    def bmm(self, mat2):
        _expect_tensor(mat2, "bmm", "mat2", 1)
        if self.ndim != 3 or mat2.ndim != 3:
            raise RuntimeError(f"batch1 must be a 3D tensor, got {self.ndim}D and {mat2.ndim}D")
        _same_dtype("bmm", self, mat2)
        return _dispatch(_op("bmm"), (self, mat2))

    # -- shape ops and views ----------------------------------------------------------------
    def view(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], dtypes.dtype):
            raise NotImplementedError("view(dtype) is not supported by nbgrad")
        return _dispatch(_op("view"), (self,), {"shape": self._infer_shape(_shape_arg(shape))})

    def view_as(self, other):
        return self.view(other.shape)

    def reshape(self, *shape):
        shape = self._infer_shape(_shape_arg(shape))
        # as PyTorch's reshape: view if contiguous, _reshape_alias if viewable, else
        # _unsafe_view(clone()) (ViewBackward0 / ReshapeAliasBackward0 / UnsafeViewBackward0)
        if self._data.flags.c_contiguous:
            return _dispatch(_op("view"), (self,), {"shape": shape})
        try:
            np.reshape(self._data, shape, copy=False)
        except ValueError:
            clone = self._clone("contiguous")  # as ATen's _reshape_copy
            return _dispatch(_op("unsafe_view"), (clone,), {"shape": shape})
        return _dispatch(_op("reshape_alias"), (self,), {"shape": shape})

    def reshape_as(self, other):
        return self.reshape(other.shape)

    def _infer_shape(self, shape):
        n = self._data.size
        if shape.count(-1) > 1:
            raise RuntimeError("only one dimension can be inferred")
        if -1 in shape:
            known = math.prod(s for s in shape if s != -1)
            if known == 0 or n % known:
                raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {n}")
            shape = tuple(n // known if s == -1 else s for s in shape)
        if math.prod(shape) != n:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {n}")
        return shape

    def t(self):
        if self.ndim > 2:
            raise RuntimeError(
                f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D"
            )
        return _dispatch(_op("t"), (self,))

    def transpose(self, dim0, dim1):
        n = self.ndim
        return _dispatch(_op("transpose"), (self,), {"dim0": _dim(dim0, n), "dim1": _dim(dim1, n)})

    def swapaxes(self, axis0, axis1):
        return self.transpose(axis0, axis1)

    def permute(self, *dims):
        dims = _shape_arg(dims)
        n = self.ndim
        if len(dims) != n:
            raise RuntimeError(
                f"permute(sparse_coo): number of dimensions in the tensor input does not match "
                f"the length of the desired ordering of dimensions i.e. input.dim() = {n} is not "
                f"equal to len(dims) = {len(dims)}"
            )
        dims = tuple(_dim(d, n) for d in dims)
        if len(set(dims)) != n:
            raise RuntimeError("permute(): duplicate dims are not allowed.")
        return _dispatch(_op("permute"), (self,), {"dims": dims})

    def expand(self, *sizes):
        sizes = _shape_arg(sizes)
        if len(sizes) < self.ndim:
            raise RuntimeError(
                f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to "
                f"the number of dimensions in the tensor ({self.ndim})"
            )
        lead = len(sizes) - self.ndim
        final = []
        for i, s in enumerate(sizes):
            if i >= lead:
                cur = self._data.shape[i - lead]
                if s == -1:
                    s = cur
                elif cur != 1 and cur != s:
                    raise RuntimeError(
                        f"The expanded size of the tensor ({s}) must match the existing size "
                        f"({cur}) at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  "
                        f"Tensor sizes: {list(self.shape)}"
                    )
            elif s == -1:
                raise RuntimeError(
                    "The expanded size of the tensor (-1) isn't allowed in a leading, "
                    "non-existing dimension 0"
                )
            final.append(s)
        return _dispatch(_op("expand"), (self,), {"size": tuple(final)})

    def expand_as(self, other):
        return self.expand(other.shape)

    def broadcast_to(self, shape):
        return self.expand(shape)

    def squeeze(self, dim=None):
        if dim is None:
            return _dispatch(_op("squeeze"), (self,))
        return _dispatch(_op("squeeze_dim"), (self,), {"dim": _dim(dim, self.ndim)})

    def unsqueeze(self, dim):
        return _dispatch(_op("unsqueeze"), (self,), {"dim": _dim(dim, self.ndim + 1)})

    def flatten(self, start_dim=0, end_dim=-1):
        if self.ndim == 0:
            return self.reshape(1)
        s, e = _dim(start_dim, self.ndim), _dim(end_dim, self.ndim)
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        if s == e:
            return self
        shape = self.shape
        return self.reshape(shape[:s] + (math.prod(shape[s : e + 1]),) + shape[e + 1 :])

    def select(self, dim, index):
        d = _dim(dim, self.ndim)
        size = self._data.shape[d]
        if not -size <= index < size:
            raise IndexError(
                f"select(): index {index} out of range for tensor of size {list(self.shape)} at "
                f"dimension {d}"
            )
        return _dispatch(_op("select"), (self,), {"dim": d, "index": int(index) % size})

    def narrow(self, dim, start, length):
        if not self.ndim:
            raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
        d = _dim(dim, self.ndim)
        size = self._data.shape[d]
        if not -size <= start <= size:
            raise IndexError(
                f"start out of range (expected to be in range of [{-size}, {size}], but got "
                f"{start})"
            )
        start = start + size if start < 0 else start
        if length < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        if start + length > size:
            raise RuntimeError(
                f"start ({start}) + length ({length}) exceeds dimension size ({size})."
            )
        return _dispatch(
            _op("slice"), (self,), {"dim": d, "start": start, "end": start + length, "step": 1}
        )

    def diagonal(self, offset=0, dim1=0, dim2=1):
        """The diagonal of dims ``dim1`` and ``dim2`` as the last dim of a view.

        Example:
            >>> import nbgrad as ng
            >>> ng.arange(6.0).view(2, 3).diagonal(1)
            tensor([1., 5.])
        """
        n = self.ndim
        d1, d2 = _dim(dim1, n), _dim(dim2, n)
        if d1 == d2:
            raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        return _dispatch(_op("diagonal"), (self,), {"offset": int(offset), "dim1": d1, "dim2": d2})

    def repeat(self, *repeats):
        """Tile the tensor ``repeats[i]`` times along dim ``i`` (leading dims added as needed).

        Example:
            >>> import nbgrad as ng
            >>> ng.tensor([1, 2]).repeat(2, 2)
            tensor([[1, 2, 1, 2],
                    [1, 2, 1, 2]])
        """
        if not repeats:
            raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
        repeats = _shape_arg(repeats)
        if len(repeats) < self.ndim:
            raise RuntimeError(
                "Number of dimensions of repeat dims can not be smaller than number of "
                "dimensions of tensor"
            )
        shape = (1,) * (len(repeats) - self.ndim) + tuple(self.shape)
        if any(r < 0 for r in repeats):
            sizes = [r * s for r, s in zip(repeats, shape)]
            bad = next(s for s in sizes if s < 0)
            raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {sizes}")
        return _dispatch(_op("repeat"), (self,), {"repeats": tuple(int(r) for r in repeats)})

    def unbind(self, dim=0):
        if not self.ndim:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        return _dispatch(_op("unbind"), (self,), {"dim": _dim(dim, self.ndim)})

    def split_with_sizes(self, split_sizes, dim=0):
        """``split`` into pieces of the given sizes (``SplitWithSizesBackward0``)."""
        return self.split(list(split_sizes), dim)

    def split(self, split_size_or_sections, dim=0):
        d = _dim(dim, self.ndim)
        n = self._data.shape[d]
        if isinstance(split_size_or_sections, (list, tuple)):
            sizes = tuple(int(s) for s in split_size_or_sections)
            if sum(sizes) != n:
                raise RuntimeError(
                    f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's "
                    f"size at dimension {d}), but got split_sizes={list(sizes)}"
                )
            return _dispatch(_op("split_with_sizes"), (self,), {"sizes": sizes, "dim": d})
        if not isinstance(split_size_or_sections, (int, np.integer)):
            raise TypeError(
                "split(): argument 'split_size' must be an int or a list of ints, not "
                f"{type(split_size_or_sections).__name__}"
            )
        step = int(split_size_or_sections)
        if step <= 0:
            raise RuntimeError(
                f"split expects split_size be non-negative, but got split_size={step}"
            )
        sizes = tuple(min(step, n - i) for i in range(0, n, step)) or (0,)
        return _dispatch(_op("split"), (self,), {"sizes": sizes, "dim": d})

    def chunk(self, chunks, dim=0):
        if chunks <= 0:
            raise RuntimeError("chunk expects `chunks` to be greater than 0")
        n = self.shape[_dim(dim, self.ndim)]
        return self.split(max(-(-n // chunks), 1), dim)

    def gather(self, dim, index):
        index = _index_tensor(index, "gather")
        d = _dim(dim, self.ndim)
        _check_gather_index("gather", self, d, index, None)
        return _dispatch(_op("gather"), (self, index), {"dim": d})

    def scatter_add(self, dim, index, src):
        index = _index_tensor(index, "scatter_add")
        src = _expect_tensor(src, "scatter_add", "src", 3)
        d = _dim(dim, self.ndim)
        _check_gather_index("scatter_add", self, d, index, src)
        return _dispatch(_op("scatter_add"), (self, index, src), {"dim": d})

    def index_select(self, dim, index):
        index = _index_tensor(index, "index_select")
        if index.ndim > 1:
            raise IndexError("index_select(): Index is supposed to be a vector")
        d = _dim(dim, self.ndim)
        index = index.reshape(-1)
        bad = _out_of_range(index, self._data.shape[d] if self.ndim else 1)
        if bad is not None:
            if bad < 0:
                raise IndexError("index out of range in self")
            raise RuntimeError(
                f"index_select(): index {bad} is out of bounds for dimension {d} with size "
                f"{self._data.shape[d]}"
            )
        return _dispatch(_op("index_select"), (self, index), {"dim": d})

    def index_add(self, dim, index, source):
        index = _index_tensor(index, "index_add")
        if index.ndim > 1:
            raise IndexError(
                f"index_add(): Index is supposed to be a vector, got shape {list(index.shape)}"
            )
        source = _expect_tensor(source, "index_add", "source", 3)
        d = _dim(dim, self.ndim)
        if self.ndim and source.ndim:
            expected = list(self.shape)
            expected[d] = index.numel()
            if list(source.shape) != expected:
                raise RuntimeError(
                    "source tensor shape must match self tensor shape, excluding the specified "
                    f"dimension, and have one slice per index. Got self.shape = "
                    f"{list(self.shape)} source.shape = {list(source.shape)}, "
                    f"{index.numel()} indices"
                )
        size = self._data.shape[d] if self.ndim else 1
        bad = _out_of_range(index, size)
        if bad is not None:
            raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {size}")
        return _dispatch(_op("index_add"), (self, index, source), {"dim": d})

    def _index_backward(self, shape, indices, accumulate):
        return _dispatch(
            _op("index_backward"),
            (self,),
            {"shape": tuple(shape), "indices": indices, "accumulate": accumulate},
        )

    def _index_put(self, indices, values):
        return _dispatch(_op("index_put"), (self, _arg(values)), {"indices": indices})

    def __getitem__(self, key):
        """Basic indexing makes views (``SelectBackward0``, ``SliceBackward0``, ...); advanced
        indexing makes a copy (``IndexBackward0``), as in PyTorch."""
        key = _scalar_tensor_indices(key if isinstance(key, tuple) else (key,))
        t = self
        dim = 0
        advanced = []
        has_advanced = False
        n_specified = sum(
            1 for k in key if k is not None and k is not Ellipsis and not _is_bool_mask(k)
        )
        n_specified += sum(_bool_ndim(k) for k in key if _is_bool_mask(k))
        if n_specified > self.ndim:
            raise IndexError(f"too many indices for tensor of dimension {self.ndim}")
        for k in key:
            if k is Ellipsis:
                skip = self.ndim - n_specified
                dim += skip
                advanced.extend([slice(None)] * skip)
                n_specified += skip  # only one Ellipsis
            elif k is None:
                t = t.unsqueeze(dim)
                advanced.append(slice(None))
                dim += 1
            elif isinstance(k, (int, np.integer)) and not isinstance(k, bool):
                size = t.shape[dim]
                if not -size <= k < size:
                    raise IndexError(
                        f"index {k} is out of bounds for dimension {dim} with size {size}"
                    )
                t = t.select(dim, int(k))
            elif isinstance(k, slice):
                size = t.shape[dim]
                start, stop, step = k.indices(size)
                if k.step is not None and k.step <= 0:
                    raise ValueError("step must be greater than zero")
                if (start, stop, step) != (0, size, 1):
                    t = _dispatch(
                        _op("slice"),
                        (t,),
                        {"dim": dim, "start": start, "end": max(stop, start), "step": step},
                    )
                advanced.append(slice(None))
                dim += 1
            else:
                idx = _index_array(k, self._device)
                advanced.append(idx)
                has_advanced = True
                dim += idx.ndim if idx.dtype.kind == "b" else 1
        if has_advanced:
            try:
                t = _dispatch(_op("index"), (t,), {"indices": tuple(advanced)})
            except (IndexError, RuntimeError) as e:
                raise IndexError(str(e)) from None
        elif t is self:
            t = (
                _dispatch(
                    _op("slice"), (t,), {"dim": 0, "start": 0, "end": self.shape[0], "step": 1}
                )
                if self.ndim
                else self.view(())
            )
        return t

    def __setitem__(self, key, value):
        """``t[key] = value``: ``CopySlices`` for basic keys, ``IndexPutBackward0`` otherwise."""
        keys = key = _scalar_tensor_indices(key if isinstance(key, tuple) else (key,))
        if isinstance(value, Tensor) and value.ndim and value.shape[0] == 1:
            # as PyTorch (slicePrefix1sSize): leading 1s of the value's shape are dropped, so
            # that ``t[1] = ng.tensor([2.0])`` works
            shape = value.shape
            while shape and shape[0] == 1:
                shape = shape[1:]
            value = value.reshape(shape)
        if all(k is Ellipsis or (isinstance(k, slice) and k == slice(None)) for k in keys):
            self.copy_(_tensor_arg(value, self))  # ``t[...] = v`` / ``t[:] = v``: CopyBackwards
            return
        if all(k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice)) for k in keys):
            view = self[key]
            view._view_copy_(_tensor_arg(value, self))
            return
        indices = tuple(
            _index_array(k, self._device)
            if not (k is None or k is Ellipsis or isinstance(k, (int, slice)))
            else k
            for k in keys
        )
        self._inplace(_op("index_put"), (_arg(value),), {"indices": indices})

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
        if 0 in self._data.strides:
            _check_no_internal_overlap(self._data)
        grad_on = _grad_state.enabled
        base = self._base
        if grad_on:
            if (
                base is not None
                and getattr(self, "_no_grad_view", 0)
                and op.differentiable
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
        needs_graph = (
            grad_on
            and op.differentiable
            and (
                self._requires_grad
                or any(isinstance(o, Tensor) and o._requires_grad for o in others)
            )
        )
        if needs_graph and base is not None and self._view_chain is None:
            raise RuntimeError(_multiple_views_message(self))
        if not needs_graph:
            ufunc = _INPLACE_UFUNCS.get(op.name)
            other = others[0] if others else None
            if (
                ufunc is not None
                and not _forward_listeners  # NOTE [Forward listeners]
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
                try:  # NumPy checks the shapes before it writes anything
                    if op.quiet:  # 0 / 0 and the like: nan or inf quietly, as PyTorch
                        with np.errstate(all="ignore"):
                            _ufunc_inplace(ufunc, self._data, operand, alpha)
                    else:
                        _ufunc_inplace(ufunc, self._data, operand, alpha)
                except ValueError as e:
                    raise _inplace_shape_error(op, self, other, e) from None
                self._counter()[0] += 1
                return self
            with _NoGrad():
                result = _dispatch(op, (self, *others), attrs)
            self._write(result)
            return self
        shadow = _wrap(
            self._data.copy() if "self" in op.node_class._saved_names else self._data,
            self._device,
            self._requires_grad,
        )
        shadow.grad_fn = self.grad_fn
        shadow._output_nr = self._output_nr
        if self.grad_fn is None and self._requires_grad:
            shadow._grad_accumulator = self._get_grad_accumulator()
        result = _dispatch(op, (shadow, *others), attrs)
        self._write(result)
        node = result.grad_fn
        if base is None or self._view_chain is None:
            self._set_history(node, 0)
            if base is None:
                _regenerate_views(self, self)  # see NOTE [Views of a modified base]
        else:
            from nbgrad.autograd.function import CopySlices

            base_edge = _edge_of(base)
            copy_slices = CopySlices(
                base_edge, node, self._view_chain, base._metadata_tuple(), base._data.strides
            )
            base._set_history(copy_slices, 0)
            with _EnableGrad():
                regenerated = base
                from nbgrad.derivatives import _apply_view_chain

                regenerated = _apply_view_chain(base, self._view_chain)
            self._set_history(regenerated.grad_fn, 0)
            for slot in node._tensor_slots:  # see NOTE [In place on a view: the saved result]
                saved = getattr(node, slot, None)
                if type(saved) is SavedTensor and saved._is_output:
                    saved._mark_inplace_on_view(self.grad_fn)
            _regenerate_views(base, self)  # see NOTE [Views of a modified base]
        return self

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
        return self._inplace(_ADD, (_arg(other),), {"alpha": alpha})

    def sub_(self, other, *, alpha=1):
        return self._inplace(_SUB, (_sub_arg(self, other),), {"alpha": alpha})

    def mul_(self, other):
        return self._inplace(_MUL, (_arg(other),), _NO_ATTRS)

    def div_(self, other):
        return self._inplace(_DIV, (_arg(other),), _NO_ATTRS)

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
                backend.to_numpy(self._data, self._device).copy(),
                str(self._device),
                self._requires_grad,
            ),
        )


def _scalar_tensor_indices(keys):
    """A 0-d integer tensor in an index acts as a Python int, as in PyTorch: ``x[t]`` is a
    view (``SelectBackward0``), not advanced indexing."""
    return tuple(
        int(k._data)
        if type(k) is Tensor and k._data.ndim == 0 and k._data.dtype.kind in "iu"
        else k
        for k in keys
    )


def _bool_reduction(t, name, dim, keepdim):
    """``any`` / ``all``: a bool tensor (uint8 for uint8 input, as PyTorch), on ``t``'s device,
    computed by its own array module."""
    data = t._data
    axis = None if dim is None else _dims(dim, data.ndim)
    out = getattr(data, name)(axis=axis, keepdims=keepdim)
    xp = np if t._device is CPU else backend.get_xp(t._device)
    out = xp.asarray(out)
    if data.dtype == np.uint8:
        out = out.astype(np.uint8)
    return _wrap(out, t._device)


def _should_fold(tensor1, tensor2):
    """Whether matmul folds the batch of the larger operand into mm/mv (ATen's should_fold)."""
    larger = tensor1.ndim >= tensor2.ndim
    t1 = tensor1._data if larger else np.swapaxes(tensor2._data, -1, -2)
    dim_t2 = tensor2.ndim if larger else tensor1.ndim
    if not (t1.ndim >= 3 and dim_t2 <= 2):
        return False
    if (tensor2 if larger else tensor1)._requires_grad:
        # folding avoids a batched gradient for the small operand (not grad-mode aware, as ATen)
        return True
    if tensor1.ndim == 2:
        return False
    if t1.size == 0:
        return True
    shape, strides = t1.shape, t1.strides
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(t1.ndim - 2))


def _matmul_folded(tensor1, tensor2):
    """N-d @ 1-d/2-d (or the transpose) as one mm/mv, as ATen's ``_matmul_impl``."""
    transpose = tensor2.ndim > tensor1.ndim
    t1 = tensor2.mT if transpose else tensor1
    t2 = (tensor1.t() if tensor1.ndim == 2 else tensor1) if transpose else tensor2
    output_shape = tuple(t1.shape[:-1])
    folded = t1.reshape(math.prod(output_shape), t1.shape[-1])
    if t2.ndim == 2:
        output = _dispatch(
            _op("unsafe_view"), (folded.mm(t2),), {"shape": output_shape + (t2.shape[1],)}
        )
        return output.mT.contiguous() if transpose else output
    return _dispatch(_op("unsafe_view"), (folded.mv(t2),), {"shape": output_shape})


def _matmul_batched(tensor1, tensor2):
    """Broadcast batched matmul through bmm, as ATen's ``_matmul_impl``."""
    d1, d2 = tensor1.ndim, tensor2.ndim
    n = tensor1.shape[-2] if d1 > 1 else 1
    m1 = tensor1.shape[-1]
    m2 = tensor2.shape[-2] if d2 > 1 else tensor2.shape[0]
    p = tensor2.shape[-1] if d2 > 1 else 1
    try:
        batch = tuple(
            np.broadcast_shapes(tensor1.shape[: max(d1 - 2, 0)], tensor2.shape[: max(d2 - 2, 0)])
        )
    except ValueError:
        raise RuntimeError(
            f"The size of tensor a ({list(tensor1.shape[:-2])}) must match the size of tensor b "
            f"({list(tensor2.shape[:-2])}) at a non-singleton batch dimension"
        ) from None
    b = math.prod(batch)
    expanded1 = tensor1.expand(batch + (n, m1)).reshape(b, n, m1)
    if d2 == 1:
        expanded2 = tensor2.expand(batch + (m2,)).reshape(b, m2).unsqueeze(2)
    else:
        expanded2 = tensor2.expand(batch + (m2, p)).reshape(b, m2, p)
    if m1 != m2:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {m1}] but got: "
            f"[{b}, {m2}]."
        )
    output_shape = batch + ((n,) if d1 > 1 else ()) + ((p,) if d2 > 1 else ())
    return _dispatch(_op("unsafe_view"), (expanded1.bmm(expanded2),), {"shape": output_shape})


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
_graph.bind_tensor(Tensor, _wrap)  # see NOTE [The Tensor class, bound late]


def _rebuild(array, device, requires_grad):
    return tensor(array, device=device, requires_grad=requires_grad)


class _NoGrad:
    def __enter__(self):
        self.prev = _grad_state.enabled
        _grad_state.enabled = False

    def __exit__(self, *exc):
        _grad_state.enabled = self.prev


class _EnableGrad(_NoGrad):
    def __enter__(self):
        self.prev = _grad_state.enabled
        _grad_state.enabled = True


def _is_bool_mask(k):
    if isinstance(k, Tensor):
        return k._data.dtype.kind == "b"
    if isinstance(k, np.ndarray):
        return k.dtype.kind == "b"
    return isinstance(k, list) and len(k) > 0 and all(isinstance(v, bool) for v in k)


def _bool_ndim(k):
    return k.ndim if hasattr(k, "ndim") else 1


def _index_array(k, device):
    if isinstance(k, Tensor):
        if k._data.dtype.kind not in "biu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return k._data
    arr = np.asarray(k)
    if arr.dtype.kind not in "biu":
        raise IndexError(
            "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
            f"valid indices (got {type(k).__name__})"
        )
    if device is not CPU:
        arr = backend.transfer(arr, CPU, device)
    return arr


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


def _out_of_range(index, size):
    """The first index value outside ``[0, size)`` (PyTorch's gather/index checks), or None."""
    if not index._data.size:
        return None
    lo, hi = int(index._data.min()), int(index._data.max())
    return lo if lo < 0 else hi if hi >= size else None


def _check_gather_index(fname, self, dim, index, src):
    """PyTorch's checks of a gather / scatter index: same rank, no larger than ``self`` (and
    ``src``) apart from ``dim``, values in range; each a RuntimeError naming the shapes."""
    if not self.ndim and index.ndim <= 1:
        size = 1
    else:
        if index.ndim != self.ndim:
            what = "input" if src is None else "self"
            raise RuntimeError(
                f"{fname}(): Index tensor must have the same number of dimensions as {what} "
                f"tensor (index {list(index.shape)}, {what} {list(self.shape)})"
            )
        ishape, sshape = index.shape, self.shape
        for k in range(index.ndim):
            too_big = k != dim and ishape[k] > sshape[k]
            if src is None and too_big:
                raise RuntimeError(
                    f"Size does not match at dimension {k} expected index {list(ishape)} to be "
                    f"no larger than self {list(sshape)} apart from dimension {dim}"
                )
            if src is not None and (too_big or src.ndim != index.ndim or ishape[k] > src.shape[k]):
                raise RuntimeError(
                    f"Expected index {list(ishape)} to be no larger than self {list(sshape)} "
                    f"apart from dimension {dim} and to be no larger size than src "
                    f"{list(src.shape)}"
                )
        size = sshape[dim]
    bad = _out_of_range(index, size)
    if bad is not None:
        raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} with size {size}")


def _expect_tensor(x, fname, argname, position):
    if not isinstance(x, Tensor):
        raise TypeError(
            f"{fname}(): argument '{argname}' (position {position}) must be Tensor, not "
            f"{type(x).__name__}"
        )
    return x


def _same_dtype(fname, a, b):
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(
            f"{fname}(): expected both tensors to have the same dtype, but got {a.dtype} != "
            f"{b.dtype} (shapes {list(a.shape)} and {list(b.shape)})"
        )


def _index_tensor(index, fname):
    if not isinstance(index, Tensor):
        index = tensor(index)
    if index._data.dtype.kind not in "iu":
        raise RuntimeError(f"{fname}(): Expected dtype int64 for index, got {index.dtype}")
    return index


def _arg(x):
    """An operand: a Tensor stays, a Python/NumPy scalar becomes a plain number."""
    if type(x) is Tensor:
        return x
    if type(x) is float or type(x) is int or type(x) is bool:
        return x
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, numbers.Number):
        return x
    if isinstance(x, (np.ndarray, list, tuple)):
        return as_tensor(x)
    raise TypeError(f"unsupported operand type: {type(x).__name__}")


def _sub_arg(self, other):
    """``_arg(other)`` for a subtraction, which PyTorch refuses on bools."""
    other_bool = type(other) is bool or (
        isinstance(other, Tensor) and other._data.dtype.kind == "b"
    )
    if self._data.dtype.kind == "b" and other_bool and isinstance(other, Tensor):
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
            "or `logical_xor()` operator instead."
        )
    if self._data.dtype.kind == "b" or other_bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return _arg(other)


def _scalar(x):
    if isinstance(x, Tensor):
        if x.numel() != 1:
            raise RuntimeError("a Tensor with more than one element cannot be used as a scalar")
        return x.item()
    if isinstance(x, np.generic):
        return x.item()
    if not isinstance(x, numbers.Number):
        raise TypeError(f"expected a number, got {type(x).__name__}")
    return x


def _opt_scalar(x):
    return None if x is None else _scalar(x)


def _tensor_arg(x, like):
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (bool, int, float)):
        d = dtypes.result_type([like], [x])
        return _wrap(np.asarray(x, dtype=d.np), like._device)
    return as_tensor(x, device=like._device)


# ---- printing -------------------------------------------------------------------------------
def _format_tensor(t):
    data = backend.to_numpy(t._data, t._device)
    kind = data.dtype.kind
    if kind == "f" and data.size:
        # as PyTorch's _Formatter, from the elements that are shown (the summary of a big one):
        # integers print as "3.", unless the nonzero finite magnitudes span more than 1e3 or
        # pass 1e8, and other numbers as "3.1416", unless they span more than 1e3, pass 1e8 or
        # go below 1e-4: then "3.1416e+00"
        shown = _summarized(data) if data.size > 1000 else data
        nonzero = shown[np.isfinite(shown) & (shown != 0)]
        base = lambda v: _fmt_special(v) or f"{v:.0f}."  # noqa: E731
        if nonzero.size:
            absmax = float(np.abs(nonzero).max())
            absmin = float(np.abs(nonzero).min())
            wide = absmax / absmin > 1e3 or absmax > 1e8
            if not bool(np.all(nonzero == np.ceil(nonzero))):
                wide = wide or absmin < 1e-4
                base = lambda v: _fmt_special(v) or f"{v:.4f}"  # noqa: E731
            if wide:
                base = lambda v: _fmt_special(v) or f"{v:.4e}"  # noqa: E731
        # as PyTorch's _Formatter: every element right-justified to the widest nonzero finite
        # one (the extremes, and the smallest magnitude: a long exponent); at least 1
        width = 1
        if nonzero.size:
            widest = (nonzero.max(), nonzero.min(), nonzero[np.argmin(np.abs(nonzero))])
            width = max(len(base(float(v))) for v in widest)
    else:  # integers and bools: the widest of the values shown
        shown = _summarized(data) if data.size > 1000 else data
        base = str
        width = max((len(str(v)) for v in shown.ravel().tolist()), default=1)
    if data.size == 0:
        body = "[]"
    else:
        body = _layout(data, lambda v: base(v).rjust(width), width, data.size > 1000, 7)
    extras = []
    if t._device.type != "cpu":
        extras.append(f"device='{t._device}'")
    d = t.dtype
    if data.size == 0 and data.ndim != 1:  # as PyTorch (and NumPy): the shape, unless (0,)
        extras.append(f"size={tuple(data.shape)}")
    if d is not dtypes.get_default_dtype() and (
        data.size == 0 or (d is not dtypes.int64 and d is not dtypes.bool)
    ):  # an empty tensor has no elements to tell an int64 or a bool one: always named
        extras.append(f"dtype={d}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif getattr(t, "_view_version", t._version) != t._version:
        # a no-grad view changed in place since: PyTorch's grad_fn of it is an error, shown so
        extras.append("grad_fn=<Invalid>")
    elif t._requires_grad:
        extras.append("requires_grad=True")
    # as PyTorch's _add_suffixes: a suffix that would pass 80 columns starts a new line
    text = "tensor(" + body
    last = len(text) - text.rfind("\n") + 1  # (PyTorch's count, one more than the length)
    for e in extras:
        if last + len(e) + 2 > 80:
            text += ",\n" + " " * len("tensor(") + e
            last = len("tensor(") + len(e)
        else:
            text += ", " + e
            last += len(e) + 2
    return text + ")"


def _layout(data, fmt, width, summarize, indent, edge=3):
    """PyTorch's ``_tensor_str_with_formatter``: rows of as many elements as fit in 80 columns
    after ``indent``, nested brackets, blank lines between blocks of 3 and more dims."""
    if data.ndim == 0:
        return fmt(data.item())
    if data.ndim == 1:
        values = data.tolist()
        if summarize and len(values) > 2 * edge:
            items = [fmt(v) for v in values[:edge]] + [" ..."] + [fmt(v) for v in values[-edge:]]
        else:
            items = [fmt(v) for v in values]
        per_line = max(1, (80 - indent) // (width + 2))
        lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = range(data.shape[0])
    if summarize and data.shape[0] > 2 * edge:
        rows = [*range(edge), None, *range(data.shape[0] - edge, data.shape[0])]
    parts = [
        "..." if i is None else _layout(data[i], fmt, width, summarize, indent + 1, edge)
        for i in rows
    ]
    return "[" + ("," + "\n" * (data.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _summarized(data, edge=3):
    """The elements a summarised print shows: ``edge`` first and last along every dimension
    (PyTorch's ``get_summarized_data``)."""
    if data.ndim == 0:
        return data
    rows = list(range(data.shape[0]))
    if len(rows) > 2 * edge:
        rows = rows[:edge] + rows[-edge:]
    if data.ndim == 1:
        return data[rows]
    return np.stack([_summarized(data[i], edge) for i in rows])


def _fmt_special(v):
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return None


# ---- creation -----------------------------------------------------------------------------
def _infer_np(data, dtype):
    """NumPy array for ``data`` with PyTorch's dtype inference."""
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    if isinstance(data, Tensor):
        arr = backend.to_numpy(data._data, data._device)
    elif isinstance(data, np.ndarray):
        arr = data
    else:
        if isinstance(data, (list, tuple)) and any(isinstance(v, Tensor) for v in _flat(data)):
            data = _nested_tolist(data)
        try:
            arr = np.array(data)
        except ValueError as e:
            raise ValueError(f"could not build a tensor from the given data: {e}") from None
        if arr.dtype.kind in "USV":
            raise TypeError(f"could not convert data of type {type(data).__name__} to a tensor")
        if arr.dtype == object:  # as PyTorch: None, a dict, an object among the numbers
            leaves = _flat(data) if isinstance(data, (list, tuple)) else [data]
            odd = next((v for v in leaves if not isinstance(v, numbers.Number)), data)
            raise RuntimeError(f"Could not infer dtype of {type(odd).__name__}")
        if dtype is None:
            if arr.dtype.kind == "f":
                arr = arr.astype(dtypes.get_default_dtype().np)
            elif arr.dtype.kind in "iu":
                arr = arr.astype(np.int64)
    if dtype is not None:
        if arr.dtype != dtype.np:
            arr = arr.astype(dtype.np)
    else:
        dtypes.from_numpy_dtype(arr.dtype)
    return arr


def _flat(data):
    for v in data:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        else:
            yield v


def _nested_tolist(data):
    if isinstance(data, Tensor):
        return data.tolist()
    if isinstance(data, (list, tuple)):
        return [_nested_tolist(v) for v in data]
    return data


def _place(arr, device, requires_grad):
    device = backend.as_device(device)
    if device is not CPU and device != CPU:
        arr = backend.transfer(arr, CPU, device)
    else:
        device = CPU
    t = _wrap(arr, device)
    if requires_grad is not False:
        t.requires_grad_(requires_grad)  # (a TypeError unless a bool)
    return t


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of ``data`` (nested lists, scalars, arrays or a Tensor).

    Example:
        >>> import nbgrad as ng
        >>> ng.tensor([1, 2]).dtype, ng.tensor([1.0, 2.0]).dtype
        (nbgrad.int64, nbgrad.float32)
    """
    arr = _infer_np(data, dtype)
    arr = np.array(arr, copy=True)
    return _place(arr, device, requires_grad)


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but shares memory with ``data`` when it can."""
    if isinstance(data, Tensor):
        out = data
        if dtype is not None or device is not None:
            out = data.to(dtype=dtype, device=device)
        return out
    arr = _infer_np(data, dtype)
    return _place(arr, device, False)


def from_numpy(ndarray):
    """A tensor sharing memory with ``ndarray`` (changes to one show in the other)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    dtypes.from_numpy_dtype(ndarray.dtype)
    return _wrap(ndarray, CPU)


def from_dlpack(ext_tensor):
    """A tensor sharing memory with any object that implements the DLPack protocol."""
    if hasattr(ext_tensor, "__dlpack_device__"):
        dev_type, dev_id = ext_tensor.__dlpack_device__()
        if dev_type == 2:  # kDLCUDA
            xp = backend.get_xp(backend.as_device(f"cuda:{dev_id}"))
            return _wrap(xp.from_dlpack(ext_tensor), backend.as_device(f"cuda:{dev_id}"))
    return _wrap(np.from_dlpack(ext_tensor), CPU)


def _creation_shape(size):
    shape = _shape_arg(size)
    for s in shape:
        if s < 0:
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {s}: {list(shape)}"
            )
    return shape


def _factory(fill, size, dtype, device, requires_grad, default=None):
    shape = _creation_shape(size)
    d = dtypes.as_dtype(dtype) if dtype is not None else (default or dtypes.get_default_dtype())
    dev = backend.as_device(device)
    xp = backend.get_xp(dev)
    arr = fill(xp, shape, d.np)
    t = _wrap(arr, dev)
    if requires_grad is not False:
        t.requires_grad_(requires_grad)  # (a TypeError unless a bool)
    return t


def zeros(*size, dtype=None, device=None, requires_grad=False):
    return _factory(lambda xp, s, d: xp.zeros(s, d), size, dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    return _factory(lambda xp, s, d: xp.ones(s, d), size, dtype, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False):
    return _factory(lambda xp, s, d: xp.empty(s, d), size, dtype, device, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    default = dtypes.scalar_dtype(fill_value) if dtype is None else None
    return _factory(
        lambda xp, s, d: xp.full(s, fill_value, d),
        (tuple(size),),
        dtype,
        device,
        requires_grad,
        default,
    )


def _like(t, dtype, device, fname="zeros_like"):
    _expect_tensor(t, fname, "input", 1)
    return (dtype if dtype is not None else t.dtype), (device if device is not None else t.device)


def zeros_like(input, dtype=None, device=None, requires_grad=False):
    d, dev = _like(input, dtype, device)
    return zeros(input.shape, dtype=d, device=dev, requires_grad=requires_grad)


def ones_like(input, dtype=None, device=None, requires_grad=False):
    d, dev = _like(input, dtype, device, "ones_like")
    return ones(input.shape, dtype=d, device=dev, requires_grad=requires_grad)


def empty_like(input, dtype=None, device=None, requires_grad=False):
    d, dev = _like(input, dtype, device, "empty_like")
    return empty(input.shape, dtype=d, device=dev, requires_grad=requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False):
    d, dev = _like(input, dtype, device, "full_like")
    return full(input.shape, fill_value, dtype=d, device=dev, requires_grad=requires_grad)


_rng = np.random.default_rng()


def manual_seed(seed):
    """Seed nbgrad's random number generator (``rand``, ``randn``, ``randint``, init)."""
    global _rng
    seed = int(seed)  # as PyTorch: anything int() takes (a TypeError or ValueError otherwise)
    _rng = np.random.default_rng(seed)
    return _rng


def _host_random(fill, size, dtype, device, requires_grad, default=None):
    shape = _creation_shape(size)
    d = dtypes.as_dtype(dtype) if dtype is not None else (default or dtypes.get_default_dtype())
    arr = np.asarray(fill(shape)).astype(d.np)
    return _place(arr, device, requires_grad)


def rand(*size, dtype=None, device=None, requires_grad=False):
    return _host_random(lambda s: _rng.random(s), size, dtype, device, requires_grad)


def randn(*size, dtype=None, device=None, requires_grad=False):
    return _host_random(lambda s: _rng.standard_normal(s), size, dtype, device, requires_grad)


def rand_like(input, dtype=None, device=None, requires_grad=False):
    """Uniform on [0, 1), of ``input``'s shape, dtype and device unless given."""
    d, dev = _like(input, dtype, device, "rand_like")
    return rand(input.shape, dtype=d, device=dev, requires_grad=requires_grad)


def randn_like(input, dtype=None, device=None, requires_grad=False):
    """Standard normal, of ``input``'s shape, dtype and device unless given."""
    d, dev = _like(input, dtype, device, "randn_like")
    return randn(input.shape, dtype=d, device=dev, requires_grad=requires_grad)


def randint(low, high=None, size=None, dtype=None, device=None, requires_grad=False):
    """``randint(high, size)`` or ``randint(low, high, size)``, as PyTorch's overloads."""
    if size is None and isinstance(high, (tuple, list, Size)):  # randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    if low >= high:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    return _host_random(
        lambda s: _rng.integers(low, high, s),
        (tuple(size),),
        dtype,
        device,
        requires_grad,
        dtypes.int64,
    )


def randperm(n, dtype=None, device=None):
    return _place(
        _rng.permutation(n).astype((dtypes.as_dtype(dtype) if dtype else dtypes.int64).np),
        device,
        False,
    )


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    if dtype is None:
        floating = any(isinstance(v, float) for v in (start, end, step))
        dtype = dtypes.get_default_dtype() if floating else dtypes.int64
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    arr = np.arange(start, end, step).astype(dtypes.as_dtype(dtype).np)
    return _place(arr, device, requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    d = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    if steps < 0:
        raise RuntimeError(f"number of steps must be non-negative, got {steps}")
    return _place(np.linspace(start, end, steps).astype(d.np), device, requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    d = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    for name, v in (("n", n), ("m", m)):
        if v is not None and v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    return _place(np.eye(n, m, dtype=d.np), device, requires_grad)


# ---- functions over several tensors ---------------------------------------------------------
def cat(tensors, dim=0):
    """Concatenate tensors along ``dim`` (``CatBackward0``)."""
    tensors = _tensor_list(tensors, "cat")
    ref = next((t for t in tensors if t.ndim), tensors[0])
    if ref.ndim == 0:
        raise RuntimeError("zero-dimensional tensor cannot be concatenated")
    d = _dim(dim, ref.ndim)
    if ref.ndim != 1:  # legacy empty 1-d tensors are skipped; among 1-d ones they concatenate
        tensors = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or tensors[:1]
    for i, t in enumerate(tensors):
        if t.ndim != ref.ndim or any(
            a != b for k, (a, b) in enumerate(zip(t.shape, ref.shape)) if k != d
        ):
            raise RuntimeError(
                f"Sizes of tensors must match except in dimension {d}. Expected size "
                f"{list(ref.shape)} but got size {list(t.shape)} for tensor number {i} in the list."
            )
    return _dispatch(_op("cat"), (list(tensors),), {"dim": d})


def stack(tensors, dim=0):
    """Stack same-shaped tensors along a new dimension ``dim`` (``StackBackward0``)."""
    tensors = _tensor_list(tensors, "stack")
    shape = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 "
                f"and {list(t.shape)} at entry {i}"
            )
    return _dispatch(_op("stack"), (list(tensors),), {"dim": _dim(dim, len(shape) + 1)})


def _tensor_list(tensors, fname):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(
            f"{fname}(): argument 'tensors' must be a tuple or list of Tensors, got "
            f"{type(tensors).__name__}"
        )
    if not tensors:  # (PyTorch's cat raises a ValueError here, its stack a RuntimeError)
        raise (ValueError if fname == "cat" else RuntimeError)(
            f"{fname}(): expected a non-empty list of Tensors"
        )
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(
                f"{fname}(): expected Tensor as element in argument 'tensors', got "
                f"{type(t).__name__}"
            )
    return list(tensors)


def where(condition, input=None, other=None):
    """Elementwise ``input if condition else other`` (``WhereBackward0``)."""
    if input is None and other is None:
        return tuple(tensor(a) for a in np.nonzero(np.asarray(condition)))
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        # two numbers: each a 0-d tensor of its own kind (int64, the default float, bool), as
        # PyTorch's wrapped numbers, so that where(c, 1.0, 0.0) is float32
        input, other = tensor(_scalar(input)), tensor(_scalar(other))
    if not isinstance(condition, Tensor):
        condition = tensor(condition)
    if condition._data.dtype.kind != "b":
        raise RuntimeError(
            "where expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{condition.dtype}"
        )
    return _dispatch(_op("where"), (condition, _arg(input), _arg(other)))


# rows used on the hot path, looked up once
from nbgrad import derivatives as _derivatives  # noqa: E402

_ADD = _derivatives.OPS["add"]
_SUB = _derivatives.OPS["sub"]
_MUL = _derivatives.OPS["mul"]
_DIV = _derivatives.OPS["div"]
_MM = _derivatives.OPS["mm"]
_TANH = _derivatives.OPS["tanh"]
_ALPHA1 = {"alpha": 1}
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
