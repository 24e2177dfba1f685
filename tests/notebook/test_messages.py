"""Messages and state updates from the browser are checked (NOTE [Checked messages] in
nbgrad/notebook/_widget.py): each goes through the path a real one takes (the comm's custom
message or state update); a wrong one changes nothing and the widget says why."""

from __future__ import annotations

import anywidget  # noqa: F401
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nbgrad as ng
from nbgrad.notebook import BackwardStepper, GraphView, HookEditor, record


def _widgets():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    with record() as rec:
        a = x * 2
        loss = (a.exp() + a.sin()).sum()
        loss.backward(retain_graph=True)
    view = GraphView(recorder=rec)
    editor = HookEditor(graph=view, root=loss)
    stepper = BackwardStepper(rec.passes[-1], recorder=rec, graph=view)
    return view, editor, stepper, loss


def _state(widget):
    state = widget.get_state()
    state.pop("error", None)
    return state


def _update(widget, state):
    """A state update as the browser sends it (ipywidgets' comm ``update`` message)."""
    data = {"method": "update", "state": state, "buffer_paths": []}
    widget._handle_msg({"content": {"data": data}, "buffers": []})


BAD_MESSAGES = {
    "graph": [
        {"type": "show_pass", "index": 99},  # no such pass: edges would lose their gradients
        {"type": "show_pass", "index": "0"},
        {"type": "select", "id": 5},
        {"type": "select", "id": "n999"},
        {"type": "toggle", "group": ["g0"]},
        {"type": "edge", "edges": "e1"},
        {"type": "reveal"},
        {"type": "collapse_all", "now": True},
        {"type": "no_such_message"},
        {"type": 3},
    ],
    "editor": [
        {"type": "enable", "id": "h1", "enabled": "false"},  # a string is not False
        {"type": "target", "id": 5},
        {"type": "add", "kind": "tensor_hook"},
        {"type": "add", "kind": "tensor_hook", "source": 42},
        {"type": "run_backward", "retain_graph": "yes"},
        {"type": "remove", "id": None},
    ],
    "stepper": [
        {"type": "goto", "position": "3"},
        {"type": "goto", "position": True},
        {"type": "select", "id": 1},
    ],
}


@pytest.mark.parametrize(
    "which, message",
    [(w, m) for w, ms in BAD_MESSAGES.items() for m in ms],
    ids=[f"{w}-{i}" for w, ms in BAD_MESSAGES.items() for i in range(len(ms))],
)
def test_a_wrong_message_changes_nothing_and_says_why(which, message):
    view, editor, stepper, _ = _widgets()
    widget = {"graph": view, "editor": editor, "stepper": stepper}[which]
    if which == "editor":
        editor.set_target(editor.graph.snapshot["nodes"][0]["id"])
        editor.add_hook(editor.kinds()[0], "lambda *a: None")
    before = _state(widget)
    widget._receive(message)
    assert widget.error, message
    assert _state(widget) == before


def test_a_right_message_still_works():
    view, editor, stepper, _ = _widgets()
    node = view.snapshot["nodes"][0]["id"]
    view._receive({"type": "select", "id": node})
    assert view.error == "" and view.selected == node
    view._receive({"type": "show_pass", "index": 0})
    assert view.error == ""
    hid = editor.hooks[0]["id"] if editor.hooks else None
    assert hid is None  # the selected node has no hook yet
    editor._receive({"type": "add", "kind": editor.kinds()[0], "source": "lambda *a: None"})
    hid = editor.hooks[0]["id"]
    editor._receive({"type": "enable", "id": hid, "enabled": False})
    assert editor.error == "" and editor.hooks[0]["enabled"] is False
    stepper._receive({"type": "goto", "position": 2})
    assert stepper.error == "" and stepper.position == 2


def test_traits_only_the_kernel_sets_are_refused_from_the_browser():
    view, editor, stepper, _ = _widgets()
    editor.set_target(view.snapshot["nodes"][0]["id"])
    editor.add_hook(editor.kinds()[0], "lambda *a: None")
    hooks = list(editor.hooks)
    _update(editor, {"hooks": [{"id": "h999", "kind": "tensor_hook", "name": "fake"}]})
    assert editor.hooks == hooks and "may not set 'hooks'" in editor.error
    assert "fake" not in editor.to_svg()
    _update(stepper, {"position": -50})
    assert stepper.position == 0 and "'position'" in stepper.error
    assert repr(stepper).startswith("BackwardStepper(")
    _update(view, {"selected": "nope"})
    assert view.selected == "" and "no node 'nope'" in view.error
    _update(view, {"live": True, "_snapshot_json": "{}"})
    assert view.live is False and view.snapshot["nodes"]
    # what the browser may set, it still can
    node = view.snapshot["nodes"][1]["id"]
    _update(view, {"selected": node})
    assert view.selected == node
    _update(stepper, {"position": 3})
    assert stepper.position == 3


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-100, 100) | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def wrong_messages(draw, spec_of):
    """A message of a known type with at least one field of the wrong kind (or an unknown
    field), or of an unknown type."""
    kinds = sorted(spec_of)
    kind = draw(st.sampled_from(kinds + ["nonsense"]))
    if kind == "nonsense":
        return {
            "type": draw(st.text().filter(lambda k: k not in spec_of)),
            **draw(st.dictionaries(st.text(), JSON, max_size=2)),
        }
    from nbgrad.notebook._widget import FIELD_KINDS

    spec = spec_of[kind]
    message = {"type": kind}
    for field in spec:
        message[field] = draw(JSON)
    wrong = [f for f, w in spec.items() if not FIELD_KINDS[w.rstrip("=")](message[f])]
    if not wrong:
        message[draw(st.text(min_size=1).filter(lambda f: f not in spec and f != "type"))] = 1
    return message


@pytest.mark.parametrize("which", ["graph", "editor", "stepper"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_wrong_messages_and_updates(which, data):
    view, editor, stepper, _ = _widgets()
    widget = {"graph": view, "editor": editor, "stepper": stepper}[which]
    before = _state(widget)
    message = data.draw(wrong_messages(type(widget)._messages))
    widget._receive(message)  # nothing may escape into the kernel log
    assert widget.error and _state(widget) == before
    trait = data.draw(st.sampled_from(sorted(widget.keys)))
    value = data.draw(JSON)
    widget.error = ""
    _update(widget, {trait: value})
    after = _state(widget)
    if after != before:  # only a trait the browser may set, with a value that passes its check
        assert trait in type(widget)._frontend_writable and widget.error == ""
    else:
        assert widget.error or value == before.get(trait)
