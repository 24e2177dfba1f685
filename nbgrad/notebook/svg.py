"""Still pictures: the SVG form of each widget, drawn in Python from the same snapshot.

A saved notebook shows these where no widget can run (GitHub, exported HTML, ``--static``).
The output is a pure function of the snapshot and the layout: no ids from ``id()``, no times,
numbers formatted to fixed precision, so ``nbval`` can compare it exactly.
"""

from __future__ import annotations

import re
import textwrap
from xml.sax.saxutils import escape

from .layout import default_collapsed
from .layout import layout as _layout
from .snapshot import cut_note
from .trace import trace_state

__all__ = ["graph_svg", "trace_svg", "hooks_svg", "snapshot_svg", "edge_path", "with_note"]

FONT = "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace"
STYLE = {
    "node": ("#eef3fb", "#5b7bb2"),
    "leaf": ("#e9f5ea", "#4c9a52"),
    "external": ("#f4f4f4", "#9a9a9a"),
    "root": ("#fdf0f0", "#b25b5b"),
    "group": ("#fff6e5", "#c98a1b"),
    "series": ("#f3eefb", "#7a5bb2"),
}


def _f(v) -> str:
    """A coordinate: at most one decimal, no trailing zeros."""
    text = f"{float(v):.1f}"
    return text[:-2] if text.endswith(".0") else text


def _num(v) -> str:
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    return f"{v:.4g}"


def _t(text) -> str:
    return escape(str(text), {'"': "&quot;"})


def edge_path(points):
    """SVG path data through a layout edge's points: curves between layers, straight lines
    through a long edge's dummy boxes, and the end 1px short so the arrowhead shows (the same
    as ``edgePath`` in widgets/common.js)."""
    p = list(points)
    p[-1] -= 1
    d = [f"M{_f(p[0])},{_f(p[1])}"]
    for k in range(2, len(p), 2):
        x0, y0, x1, y1 = p[k - 2], p[k - 1], p[k], p[k + 1]
        if (k // 2) % 2 == 1:  # from a bottom to the next top: a curve
            dy = max(18.0, (y1 - y0) / 2)
            d.append(f"C{_f(x0)},{_f(y0 + dy)} {_f(x1)},{_f(y1 - dy)} {_f(x1)},{_f(y1)}")
        else:  # through a dummy box
            d.append(f"L{_f(x1)},{_f(y1)}")
    return " ".join(d)


def _header(width, height, title):
    top = 22 if title else 0
    if title:
        width = max(width, round(len(title) * 7.3 + 20))  # 12px monospace: the title fits
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_f(width)}" '
        f'height="{_f(height + top)}" viewBox="0 0 {_f(width)} {_f(height + top)}" '
        f'font-family="{FONT}" font-size="11">',
        '<defs><marker id="nbg-arrow" viewBox="0 0 8 8" refX="7" refY="4" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L8,4 L0,8 z" fill="#8a8a8a"/></marker></defs>',
        f'<rect x="0" y="0" width="{_f(width)}" height="{_f(height + top)}" fill="#ffffff"/>',
    ]
    if title:
        parts.append(f'<text x="10" y="15" font-size="12" fill="#333333">{_t(title)}</text>')
    return parts, top


FOOTER_LINE = 15
FOOTER_CHAR = 6.7  # the width of a character at 11px

