"""One schema (NOTE [One schema] in nbgrad/notebook/schema.py): the JSDoc typedefs in
widgets/*.js against the TypedDicts of snapshot.py and layout.py, field by field, and real
snapshots, traces and layouts against the TypedDicts."""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path
from typing import Literal, NotRequired, Union, get_args, get_origin, get_type_hints

import pytest

import nbgrad as ng
from nbgrad.notebook import layout as layout_mod
from nbgrad.notebook import record
from nbgrad.notebook import snapshot as snapshot_mod
from nbgrad.notebook.layout import layout
from nbgrad.notebook.snapshot import build_snapshot
from nbgrad.notebook.trace import trace_snapshot

WIDGETS = Path(__file__).resolve().parents[2] / "widgets"
PY_TYPES = {t.__name__: t for t in snapshot_mod.SCHEMA_TYPES + layout_mod.SCHEMA_TYPES}

# -- JSDoc typedefs -> a normal form ------------------------------------------------------------
# A type is ("prim", name) | ("lit", value) | ("ref", name) | ("array", T) | ("map", T) |
# ("union", frozenset of T) | ("record", ((field, (optional, T)), ...)).

_TOKEN = re.compile(r'\s*("[^"]*"|\d+|[A-Za-z_]\w*|\[\]|[{}()<>|,:?])')
_PRIMS = {"string", "number", "boolean", "null", "any"}


def _tokens(text):
    pos, out = 0, []
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise SyntaxError(f"cannot read the JSDoc type at {text[pos : pos + 20]!r}")
        out.append(m.group(1))
        pos = m.end()
    return out


def _union(parts):
    flat = set()
    for p in parts:
        flat |= p[1] if p[0] == "union" else {p}
    return next(iter(flat)) if len(flat) == 1 else ("union", frozenset(flat))


class _Parser:
    def __init__(self, text):
        self.toks = _tokens(text)
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, expected=None):
        tok = self.peek()
        if expected is not None and tok != expected:
            raise SyntaxError(f"expected {expected!r}, got {tok!r}")
        self.i += 1
        return tok

    def union(self):
        parts = [self.postfix()]
        while self.peek() == "|":
            self.take()
            parts.append(self.postfix())
        return _union(parts)

    def postfix(self):
        t = self.primary()
        while self.peek() == "[]":
            self.take()
            t = ("array", t)
        return t

    def primary(self):
        tok = self.take()
        if tok == "(":
            t = self.union()
            self.take(")")
            return t
        if tok == "{":
            fields = {}
            while self.peek() != "}":
                name = self.take()
                optional = self.peek() == "?"
                if optional:
                    self.take()
                self.take(":")
                fields[name] = (optional, self.union())
                if self.peek() == ",":
                    self.take()
            self.take("}")
            return ("record", tuple(sorted(fields.items())))
        if tok.startswith('"'):
            return ("lit", tok[1:-1])
        if tok.isdigit():
            return ("lit", int(tok))
        if tok == "Object" and self.peek() == "<":
            self.take("<")
            self.take("string")
            self.take(",")
            t = self.union()
            self.take(">")
            return ("map", t)
        return ("prim", tok) if tok in _PRIMS else ("ref", tok)


def parse_jsdoc_type(text):
    p = _Parser(text)
    t = p.union()
    if p.peek() is not None:
        raise SyntaxError(f"unread: {p.toks[p.i :]}")
    return t


def jsdoc_typedefs(source: str) -> list[tuple[str, str]]:
    """``(name, type text)`` of each ``@typedef {type} Name`` in the JSDoc comments of a file."""
    out = []
    for block in re.findall(r"/\*\*(.*?)\*/", source, re.S):
        text = "\n".join(re.sub(r"^\s*\* ?", "", line) for line in block.splitlines())
        for m in re.finditer(r"@typedef\s*\{", text):
            depth, i = 1, m.end()
            while depth:
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            name = re.match(r"\s*([A-Za-z_]\w*)", text[i:]).group(1)
            out.append((name, text[m.end() : i - 1]))
    return out


def all_typedefs():
    found = {}
    for path in sorted(WIDGETS.glob("*.js")):
        for name, text in jsdoc_typedefs(path.read_text()):
            found.setdefault(name, []).append((path.name, text))
    return found


# -- Python TypedDicts -> the same form ---------------------------------------------------------


