"""The cost of a device's ready queue: the same graph on the CPU and on the test device.

On the host-memory test device (``nbgrad.backend.register_device_type``) every node runs on
the device's worker thread, reached through its shared ready queue, while the calling thread
waits; on the CPU the caller runs every node itself. Both use NumPy arrays, so the difference
per node is the queue hop (lock, condition, thread switch), measured in the same run.

Run: ``python tests/benchmarks/devices.py [--quick]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import nbgrad as ng
from nbgrad import backend

DEV = "benchdev"


def chain_backward_seconds(device, n_ops):
    """Seconds for backward through ``n_ops`` elementwise nodes living on ``device``."""
    x = ng.randn(16, dtype=ng.float64, device=device, requires_grad=True)
    y = x
    for _ in range(n_ops // 2):
        y = y * 1.0001 + 0.001
    loss = y.sum()
    start = time.perf_counter()
    loss.backward()
    return time.perf_counter() - start


def crossing_backward_seconds(n_hops):
    """Seconds for backward through ``n_hops`` CPU -> device -> CPU round trips."""
    x = ng.randn(16, dtype=ng.float64, requires_grad=True)
    y = x
    for _ in range(n_hops):
        y = (y.to(DEV) * 1.0001).cpu()
    loss = y.sum()
    start = time.perf_counter()
    loss.backward()
    return time.perf_counter() - start


def median_us(fn, repeats, per):
    fn()  # warm-up (starts the worker)
    return statistics.median(fn() for _ in range(repeats)) / per * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    repeats = 3 if args.quick else 9
    backend.register_device_type(DEV, count=1)
    n = 2000
    cpu = median_us(lambda: chain_backward_seconds("cpu", n), repeats, n)
    dev = median_us(lambda: chain_backward_seconds(DEV, n), repeats, n)
    hops = 500
    cross = median_us(lambda: crossing_backward_seconds(hops), repeats, 3 * hops)
    print(f"nbgrad device queues: median of {repeats} repeats, backward through a chain")
    print(f"{'':44}{'us/node':>10}")
    print(f"{'CPU only (the caller runs every node)':44}{cpu:10.2f}")
    print(f"{'test device (its worker runs every node)':44}{dev:10.2f}")
    print(f"{'  queue hop per node, device - CPU':44}{dev - cpu:10.2f}")
    print(f"{'CPU -> device -> CPU round trips':44}{cross:10.2f}")
    print(f"ratio device / CPU per node: {dev / cpu:.2f}")


if __name__ == "__main__":
    main()