# NOTE [Still pictures are overviews]
# A still picture (the SVG beside a widget, and the PNG painted from it) shows what the widget
# shows at open: the same layout (folded as it opens), at the same scale (node labels at
# 11 px, NOTE [Readable at open] in layout.py), from the same place (the root end, centred
# on the topmost box, as ``openView`` in widgets/graph_view.js). It is never a poster of the
# whole drawing: a graph that does not fold would otherwise make a picture 300,000 px tall,
# megabytes in the saved notebook and seconds (or the kernel's memory) to paint. So the
# picture is at most STILL_W x STILL_H px, title and footer included; what lies outside that
# window is not written at all (the SVG's size and the PNG's cost follow what is shown, not
# the graph), and a line under the title says what was left out: how many boxes and edges,
# the named leaves among them, and the whole drawing's size. The live widget pans to the rest.
# The edges passing through the window without a box of theirs in it can still be thousands
# (the middle of a random DAG 400,000 px wide: 4,469 edges, a 1.3 MB SVG and 1.2 s to
# paint), so at most STILL_EDGES are drawn, those of the boxes drawn first.
STILL_W = 2000
STILL_H = 2000
STILL_EDGES = 1500  # edges drawn at most: those of the boxes drawn first, then those passing
# NOTE [Still pictures keep a readable size]
# JupyterLab shows an image/svg+xml or image/png output as an <img> in an output area that
# scrolls sideways (``.jp-OutputArea-output {overflow: auto}``): the SVG's at the size the SVG
# states, the PNG's at its own size but shrunk to the output's width (``max-width: 100%``)
# unless the output's metadata marks it ``unconfined``. A still picture's labels are drawn at
# 11 px, the smallest size that reads well, so no picture is scaled down to fit the output (a
# 1,561 px picture fitted so had 6.8 px labels in a 1,400 px window, 3.3 px at 900 px): the SVG
# keeps its size in px, and the PNG goes out with STILL_METADATA, unconfined (a cell's
# ``--static`` pictures, and a widget's still picture: StillWidget in _widget.py). A picture
# wider than the output scrolls sideways to its right edge; a narrower one shows at its size.
STILL_METADATA = {"image/png": {"unconfined": True}}


def _window(snapshot, lay, width, height):
    """``(x0, y0)``: the top-left corner of the ``width`` x ``height`` part of the drawing
    that a still picture shows (NOTE [Still pictures are overviews])."""
    if lay["width"] <= width and lay["height"] <= height:
        return 0.0, 0.0
    top = min(lay["nodes"], key=lambda b: (b["y"], b["x"]), default=None)
    cx = top["x"] + top["w"] / 2 if top is not None else lay["width"] / 2
    x0 = min(max(0.0, cx - width / 2), max(0.0, lay["width"] - width))
    return round(x0, 1), 0.0


def _meets(x, y, w, h, x0, y0, x1, y1):
    return x < x1 and x + w > x0 and y < y1 and y + h > y0


