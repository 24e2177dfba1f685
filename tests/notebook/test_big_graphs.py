"""Graphs of real size in a real JupyterLab (headless Chromium): each opens readable, folded
where it would not fit, and can be searched and unfolded (NOTE [Readable at open] in
nbgrad/notebook/layout.py).

For each graph (a 15-node MLP, a 300-op loop, a 3,000-op chain, a 20,000-node chain, a stack of
transformer-style blocks built from nbgrad's layers): at open, with no click, at least 4 node
labels are visible inside the widget and every visible label is at least 11 px tall on screen;
a screenshot of each is saved. Then search finds a parameter inside a collapsed module and
centres it, a folded series unfolds on a click, and the 20,000-node graph shows soon after its
cell ends. Needs what test_browser.py needs.
"""

import time

import pytest
from test_browser import Notebook, artifacts, browser, run_lab  # noqa: F401 - fixtures

CELLS = [
    "%load_ext nbgrad\nimport nbgrad as ng\nfrom nbgrad import nn\nng.manual_seed(0)",
    # 1: the MLP of the issue: 15 nodes
    "%%autograd --backward loss\n"
    "model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),"
    " nn.Linear(16, 1))\n"
    "x, y = ng.randn(8, 4), ng.randn(8, 1)\n"
    "loss = nn.functional.mse_loss(model(x), y)",
    # 2: a loop of 300 elementwise ops
    "%%autograd --backward loss\n"
    "h = ng.randn(16, requires_grad=True)\n"
    "w = ng.full((16,), 0.5, requires_grad=True)\n"
    "for i in range(100):\n"
    "    h = (h * w + 0.1).tanh()\n"
    "loss = h.sum()",
    # 3: a chain of 3,000 ops
    "%%autograd --backward loss\n"
    "h = ng.randn(16, requires_grad=True)\n"
    "for i in range(1500):\n"
    "    h = h * 1.0001 + 0.001\n"
    "loss = h.sum()",
    # 4: nested modules: a stack of pre-norm residual MLP blocks
    "%%autograd --backward loss\n"
    "class Block(nn.Module):\n"
    "    def __init__(self, d):\n"
    "        super().__init__()\n"
    "        self.norm = nn.LayerNorm(d)\n"
    "        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))\n"
    "    def forward(self, x):\n"
    "        return x + self.mlp(self.norm(x))\n"
    "blocks = nn.Sequential(*[Block(16) for _ in range(6)])\n"
    "loss = blocks(ng.randn(4, 16)).pow(2).mean()",
    # 5: a 20,000-node graph (9,999 iterations of two ops, the sum and the leaf)
    "%%autograd\n"
    "h = ng.randn(16, requires_grad=True)\n"
    "for i in range(9999):\n"
    "    h = h * 1.0001 + 0.001\n"
    "big = h.sum()",
    # 6: the stepper on a 300-op loop
    "%%autograd --step --backward loss\n"
    "h = ng.randn(16, requires_grad=True)\n"
    "for i in range(100):\n"
    "    h = (h * 0.5 + 0.1).tanh()\n"
    "loss = h.sum()",
    # 7: a forward that fails on its third line
    (
        "%%autograd\n"
        "a = ng.ones(2, 3, requires_grad=True)\n"
        "b = (a * 2).sum(0)\n"
        "c = (b * 3) @ ng.ones(4, 2)",
        ["raises-exception"],
    ),
    # 8: PyTorch's own TransformerEncoderLayer (tutorial 10)
    "%%autograd --backward loss --retain-graph\n"
    "import torch\n"
    "torch.manual_seed(0)\n"
    "layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,"
    " batch_first=True)\n"
    "loss = layer(torch.randn(4, 5, 8)).pow(2).mean()",
    # 9: a chain of 3,000 calls drawn cut at 500 nodes (NOTE [A graph cut at max_nodes])
    "%%autograd --max-nodes 500\n"
    "x = ng.ones(4, requires_grad=True)\n"
    "h = x\n"
    "for i in range(1500):\n"
    "    h = (h * 1.0001).tanh()\n"
    "loss = h.sum()",
]
NAMES = {
    1: "mlp-15",
    2: "loop-300",
    3: "chain-3000",
    4: "nested-blocks",
    5: "chain-20000",
    8: "torch-transformer",
    9: "cut-500",
}

