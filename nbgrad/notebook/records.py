"""What a :class:`~nbgrad.notebook.recorder.Recorder` keeps: forward calls (:class:`Record`,
with their tensors as :class:`TensorInfo`), module calls (:class:`ModuleCall`) and backward
passes (:class:`BackwardTrace`, one :class:`Step` per node, with the :class:`HookCall` s and the
:class:`Accumulation` s it saw). Plain records, read through the recorder's graph source; the
recorder (``recorder.py``) fills them.
"""

from __future__ import annotations

import linecache
import weakref
from array import array
from bisect import bisect_right as _bisect_right
from collections import namedtuple
from collections.abc import Mapping, Sequence
from itertools import count, repeat

import numpy as np

from nbgrad import Tensor as _Tensor

from .calls import _REFS, CALL_FIELDS, _Calls
from .sources import NBGRAD, dtype_name
from .summaries import array_facts, grad_facts

__all__ = [
    "TensorInfo",
    "Record",
    "RecordList",
    "ModuleCall",
    "BackwardTrace",
    "Step",
    "HookCall",
    "Accumulation",
]

_new_record = object.__new__


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


def _nodes_of(next_edges):
    """``next_nodes`` for a reader of edges: the node (or None) of each edge."""
    return lambda node: [fn for fn, _ in next_edges(node)]


# a record's inputs when the call's arguments are tensors, each with an edge of its node, and
# numbers, each with no edge (``h * 1.0001``): its node's edges less the None ones
TENSOR_EDGES = "the node's edges that are not None"


def _edge_pairs(node, source, numbers=False):
    """The flat pairs of a node's edges: its inputs' pairs when every argument has an edge
    (or, ``numbers``, when the arguments without one are numbers)."""
    pairs = []
    for fn, input_nr in source.next_edges(node):
        if fn is not None or not numbers:
            pairs += (fn, input_nr)
    return pairs


