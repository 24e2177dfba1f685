"""Activation checkpointing (nbgrad/utils/checkpoint.py) against PyTorch's
``torch.utils.checkpoint``: values, gradients, what is recomputed and in which order, hooks,
errors and warnings. Each scenario runs on nbgrad and on torch and the two records are
compared."""

from __future__ import annotations

import gc
import re
import threading
import warnings
import weakref

import numpy as np
import pytest
import torch
import torch.utils.checkpoint

import nbgrad as ng
import nbgrad.utils.checkpoint
from nbgrad import backend
from nbgrad.autograd.graph import GraphObserver, observe

LIBS = pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])
REENTRANT = pytest.mark.parametrize("use_reentrant", [True, False])

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 3))
W1 = RNG.standard_normal((3, 5))
W2 = RNG.standard_normal((5, 2))


def _np(t):
    return None if t is None else np.asarray(t.detach())


def _leaves(lib):
    return [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in (X, W1, W2)]


def both(scenario, **kwargs):
    """``scenario(lib, **kwargs)`` on nbgrad and on torch; asserts the two records match and
    returns nbgrad's."""
    mine, theirs = scenario(ng, **kwargs), scenario(torch, **kwargs)
    _assert_same(mine, theirs)
    return mine


def _assert_same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        double = np.asarray(a).dtype == np.float64
        np.testing.assert_allclose(a, b, rtol=1e-10 if double else 1e-5, atol=1e-12)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    else:
        assert a == b


# -- values and gradients ----------------------------------------------------------------------
def _mlp(x, w1, w2):
    return (x @ w1).tanh() @ w2


@REENTRANT
def test_values_and_gradients_match_torch_and_the_uncheckpointed_graph(use_reentrant):
    def run(lib, checkpointed):
        x, w1, w2 = _leaves(lib)
        if checkpointed:
            out = lib.utils.checkpoint.checkpoint(_mlp, x, w1, w2, use_reentrant=use_reentrant)
        else:
            out = _mlp(x, w1, w2)
        (out.sin() * 3).sum().backward()
        return [_np(out), _np(x.grad), _np(w1.grad), _np(w2.grad)]

    plain = both(run, checkpointed=False)
    _assert_same(both(run, checkpointed=True), plain)


def test_non_reentrant_works_with_grad_and_kwargs_and_nested_structures():
    def fn(d, scale=None):
        return {"y": d["x"].exp() * scale, "n": 3}

    def run(lib):
        x, w1, _ = _leaves(lib)
        out = lib.utils.checkpoint.checkpoint(fn, {"x": x}, scale=w1[0, 0], use_reentrant=False)
        gx, gs = lib.autograd.grad(out["y"].sum(), (x, w1))
        return [out["n"], _np(out["y"]), _np(gx), _np(gs)]

    both(run)


@REENTRANT
def test_checkpoint_sequential_matches_torch(use_reentrant):
    def run(lib):
        x, w1, w2 = _leaves(lib)
        layers = [lambda t: t @ w1, lib.tanh, lambda t: t @ w2, lib.sigmoid, lib.exp]
        out = lib.utils.checkpoint.checkpoint_sequential(layers, 2, x, use_reentrant=use_reentrant)
        out.sum().backward()
        return [_np(out), _np(x.grad), _np(w1.grad), _np(w2.grad)]

    both(run)


def test_checkpoint_sequential_takes_a_sequential_module():
    ng.manual_seed(0)
    model = ng.nn.Sequential(ng.nn.Linear(3, 4), ng.nn.Tanh(), ng.nn.Linear(4, 2))
    x = ng.tensor(X, dtype=ng.float32)
    model(x).sum().backward()
    expected = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    ng.utils.checkpoint.checkpoint_sequential(model, 2, x, use_reentrant=False).sum().backward()
    for p, g in zip(model.parameters(), expected):
        np.testing.assert_allclose(_np(p.grad), _np(g), rtol=1e-6)


