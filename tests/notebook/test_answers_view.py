"""The answers in the live graph view (nbgrad/notebook/answers_view.py, drawn by
widgets/answers.js), through ``%%autograd -o s`` as a user gets them, for nbgrad's code and
PyTorch's alike: the NaN/Inf marks and the origin to jump to with its line and values, the why
sentence of a leaf whose ``.grad`` is None, a module's parameters without a gradient, the
colour overlays with their legend and folded groups' figures, the saved bytes of a node, and a
module's gradient norm at each step of a training loop (answers_flow.py); the drawing's pure
parts (sparkline, non-finite norms) run in Node."""

from __future__ import annotations

import json
import shutil
import subprocess

import anywidget  # noqa: F401 - the notebook extra
import numpy as np
import pytest
from IPython.utils.capture import capture_output

import nbgrad as ng
from nbgrad.notebook import record
from nbgrad.notebook._widget import esm
from nbgrad.notebook.answers_flow import GradientFlow
from nbgrad.notebook.answers_memory import format_bytes

torch = pytest.importorskip("torch")

FRAMEWORKS = ["ng", "torch"]


def run(ip, source):
    with capture_output():
        result = ip.run_cell(source)
    assert result.success, result.error_in_exec
    return result


def marks(view):
    return json.loads(view._marks_json)


def answers(view, node_id):
    view._receive({"type": "select", "id": node_id})
    assert not view.error
    return json.loads(view._details_json)["answers"]


def node_id(view, label):
    return next(n["id"] for n in view.snapshot["nodes"] if n["label"] == label)


NAN_CELL = """%%autograd -o s
x = {fw}.tensor([0.0, 4.0], requires_grad=True)
w = {fw}.tensor([1.0, 2.0], requires_grad=True)
y = {fw}.where(x > 0, x.sqrt(), {fw}.zeros(2))
h = (w * 2).detach()
loss = (y * h).sum()
loss.backward()
"""


@pytest.fixture(scope="module", params=FRAMEWORKS)
def nan_cell(request, ip):
    fw = request.param
    run(ip, "import torch")
    run(ip, NAN_CELL.format(fw=fw))
    return ip.user_ns["s"], fw


def test_the_nan_boxes_are_marked_and_the_origin_is_the_sqrt_of_zero(nan_cell):
    s, fw = nan_cell
    view = s.graph
    got = marks(view)
    sqrt = node_id(view, "SqrtBackward0")
    assert got["origin"]["id"] == sqrt
    assert "line 4:" in got["origin"]["text"]
    assert sqrt in got["bad"]
    # the origin is what the session's API says it is
    assert s.nonfinite()[0].origin and s.nonfinite()[0].node == "SqrtBackward0"
    # an edge that carried the NaN has a non-finite norm in the layout (answers.js dashes it)
    bad_edges = [
        e for e in view.graph_layout["edges"] if any(isinstance(g, str) for g in e["grads"])
    ]
    assert bad_edges


def test_the_origin_details_show_its_line_and_the_values_that_made_it(nan_cell):
    s, fw = nan_cell
    view = s.graph
    found = answers(view, marks(view)["origin"]["id"])["nonfinite"]
    assert found[0]["origin"] is True
    assert found[0]["source"] == f"y = {fw}.where(x > 0, x.sqrt(), {fw}.zeros(2))"
    assert found[0]["line"] == 4
    assert "received: 0" in found[0]["values"]  # sqrt's backward at 0: 0 * inf


def test_a_folded_series_that_holds_a_nan_is_marked(ip):
    run(
        ip,
        "%%autograd -o s\nx = ng.tensor([0.0, 4.0], requires_grad=True)\nh = x\n"
        "for _ in range(30):\n    h = (h * 1.0).sqrt() + 0.0\nh.sum().backward()",
    )
    view = ip.user_ns["s"].graph
    folded = [x["id"] for x in view.graph_layout["series"] if not x["expanded"]]
    assert folded  # the repeated steps are one series box
    assert set(folded) <= set(marks(view)["bad"])


def test_a_finite_graph_has_no_marks_and_no_origin(ip):
    run(
        ip,
        "%%autograd -o s\nx = ng.tensor([1.0, 4.0], requires_grad=True)\nx.sqrt().sum().backward()",
    )
    got = marks(ip.user_ns["s"].graph)
    assert got["bad"] == [] and got["origin"] is None


def test_a_detached_leaf_says_why_its_grad_is_none(nan_cell):
    s, fw = nan_cell
    view = s.graph
    why = answers(view, node_id(view, "w"))["why"]
    assert why["cause"] == "detached"
    assert why["source"] == "h = (w * 2).detach()"
    assert why["text"] == "w has no gradient: the graph was cut by .detach()"  # its line below
    assert "why" not in answers(view, node_id(view, "x"))  # x has a gradient (a NaN one)


