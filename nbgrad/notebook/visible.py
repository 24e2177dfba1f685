"""What a layout shows of a snapshot: its units (nodes, and each collapsed module group as one
box) and the edges between them, with repeated structure folded into series boxes
(``fold.py``) except the series the user opened.

NOTE [Clicks cost what they show]
A click on a series (or a part of one) changes which series are open, nothing else; yet each
click used to walk every node and edge of the snapshot again: the boxes, the edges between them
merged, the search for series, each series' node count (2.4 s on a 100,000-node RNN). So what
depends on the snapshot and the collapsed groups alone is a :class:`Visible`, built once and
kept by the graph view (``cache``, the last ``KEEP`` sets of collapsed groups): its units and
their edges as bundles (the places of the snapshot's edges between two units; see
NOTE [Bundles are tuples]), and, when first folded, a :class:`Folding`: the series found, for each
unit the series holding it (outermost first), for each series the units it draws itself when
open, its node count and box, and its edges out bundled by the unit they lead to (each edge
counted once for each series it leaves: a pass over the edges times the depth of the parts,
about log10(n)). A click then costs what it shows: the shown series (``shown_series``), the
units their opened ones draw, one box for each folded one, and the bundles out of each box, the
unit at the other end mapped to the box that shows it through its few series; the edges keep
the snapshot's order (each by its first edge), so the picture is the same as when it was built
from the whole snapshot. The price: opening a view keeps these (a 10,000-node chain's view
opens some 25% slower, most of it the garbage collector walking what is kept).
"""

from __future__ import annotations

from .fold import find_series, shown_series

__all__ = ["Visible", "visible_graph", "shown_graph", "node_size", "shape_text", "grad_label"]

NODE_H = 38
CHAR_W = 7.3  # a character of the 12 px monospace labels
KEEP = 3  # the sets of collapsed groups whose visible graph a cache keeps


def shape_text(shapes) -> str:
    parts = []
    for s in shapes:
        parts.append("×".join(str(d) for d in s) if s else "scalar")
    text = ", ".join(parts)
    return text if len(text) <= 32 else text[:31] + "…"


def _clip(text, n=30):
    return text if len(text) <= n else text[: n - 1] + "…"


def node_size(label, sub, wide=False):
    """A box's width for its text (a series box, ``wide``, may take up to 380)."""
    chars = max(len(label), len(sub))
    return max(72.0, min(380.0 if wide else 260.0, round(chars * CHAR_W + 20)))


def grad_label(grads):
    """What an edge shows: the gradient norm of a single edge; for parallel edges (``x * x``,
    or the edges a collapsed group merges) ``"2× 1.5"`` when the norms are equal, else the
    norms (up to three), else how many. None before any backward pass."""
    norms = [g for g in grads if g is not None]
    if not norms:
        return None
    if len(norms) > 3:  # (a series' edges to a weight: thousands, most often unequal)
        first = _norm_text(norms[0])
        same = all(_norm_text(g) == first for g in norms)
        return f"{len(norms)}× {first}" if same else f"{len(norms)} gradients"
    texts = [_norm_text(g) for g in norms]
    if len(texts) == 1:
        return texts[0] if len(grads) == 1 else f"{texts[0]} (1 of {len(grads)})"
    if len(set(texts)) == 1:
        return f"{len(texts)}× {texts[0]}"
    return ", ".join(texts)


def _norm_text(v):
    return v if isinstance(v, str) else f"{v:.4g}"  # 1.0026 shows as 1.003, not 1


# NOTE [Bundles are tuples]
# A bundle of snapshot edges drawn as one is a tuple ``(first, places)``: their places in the
# snapshot (ascending, ``first`` the least), a tuple too; their ids and gradient norms are read
# from the snapshot when the edge is drawn (``_edge``; kept in the bundle too, as two more
# tuples, they held 2 MB for a 20,000-node chain). A big graph has one a pair of units, kept
# while its view lives; tuples of numbers leave the garbage collector's lists, lists and
# objects would not, and each full collection would walk them (the view of a 10,000-node
# chain opened 30% slower).


def _merged(bundles):
    """One bundle of the edges of ``bundles``."""
    if len(bundles) == 1:
        return bundles[0]
    bundles = sorted(bundles)
    places = []
    for b in bundles:
        places += b[1]
    if any(a[1][-1] > b[0] for a, b in zip(bundles, bundles[1:])):  # interleaved
        places.sort()
    return (places[0], tuple(places))


