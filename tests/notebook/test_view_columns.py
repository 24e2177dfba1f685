"""The view's nodes and groups sent as columns (NOTE [Nodes and groups sent as columns] in
nbgrad/notebook/schema.py): what the browser's ``readView`` (widgets/common.js, run in Node on
the widget's module) and ``unpack_nodes`` / ``unpack_groups`` make of them are the nodes and
groups ``view_snapshot`` packed, every field kept; a view saved before, its nodes and groups
lists, reads as it is."""

from __future__ import annotations

import json

import anywidget  # noqa: F401 - the notebook extra
import pytest

import nbgrad as ng
from nbgrad.notebook import record
from nbgrad.notebook import snapshot as snapshot_mod
from nbgrad.notebook.schema import (
    ViewSnapshot,
    pack_groups,
    pack_nodes,
    read_view,
    unpack_groups,
    unpack_nodes,
)
from nbgrad.notebook.snapshot import build_snapshot, view_snapshot
from tests.notebook.test_schema import conforms


@pytest.fixture(scope="module")
def browser_read(graph_view_js):
    """``browser_read(view)``: the browser's ``readView(view)``, run in Node."""
    return lambda view: graph_view_js(["readView"], "readView(data.view)", view=view)


def _every_field():
    """A snapshot whose nodes have every field: leaves (kind, label), a module group, lines, a
    pass's order, hooks, a NaN and its origin, and a node of the graph not run."""
    net = ng.nn.Sequential(ng.nn.Linear(3, 2), ng.nn.Tanh())
    x = ng.randn(4, 3, requires_grad=True)
    with record() as rec:
        h = net(x)
        h.grad_fn.register_hook(lambda gi, go: None)
        bad = (h - h).log() * 0  # -inf, then NaN
        loss = (h.sum() + bad.sum()) * 1.0
        loss.backward(retain_graph=True)
        after = h.sum() * 2  # made after the pass: no order
    assert after.grad_fn is not None
    return build_snapshot(rec, names={id(net): "net"})


def _as_sent(monkeypatch):
    """A view, and the same view with its nodes and groups as ``view_snapshot`` made them
    before packing them."""
    snap = _every_field()
    with monkeypatch.context() as m:
        m.setattr(snapshot_mod, "pack_nodes", lambda nodes, paths: nodes)
        m.setattr(snapshot_mod, "pack_groups", lambda groups: groups)
        lists = view_snapshot(snap)
    return view_snapshot(snap), lists


def test_every_field_of_every_node_and_group_crosses(browser_read, monkeypatch):
    view, lists = _as_sent(monkeypatch)
    nodes = lists["nodes"]
    seen = {key for n in nodes for key in n}
    assert seen == {"id", "name", "kind", "label", "group", "line", "order", "hooks",
                    "nonfinite", "nonfinite_origin"}, seen  # fmt: skip
    assert any("order" not in n for n in nodes)  # made after the pass
    assert [g["path"] for g in lists["groups"]] == ["net", "net.0", "net.1"]
    assert min(view["nodes"]["label"]) < 0  # net.0.weight: "weight" in group net.0
    assert read_view(view) == lists
    assert browser_read(view) == lists
    # what is sent is smaller than the same nodes as objects, even for a small graph
    assert len(json.dumps(view["nodes"])) < len(json.dumps(nodes))


def test_packing_keeps_each_node_as_it_was(browser_read):
    paths = {"g0": "net.0"}
    nodes = [
        {"id": "n3", "name": "MulBackward0", "line": 2, "order": 0},
        {
            "id": "leaf1",
            "kind": "leaf",
            "name": "AccumulateGrad",
            "label": "net.0.weight",
            "group": "g0",
        },
        {"id": "leaf2", "kind": "leaf", "name": "AccumulateGrad", "label": "net.0", "group": "g0"},
        {
            "id": "leaf3",
            "kind": "leaf",
            "name": "AccumulateGrad",
            "label": "net.01.bias",
            "group": "g0",
        },
        {"id": "leaf0", "kind": "leaf", "name": "AccumulateGrad", "label": "w", "group": "g0"},
        {"id": "n4", "name": "MulBackward0", "label": "MulBackward0 x2", "hooks": 3},
        {"id": "n5", "name": "LogBackward0", "nonfinite": ["-inf"], "nonfinite_origin": True},
    ]
    packed = pack_nodes(nodes, paths)
    groups = [{"id": "g0", "name": "0", "type": "Linear", "path": "net.0", "parent": None,
               "depth": 0, "records": [0, 1], "error": None}]  # fmt: skip
    assert unpack_nodes(packed, groups) == nodes
    assert packed["strings"].count("MulBackward0") == 1
    # a label under its group's path is sent as the rest of it
    assert [packed["strings"][-1 - k] for k in packed["label"][1:2]] == ["weight"]
    assert min(packed["label"][2:5]) >= 0  # the path itself, a path not followed by a dot
    assert packed["hooks"] == {"5": 3} and packed["nonfinite"] == {"6": ["-inf"]}
    assert browser_read({"nodes": packed, "groups": groups}) == {"nodes": nodes, "groups": groups}
    assert unpack_nodes([]) == [] and unpack_nodes(pack_nodes([])) == []


def test_packing_keeps_each_group_as_it_was(browser_read):
    def group(i, name, parent, path, error=None):
        return {"id": f"g{i}", "name": name, "type": "Linear", "path": path, "parent": parent,
                "depth": path.count("."), "records": [i, i + 1], "error": error}  # fmt: skip

    groups = [
        group(0, "net", None, "net"),
        group(1, "0", "g0", "net.0", error="ValueError: bad shape"),
        group(2, "head", "g0", "model.head"),  # a path that is not its parent's and its name
        group(3, "1", "g0", "net.1"),
        group(4, "0", "g9", "other.0"),  # its parent not among the groups
    ]
    packed = pack_groups(groups)
    assert packed["path"] == [None, None, "model.head", None, "other.0"]
    assert packed["error"] == {"1": "ValueError: bad shape"}
    assert unpack_groups(packed) == groups
    view = {"nodes": [], "groups": packed}
    assert browser_read(view) == {"nodes": [], "groups": groups}
    assert unpack_groups([]) == [] and unpack_groups(pack_groups([])) == []


def test_a_view_fits_its_type(monkeypatch):
    view, lists = _as_sent(monkeypatch)
    assert conforms(view, ViewSnapshot) == []
    for key in ("nodes", "groups"):
        wrong = {**view, key: lists[key]}  # objects where columns are due
        assert conforms(wrong, ViewSnapshot) != []


def test_a_view_saved_with_its_nodes_as_a_list_reads_as_it_is(browser_read, monkeypatch):
    _, saved = _as_sent(monkeypatch)
    assert browser_read(saved) == saved
    assert read_view(saved) == saved
