"""The details of a snapshot (``snapshot.py``) that only a selection reads: each node's saved
values, metadata and next edges, the recorded calls, each pass's order; read into the snapshot
after its first view is sent (NOTE [The drawing before the details]). Each distinct entry is
made once a snapshot (NOTE [Shared entries] in snapshot.py).
"""

from __future__ import annotations

import bisect
import os

from .summaries import shape_list

__all__ = [
    "SnapshotDict",
    "Unread",
    "node_and_record",
    "node_details",
    "pass_order",
    "read_details",
    "record_entries",
]


# NOTE [The drawing before the details]
# A drawing reads a node's kind, names, shapes, group, line, hooks and gradient, the edges and
# the groups; only the details of a selection read a node's saved values, metadata and next
# edges, the recorded calls and the passes' order: a quarter of a 20,000-node snapshot's time.
# So ``build_snapshot`` reads those last, after ``first_view(snap)``, with which the graph view
# lays the graph out and sends it (its first view: the details, the overlays that read them,
# follow once the snapshot is whole, before the cell ends). A snapshot returned is whole (the
# graph view's reads them when first asked for: NOTE [Details read when first asked]). Only a
# graph of FIRST_VIEW_NODES nodes or more (snapshot.py) is sent early: a small one's details take
# milliseconds, and laid out after its whole snapshot is built (its temporaries let go), it keeps
# the kernel's memory compact: laid out early, a 603-node cell re-run 50 times grew the kernel's
# RSS by 32 MB instead of 28 (the objects Python holds the same: allocation order).


# NOTE [Details read when first asked]
# Most cells are drawn and never clicked, and the details of a big graph are a third of its
# snapshot: on the 100,000-call chain (20,000 nodes drawn) 0.2 s of the cell's 2.6 s of CPU and
# 30 MB of the kernel's RSS. So the graph view's snapshot (``build_snapshot(details=False)``) is
# a :class:`SnapshotDict`: it reads them all the first time something reads it whole (its
# records, items or values: JSON; a copy; a comparison whose drawings agree), and a selection
# (``details``) reads its own node's alone. Whole, it is the same dict with the same values as
# one built whole: the records are made again from the recorder's, which do not change once the
# recording ends (a snapshot made while its recorder runs, a live view's, is read whole at once,
# after its first view). What changes is when the graph is read: a node's saved values and
# metadata are read when first asked for, as the answers (saved bytes, NaN/Inf) always were, so
# after a later ``backward`` that frees them, the saved tensors are shown freed there.
class SnapshotDict(dict):
    """A snapshot that reads its details when it is first read whole (NOTE [Details read when
    first asked]); a dict, the same as one built whole to every reader."""

    __slots__ = ("_pending",)

    def whole(self) -> SnapshotDict:
        """This snapshot with its details read (once)."""
        pending = self._pending
        if pending is not None:
            self._pending = None
            pending.all()
        return self

    def __getitem__(self, key):
        if key == "records" and self._pending is not None:
            self.whole()
        return dict.__getitem__(self, key)

    def get(self, key, default=None):
        if key == "records" and self._pending is not None:
            self.whole()
        return dict.get(self, key, default)

    def items(self):
        return dict.items(self.whole())

    def values(self):
        return dict.values(self.whole())

    def __iter__(self):  # (not dict's own: ``dict(snap)``, ``{**snap}`` read through __getitem__)
        return dict.__iter__(self)

    def copy(self):
        return dict(self.whole())

    def __reduce__(self):  # (pickle, copy.deepcopy: a plain dict, whole)
        return dict, (dict(self.whole()),)

    def __repr__(self):
        return dict.__repr__(self.whole())

    def __eq__(self, other):
        if not isinstance(other, dict):
            return NotImplemented
        pending = self._pending is not None or getattr(other, "_pending", None) is not None
        if pending and not _drawings_agree(self, other):  # (no need to read the details)
            return False
        if isinstance(other, SnapshotDict):
            other.whole()
        return dict.__eq__(self.whole(), other)

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None


