"""The hook editor a ``%%autograd --backward`` cell shows runs backward on that cell's graph
(NOTE [The editor keeps the cell's graph] in magics.py), and an editor whose graph was freed
changes nothing and says what to do (NOTE [A freed graph] in hook_editor.py)."""

import anywidget  # noqa: F401
import numpy as np
import pytest
from IPython.utils.capture import capture_output

CELL = (
    "%%autograd --backward loss{flags} -o s\n"
    "x = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
    "w = ng.tensor([0.5, -1.0, 2.0], requires_grad=True)\n"
    "loss = (x.exp() * w.sin()).sum()\n"
)
XV, WV = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])


def run(ip, source):
    with capture_output():
        result = ip.run_cell(source)
    return result


def test_the_editor_of_a_backward_cell_runs_backward_again(ip):
    assert run(ip, CELL.format(flags="")).success
    s, x = ip.user_ns["s"], ip.user_ns["x"]
    np.testing.assert_allclose(x.grad.numpy(), np.exp(XV) * np.sin(WV), rtol=1e-6)
    ed = s.hooks
    ed.set_target(x)
    ed._receive({"type": "add", "kind": "tensor_hook", "source": "lambda grad: grad * 2"})
    ed._receive({"type": "zero_grad"})
    ed._receive({"type": "run_backward", "retain_graph": True, "create_graph": False})
    assert ed.error == "" and ed.status.startswith("backward ran")
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(XV) * np.sin(WV), rtol=1e-6)
    # and again, as often as the user likes: gradients accumulate
    ed._receive({"type": "run_backward", "retain_graph": True, "create_graph": False})
    assert ed.error == ""
    np.testing.assert_allclose(x.grad.numpy(), 4 * np.exp(XV) * np.sin(WV), rtol=1e-6)
    assert [c["kind"] for c in ed.fired] == ["tensor"]


def test_the_editor_of_a_torch_backward_cell_runs_backward_again(ip):
    torch = pytest.importorskip("torch")
    cell = (
        "%%autograd --backward loss -o s\n"
        "import torch\n"
        "a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
        "loss = (a.exp() * a.sin()).sum()\n"
    )
    assert run(ip, cell).success
    s, a = ip.user_ns["s"], ip.user_ns["a"]
    once = a.grad.clone()
    s.hooks.run_backward()
    assert s.hooks.error == ""
    assert torch.allclose(a.grad, 2 * once)
    # freed by the user's own backward: torch's graph is found freed too, nothing changes
    assert run(ip, "loss.backward()").success
    s.hooks.zero_grad()
    s.hooks.run_backward()
    assert "was freed" in s.hooks.error and torch.allclose(a.grad, 3 * once)


def test_a_static_cell_frees_its_graph_as_backward_does(ip):
    assert run(ip, CELL.format(flags=" --static")).success
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        ip.user_ns["loss"].backward()
    assert run(ip, CELL.format(flags=" --static --retain-graph")).success
    ip.user_ns["loss"].backward()  # kept


def test_a_freed_graph_changes_nothing_and_the_hint_works(ip):
    assert run(ip, CELL.format(flags="")).success
    s, x, w = ip.user_ns["s"], ip.user_ns["x"], ip.user_ns["w"]
    assert run(ip, "loss.backward()").success  # the user's own backward frees the graph
    grads = x.grad.clone(), w.grad.clone()
    ed = s.hooks
    ed.set_target(x)
    ed._receive({"type": "add", "kind": "tensor_hook", "source": "lambda grad: grad * 2"})
    fired = ed.fired
    ed._receive({"type": "zero_grad"})  # refused: the next run could not use the zeros
    assert "was freed" in ed.error and "Nothing was run or changed" in ed.error
    assert ed.status == ".grad not zeroed: the graph was freed"
    assert x.grad is not None and w.grad is not None
    ed._receive({"type": "run_backward", "retain_graph": True, "create_graph": False})
    assert "The graph of SumBackward0 was freed" in ed.error
    assert "Run the cell that built the graph again" in ed.error
    assert ed.status == "backward not run: the graph was freed"
    assert ed.fired == fired  # no hook fired
    assert np.array_equal(x.grad.numpy(), grads[0].numpy())
    assert np.array_equal(w.grad.numpy(), grads[1].numpy())
    # the hint: the cell run again shows an editor that runs
    assert run(ip, CELL.format(flags="")).success
    ed = ip.user_ns["s"].hooks
    ed._receive({"type": "run_backward", "retain_graph": True, "create_graph": False})
    assert ed.error == ""


def test_unticking_retain_graph_frees_it_and_the_next_run_says_so(ip):
    assert run(ip, CELL.format(flags="")).success
    s, x = ip.user_ns["s"], ip.user_ns["x"]
    s.hooks._receive({"type": "run_backward", "retain_graph": False})
    assert s.hooks.error == ""
    before = x.grad.clone()
    s.hooks._receive({"type": "run_backward", "retain_graph": False})
    assert "was freed" in s.hooks.error
    assert np.array_equal(x.grad.numpy(), before.numpy())
