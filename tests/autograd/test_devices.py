"""The multi-device engine on a host-memory test device (issue "Device queues").

The test device's arrays live in NumPy, but its nodes run on a ready queue and worker thread
of their own, exactly as a GPU's would, so routing, worker threads, cross-device gradients,
errors raised in workers, reentrant backward and concurrent callers are all exercised on
machines without a GPU. Real-GPU checks are at the end and skip with a printed reason.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import nbgrad as ng
from nbgrad import backend
from nbgrad.autograd.engine import MAX_DEPTH, get_default_engine

DEV = "testdev"


@pytest.fixture(scope="module", autouse=True)
def test_device():
    backend.register_device_type(DEV, count=2, strict=True)
    yield
    backend.unregister_device_type(DEV)


def _leaf(values, device="cpu"):
    return ng.tensor(values, dtype=ng.float64, device=device, requires_grad=True)


def _record_threads(nodes):
    seen = {}
    for node in nodes:
        node.register_prehook(
            lambda g, node=node: seen.__setitem__(node, threading.current_thread().name)
        )
    return seen


def _all_nodes(root):
    out, stack = [], [root]
    while stack:
        n = stack.pop()
        if n is not None and n not in out:
            out.append(n)
            stack.extend(f for f, _ in n.next_functions)
    return out


def test_nodes_run_on_the_thread_of_their_device():
    x = _leaf([0.1, 0.2, 0.3])
    y = x.to(DEV)  # ToCopyBackward0 runs on the device (its gradient arrives there)
    z = (y * 2).exp()  # device nodes
    out = (z.cpu() * 3).sum()  # CPU nodes
    seen = _record_threads(_all_nodes(out.grad_fn))
    out.backward()
    caller = threading.current_thread().name
    worker = f"nbgrad-worker-{DEV}:0"
    for node, thread in seen.items():
        meta = node.input_metadata[0]
        expected = caller if meta.device.type == "cpu" else worker
        assert thread == expected, (node.name(), thread)
    assert {t for t in seen.values()} == {caller, worker}
    np.testing.assert_allclose(x.grad.numpy(), 6 * np.exp(2 * np.array([0.1, 0.2, 0.3])))


def test_cpu_device_cpu_graph_matches_cpu_only():
    values = [[0.5, -1.0], [2.0, 0.25]]

    def run(device):
        a = _leaf(values)
        w = _leaf([[1.5, -0.5], [0.3, 0.7]])
        h = (a.to(device) @ w.to(device)).tanh()
        loss = (h.cpu().sigmoid() * a).sum() + h.sum().cpu()
        loss.backward()
        return a.grad.numpy(), w.grad.numpy()

    for ours, ref in zip(run(DEV), run("cpu")):
        np.testing.assert_allclose(ours, ref, rtol=1e-12)


def test_leaf_gradient_accumulates_on_the_leaf_device():
    d = _leaf([1.0, 2.0], device=DEV)
    (d * d).sum().backward()
    (d * 3).sum().backward()
    assert d.grad.device == ng.device(f"{DEV}:0")
    np.testing.assert_allclose(d.grad.numpy(force=True), [5.0, 7.0])


def test_ops_on_two_devices_raise():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        _leaf([1.0], device=DEV) + _leaf([1.0])


def test_error_in_worker_reaches_caller_and_engine_recovers():
    class Boom(ValueError):
        pass

    x = _leaf([1.0, 2.0])
    y = x.to(DEV) * 2

    def exploding_hook(g):
        raise Boom("raised on the worker")

    y.register_hook(exploding_hook)
    with pytest.raises(Boom, match="raised on the worker") as info:
        y.cpu().sum().backward()
    assert "MulBackward0" in "".join(getattr(info.value, "__notes__", []))
    assert any("exploding_hook" in str(tb.name) for tb in info.traceback)
    x.grad = None
    (x.to(DEV) * 5).cpu().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0])


def test_warning_in_worker_is_replayed_in_caller():
    x = _leaf([1.0])
    y = x.to(DEV) * 2

    def warn_hook(g):
        warnings.warn("hello from the device worker", UserWarning, stacklevel=1)

    y.register_hook(warn_hook)
    with pytest.warns(UserWarning, match="hello from the device worker"):
        y.cpu().sum().backward()


class _Reentrant(ng.autograd.Function):
    """backward runs a whole backward pass of its own (reentrant)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 1

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with ng.enable_grad():
            inner = x.detach().requires_grad_(True)
            (gi,) = ng.autograd.grad((inner.sin() * 2).sum(), inner)
        ctx.thread = threading.current_thread().name
        return g * gi


@pytest.mark.parametrize("device", ["cpu", DEV])
def test_reentrant_backward_on_either_thread(device):
    x = _leaf([0.3, 0.6], device=device)
    y = _Reentrant.apply(x)
    y.sum().backward()
    expected = threading.current_thread().name if device == "cpu" else f"nbgrad-worker-{DEV}:0"
    assert y.grad_fn.thread == expected
    np.testing.assert_allclose(x.grad.numpy(force=True), 2 * np.cos([0.3, 0.6]))


