"""Folding repeated structure into series, as TensorBoard's graph dashboard does.

A loop of ``x = (x * w + b).tanh()`` run 300 times is a chain of 900 nodes whose names repeat
with period 3; five identical ``Linear -> ReLU`` modules called in a row are a chain of ten
collapsed groups whose types repeat with period 2. :func:`find_series` finds such runs in the
visible graph (nodes and collapsed groups, see ``layout.py``), so that the layout can draw one
series box for each (``MulBackward0 → AddBackward0 → TanhBackward0 ×300``) that expands in place
on a click.

Beyond chains, the same search finds the repeats of a fan (``sum(f(x, w) for w in ws)``: an
``Add`` chain with a branch and a weight of its own at each link), of an RNN step (the
``U @ x[t]`` branch beside ``W @ h``), of residual blocks, of a ``stack`` of identical
branches and of the steps of a training loop (one graph per step, sharing the parameters).

NOTE [Series]
Sinks (leaves, and units with no edges out) are set aside: the weights a loop reuses hang off
every step and stay outside the series box, which takes over the edges to them. The other
units form a dominator tree (a unit's dominator: the nearest unit every path from the top
to it passes through; ``ROOT`` for a top, and for a unit with an edge in from another module
group, so that a series never crosses a group's border), computed in one pass in
topological order; each walk up the tree is bounded (``WALK_BUDGET`` steps a unit in all;
past it the remaining units count as tops), so that the search is linear however the graph
is tangled. From each top the heaviest path down the tree (the child with the largest
subtree; where two tie, the spine ends) is a spine; a spine unit and the lighter subtrees
hanging from it are a cluster, named by a signature (its units' kinds, a node's name or a collapsed
group's module type, and the edges between them). Along the spine the signatures are
searched for the period ``p`` (1 to ``MAX_PERIOD``) and start that cover the most clusters
with at least ``MIN_REPEATS`` whole repeats, then the parts before and after the run. The
first repeat (the one nearest the root) stays drawn, so that the reader sees one whole
iteration, with its edges to the leaves, above the box that stands for the others. The
clusters left drawn have their light subtrees searched in turn: identical sibling subtrees
(the same signature, ``MIN_REPEATS`` or more: the tops of a training loop's steps, the
branches of a ``stack``) fold but for the last one made, and each drawn subtree is a spine
of its own. A unit is searched once per light edge above it: n log n in all. Sinks that only
a series' units lead to fold into it when there are as many as its repeats (a fan's weights,
one a branch), not otherwise (a loop's first input stays drawn). The result depends only on
the units, their order and their edges, so the same snapshot always folds the same way
(nbval compares the still pictures).

NOTE [Stubs fold]
A graph cut at ``--max-nodes`` keeps every leaf that received a gradient, most of them as
stubs: boxes with no edges (a fan of 20,000 branches cut at 20,000 nodes keeps 7,502 of its
weights' ``AccumulateGrad`` so). Drawn one by one they made the open view a wall of 7,511
boxes; the stubs of one module group and kind fold as siblings do, all but the last into a
series ("AccumulateGrad ×7,501") that opens in parts and that search reaches like any other.

NOTE [Chunks]
A graph with no repeated structure, a random DAG of 66,000 nodes, folded into 266 series and
left 5,890 boxes drawn: a wall, and each click laid all of them out again (2 s). So what a
module group (or the top level) still draws after the search, its units and series boxes,
when more than ``CHUNK``, is split as Model Explorer splits a group of too many children:
into at most ``SPLIT`` chunks of consecutive ones (snapshot order: near in the walk from
the roots), each split so in turn, down to what a click can draw. A chunk is a series box
(``chunk``: its label its units' commonest kinds, not a repeated block; its id
``chunk:<first unit>~<boxes>``) that opens like one, its series inside it as parts. The
edges between chunks are bundled as a series' are.

NOTE [Splitting a long series]
Opening a series of 2,000 repeats at once would draw 8,000 boxes, which neither reads nor
lays out fast. A series of more than ``SPLIT`` repeats holds ``parts``: at most ``SPLIT``
series of consecutive repeats (their ids ``series:<first unit>~<repeats>``), each split in
turn, so that opening one shows at most ``SPLIT`` boxes more and any repeat is a few clicks
away (the search opens the path to it), as Model Explorer splits groups of over 1,000
children. :func:`shown_series` lists what shows for a set of opened series.
"""

