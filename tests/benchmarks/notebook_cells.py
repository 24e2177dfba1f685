"""Cells as users run them, and the graph stages this side of the drawing (prints figures; not
a test).

    python tests/benchmarks/notebook_cells.py                 # everything
    python tests/benchmarks/notebook_cells.py --only training # or: saved, stages, clicks
    python tests/benchmarks/notebook_cells.py --quick         # fewer repeats, 1k and 10k only

1. A 60-step training cell (784-256-10 MLP, batch 64, cross entropy, SGD) run in IPython's
   shell as a user runs it: plain, then under ``%%autograd`` (live widget, the final drawing
   and the still picture beside it included), alternately, medians of the process's CPU time
   (one BLAS thread, torch on one thread: steady on a shared machine); the same with
   the loop in ``with record():`` alone. For nbgrad's code and for PyTorch's (torch on one
   thread). The target is at most 1.3x the plain cell.
1b. The bytes a saved notebook keeps of a cell of each shape (a fan of 2,000 leaves, an RNN
   of 1,000 steps, a 20-step training loop), outputs and widget state.
2. Stages per graph shape and size (about 1k, 10k and 100k nodes): recording (the ops inside
   ``record()``, the backward pass included, minus the same code unrecorded), the snapshot,
   and folding (``fold.find_series`` on the visible graph, and the whole ``layout`` of what
   opens), each with the time per node, so that a stage that grows faster than n log n shows
   as a per-node time that climbs with the size. Shapes: a chain, a fan (``sum`` of distinct
   branches), an RNN step with an input branch, a training loop (one graph per step), a
   residual stack, a transformer stack, a random DAG.
3. Expand and collapse: the time from the graph widget's message (open the biggest series, a
   part of it, fold it again; open the biggest collapsed module group, close it) to the new
   layout JSON, per shape and size. The target is 300 ms at 100k nodes.
"""

from __future__ import annotations

import os

# one BLAS thread (torch: one thread too), so that the process's CPU time, what is timed, is
# steady on a shared machine
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402 - after the thread settings
import gc  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import nbgrad as ng  # noqa: E402
from nbgrad.notebook import build_snapshot, record  # noqa: E402
from nbgrad.notebook.fold import find_series  # noqa: E402
from nbgrad.notebook.layout import default_collapsed, layout  # noqa: E402

# -- 1. a training cell through the magic ------------------------------------------------------
SETUP = {
    "nbgrad": """
import nbgrad as ng
ng.manual_seed(0)
nn, F = ng.nn, ng.nn.functional
model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
opt = ng.optim.SGD(model.parameters(), lr=0.01)
x, y = ng.randn(64, 784), ng.randint(0, 10, (64,))
""",
    "torch": """
import torch
torch.set_num_threads(1)
torch.manual_seed(0)
nn, F = torch.nn, torch.nn.functional
model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))
""",
}
LOOP = """for _ in range(60):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
"""


def training_cells(repeats):
    from IPython.testing.globalipapp import get_ipython
    from IPython.utils.capture import capture_output

    shell = get_ipython()
    shell.run_line_magic("load_ext", "nbgrad")
    cells = {
        "plain": LOOP,
        "%%autograd": "%%autograd\n" + LOOP,
        "record()": "from nbgrad.notebook import record\nwith record():\n"
        + "".join("    " + line + "\n" for line in LOOP.splitlines()),
    }

    def run(source):
        gc.collect()
        with capture_output():
            t0 = time.process_time()
            result = shell.run_cell(source)
            elapsed = time.process_time() - t0
        if not result.success:
            raise RuntimeError(result.error_in_exec or result.error_before_exec)
        return elapsed

    print("60-step training cell, 784-256-10 MLP, batch 64, SGD; IPython's shell, one thread,")
    print(f"the process's CPU time, medians of {repeats} runs, each kind in turn")
    for framework, setup in SETUP.items():
        try:
            shell.run_cell(setup)
            for source in cells.values():
                run(source)  # warm up
        except Exception as e:  # noqa: BLE001 - torch missing: say so
            print(f"  {framework}: not run ({e})")
            continue
        times = {k: [] for k in cells}
        for _ in range(repeats):
            for k, source in cells.items():
                times[k].append(run(source))
        plain = statistics.median(times["plain"])
        figures = "  ".join(
            f"{k} {statistics.median(v) * 1e3:7.1f} ms ({statistics.median(v) / plain:4.2f}x)"
            for k, v in times.items()
        )
        print(f"  {framework:7} {figures}   (target <= 1.3x)")


