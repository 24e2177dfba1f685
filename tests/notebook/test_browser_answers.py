"""The answers in a real JupyterLab: a cell whose backward fails with a version error shows the
answer above its graph and marks the saving node and the in-place op's node (for nbgrad code
and for PyTorch code); a ``--color`` still picture shows its legend. Reuses test_browser.py's
server and browser; screenshots go to ``$NBGRAD_ARTIFACTS``."""

import pytest
from test_browser import Notebook, artifacts, browser, run_lab  # noqa: F401 - fixtures

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
