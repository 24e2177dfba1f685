"""The still pictures (nbgrad/notebook/svg.py): valid, deterministic, showing what they should.
Cross-process determinism is checked in test_snapshot.py."""

import xml.etree.ElementTree as ET

import nbgrad as ng
from nbgrad.notebook import build_snapshot, record, trace_snapshot
from nbgrad.notebook.layout import layout
from nbgrad.notebook.svg import hooks_svg, snapshot_svg, trace_svg

NS = "{http://www.w3.org/2000/svg}"


def _texts(svg):
    return [t.text for t in ET.fromstring(svg).iter(f"{NS}text")]


def _snap(backward=False):
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    w = ng.tensor([3.0, -1.0], requires_grad=True)
    with record() as rec:
        loss = (x * w).exp().sum()
        if backward:
            loss.backward()
    return rec, build_snapshot(rec, names={id(x): "x<1>", id(w): "w"}, timings=False)


def test_graph_svg_is_valid_and_labelled():
    rec, snap = _snap()
    svg = snapshot_svg(snap)
    texts = _texts(svg)
    assert "grad_fn graph: 5 nodes, 4 edges" in texts
    assert {"MulBackward0", "ExpBackward0", "SumBackward0", "x<1>", "w"} <= set(texts)
    assert "scalar" in texts and "2" in texts  # shapes
    assert "0x" not in svg  # no memory addresses


def test_gradients_show_on_edges_after_backward():
    rec, snap = _snap(backward=True)
    texts = _texts(snapshot_svg(snap))
    assert "grad_fn graph: 5 nodes, 4 edges; gradients of backward pass 0" in texts
    norms = {t for t in texts if t and t[0].isdigit() and "." in t}
    assert norms  # e.g. the norm of exp's gradient on the Mul -> leaf edges
    assert snapshot_svg(snap) == snapshot_svg(snap)


def test_trace_svg_numbers_the_steps():
    rec, snap = _snap(backward=True)
    tr = trace_snapshot(rec.passes[0])
    texts = _texts(trace_svg(tr))
    assert "backward pass: 5 steps" in texts
    assert {"1", "2", "3", "4", "5"} <= set(texts)
    # the position: at the start, the root waits on the CPU queue
    assert "at the start: 5 steps to run" in texts
    assert f"ready queue (cpu): SumBackward0 ({tr['root']})" in texts
    # step 3 running: highlighted, with the queue and the nodes still waiting
    svg = trace_svg(tr, position=3)
    ET.fromstring(svg)
    texts = _texts(svg)
    mul = tr["steps"][2]["node"]
    assert f"step 3 / 5: running MulBackward0 ({mul}) on cpu" in texts, texts
    # the queue as the step left it: the two leaves it made ready (issue 33, point 7)
    made = tr["steps"][2]["made_ready"]
    assert len(made) == 2
    queue = " ".join(texts)
    assert "ready queue (cpu): AccumulateGrad (" in queue and all(m in queue for m in made)
    assert 'stroke-width="3"' in svg
    assert trace_svg(tr, index=2) == svg  # index: the same as position index + 1
    texts = _texts(trace_svg(tr, position=6))
    assert "at the end: 5 nodes ran" in texts


def test_hooks_svg():
    hooks = [{"kind": "tensor_hook", "name": "<hook:MulBackward0#1>", "enabled": False}]
    fired = [
        {
            "kind": "tensor",
            "name": "<hook:MulBackward0#1>",
            "before": {"norm": 2.0},
            "after": {"norm": 4.0},
        }
    ]
    texts = _texts(hooks_svg("MulBackward0", hooks, fired))
    assert "hooks on MulBackward0" in texts and "disabled" in texts
    assert "|g| 2 -> 4" in texts
    assert "(no hooks)" in _texts(hooks_svg("x", []))
    # no target: what to do, not "hooks on nothing"
    texts = _texts(hooks_svg(None, []))
    assert "Hook editor: no target" in texts
    assert any("select a tensor, node or module" in t for t in texts)


def _label_boxes(svg):
    """The box of each edge label (9 px text: about 5.4 px a character, 9 px tall)."""
    boxes = []
    for t in ET.fromstring(svg).iter(f"{NS}text"):
        if t.get("font-size") == "9" and t.get("fill") == "#1f6f3a":
            x, y = float(t.get("x")), float(t.get("y"))
            boxes.append((x, y - 9, x + 5.4 * len(t.text), y))
    return boxes


def _overlapping(boxes):
    return [
        (a, b)
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
        if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
    ]


def test_labels_of_edges_that_leave_one_box_do_not_overlap():
    """Edges leaving one node towards neighbouring boxes (``x * y * x * y``: each Mul reaches
    both leaves): their gradient labels sit where the edges have spread apart, not at the
    middle of the first segment, where two of them touch."""
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = ng.tensor([3.0, 4.0], requires_grad=True)
    with record() as rec:
        loss = (x * y * x * y * 12345.678).sum()
        loss.backward()
    snap = build_snapshot(rec, timings=False)
    svg = snapshot_svg(snap)
    boxes = _label_boxes(svg)
    assert len(boxes) == len(layout(snap, [])["edges"]) >= 6
    assert not _overlapping(boxes)
    # the same labels at the middle of each first segment would overlap: the test can fail
    middle = []
    for e in layout(snap, [])["edges"]:
        p = e["points"]
        x0, y0 = p[0] + 0.5 * (p[2] - p[0]) + 4, p[1] + 0.5 * (p[3] - p[1]) + 3
        middle.append((x0, y0 - 9, x0 + 5.4 * len(e["label"]), y0))
    assert _overlapping(middle)


def test_a_failure_without_a_cell_line_does_not_blame_the_forward():
    """Issue 33, point 5: ``%%autograd --backward los`` (a typo) raises in the option's
    expression, no line of the cell: the picture says the forward ran, then what failed."""
    _, snap = _snap()
    error = "NameError: %%autograd --backward los: name 'los' is not defined"
    snap["failure"] = {"line": None, "source": "", "error": error}
    texts = _texts(snapshot_svg(snap))
    assert "The forward ran; then the cell failed:" in texts, texts
    assert error in texts
    assert not any("forward failed" in t or "null" in t or "None" in t for t in texts), texts
    snap["failure"] = {"line": 3, "source": "z = y @ w", "error": "RuntimeError: shapes"}
    assert "The forward failed at line 3: z = y @ w" in _texts(snapshot_svg(snap))
