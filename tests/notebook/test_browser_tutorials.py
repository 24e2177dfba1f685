"""Every tutorial, run with Run All in a real JupyterLab in headless Chromium (as a newcomer
runs them after the README's tutorials command): no error output anywhere but in the cells
tagged ``raises-exception``, which must fail; then tutorial 00's hook editor does what the
tutorial's text says (a doubling hook on ``x``, Zero .grad, Run backward: x's gradient doubled,
then four times after a second run).

The server, browser and page helpers are test_browser.py's. Screenshots go to
``$NBGRAD_ARTIFACTS`` (default: a pytest tmp dir).
"""

import json
import re
import time

import numpy as np
import pytest
from test_browser import REPO, Notebook, artifacts, browser, run_lab  # noqa: F401 - fixtures

TUTORIALS = sorted((REPO / "notebooks").glob("*.ipynb"))
ERROR_MIME = "application/vnd.jupyter.stderr"  # JupyterLab's mime type of errors and stderr


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with run_lab(tmp_path_factory, {p.name: p for p in TUTORIALS}) as server:
        yield server


def _run_all(lab, chromium, shots, path, width=1400):
    """Open ``path`` in JupyterLab, Run All, and check that only the tagged cells failed."""
    source = json.loads(path.read_text())
    code = [c for c in source["cells"] if c["cell_type"] == "code"]
    tagged = {i for i, c in enumerate(code) if "raises-exception" in c["metadata"].get("tags", [])}
    page = chromium.new_page(viewport={"width": width, "height": 2400})
    book = Notebook(page, shots)
    book.open_and_run(lab, path.name)
    book.wait_all_run(timeout=300_000)
    cells = book.panel.locator(".jp-CodeCell")
    assert cells.count() == len(code)
    for i in range(len(code)):
        outputs = cells.nth(i).locator(".jp-OutputArea")
        errors = outputs.locator(f'[data-mime-type="{ERROR_MIME}"]').all_inner_texts()
        text = outputs.inner_text()
        if i in tagged:
            assert errors, f"{path.name} cell {i} is tagged raises-exception and did not fail"
            continue
        assert not errors, (path.name, i, errors)
        # a widget that failed to render says so in place of the widget
        assert "Error displaying widget" not in text and "Traceback" not in text, (i, text)
    assert not book.errors, book.errors  # no error in the page's JavaScript either
    return book


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_every_tutorial_runs_all_without_an_error(lab, browser, artifacts, path):  # noqa: F811
    book = _run_all(lab, browser, artifacts, path)
    try:
        book.shot(f"tutorial-{path.stem}", book.panel.locator(".jp-Notebook").first)
    finally:
        book.page.close()


def _kernel_print(page, code):
    """What ``code`` prints when run in the open notebook's kernel (not in a cell)."""
    return page.evaluate(
        """async (code) => {
            const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
            const future = kernel.requestExecute({ code, silent: false, store_history: false });
            let out = "";
            future.onIOPub = (msg) => {
                if (msg.header.msg_type === "stream") out += msg.content.text;
            };
            await future.done;
            return out;
        }""",
        code,
    )


def _fmt(v):
    """A number as the widgets print it (common.js ``fmt``: four significant digits)."""
    return f"{float(f'{v:.4g}'):g}" if abs(v) < 1e4 else f"{v:.3e}"


@pytest.mark.parametrize("width", [1400, 900])
def test_tutorial_00_editor_runs_backward_as_its_text_says(
    lab,
    browser,  # noqa: F811 - the imported fixture
    artifacts,  # noqa: F811 - as above
    width,
):
    path = REPO / "notebooks" / "00_first_graph.ipynb"
    text = "".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"])
    assert "Type `lambda grad: grad * 2`" in text and "**Run backward**" in text
    x, w = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    once = np.exp(x) * np.sin(w)
    shown = ", ".join(_fmt(v) for v in once)
    assert f"[{shown}]" in text  # the numbers the text promises are these
    book = _run_all(lab, browser, artifacts, path, width=width)
    page = book.page
    try:
        # the --backward cell: its graph, then its editor
        cell = book.panel.locator(".jp-CodeCell", has_text="%%autograd --backward loss")
        graph, editor = cell.locator(".nbg-graph"), cell.locator(".nbg-hooks")
        graph.locator(".nbg-node").first.wait_for(timeout=30_000)
        label = page.locator(".nbg-label", has_text=re.compile(r"^x$"))
        graph.locator(".nbg-node", has=label).first.click()
        editor.locator(".nbg-hooks-title", has_text="Hooks on x").wait_for(timeout=20_000)
        editor.locator("select.nbg-hooks-kind").select_option("tensor_hook")
        editor.locator("textarea.nbg-hooks-code").first.fill("lambda grad: grad * 2")
        editor.locator("button.nbg-hooks-add").click()
        editor.locator(".nbg-hook-name", has_text="<hook:x#").wait_for(timeout=20_000)
        editor.locator("button.nbg-hooks-zero").click()
        editor.locator(".nbg-hooks-status", has_text="zeroed").wait_for(timeout=20_000)
        editor.locator("button.nbg-hooks-run").click()
        row = editor.locator(".nbg-hooks-fired tr", has_text="<hook:x#")
        row.wait_for(timeout=20_000)
        cells = row.locator("td").all_text_contents()
        assert cells[3].endswith(f"[{shown}]"), cells  # before the hook: e^x sin w
        twice = ", ".join(_fmt(v) for v in 2 * once)
        assert cells[4].endswith(f"[{twice}]") and f"[{twice}]" in text, cells
        assert editor.locator(".nbg-hooks-error").inner_text() == ""
        grad = json.loads(_kernel_print(page, "print(x.grad.tolist())"))
        np.testing.assert_allclose(grad, 2 * once, rtol=1e-5)
        # the graph's panel for x shows it as .grad, as the text says
        assert "the graph's panel for\n`x` shows it as `.grad`" in text
        panel = graph.locator(".nbg-panel")
        grad_row = panel.locator("tr", has_text=re.compile(r"^\.grad"))
        grad_row.filter(has_text=f"[{twice}]").wait_for(timeout=20_000)
        book.shot(f"tutorial-00-editor-{width}", cell.locator(".jp-OutputArea"))
        # once more, without Zero .grad: gradients accumulate, four times e^x sin w
        editor.locator("button.nbg-hooks-run").click()
        page.wait_for_function(
            "(el) => el.textContent.startsWith('backward ran')",
            arg=editor.locator(".nbg-hooks-status").element_handle(),
            timeout=20_000,
        )
        time.sleep(0.5)
        grad = json.loads(_kernel_print(page, "print(x.grad.tolist())"))
        np.testing.assert_allclose(grad, 4 * once, rtol=1e-5)
        assert editor.locator(".nbg-hooks-error").inner_text() == ""
        assert not book.errors, book.errors
    except BaseException:
        book.shot(f"FAILED-tutorial-00-editor-{width}")
        raise
    finally:
        page.close()