class Record:
    """One forward call: ``op`` name, inputs and outputs (:class:`TensorInfo`), the Node it
    created (or None), ``elapsed`` seconds, the user code line and the module group.

    NOTE [Recording cost]
    The recorder runs inside every op of a recorded block, so a record takes only what cannot
    wait, in as few objects as possible (each one is also work for the garbage collector):
    eight entries per call in ``RecordList._raw``'s one flat list and its elapsed time in an
    array (NOTE [Calls kept flat]), not a Record object; the inputs and the outputs
    are each one flat sequence of pairs, ``grad_fn, output_nr`` for a tensor that has a
    grad_fn (the node's input metadata give its shape, dtype and device later),
    ``AccumulateGrad, 0`` for a leaf that requires grad, ``None, (shape, dtype, device,
    requires_grad)`` for any other tensor (and a single output made by the call's node is
    just its ``output_nr``; and when every argument has an edge of the call's node, the
    inputs are those edges, kept as None and read from the node later, or, when the arguments
    without an edge are numbers, its edges less the None ones, kept as ``TENSOR_EDGES``); a
    weak reference to
    the output (a tuple of them for several);
    the user frame's file and line number. Record objects, ``inputs``, ``outputs`` (lists of
    TensorInfo) and ``source`` (the line's text) are made when first read. The frame walk
    starts three calls up (each frame passed materialises a frame object; NOTE [One call a
    forward call]), and in a cell stops at once when that frame is the cell's. The garbage
    collector's share grows with every container made, hence the flat pairs. The NaN/Inf
    check of each output (``answers_values.check_forward``) is included: a few floats are
    summed inline, as it would. ``tests/benchmarks/notebook.py`` measures the cost (about +3
    us per op, x2.2 on the cheapest ops before the calls were kept flat);
    ``tests/benchmarks/recording.py`` the backward's too: on its 100,000-call chain the
    forward recorded takes 0.46 s against 0.42 plain (0.52 before NOTE [Calls kept flat]).
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

    def input_nodes(self):
        """The node (or None) of each input, its TensorInfo not made."""
        return self._raw_inputs[0::2]

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

    The recorder keeps eight entries and a float per call (see NOTE [Recording cost], NOTE
    [Calls kept flat]); the Record objects are made when the list is first read past them, or
    (``since``) when the calls after one are read: a snapshot of a graph cut at its
    ``max_nodes`` keeps the last calls only, and reads the others' nodes alone (``made``)."""

    __slots__ = ("_raw", "_made", "_some", "_cell", "_line_offset", "graph_source")

    def __init__(self, cell=None, line_offset=0, source=NBGRAD):
        # op, inputs, outputs, node, elapsed, filename, lineno, group, refs: a call
        self._raw = _Calls()
        self._made = []
        self._some = {}  # index -> Record, made by ``since`` past the ones made in order
        self._cell = cell
        self._line_offset = line_offset
        self.graph_source = source

    def made(self):
        """``(node, outputs)`` of each call, in order, without making its Record: the Node it
        created (or None) and its outputs as ``Record.output_tensors`` reads them."""
        flat = self._raw.flat
        return list(zip(flat[3::CALL_FIELDS], flat[_REFS::CALL_FIELDS]))

    def refs_of(self, node):
        """The outputs (as ``made`` gives them) of the call that created ``node``, found in C
        without making a Record; None when no call did."""
        flat = self._raw.flat
        try:
            k = flat[3::CALL_FIELDS].index(node)  # (a Node equals itself alone)
        except ValueError:
            return None
        return flat[k * CALL_FIELDS + _REFS]

    def since(self, first, keep=True):
        """The records from index ``first`` on (a list), the earlier ones left unmade;
        ``keep=False``: those not made yet are made for this read alone, not kept (a snapshot
        reads each once: kept, the 20,000 calls drawn of a 100,000-call cell held 30 MB)."""
        made = self._made
        if keep and first <= len(made):
            return self._sync()[first:]
        some = self._some
        out = made[first:]
        for k in range(max(first, len(made)), len(self._raw)):
            rec = some.get(k)
            if rec is None:
                rec = self._make(k)
                if keep:
                    some[k] = rec
            out.append(rec)
        return out

    def _sync(self):
        made = self._made
        some = self._some
        for k in range(len(made), len(self._raw)):
            rec = some.pop(k, None) if some else None
            made.append(rec if rec is not None else self._make(k))
        return made

    def _make(self, k):
        """The Record of call ``k``."""
        cell = self._cell
        source = self.graph_source
        at = k * CALL_FIELDS
        op, inputs, outputs, node, filename, lineno, group, refs = self._raw.flat[
            at : at + CALL_FIELDS
        ]
        elapsed = self._raw.elapsed[k]
        rec = _new_record(Record)
        rec.index = k
        rec.op = op
        rec.graph_source = source
        if inputs is None or inputs is TENSOR_EDGES:
            inputs = _edge_pairs(node, source, inputs is TENSOR_EDGES)
        rec._raw_inputs = inputs
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
        return rec

    def __len__(self):
        return len(self._raw.elapsed)

    def __bool__(self):
        return bool(self._raw.elapsed)

    def _forget_dead(self):
        """When the recording stops: NOTE [Calls kept flat]."""
        self._raw.forget_dead(self._made, self._some)

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


