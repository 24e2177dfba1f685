"""Version errors explained (``Session.explain(err)``, ``nbgrad/notebook/answers_versions.py``):
the node that saved the tensor, which saved tensor, the versions, and the cell lines of the
in-place ops that bumped it, for nbgrad code and for PyTorch code."""

import json
import sys

import pytest

import nbgrad as ng
from nbgrad.notebook.answers_versions import explain, is_version_error
from nbgrad.notebook.recorder import record

torch = pytest.importorskip("torch")
LIBS = pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])


def _failing(body, lib, **ns):
    """Run ``body`` (lines of code; the last one runs backward) recorded, compiled as a file of
    its own so that records carry its lines; returns (recorder, the error)."""
    filename = f"<version-test-{len(body)}-{lib.__name__}>"
    code = "\n".join(body) + "\n"
    import linecache

    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    ns = {"lib": lib, **ns}
    with record(cell_filename=filename) as rec:
        with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
            exec(compile(code, filename, "exec"), ns)  # noqa: S102 - the test's own code
    return rec, info.value


@LIBS
def test_saved_input_bumped_twice(lib):
    rec, err = _failing(
        [
            "x = lib.randn(3, requires_grad=True)",
            "a = x * 2",
            "b = a.sin()",  # saves a (version 0)
            "c = a + 1",  # reads a: not in place
            "d = x * 3",
            "d.add_(1)",  # in place, on another tensor
            "a.mul_(3)",
            "a += 1",
            "(b + c + d).sum().backward()",
        ],
        lib,
    )
    got = explain(rec, err)
    assert is_version_error(err)
    assert (got.node, got.saved, got.shape) == ("SinBackward0", "self", [3])
    assert (got.expected, got.actual) == (0, 2)
    assert got.bumped_by == ["a.mul_(3)", "a += 1"]
    assert got.lines == [7, 8]
    assert got.complete
    assert "line 7: a.mul_(3); line 8: a += 1" in str(got)


@LIBS
def test_saved_output_bumped(lib):
    rec, err = _failing(
        [
            "x = lib.randn(4, requires_grad=True)",
            "y = x.exp()",  # saves its result
            "z = y * 1",
            "y.add_(1)",
            "y.sum().backward()",
        ],
        lib,
    )
    got = explain(rec, err)
    assert (got.node, got.saved, got.expected, got.actual) == ("ExpBackward0", "result", 0, 1)
    assert got.bumped_by == ["y.add_(1)"] and got.complete
    seq = rec.graph_source.sequence_nr
    ids = {r.line: f"n{seq(r.node)}" for r in rec.records if r.node is not None}
    assert got.ids == [ids[4]] and got.node_id == ids[2]


@LIBS
def test_inplace_relu_of_a_module(lib):
    """A model's ``F.relu(h, inplace=True)`` after a sigmoid, which saved its output."""
    rec, err = _failing(
        [
            "lin = lib.nn.Linear(3, 2)",
            "h = lin(lib.randn(4, 3)).sigmoid()",
            "out = lib.nn.functional.relu(h, inplace=True)",
            "out.sum().backward()",
        ],
        lib,
    )
    got = explain(rec, err)
    assert (got.node, got.saved, got.shape) == ("SigmoidBackward0", "result", [4, 2])
    assert got.bumped_by == ["out = lib.nn.functional.relu(h, inplace=True)"]


@LIBS
def test_inplace_relu_module_whose_line_shows_nothing(lib):
    rec, err = _failing(
        [
            "act = lib.nn.ReLU(inplace=True)",
            "h = lib.randn(4, 3, requires_grad=True).sigmoid()",
            "out = act(h)",
            "out.sum().backward()",
        ],
        lib,
    )
    got = explain(rec, err)
    assert (got.node, got.saved) == ("SigmoidBackward0", "result")
    assert got.bumped_by == ["out = act(h)"] and got.complete


def test_setitem_nbgrad_one_entry_per_statement():
    rec, err = _failing(
        ["x = lib.randn(3, requires_grad=True)", "a = x.exp()", "a[0] = 5", "a.sum().backward()"],
        ng,
    )
    got = explain(rec, err)
    assert got.bumped_by == ["a[0] = 5"] and got.lines == [3] and got.complete


