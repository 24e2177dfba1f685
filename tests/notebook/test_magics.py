"""``%%autograd`` through IPython's InteractiveShell (nbgrad/notebook/magics.py)."""

import importlib

import anywidget  # noqa: F401
import IPython  # noqa: F401
import pytest
from IPython.core import page
from IPython.utils.capture import capture_output  # noqa: E402

WIDGET = "application/vnd.jupyter.widget-view+json"
SVG = "image/svg+xml"
PNG = "image/png"  # what an untrusted notebook shows (nbgrad/notebook/png.py)
observer_mod = importlib.import_module("nbgrad._graph.observer")


def run(ip, source):
    with capture_output() as cap:
        result = ip.run_cell(source)
    return result, cap


def test_the_cell_runs_as_usual_and_is_recorded(ip):
    result, cap = run(
        ip,
        "%%autograd -o s1\n"
        "x = ng.tensor([1.0, 2.0], requires_grad=True)\n"
        "print('inside')\n"
        "y = (x * 3).sum()\n"
        "y\n",
    )
    assert result.success
    assert result.result.item() == 9.0  # the last expression is the cell's value
    assert "inside" in cap.stdout
    assert ip.user_ns["y"].grad_fn.name() == "SumBackward0"
    s = ip.user_ns["s1"]
    # lines as the notebook shows them: %%autograd is line 1
    assert [(r.op, r.line, r.source) for r in s.record.records] == [
        ("mul", 4, "y = (x * 3).sum()"),
        ("sum", 4, "y = (x * 3).sum()"),
    ]
    assert observer_mod._forward == [] and observer_mod._backward == []


def test_live_display_then_final_graph_and_hook_editor(ip):
    result, cap = run(ip, "%%autograd\nx = ng.ones(2, requires_grad=True)\nz = (x * x).exp()\n")
    assert result.success
    live, emptied, graph, editor = cap.outputs
    assert set(live.data) == {WIDGET} and live.transient.get("display_id")
    assert emptied.update and emptied.data == {}
    assert emptied.transient["display_id"] == live.transient["display_id"]
    assert set(graph.data) == {WIDGET, "text/plain", SVG, PNG}
    assert graph.data["text/plain"] == "GraphView(3 nodes, 3 edges, 0 groups, 0 backward passes)"
    assert "ExpBackward0" in graph.data[SVG] and ">x<" in graph.data[SVG]  # leaf named x
    assert editor.data["text/plain"] == "HookEditor(no target: select a node in the graph)"


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_backward_retain_and_create_graph(ip):
    result, cap = run(
        ip,
        "%%autograd --backward loss --retain-graph --create-graph -o s2\n"
        "x = ng.tensor([1.0, 2.0], requires_grad=True)\n"
        "loss = (x ** 2).sum()\n",
    )
    assert result.success
    assert ip.user_ns["x"].grad.tolist() == [2.0, 4.0]
    s = ip.user_ns["s2"]
    [tr] = s.record.passes
    assert tr.keep_graph and tr.create_graph
    assert s.graph.snapshot["pass"] == 0
    assert any(e["grad"] for e in s.graph.snapshot["edges"])
    assert s.hooks.root is ip.user_ns["loss"]


def test_static_shows_only_still_pictures(ip):
    result, cap = run(
        ip,
        "%%autograd --static --step --backward loss\n"
        "x = ng.tensor([1.0, 2.0], requires_grad=True)\n"
        "loss = (x * x).sum()\n",
    )
    assert result.success
    assert [set(o.data) for o in cap.outputs] == [{SVG, PNG, "text/plain"}] * 2
    assert cap.outputs[0].data["text/plain"].startswith("<autograd graph: 2 forward calls")
    assert "backward pass: 3 steps" in cap.outputs[1].data[SVG]


def test_step_opens_the_stepper(ip):
    result, cap = run(
        ip,
        "%%autograd --step --backward loss -o s3\n"
        "x = ng.tensor([1.0, 2.0], requires_grad=True)\n"
        "loss = (x * x).sum()\n",
    )
    assert result.success
    shown = [o.data["text/plain"] for o in cap.outputs if "text/plain" in o.data]
    # one drawing of the graph (the stepper's), then the hook editor
    assert shown[-2] == "BackwardStepper(3 steps; at the start)", shown
    assert shown[-1].startswith("HookEditor(") and not any("GraphView(" in t for t in shown)
    session = ip.user_ns["s3"]
    assert session.stepper.steps == 3
    # a click on a node in the stepper selects it for the hook editor
    node = next(n["id"] for n in session.graph.snapshot["nodes"] if n["name"] == "MulBackward0")
    session.stepper._receive({"type": "select", "id": node})
    assert session.hooks.target["label"] == "MulBackward0"
    result, cap = run(ip, "%%autograd --step\nq = ng.ones(1, requires_grad=True) * 2\n")
    assert result.success and "no backward pass ran" in cap.stdout