_DETAILS = {"nodes": ("metadata", "saved", "next"), "records": None, "passes": ("order",)}


def _drawings_agree(a, b):
    """Whether snapshots ``a`` and ``b`` agree in all but their details, read or not (what
    traitlets compares a view's new snapshot with its last: a live one's, most often)."""
    keys = dict.keys(a)
    if keys != dict.keys(b):
        return False
    for k in keys:
        x, y = dict.__getitem__(a, k), dict.__getitem__(b, k)
        if k not in _DETAILS:
            if x != y:
                return False
        elif _DETAILS[k] is not None and not _entries_agree(x, y, _DETAILS[k]):
            return False
    return True


def _entries_agree(xs, ys, details):
    """Whether the entries ``xs`` and ``ys`` agree in all but their keys ``details``."""
    if len(xs) != len(ys):
        return False
    for x, y in zip(xs, ys):
        if x.keys() != y.keys() or any(x[k] != y[k] for k in x if k not in details):
            return False
    return True


def node_and_record(snap, item_id):
    """``(node entry, record entry)`` of node ``item_id`` of ``snap`` (None, None: no such node):
    of a :class:`SnapshotDict`, its details read for this node alone (a selection's)."""
    pending = snap._pending if isinstance(snap, SnapshotDict) else None
    if pending is not None:
        return pending.node(item_id)
    node = next((n for n in snap["nodes"] if n["id"] == item_id), None)
    record = None
    if node is not None and node["record"] is not None:
        records = snap["records"]  # (all of them, or the last ones of a graph cut at max_nodes)
        k = bisect.bisect_left(records, node["record"], key=lambda r: r["index"])
        record = records[k] if k < len(records) and records[k]["index"] == node["record"] else None
    return node, record


class Unread:
    """The details of a :class:`SnapshotDict` still to read: ``read`` and ``records()`` as
    ``read_details`` takes them, ``record(index)``: the Record of call ``index``, made again
    (NOTE [Details read when first asked]); ``guard``: the context they are read in."""

    __slots__ = ("snap", "read", "records", "record", "guard", "_at")

    def __init__(self, snap, read, records, record, guard):
        self.snap, self.read, self.guard = snap, read, guard
        self.records, self.record = records, record
        self._at = None  # node id -> its place in the snapshot's nodes, made when first asked

    def all(self):
        with self.guard:
            read_details(self.snap, self.read, self.records)

    def node(self, item_id):
        """``(node entry, record entry)`` of node ``item_id``, read alone."""
        nodes = dict.__getitem__(self.snap, "nodes")
        if self._at is None:
            self._at = {n["id"]: k for k, n in enumerate(nodes)}
        k = self._at.get(item_id)
        if k is None:
            return None, None
        read, entry = self.read, nodes[k]
        if entry["next"] is None:
            node_details(
                [read["ordered"][k]], [entry], read["source"], read["shared"], read["ids"].drawn
            )
        record = None
        if entry["record"] is not None:
            r = self.record(entry["record"])
            args = (read["recorder"], read["ids"].drawn, read["group_ids"], read["timings"])
            record = record_entries([r], *args, read["shared"])[0]
        return entry, record


def read_details(snap, drawn, records):
    """Read the details of ``snap`` (NOTE [The drawing before the details]): ``drawn`` has what
    build_snapshot read the drawing with (``ordered`` nodes, ``source``, ``ids``, ``passes``,
    ``cut``: the drawn nodes of a graph cut at its max_nodes, else None, ``recorder``,
    ``group_ids``, ``timings``, ``shared``), ``records()`` the Records kept."""
    ids, shared = drawn["ids"], drawn["shared"]
    nodes = dict.__getitem__(snap, "nodes")
    node_details(drawn["ordered"], nodes, drawn["source"], shared, ids.drawn)
    for p, entry in zip(drawn["passes"], dict.__getitem__(snap, "passes")):
        entry["order"] = pass_order(p, ids, drawn["cut"])
    snap["records"] = record_entries(
        records(), drawn["recorder"], ids.drawn, drawn["group_ids"], drawn["timings"], shared
    )


