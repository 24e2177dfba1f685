"""The profiler's events and their tables (PyTorch's ``torch/autograd/profiler_util.py``):
``FunctionEvent`` (one timed range), ``FunctionEventAvg`` (ranges of one name added up) and
``EventList`` (a profile's events: ``key_averages()``, ``table()``, ``export_chrome_trace()``).

Times are in microseconds, as PyTorch's. nbgrad profiles the CPU only: every device time is 0.
"""

from __future__ import annotations

import enum
import itertools
import json
from collections import defaultdict

__all__ = ["DeviceType", "EventList", "FunctionEvent", "FunctionEventAvg", "Interval"]


class DeviceType(enum.Enum):
    """Where an event ran (nbgrad records CPU events only)."""

    CPU = 0
    CUDA = 1


class Interval:
    """A time range in microseconds."""

    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        return self.end - self.start


def _format_time(time_us):
    """Format a time in microseconds as PyTorch's tables do (``1.500ms``)."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_time_us):
    if total_time_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_time_us:.2f}%"


class _Stats:
    """The totals both event kinds share; ``cpu_time`` is the average over ``count``."""

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def self_cpu_time(self):
        return 0.0 if self.count == 0 else self.self_cpu_time_total / self.count

    @property
    def device_time(self):
        return 0.0

    device_time_total = 0.0
    self_device_time_total = 0.0
    cuda_time = cuda_time_total = self_cuda_time_total = 0.0
    cpu_memory_usage = self_cpu_memory_usage = 0
    device_memory_usage = self_device_memory_usage = 0
    flops = 0
    is_remote = False
    is_legacy = False
    is_user_annotation = False
    use_device = None
    overload_name = ""


class FunctionEvent(_Stats):
    """One timed range: a forward op (``aten::mul``), a backward node (``MulBackward0``, inside
    ``autograd::engine::evaluate_function: MulBackward0``) or a ``record_function`` block.

    ``sequence_nr`` is the node's sequence number (forward op and backward events of one node
    share it; -1 for others); ``fwd_thread`` is, for a backward event, the thread of the forward
    op that made the node (0 otherwise); ``node`` (nbgrad's) is the backward Node itself.
    """

    def __init__(
        self,
        id,
        name,
        thread,
        start_us,
        end_us,
        overload_name=None,
        fwd_thread=None,
        input_shapes=None,
        stack=None,
        scope=0,
        use_device=None,
        cpu_memory_usage=0,
        device_memory_usage=0,
        is_async=False,
        is_remote=False,
        sequence_nr=-1,
        node_id=-1,
        device_type=DeviceType.CPU,
        device_index=0,
        device_resource_id=None,
        is_legacy=False,
        flops=None,
        trace_name=None,
        concrete_inputs=None,
        kwinputs=None,
        is_user_annotation=False,
        metadata_json=None,
    ):
        self.id = id
        self.node_id = node_id
        self.name = name
        self.overload_name = overload_name or ""
        self.trace_name = trace_name
        self.time_range = Interval(start_us, end_us)
        self.thread = thread
        self.fwd_thread = fwd_thread if fwd_thread is not None else 0
        self.kernels = []
        self.count = 1
        self.cpu_children = []
        self.cpu_parent = None
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.concrete_inputs = concrete_inputs
        self.kwinputs = kwinputs
        self.stack = stack if stack is not None else []
        self.scope = scope
        self.use_device = use_device
        self.cpu_memory_usage = cpu_memory_usage
        self.device_memory_usage = device_memory_usage
        self.is_async = is_async
        self.is_remote = is_remote
        self.sequence_nr = sequence_nr
        self.device_type = device_type
        self.device_index = device_index
        self.device_resource_id = device_resource_id if device_resource_id is not None else thread
        self.is_legacy = is_legacy
        self.flops = flops or 0
        self.is_user_annotation = is_user_annotation
        self.metadata_json = metadata_json
        self.node = None

    def append_cpu_child(self, child):
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent):
        self.cpu_parent = parent

    @property
    def key(self):
        return self.name

    @property
    def cpu_time_total(self):
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(child.cpu_time_total for child in self.cpu_children)

    def __repr__(self):
        return (
            f"<FunctionEvent id={self.id} name={self.name} device_type={self.device_type} "
            f"node_id={self.node_id} cpu_time={_format_time(self.cpu_time)} "
            f"start_us={self.time_range.start:.3f} end_us={self.time_range.end:.3f} "
            f"cpu_children={[c.id for c in self.cpu_children]} thread={self.thread} "
            f"input_shapes={self.input_shapes} seq_nr={self.sequence_nr}>"
        )


class FunctionEventAvg(_Stats):
    """The events of one key added up (``count``, totals); ``cpu_time`` is the average."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.input_shapes = None
        self.stack = None
        self.scope = None
        self.cpu_parent = None
        self.cpu_children = None
        self.device_type = DeviceType.CPU

    def add(self, other):
        if self.key is None:  # the first event added: its fields
            self.key = other.key
            self.node_id = other.node_id
            self.is_async = other.is_async
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.scope = other.scope
            self.device_type = other.device_type
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise AssertionError("expected a FunctionEvent or FunctionEventAvg")
        if other.key != self.key:
            raise AssertionError(f"expected key {self.key!r}, got {other.key!r}")
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.count += other.count
        return self

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self):
        return (
            f"<FunctionEventAvg key={self.key} self_cpu_time={_format_time(self.self_cpu_time)} "
            f"cpu_time={_format_time(self.cpu_time)} input_shapes={self.input_shapes}>"
        )


