"""The typed observer of forward calls and backward passes: what tools (the notebook's recorder
and stepper) see of nbgrad at work, with one method per event.

NOTE [One engine path]
An observer watches; it never changes what runs. The engine takes the same path with or
without one (the fast paths of NOTE [Routing inlined] and NOTE [Chains skip the queue]
included) and calls the observer where the event happens, behind one ``is not None`` check per
event. A ready node that the engine runs at once, without queueing it, is still reported as
ready: the observer cannot tell the shortcut from the queue. ``tests/autograd/test_observer.py``
runs the same graphs observed and not and checks that the nodes run in the same order and give
the same gradients.

A graph task takes the observers installed when it starts (``backward_observer()``) and keeps
them to its end, so an observer sees whole passes. Forward calls go to the observers installed
at the moment of the call. Several observers are combined into one (``_Fanout``) when installed,
so the hot paths call one object.
"""

from __future__ import annotations

import threading

__all__ = ["GraphObserver", "ObserverHandle", "observe", "backward_observer", "current"]


class GraphObserver:
    """Receives the events of forward calls and backward passes; each method does nothing
    until overridden. Called on the thread where the event happens (a device worker runs its
    nodes); an observer must not raise.

    ``graph_task`` names the pass an event belongs to (an ``nbgrad.autograd.engine.GraphTask``);
    the ``node``\\ s are its Nodes; gradients are Tensors or None.
    """

    def forward(self, op, args, attrs, result, elapsed):
        """A row of the op table ran forward: ``op`` (the row), its arguments and attributes,
        ``result`` (a Tensor, or a tuple of them) and its wall time in seconds."""

    def node_events(self) -> bool:
        """Whether the backward pass starting now needs its node events; False: only its
        ``task_start`` and ``task_end`` come, and it runs as a pass nothing watches (the
        recorder's counted steps, NOTE [Repeated steps counted] in nbgrad/notebook/steps.py)."""
        return True

    def task_start(self, graph_task, root, dependencies):
        """A backward pass starts at ``root``; ``dependencies``: node -> incoming edge count."""

    def node_ready(self, graph_task, node, device):
        """``node`` has all its input gradients and will run on ``device``'s queue."""

    def node_start(self, graph_task, node, inputs):
        """``node`` is about to run, with its input gradients after the pre hooks."""

    def hook(self, graph_task, kind, node, handle, before, after):
        """A hook ran: ``kind`` is ``tensor``, ``prehook``, ``posthook`` or
        ``post_accumulate_grad``; ``before`` and ``after`` are what it was given and returned
        (for ``post_accumulate_grad``: the leaf's ``.grad`` before and after the call)."""

    def grad_accumulated(self, graph_task, node, variable, grad, before, after):
        """An AccumulateGrad added ``grad`` into ``variable.grad`` (``before`` is a copy)."""

    def node_end(self, graph_task, node, outputs):
        """``node`` ran; ``outputs`` are its gradients after its post hooks."""

    def task_end(self, graph_task, error):
        """The pass ended, with the exception that failed it or None."""

    def recompute_start(self, graph_task, checkpoint_id, reentrant):
        """A checkpointed segment (``nbgrad.utils.checkpoint``; its nodes carry
        ``metadata["checkpoint"] == checkpoint_id``) runs its forward again inside
        ``graph_task`` (None: a saved tensor unpacked outside backward), on this thread: the
        forward calls until ``recompute_end`` are its recomputation. ``reentrant``: the segment's
        own backward pass follows, inside this one."""

    def recompute_end(self, graph_task, checkpoint_id, error):
        """The recomputation ended (early: ``error`` is None too), or failed with ``error``."""


class _Fanout(GraphObserver):
    """Several observers called as one, in the order they were installed."""

    __slots__ = ("observers",)

    def __init__(self, observers):
        self.observers = tuple(observers)

    def forward(self, *args):
        for o in self.observers:
            o.forward(*args)

    def node_events(self):
        return any(o.node_events() for o in self.observers)

    def task_start(self, *args):
        for o in self.observers:
            o.task_start(*args)

    def node_ready(self, *args):
        for o in self.observers:
            o.node_ready(*args)

    def node_start(self, *args):
        for o in self.observers:
            o.node_start(*args)

    def hook(self, *args):
        for o in self.observers:
            o.hook(*args)

    def grad_accumulated(self, *args):
        for o in self.observers:
            o.grad_accumulated(*args)

    def node_end(self, *args):
        for o in self.observers:
            o.node_end(*args)

    def task_end(self, *args):
        for o in self.observers:
            o.task_end(*args)

    def recompute_start(self, *args):
        for o in self.observers:
            o.recompute_start(*args)

    def recompute_end(self, *args):
        for o in self.observers:
            o.recompute_end(*args)


# The installed observers, and the one object the hot paths call: an empty list, or a list
# holding the single observer (or the _Fanout of several). A list, not a variable, so that
# ``from nbgrad._graph.observer import forward_observer`` stays live in the dispatch code, which
# pays one empty-list check per op when nothing observes.
_forward: list = []
_backward: list = []
forward_observer: list = []
_backward_observer: list = []
_lock = threading.Lock()


def _combine(observers):
    if not observers:
        return []
    return [observers[0] if len(observers) == 1 else _Fanout(observers)]


class ObserverHandle:
    """An installed observer; ``remove()`` (or leaving its ``with`` block) takes it out."""

    __slots__ = ("observer", "_lists")

    def __init__(self, observer, lists):
        self.observer = observer
        self._lists = lists

    def remove(self):
        with _lock:
            for installed in self._lists:
                if self.observer in installed:
                    installed.remove(self.observer)
            _publish()
        self._lists = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _publish():
    forward_observer[:] = _combine(_forward)
    _backward_observer[:] = _combine(_backward)


def observe(observer: GraphObserver, *, forward=True, backward=True) -> ObserverHandle:
    """Install ``observer`` for forward calls and/or backward passes; returns its handle."""
    if not isinstance(observer, GraphObserver):
        raise TypeError(
            f"observe() expects a GraphObserver (subclass it and override the events you "
            f"need), got {type(observer).__name__}"
        )
    lists = []
    with _lock:
        if forward:
            _forward.append(observer)
            lists.append(_forward)
        if backward:
            _backward.append(observer)
            lists.append(_backward)
        _publish()
    return ObserverHandle(observer, tuple(lists))


def backward_observer():
    """The observer a backward pass starting now reports to, or None."""
    installed = _backward_observer
    return installed[0] if installed else None


class _Current(threading.local):
    """What the engine is doing on this thread. The engine keeps it; the graph layer reads it
    (an AccumulateGrad reports to the observer of the pass that runs it)."""

    graph_task = None  # the graph task whose node this thread is running (queue_callback)
    depth = 0  # nested execute() calls on this thread (reentrant backward)
    device_queue = None  # on a device worker: the queue it serves
    # false inside a pass that has ``inputs`` (``grad``, ``backward(inputs=)``) and in any pass
    # started inside one: reentrant checkpoint cannot run there (``_is_checkpoint_valid``)
    checkpoint_valid = True


current = _Current()
