"""The notebook layer's costs (prints figures; not a test).

    python tests/benchmarks/notebook.py              # everything, 15 repeats
    python tests/benchmarks/notebook.py --quick      # 5 repeats, 500-node graphs only
    python tests/benchmarks/notebook.py --only overhead   # or: training, torch, graphs, sent, huge

1. Recorder overhead per forward op: one op loop, run alternately without and with
   ``nbgrad.notebook.record()`` active (same process, same tensors), medians over the repeats;
   the ratio's target is at most 1.5 (see NOTE [Recording cost] in nbgrad/notebook/recorder.py).
   The loop is ``h = (h * w + b).tanh()`` on 16-element tensors, where each op is cheap and
   the recorder's share is largest; a 128x128 ``h @ W`` loop shows a heavier op. The timed
   region is the loop inside ``with record():`` (the garbage collector on, as in a notebook);
   freeing the graph and the records comes after it.
1b. A training loop in one recorded block (as ``%%autograd --static`` around it): nbgrad's
   784-256-10 MLP at batch 256 with SGD, 10 steps a run, alternately plain and recorded
   (medians, ms per step); the ratio's target is at most 1.3.
1c. The same for a PyTorch training step (torch's graph recorded, NOTE [Watching torch] in
   nbgrad/notebook/torch_source.py): a 784-256-10 MLP on a batch of 64, forward, cross entropy,
   backward and an SGD step, run alternately plain and inside ``record()`` (its forward calls
   and the watched backward), torch on one thread, timed as this process's CPU time (steadier
   than wall time on a shared machine); the ratio's target is at most 1.3. Needs torch.
2. Graphs of about 500 and 5,000 nodes (two shapes, each flat and grouped as one module call
   per block, as ``nbgrad.nn`` models are): a deep residual chain ``h = h + tanh(h * w_i)``
   (4 nodes per block: Mul, Tanh, Add and a leaf) and a wide fan ``loss = sum_i
   tanh(x * w_i).sum()`` (5 nodes per block, hundreds of nodes per layer). For each: the time
   to build the snapshot, the layout (groups auto-collapsed as the widget starts, and all
   expanded), the still SVG, and the full snapshot's size (compact JSON).
3. What the graph widget sends and how soon the browser draws it, for chains of 500, 5,000
   and 20,000 nodes and a wide graph of 5,000 (NOTE [Send less] in snapshot.py): the bytes per
   node of the view snapshot and the layout the widget is sent, the kernel's time to build
   them (snapshot, fold, layout), and the time to first render in Chromium: the widget's own
   ES module rendering into a page from those two JSON strings, from ``render()`` to the next
   painted frame (median of 5), with Debian's Chromium at /usr/bin/chromium.
4. A huge cell (``--only huge``): ``%%autograd --backward loss`` around 100,000 calls (a chain of
   ``(h * 1.0001).tanh()``) in IPython's shell, once: the cell's time, the kernel's memory growth
   (RSS after a collection) and the bytes a saved notebook keeps of its outputs (each output's
   mime bundle, and the state of each widget shown, as "Save Widget State" stores it); the graph
   is cut at ``--max-nodes`` (NOTE [A graph cut at max_nodes] in snapshot.py).
5. The first cell that uses torch (``--only first-torch``): in a fresh IPython shell each time
   (3 times, medians), a plain cell that imports torch and runs a small MLP's forward and
   backward (the baseline: the import is most of it), then the same cell under ``%%autograd
   --backward loss``: its time, the time to its first output (the line saying torch is being
   imported, NOTE [A cell that imports torch] in magics.py), and the time of the same cell run
   again. ``NBGRAD_ROOT=DIR`` measures the nbgrad in DIR (say, an export of another commit).
"""

from __future__ import annotations

import argparse
import gc
import json
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


def training_overhead(repeats):
    """A training loop in one recorded cell (``%%autograd --static`` around it): nbgrad's
    784-256-10 MLP, batch 256, cross entropy, SGD, 10 steps a run."""
    ng.manual_seed(0)
    nn = ng.nn
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = ng.optim.SGD(model.parameters(), lr=0.01)
    x, y = ng.randn(256, 784), ng.randint(0, 10, (256,))

    def loop():
        for _ in range(10):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

    for recorded in (False, True):  # warm up
        _timed(loop, recorded)
    plain, recorded = [], []
    for _ in range(repeats):
        plain.append(_timed(loop, False))
        recorded.append(_timed(loop, True))
    p, r = statistics.median(plain) * 100, statistics.median(recorded) * 100
    print("A recorded training loop, 784-256-10 MLP, batch 256, SGD (median of", repeats, "runs)")
    print(
        f"  plain {p:7.2f} ms/step  recorded {r:7.2f} ms/step  ratio {r / p:4.2f}  (target <= 1.3)"
    )


