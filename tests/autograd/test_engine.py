"""Tests for ``nbgrad/autograd/engine.py``: execution order, graph structure, deep graphs,
diamonds, retain_graph, freeing saved values, ``grad(inputs=...)``, higher order, final
callbacks, listener events and recovery after a failed backward, checked against PyTorch.
"""

import gc
import weakref

import numpy as np
import pytest

import nbgrad as ng
from nbgrad.autograd.graph import GraphObserver, observe

torch = pytest.importorskip("torch")


# -- helpers ----------------------------------------------------------------------------------
def node_name(fn):
    """A node's name, with PyTorch's C++ namespace removed ("torch::autograd::AccumulateGrad"
    and "torch::autograd::CopySlices" are "AccumulateGrad" and "CopySlices" in nbgrad)."""
    return fn.name().replace("torch::autograd::", "")


def structure(fn):
    """``(name, ((child structure, input_nr), ...))`` for the graph below ``fn``."""
    if fn is None:
        return None
    return (node_name(fn), tuple((structure(f), nr) for f, nr in fn.next_functions))


def all_nodes(root):
    """Every node reachable from ``root`` (iteratively), AccumulateGrad nodes included."""
    seen, stack, out = set(), [root], []
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        out.append(fn)
        stack.extend(f for f, _ in fn.next_functions)
    return out


def record_order(root):
    """Register a prehook on every node below ``root``; return the list they append to."""
    order = []
    handles = []
    for fn in all_nodes(root):
        handles.append(fn.register_prehook(lambda grads, fn=fn: order.append(node_name(fn))))
    return order, handles


def leaf(lib, shape, seed=0, dtype=np.float32):
    data = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return lib.tensor(data, requires_grad=True)


def as_np(t):
    return None if t is None else np.asarray(t.detach())


def assert_close(a, b, rtol=1e-5, atol=1e-6):
    assert (a is None) == (b is None), (a, b)
    if a is not None:
        np.testing.assert_allclose(as_np(a), as_np(b), rtol=rtol, atol=atol)


# -- execution order --------------------------------------------------------------------------
def test_execution_order_matches_pytorch():
    orders = {}
    for lib in (torch, ng):
        x = leaf(lib, (3,), 0)
        w = leaf(lib, (3,), 1)
        out = (x.exp() * w.sin()).sum()
        order, _ = record_order(out.grad_fn)
        out.backward()
        orders[lib.__name__] = order
    assert orders["torch"] == [
        "SumBackward0",
        "MulBackward0",
        "SinBackward0",
        "AccumulateGrad",
        "ExpBackward0",
        "AccumulateGrad",
    ]
    assert orders["nbgrad"] == orders["torch"]


def test_execution_order_larger_graph_matches_pytorch():
    def build(lib):
        x = leaf(lib, (2, 3), 0)
        w = leaf(lib, (3, 4), 1)
        b = leaf(lib, (4,), 2)
        h = (x @ w + b).tanh()
        y = h * h.sigmoid() + x.sum(1, keepdim=True).exp()
        return y.mean()

    orders = {}
    for lib in (torch, ng):
        out = build(lib)
        order, _ = record_order(out.grad_fn)
        out.backward()
        orders[lib.__name__] = order
    assert orders["nbgrad"] == orders["torch"]


def test_sequence_nr_increases_and_accumulate_grad_is_max():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    a = x.exp()
    b = a.sin()
    assert b.grad_fn._sequence_nr() > a.grad_fn._sequence_nr()
    acc = a.grad_fn.next_functions[0][0]
    assert acc.name() == "AccumulateGrad"
    assert acc._sequence_nr() == 2**64 - 1
    assert acc.variable is x


# -- graph structure --------------------------------------------------------------------------
def _g_broadcast_add(lib):
    return leaf(lib, (2, 3)) + leaf(lib, (3,), 1)


def _g_mul_scalar(lib):
    return leaf(lib, (3,)) * 2.0


def _g_views(lib):
    x = leaf(lib, (2, 3))
    return x.view(3, 2).t().unsqueeze(0).transpose(0, 1).reshape(6).expand(2, 6)


