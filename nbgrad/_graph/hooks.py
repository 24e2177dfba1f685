"""Hook handles: ``RemovableHandle`` (``torch/utils/hooks.py``) and the list a node or tensor
keeps its hooks in."""

from __future__ import annotations

import itertools
import weakref

__all__ = ["HookList", "RemovableHandle", "hook_name"]


class HookList(list):
    """The hooks of a node or tensor: a list that a RemovableHandle can hold weakly."""

    __slots__ = ("__weakref__",)


class RemovableHandle:
    """A registered hook. ``remove()`` takes it out; ``enabled`` switches it off and on.

    The hook inventory (``nbgrad.autograd.graph.hook_inventory``) lists these handles.
    """

    _ids = itertools.count()
    __slots__ = ("id", "fn", "kind", "enabled", "output_nr", "_owner", "_hooks_ref", "__weakref__")

    def __init__(self, hooks: list, fn, kind: str, owner=None, output_nr=None):
        self.id = next(RemovableHandle._ids)
        self.fn = fn
        self.kind = kind
        self.enabled = True
        self.output_nr = output_nr
        self._owner = weakref.ref(owner) if owner is not None else None
        # as PyTorch's handle, a weak reference to the hook list: a strong one would make a
        # list <-> handle cycle that keeps the hook (and what it closes over) alive after its
        # node or tensor is gone, until the cyclic GC runs (a plain list cannot be weakly held)
        self._hooks_ref = weakref.ref(hooks) if type(hooks) is HookList else (lambda: hooks)
        hooks.append(self)

    @property
    def owner(self):
        """The tensor, node or module the hook is registered on (None once collected)."""
        return self._owner() if self._owner is not None else None

    @property
    def name(self):
        return getattr(self.fn, "__qualname__", None) or getattr(self.fn, "__name__", repr(self.fn))

    @property
    def registered(self) -> bool:
        hooks = self._hooks_ref() if self._hooks_ref is not None else None
        return hooks is not None and self in hooks

    def disable(self):
        """Keep the hook registered but skip it until ``enable()``."""
        self.enabled = False

    def enable(self):
        self.enabled = True

    def remove(self):
        hooks = self._hooks_ref() if self._hooks_ref is not None else None
        if hooks is not None and self in hooks:
            hooks.remove(self)
        self._hooks_ref = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()

    def __repr__(self):
        state = "enabled" if self.enabled else "disabled"
        return f"<RemovableHandle {self.kind} hook {self.name!r} ({state})>"


def hook_name(fn) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__
