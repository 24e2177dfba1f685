"""Engine benchmarks: nbgrad next to hand-written NumPy, PyTorch and HIPS autograd.

Run from the repository root::

    python tests/benchmarks/engine.py               # every workload, 7 repeats after a warm-up
    python tests/benchmarks/engine.py --quick       # 3 repeats (1 process per framework for W5)
    python tests/benchmarks/engine.py --only W1,W3  # a subset of W1, W3, W5, W6, W7, W8, W9

Every figure is the median over the repeats, and every framework does the same work in the same
run. In W1 and W6 the repeats go round-robin over the frameworks (nbgrad, then NumPy,
PyTorch, HIPS autograd) so that a slow patch of the machine hits them all alike. W3 runs each
framework in fresh processes of its own, taken in turn (three rounds, so three processes per
framework), since frameworks sharing one process share its heap and thread pools, which
changed each other's figures (NOTE [W3 in fresh processes]). ``gc.collect()`` runs before each
timed call and the collector is left on inside it.

PyTorch (CPU) and HIPS autograd are optional: a framework that is not installed reads "n/a"
(``pip install -e '.[bench]'`` installs HIPS autograd and psutil). Thread counts are left at
their defaults: ``torch.set_num_threads`` is not called (the header prints how many threads
PyTorch uses), and NumPy's BLAS keeps its own default.

Workloads
---------
W1  Per-op overhead. A chain ``x = x * 1.0001 + 0.001`` on a (16,) float64 tensor, with
    ``tanh().sum()`` at the end, then backward. Each ``*`` and ``+`` counts as one op; the
    figures are microseconds per op for the forward, the backward and their total, for chains
    of 2,000 and 20,000 ops (to show that the cost per op does not grow with the graph). The
    NumPy baseline runs the same forward and a hand-written backward (it stores the ``tanh``
    output, the one thing it needs, and loops back over the chain). HIPS autograd's ``grad``
    does forward and backward in one call, so only its total is given.
W3  Training step. A 784-512-512-10 tanh MLP at batch 256 in float32: forward, softmax
    cross-entropy (``log_softmax`` times a one-hot target, mean over the batch), backward and
    an in-place SGD update under ``no_grad`` (grads set to None after it). Milliseconds per
    step. The NumPy baseline is the same step written by hand; PyTorch runs the same model with
    torch ops. All start from the same weights and their losses are checked against each other.
    Each framework runs in fresh subprocesses (``--w3-child NAME``): 10 warm-up steps, then 7
    samples of 5 steps each; the figure is the median over the samples of three processes.
W5  Peak memory. Forward and backward through 200 ops cycling ``* 1.0001``, ``+ 0.001`` and
    ``tanh`` (which saves its result) on a (1000, 1000) float64 tensor (8 MB), then ``sum``
    and backward. Each framework runs in a fresh subprocess (``--w5-child NAME``), which imports
    it, makes the input, warms it up on a small input, and takes its resident set size (RSS) as
    the baseline; the figure is the peak RSS during the work minus that baseline, in MB (10**6
    bytes). The peak is read from VmHWM after resetting it through /proc/self/clear_refs, or
    from ``getrusage(RUSAGE_SELF).ru_maxrss`` where that reset is not possible. The NumPy
    baseline stores exactly what its backward needs: the 66 ``tanh`` outputs (528 MB). The
    children run with ``MALLOC_MMAP_THRESHOLD_=1048576`` so that every 8 MB array is its own
    mmap, returned to the system when freed: the figure then counts what the framework holds,
    not glibc's heap heuristics (with glibc's default, dynamic threshold PyTorch reads about
    1.6 GB instead of about 0.55 GB; NumPy and nbgrad are about the same either way).
W6  Hessian-vector product of ``sum(tanh(x) ** 3)`` for x of shape (1000,) float64 by double
    backward: ``g = grad(f, x, create_graph=True)``, then ``grad((g * v).sum(), x)`` (nbgrad,
    PyTorch), ``autograd.hessian_vector_product`` (HIPS), or the analytic H v written by hand
    (NumPy). Milliseconds per product. Below it, not targets, where the time goes (nbgrad and
    PyTorch, round-robin): the same product for x of shape (1,), where the kernels cost next
    to nothing (the engine, dispatch and nodes alone), and one ``tanh`` of the (1000,) x,
    NumPy's ``np.tanh`` (nbgrad's kernel) next to PyTorch's.

W7  Mixed chain. 2,000 ops cycling ``x * 1.0001``, ``x + 0.001`` and ``x.tanh()`` on a (16,)
    float64 tensor, then ``.sum().backward()``; microseconds per op for the forward, the
    backward and their total (nbgrad and PyTorch, round-robin).
W8  Branches. x of shape (64,), 1,000 branches ``(x * c_i).sin()`` summed as a balanced binary
    tree, then ``.sum().backward()``. Milliseconds per forward + backward.
W9  0-d MLP. A micrograd-style 2-16-16-1 ReLU MLP on 100 2-d points built entirely from 0-d
    tensors (each neuron ``sum(w_i * x_i) + b`` one op at a time, 64,300 nodes), MSE loss,
    forward + backward. Milliseconds per step with the cyclic GC disabled for the step, and
    with it left on. Next to them: micrograd's own ``Value`` (its engine, copied below) on
    plain floats, the figure the issue compares with.

Below the table the script prints the ratios the project targets, each with its target and
"ok" or "MISS".
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np

import nbgrad as ng

try:
    import torch
except ImportError:
    torch = None

try:
    import autograd as hips
    import autograd.numpy as anp
    from autograd import grad as hips_grad
except ImportError:
    hips = anp = hips_grad = None

try:
    import psutil
except ImportError:
    psutil = None

FRAMEWORKS = ("nbgrad", "numpy", "torch", "autograd")
WORKLOADS = ("W1", "W3", "W5", "W6", "W7", "W8", "W9")
NAN = float("nan")

# A step returns a tuple of seconds, one per phase (e.g. forward, backward, total).
Step = Callable[[], tuple]


def installed(name: str) -> bool:
    return {"torch": torch, "autograd": hips}.get(name, True) is not None


def run_rounds(steps: dict[str, Step], repeats: int, warmup: int = 1) -> dict[str, tuple]:
    """Run ``warmup`` untimed calls then ``repeats`` timed calls of every step, round-robin
    over the frameworks so that a slow patch of the machine hits them all alike.

    Returns, per framework, the median of each phase over the timed calls.
    """
    samples: dict[str, list[tuple]] = {name: [] for name in steps}
    for _ in range(warmup):
        for step in steps.values():
            step()
    for _ in range(repeats):
        for name, step in steps.items():
            gc.collect()
            samples[name].append(step())
    return {
        name: tuple(statistics.median(phase) for phase in zip(*rows))
        for name, rows in samples.items()
    }


def per_call(fn: Callable[[], object], number: int) -> Step:
    """A one-phase step: seconds per call of ``fn``, averaged over ``number`` calls."""

    def step():
        start = time.perf_counter()
        for _ in range(number):
            fn()
        return ((time.perf_counter() - start) / number,)

    return step


def check_close(label: str, results: dict[str, np.ndarray], rtol: float, atol: float = 0.0):
    """Warn (do not fail) when a framework's answer differs from the NumPy baseline's."""
    ref = results["numpy"]
    for name, value in results.items():
        if not np.allclose(value, ref, rtol=rtol, atol=atol):
            err = np.max(np.abs(np.asarray(value, dtype=np.float64) - ref))
            print(f"WARNING {label}: {name} differs from NumPy (max abs diff {err:.3g})")


# --------------------------------------------------------------------------------------------
# W1: per-op overhead of a long elementwise chain
# --------------------------------------------------------------------------------------------

MUL, ADD = 1.0001, 0.001


def w1_steps(x0: np.ndarray, n_ops: int) -> tuple[dict[str, Step], dict[str, Callable]]:
    """Steps returning (forward, backward, total) seconds, and one-shot gradient functions."""
    pairs = n_ops // 2

    def numpy_grad():
        x = x0.copy()
        for _ in range(pairs):
            x = x * MUL + ADD
        t = np.tanh(x)  # saved for the backward of tanh
        t_fwd = time.perf_counter()
        g = 1.0 - t * t  # d sum(tanh(x)) / dx
        for _ in range(pairs):
            g = g * MUL  # backward of "+ ADD" is the identity; of "* MUL" a scale
        return g, t_fwd

    def nbgrad_grad():
        x = ng.tensor(x0, requires_grad=True)
        y = x
        for _ in range(pairs):
            y = y * MUL + ADD
        out = y.tanh().sum()
        t_fwd = time.perf_counter()
        out.backward()
        return x.grad.numpy(), t_fwd

    def torch_grad():
        x = torch.tensor(x0, requires_grad=True)
        y = x
        for _ in range(pairs):
            y = y * MUL + ADD
        out = y.tanh().sum()
        t_fwd = time.perf_counter()
        out.backward()
        return x.grad.numpy(), t_fwd

    def hips_f(x):
        for _ in range(pairs):
            x = x * MUL + ADD
        return anp.sum(anp.tanh(x))

    def phases(grad_fn):
        def step():
            start = time.perf_counter()
            _, t_fwd = grad_fn()
            end = time.perf_counter()
            return t_fwd - start, end - t_fwd, end - start

        return step

    grads = {"nbgrad": lambda: nbgrad_grad()[0], "numpy": lambda: numpy_grad()[0]}
    steps = {"nbgrad": phases(nbgrad_grad), "numpy": phases(numpy_grad)}
    if torch is not None:
        grads["torch"] = lambda: torch_grad()[0]
        steps["torch"] = phases(torch_grad)
    if hips is not None:
        hips_df = hips_grad(hips_f)
        grads["autograd"] = lambda: hips_df(x0)
        total = per_call(lambda: hips_df(x0), 1)
        steps["autograd"] = lambda: (NAN, NAN, total()[0])
    return steps, grads


def bench_w1(repeats: int) -> list[tuple[str, dict[str, tuple]]]:
    x0 = np.random.default_rng(1).standard_normal(16)
    sections = []
    for n_ops in (2_000, 20_000):
        steps, grads = w1_steps(x0, n_ops)
        check_close(f"W1 {n_ops} ops", {k: g() for k, g in grads.items()}, 1e-10, 1e-12)
        medians = run_rounds(steps, repeats)
        us_per_op = {k: tuple(s * 1e6 / n_ops for s in v) for k, v in medians.items()}
        sections.append((f"{n_ops:,}", us_per_op))
    return sections


# --------------------------------------------------------------------------------------------
# W3: training step of a 784-512-512-10 tanh MLP
# --------------------------------------------------------------------------------------------

SIZES, BATCH, LR = (784, 512, 512, 10), 256, 0.01


def w3_data():
    rng = np.random.default_rng(3)
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        bound = 1.0 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    labels = rng.integers(0, SIZES[-1], BATCH)
    onehot = np.eye(SIZES[-1], dtype=np.float32)[labels]
    return params, x, onehot


def w3_numpy_step(params, x, onehot):
    w1, b1, w2, b2, w3, b3 = params
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    logits = h2 @ w3 + b3
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    sumexp = exp.sum(axis=1, keepdims=True)
    log_probs = shifted - np.log(sumexp)
    loss = -(log_probs * onehot).sum() / BATCH

    d_logits = (exp / sumexp - onehot) / BATCH
    d_z2 = (d_logits @ w3.T) * (1 - h2 * h2)
    d_z1 = (d_z2 @ w2.T) * (1 - h1 * h1)
    grads = (x.T @ d_z1, d_z1.sum(0), h1.T @ d_z2, d_z2.sum(0), h2.T @ d_logits, d_logits.sum(0))
    for p, g in zip(params, grads):
        p -= LR * g
    return loss


def w3_nbgrad_step(params, x, onehot):
    w1, b1, w2, b2, w3, b3 = params
    h1 = (x @ w1 + b1).tanh()
    h2 = (h1 @ w2 + b2).tanh()
    log_probs = (h2 @ w3 + b3).log_softmax(1)
    loss = -(log_probs * onehot).sum(1).mean()
    loss.backward()
    with ng.no_grad():
        for p in params:
            p.sub_(p.grad, alpha=LR)
            p.grad = None
    return loss.item()


def w3_torch_step(params, x, onehot):
    w1, b1, w2, b2, w3, b3 = params
    h1 = torch.tanh(x @ w1 + b1)
    h2 = torch.tanh(h1 @ w2 + b2)
    log_probs = torch.log_softmax(h2 @ w3 + b3, 1)
    loss = -(log_probs * onehot).sum(1).mean()
    loss.backward()
    with torch.no_grad():
        for p in params:
            p.sub_(p.grad, alpha=LR)
            p.grad = None
    return loss.item()


def w3_child(name: str, repeats: int, number: int) -> None:
    """Body of ``--w3-child NAME``: print {"ms": [...], "loss": ...} as JSON for one framework.

    The first step's loss (all start from the same weights) is reported for the cross-check;
    then 10 warm-up steps, then ``repeats`` samples of ``number`` steps, ms per step.
    """
    params, x, onehot = w3_data()
    if name == "nbgrad":
        args = ([ng.from_numpy(p.copy()).requires_grad_() for p in params],)
        args += (ng.from_numpy(x), ng.from_numpy(onehot))
    elif name == "torch":
        args = ([torch.from_numpy(p.copy()).requires_grad_() for p in params],)
        args += (torch.from_numpy(x), torch.from_numpy(onehot))
    else:
        args = ([p.copy() for p in params], x, onehot)
    fn = {"nbgrad": w3_nbgrad_step, "torch": w3_torch_step, "numpy": w3_numpy_step}[name]
    loss = float(fn(*args))
    for _ in range(10):
        fn(*args)
    step = per_call(lambda: fn(*args), number)
    samples = []
    for _ in range(repeats):
        gc.collect()
        samples.append(step()[0] * 1e3)
    print(json.dumps({"ms": samples, "loss": loss}))


def bench_w3(rounds: int, repeats: int, number: int) -> dict[str, tuple]:
    """Each framework in fresh processes, ``rounds`` of them taken in turn; the median of all
    their samples. See NOTE [W3 in fresh processes]."""
    # NOTE [W3 in fresh processes]
    # Steps of this size allocate arrays of hundreds of kB, and glibc's malloc decides, from
    # what the process allocated and freed before, whether such an array reuses the heap or
    # comes fresh from the system (a page fault per 4 kB). In one process the frameworks'
    # steps share that heap: one framework's pattern of allocations changed the other's count
    # of page faults by a factor of four here, and with it its time. So each framework runs in
    # processes of its own, as a user's training script would, the processes of the frameworks
    # taken in turn so that a slow patch of the machine hits them all alike.
    names = [name for name in ("nbgrad", "numpy", "torch") if installed(name)]
    samples: dict[str, list[float]] = {name: [] for name in names}
    losses: dict[str, np.float64] = {}
    for _ in range(rounds):
        for name in names:
            proc = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--w3-child", name]
                + ["--w3-samples", f"{repeats},{number}"],
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                print(f"WARNING W3: the {name} child failed:\n{proc.stderr[-2000:]}")
                continue
            report = json.loads(proc.stdout.strip().splitlines()[-1])
            samples[name] += report["ms"]
            losses[name] = np.float64(report["loss"])
    if "numpy" in losses:
        check_close("W3 loss", losses, rtol=1e-4)
    return {k: (statistics.median(v) if v else NAN,) for k, v in samples.items()}


# --------------------------------------------------------------------------------------------
# W5: peak memory of forward + backward through 200 ops, one fresh process per framework
# --------------------------------------------------------------------------------------------

W5_OPS, W5_SHAPE = 200, (1000, 1000)


def w5_numpy(x0: np.ndarray) -> np.ndarray:
    saved = []  # the tanh outputs: all that the backward needs
    x = x0
    for i in range(W5_OPS):
        if i % 3 == 0:
            x = x * MUL
        elif i % 3 == 1:
            x = x + ADD
        else:
            x = np.tanh(x)
            saved.append(x)
    del x
    g = np.ones(x0.shape)  # d sum / d out
    for i in reversed(range(W5_OPS)):
        if i % 3 == 0:
            g = g * MUL
        elif i % 3 == 2:
            t = saved.pop()
            g = g * (1.0 - t * t)
            del t
    return g


def w5_framework(x):
    """nbgrad and PyTorch run the same code on a leaf ``x`` that requires grad."""
    y = x
    for i in range(W5_OPS):
        y = y * MUL if i % 3 == 0 else y + ADD if i % 3 == 1 else y.tanh()
    loss = y.sum()
    del y  # hold no more than the NumPy baseline does
    loss.backward()
    return x.grad.numpy()


def w5_hips(x0: np.ndarray) -> np.ndarray:
    def f(x):
        for i in range(W5_OPS):
            x = x * MUL if i % 3 == 0 else x + ADD if i % 3 == 1 else anp.tanh(x)
        return anp.sum(x)

    return hips_grad(f)(x0)


def rss_bytes() -> int:
    if psutil is not None:
        return psutil.Process().memory_info().rss
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def reset_peak_rss() -> bool:
    """Reset the kernel's high-water mark of RSS (Linux); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_bytes(was_reset: bool) -> int:
    if was_reset:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux


