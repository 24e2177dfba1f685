"""Every shape of issue 34 in a real JupyterLab (headless Chromium): a fan of 2,000 distinct
leaves, a 1,000-step RNN with an input branch, a 20-step training loop (folded: NOTE [Series] in
nbgrad/notebook/fold.py), a 4-layer TransformerEncoder, a 100,000-call chain, and an RNN cut at
--max-nodes that still shows its ``U`` (NOTE [A graph cut at max_nodes] in
nbgrad/notebook/snapshot.py). Each opens readable (at least 4 labels in view, every one at least
11 px tall), the repeated ones with one series box that says how many repeats it holds, and each
is shown at most 2 s after its cell's code ends: the code's last line prints the kernel's clock,
and the page notes when the cell's final drawing (not the live one) is in the DOM. A screenshot
of each is saved. Needs what test_browser.py needs.
"""

import math
import os
import re
from pathlib import Path

import pytest
from test_big_graphs import VISIBLE_LABELS, _graph
from test_browser import Notebook, artifacts, browser, run_lab  # noqa: F401 - fixtures

ENDED = '\nprint(f"code ended at {time.time():.3f}")'  # the kernel's clock, in s
CELLS = [
    "%load_ext nbgrad\nimport time\nimport nbgrad as ng\nfrom nbgrad import nn\nng.manual_seed(0)",
    # 1: a fan of 2,000 distinct leaves
    "%%autograd --backward loss\n"
    "x = ng.randn(8, requires_grad=True)\n"
    "ws = [ng.randn(8, requires_grad=True) for _ in range(2000)]\n"
    "loss = sum(((x * w).tanh()).sum() for w in ws)" + ENDED,
    # 2: an RNN of 1,000 steps
    "%%autograd --backward loss\n"
    "W = ng.randn(8, 8, requires_grad=True)\n"
    "U = ng.randn(8, 4, requires_grad=True)\n"
    "xs = ng.randn(1000, 4)\n"
    "h = ng.zeros(8)\n"
    "for t in range(1000):\n"
    "    h = (W @ h * 0.1 + U @ xs[t]).tanh()\n"
    "loss = h.sum()" + ENDED,
    # 3: a training loop of 20 steps
    "%%autograd\n"
    "model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))\n"
    "opt = ng.optim.SGD(model.parameters(), lr=0.1)\n"
    "x, y = ng.randn(16, 4), ng.randn(16, 1)\n"
    "for step in range(20):\n"
    "    opt.zero_grad()\n"
    "    loss = ((model(x) - y) ** 2).mean()\n"
    "    loss.backward()\n"
    "    opt.step()" + ENDED,
    # 4: an RNN of 2,000 steps cut at 1,000 nodes
    "%%autograd --backward loss --max-nodes 1000\n"
    "h = ng.zeros(8)\n"
    "for t in range(2000):\n"
    "    h = (W @ h * 0.1 + U @ xs[t % 1000]).tanh()\n"
    "loss = h.sum()",
    # 5: a 4-layer TransformerEncoder
    "%%autograd --backward loss\n"
    "layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)\n"
    "enc = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)\n"
    "loss = enc(ng.randn(2, 4, 16)).pow(2).mean()" + ENDED,
    # 6: a chain of 100,000 calls
    "%%autograd --backward loss\n"
    "h = ng.ones(4, requires_grad=True)\n"
    "for i in range(50000):\n"
    "    h = (h * 1.0001).tanh()\n"
    "loss = h.sum()" + ENDED,
    # 7, 8: 100 chains of 100 calls, expanded: 10,102 boxes, drawn in bulk
    "%%autograd -o grid\n"
    "hs = []\n"
    "for j in range(100):\n"
    "    h = ng.randn(4, requires_grad=True)\n"
    "    for i in range(50):\n"
    "        h = (h * 1.01).tanh()\n"
    "    hs.append(h)\n"
    "loss = ng.stack(hs).sum()",
    "grid.graph.expand_all()",
]
SERIES = {
    1: ("fan-2000", "×1998 more"),
    2: ("rnn-1000", "×999 more"),
    3: ("training-20", "×19 more"),
}
SHAPES = {**{i: name for i, (name, _) in SERIES.items()}, 5: "transformer-4", 6: "chain-100000"}
SHOWN_WITHIN = 2.0  # s after the cell's code ends (issue 34's acceptance)
# NOTE [When a drawing is shown]
# The page notes, per cell, the first moment its output holds a graph widget with boxes whose
# status does not say "recording" (the final drawing, not the live one), after the frame that
# draws it (a timeout after requestAnimationFrame: the task after that frame's paint). The
# kernel and the browser run on one machine, so the kernel's time.time() and Date.now() agree.
SHOWN_AT = """
window.__nbgShown = {};
setInterval(() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  if (!panel) return;
  panel.querySelectorAll('.jp-CodeCell').forEach((cell, i) => {
    if (window.__nbgShown[i] !== undefined) return;
    const graph = cell.querySelector('.nbg-graph');
    const status = graph && graph.querySelector('.nbg-status');
    if (!graph || !status || status.textContent.includes('recording')) return;
    if (!graph.querySelector('.nbg-node')) return;
    window.__nbgShown[i] = null;
    requestAnimationFrame(() => setTimeout(() => { window.__nbgShown[i] = Date.now(); }));
  });
}, 50);
"""


