"""Forward-mode AD: what a tangent costs, nbgrad next to PyTorch, and what dispatch pays for it
when no dual level is entered.

Run from the repository root::

    python tests/benchmarks/forward_ad.py                      # 9 repeats after a warm-up
    python tests/benchmarks/forward_ad.py --quick              # 3 repeats
    python tests/benchmarks/forward_ad.py --baseline ../main   # also: the flag's cost

``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`` keeps BLAS threads from fighting on a loaded
machine.

Workload: an MLP of 4 ``tanh(x @ W + b)`` layers, 128 wide, batch 32, float64. Ways, in
milliseconds per call (median over the repeats, which go round-robin over every way):

- ``plain``: the forward alone, no dual level (the baseline of the ratios);
- ``dual``: the forward on a dual input (forward AD: J v as it runs);
- ``dual, double vjp only``: the same with the explicit rules switched off, every op by the
  generic double-vjp rule (NOTE [Forward-mode AD]): what the explicit rules save;
- ``functional.jvp``: ``autograd.functional.jvp``, the double-vjp trick through reverse mode;
- the same ways in PyTorch where it is installed.

``--baseline DIR`` runs, in subprocesses alternating with this checkout, a micrograd-style
graph of 0-d float64 tensors (forward and backward, no dual level) with another checkout's
nbgrad: the cost of the one flag check per op that forward AD adds to dispatch.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import nbgrad as ng
import nbgrad.autograd.forward_ad as fwAD
from nbgrad._tensor import tangents

try:
    import torch
    import torch.autograd.forward_ad as torch_fwAD
except ImportError:  # PyTorch is optional here
    torch = None

LAYERS, WIDTH, BATCH = 4, 128, 32

SCALAR_GRAPH = """
import statistics, time
import nbgrad as ng
xs = [ng.tensor(0.5 + k / 100, dtype=ng.float64, requires_grad=True) for k in range(64)]
ws = [ng.tensor(0.1 * (k % 7) - 0.3, dtype=ng.float64, requires_grad=True) for k in range(64)]
def step():
    acc = ng.tensor(0.0, dtype=ng.float64)
    for x, w in zip(xs, ws):
        acc = acc + (x * w).tanh() * x - w
    acc.backward()
times = []
for _ in range(40):
    t0 = time.perf_counter(); step(); times.append(time.perf_counter() - t0)
print(statistics.median(times[5:]) * 1e3)
"""


def _model(lib, rng):
    ws = [lib.tensor(rng.standard_normal((WIDTH, WIDTH)) / WIDTH**0.5) for _ in range(LAYERS)]
    bs = [lib.tensor(rng.standard_normal(WIDTH) * 0.1) for _ in range(LAYERS)]

    def f(x):
        for w, b in zip(ws, bs):
            x = (x @ w + b).tanh()
        return x

    return f


def _ways(rng):
    x = rng.standard_normal((BATCH, WIDTH))
    v = rng.standard_normal((BATCH, WIDTH))
    ways = {}
    for name, lib, fw in (("nbgrad", ng, fwAD), ("torch", torch, torch and torch_fwAD)):
        if lib is None:
            continue
        f = _model(lib, np.random.default_rng(1))
        xl, vl = lib.tensor(x), lib.tensor(v)

        def plain(f=f, xl=xl):
            return np.asarray(f(xl))

        def dual(f=f, xl=xl, vl=vl, fw=fw):
            with fw.dual_level():
                return np.asarray(fw.unpack_dual(f(fw.make_dual(xl, vl))).tangent)

        def functional(f=f, xl=xl, vl=vl, lib=lib):
            return np.asarray(lib.autograd.functional.jvp(f, xl, vl)[1])

        ways[f"{name}: plain"] = plain
        ways[f"{name}: dual"] = dual
        if lib is ng:

            def generic(dual=dual):
                rules, linear = tangents._RULES, tangents._LINEAR
                tangents._RULES, tangents._LINEAR = {}, frozenset()
                try:
                    return dual()
                finally:
                    tangents._RULES, tangents._LINEAR = rules, linear

            ways[f"{name}: dual, double vjp only"] = generic
        ways[f"{name}: functional.jvp"] = functional
    return ways


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--baseline", help="another checkout, for the flag's cost (see above)")
    args = ap.parse_args()
    repeats = 3 if args.quick else 9
    ways = _ways(np.random.default_rng(0))
    reference = ways["nbgrad: dual"]()
    for name, way in ways.items():  # the same tangent every way (and a warm-up)
        if "plain" not in name:
            np.testing.assert_allclose(way(), reference, rtol=1e-9, atol=1e-12, err_msg=name)
    times = {name: [] for name in ways}
    for _ in range(repeats):
        for name, way in ways.items():
            t0 = time.perf_counter()
            way()
            times[name].append(time.perf_counter() - t0)
    print(
        f"MLP {LAYERS} x tanh(x @ W + b), {WIDTH} wide, batch {BATCH}, float64; {repeats} repeats"
    )
    for name, ts in times.items():
        lib = name.split(":")[0]
        ms = statistics.median(ts) * 1e3
        base = statistics.median(times[f"{lib}: plain"]) * 1e3
        print(f"  {name:34s} {ms:9.2f} ms   x{ms / base:6.1f} of {lib}'s plain forward")
    if args.baseline:
        _flag_cost(args.baseline, repeats)


def _flag_cost(baseline, repeats):
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    runs = {"this checkout": [], f"baseline ({baseline})": []}
    for _ in range(repeats):
        for ms, root in zip(runs.values(), (here, os.path.abspath(baseline))):
            env = dict(os.environ, PYTHONPATH=root)
            out = subprocess.run(
                [sys.executable, "-c", SCALAR_GRAPH], env=env, cwd=root, capture_output=True,
                text=True, check=True,
            )  # fmt: skip
            ms.append(float(out.stdout))
    print("micrograd-style graph of 0-d tensors (64 terms, forward + backward), no dual level:")
    medians = {label: statistics.median(ms) for label, ms in runs.items()}
    base = medians[f"baseline ({baseline})"]
    for label, ms in medians.items():
        print(f"  {label:34s} {ms:9.3f} ms   x{ms / base:6.3f}")


if __name__ == "__main__":
    main()