# -- 1b. the saved size of each shape's cell ---------------------------------------------------
SHAPE_CELLS = {
    "fan of 2,000 leaves": "%%autograd --backward loss\n"
    "x = ng.randn(8, requires_grad=True)\n"
    "ws = [ng.randn(8, requires_grad=True) for _ in range(2000)]\n"
    "loss = sum(((x * w).tanh()).sum() for w in ws)",
    "RNN of 1,000 steps": "%%autograd --backward loss\n"
    "W, U = ng.randn(8, 8, requires_grad=True), ng.randn(8, 4, requires_grad=True)\n"
    "xs, h = ng.randn(1000, 4), ng.zeros(8)\n"
    "for t in range(1000):\n"
    "    h = (W @ h * 0.1 + U @ xs[t]).tanh()\n"
    "loss = h.sum()",
    "training loop of 20 steps": "%%autograd\n"
    "model = ng.nn.Sequential(ng.nn.Linear(4, 8), ng.nn.Tanh(), ng.nn.Linear(8, 1))\n"
    "opt = ng.optim.SGD(model.parameters(), lr=0.1)\n"
    "x, y = ng.randn(16, 4), ng.randn(16, 1)\n"
    "for step in range(20):\n"
    "    opt.zero_grad()\n"
    "    loss = ((model(x) - y) ** 2).mean()\n"
    "    loss.backward()\n"
    "    opt.step()",
}


def saved_sizes():
    """The bytes a notebook keeps of each shape's cell (outputs and widget state)."""
    from IPython.testing.globalipapp import get_ipython
    from IPython.utils.capture import capture_output

    from tests.benchmarks.notebook import saved_size

    shell = get_ipython()
    shell.run_line_magic("load_ext", "nbgrad")
    shell.run_cell("import nbgrad as ng")
    print("Saved size of each shape's cell (outputs and widget state; target < 2 MB)")
    for name, cell in SHAPE_CELLS.items():
        with capture_output() as cap:
            t0 = time.process_time()
            result = shell.run_cell(cell)
            elapsed = time.process_time() - t0
        if not result.success:
            raise RuntimeError(result.error_in_exec)
        print(f"  {name:26} {saved_size(cap.outputs):10,} bytes  cell {elapsed:5.2f} s CPU")


