"""The answers the live graph view shows (``widgets/answers.js``), computed here from a
:class:`~nbgrad.notebook.graph_view.GraphView`: the non-finite marks and the origin to jump to,
a colour overlay with its legend (``overlays.py``'s scales), and, for the node or module the
user picks, what the answers modules say of it: the NaN/Inf it held and the values that made
them, why its ``.grad`` is None, the bytes it keeps for backward, and a module's gradient norm
over the cell's backward passes (``answers_flow.py``).

NOTE [Answers on demand]
What every drawing needs (which boxes hold NaN or Inf, the origin, the overlay's colours) is
sent with each refresh, and costs nothing when the graph is finite and no overlay is chosen;
the rest is computed for the one item selected, when it is selected, as its details are
(NOTE [Send less] in snapshot.py). Saved bytes are computed once per snapshot.
"""

from __future__ import annotations

import math

from .answers_memory import format_bytes, node_saved_bytes, saved_bytes
from .answers_values import _listed, find_nonfinite
from .answers_why import unused_parameters, why_no_grad
from .overlays import BAD_FILL, BAD_STROKE, KINDS, overlay

__all__ = ["COLOR_KINDS", "marks", "item_answers", "saved_of"]

# the widget's "Colour by" choices: "" (none) and the overlays of overlays.py
COLOR_KINDS = ("", *KINDS)


class _Recorded:
    """What ``saved_bytes`` reads of a recorder, for a view built from tensors."""

    def __init__(self, source):
        self.graph_source = source
        self.passes = []


def saved_of(view):
    """The view's ``SavedBytes`` (``answers_memory.saved_bytes``), once per snapshot."""
    cached = getattr(view, "_saved_cache", None)
    if cached is not None and cached[0] is view.snapshot:
        return cached[1]
    rec = view.recorder if view.recorder is not None else _Recorded(view.graph_source)
    got = saved_bytes(rec, snapshot=view.snapshot, objects=view._objects)
    view._saved_cache = (view.snapshot, got)
    return got


def _node_saved(view, item_id):
    """The NodeBytes of one node: read from the whole graph's when made already (the "saved"
    colouring makes it), else from that node alone."""
    cached = getattr(view, "_saved_cache", None)
    if cached is not None and cached[0] is view.snapshot:
        return next((n for n in cached[1].nodes if n.id == item_id), None)
    rec = view.recorder if view.recorder is not None else _Recorded(view.graph_source)
    return node_saved_bytes(rec, view.snapshot, view._objects, item_id)


def _finite_number(v):
    return v if isinstance(v, (int, float)) and math.isfinite(v) else None


def _folded(view):
    """The groups the drawing shows folded (the layout's word, once it is made)."""
    return (view.graph_layout or {}).get("collapsed", view.collapsed)


def _with_series(view, bad):
    """``bad`` and the folded series boxes that hold one of its nodes."""
    bad_set = set(bad)
    folded = {x["id"] for x in (view.graph_layout or {}).get("series", ()) if not x["expanded"]}
    members = getattr(view, "_members", None) or {}
    return bad + sorted(sid for sid in folded if members.get(sid, set()) & bad_set)


def _bad_nodes(view) -> tuple:
    """The ids of the snapshot's nodes that held NaN or Inf, found once per snapshot: a click
    that opens a series sends the marks again and must cost what it shows (NOTE [Clicks cost
    what they show] in visible.py)."""
    cached = view._bad_cache
    if cached is None or cached[0] is not view.snapshot:
        bad = tuple(n["id"] for n in view.snapshot["nodes"] if n.get("nonfinite"))
        cached = view._bad_cache = (view.snapshot, bad)
    return cached[1]


def _origin(view):
    """The origin finding (``{"id", "text"}``) when a node of the view held NaN or Inf."""
    if view.recorder is None or not _bad_nodes(view):
        return None
    for f in find_nonfinite(view.recorder, {**view.weak_names, **view.names}):
        if f.origin:
            node_id = view.id_of(f._node) if f._node is not None else None
            return {"id": node_id, "text": str(f)}
    return None


def _flow(view) -> dict:
    """``{group path: norms}`` of the modules drawn, when the cell ran two backward passes or
    more (``answers_flow.py``)."""
    if view.flow is None or view.flow.steps < 2:
        return {}
    out = {}
    for g in view.snapshot["groups"]:
        if g["path"] not in out:
            series = view.flow.of(getattr(view._objects.get(g["id"]), "module", None))
            if series is not None:
                out[g["path"]] = series
    return out


