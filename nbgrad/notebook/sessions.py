"""The widgets each ``%%autograd`` run showed, closed when the same cell runs again.

ipywidgets keeps every widget alive until it is closed, and an nbgrad widget holds its whole
graph (nodes, saved arrays, records): re-running one cell all day would keep every earlier
run's graph. So each run's widgets are registered under the cell that showed them, and the
next run of that cell closes them first.

NOTE [Which cell ran]
JupyterLab, Notebook 7 and VS Code send the cell's id in the execute request's metadata
(``cellId``); ipykernel keeps that request as the kernel's parent message
(``kernel.get_parent("shell")``; ``shell.parent_header`` is its header only, so a full message
set there, as tests do, is read too). Two ``%%autograd`` runs in one execution of a cell (a loop
calling ``run_cell_magic``) keep each other: only an earlier execution's widgets are closed.

NOTE [No cell id]
A frontend that sends no cell id (the classic console, nbclient, papermill) leaves nothing to
tell a re-run from a new cell, so the runs without one are kept in order and the oldest are
closed once there are more than :data:`SESSIONS` ``.keep`` of them: the setting
``NBGRAD_KEEP_SESSIONS`` (an environment variable read at import, default 16), or
``nbgrad.notebook.sessions.SESSIONS.keep = N`` in the kernel.

NOTE [Released, not broken]
Releasing a run closes its widgets' comms (their views in the page then say "released") and
forgets them; it touches nothing else. A widget or ``-o NAME`` session the user still holds
keeps its graph and every Python method, and displaying it again opens a new comm
(``StillWidget._repr_mimebundle_``); one nobody holds is garbage, graph and all.
"""

from __future__ import annotations

import os
import weakref
from collections import OrderedDict

__all__ = ["SESSIONS", "Sessions", "current_cell"]


def _keep_default() -> int:
    try:
        return max(1, int(os.environ.get("NBGRAD_KEEP_SESSIONS", "16")))
    except ValueError:
        return 16


def current_cell(shell):
    """``(cell id or None, execution key)`` of the request the kernel is running (NOTE [Which
    cell ran]); the key tells one execution of a cell from the next."""
    parent = {}
    kernel = getattr(shell, "kernel", None)
    get_parent = getattr(kernel, "get_parent", None)
    if get_parent is not None:
        try:
            parent = get_parent("shell") or {}
        except Exception:  # noqa: BLE001 - an older or unusual kernel: no cell id
            parent = {}
    if not parent.get("metadata"):
        header = getattr(shell, "parent_header", None)
        if isinstance(header, dict) and "metadata" in header:
            parent = header
    meta = parent.get("metadata") or {}
    cell_id = meta.get("cellId") if isinstance(meta, dict) else None
    msg_id = (parent.get("header") or {}).get("msg_id") or parent.get("msg_id")
    key = (msg_id, getattr(shell, "execution_count", None))
    return (cell_id if isinstance(cell_id, str) and cell_id else None), key


class Sessions:
    """The open widgets of each cell's last ``%%autograd`` run (and of the last ``keep`` runs
    that came with no cell id)."""

    def __init__(self, keep=None):
        self.keep = _keep_default() if keep is None else keep
        # weak references: ipywidgets holds an open widget; one closed elsewhere may go
        self._cells = {}  # cell id -> (execution key, [widget refs])
        self._anonymous = OrderedDict()  # execution key -> [widget refs], oldest first
        self.released = 0  # how many widgets were closed here, for tests and curiosity
        # the session of the last drawing interrupted, and its cell (NOTE [Interrupted drawing]
        # in magics.py): kept for ``%autograd show`` until that cell runs again
        self.interrupted = None
        self._interrupted_cell = None
        self._current = None  # the cell id of the run started last

    def start(self, cell_id, key):
        """A new run of cell ``cell_id`` (None: no id came), execution ``key``: the cell's
        earlier runs are released now, before the new graph is built (NOTE [Which cell ran]).
        Returns the function that registers the widgets the run shows."""
        self._current = cell_id
        if cell_id is not None and cell_id == self._interrupted_cell:
            self.interrupted = self._interrupted_cell = None
        if cell_id is not None:
            old = self._cells.get(cell_id)
            if old is None or old[0] != key:
                if old is not None:
                    self._release(old[1])
                old = self._cells[cell_id] = (key, [])
            return lambda widget: old[1].append(weakref.ref(widget))
        for k in [k for k, ws in self._anonymous.items() if not ws and k != key]:
            del self._anonymous[k]  # a run that showed no widget (--static, an error)
        widgets = self._anonymous.setdefault(key, [])

        def add(widget):
            widgets.append(weakref.ref(widget))
            while sum(bool(ws) for ws in self._anonymous.values()) > max(1, int(self.keep)):
                self._release(self._anonymous.popitem(last=False)[1])

        return add

    def keep_interrupted(self, session):
        """Keep ``session``, whose drawing was interrupted, for ``%autograd show``: until the
        cell of the run started last runs again, or another drawing is interrupted."""
        self.interrupted = session
        self._interrupted_cell = self._current

    def _release(self, widgets):
        while widgets:
            w = widgets.pop()()
            if w is None:
                continue
            try:
                w.close()
            except Exception:  # noqa: BLE001 - a widget that cannot close is gone already
                pass
            self.released += 1

    def release_all(self):
        """Close every run's widgets."""
        for _, widgets in self._cells.values():
            self._release(widgets)
        for widgets in self._anonymous.values():
            self._release(widgets)
        self._cells.clear()
        self._anonymous.clear()
        self.interrupted = self._interrupted_cell = None

    def open_widgets(self):
        """The widgets registered here that are still open."""
        runs = [w for _, w in self._cells.values()] + list(self._anonymous.values())
        widgets = [ref() for ws in runs for ref in ws]
        return [w for w in widgets if getattr(w, "comm", None) is not None]

    def __repr__(self):
        return (
            f"<autograd sessions: {len(self._cells)} cells, {len(self._anonymous)} runs without "
            f"a cell id (keep {self.keep}), {len(self.open_widgets())} open widgets>"
        )


SESSIONS = Sessions()
