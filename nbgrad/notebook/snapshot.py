"""The snapshot: graph + records + hooks + gradients -> one JSON-able dict (schema version 1).

Model: Chainer's ``computational_graph`` (extract the graph first, draw it later). Everything
that crosses from the kernel to the browser, and everything the still SVG is drawn from, is a
snapshot, whose records are defined once, in ``schema.py``. Ids are stable: a node is
``"n<sequence_nr>"``; nodes whose sequence number is 2**64 - 1 are named in the order they are
first met (``"leaf0"``, ``"leaf1"`` ... for AccumulateGrad, ``"root0"`` ... for GraphRoot), never
by ``id()``; so the same program run twice in fresh processes gives the same JSON (pass
``timings=False`` to leave out wall times, the one thing that varies).

The schema is defined once, by the TypedDicts of ``schema.py`` (:class:`Snapshot` and the
records it holds; :class:`Trace` for the stepper, ``"schema": "nbgrad.trace"``; what the graph
widget is sent); the layout's in ``layout.py``. The browser's JSDoc typedefs
(``widgets/common.js``) are checked against them field by field by
``tests/notebook/test_schema.py``. A gradient is a :class:`GradSummary`; a
value that is not a tensor where a gradient is expected is ``{"repr": str}``.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import weakref

from .answers_values import mark_nodes
from .schema import (
    SCHEMA_TYPES,
    Details,
    Snapshot,
    Trace,
    ViewSnapshot,
    pack_groups,
    pack_nodes,
)
from .snapshot_details import (
    SnapshotDict,
    Unread,
    line_text,
    node_and_record,
    read_details,
    read_records,
)
from .sources import NBGRAD, UINT64_MAX, source_for
from .summaries import grad_summary, summarised, tensor_summary

__all__ = [
    "SCHEMA_VERSION",
    "SCHEMA_TYPES",
    "Snapshot",
    "Trace",
    "IdMap",
    "build_snapshot",
    "hooks_of",
    "collect_graph",
    "view_snapshot",
    "details",
    "cut_note",
    "no_collection",
]

SCHEMA_VERSION = 1
MAX_NODES = 20000
# a graph this big is sent before its details: NOTE [The drawing before the details]
FIRST_VIEW_NODES = 2000


def view_snapshot(snap: Snapshot) -> ViewSnapshot:
    """The compact form of ``snap`` the graph widget is sent (NOTE [Send less]), its nodes as
    columns (NOTE [Nodes and groups sent as columns])."""
    nodes = []
    for n in snap["nodes"]:
        v = {"id": n["id"], "name": n["name"]}
        if n["kind"] != "node":
            v["kind"] = n["kind"]
        if n["label"] != n["name"]:
            v["label"] = n["label"]
        for key in ("group", "line", "order"):
            if n[key] is not None:
                v[key] = n[key]
        for key in ("nonfinite", "nonfinite_origin"):
            if key in n:
                v[key] = n[key]
        if n["hooks"]:
            v["hooks"] = len(n["hooks"])
        nodes.append(v)
    return {
        "schema": "nbgrad.view",
        "version": 1,
        "nodes": pack_nodes(nodes, {g["id"]: g["path"] for g in snap["groups"]}),
        "edges": len(snap["edges"]),
        "groups": pack_groups(snap["groups"]),
        "hooks": snap["hooks"],
        "passes": [{k: v for k, v in p.items() if k != "order"} for p in snap["passes"]],
        "roots": snap["roots"],
        "pass": snap["pass"],
        "truncated": snap["truncated"],
        "max_nodes": snap["max_nodes"],
        "left_out": snap["left_out"],
        "cut_nodes": snap.get("cut_nodes", 0),
        "stubs": snap.get("stubs", 0),
        "failure": snap.get("failure"),
    }


def details(snap: Snapshot, item_id: str = "", edge_ids=()) -> Details:
    """The :class:`Details` of node ``item_id`` or of the edges ``edge_ids`` of ``snap``."""
    # (a SnapshotDict whose records are unread makes this node's alone: NOTE [Records read
    # when first asked] in snapshot_details.py)
    node, record = node_and_record(snap, item_id) if item_id else (None, None)
    wanted = set(edge_ids)
    return {
        "id": item_id,
        "node": node,
        "record": record,
        "incoming": [e for e in snap["edges"] if item_id and e["to"] == item_id],
        "edges": [e for e in snap["edges"] if e["id"] in wanted],
    }


def cut_note(snap) -> str:
    """What a graph cut at ``max_nodes`` left out, in words ("" when nothing was)."""
    if not snap.get("truncated"):
        return ""
    note = f"cut at {snap['max_nodes']:,} nodes (--max-nodes)"
    if snap.get("left_out"):
        note += f": the first {snap['left_out']:,} recorded calls are left out"
    if snap.get("cut_nodes"):
        note += f"; {snap['cut_nodes']:,} nodes left out"
    if snap.get("stubs"):
        n = snap["stubs"]
        note += f"; {n:,} lea{'ves' if n != 1 else 'f'} beyond the cut drawn without their edges"
    return note


class IdMap:
    """Stable ids for nodes: ``n<sequence_nr>``; leaves and graph roots numbered as first met."""

    def __init__(self, source=None):
        self.source = source  # the graph source; None until a snapshot sets it (then nbgrad's)
        self._special = weakref.WeakKeyDictionary()
        self._strong = {}  # id(key) -> (key, id) for nodes that take no weak reference
        self._counts = {"leaf": 0, "root": 0}

    def __call__(self, node):
        if node is None:
            return None
        source = self.source or NBGRAD
        seq = source.sequence_nr(node)
        if seq != UINT64_MAX:
            return f"n{seq}"
        try:
            got = self._special.get(node)
            table, key = self._special, node
        except TypeError:  # a node without weak references (torch's): keyed by its leaf
            key = source.variable(node)
            key = node if key is None else key
            table, got = self._strong, self._strong.get(id(key), (None, None))[1]
        if got is None:
            prefix = "leaf" if source.is_accumulator(node) else "root"
            got = f"{prefix}{self._counts[prefix]}"
            self._counts[prefix] += 1
            if table is self._special:
                table[key] = got
            else:  # (holding the key, so that its id is not reused while the map lives)
                table[id(key)] = (key, got)
        return got


# NOTE [No collection while drawing]
# A snapshot is a tree of fresh dicts and lists (some 30 a node), made while the kernel holds
# the graph, its records and everything else the user made. Each batch of new containers
# wakes Python's cyclic collector, whose full passes walk that whole heap: on a 10,000-node
# chain they took over half of the snapshot's time, and more the bigger the kernel, so the
# snapshot cost grew faster than the graph. The drawing makes no reference cycles (JSON-like
# data), so the collector is paused while it is made (``no_collection``), and while the rest of
# the drawing (the layout, the pictures, the widgets' state: ``GraphView.refresh``, the magic's
# ``_show``) is; it resumes after, and the next pass collects the drawing's garbage as usual.
@contextlib.contextmanager
def no_collection():
    """Pause the cyclic garbage collector for the block (NOTE [No collection while drawing])."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class _DrawnIds:
    """The ids of one snapshot: ``drawn``, ``{node: id}`` for the nodes drawn, made once a node
    (not at each of its ten or so uses); called, the id of any node (else the IdMap's)."""

    __slots__ = ("drawn", "_others", "_ids", "source")

    def __init__(self, ids, nodes):
        self._ids, self.source = ids, ids.source
        self.drawn = {n: ids(n) for n in nodes}
        self._others = {}

    def __call__(self, node):
        got = self.drawn.get(node)
        if got is None and node is not None:
            got = self._others.get(node)
            if got is None:
                got = self._others[node] = self._ids(node)
        return got


