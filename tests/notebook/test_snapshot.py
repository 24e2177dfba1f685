"""The snapshot: schema, stable ids, gradients, hooks, and determinism
(nbgrad/notebook/snapshot.py)."""

import json
import subprocess
import sys
import textwrap

import nbgrad as ng
from nbgrad.notebook import build_snapshot, record, trace_snapshot
from nbgrad.notebook.snapshot import SCHEMA_VERSION
from nbgrad.notebook.summaries import grad_summary

NODE_KEYS = {
    "id",
    "kind",
    "name",
    "label",
    "seq",
    "shapes",
    "dtype",
    "device",
    "group",
    "record",
    "line",
    "source",
    "metadata",
    "saved",
    "next",
    "input_metadata",
    "hooks",
    "tensor",
    "grad",
    "order",
    "time",
}


def _program():
    x = ng.tensor([[1.0, -2.0], [3.0, 0.5]], requires_grad=True)
    w = ng.tensor([0.5, -1.0], requires_grad=True)
    with record() as rec:
        h = (x * w).tanh()
        loss = h.sum() + (x * 2).sum()
    return x, w, h, loss, rec


def test_schema_and_json():
    x, w, h, loss, rec = _program()
    snap = build_snapshot(rec, names={id(x): "x", id(w): "w"})
    assert snap["schema"] == "nbgrad.snapshot" and snap["version"] == SCHEMA_VERSION == 1
    assert set(snap) == {
        "schema",
        "version",
        "nodes",
        "edges",
        "groups",
        "records",
        "hooks",
        "passes",
        "roots",
        "pass",
        "truncated",
        "max_nodes",
        "left_out",
        "cut_nodes",
        "stubs",
        "backward_ops",
        "kept_steps",
        "counted_steps",
        "failure",
    }
    for n in snap["nodes"]:
        assert set(n) == NODE_KEYS
    ids = {n["id"] for n in snap["nodes"]}
    assert all(e["from"] in ids and e["to"] in ids for e in snap["edges"])
    assert snap["roots"] == [f"n{loss.grad_fn.sequence_nr}"]
    json.dumps(snap, allow_nan=False)  # plain JSON: no NaN, no objects


def test_ids_are_sequence_numbers_and_leaves_are_numbered_by_first_use():
    x, w, h, loss, rec = _program()
    snap = build_snapshot(rec, names={id(x): "x", id(w): "w"})
    by_id = {n["id"]: n for n in snap["nodes"]}
    tanh = by_id[f"n{h.grad_fn.sequence_nr}"]
    assert tanh["name"] == "TanhBackward0" and tanh["seq"] == h.grad_fn.sequence_nr
    assert tanh["record"] == 1 and tanh["source"] == "h = (x * w).tanh()"
    assert by_id["leaf0"]["label"] == "x" and by_id["leaf1"]["label"] == "w"
    assert by_id["leaf0"]["kind"] == "leaf" and by_id["leaf0"]["seq"] is None
    assert by_id["leaf0"]["tensor"]["shape"] == [2, 2]
    # nodes in creation order, leaves last
    assert [n["id"] for n in snap["nodes"]][-2:] == ["leaf0", "leaf1"]
    mul = by_id[tanh["next"][0]["node"]]
    assert mul["name"] == "MulBackward0" and [nx["node"] for nx in mul["next"]] == [
        "leaf0",
        "leaf1",
    ]
    assert mul["saved"][0]["kind"] == "tensor" and mul["saved"][0]["shape"] == [2]


def test_gradients_on_edges_after_backward_and_freed_saved_tensors():
    x, w, h, loss, rec = _program()
    with rec.resume_backward():
        loss.backward()
    snap = build_snapshot(rec)
    assert snap["pass"] == 0 and len(snap["passes"]) == 1
    by_id = {n["id"]: n for n in snap["nodes"]}
    tanh_id = f"n{h.grad_fn.sequence_nr}"
    [edge] = [e for e in snap["edges"] if e["from"] == tanh_id]
    expected = (1 - h.detach() ** 2).reshape(-1).tolist()
    assert edge["grad"]["values"] == [float(f"{v:.6g}") for v in expected]
    assert by_id[tanh_id]["grad"][0]["values"] == [1.0] * 4
    assert by_id[tanh_id]["order"] is not None
    assert by_id["leaf0"]["tensor"]["grad"]["values"] == [
        float(f"{v:.6g}") for v in x.grad.reshape(-1).tolist()
    ]
    assert {s["kind"] for s in by_id[tanh_id]["saved"]} == {"freed"}
    assert snap["passes"][0]["order"][0] == snap["roots"][0]


