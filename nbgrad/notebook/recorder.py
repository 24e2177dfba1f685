"""The recorder: a context manager that sees every forward call and every backward step.

Model: Chainer's ``FunctionHook`` (a context manager with callbacks around each function call)
and its ``computational_graph`` (extract first, draw later). This module holds no widget code
and imports neither IPython nor ipywidgets, so that ``nbgrad.nn`` may consult it.

Inside ``with record() as rec:``

- every forward call that goes through the op table is a :class:`Record`: the op, its input and
  output tensors (shape, dtype, device), the Node it created, its wall time, and the line of user
  code that made it (the first frame outside the ``nbgrad`` package; under ``%%autograd`` the
  cell's own line, counted as the notebook shows it, the ``%%autograd`` line being line 1);
- module calls are :class:`ModuleCall` groups (nested as the modules are), see NOTE [Module
  groups];
- every backward pass that runs is a :class:`BackwardTrace`: the engine's events with a copy of
  the state the stepper shows (ready queues, changed dependency counts, input buffers, hooks
  with the gradient before and after, each gradient accumulated into a leaf's ``.grad``).

The recorder observes forward calls and backward passes (its graph source installs a
``GraphObserver``, NOTE [One engine path]) only between ``__enter__`` and ``__exit__``; an
exception inside the block still removes the observer and closes every open group, so
nothing is recorded outside the block. Forward calls are recorded from the thread that entered
the block; the ops that derivative formulas run during a backward pass are only counted
(``backward_ops``): they are the backward's own work, not part of the forward graph.

NOTE [Module groups]
``nbgrad.nn`` is the lower layer, so it must not import this package. The recorder registers
PyTorch's global module hooks (``nbgrad.nn.modules.module.register_module_forward_pre_hook``
and ``register_module_forward_hook``) for the length of the block, and each module call becomes
a group. Objects that are not ``nbgrad.nn`` modules may open groups of their own with
:func:`module_enter` / :func:`module_exit`; those calls for an ``nbgrad.nn.Module`` are ignored,
so that no call is counted twice.
"""

from __future__ import annotations

import gc
import math
import os
import sys
import threading
import time
import weakref
from threading import get_ident

import numpy as np

from nbgrad import Tensor
from nbgrad.autograd.graph import GraphObserver
from nbgrad.backend import CPU as _CPU

from .answers_values import _FEW, check_forward
from .calls import CALL_FIELDS, _foreign_pair, _input_pairs, _leaf_pair, _user_line
from .records import (
    NOTHING,
    TENSOR_EDGES,
    Accumulation,
    BackwardTrace,
    HookCall,
    ModuleCall,
    Record,
    RecordList,
    Step,
    counts,
    one_or_many,
)
from .sources import NBGRAD, forget_input_metadata, observable_sources
from .steps import RepeatedSteps

_weakref = weakref.ref
_getframe = sys._getframe
_ndarray = np.ndarray
_isfinite = math.isfinite
_Tensor = None  # nbgrad.tensor.Tensor, set when a recorder starts (this module loads first)

__all__ = [
    "Recorder",
    "Record",
    "ModuleCall",
    "BackwardTrace",
    "Step",
    "HookCall",
    "Accumulation",
    "record",
    "current",
    "module_enter",
    "module_exit",
]

_NBGRAD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _framework_dirs() -> tuple:
    """The folders of nbgrad and of the frameworks imported now (their frames are not user
    code); worked out again only when the frameworks imported change."""
    torch = sys.modules.get("torch")
    cached = _DIRS.get(torch)
    if cached is not None:
        return cached
    dirs = [_NBGRAD_DIR]
    if torch is not None and getattr(torch, "__file__", None):
        dirs.append(os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)
    _DIRS.clear()
    _DIRS[torch] = tuple(dirs)
    return _DIRS[torch]


_DIRS: dict = {}  # the torch module (None: not imported) -> the frameworks' folders


# the recorder stack: the recorders whose block is running, innermost last
_active: list = []


def current():
    """The innermost running recorder, or None."""
    return _active[-1] if _active else None


def module_enter(module, source="explicit"):
    """Tell the running recorders that ``module`` is being called; returns a token."""
    return [(rec, rec._module_enter(module, source)) for rec in tuple(_active)]


def module_exit(token, error=None):
    """Close the groups opened by :func:`module_enter`."""
    for rec, group in reversed(token or ()):
        if group is not None:
            rec._module_exit(group, error)


