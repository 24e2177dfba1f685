"""A cell too big to draw whole: ``%%autograd --max-nodes N`` (NOTE [A graph cut at
max_nodes] in snapshot.py) draws the end of the cell, every output says what it left out, and
a saved cell stays small."""

import json

import pytest
from IPython.utils.capture import capture_output

from nbgrad.notebook.snapshot import MAX_NODES, details
from tests.benchmarks.notebook import chain_cell, saved_size
from tests.benchmarks.notebook_shapes import cell

SVG = "image/svg+xml"


def run(ip, source):
    with capture_output() as cap:
        result = ip.run_cell(source)
    return result, cap


def test_the_cut_is_said_in_every_output(ip):
    result, cap = run(ip, chain_cell("--max-nodes 50 --backward loss --step -o big", 300))
    assert result.success, result.error_in_exec
    session = ip.user_ns["big"]
    snap = session.graph.snapshot
    assert len(snap["nodes"]) == 50 and snap["truncated"] and snap["max_nodes"] == 50
    # the snapshot keeps the calls of the nodes drawn, and counts the others
    drawn = {n["id"] for n in snap["nodes"]}
    assert all(r["node"] is None or r["node"] in drawn for r in snap["records"])
    assert snap["left_out"] == 301 - len(snap["records"]) > 200
    note = f"the first {snap['left_out']:,} recorded calls are left out"
    assert note in repr(session.graph)
    assert note in session.graph.to_svg()
    assert "cut at 50 nodes (--max-nodes)" in session.stepper.to_svg()
    # a node's details still find its call among the records kept
    node = next(n for n in snap["nodes"] if n["record"] is not None)
    assert details(snap, node["id"])["record"]["index"] == node["record"]
    session.graph.select(node["id"])
    assert json.loads(session.graph._details_json)["record"]["index"] == node["record"]

    result, cap = run(ip, chain_cell("--max-nodes 50 --static", 300))
    assert result.success
    text = cap.outputs[0].data["text/plain"]
    assert "cut at 50 nodes" in text and "recorded calls are left out" in text, text
    assert "cut at 50 nodes" in cap.outputs[0].data[SVG]


def test_a_graph_that_fits_says_nothing_of_a_cut(ip):
    result, cap = run(ip, chain_cell("--max-nodes 1000 -o fits", 300))
    assert result.success
    graph = ip.user_ns["fits"].graph
    assert not graph.snapshot["truncated"] and graph.snapshot["left_out"] == 0
    assert "cut at" not in repr(graph) and "cut at" not in graph.to_svg()
    assert len(graph.snapshot["records"]) == 301


def test_a_deep_model_cut_at_the_default_cap_saves_under_2_mb(ip):
    """A 320-layer TransformerEncoder (about 21,000 nodes) cut at the default cap: its module
    groups and the parameters' long names are sent as columns (NOTE [Nodes and groups sent as
    columns]), and the saved outputs stay under 2 MB (2.75 MB when each node and group was
    sent as an object)."""
    ip.run_cell(
        "import nbgrad as ng\nng.manual_seed(0)\n"
        "layer = ng.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, "
        "batch_first=True)\n"
        "enc = ng.nn.TransformerEncoder(layer, 320, enable_nested_tensor=False)\n"
        "src = ng.randn(2, 4, 16)"
    )
    result, cap = run(ip, "%%autograd --backward loss\nloss = enc(src).pow(2).mean()\n")
    assert result.success, result.error_in_exec
    graph_text = next(o.data["text/plain"] for o in cap.outputs if "GraphView" in str(o.data))
    assert f"cut at {MAX_NODES:,} nodes" in graph_text
    size = saved_size(cap.outputs)
    print(f"saved outputs of a 320-layer transformer's cell: {size:,} bytes")
    assert size < 2_000_000


@pytest.mark.parametrize(("shape", "size"), [("rnn", 24_000), ("dag", 24_000), ("train", 2_000)])
def test_each_shape_s_cell_saves_under_2_mb(ip, shape, size):
    """The RNN loop, the random DAG (both cut at the default cap) and a training loop of 200
    steps, as ``notebook_shapes.py`` runs them: the saved outputs stay under 2 MB."""
    setup, body, options = cell(shape, size)
    assert ip.run_cell("import nbgrad as ng\n" + setup).success
    result, cap = run(ip, f"%%autograd {options}\n{body}")
    assert result.success, result.error_in_exec
    saved = saved_size(cap.outputs)
    print(f"saved outputs of the {shape} cell of about {size:,} nodes: {saved:,} bytes")
    assert saved < 2_000_000


@pytest.mark.parametrize("value", ["0", "-3", "many", "2.5"])
def test_a_bad_node_count_is_a_usage_error(ip, value):
    ip.user_ns.pop("ran", None)
    result, cap = run(ip, f"%%autograd --max-nodes {value}\nran = True\n")
    assert not result.success
    text = cap.stdout + cap.stderr
    assert "UsageError" in text and "--max-nodes" in text and "1 or more" in text, text
    assert "ran" not in ip.user_ns


def test_a_huge_cell_saves_small_at_the_default_cap(ip):
    """Twice the default cap's calls: the saved outputs (pictures, text and widget state)
    stay under 2 MB."""
    result, cap = run(ip, chain_cell("--backward loss", 2 * MAX_NODES))
    assert result.success
    graph_text = next(o.data["text/plain"] for o in cap.outputs if "GraphView" in str(o.data))
    assert f"cut at {MAX_NODES:,} nodes" in graph_text
    size = saved_size(cap.outputs)
    print(f"saved outputs of a {2 * MAX_NODES:,}-call cell: {size:,} bytes")
    assert size < 2_000_000


def test_a_wide_fan_cut_at_the_default_cap_saves_under_2_mb(ip):
    """A fan of 20,000 leaves (100,000 nodes) cut at the default cap: every kept node is a
    box's worth of the view's snapshot, and the saved outputs still stay under 2 MB."""
    ip.run_cell(
        "import nbgrad as ng\nx = ng.randn(8)\n"
        "ws = [ng.randn(8, requires_grad=True) for _ in range(20000)]"
    )
    result, cap = run(
        ip, "%%autograd --backward loss\nloss = sum(((x * w).tanh()).sum() for w in ws)\n"
    )
    assert result.success, result.error_in_exec
    graph_text = next(o.data["text/plain"] for o in cap.outputs if "GraphView" in str(o.data))
    assert f"cut at {MAX_NODES:,} nodes" in graph_text
    size = saved_size(cap.outputs)
    print(f"saved outputs of a 20,000-leaf fan's cell: {size:,} bytes")
    assert size < 2_000_000
