"""What ``%%autograd`` costs on each shape of graph, at each size, stage by stage (prints
figures; not a test).

    python tests/benchmarks/notebook_shapes.py                     # every shape at 1k and 10k
    python tests/benchmarks/notebook_shapes.py --sizes 1000 10000 100000
    python tests/benchmarks/notebook_shapes.py --shapes rnn fan --sizes 10000
    python tests/benchmarks/notebook_shapes.py --calls 250000      # also a 250,000-call chain

Each cell runs as users meet it: in IPython's shell, with nbgrad's extension loaded, once
plain and once under ``%%autograd`` (live widgets, drawing included), each (shape, size) in
a fresh process so that its memory figures are its own. The shapes, about ``size`` nodes:

- ``chain``: ``h = (h * 1.0001).tanh()`` size / 2 times;
- ``fan``: ``loss = sum(((x * w).tanh()).sum() for w in ws)`` over size / 5 leaves;
- ``rnn``: ``h = (W @ h + U @ xs[t]).tanh()``, size / 4 steps (a step with a side input);
- ``train``: a training loop in one cell (a 8-16-1 MLP, MSE, SGD), size / 10 steps;
- ``transformer``: a ``TransformerEncoder`` of size / 67 layers (d_model 16, 2 heads);
- ``dag``: a random DAG: each call takes two earlier tensors of all made so far (seeded).

Printed for each: the plain cell's time and the magic's (and their ratio), the plain cell
with the backward pass that ``--backward`` runs (``+bwd``: the cell as a user writes it
without the magic, ``loss.backward(retain_graph=True)`` last, as the magic runs it: the rnn's
weight is not a leaf, and its graph is used again) and the magic's ratio to it, and the magic's
wall time; the drawing's stages, each as its own seconds (less the stages it calls) summed
over its calls (and the count): the snapshot (``build_snapshot``, less the layout of the graph
view's first view inside it), the folding (``visible.fold_units``: the series of a visible
graph and their facts, once per set of collapsed groups), the layout less folding and
labels, the edge labels (``place_labels``), the still SVG and the PNG; the rest of the
magic's extra time (recording, the widgets' sync) is what the stages leave; the bytes the
graph widget sends (its snapshot and layout JSON), the bytes a saved notebook keeps of the
cell's outputs (mime bundles and widget state, as ``notebook.py``'s ``saved_size``) and of
that the still pictures' (SVG and base64 PNG); the graph's still picture in px; and the
kernel's memory: RSS growth after a collection, and the peak's growth over the plain
cell's. A graph past ``--max-nodes`` (20,000 by default) is cut, as a user's would be.
Times are the process's CPU seconds (steadier than wall time on a shared machine: at a load
of 10 on 2 cores, wall times of one layout varied 3x between runs), except ``wall``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHAPES = ("chain", "fan", "rnn", "train", "transformer", "dag")


def cell(shape, size):
    """``(setup, body, options)``: code run before (not timed), the cell, the magic's options."""
    if shape == "chain":
        body = (
            f"h = x\nfor i in range({max(1, size // 2)}):\n    h = (h * 1.0001).tanh()\n"
            "loss = h.sum()\n"
        )
        return "x = ng.ones(4, requires_grad=True)\n", body, "--backward loss"
    if shape == "fan":
        setup = (
            f"x = ng.randn(8)\nws = [ng.randn(8, requires_grad=True) for _ in range({size // 5})]\n"
        )
        return setup, "loss = sum(((x * w).tanh()).sum() for w in ws)\n", "--backward loss"
    if shape == "rnn":
        setup = (
            "W = ng.randn(8, 8, requires_grad=True) / 3\nU = ng.randn(8, 8, requires_grad=True)\n"
            f"xs = [ng.randn(8) for _ in range({size // 4})]\n"
        )
        body = (
            "h = ng.zeros(8)\nfor t in range(len(xs)):\n    h = (W @ h + U @ xs[t]).tanh()\n"
            "loss = h.sum()\n"
        )
        return setup, body, "--backward loss"
    if shape == "train":
        setup = (
            "ng.manual_seed(0)\n"
            "model = ng.nn.Sequential(ng.nn.Linear(8, 16), ng.nn.Tanh(), ng.nn.Linear(16, 1))\n"
            "opt = ng.optim.SGD(model.parameters(), lr=0.01)\n"
            "X, Y = ng.randn(32, 8), ng.randn(32, 1)\n"
        )
        body = (
            f"for step in range({max(1, size // 10)}):\n"
            "    opt.zero_grad()\n"
            "    loss = ng.nn.functional.mse_loss(model(X), Y)\n"
            "    loss.backward()\n"
            "    opt.step()\n"
        )
        return setup, body, ""
    if shape == "transformer":
        setup = (
            "ng.manual_seed(0)\n"
            "layer = ng.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, "
            "batch_first=True)\n"
            f"enc = ng.nn.TransformerEncoder(layer, {max(1, size // 67)}, "
            "enable_nested_tensor=False)\n"
            "src = ng.randn(2, 4, 16)\n"
        )
        return setup, "loss = enc(src).pow(2).mean()\n", "--backward loss"
    if shape == "dag":
        setup = "import random\n"
        body = (
            "rng = random.Random(0)\n"
            "pool = [ng.randn(8, requires_grad=True) for _ in range(8)]\n"
            f"for i in range({max(1, size // 2)}):\n"
            "    a, b = pool[rng.randrange(len(pool))], pool[rng.randrange(len(pool))]\n"
            "    pool.append((a * b).tanh() if i % 2 else (a + b.sin()) * 0.5)\n"
            "loss = ng.stack(pool[-64:]).sum()\n"
        )
        return setup, body, "--backward loss"
    raise ValueError(shape)