class Recorder(RepeatedSteps):
    """Records forward calls, module calls and backward passes inside a ``with`` block.

    Example:
        >>> import nbgrad as ng
        >>> from nbgrad.notebook import record
        >>> x = ng.ones(3, requires_grad=True)
        >>> with record() as rec:
        ...     y = (x * 2).sum()
        >>> [r.op for r in rec.records], [r.node.name() for r in rec.records]
        (['mul', 'sum'], ['MulBackward0', 'SumBackward0'])
    """

    def __init__(
        self,
        *,
        forward=True,
        backward=True,
        max_values=16,
        cell_filename=None,
        line_offset=0,
        source=None,
        keep_steps=None,
    ):
        # how records, traces and snapshots read the graph: the given source, or (None) the
        # first framework the block uses (see NOTE [One framework a block])
        self.graph_source = source or NBGRAD
        self._fixed_source = source is not None
        self._claimed = False
        self._seq_starts: dict = {}
        self.mixed: set = set()  # the other frameworks the block used (their calls left out)
        self.forward = forward
        self.backward = backward
        self.max_values = max_values
        self.cell_filename = cell_filename
        self.line_offset = line_offset
        self.records = RecordList(cell_filename, line_offset, self.graph_source)
        self._raw = self.records._raw
        self._calls = self._raw.flat  # (NOTE [Calls kept flat])
        self._elapsed = self._raw.elapsed
        self.modules: list[ModuleCall] = []
        self.passes: list[BackwardTrace] = []
        self.error = None
        self.running = False
        self.seq_start = None
        self.seq_end = None
        self._thread = None
        self._open_groups: list[ModuleCall] = []
        self._open_traces: dict = {}
        self._subscribers: list = []
        self._module_source = None
        self._module_handles = []
        self._watching = []  # the handles of the installed _Watchers
        self._backward_depth = 0
        self.backward_ops = 0
        self.nonfinite_found: list = []  # see answers_values.check_forward
        self._lock = threading.RLock()
        self._busy = threading.local()
        self._quiet = False  # set while the subscribers run (see _notify)
        self._paused = False  # the collector paused while a pass is recorded
        self._threshold = None  # the collector's thresholds before start (if raised)
        self._notify_due = 0.0  # when forward calls are next told (NOTE [Calls told in batches])
        self._ids = None  # the IdMap its snapshots share (set by build_snapshot)
        self._init_steps(keep_steps)  # see NOTE [Repeated steps counted] (steps.py)
        self._pass_count = 0  # passes and module calls numbered as they come
        self._group_count = 0

    # -- the block ---------------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, etype, value, tb):
        if value is not None and self.error is None:
            self.error = f"{etype.__name__}: {value}"
        self.stop()
        return False

    def start(self):
        """Begin recording (``__enter__``)."""
        if self.running:
            raise RuntimeError("this recorder is already running")
        global _Tensor

        _Tensor = Tensor
        self.running = True
        self._thread = threading.get_ident()
        forget_input_metadata()  # NOTE [Input metadata read once]
        sources = [self.graph_source] if self._fixed_source else observable_sources()
        if self.seq_start is None:  # each framework counts its own (see in_scope)
            self._seq_starts = {s: s.next_sequence_nr() for s in sources}
            self.seq_start = self._seq_starts.get(self.graph_source)
        self.seq_end = None
        _active.append(self)
        if self.forward:
            self._install_module_hooks(sources)
        if self.forward or self.backward:
            for source in sources:
                watcher = _Watcher(self, source)
                self._watching.append(
                    source.observe(watcher, forward=self.forward, backward=self.backward)
                )
        return self

    def stop(self):
        """Stop recording (``__exit__``): remove every listener, close open groups."""
        if not self.running:
            return

        self.running = False
        for handle in self._watching:
            handle.remove()
        self._watching = []
        for h in self._module_handles:
            h.remove()
        self._module_handles = []
        self._module_source = None
        _remove(_active, self)
        while self._open_groups:
            self._module_exit(self._open_groups[-1], "not closed")
        for trace in self._open_traces.values():
            trace.finished = True
            if trace.error is None:
                trace.error = "the recording stopped during this backward pass"
            task = trace._graph_task()
            if getattr(task, "replay", None) is not None:  # NOTE [The model run when read]
                trace._replay = task  # (over the steps recorded until now)
        self._open_traces.clear()  # (in place: the watchers hold it)
        self._resume_collection()
        self._restore_threshold()
        self.records._forget_dead()  # NOTE [Calls kept flat]
        self._backward_depth = 0
        self._stop_counting()  # passes run later (the hook editor's) are kept, each one
        self.keep_steps = None
        self.seq_end = self.graph_source.next_sequence_nr()
        self._notify(final=True)

    # NOTE [The collector while recording]
    # What a recorder keeps (a record tuple a call, a step's columns and GradFacts a node, weak
    # references) makes no reference cycle, but each new object counts towards Python's cyclic
    # collector, and as the records grow the heap, its full passes walk the whole kernel again
    # and again: on a 100,000-node chain, a large share of what recording cost
    # (``tests/benchmarks/recording.py`` prints what recording costs). So in a large recording
    # the collector runs less: once a recorder holds ``LARGE`` calls, after ``COLLECT_EVERY``
    # new objects, not 700 (it still collects the cell's cycles, later), and while a backward
    # pass of ``LARGE`` nodes or more is recorded in full it is paused, as for the drawing
    # (NOTE [No collection while drawing]); the next collection after takes the pass's
    # garbage. A smaller recording leaves the collector as it is: fewer collections also mean
    # fewer full ones, and the garbage of a cell's earlier runs (closed widgets, in cycles)
    # waits for those (``test_browser_rerun.py`` re-runs a recorded cell 50 times). The
    # user's own threshold, if higher, or set while recording, is left as it is.
    def _raise_threshold(self):
        first, *rest = gc.get_threshold()
        if self._threshold is None and first < COLLECT_EVERY:
            self._threshold = (first, *rest)
            gc.set_threshold(COLLECT_EVERY, *rest)

    def _restore_threshold(self):
        saved, self._threshold = self._threshold, None
        if saved is not None and gc.get_threshold()[0] == COLLECT_EVERY:
            gc.set_threshold(*saved)

    def _pause_collection(self, nodes):
        if nodes >= LARGE and not self._open_traces and gc.isenabled():
            gc.disable()
            self._paused = True

    def _resume_collection(self):
        if self._paused and not self._open_traces:
            self._paused = False
            gc.enable()

    def resume_backward(self):
        """A context manager that records backward passes only (for the hook editor's button)."""
        return _BackwardOnly(self)

    # -- subscribers (the live graph view) ---------------------------------------------------
    def subscribe(self, callback):
        """Call ``callback(recorder, final)`` after each change (the view throttles itself)."""
        self._subscribers.append(callback)

    def unsubscribe(self, callback):
        _remove(self._subscribers, callback)

    # NOTE [Calls told in batches]
    # A subscriber (the live graph view) is told of forward calls at most every
    # ``CALLS_TOLD_EVERY`` seconds, not after each call: a cell of 100,000 calls would otherwise
    # call each subscriber 100,000 times, each to find that its own interval (0.25 s for the
    # view) has not passed. The ends of backward passes and of the recording are told at once
    # (the gradient flow reads each pass).
    def _notify_calls(self):
        self._notify_due = _perf_counter() + CALLS_TOLD_EVERY
        self._notify()

    def _notify(self, final=False):
        quiet, self._quiet = self._quiet, True  # ops the subscribers run are not recorded
        try:
            for cb in tuple(self._subscribers):
                try:
                    cb(self, final)
                except Exception:  # noqa: BLE001 - a view must never break the user's code
                    pass
        finally:
            self._quiet = quiet

    # -- forward calls -----------------------------------------------------------------------
    def _on_forward(self, op, args, attrs, result, elapsed):
        """One op of nbgrad's, the ``forward`` event of its watcher (NOTE [One call a forward
        call]): see NOTE [Recording cost] on what is kept now and what later."""
        if self.graph_source is not NBGRAD and not self._claim(NBGRAD):
            return
        if self._backward_depth:  # a derivative formula's op (any thread): counted only
            self.backward_ops += 1
            return
        if self._quiet or get_ident() != self._thread:
            return
        if self._counting and self._counted_call(op.name, args, result):
            return
        if type(result) is tuple:
            node = None
            outputs = []
            for t in result:
                fn = t.grad_fn
                if fn is not None:
                    if node is None:
                        node = fn
                    outputs += (fn, t.output_nr)
                else:
                    outputs += _leaf_pair(t)
            outputs = tuple(outputs)
            refs = tuple([_weakref(t) for t in result])
        else:
            node = result.grad_fn
            # one output made by ``node``: its output_nr alone (an int: no tuple to make)
            outputs = result.output_nr if node is not None else _leaf_pair(result)
            refs = _weakref(result)
        # the node's edges, one per argument, are the inputs' pairs (read later); its next
        # nodes are read as stored (``next_functions`` makes a tuple of pairs each read)
        inputs = None
        if node is None:
            inputs = _input_pairs(args)
        else:
            fns = node.next_nodes()  # (as stored: no tuple made)
            if len(fns) != len(args):
                inputs = _input_pairs(args)
            elif None in fns:  # a number or a constant tensor among the arguments
                inputs = TENSOR_EDGES  # numbers only: the edges that are not None
                for fn, a in zip(fns, args):
                    if fn is None and type(a) is not float and type(a) is not int:
                        inputs = _input_pairs(args)
                        break
        # the user code that made it: the first frame outside nbgrad (in a cell: the cell's);
        # the walk starts where the user's frame is at the earliest, three calls up (user code,
        # Tensor.__mul__ or ng.exp, _binary or _dispatch, here), most often four (the op's
        # result function, NOTE [Generated forward result], calls here): each frame passed on
        # the way costs a frame object; in a cell, those two are looked at first
        try:
            frame = _getframe(3)
        except ValueError:
            frame = _getframe(1)
        cell = self.cell_filename
        if cell is not None and frame.f_code.co_filename != cell and frame.f_back is not None:
            frame = frame.f_back
        if cell is not None and frame.f_code.co_filename == cell:
            fname, lineno = cell, frame.f_lineno
        else:
            fname, lineno = _user_line(frame, cell, _NBGRAD_DIR)
        groups = self._open_groups
        calls = self._calls
        calls.extend(  # (NOTE [Calls kept flat])
            (
                op.name,
                inputs,
                outputs,
                node,
                fname,
                lineno,
                groups[-1] if groups else None,
                refs,
            )
        )
        self._elapsed.append(elapsed)
        # (answers_values.check_forward, its commonest case inline: a few finite floats)
        a = result.numpy(force=True) if type(result) is _Tensor and result.device is _CPU else None
        if (
            type(a) is not _ndarray
            or a.size > _FEW
            or a.dtype.kind == "f"
            and not _isfinite(sum(a.ravel().tolist()))
        ):
            check_forward(self, NBGRAD, args, result)
        if len(calls) == LARGE * CALL_FIELDS:  # NOTE [The collector while recording]
            self._raise_threshold()
        if self._subscribers and _perf_counter() >= self._notify_due:
            self._notify_calls()

    # NOTE [One framework a block]
    # A block is drawn with one framework's graph (nbgrad's or torch's). Unless a source is
    # given, the recorder watches every framework it can, and the first one the block uses
    # becomes its graph source; the calls and passes of another are left out, and ``mixed``
    # names it (the magic says so under the cell).
    def _claim(self, source) -> bool:
        """Whether the events of ``source`` (not the graph source yet) are recorded."""
        if not self._fixed_source and not self._claimed and not self.records and not self.passes:
            self._claimed = True
            self.graph_source = self.records.graph_source = source
            self.seq_start = self._seq_starts.get(source, self.seq_start)
            self._ids = None  # ids a live view gave before anything was recorded: nbgrad's
            return True
        self.mixed.add(source.name)
        return False

    def _on_foreign_forward(self, source, op, args, kwargs, result, elapsed):
        """One call of another framework's (torch's), named ``op``: recorded as nbgrad's are,
        from the source's tensors (see NOTE [Recording cost])."""
        if self._backward_depth:
            self.backward_ops += 1
            return
        if self._quiet or get_ident() != self._thread:
            return
        is_tensor = source.is_tensor
        if type(result) is tuple or type(result) is list:
            tensors = [t for t in result if is_tensor(t)]
            if not tensors:
                return
        elif is_tensor(result):
            tensors = (result,)
        else:
            return
        if source is not self.graph_source and not self._claim(source):
            return
        if self._counting and self._counted_call(op, args, result):
            return
        node = None
        outputs = []
        for t in tensors:
            pair = _foreign_pair(t)
            if node is None:
                node = pair[0]
            outputs += pair
        inputs = []
        for a in args:
            if is_tensor(a):
                inputs += _foreign_pair(a)
            elif type(a) is list or type(a) is tuple:
                for t in a:
                    if is_tensor(t):
                        inputs += _foreign_pair(t)
        for a in kwargs.values() if kwargs else ():
            for t in a if isinstance(a, (list, tuple)) else (a,):
                if is_tensor(t):
                    inputs += _foreign_pair(t)
        cell = self.cell_filename
        dirs = _framework_dirs() if cell is None else ()
        # the walk starts at the caller of the framework's function (user code, or the
        # framework's own code: a module's forward), three calls up (its handler, the
        # watcher's forward, here); each frame passed costs a frame object
        try:
            frame = _getframe(3)
        except ValueError:
            frame = _getframe(1)
        fname, lineno = _user_line(frame, cell, dirs)
        groups = self._open_groups
        refs = tuple(_weakref(t) for t in tensors) if len(tensors) > 1 else _weakref(tensors[0])
        self._raw.append(
            (
                op,
                inputs,
                tuple(outputs),
                node,
                elapsed,
                fname,
                lineno,
                groups[-1] if groups else None,
                refs,
            )
        )
        check_forward(self, source, args, result)
        if len(self._raw) == LARGE:  # NOTE [The collector while recording]
            self._raise_threshold()
        if self._subscribers and _perf_counter() >= self._notify_due:
            self._notify_calls()

    # -- module groups -----------------------------------------------------------------------
    def _install_module_hooks(self, sources):
        rec = self

        def pre_hook(module, args):
            rec._module_enter(module, "global_hooks")

        def post_hook(module, args, output):
            for group in reversed(rec._open_groups):
                if group.module is module:
                    rec._module_exit(group)
                    break

        for source in sources:
            self._module_handles += source.module_call_hooks(pre_hook, post_hook)
        if self._module_handles:
            self._module_source = "global_hooks"

    def _module_enter(self, module, source):
        if not self.running or not self.forward or self._counting:
            return None
        if source == "explicit" and self._module_source is not None:
            # nbgrad.nn's modules already reach us through way 1 or 3: do not count them twice
            module_cls = getattr(sys.modules.get("nbgrad.nn"), "Module", None)
            if module_cls is not None and isinstance(module, module_cls):
                return None
        if threading.get_ident() != self._thread:
            return None
        with self._lock:
            parent = self._open_groups[-1] if self._open_groups else None
            group = ModuleCall()
            group.index = self._group_count  # (not the position: steps may be dropped)
            self._group_count += 1
            group.type = type(module).__name__
            group.name = _child_name(parent.module if parent else None, module) or group.type
            group.path = f"{parent.path}.{group.name}" if parent is not None else group.name
            group.parent = parent
            group.depth = parent.depth + 1 if parent is not None else 0
            group.start = len(self.records)
            group.end = None
            group.error = None
            group.source = source
            try:
                group._module_ref = weakref.ref(module)
            except TypeError:
                group._module_ref = None
            self.modules.append(group)
            self._open_groups.append(group)
        return group

    def _module_exit(self, group, error=None):
        with self._lock:
            if group not in self._open_groups:
                return
            # close any group left open inside it (an exception skipped its exit)
            while self._open_groups:
                g = self._open_groups.pop()
                g.end = len(self.records)
                if g is group:
                    g.error = error
                    break
                g.error = g.error or "not closed"

    # -- reading -----------------------------------------------------------------------------
    def nodes(self):
        """The nodes the forward calls created, in creation order."""
        return [r.node for r in self.records if r.node is not None]

    def in_scope(self, node) -> bool:
        """Whether ``node`` was created inside the block (by sequence number)."""
        seq = self.graph_source.sequence_nr(node)
        if self.seq_start is None or seq >= 2**64 - 1:
            return False
        return seq > self.seq_start and (self.seq_end is None or seq <= self.seq_end)

    def summary(self) -> str:
        return (
            f"{len(self.records)} forward calls, {len(self.modules)} module calls, "
            f"{len(self.passes)} backward passes{self._steps_note()}"
        )

    def __repr__(self):
        state = "running" if self.running else "stopped"
        return f"<Recorder ({state}): {self.summary()}>"


