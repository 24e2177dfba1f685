"""The answers in a real JupyterLab: a cell whose backward fails with a version error shows the
answer above its graph and marks the saving node and the in-place op's node (for nbgrad code
and for PyTorch code); a ``--color`` still picture shows its legend; in the live graph a NaN's
boxes and edges are marked, "Jump to the origin" selects the origin with its line and values,
a detached weight says why its gradient is None, "Colour by" colours the boxes with a legend
(by gradient norm, and by time in backward), a training loop's modules show their gradient
norm over the steps, and a big graph drawn in bulk marks the edge whose gradient is inf (and
only it). Reuses test_browser.py's server and browser; screenshots go to ``$NBGRAD_ARTIFACTS``."""

import re

import pytest
from test_browser import Notebook, artifacts, browser, run_lab  # noqa: F401 - fixtures

NAN_CELL = (
    "%%autograd -o n\nx = {fw}.tensor([0.0, 4.0], requires_grad=True)\n"
    "w = {fw}.tensor([1.0, 2.0], requires_grad=True)\n"
    "y = {fw}.where(x > 0, x.sqrt(), {fw}.zeros(2))\nh = (w * 2).detach()\n"
    "loss = (y * h).sum()\nloss.backward()"
)
CELLS = [
    "%load_ext nbgrad\nimport nbgrad as ng\nimport torch",
    (
        "%%autograd -o s\nw = ng.ones(3, requires_grad=True)\nh = (w * 2).tanh()\n"
        "h.mul_(2)\nh.sum().backward()",
        ["raises-exception"],
    ),
    (
        "%%autograd -o t\nw = torch.ones(3, requires_grad=True)\nh = (w * 2).tanh()\n"
        "h.mul_(2)\nh.sum().backward()",
        ["raises-exception"],
    ),
    "%%autograd --static --color norm --backward loss\n"
    "x = ng.tensor([0.5, 1.0, 4.0], requires_grad=True)\nloss = (x.log() * x.exp()).sum()",
    # 4: a NaN whose forward hides it, and a weight cut off by .detach()
    NAN_CELL.format(fw="ng"),
    # 5: a model to colour, trained a few steps (its gradient flow)
    "%%autograd -o m\nng.manual_seed(0)\nmodel = ng.nn.Sequential(ng.nn.Linear(3, 8), "
    "ng.nn.Tanh(), ng.nn.Linear(8, 1))\nopt = ng.optim.SGD(model.parameters(), lr=0.1)\n"
    "x, t = ng.randn(16, 3), ng.randn(16, 1)\nfor step in range(5):\n    opt.zero_grad()\n"
    "    loss = ((model(x) - t) ** 2).mean()\n    loss.backward()\n    opt.step()",
    NAN_CELL.format(fw="torch"),  # 6: cell 4 in PyTorch
    # 7, 8: 40 chains of 20 calls and a leaf whose sqrt's gradient is inf, expanded: 1,644
    # boxes, drawn in bulk (NOTE [Big graphs drawn in bulk] in widgets/graph_bulk.js)
    "%%autograd -o big\nhs = []\nfor j in range(40):\n    h = ng.randn(4, requires_grad=True)\n"
    "    for i in range(20):\n        h = (h * 1.01).tanh()\n    hs.append(h)\n"
    "z = ng.zeros(4, requires_grad=True)\nhs.append(z.sqrt())\n"
    "loss = ng.stack(hs).sum()\nloss.backward()",
    "big.graph.expand_all()",
    # 9: a torch loop whose weight turns Inf in a step that ran unrecorded (NOTE [Repeated
    # steps counted] in nbgrad/notebook/steps.py); its own names: cell 5's model, rebound,
    # would be collected, and its gradient flow with it (a view holds modules weakly)
    "%%autograd -o u\ntorch.manual_seed(0)\n"
    "net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))\n"
    "sgd = torch.optim.SGD(net.parameters(), lr=0.1)\n"
    "xs, ys = torch.randn(5, 6), torch.tensor([0, 2, 1, 1, 0])\nfor step in range(20):\n"
    "    with torch.no_grad():\n        net[2].weight.div_(0.0 if step == 12 else 1.0)\n"
    "    sgd.zero_grad()\n    loss = torch.nn.functional.cross_entropy(net(xs), ys)\n"
    "    loss.backward()\n    sgd.step()",
]


@pytest.fixture(scope="module")
def book(tmp_path_factory, browser, artifacts):  # noqa: F811 - fixtures
    with run_lab(tmp_path_factory, {"answers.ipynb": CELLS}) as lab:
        page = browser.new_page(viewport={"width": 1400, "height": 2200})
        nb = Notebook(page, artifacts)
        nb.open_and_run(lab, "answers.ipynb")
        nb.wait_all_run()
        yield nb
        page.close()


