"""Why a gradient is None: one cause, and the cell line where it happened, for a tensor, a
leaf or a parameter; and a module's parameters that got no gradient, each with its cause (the
parameters DDP's ``find_unused_parameters`` finds). A session's ``why_no_grad(t)`` and
``unused_parameters(module)`` (``%%autograd ... -o s``) read them.

NOTE [Why, from the records and the cell's text]
The recorder keeps, for each forward call, its inputs' pairs (a node, or a leaf's shape and
``requires_grad``) and its output node, and, for each backward pass, the nodes it ran and the
leaves it accumulated into. A call whose inputs require grad and whose output has no node cut
the graph there: a non-differentiable op (a comparison, ``argmax``, an integer result), or the
grad mode (an inference tensor: ``inference_mode``; else ``no_grad``). What makes a tensor
without an op (``.detach()``, ``.data``, ``.item()``, ``.numpy()``, ``.tolist()``: a new
tensor from the values) is not a forward call; the cell's own text says where it happened:
the line that assigned the tensor's name, the ``with`` block around that line, and, a level
further, the names that line read. Both frameworks are read the same way (the graph source).
"""

from __future__ import annotations

import ast
import linecache

__all__ = ["CAUSES", "WhyNoGrad", "why_no_grad", "unused_parameters"]

CAUSES = (
    "not_requires_grad",
    "no_grad",
    "inference_mode",
    "detached",
    "non_differentiable",
    "unreachable",
    "non_leaf",
    "cleared",
)

# ops whose output never requires grad (PyTorch's derivatives.yaml marks them so)
_NON_DIFFERENTIABLE = frozenset(
    "gt lt ge le eq ne greater less greater_equal less_equal equal not_equal argmax argmin "
    "argsort nonzero isnan isinf isfinite isposinf isneginf logical_and logical_or logical_xor "
    "logical_not bucketize searchsorted __gt__ __lt__ __ge__ __le__ __eq__ __ne__".split()
)
_DETACHING = frozenset({"detach", "data", "item", "numpy", "tolist", "detach_"})
_INTEGER = ("int", "uint", "bool")


class WhyNoGrad:
    """Why ``.grad`` of a tensor is None: ``cause`` (one of :data:`CAUSES`, or None when it has
    a gradient), ``source`` (the text of the cell line where it happened, or None), ``line``
    (that line's number) and ``detail``; ``str()`` is the sentence."""

    def __init__(self, name, cause, source=None, line=None, detail=""):
        self.name = name
        self.cause = cause
        self.source = source
        self.line = line
        self.detail = detail

    def __str__(self):
        what = _SENTENCES[self.cause].format(name=self.name, detail=self.detail)
        if self.line is not None:
            what += f" at line {self.line}: {self.source}"
        return what

    def __repr__(self):
        return f"<WhyNoGrad {self.cause}: {self}>"


_SENTENCES = {
    None: "{name} has a gradient",
    "not_requires_grad": "{name} has no gradient: it does not require grad (made with "
    "requires_grad=False{detail})",
    "no_grad": "{name} has no gradient: the graph was cut where it was made under no_grad{detail}",
    "inference_mode": "{name} has no gradient: the graph was cut where it was made under "
    "inference_mode{detail}",
    "detached": "{name} has no gradient: the graph was cut by {detail}",
    "non_differentiable": "{name} has no gradient: it is reached only through a "
    "non-differentiable op ({detail})",
    "unreachable": "{name} has no gradient: it is not on a path to the root of the backward"
    "{detail}",
    "non_leaf": "{name} has no gradient: it is not a leaf and .retain_grad() was not called"
    "{detail}",
    "cleared": "{name} has no gradient: it got one in the backward, cleared since{detail}",
}


def why_no_grad(rec, t, *, names=None, namespace=None, module=None) -> WhyNoGrad:
    """Why ``t.grad`` is None after the block ``rec`` recorded (NOTE [Why, from the records and
    the cell's text]). ``names``: ``{id(obj): name}`` for the sentence; ``namespace``: the
    cell's variables (to follow the names a line read); ``module``: the module that owns ``t``
    directly, when ``t`` is a parameter (its calls are searched for the cut)."""
    cell = _Cell(rec, namespace or {})
    name = (names or {}).get(id(t)) or cell.name_of(t) or "this tensor"
    return _why(rec, cell, t, name, module, depth=0)


def unused_parameters(rec, module, *, namespace=None) -> list:
    """``[(name, WhyNoGrad)]`` for the parameters of ``module`` that got no gradient, names as
    ``module.named_parameters()`` gives them."""
    cell = _Cell(rec, namespace or {})
    owners = {}
    for _, sub in module.named_modules():
        for p in sub.parameters(recurse=False):
            owners.setdefault(id(p), sub)
    out = []
    for name, p in module.named_parameters():
        if p.grad is None:
            out.append((name, _why(rec, cell, p, name, owners.get(id(p)), depth=0)))
    return out