def _in_window(lay, x0, y0, x1, y1):
    """The boxes, edges and group frames of ``lay`` that meet the window, and a note on what
    the rest holds ("" when nothing is left out)."""
    boxes = [b for b in lay["nodes"] if _meets(b["x"], b["y"], b["w"], b["h"], x0, y0, x1, y1)]
    groups = [g for g in lay["groups"] if _meets(g["x"], g["y"], g["w"], g["h"], x0, y0, x1, y1)]
    shown = {b["id"] for b in boxes}
    ends, passing = [], []  # edges with a box drawn at an end; edges only passing through
    pieces = {}  # edge -> (first, last) of its pieces that meet the window
    for k, e in enumerate(lay["edges"]):
        p = e["points"]
        first = last = None
        for i in range(len(p) // 2 - 1):  # (each piece of the drawn edge stays in its box)
            left, right = min(p[2 * i], p[2 * i + 2]), max(p[2 * i], p[2 * i + 2])
            top, bottom = min(p[2 * i + 1], p[2 * i + 3]), max(p[2 * i + 1], p[2 * i + 3])
            if _meets(left, top, right - left, bottom - top, x0, y0, x1, y1):
                first = i if first is None else first
                last = i
        if first is None:
            continue
        pieces[k] = first, last
        (ends if e["from"] in shown or e["to"] in shown else passing).append(k)
    keep = sorted(ends[:STILL_EDGES] + passing[: max(0, STILL_EDGES - len(ends))])
    edges = []
    for k in keep:
        e = lay["edges"][k]
        first, last = pieces[k]
        first -= first % 2  # (curves and straight pieces alternate: see edge_path)
        if first or last < len(e["points"]) // 2 - 2:  # only the pieces in the window
            e = {**e, "points": e["points"][2 * first : 2 * last + 4]}
        if e.get("label") and not (x0 - 200 < e["lx"] < x1 and y0 < e["ly"] < y1 + 10):
            e = {**e, "label": None}  # its label is outside
        edges.append(e)
    return boxes, edges, groups, len(ends) + len(passing) - len(keep)


def _left_out(snapshot, lay, boxes, edges, width, height, capped=0):
    """What a windowed still picture leaves out, in words."""
    shown = {b["id"] for b in boxes}
    nodes = {n["id"]: n for n in snapshot["nodes"]}
    out = [b for b in lay["nodes"] if b["id"] not in shown]
    named = []
    for b in out:
        n = nodes.get(b["ref"]) if b["kind"] == "node" else None
        if n is not None and n["kind"] == "leaf" and n["label"] != n["name"]:
            named.append(n["label"])
    missing = len(lay["edges"]) - len(edges)
    note = (
        f"not drawn here: {len(out):,} of {len(lay['nodes']):,} boxes and {missing:,} of "
        f"{len(lay['edges']):,} edges, outside this {width:,.0f} x {height:,.0f} px view of "
        f"a {lay['width']:,.0f} x {lay['height']:,.0f} px drawing"
    )
    if capped:
        note += f" ({capped:,} of them crossing it, past the {STILL_EDGES:,} edges it draws)"
    if named:
        more = f" and {len(named) - 4:,} more" if len(named) > 4 else ""
        note += f"; leaves among them: {', '.join(named[:4])}{more}"
    return note + "; the live widget pans to them"


def graph_svg(
    snapshot, lay=None, *, title=None, marks=None, highlight=None, footer=(), overlay=None
):
    """The graph of ``snapshot`` as an SVG string, at most STILL_W x STILL_H px (NOTE [Still
    pictures are overviews]).

    ``lay``: a layout (computed with no group collapsed when omitted); ``marks``:
    ``{snapshot node id: short text}`` drawn in a corner badge (the stepper's execution order);
    ``highlight``: a snapshot node id drawn with a thick border; ``footer``: lines of text
    ``(text, bold)`` below the graph (the stepper's state); ``overlay``: an
    ``overlays.Overlay`` whose fills, borders and badges replace the boxes' own.
    """
    if lay is None:
        lay = _layout(snapshot)
    nodes = {n["id"]: n for n in snapshot["nodes"]}
    failure = snapshot.get("failure")
    roots = set() if failure else set(snapshot.get("roots", ()))  # NOTE [Failed forward]
    if failure:
        # no line of the cell's code raised: the option's expression did (``--backward los``)
        failed = (
            f"The forward failed at line {failure['line']}: {failure['source']}"
            if failure["line"]
            else "The forward ran; then the cell failed:"
        )
        footer = [(failed, True), (failure["error"] or "", False), *footer]
    width = min(lay["width"], STILL_W)
    if title:  # 12px monospace: the title fits
        width = min(STILL_W, max(width, round(len(title) * 7.3 + 20)))
    if footer:  # wrapped to the drawing's width (at least 64 characters)
        chars = max(64, int((width - 20) / FOOTER_CHAR))
        footer = [
            (line, bold)
            for text, bold in footer
            for line in textwrap.wrap(text, chars, subsequent_indent="    ") or [""]
        ]
        width = max(width, max(round(len(text) * FOOTER_CHAR + 20) for text, _ in footer))
        width = min(width, STILL_W)
    below = FOOTER_LINE * len(footer) + 8 if footer else 0
    top = 22 if title else 0
    boxes, edges, groups = lay["nodes"], lay["edges"], lay["groups"]
    x0 = y0 = 0.0
    shown_h = lay["height"]
    notes = []
    if lay["width"] > width or top + lay["height"] + below > STILL_H:
        # a window on the drawing, with lines under the title saying what it leaves out
        chars = max(64, int((width - 20) / FOOTER_CHAR))
        width = min(STILL_W, max(width, round(chars * FOOTER_CHAR + 20)))
        head = top
        top += FOOTER_LINE * 3 + 4  # (what the note takes at most, so the window is known)
        shown_h = min(lay["height"], STILL_H - top - below)
        x0, y0 = _window(snapshot, lay, width, shown_h)
        boxes, edges, groups, capped = _in_window(lay, x0, y0, x0 + width, y0 + shown_h)
        note = _left_out(snapshot, lay, boxes, edges, width, shown_h, capped)
        notes = textwrap.wrap(note, chars)[:3]
    height = top + shown_h + below
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_f(width)}" '
        f'height="{_f(height)}" viewBox="0 0 {_f(width)} {_f(height)}" '
        f'font-family="{FONT}" font-size="11">',
        '<defs><marker id="nbg-arrow" viewBox="0 0 8 8" refX="7" refY="4" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L8,4 L0,8 z" fill="#8a8a8a"/></marker></defs>',
        f'<rect x="0" y="0" width="{_f(width)}" height="{_f(height)}" fill="#ffffff"/>',
    ]
    if title:
        parts.append(f'<text x="10" y="15" font-size="12" fill="#333333">{_t(title)}</text>')
    for k, text in enumerate(notes):
        y = head + FOOTER_LINE * (k + 1) - 2
        parts.append(f'<text x="10" y="{_f(y)}" fill="#8a5d10">{_t(text)}</text>')
    for k, (text, bold) in enumerate(footer):
        y = top + shown_h + FOOTER_LINE * (k + 1)
        weight = ' font-weight="bold"' if bold else ""
        parts.append(f'<text x="10" y="{_f(y)}"{weight} fill="#222222">{_t(text)}</text>')
    windowed = bool(notes)
    if windowed:  # a nested picture: what lies outside the window is clipped
        parts.append(
            f'<svg x="0" y="{top}" width="{_f(width)}" height="{_f(shown_h)}" '
            f'viewBox="{_f(x0)} {_f(y0)} {_f(width)} {_f(shown_h)}">'
        )
    else:
        parts.append(f'<g transform="translate(0,{top})">')
    if overlay is not None:
        marks = {**overlay.marks, **(marks or {})}
    _draw(parts, nodes, roots, failure, boxes, edges, groups, marks, highlight, overlay)
    parts.append("</svg></svg>" if windowed else "</g></svg>")
    return "\n".join(parts)


