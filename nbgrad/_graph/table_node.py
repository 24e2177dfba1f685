"""The node generator: each row of the op table becomes a Node class named as PyTorch names it
(``MulBackward0``), whose ``apply`` unpacks what the row's formulas name and calls them.

Mirrors PyTorch's ``tools/autograd/gen_autograd_functions.py``, which generates the C++ node
classes from ``derivatives.yaml``; here the classes (and a specialised ``apply``) are built at
import from the rows.
"""

from __future__ import annotations

import inspect
import linecache

import numpy as np

from nbgrad._graph import forward_grad as _forward_grad
from nbgrad._graph import tensor_class as _tc
from nbgrad._graph.array_formulas import check_on_arrays, returns_grad
from nbgrad._graph.grad_state import _inference_tensors
from nbgrad._graph.grad_state import _state as _grad_state
from nbgrad._graph.hooks import _saved_hooks_used
from nbgrad._graph.node import Node
from nbgrad._graph.saved_tensor import ERR_FREED, FREED, SavedTensor, unpack_saved
from nbgrad.backend import CPU


# NOTE [A saved input stored as itself]
# Most tensors a node saves are its own inputs, which a SavedVariable holds as themselves. A
# SavedTensor object for each would be one more object per op for the cyclic GC to scan for as
# long as the graph lives, so a node generated here stores such an
# input in its slot as the tensor itself and, in the slot ``_v_<name>`` beside it, what
# ``saved_input_version`` gives: the tensor's version, or ``~version`` (a negative number)
# when the tensor had a grad_fn, since ``unpack`` must then notice a ``detach_()``. It does
# so only until saved-tensor hooks are first entered or an inference tensor is first made. What
# asks for the SavedTensor object itself (``_raw_saved_<name>``, ``saved_values()``) gets one
# made from the two (``SavedTensor._of_input``), stored in the slot in their place.
def saved_input_version(tensor) -> int:
    """The version number stored beside an input saved as itself."""
    counter = tensor._version_counter
    version = counter[0] if counter is not None else 0  # see NOTE [Lazy version counters]
    return version if tensor.grad_fn is None else ~version


def unpack_input(tensor, saved_version, node):
    """``SavedTensor.unpack`` of an input stored as itself: the tensor, or the error."""
    counter = tensor._version_counter
    version = counter[0] if counter is not None else 0
    if saved_version >= 0 or tensor.grad_fn is not None:
        if version == (saved_version if saved_version >= 0 else ~saved_version):
            return tensor
    return SavedTensor._of_input(tensor, saved_version).unpack(node)  # raises