@pytest.mark.parametrize("cell, framework", [(1, "nbgrad"), (2, "torch")])
def test_version_error_is_marked_in_the_graph(book, cell, framework):
    graph = book.cell(cell).locator(".nbg-graph").first
    banner = graph.locator(".nbg-answer")
    banner.wait_for(timeout=60_000)
    text = banner.inner_text()
    assert "'result' of TanhBackward0" in text
    assert "saved at version 0 and is at version 1" in text
    assert "line 4: h.mul_(2)" in text
    saved = graph.locator(".nbg-answer-saved")
    bumped = graph.locator(".nbg-answer-bumped")
    assert saved.count() == 1 and "TanhBackward0" in saved.text_content()
    assert bumped.count() == 1 and "MulBackward0" in bumped.text_content()
    stroke = saved.locator("rect").first.evaluate("r => getComputedStyle(r).stroke")
    assert stroke == "rgb(123, 31, 162)"
    book.shot(f"answers-version-error-{framework}", book.cell(cell))
    assert not book.errors


def test_color_overlay_still_picture_with_legend(book):
    out = book.cell(3).locator(".jp-OutputArea-output").first
    out.wait_for(timeout=60_000)
    picture = book.cell(3).locator(".jp-RenderedSVG, .jp-RenderedImage").first
    picture.wait_for(timeout=30_000)
    html = picture.evaluate("e => e.innerHTML")
    assert "colour: gradient norm (log scale)" in html or "<img" in html
    box = picture.bounding_box()
    assert box["height"] > 100
    book.shot("answers-color-norm", book.cell(3))


def _graph(book, cell):
    graph = book.cell(cell).locator(".nbg-graph").first
    graph.locator(".nbg-node").first.wait_for(timeout=60_000)
    return graph


@pytest.mark.parametrize("cell, fw", [(4, "ng"), (6, "torch")])
def test_nan_is_marked_and_jump_to_the_origin_shows_its_line(book, cell, fw):
    graph = _graph(book, cell)
    bad = graph.locator(".nbg-node.nbg-nonfinite")
    bad.first.wait_for(timeout=30_000)
    labels = [t.strip() for t in bad.locator(".nbg-label").all_text_contents()]
    assert "SqrtBackward0" in labels
    assert bad.locator(".nbg-bad-badge").count() == bad.count()  # a "!" on each, not colour alone
    dash = bad.first.locator("rect").first.evaluate("r => getComputedStyle(r).strokeDasharray")
    assert dash not in ("", "none")
    assert graph.locator(".nbg-edge-nonfinite").count() >= 1
    jump = graph.locator(".nbg-jump")
    assert jump.is_visible()
    jump.click()
    selected = graph.locator(".nbg-node.nbg-selected")
    selected.wait_for(timeout=30_000)
    assert "SqrtBackward0" in selected.text_content()
    box = graph.locator(".nbg-answer-nonfinite").first
    box.wait_for(timeout=30_000)
    text = box.inner_text()
    assert "Where the NaN/Inf started" in text
    assert f"line 4: y = {fw}.where(x > 0, x.sqrt(), {fw}.zeros(2))" in text
    assert "received: 0" in text
    book.shot(f"answers-nan-origin-{fw}", book.cell(cell))
    assert not book.errors


@pytest.mark.parametrize("cell, fw", [(4, "ng"), (6, "torch")])
def test_a_detached_weight_says_why_its_grad_is_none(book, cell, fw):
    graph = _graph(book, cell)
    graph.locator(".nbg-node", has_text="w").filter(has_not_text="Backward").first.click()
    why = graph.locator(".nbg-answer-why").first
    why.wait_for(timeout=30_000)
    text = why.inner_text()
    assert "w has no gradient: the graph was cut by .detach()" in text
    assert "line 5: h = (w * 2).detach()" in text
    book.shot(f"answers-why-detached-{fw}", book.cell(cell))
    assert not book.errors


