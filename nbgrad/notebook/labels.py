"""Where each edge's gradient label goes: a free place beside the edge (NOTE [Edge labels] in
layout.py). Geometry on the drawn picture: the edges as ``edge_path`` draws them (curves
flattened), the boxes, the group frames and titles, and the labels already placed, all kept
in a grid of square cells so that a candidate is tested against what is near it only."""

from __future__ import annotations

from itertools import islice

__all__ = ["place_labels"]

LABEL_CHAR = 5.5  # a character of the 9 px monospace edge labels (CHAR_W * 9 / 12, rounded up)
LABEL_UP = 8.0  # from the baseline to the top of the digits, with the white halo
LABEL_DOWN = 2.0  # from the baseline down (a comma), with the halo
LABEL_PAD = 1.0  # the halo either side
GAP = 4.0  # from the edge to the near end of its label
CLEAR = 3.0  # another edge nearer than this to a label could seem to be the label's
NEAR_COST = 0.05  # per pixel of another edge that near (a pixel crossing costs 1)
TITLE_CHAR = 6.1  # a character of the 10 px group titles (the widget adds "▾ ")
CELL = 48.0  # the grid's cells, at least; see _Grid
CURVE_STEPS = 8
FRACTIONS = (0.75, 0.6, 0.85, 0.5, 0.35, 0.25, 0.15)
MAX_SEGMENTS = 6  # of a long edge's segments, the first and last three carry candidates
TRIES = 12  # candidates tried per label, on average, at most (the cost of a crowded picture)
WORST = 60.0  # a label meeting this much is as bad as any worse (and found sooner)
FEW = 8  # the candidates a label tries once those are spent: the 8 around its first point


def label_box(lx, ly, text):
    """The box ``(left, top, right, bottom)`` that a label drawn at ``lx, ly`` (the start of
    its baseline) covers, halo included."""
    return (
        lx - LABEL_PAD,
        ly - LABEL_UP,
        lx + len(text) * LABEL_CHAR + LABEL_PAD,
        ly + LABEL_DOWN,
    )


def _curve(x0, y0, x1, y1):
    """The control points of the curve ``edge_path`` draws from a box's bottom to a top."""
    dy = max(18.0, (y1 - y0) / 2)
    return (x0, y0), (x0, y0 + dy), (x1, y1 - dy), (x1, y1)


def _bezier(c, t):
    (ax, ay), (bx, by), (cx, cy), (dx, dy) = c
    u = 1 - t
    a, b, m, d = u * u * u, 3 * u * u * t, 3 * u * t * t, t * t * t
    return a * ax + b * bx + m * cx + d * dx, a * ay + b * by + m * cy + d * dy


def _segment_point(p, i, f):
    """The point at ``f`` of segment ``i`` of an edge's points, as drawn (segments 0, 2, ...
    are curves between layers, 1, 3, ... straight lines through dummy boxes)."""
    x0, y0, x1, y1 = p[2 * i], p[2 * i + 1], p[2 * i + 2], p[2 * i + 3]
    if i % 2 == 0:
        return _bezier(_curve(x0, y0, x1, y1), f)
    return x0 + f * (x1 - x0), y0 + f * (y1 - y0)