def w5_child(name: str) -> None:
    """Body of ``--w5-child NAME``: print {"peak_mb": ...} as JSON for one framework."""
    leaf = {
        "numpy": lambda a: a,
        "autograd": lambda a: a,
        "nbgrad": lambda a: ng.tensor(a, requires_grad=True),
        "torch": lambda a: torch.tensor(a, requires_grad=True),
    }[name]
    run = {"numpy": w5_numpy, "autograd": w5_hips}.get(name, w5_framework)
    run(leaf(np.random.default_rng(0).standard_normal((10, 10))))  # warm up lazy imports
    x = leaf(np.random.default_rng(5).standard_normal(W5_SHAPE))  # the one 8 MB input
    gc.collect()
    baseline = rss_bytes()
    was_reset = reset_peak_rss()
    grad = run(x)
    peak = peak_rss_bytes(was_reset)
    checksum = float(grad.sum())
    print(json.dumps({"peak_mb": (peak - baseline) / 1e6, "checksum": checksum, "hwm": was_reset}))


def bench_w5(repeats: int) -> dict[str, tuple]:
    samples: dict[str, list[float]] = {name: [] for name in FRAMEWORKS if installed(name)}
    checksums: dict[str, float] = {}
    for _ in range(repeats):
        for name in samples:
            proc = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--w5-child", name],
                capture_output=True,
                text=True,
                env={**os.environ, "MALLOC_MMAP_THRESHOLD_": str(1 << 20)},
            )
            if proc.returncode != 0:
                print(f"WARNING W5: the {name} child failed:\n{proc.stderr[-2000:]}")
                samples[name].append(NAN)
                continue
            report = json.loads(proc.stdout.strip().splitlines()[-1])
            samples[name].append(report["peak_mb"])
            checksums[name] = report["checksum"]
    if "numpy" in checksums:
        check_close("W5 grad sum", {k: np.float64(v) for k, v in checksums.items()}, rtol=1e-9)
    return {k: (statistics.median(v),) for k, v in samples.items()}


