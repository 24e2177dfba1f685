"""Still pictures are overviews, never posters (NOTE [Still pictures are overviews] in
nbgrad/notebook/svg.py): the SVG and PNG beside a widget show at most 2,000 x 2,000 px of the
layout the widget opens with, from the root end, at the widget's scale, and say what they
leave out; a cell's saved pictures stay small whatever the graph."""

import base64
import io
import re
import xml.etree.ElementTree as ET

import pytest
from PIL import Image

import nbgrad as ng
from nbgrad.notebook import build_snapshot, labels, record, trace_snapshot
from nbgrad.notebook.layout import layout
from nbgrad.notebook.png import svg_to_png
from nbgrad.notebook.svg import STILL_H, STILL_W, snapshot_svg, trace_svg

NS = "{http://www.w3.org/2000/svg}"
NOTE = "#8a5d10"  # the colour of the lines saying what is left out (and of group titles)


def _rnn(steps):
    """An unrolled RNN, ``h = (W @ h + U @ x[t]).tanh()``, after its backward pass."""
    ng.manual_seed(0)
    W = ng.randn(8, 8, requires_grad=True)
    U = ng.randn(8, 8, requires_grad=True)
    xs = [ng.randn(8) for _ in range(steps)]
    with record() as rec:
        h = ng.zeros(8)
        for t in range(steps):
            h = (W @ h / 3 + U @ xs[t]).tanh()
        h.sum().backward()
    return rec, build_snapshot(rec, names={id(W): "W", id(U): "U"}, timings=False)


@pytest.fixture(scope="module")
def tall():
    """150 steps laid out with nothing folded: a drawing about 45,000 px tall."""
    rec, snap = _rnn(150)
    return rec, snap, layout(snap, [], fold=False)


def _size(svg):
    root = ET.fromstring(svg)
    return float(root.get("width")), float(root.get("height"))


def _box_labels(svg):
    """The texts in the middle of the boxes drawn."""
    return [
        t.text
        for t in ET.fromstring(svg).iter(f"{NS}text")
        if t.get("text-anchor") == "middle" and t.get("fill") == "#222222"
    ]


def _note(svg):
    root = ET.fromstring(svg)
    return " ".join(t.text for t in root.findall(f"{NS}text") if t.get("fill") == NOTE)


def test_a_tall_graph_is_drawn_within_the_budget(tall):
    _, snap, lay = tall
    assert lay["height"] > 10 * STILL_H  # a poster, drawn whole
    svg = snapshot_svg(snap, [], lay)
    width, height = _size(svg)
    assert width <= STILL_W and height <= STILL_H
    png = Image.open(io.BytesIO(svg_to_png(svg)))
    assert png.size == (round(width), round(height))
    # what is written follows what is shown, not the graph
    assert len(svg) < 100_000 and len(base64.b64encode(svg_to_png(svg))) < 200_000


def test_the_picture_says_what_it_leaves_out(tall):
    _, snap, lay = tall
    svg = snapshot_svg(snap, [], lay)
    drawn = len(_box_labels(svg))
    total = len(lay["nodes"])
    assert 0 < drawn < total / 10
    note = _note(svg)
    assert f"not drawn here: {total - drawn:,} of {total:,} boxes" in note
    assert f"of a {lay['width']:,.0f} x {lay['height']:,.0f} px drawing" in note
    # the parameters, at the far end of the drawing, are named
    assert re.search(r"leaves among them: (W, U|U, W)", note), note
    # and the picture is the top: the root is in it, at the widget's scale (11 px labels)
    assert "SumBackward0" in _box_labels(svg)
    root = ET.fromstring(svg)
    assert root.get("font-size") == "11"
    sizes = {t.get("font-size") for t in root.iter(f"{NS}text") if t.get("fill") == "#222222"}
    assert sizes <= {None, "12"}, sizes


def test_a_picture_that_fits_is_drawn_whole():
    rec, snap = _rnn(3)
    lay = layout(snap, [], fold=False)
    svg = snapshot_svg(snap, [], lay)
    assert _note(svg) == ""
    assert ET.fromstring(svg).find(f"{NS}svg") is None  # no window
    assert len(_box_labels(svg)) == len(lay["nodes"])
    assert _size(svg)[1] == lay["height"] + 22  # the drawing and its title


