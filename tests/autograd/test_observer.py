"""One engine path, observed or not (NOTE [One engine path] in nbgrad/_graph/observer.py).

The same graphs run with and without a ``GraphObserver``: the engine must run the same nodes in
the same order, on the same threads, and give bit-identical results; and what the observer is
told must be what ran. The graphs: a few hundred generated programs (tests/test_random_graphs.py:
plain backward, several roots, second order), and hand-made ones for each engine path (the
single-edge and chain shortcuts, ``grad(inputs=)``, hooks of every kind, reentrant backward,
a second device with its worker thread, an error in a node).
"""

from __future__ import annotations

import heapq
import random
import threading

import numpy as np
import pytest

import nbgrad as ng
from nbgrad import backend
from nbgrad.autograd import engine as engine_mod
from nbgrad.autograd.engine import Engine
from nbgrad.autograd.graph import GraphObserver, observe
from nbgrad.derivatives import OPS
from tests.test_random_graphs import SEED, build

DEV = "obsdev"


class Log(GraphObserver):
    """Every backward event, as ``(event, node name or None)``, and each forward op's name."""

    def __init__(self):
        self.events = []
        self.ops = []
        self.lock = threading.Lock()

    def _add(self, event, node=None):
        with self.lock:
            self.events.append((event, None if node is None else node.name()))

    def forward(self, op, args, attrs, result, elapsed):
        self.ops.append(op.name)

    def task_start(self, graph_task, root, dependencies):
        self._add("task_start", root)

    def node_ready(self, graph_task, node, device):
        self._add("node_ready", node)

    def node_start(self, graph_task, node, inputs):
        self._add("node_start", node)

    def hook(self, graph_task, kind, node, handle, before, after):
        self._add(f"hook:{kind}", node)

    def grad_accumulated(self, graph_task, node, variable, grad, before, after):
        self._add("grad_accumulated", node)

    def node_end(self, graph_task, node, outputs):
        self._add("node_end", node)

    def task_end(self, graph_task, error):
        self._add("task_end")


@pytest.fixture
def evaluated(monkeypatch):
    """The nodes the engine runs (``Engine.evaluate_function``, or a row node's arrays path),
    in order, with their thread, and each use of the CPU ready queue (NOTE [Chains skip the
    queue] does not use it): read from outside the engine, the same way whether an observer is
    installed."""
    calls = []
    original = Engine.evaluate_function

    def evaluate(self, graph_task, node, inputs):
        calls.append((node.name(), threading.current_thread().name))
        return original(self, graph_task, node, inputs)

    # See NOTE [A plain pass]: ``_evaluate_plain`` runs a row node by calling its ``_apply_arrays``
    # with ``release`` (``evaluate_function`` calls it without), and hands any other node to
    # ``evaluate_function``
    def plain(apply_arrays):
        def run(self, grads, *release):
            if release:
                calls.append((self.name(), threading.current_thread().name))
            return apply_arrays(self, grads, *release)

        return run

    for cls in {info.node_class for info in OPS.values()} - {None}:
        if "_apply_arrays" in cls.__dict__:
            monkeypatch.setattr(cls, "_apply_arrays", plain(cls._apply_arrays))

    def push(heap, entry):  # the CPU ready queue: a node that did not take a shortcut
        calls.append(("queued", entry[2].name()))  # NOTE [CPU queue entries]
        return heapq.heappush(heap, entry)

    monkeypatch.setattr(Engine, "evaluate_function", evaluate)
    monkeypatch.setattr(engine_mod, "heappush", push)
    return calls


def _values(result):
    """Every array a run produced, as NumPy (None kept), in a flat list."""
    out = []
    for v in result:
        if isinstance(v, (list, tuple)):
            out.extend(_values(v))
        elif isinstance(v, ng.Tensor):
            out.append(v.detach().cpu().numpy())
        else:
            out.append(v)
    return out


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if x is None or y is None:
            assert x is None and y is None
        else:
            # bit for bit (nan == nan here): the same program, watched or not, runs the same
            # kernels on the same values
            np.testing.assert_array_equal(x, y)