# --------------------------------------------------------------------------------------------
# W6: Hessian-vector product by double backward
# --------------------------------------------------------------------------------------------


def _hvp(lib, x, v):
    """``H v`` of ``sum(tanh(x) ** 3)`` by double backward, in nbgrad or PyTorch."""

    def hvp():
        f = (x.tanh() ** 3).sum()
        (g,) = lib.autograd.grad(f, x, create_graph=True)
        (hv,) = lib.autograd.grad((g * v).sum(), x)
        return hv

    return hvp


def bench_w6(repeats: int, number: int) -> dict[str, tuple]:
    rng = np.random.default_rng(6)
    x0, v0 = rng.standard_normal(1000), rng.standard_normal(1000)

    def numpy_hvp():
        t = np.tanh(x0)  # d2/dx2 tanh(x)**3 = (6t - 12t**3)(1 - t**2)
        return (6.0 * t - 12.0 * t**3) * (1.0 - t * t) * v0

    fns = {
        "nbgrad": _hvp(ng, ng.tensor(x0, requires_grad=True), ng.tensor(v0)),
        "numpy": numpy_hvp,
    }
    if torch is not None:
        fns["torch"] = _hvp(torch, torch.tensor(x0, requires_grad=True), torch.tensor(v0))
    if hips is not None:
        hips_hvp = hips.hessian_vector_product(lambda x: anp.sum(anp.tanh(x) ** 3))
        fns["autograd"] = lambda: hips_hvp(x0, v0)
    results = {k: fn() for k, fn in fns.items()}
    results = {k: r.detach().numpy() if hasattr(r, "detach") else r for k, r in results.items()}
    check_close("W6 Hv", results, rtol=1e-9, atol=1e-12)
    medians = run_rounds({k: per_call(fn, number) for k, fn in fns.items()}, repeats)
    return {k: (v[0] * 1e3,) for k, v in medians.items()}


