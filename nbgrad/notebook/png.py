"""The still pictures as PNG, for viewers that do not show SVG (an untrusted notebook).

JupyterLab, Notebook 7 and VS Code render an output's ``image/svg+xml`` only in a trusted
notebook, and a notebook run on another machine (a tutorial just cloned) is untrusted: its
pictures would show as their ``text/plain``. ``image/png`` is shown either way, so each still
picture also carries a PNG (viewers that may show SVG still prefer the SVG).

NOTE [PNG without a system binary]
The PNG is painted with Pillow (a wheel, no system library or binary) from the SVG that
``svg.py`` writes: only the few elements and attributes that module uses (``rect``, ``text``,
``path`` with M/L/C commands and an arrowhead marker, ``circle``, ``g`` translations, a nested
``svg`` as the window on a big drawing) are understood, so the two pictures are one drawing.
Text uses Pillow's bundled font, which is narrower than the SVG's monospace, so labels stay
inside their boxes. Dashes are drawn solid.
"""

from __future__ import annotations

import base64
import functools
import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

__all__ = ["svg_to_png", "png_b64"]

_NS = "{http://www.w3.org/2000/svg}"
_FONTS: dict = {}
# characters Pillow's bundled font lacks, as what it can draw
_PLAIN = str.maketrans({"×": "x", "→": "->", "…": "...", "‖": "|", "−": "-", "▾": "v"})


def _font(size, bold=False):
    key = (round(size * 2) / 2, bold)
    if key not in _FONTS:
        _FONTS[key] = ImageFont.load_default(size=key[0])
    return _FONTS[key]


@functools.lru_cache(maxsize=4096)
def _text(text, size, bold, fill, halo, anchor):
    """A text painted once, as an RGBA sprite, and the offset of its corner from the anchor:
    a graph's labels repeat (op names, shapes), and pasting costs a tenth of painting."""
    font = _font(size, bold)
    stroke = 2 if halo else 0
    left, top, right, bottom = font.getbbox(text, anchor=anchor, stroke_width=stroke)
    sprite = Image.new("RGBA", (max(1, right - left), max(1, bottom - top)), (*fill, 0))
    ImageDraw.Draw(sprite).text(
        (-left, -top),
        text,
        fill=fill,
        font=font,
        anchor=anchor,
        stroke_width=stroke,
        stroke_fill=halo,
    )
    return sprite, left, top


# NOTE [Numbers put together from their characters]
# A gradient's norm on an edge differs at every run, so its sprite is seldom painted twice,
# and a text with a halo costs about 0.2 ms to paint (a training cell's picture has six: a
# third of its painting). A text of digits alone is pasted character by character from
# sprites painted once a kernel, every halo first and then every ink over them, each at the
# pen position the font gives it (this font has no kerning between these characters), for a
# text that starts at its anchor (as a norm on an edge does): the same picture, but for a few
# pixels a picture that a rounding maps to a neighbouring colour, for a fifth of the time.
_NUMBER = frozenset("0123456789.,-+e%")


@functools.lru_cache(maxsize=512)
def _glyph(char, size, bold, fill, halo):
    """One character's halo and ink as sprites (``_text``'s), and its advance (NOTE [Numbers
    put together from their characters])."""
    halo_sprite = _text(char, size, bold, halo, halo, "ls")
    return halo_sprite, _text(char, size, bold, fill, None, "ls"), _font(size, bold).getlength(char)


def _number(canvas, text, x, y, key):
    """Paste ``text`` (digits) onto ``canvas`` from its characters' sprites, the pen starting
    at ``x, y``."""
    glyphs = [_glyph(char, *key) for char in text]
    pen = 0.0
    places = []
    for g in glyphs:
        places.append(x + round(pen))
        pen += g[2]
    for layer in (0, 1):  # the halos, then the inks over them
        for g, px in zip(glyphs, places):
            sprite, left, top = g[layer]
            canvas.paste(sprite, (px + left, y + top), sprite)


