"""The autograd profiler (PyTorch's ``torch/autograd/profiler.py``): ``profile`` times every
forward op and every backward node that runs inside it, ``record_function`` names a range of
your own; the events come back as an ``EventList`` (``key_averages().table()``,
``export_chrome_trace``).

Example::

    >>> import nbgrad
    >>> x = nbgrad.ones(3, requires_grad=True)
    >>> with nbgrad.autograd.profiler.profile() as prof:
    ...     (x * 2).sum().backward()
    >>> sorted({e.name for e in prof.function_events})[:2]
    ['MulBackward0', 'SumBackward0']
"""

from __future__ import annotations

import contextlib
import enum
import itertools
import threading
import time

from nbgrad._graph.observer import GraphObserver, observe

from .profiler_util import DeviceType, EventList, FunctionEvent

__all__ = [
    "DeviceType",
    "ProfilerActivity",
    "profile",
    "record_function",
    "EventList",
    "FunctionEvent",
    "kineto_available",
]


class ProfilerActivity(enum.Enum):
    """What a profile records: nbgrad records ``CPU`` (the others are accepted, with nothing
    to record)."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


# PyTorch's nodes written in C++ appear in its events by their C++ names; nbgrad's ``name()``
# of these is the short one (See NOTE [The name of AccumulateGrad])
_CPP_NAMES = {
    name: "torch::autograd::" + name
    for name in ("AccumulateGrad", "CopySlices", "GraphRoot", "Error", "DelayedError")
}
_TIDS = itertools.count(1)
_tid_of = {}
_tid_lock = threading.Lock()


def _thread_id():
    """A small number per thread, as PyTorch's ``FunctionEvent.thread``."""
    ident = threading.get_ident()
    tid = _tid_of.get(ident)
    if tid is None:
        with _tid_lock:
            tid = _tid_of.setdefault(ident, next(_TIDS))
    return tid


def _now_us():
    return time.perf_counter_ns() / 1000.0


_VARIANTS = ("_scalar", "_tensor", "_float", "_rounding")


def _aten_name(op, args, result):
    name = op.name
    for suffix in _VARIANTS:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    if args and result is args[0] and not name.endswith("_"):
        name += "_"  # written in place
    return "aten::" + name


def _shape(value):
    shape = getattr(value, "shape", None)
    return list(shape) if shape is not None and hasattr(value, "grad_fn") else []


# NOTE [Profiler events]
# The profiler is an observer (See NOTE [One engine path]): installed while a profile is
# recording, it costs nothing otherwise (the engine and the dispatcher pay their one empty-list
# check, profiled or not). It makes PyTorch's events with PyTorch's names:
# - a forward op of the op table: ``aten::<op>`` (``aten::mul``; an in-place write
#   ``aten::mul_``), timed by the dispatcher; its ``sequence_nr`` is the sequence number of the
#   node it made (-1 when it made none);
# - a backward node: ``autograd::engine::evaluate_function: MulBackward0`` and, inside it,
#   ``MulBackward0``, both with the node's sequence number (-1 for AccumulateGrad, as
#   PyTorch's) and, as ``fwd_thread``, the thread of the forward op that made the node. The
#   nodes PyTorch writes in C++ appear by their C++ names (``torch::autograd::AccumulateGrad``),
#   as in PyTorch's profiles. nbgrad's engine reports a node from the moment its pre hooks are
#   done until its post hooks are done, so both ranges cover that span; the forward ops a
#   formula runs (with create_graph, or on devices) are their children;
# - a ``record_function`` block, by its name.
# Parents and children are found from the times afterwards
# (``EventList._populate_cpu_children``, per thread), as PyTorch does.
#
# Per-node times for tools: each backward event's ``node`` attribute is the Node that ran (the
# profile keeps the nodes it saw alive), and ``profile.node_times()`` sums the inner ranges
# into ``{node: microseconds}``, which the notebook layer can read as a graph's "time in
# backward" overlay without knowing the event list.
class _Recorder(GraphObserver):
    """The observer a recording profile installs: it turns events into FunctionEvents."""

    def __init__(self, record_shapes):
        self.record_shapes = record_shapes
        self.events = []
        self.ids = itertools.count(1)
        self.open = {}  # (thread, node) -> start time, for nodes running now
        self.fwd_threads = {}  # sequence_nr -> the thread of the forward op that made the node
        self.lock = threading.Lock()

    def add(self, name, start, end, **kwargs):
        event = FunctionEvent(
            id=next(self.ids), name=name, thread=_thread_id(), start_us=start, end_us=end, **kwargs
        )
        with self.lock:
            self.events.append(event)
        return event

    def forward(self, op, args, attrs, result, elapsed):
        end = _now_us()
        out = result[0] if isinstance(result, tuple) and result else result
        node = getattr(out, "grad_fn", None)
        seq = node._sequence_nr() if node is not None and out is not args[0] else -1
        shapes = [_shape(a) for a in args] if self.record_shapes else None
        self.add(
            _aten_name(op, args, result),
            end - elapsed * 1e6,
            end,
            sequence_nr=seq,
            input_shapes=shapes,
        )
        if seq >= 0:
            self.fwd_threads[seq] = _thread_id()

    def node_start(self, graph_task, node, inputs):
        self.open[(threading.get_ident(), node)] = _now_us()

    def node_end(self, graph_task, node, outputs):
        end = _now_us()
        start = self.open.pop((threading.get_ident(), node), end)
        self._node_events(node, start, end)

    def task_end(self, graph_task, error):
        # a node that raised never reported its end: its range ends with the pass
        end = _now_us()
        ident = threading.get_ident()
        for key in [k for k in self.open if k[0] == ident]:
            self._node_events(key[1], self.open.pop(key), end)

    def _node_events(self, node, start, end):
        name = node.name()
        name = _CPP_NAMES.get(name, name)
        seq = node._sequence_nr()
        seq = seq if seq < 2**63 else -1  # AccumulateGrad: -1 in PyTorch's events
        fwd = self.fwd_threads.get(seq, 0)
        for event_name in (f"autograd::engine::evaluate_function: {name}", name):
            event = self.add(event_name, start, end, sequence_nr=seq, fwd_thread=fwd)
            event.node = node


