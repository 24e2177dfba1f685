"""``GraphView``: the live ``grad_fn`` graph (kernel side of ``widgets/graph_view.js``).

The view holds a snapshot (see ``snapshot.py``) and its layout (``layout.py``) as traits; the
browser draws them: a layered top-to-bottom drawing with leaves, module groups that collapse
and expand, pan and zoom, a details panel for the selected node and, after a backward pass, the
gradient norm on each edge (values in the panel). The still form is ``svg.snapshot_svg`` of the
same snapshot.

Built from a recorder (``GraphView(recorder=rec, live=True)``) it grows while the recorded code
runs: each change of the recorder asks for a refresh, done at most every ``interval`` seconds
and only while the live refreshes, this one included (its cost foreseen from the last one's per
node), take at most ``LIVE_SHARE`` of the time since the view began (a training cell's live
view costs it under a tenth; a 100,000-call cell is not drawn half-way through at a cost of a
second when 0.25 s have passed); the recorder's end always
refreshes, so the final state is always shown. Built from tensors or nodes
(``GraphView(loss)``) it shows everything below them.

A big graph opens folded (NOTE [Readable at open] in ``layout.py``): module groups collapsed
down to a level that fits, repeated structure as series boxes (``fold.py``). The browser is sent
the compact :func:`~nbgrad.notebook.snapshot.view_snapshot` and the layout; the details of a
node or edge come when it is selected (NOTE [Send less]).

Messages from the browser (``{"type": ...}``): ``select {id}``, ``edge {edges}``,
``toggle {group}``, ``toggle_series {series}``, ``reveal {id}``, ``collapse_all``,
``expand_all``, ``show_pass {index}``, ``refresh``, ``color {kind}``.

The answers (``answers_view.py``, drawn by ``widgets/answers.js``): the boxes that held NaN or
Inf and the origin to jump to, a colour overlay (``color``) with its legend, and in the
details of the item selected why its gradient is None, its saved bytes and NaN/Inf findings,
and a module's gradient norm at each backward pass of the cell (``answers_flow.py``).
"""

from __future__ import annotations

import time

import traitlets as t

from ._widget import StillWidget, asset, dumps, esm
from .answers_flow import GradientFlow
from .answers_view import COLOR_KINDS, item_answers, marks
from .layout import default_collapsed, layout
from .snapshot import (
    MAX_NODES,
    IdMap,
    build_snapshot,
    cut_note,
    details,
    no_collection,
    view_snapshot,
)
from .sources import source_for
from .svg import snapshot_svg
from .visible import SeriesMembers

LIVE_SHARE = 0.08  # the most of a cell's time its live refreshes may take
LIVE_COST = 50e-6  # seconds a refresh is foreseen to take per node, until one has run

__all__ = ["GraphView"]


