"""The notebook layer under the issue "Reliability": memory, interrupts, bad input.

- Memory: a recorder keeps the nodes of what it recorded (its records point at them) for as
  long as it lives; a widget keeps its graph until it is closed and let go. After that, with
  the outputs deleted, every node and saved array is freed.
- Interrupts: a KeyboardInterrupt in an ``%%autograd`` cell (raised by the cell, or delivered
  with ``_thread.interrupt_main()`` during its ``--backward``) ends the cell promptly, leaves
  no listener behind, and the next cell works.
- Bad input: the magic's options, and malformed messages to the hook editor and the stepper,
  are answered with a readable error and change nothing else.
"""

from __future__ import annotations

import _thread
import gc
import importlib
import threading
import time
import weakref

import anywidget  # noqa: F401
import pytest
from IPython.utils.capture import capture_output

import nbgrad as ng
from nbgrad.autograd.graph import AccumulateGrad, SavedTensor
from nbgrad.notebook import BackwardStepper, GraphView, HookEditor, record

observer_mod = importlib.import_module("nbgrad._graph.observer")
# seconds from the interrupt to the end of the cell (the backward alone would take 5 s; the
# bound is loose for a machine shared with other work)
PROMPT = 2.0

# -- memory ------------------------------------------------------------------------------------


def _graph(x):
    """An output and weak references to its nodes and the arrays they saved."""
    h = (x * 2).tanh()
    out = (h.sigmoid() * h).sum()
    nodes, stack = [], [out.grad_fn]
    while stack:
        n = stack.pop()
        if n is None or n in nodes:
            continue
        nodes.append(n)
        stack.extend(f for f, _ in n.next_functions)
    nodes = [n for n in nodes if not isinstance(n, AccumulateGrad)]
    arrays = []
    for n in nodes:
        for s in n.saved_values().values():  # inputs stored as themselves too
            if type(s) is SavedTensor:
                a = s._data if s._data is not None else s._tensor._data
                if a is not x._data:
                    arrays.append(a)
    assert len(nodes) == 5 and len(arrays) >= 3
    return out, [weakref.ref(n) for n in nodes] + [weakref.ref(a) for a in arrays]


def _alive(refs):
    gc.collect()
    return sum(r() is not None for r in refs)


def test_a_recorder_keeps_its_graph_until_it_is_deleted():
    x = ng.tensor([0.5, -1.0, 2.0], requires_grad=True)
    with record() as rec:
        out, refs = _graph(x)
    del out
    assert _alive(refs) == len(refs)  # the nodes (and what they saved) stay: records name them
    assert [r.op for r in rec.records][:2] == ["mul", "tanh"]
    gc.disable()
    try:
        del rec  # ... and go with the recorder, by reference counting alone
        assert sum(r() is not None for r in refs) == 0
    finally:
        gc.enable()


def _widgets(kind, out, rec):
    if kind == "GraphView(recorder)":
        return [GraphView(recorder=rec, live=True)]
    if kind == "GraphView(roots)":
        return [GraphView(out)]
    if kind == "HookEditor":
        view = GraphView(recorder=rec)
        ed = HookEditor(graph=view, root=out)
        view.select(view.snapshot["nodes"][-1]["id"])
        ed.add_hook("node_hook", "lambda gi, go: None")
        ed.run_backward(retain_graph=True)
        assert ed.error == "" and len(ed.hooks) == 1
        return [view, ed]
    assert kind == "BackwardStepper"
    st = BackwardStepper(out, retain_graph=True)
    st.goto(2)
    return [st]


@pytest.mark.parametrize(
    "kind", ["GraphView(recorder)", "GraphView(roots)", "HookEditor", "BackwardStepper"]
)
def test_a_closed_widget_lets_its_graph_go(kind):
    x = ng.tensor([0.5, -1.0, 2.0], requires_grad=True)
    with record() as rec:
        out, refs = _graph(x)
    widgets = _widgets(kind, out, rec)
    del out, rec
    assert _alive(refs) > 0  # an open widget shows its graph
    for w in widgets:
        w.close()
    del widgets, w
    assert _alive(refs) == 0