# NOTE [Backward on arrays]
# A formula such as ``self=lambda grad, other: grad * other`` is written on Tensors, and each
# Tensor op in it goes through dispatch (operand checks, grad mode, the wrapping of its result),
# which costs more than the NumPy arithmetic on a small tensor. Without create_graph (grad mode
# off while the node runs) nothing is recorded, and on CPU tensors of one dtype a Tensor op of
# such a formula computes exactly what the same NumPy expression computes. So a generated
# ``apply`` runs its formulas on the arrays when it can, and wraps each result once:
# - a row declares ``on_arrays=True`` when its formulas are made of nothing but their
#   parameters, numbers, the operators ``+ - * /`` (not ``**``: Tensor pow takes other kernels;
#   the ``pow`` row's function ``power`` takes the same), negation, comparisons, conditions, and
#   calls of rows of the table made functions for formulas
#   (``nbgrad.derivatives.opinfo.row_function``: ``tanh_backward(grad, result)``, ``cos(self)``,
#   ``expand(grad, size=self_shape)``), which call the row's kernel on arrays and dispatch it on
#   Tensors (or of another function marked ``on_arrays`` that does the same, ``zeros_like``).
#   The same formula is thus the one source of both paths. ``check_on_arrays`` holds the
#   declaration to that at import (See NOTE [Formulas traced on probes]); the array path is
#   generated for a declared row when one of its formulas computes something (``returns_grad``:
#   not ``self=lambda grad: grad``, which costs nothing on either path) for a live edge;
# - at run time: grad mode off, the incoming gradient a CPU NumPy array (of a tensor that does
#   not require grad: a view of one made in no-grad mode, ``expand``'s, would require grad, see
#   NOTE [Views made in no-grad mode]), and every saved value a formula may read a CPU array of
#   the gradient's dtype (PyTorch's promotion of mixed dtypes and 0-d tensors differs from
#   NumPy's), a Python int or float, None, or a saved shape. At the first value
#   that is not (a saved tensor with an unpack hook, another dtype or device) the node takes
#   its Tensor path, which unpacks everything again as before: the array attempt has no side
#   effect before it gives up (unpack hooks never run in it; an error it raises is the error
#   the Tensor path raises at the same slot);
# - a formula that gives back the incoming gradient's array gives the incoming Tensor, as the
#   Tensor path does; any other result is wrapped as a new tensor.
# Hooks, validation, input buffers and ``AccumulateGrad`` see Tensors, as before. The recorder's
# ``backward_ops`` counts the formula ops that still run as Tensor ops.
#
# NOTE [0-d gradients as NumPy scalars]
# On a 0-d array each NumPy operator costs about 0.4 us, mostly the ufunc machinery, and gives
# back a NumPy scalar anyway (``np.float64``); on that scalar the same operator costs 0.06 us.
# So when the gradient and every array operand of the formulas are 0-d (a graph of 0-d
# tensors, a loss), the array path takes them as NumPy scalars (``g[()]``). The values are the
# same: a NumPy scalar has its array's dtype and promotion (NEP 50), the operators of these
# formulas (``+ - * /``, comparisons) round as the ufuncs do, row functions call the same
# kernels on it (``pow``'s computes on a 0-d array of it: See NOTE [pow of a NumPy scalar] in
# nbgrad/kernels/pointwise.py), and ``np.errstate`` governs both. Each result is wrapped back
# into a 0-d array (``wrap``).
# NOTE [Gradients carried as arrays]
# In a pass that nothing watches (no observer, anomaly mode or create_graph) and that runs on one
# thread, the engine calls a row's ``_apply_arrays`` instead of ``apply`` on a node without hooks
# (and, in ``grad(inputs=)``, that captures nothing): the array path above, which also takes its
# gradient as an array, and gives its results back as arrays, unwrapped. Until a Tensor is needed, a
# gradient then travels between nodes as its array (an ndarray, or a NumPy scalar on the 0-d path),
# always on the CPU and outside the graph: validated, routed and summed in input buffers as an
# array, where the sum of two 0-d gradients is one scalar addition instead of an in-place add into a
# tensor's array. ``as_tensors`` wraps such gradients where Tensor code takes over: the inputs of a
# node without ``_apply_arrays`` (``AccumulateGrad``, a custom Function, a row whose formulas need
# Tensors), hooks, a gradient ``grad()`` captures, a validation that reduces or casts, a pass that
# has turned to device workers. A wrapped array is the tensor ``apply``'s ``wrap`` would have made,
# so values, dtypes and what ``AccumulateGrad`` may steal (NOTE [Stealing the gradient]) are the
# same either way.
def _subclasses(cls):
    return {cls}.union(*(_subclasses(sub) for sub in cls.__subclasses__()))


RAW_GRADS = frozenset(_subclasses(np.generic) | {np.ndarray})  # the types of carried gradients


def as_tensors(grads):
    """Wrap each gradient of the list ``grads`` that travels as an array, in place (NOTE
    [Gradients carried as arrays]); returns ``grads``."""
    for i, g in enumerate(grads):
        if type(g) in RAW_GRADS:
            grads[i] = _tc._wrap(g)
    return grads