# NOTE [Steps kept as columns]
# A pass keeps its steps as columns (a list per field, the start and end times as arrays of
# floats; the rare fields, hooks, accumulations and other devices, in dicts by step index),
# not an object per step. A Step is a view made when read (``trace.steps``): a tuple
# ``(trace, index, node, start, end)``, made in C when the steps are iterated (a snapshot's
# walk over 100,000 of them: 0.075 s, 0.055 s over objects); its other fields read the
# columns, and write through (the model of a torch pass fills its steps so). In a column, what
# a node has one of is kept alone, not in a tuple: one gradient in or out (``Step.inputs``
# reads it as a 1-tuple), one node made ready, and one changed count when it is 0 (the node it
# made ready, as a chain's steps have); so is the one gradient a node of nbgrad's with two
# edges sent beside a None (``h * 1.0001``: ``_sent`` reads it back by the node's edges; its
# engine checks that a node sends one gradient an edge). The counts the pass started with
# are two columns too (nodes, counts), not a dict. On a 100,000-node chain
# (``tests/benchmarks/recording.py``): 113 MB kept after the cell with a Step object a node,
# 72 MB so; the backward pass recorded in 1.02-1.10 s against 1.17-1.20 s (plain: 0.33 s).
class Step(namedtuple("StepView", "trace index node time end")):
    """One node of a backward pass, as the engine saw it when the node started: a view of its
    trace's columns (NOTE [Steps kept as columns]), made when read.

    ``ready``: the nodes waiting on each device's queue while this one runs; ``dependencies``
    and ``buffers``: the counts and not-ready input buffers that changed since the previous
    step (the routing of the previous nodes' outputs); ``made_ready``: the nodes this one's
    outputs made ready; ``accumulated``: for an AccumulateGrad, the :class:`Accumulation`;
    ``time`` and ``end``: ``time.perf_counter()`` when the node started and ended (None: not
    ended when the view was made).
    """

    __slots__ = ()

    @property
    def inputs(self) -> tuple:
        """The GradFacts of the gradients the node received."""
        return one_or_many(self[0]._inputs[self[1]])

    @property
    def outputs(self) -> tuple:
        """The GradFacts of the gradients the node sent (empty while it runs)."""
        return self[0]._sent(self[1])

    @property
    def hooks(self):
        return self[0]._hooks_at.get(self[1], NOTHING)

    @property
    def accumulated(self):
        return self[0]._accumulated_at.get(self[1])

    @property
    def device(self):
        return self[0]._device_at.get(self[1], "cpu")

    @device.setter
    def device(self, device):
        at = self[0]._device_at
        if device == "cpu":
            at.pop(self[1], None)
        else:
            at[self[1]] = device

    @property
    def ready(self):
        trace = self[0]  # (NOTE [Steps read alike]: the common value is not kept a step)
        return trace._ready_at.get(self[1], trace._usual_ready)

    @ready.setter
    def ready(self, ready):
        self[0]._ready_at[self[1]] = ready

    @property
    def buffers(self):
        trace = self[0]
        return trace._buffers_at.get(self[1], trace._usual_buffers)

    @buffers.setter
    def buffers(self, buffers):
        self[0]._buffers_at[self[1]] = buffers

    @property
    def made_ready(self):
        made = self[0]._made[self[1]]
        return made if type(made) is list or made is NOTHING else (made,)

    @made_ready.setter
    def made_ready(self, made):
        self[0]._made[self[1]] = made

    @property
    def dependencies(self):
        """node -> its count, for each count that changed (None: not observed yet)."""
        return counts(self[0]._deps[self[1]])

    @dependencies.setter
    def dependencies(self, deps):
        self[0]._deps[self[1]] = deps

    @property
    def elapsed(self):
        """Seconds from the node's start to its end in the backward (NOTE [Time in backward]),
        or None when it did not end (the pass failed in it)."""
        return None if self[4] is None else self[4] - self[3]

    def __repr__(self):
        return f"<Step {self[1]} {self[2].name()}>"


NOTHING = ()  # a step's outputs, hooks or made_ready while it has none


def counts(deps):
    """A step's changed counts as kept (NOTE [Steps kept as columns]) as a dict node -> count,
    or None (a modelled pass's step before its replay)."""
    if type(deps) is tuple:
        return dict(zip(deps[::2], deps[1::2]))
    if deps is None or type(deps) is dict:
        return deps
    return {deps: 0}


def one_or_many(value) -> tuple:
    """A column's gradients as a tuple: one is kept alone (NOTE [Steps kept as columns])."""
    return value if type(value) is tuple else (value,)


class _Steps(Sequence):
    """A trace's steps, each a :class:`Step` view made when read (in C: a snapshot iterates
    over 100,000 of them)."""

    __slots__ = ("_trace",)

    def __init__(self, trace):
        self._trace = trace

    def __len__(self):
        return len(self._trace._nodes)

    def __getitem__(self, k):
        if type(k) is slice:
            return [self[i] for i in range(*k.indices(len(self)))]
        t = self._trace
        end = t._ends[k]
        end = None if end != end else end  # (NaN: not ended)
        return _new_tuple(Step, (t, range(len(t._nodes))[k], t._nodes[k], t._times[k], end))

    def __iter__(self):
        t = self._trace
        ends = t._ends
        if t._ended != len(ends):  # (NaN: not ended)
            ends = [None if end != end else end for end in ends]
        return map(_new_tuple, repeat(Step), zip(repeat(t), count(), t._nodes, t._times, ends))

    def __repr__(self):
        return repr(list(self))


