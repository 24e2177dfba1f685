"""Where non-finite values start: the NaN, +Inf and -Inf a recorded cell made, forward and
backward, and the first of them (the origin) with the cell line and the input values that
made it. A session's ``nonfinite()`` (``%%autograd ... -o s``) reads them.

NOTE [Finite at a sum's cost]
Every forward call of a recorded block is checked once, when it runs: its output may be gone
when the findings are read (a temporary such as the ``x * y`` in ``(x * y).sum()``). The check
is one sum of the output (a single reduction, no temporary array: a NaN or an Inf anywhere
makes it non-finite); only then, rarely, does the exact work begin: which kinds, where, and
the inputs' values there. A sum can overflow on values near the dtype's largest, so a
non-finite sum is confirmed by ``np.isfinite``. (A dot of the output with itself costs about
the same, but overflows, with NumPy's warning to the user, from 1e19 in float32.) An output of
a few values is summed as Python floats (``tolist``), a quarter of a NumPy reduction's cost:
the same answer, as NaN and the infinities carry through a float sum as through NumPy's.
Backward values need no extra pass: each gradient an engine event reports already has its
norm (``GradFacts``), non-finite exactly when the gradient is, and ``array_facts`` then notes
the kinds (``nonfinite_kinds``).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["NonFinite", "check_forward", "find_nonfinite", "mark_nodes", "nonfinite_kinds"]

# what these make is not yet a value (a NaN there is whatever the memory held)
_UNINITIALISED = frozenset({"empty", "empty_like", "new_empty", "empty_strided"})
_sum = np.add.reduce
_FEW = 16  # an output this small is summed as Python floats (NOTE [Finite at a sum's cost])
_isfinite = math.isfinite


def nonfinite_kinds(a) -> tuple:
    """The kinds of non-finite values in the array ``a``: some of "nan", "+inf", "-inf"."""
    a = np.asarray(a)
    if a.dtype.kind not in "fc":
        return ()
    kinds = []
    if np.isnan(a).any():
        kinds.append("nan")
    if np.isposinf(a).any():
        kinds.append("+inf")
    if np.isneginf(a).any():
        kinds.append("-inf")
    return tuple(kinds)


def _finite(a) -> bool:
    """Whether the host array ``a`` holds only finite values (NOTE [Finite at a sum's cost])."""
    if a.dtype.kind != "f" or not a.size:
        return True
    return _isfinite(_sum(a, axis=None)) or bool(np.isfinite(a).all())


def _array(source, t):
    """The host values of a tensor of ``source``, detached (None if they cannot be read)."""
    try:  # nbgrad's and torch's alike: no copy on the host, no exception for requires_grad
        return t.numpy(force=True)
    except Exception:  # noqa: BLE001 - another framework: through its source
        pass
    try:
        return source.to_numpy(t)
    except Exception:  # noqa: BLE001 - a value that cannot be read is not checked
        return None


def check_forward(rec, source, args, result):
    """Called by the recorder for each forward call it has just recorded: if an output of
    ``result`` (a tensor or a tuple of them) is not finite, note it on ``rec.nonfinite_found``
    with the inputs' values where it first is (NOTE [Finite at a sum's cost])."""
    if rec._raw.last_op() in _UNINITIALISED:
        return
    if type(result) is not tuple and type(result) is not list:  # one output: inline
        try:
            a = result.numpy(force=True)
        except Exception:  # noqa: BLE001 - not a tensor of nbgrad or torch: below
            a = None
        if type(a) is np.ndarray:
            if a.dtype.kind != "f" or not a.size:
                return
            if a.size <= _FEW:  # summed as Python floats: less than NumPy's call costs
                if _isfinite(sum(a.ravel().tolist())):
                    return
            elif _isfinite(_sum(a, axis=None)):
                return
    _check_outputs(rec, source, args, result)


def _check_outputs(rec, source, args, result):
    outputs = result if type(result) is tuple or type(result) is list else (result,)
    for k, t in enumerate(outputs):
        if not source.is_tensor(t) or getattr(t.dtype, "is_floating_point", True) is False:
            continue
        a = _array(source, t)
        if a is None or _finite(a):
            continue
        rec.nonfinite_found.append((len(rec.records) - 1, k, _forward_values(source, args, a)))
        return


def _forward_values(source, args, out):
    """What a non-finite forward output ``out`` shows: its kinds, the first position where it
    is not finite, the output's value there and each input's (broadcast to the output)."""
    index = int(np.flatnonzero(~np.isfinite(out))[0])
    inputs = []
    finite = True
    for a in args:
        if source.is_tensor(a):
            arr = _array(source, a)
            if arr is None:
                continue
            if not _finite(arr):
                finite = False
            try:
                inputs.append(_num(np.broadcast_to(arr, out.shape).flat[index]))
            except ValueError:  # not broadcast to the output (a matmul, a reduction)
                inputs.append(_head(arr))
        elif isinstance(a, (int, float)) and not isinstance(a, bool):
            finite = finite and _isfinite(a)
            inputs.append(_num(a))
        elif isinstance(a, (list, tuple)):  # the data of a new tensor (torch.tensor([...]))
            try:
                data = np.asarray(a, dtype=float)
            except (TypeError, ValueError):
                continue
            finite = finite and bool(np.isfinite(data).all())
    position = tuple(int(i) for i in np.unravel_index(index, out.shape)) if out.ndim else ()
    return {
        "kinds": nonfinite_kinds(out),
        "index": position,
        "output": _num(out.flat[index]),
        "inputs": inputs,
        "inputs_finite": finite,
    }


def _num(v):
    return complex(v) if isinstance(v, complex) else float(v)


def _head(arr, n=4):
    return [_num(v) for v in np.asarray(arr).reshape(-1)[:n]]


class NonFinite:
    """One node that held a non-finite value: ``node`` (its name as shown, the op's name for a
    call that made no node), ``phase`` ("forward" or "backward"), ``where`` ("output" in the
    forward; "received" and/or "sent" in the backward), ``kinds`` (some of "nan", "+inf",
    "-inf"), ``source`` (the text of the cell line that made the node), ``line`` (its number),
    ``values`` (the inputs' values that made it), ``origin`` (whether this is where the
    non-finite values start: the first, in execution order, whose inputs were finite)."""

    def __init__(self, node, phase, where, kinds, source, line, values, inputs_finite):
        self.node = node
        self.phase = phase
        self.where = where
        self.kinds = kinds
        self.source = source
        self.line = line
        self.values = values
        self.inputs_finite = inputs_finite
        self.origin = False
        self._node = None  # the graph's node (None for a call that made none)

    def __str__(self):
        kinds = "/".join(self.kinds)
        at = f" at line {self.line}: {self.source}" if self.line is not None else ""
        if self.phase == "forward":
            made = f"{self.node} made {kinds} from {_listed(self.values.get('inputs'))}"
        else:
            made = f"{self.node} {' and '.join(self.where)} {kinds}"
            if self.values.get("received") is not None:
                made += f" (received {_listed(self.values['received'])}"
                saved = self.values.get("saved")
                if saved:
                    made += ", saved " + ", ".join(f"{k}={_listed(v)}" for k, v in saved.items())
                made += ")"
        first = "origin: " if self.origin else ""
        if self.phase == "counted":
            return first + _counted_text(self)
        return f"{first}{self.phase}: {made}{at}"

    def __repr__(self):
        return f"<NonFinite {self}>"


def _listed(values):
    if values is None:
        return "?"
    if isinstance(values, list):
        return ", ".join(_listed(v) for v in values)
    return f"{values:g}" if isinstance(values, float) else str(values)


def find_nonfinite(rec, names=None) -> list:
    """The :class:`NonFinite` findings of a recorder, in execution order (its forward calls,
    then each backward pass's steps), the origin marked; empty when all was finite. ``names``
    (``{id(obj): name}``, the cell's) names a model as the graph does (``net.2.bias``)."""
    source = rec.graph_source
    records = rec.records
    made_by = {}  # node -> the record that made it (filled at the first backward finding)
    found = []
    counted = getattr(rec, "nonfinite_counted", None)
    if counted is not None:  # found where the recording resumed (NOTE [Repeated steps counted])
        found.append(_counted_finding(rec, names or {}, *counted))
    for index, _output, values in getattr(rec, "nonfinite_found", ()):
        r = records[index]
        name = source.node_name(r.node) if r.node is not None else r.op
        found.append(
            _with_node(
                r.node,
                NonFinite(
                    name,
                    "forward",
                    ("output",),
                    values["kinds"],
                    r.source,
                    r.line,
                    values,
                    values["inputs_finite"],
                ),
            )
        )
    for trace in rec.passes:
        if not getattr(trace, "nonfinite_seen", True):  # every gradient of it was finite
            continue
        # what the engine's events gave, in the order the nodes ran (not ``trace.steps``: a
        # pass observed from outside would be replayed to make them, NOTE [The model run when
        # read])
        sent = {}
        for (node, _), facts in trace.edge_grads.items():
            sent.setdefault(node, []).append(facts)
        for node, received in trace.node_inputs.items():
            outputs = sent.get(node, ())
            finding = _backward_finding(source, node, received, outputs)
            if finding is not None:
                if not made_by:
                    made_by = {r.node: r for r in reversed(records) if r.node is not None}
                made = made_by.get(node)
                if made is not None:
                    finding.source, finding.line = made.source, made.line
                found.append(finding)
    for f in found:
        if f.inputs_finite:
            f.origin = True
            break
    else:
        if found:
            found[0].origin = True
    return found


def _counted_finding(rec, names, node, leaf, where, kinds, first, iteration):
    """The finding of a NaN/Inf first found in a loop's iterations that ran unwatched (from
    ``first`` to ``iteration``): in the gradient a leaf got, or in its values when the run
    ended (``steps._Unwatched.nonfinite``); a parameter named by its module path, from the
    outermost module's name in ``names`` as the graph names it."""
    name = names.get(id(leaf)) or f"a leaf of shape {tuple(leaf.shape)}"
    for group in rec.modules:
        try:
            params = group.module.named_parameters(recurse=False)
            name = next(f"{group.path}.{k}" for k, p in params if p is leaf)
        except Exception:  # noqa: BLE001 - (StopIteration too) not this module's
            continue
        top = group
        while top.parent is not None:
            top = top.parent
        given = names.get(id(top.module))
        if given:
            name = given + name[len(top.path) :]
        break
    values = {"first": first, "iteration": iteration}
    return _with_node(node, NonFinite(name, "counted", (where,), kinds, "", None, values, True))


def _counted_text(f):
    """What a finding of unwatched iterations says: where it was found, that the call that
    made it was not recorded, and how to see it."""
    kinds, first, k = "/".join(f.kinds), f.values["first"], f.values["iteration"]
    if f.where == ("gradient",):
        found = f"the gradient {f.node} got in the loop's iteration {k} held {kinds}"
    else:
        found = f"{f.node} held {kinds} after the loop's iteration {k}"
    ran = f"iteration {k}" if first == k else f"iterations {first} to {k}"
    return (
        f"{found} (counting from 0), found there: {ran} ran unrecorded (repeats of the step, "
        "only counted), so the call that made it is not drawn; %%autograd --all-steps "
        "records every step and shows it"
    )


def _facts_kinds(facts):
    """The non-finite kinds of a gradient's GradFacts (() when finite or not a gradient)."""
    norm = getattr(facts, "norm", None)
    if norm is None or _isfinite(norm):
        return ()
    kinds = getattr(facts, "nonfinite", None)
    if kinds is not None:
        return kinds
    return nonfinite_kinds(facts.head) or (("nan",) if norm != norm else ("+inf",))


def _backward_finding(source, node, inputs, outputs):
    """The finding of a node that received ``inputs`` and sent ``outputs`` (GradFacts), or
    None when all were finite."""
    received = [_facts_kinds(g) for g in inputs]
    sent = [_facts_kinds(g) for g in outputs]
    if not any(received) and not any(sent):
        return None
    where = tuple(w for w, ks in (("received", received), ("sent", sent)) if any(ks))
    kinds = tuple(k for k in ("nan", "+inf", "-inf") if any(k in ks for ks in received + sent))
    saved = _saved_values(source, node)
    saved_finite = all(_finite(np.asarray(a)) for a in saved.values())
    # the first position where a sent gradient is not finite, and what made it there
    index = 0
    for g, ks in zip(outputs, sent):
        if ks:
            bad = np.flatnonzero(~np.isfinite(np.asarray(g.head, dtype=float)))
            index = int(bad[0]) if bad.size else 0
            break
    values = {
        "received": [_at(g.head, index) for g in inputs if g is not None],
        "sent": [_at(g.head, index) for g in outputs if g is not None],
        "saved": {k: _at(np.asarray(a).reshape(-1), index) for k, a in saved.items()},
    }
    name = source.node_name(node)
    return _with_node(
        node,
        NonFinite(
            name,
            "backward",
            where,
            kinds,
            "",
            None,
            values,
            not any(received) and saved_finite,
        ),
    )


def _with_node(node, finding):
    finding._node = node
    return finding


def mark_nodes(nodes, rec, ids):
    """Mark the snapshot's ``nodes`` (SnapNode dicts) that held non-finite values: their
    ``nonfinite`` kinds (forward and backward together), ``nonfinite_origin`` on the origin's
    node; ``ids`` names a graph node as the snapshot does."""
    if rec is None or not (getattr(rec, "nonfinite_found", None) or rec.passes):
        return
    marks = {}
    for f in find_nonfinite(rec):
        if f._node is None:
            continue
        kinds, origin = marks.get(ids(f._node), ((), False))
        marks[ids(f._node)] = (tuple(dict.fromkeys(kinds + f.kinds)), origin or f.origin)
    if not marks:
        return
    for n in nodes:
        mark = marks.get(n["id"])
        if mark is not None:
            n["nonfinite"] = list(mark[0])
            if mark[1]:
                n["nonfinite_origin"] = True


def _at(head, index):
    head = np.asarray(head).reshape(-1)
    if not head.size:
        return None
    return _num(head[index] if index < head.size else head[0])


def _saved_values(source, node) -> dict:
    """name -> host array of each tensor ``node`` still holds for backward ({} once freed)."""
    out = {}
    try:
        if source.name == "torch":
            for name in dir(node):
                if name.startswith("_saved_"):
                    v = getattr(node, name)
                    if source.is_tensor(v) and v.dtype.is_floating_point:
                        out[name[len("_saved_") :]] = source.to_numpy(v)
        else:
            for name, sv in node.saved_values().items():
                value = getattr(sv, "data", None)  # the saved tensor (None once freed)
                if hasattr(value, "numpy"):
                    data = value.numpy(force=True)
                    if data.dtype.kind == "f":
                        out[name] = data
    except Exception:  # noqa: BLE001 - freed or unreadable: nothing to show
        return out
    return out
