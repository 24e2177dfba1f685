"""Interrupts in a real kernel, as JupyterLab sends them (issue 22, points 2 and 5).

An ipykernel is started with jupyter_client; cells go over its shell channel
(``client.execute``), the hook editor's buttons as the comm messages the browser sends
(``comm_msg`` with a ``custom`` content), and the stop button is ``km.interrupt_kernel()``
(SIGINT). Each interrupt is sent only once the kernel shows it is where the interrupt must land:
the looping hook has written a file (point 2), the drawing has written a file on entering the
layout (point 5).
"""

from __future__ import annotations

import os
import queue
import time
from pathlib import Path

import pytest

jupyter_client = pytest.importorskip("jupyter_client")

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0  # seconds any sign may take on a busy machine (a test fails, never hangs, past it)


class Kernel:
    """A real ipykernel running this checkout's nbgrad, with every iopub message kept."""

    def __init__(self):
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.km = jupyter_client.KernelManager(kernel_name="python3")
        self.km.start_kernel(cwd=str(ROOT), env=env)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=WAIT)
        self.messages = []

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)

    def wait(self, predicate, what):
        """Read iopub until a message (kept in ``messages``) satisfies ``predicate``."""
        end = time.monotonic() + WAIT
        while time.monotonic() < end:
            try:
                msg = self.kc.get_iopub_msg(timeout=0.2)
            except queue.Empty:
                continue
            self.messages.append(msg)
            if predicate(msg):
                return msg
        raise AssertionError(f"the kernel never showed {what}")

    def idle_after(self, msg_id):
        return self.wait(
            lambda m: (
                m["parent_header"].get("msg_id") == msg_id
                and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"
            ),
            f"idle after {msg_id}",
        )

    def run(self, code):
        """Execute a cell and wait for its end; returns (reply content, its iopub messages)."""
        msg_id = self.kc.execute(code)
        return self.finish(msg_id)

    def finish(self, msg_id):
        start = len(self.messages)
        self.idle_after(msg_id)
        reply = self.kc.get_shell_msg(timeout=WAIT)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.kc.get_shell_msg(timeout=WAIT)
        outputs = [m for m in self.messages[start:] if m["parent_header"].get("msg_id") == msg_id]
        return reply["content"], outputs

    def send_to_widget(self, comm_id, content):
        """A click in the widget: the comm message the browser sends."""
        msg = self.kc.session.msg(
            "comm_msg", {"comm_id": comm_id, "data": {"method": "custom", "content": content}}
        )
        self.kc.shell_channel.send(msg)
        return msg["header"]["msg_id"]


def _updates(kernel, comm_id):
    return [
        m["content"]["data"]["state"]
        for m in kernel.messages
        if m["msg_type"] == "comm_msg"
        and m["content"]["comm_id"] == comm_id
        and m["content"]["data"].get("method") == "update"
    ]


def _texts(outputs):
    return [
        m["content"]["data"].get("text/plain", "")
        for m in outputs
        if m["msg_type"] in ("display_data", "execute_result")
    ]


@pytest.fixture
def kernel():
    k = Kernel()
    yield k
    k.close()


def _wait_for_file(path, what):
    end = time.monotonic() + WAIT
    while not path.exists():
        assert time.monotonic() < end, f"never {what}"
        time.sleep(0.01)


