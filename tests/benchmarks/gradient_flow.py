"""What the graph view's gradient flow over steps costs a training cell (prints figures; not a
test): NOTE [Gradient flow at a dot a parameter] in nbgrad/notebook/answers_flow.py.

    python tests/benchmarks/gradient_flow.py            # 7 alternated runs a framework
    python tests/benchmarks/gradient_flow.py --runs 3

A 60-step training loop (784-256-10 MLP, batch 64, cross entropy, SGD) inside ``record()``,
with and without a :class:`GradientFlow` subscribed to the recorder, alternately; the medians
of the process's CPU time (one BLAS thread, torch on one thread), their ratio, and the time
spent inside ``GradientFlow.on_record`` itself, per backward pass and per forward call.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402 - after the thread settings
import statistics  # noqa: E402
import time  # noqa: E402

from nbgrad.notebook import record  # noqa: E402
from nbgrad.notebook.answers_flow import GradientFlow  # noqa: E402

STEPS = 60


def setup(framework):
    if framework == "torch":
        import torch as fw

        fw.set_num_threads(1)
    else:
        import nbgrad as fw
    fw.manual_seed(0)
    nn, F = fw.nn, fw.nn.functional
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = fw.optim.SGD(model.parameters(), lr=0.01)
    x, y = fw.randn(64, 784), fw.randint(0, 10, (64,))
    return model, opt, x, y, F


class _Timed(GradientFlow):
    """GradientFlow counting the CPU time of its own calls."""

    spent = 0.0
    calls = 0

    def on_record(self, recorder, final):
        start = time.process_time()
        super().on_record(recorder, final)
        self.spent += time.process_time() - start
        self.calls += 1


def run(framework, flow):
    model, opt, x, y, F = setup(framework)
    start = time.process_time()
    with record() as rec:
        timed = None
        if flow:
            timed = _Timed(rec)
            rec.subscribe(timed.on_record)
        for _ in range(STEPS):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
    total = time.process_time() - start
    if timed is not None:
        assert timed.steps == STEPS and len(timed.of(model)) == STEPS
    return total, timed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=7)
    args = p.parse_args()
    print(f"{STEPS}-step training loop in record(), 784-256-10 MLP, batch 64, SGD; CPU time,")
    print(f"medians of {args.runs} alternated runs (one BLAS thread)")
    for framework in ("nbgrad", "torch"):
        plain, with_flow, per_pass, per_call = [], [], [], []
        run(framework, True)  # warm up
        for _ in range(args.runs):
            plain.append(run(framework, False)[0])
            total, timed = run(framework, True)
            with_flow.append(total)
            per_pass.append(timed.spent / STEPS)
            per_call.append(timed.spent / max(1, timed.calls))
        a, b = statistics.median(plain), statistics.median(with_flow)
        print(
            f"  {framework:6}: without {a * 1e3:7.1f} ms, with flow {b * 1e3:7.1f} ms, "
            f"ratio {b / a:.3f}; on_record {statistics.median(per_pass) * 1e6:6.1f} us a pass "
            f"({statistics.median(per_call) * 1e6:.2f} us a call on average)"
        )


if __name__ == "__main__":
    main()