def python_type(t):
    origin = get_origin(t)
    if t is str:
        return ("prim", "string")
    if t is bool:
        return ("prim", "boolean")
    if t in (int, float):
        return ("prim", "number")
    if t is type(None):
        return ("prim", "null")
    if origin in (Union, types.UnionType):
        return _union([python_type(a) for a in get_args(t)])
    if origin is list:
        return ("array", python_type(get_args(t)[0]))
    if origin is dict:
        key, value = get_args(t)
        assert key is str, "JSON object keys are strings"
        return ("map", python_type(value))
    if origin is Literal:
        return _union([("lit", a) for a in get_args(t)])
    if typing.is_typeddict(t):
        return ("ref", t.__name__)
    raise TypeError(f"no JSON type for {t!r}")


def _hints(td):
    return get_type_hints(
        td, globalns=vars(__import__(td.__module__, fromlist=["_"])), include_extras=True
    )


def python_record(td):
    fields = {}
    for name, hint in _hints(td).items():
        optional = get_origin(hint) is NotRequired
        fields[name] = (optional, python_type(get_args(hint)[0] if optional else hint))
    return ("record", tuple(sorted(fields.items())))


def differences(name, js_text, td) -> list[str]:
    """How a JSDoc typedef differs from its TypedDict (empty when they agree)."""
    js = parse_jsdoc_type(js_text)
    py = python_record(td)
    if js[0] != "record":
        return [f"{name}: the typedef is no record"]
    out = []
    jf, pf = dict(js[1]), dict(py[1])
    for field in sorted(set(jf) | set(pf)):
        if field not in jf:
            out.append(f"{name}.{field}: in Python, missing in JS")
        elif field not in pf:
            out.append(f"{name}.{field}: in JS, missing in Python")
        elif jf[field] != pf[field]:
            out.append(f"{name}.{field}: JS {jf[field]} != Python {pf[field]}")
    return out


# -- the checks ---------------------------------------------------------------------------------


def test_each_record_has_one_typedef_and_it_matches_python():
    found = all_typedefs()
    copies = {n: [f for f, _ in defs] for n, defs in found.items() if len(defs) > 1}
    assert not copies, f"typedefs written more than once: {copies}"
    assert set(found) == set(PY_TYPES), (
        f"JS only: {sorted(set(found) - set(PY_TYPES))}; "
        f"Python only: {sorted(set(PY_TYPES) - set(found))}"
    )
    problems = []
    for name, [(_, text)] in found.items():
        problems += differences(name, text, PY_TYPES[name])
    assert not problems, "\n".join(problems)


def test_typedefs_refer_only_to_defined_records():
    found = all_typedefs()

    def refs(t):
        kind, arg = t
        if kind == "ref":
            yield arg
        elif kind in ("array", "map"):
            yield from refs(arg)
        elif kind == "union":
            for a in arg:
                yield from refs(a)
        elif kind == "record":
            for _, (_, sub) in arg:
                yield from refs(sub)

    for name, [(_, text)] in found.items():
        for ref in refs(parse_jsdoc_type(text)):
            assert ref in found, f"{name} refers to {ref}, which no typedef defines"


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (("input_nr: number}} SnapNext", "input: number}} SnapNext"), "SnapNext.input"),
        (("seq: (number|null)", "seq: number"), "SnapNode.seq: JS"),
        (("output?: (boolean|null), ", ""), "Saved.output"),
        (("expanded: string[]}} Layout", "expanded: number[]}} Layout"), "Layout.expanded"),
        (("lx: (number|null), ly", "lx: number, ly"), "LayoutEdge.lx"),
    ],
)
def test_a_drifted_typedef_is_caught(edit, expected):
    text = (WIDGETS / "common.js").read_text()
    old, new = edit
    assert old in text
    defs = dict(jsdoc_typedefs(text.replace(old, new)))
    problems = [p for name, t in defs.items() for p in differences(name, t, PY_TYPES[name])]
    assert any(p.startswith(expected) for p in problems), problems


def test_jsdoc_parser():
    t = parse_jsdoc_type('{a: (string|null), b?: Object<string, X[]>, c: "k", d: 1}')
    assert t[0] == "record" and dict(t[1]) == {
        "a": (False, ("union", frozenset({("prim", "string"), ("prim", "null")}))),
        "b": (True, ("map", ("array", ("ref", "X")))),
        "c": (False, ("lit", "k")),
        "d": (False, ("lit", 1)),
    }
    with pytest.raises(SyntaxError):
        parse_jsdoc_type("{a: (string|null}")


