"""From a Tensor method to a row of the op table: argument checks, dtype promotion, the
kernel call, and the Node that records it (PyTorch's dispatcher and ``VariableType``).

The rows themselves live in :mod:`nbgrad.derivatives`, which fills :data:`OPS` when it is
imported; this module only looks them up by name.
"""

from __future__ import annotations

import math
import operator
import time
from functools import partial
from weakref import ref as _weakref

import numpy as np

from nbgrad import backend, dtypes
from nbgrad._graph import anomaly_state as _anomaly
from nbgrad._graph.anomaly_state import _used as _anomaly_used
from nbgrad._graph.forward_grad import _state as _fw
from nbgrad._graph.grad_state import _inference_tensors
from nbgrad._graph.grad_state import _state as _grad_state
from nbgrad._graph.node import (
    _ZERO_NUMBERS,
    NO_EDGE,
    Edge,
    InputMetadata,
    Node,
    edge_numbers,
    next_sequence_nr,
    zero_numbers,
)
from nbgrad._graph.observer import forward_observer as _observed
from nbgrad._graph.table_node import _exec_generated
from nbgrad._tensor.conversion import _arg, _ndarray, _set_inference, _wrap
from nbgrad._tensor.views import _mark_view
from nbgrad.backend import CPU

Tensor = None  # the Tensor class: see NOTE [The Tensor class, bound late]


_weakref_type = _weakref


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
_ALPHA1 = {"alpha": 1}


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


# NOTE [0-d results stay arrays]
# NumPy gives a scalar (``np.float64``), not an array, for arithmetic on 0-d arrays, and a
# tensor needs an array, so ``np.asarray`` wraps it back. A row whose forward is one ufunc names
# it (``ufunc=np.multiply``): ``_binary`` calls it directly, not through the row's ``forward``
# (a Python function taking keyword attributes). For two 0-d float64 operands (or one and a
# Python float) of ``+``, ``-`` or ``*``, the ops of a graph of 0-d tensors (a micrograd-style
# MLP), it computes on Python floats instead: the same IEEE double operation, with the same
# result, in a third of the time the ufunc's dispatch takes on 0-d arrays (and, as PyTorch, it
# warns of no overflow).
_ON_FLOATS = {np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul}
_F64 = np.dtype(np.float64)


def _binary(op, a, b, attrs=_NO_ATTRS):
    """``op(a, b)`` for a float CPU ``a`` and a Python number or same-dtype CPU tensor ``b``.

    The arithmetic operators' path: the same result as ``_dispatch`` (which it falls back to
    for anything else) without its general argument handling. See NOTE [Dispatch fast path].
    """
    t0 = _perf_counter() if _observed else 0.0  # see NOTE [Forward observers]
    da = a._data
    dtype = da.dtype
    if a._device is not CPU or dtype.kind != "f" or _fw.active:  # NOTE [Forward-mode AD]
        return _dispatch(op, (a, _arg(b)), attrs)
    tb = type(b)
    if tb is float or tb is int:
        db = b
        rg = a._requires_grad
    elif tb is Tensor and b._device is CPU and b._data.dtype is dtype:
        db = b._data
        rg = a._requires_grad or b._requires_grad
    else:
        return _dispatch(op, (a, _arg(b)), attrs)
    ufunc = op.ufunc
    if attrs is not _NO_ATTRS and attrs is not _ALPHA1 and attrs.get("alpha", 1) != 1:
        ufunc = None  # the row's forward computes other attributes
    try:
        if ufunc is None:  # (a quiet row's forward is quiet: NOTE [Quiet rows wrapped once])
            out = op.forward(np, da, db, **attrs)
        elif dtype is _F64 and not da.ndim and op.on_floats is not None and tb is not int:
            # see NOTE [0-d results stay arrays]
            if tb is float:
                out = op.on_floats(da.item(), db)
            elif not db.ndim:
                out = op.on_floats(da.item(), db.item())
            else:
                out = ufunc(da, db)
        elif op.quiet:
            out = op.forward(np, da, db)
        else:
            out = ufunc(da, db)
    except ValueError as e:
        raise RuntimeError(f"{op.name}(): {_shapes_message((a, b), e)}") from None
    result = op.result
    if result is None:  # NOTE [Generated forward result]
        result = op.result = _result_function(op)
    return result((a, b), attrs, out, rg, t0)


