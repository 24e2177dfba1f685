"""Hooks registered or removed from Python while a hook editor is open appear in its list when
the cell has run, with no click (issue 22, point 8; NOTE [Hooks registered from Python] in
nbgrad/notebook/hook_editor.py): the browser gets the new list as a state update, as it gets
any other change."""

from __future__ import annotations

import anywidget  # noqa: F401
from IPython.utils.capture import capture_output

from nbgrad.notebook import HookEditor


def _updates(widget):
    """The state updates the widget sends from now on (its comm's ``update`` messages)."""
    sent = []
    send = widget.comm.send

    def record(data=None, buffers=None, **kwargs):
        if isinstance(data, dict) and data.get("method") == "update":
            sent.append(data["state"])
        return send(data=data, buffers=buffers, **kwargs)

    widget.comm.send = record
    return sent


def _run(ip, source):
    with capture_output():
        result = ip.run_cell(source)
    assert result.success, result.error_in_exec
    return result


def test_a_hook_registered_in_a_later_cell_appears_in_the_open_editor(ip):
    ip.user_ns["HookEditor"] = HookEditor
    _run(
        ip,
        "x = ng.tensor([1.0, 2.0], requires_grad=True)\n"
        "y = x * 2\n"
        "ed = HookEditor(y, root=y.sum())\n",
    )
    ed = ip.user_ns["ed"]
    assert ed.hooks == []
    sent = _updates(ed)
    _run(ip, "h = y.register_hook(lambda g: g * 3)")
    assert [(e["kind"], e["name"]) for e in ed.hooks] == [("tensor_hook", "<lambda>")]
    assert [u["hooks"] for u in sent if "hooks" in u] == [ed.hooks]
    # the hook the cell registered is the one that runs from the editor's button
    ed._receive({"type": "run_backward"})
    assert ip.user_ns["x"].grad.tolist() == [6.0, 6.0]
    assert [c["name"] for c in ed.fired] == ["<lambda>"]

    _run(ip, "h.remove()")
    assert ed.hooks == []
    assert [u["hooks"] for u in sent if "hooks" in u][-1] == []


def test_a_cell_that_changes_no_hook_sends_nothing(ip):
    _run(ip, "x = ng.tensor([1.0], requires_grad=True)\ny = x.exp()\ny.register_hook(print)\n")
    ed = HookEditor(ip.user_ns["y"])
    sent = _updates(ed)
    _run(ip, "z = 1 + 1")
    assert sent == [] and [e["name"] for e in ed.hooks] == ["print"]


def test_a_node_hook_of_the_editors_graph_selection(ip):
    """An editor that follows a ``%%autograd`` graph's selection shows a hook that a later cell
    put on the selected node."""
    _run(
        ip,
        "%%autograd -o s\n"
        "x = ng.tensor([1.0, 2.0], requires_grad=True)\n"
        "loss = (x.exp() * 2).sum()\n",
    )
    s = ip.user_ns["s"]
    node = next(n["id"] for n in s.graph.snapshot["nodes"] if n["name"] == "ExpBackward0")
    s.graph._receive({"type": "select", "id": node})
    assert s.hooks.hooks == []
    badges = _updates(s.graph)
    _run(ip, "handle = loss.grad_fn.next_functions[0][0].next_functions[0][0].register_hook(print)")
    assert [(e["kind"], e["name"]) for e in s.hooks.hooks] == [("node_hook", "print")]
    drawn = next(n for n in s.graph.snapshot["nodes"] if n["id"] == node)
    assert drawn["hooks"] and any("_snapshot_json" in u for u in badges)
