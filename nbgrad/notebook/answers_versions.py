"""Version errors explained: which saved tensor an in-place op changed, and where.

``Session.explain(err)`` (``%%autograd -o s``) answers here, for nbgrad's graph and for
PyTorch's alike. When backward raises "one of the variables needed for gradient computation
has been modified by an inplace operation", the error names only the tensor's shape, the node
it is now an output of, and two version numbers. The answer adds the node that saved the
tensor (the node the backward was running), which of its saved tensors it is, and the cell
lines of the in-place ops that bumped its version.

NOTE [Finding the in-place ops]
An in-place op on a tensor of the graph makes a node whose first edge leads to the tensor's
node before the op (``a.mul_(3)``: ``MulBackward0`` with ``next_functions[0]`` the old
``grad_fn`` of ``a``; on a view, ``CopySlices`` with the base's), and the tensor's ``grad_fn``
becomes that node. So from the saved tensor's node when it was saved (the saving node itself
for a saved output; one of its next nodes for a saved input) the recorded calls made after the
saving node are followed in order: a call made by an in-place op whose node's first edge leads
into the chain extends the chain. A call counts as in-place when its op is named so (``mul_``,
torch's records) or its cell line writes in place (``x.mul_(``, ``x += ``, ``x[i] = ``: nbgrad
records the op that computes the new value, ``mul``), or its node is now the ``grad_fn`` of a
tensor an earlier call made (``nn.ReLU(inplace=True)``, whose line shows nothing). In-place ops
that make no node (under ``no_grad``) leave no edge to follow: they are not listed, and
``complete`` is False. Several calls of one statement (``a[0] = 5``: a view, then a copy into
it) are one entry. ``bumped_by`` lists them in cell order; ``complete`` says whether they
account for every bump (``actual - expected``, counting the in-place writes each line's text
shows). PyTorch's ``__setitem__`` returns no tensor and is not recorded: such a change is
reported as not found (``complete`` False), never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["VersionError", "explain", "is_version_error"]

_MESSAGE = re.compile(
    r"modified by an inplace operation: \[(?P<framework>\w+)\.(?P<type>\w+) \[(?P<shape>[^\]]*)\]\]"
    r"(?:, which is output (?P<output_nr>\d+) of (?P<name>[^,]+),)? is at version "
    r"(?P<actual>\d+); expected version (?P<expected>\d+) instead"
)
# a line that writes in place: ``x.add_(``, ``x += ``, ``x[i] = `` (not ``==``)
_INPLACE_LINE = re.compile(
    r"\.[a-z][a-z0-9_]*[a-z0-9]_\(|[-+*/@%&|^]=|<<=|>>=|\]\s*=(?!=)|inplace\s*=\s*True"
)


def is_version_error(err) -> bool:
    """Whether ``err`` is backward's "modified by an inplace operation" error."""
    return isinstance(err, RuntimeError) and _MESSAGE.search(str(err)) is not None


@dataclass
class VersionError:
    """The answer of ``Session.explain(err)``: the ``node`` that saved the tensor (its name as
    shown, and ``node_id`` in the snapshot), the ``saved`` tensor's name among the node's
    saved values (as PyTorch's ``_saved_<name>``), its ``shape``, the ``expected`` and
    ``actual`` versions, and ``bumped_by``: the cell lines' texts of the in-place ops that
    changed it (``lines``: their numbers, ``ids``: their nodes' snapshot ids)."""

    node: str | None
    node_id: str | None
    saved: str | None
    shape: list
    expected: int
    actual: int
    bumped_by: list = field(default_factory=list)
    lines: list = field(default_factory=list)
    ids: list = field(default_factory=list)
    complete: bool = False

    def __str__(self):
        if self.node is None:
            what = "a saved tensor (the backward that failed was not recorded here)"
        elif self.saved:
            what = f"{self.saved!r} of {self.node}"
        else:
            what = f"a tensor saved by {self.node}"
        head = (
            f"{what} (shape {self.shape}) was saved at version {self.expected} and is at "
            f"version {self.actual} now"
        )
        if not self.bumped_by:
            return head + "; no recorded in-place op of this cell changed it."
        ops = "; ".join(f"line {n}: {text}" for n, text in zip(self.lines, self.bumped_by))
        more = "" if self.complete else " (and changes made outside the recorded cell)"
        return f"{head}: changed in place at {ops}{more}."

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))

    def to_widget(self) -> dict:
        """What the graph view marks (``widgets/answers.js``, ``VersionAnswer``)."""
        return {"kind": "version", "node": self.node_id, "bumped": self.ids, "text": str(self)}


