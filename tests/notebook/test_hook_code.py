"""Hook code runs like a small cell (NOTE [Hook code runs like a small cell] in
nbgrad/notebook/hook_editor.py): its imports, constants and helper functions are visible to the
hook when it is called, the notebook's names too (as they are then), and nothing it defines
lands in the notebook's namespace."""

import math

import anywidget  # noqa: F401

import nbgrad as ng
from nbgrad.notebook import HookEditor


def _editor(namespace):
    x = ng.tensor([1.0, 2.0], dtype=ng.float64, requires_grad=True)
    y = x * 3
    loss = y.sum()
    return x, y, HookEditor(y, root=loss, namespace=namespace)


def test_a_def_hook_sees_its_own_imports_and_helpers():
    user = {"scale": 2.0}
    x, y, ed = _editor(user)
    code = (
        "import math\n"
        "K = 10\n"
        "def helper(g):\n"
        "    return g * K\n"
        "def hook(grad):\n"
        "    return helper(grad) * math.pi * scale\n"
    )
    ed._receive({"type": "add", "kind": "tensor_hook", "source": code})  # the browser's path
    assert ed.error == "", ed.error
    ed.run_backward()
    assert ed.error == "", ed.error
    assert x.grad.tolist() == [3 * 10 * math.pi * 2.0] * 2  # float64: exact
    assert not {"math", "K", "helper", "hook"} & set(user)  # nothing leaked into the notebook
    # the notebook's names are read when the hook runs, not when it was added
    user["scale"] = 1.0
    x.grad = None
    ed.run_backward()
    assert x.grad.tolist() == [3 * 10 * math.pi] * 2


def test_a_name_defined_nowhere_is_the_hook_error():
    x, y, ed = _editor({})
    ed.add_hook("tensor_hook", "def hook(grad):\n    return grad * nowhere")
    ed.run_backward()
    assert "NameError: name 'nowhere' is not defined" in ed.error
    assert 'File "<hook:' in ed.error


def test_the_hooks_that_fired_name_their_node():
    from nbgrad.notebook import GraphView, record

    x = ng.tensor([1.0, 2.0], requires_grad=True)
    with record() as rec:
        y = x * 3
        loss = y.sum()
        loss.backward(retain_graph=True)
    view = GraphView(recorder=rec, names={id(x): "x"})
    ed = HookEditor(graph=view, root=loss)
    mul = next(n["id"] for n in view.snapshot["nodes"] if n["name"] == "MulBackward0")
    ed.set_target(mul)
    ed.add_hook("node_prehook", "lambda grad_outputs: None")
    leaf = next(n["id"] for n in view.snapshot["nodes"] if n["kind"] == "leaf")
    ed.set_target(leaf)
    ed.add_hook("post_accumulate_grad", "lambda t: None")
    ed.run_backward()
    assert [(c["node"], c["node_name"]) for c in ed.fired] == [
        (mul, "MulBackward0"),
        (leaf, "x"),
    ]


def test_a_hook_from_another_editor_shows_its_error_in_the_editor_that_ran():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    loss = y.sum()
    first = HookEditor(y, root=loss)
    first.add_hook("tensor_hook", "def broken(grad):\n    return grad * undefined_thing")
    second = HookEditor(x, root=loss)
    second.run_backward()
    assert second.status == "backward failed"
    assert second.error.startswith("<hook:MulBackward0#")
    assert "NameError: name 'undefined_thing' is not defined" in second.error