class EventList(list):
    """A profile's events, in the order they started."""

    def __init__(self, *args, **kwargs):
        kwargs.pop("use_device", None)
        kwargs.pop("profile_memory", None)
        kwargs.pop("with_flops", None)
        super().__init__(*args)
        self._tree_built = False

    def _build_tree(self):
        self._populate_cpu_children()
        self._tree_built = True

    def _populate_cpu_children(self):
        """Each synchronous CPU event's children: the events of its thread that start and end
        inside it, the innermost enclosing one being the parent (PyTorch's algorithm)."""
        events = sorted(
            (e for e in self if not e.is_async and e.device_type == DeviceType.CPU),
            key=lambda e: (e.thread, e.node_id),
        )
        for _, thread_events in itertools.groupby(events, key=lambda e: (e.thread, e.node_id)):
            ordered = sorted(thread_events, key=lambda e: (e.time_range.start, -e.time_range.end))
            open_events = []
            for event in ordered:
                while open_events:
                    parent = open_events[-1]
                    if (
                        event.time_range.start >= parent.time_range.end
                        or event.time_range.end > parent.time_range.end
                    ):
                        open_events.pop()  # it cannot be a parent
                    else:
                        parent.append_cpu_child(event)
                        event.set_cpu_parent(parent)
                        break
                open_events.append(event)

    @property
    def self_cpu_time_total(self):
        """The sum of every event's self CPU time (the whole profiled CPU time)."""
        return sum(e.self_cpu_time_total for e in self)

    def table(
        self,
        sort_by=None,
        row_limit=100,
        max_src_column_width=75,
        max_name_column_width=55,
        max_shapes_column_width=80,
        header=None,
        top_level_events_only=False,
        time_unit=None,
    ):
        """The events as PyTorch's text table: one row each (``key_averages()`` first for one
        row per name), sorted by the attribute ``sort_by`` (largest first), at most
        ``row_limit`` rows (-1: all)."""
        return _build_table(
            self,
            sort_by=sort_by,
            row_limit=row_limit,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width,
            header=header,
            top_level_events_only=top_level_events_only,
        )

    def __str__(self):
        return self.table()

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0, **kwargs):
        """One ``FunctionEventAvg`` per name (and input shapes, with
        ``group_by_input_shapes``)."""
        if not self._tree_built:
            self._build_tree()
        stats = defaultdict(FunctionEventAvg)
        for event in self:
            key = (event.key, event.node_id)
            if group_by_input_shapes:
                key += (str(event.input_shapes),)
            if group_by_stack_n > 0:
                key += tuple(event.stack[:group_by_stack_n])
            stats[key].add(event)
        return EventList(stats.values())

    def total_average(self):
        """All events added up under the key "Total"."""
        total = FunctionEventAvg()
        for event in self:
            total.cpu_time_total += event.cpu_time_total
            total.self_cpu_time_total += event.self_cpu_time_total
            total.count += event.count
        total.key = "Total"
        return total

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace (``chrome://tracing``, Perfetto): one complete
        ("X") event per range, in microseconds."""
        trace = {
            "traceEvents": [
                {
                    "name": e.trace_name or e.name,
                    "ph": "X",
                    "ts": e.time_range.start,
                    "dur": e.cpu_time_total,
                    "tid": e.thread,
                    "pid": "CPU functions",
                    "args": {"Sequence number": e.sequence_nr, "Fwd thread id": e.fwd_thread},
                }
                for e in self
            ],
            "displayTimeUnit": "ms",
        }
        with open(path, "w") as f:
            json.dump(trace, f)


_HEADERS = ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg")


def _build_table(
    events,
    sort_by,
    row_limit,
    max_name_column_width,
    max_shapes_column_width,
    header,
    top_level_events_only,
):
    if not events:
        return ""
    events = list(events)
    total = sum(e.self_cpu_time_total for e in events)  # every event's, before the row limit
    if sort_by is not None:
        events.sort(key=lambda e: getattr(e, sort_by), reverse=True)
    if top_level_events_only:
        events = [e for e in events if e.cpu_parent is None]
    if row_limit is not None and row_limit >= 0:
        events = events[:row_limit]
    has_shapes = any(e.input_shapes for e in events)
    name_width = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    widths = [name_width] + [12] * 5 + [12]
    headers = list(_HEADERS) + ["# of Calls"]
    if has_shapes:
        shapes_width = min(max(len(str(e.input_shapes)) for e in events) + 4, 80)
        if max_shapes_column_width is not None:
            shapes_width = min(shapes_width, max_shapes_column_width)
        widths.append(shapes_width)
        headers.append("Input Shapes")
    line = "  ".join("-" * w for w in widths) + "  "

    def row(cells):
        return "  ".join(str(c).rjust(w) for c, w in zip(cells, widths)) + "  "

    def short(text, width):
        return text if len(text) <= width else text[: width - 3] + "..."

    out = []
    if header is not None:
        out += ["=" * len(line), header]
    out += [line, row(headers), line]
    for e in events:
        cells = [
            short(e.key, name_width),
            _format_time_share(e.self_cpu_time_total, total),
            _format_time(e.self_cpu_time_total),
            _format_time_share(e.cpu_time_total, total),
            _format_time(e.cpu_time_total),
            _format_time(e.cpu_time),
            e.count,
        ]
        if has_shapes:
            cells.append(short(str(e.input_shapes), widths[-1]))
        out.append(row(cells))
    out += [line, f"Self CPU time total: {_format_time(total)}", ""]
    return "\n".join(out)
