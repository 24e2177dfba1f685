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
unit the series holding it (outermost first), and, once a series shows (NOTE [Series facts
when shown]), the units it draws itself when open, its node count and box, and its edges out
bundled by the unit they lead to. A click then costs what it shows: the shown series
(``shown_series``), the units their opened ones draw, one box for each folded one, and the
bundles out of each box, the unit at the other end mapped to the box that shows it through
its few series; the edges keep the snapshot's order (each by its first edge), so the picture
is the same as when it was built from the whole snapshot. The price: opening a view keeps
these (a 10,000-node chain's view opens some 25% slower, most of it the garbage collector
walking what is kept). A click on a group makes a new Visible, from a kept one (NOTE [A click
changes what it opens]).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Mapping
from itertools import chain, compress, count, groupby, repeat
from operator import itemgetter, or_

from .fold import search, shown_series

__all__ = [
    "Visible",
    "SeriesMembers",
    "visible_graph",
    "shown_graph",
    "node_size",
    "shape_text",
    "grad_label",
]

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
    places = list(chain.from_iterable(map(itemgetter(1), bundles)))
    places.sort()  # (bundles one after another: runs in order, one pass in C)
    return (places[0], tuple(places))


def visible_graph(snapshot, collapsed, cache=None) -> Visible:
    """The :class:`Visible` graph of ``snapshot`` with the groups ``collapsed``; ``cache``, a
    dict the caller keeps, holds the last few of one snapshot (NOTE [Clicks cost what they
    show]), each under the collapsed groups that are not inside another; a new one is made
    from the nearest kept (NOTE [A click changes what it opens])."""
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
        found = _nearest(snapshot, key, kept, cache)
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
        # group id -> the outermost collapsed group holding it (or None)
        rep = {gid: _outermost(gid, groups, shut) for gid in groups}
        self.hidden = {gid for gid, top in rep.items() if top is not None}
        made = _units(snapshot, groups, rep)
        self.vis, self.units, self._places, self.members, self._entry, self._boxes = made
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

    @classmethod
    def _made_from(cls, old, shut, moved_groups, moved, index):
        """The Visible of ``old``'s snapshot with the groups ``shut`` collapsed, made from
        ``old``, whose collapsed groups differ from ``shut`` only over ``moved_groups`` and
        their nodes ``moved`` (places; NOTE [A click changes what it opens])."""
        self = cls.__new__(cls)
        self.snapshot, self.groups = old.snapshot, old.groups
        self._folding = None
        groups, nodes = old.groups, old.snapshot["nodes"]
        rep = {gid: _outermost(gid, groups, shut) for gid in moved_groups}
        self.hidden = (old.hidden - moved_groups) | {g for g, top in rep.items() if top is not None}
        gone, new = {}, {}  # the moved nodes' units, old and new -> the place of the first
        for k in moved:
            nid = nodes[k]["id"]
            gone.setdefault(old.vis.get(nid, nid), k)
            top = rep[nodes[k]["group"]]
            new.setdefault(nid if top is None else "group:" + top, k)
        vis, entry, members = dict(old.vis), dict(old._entry), dict(old.members)
        for u in gone:
            entry.pop(u, None)
            members.pop(u, None)
        for k in moved:
            n = nodes[k]
            top = rep[n["group"]]
            if top is None:
                vis.pop(n["id"], None)
                entry[n["id"]] = n
            else:
                vid = vis[n["id"]] = "group:" + top
                members[vid] = members.get(vid, 0) + 1
        boxes = {u: b for u, b in old._boxes.items() if u not in gone}
        for u in new:
            if u in members:
                boxes[u] = _group_box(u, groups[u[6:]], members[u])
        self.vis, self._entry, self.members, self._boxes = vis, entry, members, boxes
        self.units, self._places = _reordered(old.units, old._places, gone, new)
        ids = {nodes[k]["id"] for k in moved}
        self.out = _rebundled(old, self, gone, new, index.edges_of(ids))
        self._of_unit = None
        if old._of_unit is not None:
            of = self._of_unit = {u: x for u, x in old._of_unit.items() if u not in gone}
            for k in moved:
                u = vis.get(nodes[k]["id"])
                if u is not None:
                    of.setdefault(u, set()).add(nodes[k]["id"])
        return self