def _g_reshape_kinds(lib):
    x = leaf(lib, (2, 3))
    return x.reshape(3, 2), x.t().reshape(3, 1, 2), x.t().reshape(6), x.t().contiguous()


def _g_indexing(lib):
    x = leaf(lib, (4, 3))
    return x[1], x[1:3, ::2], x[[0, 2]], x[x > 0], x[..., 1], x[:, None]


def _g_mm(lib):
    return leaf(lib, (2, 3)) @ leaf(lib, (3, 4), 1)


def _g_mv_dot(lib):
    return leaf(lib, (2, 3)) @ leaf(lib, (3,), 1), leaf(lib, (3,)) @ leaf(lib, (3,), 1)


def _g_vec_mat(lib):
    return leaf(lib, (3,)) @ leaf(lib, (3, 4), 1)


def _g_batched_matmul(lib):
    a3 = leaf(lib, (2, 2, 3))
    return (
        a3 @ leaf(lib, (2, 3, 4), 1),
        a3 @ leaf(lib, (3, 4), 2),
        a3 @ leaf(lib, (3,), 3),
        leaf(lib, (2, 3), 4) @ leaf(lib, (2, 3, 4), 5),
        leaf(lib, (5, 1, 2, 3), 6) @ leaf(lib, (2, 3, 4), 7),
        a3 @ lib.ones(3, 4),
        a3.detach() @ leaf(lib, (2, 3, 4), 8),
    )


def _g_cat_stack(lib):
    a, b = leaf(lib, (2, 3)), leaf(lib, (2, 3), 1)
    return lib.cat([a, b * 2], 1), lib.stack([a, b], 0)


def _g_inplace_on_clone(lib):
    x = leaf(lib, (3,))
    c = x.clone()
    c.mul_(2)
    c.add_(1)
    return c


def _g_setitem(lib):
    x = leaf(lib, (3, 2))
    c = x.clone()
    c[1] = leaf(lib, (2,), 1)
    d = x * 1
    d[[0, 2]] = leaf(lib, (2, 2), 2)
    return c, d


def _g_reductions(lib):
    x = leaf(lib, (2, 3))
    return (
        x.sum(),
        x.sum(1),
        x.mean(),
        x.mean(0, keepdim=True),
        x.max(),
        x.max(1)[0],
        x.amax(1),
        x.prod(),
        x.var(1),
        x.std(),
        x.logsumexp(1),
        x.softmax(1),
        x.log_softmax(0),
        x.norm(),
    )


def _g_powers(lib):
    x = leaf(lib, (3,)).abs() + 0.5
    y = leaf(lib, (3,), 1)
    return x**2, 2**x, x**y, 1 - x, 2 / x, -x, x / y, x - y


def _g_unary(lib):
    x = leaf(lib, (3,))
    return (
        x.exp(),
        x.abs().log(),
        x.tanh(),
        x.sigmoid(),
        x.relu(),
        x.abs().sqrt(),
        x.sin(),
        x.cos(),
        x.clamp(-0.5, 0.5),
    )


def _g_index_ops(lib):
    x = leaf(lib, (3, 4))
    idx = lib.tensor([[0, 1], [2, 3], [1, 1]])
    return (
        x.gather(1, idx),
        x.index_select(0, lib.tensor([0, 2])),
        x.masked_fill(x > 0, 0.0),
        lib.where(x > 0, x, x * 2),
        x.maximum(x * 2),
        x.split(2, 1)[1],
        x.chunk(3, 0)[2],
        x.permute(1, 0),
        x.to(lib.float64),
    )


GRAPHS = [
    _g_broadcast_add,
    _g_mul_scalar,
    _g_views,
    _g_reshape_kinds,
    _g_indexing,
    _g_mm,
    _g_mv_dot,
    _g_vec_mat,
    _g_batched_matmul,
    _g_cat_stack,
    _g_inplace_on_clone,
    _g_setitem,
    _g_reductions,
    _g_powers,
    _g_unary,
    _g_index_ops,
]