def visible_graph(snapshot, collapsed, cache=None) -> Visible:
    """The :class:`Visible` graph of ``snapshot`` with the groups ``collapsed``; ``cache``, a
    dict the caller keeps, holds the last few of one snapshot (NOTE [Clicks cost what they
    show]), each under the collapsed groups that are not inside another."""
    if cache is None:
        return Visible(snapshot, collapsed)
    if cache.get("snapshot") is not snapshot:
        cache.clear()
        cache.update(snapshot=snapshot, kept={})
        cache["parent"] = {g["id"]: g["parent"] for g in snapshot["groups"]}
    parent, kept = cache["parent"], cache["kept"]
    shut = {c for c in collapsed if c in parent}

    def outermost(g):
        g = parent[g]
        while g is not None and g not in shut:
            g = parent[g]
        return g is None

    key = frozenset(filter(outermost, shut))
    found = kept.pop(key, None)
    if found is None:
        found = Visible(snapshot, key)
        while len(kept) >= KEEP:
            del kept[next(iter(kept))]
    kept[key] = found  # (the last used comes last)
    return found


class Visible:
    """``snapshot`` with the groups ``collapsed``: ``units`` (ids, snapshot order), their
    boxes (``box``), ``vis`` (the id of a node inside a collapsed group -> that group's unit;
    a node drawn on its own is its own unit), ``out`` (unit -> [(unit, bundle)], the bundles
    in snapshot order), ``groups`` by id and the ``hidden`` ones (inside a collapsed group,
    or collapsed)."""

    def __init__(self, snapshot, collapsed):
        self.snapshot = snapshot
        self.groups = groups = {g["id"]: g for g in snapshot["groups"]}
        shut = {c for c in collapsed if c in groups}
        rep = {}  # group id -> the outermost collapsed group holding it (or None)
        for gid in groups:
            top, g = None, gid
            while g is not None:
                if g in shut:
                    top = g
                g = groups[g]["parent"]
            rep[gid] = top
        self.hidden = {gid for gid, top in rep.items() if top is not None}
        self.vis, self.units, self.members, self._entry, self._boxes = _units(snapshot, groups, rep)
        out = self.out = {u: [] for u in self.units}
        for u, v, bundle in _bundles(snapshot, self.vis):
            if u in out and v in out:  # (both ends drawn, as the snapshot's edges are)
                out[u].append((v, bundle))
        self._folding = None
        self._of_unit = None

    def box(self, u):
        """The box of unit ``u``, a node's made anew (NOTE [Boxes when asked])."""
        got = self._boxes.get(u)
        return got if got is not None else _node_box(self._entry[u])

    def group_of(self, u):
        """The group (id or None) that the box of unit ``u`` sits in."""
        n = self._entry.get(u)
        return n["group"] if n is not None else self._boxes[u]["group"]

    def kind_of(self, u):
        """What unit ``u`` is, for the search for series: a node's name, a group's type."""
        n = self._entry.get(u)
        return n["name"] if n is not None else self.groups[self._boxes[u]["ref"]]["type"]

    def folding(self) -> Folding:
        if self._folding is None:
            self._folding = fold_units(self)
        return self._folding

    def bundles(self):
        """``[(from unit, to unit, bundle)]`` in snapshot order (made when asked: kept, a list of
        them besides ``out`` held 1.4 MB for a 20,000-node chain)."""
        rows = [(u, v, b) for u, out in self.out.items() for v, b in out]
        rows.sort(key=lambda row: row[2][0])
        return rows

    def of_unit(self):
        """``{unit: set of the snapshot node ids it stands for}`` for the units of collapsed
        groups; a node's unit (its id) stands for itself alone, and is not in it (a set each
        held 4.7 MB for a 20,000-node chain)."""
        if self._of_unit is None:
            self._of_unit = {}
            for nid, u in self.vis.items():
                self._of_unit.setdefault(u, set()).add(nid)
        return self._of_unit


# NOTE [Boxes when asked]
# A Visible is kept while its view lives (NOTE [Clicks cost what they show]), and a big graph
# opens folded: a few boxes show of its thousands of units. So it keeps a node's unit as the
# node's snapshot entry, and makes the node's box when a layout asks for it (``Visible.box``);
# the boxes of the collapsed groups (few) are made at once. Kept, a 20,000-node chain's boxes
# held 6 MB; a layout of it makes the few it shows.
def _units(snapshot, groups, rep):
    """``(vis, units, members, entries, boxes)``: ``{node id: unit}`` of the nodes inside a
    collapsed group (a node drawn on its own is its own unit, and not in it), the units in
    the snapshot's order (a collapsed group being one), how many nodes each group's unit holds
    (a node's: 1), the snapshot entry of each node's own unit, and each group's box."""
    vis, units, members, entries, boxes = {}, [], {}, {}, {}
    for n in snapshot["nodes"]:
        top = rep[n["group"]] if n["group"] is not None else None
        if top is None:
            entries[n["id"]] = n
            vid = n["id"]
            units.append(vid)
        else:
            vid = "group:" + top
            if vid not in boxes:
                units.append(vid)
                g = groups[top]
                boxes[vid] = {
                    "id": vid,
                    "kind": "group",
                    "label": _clip(f"{g['path'] or g['name']}: {g['type']}", 36),
                    "sub": "",
                    "ref": top,
                    "group": g["parent"],
                }
            members[vid] = members.get(vid, 0) + 1
            vis[n["id"]] = vid
    for vid, box in boxes.items():
        count = members[vid]
        box["sub"] = f"{count} node" + ("s" if count != 1 else "")
        box["w"] = node_size(box["label"], box["sub"])
        box["h"] = NODE_H
    return vis, units, members, entries, boxes