def _unary(op, a, attrs=_NO_ATTRS):
    """``op(a)`` for a row of one tensor input whose result has a float input's dtype
    (``tanh``, ``sin``; ``pow`` with a number's ``exponent`` in ``attrs``; ``sum``; views such as
    ``view``, ``transpose``, ``expand``).

    The same result as ``_dispatch``, which it falls back to for anything but a float CPU
    tensor, without its general argument handling (see NOTE [Dispatch fast path]).
    """
    t0 = _perf_counter() if _observed else 0.0  # see NOTE [Forward observers]
    da = a._data
    if a._device is not CPU or da.dtype.kind != "f" or _fw.active:  # NOTE [Forward-mode AD]
        return _dispatch(op, (a,), attrs)
    if op.quiet:  # (its forward is quiet: NOTE [Quiet rows wrapped once])
        out = op.forward(np, da, **attrs)
    elif attrs is not _NO_ATTRS:
        out = op.forward(np, da, **attrs)
    elif op.ufunc is not None:  # (the row's forward is this one ufunc)
        out = op.ufunc(da)
    else:
        out = op.forward(np, da)
    result = op.result
    if result is None:  # NOTE [Generated forward result]
        result = op.result = _result_function(op)
    return result((a,), attrs, out, a._requires_grad, t0)


# NOTE [Generated forward result]
# ``_binary`` and ``_unary`` end in ``op.result(args, attrs, out, requires_grad, t0)``: the
# array ``out`` (or NumPy's scalar) as a CPU tensor, recorded when an input requires grad and
# grad mode is on. For a row of one or two inputs (a tensor, and a tensor or a number), one
# output and an edge for each input, it is generated from the row on first use, as the node's
# ``_save`` is (NOTE [Generated apply]), with ``_save``'s body inline: the tensor
# (``_wrap``'s fields), the node (``_record``'s, without its loops over inputs and results) and
# its saved values, in one call. A view row of one input marks its result a view of the input
# (``_mark_view``) where another row's result gets no base. An input that is not its node's
# first output, or a result of a shape and dtype not seen yet, takes ``_record``. Any other row
# gets ``_generic_result`` (which marks no view: ``_unary`` and ``_binary`` serve no view row of
# two inputs).
# The source stays on the row to read: ``OPS["mul"].result_source``.
# Kept generated rather than one function over every row, because it pays: W1's forward chain
# is slower per op through ``_wrap`` then ``_record`` (``_generic_result``) than through the
# generated result (``tests/benchmarks/generated_result.py`` prints the ratio). What it does
# is ``_generic_result``'s work, field by field:
# tests/test_generated_result.py builds each kind of row both ways and compares every field of
# the tensor and of the node, and checks that the source of ``neg`` (one input, nothing saved)
# is exactly this, between the two marks:
# --- generated source of neg ---
#     def result(args, attrs, out, requires_grad, t0):
#         if type(out) is not ndarray:
#             out = asarray(out)  # NOTE [0-d results stay arrays]
#         result = Tensor.__new__(Tensor)
#         result._data = out
#         result._device = CPU
#         result._grad = None
#         result._output_nr = 0
#         result._retains_grad = False
#         result._acc = None
#         result._post_accumulate_grad_hooks = None
#         result.grad_fn = None
#         result._version_counter = None  # see NOTE [Lazy version counters]
#         result._base = None
#         result._view_chain = None
#         if inference_tensors.entered and grad_state.inference:  # NOTE [Inference tensors]
#             set_inference(result, True)
#         if not (requires_grad and grad_state.enabled):
#             result._requires_grad = False
#         else:
#             result._requires_grad = True  # first: a node that saves its result reads it
#             numbered = False  # whether an input is an output other than 0 of its node
#             first = args[0]
#             fn0 = first.grad_fn
#             if fn0 is None:
#                 fn0 = first._get_grad_accumulator() if first._requires_grad else None
#             elif first._output_nr:
#                 numbered = True
#             meta = CPU_METADATA.get((out.shape, out.dtype))  # NOTE [Shared input metadata]
#             if meta is None or numbered:
#                 record(op, args, attrs, (result,))
#             else:
#                 node = cls.__new__(cls)
#                 node._next_fns = fns = (fn0,)
#                 node._next_nrs = (0,)
#                 node._sequence_nr_ = next_sequence_nr()
#                 node._pre_hooks = node._post_hooks = node._tensor_pre_hooks = None
#                 node._retains_grad_hooks = node._metadata = None
#                 results = (result,)
#                 pass
#                 node._input_metadata_ = meta
#                 result.grad_fn = node
#                 if anomaly_used.enabled and anomaly._state.enabled:
#                     anomaly.record_traceback(node)
#         if observed:
#             observed[0].forward(op, args, attrs, result, perf_counter() - t0)
#         return result
# --- end ---
def _generic_result(op, args, attrs, out, requires_grad, t0):
    """``op.result`` of a row the generated one does not serve: ``_wrap``, then ``_record``."""
    result = _wrap(out)
    if requires_grad and op.differentiable and _grad_state.enabled:
        result._requires_grad = True  # first: a node that saves its result reads it
        _record(op, args, attrs, (result,))
    if _observed:
        _observed[0].forward(op, args, attrs, result, _perf_counter() - t0)
    return result