class GraphView(StillWidget):
    """The ``grad_fn`` graph of ``roots`` (tensors or nodes), or of what ``recorder`` recorded.

    Example:
        >>> import nbgrad as ng
        >>> from nbgrad.notebook import GraphView
        >>> x = ng.ones(3, requires_grad=True)
        >>> GraphView((x * 2).sum())
        GraphView(3 nodes, 2 edges, 0 groups, 0 backward passes)
    """

    _esm = esm("graph_view.js", "answers.js", "graph_bulk.js")
    _css = asset("graph_view.css")

    snapshot = t.Dict()  # sent to the browser as _snapshot_json, in its compact view form
    graph_layout = t.Dict()  # sent as _layout_json
    _snapshot_json = t.Unicode("{}").tag(sync=True)
    _layout_json = t.Unicode("{}").tag(sync=True)
    _details_json = t.Unicode("{}").tag(sync=True)  # the Details of what is selected
    _answer_json = t.Unicode("{}").tag(sync=True)  # a version error explained (answers.js)
    _marks_json = t.Unicode("{}").tag(sync=True)  # NaN/Inf marks, the overlay (answers.js)
    color = t.Unicode("").tag(sync=True)  # the overlay shown ("": none; COLOR_KINDS)
    collapsed = t.List(t.Unicode()).tag(sync=True)
    expanded = t.List(t.Unicode()).tag(sync=True)  # series shown unfolded
    selected = t.Unicode("").tag(sync=True)
    live = t.Bool(False).tag(sync=True)
    _messages = {  # NOTE [Checked messages]
        "select": {"id": "str?"},
        "edge": {"edges": "[str]"},
        "toggle": {"group": "str"},
        "toggle_series": {"series": "str"},
        "reveal": {"id": "str"},
        "collapse_all": {},
        "expand_all": {},
        "show_pass": {"index": "int?"},
        "refresh": {},
        "color": {"kind": "str"},
    }
    _frontend_writable = frozenset({"selected"})

    def __init__(
        self,
        *roots,
        recorder=None,
        names=None,
        weak_names=None,
        collapsed=None,
        live=False,
        interval=0.25,
        timings=True,
        pass_index=None,
        max_nodes=MAX_NODES,
    ):
        super().__init__()
        self.roots = roots
        self.max_nodes = max_nodes
        self.recorder = recorder
        self.names = dict(names or {})
        self.weak_names = dict(weak_names or {})  # see build_snapshot
        self.interval = interval
        self.timings = timings
        self.pass_index = pass_index
        self._ids = IdMap() if recorder is None else None
        self._auto_collapse = collapsed is None
        self._fold = None  # fold series: None when the graph is too big to show (layout.FIT)
        self._shown = {}  # the snapshot's visible graphs (NOTE [Clicks cost what they show])
        self._objects = {}
        self._last = 0.0
        self._cost = 0.0
        self._per_node = LIVE_COST  # seconds the last refresh took per node drawn
        self._spent = 0.0  # seconds of live refreshes
        self._born = time.perf_counter()
        self.namespace = None  # the cell's variables, for the why sentences (answers_why.py)
        self.flow = None  # the modules' gradient norms at each backward pass (answers_flow.py)
        self._whole = True  # False while the snapshot waits for its details (refresh)
        self._saved_cache = None  # (snapshot, its SavedBytes): answers_view.saved_of
        self._bad_cache = None  # (snapshot, its NaN/Inf node ids): answers_view._bad_nodes
        if recorder is not None:
            self.flow = GradientFlow(recorder)
            flow = self.flow  # subscribed alone: the view is not kept alive by the recorder
            recorder.subscribe(flow.on_record)
            flow.on_record(recorder, False)
        if collapsed is not None:
            self.collapsed = list(collapsed)
        self.refresh()
        if live and recorder is not None:
            self.live = recorder.running
            recorder.subscribe(self._on_record)

    @t.observe("snapshot")
    def _send_snapshot(self, change):
        self._snapshot_json = dumps(view_snapshot(change["new"]))
        if self.selected and self._whole:
            self._details_json = dumps(self._details(self.selected))

    @t.observe("graph_layout")
    def _send_layout(self, change):
        if self._whole or not self.color:  # (an overlay may read the details)
            self._marks_json = dumps(marks(self, self.color))
        self._layout_json = dumps(change["new"])

    def _details(self, item_id, edges=()):
        """The Details of ``item_id`` (or of ``edges``), with its answers (answers_view.py)."""
        out = details(self.snapshot, item_id, edges)
        out["answers"] = item_answers(self, item_id, self.namespace, self.flow)
        return out

    def set_color(self, kind):
        """Colour the nodes by ``kind`` (``norm``, ``saved``, ``nonfinite``, ``order``; ``""``
        for none): the overlays of ``overlays.py``, with a legend."""
        if kind not in COLOR_KINDS:
            raise ValueError(f"no overlay {kind!r}: choose one of {', '.join(COLOR_KINDS[1:])}")
        self.color = kind
        self._marks_json = dumps(marks(self, kind))
        if self.selected:  # a folded group's figures follow the colour (answers_view.py)
            self._details_json = dumps(self._details(self.selected))

    # -- building ----------------------------------------------------------------------------
    @no_collection()  # NOTE [No collection while drawing] in snapshot.py
    def refresh(self):
        """Rebuild the snapshot and the layout from the recorder or the roots."""
        start = time.perf_counter()
        objects = {}
        self._whole = False
        early = []  # whether the first view was sent early (a big graph)
        try:
            snap = build_snapshot(
                self.recorder,
                self.roots,
                names=self.names,
                weak_names=self.weak_names,
                ids=self._ids,
                timings=self.timings,
                pass_index=self.pass_index,
                max_nodes=self.max_nodes,
                objects=objects,
                first_view=lambda snap: early.append(self._first_view(snap, objects)),
                whole=False,  # NOTE [Records read when first asked] in snapshot_details.py
            )
        finally:
            self._whole = True
        if not early:  # a small graph, laid out whole
            self._first_view(snap, objects)
        else:
            if self.selected:
                self._details_json = dumps(self._details(self.selected))
            if self.color:
                self._marks_json = dumps(marks(self, self.color))
        self._cost = time.perf_counter() - start
        self._last = time.perf_counter()
        if snap["nodes"]:
            self._per_node = self._cost / len(snap["nodes"])

    def _first_view(self, snap, objects):
        """Lay ``snap`` out and send it (a big graph's before its details are read: NOTE [The
        drawing before the details] in snapshot_details.py)."""
        self._objects = objects
        collapsed = self.collapsed
        if self._auto_collapse:
            collapsed = default_collapsed(snap)
        self._members = SeriesMembers()  # series id -> its node ids (answers_view.py's marks)
        self._shown = {}
        lay = layout(
            snap,
            collapsed,
            fold=self._fold,
            expanded=self.expanded,
            members=self._members,
            cache=self._shown,
        )
        with self.hold_sync():
            self.snapshot = snap
            self.collapsed = lay["collapsed"]
            self.expanded = lay["expanded"]
            self.graph_layout = lay

    @no_collection()  # a click: NOTE [No collection while drawing] in snapshot.py
    def _relayout(self, members=None, collapsed=None):
        """Lay the snapshot out again with the groups ``collapsed`` (None: as they are)."""
        self._members = SeriesMembers() if members is None else members
        self.graph_layout = layout(
            self.snapshot,
            self.collapsed if collapsed is None else collapsed,
            fold=self._fold,
            expanded=self.expanded,
            members=self._members,
            cache=self._shown,
        )
        self.collapsed = self.graph_layout["collapsed"]
        self.expanded = self.graph_layout["expanded"]

    def _on_record(self, recorder, final):
        if final:
            self.live = False
            self.refresh()
            return
        now = time.perf_counter()
        if now - self._last < self.interval:
            return
        foreseen = self._per_node * min(len(recorder.records), self.max_nodes)
        if self._spent + foreseen <= LIVE_SHARE * (now - self._born):
            self.live = True
            self.refresh()
            self._spent += self._cost

    def stop_live(self):
        """Stop following the recorder (the magic calls this when the cell ends)."""
        if self.recorder is not None:
            self.recorder.unsubscribe(self._on_record)
        self.live = False

    # -- Python access -----------------------------------------------------------------------
    def node(self, node_id):
        """The Node (or, for a group id, the ModuleCall) behind a snapshot id."""
        obj = self._objects.get(node_id)
        if obj is None:
            raise KeyError(f"no node {node_id!r} in this graph")
        return obj

    @property
    def graph_source(self):
        """The :class:`~nbgrad.notebook.sources.GraphSource` that reads this view's graph."""
        if self.recorder is not None:
            return self.recorder.graph_source
        return source_for(self.roots)

    def tensor(self, node_id):
        """A live tensor for a node id: a leaf's variable, or an output recorded for the node."""
        node = self.node(node_id)
        source = self.graph_source
        if not source.is_node(node):
            return None
        var = source.variable(node)
        if var is not None:
            return var
        if self.recorder is not None:  # (no Record made: NOTE [Records read once] in snapshot.py)
            refs = self.recorder.records.refs_of(node)
            for ref in () if refs is None else refs if type(refs) is tuple else (refs,):
                out = ref()
                if out is not None and source.tensor_facts(out).grad_fn is node:
                    return out
        for root in self.roots:
            if source.is_tensor(root) and source.tensor_facts(root).grad_fn is node:
                return root
        return None

    def id_of(self, node):
        """The snapshot id of a Node drawn in this view, or None."""
        for node_id, obj in self._objects.items():
            if obj is node:
                return node_id
        return None

    def label(self, node_id):
        """What the drawing shows for a node id: its name, or a leaf's variable name."""
        for n in self.snapshot.get("nodes", ()):
            if n["id"] == node_id:
                return n["label"]
        return None

    def module(self, group_id):
        """The module of a group id (None if it is gone)."""
        return self.node(group_id).module

    def default_root(self):
        """The tensor a "Run backward" button starts from: a root of the view that is a scalar
        tensor needing grad, else the last such output the recorder saw."""
        source = self.graph_source

        def scalar_needing_grad(t):
            facts = source.tensor_facts(t)
            return facts.requires_grad and all(d == 1 for d in facts.shape)

        for root in self.roots:
            if source.is_tensor(root) and scalar_needing_grad(root):
                return root
        if self.recorder is not None:
            for r in reversed(self.recorder.records):
                for out in r.output_tensors():
                    if scalar_needing_grad(out):
                        return out
        return None

    def select(self, node_id):
        if node_id and node_id not in self._objects:
            raise KeyError(f"no node {node_id!r} in this graph")
        self.selected = node_id or ""
        self._details_json = dumps(self._details(self.selected))

    @no_collection()  # (it reads the series' node ids, gathered when first read)
    def reveal(self, node_id):
        """Expand the groups and series that hide node ``node_id``, and select it (the search
        box's choice: the browser then centres it)."""
        nodes = {n["id"]: n for n in self.snapshot["nodes"]}
        if node_id not in nodes:
            raise KeyError(f"no node {node_id!r} in this graph")
        parents = {g["id"]: g["parent"] for g in self.snapshot["groups"]}
        hiding, gid = set(), nodes[node_id]["group"]
        while gid is not None:
            hiding.add(gid)
            gid = parents[gid]
        self._auto_collapse = False
        self.collapsed = [g for g in self.collapsed if g not in hiding]
        for _ in range(8):  # unfolding a series may reveal another around it
            members = SeriesMembers()
            self._relayout(members)
            shown = {b["ref"] for b in self.graph_layout["nodes"]}
            if node_id in shown:
                break
            holders = [sid for sid, ids in members.items() if node_id in ids]
            if not holders:
                break
            self.expanded = sorted(set(self.expanded) | set(holders))
        self.select(node_id)

    def toggle_series(self, series_id):
        """Unfold a folded series, or fold an unfolded one."""
        if not any(x["id"] == series_id for x in self.graph_layout.get("series", ())):
            raise KeyError(f"no series {series_id!r} in this graph")
        expanded = list(self.expanded)
        if series_id in expanded:
            expanded.remove(series_id)
        else:
            expanded.append(series_id)
        self.expanded = expanded
        self._relayout()

    def toggle(self, group_id):
        """Collapse an expanded group, or expand a collapsed one, one level: the groups inside
        it show as boxes (a click opens each in turn)."""
        if not any(g["id"] == group_id for g in self.snapshot["groups"]):
            raise KeyError(f"no group {group_id!r} in this graph")
        self._auto_collapse = False
        collapsed = list(self.collapsed)
        if group_id in collapsed:  # open one level: its own child groups start collapsed
            collapsed.remove(group_id)
            collapsed += [
                g["id"]
                for g in self.snapshot["groups"]
                if g["parent"] == group_id and g["id"] not in collapsed
            ]
        else:
            collapsed.append(group_id)
        self._relayout(collapsed=collapsed)  # (which sets ``collapsed``: once a click)

    def collapse_all(self):
        """Fold everything: the top-level groups collapsed, every series folded."""
        self._auto_collapse = False
        self.collapsed = [g["id"] for g in self.snapshot["groups"] if g["parent"] is None]
        self.expanded = []
        self._fold = True
        self._relayout()

    def expand_all(self):
        """Show every node: no group collapsed, no series folded."""
        self._auto_collapse = False
        self.collapsed = []
        self.expanded = []
        self._fold = False
        self._relayout()

    def show_pass(self, index):
        """Show the gradients of backward pass ``index`` on the edges (None: the last one)."""
        passes = [p["index"] for p in self.snapshot.get("passes", ())]
        if index is not None and index not in passes:
            raise IndexError(
                f"no backward pass {index} in this graph (passes: {passes or 'none yet'})"
            )
        self.pass_index = index
        self.refresh()

    def to_svg(self) -> str:
        return snapshot_svg(self.snapshot, self.collapsed, self.graph_layout)

    def __repr__(self):
        s = self.snapshot
        return (
            f"GraphView({len(s['nodes'])} nodes, {len(s['edges'])} edges, "
            f"{len(s['groups'])} groups, {len(s['passes'])} backward passes"
            + (f"; {cut_note(s)})" if s["truncated"] else ")")
        )

    # -- messages ----------------------------------------------------------------------------
    def _check_selected(self, value):
        if type(value) is not str:
            return f"'selected' must be a node id (str), got {type(value).__name__}"
        if value and value not in self._objects:
            return f"'selected': no node {value!r} in this graph"
        return None

    def _msg_select(self, content):
        self.select(content.get("id") or "")

    def _msg_edge(self, content):
        self._details_json = dumps(self._details("", content.get("edges") or ()))

    def _msg_toggle(self, content):
        self.toggle(content["group"])

    def _msg_toggle_series(self, content):
        self.toggle_series(content["series"])

    def _msg_reveal(self, content):
        self.reveal(content["id"])

    def _msg_collapse_all(self, content):
        self.collapse_all()

    def _msg_expand_all(self, content):
        self.expand_all()

    def _msg_show_pass(self, content):
        self.show_pass(content.get("index"))

    def _msg_refresh(self, content):
        self.refresh()

    def _msg_color(self, content):
        self.set_color(content["kind"])