@pytest.mark.parametrize("build", GRAPHS, ids=lambda f: f.__name__[3:])
def test_graph_structure_matches_pytorch(build):
    t_out, n_out = build(torch), build(ng)
    if not isinstance(t_out, tuple):
        t_out, n_out = (t_out,), (n_out,)
    assert len(t_out) == len(n_out)
    for i, (t, n) in enumerate(zip(t_out, n_out)):
        assert structure(n.grad_fn) == structure(t.grad_fn), f"output {i}"
        np.testing.assert_allclose(as_np(n), as_np(t), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("build", GRAPHS, ids=lambda f: f.__name__[3:])
def test_gradients_of_structure_graphs_match_pytorch(build):
    grads = {}
    for lib in (torch, ng):
        # leaves are created inside build: collect them from the graph
        outs = build(lib)
        outs = outs if isinstance(outs, tuple) else (outs,)
        outs = [o for o in outs if o.requires_grad and o.is_floating_point()]
        total = sum((o.double() * (k + 1)).sum() for k, o in enumerate(outs))
        leaves = []
        for o in outs:
            for fn in all_nodes(o.grad_fn):
                if node_name(fn) == "AccumulateGrad" and all(fn.variable is not v for v in leaves):
                    leaves.append(fn.variable)
        gs = lib.autograd.grad(total, leaves)
        grads[lib.__name__] = sorted(
            (tuple(g.shape), float(g.double().sum()), float((g.double() ** 2).sum())) for g in gs
        )
    assert len(grads["nbgrad"]) == len(grads["torch"])
    for (sn, s1n, s2n), (st, s1t, s2t) in zip(grads["nbgrad"], grads["torch"]):
        assert sn == st
        assert s1n == pytest.approx(s1t, rel=1e-4, abs=1e-4)
        assert s2n == pytest.approx(s2t, rel=1e-4, abs=1e-4)


# -- deep graphs --------------------------------------------------------------------------------
def test_100000_node_chain_backward_without_recursion_error():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    assert y.grad_fn.name() == "MulBackward0"
    y.sum().backward()
    # exact: a product of ones
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])
    del y  # freeing the chain must not recurse either
    gc.collect()