_RESULT_HEAD = """\
def result(args, attrs, out, requires_grad, t0):
    if type(out) is not ndarray:
        out = asarray(out)  # NOTE [0-d results stay arrays]
    result = Tensor.__new__(Tensor)
    result._data = out
    result._device = CPU
    result._grad = None
    result._output_nr = 0
    result._retains_grad = False
    result._acc = None
    result._post_accumulate_grad_hooks = None
    result.grad_fn = None
"""
_RESULT_PLAIN = """\
    result._version_counter = None  # see NOTE [Lazy version counters]
    result._base = None
    result._view_chain = None
    if inference_tensors.entered and grad_state.inference:  # NOTE [Inference tensors]
        set_inference(result, True)
    if not (requires_grad and grad_state.enabled):
        result._requires_grad = False
    else:
"""
_RESULT_VIEW = """\
    mark_view(result, args[0], (op.name, attrs))
    if inference_tensors.made and requires_grad and getattr(args[0], "_inference", False):
        requires_grad = False  # NOTE [Inference tensors]
    if not (requires_grad and grad_state.enabled):  # NOTE [Views made in no-grad mode]
        result._requires_grad = not grad_state.enabled and requires_grad
    else:
"""
_RESULT_RECORD = """\
        result._requires_grad = True  # first: a node that saves its result reads it
        numbered = False  # whether an input is an output other than 0 of its node
        first = args[0]
        fn0 = first.grad_fn
        if fn0 is None:
            fn0 = first._get_grad_accumulator() if first._requires_grad else None
        elif first._output_nr:
            numbered = True
"""
_RESULT_SECOND = """\
        second = args[1]
        if isinstance(second, Tensor):
            fn1 = second.grad_fn
            if fn1 is None:
                fn1 = second._get_grad_accumulator() if second._requires_grad else None
            elif second._output_nr:
                numbered = True
        else:
            fn1 = None
"""
_RESULT_NODE = """\
        meta = CPU_METADATA.get((out.shape, out.dtype))  # NOTE [Shared input metadata]
        if meta is None or numbered:
            record(op, args, attrs, (result,))
        else:
            node = cls.__new__(cls)
            node._next_fns = fns = {fns}
            node._next_nrs = {nrs}
            node._sequence_nr_ = next_sequence_nr()
            node._pre_hooks = node._post_hooks = node._tensor_pre_hooks = None
            node._retains_grad_hooks = node._metadata = None
            results = (result,)
"""
_RESULT_TAIL = """\
            node._input_metadata_ = meta
            result.grad_fn = node
            if anomaly_used.enabled and anomaly._state.enabled:
                anomaly.record_traceback(node)
    if observed:
        observed[0].forward(op, args, attrs, result, perf_counter() - t0)
    return result
"""