# -- 2. stages per shape and size --------------------------------------------------------------
def chain(n):
    h = ng.randn(4, requires_grad=True)
    for _ in range(n // 2):
        h = (h * 1.0001).tanh()
    return h.sum(), []


def fan(n):
    x = ng.randn(4, requires_grad=True)
    ws = [ng.randn(4, requires_grad=True) for _ in range(n // 5)]
    return sum((x * w).tanh().sum() for w in ws), ws


def rnn(n):
    W, U = ng.randn(4, 4, requires_grad=True), ng.randn(4, 3, requires_grad=True)
    xs = ng.randn(n // 4, 3)
    h = ng.zeros(4)
    for t in range(n // 4):
        h = (W @ h * 0.5 + U @ xs[t]).tanh()
    return h.sum(), [W, U]


def training(n):
    nn = ng.nn
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    x, y = ng.randn(8, 4), ng.randn(8, 1)
    loss = None
    for _ in range(max(1, n // 14)):
        loss = ((model(x) - y) ** 2).mean()
        model.zero_grad()
        loss.backward()
    return None, [model]


def residual(n):
    h = ng.randn(4, requires_grad=True)
    ws = [ng.randn(4, requires_grad=True) for _ in range(n // 4)]
    for w in ws:
        h = h + (h * w).tanh()
    return h.sum(), ws


def transformer(n):
    nn = ng.nn
    layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, max(1, n // 67), enable_nested_tensor=False)
    return enc(ng.randn(2, 4, 16)).pow(2).mean(), [enc]


def random_dag(n):
    rng = random.Random(0)
    xs = [ng.randn(4, requires_grad=True) for _ in range(8)]
    made = list(xs)
    ops = (lambda a, b: a + b, lambda a, b: a * b, lambda a, b: (a - b).tanh())
    for _ in range(n // 2):
        a, b = made[-1 - rng.randrange(min(len(made), 20))], made[rng.randrange(len(made))]
        made.append(rng.choice(ops)(a, b))
    return made[-1].sum(), xs


SHAPES = {
    "chain": chain,
    "fan": fan,
    "rnn": rnn,
    "training": training,
    "residual": residual,
    "transformer": transformer,
    "random DAG": random_dag,
}


def stages(sizes, shapes, repeats):
    print("Stages per shape and size: CPU time, median of", repeats, "runs, ms (us per node)")
    head = (
        f"  {'shape':11} {'nodes':>7} {'record':>16} {'snapshot':>16} {'fold':>16} {'layout':>16}"
    )
    print(head + "  boxes at open")
    for name in shapes:
        make = SHAPES[name]
        for size in sizes:
            rows = {"record": [], "snapshot": [], "fold": [], "layout": []}
            for _ in range(repeats):
                ng.manual_seed(0)
                gc.collect()
                t0 = time.process_time()
                loss, keep = make(size)
                if loss is not None:
                    loss.backward()
                plain = time.process_time() - t0
                del loss, keep
                ng.manual_seed(0)
                gc.collect()
                t0 = time.process_time()
                with record() as rec:
                    loss, keep = make(size)
                    if loss is not None:
                        loss.backward()
                rows["record"].append(time.process_time() - t0 - plain)
                t0 = time.process_time()
                snap = build_snapshot(rec, max_nodes=10**7, timings=False)
                rows["snapshot"].append(time.process_time() - t0)
                collapsed = default_collapsed(snap)
                t0 = time.process_time()
                lay = layout(snap, collapsed)
                rows["layout"].append(time.process_time() - t0)
                rows["fold"].append(_fold_time(snap))
                del rec, loss, keep
            nodes = len(snap["nodes"])
            cells = []
            for k in ("record", "snapshot", "fold", "layout"):
                m = statistics.median(rows[k])
                cells.append(f"{m * 1e3:8.1f} ({m / nodes * 1e6:5.1f})")
            print(f"  {name:11} {nodes:7,} {' '.join(cells)}  {len(lay['nodes'])}")


def _fold_time(snap):
    """Seconds for ``find_series`` on the snapshot's nodes, every node shown."""
    order = [n["id"] for n in snap["nodes"]]
    kind = {n["id"]: n["name"] for n in snap["nodes"]}
    succ = {u: [] for u in order}
    pred = {u: [] for u in order}
    for e in snap["edges"]:
        succ[e["from"]].append(e["to"])
        pred[e["to"]].append(e["from"])
    t0 = time.process_time()
    find_series(order, kind, succ, pred)
    return time.process_time() - t0


# -- 3. expand and collapse clicks -------------------------------------------------------------
CLICKS = ("series", "part", "fold", "group", "regroup", "ungroup", "reveal")


def clicks(sizes, shapes, repeats):
    """The time from a graph widget's expand or collapse message to its new layout JSON, on
    each shape and size, every node in the snapshot (no cut): the view as it opens, then
    ``series`` opens its biggest folded series, ``part`` the biggest part that shows,
    ``fold`` folds the series again; before those ``group`` opens the biggest collapsed module
    group (the first time: ``regroup`` is the later rounds, whose view the widget keeps), after
    them ``ungroup`` closes it; after the rounds, ``reveal`` shows and selects the node a third
    down the snapshot (the search box's choice: the first selection of the view). Medians of
    ``repeats`` rounds, CPU ms; "-" where the view has nothing of the kind."""
    from nbgrad.notebook.graph_view import GraphView

    print(f"Expand/collapse: message to layout JSON, CPU ms, median of {repeats} rounds")
    print(f"  {'shape':11} {'nodes':>7} {'open':>8} " + " ".join(f"{k:>8}" for k in CLICKS))
    for name in shapes:
        for size in sizes:
            ng.manual_seed(0)
            gc.collect()
            with record() as rec:
                loss, keep = SHAPES[name](size)
                if loss is not None:
                    loss.backward()
            t0 = time.process_time()
            view = GraphView(recorder=rec, max_nodes=10**7, timings=False)
            opened = time.process_time() - t0
            times = {k: [] for k in CLICKS}
            for k in range(repeats):
                _click_round(view, times, "group" if k == 0 else "regroup")
            gc.collect()
            mid = view.snapshot["nodes"][len(view.snapshot["nodes"]) // 3]["id"]
            t0 = time.process_time()
            view._receive({"type": "reveal", "id": mid})
            times["reveal"].append(time.process_time() - t0)
            assert not view.error, view.error
            cells = [
                f"{statistics.median(v) * 1e3:8.1f}" if v else f"{'-':>8}" for v in times.values()
            ]
            nodes = len(view.snapshot["nodes"])
            print(f"  {name:11} {nodes:7,} {opened * 1e3:8.0f} " + " ".join(cells))
            del view, rec, loss, keep


def _click_round(view, times, group="group"):
    """One round of clicks on ``view`` (see ``clicks``), each time appended to ``times``; the
    group's opening as ``group``."""

    def click(kind, **content):
        gc.collect()
        t0 = time.process_time()
        view._receive(content)
        times[kind].append(time.process_time() - t0)
        assert not view.error, view.error

    def biggest(series):
        return max(series, key=lambda s: s["nodes"])["id"] if series else None

    sizes, parent = {}, {g["id"]: g["parent"] for g in view.snapshot["groups"]}
    for n in view.snapshot["nodes"]:
        g = n["group"]
        while g is not None:
            sizes[g] = sizes.get(g, 0) + 1
            g = parent[g]
    shut = [g for g in view.graph_layout["collapsed"] if g in sizes]
    gid = max(shut, key=sizes.__getitem__) if shut else None
    if gid is not None:  # (first: a transformer opens as one box, its layers inside)
        click(group, type="toggle", group=gid)
    folded = [s for s in view.graph_layout["series"] if not s["expanded"]]
    sid = biggest(folded)
    if sid is not None:
        before = {s["id"] for s in view.graph_layout["series"]}
        click("series", type="toggle_series", series=sid)
        parts = [s for s in view.graph_layout["series"] if s["id"] not in before]
        part = biggest([s for s in parts if not s["expanded"]])
        if part is not None:
            click("part", type="toggle_series", series=part)
            click("fold", type="toggle_series", series=part)  # (back as it was)
            times["fold"].pop()
        click("fold", type="toggle_series", series=sid)
    if gid is not None:
        click("ungroup", type="toggle", group=gid)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", choices=["training", "saved", "stages", "clicks"])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--sizes", help="node counts, comma-separated (default 1000,10000,100000)")
    p.add_argument("--shapes", help="shapes, comma-separated (default all: " + ", ".join(SHAPES))
    args = p.parse_args()
    if args.only in (None, "training"):
        training_cells(3 if args.quick else 7)
    if args.only in (None, "saved"):
        saved_sizes()
    if args.only in (None, "stages"):
        sizes = [1000, 10000] if args.quick else [1000, 10000, 100000]
        if args.sizes:
            sizes = [int(s) for s in args.sizes.split(",")]
        shapes = args.shapes.split(",") if args.shapes else list(SHAPES)
        stages(sizes, shapes, 1 if args.quick else 3)
    if args.only in (None, "clicks"):
        sizes = [1000, 10000] if args.quick else [1000, 10000, 100000]
        if args.sizes:
            sizes = [int(s) for s in args.sizes.split(",")]
        shapes = args.shapes.split(",") if args.shapes else list(SHAPES)
        clicks(sizes, shapes, 1 if args.quick else 3)


if __name__ == "__main__":
    main()