def test_setitem_torch_is_not_guessed():
    """torch's ``__setitem__`` returns no tensor, so the recorder has no call for it: the
    answer says so rather than guess."""
    rec, err = _failing(
        ["x = lib.randn(3, requires_grad=True)", "a = x.exp()", "a[0] = 5", "a.sum().backward()"],
        torch,
    )
    got = explain(rec, err)
    assert (got.node, got.expected, got.actual) == ("ExpBackward0", 0, 1)
    assert got.bumped_by == [] and not got.complete
    assert "no recorded in-place op" in str(got)


def test_an_error_of_a_pass_not_recorded_names_no_node():
    _, err = _failing(
        ["x = lib.ones(2, requires_grad=True)", "y = x.exp()", "y.add_(1)", "y.sum().backward()"],
        ng,
    )
    with record() as rec:
        pass
    got = explain(rec, err)
    assert (got.node, got.expected, got.actual, got.bumped_by) == (None, 0, 1, [])
    assert str(got).startswith("a saved tensor (the backward that failed was not recorded")


def test_explain_refuses_another_error():
    with record() as rec:
        pass
    with pytest.raises(ValueError, match="modified by an inplace operation"):
        explain(rec, RuntimeError("something else"))


def _failing_cell(ip, framework, options):
    """Run a cell whose backward meets ``h`` changed in place; returns (session, the error)."""
    lib = "ng" if framework == "nbgrad" else "torch"
    ip.run_cell("import torch")
    result = ip.run_cell(
        f"%%autograd {options} -o s\n"
        f"w = {lib}.ones(3, requires_grad=True)\n"
        "h = (w * 2).tanh()\n"
        "h.mul_(2)\n"
        "h.sum().backward()\n"
    )
    assert isinstance(result.error_in_exec, RuntimeError)
    return ip.user_ns["s"], result.error_in_exec


@pytest.mark.parametrize("framework", ["nbgrad", "torch"])
def test_session_explain(ip, framework):
    s, error = _failing_cell(ip, framework, "--static")
    for got in (s.explain(), s.explain(error), s.explain(sys.last_value)):
        assert (got.node, got.saved, got.expected, got.actual) == ("TanhBackward0", "result", 0, 1)
        assert got.bumped_by == ["h.mul_(2)"] and got.lines == [4]


@pytest.mark.parametrize("framework", ["nbgrad", "torch"])
def test_the_graph_view_gets_the_answer(ip, framework):
    """A live cell whose backward fails so: its graph view is sent the nodes to mark."""
    s, _ = _failing_cell(ip, framework, "")
    got = json.loads(s.graph._answer_json)
    answer = s.explain()
    assert got == {
        "kind": "version",
        "node": answer.node_id,
        "bumped": answer.ids,
        "text": str(answer),
    }
    names = {n["id"]: n["name"] for n in s.snapshot()["nodes"]}
    assert names[got["node"]] == "TanhBackward0" and [names[i] for i in got["bumped"]] == [
        "MulBackward0"
    ]
    lib = "ng" if framework == "nbgrad" else "torch"
    ip.run_cell(f"%%autograd -o s\ny = ({lib}.ones(2, requires_grad=True) * 2).sum()")
    assert ip.user_ns["s"].graph._answer_json == "{}"


@pytest.mark.parametrize("framework", ["nbgrad", "torch"])
def test_the_still_picture_marks_the_answer(ip, framework):
    """``--static``: the picture marks the saving node and the in-place op's node, with the
    answer in words under the swatches."""
    from IPython.utils.capture import capture_output

    from nbgrad.notebook.overlays import BUMPED_STROKE, SAVED_STROKE

    with capture_output() as cap:
        s, _ = _failing_cell(ip, framework, "--static")
    (svg,) = [o.data["image/svg+xml"] for o in cap.outputs if "image/svg+xml" in o.data]
    assert "a saved tensor was changed in place" in svg
    assert "line 4: h.mul_(2)" in svg
    assert f'stroke="{SAVED_STROKE}" stroke-width="3.5"' in svg
    assert f'stroke="{BUMPED_STROKE}" stroke-width="3.5" stroke-dasharray="7 3"' in svg
    assert s.to_svg() == svg
