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
    "line_text",
    "read_records",
    "record_entries",
]


# NOTE [The drawing before the details]
# A drawing reads a node's kind, names, shapes, group, line, hooks and gradient, the edges and
# the groups; only the details of a selection read a node's saved values, metadata and next
# edges, the recorded calls and the passes' order: a quarter of a 20,000-node snapshot's time.
# So ``build_snapshot`` reads those last, after ``first_view(snap)``, with which the graph view
# lays the graph out and sends it (its first view: the details, the overlays that read them,
# follow once the snapshot is whole, before the cell ends). A snapshot returned is whole (the
# graph view's reads its records when first asked for: NOTE [Records read when first asked]).
# Only a
# graph of FIRST_VIEW_NODES nodes or more (snapshot.py) is sent early: a small one's details take
# milliseconds, and laid out after its whole snapshot is built (its temporaries let go), it keeps
# the kernel's memory compact: laid out early, a 603-node cell re-run 50 times grew the kernel's
# RSS by 32 MB instead of 28 (the objects Python holds the same: allocation order).


# NOTE [Records read when first asked]
# Most cells are drawn and never clicked, and the entries of the recorded calls are the
# biggest detail of a big snapshot: on the 100,000-call chain (20,000 calls kept) 0.1 s of the
# cell's 2.6 s of CPU, and 20,000 entries the cell's session keeps. Only a selection's details
# (the call that made the node), the snapshot read whole (JSON, a copy) and a user read them.
# So the graph view's snapshot (``build_snapshot(whole=False)``) is a :class:`SnapshotDict`,
# which reads its records the first time they are asked for (``snap["records"]``, its items or
# values: JSON; a copy; a comparison with a snapshot that agrees in all else), and a selection
# (``details``) makes its own node's record alone. They are made again from the recorder's
# (``RecordList``), which do not change once the recording ends (a snapshot made while its
# recorder runs, a live view's, reads them at once), so the snapshot is the same dict, with
# the same values, as one built whole. A node's details (saved values, metadata, next edges)
# are read at once: a reader finds them in the node's own entry (``snap["nodes"][k]["saved"]``:
# the tutorials do), a plain dict that cannot say when it is read.
class SnapshotDict(dict):
    """A snapshot that reads its records when they are first asked for (NOTE [Records read
    when first asked]); a dict, the same as one built whole to every reader."""

    __slots__ = ("_pending",)

    def whole(self) -> SnapshotDict:
        """This snapshot with its records read (once)."""
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
        # (traitlets compares a view's new snapshot with its last: records read only to tell
        # two snapshots apart that agree in all else)
        if pending and not _agree_but_records(self, other):
            return False
        if isinstance(other, SnapshotDict):
            other.whole()
        return dict.__eq__(self.whole(), other)

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None


def _agree_but_records(a, b):
    """Whether snapshots ``a`` and ``b`` agree in all but their records, read or not."""
    keys = dict.keys(a)
    if keys != dict.keys(b):
        return False
    return all(dict.__getitem__(a, k) == dict.__getitem__(b, k) for k in keys if k != "records")


def node_and_record(snap, item_id):
    """``(node entry, record entry)`` of node ``item_id`` of ``snap`` (None, None: no such
    node); of a :class:`SnapshotDict` whose records are unread, its record made alone."""
    node = next((n for n in snap["nodes"] if n["id"] == item_id), None)
    record = None
    if node is not None and node["record"] is not None:
        pending = snap._pending if isinstance(snap, SnapshotDict) else None
        if pending is not None:
            return node, pending.record(node["record"])
        records = snap["records"]  # (all of them, or the last ones of a graph cut at max_nodes)
        k = bisect.bisect_left(records, node["record"], key=lambda r: r["index"])
        record = records[k] if k < len(records) and records[k]["index"] == node["record"] else None
    return node, record


class Unread:
    """The records of a :class:`SnapshotDict` still to read (NOTE [Records read when first
    asked]): ``read`` as ``read_records`` takes it, ``records()``: the Records kept, made again,
    ``one(index)``: the Record of call ``index``, made alone; ``guard``: the context they are
    all read in."""

    __slots__ = ("snap", "read", "records", "one", "guard")

    def __init__(self, snap, read, records, one, guard):
        self.snap, self.read, self.guard = snap, read, guard
        self.records, self.one = records, one

    def all(self):
        with self.guard:
            read_records(self.snap, self.read, self.records)

    def record(self, index):
        """The entry of the record of call ``index`` (the snapshot's records left unread)."""
        read = self.read
        args = (read["recorder"], read["ids"].drawn, read["group_ids"], read["timings"])
        return record_entries([self.one(index)], *args, read["shared"])[0]


def read_details(snap, drawn):
    """Read the details of ``snap`` but its records (NOTE [The drawing before the details]):
    ``drawn`` has what build_snapshot read the drawing with (``ordered`` nodes, ``source``,
    ``ids``, ``passes``, ``cut``: the drawn nodes of a graph cut at its max_nodes, else None,
    ``recorder``, ``group_ids``, ``timings``, ``shared``)."""
    ids, shared = drawn["ids"], drawn["shared"]
    node_details(drawn["ordered"], snap["nodes"], drawn["source"], shared, ids.drawn)
    for p, entry in zip(drawn["passes"], snap["passes"]):
        entry["order"] = pass_order(p, ids, drawn["cut"])


def read_records(snap, drawn, records):
    """Read the records of ``snap``: ``records()``, the Records kept; ``drawn``: as
    ``read_details`` takes it."""
    snap["records"] = record_entries(
        records(),
        drawn["recorder"],
        drawn["ids"].drawn,
        drawn["group_ids"],
        drawn["timings"],
        drawn["shared"],
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
            if edge is None:  # (NOTE [Entries that share their keys] in snapshot.py)
                edge = nexts[key] = _NextEntry().__dict__
                edge["node"] = key[0]
                edge["input_nr"] = input_nr
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


def line_text(record, shared):
    """The text of ``record``'s line (``Record.source``), one string for equal texts (NOTE
    [Shared entries] in snapshot.py) and read once a line: a loop's body is read once, not once
    a call."""
    key = (record.filename, record.lineno)
    text = shared["line"].get(key)
    if text is None:
        text = record.source
        text = shared["line"][key] = shared["text"].setdefault(text, text)
    return text


def record_entries(records, recorder, nids, group_ids, timings, shared):
    """The recorded calls kept (their tensors' entries shared: NOTE [Shared entries]);
    ``nids``: ``{node: id}`` of the nodes drawn."""
    out_records = []
    cell = getattr(recorder, "cell_filename", None)
    infos = shared["info"]

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
        entry["source"] = line_text(r, shared)
        entry["group"] = group_ids.get(r.group) if r.group is not None else None
        out_records.append(entry)
    return out_records


class _RecordEntry:
    """Made for its ``__dict__`` alone: NOTE [Entries that share their keys] in snapshot.py."""


class _NextEntry:
    """Made for its ``__dict__`` alone: NOTE [Entries that share their keys] in snapshot.py."""
