"""End to end: a real JupyterLab in headless Chromium runs ``%%autograd`` cells, and the widgets
respond to clicks (follows shared/recipes/jupyterlab-browser-tests.md).

One notebook of ``%%autograd`` cells is run once (module fixture ``nb``); each test then checks
one thing on that page and saves a screenshot: the graph with its node names (a), a click
showing a node's details (b), a hook typed in the editor doubling the gradient (c), the stepper
going through every node (d), the graph growing while a slow cell runs (e), module groups. A
last test runs the first tutorial, ``notebooks/00_first_graph.ipynb``, with Run All.

Needs ``jupyterlab``, ``playwright`` (Python package only, never ``playwright install``) and
Debian's Chromium at /usr/bin/chromium (``apt-get install -y chromium``): the README's test
command installs all three, so a missing one fails the test, saying which. Screenshots go to
``$NBGRAD_ARTIFACTS`` (default: a pytest tmp dir); a failing test also saves the whole page
(``pytest_runtest_makereport`` in conftest.py).
"""

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("NBGRAD_CHROMIUM", "/usr/bin/chromium")
import jupyterlab  # noqa: E402,F401 - the server the test starts
from playwright import sync_api  # noqa: E402

if not Path(CHROMIUM).is_file():
    pytest.fail(
        f"no Chromium at {CHROMIUM}: install Debian's with `apt-get install -y chromium` (the "
        "README's test command does)",
        pytrace=False,
    )

REPO = Path(__file__).resolve().parents[2]
# the Python that runs the server and its kernels: NBGRAD_LAB_PYTHON=.venv/bin/python tries the
# environment the README's tutorials command made (in a fresh clone), this one by default
LAB_PYTHON = os.environ.get("NBGRAD_LAB_PYTHON") or sys.executable
TUTORIAL = REPO / "notebooks" / "00_first_graph.ipynb"

CELLS = [
    "%load_ext nbgrad\nimport nbgrad as ng",
    # 1: the graph grows while the cell runs (test e)
    "%%autograd\n"
    "import time\n"
    "h = ng.ones(2, requires_grad=True)\n"
    "for _ in range(8):\n"
    "    h = h * 2\n"
    "    time.sleep(0.5)",
    # 2: the graph, a node's details, a hook from the editor (tests a, b, c)
    "%%autograd --backward loss --retain-graph -o s\n"
    "x = ng.tensor([1.0, 2.0], requires_grad=True)\n"
    "w = ng.tensor([0.5, -1.0], requires_grad=True)\n"
    "y = (x * w).tanh()\n"
    "loss = y.sum()\n"
    "loss",
    # 3: the stepper (test d); ``x * x`` gives two parallel edges, the sum a branch
    "%%autograd --step --backward out\n" + "out = ((x * x).exp() + w.sin()).sum()",
    # 4: a still picture only
    "%%autograd --static\nz = (x + w).sum()",
]
STEPPER_CODE = "out = ((x * x).exp() + w.sin()).sum()"
# 5: module groups through the recorder stack (way 2 of NOTE [Module groups] in recorder.py)
CELLS.append(
    "%%autograd\n"
    "from nbgrad.notebook import recorder\n"
    "class Block:\n"
    "    def __init__(self, name, *kids):\n"
    "        self.name, self.kids = name, kids\n"
    "        self.w = ng.ones(3, requires_grad=True)\n"
    "    def named_children(self):\n"
    "        return [(k.name, k) for k in self.kids]\n"
    "    def named_parameters(self, recurse=True):\n"
    "        return [('w', self.w)]\n"
    "    def __call__(self, h):\n"
    "        token = recorder.module_enter(self)\n"
    "        try:\n"
    "            h = h * self.w\n"
    "            for k in self.kids:\n"
    "                h = k(h)\n"
    "            return h.tanh()\n"
    "        finally:\n"
    "            recorder.module_exit(token)\n"
    "model = Block('model', Block('first'), Block('second'))\n"
    "pred = model(ng.ones(3)).sum()"
)


