"""Overlays: nodes coloured by a number (gradient norm, saved bytes, execution order, time
spent in backward) or by non-finite status, with a legend; what
``%%autograd --color norm|saved|nonfinite|order|time`` draws on the still pictures and the
graph widget's "Colour by" menu (``answers_view.marks``).

An :class:`Overlay` is computed from a snapshot alone (saved bytes come from
``answers_memory.saved_bytes``), so it is the same for nbgrad's graph and PyTorch's.

NOTE [Overlay scales]
Gradient norms, saved bytes and times span orders of magnitude, so they are coloured on a log scale
(log10 of the value, between the smallest and the largest positive value shown); the execution
order is linear. A node with no value (no gradient reached it, it saves nothing, it did not
run) keeps a plain white box, so that "nothing" never reads as "small". Colour is never the
only mark: a non-finite value (NaN, +Inf, -Inf) is drawn with a thick dashed dark-red border
and a "!" badge, in every overlay, and the legend names each swatch in words.

NOTE [Folded groups in an overlay]
A folded group's box is coloured by its members' aggregate: the largest norm, the bytes of
the distinct storages its nodes save (NOTE [A storage counted once]), the earliest step, the
time spent in all its nodes (the sum, which the time scale's top then reaches), and non-finite
when any member is. The legend lists each folded group's min / max / sum / mean.
"""

from __future__ import annotations

import math
import re
import textwrap
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

from .answers_memory import format_bytes, saved_bytes
from .answers_versions import explain
from .layout import default_collapsed
from .svg import FOOTER_CHAR, snapshot_svg

__all__ = [
    "KINDS",
    "Overlay",
    "overlay",
    "has_nonfinite",
    "node_values",
    "with_legend",
    "format_seconds",
    "overlay_svg",
    "version_overlay",
    "still_svg",
]

KINDS = ("norm", "saved", "nonfinite", "order", "time")
TITLES = {
    "norm": "colour: gradient norm (log scale)",
    "saved": "colour: bytes saved for backward (log scale)",
    "nonfinite": "colour: non-finite values (NaN, +Inf, -Inf)",
    "order": "colour: execution order in backward",
    "time": "colour: time spent in backward (log scale)",
    "version": "the backward failed: a saved tensor was changed in place",
}
RAMP = ("#eef5fc", "#c6dcf2", "#f7e3a1", "#f4b26c", "#e8735a")  # low -> high
NONE_FILL = "#ffffff"
BAD_FILL, BAD_STROKE = "#ffd6d6", "#8b0000"
FINITE_FILL = "#e9f5ea"
# as widgets/answers.js marks them (not the dark red of a failed line, NOTE [Failed forward])
SAVED_STROKE, BUMPED_STROKE = "#7b1fa2", "#e07b00"
LEGEND_LINE = 16


def has_nonfinite(node) -> bool:
    """Whether a snapshot node holds a NaN or an infinity: its ``nonfinite`` flag when the
    snapshot has one, else the gradients it received and, for a leaf, its ``.grad`` (norms
    and values are written ``"nan"``, ``"inf"``, ``"-inf"`` in a snapshot)."""
    flag = node.get("nonfinite")
    if flag is not None:
        return bool(flag)
    grads = list(node.get("grad") or ())
    tensor = node.get("tensor")
    if tensor and tensor.get("grad"):
        grads.append(tensor["grad"])
    for g in grads:
        if g is None or "norm" not in g:
            continue
        if isinstance(g["norm"], str) or any(isinstance(v, str) for v in g.get("values", ())):
            return True
    return False


def _norm(node):
    """The norm of what reached the node in the pass shown (of all its gradients together);
    for a leaf no pass reached, its ``.grad``."""
    grads = [g for g in node.get("grad") or () if g is not None]
    tensor = node.get("tensor")
    if not grads and tensor and tensor.get("grad"):
        grads = [tensor["grad"]]
    norms = [g["norm"] for g in grads if g and isinstance(g.get("norm"), (int, float))]
    return math.sqrt(sum(n * n for n in norms)) if norms else None


