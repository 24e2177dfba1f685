"""What a counted step of a torch training loop costs (prints figures; not a test).

    python tests/benchmarks/counted_steps.py            # 30 rounds of 100 steps
    python tests/benchmarks/counted_steps.py --rounds 10

The 784-256-10 MLP step of ``notebook_cells.py`` (batch 64, cross entropy, SGD; torch on one
thread), 100 steps a run, in four ways, interleaved in one process (a loaded machine slows
them alike), each given as the median over the rounds of its CPU time minus the plain run's,
per step:

- a TorchFunctionMode that does nothing but pass each call on (torch's own cost of watching);
- a recorder as the magic makes it (``keep_steps``, the loop wrapped, the gradient flow
  subscribed): four steps recorded in full, the others counted (NOTE [Repeated steps
  counted] in nbgrad/notebook/steps.py);
- what a counted step would cost with the mode off, simulated: the plain step, then each
  parameter's gradient norm (the gradient flow's) and the finite check of the loss and of
  each parameter at the step's end, all that could still be read without the mode.
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

import numpy as np  # noqa: E402

from nbgrad.notebook import magics  # noqa: E402
from nbgrad.notebook.answers_flow import GradientFlow  # noqa: E402
from nbgrad.notebook.recorder import Recorder  # noqa: E402
from nbgrad.notebook.steps import _finite  # noqa: E402

STEPS = 100


def runs(torch):
    """The four ways of running ``STEPS`` steps, by name."""
    torch.manual_seed(0)
    nn, F = torch.nn, torch.nn.functional
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))
    params = list(model.parameters())

    class PassOn(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **kwargs) if kwargs else func(*args)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def plain():
        for _ in range(STEPS):
            step()

    def mode():
        with PassOn():
            plain()

    def counted():
        rec = Recorder(keep_steps=magics.KEEP_STEPS)
        flow = GradientFlow(rec)
        rec.subscribe(flow.on_record)
        with rec:
            for _ in rec.loop(range(STEPS)):
                step()
        assert rec.counted_steps == STEPS - 4, rec.counted_steps

    def mode_off():
        for _ in range(STEPS):
            loss = step()
            for p in params:
                g = p.grad.numpy().reshape(-1)
                math.sqrt(float(np.dot(g, g)))
            if not (_finite(loss) and all(_finite(p) for p in params)):
                raise AssertionError("the benchmark's loop made a NaN")

    return {
        "plain": plain,
        "a mode that passes calls on": mode,
        "counted (the magic's recorder)": counted,
        "mode off, simulated": mode_off,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=30)
    args = p.parse_args()
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
        f"{STEPS} steps x {args.rounds} rounds, load {os.getloadavg()[0]:.1f}; plain step "
        f"{plain:.0f} us. Over the plain run, per step (median of the rounds' differences):"
    )
    for k in list(ways)[1:]:
        d = statistics.median(
            (a - b) / STEPS * 1e6 for a, b in zip(times[k], times["plain"], strict=True)
        )
        print(f"  {k:32} {d:6.0f} us  ({d / plain:.2f}x of a plain step)")


if __name__ == "__main__":
    main()