def test_bad_options_print_usage_not_a_traceback(ip):
    ip.user_ns.pop("ran", None)
    for line in ("--bogus", "--backward", "-o 3x", "--backward 'unclosed"):
        result, cap = run(ip, f"%%autograd {line}\nran = True\n")
        assert not result.success
        text = cap.stdout + cap.stderr
        assert "UsageError" in text and "usage: %%autograd" in text, text
        assert "Traceback" not in text
        assert "ran" not in ip.user_ns  # the body did not run


def test_help(ip):
    result, cap = run(ip, "%%autograd --help\nran = True\n")
    assert result.success and "--backward EXPR" in cap.stdout and "-o NAME" in cap.stdout


def test_an_exception_fails_the_cell_with_the_cells_own_traceback(ip):
    result, cap = run(
        ip, "%%autograd -o s4\nx = ng.ones(2, requires_grad=True)\ny = x * 2\n1 / 0\n"
    )
    assert not result.success
    assert isinstance(result.error_in_exec, ZeroDivisionError)
    text = cap.stdout + cap.stderr
    assert "----> 4 1 / 0" in text
    assert "magics.py" not in text and "run_cell_magic" not in text
    assert text.count("Traceback") <= 1
    s = ip.user_ns["s4"]  # the session is kept, and the recorder is consistent
    assert [r.op for r in s.record.records] == ["mul"] and not s.record.running
    assert observer_mod._forward == [] and observer_mod._backward == []
    assert cap.outputs[-2].data["text/plain"].startswith("GraphView(2 nodes")


def test_a_syntax_error_is_reported_like_any_cell(ip):
    result, cap = run(ip, "%%autograd\nx = (1,\n")
    assert not result.success
    text = cap.stdout + cap.stderr
    assert "SyntaxError" in text and "magics.py" not in text
    assert cap.outputs == []


def test_ipython_syntax_in_the_cell(ip):
    result, cap = run(ip, "%%autograd\nv = ng.ones(1, requires_grad=True) * 2\n%time w = v + 1\n")
    assert result.success
    assert ip.user_ns["w"].grad_fn.name() == "AddBackward0"


def test_module_groups_in_a_cell(ip):
    result, cap = run(
        ip,
        "%%autograd -o s5\n"
        "import nbgrad.nn as nn\n"
        "model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())\n"
        "out = model(ng.ones(4, 3)).sum()\n",
    )
    assert result.success
    snap = ip.user_ns["s5"].graph.snapshot
    assert [g["path"] for g in snap["groups"]] == ["model", "model.0", "model.1"]
    labels = {n["label"] for n in snap["nodes"] if n["kind"] == "leaf"}
    assert labels == {"model.0.weight", "model.0.bias"}


def test_leaves_are_named_by_the_cell_then_by_module_path(ip):
    # an earlier cell leaves names bound: a loop variable on the last parameter, and a second
    # name for a tensor that this cell will name itself
    ip.run_cell(
        "model = ng.nn.Sequential(ng.nn.Linear(3, 2))\n"
        "for name, param in model.named_parameters():\n"
        "    pass\n"
        "old_name = ng.ones(2, requires_grad=True)\n"
    )
    result, _ = run(
        ip,
        "%%autograd --static -o s_names\n"
        "for k in range(1):\n"
        "    loop_var = old_name\n"
        "scale = old_name\n"
        "loss = (model(ng.ones(3)) * scale).sum()\n",
    )
    assert result.success
    snap = ip.user_ns["s_names"].snapshot(timings=False)
    leaves = sorted(n["label"] for n in snap["nodes"] if n["kind"] == "leaf")
    # the parameter keeps its module path (not "param"); the tensor the cell assigned keeps the
    # cell's name (not "old_name" from before; a top-level name before one inside a loop)
    assert leaves == ["model.0.bias", "model.0.weight", "scale"], leaves
    groups = [g["path"] for g in snap["groups"]]
    assert groups == ["model", "model.0"], groups
    ip.run_cell("del model, name, param, old_name, loop_var, scale, loss, k, s_names")