def torch_overhead(repeats):
    try:
        import torch
    except ImportError:
        print("PyTorch training step: torch is not installed (pip install nbgrad[torch])")
        return
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    torch.set_num_threads(1)  # CPU time of this process: steadier on a shared machine

    def timed(recorded):
        gc.collect()
        t0 = time.process_time()
        if recorded:
            with record():
                step()
        else:
            step()
        return time.process_time() - t0

    for recorded in (False, True, False, True):  # warm up
        timed(recorded)
    plain, recorded = [], []
    for _ in range(max(repeats, 15)):
        plain.append(sum(timed(False) for _ in range(5)) / 5)
        recorded.append(sum(timed(True) for _ in range(5)) / 5)
    p, r = statistics.median(plain) * 1e3, statistics.median(recorded) * 1e3
    print(
        "PyTorch training step, 784-256-10 MLP, batch 64, one thread: CPU time, median of",
        max(repeats, 15),
        "runs of 5 steps, alternating",
    )
    print(f"  plain {p:7.3f} ms  recorded {r:7.3f} ms  ratio {r / p:4.2f}  (target <= 1.3)")


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


def _chain_graph(nodes):
    h = ng.randn(16, requires_grad=True)
    for _ in range((nodes - 2) // 2):
        h = h * 1.0001 + 0.001
    return h.sum()


def _wide_graph(nodes):
    x = ng.randn(16, requires_grad=True)
    width = 32
    h = x
    for _ in range(max(1, nodes // (3 * width + 2))):
        s = (h * 0.5).sin()
        for k in range(1, width):
            s = s + (h * (0.5 + k / width)).sin()
        h = s * 0.1
    return h.sum()


RENDER_PAGE = """<!doctype html><html><body><div id="out" style="width:1200px"></div>
<script type="module">
const esm = %s;
const traits = %s;
const mod = await import(URL.createObjectURL(new Blob([esm], {type: "text/javascript"})));
const model = {get: (k) => traits[k], set() {}, save_changes() {}, send() {}, on() {}, off() {}};
window.renderOnce = () => new Promise((done) => {
  const el = document.createElement("div");
  document.getElementById("out").replaceChildren(el);
  const t0 = performance.now();
  mod.default.render({model, el});
  requestAnimationFrame(() => setTimeout(() => done(performance.now() - t0), 0));
});
window.ready = true;
</script></body></html>"""


def sent(repeats):
    """What the graph widget sends, and its first render in Chromium (section 3)."""
    import json
    import tempfile
    from pathlib import Path

    from nbgrad.notebook import GraphView
    from nbgrad.notebook._widget import esm

    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    print("What the graph widget sends, and the browser's first render")
    print(
        f"  {'graph':10} {'nodes':>6} {'boxes':>5} {'bytes/node':>10} {'kernel':>8} {'render':>8}"
    )
    cases = [("chain", _chain_graph, n) for n in (500, 5000, 20000)]
    cases.append(("wide", _wide_graph, 5000))
    pages = []
    for name, make, n in cases:
        root = make(n)
        t_kernel, view = _best(partial(GraphView, root, timings=False), max(1, repeats // 3))
        nodes = len(view.snapshot["nodes"])
        size = len(view._snapshot_json.encode()) + len(view._layout_json.encode())
        traits = {
            "_snapshot_json": view._snapshot_json,
            "_layout_json": view._layout_json,
            "_details_json": "{}",
            "collapsed": view.collapsed,
            "selected": "",
            "live": False,
            "error": "",
        }
        html = RENDER_PAGE % (json.dumps(esm("graph_view.js")), json.dumps(traits))
        pages.append((name, nodes, len(view.graph_layout["nodes"]), size / nodes, t_kernel, html))
        del root, view
    renders = {}
    if sync_playwright is not None and Path("/usr/bin/chromium").is_file():
        with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path="/usr/bin/chromium",
                args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
            )
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            for i, (*_, html) in enumerate(pages):
                path = Path(tmp) / f"g{i}.html"
                path.write_text(html)
                page.goto(f"file://{path}")
                page.wait_for_function("() => window.ready === true")
                times = [page.evaluate("() => window.renderOnce()") for _ in range(5)]
                renders[i] = statistics.median(times)
            browser.close()
    for i, (name, nodes, boxes, per_node, t_kernel, _) in enumerate(pages):
        render = f"{renders[i]:6.0f}ms" if i in renders else "     n/a"
        print(f"  {name:10} {nodes:6} {boxes:5} {per_node:10.0f} {t_kernel:7.2f}s {render:>8}")


# -- 4. a huge cell ----------------------------------------------------------------------------
def chain_cell(options, calls):
    """A ``%%autograd`` cell of ``calls`` recorded calls: a chain of multiplications and tanh."""
    return (
        f"%%autograd {options}\n"
        "x = ng.ones(4, requires_grad=True)\n"
        "h = x\n"
        f"for i in range({calls // 2}):\n"
        "    h = (h * 1.0001).tanh()\n"
        "loss = h.sum()\n"
    )


def saved_size(outputs):
    """Bytes a notebook keeps of a cell's ``outputs`` (IPython's captured outputs): each
    output's mime bundle, and the state of each widget shown (what "Save Widget State"
    stores), counted once."""
    from ipywidgets import Widget
    from ipywidgets.widgets.widget import _instances

    total, models = 0, set()
    for out in outputs:
        total += len(json.dumps(out.data))
        ref = out.data.get("application/vnd.jupyter.widget-view+json")
        if ref is not None:
            models.add(ref["model_id"])
    for model_id in models:
        widgets = [w for w in _instances.values() if w.model_id == model_id]
        total += len(json.dumps(Widget.get_manager_state(widgets=widgets)))
    return total


def huge_cell(calls=100_000):
    import psutil
    from IPython.testing.globalipapp import get_ipython
    from IPython.utils.capture import capture_output

    ip = get_ipython()
    ip.run_line_magic("load_ext", "nbgrad")
    ip.run_cell("import nbgrad as ng")
    proc = psutil.Process()
    gc.collect()
    rss = proc.memory_info().rss
    t0 = time.perf_counter()
    with capture_output() as cap:
        ip.run_cell(chain_cell("--backward loss", calls))
    elapsed = time.perf_counter() - t0
    gc.collect()
    grown = proc.memory_info().rss - rss
    saved = saved_size(cap.outputs)
    print(f"A huge cell: %%autograd --backward loss around {calls:,} calls")
    print(
        f"  time {elapsed:6.2f} s  kernel memory +{grown / 1e6:5.0f} MB  "
        f"saved outputs {saved:,} bytes (target < 2 MB)"
    )


FIRST_TORCH = """
import json, sys, time
from IPython.testing.globalipapp import get_ipython

ip = get_ipython()
ip.run_line_magic("load_ext", "nbgrad")
cell = sys.argv[1]


class FirstWrite:  # stdout that keeps the time of the first thing written
    at = None

    def write(self, text):
        if FirstWrite.at is None and text.strip():
            FirstWrite.at = time.perf_counter()
        return len(text)

    def flush(self):
        pass


real, sys.stdout = sys.stdout, FirstWrite()
t0 = time.perf_counter()
ok = ip.run_cell(cell).success
t1 = time.perf_counter()
ip.run_cell(cell)
t2 = time.perf_counter()
sys.stdout = real
first = (FirstWrite.at or t1) - t0
print(json.dumps({"ok": ok, "first": t1 - t0, "output": first, "again": t2 - t1}))
"""

TORCH_CELL = (
    "import torch\n"
    "torch.manual_seed(0)\n"
    "m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))\n"
    "loss = m(torch.randn(4, 8)).pow(2).mean()\n"
)


def first_torch_cell(repeats=3):
    """Section 5: the first ``%%autograd`` cell that uses torch, in fresh processes."""
    import os
    import subprocess
    from pathlib import Path

    root = os.environ.get("NBGRAD_ROOT") or str(Path(__file__).resolve().parents[2])
    runs = {"plain": [], "autograd": []}
    for _ in range(repeats):
        for kind, cell in (
            ("plain", TORCH_CELL + "loss.backward()\n"),
            ("autograd", "%%autograd --backward loss\n" + TORCH_CELL),
        ):
            out = subprocess.run(
                [sys.executable, "-c", FIRST_TORCH, cell],
                cwd=root,
                capture_output=True,
                text=True,
                check=True,
            )
            result = json.loads(out.stdout.strip().splitlines()[-1])
            assert result["ok"], out.stdout
            runs[kind].append(result)

    def med(kind, key):
        return statistics.median(r[key] for r in runs[kind])

    print(f"The first cell that uses torch (nbgrad in {root}; fresh shells, medians of {repeats})")
    print(f"  plain cell (import torch, forward, backward): {med('plain', 'first'):5.2f} s")
    print(
        f"  %%autograd --backward loss, same code:        {med('autograd', 'first'):5.2f} s, "
        f"first output after {med('autograd', 'output'):5.2f} s; run again "
        f"{med('autograd', 'again'):5.2f} s (plain again {med('plain', 'again'):5.2f} s)"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--only",
        choices=("overhead", "training", "torch", "graphs", "sent", "huge", "first-torch"),
    )
    args = parser.parse_args(argv)
    repeats = 5 if args.quick else 15
    sizes = [500] if args.quick else [500, 5000]
    print(f"python {sys.version.split()[0]}, nbgrad {ng.__version__}")
    if args.only in (None, "overhead"):
        overhead(repeats)
    if args.only in (None, "training"):
        training_overhead(repeats)
    if args.only in (None, "torch"):
        torch_overhead(repeats)
    if args.only in (None, "graphs"):
        graphs(sizes, 1 if args.quick else 3)
    if args.only in (None, "sent"):
        sent(repeats)
    if args.only in (None, "huge"):
        huge_cell()
    if args.only in (None, "first-torch"):
        first_torch_cell()


if __name__ == "__main__":
    main()
