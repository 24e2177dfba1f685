"""The graph view's search ranking and its failure heading (issue 33, points 5 and 6), run in
Node on the widget's module as anywidget loads it (common.js, then graph_view.js): an exact
name first, its own case first, leaves and parameters before ops, one letter matching no
"...Backward0" by a letter inside it, each row naming its node once (NOTE [Search ranking]);
a failure with no cell line does not say that the forward failed."""

from __future__ import annotations

import anywidget  # noqa: F401 - the notebook extra
import pytest


def _node(id, name, label=None, kind="node", group=None, line=None):
    return {"id": id, "kind": kind, "name": name, "label": label or name, "group": group,
            "line": line, "hooks": 0, "order": None}  # fmt: skip


NODES = [
    _node("n0", "MeanBackward0", line=7),
    _node("n1", "PowBackward0", line=7),
    _node("n2", "TanhBackward0", group="g1", line=5),
    _node("n3", "MulBackward0", line=4),
    _node("n4", "AccumulateGrad", "W", kind="leaf"),
    _node("n5", "AccumulateGrad", "model.0.weight", kind="leaf", group="g2"),
    _node("n6", "AccumulateGrad", "w", kind="leaf"),
    _node("n7", "SumBackward0", line=8),
    _node("n8", "WhereBackward0", line=6),
]
GROUPS = [
    {"id": "g1", "name": "act", "type": "Tanh", "path": "act", "parent": None, "depth": 0,
     "records": [0, 1], "error": None},
    {"id": "g2", "name": "0", "type": "Linear", "path": "model.0", "parent": None, "depth": 0,
     "records": [0, 1], "error": None},
]  # fmt: skip


@pytest.fixture(scope="module")
def run(graph_view_js):
    """``run(expr, **data)``: the JSON value of a JS expression over the module's exports."""
    return lambda expr, **data: graph_view_js(["rankMatches", "failureTitle"], expr, **data)


def _search(run, query):
    return run("rankMatches(data.q, data.nodes, data.groups)", q=query, nodes=NODES, groups=GROUPS)


def test_one_letter_finds_the_leaf_first_and_no_backward_by_a_letter_inside(run):
    found = _search(run, "W")
    assert [m["text"] for m in found] == ["W", "w", "model.0.weight", "WhereBackward0"], found


def test_an_exact_name_comes_first_in_its_own_case(run):
    assert [m["text"] for m in _search(run, "w")][:2] == ["w", "W"]
    assert _search(run, "SumBackward0")[0]["text"] == "SumBackward0"
    assert _search(run, "weight")[0]["text"] == "model.0.weight"  # a parameter's last part


def test_words_inside_names_and_longer_substrings(run):
    texts = [m["text"] for m in _search(run, "back")]
    assert "TanhBackward0" in texts and "WhereBackward0" in texts  # a word starts with it
    anh = [m["text"] for m in _search(run, "anh")]  # two letters or more; ops before modules
    assert anh == ["TanhBackward0", "act: Tanh"], anh
    assert [m["text"] for m in _search(run, "line 5")] == ["TanhBackward0"]
    modules = [m for m in _search(run, "model") if m["kind"] == "group"]
    assert modules and modules[0]["text"] == "model.0: Linear"


def test_a_row_names_its_node_once(run):
    for query in ("Sum", "W", "Tanh", "model"):
        for m in _search(run, query):
            words = f"{m['text']} {m['note']}".split()
            assert len(words) == len(set(words)), m
    tanh = next(m for m in _search(run, "Tanh") if m["kind"] == "node")
    assert tanh["note"] == "act · line 5", tanh  # its module and line, not its name again
    assert _search(run, "weight")[0]["note"] == "AccumulateGrad · model.0"


def test_a_failure_without_a_cell_line_does_not_blame_the_forward(run):
    titles = run(
        "data.f.map(failureTitle)",
        f=[
            {"line": None, "source": "", "error": "NameError: ..."},
            {"line": 4, "source": "z = y @ w", "error": "RuntimeError: ..."},
        ],
    )
    assert titles == ["The forward ran; then the cell failed:", "The forward failed at line 4:"]
