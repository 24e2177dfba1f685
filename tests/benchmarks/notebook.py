"""The notebook layer's costs (prints figures; not a test).

    python tests/benchmarks/notebook.py              # everything, 15 repeats
    python tests/benchmarks/notebook.py --quick      # 5 repeats, 500-node graphs only
    python tests/benchmarks/notebook.py --only overhead   # or: graphs

1. Recorder overhead per forward op: one op loop, run alternately without and with
   ``nbgrad.notebook.record()`` active (same process, same tensors), medians over the repeats;
   the ratio's target is at most 1.5 (see NOTE [Recording cost] in nbgrad/notebook/recorder.py).
   The loop is ``h = (h * w + b).tanh()`` on 16-element tensors, where each op is cheap and
   the recorder's share is largest; a 128x128 ``h @ W`` loop shows a heavier op. The timed
   region is the loop inside ``with record():`` (the garbage collector on, as in a notebook);
   freeing the graph and the records comes after it.
2. Graphs of about 500 and 5,000 nodes (two shapes, each flat and grouped as one module call
   per block, as ``nbgrad.nn`` models are): a deep residual chain ``h = h + tanh(h * w_i)``
   (4 nodes per block: Mul, Tanh, Add and a leaf) and a wide fan ``loss = sum_i
   tanh(x * w_i).sum()`` (5 nodes per block, hundreds of nodes per layer). For each: the time
   to build the snapshot, the layout (groups auto-collapsed as the widget starts, and all
   expanded), the still SVG, and the snapshot's size as the widget sends it (compact JSON).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from functools import partial

import nbgrad as ng
from nbgrad.notebook import build_snapshot, record
from nbgrad.notebook import recorder as recorder_mod
from nbgrad.notebook.layout import default_collapsed, layout
from nbgrad.notebook.svg import snapshot_svg


# -- 1. recorder overhead ----------------------------------------------------------------------
def small_loop(n=1000):
    x = ng.randn(16, requires_grad=True)
    w = ng.full((16,), 0.5, requires_grad=True)
    b = ng.full((16,), 0.1, requires_grad=True)

    def run():
        h = x
        for _ in range(n):
            h = (h * w + b).tanh()
        return h.sum()

    return run, 3 * n + 1


def matmul_loop(n=300):
    x = ng.randn(128, 128, requires_grad=True)
    weight = ng.randn(128, 128) / 8  # gain > 1: tanh keeps h away from denormal numbers
    weight.requires_grad_()

    def run():
        h = x
        for _ in range(n):
            h = (h @ weight).tanh()
        return h.sum()

    return run, 2 * n + 1


def _timed(fn, recorded):
    """Seconds for one run of ``fn`` (the graph it builds is freed outside the timing)."""
    gc.collect()
    if recorded:
        rec = record()
        t0 = time.perf_counter()
        with rec:
            out = fn()
        elapsed = time.perf_counter() - t0
    else:
        rec = None
        t0 = time.perf_counter()
        out = fn()
        elapsed = time.perf_counter() - t0
    del out, rec
    return elapsed


def overhead(repeats):
    print("Recorder overhead per forward op (median of", repeats, "runs, alternating)")
    for name, make in (
        ("small: (h * w + b).tanh(), 16 elements", small_loop),
        ("matmul: (h @ W).tanh(), 128x128", matmul_loop),
    ):
        fn, ops = make()
        fn()  # warm up
        _timed(fn, True)
        plain, recorded = [], []
        for _ in range(repeats):
            plain.append(_timed(fn, False))
            recorded.append(_timed(fn, True))
        p = statistics.median(plain) / ops * 1e6
        r = statistics.median(recorded) / ops * 1e6
        print(
            f"  {name:42} {ops:5} ops  plain {p:7.2f} us/op  recorded {r:7.2f} us/op  "
            f"+{r - p:5.2f} us  ratio {r / p:4.2f}"
        )


# -- 2. graphs: snapshot, layout, SVG, size ----------------------------------------------------
class Block:
    def __init__(self):
        self.w = ng.randn(8, requires_grad=True)

    def named_parameters(self, recurse=True):
        return [("w", self.w)]

    def __call__(self, h):
        token = recorder_mod.module_enter(self)
        try:
            return h + (h * self.w).tanh()
        finally:
            recorder_mod.module_exit(token)


def build(nodes, shape, grouped):
    """A recorder holding about ``nodes`` nodes, with a backward pass (and its modules)."""
    per_block = 4 if shape == "chain" else 5
    blocks = [Block() for _ in range(max(1, nodes // per_block))]
    x = ng.randn(8, requires_grad=True)
    with record() as rec:
        if shape == "chain":
            h = x
            for b in blocks:
                h = b(h) if grouped else h + (h * b.w).tanh()
            loss = h.sum()
        else:
            terms = [(b(x) if grouped else (x * b.w).tanh() + x).sum() for b in blocks]
            loss = terms[0]
            for t in terms[1:]:
                loss = loss + t
        loss.backward()
    return rec, blocks


def _best(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def graphs(sizes, repeats):
    from nbgrad.notebook._widget import dumps

    print("Graphs: seconds (best of", repeats, "runs) and snapshot size (compact JSON)")
    print(
        f"  {'graph':24} {'nodes':>5} {'shown':>5} {'snapshot':>9} {'layout':>8} "
        f"{'expanded':>9} {'svg':>7} {'json':>9}"
    )
    for n in sizes:
        for shape in ("chain", "wide"):
            for grouped in (False, True):
                rec, blocks = build(n, shape, grouped)
                t_snap, snap = _best(partial(build_snapshot, rec, timings=False), repeats)
                collapsed = default_collapsed(snap)
                t_lay, lay = _best(partial(layout, snap, collapsed), repeats)
                t_full, _ = _best(partial(layout, snap, []), repeats)
                t_svg, _ = _best(partial(snapshot_svg, snap, collapsed, lay), repeats)
                size = len(dumps(snap).encode())
                label = f"{shape}{', grouped' if grouped else ''}"
                print(
                    f"  {label:24} {len(snap['nodes']):5} {len(lay['nodes']):5} "
                    f"{t_snap:8.3f}s {t_lay:7.3f}s {t_full:8.3f}s {t_svg:6.3f}s "
                    f"{size / 1e3:7.0f} kB"
                )
                del rec, blocks, snap, lay


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=("overhead", "graphs"))
    args = parser.parse_args(argv)
    repeats = 5 if args.quick else 15
    sizes = [500] if args.quick else [500, 5000]
    print(f"python {sys.version.split()[0]}, nbgrad {ng.__version__}")
    if args.only in (None, "overhead"):
        overhead(repeats)
    if args.only in (None, "graphs"):
        graphs(sizes, 1 if args.quick else 3)


if __name__ == "__main__":
    main()
