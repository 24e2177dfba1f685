"""Recording torch code (NOTE [Watching torch] in nbgrad/notebook/torch_source.py): every torch
call of a block is a record with its line, module calls are groups, and torch's real backward is
watched: the order torch ran the nodes in, what each received and returned, nbgrad's model of
the engine beside it; torch's gradients are those of a run without the recorder, and nothing of
the recorder is left on torch's objects afterwards."""

import importlib

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is the test oracle (the test extra has it)")

from IPython.utils.capture import capture_output  # noqa: E402

from nbgrad.notebook import build_snapshot, record  # noqa: E402
from nbgrad.notebook.torch_source import TORCH  # noqa: E402
from tests.notebook.test_torch_source import MODELS, _walk  # noqa: E402


def _run(name, recorded):
    """Build model ``name`` (seed 0), run its loss's backward; with ``recorded``, inside a
    recorder. Returns (model, loss, recorder or None, the parameters' gradients)."""
    torch.manual_seed(0)
    if recorded:
        with record() as rec:
            model, loss = MODELS[name]()
            loss.backward(retain_graph=True)
    else:
        rec = None
        model, loss = MODELS[name]()
        loss.backward(retain_graph=True)
    return model, loss, rec, [p.grad.clone() for p in model.parameters()]


def _observed_order(loss):
    """The order torch runs the nodes of ``loss``'s graph in, seen by node pre-hooks of our
    own (independent of the recorder), on a second backward through the retained graph."""
    order, handles, stack, seen = [], [], [loss.grad_fn], set()
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        handles.append(fn.register_prehook(lambda g, fn=fn: order.append(fn)))
        stack.extend(n for n, _ in fn.next_functions if n is not None)
    loss.backward(retain_graph=True)
    for h in handles:
        h.remove()
    return order


@pytest.mark.parametrize("name", MODELS)
def test_a_recorded_torch_model(name):
    model, loss, rec, grads = _run(name, recorded=True)
    _, _, _, plain = _run(name, recorded=False)
    # torch's gradients are those of a run without the recorder
    # bits: the recorder only watches; torch runs the same kernels on the same values
    assert all(torch.equal(a, b) for a, b in zip(grads, plain))
    assert rec.graph_source is TORCH and not rec.mixed
    # every call is a record with the user's line (the model code is in test_torch_source.py),
    # never a line of torch's; module calls are groups
    assert rec.records and all(r.filename.endswith("test_torch_source.py") for r in rec.records)
    assert rec.records[-1].node is loss.grad_fn
    assert {g.type for g in rec.modules} >= {type(model).__name__}
    # the snapshot is torch's graph: its nodes, edges and saved values, the parameters' names
    snap = build_snapshot(rec)
    names, edges = _walk(loss)
    assert sorted(n["name"] for n in snap["nodes"] if n["kind"] == "node") == sorted(
        v for k, v in names.items() if k[0] == "node"
    )
    assert len(snap["edges"]) == len(edges)
    leaves = {n["label"] for n in snap["nodes"] if n["kind"] == "leaf"}
    top = type(model).__name__
    assert leaves == {f"{top}.{p}" for p, _ in model.named_parameters()}
    # every node a module call made is in its group, those a composite call (attention's
    # multi_head_attention_forward) made besides its own included
    if name in ("mlp", "transformer"):
        ungrouped = {n["name"] for n in snap["nodes"] if n["kind"] == "node" and not n["group"]}
        assert ungrouped <= {"PowBackward0", "SumBackward0", "MeanBackward0"}, ungrouped
    # the pass: torch's own order, what each node received, gradients on every edge
    [trace] = rec.passes
    assert trace.order == _observed_order(loss)
    assert trace.model_differs == []  # nbgrad's model of the engine runs them in that order
    assert all(step.inputs for step in trace.steps)
    assert all(e["grad"] is not None for e in snap["edges"])
    # the steps' engine state comes from the model: every node ends with no dependency left
    assert set(trace.final_dependencies.values()) <= {0}
    # nothing is left on torch's objects
    assert torch._C._len_torch_function_stack() == 0
    assert not torch.nn.modules.module._global_forward_hooks
    assert not torch.nn.modules.module._global_forward_pre_hooks
    before = [p.grad.clone() for p in model.parameters()]
    with record() as after:
        pass
    loss.backward()
    assert not after.passes and len(rec.passes) == 1
    # ... and a backward after the block adds one more gradient, as torch alone would
    # bits: accumulation is the same one correctly rounded addition as b + g
    assert all(torch.equal(p.grad, b + g) for p, b, g in zip(model.parameters(), before, grads))