def _why(rec, cell, t, name, module, depth):
    if t.requires_grad:  # (read directly: an inference tensor has no version to read)
        return _why_requires_grad(rec, cell, t, name, module)
    made = _record_of(rec, t)
    if made is not None and _inputs_require_grad(made):
        return _cut(name, made, t)
    line = made.line if made is not None else cell.assigned_line(name)
    if line is not None:
        found = cell.explain_line(
            line, name, depth, lambda o, n: _why(rec, cell, o, n, None, depth + 1)
        )
        if found is not None:
            return found
    if _is_inference(t):
        return WhyNoGrad(name, "inference_mode", cell.text(line), line)
    return WhyNoGrad(name, "not_requires_grad", cell.text(line), line)


def _why_requires_grad(rec, cell, t, name, module):
    source = rec.graph_source
    node = source.gradient_node(t, create=False)
    has_grad = source.grad(t) is not None
    if t.grad_fn is not None:
        made = _record_of(rec, t) or _record_of_node(rec, t.grad_fn)
        line = made.line if made is not None else None
        retains = bool(getattr(t, "retains_grad", False))
        if not retains:
            return WhyNoGrad(name, "non_leaf", cell.text(line), line, "")
        if has_grad:
            return WhyNoGrad(name, None)
    elif has_grad:
        return WhyNoGrad(name, None)
    if any(_ran(trace, node, t) for trace in rec.passes):
        return WhyNoGrad(name, "cleared", None, None, " (its .grad was set to None)")
    # the first call that used it (or what it made) and cut the graph
    cut = _first_cut(rec, t, node, module)
    if cut is not None:
        return _cut(name, cut, None)
    names = _names_of_descendants(rec, cell, t, node, name, module)
    for line, attr in cell.detaching_uses(names):
        return WhyNoGrad(name, "detached", cell.text(line), line, _detach_words(attr))
    if not rec.passes:
        return WhyNoGrad(name, "unreachable", None, None, " (no backward pass ran)")
    return WhyNoGrad(name, "unreachable", None, None, "")


def _ran(trace, node, t):
    if any(acc.variable() is t for acc in trace.accumulations):
        return True
    return node is not None and any(step.node is node for step in trace.steps)


def _cut(name, r, t):
    """The sentence for a call ``r`` whose inputs require grad and whose output does not."""
    out = r.outputs[0] if r.outputs else None
    integer = out is not None and str(out.dtype).startswith(_INTEGER)
    attr = r.op.rsplit(".", 1)[-1].replace("__get__", "").strip("_") or r.op
    if attr in _DETACHING:  # torch records .detach() and .data as calls
        return WhyNoGrad(name, "detached", r.source, r.line, _detach_words(attr))
    if r.op in _NON_DIFFERENTIABLE or integer:
        what = f"{r.op}, with {out.dtype} values" if integer else r.op
        return WhyNoGrad(name, "non_differentiable", r.source, r.line, what)
    alive = r.output_tensors()
    if t is None and alive:
        t = alive[0]
    if t is not None and _is_inference(t):
        return WhyNoGrad(name, "inference_mode", r.source, r.line, f" ({r.op})")
    return WhyNoGrad(name, "no_grad", r.source, r.line, f" ({r.op})")


def _is_inference(t):
    try:
        return bool(t.is_inference())
    except (AttributeError, TypeError):
        return False


def _inputs_require_grad(r):
    return any(info.requires_grad for info in r.inputs)


def _record_of(rec, t):
    """The record whose output is ``t`` (the last one: a name bound again)."""
    for r in reversed(rec.records):
        refs = r._outputs_ref
        for ref in refs if type(refs) is tuple else (refs,):
            if ref() is t:
                return r
    return None


def _record_of_node(rec, node):
    for r in rec.records:
        if r.node is node:
            return r
    return None


def _descendants(rec, node):
    """The nodes made, in the block, from ``node`` (forward order)."""
    found = {node} if node is not None else set()
    source = rec.graph_source
    for r in rec.records:
        if r.node is not None and any(fn in found for fn, _ in source.next_edges(r.node)):
            found.add(r.node)
    return found


def _first_cut(rec, t, node, module):
    """The first call that took ``t`` (or a tensor made from it) and made a tensor that does
    not require grad; for a parameter, also a call of its ``module`` that did so."""
    found = _descendants(rec, node)
    for r in rec.records:
        if r.node is not None or not _inputs_require_grad(r):
            continue
        if any(info.node in found for info in r.inputs if info.node is not None):
            return r
        group = r.group
        if module is not None and group is not None and group.module is module:
            return r
    return None