MODULE_CELL = """%%autograd -o s
{fw}.manual_seed(0)
nn = {fw}.nn
enc, head, spare = nn.Linear(3, 4), nn.Linear(4, 2), nn.Linear(4, 2)
model = nn.ModuleDict({{"enc": enc, "head": head, "spare": spare}})
x = {fw}.randn(5, 3)
z = enc(x).detach()
loss = head(z).sum()
loss.backward()
"""


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_a_module_lists_its_parameters_without_a_gradient(ip, fw):
    run(ip, "import torch")
    run(ip, MODULE_CELL.format(fw=fw))
    view = ip.user_ns["s"].graph
    enc = next(g["id"] for g in view.snapshot["groups"] if g["path"] == "enc")
    unused = answers(view, enc)["unused"]
    assert [u["name"] for u in unused] == ["weight", "bias"]
    assert "z = enc(x).detach()" in unused[0]["text"]
    head = next(g["id"] for g in view.snapshot["groups"] if g["path"] == "head")
    assert answers(view, head)["unused"] == []


TRAIN_CELL = """%%autograd -o s
{fw}.manual_seed(0)
nn = {fw}.nn
model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
opt = {fw}.optim.SGD(model.parameters(), lr=0.1)
x, t = {fw}.randn(16, 3), {fw}.randn(16, 1)
norms = []
for step in range(20):
    opt.zero_grad()
    loss = ((model(x) - t) ** 2).mean()
    loss.backward()
    norms.append([float(sum((p.grad * p.grad).sum() for p in m.parameters())) ** 0.5
                  for m in (model, model[0], model[2])])
    opt.step()
"""


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_a_training_loop_gives_each_module_its_gradient_norm_at_every_step(ip, fw):
    run(ip, "import torch")
    run(ip, TRAIN_CELL.format(fw=fw))
    view = ip.user_ns["s"].graph
    # most of the 20 steps are only counted (NOTE [Repeated steps counted]): they have norms too
    assert ip.user_ns["s"].record.counted_steps > 10
    flow = marks(view)["flow"]
    want = np.array(ip.user_ns["norms"])  # steps x (model, model[0], model[2])
    assert want.shape == (20, 3)
    top = next(g["path"] for g in view.snapshot["groups"] if g["parent"] is None)
    np.testing.assert_allclose(flow[top], want[:, 0], rtol=1e-5)
    np.testing.assert_allclose(flow[f"{top}.0"], want[:, 1], rtol=1e-5)
    np.testing.assert_allclose(flow[f"{top}.2"], want[:, 2], rtol=1e-5)
    assert f"{top}.1" not in flow  # a Tanh has no parameters
    group = next(g["id"] for g in view.snapshot["groups"] if g["path"] == f"{top}.0")
    np.testing.assert_allclose(answers(view, group)["flow"], want[:, 1], rtol=1e-5)


def test_one_backward_draws_no_flow_line(nan_cell):
    s, _ = nan_cell
    assert "flow" not in marks(s.graph)


OVERLAY_CELL = """%%autograd -o s
{fw}.manual_seed(0)
nn = {fw}.nn
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
loss = model({fw}.randn(3, 4)).pow(2).sum()
loss.backward(retain_graph=True)
"""


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_colour_by_gradient_norm_has_a_legend_and_folded_group_figures(ip, fw):
    run(ip, "import torch")
    run(ip, OVERLAY_CELL.format(fw=fw))
    view = ip.user_ns["s"].graph
    view._receive({"type": "color", "kind": "norm"})
    assert not view.error
    got = marks(view)
    assert got["kind"] == view.color == "norm"
    assert got["title"] == "colour: gradient norm (log scale)"
    texts = [x["text"] for x in got["legend"]]
    assert texts[0].startswith("low ") and texts[2].startswith("high ")
    fills = {got["fills"][n["id"]] for n in view.snapshot["nodes"]}
    assert len(fills) > 2  # a ramp, not one colour
    assert got["stats"] == {}  # nothing folded
    view.collapse_all()
    stats = marks(view)["stats"]
    (top,) = [g["id"] for g in view.snapshot["groups"] if g["parent"] is None]
    assert set(stats[top]) >= {"min", "max", "sum", "mean", "count"}
    assert stats[top]["min"] <= stats[top]["mean"] <= stats[top]["max"]
    figures = answers(view, top)["overlay"]  # the folded group's panel shows them too
    assert {k: figures[k] for k in stats[top]} == stats[top]
    view._receive({"type": "color", "kind": ""})
    assert "legend" not in marks(view)


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_colour_by_saved_bytes_and_a_node_s_saved_bytes_in_its_details(ip, fw):
    run(ip, "import torch")
    run(ip, OVERLAY_CELL.format(fw=fw))
    s = ip.user_ns["s"]
    view = s.graph
    view.set_color("saved")
    got = marks(view)
    by_node = s.saved_bytes().by_node()
    assert by_node
    largest = max(by_node, key=by_node.get)
    assert got["fills"][largest] == "#e8735a"  # the ramp's top
    saved = answers(view, largest)["saved"]
    assert saved["bytes"] == by_node[largest]
    view.collapse_all()
    (top,) = [g for g in view.snapshot["groups"] if g["parent"] is None]
    stats = marks(view)["stats"][top["id"]]
    assert stats["distinct"] == s.saved_bytes().groups[top["path"]] > 0  # "model", as drawn
    assert answers(view, top["id"])["saved"]["bytes"] == stats["distinct"]


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_a_node_s_saved_bytes_are_read_from_that_node_alone(ip, fw):
    """Before any "saved" colouring, a selection reads its own node's saved tensors only, and
    says what the whole graph's answer says of it (freed_at included)."""
    run(ip, "import torch")
    run(ip, OVERLAY_CELL.format(fw=fw))
    s = ip.user_ns["s"]
    view = s.graph
    whole = {n.id: n for n in s.saved_bytes().nodes}
    assert len(whole) >= 4 and any(n.freed_at is not None for n in whole.values())
    source = view.graph_source
    read = []
    saved_tensors = source.saved_tensors
    source.saved_tensors = lambda node: read.append(node) or saved_tensors(node)
    try:
        for n in view.snapshot["nodes"]:
            read.clear()
            got = answers(view, n["id"]).get("saved")
            entry = whole.get(n["id"])
            if entry is None:
                assert got is None, (n["id"], got)
                continue
            assert len(read) == 1, (n["id"], len(read))
            freed = f", freed at step {entry.freed_at}" if entry.freed_at is not None else ""
            assert got == {
                "bytes": entry.bytes,
                "text": f"{format_bytes(entry.bytes)} in {', '.join(entry.names)}{freed}",
            }
    finally:
        del source.saved_tensors
    assert view._saved_cache is None  # the whole graph's was never made