def test_a_failing_torch_backward_is_a_failed_pass():
    x = torch.ones(3, requires_grad=True)
    with record() as rec:
        y = (x * 2).sum()
        y.backward()
        with pytest.raises(RuntimeError, match="second time"):
            y.backward()
    first, second = rec.passes
    assert first.error is None and second.error.startswith("RuntimeError")
    # exact: 1 * 2
    assert torch.equal(x.grad, torch.full((3,), 2.0))


def test_autograd_grad_is_watched_and_leaves_grad_alone():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with record() as rec:
        y = (x.exp() * x).sum()
        (g,) = torch.autograd.grad(y, [x])
    assert torch.allclose(g, (x.exp() * (x + 1)).detach()) and x.grad is None
    [trace] = rec.passes
    assert [TORCH.node_name(n) for n in trace.order][:2] == ["SumBackward0", "MulBackward0"]


def test_an_autograd_cell_of_torch_code(ip):
    with capture_output() as cap:
        result = ip.run_cell(
            "%%autograd --backward loss -o ts\n"
            "import torch\n"
            "torch.manual_seed(0)\n"
            "model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(),"
            " torch.nn.Linear(8, 1))\n"
            "x = torch.randn(5, 4)\n"
            "loss = ((model(x) - 1) ** 2).mean()\n"
        )
    assert result.success, cap.stderr
    session = ip.user_ns["ts"]
    rec = session.record
    assert rec.graph_source is TORCH
    lines = {(r.op, r.line) for r in rec.records}
    assert {("linear", 6), ("relu", 6), ("sub", 6), ("pow", 6), ("mean", 6)} <= lines
    snap = session.graph.snapshot
    leaves = {n["label"] for n in snap["nodes"] if n["kind"] == "leaf"}
    assert leaves == {"model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"}
    assert snap["pass"] == 0 and "mixed" not in cap.stdout


def test_a_cell_that_mixes_nbgrad_and_torch_says_so(ip):
    with capture_output() as cap:
        result = ip.run_cell(
            "%%autograd -o mixed\n"
            "import torch\n"
            "a = ng.ones(2, requires_grad=True) * 2\n"
            "b = torch.ones(2, requires_grad=True) * 3\n"
        )
    assert result.success
    rec = ip.user_ns["mixed"].record
    assert rec.graph_source.name == "nbgrad" and rec.mixed == {"torch"}
    assert [r.op for r in rec.records] == ["mul"]
    assert "torch" in cap.stdout and "nbgrad" in cap.stdout and "own %%autograd cell" in cap.stdout


CELL = (
    "%%autograd --backward loss --retain-graph -o th\n"
    "import torch\n"
    "torch.manual_seed(0)\n"
    "model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))\n"
    "x = torch.randn(5, 4)\n"
    "loss = ((model(x) - 1) ** 2).mean()\n"
)


