"""Memory: graphs are freed, and training does not grow (issue "Reliability: ... memory").

As in PyTorch, a graph lives exactly as long as something refers to it: its outputs (through
``grad_fn``), an intermediate the user keeps, or a gradient recorded with ``create_graph``.
Deleting the outputs frees every Node and every array the graph saved for backward, by
reference counting alone (the tests run with the cyclic garbage collector off, so a reference
cycle in nbgrad would show up as a leak), with or without hooks, and after a backward with or
without ``retain_graph``.

The one cycle is PyTorch's own: ``backward(create_graph=True)`` stores in ``x.grad`` a tensor
whose graph reaches back to ``x`` (through its AccumulateGrad), so ``x`` and its graph keep each
other alive (PyTorch warns about it). ``x.grad = None`` breaks it; ``gc.collect()`` frees it
once ``x`` itself is gone; ``autograd.grad(create_graph=True)``, which writes no ``.grad``,
makes no cycle.

Last, resident memory stays flat over 10,000 training steps of a small MLP written with nbgrad
ops (in a subprocess, so that nothing else in the test session moves the numbers).
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import nbgrad as ng
from nbgrad import backend
from nbgrad._graph import hooks
from nbgrad._graph.grad_state import _inference_tensors
from nbgrad.autograd import engine as engine_mod
from nbgrad.autograd.graph import AccumulateGrad, SavedTensor


@pytest.fixture(autouse=True)
def no_cyclic_gc():
    """Reference counting only: whatever is freed here was not held by a cycle."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def _leaf(values, device="cpu"):
    return ng.tensor(values, dtype=ng.float64, device=device, requires_grad=True)


