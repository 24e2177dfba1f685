"""The widgets driven from Python: each action goes through the path a browser message takes
(``widget._receive`` -> ``Widget._handle_msg``), as the JS in widgets/ sends it."""

import json
import time
import traceback

import anywidget  # noqa: F401
import pytest

import nbgrad as ng  # noqa: E402
from nbgrad.autograd.graph import GraphObserver, observe  # noqa: E402
from nbgrad.notebook import BackwardStepper, GraphView, HookEditor, record  # noqa: E402

WIDGET = "application/vnd.jupyter.widget-view+json"


def _ids(view, name):
    return [n["id"] for n in view.snapshot["nodes"] if n["name"] == name]


def _model():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    w = ng.tensor([3.0, -1.0], requires_grad=True)
    with record() as rec:
        y = (x * w).tanh()
        loss = y.sum()
    return x, w, y, loss, rec


# -- GraphView ---------------------------------------------------------------------------------


def test_graph_view_from_tensors_and_its_mime_bundle():
    x = ng.ones(3, requires_grad=True)
    loss = (x * 2).sum()
    view = GraphView(loss)
    assert repr(view) == "GraphView(3 nodes, 2 edges, 0 groups, 0 backward passes)"
    data, meta = view._repr_mimebundle_()
    assert set(data) == {"text/plain", WIDGET, "image/svg+xml", "image/png"}
    assert data["text/plain"] == repr(view) and "MulBackward0" in data["image/svg+xml"]
    assert view._widget_view_bundle() == {WIDGET: data[WIDGET]}
    assert view.graph_layout["nodes"] and view.default_root() is loss


def test_select_and_errors_stay_in_the_widget():
    x, w, y, loss, rec = _model()
    view = GraphView(recorder=rec, names={id(x): "x"})
    tanh = _ids(view, "TanhBackward0")[0]
    view._receive({"type": "select", "id": tanh})
    assert view.selected == tanh and view.error == ""
    assert view.node(tanh) is y.grad_fn and view.tensor(tanh) is y
    assert view.tensor("leaf0") is x
    view._receive({"type": "select", "id": "n999999"})
    assert "no node" in view.error and view.selected == tanh
    view._receive({"type": "nonsense"})
    assert "unknown message" in view.error


def test_groups_collapse_and_expand(fake_model):
    x = ng.ones(3, requires_grad=True)
    with record() as rec:
        fake_model(x).sum()
    view = GraphView(recorder=rec)
    assert view.collapsed == []
    view._receive({"type": "toggle", "group": "g1"})
    assert view.collapsed == ["g1"]
    assert "group:g1" in [b["id"] for b in view.graph_layout["nodes"]]
    view._receive({"type": "collapse_all"})
    assert view.collapsed == ["g0"]
    assert [b["id"] for b in view.graph_layout["nodes"] if b["kind"] == "group"] == ["group:g0"]
    view._receive({"type": "expand_all"})
    assert view.collapsed == [] and len(view.graph_layout["groups"]) == 2
    view._receive({"type": "select", "id": "g1"})
    assert view.module("g1") is fake_model.children_[0]


def test_gradients_of_each_pass():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    with record() as rec:
        y = x * 3
        loss = y.sum()
        loss.backward(retain_graph=True)
        loss.backward(ng.tensor(2.0), retain_graph=True)
    view = GraphView(recorder=rec)
    mul = _ids(view, "MulBackward0")[0]

    def grad_into_mul():
        return [e for e in view.snapshot["edges"] if e["to"] == mul][0]["grad"]["values"]

    assert view.snapshot["pass"] == 1 and grad_into_mul() == [2.0, 2.0]
    view._receive({"type": "show_pass", "index": 0})
    assert view.snapshot["pass"] == 0 and grad_into_mul() == [1.0, 1.0]