def test_100000_node_chain_grad_with_inputs():
    x = ng.tensor(2.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y + 0.0
    (g,) = ng.autograd.grad(y, x)
    assert g.item() == 1.0


# -- reused non-leaf nodes (diamonds) -----------------------------------------------------------
def _diamond_simple(lib):
    a = leaf(lib, (3,), 0)
    b = a + a
    c = b * b
    return [a], c.sum()


def _diamond_nested(lib):
    x = leaf(lib, (2, 3), 1)
    y = x.exp()
    z = y * y.sin() + y
    w = z * y - z.tanh()
    return [x], w.sum()


def _diamond_two_leaves(lib):
    x = leaf(lib, (3,), 2)
    w = leaf(lib, (3,), 3)
    h = x * w
    out = (h * h + h.exp() * w + x).sum()
    return [x, w], out


def _diamond_views(lib):
    x = leaf(lib, (4,), 4)
    y = x * 2
    out = (y[:2] * y[2:] + y.view(2, 2).sum(0) * y[1:3]).sum()
    return [x], out


@pytest.mark.parametrize(
    "build", [_diamond_simple, _diamond_nested, _diamond_two_leaves, _diamond_views]
)
def test_diamonds_match_pytorch(build):
    results = {}
    for lib in (torch, ng):
        leaves, out = build(lib)
        out.backward()
        results[lib.__name__] = [as_np(v.grad) for v in leaves]
    for n, t in zip(results["nbgrad"], results["torch"]):
        np.testing.assert_allclose(n, t, rtol=1e-5, atol=1e-6)


def test_simple_diamond_value():
    a = ng.tensor([1.0, -2.0, 3.0], requires_grad=True)
    b = a + a
    c = b * b
    c.sum().backward()
    # c = 4 a^2 -> dc/da = 8 a
    np.testing.assert_allclose(a.grad.numpy(), [8.0, -16.0, 24.0])


# -- retain_graph -------------------------------------------------------------------------------
def test_two_backwards_with_retain_graph_accumulate_like_pytorch():
    results = {}
    for lib in (torch, ng):
        x = leaf(lib, (3,), 5)
        h = x.sigmoid()
        y = (h * x.exp()).sum()
        y.backward(retain_graph=True)
        first = as_np(x.grad).copy()
        y.backward(retain_graph=True)
        y.backward()
        results[lib.__name__] = (first, as_np(x.grad))
    np.testing.assert_allclose(results["nbgrad"][0], results["torch"][0], rtol=1e-5)
    np.testing.assert_allclose(results["nbgrad"][1], results["torch"][1], rtol=1e-5)
    np.testing.assert_allclose(results["nbgrad"][1], 3 * results["nbgrad"][0], rtol=1e-5)


def test_saved_tensor_is_released_after_backward():
    x = ng.tensor([0.5, 1.0, 2.0], requires_grad=True)
    h = x * 2  # an intermediate that SinBackward0 saves
    out = h.sin().sum()
    ref = weakref.ref(h)
    del h
    gc.collect()
    assert ref() is not None  # the graph holds it until backward
    out.backward()
    gc.collect()
    assert ref() is None
    assert out.grad_fn is not None  # the graph itself is still there
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward()


def test_saved_result_array_is_released_after_backward():
    x = ng.tensor([0.5, 1.0, 2.0], requires_grad=True)
    e = x.exp()  # ExpBackward0 saves its result
    out = e.sum()
    ref = weakref.ref(e._data)
    del e
    gc.collect()
    assert ref() is not None
    out.backward()
    gc.collect()
    assert ref() is None


def test_retain_graph_keeps_saved_tensors():
    x = ng.tensor([0.5, 1.0, 2.0], requires_grad=True)
    h = x * 2
    out = h.sin().sum()
    ref = weakref.ref(h)
    del h
    out.backward(retain_graph=True)
    gc.collect()
    assert ref() is not None
    out.backward()  # still possible
    np.testing.assert_allclose(x.grad.numpy(), 2 * 2 * np.cos(2 * np.array([0.5, 1.0, 2.0])), 1e-6)


def test_graph_freed_when_outputs_are_deleted():
    x = ng.tensor([0.5, 1.0], requires_grad=True)
    h = x * 3
    out = h.tanh().sum()
    ref_h = weakref.ref(h)
    ref_node = weakref.ref(out.grad_fn)
    del h, out
    gc.collect()
    assert ref_h() is None
    assert ref_node() is None


def test_second_backward_raises_like_pytorch():
    errors = {}
    for lib in (torch, ng):
        x = leaf(lib, (3,), 6)
        out = (x.exp() * x).sum()
        out.backward()
        with pytest.raises(RuntimeError) as info:
            out.backward()
        errors[lib.__name__] = info.value
        assert "backward through the graph a second time" in str(info.value)
        assert "retain_graph=True" in str(info.value)
    assert type(errors["nbgrad"]) is type(errors["torch"])


# -- grad(inputs=...) ----------------------------------------------------------------------------
def test_grad_runs_only_the_needed_nodes_like_pytorch():
    ran = {}
    values = {}
    for lib in (torch, ng):
        x = leaf(lib, (3,), 0)
        w = leaf(lib, (3,), 1)
        out = (x.exp() * w.sin()).sum()
        order, _ = record_order(out.grad_fn)
        (gx,) = lib.autograd.grad(out, [x])
        ran[lib.__name__] = order
        values[lib.__name__] = as_np(gx)
        assert x.grad is None and w.grad is None
    assert ran["torch"] == ["SumBackward0", "MulBackward0", "ExpBackward0"]
    assert ran["nbgrad"] == ran["torch"]
    np.testing.assert_allclose(values["nbgrad"], values["torch"], rtol=1e-6)


def test_backward_inputs_accumulates_only_into_inputs():
    for lib in (torch, ng):
        x = leaf(lib, (3,), 0)
        w = leaf(lib, (3,), 1)
        out = (x.exp() * w.sin()).sum()
        out.backward(inputs=[w])
        assert x.grad is None
        assert w.grad is not None


def test_grad_allow_unused_and_materialize_grads_like_pytorch():
    res = {}
    for lib in (torch, ng):
        x = leaf(lib, (3,), 0)
        unused = leaf(lib, (2,), 1)
        out = (x * x).sum()
        g1 = lib.autograd.grad(out, [x, unused], allow_unused=True, retain_graph=True)
        g2 = lib.autograd.grad(out, [x, unused], materialize_grads=True)
        res[lib.__name__] = (g1, g2)
    (n1, n2), (t1, t2) = res["nbgrad"], res["torch"]
    assert n1[1] is None and t1[1] is None
    assert_close(n1[0], t1[0])
    assert_close(n2[0], t2[0])
    assert_close(n2[1], t2[1])
    assert tuple(n2[1].shape) == (2,)
    assert not np.any(as_np(n2[1]))


def test_grad_unused_input_without_allow_unused_raises_like_pytorch():
    types = {}
    for lib in (torch, ng):
        x = leaf(lib, (3,), 0)
        unused = leaf(lib, (2,), 1)
        out = (x * x).sum()
        with pytest.raises(RuntimeError, match="appears to not have been used in the graph") as e:
            lib.autograd.grad(out, [x, unused])
        types[lib.__name__] = type(e.value)
    assert types["nbgrad"] is types["torch"]


def test_grad_of_non_leaf_input_like_pytorch():
    res = {}
    for lib in (torch, ng):
        x = leaf(lib, (3,), 0)
        h = x.exp()
        out = (h * h.sin()).sum()
        (g,) = lib.autograd.grad(out, h)
        res[lib.__name__] = as_np(g)
    np.testing.assert_allclose(res["nbgrad"], res["torch"], rtol=1e-5)


# -- higher order ---------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [lambda x: x**4, lambda x: x.tanh(), lambda x: x.sin() * x.exp()])
def test_third_order_derivatives_match_pytorch(fn):
    res = {}
    for lib in (torch, ng):
        x = lib.tensor([0.3, -0.7, 1.5], dtype=lib.float64, requires_grad=True)
        y = fn(x).sum()
        (g1,) = lib.autograd.grad(y, x, create_graph=True)
        (g2,) = lib.autograd.grad(g1.sum(), x, create_graph=True)
        (g3,) = lib.autograd.grad(g2.sum(), x)
        res[lib.__name__] = [as_np(g) for g in (g1, g2, g3)]
    for n, t in zip(res["nbgrad"], res["torch"]):
        np.testing.assert_allclose(n, t, rtol=1e-10, atol=1e-12)


def test_third_derivative_of_x4_value():
    x = ng.tensor(1.5, dtype=ng.float64, requires_grad=True)
    (g1,) = ng.autograd.grad(x**4, x, create_graph=True)
    (g2,) = ng.autograd.grad(g1, x, create_graph=True)
    (g3,) = ng.autograd.grad(g2, x)
    assert g3.item() == pytest.approx(24 * 1.5)
    assert g2.requires_grad and not g3.requires_grad


# -- queue_callback -------------------------------------------------------------------------------
def test_queue_callback_runs_after_the_pass_like_pytorch():
    events = {}
    for lib in (torch, ng):
        engine = lib.autograd.Variable._execution_engine
        log = []
        x = leaf(lib, (3,), 0)
        y = x.exp()
        out = (y * 2).sum()

        def hook(grad, log=log, engine=engine, x=x):
            engine.queue_callback(lambda: log.append(("callback", x.grad is not None)))
            log.append("hook")

        y.register_hook(hook)
        order, _ = record_order(out.grad_fn)
        out.backward()
        events[lib.__name__] = (log, order)
    assert events["nbgrad"][0] == ["hook", ("callback", True)]
    assert events["nbgrad"] == events["torch"]


def test_queue_callback_outside_backward_raises_like_pytorch():
    types = {}
    for lib in (torch, ng):
        with pytest.raises(RuntimeError, match="Final callbacks can only be installed") as e:
            lib.autograd.Variable._execution_engine.queue_callback(lambda: None)
        types[lib.__name__] = type(e.value)
    assert types["nbgrad"] is types["torch"]


def test_queue_callback_can_queue_another():
    engine = ng.autograd.Variable._execution_engine
    log = []
    x = ng.tensor([1.0], requires_grad=True)

    def second():
        log.append("second")

    def first():
        log.append("first")
        engine.queue_callback(second)

    x.register_hook(lambda g: engine.queue_callback(first))
    (x * 2).sum().backward()
    assert log == ["first", "second"]


# -- observer events (NOTE [One engine path]) ---------------------------------------------------
class EventLog(GraphObserver):
    """Each typed event as ``(name, {argument: value})``, in the order they came."""

    def __init__(self):
        self.events = []

    def _add(self, name, graph_task, **data):
        data["graph_task"] = graph_task
        self.events.append((name, data))

    def task_start(self, graph_task, root, dependencies):
        self._add("task_start", graph_task, root=root, dependencies=dependencies)

    def node_ready(self, graph_task, node, device):
        self._add("node_ready", graph_task, node=node, device=device)

    def node_start(self, graph_task, node, inputs):
        self._add("node_start", graph_task, node=node, inputs=inputs)

    def hook(self, graph_task, kind, node, handle, before, after):
        self._add(
            "hook", graph_task, kind=kind, node=node, handle=handle, before=before, after=after
        )

    def grad_accumulated(self, graph_task, node, variable, grad, before, after):
        self._add(
            "grad_accumulated",
            graph_task,
            node=node,
            variable=variable,
            grad=grad,
            before=before,
            after=after,
        )

    def node_end(self, graph_task, node, outputs):
        self._add("node_end", graph_task, node=node, outputs=outputs)

    def task_end(self, graph_task, error):
        self._add("task_end", graph_task, error=error)


@pytest.fixture
def listener():
    log = EventLog()
    with observe(log, forward=False):
        yield log.events


def test_observer_events_in_order(listener):
    x = ng.tensor([0.1, 0.2, 0.3], requires_grad=True)
    w = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = (x.exp() * w.sin()).sum()
    out.backward()
    names = [e for e, _ in listener]
    assert names[0] == "task_start"
    assert names[-1] == "task_end"
    assert names.count("task_start") == 1 and names.count("task_end") == 1
    assert listener[-1][1]["error"] is None
    start = listener[0][1]
    assert start["root"] is out.grad_fn
    assert start["dependencies"][out.grad_fn.next_functions[0][0]] == 1

    started = [d["node"] for e, d in listener if e == "node_start"]
    assert [node_name(n) for n in started] == [
        "SumBackward0",
        "MulBackward0",
        "SinBackward0",
        "AccumulateGrad",
        "ExpBackward0",
        "AccumulateGrad",
    ]
    # each node: ready, then start, then end, and the next node starts after the end
    for node in started:
        idx = {
            kind: [i for i, (e, d) in enumerate(listener) if e == kind and d["node"] is node]
            for kind in ("node_ready", "node_start", "node_end")
        }
        assert len(idx["node_ready"]) == 1
        assert len(idx["node_start"]) == 1
        assert len(idx["node_end"]) == 1
        assert idx["node_ready"][0] < idx["node_start"][0] < idx["node_end"][0]
    seq = [(e, d["node"]) for e, d in listener if e in ("node_start", "node_end")]
    for k in range(0, len(seq), 2):
        assert seq[k][0] == "node_start" and seq[k + 1][0] == "node_end"
        assert seq[k][1] is seq[k + 1][1]
    for _event, d in listener:
        assert d["graph_task"] is listener[0][1]["graph_task"]


def test_observer_sees_hooks_with_gradients(listener):
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: g * 2)
    y.sum().backward()
    hooks = [d for e, d in listener if e == "hook"]
    assert len(hooks) == 1
    assert hooks[0]["kind"] == "tensor"
    # whole-number gradients here and below: exact
    np.testing.assert_array_equal(hooks[0]["before"].numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(hooks[0]["after"].numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 6.0])