@functools.lru_cache(maxsize=1024)
def _colour(value, opacity=1.0):
    """An SVG colour (``#rgb``, ``#rrggbb``, ``none``) as RGB, ``opacity`` of it over white."""
    if not value or value == "none":
        return None
    value = value.lstrip("#")
    if len(value) == 3:
        value = "".join(c * 2 for c in value)
    r, g, b = (int(value[i : i + 2], 16) for i in (0, 2, 4))
    if opacity < 1:  # over white (every picture has a white background)
        r, g, b = (round(255 - (255 - c) * opacity) for c in (r, g, b))
    return (r, g, b)


def _path_points(d):
    """The polyline through SVG path data made of M, L and C commands (curves flattened)."""
    tokens = re.findall(r"[MLCZz]|-?\d+(?:\.\d+)?", d)
    points, i, cmd = [], 0, None
    while i < len(tokens):
        if tokens[i] in "MLCZz":
            cmd = tokens[i]
            i += 1
            if cmd in "Zz":
                if points:
                    points.append(points[0])
                continue
        if cmd in ("M", "L"):
            points.append((float(tokens[i]), float(tokens[i + 1])))
            i += 2
        elif cmd == "C":
            x1, y1, x2, y2, x3, y3 = map(float, tokens[i : i + 6])
            x0, y0 = points[-1]
            points += [
                (a * x0 + b * x1 + c * x2 + d * x3, a * y0 + b * y1 + c * y2 + d * y3)
                for a, b, c, d in _BEZIER
            ]
            i += 6
        else:
            i += 1
    return points


# a cubic curve's weights at t = k / 12, k = 1..12: u**3, 3 u**2 t, 3 u t**2, t**3 (each
# product as the curve's formula groups it, so the points are those it gave term by term)
_BEZIER = [
    ((1 - k / 12) ** 3, 3 * (1 - k / 12) * (1 - k / 12) * (k / 12))
    + (3 * (1 - k / 12) * (k / 12) * (k / 12), (k / 12) ** 3)
    for k in range(1, 13)
]


def png_b64(svg: str) -> str:
    """``svg_to_png`` as the base64 text a mime bundle carries."""
    if len(svg) <= _SMALL:
        return _small_png_b64(svg)
    return base64.b64encode(svg_to_png(svg)).decode("ascii")


# NOTE [A small picture painted once]
# Some stills are the same at every run of a cell: the hook editor's with no target, shown
# under every %%autograd cell, the same few lines each time. The last few small pictures are
# kept by their SVG text (the picture is a function of it alone), so such a still is painted
# once a kernel rather than once a cell (0.5-0.8 ms of the training cell's drawing); a
# graph's, which changes with its gradients' norms, is painted anew. Large pictures are never
# kept: they would hold megabytes for a picture seldom drawn twice.
_SMALL = 16_384  # characters of SVG


@functools.lru_cache(maxsize=8)
def _small_png_b64(svg: str) -> str:
    return base64.b64encode(svg_to_png(svg)).decode("ascii")


