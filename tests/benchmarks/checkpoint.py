"""Activation checkpointing: what recomputation costs, nbgrad next to PyTorch.

Run from the repository root::

    python tests/benchmarks/checkpoint.py            # 9 repeats after a warm-up
    python tests/benchmarks/checkpoint.py --quick    # 3 repeats

On a shared, loaded machine, ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`` keeps the BLAS
threads of both frameworks from fighting over the cores (with the defaults, a step read
about a second on 2 busy cores instead of about 16 ms).

Workload: a stack of 8 ``tanh(x @ W)`` layers, 256 wide, batch 64, float32; forward, ``sum``,
backward. Three ways: no checkpoint, each layer under ``checkpoint(use_reentrant=True)``, each
layer under ``checkpoint(use_reentrant=False)``. Milliseconds per step (median over the
repeats, which go round-robin over every way and framework so that a slow patch of the machine
hits them all alike), and each checkpointed way as a ratio to the plain step of the same
framework in the same run. The gradients of every way are checked against the plain one.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import nbgrad as ng
import nbgrad.utils.checkpoint

try:
    import torch
    import torch.utils.checkpoint
except ImportError:  # PyTorch is optional here
    torch = None

LAYERS, WIDTH, BATCH = 8, 256, 64


def _step(lib, x, weights, mode):
    def layer(h, w):
        return (h @ w).tanh()

    def run():
        for w in weights:
            w.grad = None
        h = x
        for w in weights:
            if mode == "plain":
                h = layer(h, w)
            else:
                h = lib.utils.checkpoint.checkpoint(layer, h, w, use_reentrant=mode == "reentrant")
        h.sum().backward()
        return [np.asarray(w.grad) for w in weights]

    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    repeats = 3 if ap.parse_args().quick else 9
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((BATCH, WIDTH)).astype(np.float32)
    w0 = [(rng.standard_normal((WIDTH, WIDTH)) / 16).astype(np.float32) for _ in range(LAYERS)]
    libs = [ng] + ([torch] if torch is not None else [])
    steps = {}
    for lib in libs:
        x = lib.tensor(x0, requires_grad=True)
        weights = [lib.tensor(w, requires_grad=True) for w in w0]
        for mode in ("plain", "reentrant", "non-reentrant"):
            steps[lib.__name__, mode] = _step(lib, x, weights, mode)
    reference = {}
    for (name, mode), step in steps.items():  # warm-up, and the gradients checked
        grads = step()
        if mode == "plain":
            reference[name] = grads
        for g, r in zip(grads, reference[name]):
            np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-6)
    times = {key: [] for key in steps}
    for _ in range(repeats):
        for key, step in steps.items():
            t0 = time.perf_counter()
            step()
            times[key].append(time.perf_counter() - t0)
    print(f"{LAYERS} x tanh(x @ W), {WIDTH} wide, batch {BATCH}, float32; {repeats} repeats")
    print(f"{'':8} {'way':14} {'ms/step':>9} {'x plain':>8}")
    for (name, mode), samples in times.items():
        median = statistics.median(samples) * 1e3
        plain = statistics.median(times[name, "plain"]) * 1e3
        print(f"{name:8} {mode:14} {median:9.2f} {median / plain:8.2f}")


if __name__ == "__main__":
    main()
