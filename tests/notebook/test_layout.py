"""The layered layout: speed, determinism, no overlaps, collapsed groups
(nbgrad/notebook/layout.py). Figures for bigger graphs: tests/benchmarks/notebook.py."""

import time

import nbgrad as ng
from nbgrad.notebook import build_snapshot, record
from nbgrad.notebook.layout import NODE_H, default_collapsed, grad_label, layout


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


def test_500_nodes_lay_out_quickly():
    rec, ws = _residual(125)
    snap = build_snapshot(rec)
    assert len(snap["nodes"]) >= 500
    t0 = time.perf_counter()
    lay = layout(snap, fold=False)  # (the residual blocks would fold: see fold.py)
    elapsed = time.perf_counter() - t0
    assert elapsed < 5.0, elapsed  # a guard against a blow-up, not a benchmark: see layout.py
    assert len(lay["nodes"]) == len(snap["nodes"])
    _no_overlap(lay)


def test_a_wide_layer_does_not_overlap_and_edges_point_down():
    rec, ws = _wide(300)
    snap = build_snapshot(rec)
    t0 = time.perf_counter()
    lay = layout(snap)
    assert time.perf_counter() - t0 < 5.0  # a guard against a blow-up, not a benchmark
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


def _overlap(a, b):
    return (
        a["x"] < b["x"] + b["w"]
        and b["x"] < a["x"] + a["w"]
        and a["y"] < b["y"] + b["h"]
        and b["y"] < a["y"] + a["h"]
    )


def _inside(a, b):
    return (
        b["x"] <= a["x"]
        and a["x"] + a["w"] <= b["x"] + b["w"]
        and b["y"] <= a["y"]
        and a["y"] + a["h"] <= b["y"] + b["h"]
    )


def _check_group_boxes(snap, lay):
    """Sibling group boxes never overlap, a child box lies inside its parent's, and a node's
    box lies inside exactly the boxes of the groups it belongs to (and touches no other)."""
    parent = {g["id"]: g["parent"] for g in snap["groups"]}

    def chain(gid):
        out = []
        while gid is not None:
            out.append(gid)
            gid = parent[gid]
        return out

    boxes = lay["groups"]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            if b["id"] in chain(a["id"]):
                assert _inside(a, b), (a, b)
            elif a["id"] in chain(b["id"]):
                assert _inside(b, a), (a, b)
            else:
                assert not _overlap(a, b), (a, b)
    for n in lay["nodes"]:
        mine = chain(n["group"])
        for g in boxes:
            if g["id"] in mine:
                assert _inside(n, g), (n, g)
            else:
                assert not _overlap(n, g), (n, g)


def _mlp_snapshot(backward=False):
    """Notebook 06's graph: out's weight hangs below the Tanh that follows it (with its
    gradients, after a backward pass, when ``backward``)."""
    from nbgrad import nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.hidden = nn.Linear(6, 4)
            self.act = nn.Tanh()
            self.out = nn.Linear(4, 3)

        def forward(self, x):
            return self.out(self.act(self.hidden(x)))

    model = MLP()
    with record() as rec:
        loss = nn.CrossEntropyLoss()(model(ng.rand(5, 6)), ng.tensor([0, 1, 2, 0, 1]))
        if backward:
            loss.backward()
    return build_snapshot(rec, names={id(model): "model"}), loss


def _hooked_linear_snapshot():
    """Notebook 04's graph: a full backward hook puts a BackwardHookFunctionBackward (outside
    the module) between the input and the module's AddmmBackward0."""
    lin = ng.nn.Linear(3, 2)
    lin.register_full_backward_hook(lambda m, gi, go: None)
    inp = ng.randn(4, 3, requires_grad=True)
    with record() as rec:
        lin(inp).sum()
    return build_snapshot(rec, names={id(lin): "lin", id(inp): "inp"})


def test_sibling_groups_do_not_overlap(fake_model):
    snap, _ = _mlp_snapshot()
    lay = layout(snap)
    assert [g["label"] for g in lay["groups"]][:2] == [
        "model: MLP",
        "CrossEntropyLoss: CrossEntropyLoss",
    ]
    _check_group_boxes(snap, lay)
    _no_overlap(lay)
    # what comes out of a module starts below its box: out -> act -> hidden, top to bottom
    y = {g["label"]: g["y"] for g in lay["groups"]}
    h = {g["label"]: g["h"] for g in lay["groups"]}
    assert y["out: Linear"] + h["out: Linear"] < y["act: Tanh"]
    assert y["act: Tanh"] + h["act: Tanh"] < y["hidden: Linear"]

    snap = _hooked_linear_snapshot()
    lay = layout(snap)
    hook_nodes = [n for n in snap["nodes"] if n["name"] == "BackwardHookFunctionBackward"]
    assert len(hook_nodes) == 2 and all(n["group"] is None for n in hook_nodes)
    _check_group_boxes(snap, lay)

    # nested fake modules called twice, sharing their parameters (leaves in the first call's
    # groups, used from the second's)
    x = ng.ones(3, requires_grad=True)
    with record() as rec:
        fake_model(fake_model(x)).sum()
    snap = build_snapshot(rec)
    assert len(snap["groups"]) == 4
    for collapsed in ([], ["g2"], ["g1", "g3"]):
        lay = layout(snap, collapsed)
        _check_group_boxes(snap, lay)
        _no_overlap(lay)


def test_parallel_edges_keep_their_gradients():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    with record() as rec:
        (x * x).sum().backward()
    lay = layout(build_snapshot(rec))
    (double,) = [e for e in lay["edges"] if len(e["edges"]) == 2]  # MulBackward0 -> x, twice
    assert double["grads"] == [2.23607, 2.23607]  # |x| each: d(x*x) = x dx + x dx
    assert double["label"] == "2× 2.236" and double["grad"] is None
    single = [e for e in lay["edges"] if len(e["edges"]) == 1]
    assert [e["label"] for e in single] == ["1.414"]  # Sum -> Mul: ones(2)
    assert grad_label([1.0, 2.0]) == "1, 2" and grad_label([None, None]) is None
    assert grad_label([1.0, 2.0, 3.0, 4.0]) == "4 gradients"