def test_the_view_grows_live_and_ends_with_the_final_state():
    x = ng.ones(2, requires_grad=True)
    rec = record()
    view = GraphView(recorder=rec, live=True, interval=0.001)
    sizes = []

    def sent(change):  # the view's nodes sent to the browser (as columns)
        sizes.append(len(json.loads(change["new"])["nodes"]["id"]))

    view.observe(sent, names="_snapshot_json")
    with rec:
        h = x
        for _ in range(5):
            time.sleep(0.05)  # slower than the refresh interval, and its cost 8% of it
            h = h * 2
            assert view.live
    assert sizes == [2, 3, 4, 5, 6]  # one refresh per op here ...
    assert not view.live  # ... and the end refreshes (the same graph: no change to send)

    slow = record()
    view = GraphView(recorder=slow, live=True, interval=60.0)
    sizes = []
    view.observe(lambda change: sizes.append(len(change["new"]["nodes"])), names="snapshot")
    with slow:
        h = x
        for _ in range(20):
            h = h * 2
    assert sizes == [21]  # throttled: only the final state


# -- HookEditor --------------------------------------------------------------------------------


def test_the_editor_follows_the_selection():
    x, w, y, loss, rec = _model()
    view = GraphView(recorder=rec, names={id(x): "x"})
    ed = HookEditor(graph=view)
    assert ed.target["kind"] == "none"
    view._receive({"type": "select", "id": "leaf0"})
    assert ed.target["label"] == "x"
    assert ed.target["kinds"] == [
        "tensor_hook",
        "post_accumulate_grad",
        "node_hook",
        "node_prehook",
    ]
    view._receive({"type": "select", "id": _ids(view, "TanhBackward0")[0]})
    assert ed.target["label"] == "TanhBackward0"
    assert ed.target["kinds"] == ["tensor_hook", "node_hook", "node_prehook"]
    assert ed.target["root"] == "SumBackward0"


def test_add_run_edit_disable_remove():
    x, w, y, loss, rec = _model()
    view = GraphView(recorder=rec)
    ed = HookEditor(graph=view, root=loss)
    view._receive({"type": "select", "id": _ids(view, "TanhBackward0")[0]})
    ed._receive({"type": "add", "kind": "tensor_hook", "source": "lambda grad: grad * 10"})
    ed._receive(
        {
            "type": "add",
            "kind": "node_hook",
            "source": "def after(grad_inputs, grad_outputs):\n    return None\n",
        }
    )
    assert ed.error == ""
    [t_hook, n_hook] = ed.hooks
    assert t_hook["name"].startswith("<hook:TanhBackward0#") and t_hook["name"].endswith(">")
    assert t_hook["source"] == "lambda grad: grad * 10" and n_hook["kind"] == "node_hook"
    ed._receive({"type": "run_backward", "retain_graph": True, "create_graph": False})
    assert ed.error == "" and ed.status.startswith("backward ran 5 nodes")
    fired = {c["kind"]: c for c in ed.fired}
    assert fired["tensor"]["before"]["values"] == [1.0, 1.0]
    assert fired["tensor"]["after"]["values"] == [10.0, 10.0] and fired["tensor"]["changed"]
    assert not fired["posthook"]["changed"]
    g1 = x.grad.tolist()
    # edit keeps the hook's place; disable; enable; remove
    ed._receive({"type": "edit", "id": t_hook["id"], "source": "lambda grad: grad * 0"})
    assert [h["id"] for h in ed.hooks] == [t_hook["id"], n_hook["id"]]
    x.grad = None
    ed._receive({"type": "run_backward", "retain_graph": True})
    assert x.grad.tolist() == [0.0, 0.0]
    ed._receive({"type": "enable", "id": t_hook["id"], "enabled": False})
    assert ed.hooks[0]["enabled"] is False
    x.grad = None
    ed._receive({"type": "run_backward", "retain_graph": True})
    assert [v * 10 for v in x.grad.tolist()] == pytest.approx(g1)
    ed._receive({"type": "remove", "id": n_hook["id"]})
    assert [h["id"] for h in ed.hooks] == [t_hook["id"]]
    assert "hooks on TanhBackward0" in ed.to_svg()