# NOTE [A click changes what it opens]
# Opening or closing a module group changes the unit of the nodes inside it and nothing else;
# yet each new set of collapsed groups made its Visible from the whole snapshot again (0.13 s
# for a 57,000-node training loop). So a new one is made from the kept one nearest to it
# (``_nearest``): the groups in one set and not the other are found with the groups inside
# them and their nodes (``_Index``, made once a snapshot, at its first such click: 17 ms), and
# only those nodes' units, those units' boxes and the bundles of those nodes' edges are made
# again (``Visible._made_from``: 16 ms); the rest is copied, a dict or a list at a time. What
# it makes is what ``Visible(snapshot, collapsed)`` makes (a test compares them, item by
# item). Past half the snapshot's nodes (``collapse_all``) it is made anew. The search for
# series that follows still reads every unit (``fold.search``, about 0.1 s for 28,000 units):
# a group opened inside a series changes that series, and the search is not yet incremental.
def _nearest(snapshot, key, kept, cache):
    """The Visible of ``snapshot`` with the groups ``key`` collapsed, made from the one in
    ``kept`` (its collapsed groups -> it) whose groups differ over fewest nodes, or anew."""
    if not kept:
        return Visible(snapshot, key)
    index = cache.get("index")
    if index is None:
        index = cache["index"] = _Index(snapshot)
    best = None
    for shut, vis in kept.items():
        moved = index.inside(shut ^ key)
        if best is None or len(moved[1]) < len(best[2][1]):
            best = (shut, vis, moved)
    if 2 * len(best[2][1]) > len(snapshot["nodes"]):
        return Visible(snapshot, key)
    return Visible._made_from(best[1], key, *best[2], index)


class _Index:
    """What making a Visible from another needs of a snapshot (NOTE [A click changes what it
    opens]): each group's groups directly inside, and each node's group and each edge's ends
    as flat lists, which C loops (``map``, ``compress``) read at a click (a list of numbers
    or strings, which the garbage collector does not walk one by one)."""

    def __init__(self, snapshot):
        nodes, edges = snapshot["nodes"], snapshot["edges"]
        self.group = list(map(itemgetter("group"), nodes))
        self.ends = list(map(itemgetter("from"), edges)), list(map(itemgetter("to"), edges))
        kids = {}
        for g in snapshot["groups"]:
            kids.setdefault(g["parent"], []).append(g["id"])
        self.kids = {g: tuple(v) for g, v in kids.items()}

    def inside(self, groups):
        """``(groups, nodes)``: the set of ``groups`` and every group inside them, and the
        places of their nodes, ascending."""
        found, todo = set(), list(groups)
        while todo:
            g = todo.pop()
            if g not in found:  # (one of ``groups`` may hold another)
                found.add(g)
                todo += self.kids.get(g, ())
        return found, list(compress(count(), map(found.__contains__, self.group)))

    def edges_of(self, ids):
        """The places of the edges to or from the nodes ``ids`` (a set), ascending."""
        a, b = (map(ids.__contains__, end) for end in self.ends)
        return list(compress(count(), map(or_, a, b)))


# NOTE [Boxes when asked]
# A Visible is kept while its view lives (NOTE [Clicks cost what they show]), and a big graph
# opens folded: a few boxes show of its thousands of units. So it keeps a node's unit as the
# node's snapshot entry, and makes the node's box when a layout asks for it (``Visible.box``);
# the boxes of the collapsed groups (few) are made at once. Kept, a 20,000-node chain's boxes
# held 6 MB; a layout of it makes the few it shows.
def _units(snapshot, groups, rep):
    """``(vis, units, places, members, entries, boxes)``: ``{node id: unit}`` of the nodes
    inside a collapsed group (a node drawn on its own is its own unit, and not in it), the
    units in the snapshot's order (a collapsed group being one) and the place of each one's
    first node, how many nodes each group's unit holds (a node's: 1), the snapshot entry of
    each node's own unit, and each group's box (the places an array: 8 bytes each, no int
    objects)."""
    vis, units, places, members, entries, boxes = {}, [], array("q"), {}, {}, {}
    for k, n in enumerate(snapshot["nodes"]):
        top = rep[n["group"]] if n["group"] is not None else None
        if top is None:
            entries[n["id"]] = n
            vid = n["id"]
            units.append(vid)
            places.append(k)
        else:
            vid = "group:" + top
            if vid not in members:
                units.append(vid)
                places.append(k)
            members[vid] = members.get(vid, 0) + 1
            vis[n["id"]] = vid
    for vid, held in members.items():
        boxes[vid] = _group_box(vid, groups[vid[6:]], held)
    return vis, units, places, members, entries, boxes


def _group_box(vid, g, count):
    """The box of unit ``vid``: the collapsed group ``g`` of ``count`` nodes."""
    label = _clip(f"{g['path'] or g['name']}: {g['type']}", 36)
    sub = f"{count} node" + ("s" if count != 1 else "")
    return {
        "id": vid,
        "kind": "group",
        "label": label,
        "sub": sub,
        "ref": g["id"],
        "group": g["parent"],
        "w": node_size(label, sub),
        "h": NODE_H,
    }


