"""PyTorch's own graph through nbgrad's snapshot, layout and pictures (``torch_source.py``):
for an MLP, a CNN with BatchNorm, an LSTM and a TransformerEncoderLayer, the snapshot's nodes
and edges are those of an independent walk of torch's ``grad_fn`` graph."""

import json
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is the test oracle (the test extra has it)")

from nbgrad.notebook import GraphView, build_snapshot  # noqa: E402
from nbgrad.notebook.layout import default_collapsed, layout  # noqa: E402
from nbgrad.notebook.sources import source_for  # noqa: E402
from nbgrad.notebook.svg import snapshot_svg  # noqa: E402
from nbgrad.notebook.torch_source import TORCH  # noqa: E402


def _mlp():
    m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    return m, m(torch.randn(5, 4)).pow(2).mean()


def _cnn():
    m = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3),
        torch.nn.BatchNorm2d(4),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(4 * 6 * 6, 3),
    )
    return m, torch.nn.functional.cross_entropy(m(torch.randn(2, 1, 8, 8)), torch.tensor([0, 2]))


def _lstm():
    m = torch.nn.LSTM(3, 5, batch_first=True)
    out, _ = m(torch.randn(2, 4, 3))
    return m, out.sum()


def _transformer():
    m = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    return m, m(torch.randn(2, 3, 8)).pow(2).sum()


MODELS = {"mlp": _mlp, "cnn": _cnn, "lstm": _lstm, "transformer": _transformer}


def _walk(root):
    """torch's graph below ``root``: {key: name}, {(from key, to key, input_nr)}; a node's key
    is its sequence number, a leaf's accumulator's its variable's id."""

    def key(fn):
        var = getattr(fn, "variable", None)
        return ("leaf", id(var)) if var is not None else ("node", fn._sequence_nr())

    names, edges, stack, seen = {}, set(), [root.grad_fn], set()
    while stack:
        fn = stack.pop()
        k = key(fn)
        if k in seen:
            continue
        seen.add(k)
        names[k] = fn.name()
        for nxt, input_nr in fn.next_functions:
            if nxt is not None:
                edges.add((k, key(nxt), input_nr))
                stack.append(nxt)
    return names, edges


@pytest.mark.parametrize("name", MODELS)
def test_the_snapshot_is_torchs_graph(name):
    torch.manual_seed(0)
    model, loss = MODELS[name]()
    assert source_for(loss) is TORCH
    params = {id(p): n for n, p in model.named_parameters()}
    grads_before = [p.grad for p in model.parameters()]
    snap = build_snapshot(None, [loss], names=params)
    names, edges = _walk(loss)
    # the same nodes (torch's names; each node's sequence number) and the same edges
    by_seq = {n["seq"]: n for n in snap["nodes"] if n["seq"] is not None}
    assert {k[1]: v for k, v in names.items() if k[0] == "node"} == {
        s: n["name"] for s, n in by_seq.items()
    }
    leaves = [n for n in snap["nodes"] if n["kind"] == "leaf"]
    assert len(leaves) == sum(k[0] == "leaf" for k in names)
    assert {n["label"] for n in leaves} == {params[id(p)] for p in model.parameters()}
    ids = {n["id"]: n for n in snap["nodes"]}

    def key(node_id):
        node = ids[node_id]
        return node["seq"] if node["seq"] is not None else node["label"]

    got = {(key(e["from"]), key(e["to"]), e["input_nr"]) for e in snap["edges"]}
    label_of = {id(p): params[id(p)] for p in model.parameters()}
    want = {(a[1], b[1] if b[0] == "node" else label_of[b[1]], nr) for a, b, nr in edges}
    assert got == want
    # torch's saved values, by torch's names
    addmm = [n for n in snap["nodes"] if n["name"] == "AddmmBackward0"]
    if addmm:
        assert {"mat1", "mat2"} <= {s["name"] for s in addmm[0]["saved"]}
    # drawn by the same layout and pictures, JSON all the way
    json.dumps(snap)
    lay = layout(snap, default_collapsed(snap))
    assert lay["nodes"] and "<svg" in snapshot_svg(snap)
    assert GraphView(loss).snapshot["nodes"]
    # nothing of torch's changed
    assert [p.grad for p in model.parameters()] == grads_before
    assert all(not p._backward_hooks for p in model.parameters())


def test_the_notebook_never_imports_torch():
    code = "import sys, nbgrad, nbgrad.notebook; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
