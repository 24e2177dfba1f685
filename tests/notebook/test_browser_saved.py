"""A saved notebook keeps its pictures (NOTE [Saved notebooks keep their pictures] in
widgets/common.js): tutorial 00 is run in a real JupyterLab, and in Notebook 7, with the widget
manager's "Save Widget State Automatically" off (the default) and on; the notebook is saved,
its kernel shut down, and the page closed. Opened again without running anything, each output
that showed a live widget shows its still picture, none says "Error displaying widget: model
not found", and the saved file holds each picture once (no widget view, no widget state for
nbgrad's widgets); running the cells again brings the live widgets back. Reuses
test_browser.py's server and browser; screenshots go to ``$NBGRAD_ARTIFACTS``.
"""

import contextlib
import importlib.util
import json
import urllib.request

import pytest
from ipywidgets.widgets.widget import _instances
from test_browser import TUTORIAL, Notebook, artifacts, browser, run_lab  # noqa: F401 - fixtures

from nbgrad.notebook.graph_view import GraphView
from nbgrad.notebook.hook_editor import HookEditor

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# the notebook open in the page, its kernel started and idle
READY = (
    "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
    " return !!(w && w.context && w.context.isReady && w.sessionContext.session"
    " && w.sessionContext.session.kernel && w.sessionContext.kernelDisplayStatus === 'idle'); }"
)
# each code cell's outputs: live nbgrad widgets, pictures (width, shown height), text
OUTPUTS = """() => [...document.querySelectorAll(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell')].map((c) => [
  ...c.querySelectorAll('.jp-OutputArea-output')].map((o) => ({
    live: o.querySelectorAll('.nbg-graph, .nbg-hooks, .nbg-stepper').length,
    pictures: [...o.querySelectorAll('img')].map(
      (i) => [i.naturalWidth, i.getBoundingClientRect().height]),
    text: o.innerText.slice(0, 200),
  })))"""


def _url(lab, app):
    if app == "jupyterlab":
        return f"{lab['url']}/lab/tree/{TUTORIAL.name}?reset&token={lab['token']}"
    return f"{lab['url']}/notebooks/{TUTORIAL.name}?token={lab['token']}"


@contextlib.contextmanager
def _opened(chromium, folder, lab, app, name):
    """The tutorial open in a new page of ``chromium``, its kernel idle: yields the page's
    Notebook; a failure saves the page as ``FAILED-<name>.png`` in ``folder``. No error may
    reach the page, but Notebook 7.6's own at start (in its shortcuts settings; a page with no
    nbgrad widget has it too)."""
    page = chromium.new_page(viewport={"width": 1400, "height": 2400})
    book = Notebook(page, folder)
    theirs = []
    page.on(
        "pageerror",
        lambda e: (
            theirs.append(str(e))
            if e.message == "Cannot read properties of undefined (reading 'schema')"
            and "/static/notebook/notebook_core." in (e.stack or "")
            else None
        ),
    )
    try:
        page.goto(_url(lab, app))
        page.wait_for_function(READY, timeout=90_000)
        yield book
        errors = list(book.errors)
        for e in theirs:
            errors.remove(e)
        assert not errors, errors
    except BaseException:
        book.shot(f"FAILED-{name}")
        raise
    finally:
        page.close()


def _shut_down_kernels(lab):
    """Every kernel of the server shut down, as the next day finds them."""
    base = f"{lab['url']}/api/sessions"
    with urllib.request.urlopen(f"{base}?token={lab['token']}") as r:
        sessions = json.loads(r.read())
    for s in sessions:
        req = urllib.request.Request(f"{base}/{s['id']}?token={lab['token']}", method="DELETE")
        urllib.request.urlopen(req).close()
    return len(sessions)


def _shots(book, name):
    """A screenshot of each output that shows a widget or a picture."""
    outputs = book.panel.locator(".jp-OutputArea-output")
    k = 0
    for i in range(outputs.count()):
        out = outputs.nth(i)
        if out.locator(".nbg-graph, .nbg-hooks, .nbg-stepper, img").count():
            book.shot(f"{name}-{k}", out)
            k += 1


def _counts(cells):
    """Per code cell: (live widgets, pictures) among its outputs."""
    return [
        (sum(o["live"] > 0 for o in outs), sum(len(o["pictures"]) > 0 for o in outs))
        for outs in cells
    ]


