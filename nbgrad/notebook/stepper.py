"""``BackwardStepper``: a backward pass one node at a time, forward and back (kernel side of
``widgets/stepper.js``).

This is a replay. The backward pass runs once, to the end, with a recorder listening to the
engine (``recorder.py``); at each node the recorder keeps what the engine's state was when the
node started: the ready queue of each device, the dependency counts and not-ready input
buffers that the previous nodes changed, the gradients the node received and produced, and the
hooks that fired on it. The stepper then moves through that record, in either direction,
without running anything again (so stepping back is exact, and no hook runs twice).

Positions: 0 is the start of the pass (dependency counts of every node, the root ready);
position ``k`` (1 .. n) is step ``k - 1`` running; ``n + 1`` is the end. :meth:`state` rebuilds
the engine's state at a position from the trace (the browser does the same in JS). The still
form (``svg.trace_svg``) shows the current position: the running node, the ready queue of each
device and the nodes still waiting.
"""

from __future__ import annotations

import traceback

import traitlets as t

from ._widget import StillWidget, asset, dumps, esm
from .layout import default_collapsed, layout
from .recorder import BackwardTrace, Recorder
from .snapshot import MAX_NODES, IdMap
from .svg import trace_svg
from .trace import trace_snapshot, trace_state

__all__ = ["BackwardStepper"]


class BackwardStepper(StillWidget):
    """Step through a backward pass (a replay of a recorded one).

    ``source``: a :class:`~nbgrad.notebook.recorder.BackwardTrace` to replay, or a tensor to
    run ``backward`` from now (with ``gradient``, ``retain_graph``, ``create_graph``).

    Example:
        >>> import nbgrad as ng
        >>> from nbgrad.notebook import BackwardStepper
        >>> x = ng.ones(2, requires_grad=True)
        >>> st = BackwardStepper((x * 3).sum())
        >>> st
        BackwardStepper(3 steps; at the start)
        >>> st.step().state()["running"] == st.trace["root"]
        True
    """

    _esm = esm("stepper.js")
    _css = asset("stepper.css")

    trace = t.Dict()  # sent to the browser as _trace_json
    graph_layout = t.Dict()  # sent as _layout_json
    _trace_json = t.Unicode("{}").tag(sync=True)
    _layout_json = t.Unicode("{}").tag(sync=True)
    _series_of_json = t.Unicode("{}").tag(sync=True)  # node id -> the series box holding it
    position = t.Int(0).tag(sync=True)
    _messages = {"goto": {"position": "int"}, "select": {"id": "str"}}  # NOTE [Checked messages]
    _frontend_writable = frozenset({"position"})

    def __init__(
        self,
        source=None,
        *,
        gradient=None,
        retain_graph=None,
        create_graph=False,
        names=None,
        weak_names=None,
        ids=None,
        recorder=None,
        graph=None,
        max_nodes=MAX_NODES,
    ):
        super().__init__()
        self.graph = graph  # a GraphView whose selection follows a click on a node
        if isinstance(source, BackwardTrace):
            backward_trace = source
        elif source is not None and hasattr(source, "backward"):
            rec = Recorder(forward=False)
            error = None
            with rec:
                try:
                    source.backward(gradient, retain_graph=retain_graph, create_graph=create_graph)
                except Exception as e:  # noqa: BLE001 - the trace shows it; re-raised below
                    error = e
            if not rec.passes:
                if error is not None:
                    raise error
                raise RuntimeError("backward ran no pass to step through")
            backward_trace = rec.passes[0]
            if error is not None:
                self.error = "".join(traceback.format_exception_only(type(error), error)).strip()
        else:
            raise TypeError(
                "BackwardStepper needs a BackwardTrace or a tensor to run backward "
                f"from, got {type(source).__name__}"
            )
        self.backward_trace = backward_trace
        snap = trace_snapshot(
            backward_trace,
            names=names,
            weak_names=weak_names,
            ids=ids or IdMap(),
            recorder=recorder,
            max_nodes=max_nodes,
        )
        graph = snap["graph"]
        members = {}
        lay = layout(graph, default_collapsed(graph), members=members)
        # the nodes a folded series box stands for (the browser marks the box while they run)
        folded = {x["id"] for x in lay["series"] if not x["expanded"]}
        with self.hold_sync():
            self.trace = snap
            self._series_of_json = dumps(
                {nid: sid for sid, ids in sorted(members.items()) if sid in folded for nid in ids}
            )
            self.graph_layout = lay
            self.position = 0

    @t.observe("trace")
    def _send_trace(self, change):
        self._trace_json = dumps(change["new"])

    @t.observe("graph_layout")
    def _send_layout(self, change):
        self._layout_json = dumps(change["new"])

    # -- moving ------------------------------------------------------------------------------
    @property
    def steps(self) -> int:
        return len(self.trace["steps"])

    def goto(self, position):
        self.position = max(0, min(int(position), self.steps + 1))
        return self

    def step(self, n=1):
        """Move ``n`` nodes forward (returns the stepper, so calls chain)."""
        return self.goto(self.position + n)

    def back(self, n=1):
        return self.goto(self.position - n)

    def reset(self):
        return self.goto(0)

    def state(self, position=None):
        """The engine's state at ``position`` (default: the current one), rebuilt from the
        trace: ``running`` node id, ``done`` ids, ``ready`` per device, ``dependencies`` and
        ``buffers`` of the nodes not yet ready, the running node's ``inputs``, ``outputs``,
        ``hooks``, ``made_ready`` and ``accumulated`` (``trace.trace_state``, which the still
        picture draws too: NOTE [Made ready, not waiting])."""
        return trace_state(self.trace, self.position if position is None else position)

    def to_svg(self) -> str:
        return trace_svg(self.trace, lay=self.graph_layout, position=self.position)

    def __repr__(self):
        pos = self.position
        if pos == 0:
            where = "at the start"
        elif pos > self.steps:
            where = "at the end"
        else:
            node = self.trace["steps"][pos - 1]["node"]
            name = next((n["name"] for n in self.trace["graph"]["nodes"] if n["id"] == node), node)
            where = f"at step {pos} of {self.steps}: {name}"
        return f"BackwardStepper({self.steps} steps; {where})"

    # -- messages ----------------------------------------------------------------------------
    def _check_position(self, value):
        if type(value) is not int or not 0 <= value <= self.steps + 1:
            return f"'position' must be a step from 0 to {self.steps + 1}, got {value!r}"
        return None

    def _msg_goto(self, content):
        self.goto(content["position"])  # beyond either end: stops at it, as the buttons do

    def _msg_select(self, content):
        """A click on a node: select it in ``graph`` (a hook editor following it then shows
        that node's hooks)."""
        if self.graph is not None:
            self.graph.select(content["id"])