def _reordered(units, places, gone, new):
    """``units`` (their first nodes at ``places``, ascending) without the units ``gone`` and
    with the units ``new`` (unit -> the place of its first node), in place order."""
    units, places = list(units), array("q", places)
    if len(gone) + len(new) > 64:  # (many: one sort, not a shift of the lists each)
        rows = [(p, u) for p, u in zip(places, units) if u not in gone]
        rows += [(p, u) for u, p in new.items()]
        rows.sort()
        return [u for _, u in rows], array("q", [p for p, _ in rows])
    for p in gone.values():
        k = bisect_left(places, p)
        del units[k], places[k]
    for u, p in new.items():
        k = bisect_left(places, p)
        units.insert(k, u)
        places.insert(k, p)
    return units, places


def _rebundled(old, vis, gone, new, edges):
    """``vis.out`` made from ``old.out``: the units ``gone`` dropped, the edges at places
    ``edges`` (those of the nodes whose unit changed) bundled again."""
    out = {u: b for u, b in old.out.items() if u not in gone} if len(gone) > 64 else dict(old.out)
    for u in gone:
        out.pop(u, None)
    for u in new:
        out[u] = []
    found, touched, drawn, units = {}, set(), vis.snapshot["edges"], vis.vis
    for k in edges:
        e = drawn[k]
        u, v = units.get(e["from"], e["from"]), units.get(e["to"], e["to"])
        if u == v or u not in out or v not in out:
            continue
        row = found.get((u, v))
        if row is None:
            found[(u, v)] = row = []
        row.append(k)
        if u not in new:
            touched.add(u)
    for u in touched:
        out[u] = [(v, b) for v, b in out[u] if v not in gone]
    for (u, v), row in found.items():
        out[u].append((v, (row[0], tuple(row))))
    for u in touched.union(new):
        out[u].sort(key=_first_place)
    return out


def _first_place(row):
    return row[1][0]


_first, _second, _id = itemgetter(0), itemgetter(1), itemgetter("id")


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


# NOTE [Series facts when shown]
# A Folding made each series' facts at once: its own units, node count, first place, box and
# edges out, for every series and every part of one (a pass over the edges times the depth of
# the parts). A click that opens or closes a group makes a new Visible, searched again, and
# shows a few of those series: the folded steps of a training loop, as one box, of 1,021
# series and parts. So each fact is made when its series first shows, and kept: a series'
# edges out are those of its units to units outside it (the same bundles as the pass made,
# merged by one sort), and a click on a series makes its parts' when they show.
class Folding:
    """The series of a :class:`Visible` graph and what a click needs of them (NOTE [Clicks
    cost what they show]): ``place`` (unit -> its place), ``chain`` (unit -> the series
    holding it, outermost first), ``base`` (the units no series holds), and, each made when a
    series first shows (NOTE [Series facts when shown]), its own units, node count, first
    place, box and edges out."""

    def __init__(self, vis, series, place):
        self.series, self.place = series, place  # (place: unit -> its place in vis.units)
        holding = self.chain = {}  # (shared)
        todo = [(s, ()) for s in reversed(series)]
        while todo:  # a series before its parts
            s, outer = todo.pop()
            cs = (*outer, s)
            holding.update(dict.fromkeys(s["units"], cs))  # (its parts' units: overwritten)
            todo += [(p, cs) for p in reversed(s["parts"])]
        self.base = [u for u in vis.units if u not in holding]  # drawn whatever is open
        self._own, self._nodes, self._first, self._box, self._out = {}, {}, {}, {}, {}
        self._members = {}

    def own(self, s):
        """The units series ``s`` draws itself when open (not its parts')."""
        got = self._own.get(s["id"])
        if got is None:
            own = set(s["units"]).difference(*(p["units"] for p in s["parts"]))
            got = self._own[s["id"]] = list(own)  # (drawn in place order: shown_graph sorts)
        return got

    def nodes(self, vis, s):
        """How many of the snapshot's nodes series ``s`` (of ``vis``) holds (its parts hold
        some of its units each, none twice: ``fold.py``)."""
        got = self._nodes.get(s["id"])
        if got is None:
            got = sum(map(vis.members.get, set(s["units"]), repeat(1)))
            self._nodes[s["id"]] = got
        return got

    def first(self, s):
        """The place of the first unit series ``s`` holds."""
        got = self._first.get(s["id"])
        if got is None:
            got = self._first[s["id"]] = min(map(self.place.__getitem__, s["units"]))
        return got

    def box(self, vis, s):
        """The box of series ``s`` (of ``vis``) folded."""
        got = self._box.get(s["id"])
        if got is None:
            nodes = self.nodes(vis, s)
            label = _clip(series_label(s), 48)
            sub = f"×{s['count']} more · {nodes} nodes"
            if s["chunk"]:  # NOTE [Chunks] in fold.py: not a repeat
                sub = f"{s['count']} boxes · {nodes} nodes"
            got = self._box[s["id"]] = {
                "id": s["id"],
                "kind": "series",
                "label": label,
                "sub": sub,
                "ref": s["id"],
                "group": vis.group_of(vis.units[self.first(s)]),
                "w": node_size(label, sub, wide=True),
                "h": NODE_H,
            }
        return got

    def out(self, vis, s):
        """``[(unit, bundle)]``: the edges out of series ``s`` (of ``vis``) folded, bundled by
        the unit outside it they lead to."""
        got = self._out.get(s["id"])
        if got is None:
            inside = set(s["units"])
            rows = chain.from_iterable(map(vis.out.__getitem__, inside))
            rows = sorted([r for r in rows if r[0] not in inside], key=_first)
            got = self._out[s["id"]] = [
                (b, _merged(list(map(_second, bs)))) for b, bs in groupby(rows, _first)
            ]
        return got

    def members_of(self, vis, s):
        """The snapshot node ids inside series ``s``, found once (a chunk of a random DAG
        holds most of it: each click gathered them again). Shared, not to be changed."""
        got = self._members.get(s["id"])
        if got is None:
            units = s["units"]
            held = list(map(vis.of_unit().get, units))  # (None: a node's own unit)
            got = {u for u, ids in zip(units, held) if ids is None}
            got = self._members[s["id"]] = got.union(*filter(None, held))
        return got


