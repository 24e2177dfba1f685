"""Where each edge's gradient label goes: a free place beside the edge (NOTE [Edge labels] in
layout.py). Geometry on the drawn picture: the edges as ``edge_path`` draws them (curves
flattened), the boxes, the group frames and titles, and the labels already placed, all kept
in a grid of square cells so that a candidate is tested against what is near it only (NOTE
[Label costs in bulk])."""

from __future__ import annotations

from itertools import chain, islice, repeat

import numpy as np

__all__ = ["place_labels"]

LABEL_CHAR = 5.5  # a character of the 9 px monospace edge labels (CHAR_W * 9 / 12, rounded up)
LABEL_UP = 8.0  # from the baseline to the top of the digits, with the white halo
LABEL_DOWN = 2.0  # from the baseline down (a comma), with the halo
LABEL_PAD = 1.0  # the halo either side
GAP = 4.0  # from the edge to the near end of its label
CLEAR = 3.0  # another edge nearer than this to a label could seem to be the label's
NEAR_COST = 0.05  # per pixel of another edge that near (a pixel crossing costs 1)
TITLE_CHAR = 6.1  # a character of the 10 px group titles (the widget adds "▾ ")
CELL = 48.0  # the grid's cells, at least; see _Picture
CELL_PIECES = 2  # the mean drawn piece is at most this many cells long (_Picture)
CURVE_STEPS = 8
FRACTIONS = (0.75, 0.6, 0.85, 0.5, 0.35, 0.25, 0.15)
MAX_SEGMENTS = 6  # of a long edge's segments, the first and last three carry candidates
TRIES = 12  # candidates tried per label, on average, at most (the cost of a crowded picture)
WORST = 60.0  # a label meeting this much is as bad as any worse (and found sooner)
FEW = 8  # the candidates a label tries once those are spent: the 8 around its first point
BULK = 32  # candidates costed at once, of labels with no free one among the first FEW
BULK_FROM = 32  # labels from which candidates are costed in bulk (fewer: the walk is sooner)
CROWD = 64  # items near a candidate past which it is walked, not costed in bulk
CHUNK = 8_192  # candidates costed in bulk at once (at most CROWD pairs each in memory)
BOX = -2  # the owner of a box (of a group frame's line: -1, of an edge's line: the edge)
WALK_PER_LABEL = (
    3_500  # items the walks may visit, per label (NOTE [A budget for crowded pictures])
)
WALK_MAX = 4_000_000  # and in all, whatever the picture's size

# NOTE [A budget for crowded pictures]
# A walk visits every item in the cells a candidate touches, and where many edges share a
# path (the edges from the steps of an unrolled RNN down to its weight ``W``, drawn one over
# another) each cell there holds hundreds of them, so that the items visited grow as the
# square of the graph. So the walks share a budget: WALK_PER_LABEL items a label, at most
# WALK_MAX in all (about a second). Once it is spent, a label takes the first of its
# candidates whose cost is known without a walk (its old place if free, else one costed in
# bulk, else the first): placement is still linear in the picture, and pictures below the
# budget (all the graphs of tests/notebook/test_edge_labels.py, the crowded fan of 300 edges
# into one box included) are placed as if there were none. The folded view a graph opens
# with is far below. The grid's cells grow with the picture's mean drawn piece
# (CELL_PIECES), so that a wide picture of long edges is cut into a few items a piece rather
# than many: less memory and time at the peak, for a few labels placed otherwise.
# ``tests/benchmarks/notebook_shapes.py`` prints the layout's time and memory on such graphs.

# NOTE [Label costs in bulk]
# What a candidate meets is a sum, walked cell by cell: the cells in (cx, cy) order, each
# cell's items in the order they were added (the picture first, then the labels as they are
# placed), an item in several cells counted in the first; the walk stops once the sum passes
# the best so far. Done all in Python, that would cost many times the rest of the layout on
# pictures of hundreds of boxes, building the grid most of all. So NumPy builds the grid (the edges
# flattened, the long lines cut, the items bucketed) and, where there are BULK_FROM labels or
# more, sums in batches what candidates meet of the picture, all known before any label is
# placed: every label's old place, every label's first FEW candidates (made in NumPy too,
# rounded as Python rounds), and up to the BULK-th for those labels with no free one among
# the first FEW. The labels placed so far are few and change as labels are placed: a small
# grid of them in Python. Candidates past those, and those with more than CROWD items near,
# are walked in Python, over rows made as the walk reaches a cell: in a crowded place the
# walk stops after an item or two, where NumPy, summing everything, does not.
# Every sum is the walk's to the last bit, and so every label's place is what it was (equally
# bad places are common in a crowded picture, and the last bit decides between them: with
# the sums in another order, 2 of 1,201 labels of 300 edges into one box move). So the pairs
# (candidate, item) come in the walk's order and ``np.bincount`` adds them in that order; a
# candidate that meets labels and the picture both is walked; a sum carried past the best so
# far is no smaller than where the walk stopped, so it loses as the walk's did; lengths are
# Python's ``** 0.5`` (C's pow), not NumPy's (a square root, now and then a bit apart).
# tests/notebook/test_edge_labels.py checks that bulk and walk put every label at one place.