def bench_w6_split(repeats: int, number: int) -> dict[str, tuple]:
    """Where W6's time goes, nbgrad next to PyTorch: the same product for x of shape (1,), where
    the kernels cost next to nothing (what is left is the engine, the dispatch and the nodes),
    in ms; and ``tanh`` of the (1000,) input alone, the kernel that costs most at (1000,): NumPy's
    ``np.tanh`` (nbgrad's kernel) and PyTorch's, in us."""
    rng = np.random.default_rng(6)
    x0, v0 = rng.standard_normal(1000), rng.standard_normal(1000)
    steps = {
        "nbgrad": _hvp(ng, ng.tensor(x0[:1], requires_grad=True), ng.tensor(v0[:1])),
        "numpy": lambda: np.tanh(x0),
    }
    if torch is not None:
        steps["torch"] = _hvp(torch, torch.tensor(x0[:1], requires_grad=True), torch.tensor(v0[:1]))
        t0 = torch.tensor(x0)
        steps["torch tanh"] = lambda: torch.tanh(t0)
    kernels = ("numpy", "torch tanh")  # (many calls per sample: each takes microseconds)
    timed = {k: per_call(fn, 20 * number if k in kernels else number) for k, fn in steps.items()}
    medians = run_rounds(timed, repeats)
    figures = {"nbgrad": (medians["nbgrad"][0] * 1e3, medians["numpy"][0] * 1e6)}
    if torch is not None:
        figures["torch"] = (medians["torch"][0] * 1e3, medians["torch tanh"][0] * 1e6)
    return figures


