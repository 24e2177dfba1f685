"""The stepper's snapshot of one backward pass (schema ``nbgrad.trace``, see ``schema.py``):
the graph the pass ran on, as ``snapshot.build_snapshot`` draws it, and the engine's state after
each step (``trace_state``), which the stepper widget and its still picture both show."""

from __future__ import annotations

from .schema import Trace
from .snapshot import (
    MAX_NODES,
    SCHEMA_VERSION,
    IdMap,
    _accumulation,
    _hook_call,
    build_snapshot,
)
from .summaries import summarised

__all__ = ["trace_snapshot", "trace_state"]


def trace_snapshot(
    trace, *, names=None, weak_names=None, ids=None, max_nodes=MAX_NODES, recorder=None
) -> Trace:
    """The stepper's view of one backward pass (schema ``nbgrad.trace``, see above); with the
    ``recorder`` of the forward, its leaves and module groups are named as the graph view
    names them (one vocabulary for both)."""
    source = trace.graph_source
    ids = ids or IdMap(source)
    graph = build_snapshot(
        recorder,
        [trace.root],
        passes=[trace],
        pass_index=trace.index,
        names=names,
        weak_names=weak_names,
        ids=ids,
        max_nodes=max_nodes,
        source=source,
    )
    for n in graph["nodes"]:  # the stepper shows no wall times: the same pass, the same JSON
        n["time"] = None

    def id_list(nodes):
        return [ids(n) for n in nodes]

    def ready(d):
        return {dev: id_list(nodes) for dev, nodes in sorted(d.items())}

    steps = []
    for s in trace.steps:
        steps.append(
            {
                "index": s.index,
                "node": ids(s.node),
                "device": s.device,
                "inputs": summarised(s.inputs),
                "outputs": summarised(s.outputs),
                "hooks": [_hook_call(c, ids) for c in s.hooks],
                "ready": ready(s.ready),
                "dependencies": {ids(n): c for n, c in s.dependencies.items()},
                "buffers": {ids(n): summarised(b) for n, b in s.buffers.items()},
                "made_ready": id_list(s.made_ready),
                "accumulated": _accumulation(s.accumulated, ids),
            }
        )
    return {
        "schema": "nbgrad.trace",
        "version": SCHEMA_VERSION,
        "graph": graph,
        "root": ids(trace.root),
        "initial": {
            "dependencies": {ids(n): c for n, c in trace.initial_dependencies.items()},
            "ready": ready(trace.initial_ready),
        },
        "steps": steps,
        "final": {
            "dependencies": {ids(n): c for n, c in trace.final_dependencies.items()},
            "buffers": {ids(n): summarised(b) for n, b in trace.final_buffers.items()},
        },
        "error": trace.error,
        "model_differs": trace.model_differs,
    }


def trace_state(trace, position):
    """The engine's state at a stepper ``position`` of a trace (schema ``nbgrad.trace``): 0 is
    the start, ``k`` (1 .. n) is step ``k - 1`` running, ``n + 1`` the end. Returns
    ``position``, ``steps``, ``running`` node id, ``done`` ids, ``ready`` per device,
    ``dependencies`` and ``buffers`` of the nodes not yet ready, the running node's
    ``inputs``, ``outputs``, ``hooks``, ``made_ready``, ``device`` and ``accumulated``.
    ``stateAt`` in widgets/stepper.js is the same in JS.

    NOTE [Made ready, not waiting]
    A step shows what its node did: the nodes it made ready (``made_ready``) and the
    dependency counts and input buffers as its gradients left them (the counts seen when the
    next node started, or the final ones after the last step), so the nodes it made ready are
    not listed as waiting too, and the buffer it half filled shows at once. The ready queues
    are those the step left too: the nodes waiting when it started and those it made ready,
    in the queue's order (see ``_ready_after``)."""
    steps = trace["steps"]
    pos = max(0, min(int(position), len(steps) + 1))
    deps = dict(trace["initial"]["dependencies"])
    buffers = {}
    for s in steps[: min(pos + 1, len(steps))] if pos else ():
        deps.update(s["dependencies"])
        buffers.update(s["buffers"])
    if pos >= len(steps):
        deps.update(trace["final"]["dependencies"])
        buffers.update(trace["final"]["buffers"])
    done = [s["node"] for s in steps[: max(0, pos - 1)]]
    state = {
        "position": pos,
        "steps": len(steps),
        "running": None,
        "done": done,
        "ready": trace["initial"]["ready"],
        "inputs": [],
        "outputs": [],
        "hooks": [],
        "made_ready": [],
        "device": None,
        "accumulated": None,
    }
    if 1 <= pos <= len(steps):
        s = steps[pos - 1]
        state.update(
            running=s["node"],
            ready=_ready_after(trace, s),
            inputs=s["inputs"],
            outputs=s["outputs"],
            hooks=s["hooks"],
            made_ready=s["made_ready"],
            device=s["device"],
            accumulated=s.get("accumulated"),
        )
    elif pos > len(steps):
        done = [s["node"] for s in steps]
        state.update(done=done, ready={d: [] for d in trace["initial"]["ready"]})
    ready_ids = {i for ids in state["ready"].values() for i in ids}
    finished = set(done) | ready_ids | set(state["made_ready"])
    if state["running"]:
        finished.add(state["running"])
    state["dependencies"] = {k: v for k, v in deps.items() if k not in finished}
    state["buffers"] = {k: v for k, v in buffers.items() if k not in finished}
    return state


def _ready_after(trace, step):
    """The ready queues as ``step`` left them: those it started with, and the nodes it made
    ready, each on the device it runs on, highest sequence_nr first (AccumulateGrad's, None,
    is the highest), in the order they came for the same one (the engine's ReadyQueue).
    ``readyAfter`` in widgets/stepper.js is the same in JS."""
    made = step["made_ready"]
    if not made:
        return step["ready"]
    seq = {n["id"]: n["seq"] for n in trace["graph"]["nodes"]}
    device = {s["node"]: s["device"] for s in trace["steps"]}
    ready = {d: list(ids) for d, ids in step["ready"].items()}
    for node in made:
        ready.setdefault(device.get(node, step["device"]), []).append(node)

    def priority(node):
        return float("inf") if seq.get(node) is None else seq[node]

    return {d: sorted(ids, key=priority, reverse=True) for d, ids in ready.items()}