def _plain_grads(hook=None):
    """The same model's gradients in plain torch, with ``hook`` on its ReluBackward0 node."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    x = torch.randn(5, 4)
    h = model[1](model[0](x))
    if hook is not None:
        h.grad_fn.register_prehook(hook)
    ((model[2](h) - 1) ** 2).mean().backward()
    return [p.grad for p in model.parameters()]


def test_hooks_on_torch_objects_from_the_editor(ip):
    with capture_output() as cap:
        assert ip.run_cell(CELL).success, cap.stderr
    session, model = ip.user_ns["th"], ip.user_ns["model"]
    editor, snap = session.hooks, session.graph.snapshot
    relu = next(n["id"] for n in snap["nodes"] if n["name"] == "ReluBackward0")
    editor.set_target(relu)
    assert editor.kinds() == ["tensor_hook", "node_hook", "node_prehook"]
    hid = editor.add_hook("node_prehook", "lambda grad_outputs: (grad_outputs[0] * 2,)")
    # torch cannot list a node's hooks; the editor lists the ones it added, and the graph too
    assert [h["id"] for h in editor.hooks] == [hid]
    assert [h["id"] for h in session.graph.snapshot["hooks"]] == [hid]
    editor.zero_grad()
    editor.run_backward()
    assert editor.error == "" and editor.status.endswith("; 1 hook fired")
    want = _plain_grads(lambda go: (go[0] * 2,))
    # bits: the same seed, model and hook: torch runs the same kernels on the same values
    assert all(torch.equal(p.grad, w) for p, w in zip(model.parameters(), want))
    [fired] = editor.fired
    assert fired["hook"] == hid and fired["kind"] == "prehook" and fired["changed"]
    assert fired["after"][0]["norm"] == pytest.approx(2 * fired["before"][0]["norm"], rel=1e-5)
    # disabled, it changes nothing; a leaf's tensor hook and a module hook are listed
    editor.set_enabled(hid, False)
    editor.zero_grad()
    editor.run_backward()
    plain = _plain_grads()
    # bits: the same seed and model, the hook off: the same kernels on the same values
    assert all(torch.equal(p.grad, w) for p, w in zip(model.parameters(), plain))
    assert editor.fired == []
    editor.set_target(model[0].weight)
    leaf = editor.add_hook("tensor_hook", "lambda grad: grad * 0")
    editor.zero_grad()
    editor.run_backward()
    assert not model[0].weight.grad.any() and model[0].bias.grad.any()
    editor.set_target(model[2])
    fwd = editor.add_hook("forward", "lambda module, args, output: None")
    assert "next call" in editor.status and [h["id"] for h in editor.hooks] == [fwd]
    # hooks registered elsewhere are listed too, the global module hooks among them
    glob = torch.nn.modules.module.register_module_forward_hook(lambda m, a, o: None)
    try:
        editor._update()
        kinds = [h["kind"] for h in editor.hooks]
        assert kinds == ["forward", "global_forward"]
    finally:
        glob.remove()
    # removed, nothing of nbgrad's is left on torch's objects
    editor.remove_hook(fwd)
    editor.set_target(model[0].weight)
    editor.remove_hook(leaf)
    editor.set_target(relu)
    editor.remove_hook(hid)
    assert editor.hooks == [] and session.graph.snapshot["hooks"] == []
    assert not model[0].weight._backward_hooks and not model[2]._forward_hooks
    assert not importlib.import_module("nbgrad.notebook.torch_source")._NODE_HOOKS


def test_the_stepper_steps_through_torchs_pass(ip):
    with capture_output() as cap:
        assert ip.run_cell(CELL.replace("-o th", "--step -o ts2")).success, cap.stderr
    session = ip.user_ns["ts2"]
    stepper = session.stepper
    trace = session.record.passes[-1]
    names = {n["id"]: n["name"] for n in stepper.trace["graph"]["nodes"]}
    order = [names[s["node"]] for s in stepper.trace["steps"]]
    assert order == [TORCH.node_name(n) for n in trace.order]
    assert order[0] == "MeanBackward0" and order.count("torch::autograd::AccumulateGrad") == 4
    # the engine's state at each step is nbgrad's model of torch's engine, checked against
    # torch's order at every step (the stepper says so, or marks the steps that differ)
    assert stepper.trace["model_differs"] == []
    state = stepper.state(1)
    assert state["running"] == stepper.trace["steps"][0]["node"]
    assert names[state["made_ready"][0]] == "PowBackward0"
    # the queue as the step left it: what it made ready (issue 33, point 7)
    assert state["ready"] == {"cpu": state["made_ready"]}


def _second_node(loss):
    """The first node below the root that is no leaf's accumulator (found the same way in a
    recorded run and a plain one)."""
    return next(
        fn
        for fn, _ in loss.grad_fn.next_functions
        if fn is not None and fn.name() != "torch::autograd::AccumulateGrad"
    )


@pytest.mark.parametrize("name", MODELS)
def test_an_editor_hook_doubles_what_it_should(name):
    """A node pre-hook added through the HookEditor API on each model gives exactly the
    gradients of the same hook registered by hand in plain torch."""
    from nbgrad.notebook import HookEditor

    torch.manual_seed(0)
    with record() as rec:
        model, loss = MODELS[name]()
    editor = HookEditor(_second_node(loss), root=loss)
    editor.add_hook("node_prehook", "lambda grad_outputs: tuple(g * 2 for g in grad_outputs)")
    editor.run_backward()
    assert editor.error == "" and editor.fired and rec.graph_source is TORCH
    got = [p.grad for p in model.parameters()]
    torch.manual_seed(0)
    plain_model, plain_loss = MODELS[name]()
    _second_node(plain_loss).register_prehook(lambda go: tuple(g * 2 for g in go))
    plain_loss.backward()
    want = [p.grad for p in plain_model.parameters()]
    # bits: the same seed, model and hook: torch runs the same kernels on the same values
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    torch.manual_seed(0)
    unhooked_model, unhooked_loss = MODELS[name]()
    unhooked_loss.backward()
    # the hook doubled every gradient below it (all of them, for these models)
    for a, b in zip(got, (p.grad for p in unhooked_model.parameters())):
        assert torch.allclose(a, 2 * b, rtol=1e-5, atol=1e-7)
    editor.remove_hook(editor.hooks[0]["id"])
    assert not importlib.import_module("nbgrad.notebook.torch_source")._NODE_HOOKS


def test_a_stepper_and_a_graph_view_of_a_torch_loss():
    """The widgets take a torch tensor directly, as they take nbgrad's."""
    from nbgrad.notebook import BackwardStepper, GraphView

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    loss = model(torch.randn(6, 3)).pow(2).mean()
    assert GraphView(loss).snapshot["nodes"]
    stepper = BackwardStepper(loss)
    names = {n["id"]: n["name"] for n in stepper.trace["graph"]["nodes"]}
    assert [names[s["node"]] for s in stepper.trace["steps"]][:3] == [
        "MeanBackward0",
        "PowBackward0",
        "AddmmBackward0",
    ]
    assert stepper.trace["model_differs"] == [] and all(
        p.grad is not None for p in model.parameters()
    )


