"""Gradient labels on edges (NOTE [Edge labels] in nbgrad/notebook/layout.py): on real graphs,
folded as they open and fully expanded, no label is crossed by an edge (its own included),
covers a node or a group's frame or title, or touches another label; both pictures draw each
label at the layout's anchor. The geometry here is written again, not taken from labels.py:
9 px monospace text, 5.4 px a character, 10 px tall; the edges as svg.py's path data draws
them (curves between layers, lines through the bends)."""

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import nbgrad as ng
from nbgrad import nn
from nbgrad.notebook import build_snapshot, record
from nbgrad.notebook import labels as labels_module
from nbgrad.notebook.layout import default_collapsed, layout
from nbgrad.notebook.svg import snapshot_svg
from tests.notebook.test_layout import _mlp_snapshot
from tests.notebook.test_torch_source import MODELS, torch

NS = "{http://www.w3.org/2000/svg}"
WIDGETS = Path(__file__).resolve().parents[2] / "widgets"


# -- the graphs: those of tests/notebook/test_big_graphs.py, test_layout.py, test_torch_source.py,
# each after its backward pass (so that every edge has a gradient label)
def _nbgrad_mlp():
    """test_big_graphs.py's first graph: a 15-node MLP."""
    ng.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1)
    )
    with record() as rec:
        loss = nn.functional.mse_loss(model(ng.randn(8, 4)), ng.randn(8, 1))
        loss.backward()
    return build_snapshot(rec, names={id(model): "model"}, timings=False)


def _nbgrad_mlp_groups():
    """test_layout.py's (notebook 06's) MLP: out's weight hangs below the Tanh after it."""
    ng.manual_seed(0)
    return _mlp_snapshot(backward=True)[0]


def _nbgrad_blocks():
    """test_big_graphs.py's nested modules: pre-norm residual MLP blocks, transformer-style."""

    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.norm = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            return x + self.mlp(self.norm(x))

    ng.manual_seed(0)
    blocks = nn.Sequential(*[Block(16) for _ in range(6)])
    with record() as rec:
        loss = blocks(ng.randn(4, 16)).pow(2).mean()
        loss.backward()
    return build_snapshot(rec, names={id(blocks): "blocks"}, timings=False)


def _nbgrad_loop():
    """test_big_graphs.py's loop of 300 elementwise ops (an RNN's recurrence, unrolled)."""
    ng.manual_seed(0)
    h = ng.randn(16, requires_grad=True)
    w = ng.full((16,), 0.5, requires_grad=True)
    with record() as rec:
        for _ in range(100):
            h = (h * w + 0.1).tanh()
        h.sum().backward()
    return build_snapshot(rec, timings=False)


def _torch(name):
    def build():
        torch.manual_seed(0)
        with record() as rec:
            model, loss = MODELS[name]()
            loss.backward()
        params = {id(p): n for n, p in model.named_parameters()}
        return build_snapshot(rec, names=params, timings=False)

    build.__name__ = f"_torch_{name}"
    return build


GRAPHS = {
    "mlp": _nbgrad_mlp,
    "mlp-groups": _nbgrad_mlp_groups,
    "blocks": _nbgrad_blocks,
    "loop": _nbgrad_loop,
    "torch-mlp": _torch("mlp"),
    "torch-lstm": _torch("lstm"),
    "torch-transformer": _torch("transformer"),
}


# -- the geometry of the picture ------------------------------------------------------------
def _box(x, y, text, margin=0.0):
    return (x - margin, y - 8 - margin, x + 5.4 * len(text) + margin, y + 2 + margin)


def _bezier(p0, p1, p2, p3, t):
    u = 1 - t
    return tuple(
        u**3 * a + 3 * u * u * t * b + 3 * u * t * t * c + t**3 * d
        for a, b, c, d in zip(p0, p1, p2, p3)
    )


