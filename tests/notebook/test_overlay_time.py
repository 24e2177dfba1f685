"""The time each node spent in backward (NOTE [Time in backward] in recorder.py), for nbgrad
code and PyTorch code: per node in the trace and the snapshot, inside the pass's wall time; the
"time" overlay (log scale, ms/us legend, folded groups' min / max / sum / mean) on the still
pictures (``%%autograd --color time``) and in the live view's "Colour by"."""

import json
import time

import pytest
from IPython.utils.capture import capture_output

import nbgrad as ng
from nbgrad.notebook.overlays import RAMP, format_seconds, overlay, with_legend
from nbgrad.notebook.recorder import record
from nbgrad.notebook.snapshot import build_snapshot
from nbgrad.notebook.svg import snapshot_svg

torch = pytest.importorskip("torch")
LIBS = pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])
SLOW = 0.02  # seconds a post-hook sleeps on one node


def _slow_mlp(lib, inside=False):
    """An MLP's backward, one node of which (``pow``'s, or with ``inside`` the last Linear's)
    has a post-hook that sleeps ``SLOW``; ``(recorder, snapshot, wall time of the backward, the
    slow node)``."""
    nn = lib.nn
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    x = lib.randn(3, 4, requires_grad=True)
    with record() as rec:
        out = model(x)
        z = out.pow(2)
        slow = out.grad_fn if inside else z.grad_fn
        slow.register_hook(lambda grad_inputs, grad_outputs: time.sleep(SLOW))
        loss = z.sum()
        t0 = time.perf_counter()
        loss.backward(retain_graph=True)
        wall = time.perf_counter() - t0
    return rec, build_snapshot(rec), wall, slow


@LIBS
def test_each_node_s_time_lies_inside_the_pass(lib):
    rec, snap, wall, slow = _slow_mlp(lib)
    (trace,) = rec.passes
    steps = trace.steps
    assert len(steps) >= 8
    assert all(s.elapsed is not None and s.elapsed > 0 for s in steps)
    # one thread: the nodes' intervals follow each other without overlapping
    spans = sorted((s.time, s.end) for s in steps)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    assert sum(s.elapsed for s in steps) <= wall
    # the slow post-hook counts in its node's time, and only there
    by_node = {s.node: s.elapsed for s in steps}
    assert by_node[slow] >= SLOW
    assert sum(by_node.values()) - by_node[slow] < SLOW
    # the snapshot: the time of each node that ran, None for one that did not
    times = {n["id"]: n["time"] for n in snap["nodes"]}
    ran = [n for n in snap["nodes"] if n["order"] is not None]
    assert ran and all(n["time"] > 0 for n in ran)
    assert all(n["time"] is None for n in snap["nodes"] if n["order"] is None)
    assert sum(t for t in times.values() if t is not None) <= wall
    # without timings (the same JSON for the same program), no times
    assert all(n["time"] is None for n in build_snapshot(rec, timings=False)["nodes"])


@LIBS
def test_time_overlay_colours_order_like_the_times(lib):
    _, snap, _, slow = _slow_mlp(lib)
    ov = overlay(snap, "time")
    times = {n["id"]: n["time"] for n in snap["nodes"] if n["time"] is not None}
    assert {k: v for k, v in ov.values.items() if v is not None} == times
    ranked = sorted(times, key=times.get)
    assert ov.fills[ranked[0]] == RAMP[0] and ov.fills[ranked[-1]] == RAMP[-1]
    name = next(n["name"] for n in snap["nodes"] if n["id"] == ranked[-1])
    assert name == slow.name()  # the sleeping node is the hottest
    place = [ov._t(times[i]) for i in ranked]  # the place on the (log) ramp grows with time
    assert place == sorted(place) and place[0] == 0 and place[-1] == 1
    assert all(ov.fills[i] == ov.fill_of(times[i]) for i in ranked)
    legend = [text for _, text in ov.legend()[:3]]
    assert legend[0] == f"low {format_seconds(min(times.values()))}"
    assert legend[2].startswith("high ") and legend[2].endswith(" ms")  # >= 20 ms


