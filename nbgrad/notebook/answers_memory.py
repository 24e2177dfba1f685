"""What the saved tensors hold: the bytes each node of a recorded graph keeps alive for backward.

``Session.saved_bytes()`` (``%%autograd -o s``) answers here, for nbgrad's graph and for
PyTorch's alike: the recorder's graph source lists each node's saved tensors and the memory
block under each (``GraphSource.saved_tensors`` and ``storage``).

NOTE [A storage counted once]
A saved tensor is often a view (``weight.t()`` saved by ``addmm``), or the same tensor saved by
several nodes (an activation saved by the op that made it and by the next one). What backward
keeps alive is the memory blocks under them, so bytes are counted per block: a block's whole
size (PyTorch's ``untyped_storage().nbytes()``; for a NumPy array, the array that owns the
memory), once in a node however many of its saved tensors lie in it, and once in a total
(the whole graph's, or a module group's) however many nodes save it. A node's own figure is
what it alone would keep alive; the figures of several nodes do not add up to their total.
Parameters saved for backward count too: a walk of PyTorch's graph (``_saved_*`` attributes)
counts them, and the comparison with such a walk is what the tests pin.

NOTE [When the stepper frees a block]
A backward without ``retain_graph`` releases a node's saved values right after the node runs
(``release_variables``), so a node's ``freed_at`` is the index of its step in the backward
trace, and a block is released once the last node that saves it has run. With
``retain_graph=True`` (the live editor's backward, NOTE [The editor keeps the cell's graph])
nothing is released: ``freed_at`` then says when it would be, and ``retained`` is True.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from .snapshot import build_snapshot

__all__ = ["NodeBytes", "SavedBytes", "saved_bytes", "node_saved_bytes", "format_bytes"]


def format_bytes(n: int) -> str:
    """``1536`` -> ``"1.5 KiB"``."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover - the loop returns


@dataclass
class NodeBytes:
    """One node's saved memory: ``bytes`` of the distinct blocks it saves (``storages``, their
    keys), the ``names`` of its saved tensors, its module ``group`` path, the cell ``line`` and
    ``source`` of the call that made it, and ``freed_at`` (NOTE [When the stepper frees a
    block])."""

    node: str
    id: str
    bytes: int
    names: list
    storages: list
    group: str | None
    line: int | None
    source: str
    freed_at: int | None = None

    def __str__(self):
        where = f" (line {self.line}: {self.source})" if self.line else ""
        return f"{self.node}: {format_bytes(self.bytes)} in {', '.join(self.names)}{where}"


@dataclass
class SavedBytes:
    """The answer of ``Session.saved_bytes()``: ``total`` bytes of the distinct blocks saved
    for backward (NOTE [A storage counted once]); ``nodes`` (each a :class:`NodeBytes`, in
    creation order); ``groups``, ``{module path: bytes}`` (a group counts its sub-modules);
    ``storages``, ``{key: (bytes, freed_at)}``; ``retained``: whether the backward traced
    kept the graph."""

    total: int
    nodes: list
    groups: dict
    storages: dict = field(repr=False)
    retained: bool | None = None

    def largest(self, k: int = 5) -> list:
        """The ``k`` nodes that save the most bytes, largest first."""
        return sorted(self.nodes, key=lambda n: -n.bytes)[:k]

    def by_node(self) -> dict:
        """``{node id: bytes}`` (ids as in the snapshot: ``"n<sequence_nr>"``)."""
        return {n.id: n.bytes for n in self.nodes}

    def __str__(self):
        if not self.nodes and self.retained is False:
            return (
                "saved for backward: nothing now: the backward freed the graph's saved tensors "
                "(run it with retain_graph=True, or %%autograd --retain-graph, to keep them)"
            )
        lines = [f"saved for backward: {format_bytes(self.total)} in {len(self.storages)} blocks"]
        for n in self.largest():
            freed = f", freed at step {n.freed_at}" if n.freed_at is not None else ""
            lines.append(f"  {n}{freed}")
        for path, size in sorted(self.groups.items(), key=lambda kv: -kv[1])[:5]:
            lines.append(f"  module {path}: {format_bytes(size)}")
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