from __future__ import annotations

from collections import Counter
from itertools import chain
from typing import TypedDict

__all__ = ["Series", "find_series", "search", "MIN_REPEATS", "MAX_PERIOD", "SPLIT", "shown_series"]

MIN_REPEATS = 3  # fewer repeats are drawn as they are (a series box holds the last ones)
MAX_PERIOD = 12  # the longest repeated block searched for, in clusters
SPLIT = (
    10  # a series of more repeats opens as at most this many parts (NOTE [Splitting a long series])
)
CHUNK = 120  # more units than this left drawn in a module group are split in chunks (NOTE [Chunks])
WALK_BUDGET = 16  # steps up the dominator tree per unit, at most (NOTE [Series])
ROOT = -1  # the dominator of the units nothing else dominates


class Series(TypedDict):
    """A run of ``count`` repeats of a block of ``period`` units, top (root side) first;
    ``id`` is ``"series:"`` and the first unit's id, stable while that unit stays."""

    id: str
    units: list[str]
    period: int
    count: int
    kinds: list[str]  # the block's kinds in forward (execution) order: the reverse of units
    parts: list[Series]  # what it opens as when it has over SPLIT repeats (else [])
    chunk: bool  # units that do not repeat, only too many to draw at once (NOTE [Chunks])


def find_series(order, kind, succ, pred=None, group=None) -> list[Series]:
    """The series of the visible graph: ``order`` its unit ids (in snapshot order), ``kind``
    each unit's kind, ``succ`` each unit's edges out (towards the leaves; ``pred``, the edges
    in, is not read); ``group`` each unit's enclosing module group (a series never crosses a
    group's border).
    A series of many repeats holds its ``parts`` (NOTE [Splitting a long series]).

    The last two graphs searched are remembered (NOTE [Series found once]); what it returns is
    shared, not to be changed."""
    at = {u: i for i, u in enumerate(order)}.__getitem__
    kinds = list(map(kind.__getitem__, order))
    groups = list(map(group.__getitem__, order)) if group is not None else None
    return search(order, kinds, [list(map(at, succ[u])) for u in order], groups)


def search(order, kinds, succs, groups=None) -> list[Series]:
    """:func:`find_series` of lists in ``order``: each unit's kind, its edges out (the places
    in ``order`` of the units they lead to) and its group (None: no groups)."""
    key = (
        tuple(order),
        tuple(kinds),
        tuple(map(len, succs)),  # (the edges as two flat tuples, not a tuple
        tuple(chain.from_iterable(succs)),  # a unit: kept, those held 2 MB a graph)
        tuple(groups) if groups is not None else None,
    )
    found = _FOUND.pop(key, None)
    if found is None:
        found = _Folder(order, kinds, succs, groups).run()
        if len(_FOUND) >= 2:
            del _FOUND[next(iter(_FOUND))]
    _FOUND[key] = found  # (the last used comes last)
    return found


# NOTE [Series found once]
# Each click on a series or a group lays the graph out again, and the search for series went
# with it: over a second for 100,000 units, for the same graph each time while no group
# opens or closes. So the last two graphs searched (their units, kinds, edges and groups,
# compared whole: a tuple of them, hashed at C speed, costs a tenth of a search) keep what
# was found.
_FOUND: dict = {}