_new_tuple = tuple.__new__
_weakref = weakref.ref
_ndarray = np.ndarray
MEMO_LIMIT = 4096  # entries: NOTE [The memo holds the living]


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
        # node -> its count when the pass started, as two columns (NOTE [Steps kept as columns])
        self._initial_nodes = list(dependencies)
        self._initial_counts = array("q", dependencies.values())
        self._initial_ready = {}
        # the steps, as columns (NOTE [Steps kept as columns]): per step, its node, its
        # gradients in and out, changed counts, nodes made ready, start and end; hooks,
        # accumulations, devices other than the CPU, and ready queues and buffers other than
        # the usual ones (NOTE [Steps read alike]) by step index
        self._nodes: list = []
        self._inputs: list = []
        self._outputs: list = []
        self._deps: list = []
        self._made: list = []
        self._ready_at: dict = {}
        self._buffers_at: dict = {}
        self._times = array("d")
        self._ends = array("d")  # (NaN: not ended)
        self._ended = 0  # how many steps ended
        self._hooks_at: dict = {}
        self._accumulated_at: dict = {}
        self._device_at: dict = {}
        self.hook_calls: list[HookCall] = []
        self.accumulations: list[Accumulation] = []  # in the order the leaves got them
        # (node, edge index) -> the gradient's GradFacts; node -> GradFacts of the gradients it
        # received (NOTE [Gradients read from the steps])
        self.edge_grads = _EdgeGrads(self)
        self.node_inputs = _NodeInputs(self)
        self._index_of = None  # NOTE [Steps found by id]: made when read
        self._loose_grads: dict = {}  # (node, edge index) -> GradFacts sent outside its step
        self._final_dependencies: dict = {}
        self._final_buffers: dict = {}
        self.error = None
        self.finished = False
        self.max_values = max_values
        # a pass observed from outside (torch's, NOTE [Watching torch]): the steps where the
        # framework ran another node than nbgrad's model of the engine would; None otherwise
        self._model_differs = None
        # a pass whose engine state is modelled after it ran (NOTE [The model run when read]):
        # its graph task, until the first read of the steps
        self._replay = None
        self._modelled = getattr(graph_task, "replay", None) is not None
        self._graph_task = weakref.ref(graph_task)
        # device -> {node: None}, ready and not started, for devices other than the CPU
        self._ready: dict = {}
        self._pending = []  # nodes that ended and whose routing is not yet observed
        self._current = {}  # thread -> the index of the step running
        self._pending_hooks = {}  # node -> hooks that fired before node_start
        self.nonfinite_seen = False  # whether a gradient of the pass held NaN or Inf
        # what most steps of a long pass share: no buffer waiting, nothing else ready (a
        # modelled pass's steps: None until its model runs)
        self._no_buffers, self._none_ready = {}, {"cpu": []}
        self._usual_buffers = None if self._modelled else self._no_buffers
        self._usual_ready = None if self._modelled else self._none_ready
        # id(tensor) -> (weak reference, version, GradFacts), for this pass (NOTE [The memo
        # holds the living])
        self._memo = {}
        self._memo_limit = MEMO_LIMIT
        self._version_of = source.version
        # how _observe_routing reads a node's next nodes: a pass observed from outside reads
        # each node's edges once (TorchPass.next_edges)
        next_edges = getattr(graph_task, "next_edges", None)
        self._next_nodes = source.next_nodes if next_edges is None else _nodes_of(next_edges)
        self._norms = {}  # see NOTE [A norm read once]

    @property
    def order(self):
        """The nodes in the order they ran."""
        return list(self._settled()._nodes)

    def _settled(self):
        task, self._replay = self._replay, None
        if task is not None:
            task.replay(self)
        return self

    @property
    def steps(self) -> Sequence[Step]:
        return _Steps(self._settled())

    @property
    def _steps(self) -> Sequence[Step]:  # (as the steps fill: no replay)
        return _Steps(self)

    def _sent(self, k) -> tuple:
        """The GradFacts step ``k``'s node sent, a tuple (NOTE [Steps kept as columns]): one
        gradient alone is one of one, or, from a node of nbgrad's with two edges, one of two
        (the second None)."""
        value = self._outputs[k]
        if type(value) is tuple:
            return value
        if not self._modelled and len(self._next_nodes(self._nodes[k])) == 2:
            return (value, None)
        return (value,)

    def _by_node(self) -> dict:
        """node -> the index of its step (the last, if it ran twice), made anew: for a walk
        over them all (a lookup reads ``_step_of``)."""
        return {n: k for k, n in enumerate(self._nodes)}

    # NOTE [Steps found by id]
    # Reading a node's gradients (``node_inputs``, ``edge_grads``) finds its step through the
    # nodes' ids, sorted once into an array, with the step of each beside it (16 bytes a step),
    # not through a dict node -> index kept on the pass: that one held 8 MB on a 100,000-node
    # chain (its ints included) for as long as the pass lived. A lookup is a bisection (about
    # 0.5 us, a dict's 0.05: a snapshot's 20,000 drawn nodes read each once or twice); the
    # last lookup is kept (a reader asks ``node in`` before ``[node]``).
    def _step_of(self, node):
        """The index of ``node``'s step (the last, if it ran twice), or None (NOTE [Steps
        found by id])."""
        made = self._index_of
        nodes = self._nodes
        key = id(node)  # (the nodes' ids are theirs while the pass holds them)
        if made is None or made[0] != len(nodes):
            keys = np.fromiter(map(id, nodes), np.int64, len(nodes))
            order = np.argsort(keys, kind="stable")
            ids, steps = array("q", keys[order].tobytes()), array("q", order.tobytes())
            made = self._index_of = [len(nodes), ids, steps, None, None]
        elif made[3] == key:
            return made[4]
        ids = made[1]
        i = _bisect_right(ids, key) - 1
        k = made[2][i] if i >= 0 and ids[i] == key else None
        made[3], made[4] = key, k
        return k

    @property
    def initial_dependencies(self) -> dict:
        """node -> its count of incoming edges when the pass started."""
        return dict(zip(self._initial_nodes, self._initial_counts))

    @property
    def initial_ready(self) -> dict:
        """device -> the nodes ready before the first step."""
        return self._settled()._initial_ready

    @property
    def final_dependencies(self) -> dict:
        return self._settled()._final_dependencies

    @property
    def final_buffers(self) -> dict:
        return self._settled()._final_buffers

    @property
    def model_differs(self):
        return self._settled()._model_differs

    def __repr__(self):
        root = self.graph_source.node_name(self.root) if self.root is not None else None
        return f"<BackwardTrace #{self.index} from {root}: {len(self._nodes)} steps>"

    # -- building (called from the engine listener) --------------------------------------------
    def _summary(self, value):
        """A gradient's facts (NOTE [Summarise when shown]); the same tensor, unchanged since,
        is read once per pass (a node's output is the next node's input)."""
        if type(value) is _Tensor:  # nbgrad's: read without calls through the source
            version = self._version_of(value)
            hit = self._memo.get(id(value))
            if hit is not None and hit[1] == version and hit[0]() is value:
                return hit[2]
            a = value.numpy(force=True)
        elif value is None:
            return None
        else:
            source = self.graph_source
            if not source.is_tensor(value):
                return grad_facts(value, self.max_values, source)
            version = self._version_of(value)
            hit = self._memo.get(id(value))
            if hit is not None and hit[1] == version and hit[0]() is value:
                return hit[2]
            a = source.to_numpy(value)
        facts = array_facts(a, value, self.max_values, self.graph_source, self._norms)
        if facts.nonfinite is not None:
            self.nonfinite_seen = True
        memo = self._memo
        if len(memo) >= self._memo_limit:
            self._forget_dead()
        try:
            memo[id(value)] = (_weakref(value), version, facts)
        except TypeError:  # a tensor that takes no weak reference: not remembered
            pass
        return facts

    # NOTE [The memo holds the living]
    # A pass remembers the facts of each gradient it read (``_memo``), by the gradient's id, a
    # weak reference and its version, so that a gradient read again (a node's output is its
    # next node's input) is summarised once. Most gradients die a step or two after they are
    # made; so once the memo holds ``_memo_limit`` entries, those whose gradient is gone
    # (which can never be met again) are dropped, and the limit set to twice what is left: a
    # 100,000-node chain held 100,000 entries (18 MB) at its end, and none is needed.
    def _forget_dead(self):
        memo = self._memo
        self._memo = memo = {k: hit for k, hit in memo.items() if hit[0]() is not None}
        self._memo_limit = max(MEMO_LIMIT, 2 * len(memo))

    def _observe_routing(self, graph_task):
        """What the nodes that ended since the last step changed: the counts (as flat pairs
        ``node, count``, see NOTE [Steps read alike]) and the buffers."""
        pending = self._pending
        deps = graph_task.dependencies
        not_ready = graph_task.not_ready
        next_nodes = self._next_nodes
        if len(pending) == 1:  # one node ended, and (a chain's) its one next node waits for none
            fns = next_nodes(pending[0])
            if len(fns) == 1 or len(fns) == 2 and fns[1] is None:
                fn = fns[0]
                if fn is not None and not (not_ready and fn in not_ready):
                    pending.clear()
                    count = deps.get(fn, 0)
                    # (NOTE [Steps kept as columns]: a count of 0 as its node alone)
                    return (fn if count == 0 else (fn, count)), self._no_buffers
        flat = []
        seen = None  # (made when a second node is reached: most steps reach one)
        buffers = None
        for node in pending:
            for fn in next_nodes(node):
                if fn is None:
                    continue
                if flat:  # a node reached twice is counted once
                    if seen is None:
                        seen = {flat[0]}
                    if fn in seen:
                        continue
                    seen.add(fn)
                flat += (fn, deps.get(fn, 0))
                buf = not_ready.get(fn)
                if buf is not None:
                    if buffers is None:
                        buffers = {}
                    buffers[fn] = [self._summary(g) for g in buf]
        pending.clear()
        # (NOTE [Steps kept as columns]: one count of 0, the common change, as its node alone)
        flat = flat[0] if len(flat) == 2 and flat[1] == 0 else tuple(flat)
        return flat, buffers or self._no_buffers  # NOTE [Steps read alike]

    # NOTE [Steps read alike]
    # A step's ``ready`` and ``buffers`` are read, never changed, once made; on a chain nothing
    # else is ready and no buffer waits at nearly every step, so those steps share one empty
    # value (of this pass), not kept a step (read as the step's when it has none of its own):
    # 300,000 objects fewer (24 MB) on a 100,000-node chain, and two columns. So do the
    # steps that ran no hook and made no node ready (one shared empty tuple), and a step keeps
    # its changed counts as one flat tuple ``node, count, ...``, made a dict when read
    # (``Step.dependencies``; 22 MB fewer on that chain).
    def _ready_now(self, graph_task, running=None):
        """device -> the nodes ready while ``running`` runs (NOTE [Steps read alike])."""
        queue = graph_task.cpu_ready_queue
        cpu = queue.snapshot() if queue else ()  # (an empty queue: no lock, no sort)
        ready = None
        for device, nodes in self._ready.items():
            if device != "cpu":
                seq = self.graph_source.sequence_nr
                if ready is None:
                    ready = {"cpu": list(cpu)}
                ready[device] = sorted(
                    (n for n in nodes if n is not running), key=lambda n: -seq(n)
                )
        if ready is None:
            ready = {"cpu": cpu if type(cpu) is list else list(cpu)} if cpu else self._none_ready
        return ready