def marks(view, kind="") -> dict:
    """What ``answers.js`` draws on each drawing: ``bad`` (the box refs that held NaN or Inf:
    nodes, and the folded groups and series holding one), ``origin`` (see ``_origin``) and, for an
    overlay ``kind``, its ``title``, ``legend`` (``[{fill, text, stroke, dash}]``), ``fills``
    by box ref and each folded group's ``stats`` (min / max / sum / mean / count); ``flow``:
    each module's gradient norm at each backward pass, by group path (``_flow``)."""
    snap = view.snapshot
    bad = list(_bad_nodes(view))
    out = {"kind": kind, "bad": bad, "origin": _origin(view) if bad else None}
    flow = _flow(view)
    if flow:
        out["flow"] = flow
    if not kind:
        if bad:  # a folded group or series holding a bad node is marked too
            ov = overlay(snap, "nonfinite", collapsed=_folded(view))
            out["bad"] = _with_series(view, sorted(ov.marks))
        return out
    saved = group_saved = None
    if kind == "saved":
        got = saved_of(view)
        saved, group_saved = got.by_node(), got.groups
    ov = overlay(snap, kind, saved, collapsed=_folded(view), group_saved=group_saved)
    out["bad"] = _with_series(view, sorted(ov.marks))
    out["title"] = ov.title
    legend = []
    for fill, text, *border in ov.legend():
        stroke, dash = border or ((BAD_STROKE, "6 3") if fill == BAD_FILL else ("#888888", ""))
        legend.append({"fill": fill, "text": text, "stroke": stroke, "dash": dash})
    out["legend"] = legend
    out["fills"] = ov.fills
    out["stats"] = {
        gid: {k: _finite_number(v) for k, v in s.items()}
        for gid, s in ov.groups.items()
        if gid in _folded(view)
    }
    if kind == "saved":  # a group's own figure: its distinct blocks (NOTE [A storage counted once])
        paths = {g["id"]: g["path"] for g in snap["groups"]}
        for gid, s in out["stats"].items():
            s["distinct"] = group_saved.get(paths.get(gid))
    return out


def item_answers(view, item_id, namespace=None, flow=None) -> dict:
    """The answers for the node or module group ``item_id``: ``nonfinite`` (the findings of
    that node, each ``{text, phase, line, source, values, origin}``, ``values`` the inputs'
    values in words), ``why`` (the sentence,
    ``cause``, ``line``, ``source``, when its tensor's ``.grad`` is None), ``unused`` (a
    module's parameters without a gradient, ``[{name, text}]``), ``saved`` (bytes, in words
    too), ``flow`` (a module's norms over the passes), ``overlay`` (a folded group's min / max /
    sum / mean under the colour shown)."""
    if not item_id:
        return {}
    try:
        obj = view.node(item_id)
    except KeyError:
        return {}
    out = {}
    group = next((g for g in view.snapshot["groups"] if g["id"] == item_id), None)
    rec = view.recorder
    if group is not None:
        module = getattr(obj, "module", None)
        got = saved_of(view).groups.get(group["path"])
        if got:
            out["saved"] = {"bytes": got, "text": format_bytes(got)}
        if module is not None and rec is not None:
            out["unused"] = [
                {"name": name, "text": str(why)}
                for name, why in unused_parameters(rec, module, namespace=namespace)
            ]
        series = flow.of(module) if flow is not None and module is not None else None
        if series is not None:
            out["flow"] = series
        if view.color:  # a folded group's figures under the overlay shown
            shown = marks(view, view.color)
            stats = shown["stats"].get(item_id)
            if stats is not None:
                out["overlay"] = {"kind": view.color, "title": shown["title"], **stats}
        return out
    if rec is not None and any(
        n["id"] == item_id and "nonfinite" in n for n in view.snapshot["nodes"]
    ):
        out["nonfinite"] = [
            {
                "text": _without_line(str(f), f.line, f.source),
                "phase": f.phase,
                "line": f.line,
                "source": f.source,
                "values": _values(f),
                "origin": f.origin,
            }
            for f in find_nonfinite(rec, {**view.weak_names, **view.names})
            if f._node is obj
        ]
    entry = _node_saved(view, item_id)
    if entry is not None:
        freed = f", freed at step {entry.freed_at}" if entry.freed_at is not None else ""
        out["saved"] = {
            "bytes": entry.bytes,
            "text": f"{format_bytes(entry.bytes)} in {', '.join(entry.names)}{freed}",
        }
    why = _why(view, item_id, namespace)
    if why is not None:
        out["why"] = why
    return out


def _why(view, item_id, namespace):
    """Why the ``.grad`` of a leaf (a parameter too) is None, or None if it is not. An op's
    output has no ``.grad`` unless it was retained: no news, so it gets no sentence."""
    kind = next((n["kind"] for n in view.snapshot["nodes"] if n["id"] == item_id), "node")
    rec = view.recorder
    tensor = view.tensor(item_id) if rec is not None and kind != "node" else None
    if tensor is None or getattr(tensor, "grad", None) is not None:
        return None
    why = why_no_grad(rec, tensor, names=view.names, namespace=namespace)
    if why.cause is None:
        return None
    text = _without_line(str(why), why.line, why.source)
    return {"text": text, "cause": why.cause, "line": why.line, "source": why.source}


def _without_line(text, line, source):
    """A sentence without its closing " at line N: SOURCE" (the panel shows the line below)."""
    tail = f" at line {line}: {source}"
    return text[: -len(tail)] if line is not None and text.endswith(tail) else text


def _values(finding) -> list:
    """A finding's values in words: the inputs of a forward op; what a backward node received,
    sent and saved."""
    v = finding.values
    if finding.phase == "forward":
        return [f"input {k}: {_listed(x)}" for k, x in enumerate(v.get("inputs") or ())]
    out = [f"received: {_listed(v['received'])}"] if v.get("received") else []
    out += [f"saved {k}: {_listed(x)}" for k, x in (v.get("saved") or {}).items()]
    if v.get("sent"):
        out.append(f"sent: {_listed(v['sent'])}")
    return out
