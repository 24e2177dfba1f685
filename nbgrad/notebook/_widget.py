"""What the three widget classes share: where their JS/CSS lives, the still SVG in the mime
bundle, a stable ``repr``, and message dispatch with errors kept in the widget.

The browser side of ``graph_view.py`` is ``widgets/graph_view.js`` (same stem) at the top of the
repository, after ``widgets/common.js`` (what the three share; see ``esm``); a wheel carries
``widgets/`` as data files under ``<prefix>/share/nbgrad/widgets`` (``[tool.setuptools.data-files]``
in pyproject.toml), which is where an installed nbgrad looks when it is not running from a
checkout.
"""

from __future__ import annotations

import json
import os
import site
import sys
import sysconfig
import traceback
import uuid
from pathlib import Path

import anywidget
import traitlets as t

from .png import png_b64
from .svg import STILL_METADATA, with_note

__all__ = ["asset", "esm", "widgets_dir", "StillWidget", "dumps", "STILL_NOTE"]

# NOTE [A picture that stands for a widget]
# A widget's output carries its still picture too (SVG and PNG), shown wherever the live
# widget cannot be: an untrusted notebook (the PNG), a notebook saved in the browser and opened
# again, or a page reloaded while its kernel runs (the PNG alone is saved: NOTE [Saved
# notebooks keep their pictures] in widgets/common.js). So the PNG says, on top, how the live
# widget comes back. The SVG stays the bare drawing (nbval compares it; a trusted, live page
# shows the widget instead); ``still()``'s pictures are stills by choice and say nothing.
STILL_NOTE = "A still picture: run the cell again to bring back the live widget."


