"""A layered, top-to-bottom layout of a snapshot's graph, in pure Python (no ``dot`` binary).

The root (the tensor backward starts from) is at the top and gradients flow down along the
edges to the leaves, as ``next_functions`` point. The steps are Sugiyama's, kept simple:

1. visible graph: a collapsed module group stands for all the nodes inside it (edges between
   them vanish, parallel edges merge, keeping each one's gradient for the label);
2. layers: longest path from the top (a node sits one layer below the lowest node that points
   to it, two when the edge enters or leaves a module group); a node that a group's edge
   leads out to sits two layers below the group's lowest member, so that a module's box ends
   before what comes after it starts (see NOTE [Group boxes]); a cycle, which only a collapsed
   group can make, is broken at its earliest node;
3. a long edge gets a small dummy box in each layer it crosses, so that it bends around the
   nodes there instead of running through them;
4. order and x: a depth-first order from the top, then a few sweeps down and up that move
   each node towards the mean x of its neighbours in the layers above (below) and push apart
   the nodes that overlap;
5. group boxes around the members of each expanded group, innermost first; sibling boxes (and
   the nodes beside them) that would overlap are pushed apart to the right.

NOTE [Group boxes]
Step 4 places nodes, not boxes: two sibling groups whose layers interleave (``out: Linear``
whose weight hangs below the ``act: Tanh`` that follows it), or a node of the parent sitting
inside a child's box (an input's ``BackwardHookFunctionBackward`` level with ``lin``'s leaves),
would overlap. Two rules prevent it. Layers: whatever a group's edges lead out to lies below
the group's lowest member (a "bottom" constraint per group in the longest-path layering; if
that makes a cycle, e.g. a parameter shared by modules called in the other order, the
layering falls back to the plain one). Columns: then, from the innermost groups outwards, the
members of each group (nodes, and child groups as rigid blocks) are swept left to right and
each is moved right until it clears what is already placed in the layers its box spans.

The result is deterministic (same snapshot, same numbers) and plain data, so the widget's JS
draws it and ``svg.py`` draws the same picture. 500 nodes lay out in well under a second
(see ``tests/notebook/test_layout.py``).

NOTE [Layout engine]
Why this module and not ELK's layered algorithm (``elkjs`` 0.12, vendored)? Measured on a
2-core machine, with every node shown (no folding); crossings counted between adjacent layers:

    graph                 nodes   this module        ELK layered (Node 20, one core)
    chain with leaves     3,335   0.09 s, 0 crossings   1.6 s at 3,000
    chain with leaves    13,335   0.7 s, 0 crossings    fails (stack overflow) at 20,000
    wide fan, 33/layer    4,952   0.2-0.5 s, 950        0.9 s at 2,051
    wide fan, 66/layer   19,802   1.6-1.9 s, 5,200      fails

Folded as they open (``fold.py``, NOTE [Readable at open]), the chains are 10-12 boxes laid
out in 0.05-0.3 s. ELK would win on crossings in dense graphs, but it costs 1.6 MB in the
package, runs only in the browser (the still SVG, which nbval compares and GitHub shows, would
need a second layout or a JavaScript runtime in the kernel, and could differ from the widget),
fails on long chains, and is not deterministic across versions. What a user opens is folded
to a few dozen boxes, where this module's crossings are few; so it stays, and it is the one
layout of both the widget and the still picture.

NOTE [Edge labels]
An edge's label (its gradient norm, ``grad_label``) is placed here, once, and both pictures
draw it there (``lx, ly``: where its baseline starts), so that the widget and the still SVG
agree. Labels used to sit three quarters down the first segment's chord, 4 px right: another
edge often ran through them (a transformer block's "5.641e-07", an MLP's "0.2979"), and a
slanted edge's curve passed far from them. ``labels.py`` now picks, for each edge in order:
its old place if the label's box (9 px monospace text and its white halo) meets nothing
there, no other edge passes within 3 px (whose label it could seem to be) and the drawn edge
passes within 8 px (so most pictures do not change; these are settled first, so that no
label moves into another's old place); else the first free candidate around points of the
drawn edge (at fractions of its first segment, its last, then the others), beside it, in
its corners, above or below it, 4 px away, then 8; where none is free, the candidate that
meets least (the length of the lines through the box, the area of the boxes over it). What
it must not meet: every edge as drawn (its own included; curves flattened) and its
arrowhead, every box (a series' stack and the badges a node may carry), every group's frame
and title, the labels already placed, the picture's border. A grid of 48 px cells (more
where the edges are very long) holds all of it, so a candidate is tested against what is
near it only; in a crowded picture (hundreds of edges into one box) the candidates tried are
capped at 12 a label on average, and the items walked at 3,500 a label (NOTE [A budget for
crowded pictures] in labels.py). NumPy builds that grid and costs most candidates in batches,
to the last bit as a walk in Python would (NOTE [Label costs in bulk] in labels.py). The
layout, every edge labelled, on 2 shared cores (tests/benchmarks/notebook.py --only graphs
--quick, medians of 3; without labels, with them walked in Python, now): a residual chain
of 500 nodes all shown 0.02, 0.12, 0.05 s; a wide fan of 600 all shown 0.02, 0.32, 0.16 s;
grouped (180,000 px wide) 0.03, 0.29, 0.13 s; 900 nodes (300 edges into one box) 0.03,
0.79, 0.44 s; a full garbage collection (0.04 s in that process) falls into some runs. The
crowded pictures stay the slow ones: a candidate there meets several edges, and most of a
label's dozen or more are walked.

The result is a :class:`Layout` (TypedDicts below, mirrored in ``widgets/common.js`` and
checked by ``tests/notebook/test_schema.py``); ``x, y`` is a box's top-left corner.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from .labels import place_labels
from .visible import NODE_H, _clip, grad_label, node_size, shape_text, shown_graph, visible_graph

__all__ = ["layout", "node_size", "default_collapsed", "shape_text", "grad_label", "Layout"]


# -- the layout's records (see NOTE [One schema] in schema.py) -------------------------------
class Box(TypedDict):
    """A drawn box: a node, or a collapsed group (``kind`` ``"group"``); ``ref`` is the
    snapshot's node id or group id, ``group`` the group drawn around it."""

    id: str
    kind: Literal["node", "group", "series"]
    x: float
    y: float
    w: float
    h: float
    label: str
    sub: str
    ref: str
    group: str | None