def explain(recorder, err=None) -> VersionError:
    """Explain backward's version error ``err`` raised in a pass ``recorder`` recorded
    (default: the error of the last pass that failed)."""
    if err is None:
        err = next((t.error for t in reversed(recorder.passes) if t.error), None)
    found = _MESSAGE.search(str(err)) if err is not None else None
    if found is None:
        raise ValueError(
            "explain() takes the error of a backward that found a saved tensor modified by an "
            f"inplace operation, got {type(err).__name__}: {str(err)[:120]}"
        )
    source = recorder.graph_source
    expected, actual = int(found["expected"]), int(found["actual"])
    shape = [int(d) for d in found["shape"].split(",") if d.strip()]
    node = _failing_node(recorder, err)
    answer = VersionError(None, None, None, shape, expected, actual)
    if node is None:
        return answer
    answer.node = source.node_name(node)
    answer.node_id = f"n{source.sequence_nr(node)}"
    stale = [s for s in source.stale_saved(node) if (s[1], s[2]) == (expected, actual)]
    if stale:
        answer.saved = stale[0][0]
    records = list(recorder.records)
    start = next((r.index for r in records if r.node is node), -1)
    chain = {node} | {fn for fn, _ in source.next_edges(node) if fn is not None}
    rewritten = _rewritten_nodes(records, source)
    bumps = []
    for r in records:
        if r.index <= start or r.node is None:
            continue
        if r.node not in rewritten and not _writes_in_place(r):
            continue
        edges = source.next_edges(r.node)
        if edges and edges[0][0] in chain:
            if bumps and bumps[-1].line == r.line and bumps[-1].filename == r.filename:
                bumps[-1] = r  # one statement, several calls (``a[0] = 5``: a view, a copy)
            else:
                bumps.append(r)
            chain.add(r.node)
    answer.bumped_by = [r.source for r in bumps]
    answer.lines = [r.line for r in bumps]
    answer.ids = [f"n{source.sequence_nr(r.node)}" for r in bumps]
    writes = sum(max(1, len(_INPLACE_LINE.findall(r.source or ""))) for r in bumps)
    answer.complete = writes == actual - expected
    return answer


def _rewritten_nodes(records, source) -> set:
    """The nodes that are now the ``grad_fn`` of a tensor an earlier call made (an in-place op
    rebased its history: ``F.relu(h, inplace=True)``, ``nn.ReLU(inplace=True)``)."""
    out = set()
    for r in records:
        for t in r.output_tensors():
            fn = source.gradient_node(t, create=False)
            if fn is not None and fn is not r.node:
                out.add(fn)
    return out


def _writes_in_place(record) -> bool:
    op = record.op
    if op.endswith("_") and not op.startswith("_"):
        return True
    return _INPLACE_LINE.search(record.source or "") is not None


def _failing_node(recorder, err):
    """The node the backward was running when ``err`` was raised: the last step of the last
    pass that failed with it (None when no recorded pass did: an error of another cell's)."""
    for trace in reversed(recorder.passes):
        if trace.error is not None and str(err) in trace.error and trace.steps:
            return trace.steps[-1].node  # (a trace keeps the error's text)
    return None