def dumps(value) -> str:
    """Compact JSON for a big trait: ipywidgets walks a dict trait node by node looking for
    binary buffers on every sync (over a second for a 5,000-node snapshot); a string is
    one node. The browser parses it once per change (``jsonTrait`` in widgets/*.js)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def widgets_dir() -> Path:
    """The folder holding ``graph_view.js`` and friends."""
    here = Path(__file__).resolve().parents[2] / "widgets"
    candidates = [here]
    for base in (sys.prefix, sysconfig.get_path("data"), getattr(site, "USER_BASE", None)):
        if base:
            candidates.append(Path(base) / "share" / "nbgrad" / "widgets")
    env = os.environ.get("NBGRAD_WIDGETS_DIR")
    if env:
        candidates.insert(0, Path(env))
    for c in candidates:
        if (c / "graph_view.js").is_file():
            return c
    raise ImportError(
        "nbgrad's widget files (graph_view.js ...) were not found in "
        + ", ".join(str(c) for c in candidates)
        + "; reinstall nbgrad, or set NBGRAD_WIDGETS_DIR to the repository's widgets/ folder"
    )


def asset(name: str) -> Path:
    return widgets_dir() / name


def esm(name: str, *helpers: str) -> str:
    """A widget's ES module: ``widgets/common.js`` (what the widgets share), the ``helpers``
    (more shared files), then its own file.

    anywidget loads one module per widget and nbgrad has no bundler, so the shared helpers are
    prepended here rather than imported in the browser.
    """
    return "\n".join(asset(f).read_text() for f in ("common.js", *helpers, name))


class _Message(dict):
    """A browser message; a missing field is an error shown in the widget."""

    def __missing__(self, key):
        raise ValueError(f"the {self.get('type')!r} message has no {key!r} field")


# NOTE [Checked messages]
# A widget's browser side is code the kernel does not control: a message or a state update may
# come from an old view, another frontend, or a hand-written comm. Each widget declares the
# messages it takes (``_messages``: type -> {field: kind}) and the synced traits the browser
# may set (``_frontend_writable``; the rest only the kernel sets). A message or update of the
# wrong shape changes nothing: the widget shows why, and a refused trait is sent back as the
# kernel has it. Ranges (an id that exists, a pass that ran) are checked by the methods the
# handlers call, which raise before they change anything.
FIELD_KINDS = {
    "str": lambda v: type(v) is str,
    "str?": lambda v: v is None or type(v) is str,
    "bool": lambda v: type(v) is bool,
    "int": lambda v: type(v) is int,
    "int?": lambda v: v is None or type(v) is int,
    "[str]": lambda v: type(v) is list and all(type(x) is str for x in v),
}


def message_problem(content, spec) -> str | None:
    """What is wrong with a message's fields (``spec``: field -> kind; a kind ending in ``=``
    may be left out), or None."""
    kind = content.get("type")
    extra = sorted(set(content) - set(spec) - {"type"})
    if extra:
        return f"ValueError: the {kind!r} message has unknown fields: {', '.join(extra)}"
    for field, want in spec.items():
        optional = want.endswith("=")
        want = want.rstrip("=")
        if field not in content:
            if optional:
                continue
            return f"ValueError: the {kind!r} message has no {field!r} field"
        if not FIELD_KINDS[want](content[field]):
            return (
                f"TypeError: the {kind!r} message's {field!r} must be {want}, "
                f"got {type(content[field]).__name__} {content[field]!r}"
            )
    return None


class _Still:
    """A still picture of a widget at one moment (``StillWidget.still()``)."""

    def __init__(self, bundle):
        self._bundle = bundle

    def _repr_mimebundle_(self, **kwargs):
        return dict(self._bundle), STILL_METADATA

    def __repr__(self):
        return self._bundle["text/plain"]


class StillWidget(anywidget.AnyWidget):
    """An anywidget whose mime bundle also carries a still ``image/svg+xml`` (``to_svg()``) and
    whose ``repr`` holds no memory address (nbval compares ``text/plain`` exactly)."""

    error = t.Unicode("").tag(sync=True)
    # the widget's model id, also in its state: the browser names the widget's output with it
    # when the notebook is saved (NOTE [Saved notebooks keep their pictures] in widgets/common.js)
    _comm_id = t.Unicode("").tag(sync=True)
    _messages: dict = {}  # see NOTE [Checked messages]
    _frontend_writable: frozenset = frozenset()

    def __init_subclass__(cls, **kwargs):
        # anywidget turns a file path in ``_esm``/``_css`` into a FileContents, and each widget
        # then connects a strong lambda on ``self`` to its class-wide ``changed`` signal (for
        # hot reload) that is never disconnected: every widget, and the graph it shows, would
        # stay alive for good, closed or not. Outside hot reload (``ANYWIDGET_HMR=1``) nothing
        # ever emits that signal, so the file's text is all a widget needs.
        super().__init_subclass__(**kwargs)
        if os.environ.get("ANYWIDGET_HMR") == "1":
            return
        # NOTE [Widget traits made once a class]
        # anywidget adds ``_esm``, ``_css`` and ``_anywidget_id`` as traits to each widget
        # it makes (``add_traits``), and traitlets does so by making a new class for that
        # one widget: about 0.5 ms a widget, two or three under each %%autograd cell, and a
        # class a widget kept while it lives. They are the class's traits instead, with the
        # values anywidget gives them, and ``add_traits`` leaves out those a class has.
        values = {key: cls.__dict__.get(key) for key in ("_esm", "_css")}
        values["_anywidget_id"] = f"{cls.__module__}.{cls.__name__}"
        for key, value in values.items():
            if value is not None and not isinstance(value, (str, t.TraitType)):
                value = str(value)  # a FileContents: its text
            if isinstance(value, str):
                trait = t.Unicode(value).tag(sync=True)
                setattr(cls, key, trait)
                trait.class_init(cls, key)

    def add_traits(self, **traits):
        """Add the traits the class lacks (NOTE [Widget traits made once a class])."""
        traits = {k: v for k, v in traits.items() if not self.has_trait(k)}
        if traits:
            super().add_traits(**traits)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.on_msg(self._on_msg)

    def open(self):
        """Open the comm, its id chosen first so that the state it opens with holds it."""
        if self.comm is None:
            if self._model_id is None:
                self._model_id = uuid.uuid4().hex
            self.set_trait("_comm_id", self._model_id)
        super().open()

    def to_svg(self) -> str:  # pragma: no cover - each widget defines it
        raise NotImplementedError

    def close(self):
        """Close the comm (the views in the page then say "released"); the widget stays usable
        from Python, and displaying it again opens a new comm (NOTE [Released, not broken] in
        sessions.py)."""
        super().close()
        self.__dict__.pop("_repr_mimebundle_", None)  # ipywidgets' "closed: text only"
        # a DOMWidget's own Layout is a widget too, kept in ipywidgets' registry until closed
        layout = self._trait_values.get("layout")
        if layout is not None and layout.comm is not None:
            layout.close()

    def _reopen(self):
        """Open a closed widget again (with its Layout, which its state refers to)."""
        if self.comm is None:
            layout = self._trait_values.get("layout")
            if layout is not None and layout.comm is None:
                layout.open()
            self.open()

    def _repr_mimebundle_(self, **kwargs):
        self._reopen()
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, meta = bundle if isinstance(bundle, tuple) else (bundle, {})
        data = dict(data)
        data["text/plain"] = repr(self)
        svg = self.to_svg()
        data["image/svg+xml"] = svg
        # what an untrusted or reloaded notebook shows (NOTE [A picture that stands for a widget])
        data["image/png"] = png_b64(with_note(svg, STILL_NOTE))
        return data, {**meta, **STILL_METADATA}  # NOTE [Still pictures keep a readable size]

    def still(self):
        """The widget as it is now, as a still picture (with its text): an output that a later
        change of the live widget does not redraw (show the live widget once, stills before)."""
        svg = self.to_svg()
        return _Still({"text/plain": repr(self), "image/svg+xml": svg, "image/png": png_b64(svg)})

    def _widget_view_bundle(self):
        """Only the widget view (no text, no picture): the live display of a running cell."""
        self._reopen()
        data, _ = super()._repr_mimebundle_()
        key = "application/vnd.jupyter.widget-view+json"
        return {key: data[key]}

    # -- messages from the browser -----------------------------------------------------------
    def _on_msg(self, widget, content, buffers):
        kind = content.get("type") if isinstance(content, dict) else None
        handler = getattr(self, f"_msg_{kind}", None) if isinstance(kind, str) else None
        spec = self._messages.get(kind) if isinstance(kind, str) else None
        if handler is None or spec is None:
            self.error = f"unknown message {content!r}"[:300]
            return
        problem = message_problem(content, spec)
        if problem is not None:
            self.error = problem[:300]
            return
        try:
            self.error = ""
            handler(_Message(content))
        except Exception as e:  # noqa: BLE001 - shown in the widget, never lost
            self.error = "".join(traceback.format_exception_only(type(e), e)).strip()

    def set_state(self, sync_data):
        """A state update from the browser (NOTE [Checked messages]): only the traits it may
        set, each checked by ``_check_<trait>``; the others are refused and sent back."""
        refused, problems, accepted = [], [], {}
        for key, value in sync_data.items():
            if key not in self._frontend_writable:
                refused.append(key)
                continue
            check = getattr(self, f"_check_{key}", None)
            problem = check(value) if check is not None else None
            if problem:
                problems.append(problem)
                refused.append(key)
            else:
                accepted[key] = value
        if refused:
            self.error = "; ".join(
                problems
                + [
                    f"the browser may not set {k!r}"
                    for k in refused
                    if k not in self._frontend_writable
                ]
            )[:300]
            known = [k for k in refused if self.has_trait(k)]
            if known:
                self.send_state(known)
        if accepted:
            super().set_state(accepted)

    def _receive(self, content):
        """Handle ``content`` as if the browser had sent it (the path a real message takes)."""
        self._handle_msg(
            {"content": {"data": {"method": "custom", "content": content}}, "buffers": []}
        )