# --------------------------------------------------------------------------------------------
# W7: a mixed chain of *, + and tanh
# --------------------------------------------------------------------------------------------

W7_OPS = 2_000


def w7_step(lib, x0: np.ndarray) -> Step:
    """(forward, backward, total) seconds of the chain in ``lib`` (nbgrad or torch)."""

    def step():
        start = time.perf_counter()
        x = lib.tensor(x0, requires_grad=True)
        y = x
        for i in range(W7_OPS):
            k = i % 3
            y = y * MUL if k == 0 else y + ADD if k == 1 else y.tanh()
        out = y.sum()
        t_fwd = time.perf_counter()
        out.backward()
        end = time.perf_counter()
        step.grad = x.grad.numpy()
        return t_fwd - start, end - t_fwd, end - start

    return step


def bench_w7(repeats: int) -> dict[str, tuple]:
    x0 = np.random.default_rng(7).standard_normal(16)
    steps = {"nbgrad": w7_step(ng, x0)}
    if torch is not None:
        steps["torch"] = w7_step(torch, x0)
    medians = run_rounds(steps, repeats)
    if torch is not None:
        steps["numpy"] = steps["torch"]  # the reference answer
        check_close("W7", {k: s.grad for k, s in steps.items()}, 1e-10, 1e-12)
    return {k: tuple(s * 1e6 / W7_OPS for s in v) for k, v in medians.items()}