class SeriesMembers(Mapping):
    """``{series id: the set of the snapshot node ids inside it}`` for the series a layout
    shows, each set gathered when first read: the NaN/Inf marks and the search read them
    (``answers_view.py``, ``GraphView.reveal``), and a click that shows the box of a series
    of 28,000 units need not gather its 57,000 node ids. Shared sets, not to be changed."""

    def __init__(self):
        self._of = {}  # series id -> (its Visible, the series)

    def shown(self, vis, found):
        """Add the series ``found`` of the Visible ``vis``."""
        self._of.update((s["id"], (vis, s)) for s in found)

    def __getitem__(self, sid):
        vis, s = self._of[sid]
        return vis.folding().members_of(vis, s)

    def __iter__(self):
        return iter(self._of)

    def __len__(self):
        return len(self._of)


def _outermost(gid, groups, shut):
    """The outermost group in ``shut`` that holds group ``gid`` (itself included), or None."""
    top = None
    while gid is not None:
        if gid in shut:
            top = gid
        gid = groups[gid]["parent"]
    return top


def series_label(s):
    """A series' kinds in order (a chunk's: its commonest, NOTE [Chunks] in fold.py)."""
    return (", " if s["chunk"] else " → ").join(s["kinds"])


def fold_units(vis) -> Folding:
    """Search the units of ``vis`` for series (``fold.search``) and gather their facts."""
    units, entry, boxes = vis.units, vis._entry, vis._boxes
    place = {u: k for k, u in enumerate(units)}
    kind = {u: n["name"] for u, n in entry.items()}
    kind.update((u, vis.groups[b["ref"]]["type"]) for u, b in boxes.items())
    group = {u: n["group"] for u, n in entry.items()}
    group.update((u, b["group"]) for u, b in boxes.items())
    succs = [[place[v] for v, _ in out] for out in map(vis.out.__getitem__, units)]
    found = search(units, list(map(kind.__getitem__, units)), succs, list(map(group.get, units)))
    return Folding(vis, found, place)


def shown_graph(vis, fold, expanded, members_out=None):
    """``(boxes, edges, series)`` of what shows: ``{box id: box}`` and ``{(from, to): edge}``,
    both in the snapshot's order, and the LayoutSeries of the series shown (none unless
    ``fold``), every one folded but those in ``expanded`` (a set). ``members_out``: a dict to
    fill with ``{series id: set of the snapshot node ids inside it}`` (a
    :class:`SeriesMembers`: each set gathered when first read)."""
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
                "nodes": f.nodes(vis, s),
                "expanded": opened,
            }
        )
        if opened:
            rows += [(f.place[u], u, vis.box(u), vis.out[u]) for u in f.own(s)]
        else:
            box = f.box(vis, s)
            if s is steps:  # NOTE [Repeated steps counted]: its line counts every step
                counted = vis.snapshot["counted_steps"]
                box = _with_counted(box, s["count"], counted, f.nodes(vis, s))
            rows.append((f.first(s), sid, box, f.out(vis, s)))
    rows.sort(key=lambda r: r[0])
    holding = f.chain

    def box_of(u):  # the box that shows unit u
        for s in holding.get(u, ()):
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
    if isinstance(members_out, SeriesMembers):
        members_out.shown(vis, found)
    elif members_out is not None:
        members_out.update((s["id"], f.members_of(vis, s)) for s in found)
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
    drawn = list(map(edges.__getitem__, _merged(bundles)[1]))
    ids = list(map(_id, drawn))
    grads = list(map(_norm_of, drawn))
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