def test_reentrant_backward_beyond_max_depth_moves_to_a_helper_thread():
    threads = []

    class Nest(ng.autograd.Function):
        @staticmethod
        def forward(ctx, x, depth):
            ctx.depth = depth
            return x * 1

        @staticmethod
        def backward(ctx, g):
            threads.append(threading.current_thread().name)
            if ctx.depth > 0:
                with ng.enable_grad():
                    inner = ng.ones(1, dtype=ng.float64, requires_grad=True)
                    Nest.apply(inner, ctx.depth - 1).sum().backward()
            return g, None

    x = _leaf([1.0])
    Nest.apply(x, MAX_DEPTH + 5).sum().backward()
    assert len(threads) == MAX_DEPTH + 6
    assert threads[0] == threading.current_thread().name
    assert any(t == "nbgrad-reentrant" for t in threads[MAX_DEPTH:])
    np.testing.assert_allclose(x.grad.numpy(), [1.0])


def test_concurrent_threads_share_leaves_without_losing_updates():
    w_cpu = _leaf([1.0, 2.0, 3.0])
    w_dev = _leaf([1.0, 1.0, 1.0], device=DEV)
    n_threads, n_passes = 8, 100
    errors = []

    def work(seed):
        try:
            for _ in range(n_passes):
                x = ng.tensor([1.0, 1.0, 1.0], dtype=ng.float64)
                loss = (w_cpu * x).sum() + (w_dev * x.to(DEV)).sum().cpu()
                loss.backward()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    np.testing.assert_allclose(w_cpu.grad.numpy(), [800.0] * 3)
    np.testing.assert_allclose(w_dev.grad.numpy(force=True), [800.0] * 3)


def test_independent_graphs_in_parallel_threads():
    results = {}

    def work(i):
        x = _leaf([float(i), 1.0])
        for _ in range(50):
            x.grad = None
            (x.to(DEV) ** 2).sum().cpu().backward()
        results[i] = x.grad.numpy().tolist()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: [2.0 * i, 2.0] for i in range(8)}


def test_queue_callback_from_a_worker_runs_after_the_pass():
    engine = get_default_engine()
    log = []
    x = _leaf([1.0])
    y = x.to(DEV) * 2
    y.register_hook(lambda g: engine.queue_callback(lambda: log.append(x.grad is not None)))
    y.cpu().sum().backward()
    assert log == [True]


def test_cuda_backend_reports_absence_clearly():
    if ng.cuda.is_available():
        x = _leaf([1.0, 2.0], device="cuda")
        (x * x).sum().backward()
        np.testing.assert_allclose(x.grad.cpu().numpy(), [2.0, 4.0])
        return
    assert ng.cuda.device_count() == 0
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        ng.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        ng.zeros(2).cuda()


def test_real_gpu_roundtrip():
    if not ng.cuda.is_available():
        pytest.skip("no CUDA GPU with CuPy on this machine: the real-GPU check did not run")
    x = _leaf([0.5, 1.5])
    y = x.cuda()
    out = (y.exp() * 2).sum().cpu()
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([0.5, 1.5]))


def test_workers_shut_down_cleanly_at_interpreter_exit():
    import subprocess
    import sys

    program = (
        "import nbgrad as ng\n"
        "from nbgrad import backend\n"
        "backend.register_device_type('exitdev', count=1)\n"
        "x = ng.ones(3, dtype=ng.float64, requires_grad=True)\n"
        "(x.to('exitdev') * 2).cpu().sum().backward()\n"
        "import threading\n"
        "assert any(t.name.startswith('nbgrad-worker-exitdev') for t in threading.enumerate())\n"
        "print(x.grad.tolist())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[2.0, 2.0, 2.0]"
    assert "Exception" not in done.stderr and "Traceback" not in done.stderr


def test_no_worker_thread_leaks_over_many_backward_calls():
    def one_pass():
        x = _leaf([1.0, 2.0])
        (x.to(DEV) * 3).cpu().sum().backward()

    one_pass()  # the device's worker starts on first use
    before = threading.active_count()
    for _ in range(1000):
        one_pass()
    assert threading.active_count() == before
    workers = [t for t in threading.enumerate() if t.name.startswith(f"nbgrad-worker-{DEV}")]
    assert len(workers) == 1


def _branchy_order(device):
    """The order in which the nodes of a graph with many nodes ready at once run."""
    x = _leaf([0.5, -1.0, 2.0], device)
    w = _leaf([1.5, 0.25, -0.5], device)
    a, b, c = x.sin(), (x * w).exp(), w.tanh()
    out = (a * b + (c * a).cos() + b.sigmoid() * c).sum()
    order = []
    for node in _all_nodes(out.grad_fn):
        node.register_prehook(lambda g, node=node: order.append(node.name()))
    out.backward()
    return order


def test_a_device_queue_runs_nodes_in_the_cpu_order():
    """A device's ready queue pops the highest sequence number first, as the CPU's does (and as
    PyTorch's every queue): the same graph runs its nodes in the same order on both."""
    cpu = _branchy_order("cpu")
    assert len(cpu) > 10
    assert _branchy_order(DEV) == cpu


@pytest.mark.parametrize("shape", [(), (3,)])
def test_a_gradient_on_another_device_is_moved_only_when_0d(shape):
    """As PyTorch's validate_outputs: a node that returns a gradient on the wrong device has it
    moved when it is 0-d, and raises otherwise."""

    class WrongDevice(ng.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return (g * 2).to(DEV)

    x = ng.ones(shape, dtype=ng.float64, requires_grad=True)
    out = WrongDevice.apply(x).sum()
    if shape:
        with pytest.raises(
            RuntimeError, match=r"invalid gradient at index 0 - expected device cpu"
        ):
            out.backward()
        assert x.grad is None
    else:
        out.backward()
        assert x.grad.device.type == "cpu" and x.grad.item() == 2.0