def _names_of_descendants(rec, cell, t, node, name, module=None):
    """``name``, the cell's names of the tensors made from ``t``, and those of ``module`` (its
    call's output read by a line: ``enc(x).detach()``)."""
    names = [name]
    found = _descendants(rec, node)
    for k, v in cell.namespace.items():
        fn = getattr(v, "grad_fn", None)
        if (v is module or (fn is not None and fn in found)) and k not in names:
            names.append(k)
    return names


def _detach_words(attr):
    return {
        "detach": ".detach()",
        "detach_": ".detach_()",
        "data": ".data",
        "item": ".item() (a Python number)",
        "numpy": ".numpy() (a NumPy round trip)",
        "tolist": ".tolist() (a Python list)",
    }[attr]


class _Cell:
    """The recorded cell's text, parsed once: assignments, ``with`` blocks, detaching uses."""

    def __init__(self, rec, namespace):
        self.namespace = namespace
        self.filename = rec.cell_filename or next(
            (r.filename for r in rec.records if r.filename is not None), None
        )
        self.offset = rec.line_offset if rec.cell_filename is not None else 0
        lines = linecache.getlines(self.filename) if self.filename else []
        # the ``%%autograd`` line is line 1 of the cell as shown: not Python, kept as a blank
        text = "".join("\n" if k == 0 and s.startswith("%%") else s for k, s in enumerate(lines))
        self.lines = lines
        try:
            self.tree = ast.parse(text)
        except SyntaxError:
            self.tree = None
        self.parents = {}
        if self.tree is not None:
            for parent in ast.walk(self.tree):
                for child in ast.iter_child_nodes(parent):
                    self.parents[child] = parent

    def text(self, line):
        if line is None or not self.lines:
            return None
        k = line - self.offset - 1
        return self.lines[k].strip() if 0 <= k < len(self.lines) else None

    def name_of(self, obj):
        for k, v in self.namespace.items():
            if v is obj and not k.startswith("_"):
                return k
        return None

    def _statements(self, name):
        if self.tree is None:
            return []
        out = []
        for n in ast.walk(self.tree):
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                if any(isinstance(x, ast.Name) and x.id == name for x in _flat(targets)):
                    out.append(n)
        return sorted(out, key=lambda n: n.lineno)

    def assigned_line(self, name):
        """The line (as shown) of the last assignment to ``name`` in the cell, or None."""
        found = self._statements(name)
        return found[-1].lineno + self.offset if found else None

    def _statement_at(self, line):
        for n in ast.walk(self.tree) if self.tree is not None else ():
            if isinstance(n, ast.stmt) and n.lineno + self.offset == line:
                if not isinstance(n, (ast.With, ast.For, ast.If, ast.While)):
                    return n
        return None

    def explain_line(self, line, name, depth, why_of):
        """The cause a line of the cell shows for the tensor it made: a detaching attribute,
        a ``with no_grad()`` / ``inference_mode()`` around it, or (a level further) the cause
        of a tensor it read."""
        stmt = self._statement_at(line)
        if stmt is None:
            return None
        value = getattr(stmt, "value", None)
        for n in ast.walk(value) if value is not None else ():
            if isinstance(n, ast.Attribute) and n.attr in _DETACHING:
                return WhyNoGrad(name, "detached", self.text(line), line, _detach_words(n.attr))
        mode = self._mode_around(stmt)
        if mode is not None:
            return WhyNoGrad(name, mode, self.text(line), line, "")
        if depth >= 4 or value is None:
            return None
        for n in ast.walk(value):
            if isinstance(n, ast.Name) and n.id != name:
                obj = self.namespace.get(n.id)
                if obj is not None and hasattr(obj, "requires_grad") and hasattr(obj, "grad"):
                    found = why_of(obj, n.id)
                    if found.cause not in (None, "not_requires_grad", "non_leaf"):
                        found.name = name
                        return found
        return None

    def _mode_around(self, stmt):
        node = self.parents.get(stmt)
        while node is not None:
            if isinstance(node, ast.With):
                for item in node.items:
                    words = ast.unparse(item.context_expr)
                    if "inference_mode" in words:
                        return "inference_mode"
                    if "no_grad" in words or "set_grad_enabled(False)" in words:
                        return "no_grad"
            node = self.parents.get(node)
        return None

    def detaching_uses(self, names):
        """``(line, attr)`` of each ``.detach()``-like use of an expression that reads one of
        ``names`` (``NAME.detach()``, ``(NAME * 2).detach()``), in order."""
        if self.tree is None:
            return []
        found = []
        for n in ast.walk(self.tree):
            if (
                isinstance(n, ast.Attribute)
                and n.attr in _DETACHING
                and any(isinstance(m, ast.Name) and m.id in names for m in ast.walk(n.value))
            ):
                found.append((n.lineno + self.offset, n.attr))
        return sorted(found)


def _flat(targets):
    for x in targets:
        if isinstance(x, (ast.Tuple, ast.List)):
            yield from _flat(x.elts)
        else:
            yield x