class _Folder:
    """One search for series (NOTE [Series]); units are numbered by their place in ``order``."""

    def __init__(self, order, kinds, succs, groups):
        self.order = order
        self.kind, self.succ = kinds, succs
        self.group = groups if groups is not None else [None] * len(order)
        self.sink = [not s for s in self.succ]
        self.series = []  # the series found, each with its parts
        self.every = []  # and each part, every series before its parts
        self.parent = {}  # id(series) -> the series it is a part of
        self._interned = {}

    # -- the dominator tree of the units that are not sinks ---------------------------------
    def dominators(self):
        """``idom`` (ROOT for a top, a unit whose edge in crosses a group's border, and a
        unit the search gave up on), the units in topological order, and each one's place."""
        n, succ, sink, group = len(self.order), self.succ, self.sink, self.group
        preds = [[] for _ in range(n)]
        indeg = [0] * n
        for u in range(n):
            if sink[u]:
                continue
            for v in succ[u]:
                if not sink[v]:
                    preds[v].append(u)
                    indeg[v] += 1
        topo = [u for u in range(n) if not sink[u] and not indeg[u]]
        for u in topo:  # (Kahn's algorithm: the list grows as it is read)
            for v in succ[u]:
                if not sink[v]:
                    indeg[v] -= 1
                    if not indeg[v]:
                        topo.append(v)
        place = [-1] * n
        for k, u in enumerate(topo):
            place[u] = k
        idom = [ROOT] * n
        budget = WALK_BUDGET * (n + 100)  # NOTE [Series]: the walks up are bounded
        for v in topo:
            ps = preds[v]
            if not ps or budget <= 0:
                continue
            gv = group[v]
            if group[ps[0]] != gv or (len(ps) > 1 and any(group[p] != gv for p in ps)):
                continue
            a = ps[0]
            for b in ps[1:]:
                while a != b and a != ROOT and b != ROOT and budget > 0:
                    budget -= 1
                    if place[a] > place[b]:
                        a = idom[a]
                    else:
                        b = idom[b]
                if a != b:
                    a = ROOT
                    break
            idom[v] = a
        return idom, topo

    def run(self):
        idom, topo = self.dominators()
        n = len(self.order)
        kids = [[] for _ in range(n)]
        tops = []
        for v in sorted(topo):  # each unit's dominator-tree children in snapshot order
            (tops if idom[v] == ROOT else kids[idom[v]]).append(v)
        size = [1] * n
        for v in reversed(topo):
            if idom[v] != ROOT:
                size[idom[v]] += size[v]
        self.kids, self.size = kids, size
        self.fold_siblings(tops)
        self.fold_stubs()
        self.absorb_sinks()
        self.fold_chunks()
        name = self.order.__getitem__
        for s in self.every:
            s["units"] = list(map(name, s["units"]))
        return self.series

    # -- sibling subtrees ----------------------------------------------------------------
    def fold_siblings(self, children):
        """Fold the identical dominator subtrees among ``children`` (all but the last made of
        each kind), then search what stays drawn."""
        buckets = {}
        for c in children:
            buckets.setdefault((self.group[c], self.kind[c], self.size[c]), []).append(c)
        folded = set()
        for bucket in buckets.values():
            if len(bucket) < MIN_REPEATS:
                continue
            same, trees = {}, {}
            for c in bucket:
                trees[c] = tree = self.subtree(c)
                same.setdefault(self.signature(tree), []).append(c)
            for copies in same.values():
                if len(copies) < MIN_REPEATS:
                    continue
                rest = copies[:-1]
                repeats = [trees[c] for c in rest]
                kinds = [self.kind[u] for u in repeats[0]]
                self.add_series(repeats, 1, kinds)
                folded.update(rest)
        for c in children:
            if c not in folded:
                self.fold_spine(c)

    def subtree(self, c):
        """The units of ``c``'s dominator subtree, ``c`` first, in depth-first order."""
        out, stack, kids = [], [c], self.kids
        while stack:
            u = stack.pop()
            out.append(u)
            stack.extend(reversed(kids[u]))
        return out

    def signature(self, units):
        """An int that is the same for two lists of units exactly when their kinds and the
        edges between them are (edges that leave the list do not count: the last step of a
        loop leads to a leaf where the others lead to the next step)."""
        kind, succ = self.kind, self.succ
        if len(units) == 1:  # (most clusters: one unit, no edge to itself)
            u = units[0]
            key = ((kind[u], (0,) if u in succ[u] else ()),)
        else:
            local = {u: k for k, u in enumerate(units)}
            key = tuple(
                [(kind[u], tuple([local[v] for v in succ[u] if v in local])) for u in units]
            )
        got = self._interned.get(key)
        if got is None:
            got = self._interned[key] = len(self._interned)
        return got

    # -- chains of clusters ----------------------------------------------------------------
    def fold_spine(self, top):
        """Follow the heaviest dominator-tree child down from ``top``: each unit on that path
        and the lighter subtrees hanging from it are one cluster; runs of clusters that repeat
        fold (NOTE [Series]); the light subtrees of the clusters left drawn are searched."""
        spine, u, kids, size = [top], top, self.kids, self.size
        while kids[u]:
            below = kids[u]
            if len(below) > 1:
                heavy = sorted((size[c] for c in below), reverse=True)
                if heavy[0] == heavy[1]:
                    break  # no heaviest (a stack of equal branches): all searched as siblings
                u = max(below, key=size.__getitem__)
            else:
                u = below[0]
            spine.append(u)
        clusters = []
        sigs = []
        signature = self.signature
        for k, s in enumerate(spine):
            if len(kids[s]) <= 1:  # (a plain chain: the unit alone)
                units = [s]
            else:
                nxt = spine[k + 1] if k + 1 < len(spine) else None
                units = [s]
                for c in kids[s]:
                    if c != nxt:
                        units += self.subtree(c)
            clusters.append(units)
            sigs.append(signature(units))
        drawn = []
        self.fold_runs(clusters, sigs, drawn)
        for k in drawn:
            nxt = spine[k + 1] if k + 1 < len(spine) else None
            light = [c for c in kids[spine[k]] if c != nxt]
            if light:
                self.fold_siblings(light)

    def fold_runs(self, clusters, sigs, drawn):
        """Fold the runs of repeating clusters along a spine (the best run, then the parts
        before and after it); ``drawn`` gets the places of the clusters left drawn."""
        todo = [(0, len(sigs))]
        while todo:
            lo, hi = todo.pop()
            best = _best_run(sigs[lo:hi])
            if best is None:
                drawn.extend(range(lo, hi))
                continue
            start, period, count = best
            start += lo
            end = start + period * count
            drawn.extend(range(start, start + period))  # the first repeat stays drawn
            repeats = [
                [u for c in clusters[k : k + period] for u in c]
                for k in range(start + period, end, period)
            ]
            self.add_series(repeats, period, [self.kind[u] for u in repeats[0]])
            todo += [(end, hi), (lo, start)]
        drawn.sort()

    # -- the series found -----------------------------------------------------------------
    def add_series(self, repeats, period, kinds, parent=None, part=False):
        """Record a series of ``repeats`` (lists of units), its parts first when it has too many
        to open at once (NOTE [Splitting a long series])."""
        units = [u for r in repeats for u in r]
        first = self.order[units[0]]
        entry = Series(
            id=f"series:{first}~{len(repeats)}" if part else f"series:{first}",
            units=units,
            period=period,
            count=len(repeats),
            kinds=list(reversed(kinds)),
            parts=[],
            chunk=False,
        )
        self.parent[id(entry)] = parent
        self.every.append(entry)
        if parent is None:
            self.series.append(entry)
        if len(repeats) > SPLIT:
            step = -(-len(repeats) // SPLIT)
            for k in range(0, len(repeats), step):
                if len(repeats[k : k + step]) > 1:
                    part = self.add_series(repeats[k : k + step], period, kinds, entry, True)
                    entry["parts"].append(part)
        return entry

    def fold_stubs(self):
        """Fold the units with no edges at all (NOTE [Stubs fold]): all but the last of each
        module group and kind."""
        reached = {v for out in self.succ for v in out}
        buckets = {}
        for u, out in enumerate(self.succ):
            if not out and u not in reached:
                buckets.setdefault((self.group[u], self.kind[u]), []).append(u)
        for bucket in buckets.values():
            if len(bucket) >= MIN_REPEATS:
                self.add_series([[u] for u in bucket[:-1]], 1, [self.kind[bucket[0]]])

    def fold_chunks(self):
        """Split what a module group draws (its units and series boxes), when over CHUNK, into
        SPLIT chunks of consecutive ones, each split in turn (NOTE [Chunks])."""
        inside = {u for s in self.series for u in s["units"]}
        items = {}  # group -> [(place, unit or series)]
        for u in range(len(self.order)):
            if u not in inside:
                items.setdefault(self.group[u], []).append((u, u))
        for s in self.series:
            first = min(s["units"])
            items.setdefault(self.group[first], []).append((first, s))
        chunked = set()
        for drawn in items.values():
            if len(drawn) <= CHUNK:
                continue
            drawn.sort(key=lambda x: x[0])
            chunked.update(id(x) for _, x in drawn if isinstance(x, dict))
            for piece in _slices([x for _, x in drawn]):
                if len(piece) > 1:
                    self.series.append(self.add_chunk(piece, None))
                elif isinstance(piece[0], dict):
                    chunked.discard(id(piece[0]))  # (a series alone stays as it was)
        self.series = [s for s in self.series if id(s) not in chunked]

    def add_chunk(self, items, parent):
        """Record a chunk of ``items`` (units and series, NOTE [Chunks]) in ``parent``."""
        units = [u for x in items for u in (x["units"] if isinstance(x, dict) else (x,))]
        common = Counter(self.kind[u] for u in units).most_common()
        entry = Series(
            id=f"chunk:{self.order[min(units)]}~{len(items)}",
            units=units,
            period=1,
            count=len(items),
            kinds=[k for k, _ in common[:3]] + (["…"] if len(common) > 3 else []),
            parts=[],
            chunk=True,
        )
        self.parent[id(entry)] = parent
        self.every.append(entry)
        for piece in _slices(items):
            if len(piece) > 1:
                entry["parts"].append(self.add_chunk(piece, entry))
            elif isinstance(piece[0], dict):  # a series: a part of its chunk
                entry["parts"].append(piece[0])
                self.parent[id(piece[0])] = entry
        return entry

    def absorb_sinks(self):
        """Put each sink (a leaf) that only units of one series lead to into that series (the
        innermost part that holds them all), so that a fan's 2,000 weights fold with it."""
        owner = {}
        for s in self.every:  # a series comes before its parts: the innermost wins
            owner.update(dict.fromkeys(s["units"], s))
        preds = {}
        for u, out in enumerate(self.succ):
            for v in out:
                if self.sink[v]:
                    preds.setdefault(v, []).append(u)
        found = {}  # id(top series) -> [(sink, the innermost series holding its preds)]
        for v in sorted(preds):
            held = list(map(owner.get, preds[v]))
            if None in held:
                continue
            s = self.common(list({id(h): h for h in held}.values()))
            if s is not None:
                top = s
                while self.parent[id(top)] is not None:
                    top = self.parent[id(top)]
                found.setdefault(id(top), (top, []))[1].append((v, s))
        for top, sinks in found.values():
            if len(sinks) < top["count"]:  # not one a repeat: a loop's first input stays out
                continue
            for v, s in sinks:
                while s is not None:
                    s["units"].append(v)
                    s = self.parent[id(s)]

    def common(self, holders):
        """The innermost series that is or holds each of ``holders``."""
        chains = []
        for s in holders:
            chain = []
            while s is not None:
                chain.append(s)
                s = self.parent[id(s)]
            chains.append(chain)
        outer = [{id(s) for s in c} for c in chains[1:]]
        return next((s for s in chains[0] if all(id(s) in o for o in outer)), None)


def shown_series(found, expanded):
    """The series of ``found`` that show with the series ``expanded``: each series, and the
    parts of an expanded one (recursively), its parts before it, so that a caller that lets a
    later series take over the units of an earlier one folds what the user sees."""
    out = []
    for s in found:
        if s["id"] in expanded:
            out += shown_series(s["parts"], expanded)
        out.append(s)
    return out


def _slices(items):
    """``items`` in at most SPLIT runs of consecutive ones, as even as can be."""
    step = -(-len(items) // SPLIT)
    return [items[k : k + step] for k in range(0, len(items), step)]


def _best_run(kinds):
    """(start, period, count) of the run covering most units (ties: the shorter period, then
    the earlier start), or None when no block repeats ``MIN_REPEATS`` times."""
    n = len(kinds)
    best = None
    for p in range(1, min(MAX_PERIOD, n // MIN_REPEATS) + 1):
        i = 0
        while i + p < n:
            if kinds[i] != kinds[i + p]:
                i += 1
                continue
            j = i
            while j + p < n and kinds[j] == kinds[j + p]:
                j += 1
            # kinds[i:j + p] has period p: (j - i + p) // p whole blocks
            count = (j - i + p) // p
            if count >= MIN_REPEATS and _primitive(kinds[i : i + p]):
                covered = count * p
                if best is None or covered > best[0] or (covered == best[0] and p < best[2]):
                    best = (covered, i, p, count)
            i = j + 1
    if best is None:
        return None
    _, start, period, count = best
    return start, period, count


def _primitive(block):
    """Whether ``block`` is not itself a repeat of a shorter block (``A B A B`` is ``A B``)."""
    n = len(block)
    return not any(n % q == 0 and block == block[:q] * (n // q) for q in range(1, n))