def _notebook(path, cells=CELLS):
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"c{i}",
                # a cell given as (source, tags): ("...", ["raises-exception"])
                "metadata": {"tags": src[1]} if isinstance(src, tuple) else {},
                "outputs": [],
                "source": src[0] if isinstance(src, tuple) else src,
            }
            for i, src in enumerate(cells)
        ],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def run_lab(tmp_path_factory, notebooks, app="jupyterlab", user_settings=()):
    """A JupyterLab server (or Notebook 7's, ``app="notebook"``) on a folder holding
    ``notebooks`` (``{file name: cells}``, or a Path to copy), with more ``user_settings``
    (``(file, content)`` pairs): yields its ``url``, ``token`` and ``root``."""
    root = tmp_path_factory.mktemp("lab")
    private = tmp_path_factory.mktemp("lab-private")
    for name, cells in notebooks.items():
        if isinstance(cells, Path):
            shutil.copy(cells, root / name)
        else:
            _notebook(root / name, cells)
    settings = private / "settings"
    for rel, content in [
        ("@jupyterlab/docmanager-extension/plugin.jupyterlab-settings", {"autosave": False}),
        (
            "@jupyterlab/apputils-extension/notification.jupyterlab-settings",
            {"fetchNews": "false", "checkForUpdates": False},
        ),
        ("@jupyterlab/notebook-extension/tracker.jupyterlab-settings", {"windowingMode": "none"}),
        *user_settings,
    ]:
        f = settings / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(content))
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(
        os.environ,
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(private / "workspaces"),
        JUPYTER_RUNTIME_DIR=str(private / "runtime"),
        JUPYTER_DATA_DIR=str(private / "data"),  # its own notary: every notebook is untrusted
        PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    )
    log = open(private / "server.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            LAB_PYTHON,
            "-m",
            app,
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            *(
                ["--LabApp.extension_manager=readonly", "--LabApp.expose_app_in_browser=True"]
                if app == "jupyterlab"
                else ["--JupyterNotebookApp.expose_app_in_browser=True"]
            ),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail(f"{app} did not start:\n" + (private / "server.log").read_text())
        yield {"url": url, "token": token, "root": root}
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with run_lab(tmp_path_factory, {"autograd.ipynb": CELLS, TUTORIAL.name: TUTORIAL}) as server:
        yield server


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--disable-dev-shm-usage",
            ],
        )
        yield b
        b.close()


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    out = os.environ.get("NBGRAD_ARTIFACTS")
    out = Path(out) if out else tmp_path_factory.mktemp("artifacts")
    out.mkdir(parents=True, exist_ok=True)
    return out


