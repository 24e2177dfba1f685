"""Time the notebook layer on large graphs: snapshot, layout, SVG (prints figures).

    python tests/benchmarks/notebook_layout.py [nodes ...]

Two shapes, each optionally grouped as one module call per block (as ``nbgrad.nn`` models
are): a deep residual chain ``h = h + tanh(h * w_i)`` (4 nodes per block: Mul, Tanh, Add and a
leaf), and a wide fan ``loss = sum_i tanh(x * w_i).sum()`` (5 nodes per block, hundreds of
nodes per layer).
"""

import sys
import time

import nbgrad as ng
from nbgrad.notebook import build_snapshot, record
from nbgrad.notebook import recorder as recorder_mod
from nbgrad.notebook.layout import default_collapsed, layout
from nbgrad.notebook.svg import snapshot_svg


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


def measure(nodes, shape, grouped):
    t0 = time.perf_counter()
    rec, blocks = build(nodes, shape, grouped)
    t1 = time.perf_counter()
    snap = build_snapshot(rec, timings=False)
    t2 = time.perf_counter()
    collapsed = default_collapsed(snap)
    lay = layout(snap, collapsed)
    t3 = time.perf_counter()
    svg = snapshot_svg(snap, collapsed)
    t4 = time.perf_counter()
    lay_full = layout(snap, [])
    t5 = time.perf_counter()
    return {
        "shape": shape,
        "nodes": len(snap["nodes"]),
        "grouped": grouped,
        "visible": len(lay["nodes"]),
        "record+backward_s": t1 - t0,
        "snapshot_s": t2 - t1,
        "layout_s": t3 - t2,
        "svg_s": t4 - t3,
        "svg_kB": len(svg) / 1e3,
        "layout_all_expanded_s": t5 - t4,
        "expanded_visible": len(lay_full["nodes"]),
    }


if __name__ == "__main__":
    sizes = [int(a) for a in sys.argv[1:]] or [500, 5000]
    for n in sizes:
        for shape in ("chain", "wide"):
            for grouped in (False, True):
                r = measure(n, shape, grouped)
                print(
                    "  ".join(
                        f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()
                    )
                )