# -- extracting the graph ----------------------------------------------------------------------


def collect_graph(starts, expand=None, max_nodes=MAX_NODES, source=None, cut=None):
    """The nodes reachable from ``starts`` (Nodes), in first-met order (depth-first, following
    ``next_functions`` in order); ``expand(node)`` says whether to walk below a node.

    A graph of more than ``max_nodes`` nodes is cut as NOTE [A graph cut at max_nodes] says:
    breadth-first from ``starts``, with the leaves beyond the cut kept; ``cut`` (a dict) gets
    ``nodes``, how many were left out, and ``stubs``, the leaves kept beyond the cut.

    Returns ``(nodes, unexpanded, truncated)``.
    """
    source = source or source_for(starts)
    next_nodes = source.next_nodes
    seen = set()
    order = []
    unexpanded = set()
    # more distinct starts than fit: cut at once, without walking max_nodes nodes first
    truncated = len(set(starts) - {None}) > max_nodes
    for start in () if truncated else starts:
        if start is None or start in seen:
            continue
        seen.add(start)
        stack = [start]
        while stack:
            node = stack.pop()
            if len(order) >= max_nodes:  # one node more than fits: the graph is cut here
                truncated = True
                break
            order.append(node)
            if expand is not None and not expand(node):
                unexpanded.add(node)
                continue
            for child in reversed(next_nodes(node)):
                if child is not None and child not in seen:
                    seen.add(child)
                    stack.append(child)
        if truncated:
            break
    if truncated:
        order, unexpanded, left_out, stubs = _cut_graph(starts, expand, max_nodes, source)
        if cut is not None:
            cut.update(nodes=left_out, stubs=stubs)
    return order, unexpanded, truncated


