"""The profiler (``autograd.profiler``, ``autograd.profiler_util``, ``nbgrad.profiler``) against
torch's: the same programs profiled in both give the same backward events (names, order,
counts, sequence numbers, threads), the same forward events for the ops of the op table,
the same nesting of ``record_function`` ranges, the same aggregation and table layout, and
the same schedule. Times themselves differ by nature; their sums are checked."""

from __future__ import annotations

import json
import re

import pytest

import nbgrad as ng
from nbgrad._graph import observer

torch = pytest.importorskip("torch")

EVAL = "autograd::engine::evaluate_function: "


def plain(name):
    """A node name without PyTorch's C++ namespace (nbgrad's AccumulateGrad has none)."""
    return name.replace("torch::autograd::", "")


def program(lib):
    x = lib.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
    w = lib.tensor([[1.5, -0.5], [0.3, 0.7]], requires_grad=True)
    y = (x * 2 + 4).exp()
    loss = (y.mm(w) - x).sum()
    loss.backward()


def profiled(lib, fn=program, **kwargs):
    with lib.autograd.profiler.profile(**kwargs) as prof:
        fn(lib)
    return prof


def backward_events(prof):
    return [
        plain(e.name) for e in prof.function_events if "Backward" in e.name or "Accum" in e.name
    ]


def test_backward_events_are_torchs():
    ours, theirs = profiled(ng), profiled(torch)
    assert backward_events(ours) == backward_events(theirs)
    assert backward_events(ours)[:2] == [EVAL + "SumBackward0", "SumBackward0"]


def test_forward_events_of_table_ops_are_torchs():
    names = {"aten::mul", "aten::add", "aten::exp", "aten::mm", "aten::sub", "aten::sum"}

    def forward_ops(prof):  # the ops that made a node: the forward pass itself
        return [e.name for e in prof.function_events if e.name in names and e.sequence_nr >= 0]

    assert forward_ops(profiled(ng)) == forward_ops(profiled(torch))


def test_sequence_numbers_and_threads_link_forward_and_backward():
    def links(prof):
        events = prof.function_events
        forward = {e.sequence_nr: e for e in events if e.name.startswith("aten::")}
        out = []
        for e in events:
            if "Backward" in e.name:
                f = forward[e.sequence_nr]
                out.append((plain(e.name), f.name, e.fwd_thread == f.thread, f.fwd_thread))
        return out

    ours = links(profiled(ng))
    assert ours == links(profiled(torch))
    assert ours and all(same_thread for _, _, same_thread, _ in ours)


def test_record_function_nesting():
    def fn(lib):
        x = lib.tensor([1.0, 2.0])
        with lib.autograd.profiler.record_function("outer"):
            y = x * 2
            with lib.autograd.profiler.record_function("inner"):
                y = y - 1
        return y / 1

    def tree(prof):
        kept = {"outer", "inner", "aten::mul", "aten::sub", "aten::div"}
        return [
            (e.name, [c.name for c in e.cpu_children if c.name in kept], e.count)
            for e in prof.function_events
            if e.name in kept
        ]

    assert tree(profiled(ng, fn)) == tree(profiled(torch, fn))
    assert ng.autograd.profiler.record_function("outside")(lambda: 3)() == 3


def test_children_are_found_as_torch_finds_them():
    def run(util):
        events = util.EventList()
        ranges = [(1, [(0, 1), (1, 2)]), (0, [(0, 2), (1, 2), (1, 3)])]
        for thread, spans in ranges:
            for start, end in spans:
                ident = len(events) + 1
                events.append(
                    util.FunctionEvent(
                        id=ident, node_id=0, name="", thread=thread, start_us=start, end_us=end
                    )
                )
        events._populate_cpu_children()
        return [[c.id for c in e.cpu_children] for e in events]

    assert run(ng.autograd.profiler_util) == run(torch.autograd.profiler_util) == [[]] * 4 + [[4]]