def _draw(parts, nodes, roots, failure, boxes, edges, groups, marks, highlight, overlay=None):
    """The group frames, edges (with their labels) and boxes of a picture, as SVG elements."""
    for g in groups:
        parts.append(
            f'<rect x="{_f(g["x"])}" y="{_f(g["y"])}" width="{_f(g["w"])}" height="{_f(g["h"])}" '
            'rx="8" fill="#fbfaf6" fill-opacity="0.6" stroke="#c98a1b" stroke-dasharray="5 3"/>'
        )
        parts.append(
            f'<text x="{_f(g["x"] + 8)}" y="{_f(g["y"] + 13)}" font-size="10" '
            f'fill="#8a5d10">{_t(g["label"])}</text>'
        )
    for e in edges:
        p = e["points"]
        parts.append(
            f'<path d="{edge_path(p)}" fill="none" stroke="#8a8a8a" stroke-width="1.2" '
            'marker-end="url(#nbg-arrow)"/>'
        )
        label = e.get("label")
        if label:  # the gradient norm, or the norms of parallel edges (layout.grad_label)
            # where the layout put it, as the widget does (NOTE [Edge labels] in layout.py)
            parts.append(
                f'<text x="{_f(e["lx"])}" y="{_f(e["ly"])}" font-size="9" fill="#1f6f3a" '
                'stroke="#ffffff" stroke-width="3" paint-order="stroke">'
                f"{_t(label)}</text>"
            )
    for b in boxes:
        if b["kind"] in ("group", "series"):
            kind = b["kind"]
            hooks = 0
        else:
            n = nodes[b["ref"]]
            kind = n["kind"]
            if kind == "node" and n["id"] in roots:
                kind = "root"
            hooks = len(n["hooks"])
        fill, stroke = STYLE.get(kind, STYLE["node"])
        width = "3" if highlight is not None and b["ref"] == highlight else "1.3"
        if failure and failure["line"] and b["kind"] == "node":
            if nodes[b["ref"]].get("line") == failure["line"]:  # made on the line that raised
                stroke, width = "#b00020", "2.5"
        dash = ' stroke-dasharray="4 3"' if kind in ("external", "group") else ""
        if overlay is not None:  # See NOTE [Overlay scales] in overlays.py
            fill = overlay.fills.get(b["ref"], fill)
            if b["ref"] in overlay.strokes:
                stroke, width, pattern = overlay.strokes[b["ref"]]
                dash = f' stroke-dasharray="{pattern}"'
        if kind == "series":  # a stack: the repeats behind the first
            for k in (2, 1):
                parts.append(
                    f'<rect x="{_f(b["x"] + 3 * k)}" y="{_f(b["y"] + 3 * k)}" '
                    f'width="{_f(b["w"])}" height="{_f(b["h"])}" rx="5" fill="{fill}" '
                    f'stroke="{stroke}" stroke-width="1"/>'
                )
        parts.append(
            f'<rect x="{_f(b["x"])}" y="{_f(b["y"])}" width="{_f(b["w"])}" height="{_f(b["h"])}" '
            f'rx="5" fill="{fill}" stroke="{stroke}" stroke-width="{width}"{dash}/>'
        )
        cx = b["x"] + b["w"] / 2
        parts.append(
            f'<text x="{_f(cx)}" y="{_f(b["y"] + 15)}" text-anchor="middle" '
            f'fill="#222222">{_t(b["label"])}</text>'
        )
        if b["sub"]:
            parts.append(
                f'<text x="{_f(cx)}" y="{_f(b["y"] + 29)}" text-anchor="middle" '
                f'font-size="9.5" fill="#666666">{_t(b["sub"])}</text>'
            )
        if hooks:
            hx, hy = b["x"] + b["w"] - 2, b["y"] + 2
            parts.append(
                f'<circle cx="{_f(hx)}" cy="{_f(hy)}" r="7" fill="#e07b00"/>'
                f'<text x="{_f(hx)}" y="{_f(hy + 3.5)}" text-anchor="middle" '
                f'font-size="9" fill="#ffffff">{hooks}</text>'
            )
        if marks and b["ref"] in marks:
            mx, my = b["x"] + 2, b["y"] + 2
            parts.append(
                f'<circle cx="{_f(mx)}" cy="{_f(my)}" r="8" fill="#3b5ba5"/>'
                f'<text x="{_f(mx)}" y="{_f(my + 3.5)}" text-anchor="middle" '
                f'font-size="9" fill="#ffffff">{_t(marks[b["ref"]])}</text>'
            )