# NOTE [A graph cut at max_nodes]
# A graph of more than max_nodes nodes keeps the nodes nearest the calls the walk starts from
# (the end of the cell): breadth-first, so that every branch is cut at the same depth (cut
# depth-first, a 50,000-node RNN kept 20,000 nodes of its ``W @ h`` chain and none of its
# ``U @ x[t]`` branches, nor ``U``). The walk then goes on to the end, only counting, and the
# leaves it meets beyond the cut (the parameters, the inputs that need a gradient: what a user
# looks for) are kept too, without the nodes between them and the cut (stubs: a node with no
# edge in), those with a gradient first, up to half of max_nodes; the nodes nearest the start
# fill the rest. So a cut graph still shows, and its search finds, every leaf that received
# a gradient; the note of every output says how many nodes were left out and how many leaves
# are drawn without their edges. The calls before the first one drawn (and any whose node was
# cut off) are left out of the snapshot too, and counted, so that a huge cell costs what its
# drawing costs.
def _cut_graph(starts, expand, max_nodes, source):
    """``(nodes, unexpanded, left out, stubs)`` of a graph cut at ``max_nodes`` (NOTE [A graph
    cut at max_nodes])."""
    next_nodes, is_leaf = source.next_nodes, source.is_accumulator
    seen = set()
    met = []  # every node, breadth-first
    for start in starts:
        if start is not None and start not in seen:
            seen.add(start)
            met.append(start)
    unexpanded = set()
    leaves, with_grad = [], []
    for node in met:  # (the list grows as it is read)
        if is_leaf(node):
            (with_grad if source.grad(source.variable(node)) is not None else leaves).append(node)
        if expand is not None and not expand(node):
            unexpanded.add(node)
            continue
        for fn in next_nodes(node):
            if fn is not None and fn not in seen:
                seen.add(fn)
                met.append(fn)
    kept_leaves = (with_grad + leaves)[: max_nodes // 2]
    keep = set(kept_leaves)
    room = max_nodes - len(keep)
    for node in met:  # the nodes nearest the start fill the rest
        if room <= 0:
            break
        if node not in keep:
            keep.add(node)
            room -= 1
    order = [n for n in met if n in keep]
    reached = set()
    for node in order:
        if node not in unexpanded:
            reached.update(next_nodes(node))
    stubs = sum(1 for n in kept_leaves if n not in reached)
    return order, unexpanded & keep, len(met) - len(order), stubs


def _starts(made, source):
    """The nodes of ``made`` (``RecordList.made``) that are not ``_superseded``, in order."""
    gradient_node = source.gradient_node
    out = []
    for node, refs in made:
        if node is None:
            continue
        if type(refs) is not tuple:  # one output (most calls): ``_superseded``, inlined
            t = refs()
            if t is None or gradient_node(t, create=False) is node:
                out.append(node)
        elif not _superseded(node, refs, source):
            out.append(node)
    return out


def _superseded(node, refs, source):
    """Whether a call's ``node`` was replaced at once: every output (``refs``, its weak
    references: ``RecordList.made``) is alive and none has it as ``grad_fn`` any more (a custom
    Function's identity outputs are views whose ``grad_fn`` becomes the Function's node, e.g.
    ``BackwardHookFunctionBackward``). Such a node is no part of the graph; it is still drawn
    if another node leads to it."""
    refs = refs if type(refs) is tuple else (refs,)
    outs = [t for t in (ref() for ref in refs) if t is not None]
    # (an op's node is never an accumulator: the outputs' grad_fn is enough)
    return len(outs) == len(refs) and all(
        source.gradient_node(t, create=False) is not node for t in outs
    )


def _group_inner_nodes(nodes, node_record, node_group, source):
    """Give the nodes a recorded call made besides its own (torch's
    ``multi_head_attention_forward`` is one call and some thirty nodes) the group of that call:
    a node's call is the first recorded one whose node is numbered at or above it (the nodes
    of one thread are numbered as they are made)."""
    seq = source.sequence_nr
    made = sorted((seq(n), r) for n, r in node_record.items() if seq(n) != UINT64_MAX)
    if not made:
        return
    keys = [k for k, _ in made]
    for n in nodes:
        if n in node_record:
            continue
        s = seq(n)
        if s == UINT64_MAX:
            continue
        k = bisect.bisect_left(keys, s)
        if k < len(made) and made[k][1].group is not None:
            node_group[n] = made[k][1].group


def _roots_to_nodes(roots, source):
    nodes = []
    for r in roots:
        node = source.root_node(r)
        if node is not None:
            nodes.append(node)
    return nodes


def hooks_of(node, source=None):
    """The HookInfo entries of the hooks that sit on ``node``: tensor hooks of the tensors it
    produced, its pre- and post-hooks, and for an AccumulateGrad the post-accumulate-grad
    hooks of its variable (see ``GraphSource.hooks``)."""
    return (source or source_for(node)).hooks(node)


def _hook_entry(info, target_id):
    return {
        "id": f"h{info.handle.id}",
        "kind": info.kind,
        "target_kind": info.target_kind,
        "target": target_id,
        "name": info.name,
        "enabled": bool(info.enabled),
        "source": getattr(info.handle.fn, "_nbgrad_source", None),
    }


def _hook_call(call, ids):
    return {
        "hook": f"h{call.handle.id}" if hasattr(call.handle, "id") else None,
        "name": call.name,
        "kind": call.kind,
        "node": ids(call.node),
        "node_name": ids.source.node_name(call.node) if call.node is not None else "",
        "before": summarised(call.before),
        "after": summarised(call.after),
        "changed": bool(call.changed),
    }


def _accumulation(acc, ids):
    if acc is None:
        return None
    return {
        "node": ids(acc.node),
        "grad": summarised(acc.grad),
        "before": summarised(acc.before),
        "after": summarised(acc.after),
    }


def _pass_entry(trace, ids):
    """A pass, its order left None (a detail, ``pass_order``: NOTE [The drawing before the
    details] in snapshot_details.py)."""
    return {
        "index": trace.index,
        "root": ids(trace.root),
        "retain_graph": trace.keep_graph,
        "create_graph": trace.create_graph,
        "order": None,
        "error": trace.error,
        "hooks": [_hook_call(c, ids) for c in trace.hook_calls],
    }


@no_collection()
def build_snapshot(
    recorder=None,
    roots=(),
    *,
    passes=None,
    pass_index=None,
    names=None,
    weak_names=None,
    ids=None,
    timings=True,
    max_nodes=MAX_NODES,
    objects=None,
    source=None,
    first_view=None,
    whole=True,
) -> Snapshot:
    """The snapshot of what ``recorder`` recorded, or of the graph below ``roots``.

    ``passes``: backward traces to include (default: the recorder's); the gradients on edges
    come from ``pass_index`` (default: the last pass that ran a node of this graph).
    ``names``: ``{id(tensor or module): name}`` for labelling leaves and top modules; a
    parameter of a recorded module without one is labelled by its module path
    (``model.fc1.weight``); ``weak_names`` (same form) are used only after both (the magic
    passes the names bound in the cell itself as ``names``, every other name in the namespace
    as ``weak_names``, so that a leftover loop variable does not rename a parameter).
    ``ids``: an :class:`IdMap` to share ids between snapshots (the recorder keeps one).
    ``objects``: a dict to fill with ``{node id: Node, group id: ModuleCall}`` (for the widgets).
    ``source``: the :class:`~nbgrad.notebook.sources.GraphSource` that reads the graph (default:
    the recorder's, else the one that owns ``roots``). ``first_view(snap)``: for a graph of
    ``FIRST_VIEW_NODES`` nodes or more, called once the snapshot holds what a drawing reads,
    before the details only a selection reads are put in (NOTE [The drawing before the details]
    in ``snapshot_details.py``). ``whole=False``: the records are read when first asked for
    (a :class:`~nbgrad.notebook.snapshot_details.SnapshotDict`: NOTE [Records read when first
    asked] in ``snapshot_details.py``).
    """
    if source is None:
        source = recorder.graph_source if recorder is not None else source_for(roots)
    if ids is None:
        ids = getattr(recorder, "_ids", None) if recorder is not None else None
        if ids is None:
            ids = IdMap(source)
            if recorder is not None:
                recorder._ids = ids
    if ids.source is None:
        ids.source = source
    names = dict(names or {})
    weak_names = weak_names or {}
    records = recorder.records if recorder is not None else []
    groups = list(recorder.modules) if recorder is not None else []
    group_ids = {g: f"g{g.index}" for g in groups}
    paths = _group_paths(groups, names, weak_names)
    param_group = _parameter_groups(groups, paths, names, weak_names)
    cut = {"nodes": 0, "stubs": 0}
    nodes, unexpanded, truncated, records, left_out, first_kept = _which_nodes(
        recorder, roots, records, max_nodes, source, cut
    )
    node_set = set(nodes)
    node_record, node_group = _number_leaves(
        recorder, records, nodes, node_set, groups, ids, source
    )
    if passes is None:
        passes = list(recorder.passes) if recorder is not None else []
    shown = _shown_pass(passes, pass_index, node_set)
    order_of, time_of = _steps_of(shown, node_set, timings)
    ordered = sorted(nodes, key=lambda n: _order_key(n, ids))
    ids = _DrawnIds(ids, ordered)
    hook_entries, node_hooks = _hook_entries(ordered, groups, group_ids, ids, source)
    drawn = {
        "node_hooks": node_hooks,
        "node_record": node_record,
        "node_group": node_group,
        "names": names,
        "param_group": param_group,
        "group_ids": group_ids,
        "recorder": recorder,
        "objects": objects,
        "time_of": time_of,
        "shared": {
            "none": [],
            **{k: {} for k in ("meta", "next", "saved", "info", "empty", "text", "line")},
        },
    }
    out_nodes = _node_entries(ordered, ids, source, unexpanded, shown, order_of, drawn)
    out_edges = _edge_entries(ordered, unexpanded, shown, ids, source)
    out_groups = _group_entries(groups, group_ids, paths, out_nodes, first_kept, recorder, objects)
    mark_nodes(out_nodes, recorder, ids)  # NaN and Inf: answers_values.py

    snap = {
        "schema": "nbgrad.snapshot",
        "version": SCHEMA_VERSION,
        "nodes": out_nodes,
        "edges": out_edges,
        "groups": out_groups,
        "records": [],  # (read below, after the first view)
        "hooks": hook_entries,
        "passes": [_pass_entry(p, ids) for p in passes],  # (their order: below)
        "roots": _top_nodes(nodes, out_edges, unexpanded, ids.drawn, source),
        "pass": shown.index if shown is not None else None,
        "truncated": truncated,
        "max_nodes": max_nodes,
        "left_out": left_out,
        "cut_nodes": cut["nodes"],
        "stubs": cut["stubs"],
        "backward_ops": recorder.backward_ops if recorder is not None else 0,
        # NOTE [Repeated steps counted] in recorder.py: the steps kept, and the earlier
        # repeats of the last one, counted (layout.py draws the graph as if they were there)
        "kept_steps": len(getattr(recorder, "_steps", ())),
        "counted_steps": getattr(recorder, "counted_steps", 0),
        "failure": getattr(recorder, "failure", None),  # set by the magic (NOTE [Failed forward])
    }
    read = dict(ordered=ordered, source=source, ids=ids, passes=passes, recorder=recorder)
    read.update(cut=ids.drawn if truncated else None, group_ids=group_ids, timings=timings)
    read["shared"] = drawn["shared"]
    return _with_details(snap, read, records, whole, first_view)


def _with_details(snap, read, records, whole, first_view):
    """``snap`` with its details read (after ``first_view``), its records too unless
    ``whole`` is False (NOTE [Records read when first asked] in snapshot_details.py); ``read``:
    what ``read_details`` reads them with; ``records``: the Records kept."""
    recorder = read["recorder"]
    lazy = not whole and not getattr(recorder, "running", False)
    if lazy:
        snap = SnapshotDict(snap)
        again, one = _records_again(recorder, records, read["cut"] is not None, read["ids"].drawn)
        # (read as the rest was: NOTE [No collection while drawing])
        snap._pending = Unread(snap, read, again, one, no_collection())
    if first_view is not None and len(snap["nodes"]) >= FIRST_VIEW_NODES:
        first_view(snap)
    read_details(snap, read)
    if not lazy:
        read_records(snap, read, lambda: records)
    return snap


def _records_again(recorder, records, truncated, nids):
    """Two functions that make the Records ``records`` (the calls a snapshot keeps) again from
    its recorder's (NOTE [Records read when first asked]): all of them, and call ``index``."""
    if not records:
        return list, None
    first, end = records[0].index, len(recorder.records)

    def again():
        out = recorder.records.since(first, keep=False)[: end - first]
        return [r for r in out if r.node is None or r.node in nids] if truncated else out

    def one(index):  # (made alone, not kept: ``since`` would make all those after it)
        return recorder.records._make(index)

    return again, one


def _group_paths(groups, names, weak_names):
    """``{ModuleCall: path}``: the user's name for a top module (from ``names``), then
    attribute names."""
    paths = {}
    for g in groups:
        if g.parent is None:
            module = g.module
            top = None
            if module is not None:
                top = names.get(id(module)) or weak_names.get(id(module))
            paths[g] = top or g.path
        else:
            paths[g] = f"{paths.get(g.parent, g.parent.path)}.{g.name}"
    return paths


def _parameter_groups(groups, paths, names, weak_names):
    """``{id(parameter): ModuleCall}``: the call that draws each parameter of the recorded
    modules; names the parameters (and then the ``weak_names``) into ``names``."""
    param_group = {}
    calls = {}  # id(module) -> its calls: only the first names the parameters (a loop's 60)
    for g in groups:
        calls[id(g.module)] = calls.get(id(g.module), 0) + 1
    for g in _first_calls(groups):
        module = g.module
        named = getattr(module, "named_parameters", None)
        if named is None:
            continue
        try:
            params = list(named(recurse=False))
        except TypeError:
            params = list(named())
        except Exception:  # noqa: BLE001
            params = []
        for pname, p in params:
            if id(p) not in param_group:
                param_group[id(p)] = g
                names.setdefault(id(p), f"{paths[g]}.{pname}")
    # a parameter of a submodule that is never called (attention's ``out_proj``, used through
    # its weight): named by the path from the innermost called module that holds it
    for g in _first_calls(sorted(groups, key=lambda g: -g.depth)):
        named = getattr(g.module, "named_parameters", None)
        try:
            params = list(named()) if named is not None else []
        except Exception:  # noqa: BLE001
            params = []
        for pname, p in params:
            if id(p) not in param_group:
                param_group[id(p)] = g
                names.setdefault(id(p), f"{paths[g]}.{pname}")
    # a module called more than once (each step of a training loop, each step of an RNN cell)
    # holds its parameters in none of its calls: they are drawn once, outside, and the calls
    # read alike (so that they fold, NOTE [Series] in fold.py)
    param_group = {k: g for k, g in param_group.items() if calls[id(g.module)] == 1}
    for key, name in weak_names.items():
        names.setdefault(key, name)
    return param_group


# NOTE [Records read once]
# A snapshot reads each recorded call it keeps once (its inputs, outputs and line, copied into
# its entries), so it makes the calls' Record objects for itself and lets them go
# (``RecordList.since(first, keep=False)``), unless something made them before: kept by the
# recorder, the 20,000 calls drawn of a 100,000-call chain held 30 MB (a Record, its
# TensorInfos and their lists, its line's text) for as long as the cell's session lived.
def _which_nodes(recorder, roots, records, max_nodes, source, cut):
    """The nodes drawn: ``(nodes, unexpanded, truncated, records kept, left_out,
    first_kept)``; ``cut`` counts the nodes and stubs cut off."""
    made = None
    if recorder is not None and not roots:
        made = records.made()  # (not the Records: those of calls cut off are never made)
        starts = _starts(made, source)
        starts.reverse()  # walk from the last op: the drawing's first-met order is top-down
        nodes, unexpanded, truncated = collect_graph(
            starts, recorder.in_scope, max_nodes, source, cut
        )
    else:
        start_nodes = _roots_to_nodes(roots, source)
        nodes, unexpanded, truncated = collect_graph(start_nodes, None, max_nodes, source, cut)
    node_set = set(nodes)
    left_out = 0
    first_kept = 0
    if truncated and records:
        # the calls of the nodes cut off are left out: See NOTE [A graph cut at max_nodes]
        made = records.made() if made is None else made
        first = next((k for k, (n, _) in enumerate(made) if n in node_set), len(made))
        kept = [r for r in records.since(first, keep=False) if r.node is None or r.node in node_set]
        first_kept = kept[0].index if kept else len(records)
        left_out = len(records) - len(kept)
        records = kept
    elif records:  # (read once: NOTE [Records read once])
        records = records.since(0, keep=False)
    return nodes, unexpanded, truncated, records, left_out, first_kept


def _number_leaves(recorder, records, nodes, node_set, groups, ids, source):
    """Number the leaves; ``(node_record, node_group)``: each node's first record and its
    group."""
    # number leaves in a deterministic order that only grows with the recording (so a live
    # view and a final one agree): first use by a recorded op, then as first met
    seq = source.sequence_nr
    for r in records:  # (only a leaf's or a root's id is numbered: UINT64_MAX)
        for node in r.input_nodes():
            if node is not None and node in node_set and seq(node) == UINT64_MAX:
                ids(node)
    for n in nodes:
        if seq(n) == UINT64_MAX:
            ids(n)
    node_group = {}
    node_record = {}
    for r in records:
        if r.node is not None and r.node in node_set and r.node not in node_record:
            node_record[r.node] = r
            if r.group is not None:
                node_group[r.node] = r.group
    if recorder is not None and groups and source is not NBGRAD:
        # nbgrad records every op, and its unrecorded nodes are module hook machinery
        # (BackwardHookFunctionBackward) that belongs to no call; torch records composite
        # calls, each of which can make many nodes
        _group_inner_nodes(nodes, node_record, node_group, source)
    return node_record, node_group


def _shown_pass(passes, pass_index, node_set):
    """The pass whose gradients are drawn: ``pass_index``'s, else the last that ran a node of
    this graph."""
    shown = None
    if pass_index is not None:
        shown = next((p for p in passes if p.index == pass_index), None)
    else:
        for p in reversed(passes):
            if any(s.node in node_set for s in p.steps):
                shown = p
                break
    return shown


def _steps_of(shown, node_set, timings):
    """``(order_of, time_of)``: each node of ``node_set`` its first step in pass ``shown``,
    and its time in it (each node of a graph cut at max_nodes ran: only the drawn are read)."""
    order_of, time_of = {}, {}
    for k, s in enumerate(shown.steps if shown is not None else ()):
        node = s.node
        if node not in node_set:
            continue
        if node not in order_of:
            order_of[node] = k
        if timings and s.end is not None:  # NOTE [Time in backward]
            time_of[node] = time_of.get(node, 0.0) + s.end - s.time
    return order_of, time_of


def _hook_entries(ordered, groups, group_ids, ids, source):
    """``(hook entries, {node: [hook ids]})``: the hooks on each node of this graph, in the
    nodes' order, then module hooks."""
    hook_entries = []
    node_hooks = {}
    seen_handles = set()
    for node in ordered:
        for info in source.hooks(node):
            if info.handle in seen_handles:
                continue
            seen_handles.add(info.handle)
            entry = _hook_entry(info, ids(node))
            hook_entries.append(entry)
            node_hooks.setdefault(node, []).append(entry["id"])
    seen_modules = set()
    for g in groups:
        module = g.module
        if module is None or id(module) in seen_modules:
            continue
        seen_modules.add(id(module))
        for info in source.module_hooks(module):
            hook_entries.append(_hook_entry(info, group_ids[g]))
    return hook_entries, node_hooks


# NOTE [Shared entries]
# Most nodes of a big graph read alike: the same input metadata (shape, dtype, device), the
# same saved values (each of a chain's 50,000 MulBackward0 saves ``self`` of shape [4] at
# version 0 and the value 1.0001), no metadata, no hooks, the text of one line (a loop's body,
# read anew for each call); a recorded call's tensors are mostly another call's. A snapshot
# makes each distinct one of these once (``shared``: a dict per kind, for one build) and every
# entry that has it holds that object: the JSON is the same, and the snapshot is read, never
# changed, once built. A 20,000-node chain's snapshot held 80 MB of Python objects, a third of
# it such copies.
# NOTE [Entries that share their keys]
# A snapshot holds a dict per node, edge, next edge, gradient summary and record (20,000 of
# each for a 100,000-call chain cut at max_nodes), those of a kind with the same keys in the
# same order. A dict written as a literal holds its own table of keys and values: 464 bytes
# for a node's 21 keys. Made as the ``__dict__`` of an instance of a class of its own, keys
# set in the same order, a dict shares that class's table of keys and holds its values alone
# (CPython's key-sharing dictionaries, PEP 412): a node's 240 bytes, an edge's 120 (272 as a
# literal), a next edge's 88 (184), a gradient summary's 120 (272), a record's 152 (272); and
# made faster (on 3.11, 20,000 node entries in 11 ms against 20 ms as literals). It is a plain
# ``dict`` all the same (JSON, ``==``; a key added or removed gives it a table of its own
# again). Only the ``__dict__`` is kept; the instance it was made for is let go at once.
class _NodeEntry:
    """Made for its ``__dict__`` alone: NOTE [Entries that share their keys]."""


class _EdgeEntry:
    """Made for its ``__dict__`` alone: NOTE [Entries that share their keys]."""


def _node_entries(ordered, ids, source, unexpanded, shown, order_of, drawn):
    """The entries of the ``ordered`` nodes; ``drawn``: what places and names them (a dict of
    node_hooks, node_record, node_group, names, param_group, group_ids, recorder, objects)."""
    node_hooks, node_record, node_group = (
        drawn["node_hooks"],
        drawn["node_record"],
        drawn["node_group"],
    )
    names, param_group, group_ids = drawn["names"], drawn["param_group"], drawn["group_ids"]
    recorder, objects = drawn["recorder"], drawn["objects"]
    out_nodes = []
    nids = ids.drawn
    shared = drawn["shared"]  # NOTE [Shared entries]
    metas, none, time_of = shared["meta"], shared["none"], drawn["time_of"]
    node_inputs = shown.node_inputs if shown is not None else {}
    # (the source's readers looked up once, not once a node)
    is_leaf, sequence_nr, node_name = source.is_accumulator, source.sequence_nr, source.node_name
    input_metadata = source.input_metadata
    for node in ordered:
        nid = nids[node]
        seq = sequence_nr(node)
        # its kind: a leaf's accumulator, a graph root, a node not walked below, or an op's
        if is_leaf(node):
            kind = "leaf"
        elif seq == UINT64_MAX:
            kind = "root"
        else:
            kind = "external" if node in unexpanded else "node"
        meta = input_metadata(node)
        described = metas.get(meta)
        if described is None:
            described = metas[meta] = _meta_entries(meta)
        name = node_name(node)
        entry = _NodeEntry().__dict__  # (NOTE [Entries that share their keys])
        entry["id"] = nid
        entry["kind"] = kind
        entry["name"] = name
        entry["label"] = name
        entry["seq"] = seq if seq != UINT64_MAX else None
        entry["shapes"] = described[0]
        entry["dtype"] = described[2]
        entry["device"] = described[3]
        entry["group"] = None
        entry["record"] = None
        entry["line"] = None
        entry["source"] = ""
        entry["metadata"] = None  # these three: _node_details
        entry["saved"] = None
        entry["next"] = None
        entry["input_metadata"] = described[1]
        entry["hooks"] = node_hooks.get(node, none)
        entry["tensor"] = None
        entry["grad"] = None
        entry["order"] = order_of.get(node)
        entry["time"] = time_of.get(node)
        if objects is not None:
            objects[nid] = node
        rec = node_record.get(node)
        if rec is not None:
            entry["record"] = rec.index
            entry["line"] = rec.line
            entry["source"] = line_text(rec, shared)
        group = node_group.get(node)
        if kind == "leaf":
            var = source.variable(node)
            name = names.get(id(var))
            summary = tensor_summary(var, nid, source)
            summary["grad"] = grad_summary(source.grad(var), _max_values(recorder), source)
            summary["name"] = name
            entry["tensor"] = summary
            if name:
                entry["label"] = name
            group = param_group.get(id(var), group)
        entry["group"] = group_ids.get(group) if group is not None else None
        inputs = node_inputs.get(node)  # (one lookup, not ``in`` and ``[]``)
        if inputs is not None:
            entry["grad"] = summarised(inputs)
        out_nodes.append(entry)
    return out_nodes


def _meta_entries(meta):
    """``(shapes, input_metadata entries, dtype, device)`` of a node's input metadata."""
    return (
        [list(m.shape) for m in meta],
        [{"shape": list(m.shape), "dtype": m.dtype, "device": m.device} for m in meta],
        meta[0].dtype if meta else None,
        meta[0].device if meta else None,
    )


def _edge_entries(ordered, unexpanded, shown, ids, source):
    """The edges between the drawn nodes, with the shown pass's gradients."""
    out_edges = []
    edge_grads = shown.edge_grads if shown is not None else {}
    nids = ids.drawn
    for entry_node in ordered:
        if entry_node in unexpanded:
            continue
        for i, (fn, input_nr) in enumerate(source.next_edges(entry_node)):
            to = nids.get(fn)
            if to is None:
                continue
            edge = _EdgeEntry().__dict__  # (NOTE [Entries that share their keys])
            edge["id"] = f"e{len(out_edges)}"
            edge["from"] = nids[entry_node]
            edge["to"] = to
            edge["index"] = i
            edge["input_nr"] = input_nr
            edge["grad"] = summarised(edge_grads.get((entry_node, i)))
            out_edges.append(edge)
    return out_edges


def _group_entries(groups, group_ids, paths, out_nodes, first_kept, recorder, objects):
    """The module groups drawn."""
    # a group whose calls were all left out stays if a kept node is in it: a parameter's leaf,
    # placed in the first call of its module, is kept while later steps use it
    needed = set()
    group_of = {group_ids[g]: g for g in groups}
    for n in out_nodes:
        g = group_of.get(n["group"])
        while g is not None and g not in needed:
            needed.add(g)
            g = g.parent
    out_groups = []
    for g in groups:
        if g.end is not None and g.end <= first_kept and g not in needed:  # all left out
            continue
        if objects is not None:
            objects[group_ids[g]] = g
        out_groups.append(
            {
                "id": group_ids[g],
                "name": paths[g] if g.parent is None else g.name,
                "type": g.type,
                "path": paths[g],
                "parent": group_ids.get(g.parent) if g.parent is not None else None,
                "depth": g.depth,
                "records": [g.start, g.end if g.end is not None else len(recorder.records)],
                "error": g.error,
            }
        )
    return out_groups


def _first_calls(groups):
    """The first of ``groups`` (ModuleCalls) of each module."""
    seen = set()
    out = []
    for g in groups:
        if id(g.module) not in seen:
            seen.add(id(g.module))
            out.append(g)
    return out


def _max_values(recorder):
    return getattr(recorder, "max_values", 16) if recorder is not None else 16


def _order_key(node, ids):
    seq = ids.source.sequence_nr(node)
    if seq != UINT64_MAX:
        return (0, seq, "")
    nid = ids(node)  # "leaf<k>" or "root<k>"
    return (1, int(nid[4:]), nid)


def _top_nodes(nodes, edges, unexpanded, nids, source):
    """The ids of the nodes no other node of the graph points to, in order: those no edge
    entry (``edges``) goes to, nor a node not walked below (``unexpanded``: it has none)."""
    pointed = {e["to"] for e in edges}
    for n in unexpanded:
        pointed.update(nids.get(fn) for fn, _ in source.next_edges(n))
    return [nids[n] for n in nodes if nids[n] not in pointed]
