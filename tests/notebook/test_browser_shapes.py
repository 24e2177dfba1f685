"""Repeated structure beyond chains, folded in a real JupyterLab (headless Chromium): a fan of
2,000 distinct leaves, a 1,000-step RNN with an input branch, a 20-step training loop
(NOTE [Series] in nbgrad/notebook/fold.py) and an RNN cut at --max-nodes that still shows its
``U`` (NOTE [A graph cut at max_nodes] in nbgrad/notebook/snapshot.py). Each opens readable
(at least 4 labels in view, every one at least 11 px tall) with one series box that says how
many repeats it holds; a screenshot of each is saved. Needs what test_browser.py needs.
"""

import pytest
from test_big_graphs import VISIBLE_LABELS, _graph
from test_browser import Notebook, artifacts, browser, run_lab  # noqa: F401 - fixtures

CELLS = [
    "%load_ext nbgrad\nimport nbgrad as ng\nfrom nbgrad import nn\nng.manual_seed(0)",
    # 1: a fan of 2,000 distinct leaves
    "%%autograd --backward loss\n"
    "x = ng.randn(8, requires_grad=True)\n"
    "ws = [ng.randn(8, requires_grad=True) for _ in range(2000)]\n"
    "loss = sum(((x * w).tanh()).sum() for w in ws)",
    # 2: an RNN of 1,000 steps
    "%%autograd --backward loss\n"
    "W = ng.randn(8, 8, requires_grad=True)\n"
    "U = ng.randn(8, 4, requires_grad=True)\n"
    "xs = ng.randn(1000, 4)\n"
    "h = ng.zeros(8)\n"
    "for t in range(1000):\n"
    "    h = (W @ h * 0.1 + U @ xs[t]).tanh()\n"
    "loss = h.sum()",
    # 3: a training loop of 20 steps
    "%%autograd\n"
    "model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))\n"
    "opt = ng.optim.SGD(model.parameters(), lr=0.1)\n"
    "x, y = ng.randn(16, 4), ng.randn(16, 1)\n"
    "for step in range(20):\n"
    "    opt.zero_grad()\n"
    "    loss = ((model(x) - y) ** 2).mean()\n"
    "    loss.backward()\n"
    "    opt.step()",
    # 4: an RNN of 2,000 steps cut at 1,000 nodes
    "%%autograd --backward loss --max-nodes 1000\n"
    "h = ng.zeros(8)\n"
    "for t in range(2000):\n"
    "    h = (W @ h * 0.1 + U @ xs[t % 1000]).tanh()\n"
    "loss = h.sum()",
]
SERIES = {
    1: ("fan-2000", "×1998 more"),
    2: ("rnn-1000", "×999 more"),
    3: ("training-20", "×19 more"),
}


@pytest.fixture(scope="module")
def nb(tmp_path_factory, browser, artifacts):  # noqa: F811 - the fixtures imported above
    with run_lab(tmp_path_factory, {"shapes.ipynb": CELLS}) as lab:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        book = Notebook(page, artifacts)
        book.open_and_run(lab, "shapes.ipynb")
        book.wait_all_run(timeout=300_000)
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


def test_a_cut_rnn_still_shows_U(nb):
    graph = _graph(nb, 4)
    nb.shot("shape-rnn-cut-open", graph)
    texts = [t.text_content() for t in graph.locator(".nbg-node .nbg-label").all()]
    assert "U" in texts and "W" in texts, texts
    status = graph.locator(".nbg-status").inner_text()
    assert "cut at 1,000 nodes (--max-nodes)" in status and "nodes left out" in status, status
    assert not nb.errors, nb.errors