class Stages:
    """Seconds and calls of each drawing stage, by wrapping the functions where they are
    looked up (the modules that call them)."""

    def __init__(self):
        from nbgrad.notebook import _widget, graph_view, magics, stepper, visible
        from nbgrad.notebook import layout as layout_mod

        self.seconds, self.calls = {}, {}
        self._inner = []  # the time spent in stages inside each stage running
        where = {
            "snapshot": [(graph_view, "build_snapshot"), (magics, "build_snapshot")],
            "layout": [(graph_view, "layout"), (stepper, "layout")],
            "fold": [(visible, "fold_units")],
            "labels": [(layout_mod, "place_labels")],
            "svg": [(graph_view, "snapshot_svg"), (magics, "snapshot_svg")],
            "png": [(_widget, "png_b64"), (magics, "png_b64")],
        }
        for stage, places in where.items():
            for module, name in places:
                if hasattr(module, name):
                    setattr(module, name, self._timed(stage, getattr(module, name)))

    def _timed(self, stage, fn):
        # each stage's own time: a stage called inside another (the layout, in the graph view's
        # first view, inside the snapshot; the folding and labels inside the layout) is taken
        # out of the one around it
        def timed(*args, **kwargs):
            self._inner.append(0.0)
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.process_time() - t0
                own = spent - self._inner.pop()
                if self._inner:
                    self._inner[-1] += spent
                self.seconds[stage] = self.seconds.get(stage, 0.0) + own
                self.calls[stage] = self.calls.get(stage, 0) + 1

        return timed


def _rss():
    import psutil

    return psutil.Process().memory_info().rss


def _peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux


def one(shape, size):
    """Run one (shape, size) in this process; returns the figures as a dict."""
    from IPython.testing.globalipapp import get_ipython
    from IPython.utils.capture import capture_output
    from ipywidgets.widgets.widget import _instances

    sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))
    from notebook import saved_size

    from nbgrad.notebook.graph_view import GraphView

    ip = get_ipython()
    ip.run_line_magic("load_ext", "nbgrad")
    ip.run_cell("import nbgrad as ng")
    setup, body, options = cell(shape, size)
    ip.run_cell(setup)
    gc.collect()
    with capture_output():
        t0, c0 = time.perf_counter(), time.process_time()
        ip.run_cell(body)
        plain, plain_cpu = time.perf_counter() - t0, time.process_time() - c0
    ip.run_cell("loss = h = pool = None")
    gc.collect()
    plain_bwd_cpu = plain_cpu
    if "--backward" in options:  # the plain cell with the backward pass the magic runs
        root = options.split("--backward", 1)[1].split()[0]
        with capture_output():
            c0 = time.process_time()
            ip.run_cell(f"{body}{root}.backward(retain_graph=True)\n")  # (as the magic)
            plain_bwd_cpu = time.process_time() - c0
        ip.run_cell("loss = h = pool = None")
        gc.collect()
    peak_plain = _peak()
    stages = Stages()
    rss = _rss()
    with capture_output() as cap:
        t0, c0 = time.perf_counter(), time.process_time()
        result = ip.run_cell(f"%%autograd {options}\n{body}")
        magic, magic_cpu = time.perf_counter() - t0, time.process_time() - c0
    if not result.success:
        raise RuntimeError(f"{shape} {size}: {result.error_in_exec!r}")
    gc.collect()
    views = [w for w in _instances.values() if isinstance(w, GraphView)]
    view = views[-1]
    sent = len(view._snapshot_json.encode()) + len(view._layout_json.encode())
    svg = view.to_svg()
    head = svg[: svg.index(">")]
    px = [float(head.split(f' {k}="')[1].split('"')[0]) for k in ("width", "height")]
    return {
        "shape": shape,
        "size": size,
        "nodes": len(view.snapshot["nodes"]),
        "boxes": len(view.graph_layout["nodes"]),
        "truncated": bool(view.snapshot.get("truncated")),
        "plain": plain_cpu,
        "plain_bwd": plain_bwd_cpu,
        "magic": magic_cpu,
        "plain_wall": plain,
        "magic_wall": magic,
        "seconds": stages.seconds,
        "calls": stages.calls,
        "sent": sent,
        "saved": saved_size(cap.outputs),
        "pictures": sum(
            len(o.data.get("image/svg+xml", "")) + len(o.data.get("image/png", ""))
            for o in cap.outputs
        ),
        "px": px,
        "rss": _rss() - rss,
        "peak": max(0, _peak() - peak_plain),
    }