def test_observer_sees_accumulation_and_post_accumulate_grad_hooks(listener):
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    x.grad = ng.tensor([1.0, 1.0])

    def times_ten(t):
        t.grad = t.grad * 10

    x.register_post_accumulate_grad_hook(times_ten)
    (x * 3).sum().backward()
    kinds = [e for e, _ in listener]
    [acc] = [d for e, d in listener if e == "grad_accumulated"]
    assert acc["node"] is x._grad_accumulator and acc["variable"] is x
    # whole-number gradients here and below: exact
    np.testing.assert_array_equal(acc["grad"].numpy(), [3.0, 3.0])
    # .grad was added to in place: "before" is a copy taken first
    np.testing.assert_array_equal(acc["before"].numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(acc["after"].numpy(), [4.0, 4.0])
    [hook] = [d for e, d in listener if e == "hook"]
    assert hook["kind"] == "post_accumulate_grad" and hook["node"] is acc["node"]
    assert hook["handle"].fn is times_ten
    np.testing.assert_array_equal(hook["before"].numpy(), [4.0, 4.0])
    np.testing.assert_array_equal(hook["after"].numpy(), [40.0, 40.0])
    # inside the AccumulateGrad's step: accumulation, then its hooks (NOTE [Hook order])
    start = next(
        i for i, (e, d) in enumerate(listener) if e == "node_start" and d["node"] is acc["node"]
    )
    end = next(
        i for i, (e, d) in enumerate(listener) if e == "node_end" and d["node"] is acc["node"]
    )
    assert start < kinds.index("grad_accumulated") < kinds.index("hook") < end
    np.testing.assert_array_equal(x.grad.numpy(), [40.0, 40.0])


def test_observer_task_end_reports_error(listener):
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3

    def boom(grad):
        raise ValueError("boom")

    y.register_hook(boom)
    with pytest.raises(ValueError, match="boom"):
        y.sum().backward()
    assert listener[-1][0] == "task_end"
    assert isinstance(listener[-1][1]["error"], ValueError)


# -- failures -------------------------------------------------------------------------------------
def test_exception_in_hook_keeps_its_type_and_engine_stays_usable():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()

    class Boom(Exception):
        pass

    def hook(grad):
        raise Boom("in a hook")

    h = y.register_hook(hook)
    with pytest.raises(Boom, match="in a hook"):
        y.sum().backward(retain_graph=True)
    h.remove()
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed"):
        ng.autograd.Variable._execution_engine.queue_callback(lambda: None)
    # a fresh backward works, and so does the one that failed (its graph was retained)
    z = ng.tensor([3.0], requires_grad=True)
    (z * z).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), [6.0])
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)


