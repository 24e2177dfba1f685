"""Folding repeated structure into series, as TensorBoard's graph dashboard does.

A loop of ``x = (x * w + b).tanh()`` run 300 times is a chain of 900 nodes whose names repeat
with period 3; five identical ``Linear -> ReLU`` modules called in a row are a chain of ten
collapsed groups whose types repeat with period 2. :func:`find_series` finds such runs in the
visible graph (nodes and collapsed groups, see ``layout.py``), so that the layout can draw one
series box for each (``MulBackward0 → AddBackward0 → TanhBackward0 ×300``) that expands in place
on a click.

NOTE [Series]
Only chains are folded: a run of units ``u1 → u2 → ... → un`` in which each link is the only
edge out of its upper end and the only edge into its lower end, not counting the edges into
sinks (leaves and other units with no edges out: the weights a loop reuses hang off every step,
and stay outside the series box, which takes over the edges to them). Along each maximal chain
the units' kinds (a node's name, a collapsed group's module type) are searched for the period
``p`` (1 to ``MAX_PERIOD``) and start that cover the most units with at least ``MIN_REPEATS``
whole repeats; the parts of the chain before and after the run are searched again. The first
repeat (the one nearest the root) stays drawn as it is, so that the reader sees one whole
iteration, with its edges to the leaves, above the box that stands for the others. The result
depends only on the units, their order and their edges, so the same snapshot always folds the
same way (nbval compares the still pictures).
"""

from __future__ import annotations

from typing import TypedDict

__all__ = ["Series", "find_series", "MIN_REPEATS", "MAX_PERIOD"]

MIN_REPEATS = 3  # fewer repeats are drawn as they are (a series box holds the last ones)
MAX_PERIOD = 12  # the longest repeated block searched for, in units


class Series(TypedDict):
    """A run of ``count`` repeats of a block of ``period`` units, top (root side) first;
    ``id`` is ``"series:"`` and the first unit's id, stable while that unit stays."""

    id: str
    units: list[str]
    period: int
    count: int
    kinds: list[str]  # the block's kinds in forward (execution) order: the reverse of units


def find_series(order, kind, succ, pred, group=None) -> list[Series]:
    """The series of the visible graph: ``order`` its unit ids (in snapshot order), ``kind``
    each unit's kind, ``succ`` / ``pred`` each unit's edges out (towards the leaves) and in;
    ``group`` each unit's enclosing module group (a series never crosses a group's border)."""
    sink = {u for u in order if not succ[u]}
    out_core = {u: [v for v in succ[u] if v not in sink] for u in order}
    in_core = {u: [v for v in pred[u] if v not in sink] for u in order}

    def linked(u):  # the unit below u in a chain, if the link u -> v is a chain link
        if u in sink or len(out_core[u]) != 1:
            return None
        v = out_core[u][0]
        if group is not None and group[u] != group[v]:
            return None
        return v if len(in_core[v]) == 1 and v != u else None

    has_above = {linked(u) for u in order} - {None}
    series = []
    seen = set()
    for u in order:  # each maximal chain from its top unit
        if u in has_above or u in sink or u in seen:
            continue
        chain = [u]
        seen.add(u)
        v = linked(u)
        while v is not None and v not in seen:
            chain.append(v)
            seen.add(v)
            v = linked(v)
        series.extend(_fold_chain(chain, [kind[c] for c in chain]))
    return series


def _fold_chain(chain, kinds):
    """The series of one chain: the best run, then the parts before and after it."""
    best = _best_run(kinds)
    if best is None:
        return []
    start, period, count = best
    end = start + period * count
    start, count = start + period, count - 1  # the first repeat stays drawn (NOTE [Series])
    block = chain[start:end]
    found = [
        Series(
            id="series:" + block[0],
            units=block,
            period=period,
            count=count,
            kinds=list(reversed(kinds[start : start + period])),
        )
    ]
    return _fold_chain(chain[:start], kinds[:start]) + found + _fold_chain(chain[end:], kinds[end:])


def _best_run(kinds):
    """(start, period, count) of the run covering most units (ties: the shorter period, then
    the earlier start), or None when no block repeats ``MIN_REPEATS`` times."""
    n = len(kinds)
    best = None
    for p in range(1, min(MAX_PERIOD, n // MIN_REPEATS) + 1):
        i = 0
        while i + p < n:
            if kinds[i] != kinds[i + p]:
                i += 1
                continue
            j = i
            while j + p < n and kinds[j] == kinds[j + p]:
                j += 1
            # kinds[i:j + p] has period p: (j - i + p) // p whole blocks
            count = (j - i + p) // p
            if count >= MIN_REPEATS and _primitive(kinds[i : i + p]):
                covered = count * p
                if best is None or covered > best[0] or (covered == best[0] and p < best[2]):
                    best = (covered, i, p, count)
            i = j + 1
    if best is None:
        return None
    _, start, period, count = best
    return start, period, count


def _primitive(block):
    """Whether ``block`` is not itself a repeat of a shorter block (``A B A B`` is ``A B``)."""
    n = len(block)
    return not any(n % q == 0 and block == block[:q] * (n // q) for q in range(1, n))