# ``from`` is a keyword: the functional form
LayoutEdge = TypedDict(
    "LayoutEdge",
    {
        "from": str,
        "to": str,
        "edges": "list[str]",  # the snapshot's edge ids merged into this one
        "grad": "float | str | None",  # the norm of a single edge's gradient
        "grads": "list[float | str | None]",  # one per merged edge
        "label": "str | None",  # the norm, "2× norm" for equal parallel edges, or the norms
        "points": "list[float]",  # x1, y1, ..., xn, yn: through a long edge's dummy boxes
        "lx": "float | None",  # where the label's baseline starts (NOTE [Edge labels])
        "ly": "float | None",
    },
)
LayoutEdge.__doc__ = "A drawn edge, from the bottom of ``from`` to the top of ``to``."


class LayoutGroup(TypedDict):
    """The box around an expanded module group."""

    id: str
    label: str
    x: float
    y: float
    w: float
    h: float
    depth: int


class LayoutSeries(TypedDict):
    """A run of repeated structure (see ``fold.py``): drawn as one box unless ``expanded``;
    ``nodes`` is how many of the snapshot's nodes it holds."""

    id: str
    label: str
    count: int
    period: int
    nodes: int
    expanded: bool


class Layout(TypedDict):
    """What :func:`layout` returns: boxes, edges and group boxes, the collapsed groups, and the
    series found (folded, or ``expanded``)."""

    width: float
    height: float
    nodes: list[Box]
    edges: list[LayoutEdge]
    groups: list[LayoutGroup]
    collapsed: list[str]
    series: list[LayoutSeries]
    expanded: list[str]


SCHEMA_TYPES = (Box, LayoutEdge, LayoutGroup, LayoutSeries, Layout)

V_GAP = 44
H_GAP = 22
MARGIN = 20
GROUP_PAD = 10
GROUP_LABEL = 16
SWEEPS = 4
DUMMY_W = 8.0  # the width of the dummy box a long edge has in each layer it crosses
MAX_SPAN = 12  # longer edges get no dummies (a leaf used from far above is drawn straight)
DUMMY_BUDGET = 3  # at most this many dummies per visible node
# NOTE [Readable at open]
# A graph opens at a readable size (labels at least 11 px), so what it shows at first must be
# about what a widget holds at that size: FIT boxes. A bigger graph opens folded: module groups
# collapsed down to the deepest level that still fits (all of one level at a time, as
# TensorBoard's graph dashboard does), and repeated structure drawn as series boxes
# (``fold.py``). The user expands what they want to see, and "Expand all" shows everything.
FIT = 40
# Series fold sooner: a run of repeats is read as well from one box and its first repeat, and
# a column of 20 boxes is already three times the widget's height at label size.
FOLD_SERIES = 20