def test_a_syntax_error_shows_and_loses_no_hook():
    x, w, y, loss, rec = _model()
    ed = HookEditor(y, root=loss)
    ed.add_hook("tensor_hook", "lambda grad: grad")
    ed._receive({"type": "add", "kind": "tensor_hook", "source": "lambda grad: grad +"})
    assert "SyntaxError" in ed.error and "<hook:TanhBackward0#" in ed.error
    assert len(ed.hooks) == 1
    hid = ed.hooks[0]["id"]
    ed._receive({"type": "edit", "id": hid, "source": "def broken(:"})
    assert "SyntaxError" in ed.error and ed.hooks[0]["source"] == "lambda grad: grad"
    ed._receive({"type": "add", "kind": "tensor_hook", "source": "x = 1"})
    assert "must be a lambda or define a function" in ed.error and len(ed.hooks) == 1
    ed._receive({"type": "add", "kind": "module_hook", "source": "lambda g: g"})
    assert "cannot add" in ed.error


def test_a_failing_hook_shows_its_error_and_loses_no_other_hook():
    x, w, y, loss, rec = _model()
    ed = HookEditor(y, root=loss)
    ok = ed.add_hook("tensor_hook", "lambda grad: grad")
    bad = ed.add_hook("tensor_hook", "def bad(grad):\n    scale = 0\n    return grad / scale.x\n")
    ed._receive({"type": "run_backward", "retain_graph": True})
    assert ed.status == "backward failed"
    assert "AttributeError" in ed.error and "line 3, in bad" in ed.error
    assert "<hook:TanhBackward0#" in ed.error
    entries = {h["id"]: h for h in ed.hooks}
    assert set(entries) == {ok, bad}
    assert entries[bad]["error"] and entries[ok]["error"] is None
    # a traceback outside the editor points at the hook's own line too
    with pytest.raises(AttributeError) as info:
        loss.backward(retain_graph=True)
    assert any(
        f.filename.startswith("<hook:") and f.lineno == 3 and "scale.x" in f.line
        for f in traceback.extract_tb(info.value.__traceback__)
    )
    ed.remove_hook(bad)
    ed._receive({"type": "run_backward", "retain_graph": True})
    assert ed.error == "" and [h["id"] for h in ed.hooks] == [ok]


def test_backward_twice_without_retain_graph_is_reported():
    x, w, y, loss, rec = _model()
    ed = HookEditor(y, root=loss)
    ed._receive({"type": "run_backward", "retain_graph": False})
    assert ed.error == ""
    before = x.grad.clone()
    ed._receive({"type": "run_backward", "retain_graph": False})
    # found before anything runs (NOTE [A freed graph]): no gradient half-accumulated
    assert "was freed by a backward without retain_graph" in ed.error
    assert "Nothing was run or changed" in ed.error
    assert x.grad.tolist() == before.tolist()


def test_post_accumulate_grad_hooks_report_before_and_after():
    x, w, y, loss, rec = _model()
    ed = HookEditor(x, root=loss)
    ed.add_hook("post_accumulate_grad", "lambda t: None")
    ed.run_backward(retain_graph=True)
    [call] = [c for c in ed.fired if c["kind"] == "post_accumulate_grad"]  # reported once
    assert call["after"]["values"] == [float(f"{v:.6g}") for v in x.grad.tolist()]
    assert call["node"] is not None and call["node"].startswith("leaf")
    assert call["hook"] is not None and not call["changed"]
    # a hook that changes .grad: the engine reports it with .grad before and after
    first = x.grad.tolist()
    ed.add_hook("post_accumulate_grad", "def double(t):\n    t.grad = t.grad * 2")
    ed.run_backward(retain_graph=True)
    calls = [c for c in ed.fired if c["kind"] == "post_accumulate_grad"]
    assert len(calls) == 2 and calls[1]["changed"]
    assert calls[1]["before"]["values"] == [float(f"{2 * v:.6g}") for v in first]
    assert calls[1]["after"]["values"] == [float(f"{4 * v:.6g}") for v in first]


def test_hook_code_in_widget_state_never_runs():
    x, w, y, loss, rec = _model()
    ed = HookEditor(y, root=loss)
    ed.add_hook("tensor_hook", "lambda grad: grad")
    state = ed.get_state()
    ran = []
    ng.__dict__["_sentinel"] = ran
    evil = "lambda grad: ng._sentinel.append(1) or grad"
    state["hooks"] = [{**state["hooks"][0], "id": "h999", "source": evil}]
    # a new editor as a reopened notebook makes it, then the browser syncing its saved state
    ed2 = HookEditor(y, root=loss)
    ed2._handle_msg(
        {
            "content": {"data": {"method": "update", "state": {"hooks": state["hooks"]}}},
            "buffers": [],
        }
    )
    ed2.set_state({"hooks": state["hooks"]})
    ed2._receive({"type": "run_backward", "retain_graph": True})
    assert ran == []
    assert all(h["source"] != evil for h in ed2.hooks)
    del ng.__dict__["_sentinel"]