# -- real data against the TypedDicts -----------------------------------------------------------


def conforms(value, t, path="$") -> list[str]:
    """Where ``value`` breaks type ``t`` (a TypedDict or a field's type): empty if nowhere."""
    origin = get_origin(t)
    if typing.is_typeddict(t):
        if not isinstance(value, dict):
            return [f"{path}: not an object"]
        hints = _hints(t)
        required = {k for k, h in hints.items() if get_origin(h) is not NotRequired}
        out = [f"{path}: missing {k}" for k in sorted(required - set(value))]
        out += [f"{path}: unknown field {k}" for k in sorted(set(value) - set(hints))]
        for k in set(value) & set(hints):
            h = hints[k]
            h = get_args(h)[0] if get_origin(h) is NotRequired else h
            out += conforms(value[k], h, f"{path}.{k}")
        return out
    if origin in (Union, types.UnionType):
        tries = [conforms(value, a, path) for a in get_args(t)]
        return [] if any(not e for e in tries) else [f"{path}: {value!r:.60} fits no {t}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: not a list"]
        return [e for i, v in enumerate(value) for e in conforms(v, get_args(t)[0], f"{path}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{path}: not an object"]
        return [e for k, v in value.items() for e in conforms(v, get_args(t)[1], f"{path}.{k}")]
    if origin is Literal:
        return [] if value in get_args(t) else [f"{path}: {value!r} not in {get_args(t)}"]
    ok = {
        str: isinstance(value, str),
        bool: isinstance(value, bool),
        int: isinstance(value, int) and not isinstance(value, bool),
        float: isinstance(value, (int, float)) and not isinstance(value, bool),
        type(None): value is None,
    }[t]
    return [] if ok else [f"{path}: {value!r:.60} is not {t.__name__}"]


def _recorded():
    """A graph with a module group, saved tensors (kept, freed, a list, plain values), every
    kind of hook, a retained gradient and two backward passes."""
    lin = ng.nn.Linear(3, 2)
    lin.register_forward_hook(lambda m, a, o: None)
    x = ng.randn(4, 3, requires_grad=True)
    x.register_post_accumulate_grad_hook(lambda t: None)
    with record() as rec:
        h = lin(x).tanh()
        h.register_hook(lambda g: g * 1.0)
        h.grad_fn.register_prehook(lambda go: None)
        h.grad_fn.register_hook(lambda gi, go: None)
        h.retain_grad()
        both = ng.cat([h, h * 2], 1).sum(1)
        loss = both.mean()
        loss.backward(retain_graph=True)
        loss.backward()
    return rec, lin


def test_a_recorded_snapshot_trace_and_layout_fit_the_types():
    rec, lin = _recorded()
    snap = build_snapshot(rec, names={id(lin): "lin"})
    kinds = {s["kind"] for n in snap["nodes"] for s in n["saved"]}
    assert {"freed", "value"} <= kinds  # the data exercise the optional fields
    assert {hk["target_kind"] for hk in snap["hooks"]} == {"tensor", "node", "module"}
    assert conforms(snap, snapshot_mod.Snapshot) == []
    trace = trace_snapshot(rec.passes[0])
    assert any(s["accumulated"] for s in trace["steps"])
    assert conforms(trace, snapshot_mod.Trace) == []
    for collapsed in ([], [g["id"] for g in snap["groups"]]):
        assert conforms(layout(snap, collapsed), layout_mod.Layout) == []


def test_a_snapshot_before_backward_fits_the_types():
    x = ng.ones(2, 2, requires_grad=True)
    with record() as rec:
        y = ng.stack([x.tanh(), x * x]).sum()
    snap = build_snapshot(rec, timings=False)
    assert any(s["kind"] == "tensor" for n in snap["nodes"] for s in n["saved"])
    assert conforms(snap, snapshot_mod.Snapshot) == []
    assert y.requires_grad


def test_conforms_finds_a_wrong_field():
    rec, _ = _recorded()
    snap = build_snapshot(rec)
    snap["nodes"][0]["seq"] = "7"
    del snap["edges"][0]["input_nr"]
    snap["records"][0]["extra"] = 1
    problems = conforms(snap, snapshot_mod.Snapshot)
    assert any(p.startswith("$.nodes[0].seq") for p in problems)
    assert "$.edges[0]: missing input_nr" in problems
    assert "$.records[0]: unknown field extra" in problems
