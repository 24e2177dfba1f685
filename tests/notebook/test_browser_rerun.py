"""Re-running cells in a real JupyterLab + headless Chromium (nbgrad/notebook/sessions.py and
NOTE [Released and kernel-gone views] in widgets/common.js): one ``%%autograd --backward loss``
cell with a 603-node graph re-run 50 times (after 30 to warm up) keeps the kernel's memory
flat and closes the earlier runs' widgets; a view of a released widget says so; after a kernel
restart the views say that their kernel is gone and keep their drawing.
Reuses test_browser.py's server and page helpers.
"""

import re

import pytest
from test_browser import Notebook, artifacts, browser, run_lab  # noqa: F401 - fixtures

CELLS = [
    "%load_ext nbgrad\n"
    "import gc\n"
    "import nbgrad as ng\n"
    "from ipywidgets.widgets.widget import _instances\n"
    "from nbgrad.notebook._widget import StillWidget\n"
    "def probe():\n"
    "    gc.collect()\n"
    "    rss = int(open('/proc/self/statm').read().split()[1]) * 4096 / 2**20\n"
    "    alive = sum(isinstance(w, StillWidget) for w in list(_instances.values()))\n"
    "    print(f'RSS {rss:.1f} MB; {alive} widgets open')",
    # 1: the cell re-run 50 times: 300 mul, 300 tanh, a sum, two leaves (603 nodes)
    "%%autograd --backward loss\n"
    "x = ng.ones(16, requires_grad=True)\n"
    "w = ng.full((16,), 1.01, requires_grad=True)\n"
    "h = x\n"
    "for i in range(300):\n"
    "    h = (h * w).tanh()\n"
    "loss = h.sum()",
    # 2: the kernel's resident memory and its open nbgrad widgets
    "probe()",
    # 3, 4: a kept session's graph shown again in another cell (released when 3 runs again)
    "%%autograd -o kept\nq = (ng.ones(2, requires_grad=True) * 3).exp().sum()",
    "display(kept.graph)",
]
RUNS = 50
WARM_UP = 30  # re-runs before the memory is read (NOTE [Memory flat after a warm-up])


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with run_lab(tmp_path_factory, {"rerun.ipynb": CELLS}) as server:
        yield server


@pytest.fixture(scope="module")
def book(lab, browser, artifacts):  # noqa: F811 - the imported fixtures
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    nb = Notebook(page, artifacts)
    nb.open_and_run(lab, "rerun.ipynb")
    nb.wait_all_run()
    yield nb
    page.close()


def run_cell(nb, i):
    """Run cell ``i`` as the user would (select it, Shift+Enter's command) and wait for it."""
    nb.page.evaluate(
        "async (i) => { const nb = window.jupyterapp.shell.currentWidget.content;"
        " nb.activeCellIndex = i;"
        " await window.jupyterapp.commands.execute('notebook:run-cell'); }",
        i,
    )
    nb.page.wait_for_function(
        "(i) => { const c = document.querySelectorAll("
        "'.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell')[i];"
        " return /\\[\\d+\\]/.test(c.querySelector('.jp-InputArea-prompt').textContent); }",
        arg=i,
        timeout=60_000,
    )


def probe(nb):
    run_cell(nb, 2)
    out = nb.cell(2).locator(".jp-OutputArea")
    out.get_by_text("widgets open").wait_for(timeout=30_000)
    m = re.search(r"RSS ([\d.]+) MB; (\d+) widgets open", out.inner_text())
    assert m, out.inner_text()
    return float(m[1]), int(m[2])


def test_50_reruns_keep_kernel_memory_flat(book):
    graph = book.cell(1).locator(".nbg-graph")
    graph.locator(".nbg-node").first.wait_for(timeout=60_000)
    first, _ = probe(book)
    # NOTE [Memory flat after a warm-up]
    # The kernel's resident memory climbs over the first re-runs, to the high-water mark of
    # the allocator's arenas for one run of the cell, then stays: 123.3 MB after 5 runs,
    # 154.4 after 30, 154.4-154.5 at every 25 runs up to 155. What a leak would show is the
    # climb after that, so the bound is on the 50 runs after the warm-up (+0.1 and +2.2 MB in
    # two runs: where the plateau lies varies by a few MB; a cell that keeps its graph and
    # 100 kB each run grows +33 MB); the warm-up has its own, looser bound.
    for _ in range(WARM_UP):
        run_cell(book, 1)
    before, open_before = probe(book)
    for _ in range(RUNS):
        run_cell(book, 1)
    graph.locator(".nbg-node").first.wait_for(timeout=60_000)
    after, open_after = probe(book)
    print(
        f"kernel RSS {first:.1f} -> {before:.1f} MB over {WARM_UP} re-runs, "
        f"-> {after:.1f} MB over {RUNS} more ({after - before:+.1f})"
    )
    # the earlier runs' widgets are closed in the kernel: as many open as before
    assert open_after == open_before, (open_before, open_after)
    assert after - before < 6, f"kernel memory grew {after - before:.1f} MB in {RUNS} re-runs"
    assert before - first < 60, f"kernel memory grew {before - first:.1f} MB warming up"
    # one graph shows in the cell, the last run's, and nothing says "released" there
    assert book.cell(1).locator(".nbg-graph").count() == 1
    assert book.cell(1).locator(".nbg-released").count() == 0
    book.shot("rerun-50-graph", book.cell(1).locator(".jp-OutputArea"))
    assert not book.errors, book.errors


def test_a_released_view_says_so(book):
    shown = book.cell(4).locator(".nbg-graph")
    shown.locator(".nbg-node").first.wait_for(timeout=30_000)
    run_cell(book, 3)  # closes the widgets of cell 3's first run: cell 4 showed one of them
    note = book.cell(4).locator(".nbg-released")
    note.wait_for(timeout=30_000)
    assert note.inner_text() == "released: re-run the cell to see this graph again"
    assert book.cell(4).locator(".nbg-graph").count() == 0
    assert "Error" not in book.cell(4).locator(".jp-OutputArea").inner_text()
    book.shot("rerun-released-view", book.cell(4).locator(".jp-OutputArea"))
    # re-running the cell that displays it shows the graph again (a new comm)
    run_cell(book, 4)
    book.cell(4).locator(".nbg-graph .nbg-node").first.wait_for(timeout=30_000)
    assert book.cell(4).locator(".nbg-released").count() == 0
    assert not book.errors, book.errors


def test_after_a_kernel_restart_views_say_their_kernel_is_gone(book):
    graph = book.cell(1).locator(".nbg-graph")
    nodes = graph.locator(".nbg-node").count()
    assert nodes > 0
    book.page.evaluate("() => { window.jupyterapp.commands.execute('kernelmenu:restart'); }")
    book.page.locator(".jp-Dialog button", has_text="Restart").click()
    banner = graph.locator(".nbg-kernel-gone")
    banner.wait_for(state="visible", timeout=60_000)
    assert banner.inner_text().startswith("kernel gone")
    # the drawing stays, the buttons that would ask the kernel are disabled
    assert graph.locator(".nbg-node").count() == nodes
    assert graph.locator(".nbg-canvas").is_visible()
    assert graph.locator("select.nbg-pass").is_disabled()
    assert graph.locator("button", has_text="Fit").is_enabled()  # pan and zoom need no kernel
    # the hook editor of the same cell says so too
    book.cell(1).locator(".nbg-hooks .nbg-kernel-gone").wait_for(state="visible")
    book.shot("rerun-kernel-gone", book.cell(1).locator(".jp-OutputArea"))
    assert not book.errors, book.errors