def saved_array(saved, node):
    """A SavedTensor without an unpack hook, unpacked to its array (NOTE [Backward on arrays]):
    ``saved.unpack(node)``'s checks and errors, without making a tensor for a saved output.
    None for a saved None, ``_NOT_ARRAY`` for a tensor off the CPU."""
    if not saved._is_output or saved._freed:
        tensor = saved.unpack(node)
        if tensor is None:
            return None
        return tensor._data if tensor._device is CPU else _NOT_ARRAY
    if saved._counter[0] != saved._version:
        saved._raise_version_error()
    return saved._data if saved._device is CPU else _NOT_ARRAY


def input_array(tensor, saved_version, node):
    """``unpack_input``'s array, or ``_NOT_ARRAY`` off the CPU (NOTE [Backward on arrays])."""
    tensor = unpack_input(tensor, saved_version, node)
    return tensor._data if tensor._device is CPU else _NOT_ARRAY


_NOT_ARRAY = object()  # a saved value that makes a node take its Tensor path


# ---- rows -> Node classes -------------------------------------------------------------------
_MISSING = object()


_GRAD_ONLY = ("grad",)  # the one slots tuple of every formula of ``grad`` alone


class TableNode(Node):
    """A node made from a row of the table: it unpacks what its formulas name and calls them.

    Most rows' classes replace this ``apply`` with one generated from the row, which does the
    same with no loop over the plan (see NOTE [Generated apply]).
    """

    __slots__ = ()
    _op: object  # the row (an OpInfo of nbgrad.derivatives)
    _input_slots: frozenset = frozenset()
    _slot_plan: tuple  # ((edge_index, is_list, formula, slot names of its parameters), ...)
    _saved_names: tuple

    def apply(self, grads):
        fns = self._next_fns
        grad = grads[0]
        if grad is None and (self._op.outputs == 1 or all(g is None for g in grads)):
            return [None] * len(fns)
        out = [None] * len(fns)
        unpacked = {}
        for i, is_list, formula, slots in self._slot_plan:
            if is_list:
                if all(fn is None for fn in fns):
                    continue
            elif fns[i] is None:
                continue
            if slots is _GRAD_ONLY:  # ``self=lambda grad: grad`` and the like: nothing to unpack
                out[i] = formula(grad)
                continue
            args = []
            for slot in slots:
                if slot == "grad":
                    args.append(grad)
                elif slot == "grads":
                    args.append(grads)
                elif slot in unpacked:  # each saved value is unpacked once per apply
                    args.append(unpacked[slot])
                else:
                    value = getattr(self, slot, _MISSING)
                    if type(value) is SavedTensor:
                        value = value.unpack(self)
                    elif slot in self._input_slots and isinstance(value, _tc._Tensor):
                        value = unpack_input(value, getattr(self, "_v" + slot[2:]), self)
                    elif value is FREED:
                        raise RuntimeError(ERR_FREED)
                    elif value is _MISSING:
                        raise RuntimeError(f"{self.name()} did not save '{slot[3:]}'")
                    elif type(value) is list:
                        value = [unpack_saved(v, self) for v in value]
                    unpacked[slot] = value
                    args.append(value)
            value = formula(*args)
            if is_list:
                out[:] = list(value)
            else:
                out[i] = value
        return out

    def release_variables(self):
        for slot in self._tensor_slots:
            value = getattr(self, slot, None)
            if value is not None:
                if type(value) is SavedTensor:
                    value._free()
                elif type(value) is list:
                    for v in value:
                        if type(v) is SavedTensor:
                            v._free()
                setattr(self, slot, FREED)

    def _saved_tensor_names(self):
        return self._saved_names

    def _stored(self, slot):
        """What ``slot`` holds, an input stored as itself turned into its SavedTensor (kept in
        the slot from then on; see NOTE [A saved input stored as itself])."""
        value = getattr(self, slot, None)
        if slot in self._input_slots and isinstance(value, _tc._Tensor):
            value = SavedTensor._of_input(value, getattr(self, "_v" + slot[2:]))
            setattr(self, slot, value)
        return value

    def saved_values(self):
        """``{name: value}`` of what the row saved, not unpacked (see ``Node.saved_values``); a
        released slot reads as a freed SavedTensor, as ``_raw_saved_<name>`` does."""
        out = {}
        for name in self._saved_names:
            value = self._stored("_s_" + name)
            out[name] = _raw_saved(value) if value is FREED else value
        return out