# --------------------------------------------------------------------------------------------
# W8: 1,000 branches summed as a balanced binary tree
# --------------------------------------------------------------------------------------------

W8_BRANCHES = 1_000


def w8_step(lib, x0: np.ndarray) -> Callable[[], object]:
    consts = [1.0 + i / W8_BRANCHES for i in range(W8_BRANCHES)]

    def fn():
        x = lib.tensor(x0, requires_grad=True)
        level = [(x * c).sin() for c in consts]
        while len(level) > 1:
            pairs = [a + b for a, b in zip(level[::2], level[1::2])]
            level = pairs + level[len(level) - len(level) % 2 :]
        level[0].sum().backward()
        return x.grad.numpy()

    return fn


def bench_w8(repeats: int, number: int) -> dict[str, tuple]:
    x0 = np.random.default_rng(8).standard_normal(64)
    fns = {"nbgrad": w8_step(ng, x0)}
    if torch is not None:
        fns["torch"] = w8_step(torch, x0)
        check_close("W8", {"numpy": fns["torch"](), "nbgrad": fns["nbgrad"]()}, 1e-10, 1e-10)
    medians = run_rounds({k: per_call(fn, number) for k, fn in fns.items()}, repeats)
    return {k: (v[0] * 1e3,) for k, v in medians.items()}


# --------------------------------------------------------------------------------------------
# W9: a micrograd-style MLP of 0-d tensors
# --------------------------------------------------------------------------------------------

W9_SIZES, W9_POINTS = (2, 16, 16, 1), 100