def test_averages_are_torchs():
    def run(util):
        avg = util.FunctionEventAvg()
        avg.add(util.FunctionEvent(id=0, node_id=0, name="foo", thread=0, start_us=10, end_us=15))
        avg.add(util.FunctionEvent(id=1, node_id=0, name="foo", thread=0, start_us=20, end_us=30))
        avg.add(avg)
        return avg.key, avg.count, avg.cpu_time_total, avg.self_cpu_time_total, avg.cpu_time

    assert run(ng.autograd.profiler_util) == run(torch.autograd.profiler_util)


def test_key_averages_counts_and_table_layout():
    def fn(lib):
        x = lib.ones(3, requires_grad=True)
        for _ in range(3):
            (x * 2).sum().backward()

    def counts(prof):
        rows = prof.key_averages()
        return sorted((plain(r.key), r.count) for r in rows if "Backward" in r.key)

    ours, theirs = profiled(ng, fn), profiled(torch, fn)
    assert (
        counts(ours)
        == counts(theirs)
        == [
            ("MulBackward0", 3),
            ("SumBackward0", 3),
            (EVAL + "MulBackward0", 3),
            (EVAL + "SumBackward0", 3),
        ]
    )

    def layout(prof):
        table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=2)
        lines = table.splitlines()
        headers = re.split(r"\s{2,}", lines[1].strip())
        return headers, len(lines), lines[-1].split(":")[0], set(lines[0]) | set(lines[2])

    assert layout(ours) == layout(theirs)
    events = ours.key_averages()
    first = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[0]
    assert first.key in ours.key_averages().table(sort_by="self_cpu_time_total", row_limit=1)
    assert str(ours) == ours.table()
    total = sum(e.self_cpu_time_total for e in ours.function_events)
    assert ours.self_cpu_time_total == pytest.approx(total) and total > 0


def test_node_times_for_tools():
    prof = profiled(ng)
    times = prof.node_times()
    names = sorted(node.name() for node in times)
    assert names == sorted(plain(n) for n in backward_events(prof) if not n.startswith(EVAL))
    assert all(t >= 0 for t in times.values())


def test_chrome_trace(tmp_path):
    prof = profiled(ng)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    names = [e["name"] for e in json.loads(path.read_text())["traceEvents"]]
    assert names == [e.name for e in prof.function_events]


def test_costs_nothing_when_not_profiling():
    assert not ng.autograd._profiler_enabled()
    with ng.autograd.profiler.profile():
        assert ng.autograd._profiler_enabled() and observer.forward_observer
        with ng.autograd.profiler.profile() as inner:  # nested, as torch allows
            ng.ones(2) * 2
        assert ng.autograd._profiler_enabled()
    assert not ng.autograd._profiler_enabled()
    assert observer.forward_observer == [] and observer.backward_observer() is None
    assert [e.name for e in inner.function_events] == ["aten::mul"]
    with ng.autograd.profiler.profile(enabled=False) as off:
        assert not ng.autograd._profiler_enabled()
    assert off.function_events is None


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(wait=1, warmup=1, active=2, repeat=1),
        dict(wait=0, warmup=1, active=1, repeat=2, skip_first=2),
        dict(wait=2, warmup=1, active=3, skip_first_wait=1),
    ],
)
def test_schedule_is_torchs(kwargs):
    ours, theirs = ng.profiler.schedule(**kwargs), torch.profiler.schedule(**kwargs)
    assert [ours(i).name for i in range(12)] == [theirs(i).name for i in range(12)]


@pytest.mark.filterwarnings("ignore:Warning. Profiler clears events")
def test_torch_profiler_profile_with_a_schedule():
    def run(lib):
        x = lib.ones(3, requires_grad=True)
        seen = []

        def ready(prof):
            seen.append(sum(1 for e in prof.events() if e.name == EVAL + "MulBackward0"))

        sched = lib.profiler.schedule(wait=1, warmup=1, active=2, repeat=2)
        activities = [lib.profiler.ProfilerActivity.CPU]
        with lib.profiler.profile(activities=activities, schedule=sched, on_trace_ready=ready) as p:
            for _ in range(10):
                (x * 2).sum().backward()
                p.step()
        averages = {plain(r.key): r.count for r in p.key_averages() if "Backward" in r.key}
        return seen, averages

    assert run(ng) == run(torch)