class Notebook:
    """A notebook open in JupyterLab: its page, its cells, and screenshots of them."""

    def __init__(self, page, artifacts):
        self.page = page
        self.artifacts = artifacts
        self.errors = []
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")

    def cell(self, i):
        return self.panel.locator(".jp-CodeCell").nth(i)

    def shot(self, name, locator=None):
        """Save a screenshot of ``locator`` (default: the page) as ``<name>.png``."""
        path = self.artifacts / f"{name}.png"
        if locator is None:
            self.page.screenshot(path=str(path))
        else:
            locator.scroll_into_view_if_needed()
            locator.screenshot(path=str(path))
        return path

    def open_and_run(self, lab, notebook):
        """Open ``notebook``, wait for its kernel, clear the stored outputs, run all cells (not
        waiting for them to finish)."""
        page = self.page
        page.goto(f"{lab['url']}/lab/tree/{notebook}?reset&token={lab['token']}")
        status = page.locator(".jp-StatusBar-TextItem", has_text="| Idle")
        status.first.wait_for(timeout=90_000)
        page.evaluate("window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
        # not awaited: the command's promise resolves only when every cell has run
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")

    def wait_all_run(self, timeout=90_000):
        self.page.wait_for_function(
            "() => { const p = [...document.querySelectorAll("
            "'.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputArea-prompt')];"
            " return p.length && p.every(x => /\\[\\d+\\]/.test(x.textContent)); }",
            timeout=timeout,
        )


def scrolled_to_right_edge(img):
    """Scroll what scrolls the picture ``img`` sideways (its output area) to the end: the
    <img>'s natural and shown size, and whether its right edge is then in view (NOTE [Still
    pictures keep a readable size])."""
    return img.evaluate(
        """(img) => {
  let box = img.parentElement;
  while (box && !(box.scrollWidth > box.clientWidth + 1
                  && /auto|scroll/.test(getComputedStyle(box).overflowX))) box = box.parentElement;
  if (box) box.scrollLeft = box.scrollWidth;
  const r = img.getBoundingClientRect();
  const p = img.closest('.jp-WindowedPanel-outer').getBoundingClientRect();  // the notebook's
  const y = (Math.max(r.top, p.top) + Math.min(r.bottom, p.bottom)) / 2;  // own scrolling
  const x = r.right - 3;
  const at = document.elementFromPoint(x, y);
  return {natural: [img.naturalWidth, img.naturalHeight], shown: [r.width, r.height],
          width: (box || img.parentElement).clientWidth, at: at && at.className,
          rightEdgeInView: at === img};
}"""
    )


@pytest.fixture(scope="module")
def nb(lab, browser, artifacts):
    """The test notebook, run once; while cell 1 runs, its live graph is caught growing."""
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    book = Notebook(page, artifacts)
    book.open_and_run(lab, "autograd.ipynb")
    live = book.cell(1).locator(".nbg-graph").first
    live.locator(".nbg-status", has_text="recording").wait_for(timeout=90_000)
    count = "() => document.querySelectorAll('.nbg-graph')[0].querySelectorAll('.nbg-node').length"
    recording = (
        "document.querySelectorAll('.nbg-graph')[0].querySelector('.nbg-status')"
        ".textContent.includes('recording')"
    )
    page.wait_for_function(f"() => ({count})() >= 3 && {recording}", timeout=30_000)
    book.shot("e-graph-growing-1", live)
    first = page.evaluate(count)  # read after the picture: it shows no more than this
    # the same cell, still running, shows more nodes than before
    page.wait_for_function(f"() => ({count})() > {first} && {recording}", timeout=30_000)
    book.shot("e-graph-growing-2", live)
    book.live = {"first": first, "second": page.evaluate(count)}
    book.wait_all_run()
    yield book
    page.close()


def test_e_graph_grows_while_the_cell_runs(nb):
    # caught twice while growing: 8 MulBackward0 and a leaf at the end
    assert 3 <= nb.live["first"] < nb.live["second"] < 9, nb.live
    first = nb.cell(1).locator(".nbg-graph")
    assert first.count() == 1  # the live view was replaced by the final one, shown once
    assert first.locator(".nbg-node").count() == 9
    assert "recording" not in first.locator(".nbg-status").inner_text()
    labels = first.locator(".nbg-node .nbg-label").all_text_contents()
    assert sorted(labels) == ["AccumulateGrad"] + ["MulBackward0"] * 8, labels
    nb.shot("e-graph-final", first)
    assert not nb.errors, nb.errors


def test_a_graph_renders_node_names(nb):
    graph = nb.cell(2).locator(".nbg-graph")
    # nothing to fold in this graph: no Expand/Collapse all buttons
    graph.locator(".nbg-node").first.wait_for(timeout=60_000)
    assert not graph.locator("button", has_text="Expand all").is_visible()
    assert not graph.locator("button", has_text="Collapse all").is_visible()
    graph.locator(".nbg-edge-label").first.wait_for(timeout=60_000)
    labels = graph.locator(".nbg-node .nbg-label").all_text_contents()
    assert sorted(labels) == ["MulBackward0", "SumBackward0", "TanhBackward0", "w", "x"], labels
    subs = graph.locator(".nbg-node", has_text="TanhBackward0").locator(".nbg-sub")
    assert subs.text_content() == "2"  # its shape
    # every edge carries the gradient that flowed through it (the cell ran backward)
    assert graph.locator(".nbg-edge-label").count() == graph.locator(".nbg-edge").count() == 4
    assert "gradients of pass 0" in graph.locator(".nbg-status").inner_text()
    # the still picture of cell 4, and no error anywhere
    nb.cell(4).locator(".jp-OutputArea-output img, .jp-OutputArea-output svg").first.wait_for()
    nb.shot("a-graph", graph)
    assert not nb.errors, nb.errors


def test_b_clicking_a_node_shows_its_details(nb):
    graph = nb.cell(2).locator(".nbg-graph")
    graph.locator(".nbg-node", has_text="TanhBackward0").first.click()
    panel = graph.locator(".nbg-panel")
    panel.get_by_text("next_functions").wait_for(timeout=20_000)
    text = panel.inner_text()
    assert text.startswith("TanhBackward0"), text
    assert "MulBackward0" in text  # its next function
    assert "result" in text  # the saved result
    assert "made by" in text and "tanh, line 4: y = (x * w).tanh()" in text, text
    assert graph.locator(".nbg-node.nbg-selected", has_text="TanhBackward0").count() == 1
    # the hook editor follows the selection
    editor = nb.cell(2).locator(".nbg-hooks")
    editor.locator(".nbg-hooks-title", has_text="Hooks on TanhBackward0").wait_for(timeout=20_000)
    # a leaf shows its tensor and its .grad
    graph.locator(".nbg-node", has_text="x").last.click()
    panel.get_by_text("Tensor", exact=True).wait_for(timeout=20_000)
    assert ".grad" in panel.inner_text()
    graph.locator(".nbg-node", has_text="TanhBackward0").first.click()
    panel.get_by_text("next_functions").wait_for(timeout=20_000)
    nb.shot("b-node-details", nb.cell(2).locator(".jp-OutputArea"))


def _g(values):
    """Numbers as the widgets write them (4 significant digits)."""
    return ", ".join(f"{v:.4g}" for v in values)


def test_c_hook_from_the_editor_doubles_the_gradient(nb):
    import numpy as np

    x, w = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    dtanh = 1 - np.tanh(x * w) ** 2  # what reaches MulBackward0 without the hook
    graph = nb.cell(2).locator(".nbg-graph")
    editor = nb.cell(2).locator(".nbg-hooks")
    graph.locator(".nbg-node", has_text="TanhBackward0").first.click()
    editor.locator(".nbg-hooks-title", has_text="Hooks on TanhBackward0").wait_for(timeout=20_000)
    # before: pass 0 (the cell's own backward) brought dtanh to MulBackward0, w * dtanh to x
    panel = graph.locator(".nbg-panel")
    for node, values in (("MulBackward0", dtanh), ("x", w * dtanh)):
        graph.locator(".nbg-node", has_text=node).last.click()
        panel.get_by_text("Gradient received").wait_for(timeout=20_000)
        assert f"[{_g(values)}]" in panel.inner_text(), panel.inner_text()
    graph.locator(".nbg-node", has_text="TanhBackward0").first.click()
    editor.locator(".nbg-hooks-title", has_text="Hooks on TanhBackward0").wait_for(timeout=20_000)

    editor.locator("select.nbg-hooks-kind").select_option("tensor_hook")
    editor.locator("textarea.nbg-hooks-code").first.fill("lambda g: g * 2")
    editor.locator("button.nbg-hooks-add").click()
    editor.locator(".nbg-hook-name", has_text="<hook:TanhBackward0#").wait_for(timeout=20_000)
    editor.locator("input.nbg-retain").check()
    editor.locator("button.nbg-hooks-run").click()
    fired = editor.locator(".nbg-hooks-fired")
    row = fired.locator("tr", has_text="<hook:TanhBackward0#")
    row.wait_for(timeout=20_000)
    cells = row.locator("td").all_text_contents()
    # kind, hook, node, before, after: the gradient of y, [1, 1], doubled
    assert cells[0] == "tensor", cells
    assert cells[3].endswith("[1, 1]") and cells[4].endswith("[2, 2]"), cells
    assert "‖g‖=1.414" in cells[3] and "‖g‖=2.828" in cells[4], cells
    # the graph now shows pass 1: MulBackward0 and the leaf x received twice as much
    graph.locator(".nbg-status", has_text="gradients of pass 1").wait_for(timeout=20_000)
    for node, values in (("MulBackward0", 2 * dtanh), ("x", 2 * w * dtanh)):
        graph.locator(".nbg-node", has_text=node).last.click()
        panel.get_by_text("Gradient received").wait_for(timeout=20_000)
        assert f"[{_g(values)}]" in panel.inner_text(), panel.inner_text()
    nb.shot("c-hook-doubles-gradient", nb.cell(2).locator(".jp-OutputArea"))

    # a syntax error shows in the editor and loses no hook
    graph.locator(".nbg-node", has_text="TanhBackward0").first.click()
    editor.locator(".nbg-hooks-title", has_text="Hooks on TanhBackward0").wait_for(timeout=20_000)
    editor.locator("textarea.nbg-hooks-code").first.fill("lambda grad: grad +")
    editor.locator("button.nbg-hooks-add").click()
    editor.locator(".nbg-hooks-error", has_text="SyntaxError").first.wait_for(timeout=20_000)
    assert editor.locator(".nbg-hook-item").count() == 1
    status = editor.locator(".nbg-hooks-status")
    assert "backward failed" not in status.inner_text()  # a failed add says so, nothing else

    # the graph is retained by default: Run backward works again, three times in a row
    for k in (2, 3, 4):
        editor.locator("button.nbg-hooks-run").click()
        graph.locator(".nbg-status", has_text=f"gradients of pass {k}").wait_for(timeout=20_000)
        assert "backward ran" in status.inner_text(), status.inner_text()
        assert editor.locator(".nbg-hooks-error").inner_text() == ""
    # a hook that raises shows its own error first
    editor.locator("select.nbg-hooks-kind").select_option("tensor_hook")
    editor.locator("textarea.nbg-hooks-code").first.fill("lambda grad: grad / undefined_name")
    editor.locator("button.nbg-hooks-add").click()
    editor.locator(".nbg-hook-name", has_text="#").nth(1).wait_for(timeout=20_000)
    editor.locator("button.nbg-hooks-run").click()
    error = editor.locator(".nbg-hooks-error", has_text="failed:").last  # the editor's own
    error.wait_for(timeout=20_000)
    assert "NameError" in error.inner_text()
    assert error.inner_text().startswith("<hook:TanhBackward0#"), error.inner_text()
    nb.shot("c-hook-raises", editor)
    for remove in editor.locator(".nbg-hook-item button", has_text="Remove").all()[::-1]:
        remove.click()
    editor.locator(".nbg-hook-item").first.wait_for(state="detached", timeout=20_000)
    # a node pre-hook written as a tensor hook: the message shows the kind's signature
    editor.locator("select.nbg-hooks-kind").select_option("node_prehook")
    placeholder = editor.locator("textarea.nbg-hooks-code").first.get_attribute("placeholder")
    assert placeholder == "lambda grad_outputs: tuple(g * 2 for g in grad_outputs)"
    editor.locator("textarea.nbg-hooks-code").first.fill("lambda g: g * 2")
    editor.locator("button.nbg-hooks-add").click()
    editor.locator(".nbg-hook-item").first.wait_for(timeout=20_000)
    editor.locator("button.nbg-hooks-run").click()
    hint = editor.locator(".nbg-hooks-error", has_text="is called as hook(grad_outputs)")
    hint.wait_for(timeout=20_000)
    nb.shot("c-hook-signature", editor)
    assert not nb.errors, nb.errors


def _expected_steps():
    """The nodes the stepper's pass runs, in order, labelled as the widget labels them: the
    same code run here, through the same recorder."""
    import nbgrad as ng
    from nbgrad.notebook import record

    x = ng.tensor([1.0, 2.0], requires_grad=True)
    w = ng.tensor([0.5, -1.0], requires_grad=True)
    scope = {"x": x, "w": w, "ng": ng}
    exec(STEPPER_CODE, scope)  # noqa: S102 - the test's own code
    with record() as rec:
        scope["out"].backward()
    names = {id(x): "x", id(w): "w"}
    labels = []
    for node in rec.passes[0].order:
        var = getattr(node, "variable", None)
        labels.append(names[id(var)] if var is not None else node.name())
    return labels


def test_d_stepper_steps_through_every_node(nb):
    expected = _expected_steps()
    n = len(expected)
    assert n == 7 and expected[:2] == ["SumBackward0", "AddBackward0"], expected
    stepper = nb.cell(3).locator(".nbg-stepper")
    info = stepper.locator(".nbg-step-info")
    assert info.inner_text() == f"start ({n} steps)"
    forward = stepper.locator("button[title='forward one node']")
    seen = []
    for k in range(1, n + 1):
        forward.click()
        nb.page.wait_for_function(
            "(k) => document.querySelectorAll('.nbg-step-info')[0]"
            ".textContent.startsWith(`step ${k} /`)",
            arg=k,
        )
        text = info.inner_text()
        assert text.startswith(f"step {k} / {n}: {expected[k - 1]} ("), (k, text)
        running = stepper.locator(".nbg-step-node.nbg-running")
        assert running.count() == 1
        assert running.locator(".nbg-label").text_content() == expected[k - 1]
        panel = stepper.locator(".nbg-step-panel").inner_text()
        assert panel.startswith(f"Running {expected[k - 1]} (") and "Ready queue (cpu)" in panel
        # a leaf's step shows the gradient accumulated into its .grad (the engine's event)
        assert ("Gradient accumulated into .grad" in panel) == (expected[k - 1] in ("x", "w"))
        assert stepper.locator(".nbg-step-node.nbg-done").count() == k - 1
        seen.append(expected[k - 1])
        if k == 3:
            nb.shot("d-stepper-step-3", stepper)
    forward.click()
    nb.page.wait_for_function(
        "() => document.querySelectorAll('.nbg-step-info')[0].textContent.startsWith('end')"
    )
    assert info.inner_text() == f"end: {n} nodes ran"
    assert stepper.locator(".nbg-step-node.nbg-done").count() == n  # every node ran, once
    assert seen == expected
    # and back one node
    stepper.locator("button[title='back one node']").click()
    nb.page.wait_for_function(
        "(n) => document.querySelectorAll('.nbg-step-info')[0]"
        ".textContent.startsWith(`step ${n} /`)",
        arg=n,
    )
    nb.shot("d-stepper-end", stepper)
    assert not nb.errors, nb.errors


def test_a_step_cell_draws_its_graph_once(nb):
    # the stepper is the --step cell's one drawing of the graph; clicking a node there selects
    # it for the hook editor below
    cell = nb.cell(3)
    assert cell.locator(".nbg-graph").count() == 0
    assert cell.locator(".nbg-stepper").count() == 1
    # the stepper names the leaves as the graph view does
    labels = cell.locator(".nbg-step-node .nbg-label").all_text_contents()
    assert "x" in labels and "w" in labels, labels
    cell.locator(".nbg-step-node", has_text="ExpBackward0").first.click()
    cell.locator(".nbg-hooks-title", has_text="Hooks on ExpBackward0").wait_for(timeout=20_000)
    assert not nb.errors, nb.errors


def test_module_groups_collapse_pan_and_zoom(nb):
    model = nb.cell(5).locator(".nbg-graph")
    label = model.locator(".nbg-group-label", has_text="first: Block")
    label.wait_for(timeout=20_000)
    assert "model: Block" in model.locator(".nbg-group-label").all_text_contents()[0]
    nb.shot("groups-expanded", model)
    # clicking a group's label collapses it (after "Fit": the graph opens readable, at its top,
    # and this label is further down); "Collapse all" leaves the top box
    model.locator("button", has_text="Fit").click()
    label.click()
    model.locator(".nbg-node.nbg-group", has_text="first: Block").wait_for(timeout=20_000)
    model.locator("button", has_text="Collapse all").click()
    model.locator(".nbg-node.nbg-group", has_text="model: Block").wait_for(timeout=20_000)
    assert model.locator(".nbg-node").count() == 2  # the model's box and the sum
    # pan and zoom change the transform
    before = model.locator(".nbg-viewport").get_attribute("transform")
    model.locator("button", has_text="+").click()
    assert model.locator(".nbg-viewport").get_attribute("transform") != before
    nb.shot("groups-collapsed", model)
    assert not nb.errors, nb.errors


def test_tutorial_00_runs_in_jupyterlab(lab, browser, artifacts):
    """The first tutorial, run top to bottom with Run All: its graph widget appears, with the
    gradients on its edges, and the printed gradients; only tagged cells may fail."""
    source = json.loads(TUTORIAL.read_text())
    code = [c for c in source["cells"] if c["cell_type"] == "code"]
    may_fail = [
        i for i, c in enumerate(code) if "raises-exception" in c["metadata"].get("tags", [])
    ]
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    book = Notebook(page, artifacts)
    try:
        book.open_and_run(lab, TUTORIAL.name)
        book.wait_all_run()
        cells = book.panel.locator(".jp-CodeCell")
        assert cells.count() == len(code)
        graph = book.panel.locator(".nbg-graph").first
        graph.locator(".nbg-edge-label").first.wait_for(timeout=30_000)
        labels = set(graph.locator(".nbg-node .nbg-label").all_text_contents())
        assert {"SumBackward0", "MulBackward0", "ExpBackward0", "SinBackward0", "x", "w"} <= labels
        # the gradients: on the edges, and printed (x.grad = e^x sin w)
        grads = graph.locator(".nbg-edge-label").all_text_contents()
        assert len(grads) == graph.locator(".nbg-edge").count(), grads
        text = book.panel.inner_text()
        assert "x.grad = tensor([" in text and "True True" in text, text[-2000:]
        # the --static cell's still picture
        assert book.panel.locator(".jp-OutputArea-output img, .jp-OutputArea-output svg").count()
        for i in range(len(code)):
            if i in may_fail:
                continue
            out = cells.nth(i).locator(".jp-OutputArea").inner_text()
            assert "Traceback" not in out and "Error:" not in out, (i, out)
        book.shot("tutorial-00", book.panel.locator(".jp-WindowedPanel-outer, .jp-Notebook").first)
        graph.scroll_into_view_if_needed()
        book.shot("tutorial-00-graph", graph)
        assert not book.errors, book.errors
    except BaseException:
        book.shot("FAILED-tutorial-00")
        raise
    finally:
        page.close()


def test_an_untrusted_tutorial_shows_its_pictures(lab, browser, artifacts):
    """A tutorial nobody has run on this machine is untrusted: JupyterLab does not render its
    stored SVG, so each picture is also stored as a PNG (nbgrad/notebook/png.py) and shows."""
    source = json.loads(TUTORIAL.read_text())
    code = [c for c in source["cells"] if c["cell_type"] == "code"]
    with_picture = [
        i
        for i, c in enumerate(code)
        if any("image/svg+xml" in o.get("data", {}) for o in c.get("outputs", []))
    ]
    assert with_picture  # the tutorial is committed executed, with its pictures
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    book = Notebook(page, artifacts)
    try:
        page.goto(f"{lab['url']}/lab/tree/{TUTORIAL.name}?reset&token={lab['token']}")
        book.panel.locator(".jp-CodeCell").first.wait_for(timeout=90_000)
        cells = book.panel.locator(".jp-CodeCell")
        # the first cell with a picture (a code cell with outputs: a cell without outputs, or a
        # markdown cell, may count as trusted)
        first = source["cells"].index(code[with_picture[0]])
        page.wait_for_function(  # the notebook's cells, not the empty model before it loads
            "n => window.jupyterapp.shell.currentWidget?.context?.isReady"
            " && window.jupyterapp.shell.currentWidget.content.model.cells.length === n",
            arg=len(source["cells"]),
            timeout=60_000,
        )
        assert not page.evaluate(
            f"() => window.jupyterapp.shell.currentWidget.content.model.cells.get({first}).trusted"
        )
        for i in with_picture:
            img = cells.nth(i).locator(".jp-OutputArea-output img").first
            img.wait_for(timeout=30_000)
            size = img.evaluate("(e) => [e.naturalWidth, e.getBoundingClientRect().height]")
            assert size[0] > 0 and size[1] > 0, (i, size)
            text = cells.nth(i).locator(".jp-OutputArea").inner_text()
            assert "<autograd graph" not in text and "GraphView(" not in text, (i, text)
        cells.nth(with_picture[0]).scroll_into_view_if_needed()
        book.shot("tutorial-00-untrusted", book.panel)
        # in a 900 px window each picture keeps its size and scrolls sideways to its right edge
        page.set_viewport_size({"width": 900, "height": 2400})
        page.wait_for_timeout(400)
        wider = 0
        for img in book.panel.locator(".jp-OutputArea-output img").all():
            img.scroll_into_view_if_needed()
            shown = scrolled_to_right_edge(img)
            assert shown["shown"] == pytest.approx(shown["natural"], abs=1), shown
            assert shown["rightEdgeInView"], shown
            wider += shown["natural"][0] > shown["width"]
        assert wider  # the hook editor's 640 px picture is wider than the 468 px output
        book.shot(
            "tutorial-00-untrusted-900", cells.nth(with_picture[-1]).locator(".jp-OutputArea")
        )
        assert not book.errors, book.errors
    except BaseException:
        book.shot("FAILED-tutorial-00-untrusted")
        raise
    finally:
        page.close()
