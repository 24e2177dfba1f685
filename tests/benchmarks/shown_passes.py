"""What the notebook shows of recorded backward passes, dumped as JSON to compare two
versions of the recorder (prints one digest a cell; not a test).

    PYTHONPATH=. python tests/benchmarks/shown_passes.py OUT chain:200 fan:3000 torch:200 ...
    diff OUT_A/digests.txt OUT_B/digests.txt

Each ``shape:size`` cell runs under ``record()``; its dump holds the graph view's snapshot
(``timings=False``), the stepper's trace and its states at the first 40 positions, the last
five and every 2% between, the last pass's ``edge_grads`` and ``node_inputs``, the NaN/Inf
answers, each pass's hook calls and accumulations, and the step order. Times and addresses
are left out (they differ run to run); ids depend on what ran before in the process, so
compare runs of the same cells in the same order. Shapes: ``chain``, ``fan``, ``rnn``,
``train``, ``dag`` (as ``notebook_shapes.py``'s), ``hooks`` (hooks of every kind, a NaN, two
passes), ``device`` (a pass over a test device's worker and the CPU) and ``torch``.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sys
from pathlib import Path

import nbgrad as ng
from nbgrad.notebook import record
from nbgrad.notebook.answers_values import find_nonfinite
from nbgrad.notebook.snapshot import build_snapshot
from nbgrad.notebook.summaries import summarised
from nbgrad.notebook.trace import trace_snapshot, trace_state


def _chain(size):
    x = ng.ones(4, requires_grad=True)

    def body():
        h = x
        for _ in range(size // 2):
            h = (h * 1.0001).tanh()
        h.sum().backward()

    return body


def _fan(size):
    x = ng.randn(8)
    ws = [ng.randn(8, requires_grad=True) for _ in range(size // 5)]
    return lambda: sum(((x * w).tanh()).sum() for w in ws).backward()


def _rnn(size):
    w = ng.randn(8, 8, requires_grad=True) / 3
    u = ng.randn(8, 8, requires_grad=True)
    xs = [ng.randn(8) for _ in range(size // 4)]

    def body():
        h = ng.zeros(8)
        for x in xs:
            h = (w @ h + u @ x).tanh()
        h.sum().backward(retain_graph=True)

    return body


def _train(size):
    model = ng.nn.Sequential(ng.nn.Linear(8, 16), ng.nn.Tanh(), ng.nn.Linear(16, 1))
    opt = ng.optim.SGD(model.parameters(), lr=0.01)
    x, y = ng.randn(32, 8), ng.randn(32, 1)

    def body():
        for _ in range(max(1, size // 10)):
            opt.zero_grad()
            ng.nn.functional.mse_loss(model(x), y).backward()
            opt.step()

    return body


def _dag(size):
    def body():
        rng = random.Random(0)
        pool = [ng.randn(8, requires_grad=True) for _ in range(8)]
        for i in range(size // 2):
            a, b = pool[rng.randrange(len(pool))], pool[rng.randrange(len(pool))]
            pool.append((a * b).tanh() if i % 2 else (a + b.sin()) * 0.5)
        ng.stack(pool[-64:]).sum().backward()

    return body


def _hooks(size):
    x = ng.tensor([1.0, -2.0, 0.0], requires_grad=True)
    w = ng.ones(3, requires_grad=True)

    def body():
        y = x * w
        y.register_hook(lambda g: g * 2)
        y.retain_grad()
        z = y.log()  # (a NaN and an Inf)
        z.grad_fn.register_prehook(lambda go: None)
        z.grad_fn.register_hook(lambda gi, go: (gi[0] * 1,))
        w.register_post_accumulate_grad_hook(lambda p: None)
        (z.sum() + y.sum()).backward(retain_graph=True)
        (z * 2).sum().backward()

    return body


def _device(size):
    from nbgrad import backend

    backend.register_device_type("shown", count=1)
    x = ng.randn(4, device="shown", requires_grad=True)
    w = ng.randn(4, requires_grad=True)

    def body():
        h = x
        for _ in range(size // 4):
            h = (h * 1.0001).tanh()
        c = h.to("cpu")
        (c * w + c.tanh()).sum().backward()

    return body


def _torch(size):
    import torch

    torch.manual_seed(0)
    x = torch.ones(4, requires_grad=True)

    def body():
        h = x
        for _ in range(size // 2):
            h = (h * 1.0001).tanh()
        (h.sum() + (x * 2).sum()).backward()

    return body


CELLS = {
    "chain": _chain,
    "fan": _fan,
    "rnn": _rnn,
    "train": _train,
    "dag": _dag,
    "hooks": _hooks,
    "device": _device,
    "torch": _torch,
}


def _scrub(v):
    """``v`` without times and addresses."""
    if isinstance(v, dict):
        return {k: _scrub(x) for k, x in v.items() if k not in ("time_us", "time")}
    if isinstance(v, (list, tuple)):
        return [_scrub(x) for x in v]
    if isinstance(v, str):
        return re.sub(r"0x[0-9a-f]+", "0x?", v)
    return v


def dump(shape, size) -> str:
    """What is shown of the passes of one cell, as JSON."""
    ng.manual_seed(0)
    body = CELLS[shape](size)
    with record() as rec:
        body()
    last = rec.passes[-1]
    trace = trace_snapshot(last, recorder=rec)
    n = len(trace["steps"])
    positions = sorted(
        {*range(min(n + 2, 40)), *range(max(0, n - 5), n + 2), *range(0, n + 2, max(1, n // 50))}
    )
    passes = rec.passes
    shown = {
        "snapshot": build_snapshot(rec, timings=False),
        "trace": trace,
        "states": [trace_state(trace, p) for p in positions],
        "edge_grads": [[k[1], summarised(v)] for k, v in last.edge_grads.items()],
        "node_inputs": [summarised(v) for v in last.node_inputs.values()],
        "order": [s.index for s in last.steps],
        "nonfinite": [repr(f) for f in find_nonfinite(rec)],
        "passes": [(p.index, len(p.steps), p.error, len(p.hook_calls)) for p in passes],
        "hook_calls": [
            (h.kind, h.name, summarised(h.before), summarised(h.after), h.changed)
            for p in passes
            for h in p.hook_calls
        ],
        "accumulations": [
            (summarised(a.grad), summarised(a.before), summarised(a.after))
            for p in passes
            for a in p.accumulations
        ],
        "elapsed": all((s.elapsed is None) == (s.end is None) for s in last.steps),
    }
    return json.dumps(_scrub(shown), sort_keys=True, default=str)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    digests = []
    for spec in argv[1:]:
        shape, size = spec.split(":")
        text = dump(shape, int(size))
        (out / f"{shape}_{size}.json").write_text(text)
        digests.append(f"{spec} {len(text)} {hashlib.md5(text.encode()).hexdigest()}")
        print(digests[-1])
    (out / "digests.txt").write_text("\n".join(digests) + "\n")


if __name__ == "__main__":
    main()