def test_hooks_are_listed_on_their_nodes():
    x, w, h, loss, rec = _program()
    h1 = h.register_hook(lambda g: g)
    h2 = h.grad_fn.register_prehook(lambda gs: None)
    h3 = x.register_post_accumulate_grad_hook(lambda t: None)
    h2.disable()
    snap = build_snapshot(rec)
    hooks = {hk["id"]: hk for hk in snap["hooks"]}
    tanh_id = f"n{h.grad_fn.sequence_nr}"
    assert hooks[f"h{h1.id}"]["target"] == tanh_id
    assert hooks[f"h{h1.id}"]["kind"] == "tensor_hook"
    assert hooks[f"h{h2.id}"]["enabled"] is False
    assert hooks[f"h{h3.id}"]["target"] == "leaf0"
    by_id = {n["id"]: n for n in snap["nodes"]}
    assert by_id[tanh_id]["hooks"] == [f"h{h1.id}", f"h{h2.id}"]


def test_a_graph_from_before_the_block_is_a_stub():
    x = ng.ones(2, requires_grad=True)
    before = (x * 2).exp()
    with record() as rec:
        after = before.sum()
    snap = build_snapshot(rec)
    kinds = {n["name"]: n["kind"] for n in snap["nodes"]}
    assert kinds == {"SumBackward0": "node", "ExpBackward0": "external"}
    # from the tensors instead: the whole graph
    snap2 = build_snapshot(None, [after])
    assert [n["name"] for n in snap2["nodes"]] == [
        "MulBackward0",
        "ExpBackward0",
        "SumBackward0",
        "AccumulateGrad",
    ]


def test_module_groups_name_the_parameters(fake_model):
    x = ng.ones(3, requires_grad=True)
    with record() as rec:
        fake_model(x).sum()
    snap = build_snapshot(rec, names={id(fake_model): "model"})
    assert [(g["id"], g["path"], g["parent"]) for g in snap["groups"]] == [
        ("g0", "model", None),
        ("g1", "model.inner", "g0"),
    ]
    labels = {n["label"]: n["group"] for n in snap["nodes"] if n["kind"] == "leaf"}
    assert labels == {"model.w": "g0", "model.inner.w": "g1", "AccumulateGrad": None}


def test_non_finite_values_are_strings():
    g = grad_summary(ng.tensor([float("nan"), float("inf"), -float("inf"), 1.5]))
    assert g["values"] == ["nan", "inf", "-inf", 1.5] and g["norm"] == "nan"
    json.dumps(g, allow_nan=False)


def test_trace_snapshot():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    with record() as rec:
        loss = (x * x).sum()
        loss.backward()
    tr = trace_snapshot(rec.passes[0])
    assert tr["schema"] == "nbgrad.trace" and tr["version"] == 1
    assert tr["initial"]["ready"] == {"cpu": [tr["root"]]}
    assert [s["node"] for s in tr["steps"]][0] == tr["root"]
    assert tr["graph"]["pass"] == 0
    json.dumps(tr, allow_nan=False)


PROGRAM = textwrap.dedent("""
    import json
    import nbgrad as ng
    from nbgrad.notebook import build_snapshot, record, trace_snapshot
    from nbgrad.notebook.svg import snapshot_svg, trace_svg

    ng.manual_seed(0)
    x = ng.randn(3, 4, requires_grad=True)
    w = ng.randn(4, 2, requires_grad=True)
    with record() as rec:
        h = (x @ w).tanh()
        h.register_hook(lambda g: g * 2)
        loss = (h * h).mean() + w.sum()
        loss.backward(retain_graph=True)
    snap = build_snapshot(rec, names={id(x): "x", id(w): "w"}, timings=False)
    tr = trace_snapshot(rec.passes[0])
    print(json.dumps({"snap": snap, "trace": tr, "svg": snapshot_svg(snap),
                      "trace_svg": trace_svg(tr)}, sort_keys=True))
""")


def test_same_program_twice_gives_identical_json_and_svg():
    runs = [
        subprocess.run(
            [sys.executable, "-c", PROGRAM], capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
    out = json.loads(runs[0])
    assert out["snap"]["records"][0]["time_us"] is None
    assert len(out["snap"]["nodes"]) == 8 and out["svg"].startswith("<svg")


def test_nodes_replaced_at_once_are_not_drawn():
    # a module with a full backward hook wraps its tensors in an identity Function: the view
    # that Function.apply makes gets the Function's node, so its ViewBackward0 is no part of
    # the graph and must not show up as a dead root (while the outputs live: a dropped one
    # cannot be told apart from a result the user dropped)
    lin = ng.nn.Linear(3, 2)
    lin.register_full_backward_hook(lambda m, gi, go: None)
    inp = ng.ones(4, 3, requires_grad=True)
    with record() as rec:
        out = lin(inp)
        loss = out.sum()
    names = [n["name"] for n in build_snapshot(rec, timings=False)["nodes"]]
    assert "ViewBackward0" not in names
    assert names.count("BackwardHookFunctionBackward") == 2
    y = ng.ones(3, requires_grad=True) * 2
    with record() as rec:  # in-place ops replace grad_fn too; their nodes stay reachable
        z = y * 1
        z.add_(1)
        z.mul_(3)
    names = [n["name"] for n in build_snapshot(rec, timings=False)["nodes"]]
    assert names.count("AddBackward0") == 1 and names.count("MulBackward0") == 3  # y's too
    del loss
