"""The notebook layer: ``%%autograd``, the live graph, the hook editor, the backward stepper.

Kernel side only; the browser side is ``widgets/`` at the top of the repository (plain ES
modules for anywidget), installed with the wheel under ``share/nbgrad/widgets``. Importing this
package imports neither IPython nor anywidget: the recorder, the snapshot and the SVG need
neither, and the widget classes load them on first use (``pip install nbgrad[notebook]``).

- :func:`record` / :class:`Recorder` (``recorder.py``): what a block of code did;
- :func:`build_snapshot` (``snapshot.py``): that, as one JSON-able dict (the schema), of
  nbgrad's graph or PyTorch's (``sources.py``, ``torch_source.py``);
- :class:`GraphView`, :class:`HookEditor`, :class:`BackwardStepper`: the widgets;
- ``%load_ext nbgrad``: the ``%%autograd`` cell magic (``magics.py``).
"""

from __future__ import annotations

from .recorder import Recorder, record
from .snapshot import build_snapshot
from .sources import register_source
from .torch_source import TORCH
from .trace import trace_snapshot

register_source(TORCH)  # torch's graphs read as nbgrad's (it never imports torch itself)

__all__ = [
    "record",
    "Recorder",
    "build_snapshot",
    "trace_snapshot",
    "GraphView",
    "HookEditor",
    "BackwardStepper",
    "Session",
    "load_ipython_extension",
]

_LAZY = {
    "GraphView": "graph_view",
    "HookEditor": "hook_editor",
    "BackwardStepper": "stepper",
    "Session": "magics",
    "AutogradMagics": "magics",
}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nbgrad.notebook' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)


def load_ipython_extension(ipython):
    """``%load_ext nbgrad``: register the ``%%autograd`` magic (cell and line)."""
    # late: magics.py imports IPython, which only a running IPython kernel needs
    from .magics import AutogradMagics, empty_body_to_line_magic

    ipython.register_magics(AutogradMagics)
    cleanup = ipython.input_transformers_cleanup
    if not any(getattr(f, "__name__", "") == "empty_body_to_line_magic" for f in cleanup):
        cleanup.append(empty_body_to_line_magic)
