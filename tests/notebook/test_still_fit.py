"""A still picture (a cell's ``--static`` one, a widget's) is shown at its own size, never
scaled down to the output's width (NOTE [Still pictures keep a readable size]): the SVG keeps
its width and height in px, and the PNG beside it goes out marked ``unconfined``, so JupyterLab
scrolls a wide one sideways instead of shrinking it (test_browser_first_view.py and
test_browser_newcomer.py show it in the browser)."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import nbgrad as ng
from nbgrad.notebook import magics
from nbgrad.notebook.graph_view import GraphView
from nbgrad.notebook.hook_editor import HookEditor
from nbgrad.notebook.png import svg_to_png
from nbgrad.notebook.svg import STILL_METADATA

WIDE = """\
%%autograd --static
ops = [ng.Tensor.tanh, ng.Tensor.sin, ng.Tensor.exp, ng.Tensor.cos, ng.Tensor.sigmoid]
xs = [ng.ones(2, requires_grad=True) for _ in range(8)]
total = sum(ops[i % 5](x * (i + 1)).sum() for i, x in enumerate(xs))
"""
NARROW = "%%autograd --static\nq = (ng.ones(2, requires_grad=True) * 3).sum()"


@pytest.fixture
def shown(ip, monkeypatch):
    """What the cells run give ``display``: ``(data, metadata)`` pairs."""
    calls = []
    monkeypatch.setattr(
        magics, "display", lambda d, metadata=None, **_: calls.append((d, metadata))
    )
    return calls


def _size(data):
    """The SVG's width and height in px (None where it states no px size), and the PNG's."""
    root = ET.fromstring(data["image/svg+xml"])
    px = [root.get(k) for k in ("width", "height")]
    svg = tuple(round(float(v)) for v in px) if all(v and v[-1].isdigit() for v in px) else None
    png = svg_to_png(data["image/svg+xml"])
    return svg, (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big"))


@pytest.mark.parametrize("cell", [WIDE, NARROW])
def test_a_picture_keeps_its_size_and_its_png_is_unconfined(ip, shown, cell):
    ip.run_cell(cell)
    [(data, metadata)] = shown
    svg, png = _size(data)
    assert svg == png, (svg, png)  # the SVG's own size in px, the PNG's
    assert (svg[0] > 1000) == (cell is WIDE), svg  # WIDE: wider than a 1,400 px window's output
    assert metadata == STILL_METADATA == {"image/png": {"unconfined": True}}


def test_a_step_cell_s_pictures_are_unconfined_too(ip, shown):
    ip.run_cell(
        "%%autograd --static --step --backward y\ny = (ng.ones(2, requires_grad=True) * 3).sum()"
    )
    assert [m for _, m in shown] == [STILL_METADATA, STILL_METADATA]
    assert all(_size(d)[0] is not None for d, _ in shown)


def test_a_widget_s_still_pictures_are_unconfined():
    loss = (ng.ones(3, requires_grad=True) * 2).sum()
    data, meta = GraphView(loss)._repr_mimebundle_()
    assert "image/png" in data and meta["image/png"] == {"unconfined": True}
    data, meta = HookEditor(loss).still()._repr_mimebundle_()
    assert "image/png" in data and meta == STILL_METADATA


def test_the_tutorials_pictures_are_stored_unconfined():
    """An untrusted tutorial shows its stored PNGs: stored with the metadata the code sends."""
    stored = [
        (path.name, output.get("metadata"))
        for path in sorted((Path(__file__).parents[2] / "notebooks").glob("*.ipynb"))
        for cell in json.loads(path.read_text())["cells"]
        for output in cell.get("outputs", [])
        if "image/png" in output.get("data", {})
    ]
    assert len(stored) > 10
    assert [m for _, m in stored] == [STILL_METADATA] * len(stored), stored
