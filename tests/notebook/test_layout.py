"""The layered layout: speed, determinism, no overlaps, collapsed groups
(nbgrad/notebook/layout.py). Figures for bigger graphs: tests/benchmarks/notebook_layout.py."""

import time

import nbgrad as ng
from nbgrad.notebook import build_snapshot, record
from nbgrad.notebook.layout import NODE_H, default_collapsed, layout


def _residual(blocks, width=4):
    x = ng.randn(width, requires_grad=True)
    ws = [ng.randn(width, requires_grad=True) for _ in range(blocks)]
    h = x
    with record() as rec:
        for w in ws:
            h = h + (h * w).tanh()
        h.sum()
    return rec, ws


def _wide(n):
    x = ng.randn(3, requires_grad=True)
    ws = [ng.randn(3, requires_grad=True) for _ in range(n)]
    with record() as rec:
        ng.stack([(x * w).sum() for w in ws]).sum()
    return rec, ws


def _no_overlap(lay):
    rows = {}
    for b in lay["nodes"]:
        rows.setdefault(b["y"], []).append(b)
    for row in rows.values():
        row.sort(key=lambda b: b["x"])
        for a, b in zip(row, row[1:]):
            assert a["x"] + a["w"] <= b["x"] + 1e-6, (a, b)


def test_500_nodes_lay_out_in_under_a_second():
    rec, ws = _residual(125)
    snap = build_snapshot(rec)
    assert len(snap["nodes"]) >= 500
    t0 = time.perf_counter()
    lay = layout(snap)
    elapsed = time.perf_counter() - t0
    assert elapsed < 1.0, elapsed
    assert len(lay["nodes"]) == len(snap["nodes"])
    _no_overlap(lay)


def test_a_wide_layer_does_not_overlap_and_edges_point_down():
    rec, ws = _wide(300)
    snap = build_snapshot(rec)
    t0 = time.perf_counter()
    lay = layout(snap)
    assert time.perf_counter() - t0 < 1.0
    _no_overlap(lay)
    boxes = {b["id"]: b for b in lay["nodes"]}
    for e in lay["edges"]:
        assert boxes[e["from"]]["y"] < boxes[e["to"]]["y"]  # root on top, leaves below
        assert e["points"][1] == boxes[e["from"]]["y"] + NODE_H


def test_layout_is_deterministic():
    rec, ws = _residual(20)
    snap = build_snapshot(rec)
    assert layout(snap) == layout(snap)


def test_collapsed_groups(fake_model):
    x = ng.ones(3, requires_grad=True)
    with record() as rec:
        fake_model(x).sum()
    snap = build_snapshot(rec)
    full = layout(snap)
    assert [g["id"] for g in full["groups"]] == ["g0", "g1"]
    outer, inner = full["groups"]
    # the inner box sits inside the outer one
    assert outer["x"] < inner["x"] and outer["y"] < inner["y"]
    assert inner["x"] + inner["w"] < outer["x"] + outer["w"]
    one = layout(snap, ["g1"])
    boxes = {b["id"]: b for b in one["nodes"]}
    assert boxes["group:g1"]["kind"] == "group" and boxes["group:g1"]["sub"] == "3 nodes"
    assert [g["id"] for g in one["groups"]] == ["g0"]
    top = layout(snap, ["g0", "g1"])  # the outer one hides the inner one
    assert [b["id"] for b in top["nodes"] if b["kind"] == "group"] == ["group:g0"]
    assert top["collapsed"] == ["g0", "g1"] and top["groups"] == []


def test_large_graphs_start_collapsed_by_module():
    rec, ws = _residual(3)
    snap = build_snapshot(rec)
    assert default_collapsed(snap) == []
    snap = {
        **snap,
        "nodes": snap["nodes"] * 200,
        "groups": [{"id": "g0", "parent": None}, {"id": "g1", "parent": "g0"}],
    }
    assert default_collapsed(snap) == ["g0"]