@pytest.mark.parametrize("opts", ["", "--backward loss", "--backward loss --step", "--static"])
def test_a_stored_session_lets_its_graph_go_once_deleted_and_its_widgets_closed(ip, opts):
    """``%%autograd -o NAME``: the session holds the graph (record, widgets) while NAME is
    bound and its widgets are open (ipywidgets keeps an open widget); after both, nothing."""
    cell = (
        f"%%autograd -o sess {opts}\n"
        "x = ng.tensor([0.5, -1.0], requires_grad=True)\n"
        "h = (x * 2).tanh()\n"
        "loss = (h.sigmoid() * h).sum()\n"
    )
    result, _ = _run(ip, cell)
    assert result.success
    del result  # it holds the cell's value
    ns = ip.user_ns
    refs = [weakref.ref(ns["loss"].grad_fn), weakref.ref(ns["h"].grad_fn)]
    session = ns["sess"]
    widgets = [w for w in (session.graph, session.hooks, session.stepper) if w is not None]
    assert widgets or opts == "--static"
    for name in ("x", "h", "loss"):
        del ns[name]
    ip.displayhook.flush()  # the cell's value in Out / _
    del session
    assert _alive(refs) == len(refs)  # NAME still holds the session
    del ns["sess"]
    if widgets:
        assert _alive(refs) == len(refs)  # an open widget still shows its graph
    while widgets:
        widgets.pop().close()
    assert _alive(refs) == 0


# -- %%autograd: interrupts and bad options ----------------------------------------------------


def _run(ip, source):
    with capture_output() as cap:
        result = ip.run_cell(source)
    return result, cap


class Slow(ng.autograd.Function):
    """The identity, whose backward spins for 50 ms (an interrupt lands between bytecodes)."""

    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, grad):
        end = time.perf_counter() + 0.05
        while time.perf_counter() < end:
            pass
        return grad


def _assert_detached(ip, session):
    """Nothing listens any more, nothing more is recorded, and the next cell works."""
    assert observer_mod._forward == [] and observer_mod._backward == []
    assert not session.record.running and session.graph.live is False
    n = len(session.record.records)
    ip.run_cell("after = ng.tensor([1.0, 2.0], requires_grad=True) * 2")
    assert len(session.record.records) == n
    result, cap = _run(ip, "%%autograd -o again\nz = (ng.ones(2, requires_grad=True) * 3).sum()\n")
    assert result.success
    assert [r.op for r in ip.user_ns["again"].record.records] == ["mul", "sum"]
    assert cap.outputs[-2].data["text/plain"].startswith("GraphView(3 nodes")


def test_a_keyboard_interrupt_raised_in_the_cell(ip):
    start = time.perf_counter()
    result, cap = _run(
        ip,
        "%%autograd -o stopped\n"
        "x = ng.ones(2, requires_grad=True)\n"
        "y = (x * 2).exp()\n"
        "raise KeyboardInterrupt\n"
        "z = y * 3\n",
    )
    assert time.perf_counter() - start < 5.0
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    s = ip.user_ns["stopped"]
    assert [r.op for r in s.record.records] == ["mul", "exp"]
    assert not s.record.running
    _assert_detached(ip, s)


def test_interrupt_main_during_the_backward_of_the_cell(ip):
    ip.user_ns["Slow"] = Slow
    ip.user_ns.pop("slow_done", None)
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    try:
        start = time.perf_counter()
        result, cap = _run(
            ip,
            "%%autograd --backward loss -o interrupted\n"
            "x = ng.tensor([1.0, 2.0], requires_grad=True)\n"
            "h = x\n"
            "for _ in range(100):\n"  # 5 s of backward without the interrupt
            "    h = Slow.apply(h)\n"
            "loss = h.sum()\n",
        )
        took = time.perf_counter() - start
    finally:
        timer.cancel()
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    assert took < 0.5 + PROMPT, took
    s = ip.user_ns["interrupted"]
    assert ip.user_ns["x"].grad is None
    [trace] = s.record.passes
    assert 0 < len(trace.steps) < 100 and trace.finished
    _assert_detached(ip, s)
    # the interrupted graph was freed by the aborted pass: a new one trains as usual
    result, _ = _run(ip, "%%autograd --backward loss2\nloss2 = (Slow.apply(x) * 3).sum()\n")
    assert result.success and ip.user_ns["x"].grad.tolist() == [3.0, 3.0]