def test_module_hooks():
    import nbgrad.nn as nn

    lin = nn.Linear(2, 1)
    ed = HookEditor(lin)
    assert {"forward", "forward_pre", "full_backward"} <= set(ed.target["kinds"])
    seen = []
    ed.namespace = {"seen": seen}
    ed.add_hook("forward", "lambda module, args, output: seen.append(output.shape)")
    lin(ng.ones(3, 2))
    assert seen == [ng.Size([3, 1])]
    assert [h["kind"] for h in ed.hooks] == ["forward"]


# -- BackwardStepper ---------------------------------------------------------------------------


def _diamond():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    loss = (a.exp() + a.sin()).sum()
    return x, a, loss


def test_stepper_replays_the_engine_order():
    x, a, loss = _diamond()
    order = []

    class Starts(GraphObserver):
        def node_start(self, graph_task, node, inputs):
            order.append(node.name())

    with observe(Starts(), forward=False):
        loss.backward(retain_graph=True)
    st = BackwardStepper(loss, retain_graph=True)
    names = {n["id"]: n["name"] for n in st.trace["graph"]["nodes"]}
    assert [names[s["node"]] for s in st.trace["steps"]] == order
    assert repr(st) == f"BackwardStepper({len(order)} steps; at the start)"


def test_stepper_moves_forward_and_back_with_the_engine_state():
    x, a, loss = _diamond()
    st = BackwardStepper(loss)
    mul = f"n{a.grad_fn.sequence_nr}"
    s0 = st.state()
    assert s0["running"] is None and s0["ready"] == {"cpu": [st.trace["root"]]}
    assert s0["dependencies"][mul] == 2  # exp and sin both feed a's node
    positions = []
    while st.position <= st.steps:
        st._receive({"type": "goto", "position": st.position + 1})
        positions.append(st.state())
    assert st.position == st.steps + 1
    running = [p["running"] for p in positions[:-1]]
    i = running.index(mul)
    # the first of exp/sin runs: a's node waits on one more edge, with half its buffer filled
    first = positions[i - 2]
    assert first["dependencies"][mul] == 1 and first["buffers"][mul][0] is not None
    # the second makes it ready: it is listed as made ready, no longer as waiting
    second = positions[i - 1]
    assert second["made_ready"] == [mul] and mul not in second["dependencies"]
    assert positions[i]["running"] == mul and mul not in positions[i]["dependencies"]
    assert positions[i]["inputs"][0]["shape"] == [2]
    end = positions[-1]
    assert end["running"] is None and len(end["done"]) == st.steps and end["dependencies"] == {}
    # and back
    st.back(st.steps + 1)
    assert st.state() == s0
    st.goto(10**6)
    assert st.position == st.steps + 1
    assert "backward pass: 6 steps" in st.to_svg()


def test_stepper_shows_hooks_and_a_failing_pass():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: g * 2)
    st = BackwardStepper(y.sum(), retain_graph=True)
    [hooked] = [s for s in st.trace["steps"] if s["hooks"]]
    assert hooked["hooks"][0]["after"]["values"] == [2.0, 2.0]
    y.register_hook(lambda g: 1 / 0)
    st = BackwardStepper(y.sum())
    assert st.trace["error"].startswith("ZeroDivisionError") and "ZeroDivisionError" in st.error
    with pytest.raises(TypeError):
        BackwardStepper(42)