VISIBLE_LABELS = """(graph) => {
  const stage = graph.querySelector('.nbg-canvas').getBoundingClientRect();
  const out = [];
  for (const t of graph.querySelectorAll('.nbg-node .nbg-label')) {
    const r = t.getBoundingClientRect();
    if (r.width === 0 || r.bottom < stage.top || r.top > stage.bottom ||
        r.right < stage.left || r.left > stage.right) continue;
    out.push({ text: t.textContent, height: r.height });
  }
  return out;
}"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with run_lab(tmp_path_factory, {"big.ipynb": CELLS}) as server:
        yield server


@pytest.fixture(scope="module")
def nb(lab, browser, artifacts):  # noqa: F811 - the fixtures imported above
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    book = Notebook(page, artifacts)
    book.open_and_run(lab, "big.ipynb")
    # when the last cell's prompt gets its number, and when its graph is drawn
    book.wait_all_run(timeout=240_000)
    ended = time.perf_counter()
    book.cell(5).locator(".nbg-graph .nbg-node").first.wait_for(timeout=60_000)
    book.big_shown_after = time.perf_counter() - ended
    yield book
    page.close()


def _graph(nb, i):
    graph = nb.cell(i).locator(".nbg-graph").first
    graph.locator(".nbg-node").first.wait_for(timeout=60_000)
    graph.scroll_into_view_if_needed()
    return graph


@pytest.mark.parametrize("i", sorted(NAMES), ids=[NAMES[i] for i in sorted(NAMES)])
def test_readable_at_open(nb, i):
    graph = _graph(nb, i)
    labels = graph.evaluate(VISIBLE_LABELS)
    nb.shot(f"big-{NAMES[i]}-open", graph)
    assert len(labels) >= 4, labels
    small = [x for x in labels if x["height"] < 11]
    assert not small, small
    assert not nb.errors, nb.errors


def test_loop_and_chains_fold_into_a_series(nb):
    for i, count in ((2, "×99 more"), (3, "×1499 more"), (5, "×9998 more")):
        series = _graph(nb, i).locator(".nbg-series")
        assert series.count() == 1, i
        assert count in series.first.text_content()


def test_big_graph_shows_soon_after_its_cell(nb):
    assert nb.big_shown_after < 3.0, nb.big_shown_after
    status = _graph(nb, 5).locator(".nbg-status").inner_text()
    assert "20000 nodes" in status and "cut at" not in status, status


def test_a_cut_graph_says_what_it_left_out(nb):
    status = _graph(nb, 9).locator(".nbg-status")
    text = status.inner_text()
    assert "500 nodes" in text and "cut at 500 nodes (--max-nodes)" in text, text
    assert "the first 2,502 recorded calls are left out" in text, text
    # x, 2,500 nodes below the cut, is drawn as a stub (NOTE [A graph cut at max_nodes])
    assert "2,502 nodes left out; 1 leaf beyond the cut drawn without their edges" in text, text
    # the whole note is on screen, not clipped by the toolbar
    assert status.evaluate("(e) => e.scrollWidth <= e.clientWidth + 1"), text


def test_a_series_unfolds_on_click(nb):
    graph = _graph(nb, 2)
    before = graph.locator(".nbg-node").count()
    # x99 opens as 10 parts (NOTE [Splitting a long series] in fold.py), each a click more
    for clicks in range(1, 12):  # noqa: B007 - the count is checked below
        series = graph.locator(".nbg-series")
        if not series.count():
            break
        shown = graph.locator(".nbg-node").count()
        if clicks == 1:
            series.first.click()
        else:  # (a part may lie outside the widget's view: no pan to it first)
            series.first.dispatch_event("click")
        graph.page.wait_for_function(
            "([g, n]) => g.querySelectorAll('.nbg-node').length > n",
            arg=[graph.element_handle(), shown],
            timeout=30_000,
        )
    assert clicks == 11 and graph.locator(".nbg-node").count() > 200
    assert graph.locator(".nbg-series").count() == 0
    assert graph.locator(".nbg-node").count() > before
    labels = graph.evaluate(VISIBLE_LABELS)
    assert len(labels) >= 4 and all(x["height"] >= 11 for x in labels), labels
    nb.shot("big-loop-300-unfolded", graph)
    assert not nb.errors, nb.errors


def test_search_finds_a_parameter_in_a_collapsed_module(nb):
    graph = _graph(nb, 4)
    target = "blocks.4.mlp.2.weight"
    assert graph.locator(f".nbg-node[data-id] .nbg-label:text-is('{target}')").count() == 0
    graph.locator(".nbg-search").fill("4.mlp.2.weight")
    result = graph.locator(".nbg-result").first
    result.wait_for(timeout=10_000)
    nb.shot("big-nested-search", graph)
    result.click()
    label = graph.locator(f".nbg-node .nbg-label:text-is('{target}')")
    label.wait_for(timeout=30_000)
    graph.page.wait_for_timeout(300)
    box = label.bounding_box()
    stage = graph.locator(".nbg-canvas").bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    assert abs(cx - (stage["x"] + stage["width"] / 2)) < 40, (box, stage)
    assert abs(cy - (stage["y"] + stage["height"] / 2)) < 40, (box, stage)
    node = graph.locator(".nbg-node.nbg-selected .nbg-label")
    assert node.text_content() == target
    nb.shot("big-nested-found", graph)
    assert not nb.errors, nb.errors


def test_the_stepper_keeps_the_running_node_in_view(nb):
    stepper = nb.cell(6).locator(".nbg-stepper").first
    stepper.locator(".nbg-step-node").first.wait_for(timeout=60_000)
    stepper.scroll_into_view_if_needed()
    forward = stepper.locator("button[title='forward one node']")
    for _ in range(6):
        forward.click()
        running = stepper.locator(".nbg-step-node.nbg-running")
        running.wait_for(timeout=10_000)
        box = running.bounding_box()
        area = stepper.locator(".nbg-step-graph").bounding_box()
        assert area["y"] <= box["y"] and box["y"] + box["height"] <= area["y"] + area["height"]
        label = running.locator(".nbg-label").bounding_box()
        assert label["height"] >= 11, label
    nb.shot("big-stepper-300", stepper)
    assert not nb.errors, nb.errors


def _scroller(nb):
    """The element that scrolls the notebook (JupyterLab scrolls inside its own panel)."""
    return nb.panel.locator(".jp-WindowedPanel-outer").first


def test_the_wheel_scrolls_the_page_and_ctrl_wheel_zooms(nb):
    graph = _graph(nb, 1)
    canvas = graph.locator(".nbg-canvas")
    box = canvas.bounding_box()
    nb.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    scroller = _scroller(nb)
    transform = graph.locator(".nbg-viewport").get_attribute("transform")
    before = scroller.evaluate("(e) => e.scrollTop")
    nb.page.mouse.wheel(0, 300)
    nb.page.wait_for_timeout(300)
    assert scroller.evaluate("(e) => e.scrollTop") != before
    assert graph.locator(".nbg-viewport").get_attribute("transform") == transform
    box = canvas.bounding_box()
    nb.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    nb.page.keyboard.down("Control")
    nb.page.mouse.wheel(0, -200)
    nb.page.keyboard.up("Control")
    nb.page.wait_for_timeout(200)
    assert graph.locator(".nbg-viewport").get_attribute("transform") != transform
    assert not nb.errors, nb.errors


# a Ctrl + wheel step sent in the page, and at once whether a label is still laid out
WHEEL_NOW = """(canvas) => {
  const r = canvas.getBoundingClientRect();
  canvas.dispatchEvent(new WheelEvent("wheel", {deltaY: -100, ctrlKey: true, bubbles: true,
    cancelable: true, clientX: r.x + r.width / 2, clientY: r.y + r.height / 2}));
  const label = canvas.querySelector(".nbg-node text");
  return label ? getComputedStyle(label).display : "no label";
}"""


def test_labels_leave_while_the_wheel_zooms_and_come_back_after(nb):
    """NOTE [No text while the wheel zooms] in widgets/graph_view.js."""
    graph = _graph(nb, 1)
    canvas = graph.locator(".nbg-canvas")
    assert canvas.evaluate(WHEEL_NOW) == "none"
    nb.page.wait_for_timeout(600)
    assert "nbg-zooming" not in (canvas.get_attribute("class") or "")
    labels = graph.evaluate(VISIBLE_LABELS)
    assert len(labels) >= 4 and all(x["height"] >= 11 for x in labels), labels
    nb.shot("big-after-wheel-zoom", graph)
    assert not nb.errors, nb.errors


def test_a_narrow_window_keeps_the_canvas_wide(nb):
    page = nb.page
    size = page.viewport_size
    page.set_viewport_size({"width": 900, "height": 1000})
    try:
        assert page.locator(".jp-FileBrowser").first.is_visible()  # the file browser is open
        graph = _graph(nb, 4)
        page.wait_for_timeout(500)
        width = graph.locator(".nbg-canvas").bounding_box()["width"]
        assert width >= 400, width
        labels = graph.evaluate(VISIBLE_LABELS)
        assert len(labels) >= 4 and all(x["height"] >= 11 for x in labels), labels
        nb.shot("big-narrow-900", graph)
    finally:
        page.set_viewport_size(size)
    assert not nb.errors, nb.errors


def test_a_failed_forward_marks_its_line(nb):
    graph = _graph(nb, 7)
    banner = graph.locator(".nbg-failure")
    assert banner.is_visible()
    text = banner.inner_text()
    assert "The forward failed at line 4" in text and "(b * 3) @ ng.ones(4, 2)" in text, text
    assert "RuntimeError" in text
    marked = graph.locator(".nbg-node.nbg-failed-line .nbg-label").all_text_contents()
    assert "MulBackward0" in marked, marked  # (and what matmul made before it raised)
    assert graph.locator(".nbg-node.nbg-root").count() == 0
    nb.shot("big-failed-forward", graph)
    assert not nb.errors, nb.errors


def _luminance(colour):
    r, g, b = (int(x) for x in colour[colour.index("(") + 1 : colour.index(")")].split(",")[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def test_the_dark_theme(nb):
    page = nb.page
    page.evaluate(
        "() => window.jupyterapp.commands.execute('apputils:change-theme',"
        " {theme: 'JupyterLab Dark'})"
    )
    try:
        page.wait_for_function(
            "() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000
        )
        graph = _graph(nb, 1)
        page.wait_for_timeout(500)
        rect = graph.locator(".nbg-node.nbg-node rect").first
        label = graph.locator(".nbg-node .nbg-label").first
        fill = rect.evaluate("(e) => getComputedStyle(e).fill")
        text = label.evaluate("(e) => getComputedStyle(e).fill")
        assert _luminance(fill) < 0.3 < 0.7 < _luminance(text), (fill, text)
        nb.shot("big-mlp-15-dark", graph)
    finally:
        page.evaluate(
            "() => window.jupyterapp.commands.execute('apputils:change-theme',"
            " {theme: 'JupyterLab Light'})"
        )
        page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'")
    assert not nb.errors, nb.errors


def test_a_torch_transformer_layer_shows_saved_tensors_and_takes_a_hook(nb):
    """torch's graph in the same widgets: a node's saved tensors on click; a hook added in the
    editor (which runs torch's backward) changes the gradients the graph shows."""
    graph = _graph(nb, 8)
    editor = nb.cell(8).locator(".nbg-hooks")
    panel = graph.locator(".nbg-panel")
    graph.locator(".nbg-search").fill("NativeLayerNorm")
    graph.locator(".nbg-result").first.click()
    panel.get_by_text("Saved").wait_for(timeout=20_000)
    text = panel.inner_text()
    assert "NativeLayerNormBackward0" in text and "input" in text and "4×5×8" in text, text
    nb.shot("big-torch-transformer-saved", graph)
    # the first layer norm's weight: its gradient, then zeroed by a hook from the editor
    graph.locator(".nbg-search").fill("norm1.weight")
    graph.locator(".nbg-result").first.click()
    editor.locator(".nbg-hooks-title", has_text="norm1.weight").wait_for(timeout=20_000)
    panel.get_by_text(".grad").wait_for(timeout=20_000)
    assert "‖g‖=0 " not in panel.inner_text()
    editor.locator("select.nbg-hooks-kind").select_option("tensor_hook")
    editor.locator("textarea.nbg-hooks-code").first.fill("lambda grad: grad * 0")
    editor.locator("button.nbg-hooks-add").click()
    editor.locator(".nbg-hook-name", has_text="<hook:layer.norm1.weight#").wait_for(timeout=20_000)
    editor.locator("button", has_text="Zero .grad").click()
    editor.locator("button.nbg-hooks-run").click()
    editor.locator(".nbg-hooks-fired tr", has_text="<hook:layer.norm1.weight#").wait_for(
        timeout=20_000
    )
    graph.locator(".nbg-status", has_text="gradients of pass 1").wait_for(timeout=20_000)
    graph.locator(".nbg-search").fill("norm1.weight")
    graph.locator(".nbg-result").first.click()
    panel.get_by_text("‖g‖=0 ").first.wait_for(timeout=20_000)
    nb.shot("big-torch-transformer-hook", nb.cell(8).locator(".jp-OutputArea"))
    assert not nb.errors, nb.errors