# -- what is recomputed, and when ---------------------------------------------------------------
def _logged(log):
    """x.sin().cos().clone(), logging each step: sin saves x, cos saves sin's result, clone
    saves nothing."""

    def fn(x):
        log.append("sin")
        y = x.sin()
        log.append("cos")
        z = y.cos()
        log.append("clone")
        out = z.clone()
        log.append("end")
        return out

    return fn


@pytest.mark.parametrize("use_reentrant, early_stop", [(True, True), (False, True), (False, False)])
def test_recompute_order_and_early_stop_match_torch(use_reentrant, early_stop):
    def run(lib):
        log = []
        x = lib.tensor([0.5, 1.0], dtype=lib.float64, requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(
            _logged(log), x, use_reentrant=use_reentrant, **({} if use_reentrant else
                                                              {"early_stop": early_stop})
        )  # fmt: skip
        log.append("| backward")
        out.sum().backward()
        log.append("| second forward and backward")
        lib.utils.checkpoint.checkpoint(
            _logged(log), x, use_reentrant=use_reentrant
        ).sum().backward()
        return [log, _np(x.grad)]

    log, _ = both(run)
    recompute = log[log.index("| backward") + 1 : log.index("| second forward and backward")]
    if use_reentrant or not early_stop:
        assert recompute == ["sin", "cos", "clone", "end"]
    else:  # stops in cos, once both saved tensors are back
        assert recompute == ["sin", "cos"]


def test_set_checkpoint_early_stop_is_read_in_forward():
    def run(lib):
        log = []
        x = lib.tensor(1.0, requires_grad=True)
        with lib.utils.checkpoint.set_checkpoint_early_stop(False):
            out = lib.utils.checkpoint.checkpoint(_logged(log), x, use_reentrant=False)
        out.backward()  # outside the block: the checkpoint remembers
        return log

    assert both(run) == ["sin", "cos", "clone", "end"] * 2


def test_recomputation_happens_once_per_backward_and_unpack_outside_backward_recomputes():
    def run(lib):
        count = [0]

        def fn(a):
            count[0] += 1
            return (a * a).exp()

        a = lib.tensor([0.1, 0.2], requires_grad=True)
        d = lib.utils.checkpoint.checkpoint(fn, a, use_reentrant=False)
        counts = [count[0]]
        _ = d.grad_fn._saved_result  # outside backward: a recomputation of its own
        counts.append(count[0])
        d.sum().backward(retain_graph=True)
        counts.append(count[0])
        d.sum().backward()
        counts.append(count[0])
        return counts

    assert both(run) == [1, 2, 3, 4]


@pytest.mark.parametrize("grouped", [True, False])
def test_graph_exec_group_recomputes_once_for_two_backward_calls(grouped):
    def run(lib):
        count = [0]

        def fn(x):
            count[0] += 1
            y = x.sin().cos()
            return y, y.sin().cos()

        x = lib.tensor([0.3, 0.4], requires_grad=True)
        y, z = lib.utils.checkpoint.checkpoint(fn, x, use_reentrant=False)
        group = lib.utils.checkpoint.GraphExecGroup() if grouped else None
        with group if grouped else warnings.catch_warnings():
            (gy,) = lib.autograd.grad(z, (y,), grad_outputs=(lib.ones(2),))
            (gx,) = lib.autograd.grad(y, (x,), grad_outputs=(gy,))
        return [count[0], _np(gx)]

    assert both(run)[0] == (2 if grouped else 3)


# -- hooks --------------------------------------------------------------------------------------
@REENTRANT
def test_hook_order_with_recomputation_matches_torch(use_reentrant):
    def run(lib):
        log = []

        def fn(x, w):
            log.append("forward")
            y = x * w
            if y.requires_grad:  # (reentrant: not in the no-grad forward, only in recompute)
                y.register_hook(lambda g: log.append("inner tensor hook"))
            return y.exp()

        x, w, _ = (t[:1, :1].detach().requires_grad_() for t in _leaves(lib))
        x.register_hook(lambda g: log.append("x hook"))
        w.register_post_accumulate_grad_hook(lambda p: log.append("w post-accumulate"))
        out = lib.utils.checkpoint.checkpoint(fn, x, w, use_reentrant=use_reentrant)
        out.register_hook(lambda g: log.append("out hook"))
        out.grad_fn.register_prehook(lambda g: log.append("checkpointed node prehook"))
        out.grad_fn.register_hook(lambda gi, go: log.append("checkpointed node hook"))
        (out * 2).sum().backward()
        return [log, _np(x.grad), _np(w.grad)]

    both(run)


def test_a_hook_on_a_node_of_the_forward_graph_fires_once():
    def run(lib):
        count = [0]
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        w.register_hook(lambda g: count.__setitem__(0, count[0] + 1))
        h = w * lib.tensor([3.0, 4.0], requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(lambda t: (w * t).sin(), h, use_reentrant=False)
        out.grad_fn.next_functions[0][0].register_hook(lambda *a: count.append("node"))
        out.sum().backward()
        return count

    assert both(run) == [1, "node"]


# -- the random state ---------------------------------------------------------------------------
@REENTRANT
def test_dropout_is_recomputed_with_the_forward_random_state(use_reentrant):
    def grads(checkpointed, preserve=True):
        ng.manual_seed(7)
        x = ng.tensor(X, dtype=ng.float64, requires_grad=True)

        def fn(t):
            return ng.nn.functional.dropout(t.exp(), p=0.5, training=True)

        if checkpointed:
            out = ng.utils.checkpoint.checkpoint(
                fn, x, use_reentrant=use_reentrant, preserve_rng_state=preserve
            )
        else:
            out = fn(x)
        ng.rand(3)  # draws between forward and backward
        before_backward = ng.get_rng_state()
        out.sum().backward()
        if preserve:  # the recomputation drew from a fork: the state is as it was before
            assert ng.equal(ng.get_rng_state(), before_backward)
        return _np(x.grad)

    expected = grads(checkpointed=False)
    np.testing.assert_array_equal(grads(checkpointed=True), expected)
    different_mask = grads(checkpointed=True, preserve=False)
    assert not np.array_equal(different_mask, expected)


# -- errors and warnings ------------------------------------------------------------------------
def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type and message are compared
        return type(e).__name__, str(e)
    return None


def test_reentrant_refuses_grad_and_inputs_and_resets_after_the_error():
    def run(lib):
        a = lib.tensor([[0.1, 0.2]], requires_grad=True)

        def with_grad():
            b = lib.utils.checkpoint.checkpoint(lib.exp, a, use_reentrant=True).sum()
            lib.autograd.grad(b, (a,))

        def with_inputs():
            b = lib.utils.checkpoint.checkpoint(lib.exp, a, use_reentrant=True).sum()
            b.backward(inputs=(a,))

        errors = [_error(with_grad), _error(with_inputs)]
        lib.utils.checkpoint.checkpoint(lib.exp, a, use_reentrant=True).sum().backward()
        return [errors, _np(a.grad)]

    (errors, _) = both(run)
    assert errors[0][0] == "RuntimeError"
    assert "torch.utils.checkpoint is incompatible with .grad()" in errors[0][1]


def test_argument_errors_match_torch():
    def run(lib):
        cp = lib.utils.checkpoint
        a = lib.tensor([1.0], requires_grad=True)
        return [
            _error(lambda: cp.checkpoint(lib.exp, a, use_reentrant=True, blah=1)),
            _error(lambda: cp.checkpoint(lib.exp, a, use_reentrant=True, debug=True)),
            _error(
                lambda: cp.checkpoint(lib.exp, a, use_reentrant=True, context_fn=lambda: (1, 2))
            ),
            _error(lambda: cp.checkpoint(lib.exp, a, use_reentrant=False, determinism_check="x")),
            _error(lambda: cp.checkpoint_sequential([lib.exp], 1, a, use_reentrant=False, q=2)),
        ]

    errors = both(run)
    assert [e[0] for e in errors] == ["ValueError"] * 5


@REENTRANT
def test_use_reentrant_not_passed_warns_and_means_true(use_reentrant):
    def run(lib):
        a = lib.tensor([1.0], requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.utils.checkpoint.checkpoint(lib.exp, a, use_reentrant=use_reentrant)
            lib.utils.checkpoint.checkpoint_sequential([lib.exp], 1, a, use_reentrant=False)
            explicit = [str(w.message) for w in caught]
            out = lib.utils.checkpoint.checkpoint(lib.exp, a)
            lib.utils.checkpoint.checkpoint_sequential([lib.exp, lib.exp], 2, a)
        implicit = [str(w.message) for w in caught[len(explicit) :]]
        return [explicit, implicit, out.grad_fn.name()]

    explicit, implicit, name = both(run)
    assert explicit == [] and len(implicit) == 2
    assert name == "CheckpointFunctionBackward"


def test_reentrant_without_grad_warns_and_an_output_without_grad_raises():
    def run(lib):
        cp = lib.utils.checkpoint
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cp.checkpoint(lib.exp, lib.ones(2), use_reentrant=True)
        messages = [str(w.message) for w in caught]
        a = lib.tensor([1.0, 2.0], requires_grad=True)

        def detached(t):
            with lib.no_grad():
                return t * 2

        out = cp.checkpoint(detached, a, use_reentrant=True) + a
        return [messages, _error(lambda: out.sum().backward())]

    messages, error = both(run)
    assert messages == ["None of the inputs have requires_grad=True. Gradients will be None"]
    assert error == (
        "RuntimeError",
        "none of output has requires_grad=True, this checkpoint() is not necessary",
    )


def _non_deterministic(first, later):
    calls = [0]

    def fn(x):
        calls[0] += 1
        return first(x) if calls[0] == 1 else later(x)

    return fn


def _strip_tip(message):
    return message.split("\n\nTip:")[0].split("\nTip:")[0]


@pytest.mark.parametrize("case", ["fewer", "more", "metadata"])
def test_determinism_check_errors_match_torch(case):
    def run(lib):
        def three(x):
            return x.sin().exp().sin()

        def two(x):
            return x.sin().exp()

        def two_alt(x):
            return x.sin() * lib.tensor([1.0, 2.0])

        first, later = {"fewer": (three, two), "more": (two, three), "metadata": (two, two_alt)}[
            case
        ]
        a = lib.tensor([0.5], requires_grad=True)
        with lib.utils.checkpoint.set_checkpoint_early_stop(case != "more"):
            out = lib.utils.checkpoint.checkpoint(
                _non_deterministic(first, later), a, use_reentrant=False
            )
        name, message = _error(lambda: out.sum().backward())
        # the metadata printed is each library's own (nbgrad.float32, torch.float32)
        message = re.sub(r"(nbgrad|torch)\.", "", message)
        return [name, _strip_tip(message)]

    name, message = both(run)
    assert name == "CheckpointError"


def test_determinism_check_none_and_debug_report():
    a = ng.tensor([0.5], requires_grad=True)

    def first(x):
        return x.sin().exp()

    def later(x):
        return x.sin() * ng.tensor([1.0, 2.0])

    out = ng.utils.checkpoint.checkpoint(
        _non_deterministic(first, later), a, use_reentrant=False, determinism_check="none"
    )
    out.sum().backward()  # no check: the recomputed values are taken as they are
    out = ng.utils.checkpoint.checkpoint(
        _non_deterministic(first, later), a, use_reentrant=False, debug=True
    )
    with pytest.raises(ng.utils.checkpoint.CheckpointError) as info:
        out.sum().backward()
    report = str(info.value)
    assert "You are seeing this error because you passed `debug=True` to checkpoint" in report
    forward_ops = report.split("Operations executed during the original forward:")[1]
    forward_ops, recompute_ops = forward_ops.split("Operations executed during recomputation:")
    assert "= sin(" in forward_ops and "= exp(" in forward_ops
    # the recomputation stopped in mul, as it saved its second tensor (before it is logged)
    assert "= sin(" in recompute_ops and "= exp(" not in recompute_ops
    assert "test_checkpoint.py" in report  # where the user code called each op


def test_unpacking_twice_in_one_backward_raises_as_torch():
    def run(lib):
        errors = []

        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                errors.append(_error(lambda: ctx.saved_tensors))
                return g * 2

        a = lib.tensor([1.0, 2.0], requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(
            lambda t: Twice.apply(t.exp()), a, use_reentrant=False
        )
        out.sum().backward()
        return errors

    ((name, message),) = both(run)
    assert name == "CheckpointError"
    assert "Unpack is being triggered for a tensor that was already unpacked once" in message


def test_overlapping_backward_calls_in_one_graph_exec_group_raise():
    def run(lib):
        x = lib.tensor([0.1, 0.2], requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(lambda t: t.sin().cos(), x, use_reentrant=False)
        with lib.utils.checkpoint.GraphExecGroup():
            out.sum().backward(retain_graph=True)
            return _error(lambda: out.sum().backward())

    name, message = both(run)
    assert "Performing two backward calls that overlap" in message


# -- saved objects and references ---------------------------------------------------------------
def test_a_saved_tensor_that_needs_no_grad_comes_back_as_itself():
    def run(lib):
        seen = []

        class Keep(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.save_for_backward(y)
                return x * 1

            @staticmethod
            def backward(ctx, g):
                seen.extend(ctx.saved_tensors)
                return g, None

        a = lib.tensor(1.0, requires_grad=True)
        b = lib.tensor(1.0)
        lib.utils.checkpoint.checkpoint(Keep.apply, a, b, use_reentrant=False).backward()
        return [seen[0] is b]

    assert both(run) == [True]


@pytest.mark.parametrize("early_stop", [True, False])
def test_the_graph_dies_with_its_output_without_the_garbage_collector(early_stop):
    def f(x):
        return x.sin().exp().sin()

    def grad_of(fn):
        def wrapper(x):
            with ng.enable_grad():
                (g,) = ng.autograd.grad(fn(x), (x,), create_graph=True)
            return g

        return wrapper

    def checkpointed(fn):
        return lambda x: ng.utils.checkpoint.checkpoint(fn, x, use_reentrant=False)

    class Handle:
        pass

    def scope(fn):
        out = fn(ng.tensor(0.7, requires_grad=True))
        refs, stack, seen = [], [out.grad_fn], set()
        while stack:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            node.metadata["handle"] = handle = Handle()
            refs.append(weakref.ref(handle))
            stack.extend(fn for fn, _ in node.next_functions)
        return refs

    gc.disable()
    try:
        with ng.utils.checkpoint.set_checkpoint_early_stop(early_stop):
            refs = scope(grad_of(checkpointed(grad_of(checkpointed(f)))))
        assert [r for r in refs if r() is not None] == []
    finally:
        gc.enable()


# -- what tools see (NOTE [Recomputation, seen]) -------------------------------------------------
@REENTRANT
def test_observers_see_the_segment_and_its_recomputation_inside_backward(use_reentrant):
    class Log(GraphObserver):
        def __init__(self):
            self.events = []

        def forward(self, op, args, attrs, result, elapsed):
            self.events.append(("forward", op.name))

        def node_start(self, graph_task, node, inputs):
            self.events.append(("node", node.name(), node.metadata.get("checkpoint")))

        def recompute_start(self, graph_task, checkpoint_id, reentrant):
            thread = threading.current_thread().name
            self.events.append(("recompute_start", checkpoint_id, reentrant, thread))

        def recompute_end(self, graph_task, checkpoint_id, error):
            self.events.append(("recompute_end", checkpoint_id, error))

    log = Log()
    with observe(log):
        x = ng.tensor([0.5, 1.0], requires_grad=True)
        y = ng.utils.checkpoint.checkpoint(
            lambda t: t.sin().cos().clone(), x * 2, use_reentrant=use_reentrant
        )
        start = len(log.events)
        (y * 3).sum().backward()
    events = log.events[start:]
    nodes = [e[1:] for e in events if e[0] == "node"]
    starts = [e for e in events if e[0] == "recompute_start"]
    assert len(starts) == 1
    _, checkpoint_id, reentrant, thread = starts[0]
    assert reentrant is use_reentrant and thread == threading.current_thread().name
    recomputed = events[
        events.index(starts[0]) + 1 : events.index(("recompute_end", checkpoint_id, None))
    ]
    if use_reentrant:  # one node for the segment; all of it runs again, then its own backward
        assert ("CheckpointFunctionBackward", checkpoint_id) in nodes
        assert recomputed == [("forward", "sin"), ("forward", "cos"), ("forward", "clone")]
        assert ("CloneBackward0", None) in nodes  # the recomputed graph's, in the inner pass
    else:  # the segment's own nodes; the first unpack (CosBackward0's) recomputes up to cos
        segment = [n for n in nodes if n[1] == checkpoint_id]
        assert [n[0] for n in segment] == ["CloneBackward0", "CosBackward0", "SinBackward0"]
        assert events.index(starts[0]) > events.index(("node", "CosBackward0", checkpoint_id))
        assert recomputed == [("forward", "sin")]  # stopped as cos saved its input
    assert ("node", "MulBackward0", None) in events  # x * 2, outside the segment


def test_nothing_is_marked_when_nothing_watches():
    x = ng.tensor([0.5, 1.0], requires_grad=True)
    y = ng.utils.checkpoint.checkpoint(lambda t: t.sin().cos(), x, use_reentrant=False)
    assert "checkpoint" not in y.grad_fn.metadata


# -- another device ------------------------------------------------------------------------------
@REENTRANT
def test_checkpoint_on_a_device_with_a_worker_thread(use_reentrant):
    """On the strict test device (arrays of their own type, a worker thread of its own, as a
    CUDA device), the checkpointed segment recomputes there and gives the CPU's gradients."""
    backend.register_device_type("ckptdev", count=1, strict=True)
    try:
        grads = []
        for device in ("cpu", "ckptdev"):
            x, w1, w2 = (t.detach().to(device).requires_grad_() for t in _leaves(ng))
            threads = []

            def fn(x, w1, w2, threads=threads):
                threads.append(threading.current_thread().name)
                return _mlp(x, w1, w2)

            out = ng.utils.checkpoint.checkpoint(fn, x, w1, w2, use_reentrant=use_reentrant)
            out.sin().sum().backward()
            assert out.device.type == device
            main = threading.current_thread().name  # the forward; then the recomputation:
            assert threads[0] == main and len(threads) == 2  # on the thread that runs the node
            assert threads[1] == main if device == "cpu" else threads[1].startswith("nbgrad-worker")
            grads.append([_np(t.grad.cpu()) for t in (x, w1, w2)])
        _assert_same(grads[1], grads[0])
    finally:
        backend.unregister_device_type("ckptdev")


# -- what is kept -------------------------------------------------------------------------------
@pytest.mark.parametrize("use_reentrant", [True, False, None], ids=["reentrant", "non", "plain"])
def test_the_activations_inside_the_segment_are_not_kept(use_reentrant):
    def run(lib):
        refs = []

        def fn(x):
            y = x.exp()  # saved by sin, unless checkpointed
            if not refs:  # the forward, not the recomputation
                refs.append(weakref.ref(y))
            return y.sin()

        x = lib.tensor([0.5, 1.0], requires_grad=True)
        if use_reentrant is None:
            out = fn(x)
        else:
            out = lib.utils.checkpoint.checkpoint(fn, x, use_reentrant=use_reentrant)
        kept = refs[0]() is not None
        out.sum().backward()
        return [kept, _np(x.grad)]

    kept, _ = both(run)
    assert kept is (use_reentrant is None)


@REENTRANT
def test_in_no_grad_mode_the_function_just_runs(use_reentrant):
    def run(lib):
        calls = [0]

        def fn(x):
            calls[0] += 1
            return x.exp()

        x = lib.tensor([0.5], requires_grad=True)
        with lib.no_grad():
            out = lib.utils.checkpoint.checkpoint(fn, x, use_reentrant=use_reentrant)
        return [calls[0], out.requires_grad, out.grad_fn is None, _np(out)]

    assert both(run)[:3] == [1, False, True]
