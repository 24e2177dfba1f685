"""``autograd.set_multithreading_enabled`` / ``is_multithreading_enabled``: the switch behaves
as torch's (context manager, plain call, decorator, thread-local), and with it off the nodes of
a non-CPU device run on the thread that called backward (checked on the host-memory test
device, whose nodes otherwise run on its worker thread)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import nbgrad as ng
from nbgrad import backend

torch = pytest.importorskip("torch")

DEV = "mtdev"


@pytest.fixture(scope="module", autouse=True)
def test_device():
    backend.register_device_type(DEV, count=1, strict=True)
    yield
    backend.unregister_device_type(DEV)


def switch_trace(lib):
    """What ``is_multithreading_enabled`` says along a sequence of uses of the switch."""
    ag = lib.autograd
    seen = [ag.is_multithreading_enabled()]
    with ag.set_multithreading_enabled(False):
        seen.append(ag.is_multithreading_enabled())
        ag.set_multithreading_enabled(True)
        seen.append(ag.is_multithreading_enabled())
    seen.append(ag.is_multithreading_enabled())
    ag.set_multithreading_enabled(False)
    seen.append(ag.is_multithreading_enabled())
    other = []
    thread = threading.Thread(target=lambda: other.append(ag.is_multithreading_enabled()))
    thread.start()
    thread.join()
    seen.append(other[0])  # thread-local: another thread keeps the default
    ag.set_multithreading_enabled(True)

    @ag.set_multithreading_enabled(False)
    def inside():
        return ag.is_multithreading_enabled()

    seen.append(ag.is_multithreading_enabled())  # a decorator's own call changes nothing
    seen.append(inside())
    seen.append(ag.is_multithreading_enabled())
    ag.set_multithreading_enabled(True)  # (the decorator's __init__ switched it off, as torch's)
    return seen


def test_the_switch_behaves_as_torch():
    assert switch_trace(ng) == switch_trace(torch)


def _device_node_threads(enabled):
    x = ng.tensor([0.1, 0.2, 0.3], dtype=ng.float64, requires_grad=True)
    out = ((x.to(DEV) * 2).exp().cpu() * 3).sum()
    threads = set()
    node = out.grad_fn
    while node is not None:  # SumBackward0 -> MulBackward0 -> ToCopy -> Exp -> Mul -> ToCopy
        node.register_prehook(lambda g: threads.add(threading.current_thread().name))
        node = next((f for f, _ in node.next_functions if f is not None), None)
    with ng.autograd.set_multithreading_enabled(enabled):
        out.backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * np.exp(2 * np.array([0.1, 0.2, 0.3])))
    return threads


def test_with_it_off_device_nodes_run_on_the_calling_thread():
    caller = threading.current_thread().name
    assert _device_node_threads(True) == {caller, f"nbgrad-worker-{DEV}:0"}
    assert _device_node_threads(False) == {caller}