def _exclusive(method):
    """An event handler that ignores the events its own work causes on its thread."""

    def handler(self, *args):
        busy = self.recorder._busy
        if getattr(busy, "on", False):
            return None
        busy.on = True
        try:
            return method(self, *args)
        finally:
            busy.on = False

    handler.__name__ = method.__name__
    handler.__doc__ = method.__doc__
    return handler


class _Watcher(GraphObserver):
    """What a :class:`Recorder` installs through its graph source: forward calls become
    records; each backward pass a :class:`BackwardTrace` with one :class:`Step` per node."""

    def __init__(self, recorder, source):
        self.recorder = recorder
        self.source = source
        self.open_traces = recorder._open_traces  # id(graph task) -> its trace, while open
        # NOTE [One call a forward call]
        # nbgrad's dispatch calls its observer's ``forward`` inside every op of a recorded
        # block; the watcher of nbgrad's calls is the recorder's ``_on_forward`` itself, not a
        # method that calls it (a Python call fewer an op: 0.15 us), and ``_on_forward`` asks
        # whether nbgrad's calls are the block's (NOTE [One framework a block])
        if source is NBGRAD:
            self.forward = recorder._on_forward

    def forward(self, op, args, attrs, result, elapsed):
        self.recorder._on_foreign_forward(self.source, op, args, attrs, result, elapsed)

    def node_events(self):
        return not self.counting()

    def counting(self):
        """Whether the step running now is only counted (NOTE [Repeated steps counted]): a
        backward pass then needs no events but its start and end."""
        return self.recorder._counting and self.source is self.recorder.graph_source

    # NOTE [What a watched node costs]
    # The stepper's answers (the ready queue, the changed counts, the waiting buffers, each
    # gradient's norm and first values, NaN/Inf) stay exact for every node of every pass, so
    # each node's events fill its step's columns and its gradients' GradFacts, taken while the
    # engine runs (a gradient may be freed or changed in place right after). They are made
    # compact (NOTE [Steps kept as columns], NOTE [Steps read alike], NOTE [Gradients read
    # from the steps], NOTE [Facts kept small]), with few Python calls an event (a chain's
    # routing and empty queue read without their general loops); ``tests/benchmarks/
    # recording.py`` prints what a watched node costs in time and memory: on its 100,002-node
    # chain the backward recorded takes 0.83-0.87 s against 0.32 plain and 0.44 with an
    # observer that does nothing (the pass then carries Tensors), 480 bytes a node kept with
    # the forward's records and the nodes (1.0 s and 722 bytes before). Cheaper would mean
    # keeping only the order the nodes ran in and their gradients' facts, and replaying
    # nbgrad's queue and counts when a step is read, as torch's passes are (NOTE [The model
    # run when read]).
    # NOTE [Events of a watched pass]
    # The events of one node (``node_ready``, ``node_start``, ``node_end``, ``hook``,
    # ``grad_accumulated``) come many times a pass, so they skip ``_exclusive``'s thread-local
    # guard: they only add to the trace of a pass that ``task_start`` opened, and
    # ``task_start`` (still guarded) opens none for a pass that the recorder's own work starts.
    # Each looks its trace up in place (a method call per event costs as much as the lookup).
    @_exclusive
    def task_start(self, graph_task, root, dependencies):
        rec = self.recorder
        if self.source is not rec.graph_source and not rec._claim(self.source):
            return
        if rec._counting:  # NOTE [Repeated steps counted]: no trace
            rec._counted_passes.add(id(graph_task))
            rec._pass_count += 1  # (the passes keep the numbers they ran with)
            rec._backward_depth += 1
            return
        with rec._lock:
            trace = BackwardTrace(
                rec._pass_count,
                root,
                dependencies,
                graph_task,
                rec.max_values,
                rec.graph_source,
            )
            rec._pass_count += 1
            rec.passes.append(trace)
            rec._pause_collection(len(dependencies))  # NOTE [The collector while recording]
            rec._open_traces[id(graph_task)] = trace
            rec._backward_depth += 1

    def node_ready(self, graph_task, node, device):
        trace = self.open_traces.get(id(graph_task))
        if trace is None:
            return
        if device is _CPU:  # (the CPU's queue is read from the engine: ``_ready_now``)
            device = "cpu"
        else:
            device = str(device)
            waiting = trace._ready.get(device)
            if waiting is None:
                waiting = trace._ready[device] = {}
            waiting[node] = None
        k = trace._current.get(get_ident())
        if k is not None:
            made = trace._made
            held = made[k]
            if held is NOTHING:  # NOTE [Steps kept as columns]: one node alone, then a list
                made[k] = node
            elif type(held) is list:
                held.append(node)
            else:
                made[k] = [held, node]
        elif not trace._nodes:
            trace._initial_ready.setdefault(device, []).append(node)

    def hook(self, graph_task, kind, node, handle, before, after):
        trace = self.open_traces.get(id(graph_task))
        if trace is None:
            return
        call = HookCall()
        call.kind = kind
        call.node = node
        call.handle = handle
        call.name = getattr(handle, "name", "?")
        call.before = _summaries(trace, before)
        if kind == "post_accumulate_grad":  # before and after: the leaf's .grad
            call.after = _summaries(trace, after)
            call.changed = call.after != call.before
        else:  # a hook that returns None leaves the gradient as it was
            call.changed = after is not None
            call.after = _summaries(trace, after) if after is not None else call.before
        trace.hook_calls.append(call)
        k = trace._current.get(get_ident())
        if k is not None and trace._nodes[k] is node:
            trace._hooks_at[k] = [*trace._hooks_at.get(k, ()), call]
        else:
            trace._pending_hooks.setdefault(node, []).append(call)

    def node_start(self, graph_task, node, inputs):
        trace = self.open_traces.get(id(graph_task))
        if trace is None:
            return
        nodes = trace._nodes
        k = len(nodes)
        nodes.append(node)
        summary = trace._summary
        trace._inputs.append(  # (NOTE [Steps kept as columns])
            summary(inputs[0]) if len(inputs) == 1 else tuple(map(summary, inputs))
        )
        trace._outputs.append(NOTHING)
        pending = trace._pending_hooks
        if pending and node in pending:
            trace._hooks_at[k] = pending.pop(node)
        if trace._modelled:  # NOTE [The model run when read]
            trace._deps.append(None)
            trace._made.append([])  # (the model's replay adds to it)
        else:
            trace._made.append(NOTHING)
            ready = trace._ready  # (nodes made ready on a device other than the CPU)
            if ready:
                for where, waiting in ready.items():
                    if node in waiting:
                        if where != "cpu":
                            trace._device_at[k] = where
                        del waiting[node]
                        break
            deps, buffers = trace._observe_routing(graph_task)
            trace._deps.append(deps)
            if buffers is not trace._no_buffers:  # (NOTE [Steps read alike])
                trace._buffers_at[k] = buffers
            if ready or graph_task.cpu_ready_queue:
                ready = trace._ready_now(graph_task, node)
                if ready is not trace._none_ready:
                    trace._ready_at[k] = ready
        trace._ends.append(_NAN)
        trace._current[get_ident()] = k
        trace._times.append(_perf_counter())

    def grad_accumulated(self, graph_task, node, variable, grad, before, after):
        trace = self.open_traces.get(id(graph_task))
        if trace is None:
            return
        acc = Accumulation()
        acc.node = node
        acc.variable = weakref.ref(variable)
        acc.grad = trace._summary(grad)
        acc.before = trace._summary(before)
        acc.after = trace._summary(after)
        trace.accumulations.append(acc)
        k = trace._current.get(get_ident())
        if k is not None and trace._nodes[k] is node:
            trace._accumulated_at[k] = acc

    # NOTE [Time in backward]
    # A node's time in backward is from its ``node_start`` event (read last in ``node_start``,
    # after the recorder's own work) to its ``node_end`` (read first): one ``perf_counter`` read
    # more per node. nbgrad's engine sends ``node_start`` after the node's pre-hooks and
    # ``node_end`` after its function, the gradients' shape check, anomaly mode's NaN check and
    # its post-hooks, so the time is the function's and the post-hooks'. PyTorch's engine is
    # watched through a pre-hook and a post-hook on each node (torch_source.py), so both ends
    # are read there (a real end, not the next node's start); torch runs a node's hooks in the
    # order registered, so the user's pre-hooks (registered before the watch's) fall outside
    # the time and their post-hooks inside, as in nbgrad. A node that raised has no end
    # (``Step.end`` None) and no time. A folded group's time is the sum of its nodes'.
    def node_end(self, graph_task, node, outputs):
        end = _perf_counter()  # NOTE [Time in backward]: before the summaries below
        trace = self.open_traces.get(id(graph_task))
        if trace is None:
            return
        k = trace._current.get(get_ident())
        summary = trace._summary
        summaries = (  # (NOTE [Steps kept as columns])
            summary(outputs[0]) if len(outputs) == 1 else tuple(map(summary, outputs))
        )
        if k is not None and trace._nodes[k] is node:
            if len(outputs) == 2 and summaries[1] is None and not trace._modelled:
                summaries = summaries[0]  # NOTE [Steps kept as columns]: (g, None) as g
            trace._outputs[k] = summaries
            trace._ends[k] = end
            trace._ended += 1
        else:  # NOTE [Gradients read from the steps]
            for i, s in enumerate(one_or_many(summaries)):
                trace._loose_grads[(node, i)] = s
        trace._pending.append(node)

    @_exclusive
    def task_end(self, graph_task, error):
        rec = self.recorder
        trace = self.open_traces.get(id(graph_task))
        if trace is None:
            if id(graph_task) in rec._counted_passes:  # NOTE [Repeated steps counted]
                rec._counted_passes.discard(id(graph_task))
                rec._backward_depth = max(0, rec._backward_depth - 1)
                if not rec._backward_depth and rec._counting:
                    rec._step_ended()
                if error is not None:
                    rec._stop_counting()
                if not rec._backward_depth:
                    rec._notify()  # the subscribers see each pass end (the gradient flow)
            return
        trace._current.pop(get_ident(), None)
        if getattr(graph_task, "replay", None) is not None:  # NOTE [The model run when read]
            trace._replay = graph_task
        else:
            deps, trace._final_buffers = trace._observe_routing(graph_task)
            trace._final_dependencies = counts(deps)
        trace.error = f"{type(error).__name__}: {error}" if error is not None else None
        trace.finished = True
        trace._memo = {}
        trace._norms = {}
        with rec._lock:
            rec._open_traces.pop(id(graph_task), None)
            rec._backward_depth = max(0, rec._backward_depth - 1)
            rec._resume_collection()
        if not rec._backward_depth:
            if rec.keep_steps is not None:
                rec._step_ended()
            rec._notify()