def test_exception_in_node_keeps_engine_usable():
    class Bad(ng.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            raise ZeroDivisionError("bad backward")

    x = ng.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ZeroDivisionError, match="bad backward"):
        Bad.apply(x).sum().backward()
    y = ng.tensor([1.0, 2.0], requires_grad=True)
    (y * y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [2.0, 4.0])


def test_exception_in_prehook_like_pytorch():
    types = {}
    for lib in (torch, ng):
        x = leaf(lib, (2,), 0)
        out = x.exp().sum()

        def prehook(grads):
            raise KeyError("prehook")

        out.grad_fn.register_prehook(prehook)
        with pytest.raises(KeyError) as e:
            out.backward()
        types[lib.__name__] = type(e.value)
        # the next backward works
        y = leaf(lib, (2,), 1)
        (y * 2).sum().backward()
        np.testing.assert_allclose(as_np(y.grad), [2.0, 2.0])
    assert types["nbgrad"] is types["torch"]


def test_reentrant_backward_inside_a_hook_like_pytorch():
    res = {}
    for lib in (torch, ng):
        x = leaf(lib, (2,), 0)
        inner_x = lib.tensor([3.0], requires_grad=True)
        seen = []

        def hook(grad, lib=lib, inner_x=inner_x, seen=seen):
            seen.append(lib.is_grad_enabled())
            with lib.enable_grad():  # backward runs its hooks in no-grad mode
                (inner_x * inner_x).sum().backward()
            seen.append(inner_x.grad.item())

        y = x * 2
        y.register_hook(hook)
        y.sum().backward()
        res[lib.__name__] = (seen, as_np(x.grad))
    assert res["nbgrad"][0] == res["torch"][0] == [False, 6.0]
    np.testing.assert_allclose(res["nbgrad"][1], res["torch"][1])