def default_collapsed(snapshot):
    """The groups to collapse at first (NOTE [Readable at open]): none when the graph fits;
    else every group of the deepest level at which the boxes shown still fit (the top level
    when none does)."""
    nodes, groups = snapshot["nodes"], snapshot["groups"]
    # a recorder that counted repeats of a step (NOTE [Repeated steps counted]) opens as the
    # whole run would, which has as many more boxes
    kept, counted = snapshot.get("kept_steps", 0), snapshot.get("counted_steps", 0)
    scale = (kept + counted) / kept if counted and kept else 1
    if len(nodes) * scale <= FIT or not groups:
        return []
    parent = {g["id"]: g["parent"] for g in groups}
    depth = {}
    for gid in parent:  # (from the parents: a hand-made snapshot may give no depth)
        d, up = 0, parent[gid]
        while up is not None:
            d, up = d + 1, parent[up]
        depth[gid] = d

    def shown(d):  # boxes shown when the groups of depth d are collapsed (deeper ones inside)
        boxes, seen = 0, set()
        for n in nodes:
            gid, top = n["group"], None
            while gid is not None:
                if depth[gid] == d:
                    top = gid
                gid = parent[gid]
            if top is None:
                boxes += 1
            elif top not in seen:
                seen.add(top)
                boxes += 1
        return boxes

    best = 0
    for d in range(1, max(depth.values()) + 1):
        if shown(d) * scale > FIT:
            break
        best = d
    return [g["id"] for g in groups if depth[g["id"]] == best]


def layout(snapshot, collapsed=(), *, fold=None, expanded=(), members=None, cache=None) -> Layout:
    """Lay out ``snapshot`` with the groups ``collapsed``; repeated structure is folded into
    series boxes when ``fold`` (None: when more than FOLD_SERIES boxes would show), except
    the series listed in ``expanded``. ``members``: a dict to fill with ``{series id: set of
    the snapshot node ids inside it}`` (a ``visible.SeriesMembers``: each set when first
    read). ``cache``: a dict kept for this snapshot, so that another layout of it costs what
    it shows (NOTE [Clicks cost what they show] in visible.py)."""
    # 1. the visible graph, repeated structure folded into series boxes (NOTE [Series] in fold.py)
    vis = visible_graph(snapshot, collapsed, cache)
    groups = vis.groups
    collapsed = [c for c in collapsed if c in groups]
    counted = snapshot.get("counted_steps", 0)  # NOTE [Repeated steps counted]: as if drawn
    if fold is None:
        fold = len(vis.units) * (1 + counted / max(1, snapshot.get("kept_steps", 1))) > FOLD_SERIES
    vnodes, vedges, series = shown_graph(vis, fold, set(expanded), members)

    order = list(vnodes)
    index = {vid: i for i, vid in enumerate(order)}
    succ = {vid: [] for vid in order}
    pred = {vid: [] for vid in order}
    for u, v in vedges:
        succ[u].append(v)
        pred[v].append(u)

    # 2. layers (longest path, Kahn's algorithm; see NOTE [Group boxes])
    vgroup = {vid: vnodes[vid]["group"] for vid in order}
    layer, broke = _layers(order, succ, pred, vgroup, groups, bottoms=True)
    if broke:  # the group constraints made a cycle: the plain layering
        layer, _ = _layers(order, succ, pred, vgroup, groups, bottoms=False)
    nlayers = max(layer.values(), default=-1) + 1
    layers = [[] for _ in range(nlayers)]

    # 3. an edge that spans several layers gets a small dummy box in each layer it crosses
    width = {vid: vnodes[vid]["w"] for vid in order}
    chains = _dummy_chains(vedges, layer, succ, pred, index, width, vgroup, groups, len(order))
    # 4. initial order, then sweeps that move each box towards its neighbours
    x = _order_layers(order, index, layer, layers, succ, pred, width)

    def top_of(li):
        return float(MARGIN + GROUP_LABEL + li * (NODE_H + V_GAP))

    # 5. group boxes, innermost first, pushing apart what would overlap (NOTE [Group boxes])
    rects = _separate_groups(x, width, layer, vgroup, groups, vis.hidden, top_of)
    xmin = min((x[v] - width[v] / 2 for v in x), default=0.0)
    xmin = min([xmin] + [r[0] for r in rects.values()])
    offset = MARGIN / 2 - xmin if rects else MARGIN - xmin
    for vid in x:
        x[vid] += offset
    for gid, r in rects.items():
        rects[gid] = (r[0] + offset, r[1], r[2] + offset, r[3])

    out_nodes = _node_boxes(order, vnodes, x, layer, top_of)
    out_edges = _edge_paths(vedges, out_nodes, chains, x, layer, top_of)
    out_groups = _group_boxes(groups, rects)
    right, bottom = _shift_into_view(out_nodes, out_edges, out_groups)
    hooked = {vid for vid, box in vnodes.items() if box.get("hooked")}
    place_labels(out_nodes, out_edges, out_groups, right, bottom, hooked)
    return {
        "width": right,
        "height": bottom,
        "nodes": out_nodes,
        "edges": out_edges,
        "groups": out_groups,
        "collapsed": sorted(collapsed, key=lambda g: int(g[1:]) if g[1:].isdigit() else 0),
        "series": series,
        "expanded": sorted(x["id"] for x in series if x["expanded"]),
    }


