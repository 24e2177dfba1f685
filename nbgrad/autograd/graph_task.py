"""The state of one backward call: ``GraphTask``, the ``ReadyQueue`` its ready nodes wait in as
``NodeTask`` entries, and what ``grad(inputs=...)`` needs of each node (``_ExecInfo``).

Mirrors ``torch/csrc/autograd/graph_task.h`` and the ``ReadyQueue`` of ``engine.h``; the
``Engine`` (``engine.py``) makes and runs them.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from typing import NamedTuple

from nbgrad._graph import anomaly_state as _anomaly
from nbgrad._graph import forward_grad as _forward_grad
from nbgrad._graph.node import Node
from nbgrad._graph.observer import current as _current

__all__ = [
    "NodeTask",
    "ReadyQueue",
    "GraphTask",
    "current_graph_task_id",
    "will_engine_execute_node",
]


class NodeTask(NamedTuple):
    """A node whose inputs are all in: ready to run (``NodeTask`` in engine.h)."""

    graph_task: object
    node: Node
    inputs: list
    reentrant_depth: int = 0


_tiebreak = itertools.count()  # keeps heap entries of equal priority in order
CARRY_ARRAYS = True  # NOTE [Gradients carried as arrays]; False: Tensors only (for tests)
_UNSHARED_COND = threading.Condition(threading.Lock())


class ReadyQueue:
    """A max-heap of NodeTasks keyed by (reentrant depth, ``sequence_nr``) (``ReadyQueue``).

    A graph task's CPU queue is only touched by the thread that owns the task, so it pushes
    without taking the lock (``shared=False``); a device queue is shared with its worker.
    """

    # NOTE [CPU queue entries]
    # A device queue serves every graph task, so its heap entries are
    # ``(-reentrant_depth, -sequence_nr, tiebreak, NodeTask)``. A graph task's own CPU queue
    # holds that task's nodes alone, all at its depth: its entries are
    # ``(-sequence_nr, tiebreak, node, inputs)``, one tuple per ready node instead of two (the
    # tiebreak keeps nodes of equal ``sequence_nr``, accumulators, in the order they became
    # ready, and keeps the comparison off the nodes).

    __slots__ = ("_heap", "device", "_cond", "shared")

    def __init__(self, device=None, shared=True):
        self._heap = []
        self.device = device
        self.shared = shared
        # an unshared queue is never waited on (its owner pops its heap directly); only
        # snapshot locks it, so one condition serves them all (not one per backward call)
        self._cond = threading.Condition(threading.Lock()) if shared else _UNSHARED_COND

    def push(self, task: NodeTask):
        entry = (-task.reentrant_depth, -task.node._sequence_nr_, next(_tiebreak), task)
        if not self.shared:
            heapq.heappush(self._heap, entry)
            return
        with self._cond:
            heapq.heappush(self._heap, entry)
            if self._cond._waiters:  # Condition.notify builds a deque even with no waiter
                self._cond.notify()

    def pop(self, timeout=None) -> NodeTask | None:
        """The ready task with the highest priority; waits up to ``timeout`` when empty."""
        with self._cond:
            if not self._heap:
                if timeout == 0 or not self._cond.wait_for(lambda: self._heap, timeout):
                    return None
            return heapq.heappop(self._heap)[3]

    # NOTE: heappush/heappop on a list are atomic under the GIL (the entries compare on ints
    # only), which is why a graph task's CPU queue can be pushed to by a worker without the lock;
    # the worker then notifies the graph task's condition.

    def push_shutdown(self):
        with self._cond:
            heapq.heappush(self._heap, (float("-inf"), 0, next(_tiebreak), None))
            self._cond.notify()

    def __len__(self):
        return len(self._heap)

    def __bool__(self):
        return bool(self._heap)

    def snapshot(self):
        """The waiting nodes, highest priority first (for the notebook's stepper)."""
        with self._cond:
            if not self.shared:  # NOTE [CPU queue entries]
                return [entry[2] for entry in sorted(self._heap)]
            return [entry[3].node for entry in sorted(self._heap)]


class _ExecInfo:
    """For ``grad(inputs=...)``: whether a node must run, and which gradients to capture."""

    __slots__ = ("needed", "captures")

    def __init__(self):
        self.needed = False
        self.captures = None

    def should_execute(self):
        return self.needed or self.captures is not None


_task_ids = itertools.count()  # GraphTask ids, never reused (current_graph_task_id)


class GraphTask:
    """The state of one backward call (``GraphTask`` in graph_task.h)."""

    __slots__ = (
        "keep_graph",
        "create_graph",
        "dependencies",
        "graph_root",
        "task_id",
        "not_ready",
        "exec_info",
        "captured_vars",
        "outstanding_tasks",
        "exception",
        "final_callbacks",
        "cpu_ready_queue",
        "reentrant_depth",
        "observer",
        "owner",
        "completed",
        "check_nan",
        "anomaly",
        "threaded",
        "carries_arrays",
        "cond",
        "warnings",
        "_lock",
        "__weakref__",
    )

    def __init__(self, keep_graph, create_graph, reentrant_depth, observer):
        self.keep_graph = keep_graph
        self.create_graph = create_graph
        self.dependencies = {}
        self.graph_root = None
        self.task_id = next(_task_ids)
        self.not_ready = {}
        self.exec_info = None
        self.captured_vars = []
        self.outstanding_tasks = 0
        self.exception = None
        self.final_callbacks = []
        self.cpu_ready_queue = ReadyQueue("cpu", shared=False)
        self.reentrant_depth = reentrant_depth
        self.observer = observer  # a GraphObserver, or None: see NOTE [One engine path]
        self.owner = threading.get_ident()
        self.completed = False
        self.anomaly = _anomaly._state.enabled
        self.check_nan = self.anomaly and _anomaly._state.check_nan
        self.threaded = False  # set once a node is sent to a device worker
        # in a pass that nothing watches: see NOTE [Gradients carried as arrays]
        self.carries_arrays = (
            CARRY_ARRAYS
            and observer is None
            and not self.anomaly
            and not create_graph
            and not _forward_grad._state.active  # tangents ride on Tensors (NOTE [Forward-mode AD])
        )
        self._lock = threading.Lock()
        self.cond = None  # made by _push_ready when the first node goes to a device worker
        self.warnings = []


def current_graph_task_id() -> int:
    """An id of the backward pass running on this thread, -1 outside one (PyTorch's
    ``torch._C._current_graph_task_id``)."""
    graph_task = _current.graph_task
    return -1 if graph_task is None else graph_task.task_id


def _is_checkpoint_valid() -> bool:
    """Whether a reentrant checkpoint may run its backward here (PyTorch's
    ``torch.autograd._is_checkpoint_valid``): not inside a pass that has ``inputs``
    (``grad``, ``backward(inputs=)``), nor in a pass started inside one."""
    return _current.checkpoint_valid


def will_engine_execute_node(node) -> bool:
    """Whether the backward pass running on this thread will run ``node`` (PyTorch's
    ``torch._C._will_engine_execute_node``): it is reachable, and needed for ``inputs=``."""
    graph_task = _current.graph_task
    if graph_task is None:
        raise RuntimeError(
            "_will_engine_execute_node should only be called during the backward pass"
        )
    if graph_task.exec_info is not None:
        info = graph_task.exec_info.get(node)
        return info is not None and (info.needed or info.captures is not None)
    return node is graph_task.graph_root or node in graph_task.dependencies