def snapshot_svg(snapshot, collapsed=None, lay=None, overlay=None):
    """The still form of a GraphView: graph, gradient norms on the edges, a one-line title
    (``lay``: the layout for ``collapsed``, when already computed; ``overlay``: see
    ``graph_svg``)."""
    if collapsed is None:
        collapsed = default_collapsed(snapshot)
    if lay is None or lay.get("collapsed") != sorted(collapsed, key=_group_number):
        lay = _layout(snapshot, collapsed)
    n, e = len(snapshot["nodes"]), len(snapshot["edges"])
    title = f"grad_fn graph: {n} nodes, {e} edges"
    if snapshot.get("pass") is not None:
        title += f"; gradients of backward pass {snapshot['pass']}"
    if snapshot.get("truncated"):
        title += f"; {cut_note(snapshot)}"
    return graph_svg(snapshot, lay, title=title, overlay=overlay)


def _group_number(gid):
    return int(gid[1:]) if gid[1:].isdigit() else 0


def trace_svg(trace, index=None, lay=None, position=None):
    """The still form of a BackwardStepper: the graph with each node's place in the order it
    ran, and the state at a stepper ``position`` (0: the start, the default; ``k``: step
    ``k - 1`` running, highlighted; ``index``: the same as position ``index + 1``): where the
    pass is, the ready queue of each device, the nodes still waiting."""
    graph = trace["graph"]
    marks = {}
    for s in trace["steps"]:
        marks.setdefault(s["node"], str(s["index"] + 1))
    if position is None:
        position = index + 1 if index is not None else 0
    state = trace_state(trace, position)
    n = len(trace["steps"])
    title = f"backward pass: {n} steps"
    if graph.get("truncated"):
        title += f"; graph {cut_note(graph)}"
    if trace.get("error"):
        title += f" (error: {trace['error'][:60]})"
    if not lay:
        lay = _layout(graph, default_collapsed(graph))
    return graph_svg(
        graph,
        lay,
        title=title,
        marks=marks,
        highlight=state["running"],
        footer=_state_lines(graph, state, trace.get("error")),
    )


def _state_lines(graph, state, error):
    """The stepper's state as lines of text: position, running node, ready queues, waiting."""
    labels = {node["id"]: node["label"] for node in graph["nodes"]}

    def name(i):
        return f"{labels.get(i, i)} ({i})"

    def names(ids, limit=8):
        shown = [name(i) for i in ids[:limit]]
        if len(ids) > limit:
            shown.append(f"and {len(ids) - limit} more")
        return ", ".join(shown) if shown else "empty"

    pos, n = state["position"], state["steps"]
    if pos == 0:
        where = f"at the start: {n} steps to run"
    elif pos > n:
        where = f"at the end: {n} nodes ran" + (f" (error: {error[:60]})" if error else "")
    else:
        where = f"step {pos} / {n}: running {name(state['running'])} on {state['device']}"
    lines = [(where, True)]
    acc = state.get("accumulated")
    if acc:
        lines.append(
            (
                f"  accumulated into .grad: |grad| {_norms(acc['grad'])}, "
                f"|.grad| {_norms(acc['before'])} -> {_norms(acc['after'])}",
                False,
            )
        )
    for device, ids in sorted(state["ready"].items()):
        lines.append((f"ready queue ({device}): {names(ids)}", False))
    waiting = [(i, c) for i, c in state["dependencies"].items() if c > 0]
    if waiting:
        shown = ", ".join(f"{name(i)}: {c}" for i, c in waiting[:6])
        more = f" and {len(waiting) - 6} more" if len(waiting) > 6 else ""
        lines.append((f"waiting (dependencies left): {shown}{more}", False))
    return lines


