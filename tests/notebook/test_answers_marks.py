"""NaN and Inf in the snapshot (``nonfinite``, ``nonfinite_origin`` on the nodes that held them,
nbgrad/notebook/answers_values.py) and the graph view's search for "nan" and "inf"
(``heldNonfinite`` in widgets/graph_view.js, run in Node as anywidget loads it)."""

from __future__ import annotations

import anywidget  # noqa: F401 - the notebook extra
import pytest

import nbgrad as ng
from nbgrad.notebook import build_snapshot, record
from nbgrad.notebook.schema import read_view
from nbgrad.notebook.snapshot import view_snapshot

torch = pytest.importorskip("torch")


def _log_of_zero(fw):
    x = fw.tensor([0.0, 4.0], requires_grad=True)
    with record() as rec:
        y = x.log()
        loss = (y * x.sqrt()).sum()
        loss.backward()
    return rec


@pytest.mark.parametrize("fw", [ng, torch], ids=["ng", "torch"])
def test_the_nodes_that_held_nan_or_inf_are_marked_and_the_origin_once(fw):
    snap = build_snapshot(_log_of_zero(fw))
    marked = {n["name"]: n for n in snap["nodes"] if "nonfinite" in n}
    assert marked["LogBackward0"]["nonfinite"][0] == "-inf"
    assert marked["LogBackward0"].get("nonfinite_origin") is True
    assert [n["name"] for n in snap["nodes"] if n.get("nonfinite_origin")] == ["LogBackward0"]
    assert "nan" in marked["MulBackward0"]["nonfinite"]  # -inf * 0 in the forward
    view = {n["name"]: n for n in read_view(view_snapshot(snap))["nodes"]}
    assert view["LogBackward0"]["nonfinite_origin"] is True
    assert "nonfinite" not in view.get("PowBackward0", {})  # an all-finite node: no field


def test_an_all_finite_graph_has_no_marks():
    x = ng.tensor([1.0, 4.0], requires_grad=True)
    with record() as rec:
        (x.log() * x.sqrt()).sum().backward()
    snap = build_snapshot(rec)
    assert not [n for n in snap["nodes"] if "nonfinite" in n or "nonfinite_origin" in n]


@pytest.fixture(scope="module")
def search(graph_view_js):
    """``search(query, nodes)``: the graph view's ranked matches, run in Node."""
    expr = "rankMatches(data.q, data.nodes.map((n) => ({ ...n, label: n.label || n.name })), [])"
    return lambda query, nodes: graph_view_js(["rankMatches"], expr, q=query, nodes=nodes)


def test_search_finds_nan_and_inf_the_origin_first(search):
    snap = build_snapshot(_log_of_zero(ng))
    nodes = read_view(view_snapshot(snap))["nodes"]
    found = search("inf", nodes)
    assert found[0]["text"] == "LogBackward0"
    assert found[0]["note"].startswith("-inf (where it started)")
    nan = search("nan", nodes)
    assert nan and all("nan" in m["note"] for m in nan)
    assert search("-inf", nodes)[0]["text"] == "LogBackward0"
    assert search("nan", [{"id": "n1", "name": "MulBackward0"}]) == []  # no marks, no match
