"""KeyboardInterrupt during backward (issue "Reliability: ... interrupts").

The notebook's stop button sends SIGINT to the kernel, which Python turns into a
KeyboardInterrupt in the main thread: wherever the engine is (running a CPU node, or waiting
for a device worker), the backward must end promptly with that KeyboardInterrupt, no thread
may stay blocked (a device worker goes on serving later passes), and the next backward works,
including through the interrupted graph when it was retained.

Interrupts are delivered from a timer thread, either as ``_thread.interrupt_main()`` (the flag
only) or as a real SIGINT to the process (which also wakes a blocked wait), or raised by a hook.
The only timed assertions are the promptness bounds: each backward would take several seconds
without the interrupt, and must end well under a second after it.
"""

from __future__ import annotations

import _thread
import os
import signal
import threading
import time
from contextlib import contextmanager

import numpy as np
import pytest

import nbgrad as ng
from nbgrad import backend
from nbgrad.autograd import engine as engine_mod

DEV = "interruptdev"
WORKER = f"nbgrad-worker-{DEV}:0"
NODE_SECONDS = 0.05  # each slow node's backward
PROMPT = 1.0  # how soon after the interrupt the backward must have ended (seconds)


@pytest.fixture(scope="module", autouse=True)
def test_device():
    backend.register_device_type(DEV, count=1, strict=True)
    yield
    backend.unregister_device_type(DEV)


@pytest.fixture(autouse=True)
def fast_nodes_afterwards():
    yield
    _delay["seconds"] = NODE_SECONDS


_delay = {"seconds": NODE_SECONDS}