def test_a_wide_graph_is_shown_around_its_top_box():
    ng.manual_seed(0)
    x = ng.randn(8, requires_grad=True)
    with record() as rec:
        ng.stack([(x * k).sin() for k in range(400)]).sum().backward()
    snap = build_snapshot(rec, timings=False)
    lay = layout(snap, [], fold=False)
    assert lay["width"] > 3 * STILL_W
    svg = snapshot_svg(snap, [], lay)
    assert _size(svg)[0] <= STILL_W
    top = min(lay["nodes"], key=lambda b: (b["y"], b["x"]))
    window = ET.fromstring(svg).find(f"{NS}svg")
    x0, _, w, _ = map(float, window.get("viewBox").split())
    assert x0 <= top["x"] and top["x"] + top["w"] <= x0 + w
    assert "SumBackward0" in _box_labels(svg)


def test_the_stepper_picture_keeps_to_the_budget(tall):
    rec, _, _ = tall
    tr = trace_snapshot(rec.passes[0])
    svg = trace_svg(tr, lay=layout(tr["graph"], [], fold=False), position=3)
    width, height = _size(svg)
    assert width <= STILL_W and height <= STILL_H
    texts = [t.text for t in ET.fromstring(svg).iter(f"{NS}text")]
    assert any(t.startswith("step 3 / ") for t in texts)  # its footer is kept
    assert "not drawn here" in _note(svg)


def test_label_walks_keep_to_their_budget(tall, monkeypatch):
    """See NOTE [A budget for crowded pictures]: past the budget every label still gets a place,
    and the walks stop (the 1,000 edges down to W made the walk grow as the square)."""
    _, snap, _ = tall
    spent = []
    real = labels._Picture.cost

    def cost(self, *args):
        spent.append(self)
        return real(self, *args)

    monkeypatch.setattr(labels._Picture, "cost", cost)
    monkeypatch.setattr(labels, "WALK_MAX", 20_000)
    lay = layout(snap, [], fold=False)
    picture = spent[-1]
    assert picture.budget == 20_000
    # one walk may end past it: a cell's items are counted before they are walked
    assert picture.spent < picture.budget + 5_000
    assert all(e["lx"] is not None for e in lay["edges"] if e["label"])


def test_a_big_cell_saves_small_pictures():
    """Through the magic, as a user meets it: each picture of a 1,000-node RNN cell is at
    most 2,000 x 2,000 px and the cell's pictures are far under 2 MB."""
    from IPython.testing.globalipapp import get_ipython
    from IPython.utils.capture import capture_output

    ip = get_ipython()
    ip.run_line_magic("load_ext", "nbgrad")
    ip.run_cell(
        "import nbgrad as ng\nW = ng.randn(8, 8, requires_grad=True) / 3\n"
        "U = ng.randn(8, 8, requires_grad=True)\nxs = [ng.randn(8) for _ in range(250)]"
    )
    with capture_output() as cap:
        result = ip.run_cell(
            "%%autograd --backward loss\nh = ng.zeros(8)\nfor t in range(len(xs)):\n"
            "    h = (W @ h + U @ xs[t]).tanh()\nloss = h.sum()"
        )
    assert result.success
    pictures = [o.data for o in cap.outputs if "image/svg+xml" in o.data]
    assert pictures
    total = 0
    for data in pictures:
        width, height = _size(data["image/svg+xml"])
        assert width <= STILL_W and height <= STILL_H
        png = Image.open(io.BytesIO(base64.b64decode(data["image/png"])))
        assert png.size[0] <= STILL_W and png.size[1] <= STILL_H
        total += len(data["image/svg+xml"]) + len(data["image/png"])
    assert total < 500_000, total


def test_a_training_loop_cut_at_max_nodes_is_drawn(monkeypatch):
    """A parameter's leaf belongs to the first call of its module; when the cut leaves that
    call out and keeps the leaf (later steps use it), its group stays in the snapshot, and
    the drawing does not fail (it raised KeyError: 'g3'). Every step recorded (the magic
    otherwise counts the repeats, NOTE [Repeated steps counted], and nothing is cut)."""
    from IPython.testing.globalipapp import get_ipython
    from IPython.utils.capture import capture_output

    from nbgrad.notebook import magics

    monkeypatch.setattr(magics, "KEEP_STEPS", None)

    ip = get_ipython()
    ip.run_line_magic("load_ext", "nbgrad")
    ip.run_cell(
        "import nbgrad as ng\nng.manual_seed(0)\n"
        "model = ng.nn.Sequential(ng.nn.Linear(8, 16), ng.nn.Tanh(), ng.nn.Linear(16, 1))\n"
        "opt = ng.optim.SGD(model.parameters(), lr=0.01)\nX, Y = ng.randn(32, 8), ng.randn(32, 1)"
    )
    with capture_output() as cap:
        result = ip.run_cell(
            "%%autograd --max-nodes 300 -o cut\nfor step in range(100):\n    opt.zero_grad()\n"
            "    loss = ng.nn.functional.mse_loss(model(X), Y)\n    loss.backward()\n"
            "    opt.step()"
        )
    assert result.success, result.error_in_exec
    snap = ip.user_ns["cut"].graph.snapshot
    assert snap["truncated"]
    groups = {g["id"] for g in snap["groups"]}
    assert {n["group"] for n in snap["nodes"]} - {None} <= groups
    assert all(g["parent"] is None or g["parent"] in groups for g in snap["groups"])
    assert any("image/svg+xml" in o.data for o in cap.outputs)