def edge_pieces(points):
    """The drawn edge through ``points`` as straight pieces ``(x0, y0, x1, y1)``."""
    out = []
    for i in range(len(points) // 2 - 1):
        x0, y0, x1, y1 = points[2 * i : 2 * i + 4]
        if i % 2 == 0:
            c = _curve(x0, y0, x1, y1)
            prev = (x0, y0)
            for k in range(1, CURVE_STEPS + 1):
                nxt = _bezier(c, k / CURVE_STEPS)
                out.append((*prev, *nxt))
                prev = nxt
        else:
            out.append((x0, y0, x1, y1))
    return out


def _clip(seg, box):
    """The length of segment ``seg`` inside ``box`` (Liang-Barsky)."""
    x0, y0, x1, y1 = seg
    left, top, right, bottom = box
    dx, dy = x1 - x0, y1 - y0
    t0, t1 = 0.0, 1.0
    for p, q in ((-dx, x0 - left), (dx, right - x0), (-dy, y0 - top), (dy, bottom - y0)):
        if p == 0:
            if q < 0:
                return 0.0
        else:
            r = q / p
            if p < 0:
                if r > t1:
                    return 0.0
                t0 = max(t0, r)
            else:
                if r < t0:
                    return 0.0
                t1 = min(t1, r)
    return (t1 - t0) * (dx * dx + dy * dy) ** 0.5


class _Grid:
    """Segments and boxes bucketed by the square cells of side ``cell`` that their bounds
    touch; long segments are cut to four cells first. The cell is CELL, or more where the
    lines are long (edges across a picture 100,000 px wide), so that the grid holds a few
    entries per line whatever the picture's size."""

    def __init__(self, cell):
        self.cell = cell
        self.cells = {}
        # (left, top, right, bottom: the bounds, owner, coordinates); the owner of a box is
        # None, of a group frame's segment -1, of an edge's segment the edge's index
        self.items = []

    def add(self, owner, c):
        if owner is None:
            bounds = c
        else:
            bounds = (min(c[0], c[2]), min(c[1], c[3]), max(c[0], c[2]), max(c[1], c[3]))
        k = len(self.items)
        self.items.append((*bounds, owner, c))
        left, top, right, bottom = bounds
        cell = self.cell
        for cx in range(int(left // cell), int(right // cell) + 1):
            for cy in range(int(top // cell), int(bottom // cell) + 1):
                self.cells.setdefault((cx, cy), []).append(k)

    def add_line(self, owner, x0, y0, x1, y1):
        """A straight line, in pieces no longer than four cells (so that a long slanted edge
        is not in every cell of its bounds)."""
        n = int(max(abs(x1 - x0), abs(y1 - y0)) // (4 * self.cell)) + 1
        dx, dy = (x1 - x0) / n, (y1 - y0) / n
        for k in range(n):
            self.add(owner, (x0 + k * dx, y0 + k * dy, x0 + (k + 1) * dx, y0 + (k + 1) * dy))

    def cost(self, box, own, limit):
        """What a label of edge ``own`` with ``box`` meets: the length of the segments inside
        the box, the overlapping area of boxes over the label's height, and a little for each
        other edge that passes within CLEAR of it (whose label it could seem to be); stops
        past ``limit``."""
        left, top, right, bottom = box
        near = (left - CLEAR, top - CLEAR, right + CLEAR, bottom + CLEAR)
        total, seen = 0.0, set()
        items, cells, cell = self.items, self.cells, self.cell
        for cx in range(int(near[0] // cell), int(near[2] // cell) + 1):
            for cy in range(int(near[1] // cell), int(near[3] // cell) + 1):
                for k in cells.get((cx, cy), ()):
                    a, b, c, d, owner, coords = items[k]
                    if a >= near[2] or c <= near[0] or b >= near[3] or d <= near[1] or k in seen:
                        continue
                    seen.add(k)
                    if owner is None:
                        w, h = min(c, right) - max(a, left), min(d, bottom) - max(b, top)
                        if w > 0 and h > 0:
                            total += w * h / (LABEL_UP + LABEL_DOWN)
                    else:
                        inside = _clip(coords, box)
                        if inside:
                            total += inside
                        elif owner >= 0 and owner != own:
                            total += NEAR_COST * _clip(coords, near)
                    if total >= limit:
                        return total
        return total


def _old_place(p):
    """Where the labels were before this module: three quarters down the first segment's
    chord, (4, 3) to the right."""
    x0, y0, x1, y1 = p[:4]
    return x0 + 0.75 * (x1 - x0) + GAP, y0 + 0.75 * (y1 - y0) + 3


def _candidates(p, width):
    """Label anchors for an edge through points ``p`` whose label is ``width`` wide, best
    first: around points of the drawn edge (FRACTIONS of its first segment, its last, its
    second, ...: six at most) beside it, in its corners, above and below it, GAP away, then
    twice as far."""
    n = len(p) // 2 - 1
    order = []
    for k in range(MAX_SEGMENTS // 2):
        order += [i for i in (k, n - 1 - k) if 0 <= i < n and i not in order]
    for gap in (GAP, 2 * GAP):
        up, down = LABEL_DOWN + gap, LABEL_UP + gap  # baselines clear of the point by gap
        for i in order:
            for f in FRACTIONS:
                px, py = _segment_point(p, i, f)
                yield px + gap, py + 3  # beside it, where a steep edge leaves room
                yield px - gap - width, py + 3
                yield px + gap, py - up  # in the corners, where a slanted one does
                yield px - gap - width, py + down
                yield px - gap - width, py - up
                yield px + gap, py + down
                yield px - width / 2, py - up  # above and below, for a flat one
                yield px - width / 2, py + down


def place_labels(nodes, edges, groups, width, height, hooked=()):
    """Set ``lx, ly`` (the start of the label's baseline) on each of the layout's ``edges``
    that has a label (None on the others), so that no label meets an edge or its arrowhead, a
    box (and its badges: the stepper's step number on a node's corner, the count of hooks on
    the boxes ``hooked``), a group's frame or title, another label, or the picture's border,
    where such a place is among the candidates; else the place meeting the least (NOTE [Edge
    labels] in layout.py)."""
    pieces = [edge_pieces(e["points"]) for e in edges]
    length = sum(abs(p[2] - p[0]) + abs(p[3] - p[1]) for own in pieces for p in own)  # (L1)
    count = sum(len(own) for own in pieces)
    grid = _Grid(max(CELL, length / (8 * count)) if count else CELL)
    for b in nodes:
        x, y, w, h = b["x"], b["y"], b["w"], b["h"]
        extra = 6.0 if b["kind"] == "series" else 0.0  # the stack behind a series box
        grid.add(None, (x, y, x + w + extra, y + h + extra))
        if b["kind"] == "node":
            grid.add(None, (x - 6, y - 6, x + 10, y + 10))  # the step number's badge
        if b["id"] in hooked:
            grid.add(None, (x + w - 9, y - 5, x + w + 5, y + 9))  # the hooks' badge
    for g in groups:
        x, y, w, h = g["x"], g["y"], g["w"], g["h"]
        for side in ((x, y, x + w, y), (x + w, y, x + w, y + h), (x, y + h, x + w, y + h)):
            grid.add_line(-1, *side)
        grid.add_line(-1, x, y, x, y + h)
        grid.add(None, (x + 8, y + 3, x + 8 + (len(g["label"]) + 2) * TITLE_CHAR, y + 16))
    for k, own in enumerate(pieces):
        for piece in own:
            grid.add_line(k, *piece)
        # the arrowhead (svg.py's marker at a width of 1.2: 8.4 px long, 8.4 wide), less
        # the halo and a glyph's side bearing all round: the text may not touch it
        x, y = edges[k]["points"][-2:]
        grid.add(k, (x - 2.7, y - 7.4, x, y - 1))
        grid.add(k, (x + 2.7, y - 7.4, x, y - 1))
        grid.add(k, (x - 2.7, y - 7.4, x + 2.7, y - 7.4))
    # first the labels whose old place is free and beside their edge, so that no label moves
    # into another's; then the others, each to its best candidate
    placed = {}
    for k, e in enumerate(edges):
        if e["label"]:
            old = _round(_old_place(e["points"]))
            box = label_box(*old, e["label"])
            beside = (box[0] - 2 * GAP, box[1] - 2 * GAP, box[2] + 2 * GAP, box[3] + 2 * GAP)
            if not any(_clip(piece, beside) for piece in pieces[k][:CURVE_STEPS]):
                continue  # far from a slanted edge's curve
            if _cost(grid, k, old, e["label"], width, height, 1e-9) == 0:
                placed[k] = old
                grid.add(None, box)
    budget = TRIES * sum(1 for e in edges if e["label"])
    for k, e in enumerate(edges):
        text = e["label"]
        if not text:
            e["lx"] = e["ly"] = None
            continue
        if k not in placed:
            candidates = islice(_candidates(e["points"], len(text) * LABEL_CHAR), max(FEW, budget))
            placed[k], tried = _best(grid, k, candidates, text, width, height)
            budget -= tried
        e["lx"], e["ly"] = placed[k]


def _cost(grid, k, anchor, text, width, height, limit):
    """What a label of edge ``k`` at ``anchor`` meets (_Grid.cost); past the picture's border
    costs more than any crossing."""
    box = label_box(*anchor, text)
    out = max(0.0, -box[0]) + max(0.0, box[2] - width)
    out += max(0.0, -box[1]) + max(0.0, box[3] - height)
    cost = 100.0 + 10 * out if out else 0.0
    if cost < limit:
        cost += grid.cost(box, k, limit - cost)
    return cost


def _round(anchor):
    return round(anchor[0], 1), round(anchor[1], 1)


def _best(grid, k, candidates, text, width, height):
    """The first candidate that meets nothing, else the one that meets least (its box joins
    the grid), and how many were tried."""
    best, best_cost = None, WORST
    tried = 0
    for anchor in candidates:
        tried += 1
        anchor = _round(anchor)
        cost = _cost(grid, k, anchor, text, width, height, best_cost)
        if cost < best_cost or best is None:
            best, best_cost = anchor, min(cost, WORST)
            if cost == 0:
                break
    grid.add(None, label_box(*best, text))
    return best, tried