@LIBS
def test_a_folded_group_s_time_is_the_sum_of_its_nodes(lib):
    _, snap, _, _ = _slow_mlp(lib, inside=True)
    top = next(g for g in snap["groups"] if g["parent"] is None)
    ov = overlay(snap, "time", collapsed=[top["id"]])
    inside = [n["time"] for n in snap["nodes"] if n["group"] and n["time"] is not None]
    stats = ov.groups[top["id"]]
    assert stats["sum"] == pytest.approx(sum(inside))
    assert (stats["min"], stats["max"]) == (min(inside), max(inside))
    assert ov.high == stats["sum"] and ov.fills[top["id"]] == RAMP[-1]  # the scale reaches it
    inner = next(g for g in snap["groups"] if g["parent"] == top["id"])  # the first Linear
    ov = overlay(snap, "time", collapsed=[inner["id"]])
    assert ov.high == max(n["time"] or 0 for n in snap["nodes"])  # the slow node, outside it
    assert ov.fills[inner["id"]] == ov.fill_of(ov.groups[inner["id"]]["sum"]) != RAMP[-1]
    ov = overlay(snap, "time", collapsed=[top["id"]])
    svg = with_legend(snapshot_svg(snap, [top["id"]], overlay=ov), ov)
    assert f"folded {top['id']}: min {format_seconds(stats['min'])}" in svg


def test_seconds_in_words():
    assert [format_seconds(v) for v in (2.5, 0.0123, 0.00042, 3e-6)] == [
        "2.5 s",
        "12.3 ms",
        "420 us",
        "3 us",
    ]


@pytest.mark.parametrize("framework", ["ng", "torch"])
def test_magic_color_time_has_a_legend(ip, framework):
    ip.run_cell("import torch")
    with capture_output() as cap:
        result = ip.run_cell(
            "%%autograd --static --color time --backward y.sum()\n"
            f"x = {framework}.tensor([1.0, 4.0], requires_grad=True)\n"
            f"y = (x.sqrt() * 2).exp()\n"
        )
    assert result.error_in_exec is None
    (svg,) = [o.data["image/svg+xml"] for o in cap.outputs if "image/svg+xml" in o.data]
    assert 'class="nbg-legend"' in svg and "colour: time spent in backward (log scale)" in svg
    assert ">low " in svg and ">high " in svg
    assert " us<" in svg or " ms<" in svg


@pytest.mark.parametrize("fw", ["ng", "torch"])
def test_colour_by_time_in_the_live_view(ip, fw):
    ip.run_cell("import torch")
    with capture_output():
        result = ip.run_cell(
            "%%autograd -o s\n"
            f"nn = {fw}.nn\n"
            "model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))\n"
            f"loss = model({fw}.randn(3, 4)).pow(2).sum()\n"
            "loss.backward()\n"
        )
    assert result.success, result.error_in_exec
    view = ip.user_ns["s"].graph
    view._receive({"type": "color", "kind": "time"})
    assert not view.error
    got = json.loads(view._marks_json)
    assert got["kind"] == view.color == "time"
    assert got["title"] == "colour: time spent in backward (log scale)"
    texts = [x["text"] for x in got["legend"]]
    assert texts[0].startswith("low ") and texts[0].endswith(("us", "ms"))
    times = {n["id"]: n["time"] for n in view.snapshot["nodes"] if n["time"] is not None}
    assert len(times) >= 6
    assert got["fills"][max(times, key=times.get)] == RAMP[-1]
    view.collapse_all()
    (top,) = [g["id"] for g in view.snapshot["groups"] if g["parent"] is None]
    stats = json.loads(view._marks_json)["stats"][top]
    assert stats["min"] <= stats["mean"] <= stats["max"] <= stats["sum"]
    view._receive({"type": "select", "id": top})
    figures = json.loads(view._details_json)["answers"]["overlay"]
    assert figures["kind"] == "time" and figures["sum"] == stats["sum"]