def node_values(snapshot, kind, saved=None) -> dict:
    """``{node id: number or None}`` for ``kind`` (``saved``: ``{node id: bytes}``, as
    ``SavedBytes.by_node()`` gives); for ``nonfinite``, 1 or 0."""
    out = {}
    for n in snapshot["nodes"]:
        if kind == "norm":
            out[n["id"]] = _norm(n)
        elif kind == "saved":
            out[n["id"]] = (saved or {}).get(n["id"])
        elif kind == "order":
            out[n["id"]] = n.get("order")
        elif kind == "time":  # seconds (NOTE [Time in backward])
            out[n["id"]] = n.get("time")
        elif kind == "nonfinite":
            out[n["id"]] = 1 if has_nonfinite(n) else 0
        else:
            raise ValueError(f"no overlay {kind!r}: choose one of {', '.join(KINDS)}")
    return out


def _mix(t):
    """The ramp's colour at ``t`` in [0, 1]."""
    t = min(1.0, max(0.0, t)) * (len(RAMP) - 1)
    k = min(int(t), len(RAMP) - 2)
    a, b = RAMP[k], RAMP[k + 1]
    f = t - k
    rgb = [round(int(a[i : i + 2], 16) * (1 - f) + int(b[i : i + 2], 16) * f) for i in (1, 3, 5)]
    return "#" + "".join(f"{c:02x}" for c in rgb)


def _fmt(kind, v) -> str:
    if v is None:
        return "-"
    if kind == "saved":
        return format_bytes(int(v))
    if kind == "order":
        return str(int(v)) if float(v).is_integer() else f"{v:.1f}"
    if kind == "time":
        return format_seconds(v)
    return f"{v:.3g}"


def format_seconds(v) -> str:
    """``0.00042`` -> "420 us", ``0.0123`` -> "12.3 ms", ``2.5`` -> "2.5 s"."""
    if v >= 1:
        return f"{v:.3g} s"
    if v >= 1e-3:
        return f"{v * 1e3:.3g} ms"
    return f"{v * 1e6:.3g} us"


@dataclass
class Overlay:
    """An overlay of a snapshot: ``fills`` and ``strokes`` (``(colour, width, dash)``) by box
    ref (a node id, or a group id for a folded group), ``marks`` (the "!" badges), ``values``
    by node id, ``groups``: ``{group id: {"min", "max", "sum", "mean", "count"}}``, the scale's
    ``low`` and ``high``, and the legend's ``title``."""

    kind: str
    title: str
    values: dict
    fills: dict = field(default_factory=dict)
    strokes: dict = field(default_factory=dict)
    marks: dict = field(default_factory=dict)
    groups: dict = field(default_factory=dict)
    folded: list = field(default_factory=list)
    low: float | None = None
    high: float | None = None
    notes: list = field(default_factory=list)  # lines of text under the swatches

    def legend(self) -> list:
        """``[(fill, text)]``, or ``(fill, text, stroke, dash)``: the swatches, in words."""
        if self.kind == "version":
            return [
                (NONE_FILL, "saved the tensor", SAVED_STROKE, ""),
                (NONE_FILL, "changed it in place", BUMPED_STROKE, "6 3"),
            ]
        if self.kind == "nonfinite":
            return [(FINITE_FILL, "all finite"), (BAD_FILL, "! holds NaN or Inf")]
        if self.low is None:
            return [(NONE_FILL, "no value")]
        mid = self._at(0.5)
        return [
            (RAMP[0], f"low {_fmt(self.kind, self.low)}"),
            (_mix(0.5), f"{_fmt(self.kind, mid)}"),
            (RAMP[-1], f"high {_fmt(self.kind, self.high)}"),
            (NONE_FILL, "no value"),
            (BAD_FILL, "! NaN or Inf"),
        ]

    def _log(self):
        return self.kind in ("norm", "saved", "time")

    def _at(self, t):
        if self._log():
            lo, hi = math.log10(self.low), math.log10(self.high)
            return 10 ** (lo + t * (hi - lo))
        return self.low + t * (self.high - self.low)

    def _t(self, v):
        if self.high == self.low:
            return 1.0
        if self._log():
            lo, hi = math.log10(self.low), math.log10(self.high)
            return (math.log10(v) - lo) / (hi - lo)
        return (v - self.low) / (self.high - self.low)

    def fill_of(self, v):
        if v is None or (self._log() and v <= 0) or self.low is None:
            return NONE_FILL
        return _mix(self._t(v))


