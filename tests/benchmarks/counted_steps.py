"""What a counted step of a training loop costs (prints figures; not a test).

    python tests/benchmarks/counted_steps.py            # torch, 30 rounds of 100 steps
    python tests/benchmarks/counted_steps.py --rounds 10 --framework nbgrad
    python tests/benchmarks/counted_steps.py --cell     # where the magic's time goes


The 784-256-10 MLP step of ``notebook_cells.py`` (batch 64, cross entropy, SGD; torch on one
thread), 100 steps a run, in these ways, interleaved in one process (a loaded machine slows
them alike), each given as the median over the rounds of its CPU time minus the plain run's,
per step:

- torch: a TorchFunctionMode that does nothing but pass each call on (torch's own cost of
  watching);
- a recorder as the magic makes it (``keep_steps``, the loop wrapped, the gradient flow
  subscribed): four steps recorded in full, the others counted (NOTE [Repeated steps
  counted] in nbgrad/notebook/steps.py), torch's iterations run with the watch mode off;
- torch: the same with the mode kept on in the counted steps (each call checked for
  NaN/Inf); nbgrad: with every output of a counted step checked (``steps._REARRANGING``
  emptied: a transpose of a weight checked finite is read again);
- the step's end read alone, simulated: the plain step, then each parameter's gradient norm
  (the gradient flow's) and the finite check of the loss and of each parameter.

``--cell`` splits what ``%%autograd`` adds to the 60-step training cell of
``notebook_cells.py`` (IPython's shell, plain and magic cells alternated, medians of the
process's CPU time) into the final drawing (the magic's ``_show``: of it, the graph view's
``refresh``, the snapshot and layout, and the widgets' PNG pictures) and the run (the steps,
recorded and counted, and the magic's setup), for nbgrad's code and PyTorch's.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402 - after the thread settings
import gc  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import notebook_cells  # noqa: E402 - this folder's: the training cell
import numpy as np  # noqa: E402
from IPython.testing.globalipapp import get_ipython  # noqa: E402
from IPython.utils.capture import capture_output  # noqa: E402

import nbgrad as ng  # noqa: E402
from nbgrad.notebook import _widget, graph_view, magics, steps, torch_source  # noqa: E402
from nbgrad.notebook.answers_flow import GradientFlow  # noqa: E402
from nbgrad.notebook.recorder import Recorder  # noqa: E402
from nbgrad.notebook.steps import _finite  # noqa: E402

STEPS = 100


def runs(torch):
    """The ways of running ``STEPS`` steps, by name (``torch``: torch or nbgrad)."""
    torch.manual_seed(0)
    nn, F = torch.nn, torch.nn.functional
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))
    params = list(model.parameters())

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def plain():
        for _ in range(STEPS):
            step()

    def counted():
        rec = Recorder(keep_steps=magics.KEEP_STEPS)
        flow = GradientFlow(rec)
        rec.subscribe(flow.on_record)
        with rec:
            for _ in rec.loop(range(STEPS)):
                step()
        assert rec.counted_steps == STEPS - 4, rec.counted_steps

    def every_output_checked():
        rearranging, steps._REARRANGING = steps._REARRANGING, frozenset()
        try:
            counted()
        finally:
            steps._REARRANGING = rearranging

    def mode_kept_on():
        pause, torch_source._ModeHandle.pause = torch_source._ModeHandle.pause, lambda h: False
        try:
            counted()
        finally:
            torch_source._ModeHandle.pause = pause

    def step_end():
        for _ in range(STEPS):
            loss = step()
            for p in params:
                g = p.grad.numpy().reshape(-1)
                math.sqrt(float(np.dot(g, g)))
            if not (_finite(loss) and all(_finite(p) for p in params)):
                raise AssertionError("the benchmark's loop made a NaN")

    ways = {"plain": plain}
    overrides = getattr(torch, "overrides", None)
    if overrides is not None:

        class PassOn(overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return func(*args, **kwargs) if kwargs else func(*args)

        def mode():
            with PassOn():
                plain()

        ways["a mode that passes calls on"] = mode
    ways["counted (the magic's recorder)"] = counted
    if overrides is not None:
        ways["counted, the mode kept on"] = mode_kept_on
    else:  # (nbgrad has no mode)
        ways["counted, every output checked"] = every_output_checked
    ways["the step's end read alone, simulated"] = step_end
    return ways


def _timed(owner, name, spent):
    """Wrap ``owner.name`` so that its CPU time adds up in ``spent[name]``."""
    f = getattr(owner, name)

    def timed(*args, **kwargs):
        t0 = time.process_time()
        try:
            return f(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.process_time() - t0

    setattr(owner, name, timed)


def cell_parts(rounds):
    """Print where the magic's time goes in the training cell (``--cell``)."""
    spent: dict = {}
    _timed(magics.AutogradMagics, "_show", spent)
    _timed(graph_view.GraphView, "refresh", spent)
    _timed(_widget, "png_b64", spent)
    shell = get_ipython()
    shell.run_line_magic("load_ext", "nbgrad")
    cells = {"plain": notebook_cells.LOOP, "magic": "%%autograd\n" + notebook_cells.LOOP}
    print(
        f"60-step training cell, {rounds} rounds, medians of CPU ms, load {os.getloadavg()[0]:.1f}"
    )
    for framework, setup in notebook_cells.SETUP.items():
        shell.run_cell(setup)
        times: dict = {k: [] for k in ("plain", "magic", "_show", "refresh", "png_b64")}
        for i in range(rounds + 1):
            for k, source in cells.items():
                spent.clear()
                gc.collect()
                with capture_output():
                    t0 = time.process_time()
                    shell.run_cell(source)
                    elapsed = time.process_time() - t0
                if i:  # the first round warms up
                    times[k].append(elapsed)
                    if k == "magic":
                        for part in ("_show", "refresh", "png_b64"):
                            times[part].append(spent.get(part, 0.0))
        m = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        added = m["magic"] - m["plain"]
        print(
            f"  {framework:7} plain {m['plain']:5.1f}, %%autograd {m['magic']:5.1f} "
            f"({m['magic'] / m['plain']:.2f}x, +{added:.1f}): final drawing {m['_show']:.1f} "
            f"(refresh {m['refresh']:.1f}, PNGs {m['png_b64']:.1f}), the run "
            f"+{added - m['_show']:.1f}"
        )


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--cell", action="store_true", help="the magic's cell, split in parts")
    p.add_argument("--framework", choices=["torch", "nbgrad"], default="torch")
    args = p.parse_args()
    if args.cell:
        cell_parts(min(args.rounds, 9))
        return
    if args.framework == "nbgrad":
        ways = runs(ng)
    else:
        try:
            import torch
        except ImportError:
            print("torch is not installed: nothing to measure")
            return
        torch.set_num_threads(1)
        ways = runs(torch)
    for run in ways.values():  # warm up
        run()
    times = {k: [] for k in ways}
    gc.disable()
    try:
        for i in range(args.rounds):
            for k in list(ways) if i % 2 else list(ways)[::-1]:
                t0 = time.process_time()
                ways[k]()
                times[k].append(time.process_time() - t0)
    finally:
        gc.enable()
    plain = statistics.median(times["plain"]) / STEPS * 1e6
    print(
        f"{args.framework}, {STEPS} steps x {args.rounds} rounds, load "
        f"{os.getloadavg()[0]:.1f}; plain step {plain:.0f} us. Over the plain run, per step "
        "(median of the rounds' differences):"
    )
    for k in list(ways)[1:]:
        d = statistics.median(
            (a - b) / STEPS * 1e6 for a, b in zip(times[k], times["plain"], strict=True)
        )
        print(f"  {k:32} {d:6.0f} us  ({d / plain:.2f}x of a plain step)")


if __name__ == "__main__":
    main()
