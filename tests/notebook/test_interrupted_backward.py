"""A backward started from the hook editor that never ends (issue 22, point 2; NOTE [A backward
that runs long] in nbgrad/notebook/hook_editor.py), driven through the browser's messages.

While it runs, the editor's ``running`` trait (sent to the browser) names the backward and the
hook or node running; the interrupt (``_thread.interrupt_main()``, the KeyboardInterrupt that
ipykernel's stop button raises in the main thread during a message handler) is sent only once
the editor has said where it is, so nothing races. After it the editor says where it landed,
every hook is listed as it was, nothing listens any more, and the next backward works.
tests/notebook/test_kernel_interrupts.py does the same in a real kernel.
"""

from __future__ import annotations

import _thread
import importlib
import threading
import time

import anywidget  # noqa: F401
import pytest

import nbgrad as ng
from nbgrad.notebook import GraphView, HookEditor, record

observer_mod = importlib.import_module("nbgrad._graph.observer")
WAIT = 30.0  # seconds a sign may take on a busy machine (the test fails, never hangs, past it)
LOOP = "def hook(grad):\n    inside.set()\n    while True:\n        pass\n"


def _updates(widget):
    """The state updates the widget sends to the browser from now on."""
    sent = []
    send = widget.comm.send

    def record_update(data=None, buffers=None, **kwargs):
        if isinstance(data, dict) and data.get("method") == "update":
            sent.append(dict(data["state"]))
        return send(data=data, buffers=buffers, **kwargs)

    widget.comm.send = record_update
    return sent


def _interrupt_when(condition):
    """Interrupt the main thread once ``condition()`` holds (or after WAIT seconds, so that a
    test whose sign never comes fails instead of hanging)."""

    def run():
        end = time.monotonic() + WAIT
        while not condition() and time.monotonic() < end:
            time.sleep(0.01)
        _thread.interrupt_main()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _running_updates(sent):
    return [u["running"] for u in sent if "running" in u]


def _editor(inside):
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    with record() as rec:
        y = x * 2
        loss = y.sum()
    view = GraphView(recorder=rec)
    editor = HookEditor(graph=view, root=loss, namespace={"inside": inside})
    editor._receive({"type": "target", "id": view.id_of(y.grad_fn)})
    return x, y, editor


def test_a_hook_that_never_returns_is_interrupted_and_named():
    inside = threading.Event()
    x, y, ed = _editor(inside)
    ed._receive({"type": "add", "kind": "tensor_hook", "source": LOOP})
    assert ed.error == ""
    [added] = ed.hooks
    label = ed.status.removeprefix("added ")
    assert label.startswith("<hook:MulBackward0#")
    sent = _updates(ed)
    shown = f"running backward from SumBackward0: in {label}"
    thread = _interrupt_when(lambda: inside.is_set() and shown in _running_updates(sent))
    ed._receive({"type": "run_backward"})  # returns once interrupted
    thread.join()

    running = _running_updates(sent)
    assert running[0] == "running backward from SumBackward0" and shown in running
    assert running[-1] == "" and ed.running == ""
    assert ed.error == f"interrupted in `{label}`"
    assert ed.status.startswith("backward interrupted")
    # the hook is listed as added, marked where the interrupt landed; nothing listens any more
    [entry] = ed.hooks
    assert {k: entry[k] for k in ("id", "kind", "enabled", "source")} == {
        k: added[k] for k in ("id", "kind", "enabled", "source")
    }
    assert "KeyboardInterrupt" in entry["error"]
    assert observer_mod._backward == [] and observer_mod._forward == []
    assert x.grad is None

    # the next backward works: the hook edited, then run again
    ed._receive({"type": "edit", "id": entry["id"], "source": "lambda grad: grad * 3"})
    ed._receive({"type": "run_backward"})
    assert ed.error == "" and ed.status.startswith("backward ran")
    assert x.grad.tolist() == [6.0, 6.0]
    assert [c["name"] for c in ed.fired] == [label] and ed.hooks[0]["error"] is None


class Loop(ng.autograd.Function):
    """The identity, whose backward never ends."""

    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, grad):
        ctx.inside.set()
        while True:
            pass


def test_a_node_that_never_ends_is_named():
    inside = threading.Event()
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = Loop.apply(x)
    y.grad_fn.inside = inside
    loss = (y * 2).sum()
    ed = HookEditor(y, root=loss)
    sent = _updates(ed)
    name = y.grad_fn.name()
    assert name == "LoopBackward"
    shown = f"running backward from SumBackward0: in {name}"
    thread = _interrupt_when(lambda: inside.is_set() and shown in _running_updates(sent))
    ed._receive({"type": "run_backward"})
    thread.join()
    assert shown in _running_updates(sent)
    assert ed.error == f"interrupted in `{name}`" and ed.running == ""


def test_run_backward_from_python_raises_the_interrupt():
    """From a cell the interrupt stops the cell too (the editor says where, as from its
    button)."""
    inside = threading.Event()
    x, y, ed = _editor(inside)
    label = ed.status
    ed.add_hook("tensor_hook", LOOP)
    thread = _interrupt_when(lambda: inside.is_set() and "<hook:" in ed.running)
    with pytest.raises(KeyboardInterrupt):
        ed.run_backward()
    thread.join()
    assert ed.error.startswith("interrupted in `<hook:MulBackward0#") and label != ed.status
    assert len(ed.hooks) == 1 and ed.running == ""