def _node_bytes(source, node, shown, groups, freed_at):
    """The NodeBytes of ``node`` (its snapshot entry ``shown``) and ``{block key: size}`` of
    the blocks it saves; ``(None, {})`` when it saves none."""
    keys, names = {}, []
    for name, tensor in source.saved_tensors(node):
        key, size = source.storage(tensor)
        keys[key] = size
        names.append(name)
    if not keys:
        return None, keys
    group = groups.get(shown["group"])
    entry = NodeBytes(
        node=shown["name"],
        id=shown["id"],
        bytes=sum(keys.values()),
        names=list(dict.fromkeys(names)),
        storages=list(keys),
        group=group["path"] if group is not None else None,
        line=shown["line"],
        source=shown["source"],
        freed_at=freed_at,
    )
    return entry, keys


def node_saved_bytes(recorder, snapshot, objects, node_id) -> NodeBytes | None:
    """The saved memory of the one node ``node_id`` of ``snapshot`` (None: it saves nothing,
    or is not an op's node), as ``saved_bytes(...).nodes`` has it, without reading the others:
    a selection's details in a graph of 57,000 nodes need not read them all."""
    node = objects.get(node_id)
    shown = next((n for n in snapshot["nodes"] if n["id"] == node_id), None)
    if node is None or shown is None or shown["kind"] != "node":
        return None
    freed_at = None
    if recorder.passes:
        for step in recorder.passes[-1].steps:
            if step.node is node:
                freed_at = step.index
                break
    groups = {g["id"]: g for g in snapshot["groups"]}
    return _node_bytes(recorder.graph_source, node, shown, groups, freed_at)[0]


def saved_bytes(recorder, trace=None, snapshot=None, objects=None) -> SavedBytes:
    """The saved memory of the graph ``recorder`` recorded (every node its snapshot shows,
    those made inside a framework's own functions too); ``trace`` (default: its last backward
    pass) gives each node's ``freed_at``. ``snapshot`` and its ``objects`` (see
    ``build_snapshot``) when the caller has them already."""
    source = recorder.graph_source
    if snapshot is None or objects is None:
        objects = {}
        # every node, however many: the totals are the graph's, not those of a drawing cut
        # at ``max_nodes`` (NOTE [A graph cut at max_nodes])
        snapshot = build_snapshot(recorder, timings=False, objects=objects, max_nodes=sys.maxsize)
    if trace is None and recorder.passes:
        trace = recorder.passes[-1]
    steps = {}
    if trace is not None:
        for step in trace.steps:
            steps.setdefault(step.node, step.index)
    groups = {g["id"]: g for g in snapshot["groups"]}
    nodes, storages, holders, group_blocks = [], {}, {}, {}
    for shown in snapshot["nodes"]:
        node = objects.get(shown["id"])
        if node is None or shown["kind"] != "node":
            continue
        entry, keys = _node_bytes(source, node, shown, groups, steps.get(node))
        if entry is None:
            continue
        group = groups.get(shown["group"])
        nodes.append(entry)
        for key, size in keys.items():
            storages[key] = size
            holders.setdefault(key, []).append(entry.freed_at)
        while group is not None:
            group_blocks.setdefault(group["path"], {}).update(keys)
            group = groups.get(group["parent"])
    blocks = {
        key: (size, None if None in holders[key] else max(holders[key]))
        for key, size in storages.items()
    }
    return SavedBytes(
        total=sum(storages.values()),
        nodes=nodes,
        groups={path: sum(keys.values()) for path, keys in group_blocks.items()},
        storages=blocks,
        # a node that ran and still holds its saved tensors: the pass kept the graph (a
        # torch pass does not say whether it was asked to)
        retained=None if trace is None else any(n.freed_at is not None for n in nodes),
    )