def renderer_rss_mb():
    """The largest resident memory of a Chromium renderer started under this process, in MB."""
    parents = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            parents[int(pid)] = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    ours, grew = {os.getpid()}, True
    while grew:
        new = {p for p, pp in parents.items() if pp in ours} - ours
        grew = bool(new)
        ours |= new
    best = 0.0
    for pid in ours:
        try:
            if b"--type=renderer" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
            rss = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
        except OSError:
            continue
        if rss:
            best = max(best, int(rss.group(1)) / 1024)
    return best


@pytest.fixture(scope="module")
def nb(tmp_path_factory, browser, artifacts):  # noqa: F811 - the fixtures imported above
    with run_lab(tmp_path_factory, {"shapes.ipynb": CELLS}) as lab:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.add_init_script(SHOWN_AT)
        book = Notebook(page, artifacts)
        book.open_and_run(lab, "shapes.ipynb")
        book.wait_all_run(timeout=600_000)
        yield book
        page.close()


@pytest.mark.parametrize("i", sorted(SERIES), ids=[SERIES[i][0] for i in sorted(SERIES)])
def test_a_repeated_shape_opens_folded_and_readable(nb, i):
    name, count = SERIES[i]
    graph = _graph(nb, i)
    labels = graph.evaluate(VISIBLE_LABELS)
    nb.shot(f"shape-{name}-open", graph)
    assert len(labels) >= 4, labels
    assert all(x["height"] >= 11 for x in labels), labels
    series = graph.locator(".nbg-series")
    assert series.count() == 1 and count in series.first.text_content()
    assert graph.locator(".nbg-node").count() < 40
    assert not nb.errors, nb.errors


@pytest.mark.parametrize("i", [5, 6], ids=[SHAPES[5], SHAPES[6]])
def test_a_big_shape_opens_readable(nb, i):
    graph = _graph(nb, i)
    labels = graph.evaluate(VISIBLE_LABELS)
    nb.shot(f"shape-{SHAPES[i]}-open", graph)
    assert len(labels) >= 4, labels
    assert all(x["height"] >= 11 for x in labels), labels
    assert graph.locator(".nbg-node").count() < 200
    assert not nb.errors, nb.errors


# The 100,000-call chain is the slowest: shown 1.72 s after its code ends at a load of about
# 1-3 on its 2 cores. Where the seconds go: about 1.0 s the magic's --backward, recorded (a plain
# backward takes 0.32 s), about 0.6 s the drawing up to its first view (NOTE [The drawing before
# the details] in nbgrad/notebook/snapshot_details.py: the snapshot of the 20,000 nodes kept
# less its details, their folding and layout), about 0.1 s from there to the drawing in the page
@pytest.mark.parametrize("i", sorted(SHAPES), ids=[SHAPES[i] for i in sorted(SHAPES)])
def test_a_shape_is_shown_soon_after_its_code_ends(nb, i):
    """NOTE [When a drawing is shown]"""
    text = "\n".join(nb.cell(i).locator(".jp-OutputArea-output").all_inner_texts())
    ended = re.search(r"code ended at (\d+\.\d+)", text)
    assert ended, text
    shown = nb.page.evaluate(f"window.__nbgShown[{i}]")
    assert shown, f"cell {i}'s final drawing was never seen"
    after = shown / 1000 - float(ended.group(1))
    print(f"{SHAPES[i]}: shown {after:.2f} s after its code ended")
    assert 0 <= after <= SHOWN_WITHIN, f"{SHAPES[i]}: shown {after:.2f} s after its code ended"


def test_a_cut_rnn_still_shows_U(nb):
    graph = _graph(nb, 4)
    nb.shot("shape-rnn-cut-open", graph)
    texts = [t.text_content() for t in graph.locator(".nbg-node .nbg-label").all()]
    assert "U" in texts and "W" in texts, texts
    status = graph.locator(".nbg-status").inner_text()
    assert "cut at 1,000 nodes (--max-nodes)" in status and "nodes left out" in status, status
    assert not nb.errors, nb.errors