def _spin(seconds):
    """Busy Python work (a KeyboardInterrupt lands between two bytecodes)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class Slow(ng.autograd.Function):
    """The identity, whose backward takes ``_delay["seconds"]`` times ``weight``."""

    @staticmethod
    def forward(ctx, x, weight=1.0):
        ctx.weight = weight
        return x * 1

    @staticmethod
    def backward(ctx, grad):
        _spin(_delay["seconds"] * ctx.weight)
        return grad, None


def _chain(y, n, weight=1.0):
    for _ in range(n):
        y = Slow.apply(y, weight)
    return y


def _leaf(values, device="cpu"):
    return ng.tensor(values, dtype=ng.float64, device=device, requires_grad=True)


def _sigint():
    os.kill(os.getpid(), signal.SIGINT)


DELIVERIES = {"interrupt_main": _thread.interrupt_main, "SIGINT": _sigint}


@contextmanager
def _interrupt_after(seconds, deliver):
    """Deliver a KeyboardInterrupt to the main thread ``seconds`` from now; measure how long
    the block took."""
    timer = threading.Timer(seconds, deliver)
    clock = {"start": time.perf_counter()}
    timer.start()
    try:
        yield clock
    finally:
        timer.cancel()
        timer.join()
        clock["elapsed"] = time.perf_counter() - clock["start"]


def _engine_is_idle():
    current = engine_mod._current
    return current.graph_task is None and current.depth == 0


def _worker():
    return next((t for t in threading.enumerate() if t.name == WORKER), None)


def _in_thread(fn, timeout=10.0):
    """Run ``fn`` in a helper thread; fail (instead of hanging the suite) if it blocks."""
    result, error = [], []

    def run():
        try:
            result.append(fn())
        except BaseException as e:  # noqa: BLE001 - re-raised below
            error.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"{fn.__name__} was still blocked after {timeout} s"
    if error:
        raise error[0]
    return result[0] if result else None


@pytest.mark.parametrize("deliver", list(DELIVERIES))
def test_interrupt_ends_a_long_backward_on_the_calling_thread(deliver):
    x = _leaf([1.0, 2.0])
    loss = (_chain(x * 2, 100) * 3).sum()  # about 5 s of backward on this thread
    with pytest.raises(KeyboardInterrupt), _interrupt_after(0.3, DELIVERIES[deliver]) as clock:
        loss.backward(retain_graph=True)
    assert clock["elapsed"] < 0.3 + PROMPT
    assert x.grad is None  # the leaf's gradient never arrived
    assert _engine_is_idle() and ng.is_grad_enabled()
    # the next backward works, through the interrupted (retained) graph too
    _delay["seconds"] = 0.0
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])
    x.grad = None
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def test_keyboard_interrupt_raised_by_a_hook_ends_the_backward_at_once():
    x = _leaf([1.0, 2.0])
    y = x * 2
    z = y.exp()
    ran = []
    for node in (z.grad_fn, y.grad_fn):
        node.register_prehook(lambda g, node=node: ran.append(node.name()))

    def stop(grad):
        raise KeyboardInterrupt

    handle = y.register_hook(stop)
    loss = z.sum()
    with pytest.raises(KeyboardInterrupt):
        loss.backward(retain_graph=True)
    assert ran == ["ExpBackward0"]  # nothing after the hook ran
    assert x.grad is None
    assert _engine_is_idle() and ng.is_grad_enabled()
    handle.remove()
    loss.backward()
    assert ran == ["ExpBackward0", "ExpBackward0", "MulBackward0"]
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([2.0, 4.0]))


def _slow_op_chain(y, n):
    """``n`` table ops whose nodes each take ``_delay["seconds"]`` (in a prehook)."""
    for _ in range(n):
        y = y * 1.0
        y.grad_fn.register_prehook(lambda grad: _spin(_delay["seconds"]))
    return y


@pytest.mark.parametrize("chain", ["functions", "ops with slow hooks"])
@pytest.mark.parametrize("deliver", list(DELIVERIES))
def test_interrupt_while_a_device_worker_runs(deliver, chain):
    """The caller waits for the worker; the interrupt ends its wait, and the worker, which
    skips the rest of the failed pass, goes on serving the next one."""
    x = _leaf([1.0, 2.0])
    make = _chain if chain == "functions" else _slow_op_chain
    out = make(x.to(DEV) * 2, 100).cpu().sum()  # about 5 s of backward on the worker
    with pytest.raises(KeyboardInterrupt), _interrupt_after(0.3, DELIVERIES[deliver]) as clock:
        out.backward(retain_graph=True)
    assert clock["elapsed"] < 0.3 + PROMPT
    assert x.grad is None
    assert _engine_is_idle()
    worker = _worker()
    assert worker is not None and worker.is_alive()
    # no thread is blocked: a following backward on the device works at once (it waits at
    # most for the one slow node the worker was running: the worker skips the other ~90 of
    # the failed pass), and so does the interrupted graph
    _in_thread(lambda: (x.to(DEV) * 3).cpu().sum().backward(), timeout=PROMPT)
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    x.grad = None
    _delay["seconds"] = 0.0
    _in_thread(lambda: out.backward())
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
    assert worker.is_alive()


def test_interrupt_on_the_caller_while_the_worker_is_busy_with_a_long_node():
    """The caller runs CPU nodes while the worker runs one long device node: the interrupt
    lands in a CPU node, and the caller must not wait for the worker's node to finish."""
    x = _leaf([1.0, 2.0])
    cpu_branch = _chain(x * 3, 100)  # about 5 s of CPU nodes
    # made last, so its nodes run first: the worker starts its long node, then the caller
    # runs the CPU branch
    device_branch = Slow.apply(x.to(DEV) * 2, 60.0).cpu()  # one node of about 3 s
    started = []
    device_branch.grad_fn.next_functions[0][0].register_prehook(lambda g: started.append(1))
    loss = (device_branch + cpu_branch).sum()
    with pytest.raises(KeyboardInterrupt), _interrupt_after(0.5, _thread.interrupt_main) as clock:
        loss.backward()
    assert started, "the device node did not start before the interrupt"
    assert clock["elapsed"] < 0.5 + PROMPT
    assert _engine_is_idle()
    # the worker finishes its node, skips the rest of the failed pass, and serves the next one
    _delay["seconds"] = 0.0
    x.grad = None
    _in_thread(lambda: (x.to(DEV) * 5).cpu().sum().backward())
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0])


def test_interrupt_in_a_reentrant_backward_ends_the_outer_one():
    class Inner(ng.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            with ng.enable_grad():
                leaf = ng.ones(2, dtype=ng.float64, requires_grad=True)
                _chain(leaf, 100).sum().backward()  # about 5 s, nested in this node
            return grad

    x = _leaf([1.0, 2.0])
    loss = (Inner.apply(x) * 2).sum()
    with pytest.raises(KeyboardInterrupt), _interrupt_after(0.3, _thread.interrupt_main) as clock:
        loss.backward(retain_graph=True)
    assert clock["elapsed"] < 0.3 + PROMPT
    assert x.grad is None
    assert _engine_is_idle() and ng.is_grad_enabled()
    _delay["seconds"] = 0.0
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