def svg_to_png(svg: str, scale: float = 1.0) -> bytes:
    """Paint an SVG written by ``svg.py`` into PNG bytes (NOTE [PNG without a system binary])."""
    root = ET.fromstring(svg)
    width, height = float(root.get("width")), float(root.get("height"))
    image = Image.new("RGB", (max(1, round(width * scale)), max(1, round(height * scale))), "white")
    draw = ImageDraw.Draw(image)
    base_size = float(root.get("font-size", "11"))

    def xy(x, y, dx, dy):
        return ((x + dx) * scale, (y + dy) * scale)

    def paint(canvas, draw, el, dx, dy):
        tag = el.tag.replace(_NS, "")
        get = el.get
        if tag in ("defs", "marker", "title"):
            return
        if tag == "svg":  # a window on a bigger drawing (NOTE [Still pictures are overviews])
            vx, vy, vw, vh = map(float, get("viewBox").split())
            window = Image.new(
                "RGB", (max(1, round(vw * scale)), max(1, round(vh * scale))), "white"
            )
            inner = ImageDraw.Draw(window)
            for child in el:
                paint(window, inner, child, -vx, -vy)
            image.paste(
                window,
                (
                    round((float(get("x", 0)) + dx) * scale),
                    round((float(get("y", 0)) + dy) * scale),
                ),
            )
            return
        if tag == "g":
            m = re.match(r"translate\(([-\d.]+)[, ]+([-\d.]+)\)", get("transform", ""))
            if m:
                dx, dy = dx + float(m.group(1)), dy + float(m.group(2))
            for child in el:
                paint(canvas, draw, child, dx, dy)
            return
        if tag == "rect":
            x, y = float(get("x", 0)), float(get("y", 0))
            w, h = float(get("width")), float(get("height"))
            fill = _colour(get("fill"), float(get("fill-opacity", 1)))
            outline = _colour(get("stroke"))
            stroke = max(1, round(float(get("stroke-width", 1)) * scale)) if outline else 0
            box = [*xy(x, y, dx, dy), *xy(x + w, y + h, dx, dy)]
            rx = float(get("rx", 0)) * scale
            draw.rounded_rectangle(box, radius=rx, fill=fill, outline=outline, width=stroke)
        elif tag == "circle":
            cx, cy, r = float(get("cx")), float(get("cy")), float(get("r"))
            draw.ellipse(
                [*xy(cx - r, cy - r, dx, dy), *xy(cx + r, cy + r, dx, dy)],
                fill=_colour(get("fill")),
            )
        elif tag == "path":
            points = [xy(px, py, dx, dy) for px, py in _path_points(get("d", ""))]
            colour = _colour(get("stroke")) or (120, 120, 120)
            if len(points) >= 2:
                width = max(1, round(float(get("stroke-width", 1))))
                for run in _clipped(points, canvas.size):
                    draw.line(run, fill=colour, width=width)
                if get("marker-end"):
                    _arrowhead(draw, points, colour, scale)
        elif tag == "text":
            text = "".join(el.itertext()).translate(_PLAIN)
            size = float(get("font-size", base_size)) * scale
            x, y = xy(float(get("x", 0)), float(get("y", 0)), dx, dy)
            anchor = "ms" if get("text-anchor") == "middle" else "ls"
            halo = _colour(get("stroke"))
            fill = _colour(get("fill")) or (34, 34, 34)
            bold = get("font-weight") == "bold"
            if halo and anchor == "ls" and _NUMBER.issuperset(text):
                _number(canvas, text, round(x), round(y), (size, bold, fill, halo))
            else:
                sprite, left, top = _text(text, size, bold, fill, halo, anchor)
                canvas.paste(sprite, (round(x) + left, round(y) + top), sprite)
        for child in el:
            paint(canvas, draw, child, dx, dy)

    for child in root:
        paint(image, draw, child, 0.0, 0.0)
    out = io.BytesIO()
    # NOTE [A PNG compressed lightly]
    # zlib's fastest level: the PNG is painted into every output beside its SVG, while the
    # cell's drawing is waited for, and at the default level compressing was a large share
    # of a picture's time, for some fewer bytes of a picture of kilobytes
    # (``tests/benchmarks/notebook_cells.py`` prints the saved sizes)
    image.quantize(palette=_palette(), dither=Image.Dither.NONE).save(out, "PNG", compress_level=1)
    return out.getvalue()


# NOTE [One palette]
# A PNG of 256 colours or fewer is a third the bytes of RGB and cheaper to compress. The
# picture's colours are known before it is painted: those svg.py writes, and the blends that
# antialiasing makes of each ink with each background. So the palette is made once, from
# those (reduced to 256 by median cut, over a few hundred colours rather than the picture's
# millions of pixels), and each picture is mapped to it with no dithering: deterministic,
# and 2-5x faster than computing a palette for each picture.
_INKS = re.compile(r'(?:fill|stroke)="(#[0-9a-f]{6})"')


