"""A small graph's first view and a still picture, in a real JupyterLab + headless Chromium at
1400 and 900 px wide (issue 33): a 2-layer MLP's graph (17 boxes) opens whole and readable (labels
of 11 px or more, every box inside the canvas, the line under it says so); a graph too tall to
show whole opens readable on its root and says what is out of view; a ``--static`` picture
wider than the output keeps 11 px labels (never scaled down to fit) and the output scrolls
sideways to its right edge, as SVG and as PNG. Screenshots go to ``$NBGRAD_ARTIFACTS``.
"""

import math
import re

import pytest
from test_browser import (  # noqa: F401 - fixtures
    Notebook,
    artifacts,
    browser,
    run_lab,
    scrolled_to_right_edge,
)
from test_browser_newcomer import MLP, _font_px, _out_of_view, _run_cell, _width

OPS = (  # thirteen different ops: a chain or a fan of them folds into no series
    "ops = [lambda h: h * 1.01, lambda h: h + 0.1, lambda h: h.tanh(), lambda h: h.sin(),"
    " lambda h: h.cos(), lambda h: h.exp(), lambda h: h.sigmoid(), lambda h: h - 0.1,"
    " lambda h: h / 2, lambda h: h.abs(), lambda h: h.relu(), lambda h: h ** 2,"
    " lambda h: h.neg()]"
)
CELLS = [
    "%load_ext nbgrad\nimport nbgrad as ng\n" + OPS,
    # 1: the newcomer's MLP (17 boxes)
    "%%autograd --backward loss\n" + MLP,
    # 2: a chain of 41 boxes, too tall for the canvas at a readable size
    "%%autograd --backward h\nh = ng.ones(3, requires_grad=True)\n"
    "for f in ops * 3:\n    h = f(h)\nh = h.sum()",
    # 3: a still picture wider than a 900 px window's output area (about 1,560 px)
    "%%autograd --static\nxs = [ng.ones(2, requires_grad=True) for _ in ops]\n"
    "total = sum(f(x).sum() for f, x in zip(ops, xs))",
]
WIDTHS = (1400, 900)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with run_lab(tmp_path_factory, {"first_view.ipynb": CELLS}) as server:
        yield server


@pytest.fixture(scope="module")
def nb(lab, browser, artifacts):  # noqa: F811 - the imported fixtures
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    book = Notebook(page, artifacts)
    book.open_and_run(lab, "first_view.ipynb")
    book.wait_all_run()
    yield book
    page.close()


def _cue(graph):
    return graph.locator(".nbg-cue").inner_text()


@pytest.mark.parametrize("px", WIDTHS)
def test_the_mlp_graph_opens_whole_and_readable(nb, px):
    _width(nb, px)
    _run_cell(nb, 1)  # a new widget, opened at this width
    graph = nb.cell(1).locator(".nbg-graph")
    nb.page.wait_for_timeout(400)
    nb.shot(f"first-view-{px}-mlp", nb.cell(1).locator(".jp-OutputArea"))
    assert _font_px(graph) >= 11, _font_px(graph)
    assert _out_of_view(graph) == 0, _cue(graph)  # no box above or below the canvas
    if px == 1400:
        assert _cue(graph) == "the whole graph is in view (17 boxes)", _cue(graph)
    else:  # 468 px of canvas for a 543 px wide graph: what is beside the view is said
        cue = _cue(graph)
        assert cue == "the whole graph is in view (17 boxes)" or re.match(
            r"\d+ of 17 boxes out of view \(\d+ (left|right)(, \d+ (left|right))?\)", cue
        ), cue
    assert not nb.errors, nb.errors


@pytest.mark.parametrize("px", WIDTHS)
def test_a_tall_graph_opens_readable_on_its_root_and_says_so(nb, px):
    _width(nb, px)
    _run_cell(nb, 2)
    graph = nb.cell(2).locator(".nbg-graph")
    nb.page.wait_for_timeout(400)
    nb.shot(f"first-view-{px}-tall", nb.cell(2).locator(".jp-OutputArea"))
    assert _font_px(graph) >= 11, _font_px(graph)
    below = _out_of_view(graph)
    total = graph.locator(".nbg-node").count()
    assert re.match(rf"{below} of {total} boxes out of view \({below} below", _cue(graph))
    # the root (the sum, drawn at the top) is in view
    root = graph.locator(".nbg-node", has_text="SumBackward0").locator("rect").last
    canvas = graph.locator(".nbg-canvas").bounding_box()
    r = root.bounding_box()
    assert canvas["y"] <= r["y"] and r["y"] + r["height"] <= canvas["y"] + canvas["height"]
    assert not nb.errors, nb.errors


# the width and height cell 3's still picture is drawn at (its viewBox), and its label size
DRAWN = """() => {
  const svg = window.jupyterapp.shell.currentWidget.content.model.cells.get(3).outputs
    .get(0).data['image/svg+xml'];
  return [...svg.match(/viewBox="0 0 ([\\d.]+) ([\\d.]+)"/).slice(1),
          svg.match(/font-size="([\\d.]+)"/)[1]].map(Number);
}"""


@pytest.mark.parametrize("mime", ["svg", "png"])
@pytest.mark.parametrize("px", WIDTHS)
def test_a_wide_still_picture_stays_readable_and_scrolls(nb, px, mime):
    """A ``--static`` picture wider than the output keeps labels of 11 px or more, and the
    output scrolls sideways to its right edge (NOTE [Still pictures keep a readable size]): as
    the SVG of a trusted notebook and as the PNG an untrusted one shows."""
    _width(nb, px)
    nb.page.evaluate(  # an untrusted output shows the PNG
        "(t) => { window.jupyterapp.shell.currentWidget.content.model.cells.get(3).trusted = t; }",
        mime == "svg",
    )
    out = nb.cell(3).locator(".jp-OutputArea-output").first
    picture = out.locator(f"img[src^='data:image/{mime}']").first
    picture.wait_for(timeout=30_000)
    out.scroll_into_view_if_needed()
    nb.page.wait_for_timeout(200)
    width, height, font = nb.page.evaluate(DRAWN)
    shown = scrolled_to_right_edge(picture)
    nb.shot(f"first-view-{px}-static-{mime}", nb.cell(3).locator(".jp-OutputArea"))
    # the labels' size on screen: the font-size times the scale to the drawing's size in whole
    # px (as an <img> is sized)
    label = font * shown["shown"][0] / math.floor(width)
    assert label >= 11, (label, shown)
    assert width > out.bounding_box()["width"], shown  # wider than the output
    assert shown["natural"] == pytest.approx([width, height], abs=1), shown  # the drawing's size
    assert shown["shown"] == pytest.approx(shown["natural"], abs=1), shown  # not scaled, not cut
    assert shown["rightEdgeInView"], shown  # scrolled to its right edge, it shows
    assert not nb.errors, nb.errors
