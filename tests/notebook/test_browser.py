"""End to end: a real JupyterLab in headless Chromium runs ``%%autograd`` cells, and the widgets
respond to clicks (follows shared/recipes/jupyterlab-browser-tests.md).

Needs ``jupyterlab``, ``playwright`` (Python package only, never ``playwright install``) and
Debian's Chromium at /usr/bin/chromium (``apt-get install -y chromium``): the README's test
command installs all three, so a missing one fails the test, saying which. Screenshots go to
``$NBGRAD_ARTIFACTS`` (default: pytest's tmp dir).
"""

import json
import os
import secrets
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

CELLS = [
    "%load_ext nbgrad\nimport nbgrad as ng",
    # the graph grows while the cell runs
    "%%autograd\n"
    "import time\n"
    "h = ng.ones(2, requires_grad=True)\n"
    "for _ in range(8):\n"
    "    h = h * 2\n"
    "    time.sleep(0.5)",
    "%%autograd --backward loss --retain-graph -o s\n"
    "x = ng.tensor([1.0, 2.0], requires_grad=True)\n"
    "w = ng.tensor([0.5, -1.0], requires_grad=True)\n"
    "y = (x * w).tanh()\n"
    "loss = y.sum()\n"
    "loss",
    "%%autograd --step --backward out\nout = (x * x).exp().sum()",
    "%%autograd --static\nz = (x + w).sum()",
]
# module groups through the recorder stack (way 2 of NOTE [Module groups] in recorder.py)
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


