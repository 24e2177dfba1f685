"""The generated forward result of a row against ``_wrap`` then ``_record``.

Run from the repository root::

    python tests/benchmarks/generated_result.py     # 15 rounds

W1's forward chain (``x = x * 1.0001 + 0.001`` on a (16,) float64 tensor that requires grad, 500
steps) runs with ``mul`` and ``add`` ending in their generated ``op.result`` (NOTE [Generated
forward result] in nbgrad/_tensor/dispatch.py), then in ``_generic_result``, alternately in
one process so that a slow patch of the machine hits both alike. Each round takes the best of 3
repeats of 5 chains; the figures are the medians over the rounds, in microseconds per op.
"""

from __future__ import annotations

import statistics
import timeit
from functools import partial

import nbgrad as ng
from nbgrad._tensor import dispatch

STEPS, ROUNDS = 500, 15


def main():
    x = ng.ones(16, dtype=ng.float64, requires_grad=True)

    def chain():
        z = x
        for _ in range(STEPS):
            z = z * 1.0001 + 0.001

    chain()  # (each row's result is generated on first use)
    ops = [dispatch.OPS["mul"], dispatch.OPS["add"]]
    generated = [op.result for op in ops]
    times = {"generated": [], "generic": []}
    for _ in range(ROUNDS):
        for op, fn in zip(ops, generated):
            op.result = fn
        times["generated"].append(min(timeit.repeat(chain, number=5, repeat=3)) / 5)
        for op in ops:
            op.result = partial(dispatch._generic_result, op)
        times["generic"].append(min(timeit.repeat(chain, number=5, repeat=3)) / 5)
    for op, fn in zip(ops, generated):
        op.result = fn
    per_op = {k: statistics.median(v) / (2 * STEPS) * 1e6 for k, v in times.items()}
    print(f"forward of W1's chain, us/op (median of {ROUNDS} rounds)")
    print(f"  generated op.result      {per_op['generated']:8.3f}")
    print(f"  _wrap then _record       {per_op['generic']:8.3f}")
    print(f"  ratio                    {per_op['generic'] / per_op['generated']:8.2f}")


if __name__ == "__main__":
    main()
