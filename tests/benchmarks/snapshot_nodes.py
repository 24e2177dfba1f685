"""``build_snapshot`` alone, per node, by shape and size (prints figures; not a test).

    python tests/benchmarks/snapshot_nodes.py                       # chain, fan, rnn at 1k, 10k
    python tests/benchmarks/snapshot_nodes.py --sizes 1000 100000 --uncut

A recorder records the cell of ``notebook_shapes.py``'s shape (a chain, a fan, an RNN step) and
its backward pass, then the snapshot is built ``--repeat`` times; printed: the nodes drawn, the
median and the least CPU seconds, and the median per node (flat from 1k to 100k when the
snapshot is linear). ``--uncut`` draws every node (no ``--max-nodes``).
"""

from __future__ import annotations

import argparse
import gc
import time

import nbgrad as ng
from nbgrad.notebook.recorder import Recorder
from nbgrad.notebook.snapshot import MAX_NODES, build_snapshot


def recorded(shape, size):
    """A recorder holding the shape's forward (about ``size`` nodes) and backward pass."""
    rec = Recorder()
    with rec:
        if shape == "chain":
            h = ng.ones(4, requires_grad=True)
            for _ in range(size // 2):
                h = (h * 1.0001).tanh()
            loss = h.sum()
        elif shape == "fan":
            x = ng.randn(8)
            ws = [ng.randn(8, requires_grad=True) for _ in range(size // 5)]
            loss = sum(((x * w).tanh()).sum() for w in ws)
        else:
            W = ng.randn(8, 8, requires_grad=True) / 3
            U = ng.randn(8, 8, requires_grad=True)
            h = ng.zeros(8)
            for x in [ng.randn(8) for _ in range(size // 4)]:
                h = (W @ h + U @ x).tanh()
            loss = h.sum()
        loss.backward(retain_graph=True)
    return rec, loss


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", choices=("chain", "fan", "rnn"),
                        default=["chain", "fan", "rnn"])  # fmt: skip
    parser.add_argument("--sizes", nargs="+", type=int, default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--uncut", action="store_true", help="no --max-nodes cut")
    args = parser.parse_args(argv)
    max_nodes = 10**9 if args.uncut else MAX_NODES
    print(f"  {'shape':6} {'size':>7} {'nodes':>7} {'median s':>9} {'least s':>8} {'us/node':>8}")
    for shape in args.shapes:
        for size in args.sizes:
            rec, loss = recorded(shape, size)
            seconds = []
            for _ in range(args.repeat):
                t0 = time.process_time()
                snap = build_snapshot(rec, max_nodes=max_nodes)
                seconds.append(time.process_time() - t0)
            seconds.sort()
            median, n = seconds[len(seconds) // 2], len(snap["nodes"])
            print(
                f"  {shape:6} {size:>7,} {n:>7,} {median:9.3f} {seconds[0]:8.3f} "
                f"{median / n * 1e6:8.1f}",
                flush=True,
            )
            del rec, loss, snap
            gc.collect()


if __name__ == "__main__":
    main()
