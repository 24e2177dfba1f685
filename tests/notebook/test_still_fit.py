"""A cell's still picture wider than FIT_W is written to scale to the output's width (NOTE [Wide
still pictures fit the output]); a narrower one, and the PNG beside it, keep their px size."""

import xml.etree.ElementTree as ET

import nbgrad as ng
from nbgrad.notebook.recorder import Recorder
from nbgrad.notebook.snapshot import build_snapshot
from nbgrad.notebook.svg import FIT_W, fit_output, snapshot_svg


def _picture(branches):
    with Recorder() as rec:
        xs = [ng.ones(2, requires_grad=True) for _ in range(branches)]
        ops = [ng.Tensor.tanh, ng.Tensor.sin, ng.Tensor.exp, ng.Tensor.cos, ng.Tensor.sigmoid]
        sum(ops[i % len(ops)](x * (i + 1)).sum() for i, x in enumerate(xs))
    return snapshot_svg(build_snapshot(rec, timings=False))


def test_a_wide_picture_scales_to_the_output():
    svg = _picture(5)
    root = ET.fromstring(svg)
    assert float(root.get("width")) > FIT_W
    fitted = ET.fromstring(fit_output(svg))
    assert fitted.get("width") == "100%" and fitted.get("height") is None
    assert fitted.get("viewBox") == root.get("viewBox")
    assert fit_output(svg).endswith(svg[svg.index(" viewBox=") :])


def test_a_narrow_picture_keeps_its_size():
    svg = _picture(1)
    assert float(ET.fromstring(svg).get("width")) <= FIT_W
    assert fit_output(svg) == svg