def _saved_property(name):
    slot = "_s_" + name

    def getter(self):
        value = self._stored(slot)
        if value is FREED:
            raise RuntimeError(ERR_FREED)
        if type(value) is list:
            return tuple(unpack_saved(v, self) for v in value)
        return unpack_saved(value, self)

    getter.__name__ = "_saved_" + name
    return property(getter, doc=f"The saved value '{name}' (as PyTorch's ``_saved_{name}``).")


def _raw_saved_property(name):
    slot = "_s_" + name

    def getter(self):
        value = self._stored(slot)
        if type(value) in (list, tuple):  # a list input, or indexing's indices
            return [_raw_saved(v) for v in value]
        return _raw_saved(value)

    getter.__name__ = "_raw_saved_" + name
    return property(getter, doc=f"The SavedTensor object of '{name}' (``_raw_saved_{name}``).")


def _raw_saved(value):
    """The SavedTensor object of a saved slot, as PyTorch's ``_raw_saved_*``: one standing for
    None where nothing was saved, a freed one after release (neither raises until used), and
    a number's own tensor (PyTorch saves a Python number as a wrapped-number tensor)."""
    if type(value) is SavedTensor:
        return value
    if value is FREED:
        saved = SavedTensor(None)
        saved._free()
        return saved
    if isinstance(value, _tc._Tensor):
        return SavedTensor(value)
    if isinstance(value, (bool, int, float, complex, np.ndarray, np.generic)):
        return SavedTensor(_tc._tensor(value))
    return SavedTensor(None)  # None, or an index that is no tensor (a slice, ...)