def overlay(snapshot, kind, saved=None, collapsed=(), group_saved=None) -> Overlay:
    """The :class:`Overlay` of ``kind`` on ``snapshot``; ``collapsed``: the folded groups'
    ids; ``saved``/``group_saved``: bytes by node id and by module path (``saved`` only)."""
    values = node_values(snapshot, kind, saved)
    ov = Overlay(kind, TITLES[kind], values, folded=list(collapsed))
    shown = [v for v in values.values() if v is not None and (v > 0 or kind == "order")]
    if kind != "nonfinite" and shown:
        ov.low, ov.high = min(shown), max(shown)
    bad = {n["id"] for n in snapshot["nodes"] if has_nonfinite(n)}
    # groups: every member, at any depth (NOTE [Folded groups in an overlay])
    parent = {g["id"]: g["parent"] for g in snapshot["groups"]}
    paths = {g["id"]: g["path"] for g in snapshot["groups"]}
    members: dict = {}
    for n in snapshot["nodes"]:
        gid = n["group"]
        while gid is not None:
            members.setdefault(gid, []).append(n["id"])
            gid = parent.get(gid)
    if kind == "time" and ov.high is not None:  # a folded group's sum is on the scale too
        sums = [sum(values[i] or 0.0 for i in members.get(gid, ())) for gid in ov.folded]
        ov.high = max([ov.high, *sums])
    for nid, v in values.items():
        if kind == "nonfinite":
            ov.fills[nid] = BAD_FILL if v else FINITE_FILL
        else:
            ov.fills[nid] = ov.fill_of(v)
    for gid, ids in members.items():
        got = [values[i] for i in ids if values[i] is not None]
        if got:
            ov.groups[gid] = {
                "min": min(got),
                "max": max(got),
                "sum": sum(got),
                "mean": sum(got) / len(got),
                "count": len(got),
            }
        if any(i in bad for i in ids):
            bad.add(gid)
        if kind == "nonfinite":
            ov.fills[gid] = BAD_FILL if gid in bad else FINITE_FILL
        elif kind == "saved" and group_saved is not None:
            ov.fills[gid] = ov.fill_of(group_saved.get(paths[gid]))
        elif got:
            pick = min if kind == "order" else sum if kind == "time" else max
            ov.fills[gid] = ov.fill_of(pick(got))
        else:
            ov.fills[gid] = NONE_FILL
    for ref in bad:
        ov.strokes[ref] = (BAD_STROKE, "3", "6 3")
        ov.marks[ref] = "!"
    return ov