def test_an_unknown_colour_is_refused_and_changes_nothing(ip):
    run(ip, OVERLAY_CELL.format(fw="ng"))
    view = ip.user_ns["s"].graph
    view._receive({"type": "color", "kind": "rainbow"})
    assert "no overlay 'rainbow'" in view.error
    assert view.color == "" and marks(view)["kind"] == ""


@pytest.fixture(scope="module")
def js(tmp_path_factory):
    """``js(expr)``: the JSON value of a JS expression over the graph view's module."""
    node = shutil.which("node")
    assert node, "Node.js is needed to run the widget's JS: apt-get install -y nodejs"
    module = tmp_path_factory.mktemp("answers") / "graph_view.mjs"
    module.write_text(esm("graph_view.js", "answers.js"))

    def js(expr):
        code = f"const m = await import({json.dumps(str(module))});\n"
        code += f"process.stdout.write(JSON.stringify({expr}));"
        out = subprocess.run(
            [node, "--input-type=module", "-e", code], capture_output=True, text=True, check=True
        )
        return json.loads(out.stdout)

    return js


def test_sparkline_points_span_the_box_and_skip_missing_steps(js):
    pts = js("m.sparkPoints([1, 2, null, 4], 10, 0, 30, 10)").split()
    assert pts == ["10.0,10.0", "20.0,6.7", "40.0,0.0"]  # step 3 had no gradient
    assert js("m.sparkPoints([3], 0, 0, 10, 10)") == ""
    # a hundredfold range or more is drawn on a log scale: 1, 10, 1000 evenly spaced by decade
    ys = [float(p.split(",")[1]) for p in js("m.sparkPoints([1, 10, 1000], 0, 0, 2, 9)").split()]
    assert ys == [9.0, 6.0, 0.0]


def test_non_finite_norms_are_told_apart(js):
    assert js("['nan', 'inf', '-inf', 1.5, null].map(m.badNorm)") == [
        True,
        True,
        True,
        False,
        False,
    ]
    assert js("m.bytesText(1536)") == "1.5 KiB" and js("m.bytesText(100)") == "100 B"


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_a_module_first_called_mid_loop_has_no_norm_before_it(fw):
    mod = ng if fw == "ng" else torch
    mod.manual_seed(0)
    first, late = mod.nn.Linear(2, 2), mod.nn.Linear(2, 1)
    x = mod.randn(4, 2)
    with record() as rec:
        flow = GradientFlow(rec)
        rec.subscribe(flow.on_record)
        for step in range(4):
            for p in (*first.parameters(), *late.parameters()):
                p.grad = None
            h = first(x)
            out = late(h) if step >= 2 else h
            out.sum().backward()
    assert flow.steps == 4
    assert [v is None for v in flow.of(late)] == [True, True, False, False]
    want = float(sum((p.grad * p.grad).sum() for p in late.parameters())) ** 0.5
    assert flow.of(late)[-1] == pytest.approx(want, rel=1e-5)
    assert all(v is not None for v in flow.of(first))