# NOTE [Generated apply]
# PyTorch generates each node's code from derivatives.yaml (``Functions.cpp`` for ``apply``,
# ``VariableType`` for what the forward saves). nbgrad generates the same two pieces from each
# row, as straight-line Python with no loop over a plan: ``_save``, which ``_record`` calls
# to store on a new node the values its live formulas need (a slot no live formula needs is set
# to None), and ``apply``, which unpacks every saved tensor once, then runs the formula of each
# input whose edge is live; ``release_variables`` comes with it. Rows with several outputs, list
# inputs or formulas of ``grads`` keep ``TableNode.apply``, the generic walk of ``_slot_plan``
# that does the same more slowly. The sources stay on the class to read:
# ``MulBackward0._save_source``, ``MulBackward0._apply_source``.
def _exec_generated(source, filename, env):
    """Define the generated functions in ``env``; tracebacks through them show their lines."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), env)


# attributes that PyTorch saves as tensors (``std::vector<SavedVariable> indices_``): released
# with the graph like any saved tensor, so a second backward through an indexing node raises
_TENSOR_ATTRS = frozenset({"indices"})


def _released_slots(save_plan):
    """The slots ``release_variables`` frees: saved inputs and results, and tensor attributes."""
    return tuple(
        slot
        for slot, kind, key, _ in save_plan
        if kind in ("input", "result") or (kind == "attr" and key in _TENSOR_ATTRS)
    )


def _input_slots(info, save_plan):
    """The slots that may hold an input stored as itself (NOTE [A saved input stored as
    itself]): each saved input that is not a list."""
    return frozenset(
        slot for slot, kind, key, _ in save_plan if kind == "input" and not info.list_input[key]
    )


def _generate_apply(info, slot_plan, save_plan):
    if (
        info.outputs != 1
        or any(info.list_input)
        or any("grads" in slots for _, _, _, slots in slot_plan)
    ):
        return {}
    n_edges = sum(1 for inp in info.inputs if inp not in info.nondiff)
    tensor_slots = list(_released_slots(save_plan))
    env = {
        "SavedTensor": SavedTensor,
        "FREED": FREED,
        "ERR_FREED": ERR_FREED,
        "Tensor": _tc._Tensor,
        "unpack_input": unpack_input,
    }
    input_slots = _input_slots(info, save_plan)
    outs = [f"out{i}" for i in range(n_edges)]
    lines = ["def apply(self, grads):", "    fns = self._next_fns"]
    arrays = _generate_array_path(info, slot_plan, tensor_slots, input_slots, outs)
    if arrays is not None:
        lines += arrays[0]
        env.update(arrays[1])
    for slot in tensor_slots:  # saved tensors: unpacked once, whichever edges are live
        local = "v" + slot[2:]
        lines += [
            f"    {local} = self.{slot}",
            f"    if type({local}) is SavedTensor:",
            f"        {local} = {local}.unpack(self)",
            f"    elif {local} is FREED:",
            "        raise RuntimeError(ERR_FREED)",
        ]
        if slot in input_slots:  # NOTE [A saved input stored as itself]
            lines += [
                f"    elif isinstance({local}, Tensor):",
                f"        {local} = unpack_input({local}, self._v{slot[2:]}, self)",
            ]
    lines += [
        "    grad = grads[0]",
        "    if grad is None:",
        f"        return [{', '.join(['None'] * n_edges)}]",
        f"    {' = '.join(outs)} = None",
    ]
    for k, (i, _, formula, slots) in enumerate(slot_plan):
        env[f"formula{k}"] = formula
        # ``_record`` sets every slot: to the value where a formula that needs it has a live
        # edge, else to None
        args = ", ".join(s if s == "grad" else "v" + s[2:] for s in slots)
        lines.append(f"    if fns[{i}] is not None:")
        for slot in slots:
            if slot != "grad" and slot not in tensor_slots:  # attributes and shapes
                lines.append(f"        v{slot[2:]} = self.{slot}")
        lines.append(f"        out{i} = formula{k}({args})")
    lines.append(f"    return [{', '.join(outs)}]")
    # release_variables, unrolled: every saved input or result goes, Python numbers included
    # (PyTorch saves those as wrapped-number tensors, which are released too)
    release = []
    for slot in tensor_slots:  # a SavedTensor object a caller may hold is freed too
        release += [
            f"v = self.{slot}",
            "if v is not None:",
            "    if type(v) is SavedTensor:",
            "        v._free()",
            f"    self.{slot} = FREED",
        ]
    if arrays is not None:  # NOTE [Gradients carried as arrays]
        lines += ["def _apply_arrays(self, grads, release=False):", "    fns = self._next_fns"]
        lines += _generate_array_path(
            info, slot_plan, tensor_slots, input_slots, outs, carry=True, release=release
        )[0]
        lines += [
            "    outputs = self.apply(as_tensors(grads))",
            "    if release:",
            "        self.release_variables()",
            "    return outputs",
        ]
        env["as_tensors"] = as_tensors
        env["RAW_GRADS"] = RAW_GRADS
    lines.append("def release_variables(self):")
    lines += ["    " + line for line in release] or ["    pass"]
    source = "\n".join(lines) + "\n"
    _exec_generated(source, f"<generated apply of {info.node_name}>", env)
    made = [fn for fn in ("apply", "_apply_arrays", "release_variables") if fn in env]
    for fn in made:
        env[fn].__qualname__ = f"{info.node_name}.{fn}"
    return {**{fn: env[fn] for fn in made}, "_apply_source": source}


def _generate_array_path(info, slot_plan, tensor_slots, input_slots, outs, carry=False, release=()):
    """The lines that start ``apply`` with its formulas run on arrays, and the names they use
    (NOTE [Backward on arrays]); None when the row does not declare ``on_arrays``. With
    ``carry``, the lines of ``_apply_arrays``: its gradient may be an array already, its results
    stay arrays (NOTE [Gradients carried as arrays]), and with its ``release`` argument it runs
    the lines ``release`` (``release_variables``'s body) before it returns.

    Each saved value a formula names is read and checked in turn, one ``if`` deeper each, the
    saved tensors first in the order the Tensor path unpacks them: the first that is no array
    operand leaves the array path, with nothing after it read.
    """
    if not info.on_arrays:
        return None
    # a node whose live formulas all give ``grad`` back costs no op on the Tensor path
    computing = [i for i, _, formula, _ in slot_plan if not returns_grad(formula)]
    if not computing:
        return None
    env = {"ndarray": np.ndarray, "CPU": CPU, "grad_mode": _grad_state, "wrap": _tc._wrap}
    env["fw"] = _forward_grad._state  # tangents ride on Tensors: NOTE [Forward-mode AD]
    env.update(saved_array=saved_array, input_array=input_array, NOT_ARRAY=_NOT_ARRAY)
    named = [slot for _, _, _, slots in slot_plan for slot in slots if slot != "grad"]
    operands = [s for s in tensor_slots if s in named]
    operands += [s for s in dict.fromkeys(named) if s not in operands]
    live = " or ".join(f"fns[{i}] is not None" for i in computing)
    if carry:  # any live edge: a gradient given back as it is costs nothing here either
        live = " or ".join(f"fns[{i}] is not None" for i, _, _, _ in slot_plan)
        lines = [
            "    grad = grads[0]",
            f"    if ({live}) and grad is not None and not grad_mode.enabled and not fw.active:",
            "        g = grad if type(grad) is not Tensor else grad._data if grad._device is CPU"
            " and not grad._requires_grad else None",
            "        if type(g) in RAW_GRADS:  # an array or NumPy scalar on the CPU",
            "            dtype = g.dtype",
        ]
    else:
        lines = [
            "    grad = grads[0]",
            f"    if ({live}) and grad is not None and grad._device is CPU"
            " and not grad_mode.enabled and not grad._requires_grad and not fw.active:",
            "        g = grad._data",
            "        if type(g) is ndarray:  # NOTE [Backward on arrays]",
            "            dtype = g.dtype",
        ]
    indent = "            "
    for slot in operands:
        a = "a" + slot[2:]
        lines.append(f"{indent}{a} = self.{slot}")
        if slot in tensor_slots:
            lines += [
                f"{indent}if type({a}) is SavedTensor:",  # (unpack hooks run on the Tensor path)
                f"{indent}    if {a}._unpack_hook is not None:",
                f"{indent}        {a} = NOT_ARRAY",
                f"{indent}    else:",
                f"{indent}        {a} = saved_array({a}, self)",
                f"{indent}elif {a} is FREED:",
                f"{indent}    raise RuntimeError(ERR_FREED)",
            ]
            if slot in input_slots:  # NOTE [A saved input stored as itself]
                # ``input_array``, inline when the version matches (else it raises)
                lines += [
                    f"{indent}elif isinstance({a}, Tensor):",
                    f"{indent}    c = {a}._version_counter",
                    f"{indent}    v = self._v{slot[2:]}",
                    f"{indent}    if (0 if c is None else c[0]) == (v if v >= 0 else ~v) and (",
                    f"{indent}        v >= 0 or {a}.grad_fn is not None",
                    f"{indent}    ):",
                    f"{indent}        {a} = {a}._data if {a}._device is CPU else NOT_ARRAY",
                    f"{indent}    else:",
                    f"{indent}        {a} = input_array({a}, v, self)",
                ]
        if slot.endswith("_shape"):  # a tuple of ints, the same on either path
            continue
        lines += [
            f"{indent}t = type({a})",
            f"{indent}if t is ndarray and {a}.dtype is dtype or t is float or t is int"
            f" or {a} is None:",
        ]
        indent += "    "
    # see NOTE [0-d gradients as NumPy scalars]
    arrays = ["a" + s[2:] for s in operands]
    zero_d = "".join(
        f" and (type({a}) is not ndarray or not {a}.ndim)"
        for a in arrays
        if not a.endswith("_shape")
    )
    lines.append(f"{indent}if not g.ndim{zero_d}:")
    lines.append(f"{indent}    g = g[()]")
    lines += [
        f"{indent}    if type({a}) is ndarray:\n{indent}        {a} = {a}[()]"
        for a in arrays
        if not a.endswith("_shape")
    ]
    lines.append(f"{indent}{' = '.join(outs)} = None")
    for k, (i, _, _, slots) in enumerate(slot_plan):
        args = ", ".join("g" if s == "grad" else "a" + s[2:] for s in slots)
        result = "r" if carry else "grad if r is g else wrap(r)"
        lines += [
            f"{indent}if fns[{i}] is not None:",
            f"{indent}    r = formula{k}({args})",
            f"{indent}    out{i} = {result}",
        ]
    if release:
        lines.append(f"{indent}if release:")
        lines += [f"{indent}    {line}" for line in release]
    lines.append(f"{indent}return [{', '.join(outs)}]")
    return lines, env


def _generate_save(info, save_plan):
    """``_save(node, fns, args, attrs, results)``: what ``_record`` stores on a new node
    (``fns``: its ``_next_fns``), and the lines of its body (``_save_body``, which the
    dispatch's generated forward result inlines: NOTE [Generated forward result]).

    Straight-line code from ``save_plan`` (NOTE [Generated apply]): a value goes in its slot
    when a formula that needs it has a live edge, else the slot gets None.
    """
    env = {
        "SavedTensor": SavedTensor,
        "Tensor": _tc._Tensor,
        "hooks_used": _saved_hooks_used,
        "inference_tensors": _inference_tensors,
        "saved_input_version": saved_input_version,
    }
    lines = ["def _save(node, fns, args, attrs, results):"]
    for slot, kind, key, needers in save_plan:
        indent = "    "
        if needers:
            live = " or ".join(f"fns[{i}] is not None" for i in needers)
            lines.append(f"    if {live}:")
            indent = "        "
        if kind == "attr":
            lines.append(f"{indent}node.{slot} = attrs[{key!r}]")
        elif kind == "result":
            lines.append(
                f"{indent}node.{slot} = SavedTensor(results[{key}], True, {info.node_name!r})"
            )
        elif kind == "shape":
            value = (
                f"[t.shape for t in args[{key}]]" if info.list_input[key] else f"args[{key}].shape"
            )
            lines.append(f"{indent}node.{slot} = {value}")
        elif info.list_input[key]:
            lines.append(f"{indent}node.{slot} = [SavedTensor(t) for t in args[{key}]]")
        else:  # an input: a tensor, or a Python number or None in its place
            lines += [
                f"{indent}a = args[{key}]",
                f"{indent}if not isinstance(a, Tensor):",
                f"{indent}    node.{slot} = a",
                f"{indent}elif hooks_used.entered or inference_tensors.made:",
                f"{indent}    node.{slot} = SavedTensor(a)",
                f"{indent}else:  # NOTE [A saved input stored as itself]",
                f"{indent}    node.{slot} = a",
                # ``saved_input_version(a)``, inline
                f"{indent}    c = a._version_counter",
                f"{indent}    v = 0 if c is None else c[0]",
                f"{indent}    node._v{slot[2:]} = v if a.grad_fn is None else ~v",
            ]
        if needers:
            lines += ["    else:", f"        node.{slot} = None"]
    if not save_plan:
        lines.append("    pass")
    source = "\n".join(lines) + "\n"
    body = (tuple(lines[1:]), dict(env))  # (before ``exec`` adds to ``env``)
    _exec_generated(source, f"<generated save of {info.node_name}>", env)
    env["_save"].__qualname__ = f"{info.node_name}._save"
    return staticmethod(env["_save"]), source, body


# rows PyTorch differentiates with one formula for all inputs (``input, weight, bias: ...``)
_JOINT_FORMULAS = frozenset({"convolution", "layer_norm", "batch_norm"})


def _build_node_class(info):
    """The Node class of one row (an OpInfo)."""
    check_on_arrays(info)
    saved = []
    plan = []
    for i, inp in enumerate(info.inputs):
        f = info.formulas.get(inp)
        if f is None:
            continue
        params = tuple(inspect.signature(f).parameters)
        # the node has no edge for a nondiff input: index the plan by edge, not by input
        edge_i = i - sum(1 for inp in info.inputs[:i] if inp in info.nondiff)
        plan.append((edge_i, info.list_input[i], f, params))
        for p in params:
            if p not in ("grad", "grads") and p not in saved:
                saved.append(p)
    # NOTE [Order of a node's formulas]
    # PyTorch's generated ``apply`` computes its inputs' gradients in the sorted order of their
    # names in derivatives.yaml (``mul``: ``other`` before ``self``; ``mm``: ``mat2`` before
    # ``self``), so under create_graph the nodes of the gradient for ``other`` are made first
    # and get the smaller sequence numbers; a double backward then runs them in PyTorch's
    # order. Rows whose inputs PyTorch differentiates in one joint formula keep input order.
    if info.name not in _JOINT_FORMULAS:
        by_name = {info.inputs.index(inp): inp for inp in info.formulas}
        names = [by_name[i] for i in sorted(by_name)]
        plan = [entry for _, entry in sorted(zip(names, plan), key=lambda pair: pair[0])]
    # how _record fills each slot: ("attr", name) | ("result", k) | ("shape", i) | ("input", i)
    # plus the inputs whose formulas need the value: as in PyTorch, a value is saved only when
    # one of them has a live edge (``x * y`` with ``y`` constant does not save ``x``)
    save_plan = []
    for s in saved:
        needers = tuple(i for i, _, _, params in plan if s in params)
        if any(info.list_input):
            needers = ()
        if s in info.attrs:
            save_plan.append(("_s_" + s, "attr", s, needers))
        elif s == "result" or (s.startswith("result") and s[6:].isdigit()):
            save_plan.append(("_s_" + s, "result", int(s[6:] or 0), needers))
        elif s.endswith("_shape"):
            save_plan.append(("_s_" + s, "shape", info.inputs.index(s[:-6]), needers))
        else:
            save_plan.append(("_s_" + s, "input", info.inputs.index(s), needers))
    # the plan ``apply`` walks: formula parameters as slot names ("grad"/"grads" stay as they are)
    slot_plan = tuple(
        (
            i,
            is_list,
            f,
            _GRAD_ONLY
            if params == _GRAD_ONLY and not is_list
            else tuple(p if p in ("grad", "grads") else "_s_" + p for p in params),
        )
        for i, is_list, f, params in plan
    )
    save, save_source, save_body = _generate_save(info, save_plan)
    input_slots = _input_slots(info, save_plan)
    ns = {
        "_slot_plan": slot_plan,
        **_generate_apply(info, slot_plan, save_plan),
        "_tensor_slots": _released_slots(save_plan),
        "_save": save,
        "_save_source": save_source,
        "_save_body": save_body,  # (lines, names they use)
        "__slots__": tuple("_s_" + s for s in saved) + tuple("_v" + s[2:] for s in input_slots),
        "_input_slots": input_slots,
        "_op": info,
        "_name": info.node_name,
        "_saved_names": tuple(saved),
        "__doc__": f"Backward of ``{info.name}`` (PyTorch's ``{info.node_name}``).",
    }
    for s in saved:
        ns["_saved_" + s] = _saved_property(s)
    for slot, kind, key, _ in save_plan:  # tensors: their SavedTensor objects as well
        if kind in ("input", "result") or (kind == "attr" and key in _TENSOR_ATTRS):
            ns["_raw_saved_" + slot[3:]] = _raw_saved_property(slot[3:])
    # PyTorch calls the saved shape of ``self`` ``_saved_self_sym_sizes``
    if "self_shape" in saved:
        ns["_saved_self_sym_sizes"] = _saved_property("self_shape")
    return type(info.node_name, (TableNode,), ns)
