"""An interrupt that lands in the drawing of an ``%%autograd`` cell, after its code ran (issue
22, point 5; NOTE [Interrupted drawing] in nbgrad/notebook/magics.py): the recorded graph and
the session are kept, the cell shows the text summary and a one-line note, and ``%autograd
show`` draws the graph again.

The KeyboardInterrupt is raised inside each stage of the drawing (the snapshot, the layout,
the view's JSON, the still SVG, the PNG, the static picture, the hook editor), armed by the
cell's last line, so it lands after the code as a real one does in a big cell;
tests/notebook/test_kernel_interrupts.py sends a real one to a real kernel.
"""

from __future__ import annotations

import importlib
import itertools

import anywidget  # noqa: F401
import pytest
from IPython.utils.capture import capture_output

from nbgrad.notebook import GraphView, HookEditor
from nbgrad.notebook.sessions import SESSIONS

observer_mod = importlib.import_module("nbgrad._graph.observer")
graph_view = importlib.import_module("nbgrad.notebook.graph_view")
magics = importlib.import_module("nbgrad.notebook.magics")
widget_mod = importlib.import_module("nbgrad.notebook._widget")

CELL = (
    "x = ng.tensor([0.5, -1.0], requires_grad=True)\n"
    "h = (x * 2).tanh()\n"
    "loss = (h.sigmoid() * h).sum()\n"
    "arm()\n"
)
OPS = ["mul", "tanh", "sigmoid", "mul", "sum"]

# where the interrupt lands: (module, attribute, the cell's options)
STAGES = {
    "snapshot": (graph_view, "build_snapshot", ""),
    "layout": (graph_view, "layout", ""),
    "view json": (graph_view, "view_snapshot", ""),
    "hook editor": (HookEditor, "_update", ""),
    "still svg": (GraphView, "to_svg", ""),
    "png": (widget_mod, "png_b64", ""),
    "stepper": (magics, "BackwardStepper", "--backward loss --step"),
    "static svg": (magics, "still_svg", "--static"),
}


@pytest.fixture
def interrupt_in(ip, monkeypatch):
    """``interrupt_in(stage)``: the cell's ``arm()`` makes the stage's next call raise a
    KeyboardInterrupt (once)."""
    armed = {"on": False}
    ip.user_ns["arm"] = lambda: armed.update(on=True)

    def install(stage):
        owner, name, _ = STAGES[stage]
        original = getattr(owner, name)

        def interrupted(*args, **kwargs):
            if armed["on"]:
                armed["on"] = False
                raise KeyboardInterrupt
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, interrupted)

    yield install
    SESSIONS.release_all()


_requests = itertools.count()


def _run(ip, source, cell_id=None):
    """Run a cell as the frontend runs cell ``cell_id`` (a new execute request each time)."""
    header = {"msg_id": f"request-{next(_requests)}"}
    ip.parent_header = {"header": header, "metadata": {"cellId": cell_id or "c"}}
    try:
        with capture_output() as cap:
            result = ip.run_cell(source)
    finally:
        ip.parent_header = {}
    return result, cap


def _texts(cap):
    return [o.data.get("text/plain", "") for o in cap.outputs]