def test_multiple_roots_use_graph_root():
    res = {}
    for lib in (torch, ng):
        x = leaf(lib, (3,), 0)
        a = x.exp().sum()
        b = (x * x).sum()
        lib.autograd.backward([a, b])
        res[lib.__name__] = as_np(x.grad)
    np.testing.assert_allclose(res["nbgrad"], res["torch"], rtol=1e-6)


# -- NOTE [Accumulate in place] ----------------------------------------------------------------
def test_input_buffer_does_not_sum_into_a_gradient_held_elsewhere():
    """The first gradient to reach a buffer is kept by a post hook: a second one arriving
    later makes a new sum, and the kept tensor stays as the hook saw it."""
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    a, b = x * 2.0, x * 3.0
    kept = []
    for node in (a.grad_fn, b.grad_fn):
        node.register_hook(lambda gi, go: kept.append((gi[0], gi[0].numpy().copy())))
    (a + b).sum().backward()
    assert len(kept) == 2
    for grad, seen in kept:
        # the tensor the hook saw, left as it was (and whole numbers below: exact)
        np.testing.assert_array_equal(grad.numpy(), seen)
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 5.0])


def test_input_buffer_sums_match_pytorch_when_a_gradient_fans_out():
    """A gradient routed to two nodes at once (``AddBackward0`` passes one tensor to both) and
    then summed with another in one of them: the other node, and the leaves, see PyTorch's
    values. Also a leaf whose ``.grad`` is a buffer's tensor, summed into by a second pass."""

    def run(lib):
        x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
        w = lib.tensor([1.5, 0.25, -2.0], dtype=lib.float64, requires_grad=True)
        a = x.exp()
        s = a + w.sin()  # one gradient tensor to ExpBackward0 and to SinBackward0
        out = (s * s).sum() + (a * 3.0).sum() + (w * a).sum()
        out.backward(retain_graph=True)
        first = (x.grad.clone(), w.grad.clone())
        out.backward()
        return [t.detach().numpy() for t in (*first, x.grad, w.grad)]

    for got, want in zip(run(ng), run(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_input_buffer_sum_under_create_graph_is_recorded():
    x = ng.tensor([1.0, 2.0], dtype=ng.float64, requires_grad=True)
    y = x * x
    (g,) = ng.autograd.grad((y * 2.0).sum() + (y * 3.0).sum(), x, create_graph=True)
    (gg,) = ng.autograd.grad(g.sum(), x)
    # whole numbers: exact
    np.testing.assert_array_equal(g.detach().numpy(), [10.0, 20.0])
    np.testing.assert_array_equal(gg.numpy(), [10.0, 10.0])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_0d_leaf_used_many_times_sums_as_pytorch(dtype):
    """See NOTE [A 0-d sum on floats]: a 0-d leaf reached by many gradients (a micrograd-style
    weight) gets them summed in the buffer, in place, to PyTorch's value and dtype."""
    values = np.random.default_rng(3).uniform(-2, 2, 40)

    def run(lib):
        w = lib.tensor(0.7, dtype=getattr(lib, dtype), requires_grad=True)
        out = w * float(values[0])
        for v in values[1:]:
            out = out + (w * float(v)).tanh()
        out.backward()
        return w.grad

    got, want = run(ng), run(torch)
    assert str(got.dtype) == str(want.dtype).replace("torch", "nbgrad")
    np.testing.assert_allclose(
        got.numpy(), want.numpy(), rtol=1e-12 if dtype == "float64" else 1e-5
    )