@pytest.mark.parametrize(
    "line, message",
    [
        ("--bogus", "%%autograd: unrecognized arguments: --bogus"),
        ("-o 3x", "%%autograd: -o needs a Python name, got '3x'"),
        ("-o class", "%%autograd: -o needs a Python name, got 'class'"),
        ("--backward", "%%autograd: argument --backward: expected one argument"),
    ],
)
def test_bad_options_are_a_usage_error_and_run_nothing(ip, line, message):
    ip.user_ns.pop("ran", None)
    result, cap = _run(ip, f"%%autograd {line}\nran = True\n")
    assert not result.success
    text = cap.stdout + cap.stderr
    assert f"UsageError: {message}\nusage: %%autograd [--backward EXPR]" in text, text
    assert "ran" not in ip.user_ns and observer_mod._forward == []


def test_backward_of_a_name_that_does_not_exist(ip):
    ip.user_ns.pop("no_such_loss", None)
    result, cap = _run(ip, "%%autograd -o s_missing --backward no_such_loss\ny = ng.ones(2) * 2\n")
    assert isinstance(result.error_in_exec, NameError)
    assert str(result.error_in_exec) == (
        "%%autograd --backward no_such_loss: name 'no_such_loss' is not defined"
    )
    s = ip.user_ns["s_missing"]
    assert [r.op for r in s.record.records] == ["mul"] and s.record.passes == []
    assert observer_mod._forward == [] and observer_mod._backward == []


def test_backward_of_something_that_is_not_a_tensor(ip):
    result, cap = _run(ip, "%%autograd -o s_int --backward n\nn = 3\ny = ng.ones(2) * 2\n")
    assert isinstance(result.error_in_exec, TypeError)
    assert str(result.error_in_exec) == "%%autograd --backward n: that is an int, not a tensor"
    text = cap.stdout + cap.stderr
    assert "TypeError: %%autograd --backward n: that is an int, not a tensor" in text
    s = ip.user_ns["s_int"]
    assert s.hooks.root is None and s.record.passes == []
    assert observer_mod._forward == [] and observer_mod._backward == []


# -- the hook editor: bad messages -------------------------------------------------------------


def _editor():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    with record() as rec:
        y = (x * 3).tanh()
        loss = y.sum()
    view = GraphView(recorder=rec)
    ed = HookEditor(graph=view, root=loss)
    tanh = [n["id"] for n in view.snapshot["nodes"] if n["name"] == "TanhBackward0"][0]
    view._receive({"type": "select", "id": tanh})
    hid = ed.add_hook("tensor_hook", "lambda grad: grad * 2")
    return x, loss, view, ed, hid


@pytest.mark.parametrize(
    "message, error",
    [
        (
            {"type": "add", "source": "lambda g: g"},
            "ValueError: the 'add' message has no 'kind' field",
        ),
        (
            {"type": "add", "kind": "tensor_hook"},
            "ValueError: the 'add' message has no 'source' field",
        ),
        (
            {"type": "edit", "source": "lambda g: g"},
            "ValueError: the 'edit' message has no 'id' field",
        ),
        ({"type": "remove"}, "ValueError: the 'remove' message has no 'id' field"),
        ({"type": "frobnicate"}, "unknown message {'type': 'frobnicate'}"),
        ({"kind": "tensor_hook"}, "unknown message {'kind': 'tensor_hook'}"),
        ("add", "unknown message 'add'"),
        ({"type": "remove", "id": "h999999"}, "KeyError: \"no hook 'h999999' on TanhBackward0\""),
        ({"type": "target", "id": "n999999"}, "KeyError: \"no node 'n999999' in this graph\""),
    ],
)
def test_a_malformed_editor_message_is_shown_and_changes_nothing(message, error):
    x, loss, view, ed, hid = _editor()
    hooks, target = list(ed.hooks), dict(ed.target)
    ed._receive(message)
    assert ed.error == error
    assert ed.hooks == hooks and ed.target == target
    ed._receive({"type": "run_backward", "retain_graph": True})  # the hook still works
    assert ed.error == "" and x.grad is not None and ed.fired[0]["changed"]


