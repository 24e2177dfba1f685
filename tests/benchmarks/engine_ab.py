"""nbgrad's engine workloads in two checkouts, alternately, in CPU time: for a change that must
not slow the engine, on a machine others load too.

Run from the repository root::

    python tests/benchmarks/engine_ab.py --base ../main             # 10 rounds
    python tests/benchmarks/engine_ab.py --base ../main --rounds 4 --wall

Each round runs one fresh process in ``--base`` (a checkout to compare with, say a worktree of
main), then one in this checkout; each process imports its own nbgrad and times nbgrad's part of
``tests/benchmarks/engine.py`` (the same functions, so the same work): W1 at 2,000 ops, W7, W8,
W6 and its (1,) split, and W9 with the collector off, each the median of a few calls after a
warm-up. Time is the process's CPU time (``time.process_time``) unless ``--wall``: waiting for
a core that other programs hold does not count, so figures from a loaded machine stay near
those of a quiet one. The table gives the median over the rounds of each figure and the ratio
of this checkout to the base.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def child(wall: bool) -> None:
    """Time the workloads in the checkout that is the current directory; print JSON."""
    if not wall:
        time.perf_counter = time.process_time  # (engine.py's steps read perf_counter)
    sys.path.insert(0, os.path.join(os.getcwd(), "tests", "benchmarks"))
    sys.path.insert(0, os.getcwd())
    sys.argv = ["engine.py"]
    import engine
    import numpy as np

    import nbgrad as ng

    def median_of(step, n):
        step()
        return [statistics.median(c) for c in zip(*[step() for _ in range(n)])]

    out = {}
    steps, _ = engine.w1_steps(np.random.default_rng(1).standard_normal(16), 2000)
    fwd, bwd, total = median_of(steps["nbgrad"], 5)[:3]
    out.update({"W1 fwd us/op": fwd, "W1 bwd us/op": bwd, "W1 total us/op": total})
    out = {k: v * 1e6 / 2000 for k, v in out.items()}
    fwd, bwd, total = median_of(engine.w7_step(ng, np.random.default_rng(7).standard_normal(16)), 5)
    n = engine.W7_OPS
    out.update({"W7 fwd us/op": fwd * 1e6 / n, "W7 bwd us/op": bwd * 1e6 / n})
    out["W7 total us/op"] = total * 1e6 / n
    w8 = engine.w8_step(ng, np.random.default_rng(8).standard_normal(64))
    out["W8 ms"] = median_of(engine.per_call(w8, 3), 5)[0] * 1e3
    rng = np.random.default_rng(6)
    x0, v0 = rng.standard_normal(1000), rng.standard_normal(1000)
    for label, k in (("W6 ms", 1000), ("W6 (1,) ms", 1)):
        hvp = engine._hvp(ng, ng.tensor(x0[:k], requires_grad=True), ng.tensor(v0[:k]))
        out[label] = median_of(engine.per_call(hvp, 50), 5)[0] * 1e3
    w9 = engine.w9_step(
        lambda v: ng.tensor(v, dtype=ng.float64, requires_grad=True),
        lambda v: ng.tensor(v, dtype=ng.float64),
        False,
    )
    out["W9 GC off ms"] = median_of(engine.per_call(w9, 1), 3)[0] * 1e3
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", help="the checkout to compare with (required)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--wall", action="store_true", help="wall-clock time, not CPU time")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.wall)
    if args.base is None:
        parser.error("--base is required")
    me = os.path.abspath(__file__)
    runs = {"base": [], "this": []}
    for r in range(args.rounds):
        for name, where in (("base", os.path.abspath(args.base)), ("this", ROOT)):
            cmd = [sys.executable, me, "--child"] + (["--wall"] if args.wall else [])
            proc = subprocess.run(cmd, cwd=where, capture_output=True, text=True, check=True)
            runs[name].append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(f"round {r + 1}/{args.rounds}", file=sys.stderr)
    clock = "wall-clock" if args.wall else "CPU"
    print(f"nbgrad engine workloads, {clock} time, median of {args.rounds} alternated rounds")
    print(f"{'':18s} {'base':>10s} {'this':>10s} {'this/base':>10s}")
    for key in runs["base"][0]:
        base = statistics.median(r[key] for r in runs["base"])
        this = statistics.median(r[key] for r in runs["this"])
        print(f"{key:18s} {base:10.3f} {this:10.3f} {this / base:10.3f}")


if __name__ == "__main__":
    main()