def test_a_failed_forward_marks_its_line(ip):
    """See NOTE [Failed forward]: the still picture names the line whose call raised, marks the
    nodes made on it, and draws no node as the root."""
    cell = (
        "x = ng.ones(2, 3, requires_grad=True)\n"
        "y = (x * 2).sum(0)\n"
        "z = (y * 3) @ ng.ones(4, 2)\n"
        "never = z.sum()\n"
    )
    with capture_output() as cap:
        result = ip.run_cell("%%autograd --static\n" + cell)
    assert isinstance(result.error_in_exec, RuntimeError)  # the cell still fails, as usual
    (out,) = [o for o in cap.outputs if SVG in o.data]
    svg = out.data[SVG]
    assert "The forward failed at line 4: z = (y * 3) @ ng.ones(4, 2)" in svg
    assert "RuntimeError" in svg
    assert 'stroke="#b00020"' in svg  # the MulBackward0 made on line 4
    assert "#fdf0f0" not in svg  # no red root: the last node made is not an output


def test_line_magic_help_and_documentation(ip):
    for source in ("%autograd --help", "%autograd", "%%autograd --help", "%%autograd --help\n\n"):
        result, cap = run(ip, source)
        assert result.success, (source, cap.stdout, cap.stderr)
        assert "--backward EXPR" in cap.stdout and "-o NAME" in cap.stdout, source
        assert "cell body is empty" not in cap.stdout + cap.stderr
    # an option with no code under it says where the code goes
    result, cap = run(ip, "%autograd --backward loss")
    assert not result.success
    assert "the code to record goes under %%autograd" in cap.stdout + cap.stderr
    result, cap = run(ip, "%%autograd --static\n")
    assert not result.success and "goes under %%autograd" in cap.stdout + cap.stderr
    # %autograd? shows the documentation, with the usage
    info = ip.object_inspect("%autograd")
    assert info["found"] and "--backward EXPR" in info["docstring"]
    pages = []
    orig = page.page
    page.page = lambda data, *a, **k: pages.append(data)
    try:
        ip.run_cell("%autograd?")
        ip.run_cell("%%autograd?")
    finally:
        page.page = orig
    text = " ".join(str(p) for p in pages)
    assert "--backward EXPR" in text and "record its forward calls" in text, text[:500]


def test_an_option_error_names_the_option_and_shows_no_frame_of_the_magic(ip):
    for source, line in (
        ("%%autograd --backward n\nn = 3\n", "TypeError: %%autograd --backward n: that is an int"),
        (
            "%%autograd --backward nope\nx = 1\n",
            "NameError: %%autograd --backward nope: name 'nope' is not defined",
        ),
    ):
        result, cap = run(ip, source)
        assert not result.success
        shown = "\n".join(result.error_in_exec._render_traceback_())
        assert shown.startswith(line), shown
        assert "magics.py" not in shown and "Could not get source" not in shown


def test_an_option_given_twice_is_a_usage_error(ip):
    ip.user_ns.pop("twice_ran", None)
    result, cap = run(ip, "%%autograd --backward a --backward b\ntwice_ran = 1\n")
    assert not result.success and "--backward is given 2 times" in str(result.error_in_exec)
    assert result.error_in_exec.__class__.__name__ == "UsageError"
    assert "twice_ran" not in ip.user_ns  # the cell did not run


def test_a_trailing_semicolon_hides_the_value(ip):
    result, cap = run(ip, "%%autograd\ny = ng.ones(2, requires_grad=True) * 2\ny;\n")
    assert result.success and result.result is None
    result, cap = run(ip, "%%autograd\ny = ng.ones(2, requires_grad=True) * 2\ny\n")
    assert result.success and result.result is ip.user_ns["y"]


def test_an_interrupt_in_the_cell_shows_only_the_cells_frames(ip):
    result, cap = run(
        ip, "%%autograd\nx = ng.ones(2, requires_grad=True) * 2\nraise KeyboardInterrupt\n"
    )
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    shown = "\n".join(result.error_in_exec._render_traceback_())
    assert "raise KeyboardInterrupt" in shown
    assert "run_cell_magic" not in shown and "_reraise" not in shown and "magics.py" not in shown