# NOTE [Gradients read from the steps]
# A pass's ``edge_grads`` and ``node_inputs`` are what its steps' ``outputs`` and ``inputs``
# hold, so they are views of the steps (through one dict node -> Step), not dicts of their
# own: a dict keyed by ``(node, edge index)`` tuples cost 14 MB more on a 100,000-node chain.
# A node that ended outside its step (none on nbgrad's engine) keeps its gradients apart.
class _EdgeGrads(Mapping):
    """``(node, edge index)`` -> the GradFacts the node sent along that edge."""

    __slots__ = ("_trace",)

    def __init__(self, trace):
        self._trace = trace

    def __getitem__(self, key):
        trace = self._trace
        loose = trace._loose_grads
        if loose and key in loose:
            return loose[key]
        node, i = key
        k = trace._step_of(node)
        outputs = () if k is None else trace._sent(k)
        if not 0 <= i < len(outputs):
            raise KeyError(key)
        return outputs[i]

    def __iter__(self):
        trace = self._trace
        loose = trace._loose_grads
        for node, k in list(trace._by_node().items()):
            for i in range(len(trace._sent(k))):
                if (node, i) not in loose:
                    yield (node, i)
        yield from list(loose)

    def __len__(self):
        return sum(1 for _ in self)


class _NodeInputs(Mapping):
    """node -> the GradFacts of the gradients it received (its step's inputs)."""

    __slots__ = ("_trace",)

    def __init__(self, trace):
        self._trace = trace

    def __getitem__(self, node):
        trace = self._trace
        k = trace._step_of(node)
        if k is None:
            raise KeyError(node)
        return one_or_many(trace._inputs[k])

    def __contains__(self, node):
        return self._trace._step_of(node) is not None

    def __iter__(self):
        return iter(list(self._trace._by_node()))

    def __len__(self):
        return len(self._trace._by_node())