def run_both(make, evaluated):
    """``make()`` builds a graph, runs backward and returns what it computed; run it without
    and with an observer and check that the engine did the same thing."""
    evaluated.clear()
    plain = _values(make())
    plain_order = list(evaluated)
    evaluated.clear()
    log = Log()
    with observe(log):
        watched = _values(make())
    watched_order = list(evaluated)
    assert watched_order == plain_order
    _same(watched, plain)
    return log, plain_order


def _ran(order):
    return [name for name, _ in order if name != "queued"]


def _started(log):
    return [n for e, n in log.events if e == "node_start"]


# -- generated programs ----------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["sum", "roots", "grad2"])
def test_generated_programs_run_the_same_observed(mode, evaluated):
    rng = random.Random(f"{SEED}-{mode}")
    for _ in range(60):
        program = build(rng.randint, mode)

        def make(program=program):
            r = program.run(ng)
            return [r["outs"], r["grads"], r["retained"], r["grads2"]]

        log, order = run_both(make, evaluated)
        # the observer was told of the nodes that ran, in that order (``grad(inputs=)`` also
        # evaluates nodes it does not need, for their tensor hooks: those do not start)
        evaluated_names = iter(_ran(order))
        assert all(name in evaluated_names for name in _started(log))
        assert log.events.count(("task_start", None)) <= log.events.count(("task_end", None))


# -- each path of the engine -------------------------------------------------------------------
def test_a_chain_takes_the_shortcut_and_reports_every_node_ready(evaluated):
    def make():
        x = ng.tensor([0.1, 0.2, 0.3], dtype=ng.float64, requires_grad=True)
        y = x
        for _ in range(50):
            y = (y * 1.01 + 0.1).tanh()
        y.sum().backward()
        return [x.grad]

    log, order = run_both(make, evaluated)
    assert ("queued", "TanhBackward0") not in order  # the chain took the shortcuts ...
    assert _started(log) == _ran(order)  # ... observed too
    for name in set(_started(log)):
        assert sum(1 for e, n in log.events if e == "node_ready" and n == name) == sum(
            1 for e, n in log.events if e == "node_start" and n == name
        ), name
    # each node: ready before it starts, and nothing else starts between its start and end
    events = [e for e in log.events if e[0] in ("node_start", "node_end")]
    assert all(
        a[0] == "node_start" and b == ("node_end", a[1]) for a, b in zip(*[iter(events)] * 2)
    )


def test_diamonds_multi_output_and_several_roots(evaluated):
    def make():
        x = ng.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ng.float64, requires_grad=True)
        w = ng.tensor([0.5, -0.5], dtype=ng.float64, requires_grad=True)
        a, b = (x * w).unbind(0)
        c = (a.exp() + b.sin()) * a
        d = x.split(1, dim=1)[1].sum() * c.sum()
        ng.autograd.backward([c.sum(), d], [ng.tensor(2.0, dtype=ng.float64), None])
        return [x.grad, w.grad]

    run_both(make, evaluated)


def test_grad_with_inputs_and_unneeded_nodes(evaluated):
    def make():
        x = ng.tensor([0.3, 0.4], dtype=ng.float64, requires_grad=True)
        y = ng.tensor([1.5, 2.5], dtype=ng.float64, requires_grad=True)
        h = (x * y).tanh()
        h.register_hook(lambda g: g * 3)
        out = (h * y).sum() + x.exp().sum()
        (gh,) = ng.autograd.grad(out, [h], retain_graph=True)
        gx, gy = ng.autograd.grad(out, [x, y], create_graph=True)
        (ggx,) = ng.autograd.grad(gx.sum(), [x])
        return [gh, gx, gy, ggx, x.grad, y.grad]

    run_both(make, evaluated)


def test_every_hook_kind_and_retain_grad(evaluated):
    def make():
        x = ng.tensor([1.0, -2.0, 3.0], dtype=ng.float64, requires_grad=True)
        x.grad = ng.ones(3, dtype=ng.float64)
        y = x * 2
        y.retain_grad()
        y.register_hook(lambda g: g + 1)
        z = y.sin()
        z.grad_fn.register_prehook(lambda go: (go[0] * 2,))
        z.grad_fn.register_hook(lambda gi, go: (gi[0] - 1,))

        def halve(t):
            t.grad = t.grad / 2

        x.register_post_accumulate_grad_hook(halve)
        z.sum().backward()
        return [x.grad, y.grad]

    log, _ = run_both(make, evaluated)
    # See NOTE [Hook order]: a node's tensor hooks, pre hooks, the node, its hooks; a leaf's
    # accumulation, then its post-accumulate-grad hooks
    assert [(e, n) for e, n in log.events if e.startswith("hook:") or e == "grad_accumulated"] == [
        ("hook:prehook", "SinBackward0"),
        ("hook:posthook", "SinBackward0"),
        ("hook:tensor", "MulBackward0"),
        ("grad_accumulated", "AccumulateGrad"),
        ("hook:post_accumulate_grad", "AccumulateGrad"),
    ]