# painted pixels of the bulk drawing's canvas, and the middle of a horizontal run of 5 painted
# pixels (a box's border or fill; the grid's edges are vertical) nearest the canvas's middle
CANVAS_PIXELS = """(canvas) => {
  const { width, height } = canvas;
  const data = canvas.getContext('2d').getImageData(0, 0, width, height).data;
  const at = (x, y) => data[(y * width + x) * 4 + 3] > 0;
  let painted = 0, box = null, best = Infinity;
  for (let y = 0; y < height; y++) {
    for (let x = 2; x < width - 2; x++) {
      if (!at(x, y)) continue;
      painted += 1;
      const d = Math.abs(x - width / 2) + Math.abs(y - height / 2);
      if (d < best && [-2, -1, 1, 2].every((dx) => at(x + dx, y))) {
        best = d;
        box = { x: x / devicePixelRatio, y: y / devicePixelRatio };
      }
    }
  }
  return { painted, box };
}"""


def test_a_big_graph_is_drawn_in_bulk(nb):
    """NOTE [Big graphs drawn in bulk] in widgets/graph_bulk.js: at open only what touches the
    view is in the SVG, readable; zoomed out, a canvas draws the boxes and the SVG holds none;
    a click on a box there zooms back to readable boxes."""
    graph = nb.cell(7).locator(".nbg-graph").first
    graph.locator(".nbg-cue", has_text="of 10102 boxes").wait_for(timeout=120_000)
    graph.scroll_into_view_if_needed()
    labels = graph.evaluate(VISIBLE_LABELS)
    nb.shot("bulk-open", graph)
    assert len(labels) >= 4 and all(x["height"] >= 11 for x in labels), labels
    assert 4 <= graph.locator(".nbg-node").count() < 300  # all 10,102 when drawn one by one
    page, canvas = nb.page, graph.locator(".nbg-canvas")
    graph.locator(".nbg-minimap").click()  # the graph's middle in the middle of the view
    r = canvas.bounding_box()
    page.mouse.move(r["x"] + r["width"] / 2, r["y"] + r["height"] / 2)
    page.keyboard.down("Control")
    for _ in range(60):
        if "whole graph is in view" in graph.locator(".nbg-cue").inner_text():
            break
        page.mouse.wheel(0, 100)
        page.wait_for_timeout(50)
    page.keyboard.up("Control")
    page.wait_for_timeout(200)
    nb.shot("bulk-zoomed-out", graph)
    assert "whole graph is in view (10102 boxes)" in graph.locator(".nbg-cue").inner_text()
    assert graph.locator(".nbg-node").count() == 0
    pixels = graph.locator("canvas.nbg-bulk").evaluate(CANVAS_PIXELS)
    assert pixels["painted"] > 10_000 and pixels["box"], pixels
    c = graph.locator("canvas.nbg-bulk").bounding_box()
    x, y = c["x"] + pixels["box"]["x"], c["y"] + pixels["box"]["y"]
    page.mouse.move(x, y)  # a drag around a circle, back where it began, is no click
    page.mouse.down()
    for a in range(0, 361, 30):
        page.mouse.move(x + 80 * math.sin(math.radians(a)), y + 80 - 80 * math.cos(math.radians(a)))
    page.mouse.up()
    page.wait_for_timeout(200)
    assert "whole graph is in view" in graph.locator(".nbg-cue").inner_text()
    assert graph.locator(".nbg-node").count() == 0  # (it zoomed to the box there)
    moved = graph.locator("canvas.nbg-bulk").evaluate(CANVAS_PIXELS)  # (the kept overview)
    assert abs(moved["painted"] - pixels["painted"]) < pixels["painted"] / 20, (moved, pixels)
    page.mouse.click(x, y)
    page.wait_for_timeout(200)
    labels = graph.evaluate(VISIBLE_LABELS)
    nb.shot("bulk-clicked", graph)
    assert len(labels) >= 4 and all(x["height"] >= 11 for x in labels), labels
    assert not nb.errors, nb.errors


def test_the_tab_stays_under_500_mb(nb):
    """Issue 34: the tab's memory stays under 500 MB, here with every graph above drawn (and,
    after the tests above, the big one zoomed out and in)."""
    rss = renderer_rss_mb()
    print(f"the tab's renderer: {rss:.0f} MB resident")
    assert 0 < rss < 500, rss