def label_box(lx, ly, text):
    """The box ``(left, top, right, bottom)`` that a label drawn at ``lx, ly`` (the start of
    its baseline) covers, halo included."""
    return (
        lx - LABEL_PAD,
        ly - LABEL_UP,
        lx + len(text) * LABEL_CHAR + LABEL_PAD,
        ly + LABEL_DOWN,
    )


def _weights(t):
    """The weights of a cubic Bezier curve's four control points at ``t``."""
    u = 1 - t
    return u * u * u, 3 * u * u * t, 3 * u * t * t, t * t * t


STEPS = np.array([_weights(k / CURVE_STEPS) for k in range(1, CURVE_STEPS + 1)])


def _segment_point(p, i, f):
    """The point at ``f`` of segment ``i`` of an edge's points, as drawn (segments 0, 2, ...
    are curves between layers, 1, 3, ... straight lines through dummy boxes)."""
    x0, y0, x1, y1 = p[2 * i], p[2 * i + 1], p[2 * i + 2], p[2 * i + 3]
    if i % 2 == 0:
        # the curve edge_path draws from a box's bottom to a top:
        # (x0, y0), (x0, y0 + dy), (x1, y1 - dy), (x1, y1)
        dy = max(18.0, (y1 - y0) / 2)
        a, b, m, d = _weights(f)
        return a * x0 + b * x0 + m * x1 + d * x1, a * y0 + b * (y0 + dy) + m * (y1 - dy) + d * y1
    return x0 + f * (x1 - x0), y0 + f * (y1 - y0)


