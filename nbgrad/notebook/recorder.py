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

import linecache
import os
import sys
import threading
import time
import weakref
from threading import get_ident

from nbgrad import Tensor
from nbgrad.autograd.graph import GraphObserver, try_get_grad_accumulator

from .snapshot import grad_summary
from .sources import NBGRAD, dtype_name, observable_sources

_weakref = weakref.ref
_new_record = object.__new__
_getframe = sys._getframe
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
    code)."""
    dirs = [_NBGRAD_DIR]
    for name in ("torch",):
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "__file__", None):
            dirs.append(os.path.dirname(os.path.abspath(mod.__file__)) + os.sep)
    return tuple(dirs)


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


class TensorInfo:
    """Shape, dtype, device of a tensor in a record, and where it sits in the graph."""

    __slots__ = ("shape", "dtype", "device", "requires_grad", "node", "output_nr")

    def __init__(self, t, source=NBGRAD):
        facts = source.tensor_facts(t)
        self.shape = facts.shape
        self.dtype = facts.dtype
        self.device = facts.device
        self.requires_grad = facts.requires_grad
        self.node = source.gradient_node(t, create=False)
        self.output_nr = facts.output_nr

    @classmethod
    def _from_raw(cls, node, extra, source):
        """From the pair the recorder took when the op ran (see NOTE [Recording cost])."""
        info = cls.__new__(cls)
        info.node = node
        if node is not None:
            output_nr = extra
            meta = source.input_metadata(node)[output_nr]
            info.shape = meta.shape
            info.dtype = meta.dtype
            info.device = meta.device
            info.requires_grad = True
            info.output_nr = output_nr
        else:
            shape, dtype, device, requires_grad = extra
            info.shape = tuple(shape)
            info.dtype = dtype_name(dtype)
            info.device = str(device)
            info.requires_grad = requires_grad
            info.output_nr = 0
        return info

    def __repr__(self):
        return f"TensorInfo({list(self.shape)}, {self.dtype}, {self.device})"


def _infos(flat, source):
    return [TensorInfo._from_raw(flat[k], flat[k + 1], source) for k in range(0, len(flat), 2)]


# NOTE [Forward capture reads nbgrad's tensors]
# The functions below run inside every op of a recorded block, on the tensors of nbgrad's own
# forward listener, so they read the Tensor's public attributes directly rather than through
# the graph source (a call per read). Everything read later, when records, traces and
# snapshots are made, goes through ``Recorder.graph_source`` (see NOTE [One reader of the graph]).
def _leaf_pair(t):
    """The pair a record keeps for a tensor without grad_fn (see NOTE [Recording cost])."""
    if t.requires_grad:
        acc = try_get_grad_accumulator(t)
        if acc is not None:
            return (acc, 0)
    return (None, (t.shape, t.dtype, t.device, t.requires_grad))


def _input_pairs(args):
    """The flat pairs of the tensors among ``args`` (see NOTE [Recording cost])."""
    inputs = []
    for a in args:
        ta = type(a)
        if ta is _Tensor or (ta is not float and ta is not int and isinstance(a, _Tensor)):
            fn = a.grad_fn
            inputs += (fn, a.output_nr) if fn is not None else _leaf_pair(a)
        elif ta is list:
            for t in a:
                if isinstance(t, _Tensor):
                    fn = t.grad_fn
                    inputs += (fn, t.output_nr) if fn is not None else _leaf_pair(t)
    return inputs


def _edge_pairs(node, source):
    """The flat pairs of a node's edges: its inputs' pairs when every argument has an edge."""
    pairs = []
    for fn, input_nr in source.next_edges(node):
        pairs += (fn, input_nr)
    return pairs


class Record:
    """One forward call: ``op`` name, inputs and outputs (:class:`TensorInfo`), the Node it
    created (or None), ``elapsed`` seconds, the user code line and the module group.

    NOTE [Recording cost]
    The recorder runs inside every op of a recorded block, so a record takes only what cannot
    wait, in as few objects as possible (each one is also work for the garbage collector):
    one tuple per call in ``RecordList._raw``, not a Record object; the inputs and the outputs
    are each one flat sequence of pairs, ``grad_fn, output_nr`` for a tensor that has a
    grad_fn (the node's input metadata give its shape, dtype and device later),
    ``AccumulateGrad, 0`` for a leaf that requires grad, ``None, (shape, dtype, device,
    requires_grad)`` for any other tensor (and a single output made by the call's node is
    just its ``output_nr``; and when every argument has an edge of the call's node, the
    inputs are those edges, kept as None and read from the node later); a weak reference to
    the output (a tuple of them for several);
    the user frame's file and line number. Record objects, ``inputs``, ``outputs`` (lists of
    TensorInfo) and ``source`` (the line's text) are made when first read. The frame walk
    starts four calls up (each frame passed materialises a frame object). The garbage
    collector's share grows with every container made, hence the flat tuples.
    ``tests/benchmarks/notebook.py`` measures the cost: about +1.5 us per op, x1.4 on the
    cheapest ops.
    """

    __slots__ = (
        "index",
        "op",
        "_raw_inputs",
        "_raw_outputs",
        "_inputs",
        "_outputs",
        "node",
        "elapsed",
        "filename",
        "lineno",
        "line",
        "_source",
        "group",
        "_outputs_ref",
        "graph_source",
        "__weakref__",
    )

    @property
    def inputs(self):
        infos = self._inputs
        if infos is None:
            infos = self._inputs = _infos(self._raw_inputs, self.graph_source)
        return infos

    @property
    def outputs(self):
        infos = self._outputs
        if infos is None:
            infos = self._outputs = _infos(self._raw_outputs, self.graph_source)
        return infos

    @property
    def source(self):
        """The text of the user code line that made this call ("" if not user code)."""
        src = self._source
        if src is None:
            src = ""
            if self.filename is not None:
                src = linecache.getline(self.filename, self.lineno).strip()
            self._source = src
        return src

    def __repr__(self):
        node = self.node.name() if self.node is not None else None
        return f"<Record #{self.index} {self.op} -> {node} line {self.line}>"

    def output_tensors(self):
        """The output tensors that are still alive (the record keeps weak references)."""
        refs = self._outputs_ref
        out = []
        for ref in refs if type(refs) is tuple else (refs,):
            t = ref()
            if t is not None:
                out.append(t)
        return out

    @property
    def n_outputs(self) -> int:
        refs = self._outputs_ref
        return len(refs) if type(refs) is tuple else 1


class RecordList:
    """The records of a recorder, in call order: a read-only sequence of :class:`Record`.

    The recorder appends one plain tuple per call (see NOTE [Recording cost]); the Record
    objects are made when the list is first read past them."""

    __slots__ = ("_raw", "_made", "_cell", "_line_offset", "graph_source")

    def __init__(self, cell=None, line_offset=0, source=NBGRAD):
        self._raw = []  # (op, inputs, outputs, node, elapsed, filename, lineno, group, refs)
        self._made = []
        self._cell = cell
        self._line_offset = line_offset
        self.graph_source = source

    def _sync(self):
        made = self._made
        raw = self._raw
        cell = self._cell
        source = self.graph_source
        for k in range(len(made), len(raw)):
            op, inputs, outputs, node, elapsed, filename, lineno, group, refs = raw[k]
            rec = _new_record(Record)
            rec.index = k
            rec.op = op
            rec.graph_source = source
            rec._raw_inputs = inputs if inputs is not None else _edge_pairs(node, source)
            rec._raw_outputs = (node, outputs) if type(outputs) is int else outputs
            rec._inputs = rec._outputs = None
            rec.node = node
            rec.elapsed = elapsed
            rec.filename = filename
            rec.lineno = lineno
            rec.line = (
                lineno + self._line_offset if filename is not None and filename == cell else lineno
            )
            rec._source = None if filename is not None else ""
            rec.group = group
            rec._outputs_ref = refs
            made.append(rec)
        return made

    def __len__(self):
        return len(self._raw)

    def __bool__(self):
        return bool(self._raw)

    def __getitem__(self, i):
        return self._sync()[i]

    def __iter__(self):
        return iter(self._sync())

    def __reversed__(self):
        return reversed(self._sync())

    def __eq__(self, other):
        return list(self) == list(other)

    def __repr__(self):
        return repr(self._sync())


class ModuleCall:
    """One call of a module: a group of records, nested inside its parent's group."""

    __slots__ = (
        "index",
        "name",
        "type",
        "path",
        "parent",
        "depth",
        "start",
        "end",
        "error",
        "_module_ref",
        "source",
    )

    @property
    def module(self):
        return self._module_ref() if self._module_ref is not None else None

    def __repr__(self):
        return (
            f"<ModuleCall #{self.index} {self.path} ({self.type}) records {self.start}:{self.end}>"
        )


class HookCall:
    """A hook that fired during backward, with the gradient before and after it (summaries)."""

    __slots__ = ("kind", "node", "handle", "name", "before", "after", "changed")

    def __repr__(self):
        return f"<HookCall {self.kind} {self.name} on {self.node.name()}>"


class Step:
    """One node of a backward pass, as the engine saw it when the node started.

    ``ready``: the nodes waiting on each device's queue while this one runs; ``dependencies``
    and ``buffers``: the counts and not-ready input buffers that changed since the previous
    step (the routing of the previous nodes' outputs); ``made_ready``: the nodes this one's
    outputs made ready; ``accumulated``: for an AccumulateGrad, the :class:`Accumulation`.
    """

    __slots__ = (
        "index",
        "node",
        "device",
        "inputs",
        "outputs",
        "hooks",
        "ready",
        "dependencies",
        "buffers",
        "made_ready",
        "accumulated",
        "time",
    )

    def __repr__(self):
        return f"<Step {self.index} {self.node.name()}>"


class Accumulation:
    """A gradient accumulated into a leaf's ``.grad`` (the engine's ``grad_accumulated``
    event): the AccumulateGrad ``node``, a weak reference to the leaf (``variable``), and
    summaries of the incoming ``grad`` and of ``.grad`` ``before`` and ``after``."""

    __slots__ = ("node", "variable", "grad", "before", "after")

    def __repr__(self):
        return f"<Accumulation into {self.node.name()}>"


class BackwardTrace:
    """One backward pass (one graph task) as a list of :class:`Step` s.

    The trace is a record: the stepper replays it (forward and back) after the pass has run.
    """

    def __init__(self, index, root, dependencies, graph_task, max_values, source=NBGRAD):
        self.index = index
        self.graph_source = source
        self.root = root
        self.keep_graph = bool(getattr(graph_task, "keep_graph", False))
        self.create_graph = bool(getattr(graph_task, "create_graph", False))
        self.initial_dependencies = dict(dependencies)
        self.initial_ready = {}
        self.steps: list[Step] = []
        self.hook_calls: list[HookCall] = []
        self.accumulations: list[Accumulation] = []  # in the order the leaves got them
        self.edge_grads: dict = {}  # (node, edge index) -> gradient summary
        self.node_inputs: dict = {}  # node -> summaries of the gradients it received
        self.final_dependencies: dict = {}
        self.final_buffers: dict = {}
        self.error = None
        self.finished = False
        self.max_values = max_values
        # a pass observed from outside (torch's, NOTE [Watching torch]): the steps where the
        # framework ran another node than nbgrad's model of the engine would; None otherwise
        self.model_differs = None
        self._graph_task = weakref.ref(graph_task)
        self._ready: dict = {}  # device -> {node: None} (from node_ready/node_start events)
        self._pending = []  # nodes that ended and whose routing is not yet observed
        self._current = {}  # thread -> Step running
        self._pending_hooks = {}  # node -> hooks that fired before node_start
        self._memo = {}  # id(tensor) -> (weak reference, version, summary), for this pass

    @property
    def order(self):
        """The nodes in the order they ran."""
        return [s.node for s in self.steps]

    def __repr__(self):
        root = self.graph_source.node_name(self.root) if self.root is not None else None
        return f"<BackwardTrace #{self.index} from {root}: {len(self.steps)} steps>"

    # -- building (called from the engine listener) --------------------------------------------
    def _summary(self, value):
        """A gradient's summary; the same tensor, unchanged since, is summarised once per pass
        (a node's output is the next node's input: at a model's size, summaries are most of
        the recorder's cost)."""
        source = self.graph_source
        if value is None or not source.is_tensor(value):
            return grad_summary(value, self.max_values, source)
        key = id(value)
        version = source.version(value)
        hit = self._memo.get(key)
        if hit is not None and hit[0]() is value and hit[1] == version:
            return hit[2]
        summary = grad_summary(value, self.max_values, source)
        try:
            self._memo[key] = (weakref.ref(value), version, summary)
        except TypeError:  # a tensor that takes no weak reference: not remembered
            pass
        return summary

    def _observe_routing(self, graph_task):
        """What the nodes that ended since the last step changed: counts and buffers."""
        deps_changed = {}
        buffers = {}
        deps = graph_task.dependencies
        not_ready = graph_task.not_ready
        next_edges = self.graph_source.next_edges
        for node in self._pending:
            for fn, _ in next_edges(node):
                if fn is None or fn in deps_changed:
                    continue
                deps_changed[fn] = deps.get(fn, 0)
                buf = not_ready.get(fn)
                if buf is not None:
                    buffers[fn] = [self._summary(g) for g in buf]
        self._pending = []
        return deps_changed, buffers

    def _ready_now(self, graph_task, running=None):
        ready = {"cpu": list(graph_task.cpu_ready_queue.snapshot())}
        seq = self.graph_source.sequence_nr
        for device, nodes in self._ready.items():
            if device != "cpu":
                ready[device] = sorted(
                    (n for n in nodes if n is not running), key=lambda n: -seq(n)
                )
        return ready


class Recorder:
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
        self._lock = threading.RLock()
        self._busy = threading.local()
        self._quiet = False  # set while the subscribers run (see _notify)
        self._ids = None  # the IdMap its snapshots share (set by build_snapshot)

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
        self._open_traces = {}
        self._backward_depth = 0
        self.seq_end = self.graph_source.next_sequence_nr()
        self._notify(final=True)

    def resume_backward(self):
        """A context manager that records backward passes only (for the hook editor's button)."""
        return _BackwardOnly(self)

    # -- subscribers (the live graph view) ---------------------------------------------------
    def subscribe(self, callback):
        """Call ``callback(recorder, final)`` after each change (the view throttles itself)."""
        self._subscribers.append(callback)

    def unsubscribe(self, callback):
        _remove(self._subscribers, callback)

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
        """One op: see NOTE [Recording cost] on what is kept now and what later."""
        if self._backward_depth:  # a derivative formula's op (any thread): counted only
            self.backward_ops += 1
            return
        if self._quiet or get_ident() != self._thread:
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
        inputs = None  # the node's edges, one per argument, are the inputs' pairs (read later)
        edges = node.next_edges() if node is not None else None
        if node is None or len(edges) != len(args):
            inputs = _input_pairs(args)
        else:
            for edge in edges:
                if edge[0] is None:  # a number or a constant tensor among the arguments
                    inputs = _input_pairs(args)
                    break
        # the user code that made it: the first frame outside nbgrad (in a cell: the cell's);
        # the walk starts where the user's frame is at the earliest, four calls up (user code,
        # Tensor.__mul__ or ng.exp, _binary or _dispatch, _Watcher.forward, here): each frame
        # passed on the way costs a frame object
        try:
            frame = _getframe(4)
        except ValueError:
            frame = _getframe(2)
        cell = self.cell_filename
        while frame is not None:
            fname = frame.f_code.co_filename
            if fname == cell or (cell is None and not fname.startswith(_NBGRAD_DIR)):
                lineno = frame.f_lineno
                break
            frame = frame.f_back
        else:
            fname = lineno = None
        groups = self._open_groups
        self._raw.append(
            (
                op.name,
                inputs,
                outputs,
                node,
                elapsed,
                fname,
                lineno,
                groups[-1] if groups else None,
                refs,
            )
        )
        if self._subscribers:
            self._notify()

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
        results = result if isinstance(result, (tuple, list)) else (result,)
        tensors = [t for t in results if is_tensor(t)]
        if not tensors:
            return
        if source is not self.graph_source and not self._claim(source):
            return
        node = None
        outputs = []
        for t in tensors:
            fn = t.grad_fn
            if fn is not None:
                node = fn if node is None else node
                outputs += (fn, t.output_nr)
            else:
                outputs += (None, (tuple(t.shape), t.dtype, t.device, t.requires_grad))
        inputs = []
        for a in (*args, *kwargs.values()):
            for t in a if isinstance(a, (list, tuple)) else (a,):
                if is_tensor(t):
                    fn = t.grad_fn
                    if fn is not None:
                        inputs += (fn, t.output_nr)
                    else:
                        inputs += (None, (tuple(t.shape), t.dtype, t.device, t.requires_grad))
        frame = _getframe(1)
        cell = self.cell_filename
        dirs = _framework_dirs() if cell is None else ()
        fname = lineno = None
        while frame is not None:
            name = frame.f_code.co_filename
            if name == cell or (cell is None and not name.startswith(dirs)):
                fname, lineno = name, frame.f_lineno
                break
            frame = frame.f_back
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
        if self._subscribers:
            self._notify()

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
        if not self.running or not self.forward:
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
            group.index = len(self.modules)
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
        return seq > self.seq_start and (self.seq_end is None or seq < self.seq_end)

    def summary(self) -> str:
        return (
            f"{len(self.records)} forward calls, {len(self.modules)} module calls, "
            f"{len(self.passes)} backward passes"
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

    def forward(self, op, args, attrs, result, elapsed):
        rec = self.recorder
        source = self.source
        if source is not NBGRAD:
            rec._on_foreign_forward(source, op, args, attrs, result, elapsed)
        elif source is rec.graph_source or rec._claim(source):
            rec._on_forward(op, args, attrs, result, elapsed)

    def _trace(self, graph_task):
        return self.recorder._open_traces.get(id(graph_task))

    @_exclusive
    def task_start(self, graph_task, root, dependencies):
        rec = self.recorder
        if self.source is not rec.graph_source and not rec._claim(self.source):
            return
        with rec._lock:
            trace = BackwardTrace(
                len(rec.passes),
                root,
                dependencies,
                graph_task,
                rec.max_values,
                rec.graph_source,
            )
            rec.passes.append(trace)
            rec._open_traces[id(graph_task)] = trace
            rec._backward_depth += 1

    @_exclusive
    def node_ready(self, graph_task, node, device):
        trace = self._trace(graph_task)
        if trace is None:
            return
        device = str(device)
        trace._ready.setdefault(device, {})[node] = None
        running = trace._current.get(get_ident())
        if running is not None:
            running.made_ready.append(node)
        elif not trace.steps:
            trace.initial_ready.setdefault(device, []).append(node)

    @_exclusive
    def hook(self, graph_task, kind, node, handle, before, after):
        trace = self._trace(graph_task)
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
        running = trace._current.get(get_ident())
        if running is not None and running.node is node:
            running.hooks.append(call)
        else:
            trace._pending_hooks.setdefault(node, []).append(call)

    @_exclusive
    def node_start(self, graph_task, node, inputs):
        trace = self._trace(graph_task)
        if trace is None:
            return
        step = Step()
        step.index = len(trace.steps)
        step.node = node
        step.device = "cpu"
        for device, nodes in trace._ready.items():
            if node in nodes:
                step.device = device
                del nodes[node]
                break
        step.inputs = [trace._summary(g) for g in inputs]
        step.outputs = []
        step.hooks = trace._pending_hooks.pop(node, [])
        step.dependencies, step.buffers = trace._observe_routing(graph_task)
        step.ready = trace._ready_now(graph_task, node)
        step.made_ready = []
        step.accumulated = None
        step.time = time.perf_counter()
        trace.node_inputs[node] = step.inputs
        trace.steps.append(step)
        trace._current[get_ident()] = step

    @_exclusive
    def grad_accumulated(self, graph_task, node, variable, grad, before, after):
        trace = self._trace(graph_task)
        if trace is None:
            return
        acc = Accumulation()
        acc.node = node
        acc.variable = weakref.ref(variable)
        acc.grad = trace._summary(grad)
        acc.before = trace._summary(before)
        acc.after = trace._summary(after)
        trace.accumulations.append(acc)
        running = trace._current.get(get_ident())
        if running is not None and running.node is node:
            running.accumulated = acc

    @_exclusive
    def node_end(self, graph_task, node, outputs):
        trace = self._trace(graph_task)
        if trace is None:
            return
        step = trace._current.get(get_ident())
        summaries = [trace._summary(g) for g in outputs]
        if step is not None and step.node is node:
            step.outputs = summaries
        for i, s in enumerate(summaries):
            trace.edge_grads[(node, i)] = s
        trace._pending.append(node)

    @_exclusive
    def task_end(self, graph_task, error):
        rec = self.recorder
        trace = self._trace(graph_task)
        if trace is None:
            return
        trace._current.pop(get_ident(), None)
        trace.final_dependencies, trace.final_buffers = trace._observe_routing(graph_task)
        differs = getattr(graph_task, "differs", None)
        trace.model_differs = list(differs) if differs is not None else None
        trace.error = f"{type(error).__name__}: {error}" if error is not None else None
        trace.finished = True
        trace._memo = {}
        with rec._lock:
            rec._open_traces.pop(id(graph_task), None)
            rec._backward_depth = max(0, rec._backward_depth - 1)
        if not rec._backward_depth:
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
    if parent is None:
        return None
    children = getattr(parent, "named_children", None)
    if children is None:
        return None
    try:
        for name, child in children():
            if child is module:
                return name
    except Exception:  # noqa: BLE001 - a half-built module must not break recording
        return None
    return None


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