@pytest.mark.parametrize("save_state", [False, True], ids=["state-off", "state-on"])
@pytest.mark.parametrize("app", ["jupyterlab", "notebook"])
def test_a_saved_tutorial_shows_its_pictures(tmp_path_factory, browser, artifacts, app, save_state):  # noqa: F811
    setting = (
        "@jupyter-widgets/jupyterlab-manager/plugin.jupyterlab-settings",
        {"saveState": save_state},
    )
    name = f"saved-{app}-state-{'on' if save_state else 'off'}"
    if app == "notebook" and importlib.util.find_spec("notebook") is None:
        pytest.fail(
            "Notebook 7 is not installed: pip install 'notebook>=7' (the test extra has it)"
        )
    with run_lab(tmp_path_factory, {TUTORIAL.name: TUTORIAL}, app, [setting]) as lab:
        # run it all, as the user does, and save
        with _opened(browser, artifacts, lab, app, f"{name}-live") as book:
            run = "window.jupyterapp.commands.execute('notebook:run-all-cells')"
            book.page.evaluate(
                "window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')"
            )
            book.page.evaluate(f"() => {{ {run}; }}")
            book.wait_all_run()
            book.panel.locator(".nbg-graph .nbg-node").first.wait_for(timeout=30_000)
            toggled = "@jupyter-widgets/jupyterlab-manager:saveWidgetState"
            assert (
                book.page.evaluate(f"window.jupyterapp.commands.isToggled('{toggled}')")
                is save_state
            )
            before = _counts(book.page.evaluate(OUTPUTS))
            # the graph and the hook editor, live; the --static cell's picture
            assert sum(n for n, _ in before) == 2 and sum(p for _, p in before) == 1, before
            _shots(book, f"{name}-live")
            book.page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
            # the page that saved keeps its live widgets
            assert _counts(book.page.evaluate(OUTPUTS)) == before
        assert _shut_down_kernels(lab) == 1

        # the file: each widget's output as its picture and text, once; no widget state
        saved = json.loads((lab["root"] / TUTORIAL.name).read_text())
        outputs = [o for c in saved["cells"] for o in c.get("outputs", []) if o.get("data")]
        assert not [o for o in outputs if WIDGET_VIEW in o["data"]]
        # a widget's output keeps its PNG alone, which says how the live widget comes back and
        # fits a narrow output (NOTE [Saved notebooks keep their pictures]); the --static cell
        # keeps its SVG too
        pictures = [o for o in outputs if "image/png" in o["data"]]
        assert len(pictures) == 3
        assert sum("image/svg+xml" in o["data"] for o in pictures) == 1
        # with the setting on, the widgets' state was written (graph and all), then left out
        assert "widgets" not in saved["metadata"], sorted(saved["metadata"])

        # opened again the next day: nothing has run, each widget's output shows its picture
        with _opened(browser, artifacts, lab, app, f"{name}-reopened") as book:
            book.page.wait_for_function(
                f"() => ({OUTPUTS})().flat().filter((o) => o.pictures.length).length >= 3",
                timeout=30_000,
            )
            cells = book.page.evaluate(OUTPUTS)
            errors = [o for o in sum(cells, []) if "Error displaying widget" in o["text"]]
            assert not errors, errors
            assert _counts(cells) == [(0, n + p) for n, p in before], (before, _counts(cells))
            for o in sum(cells, []):  # one picture an output, loaded and shown
                if o["pictures"]:
                    assert len(o["pictures"]) == 1, o
                    assert o["pictures"][0][0] > 0 and o["pictures"][0][1] > 50, o
            _shots(book, f"{name}-reopened")
            # running the cells again shows the live widgets
            book.page.evaluate(f"() => {{ {run}; }}")
            book.panel.locator(".nbg-graph .nbg-node").first.wait_for(timeout=60_000)
            book.panel.locator(".nbg-hooks").first.wait_for(timeout=30_000)
            assert _counts(book.page.evaluate(OUTPUTS)) == before
            assert "Error displaying widget" not in book.panel.inner_text()


@pytest.mark.parametrize("kind", [GraphView, HookEditor])
def test_a_widget_opens_with_its_model_id_in_its_state(kind):
    """The browser finds a widget's output by the id in its state (``_comm_id``), from the
    first state it gets, and again after the widget is closed and shown again."""
    widget = kind()
    try:
        assert widget._comm_id == widget.model_id and _instances[widget.model_id] is widget
        assert widget.get_state()["_comm_id"] == widget.model_id
        first = widget.model_id
        widget.close()
        view = widget._repr_mimebundle_()[0][WIDGET_VIEW]  # shown again: a new comm
        assert widget._comm_id == widget.model_id == view["model_id"] == first
        assert "_comm_id" not in type(widget)._frontend_writable
    finally:
        widget.close()