def _dummy_chains(vedges, layer, succ, pred, index, width, vgroup, groups, n_boxes):
    """Put a small dummy box in each layer a long edge crosses, so that ordering and placement
    route it around the nodes there (a bend per dummy); edges longer than MAX_SPAN layers, or
    past the dummy budget, are drawn straight. Updates the graph in place; returns
    ``{(from, to): [dummy ids]}``."""
    chains = {}
    budget = DUMMY_BUDGET * n_boxes
    for key in vedges:
        u, v = key
        span = layer[v] - layer[u]
        if span < 2 or span > MAX_SPAN or budget < span - 1:
            continue
        budget -= span - 1
        chain = []
        prev = u
        succ[u][succ[u].index(v)] = None  # replaced by the chain (kept in place for order)
        pred[v].remove(u)
        common = _common_group(vgroup[u], vgroup[v], groups)
        for li in range(layer[u] + 1, layer[v]):
            d = f"~{len(index)}"
            index[d] = len(index)
            layer[d] = li
            width[d] = DUMMY_W
            vgroup[d] = common
            succ[d], pred[d] = [], [prev]
            if prev == u:
                succ[u][succ[u].index(None)] = d
            else:
                succ[prev].append(d)
            chain.append(d)
            prev = d
        succ[prev].append(v)
        pred[v].append(prev)
        chains[key] = chain
    return chains


def _order_layers(order, index, layer, layers, succ, pred, width):
    """Fill ``layers`` in order (depth-first from the top nodes, following next_functions in
    order, then sweeps towards the neighbours' mean); returns each box's centre ``x``."""
    nlayers = len(layers)
    seen = set()
    for top in order:
        if pred[top] or top in seen:
            continue
        stack = [top]
        seen.add(top)
        while stack:
            vid = stack.pop()
            layers[layer[vid]].append(vid)
            for w in reversed(succ[vid]):
                if w not in seen:
                    seen.add(w)
                    stack.append(w)
    for vid in index:
        if vid not in seen:
            layers[layer[vid]].append(vid)

    x = {}
    for row in layers:
        pos = 0.0
        for vid in row:
            x[vid] = pos + width[vid] / 2
            pos += width[vid] + H_GAP
    for _ in range(SWEEPS):
        for rows, neigh in ((range(1, nlayers), pred), (range(nlayers - 2, -1, -1), succ)):
            for li in rows:
                row = layers[li]
                desired = {}
                for vid in row:
                    ns = neigh[vid]
                    desired[vid] = sum(x[n] for n in ns) / len(ns) if ns else x[vid]
                row.sort(key=lambda v: (desired[v], index[v]))
                _place(row, desired, width, x)
    return x


def _node_boxes(order, vnodes, x, layer, top_of):
    """The LayoutNode of each visible box."""
    out_nodes = []
    for vid in order:
        box = vnodes[vid]
        left = round(x[vid] - box["w"] / 2, 1)
        top = top_of(layer[vid])
        out_nodes.append(
            {
                "id": vid,
                "kind": box["kind"],
                "x": left,
                "y": top,
                "w": box["w"],
                "h": NODE_H,
                "label": box["label"],
                "sub": box["sub"],
                "ref": box["ref"],
                "group": box["group"],
            }
        )
    return out_nodes


