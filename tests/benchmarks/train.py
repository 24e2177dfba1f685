"""Training-step benchmark on scikit-learn's digits: nbgrad next to PyTorch, same models.

Run from the repository root::

    python tests/benchmarks/train.py             # 7 repeats after a warm-up
    python tests/benchmarks/train.py --repeats 3

Two models, in float32, batch 64, trained with Adam (lr 1e-2) and cross-entropy:

- MLP: Linear(64, 128) - ReLU - Linear(128, 10) on the flattened 8x8 images;
- CNN: Conv2d(1, 8, 3, padding=1) - ReLU - Conv2d(8, 16, 3, stride=2, padding=1) - ReLU -
  Flatten - Linear(256, 10) on the 1x8x8 images.

One timed call is ``--steps`` training steps (``optimizer.zero_grad(); loss_fn(model(input),
target).backward(); optimizer.step()``) over consecutive batches of a fixed shuffle; the figure
is the median over the repeats of the milliseconds per step. The frameworks go round-robin
(nbgrad, then PyTorch) with ``gc.collect()`` before each timed call, so that a slow patch of
the machine hits both. Both start from the same weights (nbgrad's, copied into PyTorch) and
their losses after the warm-up are compared. Thread counts are left at their defaults.
"""

from __future__ import annotations

import argparse
import gc
import platform
import statistics
import time

import numpy as np
from sklearn.datasets import load_digits

import nbgrad as ng

try:
    import torch
except ImportError:
    torch = None

BATCH = 64


def build(lib, kind):
    nn = lib.nn
    if kind == "MLP":
        return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(8, 16, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(16 * 4 * 4, 10),
    )


def batches(kind, seed=0):
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    if kind == "CNN":
        x = x.reshape(-1, 1, 8, 8)
    order = np.random.default_rng(seed).permutation(len(x))
    n = len(order) // BATCH
    return [
        (x[order[i * BATCH : (i + 1) * BATCH]], y[order[i * BATCH : (i + 1) * BATCH]])
        for i in range(n)
    ]


class Trainer:
    """One framework's model, optimizer and data; ``run(steps)`` returns the last loss."""

    def __init__(self, lib, kind, state):
        self.lib = lib
        self.model = build(lib, kind)
        self.model.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
        self.optimizer = lib.optim.Adam(self.model.parameters(), lr=1e-2)
        self.loss_fn = lib.nn.CrossEntropyLoss()
        self.data = [
            (lib.from_numpy(x), lib.from_numpy(y.astype(np.int64))) for x, y in batches(kind)
        ]
        self.i = 0

    def run(self, steps):
        model, optimizer, loss_fn = self.model, self.optimizer, self.loss_fn
        loss = None
        for _ in range(steps):
            input, target = self.data[self.i % len(self.data)]
            self.i += 1
            optimizer.zero_grad()
            loss = loss_fn(model(input), target)
            loss.backward()
            optimizer.step()
        return loss.item()


def bench(kind, repeats, steps, warmup):
    ng.manual_seed(0)
    state = {k: v.numpy() for k, v in build(ng, kind).state_dict().items()}
    trainers = {"nbgrad": Trainer(ng, kind, state)}
    if torch is not None:
        trainers["torch"] = Trainer(torch, kind, state)
    losses = {name: t.run(warmup) for name, t in trainers.items()}
    if torch is not None and abs(losses["nbgrad"] - losses["torch"]) > 1e-3 * abs(losses["torch"]):
        print(f"WARNING {kind}: losses differ after the warm-up: {losses}")
    samples = {name: [] for name in trainers}
    for _ in range(repeats):
        for name, trainer in trainers.items():
            gc.collect()
            start = time.perf_counter()
            trainer.run(steps)
            samples[name].append((time.perf_counter() - start) / steps * 1e3)
    return {name: statistics.median(s) for name, s in samples.items()}, losses


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=20, help="training steps per timed call")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps first")
    args = parser.parse_args(argv)
    print(
        f"nbgrad training-step benchmark (digits, batch {BATCH}, Adam): median ms per step "
        f"over {args.repeats} repeats of {args.steps} steps, after {args.warmup} warm-up steps"
    )
    versions = f"Python {platform.python_version()}, NumPy {np.__version__}"
    if torch is not None:
        versions += f", PyTorch {torch.__version__} ({torch.get_num_threads()} threads)"
    print(versions)
    print()
    print(
        f"{'model':<8}{'nbgrad':>10}{'torch':>10}{'ratio':>9}   loss after warm-up (nbgrad/torch)"
    )
    for kind in ("MLP", "CNN"):
        ms, losses = bench(kind, args.repeats, args.steps, args.warmup)
        th = ms.get("torch", float("nan"))
        ratio = ms["nbgrad"] / th if torch is not None else float("nan")
        th_loss = losses.get("torch", float("nan"))
        print(
            f"{kind:<8}{ms['nbgrad']:>10.3f}{th:>10.3f}{ratio:>8.1f}x   "
            f"{losses['nbgrad']:.4f} / {th_loss:.4f}"
        )


if __name__ == "__main__":
    main()