class _BackwardOnly:
    def __init__(self, recorder):
        self.recorder = recorder
        self._saved = None

    def __enter__(self):
        rec = self.recorder
        if rec.running:
            self._saved = None
            return rec
        self._saved = rec.forward
        rec.forward = False
        rec.start()
        return rec

    def __exit__(self, *exc):
        rec = self.recorder
        if self._saved is not None:
            seq_end = rec.seq_end
            rec.stop()
            rec.seq_end = seq_end
            rec.forward = self._saved
        return False


def _summaries(trace, value):
    if isinstance(value, (tuple, list)):
        return [trace._summary(v) for v in value]
    return trace._summary(value)


def _child_name(parent, module):
    """The name of ``module`` within ``parent``: a child's name, or the dotted path of a
    descendant that the parent reaches through containers it does not call (a
    TransformerEncoder's ``layers.0``, a ModuleList's items), as ``named_modules`` names it."""
    if parent is None:
        return None
    # the names found by the last walk of this parent, if that one still names this child (a
    # loop calls the same modules each step; a walk goes through all of a parent's
    # descendants, so one walk names them all: NOTE [One walk names a parent's modules])
    names = _CHILD_NAMES.get(id(parent))
    name = names.get(id(module)) if names is not None else None
    if name is not None and _descendant(parent, name) is module:
        return name
    names = _names_below(parent)
    if names is None:
        return None
    if len(_CHILD_NAMES) > 4096:
        _CHILD_NAMES.clear()
    _CHILD_NAMES[id(parent)] = names
    return names.get(id(module))