def with_legend(svg: str, ov: Overlay) -> str:
    """``svg`` (a picture drawn by ``svg.py``) with the overlay's legend in a band below it:
    the title, the swatches in words, and each folded group's min / max / sum / mean."""
    head, _, body = svg.partition("\n")
    size = re.search(r'width="([\d.]+)" height="([\d.]+)" viewBox="[^"]*"', head)
    width, height = float(size[1]), float(size[2])
    stats = [
        (gid, ov.groups[gid])
        for gid in ov.folded
        if gid in ov.groups and ov.kind in ("norm", "saved", "time")
    ][:6]
    chars = max(60, int((width - 20) / FOOTER_CHAR))  # the notes, wrapped to the picture
    stats += [(None, line) for note in ov.notes for line in textwrap.wrap(note, chars)]
    band = LEGEND_LINE * (2 + len(stats)) + 10
    parts = [
        f'<g class="nbg-legend" transform="translate(0,{height:g})">',
        f'<rect x="0" y="0" width="{width:g}" height="{band}" fill="#fafafa" stroke="#dddddd"/>',
        f'<text x="10" y="14" font-weight="bold" fill="#222222">{escape(ov.title)}</text>',
    ]
    x = 10.0
    for fill, text, *border in ov.legend():
        bold = text.startswith("!") or bool(border)
        stroke, dash = border or ((BAD_STROKE, "6 3") if bold else ("#888888", ""))
        dash = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(
            f'<rect x="{x:g}" y="{LEGEND_LINE + 4}" width="18" height="12" rx="2" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="{2 if bold else 1}"{dash}/>'
        )
        parts.append(
            f'<text x="{x + 24:g}" y="{LEGEND_LINE + 14}" fill="#222222">{escape(text)}</text>'
        )
        x += 24 + 7.3 * len(text) + 16
    for k, (gid, s) in enumerate(stats):
        line = (
            s
            if gid is None
            else (
                f"folded {gid}: min {_fmt(ov.kind, s['min'])}, max {_fmt(ov.kind, s['max'])}, "
                f"sum {_fmt(ov.kind, s['sum'])}, mean {_fmt(ov.kind, s['mean'])} "
                f"({s['count']} nodes)"
            )
        )
        y = LEGEND_LINE * (k + 2) + 16
        parts.append(f'<text x="10" y="{y}" fill="#444444">{escape(line)}</text>')
    parts.append("</g>")
    new_w = max(width, x + 10)
    new_h = height + band
    head = (
        f'{head[: size.start()]}width="{new_w:g}" height="{new_h:g}" '
        f'viewBox="0 0 {new_w:g} {new_h:g}"{head[size.end() :]}'
    )
    body = body.rsplit("</svg>", 1)
    return "\n".join([head, body[0], *parts, "</svg>" + body[1]])


def overlay_svg(recorder, snapshot, kind) -> str:
    """The still picture of ``snapshot`` (recorded by ``recorder``) coloured by ``kind``, with
    its legend: what ``%%autograd --static --color KIND`` shows."""
    collapsed = default_collapsed(snapshot)
    saved = group_saved = None
    if kind == "saved":
        got = saved_bytes(recorder)
        saved, group_saved = got.by_node(), got.groups
    ov = overlay(snapshot, kind, saved, collapsed=collapsed, group_saved=group_saved)
    return with_legend(snapshot_svg(snapshot, collapsed, overlay=ov), ov)


def version_overlay(snapshot, answer) -> Overlay:
    """The marks of a version error explained (``answers_versions.VersionError``): the node
    that saved the tensor and the nodes of the in-place ops that changed it, as the graph view
    marks them (``widgets/answers.js``), and the answer in words under the swatches."""
    ov = Overlay("version", TITLES["version"], {})
    if answer.node_id is not None:
        ov.strokes[answer.node_id] = (SAVED_STROKE, "3.5", "none")
    for nid in answer.ids:
        ov.strokes[nid] = (BUMPED_STROKE, "3.5", "7 3")
    ov.notes = [str(answer)]
    return ov


def still_svg(recorder, snapshot, color=None, version_error=None) -> str:
    """A session's still picture: marked with ``version_error`` (a version error, or its text)
    explained, when given; else coloured by ``color`` when given; else plain."""
    if version_error:
        ov = version_overlay(snapshot, explain(recorder, version_error))
        return with_legend(snapshot_svg(snapshot, overlay=ov), ov)
    return overlay_svg(recorder, snapshot, color) if color else snapshot_svg(snapshot)