@pytest.mark.parametrize(
    "source, error",
    [
        ("42", "the code gives an int, not a function"),
        ("'lambda grad: grad'", "the code gives a str, not a function"),
        ("import math", "the code must be a lambda or define a function"),
        ("", "SyntaxError: empty hook code"),
    ],
)
def test_hook_code_that_is_not_a_callable(source, error):
    x, loss, view, ed, hid = _editor()
    hooks = list(ed.hooks)
    ed._receive({"type": "add", "kind": "tensor_hook", "source": source})
    assert error in ed.error and ed.error.startswith(
        error.split(":")[0] if ":" in error else "TypeError: <hook:TanhBackward0#"
    )
    assert ed.hooks == hooks
    ed._receive({"type": "edit", "id": hid, "source": source})
    assert error in ed.error and ed.hooks == hooks


def test_a_hook_on_a_module_that_no_longer_exists(fake_model):
    model = type(fake_model)("outer")  # conftest's FakeModule, held only here
    x = ng.ones(3, requires_grad=True)
    with record() as rec:
        loss = model(x).sum()
    view = GraphView(recorder=rec)
    ed = HookEditor(graph=view, root=loss)
    view._receive({"type": "select", "id": "leaf0"})
    ed.add_hook("tensor_hook", "lambda grad: grad")
    hooks, target = list(ed.hooks), dict(ed.target)
    del model
    gc.collect()
    assert view.module("g0") is None
    ed._receive({"type": "target", "id": "g0"})
    assert ed.error == "ValueError: the module of group 'g0' no longer exists"
    assert ed.hooks == hooks and ed.target == target and len(hooks) == 1


# -- the stepper: bad messages -----------------------------------------------------------------


def _stepper():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    st = BackwardStepper((x * 2).exp().sum())
    st._receive({"type": "goto", "position": 2})
    assert st.position == 2 and st.error == ""
    return st


@pytest.mark.parametrize(
    "message, error",
    [
        ({"type": "goto"}, "ValueError: the 'goto' message has no 'position' field"),
        (
            {"type": "goto", "position": "far"},
            "TypeError: the 'goto' message's 'position' must be int, got str 'far'",
        ),
        (
            {"type": "goto", "position": None},
            "TypeError: the 'goto' message's 'position' must be int, got NoneType None",
        ),
        ({"type": "step"}, "unknown message {'type': 'step'}"),
        (["goto", 3], "unknown message ['goto', 3]"),
    ],
)
def test_a_malformed_stepper_message_is_shown_and_keeps_the_position(message, error):
    st = _stepper()
    state = st.state()
    st._receive(message)
    assert st.error == error
    assert st.position == 2 and st.state() == state
    st._receive({"type": "goto", "position": 3})
    assert st.error == "" and st.position == 3


def test_stepping_beyond_either_end_stops_at_it():
    st = _stepper()
    st._receive({"type": "goto", "position": st.steps + 50})
    assert st.error == "" and st.position == st.steps + 1
    assert repr(st) == "BackwardStepper(4 steps; at the end)"
    st.step(3)
    assert st.position == st.steps + 1
    st._receive({"type": "goto", "position": -7})
    assert st.error == "" and st.position == 0
    st.back(2)
    assert st.position == 0 and repr(st) == "BackwardStepper(4 steps; at the start)"
