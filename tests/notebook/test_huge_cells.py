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


@pytest.mark.parametrize(
    ("shape", "size"),
    [("fan", 100_000), ("transformer", 21_440), ("rnn", 24_000), ("dag", 24_000), ("train", 2_000)],
)
def test_each_shape_s_cell_saves_under_2_mb(ip, shape, size):
    """Each shape's cell as ``notebook_shapes.py`` runs it: a fan of 20,000 leaves, a
    320-layer TransformerEncoder (its module groups and the parameters' long names sent as
    columns, NOTE [Nodes and groups sent as columns]: 2.75 MB when each node and group was
    sent as an object), the RNN loop and the random DAG, all cut at the default cap, and a
    200-step training loop: the saved outputs stay under 2 MB."""
    setup, body, options = cell(shape, size)
    assert ip.run_cell("import nbgrad as ng\n" + setup).success
    result, cap = run(ip, f"%%autograd {options}\n{body}")
    assert result.success, result.error_in_exec
    if shape != "train":
        graph_text = next(o.data["text/plain"] for o in cap.outputs if "GraphView" in str(o.data))
        assert f"cut at {MAX_NODES:,} nodes" in graph_text
    saved = saved_size(cap.outputs)
    print(f"saved outputs of the {shape} cell of about {size:,} nodes: {saved:,} bytes")
    assert saved < 2_000_000