def hooks_svg(target_label, hooks, fired=()):
    """The still form of a HookEditor: its target and a table of its hooks, then the hooks
    that fired in the last run; with no target (``target_label`` None), what to do."""
    if target_label is None and not hooks and not fired:
        parts, top = _header(640, 50, "Hook editor: no target")
        parts.append(
            f'<text x="10" y="{_f(top + 20)}" fill="#555555">select a tensor, node or module '
            "(click a node in the graph, or HookEditor(target))</text>"
        )
        parts.append("</svg>")
        return "\n".join(parts)
    rows = [("kind", "name", "state")]
    for h in hooks:
        state = "enabled" if h["enabled"] else "disabled"
        if h.get("error"):
            state += ", error"
        rows.append((h["kind"], h["name"], state))
    fired_rows = [(c["kind"], c["name"], _fired_text(c)) for c in fired]
    width = 640
    line = 16
    height = 34 + line * (len(rows) + (len(fired_rows) + 1 if fired_rows else 0)) + 8
    parts, top = _header(width, height, f"hooks on {target_label}")
    parts.append(f'<g transform="translate(0,{top})">')
    y = 20.0
    cols = (10, 190, 470)
    for i, row in enumerate(rows):
        weight = ' font-weight="bold"' if i == 0 else ""
        for x, text in zip(cols, row):
            parts.append(
                f'<text x="{x}" y="{_f(y)}"{weight} fill="#222222">{_t(str(text)[:40])}</text>'
            )
        y += line
    if len(rows) == 1:
        parts.append(f'<text x="10" y="{_f(y)}" fill="#888888">(no hooks)</text>')
        y += line
    if fired_rows:
        parts.append(
            f'<text x="10" y="{_f(y)}" font-weight="bold" fill="#222222">'
            "fired in the last backward</text>"
        )
        y += line
        for row in fired_rows:
            for x, text in zip(cols, row):
                parts.append(
                    f'<text x="{x}" y="{_f(y)}" fill="#1f6f3a">{_t(str(text)[:48])}</text>'
                )
            y += line
    parts.append("</g></svg>")
    return "\n".join(parts)


def _norms(g):
    if g is None:
        return "None"
    if isinstance(g, list):
        return "(" + ", ".join(_norms(x) for x in g) + ")"
    return _num(g.get("norm")) if "norm" in g else g.get("repr", "?")


def _fired_text(call):
    return f"|g| {_norms(call['before'])} -> {_norms(call['after'])}"


NOTE_HEIGHT = 22


def with_note(svg: str, text: str) -> str:
    """``svg`` (a picture drawn here) with ``text`` in a band on top, the drawing moved down:
    a widget's PNG says that it stands for a live widget (``StillWidget._repr_mimebundle_``)."""
    head, _, body = svg.partition("\n")
    size = re.search(r'width="([\d.]+)" height="([\d.]+)" viewBox="[^"]*"', head)
    width = max(float(size[1]), round(len(text) * FOOTER_CHAR + 20))
    height = float(size[2]) + NOTE_HEIGHT
    head = (
        f'{head[: size.start()]}width="{_f(width)}" height="{_f(height)}" '
        f'viewBox="0 0 {_f(width)} {_f(height)}"{head[size.end() :]}'
    )
    return "\n".join(
        [
            head,
            f'<rect x="0" y="0" width="{_f(width)}" height="{NOTE_HEIGHT}" fill="#fff8e1"/>',
            f'<text x="10" y="15" fill="#6b4e00">{_t(text)}</text>',
            f'<g transform="translate(0,{NOTE_HEIGHT})">',
            body.rsplit("</svg>", 1)[0],
            "</g></svg>",
        ]
    )