def _names_below(parent):
    """``id(module) -> name`` for every module below ``parent``: its children by their own
    names, the modules deeper by their dotted paths; None when the parent names none."""
    walks = []
    try:
        for walk in ("named_modules", "named_children"):
            found = getattr(parent, walk, None)
            names = {}
            walks.append(names)
            if found is None:
                continue
            for name, child in found():
                if name:
                    names.setdefault(id(child), name)  # the first name, as a search finds
    except Exception:  # noqa: BLE001 - a half-built module must not break recording
        return None
    names, own = walks
    if not names and not own:
        return None
    names.update(own)  # a child's own name wins over a deeper path to it
    return names


def _descendant(parent, path):
    """The module at the dotted ``path`` below ``parent``, or None."""
    try:
        for part in path.split("."):
            parent = getattr(parent, part, None)
    except Exception:  # noqa: BLE001 - a half-built module must not break recording
        return None
    return parent


_perf_counter = time.perf_counter
_NAN = float("nan")  # the end of a step whose node has not ended (NOTE [Steps kept as columns])
CALLS_TOLD_EVERY = 0.02  # seconds: NOTE [Calls told in batches]
COLLECT_EVERY = 10_000  # new objects: NOTE [The collector while recording]
LARGE = 10_000  # calls recorded, or nodes in a pass: NOTE [The collector while recording]

# NOTE [One walk names a parent's modules]
# A module call is named by its path from the module that called it, found by walking the
# parent's modules. A walk per call made a 1,500-layer TransformerEncoder's cell quadratic
# (each layer's call walked the encoder's 15,000 modules); one walk now names every module
# below the parent, kept per parent and checked against the parent's attributes when used.
_CHILD_NAMES: dict = {}  # id(parent) -> {id(module): its name below the parent}


def _remove(lst, item):
    for i, x in enumerate(lst):
        if x is item or x == item:
            del lst[i]
            return


def record(**kwargs) -> Recorder:
    """``with record() as rec:`` records the forward calls and backward passes of the block.

    Keyword arguments: ``forward`` and ``backward`` (what to record, both True),
    ``max_values`` (how many gradient values each summary keeps, 16).
    """
    return Recorder(**kwargs)