def _edge_paths(vedges, out_nodes, chains, x, layer, top_of):
    """The LayoutEdge of each visible edge: its points, through its dummies."""
    boxes = {b["id"]: b for b in out_nodes}
    out_edges = []
    for (u, v), entry in vedges.items():
        a, b = boxes[u], boxes[v]
        points = [round(a["x"] + a["w"] / 2, 1), a["y"] + NODE_H]
        for d in chains.get((u, v), ()):
            dx = round(x[d], 1)
            points += [dx, top_of(layer[d]), dx, top_of(layer[d]) + NODE_H]
        points += [round(b["x"] + b["w"] / 2, 1), b["y"]]
        entry["points"] = points
        out_edges.append(entry)
    return out_edges


def _group_boxes(groups, rects):
    """The LayoutGroup of each group drawn, outermost first."""
    out_groups = []
    for gid, g in groups.items():
        r = rects.get(gid)
        if r is None:
            continue
        out_groups.append(
            {
                "id": gid,
                "label": _clip(f"{g['name']}: {g['type']}", 40),
                "x": round(r[0], 1),
                "y": round(r[1], 1),
                "w": round(r[2] - r[0], 1),
                "h": round(r[3] - r[1], 1),
                "depth": g["depth"],
            }
        )
    out_groups.sort(key=lambda g: (g["depth"], g["id"]))
    return out_groups


def _shift_into_view(out_nodes, out_edges, out_groups):
    """Move everything right and down past any group box out at the top or left; returns the
    drawing's ``(width, height)``."""
    right = max((b["x"] + b["w"] for b in out_nodes), default=0.0)
    bottom = max((b["y"] + b["h"] for b in out_nodes), default=0.0)
    for g in out_groups:
        right = max(right, g["x"] + g["w"])
        bottom = max(bottom, g["y"] + g["h"])
    shift = max(0.0, -min((g["x"] for g in out_groups), default=0.0) + MARGIN / 2)
    shift_y = max(0.0, -min((g["y"] for g in out_groups), default=0.0) + MARGIN / 2)
    if shift or shift_y:
        for item in out_nodes + out_groups:
            item["x"] = round(item["x"] + shift, 1)
            item["y"] = round(item["y"] + shift_y, 1)
        for e in out_edges:
            p = e["points"]
            e["points"] = [
                round(c + shift, 1) if i % 2 == 0 else c + shift_y for i, c in enumerate(p)
            ]
        right += shift
        bottom += shift_y
    return round(right + MARGIN, 1), round(bottom + MARGIN, 1)


def _place(row, desired, width, x):
    """Put the nodes of one layer (sorted) as near their desired centres as overlap allows."""
    if not row:
        return
    lefts = []
    prev_right = None
    for vid in row:
        left = desired[vid] - width[vid] / 2
        if prev_right is not None and left < prev_right + H_GAP:
            left = prev_right + H_GAP
        lefts.append(left)
        prev_right = left + width[vid]
    shift = sum(lefts[i] + width[v] / 2 - desired[v] for i, v in enumerate(row)) / len(row)
    for i, vid in enumerate(row):
        x[vid] = lefts[i] + width[vid] / 2 - shift


def _chain(gid, groups):
    out = []
    while gid is not None:
        out.append(gid)
        gid = groups[gid]["parent"]
    return out


def _common_group(a, b, groups):
    """The innermost group holding both group ``a`` and group ``b`` (None: the top level)."""
    if a == b:
        return a
    inside_b = set(_chain(b, groups))
    for gid in _chain(a, groups):
        if gid in inside_b:
            return gid
    return None