def _nodes(*tensors):
    """Every node of the graphs of ``tensors`` but the leaves' AccumulateGrad."""
    seen, stack = [], [t.grad_fn for t in tensors if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.append(node)
        stack.extend(f for f, _ in node.next_functions if f is not None)
    return [n for n in seen if not isinstance(n, AccumulateGrad)]


def _saved_arrays(nodes, leaves):
    """The arrays the nodes saved for backward, but the leaves' own."""
    own = {id(leaf._data) for leaf in leaves}
    arrays = []
    for node in nodes:
        for saved in node.saved_values().values():
            for s in saved if type(saved) is list else [saved]:
                if type(s) is SavedTensor:
                    array = s._data if s._data is not None else s._tensor._data
                    if id(array) not in own:
                        arrays.append(array)
    return arrays


class Graph:
    """A small graph that saves inputs, outputs and intermediates of several kinds, with weak
    references to its nodes and saved arrays; the graph itself is held only by ``out``."""

    def __init__(self, x, w):
        h = (x @ w).tanh()  # MmBackward0 saves x and w, TanhBackward0 its result
        s = h.sigmoid() * h  # MulBackward0 saves two intermediates
        parts = (s[:, 1:] ** 3).sum(1)  # SliceBackward0, PowBackward0 (saves the slice)
        self.out = parts.logsumexp(0) + h.exp().mean()
        nodes = _nodes(self.out)
        arrays = _saved_arrays(nodes, (x, w))
        assert len(nodes) >= 9 and len(arrays) >= 5
        self.nodes = [weakref.ref(n) for n in nodes]
        self.arrays = [weakref.ref(a) for a in arrays]
        self.intermediate = weakref.ref(h)

    def alive(self, which):
        return sum(r() is not None for r in getattr(self, which))


def _inputs():
    x = _leaf([[0.5, -1.0, 0.3], [0.2, 0.7, -0.4]])
    w = _leaf([[0.1, 0.9], [-0.6, 0.4], [1.2, -0.3]])
    return x, w


def test_deleting_the_outputs_frees_nodes_and_saved_arrays():
    x, w = _inputs()
    g = Graph(x, w)
    assert g.alive("nodes") == len(g.nodes) and g.alive("arrays") == len(g.arrays)
    del g.out
    assert g.alive("nodes") == 0
    assert g.alive("arrays") == 0
    assert g.intermediate() is None
    # the graph held the leaf's AccumulateGrad; with no hook on it, it went with the graph
    assert x.grad is None and x._grad_accumulator is None


@pytest.mark.parametrize("retain_graph", [False, True])
def test_after_backward_the_graph_is_freed_with_its_outputs(retain_graph):
    x, w = _inputs()
    g = Graph(x, w)
    g.out.backward(retain_graph=retain_graph)
    assert g.alive("nodes") == len(g.nodes)  # ``out`` still refers to its graph
    if retain_graph:
        assert g.alive("arrays") == len(g.arrays)
        g.out.backward()  # a second pass through the retained graph
    else:
        assert g.alive("arrays") == 0  # saved values are freed by the backward itself
    grads = x.grad.numpy().copy(), w.grad.numpy().copy()
    del g.out
    assert g.alive("nodes") == 0 and g.alive("arrays") == 0
    # the gradients stay, and stay correct
    x.grad = w.grad = None
    Graph(x, w).out.backward()
    scale = 2.0 if retain_graph else 1.0
    np.testing.assert_allclose(grads[0], scale * x.grad.numpy())
    np.testing.assert_allclose(grads[1], scale * w.grad.numpy())


def test_hooks_do_not_keep_a_graph_alive():
    x, w = _inputs()
    g = Graph(x, w)
    calls = []

    def tensor_hook(grad):
        calls.append("tensor")

    def prehook(grad_outputs):
        calls.append("prehook")

    def posthook(grad_inputs, grad_outputs):
        calls.append("posthook")

    def post_accumulate(tensor):
        calls.append("post_accumulate")

    root = g.out.grad_fn
    root.register_prehook(prehook)
    root.register_hook(posthook)
    g.intermediate().register_hook(tensor_hook)
    x.register_post_accumulate_grad_hook(post_accumulate)
    hooks = [weakref.ref(f) for f in (tensor_hook, prehook, posthook, post_accumulate)]
    del tensor_hook, prehook, posthook, post_accumulate, root
    assert sum(r() is not None for r in hooks) == 4  # held by the graph and by x
    g.out.backward(retain_graph=True)
    assert sorted(calls) == ["post_accumulate", "posthook", "prehook", "tensor"]
    del g.out
    assert g.alive("nodes") == 0 and g.alive("arrays") == 0
    # the hooks on the graph went with it; a leaf's hook stays with the leaf, as in PyTorch
    assert [r() is None for r in hooks] == [True, True, True, False]
    del x
    gc.collect()  # see test_a_leaf_is_freed_by_reference_counting_unless_its_accumulate_grad
    assert hooks[3]() is None


def test_a_leaf_is_freed_by_reference_counting_unless_its_accumulate_grad_has_hooks():
    """See NOTE [A leaf and its AccumulateGrad]: as in PyTorch, a leaf refers to its
    AccumulateGrad weakly, so an unused leaf goes at once, with its ``.grad``. A hook on the
    AccumulateGrad pins it to the leaf (so the hook persists across passes); that leaf and its
    AccumulateGrad then form a cycle, which the cyclic collector frees."""
    x, w = _inputs()
    Graph(x, w).out.backward()
    leaf, grad = weakref.ref(x), weakref.ref(x.grad)
    del x
    assert leaf() is None and grad() is None  # no gc.collect() needed
    y, w = _inputs()
    y.register_hook(lambda g: g)
    Graph(y, w).out.backward()
    leaf, acc = weakref.ref(y), weakref.ref(y._grad_accumulator)
    del y
    assert leaf() is not None and acc() is not None  # the cycle
    gc.collect()
    assert leaf() is None and acc() is None


def test_an_intermediate_the_user_keeps_keeps_its_part_of_the_graph():
    x, w = _inputs()
    h = (x @ w).tanh()
    h.retain_grad()
    out = (h.exp() * 2).sum()
    upstream = [weakref.ref(n) for n in _nodes(h)]  # TanhBackward0, MmBackward0
    downstream = [weakref.ref(n) for n in _nodes(out) if n not in _nodes(h)]
    assert len(upstream) == 2 and len(downstream) == 3
    out.backward()
    assert h.grad is not None
    del out
    assert all(r() is None for r in downstream)
    assert all(r() is not None for r in upstream)  # still h's history
    del h
    assert all(r() is None for r in upstream)


def test_the_engine_keeps_nothing_of_a_finished_pass():
    x, w = _inputs()
    tasks = []
    g = Graph(x, w)
    g.intermediate().register_hook(
        lambda grad: tasks.append(weakref.ref(engine_mod._current.graph_task))
    )
    g.out.backward()
    del g.out
    assert tasks and tasks[0]() is None
    assert g.alive("nodes") == 0 and g.alive("arrays") == 0


def test_a_pass_through_a_device_worker_frees_its_graph():
    backend.register_device_type("memdev", count=1, strict=True)
    try:
        x, w = _inputs()
        y = (x.to("memdev") * 2).exp()  # nodes that run on the worker thread
        out = (y.cpu() @ w).sum()
        nodes = [weakref.ref(n) for n in _nodes(out)]
        arrays = [weakref.ref(a) for a in _saved_arrays(_nodes(out), (x, w))]
        assert arrays
        del y
        out.backward()
        del out
        assert all(r() is None for r in nodes) and all(r() is None for r in arrays)
    finally:
        backend.unregister_device_type("memdev")


def test_create_graph_makes_the_parameter_grad_cycle_that_pytorch_has():
    x, w = _inputs()
    g = Graph(x, w)
    with pytest.warns(UserWarning, match="reference cycle between the parameter and its grad"):
        g.out.backward(create_graph=True)
    assert x.grad.grad_fn is not None
    del g.out
    # x.grad's graph goes back to x (and to the forward graph it differentiated): alive
    assert g.alive("nodes") > 0
    backward_graph = [weakref.ref(n) for n in _nodes(x.grad, w.grad)]
    x.grad = None
    w.grad = None
    # the cycle is broken: everything goes, by reference counting
    assert g.alive("nodes") == 0 and g.alive("arrays") == 0
    assert all(r() is None for r in backward_graph)


def test_create_graph_cycle_is_collected_once_the_leaves_are_gone():
    x, w = _inputs()
    g = Graph(x, w)
    with pytest.warns(UserWarning, match="reference cycle"):
        g.out.backward(create_graph=True)
    leaf = weakref.ref(x)
    del g.out, x, w
    assert leaf() is not None and g.alive("nodes") > 0  # the cycle keeps them
    gc.collect()
    assert leaf() is None
    assert g.alive("nodes") == 0 and g.alive("arrays") == 0


def test_autograd_grad_with_create_graph_makes_no_cycle():
    x, w = _inputs()
    g = Graph(x, w)
    gx, gw = ng.autograd.grad(g.out, (x, w), create_graph=True)
    (ggx,) = ng.autograd.grad((gx * gx).sum() + gw.sum(), x)
    assert ggx.shape == x.shape and x.grad is None
    backward_graph = [weakref.ref(n) for n in _nodes(gx, gw)]
    del g.out, gx, gw
    assert g.alive("nodes") == 0 and g.alive("arrays") == 0
    assert all(r() is None for r in backward_graph)


def test_views_of_a_parameter_do_not_accumulate():
    """A parameter is viewed on every step (``w.t()`` in mm's backward): the base's record of
    its views (NOTE [Views of a modified base]) must not grow with the steps."""
    x, w = _inputs()
    for _ in range(1000):
        (x @ w).sum().backward()
        _ = w.t(), w[0], w.reshape(-1)
    assert len(w._views) < 16


TRAINING = textwrap.dedent(
    """
    import gc, json, sys
    import numpy as np
    import psutil
    import nbgrad as ng

    steps, warmup = int(sys.argv[1]), int(sys.argv[2])
    rng = np.random.default_rng(0)
    x = ng.tensor(rng.standard_normal((64, 16)))
    y = ng.tensor(rng.standard_normal((64, 1)))

    def param(*shape):
        return ng.tensor(rng.standard_normal(shape) * 0.3, requires_grad=True)

    params = [param(16, 32), param(32), param(32, 32), param(32), param(32, 1), param(1)]
    w1, b1, w2, b2, w3, b3 = params
    seen = []
    w1.register_post_accumulate_grad_hook(lambda p: seen.append(1) if len(seen) < 1 else None)

    def step(i):
        h = (x @ w1 + b1).tanh()
        h = (h @ w2 + b2).relu()
        out = h @ w3 + b3
        loss = ((out - y) ** 2).mean()
        if i % 10 == 0:  # now and then a gradient penalty, through create_graph
            (gw,) = ng.autograd.grad(loss, w3, create_graph=True)
            loss = loss + 1e-3 * (gw * gw).sum()
        loss.backward()
        with ng.no_grad():
            for p in params:
                p -= 0.01 * p.grad
                p.grad = None
        return loss.item()

    process = psutil.Process()
    for i in range(warmup):
        step(i)
    gc.collect()
    rss_warm = process.memory_info().rss
    for i in range(warmup, steps):
        last = step(i)
    gc.collect()
    rss_end = process.memory_info().rss
    print(json.dumps({"warm": rss_warm, "end": rss_end, "loss": last, "hooks": len(seen)}))
    """
)


def test_resident_memory_stays_flat_over_ten_thousand_training_steps():
    result = subprocess.run(
        [sys.executable, "-c", TRAINING, "10000", "1000"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    rss = json.loads(result.stdout.strip().splitlines()[-1])
    assert np.isfinite(rss["loss"]) and rss["hooks"] == 1
    growth = rss["end"] / rss["warm"] - 1
    assert growth < 0.05, f"RSS grew by {growth:.1%}: {rss['warm']} -> {rss['end']} bytes"


def test_a_graph_holds_about_two_gc_tracked_objects_per_op(monkeypatch):
    """A node and the tuple of its next functions: no Edge objects, no SavedTensor for a saved
    input (NOTE [Edges stored as two tuples], NOTE [A saved input stored as itself]), so that
    a long graph makes little work for the cyclic GC."""
    monkeypatch.setattr(hooks._saved_hooks_used, "entered", False)  # as in a fresh process
    monkeypatch.setattr(_inference_tensors, "made", False)
    ws = [ng.tensor(float(i), dtype=ng.float64, requires_grad=True) for i in range(10)]
    xs = [ng.tensor(float(i)) for i in range(10)]
    gc.collect()
    before = len(gc.get_objects())
    act = ws[0] * xs[0]
    for _ in range(50):  # 1,000 ops: a multiply saving both inputs, then an add
        for w, x in zip(ws, xs):
            act = act + w * x
    grown = len(gc.get_objects()) - before
    assert grown <= 2.2 * 1_000
    act.backward()
    # exact: a sum of 50 whole numbers
    assert ws[3].grad.item() == 50 * 3.0