def _result_function(op):
    """``op.result``: generated for the rows it serves, else ``_generic_result`` (NOTE
    [Generated forward result])."""
    cls = op.node_class
    n = len(op.inputs)
    if (
        cls is None
        or op.nondiff
        or op.outputs != 1
        or any(op.list_input)
        or n not in (1, 2)
        or op.view
        and n != 1
    ):
        return partial(_generic_result, op)
    body, names = cls._save_body
    fns, nrs = ("(fn0, fn1)", "(0, 0)") if n == 2 else ("(fn0,)", "(0,)")
    source = (
        _RESULT_HEAD
        + (_RESULT_VIEW if op.view else _RESULT_PLAIN)
        + _RESULT_RECORD
        + (_RESULT_SECOND if n == 2 else "")
        + _RESULT_NODE.format(fns=fns, nrs=nrs)
        + "".join(f"        {line}\n" for line in body)
        + _RESULT_TAIL
    )
    env = {
        **names,
        "ndarray": _ndarray,
        "asarray": np.asarray,
        "Tensor": Tensor,
        "CPU": CPU,
        "inference_tensors": _inference_tensors,
        "grad_state": _grad_state,
        "set_inference": _set_inference,
        "mark_view": _mark_view,
        "CPU_METADATA": _CPU_METADATA,
        "record": _record,
        "op": op,
        "cls": cls,
        "next_sequence_nr": next_sequence_nr,
        "anomaly_used": _anomaly_used,
        "anomaly": _anomaly,
        "observed": _observed,
        "perf_counter": _perf_counter,
    }
    _exec_generated(source, f"<generated forward result of {op.name}>", env)
    op.result_source = source
    return env["result"]


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


# NOTE [Forward observers]
# The notebook's recorder sees every forward call through ``GraphObserver.forward`` (see
# nbgrad/_graph/observer.py). ``_observed`` is a list holding the one observer to call, or
# empty: with nothing observing, ``_dispatch`` and ``_binary`` pay one empty-list check at entry
# and one before they return; nothing is timed.
_perf_counter = time.perf_counter


def _dispatch(op, args, attrs=_NO_ATTRS, out=None):
    """Run one row of the op table on ``args`` (Tensors, lists of Tensors, scalars or None)."""
    t0 = _perf_counter() if _observed else 0.0
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
            if op.quiet:  # (its forward is quiet: NOTE [Quiet rows wrapped once])
                out = op.forward(xp, *arrays, **attrs)
            elif attrs:
                out = op.forward(xp, *arrays, **attrs)
            elif len(arrays) == 1:  # (no argument unpacking: the commonest call, kept cheap)
                out = op.forward(xp, arrays[0])
            else:
                out = op.forward(xp, *arrays)
        except ValueError as e:
            raise RuntimeError(f"{op.name}(): {_shapes_message(args, e)}") from None
    if op.view and _inference_tensors.made and getattr(args[0], "_inference", False):
        requires_grad = False  # a view of an inference tensor: see NOTE [Inference tensors]
    record = requires_grad and op.differentiable and _grad_state.enabled
    if op.outputs != 1:
        results = tuple(_wrap(o, device) for o in out)
        if op.view:
            for r in results:
                _mark_view(r, args[0], None)
        if record:
            _record(op, args, attrs, results)
        if _observed:
            _observed[0].forward(op, args, attrs, results, _perf_counter() - t0)
        if _fw.active:  # see NOTE [Forward-mode AD]
            _fw.propagate(op, args, attrs, results)
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
        if _inference_tensors.entered and _grad_state.inference:  # NOTE [Inference tensors]
            _set_inference(result, True)
    if record:
        result._requires_grad = True
        result.grad_fn = None
        _record(op, args, attrs, (result,))
    else:
        # a view made in no-grad mode requires grad when its source does (NOTE [Views made in
        # no-grad mode])
        result._requires_grad = op.view and not _grad_state.enabled and requires_grad
        result.grad_fn = None
    if _observed:
        _observed[0].forward(op, args, attrs, result, _perf_counter() - t0)
    if _fw.active:  # see NOTE [Forward-mode AD]
        _fw.propagate(op, args, attrs, result)
    return result


def _shapes_message(args, err):
    shapes = [list(a.shape) for a in args if isinstance(a, Tensor)]
    if len(shapes) >= 2:
        return (
            f"The size of tensor a ({shapes[0]}) must match the size of tensor b ({shapes[1]}): "
            f"shapes {shapes[0]} and {shapes[1]} cannot be broadcast together ({err})"
        )
    return str(err)


def _edge_of(t):
    """``gradient_edge``: where a gradient for tensor ``t`` should flow."""
    fn = t.grad_fn
    if fn is not None:
        return Edge(fn, t._output_nr)
    if t._requires_grad:
        return Edge(t._get_grad_accumulator(), 0)
    return NO_EDGE