def _drawn_pieces(points, steps=24):
    """The edge through ``points`` as drawn: a curve from a box's bottom to the next top
    (control points half the height down and up, at least 18), a line through a bend."""
    out = []
    for i in range(len(points) // 2 - 1):
        x0, y0, x1, y1 = points[2 * i : 2 * i + 4]
        if i % 2:
            out.append(((x0, y0), (x1, y1)))
            continue
        dy = max(18.0, (y1 - y0) / 2)
        ctrl = ((x0, y0), (x0, y0 + dy), (x1, y1 - dy), (x1, y1))
        pts = [_bezier(*ctrl, k / steps) for k in range(steps + 1)]
        out += list(zip(pts, pts[1:]))
    return out


def _crosses(piece, box):
    """Whether a straight piece enters ``box`` (sampled every half pixel)."""
    (x0, y0), (x1, y1) = piece
    left, top, right, bottom = box
    if max(x0, x1) <= left or min(x0, x1) >= right or max(y0, y1) <= top or min(y0, y1) >= bottom:
        return False
    n = int(2 * max(abs(x1 - x0), abs(y1 - y0))) + 2
    for k in range(n + 1):
        x, y = x0 + k / n * (x1 - x0), y0 + k / n * (y1 - y0)
        if left < x < right and top < y < bottom:
            return True
    return False


def _meets(a, b):
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def label_problems(lay, anchors, margin=0.0, others=None):
    """What the labels drawn at ``anchors`` (``{edge index: (x, y)}``) meet in ``lay``, or
    come nearer than ``margin`` to; labels are checked against each other, or against the
    labels at ``others`` (anchors too) when given."""
    boxes = {i: _box(x, y, lay["edges"][i]["label"], margin) for i, (x, y) in anchors.items()}
    others = anchors if others is None else others
    others = {j: _box(x, y, lay["edges"][j]["label"]) for j, (x, y) in others.items()}
    problems = []
    for i, box in boxes.items():
        mine = lay["edges"][i]
        name = f"label {mine['label']!r} of {mine['from']}->{mine['to']}"
        for e in lay["edges"]:
            if any(_crosses(piece, box) for piece in _drawn_pieces(e["points"])):
                problems.append(f"{name}: crossed by edge {e['from']}->{e['to']}")
        for b in lay["nodes"]:
            if _meets(box, (b["x"], b["y"], b["x"] + b["w"], b["y"] + b["h"])):
                problems.append(f"{name}: covers box {b['id']}")
        for g in lay["groups"]:
            x, y, w, h = g["x"], g["y"], g["w"], g["h"]
            sides = [((x, y), (x + w, y)), ((x + w, y), (x + w, y + h))]
            sides += [((x, y + h), (x + w, y + h)), ((x, y), (x, y + h))]
            title = (x + 8, y + 3, x + 8 + 6 * (len(g["label"]) + 2), y + 16)
            if any(_crosses(s, box) for s in sides) or _meets(box, title):
                problems.append(f"{name}: meets group {g['id']}")
        for j, other in others.items():
            if j != i and _meets(box, other):
                problems.append(f"{name}: touches label {lay['edges'][j]['label']!r}")
        if box[0] < 0 or box[1] < 0 or box[2] > lay["width"] or box[3] > lay["height"]:
            problems.append(f"{name}: outside the picture")
    return problems


def _old_anchors(lay):
    """Where the labels were before: three quarters down the first segment, plus (4, 3)."""
    out = {}
    for i, e in enumerate(lay["edges"]):
        if e["label"]:
            p = e["points"]
            out[i] = (p[0] + 0.75 * (p[2] - p[0]) + 4, p[1] + 0.75 * (p[3] - p[1]) + 3)
    return out


def _layouts(snap):
    """As the graph opens (NOTE [Readable at open]), and with everything shown."""
    return [("open", layout(snap, default_collapsed(snap))), ("all", layout(snap, [], fold=False))]


@pytest.fixture(scope="module")
def snapshots():
    return {name: build() for name, build in GRAPHS.items()}


@pytest.mark.parametrize("name", GRAPHS)
def test_no_label_is_crossed_or_covered(snapshots, name):
    snap = snapshots[name]
    for how, lay in _layouts(snap):
        labelled = [e for e in lay["edges"] if e["label"]]
        assert labelled, (name, how)
        anchors = {i: (e["lx"], e["ly"]) for i, e in enumerate(lay["edges"]) if e["label"]}
        assert len(anchors) == len(labelled)
        assert all(e["lx"] is None and e["ly"] is None for e in lay["edges"] if not e["label"])
        assert label_problems(lay, anchors) == [], (name, how)


def test_the_old_place_was_crossed(snapshots):
    """The check above can fail: at the old place (three quarters down the first segment),
    labels of these graphs are crossed by other edges."""
    crossed = {}
    for name, snap in snapshots.items():
        for how, lay in _layouts(snap):
            found = [p for p in label_problems(lay, _old_anchors(lay)) if "crossed by" in p]
            if found:
                crossed[name, how] = found
    assert ("torch-transformer", "all") in crossed or ("blocks", "all") in crossed, crossed
    assert len(crossed) >= 3, crossed


def test_labels_stay_at_the_old_place_when_it_is_free(snapshots):
    """Most pictures do not change: a label moves only when at its old place it meets
    something or another edge passes within 3 px of its halo (labels.CLEAR), or the old
    place is far from a slanted edge's curve."""
    moved = kept = 0
    for snap in snapshots.values():
        for _, lay in _layouts(snap):
            final = {j: (f["lx"], f["ly"]) for j, f in enumerate(lay["edges"]) if f["label"]}
            for i, (x, y) in _old_anchors(lay).items():
                e = lay["edges"][i]
                if (e["lx"], e["ly"]) == (round(x, 1), round(y, 1)):
                    kept += 1
                    continue
                moved += 1
                far = _distance(_box(x, y, e["label"]), e["points"]) > 8.0
                assert far or label_problems(lay, {i: (x, y)}, margin=4.0, others=final), e
    assert kept > moved > 0


def test_a_label_stays_beside_its_edge(snapshots):
    """A reader still sees which edge a number belongs to: its box is at most 12 px from its
    edge (twice labels.GAP across a corner, and the halo), and, as the graphs open, no other
    edge passes much nearer (expanded, where no free place is found, one may: the
    transformer's label of n41->leaf5 has another edge 0.5 px away)."""
    for name, snap in snapshots.items():
        for how, lay in _layouts(snap):
            for i, e in enumerate(lay["edges"]):
                if not e["label"]:
                    continue
                box = _box(e["lx"], e["ly"], e["label"])
                own = _distance(box, e["points"])
                other = min(
                    _distance(box, f["points"]) for f in lay["edges"][:i] + lay["edges"][i + 1 :]
                )
                assert own <= 12.0, (name, how, e, own)
                if how == "open":
                    assert other >= own - 2.0, (name, how, e, own, other)


def _distance(box, points):
    """From ``box`` to the nearest point of the drawn edge through ``points``."""
    left, top, right, bottom = box
    corners = [(left, top), (right, top), (left, bottom), (right, bottom)]
    best = float("inf")
    for piece in _drawn_pieces(points):
        if _crosses(piece, box):
            return 0.0
        (x0, y0), (x1, y1) = piece
        for x, y in piece:  # an end of the piece to the box
            dx, dy = max(left - x, 0.0, x - right), max(top - y, 0.0, y - bottom)
            best = min(best, (dx * dx + dy * dy) ** 0.5)
        length2 = (x1 - x0) ** 2 + (y1 - y0) ** 2
        for cx, cy in corners:  # a corner of the box to the piece
            t = 0.0 if not length2 else ((cx - x0) * (x1 - x0) + (cy - y0) * (y1 - y0)) / length2
            t = min(1.0, max(0.0, t))
            px, py = x0 + t * (x1 - x0), y0 + t * (y1 - y0)
            best = min(best, ((px - cx) ** 2 + (py - cy) ** 2) ** 0.5)
    return best


def _fan(n=300):
    """300 edges into one box (a stack of tanh terms): crowded, so that equally bad places
    abound and the last bit of a sum decides between them."""
    ng.manual_seed(0)
    x = ng.randn(8, requires_grad=True)
    ws = [ng.randn(8, requires_grad=True) for _ in range(n)]
    with record() as rec:
        ng.stack([(x * w).tanh() for w in ws]).sum().backward()
    return build_snapshot(rec, timings=False)


@pytest.mark.parametrize("name", ["blocks", "loop", "torch-transformer", "fan"])
def test_labels_go_where_the_walk_alone_puts_them(snapshots, name, monkeypatch):
    """See NOTE [Label costs in bulk]: what NumPy sums for many candidates at once is the walk's
    sum to the last bit, so every label goes where the walk alone puts it, and where bulk
    costing with no crowd limit does."""
    snap = _fan() if name == "fan" else snapshots[name]

    def anchors():
        return [(e["lx"], e["ly"]) for e in layout(snap, [], fold=False)["edges"]]

    default = anchors()
    assert sum(1 for a in default if a[0] is not None) >= labels_module.BULK_FROM
    monkeypatch.setattr(labels_module, "BULK_FROM", 10**9)
    walked = anchors()
    monkeypatch.setattr(labels_module, "BULK_FROM", 0)
    monkeypatch.setattr(labels_module, "CROWD", 10**9)
    assert default == walked == anchors()


def test_both_pictures_draw_the_label_at_the_anchor(snapshots):
    snap = snapshots["torch-transformer"]
    lay = layout(snap, default_collapsed(snap))
    svg = snapshot_svg(snap, lay=lay)
    drawn = [
        (float(t.get("x")), float(t.get("y")), t.text)
        for t in ET.fromstring(svg).iter(f"{NS}text")
        if t.get("fill") == "#1f6f3a"
    ]
    want = [(e["lx"], e["ly"], e["label"]) for e in lay["edges"] if e["label"]]
    assert drawn == want and any(
        (x, y) != xy for (x, y, _), xy in zip(drawn, _old_anchors(lay).values())
    )
    # the widget: graph_bulk.js makes its edge label's text (a part reused as the view moves,
    # NOTE [Elements reused]) and puts it at the edge's lx, ly, and nowhere else
    js = (WIDGETS / "graph_bulk.js").read_text()
    assert len(re.findall(r's\("text", \{[^}]*class: "nbg-edge-label"', js)) == 1
    (call,) = re.findall(r"setAttrs\(label, [^)]*\)", js.split('"nbg-edge-label"', 1)[1])
    assert re.fullmatch(r'setAttrs\(label, "x", (\w+)\.lx, "y", \1\.ly\)', call), call
    assert "0.75" not in js and "0.75" not in (WIDGETS / "graph_view.js").read_text()