@pytest.mark.parametrize("stage", list(STAGES))
def test_an_interrupted_drawing_keeps_the_graph_and_draws_it_again(ip, interrupt_in, stage):
    interrupt_in(stage)
    options = STAGES[stage][2]
    ip.user_ns.pop("s", None)
    result, cap = _run(ip, f"%%autograd -o s {options}\n" + CELL, cell_id=f"cell-{stage}")

    error = result.error_in_exec
    assert isinstance(error, KeyboardInterrupt)
    [note] = error._render_traceback_()  # one line, naming how to draw it
    assert note.startswith("KeyboardInterrupt: the drawing of the graph was interrupted")
    assert note.endswith("%autograd show s draws it")
    assert "<autograd graph: 5 forward calls, 0 module calls," in _texts(cap)[-1]
    # the cell's code ran, and its graph and session are kept
    s = ip.user_ns["s"]
    assert [r.op for r in s.record.records] == OPS and not s.record.running
    assert observer_mod._forward == [] and observer_mod._backward == []
    assert ip.user_ns["loss"].grad_fn is not None
    assert (s.graph is None) == (options == "--static")
    assert SESSIONS.interrupted is s

    # drawn again, with its name or without (the last interrupted one)
    for line in ("%autograd show s", "%autograd show"):
        result, cap = _run(ip, line, cell_id="show")
        assert result.success, result.error_in_exec
        texts = _texts(cap)
        if options == "--static":
            assert texts == ["<autograd graph: 5 forward calls, 0 module calls, 0 backward passes>"]
            continue
        assert len(s.graph.snapshot["nodes"]) >= len(OPS)
        first = "BackwardStepper(" if "--step" in options else "GraphView("
        assert texts[0].startswith(first) and texts[1].startswith("HookEditor(")
        assert s.hooks.graph is s.graph


def test_the_kept_session_goes_when_its_cell_runs_again(ip, interrupt_in):
    interrupt_in("layout")
    result, _ = _run(ip, "%%autograd\n" + CELL, cell_id="again")
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    kept = SESSIONS.interrupted
    assert kept is not None and [r.op for r in kept.record.records] == OPS
    result, cap = _run(ip, "%autograd show", cell_id="elsewhere")
    assert result.success and _texts(cap)[0].startswith("GraphView(")
    result, _ = _run(ip, "%%autograd\nz = ng.ones(2, requires_grad=True) * 3\n", cell_id="again")
    assert result.success and SESSIONS.interrupted is None
    result, cap = _run(ip, "%autograd show", cell_id="elsewhere")
    assert "no cell's drawing was interrupted" in cap.stderr + str(result.error_in_exec)


@pytest.mark.parametrize(
    "line, message",
    [
        ("%autograd show nothing_here", "'nothing_here' is not a session of %%autograd -o NAME"),
        ("%autograd show a b", "usage: %autograd show [NAME]"),
    ],
)
def test_show_of_something_else_is_a_usage_error(ip, line, message):
    SESSIONS.release_all()
    result, cap = _run(ip, line)
    assert message in cap.stderr + str(result.error_in_exec)


def test_a_session_drawn_again_stays_with_the_cell_that_made_it(ip):
    """``%autograd show s`` of an open session shows its widgets again without taking them from
    their cell: re-running the show cell closes nothing; re-running the cell that made them
    closes them. A closed session drawn again belongs to the show cell."""
    SESSIONS.release_all()
    made = "%%autograd -o s\n" + CELL.replace("arm()\n", "")
    result, _ = _run(ip, made, cell_id="maker")
    assert result.success
    s = ip.user_ns["s"]
    widgets = [s.graph, s.hooks]
    comms = [w.comm for w in widgets]
    for _ in range(2):
        result, cap = _run(ip, "%autograd show s", cell_id="shower")
        assert result.success and _texts(cap)[0].startswith("GraphView(")
        assert [w.comm for w in widgets] == comms  # the same comms: the cell's views live on
    old = ip.user_ns.pop("s")
    result, _ = _run(ip, made, cell_id="maker")  # the cell runs again: its widgets close
    assert all(w.comm is None for w in widgets)
    ip.user_ns["s"] = old
    result, _ = _run(ip, "%autograd show s", cell_id="shower")
    assert all(w.comm is not None for w in widgets)
    result, _ = _run(ip, "%autograd show s", cell_id="shower")  # this run closes, then reopens
    released = SESSIONS.released
    _run(ip, "%%autograd\nz = ng.ones(1, requires_grad=True) * 2\n", cell_id="shower")
    assert SESSIONS.released == released + len(widgets)
    assert all(w.comm is None for w in widgets)
