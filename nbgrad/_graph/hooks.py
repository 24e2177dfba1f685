"""Hook handles: ``RemovableHandle`` (``torch/utils/hooks.py``), the list a node or tensor
keeps its hooks in, and the saved-tensor hooks (``saved_tensors_hooks``: what a SavedTensor packs
with)."""

from __future__ import annotations

import contextlib
import itertools
import threading
import weakref

__all__ = [
    "HookList",
    "RemovableHandle",
    "hook_name",
    "saved_tensors_hooks",
    "disable_saved_tensors_hooks",
]


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


# -- saved-tensor hooks ---------------------------------------------------------------------


class _SavedHooksState(threading.local):
    stack = ()
    disabled = None  # the message of ``disable_saved_tensors_hooks`` while it is in force


_saved_hooks = _SavedHooksState()


class _SavedHooksUsed:
    """Whether any thread ever entered ``saved_tensors_hooks``: until then a SavedTensor skips
    reading the thread-local stack (a plain attribute read instead, on every saved tensor)."""

    entered = False


_saved_hooks_used = _SavedHooksUsed()


class saved_tensors_hooks:
    """Context manager setting ``pack_hook`` / ``unpack_hook`` for tensors saved for backward.

    Mirrors ``torch.autograd.graph.saved_tensors_hooks``: every tensor a node saves inside the
    block is passed to ``pack_hook``; what it returns is stored, and ``unpack_hook`` turns it back
    into a tensor when backward needs it.
    """

    def __init__(self, pack_hook, unpack_hook):
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("saved_tensors_hooks() expects two callables: pack_hook, unpack_hook")
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _saved_hooks.disabled is not None:
            raise RuntimeError(_saved_hooks.disabled)
        _saved_hooks_used.entered = True
        _saved_hooks.stack = _saved_hooks.stack + ((self.pack_hook, self.unpack_hook),)
        return self

    def __exit__(self, *exc):
        _saved_hooks.stack = _saved_hooks.stack[:-1]
        return False


class disable_saved_tensors_hooks(contextlib.ContextDecorator):
    """Inside it, setting saved-tensor hooks raises ``RuntimeError(error_message)``, as
    ``torch.autograd.graph.disable_saved_tensors_hooks`` (which also refuses to start while
    such hooks are in force). Also a decorator."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        if _saved_hooks.stack:
            raise RuntimeError(self.error_message)
        self._prev = _saved_hooks.disabled
        _saved_hooks.disabled = self.error_message
        return self

    def __exit__(self, *exc):
        _saved_hooks.disabled = self._prev
        return False
