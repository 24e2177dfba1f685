"""Overlays on the still pictures (``%%autograd --color``, ``nbgrad/notebook/overlays.py``):
colour scales, the non-finite marks, folded groups' aggregates and the legend, for nbgrad
code and for PyTorch code."""

import math

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

import nbgrad as ng
from nbgrad.notebook.answers_memory import saved_bytes
from nbgrad.notebook.overlays import (
    BAD_STROKE,
    NONE_FILL,
    RAMP,
    has_nonfinite,
    overlay,
    with_legend,
)
from nbgrad.notebook.recorder import record
from nbgrad.notebook.snapshot import build_snapshot
from nbgrad.notebook.svg import snapshot_svg

torch = pytest.importorskip("torch")
LIBS = pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])


def _mlp(lib):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    x = lib.randn(3, 4, requires_grad=True)
    with record() as rec:
        loss = model(x).pow(2).sum()
        loss.backward(retain_graph=True)
    return rec, build_snapshot(rec, timings=False)


def _nan_graph(lib):
    """``where(x > 0, x.sqrt(), 0)``: the forward is finite, the backward's sqrt at 0 is not."""
    x = lib.tensor([0.0, 1.0, 4.0], requires_grad=True)
    with record() as rec:
        y = lib.where(x > 0, x.sqrt(), lib.zeros(3))
        y.sum().backward()
    return rec, build_snapshot(rec, timings=False)


@LIBS
def test_norm_overlay_is_a_log_scale_of_the_gradients(lib):
    _, snap = _mlp(lib)
    ov = overlay(snap, "norm")
    norms = {k: v for k, v in ov.values.items() if v is not None}
    assert len(norms) >= 6
    assert (ov.low, ov.high) == (min(norms.values()), max(norms.values()))
    lo = min(norms, key=norms.get)
    hi = max(norms, key=norms.get)
    assert (ov.fills[lo], ov.fills[hi]) == (RAMP[0], RAMP[-1])
    # a value at the geometric mean of low and high gets the ramp's middle colour
    mid = math.sqrt(ov.low * ov.high)
    assert ov.fill_of(mid) == RAMP[len(RAMP) // 2]
    leaf = next(n for n in snap["nodes"] if n["kind"] == "leaf" and n["tensor"]["grad"])
    assert ov.values[leaf["id"]] == pytest.approx(leaf["tensor"]["grad"]["norm"])


@LIBS
def test_order_and_saved_overlays(lib):
    rec, snap = _mlp(lib)
    order = overlay(snap, "order")
    assert order.values == {n["id"]: n["order"] for n in snap["nodes"]}
    first = next(n["id"] for n in snap["nodes"] if n["order"] == 0)
    assert order.fills[first] == RAMP[0]
    by_node = saved_bytes(rec).by_node()
    saved = overlay(snap, "saved", by_node)
    assert {k: v for k, v in saved.values.items() if v is not None} == by_node
    never = next(n["id"] for n in snap["nodes"] if n["id"] not in by_node)
    assert saved.fills[never] == NONE_FILL  # nothing saved reads as no value, not as small


@LIBS
def test_nonfinite_is_marked_not_by_colour_alone(lib):
    _, snap = _nan_graph(lib)
    bad = [n for n in snap["nodes"] if has_nonfinite(n)]
    # sqrt's backward at 0 sends a non-finite gradient, and x.grad[0] holds it
    assert sorted(n["kind"] for n in bad) == ["leaf", "node"]
    assert next(n for n in bad if n["kind"] == "node")["name"] == "SqrtBackward0"
    for kind in ("nonfinite", "norm"):
        ov = overlay(snap, kind)
        assert ov.marks == {n["id"]: "!" for n in bad}
        assert all(ov.strokes[n["id"]][0] == BAD_STROKE for n in bad)
    svg = with_legend(snapshot_svg(snap, overlay=ov), ov)
    assert f'stroke="{BAD_STROKE}" stroke-width="3" stroke-dasharray="6 3"' in svg
    assert ">!</text>" in svg and "NaN or Inf" in svg


def test_a_finite_graph_has_no_marks():
    _, snap = _mlp(ng)
    assert overlay(snap, "nonfinite").marks == {}


def test_a_snapshot_flag_wins():
    """The ``nonfinite`` flag a snapshot may carry (forward values) is read first."""
    assert has_nonfinite({"nonfinite": True, "grad": None})
    assert not has_nonfinite({"nonfinite": False, "grad": [{"norm": "nan", "values": []}]})


@LIBS
def test_folded_group_aggregates_in_the_legend(lib):
    rec, snap = _mlp(lib)
    top = next(g for g in snap["groups"] if g["parent"] is None)
    ov = overlay(snap, "norm", collapsed=[top["id"]])
    inside = [ov.values[n["id"]] for n in snap["nodes"] if n["group"] is not None]
    inside = [v for v in inside if v is not None]
    stats = ov.groups[top["id"]]
    assert stats["max"] == max(inside) and stats["sum"] == pytest.approx(sum(inside))
    assert stats["mean"] == pytest.approx(sum(inside) / len(inside))
    assert ov.fills[top["id"]] == ov.fill_of(max(inside))
    svg = with_legend(snapshot_svg(snap, [top["id"]], overlay=ov), ov)
    assert f"folded {top['id']}: min " in svg and "mean" in svg
    assert f'fill="{ov.fills[top["id"]]}"' in svg
    # saved bytes of a folded group: its distinct storages (answers_memory), not a sum
    got = saved_bytes(rec)
    ov = overlay(snap, "saved", got.by_node(), [top["id"]], got.groups)
    assert ov.fills[top["id"]] == ov.fill_of(got.groups[top["path"]])


def test_unknown_overlay():
    _, snap = _mlp(ng)
    with pytest.raises(ValueError, match="choose one of norm, saved, nonfinite, order"):
        overlay(snap, "speed")


@pytest.mark.parametrize("framework", ["ng", "torch"])
@pytest.mark.parametrize("kind", ["norm", "saved", "nonfinite", "order"])
def test_magic_color(ip, framework, kind):
    ip.run_cell("import torch")
    with capture_output() as cap:
        result = ip.run_cell(
            f"%%autograd --static --color {kind} --retain-graph --backward y.sum()\n"
            f"x = {framework}.tensor([0.0, 1.0, 4.0], requires_grad=True)\n"
            f"y = {framework}.where(x > 0, x.sqrt(), {framework}.zeros(3)) * 2\n"
        )
    assert result.error_in_exec is None
    (svg,) = [o.data["image/svg+xml"] for o in cap.outputs if "image/svg+xml" in o.data]
    assert "colour: " in svg and 'class="nbg-legend"' in svg
    assert ">!</text>" in svg  # x.grad[0] is nan, marked in every overlay
    if kind == "saved":
        assert "no value" in svg and "high " in svg  # (sqrt saves its result: a scale)


def test_magic_color_refuses_an_unknown_kind(ip):
    with pytest.raises(UsageError, match="invalid choice"):
        ip.run_cell_magic("autograd", "--static --color speed", "y = ng.ones(2)\n")
