"""What ``record()`` alone costs on a long chain, forward and backward apart, and what it
keeps per node (prints figures; not a test).

    python tests/benchmarks/recording.py            # 50,000 steps: a 100,000-node chain
    python tests/benchmarks/recording.py 10000

The cell is ``h = (h * 1.0001).tanh()`` ``steps`` times, then ``h.sum().backward()``, run
alternately plain, with forward calls recorded only, backward passes only, and both (CPU
seconds, medians of 3). Then the memory the recorder still holds after the cell
(``tracemalloc``, after a collection), per node. ``notebook_shapes.py`` measures the same
chain under ``%%autograd`` with the drawing.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
import tracemalloc

import nbgrad as ng
from nbgrad.notebook import record

MODES = {"plain": None, "forward": {"backward": False}, "backward": {"forward": False}, "both": {}}


def cell(steps):
    x = ng.ones(4, requires_grad=True)
    h = x
    for _ in range(steps):
        h = (h * 1.0001).tanh()
    return x, h.sum()


def timed(steps, kwargs):
    """CPU seconds of the forward and of the backward, recorded as ``kwargs`` says."""
    gc.collect()
    t0 = time.process_time()
    if kwargs is None:
        _x, loss = cell(steps)
        t1 = time.process_time()
        loss.backward()
    else:
        with record(**kwargs):
            _x, loss = cell(steps)
            t1 = time.process_time()
            loss.backward()
    return t1 - t0, time.process_time() - t1


def kept(steps):
    """Bytes the recorder holds after the cell, once the user's tensors are gone."""
    cell(steps)[1].backward()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        with record() as rec:
            _x, loss = cell(steps)
            loss.backward()
        del _x, loss
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before, rec
    finally:
        tracemalloc.stop()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    steps = int(argv[0]) if argv else 50_000
    nodes = 2 * steps + 2
    runs = {mode: [] for mode in MODES}
    timed(steps, MODES["both"])  # (warm up: the op tables, the recorder's first imports)
    for _ in range(3):
        for mode, kwargs in MODES.items():
            runs[mode].append(timed(steps, kwargs))
    print(
        f"record() around a chain of {nodes:,} nodes "
        "(CPU s, median of 3, alternated, after a warm-up run)"
    )
    for mode, times in runs.items():
        fwd = statistics.median(f for f, _ in times)
        bwd = statistics.median(b for _, b in times)
        print(f"  {mode:9} forward {fwd:6.3f}  backward {bwd:6.3f}")
    size, _rec = kept(steps)
    print(f"  kept after the cell: {size / 1e6:.1f} MB, {size / nodes:,.0f} B a node")


if __name__ == "__main__":
    main()