def _input_numbers(args):
    """The input_nr of the edge of each input in ``args`` (lists flattened)."""
    nrs = []
    for a in args:
        if type(a) is list:
            nrs.extend(_edge_of(t)[1] for t in a)
        else:
            nrs.append(a._output_nr if isinstance(a, Tensor) and a.grad_fn is not None else 0)
    return nrs


_new_tuple = tuple.__new__  # NamedTuple instances without the Python-level __new__


# NOTE [Shared input metadata]
# A node's input metadata is immutable (shape, dtype, device), and a forward pass makes the same
# few shapes over and over: CPU nodes share one metadata tuple per (shape, dtype) instead of
# each allocating two more objects for the cyclic garbage collector to scan.
_CPU_METADATA: dict = {}


def _record(op, args, attrs, results):
    """Create the row's Node: edges to the inputs, saved values, input metadata."""
    fns = []  # NOTE [Edges stored as two tuples]
    numbered = False  # whether an input is an output other than 0 of its node
    for a in args:
        if isinstance(a, Tensor):  # Tensor or a subclass (nn.Parameter)
            fn = a.grad_fn
            if fn is None:
                fn = a._get_grad_accumulator() if a._requires_grad else None
            elif a._output_nr:
                numbered = True
            fns.append(fn)
        elif type(a) is list:
            for t in a:
                fns.append(_edge_of(t)[0])
                if t.grad_fn is not None and t._output_nr:
                    numbered = True
        else:
            fns.append(None)
    nrs = _input_numbers(args) if numbered else None
    if op.nondiff:  # as PyTorch: a non-differentiable input (index, mask) gets no edge
        keep = [inp not in op.nondiff for inp in op.inputs]
        fns = [fn for fn, k in zip(fns, keep) if k]
        if nrs is not None:
            nrs = [nr for nr, k in zip(nrs, keep) if k]
    cls = op.node_class
    node = cls.__new__(cls)
    node._next_fns = fns = tuple(fns)
    if nrs is not None:
        node._next_nrs = edge_numbers(nrs)
    elif len(fns) < 9:
        node._next_nrs = _ZERO_NUMBERS[len(fns)]
    else:
        node._next_nrs = zero_numbers(len(fns))
    node._sequence_nr_ = next_sequence_nr()
    node._pre_hooks = node._post_hooks = node._tensor_pre_hooks = None
    node._retains_grad_hooks = node._metadata = None
    cls._save(node, fns, args, attrs, results)  # see NOTE [Generated apply]
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
    if _anomaly_used.enabled and _anomaly._state.enabled:
        _anomaly.record_traceback(node)
    return node


# NOTE [The op table, by name]
# The rows live in nbgrad.derivatives, above this module: each ``op(...)`` there registers its
# OpInfo here, so the Tensor methods find a row by name (``OPS["add"]``) without importing the
# table. ``import nbgrad`` imports the table right after the Tensor.
OPS: dict = {}


def _op(name):
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
    for s in size:  # (the common case: Python ints, taken as they are)
        if type(s) is not int:
            break
    else:
        return tuple(size)
    for s in size:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(
                f"size must be a tuple of ints, but got an element of type {type(s).__name__}"
            )
    return tuple(int(s) for s in size)


def _expect_tensor(x, fname, argname, position):
    if not isinstance(x, Tensor):
        raise TypeError(
            f"{fname}(): argument '{argname}' (position {position}) must be Tensor, not "
            f"{type(x).__name__}"
        )
    return x


class ToCopyBackward0(Node):
    """Backward of a copy to another device: the gradient goes back to the source device."""

    __slots__ = ("src_device",)
    _name = "ToCopyBackward0"

    def __init__(self, edge, src_device, meta):
        super().__init__((edge,))
        self.src_device = src_device
        self._input_metadata_ = (meta,)

    def apply(self, grads):
        g = grads[0]
        return [None if g is None else g.to(self.src_device)]


def _to_device(t, device):
    """``t.to(device)``, recorded as ``ToCopyBackward0`` when gradients are tracked."""
    out = _wrap(backend.transfer(t._data, t._device, device), device)
    if _grad_state.enabled and t._requires_grad:
        node = ToCopyBackward0(_edge_of(t), t._device, out._metadata_tuple())
        out.grad_fn, out._output_nr, out._requires_grad = node, 0, True
    return out