def _edge_pieces(edges):
    """Every edge as drawn, in straight pieces: rows edge, x0, y0, x1, y1 (an edge's segments
    in order, a curve's CURVE_STEPS pieces in order: ``_segment_point`` at k / CURVE_STEPS)."""
    rows = [
        (k, i % 2, *e["points"][2 * i : 2 * i + 4])
        for k, e in enumerate(edges)
        for i in range(len(e["points"]) // 2 - 1)
    ]
    k, straight, x0, y0, x1, y1 = np.array(rows, dtype=float).reshape(-1, 6).T
    steps = np.where(straight == 1, 1, CURVE_STEPS)
    seg = np.repeat(np.arange(len(k)), steps)
    j = np.arange(len(seg)) - np.repeat(np.cumsum(steps) - steps, steps)
    k, straight, x0, y0, x1, y1 = (c[seg] for c in (k, straight, x0, y0, x1, y1))
    dy = np.maximum(18.0, (y1 - y0) / 2)
    by, cy = y0 + dy, y1 - dy

    def point(w):
        a, b, m, d = w.T
        return a * x0 + b * x0 + m * x1 + d * x1, a * y0 + b * by + m * cy + d * y1

    ex, ey = point(STEPS[j])
    sx, sy = point(STEPS[np.maximum(j - 1, 0)])
    curve, inner = straight == 0, (straight == 0) & (j > 0)
    return np.stack(
        [
            k,
            np.where(inner, sx, x0),
            np.where(inner, sy, y0),
            np.where(curve, ex, x1),
            np.where(curve, ey, y1),
        ]
    )


def _clip_many(x0, y0, dx, dy, length, left, top, right, bottom):
    """``_clip`` on arrays."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lo, hi = (x0 - left) / -dx, (right - x0) / dx
        t0 = np.where(dx == 0, 0.0, np.minimum(lo, hi))
        t1 = np.where(dx == 0, 1.0, np.maximum(lo, hi))
        lo, hi = (y0 - top) / -dy, (bottom - y0) / dy
        t0 = np.maximum(np.maximum(t0, np.where(dy == 0, 0.0, np.minimum(lo, hi))), 0.0)
        t1 = np.minimum(np.minimum(t1, np.where(dy == 0, 1.0, np.maximum(lo, hi))), 1.0)
    out = (dx == 0) & ((x0 < left) | (x0 > right)) | (dy == 0) & ((y0 < top) | (y0 > bottom))
    return np.where(~out & (t1 > t0), (t1 - t0) * length, 0.0)


def _clip(x0, y0, dx, dy, length, left, top, right, bottom):
    """The length inside the box of the segment from ``x0, y0`` by ``dx, dy``, ``length``
    long (Liang-Barsky: ``t0, t1`` where it enters and leaves the box's slab in x, in y)."""
    if dx:
        lo, hi = (x0 - left) / -dx, (right - x0) / dx
        t0, t1 = (lo, hi) if lo < hi else (hi, lo)
    elif x0 < left or x0 > right:
        return 0.0
    else:
        t0, t1 = 0.0, 1.0
    if dy:
        lo, hi = (y0 - top) / -dy, (bottom - y0) / dy
        e0, e1 = (lo, hi) if lo < hi else (hi, lo)
    elif y0 < top or y0 > bottom:
        return 0.0
    else:
        e0, e1 = 0.0, 1.0
    if e0 > t0:  # t0 = max(t0, e0, 0.0), t1 = min(t1, e1, 1.0), without the calls
        t0 = e0
    if t0 < 0.0:
        t0 = 0.0
    if e1 < t1:
        t1 = e1
    if t1 > 1.0:
        t1 = 1.0
    return (t1 - t0) * length if t1 > t0 else 0.0


def _cells(lo, hi, cell):
    """The first and last cell (of side ``cell``) of the spans ``lo`` to ``hi``."""
    return np.floor_divide(lo, cell).astype(np.int64), np.floor_divide(hi, cell).astype(np.int64)


def _spread(counts):
    """For runs of ``counts`` items: each item's run, and its place in the run."""
    run = np.repeat(np.arange(len(counts)), counts)
    return run, np.arange(len(run)) - np.repeat(np.cumsum(counts) - counts, counts)


KEY = 1 << 32  # a cell's key: cx * KEY + cy


class _Picture:
    """The picture less its labels: boxes (with their badges, and the group titles) and lines
    (the edges as drawn, their arrowheads, the group frames), bucketed by the square cells of
    side ``cell`` that their bounds touch, long lines cut to four cells first; and the labels
    as they are placed. The cell is CELL, or more where the lines are long (edges across a
    picture 100,000 px wide), so that the grid holds a few entries per line whatever the
    picture's size. Items are numbered in the order they were added."""

    def __init__(self, nodes, edges, groups, hooked):
        items = []  # (owner, x0, y0, x1, y1, cut); a box's x0, y0, x1, y1: left, top, ...
        for b in nodes:
            x, y, w, h = b["x"], b["y"], b["w"], b["h"]
            extra = 6.0 if b["kind"] == "series" else 0.0  # the stack behind a series box
            items.append((BOX, x, y, x + w + extra, y + h + extra, 0))
            if b["kind"] == "node":
                items.append((BOX, x - 6, y - 6, x + 10, y + 10, 0))  # the step number's badge
            if b["id"] in hooked:
                items.append((BOX, x + w - 9, y - 5, x + w + 5, y + 9, 0))  # the hooks' badge
        for g in groups:
            x, y, w, h = g["x"], g["y"], g["w"], g["h"]
            for side in ((x, y, x + w, y), (x + w, y, x + w, y + h), (x, y + h, x + w, y + h)):
                items.append((-1, *side, 1))
            items.append((-1, x, y, x, y + h, 1))
            title = x + 8 + (len(g["label"]) + 2) * TITLE_CHAR
            items.append((BOX, x + 8, y + 3, title, y + 16, 0))
        pieces = self.pieces = _edge_pieces(edges)
        count = pieces.shape[1]
        length = sum((abs(pieces[3] - pieces[1]) + abs(pieces[4] - pieces[2])).tolist())  # L1
        self.cell = cell = max(CELL, length / (CELL_PIECES * count)) if count else CELL
        # each edge's pieces, then its arrowhead (svg.py's marker at a width of 1.2: 8.4 px
        # long, 8.4 wide), less the halo and a glyph's side bearing all round
        x, y = np.array([e["points"][-2:] for e in edges], dtype=float).reshape(-1, 2).T
        k, no = np.arange(len(edges), dtype=float), np.zeros(len(edges))
        heads = [
            (k, x - 2.7, y - 7.4, x, y - 1, no),
            (k, x + 2.7, y - 7.4, x, y - 1, no),
            (k, x - 2.7, y - 7.4, x + 2.7, y - 7.4, no),
        ]
        lines = np.concatenate(
            [np.vstack([pieces, np.ones(count)])] + [np.stack(h) for h in heads], 1
        )
        lines = lines[:, np.argsort(lines[0], kind="stable")]
        table = np.concatenate([np.array(items, dtype=float).reshape(-1, 6).T, lines], 1)
        # a line cut into n pieces no longer than four cells: x0 + i * (x1 - x0) / n, ...
        n = np.floor_divide(
            np.maximum(abs(table[3] - table[1]), abs(table[4] - table[2])), 4 * cell
        )
        n = np.where(table[5] == 1, n + 1, 1).astype(np.int64)
        at, i = _spread(n)
        owner, x0, y0, x1, y1, cut = table[:, at]
        n = n[at].astype(float)
        cut = cut == 1
        x0, y0, x1, y1 = (
            np.where(cut, x0 + i * ((x1 - x0) / n), x0),
            np.where(cut, y0 + i * ((y1 - y0) / n), y0),
            np.where(cut, x0 + (i + 1) * ((x1 - x0) / n), x1),
            np.where(cut, y0 + (i + 1) * ((y1 - y0) / n), y1),
        )
        self.box = box = owner == BOX
        self.owner = owner.astype(np.int64)
        self.x0, self.y0, self.dx, self.dy = x0, y0, x1 - x0, y1 - y0
        squares = (self.dx * self.dx + self.dy * self.dy).tolist()
        self.length = np.array(list(map(pow, squares, repeat(0.5))))  # C's pow: see the NOTE
        self.left = np.where(box, x0, np.minimum(x0, x1))
        self.top = np.where(box, y0, np.minimum(y0, y1))
        self.right = np.where(box, x1, np.maximum(x0, x1))
        self.bottom = np.where(box, y1, np.maximum(y0, y1))
        cx0, cx1 = _cells(self.left, self.right, cell)
        cy0, cy1 = _cells(self.top, self.bottom, cell)
        # each cell's items in order, and where each item's first cell is
        # (millions of entries in a picture 250,000 px wide: no more arrays of them at once
        # than needed, each freed once used)
        span = cy1 - cy0 + 1
        item, o = _spread((cx1 - cx0 + 1) * span)
        column, row = np.divmod(o, span[item])
        del o
        key = (cx0[item] + column) * KEY + (cy0[item] + row)
        first = ((column == 0) | 2 * (row == 0)).astype(np.int8)
        del column, row
        order = np.argsort(key, kind="stable")
        key, self.item = key[order], item[order]
        del item
        # each cell's items' bounds, and whether the cell is the item's first column (1), row (2)
        self.csr_first = first[order]
        del first, order
        self.csr = [c[self.item] for c in (self.left, self.right, self.top, self.bottom)]
        starts = np.flatnonzero(np.diff(key)) + 1 if len(key) else np.zeros(0, np.int64)
        self.starts = np.concatenate([np.zeros(min(1, len(key)), np.int64), starts])
        self.counts = np.diff(np.append(self.starts, len(key)))
        self.keys = key[self.starts]
        del key
        self.cx0, self.cy0 = cx0, cy0
        # the walk's view of the items, as rows (left, top, right, bottom, owner, x0, y0, dx,
        # dy, length, its number if it is in several cells else -1), made as it reaches them
        shared = np.where((cx1 > cx0) | (cy1 > cy0), np.arange(len(owner)), -1)
        columns = (self.left, self.top, self.right, self.bottom, owner, x0, y0, self.dx)
        self.table = np.stack(columns + (self.dy, self.length, shared), axis=1)
        self.rows = [None] * len(owner)
        self.made = np.zeros(len(owner), bool)
        self.where = None
        self.cells = {}  # (cx, cy) -> the rows there, made as the walk reaches them
        self.labels = _Labels(cell)
        self.spent = (
            0  # the items walked, and how many may be (NOTE [A budget for crowded pictures])
        )
        self.budget = WALK_MAX

    def costs(self, left, top, right, bottom, owners):
        """What labels with ``boxes`` (rows left, top, right, bottom) of the edges ``owners``
        meet of the picture (all but the labels), as the walk sums it (:meth:`cost`); in
        batches of CHUNK candidates, so that the pairs (candidate, item) in memory at once
        stay a few million whatever the picture's size (each candidate's sum is its own)."""
        owners = np.asarray(owners, dtype=np.int64)
        if len(left) > CHUNK:
            out = []
            for i in range(0, len(left), CHUNK):
                part = slice(i, i + CHUNK)
                out += self._costs(left[part], top[part], right[part], bottom[part], owners[part])
            return out
        return self._costs(left, top, right, bottom, owners)

    def _costs(self, left, top, right, bottom, owners):
        nl, nt, nr, nb = left - CLEAR, top - CLEAR, right + CLEAR, bottom + CLEAR
        qx0, qx1 = _cells(nl, nr, self.cell)
        qy0, qy1 = _cells(nt, nb, self.cell)
        # each candidate's cells, in order; then the items in each
        span = qy1 - qy0 + 1
        cand, o = _spread((qx1 - qx0 + 1) * span)
        dx_, dy_ = o // span[cand], o % span[cand]
        keys = (qx0[cand] + dx_) * KEY + qy0[cand] + dy_
        at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        many = np.where(self.keys[at] == keys, self.counts[at], 0)
        crowded = np.bincount(cand, weights=many, minlength=len(left)) > CROWD
        many[crowded[cand]] = 0
        ends = np.cumsum(many)
        where = np.arange(ends[-1] if len(ends) else 0) + np.repeat(
            self.starts[at] - ends + many, many
        )
        c = np.repeat(cand, many)
        # in the first of its cells that the candidate's walk reaches, and near the box
        need = np.repeat((dx_ > 0) | 2 * (dy_ > 0), many).astype(np.int8)
        keep = (self.csr_first[where] & need) == need
        l, r, t, b = (a[where] for a in self.csr)
        keep &= (l < nr[c]) & (r > nl[c]) & (t < nb[c]) & (b > nt[c])
        keep = np.flatnonzero(keep)
        item, c = self.item[where[keep]], c[keep]
        box = self.box[item]
        lines, boxes = item[~box], item[box]
        cl, cb = c[~box], c[box]
        args = self.x0[lines], self.y0[lines], self.dx[lines], self.dy[lines], self.length[lines]
        inside = _clip_many(*args, left[cl], top[cl], right[cl], bottom[cl])
        near = (inside == 0) & (self.owner[lines] >= 0) & (self.owner[lines] != owners[cl])
        near_cost = NEAR_COST * _clip_many(
            *(a[near] for a in args), nl[cl][near], nt[cl][near], nr[cl][near], nb[cl][near]
        )
        inside[near] = near_cost
        w = np.minimum(self.right[boxes], right[cb]) - np.maximum(self.left[boxes], left[cb])
        h = np.minimum(self.bottom[boxes], bottom[cb]) - np.maximum(self.top[boxes], top[cb])
        value = np.empty(len(item))
        value[~box] = inside
        value[box] = np.where((w > 0) & (h > 0), w * h / (LABEL_UP + LABEL_DOWN), 0.0)
        total = np.bincount(c, weights=value, minlength=len(left)).tolist()
        return [None if out else cost for cost, out in zip(total, crowded.tolist())]

    def beside(self, ks, boxes):
        """Whether the first curve of each edge ``ks`` passes through its box in ``boxes``
        made 2 * GAP larger all round."""
        ks = np.array(ks, dtype=np.int64)
        first = np.searchsorted(self.pieces[0], ks)
        at = (first[:, None] + np.arange(CURVE_STEPS)).ravel()
        c = np.repeat(np.arange(len(ks)), CURVE_STEPS)
        mine = at < self.pieces.shape[1]
        at, c = at[mine], c[mine]
        mine = self.pieces[0][at] == ks[c]
        at, c = at[mine], c[mine]
        _, x0, y0, x1, y1 = self.pieces[:, at]
        dx, dy = x1 - x0, y1 - y0
        left, top, right, bottom = np.array(boxes, dtype=float).reshape(-1, 4).T[:, c]
        g = 2 * GAP
        inside = _clip_many(
            x0, y0, dx, dy, np.hypot(dx, dy), left - g, top - g, right + g, bottom + g
        )
        return (np.bincount(c, weights=inside > 0, minlength=len(ks)) > 0).tolist()

    def _cell(self, cx, cy):
        if self.where is None:
            stops = (self.starts + self.counts).tolist()
            self.where = dict(zip(self.keys.tolist(), zip(self.starts.tolist(), stops)))
        start, stop = self.where.get(cx * KEY + cy, (0, 0))
        items = self.item[start:stop]
        new = items[~self.made[items]]
        self.made[new] = True
        rows = self.rows
        for i, row in zip(new.tolist(), map(tuple, self.table[new].tolist())):
            rows[i] = row
        out = self.cells[cx, cy] = [rows[i] for i in items.tolist()]
        return out

    def cost(self, left, top, right, bottom, own, limit):
        """What a label of edge ``own`` with this box meets: the length of the lines inside
        the box, the overlapping area of boxes (and labels) over the label's height, and a
        little for each other edge that passes within CLEAR of it (whose label it could
        seem to be); stops past ``limit``."""
        nl, nt, nr, nb = left - CLEAR, top - CLEAR, right + CLEAR, bottom + CLEAR
        total, seen, seen_labels = 0.0, set(), set()
        cells, cell, labels = self.cells, self.cell, self.labels.cells
        for cx in range(int(nl // cell), int(nr // cell) + 1):
            for cy in range(int(nt // cell), int(nb // cell) + 1):
                entries = cells.get((cx, cy))
                if entries is None:
                    entries = self._cell(cx, cy)
                self.spent += len(entries)
                for a, b, c, d, owner, x0, y0, dx, dy, length, key in entries:
                    if a >= nr or c <= nl or b >= nb or d <= nt:
                        continue
                    if key >= 0:
                        if key in seen:
                            continue
                        seen.add(key)
                    if owner == BOX:
                        w = (c if c < right else right) - (a if a > left else left)
                        h = (d if d < bottom else bottom) - (b if b > top else top)
                        if w <= 0 or h <= 0:
                            continue
                        total += w * h / (LABEL_UP + LABEL_DOWN)
                    elif a >= left and c <= right and b >= top and d <= bottom:
                        total += length  # all inside: what _clip finds
                    else:
                        if a > right or c < left or b > bottom or d < top:
                            inside = 0.0  # what _clip finds
                        else:
                            inside = _clip(x0, y0, dx, dy, length, left, top, right, bottom)
                        if inside:
                            total += inside
                        elif owner < 0 or owner == own:
                            continue
                        elif a > nl and c < nr and b > nt and d < nb:
                            total += NEAR_COST * length  # all of it near: what _clip finds
                        else:
                            total += NEAR_COST * _clip(x0, y0, dx, dy, length, nl, nt, nr, nb)
                    if total >= limit:
                        return total
                for a, b, c, d, key in labels.get((cx, cy), ()):  # added after the rest
                    if a >= nr or c <= nl or b >= nb or d <= nt or key in seen_labels:
                        continue
                    seen_labels.add(key)
                    w, h = min(c, right) - max(a, left), min(d, bottom) - max(b, top)
                    if w > 0 and h > 0:
                        total += w * h / (LABEL_UP + LABEL_DOWN)
                        if total >= limit:
                            return total
        return total


class _Labels:
    """The labels placed so far, alone, in a grid of the picture's cells."""

    def __init__(self, cell):
        self.cell = cell
        self.cells = {}
        self.count = 0

    def add(self, box):
        left, top, right, bottom = box
        cell = self.cell
        entry = (*box, self.count)
        self.count += 1
        for cx in range(int(left // cell), int(right // cell) + 1):
            for cy in range(int(top // cell), int(bottom // cell) + 1):
                self.cells.setdefault((cx, cy), []).append(entry)

    def cost(self, left, top, right, bottom):
        """What a label with this box meets of the others, summed as the walk sums it."""
        nl, nt, nr, nb = left - CLEAR, top - CLEAR, right + CLEAR, bottom + CLEAR
        cells, cell = self.cells, self.cell
        total, seen = 0.0, set()
        for cx in range(int(nl // cell), int(nr // cell) + 1):
            for cy in range(int(nt // cell), int(nb // cell) + 1):
                for a, b, c, d, key in cells.get((cx, cy), ()):
                    if a >= nr or c <= nl or b >= nb or d <= nt or key in seen:
                        continue
                    seen.add(key)
                    w, h = min(c, right) - max(a, left), min(d, bottom) - max(b, top)
                    if w > 0 and h > 0:
                        total += w * h / (LABEL_UP + LABEL_DOWN)
        return total


def _old_place(p):
    """Where the labels were before this module: three quarters down the first segment's
    chord, (4, 3) to the right."""
    x0, y0, x1, y1 = p[:4]
    return x0 + 0.75 * (x1 - x0) + GAP, y0 + 0.75 * (y1 - y0) + 3


def _candidates(p, width, skip=0):
    """Label anchors for an edge through points ``p`` whose label is ``width`` wide, best
    first: around points of the drawn edge (FRACTIONS of its first segment, its last, its
    second, ...: six at most) beside it, in its corners, above and below it, GAP away, then
    twice as far; rounded to 0.1 px. The first ``skip`` points' are left out (_first_few
    has them)."""
    n = len(p) // 2 - 1
    order = []
    for k in range(MAX_SEGMENTS // 2):
        order += [i for i in (k, n - 1 - k) if 0 <= i < n and i not in order]
    points = ((gap, i, f) for gap in (GAP, 2 * GAP) for i in order for f in FRACTIONS)
    for gap, i, f in islice(points, skip, None):
        up, down = LABEL_DOWN + gap, LABEL_UP + gap  # baselines clear of the point by gap
        px, py = _segment_point(p, i, f)
        right, left = round(px + gap, 1), round(px - gap - width, 1)
        mid = round(px - width / 2, 1)
        yield right, round(py + 3, 1)  # beside it, where a steep edge leaves room
        yield left, round(py + 3, 1)
        yield right, round(py - up, 1)  # in the corners, where a slanted one does
        yield left, round(py + down, 1)
        yield left, round(py - up, 1)
        yield right, round(py + down, 1)
        yield mid, round(py - up, 1)  # above and below, for a flat one
        yield mid, round(py + down, 1)


def _border(box, width, height):
    """How far a label's box is past the picture's border (summed over the sides)."""
    out = max(0.0, -box[0]) + max(0.0, box[2] - width)
    out += max(0.0, -box[1]) + max(0.0, box[3] - height)
    return out


def place_labels(nodes, edges, groups, width, height, hooked=()):
    """Set ``lx, ly`` (the start of the label's baseline) on each of the layout's ``edges``
    that has a label (None on the others), so that no label meets an edge or its arrowhead, a
    box (and its badges: the stepper's step number on a node's corner, the count of hooks on
    the boxes ``hooked``), a group's frame or title, another label, or the picture's border,
    where such a place is among the candidates; else the place meeting the least (NOTE [Edge
    labels] in layout.py)."""
    for e in edges:
        e["lx"] = e["ly"] = None
    labelled = [k for k, e in enumerate(edges) if e["label"]]
    if not labelled:
        return
    picture = _Picture(nodes, edges, groups, hooked)
    picture.budget = min(WALK_MAX, WALK_PER_LABEL * len(labelled))
    labels = picture.labels
    # first the labels whose old place is free and beside their edge, so that no label moves
    # into another's; then the others, each to its best candidate
    old = {k: _old_place(edges[k]["points"]) for k in labelled}
    old = {k: (round(x, 1), round(y, 1)) for k, (x, y) in old.items()}
    boxes = {k: label_box(*old[k], edges[k]["label"]) for k in labelled}
    near = picture.beside(labelled, [boxes[k] for k in labelled])
    beside = [k for k, yes in zip(labelled, near) if yes]  # else far from a slanted curve
    placed = {}
    bulk = len(labelled) >= BULK_FROM
    sides = np.array([boxes[k] for k in beside], dtype=float).reshape(-1, 4).T
    static = picture.costs(*sides, beside) if bulk else [None] * len(beside)
    for k, cost in zip(beside, static):
        box = boxes[k]
        if _border(box, width, height):
            continue
        if cost is None:
            if picture.spent >= picture.budget:
                continue  # (NOTE [A budget for crowded pictures])
            cost = picture.cost(*box, k, 1e-9)
        elif not cost:
            cost = labels.cost(*box)
        if not cost:
            placed[k] = old[k]
            labels.add(box)
    todo = [k for k in labelled if k not in placed]
    costed = {k: [] for k in todo}  # its candidates costed in bulk (see _first_few)
    if bulk:
        _first_few(picture, edges, todo, costed, 0, 1, width, height)
        more = [k for k in todo if not any(_free(costed[k]))]
        _first_few(picture, edges, more, costed, 1, BULK // 8, width, height)
    budget = TRIES * len(labelled)
    for k in todo:
        text = edges[k]["label"]
        done = sum(stop - start for _, start, stop in costed[k]) // 8  # points
        first = (zip(*(c[start:stop] for c in cs)) for cs, start, stop in costed[k])
        rest = _candidates(edges[k]["points"], len(text) * LABEL_CHAR, done)
        rest = ((x, y, None, None, None, None, None, None) for x, y in rest)
        tries = islice(chain(chain.from_iterable(first), rest), max(FEW, budget))
        best, tried = _best(picture, labels, k, tries, text, width, height)
        placed[k] = best
        budget -= tried
    for k in labelled:
        edges[k]["lx"], edges[k]["ly"] = placed[k]


def _round(x):
    """``round(v, 1)`` of each of ``x`` as Python rounds (the double nearest the decimal
    rounded half to even); near a tie, by Python itself."""
    y = x * 10.0
    out = np.rint(y) / 10.0
    tie = abs(y - np.floor(y) - 0.5) < 1e-6
    out[tie] = [round(v, 1) for v in x[tie].tolist()]
    return out


def _first_few(picture, edges, ks, costed, start, stop, width, height):
    """The candidates around points ``start`` to ``stop`` (of FRACTIONS of the first
    segment, GAP away) of the labels of the edges ``ks``, as ``_candidates`` yields them,
    costed in one batch (NOTE [Label costs in bulk]): ``costed[k]`` gets (columns, start,
    stop): x, y, the box's left, top, right, bottom, how far past the border, what it meets of
    the picture (None where the walk is to tell), in columns from ``start`` to ``stop``."""
    ks = [k for k in ks if len(edges[k]["points"]) >= 4]
    if not ks:
        return
    x0, y0, x1, y1 = np.array([edges[k]["points"][:4] for k in ks], dtype=float).T[:, :, None]
    width_ = np.array([len(edges[k]["label"]) * LABEL_CHAR for k in ks])[:, None]
    a, b, m, d = np.array([_weights(f) for f in FRACTIONS[start:stop]]).T  # _segment_point
    dy = np.maximum(18.0, (y1 - y0) / 2)
    px = a * x0 + b * x0 + m * x1 + d * x1
    py = a * y0 + b * (y0 + dy) + m * (y1 - dy) + d * y1
    up, down = LABEL_DOWN + GAP, LABEL_UP + GAP
    right, left = _round(px + GAP), _round(px - GAP - width_)
    mid, level = _round(px - width_ / 2), _round(py + 3)
    above, below = _round(py - up), _round(py + down)
    x = np.stack([right, left, right, left, left, right, mid, mid], axis=2)
    y = np.stack([level, level, above, below, above, below, above, below], axis=2)
    n = x.shape[1] * 8
    x, y = x.reshape(len(ks), n), y.reshape(len(ks), n)
    boxes = x - LABEL_PAD, y - LABEL_UP, x + width_ + LABEL_PAD, y + LABEL_DOWN
    out = np.maximum(0.0, -boxes[0]) + np.maximum(0.0, boxes[2] - width)
    out += np.maximum(0.0, -boxes[1]) + np.maximum(0.0, boxes[3] - height)
    static = picture.costs(*(c.ravel() for c in boxes), np.repeat(ks, n))
    # columns of floats, not a tuple a row: the garbage collector need not look at them
    columns = [c.ravel().tolist() for c in (x, y, *boxes, out)] + [static]
    for i, k in enumerate(ks):
        costed[k].append((columns, i * n, (i + 1) * n))


def _free(segments):
    """Whether each of the candidates costed in ``segments`` meets nothing of the picture."""
    for columns, start, stop in segments:
        yield from (not o and s == 0 for o, s in zip(*(c[start:stop] for c in columns[6:])))


def _best(picture, labels, k, candidates, text, width, height):
    """The first of ``candidates`` (x, y, and where known the box's left, top, right,
    bottom, how far it is past the border and what it meets of the picture) that meets
    nothing, else the one that meets least (its box joins the labels), and how many were
    tried."""
    best, best_cost = None, WORST
    tried = 0
    for x, y, left, top, right, bottom, out, static in candidates:
        tried += 1
        if left is None:
            left, top, right, bottom = box = label_box(x, y, text)
            out = _border(box, width, height)
        if out:
            cost = 100.0 + 10 * out
        elif static is None:
            if picture.spent >= picture.budget:  # NOTE [A budget for crowded pictures]
                if best is None:
                    best = (x, y)
                break  # (those costed in bulk come first: the rest would all need a walk)
            cost = picture.cost(left, top, right, bottom, k, best_cost)
        elif static >= best_cost:
            cost = static  # no less with the labels: it loses
        elif not static:
            cost = labels.cost(left, top, right, bottom)
        elif labels.cost(left, top, right, bottom):
            if picture.spent >= picture.budget:  # it meets the picture and a label
                if best is None:
                    best = (x, y)
                continue
            cost = picture.cost(left, top, right, bottom, k, best_cost)  # in the walk's order
        else:
            cost = static
        if cost < best_cost or best is None:
            best, best_cost = (x, y), min(cost, WORST)
            if cost == 0:
                break
    labels.add(label_box(*best, text))
    return best, tried