def test_colour_by_gradient_norm_with_its_legend(book):
    graph = _graph(book, 5)
    graph.locator(".nbg-color").select_option("norm")
    legend = graph.locator(".nbg-legend")
    legend.wait_for(state="visible", timeout=30_000)
    graph.locator(".nbg-legend .nbg-swatch").first.wait_for(timeout=30_000)
    assert "colour: gradient norm (log scale)" in legend.inner_text()
    fills = graph.locator(".nbg-node > rect").evaluate_all(
        "rs => rs.map(r => getComputedStyle(r).fill)"
    )
    assert len(set(fills)) > 2  # a ramp of colours, not the plain boxes
    book.shot("answers-colour-norm", book.cell(5))
    # a folded module's figures: in the legend, and in its panel when clicked
    graph.locator("button", has_text="Collapse all").click()
    # (the kernel's answer, not the legend of before: the open view had folded groups too)
    graph.locator(".nbg-legend .nbg-stats", has_text="folded model: min").wait_for(timeout=30_000)
    graph.locator(".nbg-node.nbg-group").first.dispatch_event("click")
    figures = graph.locator(".nbg-overlay-stats")
    figures.wait_for(timeout=30_000)
    assert "mean" in figures.inner_text()
    book.shot("answers-colour-folded", book.cell(5))
    assert not book.errors


def test_colour_by_time_in_backward_with_its_legend(book):
    graph = _graph(book, 5)
    graph.locator(".nbg-color").select_option("time")
    legend = graph.locator(".nbg-legend", has_text="time spent in backward (log scale)")
    legend.wait_for(state="visible", timeout=30_000)
    text = legend.inner_text()
    assert "low " in text and "high " in text and ("us" in text or "ms" in text)
    graph.locator("button", has_text="Collapse all").click()
    stats = graph.locator(".nbg-legend .nbg-stats", has_text="folded model: min")
    stats.wait_for(timeout=30_000)
    assert " sum " in stats.inner_text() and "s, mean" in stats.inner_text()
    book.shot("answers-colour-time", book.cell(5))
    assert not book.errors


def test_a_training_loop_draws_each_module_s_gradient_flow(book):
    graph = _graph(book, 5)
    spark = graph.locator(".nbg-spark")
    spark.first.wait_for(timeout=30_000)
    points = spark.first.locator("polyline").get_attribute("points")
    assert len(points.split()) == 5  # one point a step
    graph.locator(".nbg-color").select_option("")
    graph.locator(".nbg-legend").wait_for(state="hidden", timeout=30_000)
    graph.locator(".nbg-node.nbg-group").first.wait_for(timeout=30_000)
    # a folded module's box: a click selects it (and opens it), its plot in the details
    graph.locator(".nbg-node.nbg-group").last.dispatch_event("click")
    plot = graph.locator(".nbg-flow-plot")
    plot.wait_for(timeout=30_000)
    assert "pass 5" in plot.text_content()
    book.shot("answers-gradient-flow", book.cell(5))
    assert not book.errors


# each edge drawn: whether it is marked non-finite, and its tooltip (its gradient norms)
EDGES = """(graph) => [...graph.querySelectorAll('.nbg-edge')].map((e) =>
  [e.classList.contains('nbg-edge-nonfinite'), e.querySelector('title').textContent])"""


def test_a_big_graph_drawn_in_bulk_marks_its_inf_edge(book):
    """NOTE [Marks on what is placed] in widgets/answers.js: the bulk drawing holds the edges in
    view, in the order they came in; each is marked from its own layout edge."""
    graph = book.cell(7).locator(".nbg-graph").first
    graph.locator(".nbg-cue", has_text=re.compile(r"of 164\d boxes")).wait_for(timeout=120_000)
    graph.scroll_into_view_if_needed()
    graph.locator(".nbg-jump").click()  # to the origin: the sqrt, whose edge to z carries inf
    graph.locator(".nbg-node.nbg-selected").wait_for(timeout=30_000)
    book.page.wait_for_timeout(300)
    edges = graph.evaluate(EDGES)
    assert 0 < len(edges) < 500, len(edges)  # drawn in bulk: only what is in view
    bad = [title for _, title in edges if "inf" in title or "nan" in title]
    marked = [title for on, title in edges if on]
    assert bad and marked == bad, (bad, marked)
    book.shot("answers-bulk-inf-edge", book.cell(7))
    assert not book.errors


def test_a_nan_found_in_a_torch_loop_s_unrecorded_steps_says_so(book):
    graph = _graph(book, 9)
    graph.locator(".nbg-node.nbg-nonfinite").first.wait_for(timeout=30_000)
    graph.locator(".nbg-jump").click()
    box = graph.locator(".nbg-answer-nonfinite").first
    box.wait_for(timeout=30_000)
    text = box.inner_text()
    assert "Where the NaN/Inf was found (unrecorded steps)" in text
    assert "the gradient net.2.bias got in the loop's iteration 12 held nan" in text
    assert "iterations 3 to 12 ran unrecorded" in text and "--all-steps" in text
    book.shot("answers-nan-unrecorded-torch", book.cell(9))
    assert not book.errors