def test_a_hook_that_never_returns_interrupted_from_the_editor(kernel, tmp_path):
    flag = tmp_path / "inside-the-hook"
    reply, outputs = kernel.run(
        "import nbgrad as ng\n"
        "from nbgrad.notebook import HookEditor\n"
        f"flag = {str(flag)!r}\n"
        "x = ng.tensor([1.0, 2.0], requires_grad=True)\n"
        "y = x * 2\n"
        "loss = y.sum()\n"
        "ed = HookEditor(y, root=loss, namespace=get_ipython().user_ns)\n"
        "display(ed)\n"
    )
    assert reply["status"] == "ok", reply
    [opened] = [  # the editor's comm (its Layout has one too)
        m
        for m in outputs
        if m["msg_type"] == "comm_open" and "running" in m["content"]["data"]["state"]
    ]
    comm_id = opened["content"]["comm_id"]

    loop = "def hook(grad):\n    open(flag, 'w').close()\n    while True:\n        pass\n"
    sent = kernel.send_to_widget(comm_id, {"type": "add", "kind": "tensor_hook", "source": loop})
    kernel.idle_after(sent)
    label = next(u["status"] for u in _updates(kernel, comm_id) if "status" in u)
    label = label.removeprefix("added ")
    assert label.startswith("<hook:MulBackward0#")

    run = kernel.send_to_widget(comm_id, {"type": "run_backward"})
    _wait_for_file(flag, "entered the hook")
    # while it runs, the widget says so, naming the hook (sent by the kernel, busy as it is)
    shown = f"running backward from SumBackward0: in {label}"
    kernel.wait(
        lambda m: (
            m["msg_type"] == "comm_msg"
            and m["content"]["data"].get("state", {}).get("running") == shown
        ),
        "which hook runs",
    )
    kernel.km.interrupt_kernel()
    kernel.idle_after(run)
    state = {}
    for update in _updates(kernel, comm_id):
        state.update(update)
    assert state["error"] == f"interrupted in `{label}`"
    assert state["running"] == "" and state["status"].startswith("backward interrupted")
    [hook] = state["hooks"]
    assert hook["kind"] == "tensor_hook" and hook["enabled"] and hook["source"] == loop

    # the next backward works, from the editor's buttons
    kernel.idle_after(
        kernel.send_to_widget(
            comm_id, {"type": "edit", "id": hook["id"], "source": "lambda grad: grad * 3"}
        )
    )
    kernel.idle_after(kernel.send_to_widget(comm_id, {"type": "run_backward"}))
    for update in _updates(kernel, comm_id):
        state.update(update)
    assert state["error"] == "" and state["status"].startswith("backward ran")
    reply, outputs = kernel.run("print(x.grad.tolist(), len(ed.hooks))")
    [stream] = [m["content"]["text"] for m in outputs if m["msg_type"] == "stream"]
    assert stream.strip() == "[6.0, 6.0] 1"


def test_an_interrupt_in_the_drawing_of_a_cell_keeps_its_graph(kernel, tmp_path):
    flag = tmp_path / "drawing"
    # a sign that the drawing has begun: the layout of the final graph writes a file, then
    # works on (as a big graph's layout does) until the interrupt
    reply, _ = kernel.run(
        "%load_ext nbgrad\n"
        "import time\n"
        "import nbgrad as ng\n"
        "import nbgrad.notebook.graph_view as graph_view\n"
        "_layout, armed = graph_view.layout, []\n"
        "def slow_layout(*args, **kwargs):\n"
        "    if armed:\n"
        "        armed.clear()\n"
        f"        open({str(flag)!r}, 'w').close()\n"
        "        time.sleep(600)\n"
        "    return _layout(*args, **kwargs)\n"
        "graph_view.layout = slow_layout\n"
    )
    assert reply["status"] == "ok", reply
    cell = (
        "%%autograd -o big\n"
        "x = ng.ones(4, requires_grad=True)\n"
        "h = x\n"
        "for _ in range(2000):\n"
        "    h = h * 1.0001\n"
        "armed.append(True)\n"
    )
    msg_id = kernel.kc.execute(cell)
    _wait_for_file(flag, "began drawing")
    kernel.km.interrupt_kernel()
    reply, outputs = kernel.finish(msg_id)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    [error] = [m["content"] for m in outputs if m["msg_type"] == "error"]
    assert error["traceback"] == [
        "KeyboardInterrupt: the drawing of the graph was interrupted; the cell ran and its "
        "graph is kept: %autograd show big draws it"
    ]
    assert _texts(outputs)[-1] == (
        "<autograd graph: 2000 forward calls, 0 module calls, 0 backward passes>"
    )

    reply, outputs = kernel.run("%autograd show big")
    assert reply["status"] == "ok", reply
    texts = _texts(outputs)
    assert texts[0].startswith("GraphView(") and texts[1].startswith("HookEditor(")
    reply, outputs = kernel.run("print(len(big.record.records), h.grad_fn is not None)")
    [stream] = [m["content"]["text"] for m in outputs if m["msg_type"] == "stream"]
    assert stream.strip() == "2000 True"