def _notebook(path):
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"c{i}",
                "metadata": {},
                "outputs": [],
                "source": src,
            }
            for i, src in enumerate(CELLS)
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


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    private = tmp_path_factory.mktemp("lab-private")
    _notebook(root / "autograd.ipynb")
    settings = private / "settings"
    for rel, content in [
        ("@jupyterlab/docmanager-extension/plugin.jupyterlab-settings", {"autosave": False}),
        (
            "@jupyterlab/apputils-extension/notification.jupyterlab-settings",
            {"fetchNews": "false", "checkForUpdates": False},
        ),
        ("@jupyterlab/notebook-extension/tracker.jupyterlab-settings", {"windowingMode": "none"}),
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
        PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    )
    log = open(private / "server.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--LabApp.extension_manager=readonly",
            "--LabApp.expose_app_in_browser=True",
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
            pytest.fail("JupyterLab did not start:\n" + (private / "server.log").read_text())
        yield {"url": url, "token": token, "root": root}
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


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


@pytest.fixture
def artifacts(tmp_path):
    out = Path(os.environ.get("NBGRAD_ARTIFACTS", tmp_path))
    out.mkdir(parents=True, exist_ok=True)
    return out


def test_autograd_cells_in_jupyterlab(lab, browser, artifacts):
    page = browser.new_page(viewport={"width": 1400, "height": 3000})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        _run(page, lab, errors)
    finally:
        page.screenshot(path=str(artifacts / "autograd-notebook.png"))
        page.close()


def _run(page, lab, errors):
    page.goto(f"{lab['url']}/lab/tree/autograd.ipynb?reset&token={lab['token']}")
    nb = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    status = page.locator(".jp-StatusBar-TextItem", has_text="| Idle")
    status.first.wait_for(timeout=90_000)
    page.evaluate("window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    # not awaited: the command's promise resolves only when every cell has run
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")

    # the graph of cell 2: nodes, leaves named, gradients on the edges
    def cell(i):
        return nb.locator(".jp-CodeCell").nth(i)

    live = cell(1).locator(".nbg-graph").first
    live.locator(".nbg-status", has_text="recording").wait_for(timeout=90_000)
    page.wait_for_function(
        "() => document.querySelectorAll('.nbg-graph')[0]"
        ".querySelectorAll('.nbg-node').length >= 3",
        timeout=30_000,
    )
    seen_live = live.locator(".nbg-node").count()
    assert seen_live < 9  # caught while growing: 8 MulBackward0 and a leaf at the end

    graph = cell(2).locator(".nbg-graph")
    graph.wait_for(timeout=90_000)
    graph.locator(".nbg-edge-label").first.wait_for(timeout=60_000)
    labels = graph.locator(".nbg-node .nbg-label").all_text_contents()
    assert {"TanhBackward0", "MulBackward0", "SumBackward0", "x", "w"} <= set(labels), labels
    # cell 3's stepper and cell 4's still picture
    stepper = cell(3).locator(".nbg-stepper")
    stepper.wait_for(timeout=60_000)
    nb.locator(".jp-OutputArea-output img, .jp-OutputArea-output svg").filter(
        has_text=""
    ).first.wait_for(timeout=60_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-InputArea-prompt')]"
        ".every(p => !p.textContent.includes('[*]'))",
        timeout=90_000,
    )

    # click the tanh node: the details panel shows it, and the hook editor follows
    graph.locator(".nbg-node", has_text="TanhBackward0").first.click()
    panel = graph.locator(".nbg-panel")
    panel.get_by_text("next_functions").wait_for(timeout=20_000)
    assert "TanhBackward0" in panel.inner_text()
    editor = cell(2).locator(".nbg-hooks")
    editor.locator(".nbg-hooks-title", has_text="Hooks on TanhBackward0").wait_for(timeout=20_000)

    # add a hook by typing Python, run backward, see it fire with the gradient before and after
    editor.locator("select.nbg-hooks-kind").select_option("tensor_hook")
    editor.locator("textarea.nbg-hooks-code").first.fill("lambda grad: grad * 10")
    editor.locator("button.nbg-hooks-add").click()
    editor.locator(".nbg-hook-name", has_text="<hook:TanhBackward0#").wait_for(timeout=20_000)
    editor.locator("input.nbg-retain").check()
    editor.locator("button.nbg-hooks-run").click()
    fired = editor.locator(".nbg-hooks-fired")
    fired.get_by_text("tensor", exact=True).wait_for(timeout=20_000)
    assert "<hook:TanhBackward0#" in fired.inner_text()
    # a syntax error shows in the editor and loses no hook
    editor.locator("textarea.nbg-hooks-code").first.fill("lambda grad: grad +")
    editor.locator("button.nbg-hooks-add").click()
    editor.locator(".nbg-hooks-error", has_text="SyntaxError").first.wait_for(timeout=20_000)
    assert editor.locator(".nbg-hook-item").count() == 1

    # a group-less graph has no collapse; pan and zoom change the transform
    before = graph.locator(".nbg-viewport").get_attribute("transform")
    graph.locator("button", has_text="+").click()
    assert graph.locator(".nbg-viewport").get_attribute("transform") != before

    # the stepper moves one node forward and back
    info = stepper.locator(".nbg-step-info")
    assert info.inner_text().startswith("start")
    stepper.locator("button[title='forward one node']").click()
    page.wait_for_function(
        "() => document.querySelector('.nbg-step-info').textContent.startsWith('step 1 /')"
    )
    assert stepper.locator(".nbg-running").count() == 1
    assert "Ready queue (cpu)" in stepper.locator(".nbg-step-panel").inner_text()
    stepper.locator("button[title='forward one node']").click()
    stepper.locator("button[title='back one node']").click()
    page.wait_for_function(
        "() => document.querySelector('.nbg-step-info').textContent.startsWith('step 1 /')"
    )

    # module groups: a box per module call; clicking its label collapses it
    model = cell(5).locator(".nbg-graph")
    label = model.locator(".nbg-group-label", has_text="first: Block")
    label.wait_for(timeout=20_000)
    assert "model: Block" in model.locator(".nbg-group-label").all_text_contents()[0]
    label.click()
    model.locator(".nbg-node.nbg-group", has_text="first: Block").wait_for(timeout=20_000)
    model.locator("button", has_text="Collapse all").click()
    model.locator(".nbg-node.nbg-group", has_text="model: Block").wait_for(timeout=20_000)
    assert model.locator(".nbg-node").count() == 2  # the model's box and the sum
    # the live cell ended with its final graph, shown once
    first = cell(1).locator(".nbg-graph")
    assert first.locator(".nbg-node").count() == 9
    assert "recording" not in first.locator(".nbg-status").inner_text()
    assert not errors, errors