class MicroValue:
    """micrograd's ``Value`` (github.com/karpathy/micrograd, engine.py), the ops W9 uses."""

    def __init__(self, data, _children=(), _op=""):
        self.data = data
        self.grad = 0
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op

    def __add__(self, other):
        other = other if isinstance(other, MicroValue) else MicroValue(other)
        out = MicroValue(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __radd__(self, other):
        return self + other

    def __mul__(self, other):
        other = other if isinstance(other, MicroValue) else MicroValue(other)
        out = MicroValue(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out

    def __pow__(self, other):
        out = MicroValue(self.data**other, (self,), f"**{other}")

        def _backward():
            self.grad += (other * self.data ** (other - 1)) * out.grad

        out._backward = _backward
        return out

    def relu(self):
        out = MicroValue(0 if self.data < 0 else self.data, (self,), "ReLU")

        def _backward():
            self.grad += (out.data > 0) * out.grad

        out._backward = _backward
        return out

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    def backward(self):
        topo = []
        visited = set()

        def build_topo(v):
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build_topo(child)
                topo.append(v)

        build_topo(self)
        self.grad = 1
        for v in reversed(topo):
            v._backward()


def w9_data():
    rng = np.random.default_rng(9)
    weights = []
    for fan_in, fan_out in zip(W9_SIZES[:-1], W9_SIZES[1:]):
        w = rng.uniform(-1, 1, (fan_out, fan_in)).tolist()
        b = rng.uniform(-1, 1, fan_out).tolist()
        weights.append((w, b))
    xs = rng.standard_normal((W9_POINTS, W9_SIZES[0])).tolist()
    ys = rng.standard_normal(W9_POINTS).tolist()
    return weights, xs, ys


def w9_loss(xs, ys, layers):
    """The MLP's mean squared error over the points ``xs`` (lists of 0-d values) and targets
    ``ys``; ``layers``: ``(weights, biases)`` per layer, ReLU after each but the last."""
    last = len(layers) - 1
    loss = 0.0
    for x, y in zip(xs, ys):
        h = x
        for k, (w, b) in enumerate(layers):
            out = []
            for row, bias in zip(w, b):
                act = bias
                for wi, hi in zip(row, h):
                    act = act + wi * hi
                out.append(act if k == last else act.relu())
            h = out
        loss = loss + (h[0] - y) ** 2
    return loss * (1.0 / len(xs))


def w9_step(make_param, make_input, gc_on: bool) -> Callable[[], float]:
    """Forward + backward of the 0-d MLP; ``make_param``/``make_input`` wrap a float."""
    weights, xs, ys = w9_data()
    layers = [
        ([[make_param(v) for v in row] for row in w], [make_param(v) for v in b])
        for w, b in weights
    ]
    params = [p for w, b in layers for row in w for p in row] + [p for _, b in layers for p in b]
    xs = [[make_input(v) for v in x] for x in xs]
    ys = [make_input(v) for v in ys]

    def fn():
        if not gc_on:
            gc.disable()
        try:
            loss = w9_loss(xs, ys, layers)
            loss.backward()
        finally:
            gc.enable()
        fn.grads = [p.grad for p in params]
        for p in params:
            p.grad = None if hasattr(p, "requires_grad") else 0
        return loss

    return fn


def bench_w9(repeats: int) -> dict[str, tuple]:
    """(GC off, GC on) milliseconds per forward + backward."""
    makers = {
        "nbgrad": (
            lambda v: ng.tensor(v, dtype=ng.float64, requires_grad=True),
            lambda v: ng.tensor(v, dtype=ng.float64),
        ),
        "micrograd": (MicroValue, MicroValue),
    }
    if torch is not None:
        makers["torch"] = (
            lambda v: torch.tensor(v, dtype=torch.float64, requires_grad=True),
            lambda v: torch.tensor(v, dtype=torch.float64),
        )
    steps = {}
    for name, (param, inp) in makers.items():
        off, on = w9_step(param, inp, False), w9_step(param, inp, True)
        steps[name] = (off, on)
    grads = {}
    for name, (off, _) in steps.items():
        off()
        grads[name] = np.array([float(g) for g in off.grads])
    grads["numpy"] = grads["micrograd"]
    check_close("W9 grads", grads, 1e-9, 1e-12)

    def both(off, on):
        def step():
            t0 = time.perf_counter()
            off()
            t1 = time.perf_counter()
            gc.collect()
            t2 = time.perf_counter()
            on()
            return t1 - t0, time.perf_counter() - t2

        return step

    medians = run_rounds({k: both(*v) for k, v in steps.items()}, repeats)
    return {k: tuple(s * 1e3 for s in v) for k, v in medians.items()}


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def fmt(value: float | None, digits: int) -> str:
    if value is None:
        return "n/a"
    if value != value:  # NaN: not measured for this framework (e.g. HIPS forward alone)
        return "-"
    return f"{value:.{digits}f}"


def table_row(label: str, figures: dict[str, tuple], phase: int, digits: int) -> str:
    cells = [fmt(figures[k][phase] if k in figures else None, digits) for k in FRAMEWORKS]
    return f"{label:<30}" + "".join(f"{c:>11}" for c in cells)


def ratio_row(label: str, num: float | None, den: float | None, target: float) -> str:
    if num is None or den is None or num != num or den != den:
        return f"  {label:<44}{'n/a':>8}   target <= {target}"
    ratio = num / den
    verdict = "ok" if ratio <= target else "MISS"
    return f"  {label:<44}{ratio:>8.2f}   target <= {target:<5} {verdict}"


def get(figures: dict[str, tuple], name: str, phase: int = 0) -> float | None:
    return figures[name][phase] if name in figures else None


def header(repeats: int) -> None:
    torch_info = "n/a"
    if torch is not None:
        torch_info = f"{torch.__version__} ({torch.get_num_threads()} threads, default)"
    hips_info = "n/a"
    if hips is not None:
        from importlib.metadata import version

        hips_info = version("autograd")
    print(f"nbgrad engine benchmarks: median of {repeats} repeats after a warm-up")
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, torch {torch_info}, "
        f"autograd {hips_info}, {os.cpu_count()} CPUs, {platform.machine()}"
    )
    print()
    print(f"{'':<30}" + "".join(f"{k:>11}" for k in FRAMEWORKS))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats instead of 7")
    parser.add_argument("--only", default=",".join(WORKLOADS), help="e.g. W1,W3")
    parser.add_argument("--w5-child", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    parser.add_argument("--w3-child", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    parser.add_argument("--w3-samples", default="7,5", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.w3_child:
        w3_child(args.w3_child, *map(int, args.w3_samples.split(",")))
        return
    if args.w5_child:
        w5_child(args.w5_child)
        return
    only = [w.strip().upper() for w in args.only.split(",") if w.strip()]
    unknown = sorted(set(only) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)}; choose from {WORKLOADS}")
    repeats = 3 if args.quick else 7
    header(repeats)
    ratios: list[str] = []

    if "W1" in only:
        for n_ops, f in bench_w1(repeats):
            print(f"W1 {n_ops} ops (us/op)")
            for phase, name in enumerate(("forward", "backward", "total")):
                print(table_row(f"  {name}", f, phase, 3))
            ratios += [
                ratio_row(
                    f"W1 {n_ops} total / HIPS total",
                    get(f, "nbgrad", 2),
                    get(f, "autograd", 2),
                    0.8,
                ),
                ratio_row(
                    f"W1 {n_ops} total / PyTorch total",
                    get(f, "nbgrad", 2),
                    get(f, "torch", 2),
                    1.3,
                ),
                ratio_row(
                    f"W1 {n_ops} backward / PyTorch backward",
                    get(f, "nbgrad", 1),
                    get(f, "torch", 1),
                    1.0,
                ),
            ]
    if "W3" in only:
        f = bench_w3(1 if args.quick else 3, repeats, number=3 if args.quick else 5)
        print(table_row("W3 MLP train step (ms)", f, 0, 2))
        ratios.append(ratio_row("W3 step / NumPy step", get(f, "nbgrad"), get(f, "numpy"), 1.15))
    if "W5" in only:
        f = bench_w5(1 if args.quick else 3)
        print(table_row("W5 peak memory (MB)", f, 0, 1))
        ratios.append(ratio_row("W5 peak / NumPy peak", get(f, "nbgrad"), get(f, "numpy"), 1.1))
    if "W6" in only:
        f = bench_w6(repeats, number=20 if args.quick else 50)
        print(table_row("W6 Hessian-vector product (ms)", f, 0, 3))
        ratios.append(ratio_row("W6 HVP / HIPS HVP", get(f, "nbgrad"), get(f, "autograd"), 1.0))
        ratios.append(ratio_row("W6 HVP / PyTorch HVP", get(f, "nbgrad"), get(f, "torch"), 1.0))
        f = bench_w6_split(repeats, number=20 if args.quick else 50)
        print(table_row("  x of shape (1,) (ms)", f, 0, 3))
        print(table_row("  tanh of the (1000,) x (us)", f, 1, 2))
        if "torch" in f:
            print(
                "  nbgrad / PyTorch, not targets: "
                f"{get(f, 'nbgrad') / get(f, 'torch'):.2f} at shape (1,), "
                f"{get(f, 'nbgrad', 1) / get(f, 'torch', 1):.2f} for the tanh kernel"
            )

    if "W7" in only:
        f = bench_w7(repeats)
        print("W7 mixed chain, 2,000 ops (us/op)")
        for phase, name in enumerate(("forward", "backward", "total")):
            print(table_row(f"  {name}", f, phase, 3))
        ratios += [
            ratio_row("W7 total / PyTorch total", get(f, "nbgrad", 2), get(f, "torch", 2), 1.0),
            ratio_row(
                "W7 backward / PyTorch backward", get(f, "nbgrad", 1), get(f, "torch", 1), 1.0
            ),
        ]
    if "W8" in only:
        f = bench_w8(repeats, number=3 if args.quick else 5)
        print(table_row("W8 1,000 branches (ms)", f, 0, 2))
        ratios.append(ratio_row("W8 / PyTorch", get(f, "nbgrad"), get(f, "torch"), 1.0))
    if "W9" in only:
        f = bench_w9(repeats)
        print(table_row("W9 0-d MLP, GC off (ms)", f, 0, 1))
        print(table_row("W9 0-d MLP, GC on (ms)", f, 1, 1))
        print(
            f"{'  micrograd (floats), off/on':<30}"
            + "".join(f"{fmt(get(f, 'micrograd', p), 1):>11}" for p in (0, 1))
        )
        ratios += [
            ratio_row("W9 GC off / PyTorch GC off", get(f, "nbgrad"), get(f, "torch"), 1.0),
            ratio_row("W9 GC on / nbgrad GC off", get(f, "nbgrad", 1), get(f, "nbgrad"), 1.3),
            ratio_row(
                "W9 GC off / micrograd GC off",
                get(f, "nbgrad"),
                get(f, "micrograd"),
                4.0,
            ),
        ]
    print()
    print("nbgrad ratios against the project's targets")
    print("\n".join(ratios))


if __name__ == "__main__":
    main()
