"""Saved-tensor memory (``Session.saved_bytes()``, ``nbgrad/notebook/answers_memory.py``):
bytes per node, per module group and in all, each storage counted once, checked against an
independent walk of the graph (PyTorch's ``_saved_*`` attributes, storages by
``untyped_storage().data_ptr()``), for nbgrad code and for PyTorch code."""

import numpy as np
import pytest

import nbgrad as ng
from nbgrad.notebook.answers_memory import format_bytes, saved_bytes
from nbgrad.notebook.recorder import record

torch = pytest.importorskip("torch")


def _walk(root, saved_of, storage_of):
    """Bytes of the distinct storages saved by the nodes below ``root`` (a grad_fn)."""
    seen, blocks, stack = set(), {}, [root]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        for t in saved_of(fn):
            key, size = storage_of(t)
            blocks[key] = size
        stack += [f for f, _ in fn.next_functions]
    return sum(blocks.values())


def _torch_saved(fn):
    out = []
    for attr in dir(fn):
        if attr.startswith("_saved_"):
            v = getattr(fn, attr)
            out += [t for t in (v if isinstance(v, (list, tuple)) else (v,)) if torch.is_tensor(t)]
    return out


def _torch_storage(t):
    s = t.untyped_storage()
    return s.data_ptr(), s.nbytes()


def torch_walk(y):
    return _walk(y.grad_fn, _torch_saved, _torch_storage)


def _nbgrad_saved(fn):
    out = []
    for attr in dir(fn):
        if attr.startswith("_saved_") and attr != "_saved_tensor_names":
            v = getattr(fn, attr)
            out += [t for t in (v if isinstance(v, (list, tuple)) else (v,)) if ng.is_tensor(t)]
    return out


def _nbgrad_storage(t):
    a = t.numpy(force=True)
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a.__array_interface__["data"][0], a.nbytes


def nbgrad_walk(y):
    return _walk(y.grad_fn, _nbgrad_saved, _nbgrad_storage)


def _models(lib):
    nn = lib.nn
    return {
        "mlp": (
            lambda: nn.Sequential(
                nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 3)
            ),
            (8, 20),
        ),
        "cnn": (
            lambda: nn.Sequential(
                nn.Conv2d(3, 8, 3, padding=1),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Flatten(),
                nn.Linear(8 * 4 * 4, 5),
            ),
            (2, 3, 8, 8),
        ),
        "transformer": (
            lambda: nn.TransformerEncoderLayer(
                16, 4, dim_feedforward=32, dropout=0.0, batch_first=True
            ),
            (2, 5, 16),
        ),
    }


def _run(lib, name):
    make, shape = _models(lib)[name]
    model = make()
    x = lib.randn(*shape, requires_grad=True)
    with record() as rec:
        y = model(x).sum()
    return rec, y


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer"])
@pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])
def test_totals_equal_a_walk_of_the_frameworks_graph(lib, name):
    """torch: a walk of its ``_saved_*`` attributes, storages by ``untyped_storage()``;
    nbgrad: the same walk of its own graph, storages by the NumPy array owning the memory."""
    rec, y = _run(lib, name)
    got = saved_bytes(rec)
    want = torch_walk(y) if lib is torch else nbgrad_walk(y)
    assert want > 0
    assert abs(got.total - want) <= 0.01 * want


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_nbgrad_totals_equal_torchs_for_the_same_model(name):
    """Where nbgrad's op table saves what PyTorch's does (addmm, relu, tanh, convolution,
    max_pool2d), the same model keeps the same bytes alive."""
    nb = saved_bytes(_run(ng, name)[0]).total
    want = torch_walk(_run(torch, name)[1])
    assert abs(nb - want) <= 0.01 * want


@pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])
def test_a_storage_is_counted_once(lib):
    """``x`` saved by two nodes and its transposed view by a third: one block of 4*6*4 bytes,
    in each node and in the total."""
    x = lib.randn(4, 6, requires_grad=True)
    w = lib.randn(4, 6, requires_grad=True)
    with record() as rec:
        a = x * w  # saves x and w
        b = x.sin()  # saves x again
        c = w.t().exp()  # the exp's output (a block of its own)
        d = (a + b).sum() + (c * c).sum()
    got = saved_bytes(rec)
    block = 4 * 6 * 4
    nodes = {(n.node, n.source.split()[0]): n.bytes for n in got.nodes}
    assert nodes == {
        ("MulBackward0", "a"): 2 * block,
        ("SinBackward0", "b"): block,
        ("ExpBackward0", "c"): block,
        ("MulBackward0", "d"): block,  # c saved as self and as other: one block
    }
    assert got.total == 3 * block  # x, w, and c: exp's output, saved by exp and by c * c
    assert got.total == (torch_walk(d) if lib is torch else nbgrad_walk(d))


@pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])
def test_groups_largest_and_lines(lib):
    rec, _ = _run(lib, "mlp")
    got = saved_bytes(rec)
    assert got.groups["Sequential"] == got.total
    assert got.groups["Sequential.2"] == 64 * 64 * 4 + 8 * 64 * 4  # weight and input of fc2
    top = got.largest(2)
    assert top[0].bytes >= top[1].bytes >= max(n.bytes for n in got.nodes if n not in top)
    assert top[0].node == "AddmmBackward0" and top[0].group == "Sequential.2"
    assert "KiB" in str(got) and "Sequential.2" in str(got)


@pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])
def test_freed_at_is_the_step_the_node_runs(lib):
    x = lib.randn(5, requires_grad=True)
    with record() as rec:
        y = x.exp()
        z = (y * y).sin().sum()
        z.backward(retain_graph=True)
    got = saved_bytes(rec)
    trace = rec.passes[-1]
    ran = {trace.graph_source.node_name(s.node): s.index for s in trace.steps}
    for n in got.nodes:
        assert n.freed_at == ran[n.node]
    # exp's output is saved by ExpBackward0 and (twice) by MulBackward0, which runs first
    exp_out = next(n for n in got.nodes if n.node == "ExpBackward0").storages[0]
    assert got.storages[exp_out][1] == ran["ExpBackward0"]
    assert got.retained is True


def test_freed_graph_holds_nothing():
    x = ng.randn(5, requires_grad=True)
    with record() as rec:
        x.exp().sum().backward()
    got = saved_bytes(rec)
    assert got.total == 0 and got.retained is False
    assert "the backward freed the graph's saved tensors" in str(got)


def test_format_bytes():
    assert format_bytes(512) == "512 B"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(3 * 2**20) == "3.0 MiB"


def test_session_saved_bytes(ip):
    ip.run_cell("import nbgrad.nn as nn\nmodel = nn.Sequential(nn.Linear(4, 8), nn.Tanh())")
    ip.run_cell("%%autograd --static -o s\nout = model(ng.randn(3, 4)).sum()")
    got = ip.user_ns["s"].saved_bytes()
    # the input and tanh's output (the weight is saved only for an input that needs grad)
    assert got.total == 3 * 4 * 4 + 3 * 8 * 4
    assert {n.node for n in got.nodes} == {"AddmmBackward0", "TanhBackward0"}
    assert next(n for n in got.nodes if n.node == "TanhBackward0").source.startswith("out =")


def test_a_drawing_cut_at_max_nodes_still_counts_every_node(ip):
    ip.run_cell(
        "%%autograd --static --retain-graph --max-nodes 5 -o s --backward y.sum()\n"
        "y = ng.ones(6, requires_grad=True)\n"
        "for _ in range(30):\n"
        "    y = y.exp() * 0.1\n"
    )
    got = ip.user_ns["s"].saved_bytes()
    # each exp saves its result (6 floats); each mul by a number saves nothing
    assert sum(n.node == "ExpBackward0" for n in got.nodes) == 30
    assert got.total == 30 * 6 * 4