def _layers(order, succ, pred, vgroup, groups, bottoms):
    """Longest-path layers; with ``bottoms``, each group's outgoing edges start below its
    lowest member (NOTE [Group boxes]). Returns ``(layer, whether a cycle was broken)``."""
    # edges as (target, length); group bottoms are extra vertices "^<gid>"
    out = {vid: [] for vid in order}
    for u in order:
        for w in succ[u]:
            out[u].append((w, 1 if vgroup[u] == vgroup[w] else 2))
    verts = list(order)
    if bottoms:
        used = set()
        for vid in order:
            g = vgroup[vid]
            if g is not None:
                out[vid].append(("^" + g, 0))
                used.update(_chain(g, groups))
        for g in sorted(used):
            out["^" + g] = []
            parent = groups[g]["parent"]
            if parent is not None:
                out["^" + g].append(("^" + parent, 0))
        verts += ["^" + g for g in sorted(used)]
        for u in order:
            gu = vgroup[u]
            if gu is None:
                continue
            for w in succ[u]:
                inside_w = set(_chain(vgroup[w], groups))
                leaving = [g for g in _chain(gu, groups) if g not in inside_w]
                if leaving:
                    out["^" + leaving[-1]].append((w, 2))
    indeg = dict.fromkeys(verts, 0)
    for v in verts:
        for w, _ in out[v]:
            indeg[w] += 1
    layer = dict.fromkeys(verts, 0)
    done = set()
    ready = [v for v in verts if indeg[v] == 0]
    ready.reverse()
    remaining = len(verts)
    cursor = 0
    broke = False
    while remaining:
        if not ready:
            while verts[cursor] in done:
                cursor += 1
            ready.append(verts[cursor])
            broke = True
        v = ready.pop()
        if v in done:
            continue
        done.add(v)
        remaining -= 1
        for w, length in out[v]:
            if w in done:
                continue
            if layer[v] + length > layer[w]:
                layer[w] = layer[v] + length
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    return {vid: layer[vid] for vid in order}, broke


def _separate_groups(x, width, layer, vgroup, groups, hidden, top_of):
    """Group boxes ``{gid: (left, top, right, bottom)}``, built from the innermost group out;
    at each level the members (nodes and child boxes, the latter moved as one block with
    everything inside) are moved right until none overlaps another (NOTE [Group boxes]).
    Updates ``x`` in place."""
    members = {}  # group id (None: top level) -> the node boxes directly inside
    kids = {}  # group id -> the expanded child groups with something visible inside
    inside = {}  # group id -> every box inside it, at any depth, and the bends of its edges
    for vid in x:
        g = vgroup.get(vid)
        if not vid.startswith("~"):  # an edge's bend moves with its group, and pushes nothing
            members.setdefault(g, []).append(vid)
        while g is not None:
            inside.setdefault(g, []).append(vid)
            parent = groups[g]["parent"]
            if g not in hidden:
                kids.setdefault(parent, set()).add(g)
            g = parent
    expanded = [g for g in inside if g not in hidden]
    expanded.sort(key=lambda g: (-groups[g]["depth"], g))
    nested = {g: [g] for g in expanded}  # group id -> itself and the groups inside it
    for g in expanded:
        p = groups[g]["parent"]
        while p is not None:
            if p in nested:
                nested[p].append(g)
            p = groups[p]["parent"]
    rects = {}
    band = NODE_H + V_GAP
    origin = top_of(0) - V_GAP / 2

    def bands(top, bottom):
        return range(int((top - origin) // band), int((bottom - 1e-6 - origin) // band) + 1)

    def settle(level):
        items = []
        for vid in members.get(level, ()):
            left = x[vid] - width[vid] / 2
            top = top_of(layer[vid])
            items.append((left, top, left + width[vid], top + NODE_H, vid, None))
        for g in sorted(kids.get(level, ())):
            r = rects[g]
            items.append((r[0], r[1], r[2], r[3], None, g))
        items.sort(key=lambda it: (it[0], it[1], it[4] or "", it[5] or ""))
        skyline = {}
        for left, top, right, bottom, vid, g in items:
            span = bands(top, bottom)
            need = max((skyline.get(b, -1e18) + H_GAP for b in span), default=-1e18)
            shift = need - left if need > left else 0.0
            if shift:
                if vid is not None:
                    x[vid] += shift
                else:
                    for v in inside[g]:
                        x[v] += shift
                    for sub in nested[g]:
                        r = rects[sub]
                        rects[sub] = (r[0] + shift, r[1], r[2] + shift, r[3])
            for b in span:
                skyline[b] = right + shift

    for g in expanded:
        settle(g)
        lefts, tops, rights, bottoms = [], [], [], []
        for vid in members.get(g, ()):
            lefts.append(x[vid] - width[vid] / 2)
            rights.append(x[vid] + width[vid] / 2)
            tops.append(top_of(layer[vid]))
            bottoms.append(top_of(layer[vid]) + NODE_H)
        for k in kids.get(g, ()):
            r = rects[k]
            lefts.append(r[0])
            tops.append(r[1])
            rights.append(r[2])
            bottoms.append(r[3])
        rects[g] = (
            min(lefts) - GROUP_PAD,
            min(tops) - GROUP_PAD - GROUP_LABEL,
            max(rights) + GROUP_PAD,
            max(bottoms) + GROUP_PAD,
        )
    settle(None)
    return rects