def _node_box(n):
    """The box of a node (its snapshot entry ``n``) drawn on its own."""
    label = _clip(n["label"])
    tensor = n["tensor"]
    sub = shape_text([tensor["shape"]] if n["kind"] == "leaf" and tensor else n["shapes"])
    return {
        "id": n["id"],
        "kind": "node",
        "label": label,
        "sub": sub,
        "ref": n["id"],
        "group": n["group"],
        "hooked": bool(n["hooks"]),  # (a badge on the box: kept clear of labels)
        "w": node_size(label, sub),
        "h": NODE_H,
    }


def _bundles(snapshot, vis):
    """``[(from unit, to unit, bundle)]``: the snapshot's edges between two units, those
    between the same two merged, each in the place of its first edge."""
    found = {}
    for k, e in enumerate(snapshot["edges"]):
        u, v = vis.get(e["from"], e["from"]), vis.get(e["to"], e["to"])
        if u == v:
            continue
        row = found.get((u, v))
        if row is None:
            found[(u, v)] = row = []
        row.append(k)
    return [(u, v, (r[0], tuple(r))) for (u, v), r in found.items()]


class Folding:
    """The series of a :class:`Visible` graph and what a click needs of them (NOTE [Clicks
    cost what they show]), each series' facts keyed by its id."""

    def __init__(self, vis, series):
        self.series = series
        self.place = place = {u: k for k, u in enumerate(vis.units)}
        chain = self.chain = {}  # unit -> the series holding it, outermost first (shared)
        every = []  # (series, its chain), a series before its parts
        todo = [(s, ()) for s in reversed(series)]
        while todo:
            s, outer = todo.pop()
            cs = (*outer, s)
            every.append((s, cs))
            chain.update(dict.fromkeys(s["units"], cs))  # (its parts' units: overwritten)
            todo += [(p, cs) for p in reversed(s["parts"])]
        self.base = [u for u in vis.units if u not in chain]  # drawn whatever is open
        self.own, self.nodes, self.first, self.box, self.out = {}, {}, {}, {}, {}
        for s, _ in reversed(every):  # (the parts first)
            sid, parts = s["id"], s["parts"]
            own = set(s["units"]).difference(*(p["units"] for p in parts))
            self.own[sid] = list(own)  # (drawn in place order: shown_graph sorts)
            self.nodes[sid] = sum(vis.members.get(u, 1) for u in own) + sum(
                self.nodes[p["id"]] for p in parts
            )
            self.first[sid] = min(
                min(map(place.__getitem__, own), default=len(place)),
                min((self.first[p["id"]] for p in parts), default=len(place)),
            )
            label = _clip(series_label(s), 48)
            sub = f"×{s['count']} more · {self.nodes[sid]} nodes"
            if s["chunk"]:  # NOTE [Chunks] in fold.py: not a repeat
                sub = f"{s['count']} boxes · {self.nodes[sid]} nodes"
            self.box[sid] = {
                "id": sid,
                "kind": "series",
                "label": label,
                "sub": sub,
                "ref": sid,
                "group": vis.group_of(vis.units[self.first[sid]]),
                "w": node_size(label, sub, wide=True),
                "h": NODE_H,
            }
        leaving = {s["id"]: {} for s, _ in every}  # series id -> {unit outside: [bundles]}
        for a, ca in chain.items():
            for b, bundle in vis.out[a]:
                cb = chain.get(b, ())
                if cb is ca:  # (most edges: inside the innermost series)
                    continue
                k = 0
                while k < len(ca) and k < len(cb) and ca[k] is cb[k]:
                    k += 1
                for s in ca[k:]:  # the series that hold a but not b
                    leaving[s["id"]].setdefault(b, []).append(bundle)
        for sid, by_unit in leaving.items():
            self.out[sid] = [(b, _merged(bs)) for b, bs in by_unit.items()]
        self._members = {}

    def members_of(self, vis, s):
        """The snapshot node ids inside series ``s``, found once (a chunk of a random DAG
        holds most of it: each click gathered them again). Shared, not to be changed."""
        got = self._members.get(s["id"])
        if got is None:
            of_unit = vis.of_unit()
            got = self._members[s["id"]] = set()
            for u in s["units"]:
                group = of_unit.get(u)
                if group is None:
                    got.add(u)
                else:
                    got |= group
        return got