def run(shape, size, timeout):
    """``one`` in a fresh process (its memory its own); None when it failed or timed out."""
    code = (
        f"import sys, json; sys.path.insert(0, {str(ROOT)!r}); "
        f"sys.path.insert(0, {str(ROOT / 'tests' / 'benchmarks')!r}); "
        "from notebook_shapes import one; "
        f"print('RESULT ' + json.dumps(one({shape!r}, {size})))"
    )
    try:
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
    except subprocess.TimeoutExpired:
        print(f"  {shape:11} {size:>7,}  did not finish in {timeout} s")
        return None
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    tail = (out.stderr or out.stdout).strip().splitlines()[-3:]
    print(f"  {shape:11} {size:>7,}  failed (exit {out.returncode}): {' | '.join(tail)}")
    return None


STAGES = ("snapshot", "fold", "layout", "labels", "svg", "png")


def show(r):
    s, c = r["seconds"], r["calls"]  # (each stage's own time: Stages)
    parts = [f"{s.get(k, 0.0):6.2f}/{c.get(k, 0)}" for k in STAGES]
    rest = r["magic"] - r["plain"] - sum(s.get(k, 0.0) for k in STAGES)
    cut = "*" if r["truncated"] else " "
    print(
        f"  {r['shape']:11} {r['size']:>7,} {r['nodes']:>6,}{cut}{r['boxes']:>6,} "
        f"{r['plain']:7.2f} {r['magic']:7.2f} {r['magic'] / max(r['plain'], 1e-9):6.1f}x "
        f"{r['plain_bwd']:7.2f} {r['magic'] / max(r['plain_bwd'], 1e-9):6.1f}x "
        f"{r['magic_wall']:7.2f} "
        + " ".join(parts)
        + f" {rest:6.2f} {r['sent'] / 1e3:8,.0f} {r['saved'] / 1e3:8,.0f} "
        f"{r['pictures'] / 1e3:7,.0f} "
        f"{r['px'][0]:>5.0f}x{r['px'][1]:<5.0f} {r['rss'] / 1e6:6.0f} {r['peak'] / 1e6:6.0f}"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    parser.add_argument("--sizes", nargs="+", type=int, default=[1000, 10000])
    parser.add_argument("--calls", type=int, default=0, help="also a chain of this many calls")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per case")
    args = parser.parse_args(argv)
    print(
        "%%autograd by shape and size, in IPython's shell; stage: seconds/calls; "
        "* cut at --max-nodes"
    )
    print(
        f"  {'shape':11} {'size':>7} {'nodes':>7}{'boxes':>6} {'plain':>7} {'magic':>7} "
        f"{'ratio':>7} {'+bwd':>7} {'ratio':>7} {'wall':>7} "
        + " ".join(f"{k:>8}" for k in STAGES)
        + f" {'rest':>6} {'sent kB':>8} {'saved kB':>8} {'pics kB':>7} {'picture':>11} "
        f"{'RSS MB':>6} "
        f"{'peak MB':>6}"
    )
    cases = [(shape, size) for size in args.sizes for shape in args.shapes]
    if args.calls:
        cases.append(("chain", args.calls))
    for shape, size in cases:
        r = run(shape, size, args.timeout)
        if r is not None:
            show(r)
            sys.stdout.flush()


if __name__ == "__main__":
    main()