def test_reentrant_backward_inside_a_node(evaluated):
    class Inner(ng.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with ng.enable_grad():
                t = x.detach().requires_grad_()
                (gt,) = ng.autograd.grad((t.tanh() ** 2).sum(), [t])
            return g * gt

    def make():
        x = ng.tensor([0.2, 0.4, 0.6], dtype=ng.float64, requires_grad=True)
        (Inner.apply(x) * x).sum().backward()
        return [x.grad]

    log, _ = run_both(make, evaluated)
    assert sum(1 for e, _ in log.events if e == "task_start") == 2
    assert sum(1 for e, _ in log.events if e == "task_end") == 2


@pytest.fixture
def device():
    backend.register_device_type(DEV, count=1, strict=True)
    yield f"{DEV}:0"
    backend.unregister_device_type(DEV)


def test_a_second_device_runs_the_same_nodes_on_the_same_threads(device, evaluated):
    def make():
        x = ng.tensor([0.1, 0.2, 0.3], dtype=ng.float64, requires_grad=True)
        y = x.to(device)
        for _ in range(5):
            y = (y * 1.5).exp().log()
        h = y.cpu().sin()
        out = (h * x).sum() + y.sum().cpu()
        out.backward()
        return [x.grad]

    log, order = run_both(make, evaluated)
    threads = {t for name, t in order if name != "queued"}
    assert threads == {threading.current_thread().name, f"nbgrad-worker-{DEV}:0"}
    assert sorted(_started(log)) == sorted(_ran(order))


def test_an_error_in_a_node_fails_the_same_way(evaluated):
    class Boom(ng.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom in backward")

    def make():
        x = ng.tensor([1.0, 2.0], requires_grad=True)
        with pytest.raises(ValueError, match="boom in backward"):
            (Boom.apply(x * 2) * 3).sum().backward()
        return [x.grad]

    log, _ = run_both(make, evaluated)
    assert log.events[-1] == ("task_end", None)


# -- installing and removing -------------------------------------------------------------------
def test_observers_are_combined_and_removed():
    a, b = Log(), Log()
    x = ng.ones(2, requires_grad=True)
    with observe(a):
        with observe(b, forward=False):
            (x * 2).mean().backward()  # (mean's formula runs Tensor ops: expand, div)
        (x * 3).sum()
        seen = list(a.ops)
    (x * 4).mean().backward()
    # forward calls, and the ops the backward formulas run, reach ``a`` only while installed
    assert seen[:2] == ["mul", "mean"] and seen[-2:] == ["mul", "sum"] and len(seen) > 4
    assert a.ops == seen and b.ops == []
    assert _started(b) == _started(a) == ["MeanBackward0", "MulBackward0", "AccumulateGrad"]


def test_an_observer_of_starts_and_ends_leaves_the_pass_unwatched():
    """``node_events()`` False (the recorder's counted steps): the pass's start and end only,
    and the pass runs as an unwatched one, with the same gradients."""

    class Ends(Log):
        def node_events(self):
            return False

    def grads():
        ng.manual_seed(0)
        w = ng.randn(3, 4, requires_grad=True)
        ((w @ ng.randn(4, 2)).tanh() * 2).sum().backward()
        return w.grad.numpy()

    plain, ends, both = grads(), Ends(), Log()
    with observe(ends):
        seen = grads()
        with observe(both):
            grads()
    np.testing.assert_array_equal(seen, plain)
    assert ends.events[:2] == [("task_start", "SumBackward0"), ("task_end", None)]
    assert ends.events[2:] == both.events and len(both.events) > 10  # another wants nodes


def test_observe_refuses_what_is_not_an_observer():
    with pytest.raises(TypeError, match="GraphObserver"):
        observe(lambda event, data: None)