@functools.cache
def _palette():
    """The palette every picture is mapped to (NOTE [One palette])."""
    from . import svg

    source = Path(svg.__file__).read_text()
    inks = sorted({_colour(c) for c in _INKS.findall(source)} - {_colour("#fbfaf6")})
    inks += sorted({_colour(c) for pair in svg.STYLE.values() for c in pair})
    backgrounds = [(255, 255, 255)]  # (a group's fill, 253, 252, 250, is painted as white)
    backgrounds += sorted({_colour(fill) for fill, _ in svg.STYLE.values()})
    exact = sorted(set(inks) | set(backgrounds))
    blends = set()
    for ink in inks:
        for bg in backgrounds:
            for a in (0.2, 0.4, 0.6, 0.8):
                blends.add(tuple(round(b + (i - b) * a) for i, b in zip(ink, bg)))
    # Pillow maps a pixel to a palette entry through a coarse cache, which may take a blend
    # a step away for an exact ink (white as 253, 253, 252): blends keep their distance
    blends = sorted(b for b in blends if _far(b, exact))
    strip = Image.new("RGB", (len(blends), 1))
    strip.putdata(blends)
    reduced = strip.quantize(colors=256 - len(exact), method=Image.Quantize.MEDIANCUT)
    reduced = reduced.getpalette()[: 3 * (256 - len(exact))]
    reduced = [tuple(reduced[i : i + 3]) for i in range(0, len(reduced), 3)]
    colours = [c for rgb in exact + [b for b in reduced if _far(b, exact)] for c in rgb]
    palette = Image.new("P", (1, 1))
    palette.putpalette(colours + [0] * (768 - len(colours)))
    return palette


def _clipped(points, size, margin=8.0):
    """The runs of a polyline inside a canvas of ``size`` (and a margin): Pillow walks every
    pixel of a line, inside the canvas or not, and an edge crossing a window on a drawing
    400,000 px wide is mostly outside it (Liang-Barsky on each piece)."""
    left, top = -margin, -margin
    right, bottom = size[0] + margin, size[1] + margin
    xs, ys = zip(*points)
    if min(xs) >= left and max(xs) <= right and min(ys) >= top and max(ys) <= bottom:
        # all inside (most edges of a picture that fits): the one run the loop below makes
        # of it, each end ``x0 + 1.0 * dx`` as there
        ends = [(x0 + (x1 - x0), y0 + (y1 - y0)) for (x0, y0), (x1, y1) in zip(points, points[1:])]
        return [[points[0], *ends]]
    runs, run = [], []
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        dx, dy = x1 - x0, y1 - y0
        t0, t1 = 0.0, 1.0
        for p, q in ((-dx, x0 - left), (dx, right - x0), (-dy, y0 - top), (dy, bottom - y0)):
            if p == 0:
                if q < 0:
                    t0, t1 = 1.0, 0.0
            elif p < 0:
                t0 = max(t0, q / p)
            else:
                t1 = min(t1, q / p)
        if t0 > t1:
            if run:
                runs.append(run)
                run = []
            continue
        a = (x0 + t0 * dx, y0 + t0 * dy)
        b = (x0 + t1 * dx, y0 + t1 * dy)
        if run and t0 == 0.0:
            run.append(b)
        else:
            if run:
                runs.append(run)
            run = [a, b]
        if t1 < 1.0:
            runs.append(run)
            run = []
    if run:
        runs.append(run)
    return runs


def _far(colour, others, distance=8):
    """Whether ``colour`` differs from each of ``others`` by more than ``distance`` in some
    channel."""
    return all(max(abs(a - b) for a, b in zip(colour, o)) > distance for o in others)


def _arrowhead(draw, points, colour, scale):
    """A small filled triangle at the end of a polyline, along its last segment."""
    (x0, y0), (x1, y1) = points[-2], points[-1]
    length = ((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5 or 1.0
    ux, uy = (x1 - x0) / length, (y1 - y0) / length
    size = 6 * scale
    bx, by = x1 - ux * size, y1 - uy * size
    draw.polygon(
        [
            (x1, y1),
            (bx - uy * size / 2, by + ux * size / 2),
            (bx + uy * size / 2, by - ux * size / 2),
        ],
        fill=colour,
    )