def test_edges_crossing_the_window_are_capped_and_cut(tall, monkeypatch):
    """At most STILL_EDGES edges are drawn (those of the boxes drawn first), and the note says
    how many crossing edges were left out."""
    from nbgrad.notebook import svg as svg_module

    _, snap, lay = tall
    monkeypatch.setattr(svg_module, "STILL_EDGES", 10)
    svg = snapshot_svg(snap, [], lay)
    paths = [p for p in ET.fromstring(svg).iter(f"{NS}path") if p.get("marker-end")]
    assert len(paths) == 10
    assert re.search(r"\(\d[\d,]* of them crossing it, past the 10 edges it draws\)", _note(svg))


def test_the_png_paints_only_the_canvas_part_of_a_line():
    from nbgrad.notebook.png import _clipped

    runs = _clipped([(-100_000.0, 5.0), (100_000.0, 5.0), (50.0, 50.0)], (100, 100))
    assert [[(round(x, 3), round(y, 3)) for x, y in run] for run in runs] == [
        [(-8.0, 5.0), (108.0, 5.0)],
        [(108.0, 49.974), (50.0, 50.0)],
    ]
    assert _clipped([(-50.0, -50.0), (-20.0, -20.0)], (100, 100)) == []
    inside = [(1.5, 2.25), (40.0, 90.125), (99.0, 3.0), (107.9, -7.5)]  # margin included
    assert _clipped(inside, (100, 100)) == [inside]


def test_a_small_picture_is_painted_once(monkeypatch):
    """The same small still (the hook editor's with no target, under every cell) is painted
    once (NOTE [A small picture painted once]); a changed one, and a large one, anew."""
    from nbgrad.notebook import png

    painted = []
    paint = png.svg_to_png
    monkeypatch.setattr(png, "svg_to_png", lambda svg: painted.append(svg) or paint(svg))
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="80" height="20">'
        '<text x="2" y="12">{} of this test</text></svg>'
    )
    first = png.png_b64(svg.format("a"))
    assert png.png_b64(svg.format("a")) == first
    assert len(painted) == 1
    png.png_b64(svg.format("b"))
    assert len(painted) == 2
    big = svg.format("c" * 20_000)
    png.png_b64(big)
    png.png_b64(big)
    assert len(painted) == 4


def test_a_number_is_pasted_from_its_characters(monkeypatch):
    """A haloed number (a gradient's norm) is pasted from its characters' sprites, painted
    once a kernel (NOTE [Numbers put together from their characters]), and looks as the
    number painted whole: no pixel more than a rounding apart."""
    import numpy as np

    from nbgrad.notebook import png

    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="160" height="60" font-size="11">'
        '<rect x="0" y="0" width="160" height="60" fill="#dde7f5"/>'
        '<text x="80" y="30" font-size="9" fill="#1f6f3a" stroke="#ffffff">'
        "0.05289e-07</text></svg>"
    )
    png._glyph.cache_clear()
    pieces = np.asarray(Image.open(io.BytesIO(png.svg_to_png(svg))).convert("RGB"), int)
    assert png._glyph.cache_info().currsize == len(set("0.05289e-07"))
    monkeypatch.setattr(png, "_NUMBER", frozenset())  # painted whole
    whole = np.asarray(Image.open(io.BytesIO(png.svg_to_png(svg))).convert("RGB"), int)
    ink = (whole != whole[0, 0]).any(axis=2)
    assert ink.sum() > 150  # the number is there
    differ = np.abs(pieces - whole).max(axis=2)
    assert differ.max() <= 48 and (differ > 0).sum() <= 12  # (one pixel over: 150 and more)