class _Profiling:
    """The recording profiles, innermost last (a profile inside another records too)."""

    recorders: list = []
    handles: list = []


_profiling = _Profiling()


def _profiler_enabled() -> bool:
    """Whether a profile is recording (``torch.autograd._profiler_enabled``)."""
    return bool(_profiling.recorders)


def kineto_available() -> bool:
    """Whether PyTorch's Kineto tracing library is there: never in nbgrad, whose profiler is
    its own (``use_kineto`` is accepted and changes nothing)."""
    return False


def _start(record_shapes):
    recorder = _Recorder(record_shapes)
    _profiling.recorders = _profiling.recorders + [recorder]
    _profiling.handles = _profiling.handles + [observe(recorder)]
    return recorder


def _stop(recorder):
    if recorder in _profiling.recorders:
        i = _profiling.recorders.index(recorder)
        _profiling.handles[i].remove()
        _profiling.recorders = _profiling.recorders[:i] + _profiling.recorders[i + 1 :]
        _profiling.handles = _profiling.handles[:i] + _profiling.handles[i + 1 :]
    events = EventList(sorted(recorder.events, key=lambda e: (e.time_range.start, e.id)))
    events._build_tree()
    return events


class profile:
    """Time the forward ops and backward nodes that run inside it
    (``torch.autograd.profiler.profile``). CPU only: the device and memory options are
    accepted and record nothing. After the block: ``function_events``, ``key_averages()``,
    ``table()``, ``export_chrome_trace(path)``, ``self_cpu_time_total``.
    """

    def __init__(
        self,
        enabled=True,
        *,
        use_cuda=False,
        use_device=None,
        record_shapes=False,
        with_flops=False,
        profile_memory=False,
        with_stack=False,
        with_modules=False,
        use_kineto=False,
        use_cpu=True,
        experimental_config=None,
        acc_events=False,
        custom_trace_id_callback=None,
    ):
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.use_device = use_device
        self.function_events = None
        self.entered = False
        self._recorder = None

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._recorder = _start(self.record_shapes)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if not self.enabled:
            return None
        self.function_events = _stop(self._recorder)
        self._recorder = None
        return None

    def _check_finish(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def __repr__(self):
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return repr(self.function_events)

    def __str__(self):
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return str(self.function_events)

    def table(
        self,
        sort_by=None,
        row_limit=100,
        max_src_column_width=75,
        max_name_column_width=55,
        max_shapes_column_width=80,
        header=None,
        top_level_events_only=False,
    ):
        self._check_finish()
        return self.function_events.table(
            sort_by=sort_by,
            row_limit=row_limit,
            max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width,
            header=header,
            top_level_events_only=top_level_events_only,
        )

    table.__doc__ = EventList.table.__doc__

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace JSON file."""
        self._check_finish()
        return self.function_events.export_chrome_trace(path)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, **kwargs):
        """One averaged row per event name (and input shapes, with ``group_by_input_shape``)."""
        self._check_finish()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self):
        self._check_finish()
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self):
        """The CPU time of everything profiled, in microseconds."""
        self._check_finish()
        return self.function_events.self_cpu_time_total

    def node_times(self):
        """``{node: microseconds}``: the time each backward node ran (summed over passes);
        See NOTE [Profiler events]."""
        self._check_finish()
        return _node_times(self.function_events)


def _node_times(events):
    times = {}
    for event in events:
        node = event.node
        if node is not None and not event.name.startswith("autograd::engine::"):
            times[node] = times.get(node, 0.0) + event.cpu_time_total
    return times


class record_function(contextlib.ContextDecorator):
    """Name a range of code in the profile (``torch.autograd.profiler.record_function``): a
    context manager, or a decorator. Outside a profile it records nothing."""

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        self._start = None
        self._recorders = ()

    def __enter__(self):
        self._recorders = _profiling.recorders
        if self._recorders:
            self._start = _now_us()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        recorders, self._recorders = self._recorders, ()
        if recorders and self._start is not None:
            end = _now_us()
            for recorder in recorders:
                recorder.add(self.name, self._start, end, is_user_annotation=True)
        self._start = None
        return False