def test_a_large_norm_is_read_once_per_memory_and_version():
    """See NOTE [A norm read once]: a transposed view of a large gradient reuses its norm; a change
    in place, or another tensor in the memory of one that died, is read again."""
    import gc

    from nbgrad.notebook.summaries import LARGE, grad_facts

    n = LARGE + 8
    norms = {}
    a = torch.arange(2.0 * n).reshape(2, n)
    first = grad_facts(a, 16, TORCH, norms)
    view = grad_facts(a.t(), 16, TORCH, norms)
    assert len(norms) == 1 and view.norm == first.norm == pytest.approx(a.norm().item())
    assert view.head.tolist() == a.t().reshape(-1)[:16].tolist()  # its own first values
    a.mul_(2)  # a new version: read again
    assert grad_facts(a, 16, TORCH, norms).norm == pytest.approx(a.norm().item())
    del a, view, first
    gc.collect()
    for k in range(5):  # new tensors, some in the memory of the ones freed
        b = torch.full((2, n), float(k + 3))
        assert grad_facts(b, 16, TORCH, norms).norm == pytest.approx(b.norm().item())
        del b


def test_a_fan_in_buffer_shows_the_sum_of_what_reached_it_so_far():
    """See NOTE [The model run when read]: the input buffer of a node that four edges reach shows,
    at each step while it waits, the sum of the gradients sent to it so far (the values the
    nodes before returned), and the node then receives the whole sum; the model's order is
    torch's."""
    a = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    b = torch.tensor([1.5, 0.25, -0.5], requires_grad=True)
    with record() as rec:
        h = a * b
        (h + h.exp() + h.sin() + h * 2).sum().backward()
    (trace,) = rec.passes
    node = h.grad_fn
    sent, shown, received = [], [], None
    for step in trace.steps:
        if node in step.buffers:
            (slot,) = step.buffers[node]
            total = torch.stack(sent).sum(0)
            assert slot["values"] == pytest.approx(total.tolist(), rel=1e-5)
            assert slot["norm"] == pytest.approx(total.norm().item(), rel=1e-5)
            shown.append(len(sent))
        if step.node is node:
            received = step.inputs[0]["values"]
        for (fn, _), out in zip(step.node.next_functions, step.outputs):
            if fn is node and out is not None:
                sent.append(torch.tensor(out["values"]))
    assert shown == [1, 2, 3]  # the fourth made it ready: a ready node has no buffer shown
    hd = h.detach()
    assert received == pytest.approx((1 + hd.exp() + hd.cos() + 2).tolist(), rel=1e-5)
    assert trace.model_differs == [] and trace.final_buffers == {}