def node_details(ordered, out_nodes, source, shared, nids):
    """Put the details in the entries of the ``ordered`` nodes (NOTE [The drawing before the
    details]): saved values, metadata and next edges."""
    nexts, next_edges = shared["next"], source.next_edges
    for node, entry in zip(ordered, out_nodes):
        next_entries = []
        for fn, input_nr in next_edges(node):
            key = (nids.get(fn), input_nr)
            edge = nexts.get(key)
            if edge is None:
                edge = nexts[key] = {"node": key[0], "input_nr": input_nr}
            next_entries.append(edge)
        entry["metadata"] = _metadata_of(node, source, shared)
        entry["saved"] = _saved_of(node, source, shared)
        entry["next"] = next_entries


def _saved_of(node, source, shared):
    saved = source.saved(node)
    if not saved:
        return shared["none"]
    key = tuple(
        (v.name, v.kind, v.dtype, v.version, v.output, v.value, _shape_key(v.shape)) for v in saved
    )
    out = shared["saved"].get(key)
    if out is None:
        out = shared["saved"][key] = [_saved_entry(v) for v in saved]
    return out


def _shape_key(shape):
    """A saved value's shape (a list, a list of lists for ``"tensors"``, or None), hashable."""
    if shape is None:
        return None
    return tuple(tuple(x) if isinstance(x, list) else x for x in shape)


def _saved_entry(v):
    entry = {"name": v.name, "kind": v.kind}
    if v.kind == "tensor":
        entry.update(shape=v.shape, dtype=v.dtype, version=v.version, output=v.output)
    elif v.kind == "tensors":
        entry.update(shape=v.shape, dtype=v.dtype)
    elif v.kind == "value":
        entry["value"] = v.value
    return entry


def _metadata_of(node, source, shared):
    meta = source.metadata(node)
    if not meta:
        return shared["empty"]
    out = {}
    for k in sorted(meta, key=str):
        v = meta[k]
        text = "".join(v) if isinstance(v, list) and all(isinstance(x, str) for x in v) else repr(v)
        out[str(k)] = text[:2000]
    return out


def pass_order(trace, ids, drawn=None):
    """A pass's order; ``drawn``: the nodes of a graph cut at its ``max_nodes`` (it lists
    those)."""
    order = trace.order if drawn is None else [n for n in trace.order if n in drawn]
    return [ids(n) for n in order]


def record_entries(records, recorder, nids, group_ids, timings, shared):
    """The recorded calls kept (their tensors' entries shared: NOTE [Shared entries]);
    ``nids``: ``{node: id}`` of the nodes drawn."""
    out_records = []
    cell = getattr(recorder, "cell_filename", None)
    infos, texts = shared["info"], shared["text"]

    def summaries(tensors):
        out = []
        for i in tensors:
            key = (i.shape, i.dtype, i.device, i.requires_grad, nids.get(i.node))
            got = infos.get(key)
            if got is None:
                got = infos[key] = {
                    "shape": shape_list(i.shape),
                    "dtype": i.dtype,
                    "device": i.device,
                    "requires_grad": i.requires_grad,
                    "node": key[4],
                }
            out.append(got)
        return out

    for r in records:
        entry = _RecordEntry().__dict__  # (NOTE [Entries that share their keys] in snapshot.py)
        entry["index"] = r.index
        entry["op"] = r.op
        entry["node"] = nids.get(r.node)
        entry["inputs"] = summaries(r.inputs)
        entry["outputs"] = summaries(r.outputs)
        entry["time_us"] = round(r.elapsed * 1e6, 1) if timings else None
        entry["line"] = r.line
        entry["file"] = (
            None
            if r.filename is None
            else ("<cell>" if r.filename == cell else os.path.basename(r.filename))
        )
        entry["source"] = texts.setdefault(r.source, r.source)
        entry["group"] = group_ids.get(r.group) if r.group is not None else None
        out_records.append(entry)
    return out_records


class _RecordEntry:
    """Made for its ``__dict__`` alone: NOTE [Entries that share their keys] in snapshot.py."""