def test_stepper_shows_each_gradient_accumulated_into_a_leaf():
    x, a, loss = _diamond()
    x.grad = ng.tensor([1.0, 1.0])
    st = BackwardStepper(loss)
    [step] = [s for s in st.trace["steps"] if s["accumulated"]]
    acc = step["accumulated"]
    assert acc["node"] == step["node"] and step["node"].startswith("leaf")
    assert acc["before"]["values"] == [1.0, 1.0]
    assert acc["after"]["values"] == [float(f"{v:.6g}") for v in x.grad.tolist()]
    assert acc["grad"]["values"] == [float(f"{v - 1:.6g}") for v in x.grad.tolist()]
    st.goto(step["index"] + 1)
    assert st.state()["accumulated"] == acc
    assert "accumulated into .grad" in st.to_svg()
    assert st.backward_trace.accumulations[0].variable() is x


def test_the_png_is_the_svg_drawn():
    """The still picture's PNG (for untrusted notebooks) is the same drawing as its SVG."""
    import base64
    import io

    from PIL import Image

    from nbgrad.notebook._widget import STILL_NOTE
    from nbgrad.notebook.svg import with_note

    x, w, y, loss, rec = _model()
    data, _ = GraphView(loss)._repr_mimebundle_()
    image = Image.open(io.BytesIO(base64.b64decode(data["image/png"])))
    svg = data["image/svg+xml"]
    width = float(svg.split('width="', 1)[1].split('"', 1)[0])
    height = float(svg.split('height="', 1)[1].split('"', 1)[0])
    # with a band on top that says how the live widget comes back (issue 33, point 9: NOTE
    # [A picture that stands for a widget]); the SVG, which nbval compares, has none
    note_width = round(len(STILL_NOTE) * 6.7 + 20)  # svg.FOOTER_CHAR a character
    assert image.size == (max(round(width), note_width), round(height) + 22)
    colours = {c for _, c in image.convert("RGB").getcolors(1 << 16)}
    assert (253, 240, 240) in colours  # the root's fill, as in the SVG (#fdf0f0)
    assert (233, 245, 234) in colours  # a leaf's (#e9f5ea)
    assert image.convert("RGB").getpixel((image.size[0] - 3, 3)) == (255, 248, 225)  # #fff8e1
    assert "run the cell again" not in svg
    assert "run the cell again" in with_note(svg, STILL_NOTE)
    assert not any("run the cell again" in part for part in GraphView(loss).still()._bundle)


def test_the_editor_runs_backward_again_and_again_and_explains_signatures():
    x, w, y, loss, rec = _model()
    view = GraphView(recorder=rec, names={id(x): "x"})
    ed = HookEditor(graph=view, root=loss)
    view._receive({"type": "select", "id": "leaf0"})
    ed.add_hook("tensor_hook", "lambda grad: grad * 2")
    for _ in range(3):  # the graph is retained by default
        ed._receive({"type": "run_backward"})
        assert ed.error == "" and "backward ran" in ed.status, (ed.error, ed.status)
    # a node pre-hook written as a tensor hook: the message shows the right signature
    node = next(n for n in view.snapshot["nodes"] if n["name"] == "MulBackward0")
    view._receive({"type": "select", "id": node["id"]})
    ed.add_hook("node_prehook", "lambda g: g * 2")
    ed._receive({"type": "run_backward"})
    assert "incorrect number of values" in ed.error
    assert "node_prehook hook is called as hook(grad_outputs)" in ed.error
    assert "tuple(g * 2 for g in grad_outputs)" in ed.error
    # a raising hook shows its own error first
    (hook,) = [h for h in ed.hooks if h["kind"] == "node_prehook"]
    ed.remove_hook(hook["id"])
    assert ed.error == ""
    ed.add_hook("node_hook", "lambda gi, go: 1 / 0")
    ed._receive({"type": "run_backward"})
    assert ed.error.startswith("<hook:MulBackward0#") and "ZeroDivisionError" in ed.error


def test_the_stepper_names_leaves_and_groups_as_the_graph_does():
    from nbgrad import nn
    from nbgrad.notebook import BackwardStepper

    model = nn.Sequential(nn.Linear(3, 2), nn.Tanh())
    with record() as rec:
        loss = model(ng.randn(4, 3)).sum()
        loss.backward()
    names = {id(model): "model"}
    view = GraphView(recorder=rec, names=names)
    stepper = BackwardStepper(rec.passes[-1], names=names, recorder=rec)
    graph_labels = {n["label"] for n in view.snapshot["nodes"] if n["kind"] == "leaf"}
    step_labels = {n["label"] for n in stepper.trace["graph"]["nodes"] if n["kind"] == "leaf"}
    assert graph_labels == step_labels == {"model.0.weight", "model.0.bias"}
    assert [g["path"] for g in stepper.trace["graph"]["groups"]] == [
        g["path"] for g in view.snapshot["groups"]
    ]
    assert stepper.graph_layout["groups"]  # drawn around their nodes, as in the graph