def series_label(s):
    """A series' kinds in order (a chunk's: its commonest, NOTE [Chunks] in fold.py)."""
    return (", " if s["chunk"] else " → ").join(s["kinds"])


def fold_units(vis) -> Folding:
    """Search the units of ``vis`` for series (``fold.find_series``) and gather their facts."""
    kind = {u: vis.kind_of(u) for u in vis.units}
    succ = {u: [v for v, _ in vis.out[u]] for u in vis.units}
    pred = {u: [] for u in vis.units}
    for u, v, _ in vis.bundles():
        pred[v].append(u)
    group = {u: vis.group_of(u) for u in vis.units}
    return Folding(vis, find_series(vis.units, kind, succ, pred, group))


def shown_graph(vis, fold, expanded, members_out=None):
    """``(boxes, edges, series)`` of what shows: ``{box id: box}`` and ``{(from, to): edge}``,
    both in the snapshot's order, and the LayoutSeries of the series shown (none unless
    ``fold``), every one folded but those in ``expanded`` (a set). ``members_out``: a dict to
    fill with ``{series id: set of the snapshot node ids inside it}``."""
    if not fold:
        boxes = {u: vis.box(u) for u in vis.units}
        drawn = vis.snapshot["edges"]
        edges = {(u, v): _edge(u, v, [b], drawn) for u, v, b in vis.bundles()}
        return boxes, edges, []
    f = vis.folding()
    found = shown_series(f.series, expanded)
    steps = _counted_steps(vis.snapshot, found)
    series = []
    rows = [(f.place[u], u, vis.box(u), vis.out[u]) for u in f.base]
    for s in found:
        sid = s["id"]
        opened = sid in expanded
        series.append(
            {
                "id": sid,
                "label": series_label(s),
                "count": s["count"],
                "period": s["period"],
                "nodes": f.nodes[sid],
                "expanded": opened,
            }
        )
        if opened:
            rows += [(f.place[u], u, vis.box(u), vis.out[u]) for u in f.own[sid]]
        else:
            box = f.box[sid]
            if s is steps:  # NOTE [Repeated steps counted]: its line counts every step
                box = _with_counted(box, s["count"], vis.snapshot["counted_steps"], f.nodes[sid])
            rows.append((f.first[sid], sid, box, f.out[sid]))
    rows.sort(key=lambda r: r[0])
    chain = f.chain

    def box_of(u):  # the box that shows unit u
        for s in chain.get(u, ()):
            if s["id"] not in expanded:
                return s["id"]
        return u

    between = {}
    for _, bid, _, out in rows:
        for b, bundle in out:
            to = box_of(b)
            if to != bid:
                between.setdefault((bid, to), []).append(bundle)
    keys = sorted(between, key=lambda k: min(b[0] for b in between[k]))
    drawn = vis.snapshot["edges"]
    edges = {k: _edge(k[0], k[1], between[k], drawn) for k in keys}
    if members_out is not None:
        for s in found:
            members_out[s["id"]] = f.members_of(vis, s)
    return {r[1]: r[2] for r in rows}, edges, series


def _counted_steps(snapshot, found):
    """The series that the repeats of a step a recorder counted belong to (NOTE [Repeated
    steps counted]): the longest, holding all the steps kept but the first and the last;
    None when no step was counted."""
    if not snapshot.get("counted_steps", 0):
        return None
    steps = max(found, key=lambda x: x["count"], default=None)
    if steps is not None and steps["count"] < snapshot.get("kept_steps", 0) - 2:
        return None
    return steps


def _with_counted(box, count, counted, nodes):
    """A copy of the series box ``box`` (``count`` repeats drawn, ``nodes`` nodes) whose line
    counts the ``counted`` steps too."""
    sub = f"×{count + counted} more ({counted} counted) · {nodes} nodes"
    return {**box, "sub": sub, "w": node_size(box["label"], sub, wide=True)}


def _edge(u, v, bundles, edges):
    """A LayoutEdge (without its points) of the bundles drawn from box ``u`` to box ``v``;
    ``edges``: the snapshot's edges."""
    places = _merged(bundles)[1]
    ids = [edges[k]["id"] for k in places]
    grads = [_norm_of(edges[k]) for k in places]
    return {
        "from": u,
        "to": v,
        "edges": ids,
        "grad": grads[0] if len(grads) == 1 else None,
        "grads": list(grads),
        "label": grad_label(grads),
    }


def _norm_of(edge):
    """The gradient norm an edge of the snapshot shows (None before any backward pass)."""
    g = edge.get("grad")
    return g.get("norm") if g is not None else None
