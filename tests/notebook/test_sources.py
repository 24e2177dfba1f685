"""The graph-source seam (``nbgrad/notebook/sources.py``): nbgrad's source against the graph it
reads, a toy source drawn by the same snapshot, layout and SVG, and a scan that keeps the
notebook's code off the private attributes of the objects it does not own."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest

import nbgrad as ng
from nbgrad.autograd.graph import UINT64_MAX, AccumulateGrad
from nbgrad.notebook import record
from nbgrad.notebook.layout import layout
from nbgrad.notebook.snapshot import build_snapshot
from nbgrad.notebook.sources import (
    NBGRAD,
    GraphSource,
    InputMeta,
    NodeHooks,
    SavedValue,
    TensorFacts,
    source_for,
)
from nbgrad.notebook.svg import snapshot_svg

NOTEBOOK = Path(ng.__file__).parent / "notebook"

# -- nbgrad's source ---------------------------------------------------------------------------


def test_nbgrad_source_reads_nodes_as_the_public_api_shows_them():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 3.0).tanh()
    node = y.grad_fn
    assert NBGRAD.node_name(node) == node.name() == "TanhBackward0"
    assert [tuple(e) for e in NBGRAD.next_edges(node)] == list(node.next_functions)
    assert NBGRAD.sequence_nr(node) == node._sequence_nr()
    acc = NBGRAD.gradient_node(x)
    assert type(acc) is AccumulateGrad and NBGRAD.is_accumulator(acc)
    assert NBGRAD.sequence_nr(acc) == UINT64_MAX and NBGRAD.variable(acc) is x
    assert NBGRAD.variable(node) is None and not NBGRAD.is_accumulator(node)
    assert NBGRAD.input_metadata(node) == (InputMeta((2,), "float32", "cpu"),)
    node.metadata["note"] = "hi"
    assert NBGRAD.metadata(node) == {"note": "hi"}
    assert NBGRAD.saved(node) == [
        SavedValue("result", "tensor", [2], "float32", y._version, True, None)
    ]
    y.sum().backward()
    assert NBGRAD.saved(node) == [SavedValue("result", "freed")]


def test_nbgrad_source_tensor_facts_and_gradient_nodes():
    x = ng.ones(2, 3, dtype=ng.float64, requires_grad=True)
    y = x.split(1)[1]
    facts = NBGRAD.tensor_facts(y)
    assert facts == TensorFacts(
        (1, 3), "float64", "cpu", True, False, y.grad_fn, y.output_nr, y._version
    )
    assert facts.output_nr == 1
    assert NBGRAD.tensor_facts(x).is_leaf and NBGRAD.tensor_facts(x).grad_fn is None
    c = ng.zeros(2)
    assert NBGRAD.gradient_node(c) is None
    fresh = ng.ones(2, requires_grad=True)
    assert NBGRAD.gradient_node(fresh, create=False) is None
    assert NBGRAD.gradient_node(fresh) is NBGRAD.gradient_node(fresh, create=False)
    x.sum().backward()
    assert NBGRAD.grad(x) is x.grad and NBGRAD.grad(y) is None
    # the data itself (ones), not computed
    np.testing.assert_array_equal(NBGRAD.to_numpy(x), np.ones((2, 3)))


def test_nbgrad_source_hooks_of_a_node_and_a_leaf():
    x = ng.ones(2, requires_grad=True)
    y = x * 2
    th = y.register_hook(lambda g: g)
    pre = y.grad_fn.register_prehook(lambda go: None)
    post = y.grad_fn.register_hook(lambda gi, go: None)
    y.retain_grad()
    hooks = NBGRAD.node_hooks(y.grad_fn)
    assert hooks == NodeHooks((pre,), (post,), (th,), (0,), ())
    infos = NBGRAD.hooks(y.grad_fn)
    assert [(i.kind, i.target_kind) for i in infos] == [
        ("tensor_hook", "tensor"),
        ("node_prehook", "node"),
        ("node_hook", "node"),
    ]
    assert infos[0].target is y and infos[1].target is y.grad_fn
    lh = x.register_hook(lambda g: g)
    pa = x.register_post_accumulate_grad_hook(lambda t: None)
    acc = NBGRAD.gradient_node(x)
    assert NBGRAD.node_hooks(acc).post_accumulate_grad == (pa,)
    assert [i.handle for i in NBGRAD.hooks(acc)] == [lh, pa]
    assert NBGRAD.hooks(acc)[1].target is x
    lin = ng.nn.Linear(2, 2)
    mh = lin.register_forward_hook(lambda m, a, o: None)
    assert [i.handle for i in NBGRAD.module_hooks(lin)] == [mh]
    assert NBGRAD.module_hooks(object()) == []


def test_nbgrad_source_finds_each_kind_of_node_hook_alone():
    # a node with no hooks answers at once; each kind of hook alone is still found
    def node():
        return ng.ones(2, requires_grad=True) * 2

    plain, kept = node(), node()
    kept.retain_grad()  # (retain_grad's hook is the tensor's, not listed: NodeHooks has it)
    assert NBGRAD.hooks(plain.grad_fn) == [] and NBGRAD.hooks(kept.grad_fn) == []
    y = node()
    th = y.register_hook(lambda g: g)
    assert [i.handle for i in NBGRAD.hooks(y.grad_fn)] == [th]
    y = node()
    pre = y.grad_fn.register_prehook(lambda go: None)
    assert [i.handle for i in NBGRAD.hooks(y.grad_fn)] == [pre]
    y = node()
    post = y.grad_fn.register_hook(lambda gi, go: None)
    assert [i.handle for i in NBGRAD.hooks(y.grad_fn)] == [post]


def test_source_for_picks_a_registered_source_else_nbgrad():
    from nbgrad.notebook import sources

    toy = _ToySource()
    assert source_for(ng.ones(1)) is NBGRAD and source_for([ToyNode("a")]) is NBGRAD
    sources.register_source(toy)
    try:
        assert source_for([ToyNode("a")]) is toy
        assert source_for(ng.ones(1)) is NBGRAD
    finally:
        sources._sources.remove(toy)


# -- a toy source: the snapshot, the layout and the SVG never ask which framework it is -----


class ToyNode:
    def __init__(self, name, inputs=(), seq=None, leaf=None):
        self.name, self.inputs, self.seq, self.leaf = name, list(inputs), seq, leaf


class ToyTensor:
    def __init__(self, shape, grad=None):
        self.shape, self.grad = shape, grad


class _ToySource(GraphSource):
    name = "toy"

    def owns(self, obj):
        return isinstance(obj, (ToyNode, ToyTensor))

    def is_node(self, obj):
        return isinstance(obj, ToyNode)

    def is_tensor(self, obj):
        return isinstance(obj, ToyTensor)

    def node_name(self, node):
        return node.name

    def next_edges(self, node):
        return [(n, 0) for n in node.inputs]

    def sequence_nr(self, node):
        return UINT64_MAX if node.seq is None else node.seq

    def variable(self, node):
        return node.leaf

    def is_accumulator(self, node):
        return node.leaf is not None

    def metadata(self, node):
        return {"made_by": "toy"}

    def input_metadata(self, node):
        shape = node.leaf.shape if node.leaf is not None else (3,)
        return (InputMeta(shape, "toyfloat", "abacus"),)

    def saved(self, node):
        return [SavedValue("self", "tensor", [3], "toyfloat", 0, False)] if node.inputs else []

    def node_hooks(self, node):
        return NodeHooks((), (), (), (), ())

    def module_hooks(self, module):
        return []

    def tensor_facts(self, t):
        return TensorFacts(t.shape, "toyfloat", "abacus", True, True, None, 0, 0)

    def gradient_node(self, t, create=True):
        return None

    def grad(self, t):
        return t.grad

    def to_numpy(self, t):
        return np.full(t.shape, 0.5)


def test_a_toy_source_gives_a_snapshot_layout_and_svg():
    w = ToyTensor((3,), grad=ToyTensor((3,)))
    leaf = ToyNode("AccumulateGrad", leaf=w)
    mul = ToyNode("ToyMul", [leaf], seq=7)
    root = ToyNode("ToySum", [mul], seq=8)
    snap = build_snapshot(roots=[root], names={id(w): "w"}, source=_ToySource())
    json.dumps(snap)
    by_name = {n["name"]: n for n in snap["nodes"]}
    assert [n["id"] for n in snap["nodes"]] == ["n7", "n8", "leaf0"]
    assert by_name["ToyMul"]["saved"][0]["dtype"] == "toyfloat"
    assert by_name["ToyMul"]["metadata"] == {"made_by": "'toy'"}  # values as repr
    assert by_name["ToySum"]["device"] == "abacus" and snap["roots"] == ["n8"]
    leaf_entry = by_name["AccumulateGrad"]
    assert leaf_entry["kind"] == "leaf" and leaf_entry["label"] == "w"
    assert leaf_entry["tensor"]["grad"]["values"] == [0.5, 0.5, 0.5]
    assert [(e["from"], e["to"]) for e in snap["edges"]] == [("n7", "leaf0"), ("n8", "n7")]
    svg = snapshot_svg(snap, [], layout(snap, []))
    assert "ToyMul" in svg and "w" in svg


# -- the scan: no private reads of objects the notebook does not own ----------------------------

# underscore names of other libraries' protocols, read on objects that are not nbgrad's
FOREIGN = {"_getframe", "_render_traceback_"}
# PyTorch's public (or semi-public) underscore names: allowed only in the modules that read a
# framework's graph (sources.py, torch_source.py)
TORCH_PUBLIC = {
    "_version",
    "_sequence_nr",
    "_get_sequence_nr",  # torch.autograd's (torch.fx reads it): the counter _sequence_nr reads
    "_input_metadata",
    "_backward_hooks",
    "_post_accumulate_grad_hooks",
    "_execution_engine",
    "_get_current_function_mode_stack",  # torch.overrides': the modes entered, innermost last
}
TORCH_PUBLIC_PREFIXES = ("_saved_", "_raw_saved_")
# reads still to be moved behind the seam, by module (none left)
PENDING: dict = {}


def _private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def own_names(trees) -> set:
    """Underscore names the notebook defines itself: functions, classes, methods, class
    attributes, ``__slots__`` entries and attributes assigned on ``self``."""
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                if isinstance(node.value, ast.Name) and node.value.id == "self":
                    names.add(node.attr)
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for stmt in cls.body:
                targets = []
                if isinstance(stmt, ast.Assign):
                    targets = stmt.targets
                elif isinstance(stmt, ast.AnnAssign):
                    targets = [stmt.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        names.add(t.id)
                        if t.id == "__slots__" and isinstance(stmt.value, (ast.Tuple, ast.List)):
                            names.update(
                                e.value for e in stmt.value.elts if isinstance(e, ast.Constant)
                            )
    return {n for n in names if _private(n)}


def private_reads(tree, own, allowed=frozenset(), prefixes=()) -> list:
    """``(line, what)`` for each underscore attribute read on an object the notebook does not
    own: ``obj._x`` (not on ``self``, ``cls`` or ``super()``), ``getattr(obj, "_x")`` and
    ``hasattr``, and ``from nbgrad... import _x`` or from a private nbgrad module."""
    found = []

    def bad(name):
        return (
            _private(name)
            and name not in own
            and name not in allowed
            and name not in FOREIGN
            and not name.startswith(prefixes or ("\0",))
        )

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            base = node.value
            if isinstance(base, ast.Name) and base.id in ("self", "cls"):
                continue
            if isinstance(base, ast.Call) and getattr(base.func, "id", None) == "super":
                continue
            if bad(node.attr):
                found.append((node.lineno, f".{node.attr}"))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
            "getattr",
            "hasattr",
            "setattr",
        ):
            if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
                name = node.args[1].value
                if isinstance(name, str) and bad(name):
                    found.append((node.lineno, f"{node.func.id}({name!r})"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith("nbgrad") and any(
                _private(part) for part in node.module.split(".")
            ):
                found.append((node.lineno, f"from {node.module}"))
            for alias in node.names:
                if bad(alias.name):
                    found.append((node.lineno, f"import {alias.name}"))
    return found


def _trees():
    return {p.name: ast.parse(p.read_text(), p.name) for p in sorted(NOTEBOOK.glob("*.py"))}


def test_the_notebook_reads_no_private_attribute_of_a_core_object():
    trees = _trees()
    own = own_names(trees.values())
    problems = []
    for name, tree in trees.items():
        allowed = set(PENDING.get(name, ()))
        prefixes = ()
        if name in ("sources.py", "torch_source.py"):
            allowed |= TORCH_PUBLIC
            prefixes = TORCH_PUBLIC_PREFIXES
        problems += [
            f"{name}:{line}: {what}" for line, what in private_reads(tree, own, allowed, prefixes)
        ]
    assert not problems, "private reads of core objects:\n" + "\n".join(problems)


def test_the_scan_finds_private_reads():
    src = (
        "from nbgrad._graph.saved_tensor import FREED\n"
        "from nbgrad.tensor import _FROM_NP\n"
        "def f(node, t, self):\n"
        "    self._mine = node._next_edges\n"
        "    getattr(t, '_data')\n"
        "    hasattr(t, '_grad_accumulator')\n"
        "    return t._version, node._saved_self, self._mine, node._mine\n"
    )
    tree = ast.parse(src)
    own = own_names([tree])
    assert own == {"_mine"}
    found = [what for _, what in private_reads(tree, own)]
    assert sorted(found) == sorted(
        [
            "from nbgrad._graph.saved_tensor",
            "import _FROM_NP",
            "._next_edges",
            "getattr('_data')",
            "hasattr('_grad_accumulator')",
            "._version",
            "._saved_self",
        ]
    )
    # sources.py's allowance: PyTorch's public underscore names, nothing else
    found = [what for _, what in private_reads(tree, own, TORCH_PUBLIC, TORCH_PUBLIC_PREFIXES)]
    assert "._version" not in found and "._saved_self" not in found
    assert "._next_edges" in found


@pytest.mark.parametrize("name", ["snapshot.py", "layout.py", "svg.py"])
def test_snapshot_layout_and_svg_import_no_framework(name):
    """They see graphs only through a source (snapshot) or JSON (layout, svg)."""
    tree = _trees()[name]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert not any(a.name.split(".")[0] in ("nbgrad", "torch") for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            assert node.module.split(".")[0] not in ("nbgrad", "torch"), node.module


def test_recorded_snapshot_is_unchanged_by_the_seam():
    """A recorded graph with saved values, hooks and a pass, read through the source."""
    x = ng.tensor([1.0, -2.0], requires_grad=True)
    with record() as rec:
        y = (x * x).tanh()
        h = y.register_hook(lambda g: g * 2)
        loss = y.sum()
        loss.backward(retain_graph=True)
    snap = build_snapshot(rec, timings=False)
    names = [n["name"] for n in snap["nodes"]]
    assert names == ["MulBackward0", "TanhBackward0", "SumBackward0", "AccumulateGrad"]
    tanh = snap["nodes"][1]
    assert tanh["hooks"] == [f"h{h.id}"] and snap["hooks"][0]["target"] == tanh["id"]
    assert tanh["saved"] == [
        {
            "name": "result",
            "kind": "tensor",
            "shape": [2],
            "dtype": "float32",
            "version": 0,
            "output": True,
        }
    ]
    assert snap["records"][0]["inputs"][0]["node"] == "leaf0"
    assert snap["nodes"][3]["tensor"]["grad"]["values"] == [
        float(f"{v:.6g}") for v in x.grad.tolist()
    ]