def test_the_editor_zeroes_the_leaves_grads():
    x, w, y, loss, rec = _model()
    view = GraphView(recorder=rec, names={id(x): "x"})
    ed = HookEditor(graph=view, root=loss)
    ed.run_backward()
    ed.run_backward()
    assert x.grad is not None and w.grad is not None
    ed._receive({"type": "zero_grad"})
    assert x.grad is None and w.grad is None, (x.grad, w.grad)
    assert ed.status == "zeroed the .grad of 2 leaves"
    ed.run_backward()
    once = x.grad.clone()
    ed._receive({"type": "zero_grad"})
    ed.run_backward()
    assert x.grad.tolist() == once.tolist()  # no pile-up after zeroing


def test_a_still_keeps_the_moment():
    """An earlier output of a widget shown again later must not change under its prose: the
    tutorial shows it as a still (``StillWidget.still()``)."""
    x, w, y, loss, rec = _model()
    ed = HookEditor(y, root=loss)
    ed.add_hook("tensor_hook", "lambda grad: grad * 2")
    still = ed.still()
    bundle, _ = still._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "image/svg+xml", "image/png"}  # no live view
    assert repr(still).startswith("HookEditor(") and "1 hooks" in repr(still)
    (hook,) = ed.hooks
    ed.remove_hook(hook["id"])
    assert "1 hooks" in still._repr_mimebundle_()[0]["text/plain"]
    assert "0 hooks" in repr(ed)


def test_a_hook_added_in_the_editor_shows_in_the_graph_at_once():
    x, w, y, loss, rec = _model()
    view = GraphView(recorder=rec, names={id(x): "x"})
    ed = HookEditor(graph=view, root=loss)
    node = next(n for n in view.snapshot["nodes"] if n["name"] == "TanhBackward0")
    view._receive({"type": "select", "id": node["id"]})
    hid = ed.add_hook("node_hook", "lambda gi, go: None")
    shown = next(n for n in view.snapshot["nodes"] if n["id"] == node["id"])
    assert len(shown["hooks"]) == 1  # its badge, before any backward runs
    ed.remove_hook(hid)
    shown = next(n for n in view.snapshot["nodes"] if n["id"] == node["id"])
    assert shown["hooks"] == []


def test_the_hook_editor_follows_the_jupyterlab_theme():
    """Every colour of the hook editor is a JupyterLab theme variable (its hex value only a
    fallback outside JupyterLab), so that a dark theme gives light text on a dark background."""
    import re
    from pathlib import Path

    css = (Path(ng.__file__).parent.parent / "widgets" / "hook_editor.css").read_text()
    colours = re.findall(r"(?:color|background|border)[\w-]*\s*:\s*([^;]+);", css)
    assert len(colours) >= 8
    bare = [c for c in colours if re.search(r"#[0-9a-fA-F]{3,6}", re.sub(r"var\([^)]*\)", "", c))]
    assert not bare, f"colours that ignore the theme: {bare}"


def test_a_widget_is_made_without_a_class_of_its_own():
    """anywidget's traits (the module, the CSS, the id) are the class's: making a widget makes
    no class (NOTE [Widget traits made once a class]), and its state still carries them."""
    x = ng.randn(3, requires_grad=True)
    with record() as rec:
        (x * x).sum().backward()
    view = GraphView(recorder=rec)
    widgets = [view, HookEditor(graph=view), BackwardStepper(rec.passes[-1], recorder=rec)]
    for w in widgets:
        assert type(w) in (GraphView, HookEditor, BackwardStepper)
        state = w.get_state()
        assert state["_anywidget_id"] == f"{type(w).__module__}.{type(w).__name__}"
        assert "export default" in state["_esm"] and state["_css"]
