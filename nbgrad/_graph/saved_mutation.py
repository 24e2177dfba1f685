"""``allow_mutation_on_saved_tensors``: in-place changes of tensors saved for backward clone the
saved value first (PyTorch's ``torch/autograd/graph.py``, ``_AllowMutationOnSavedContext``,
``_swap_with_cloned`` and ``_CloneArgBeforeMutateMode``).

Graph layer: it knows no Tensor class; the Tensor's in-place writes call :func:`before_write`.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections import defaultdict

from nbgrad._graph.hooks import saved_tensors_hooks

__all__ = ["allow_mutation_on_saved_tensors", "before_write", "mutation_contexts"]


# NOTE [Clone before mutate]
# PyTorch builds ``allow_mutation_on_saved_tensors`` from two pieces, and so does nbgrad:
# - saved-tensor hooks (``_swap_with_cloned``): the pack hook stores a ``_Handle`` in the node
#   instead of the tensor and remembers the tensor under it (``original``), keyed by the
#   tensor's identity ``tid = (id, data_ptr, version)``; the storage identity
#   ``sid = (data_ptr, version)`` maps to every tid saved with it, so a view that starts at the
#   same address and shares the version counter finds the saved tensor too;
# - a check before every in-place write (PyTorch's ``_CloneArgBeforeMutateMode``, a
#   TorchDispatchMode that looks at each op's written arguments; in nbgrad, Tensor's in-place
#   write, ``out=``, the in-place view ops and ``resize_`` call ``before_write``): if the
#   written tensor's sid is saved, the original is cloned (once per handle) and the node
#   unpacks the clone, so backward sees the value it saved and no version error is raised.
# The node holds the only strong reference to its handle: once the graph is released (after a
# backward, or when the last output dies) the handle dies and, with it, the entries of the
# weak maps (``cloned``, ``original``, ``tid_to_weakhandle``), which is what the counts that
# PyTorch's tests read show. Unpacking outside the context that recorded the graph fails with
# PyTorch's AssertionError. The hooks are thread-local, as PyTorch's; the enabled flag is
# global, as PyTorch's.
class _Handle:
    __slots__ = ("__weakref__",)


class _AllowMutationOnSavedContext:
    """What one ``allow_mutation_on_saved_tensors`` block knows (PyTorch's names)."""

    def __init__(self) -> None:
        self.cloned = weakref.WeakKeyDictionary()  # handle -> the clone made before a write
        self.original = weakref.WeakKeyDictionary()  # handle -> the saved tensor itself
        self.tid_to_weakhandle = weakref.WeakValueDictionary()  # tid -> handle
        self.sid_to_tid = defaultdict(set)  # sid -> {tid}

    def clear(self) -> None:
        self.cloned.clear()
        self.original.clear()
        self.tid_to_weakhandle.clear()
        self.sid_to_tid.clear()


def _get_tid(t) -> tuple:
    return (id(t), t.data_ptr(), t._version)


def _get_sid(t) -> tuple:
    return (t.data_ptr(), t._version)


_ERR_OUTSIDE = (
    "Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
    "in which the graph was originally recorded."
)


class _swap_with_cloned(saved_tensors_hooks):
    def __init__(self, ctx: _AllowMutationOnSavedContext) -> None:
        def pack_hook(t):
            tid = _get_tid(t)
            ctx.sid_to_tid[_get_sid(t)].add(tid)
            handle = ctx.tid_to_weakhandle.get(tid)
            if handle is None:  # the same tensor at the same version is saved once
                handle = _Handle()
                ctx.tid_to_weakhandle[tid] = handle
                ctx.original[handle] = t
            return handle

        def unpack_hook(handle):
            if not _state.enabled:
                raise AssertionError(_ERR_OUTSIDE)
            if handle in ctx.cloned:
                return ctx.cloned[handle]
            if handle not in ctx.original:
                raise AssertionError(_ERR_OUTSIDE)
            return ctx.original[handle]

        super().__init__(pack_hook, unpack_hook)


class _State(threading.local):
    ctx = None  # the context whose writes are checked on this thread


class _Enabled:
    """``_allow_mutation_on_saved_tensors_enabled`` (global, as PyTorch's)."""

    enabled = False


_state = _Enabled()
_local = _State()
# The contexts open on any thread: a list, so that the in-place write's check
# (``if mutation_contexts: before_write(t)``) costs one empty-list test when none is open.
mutation_contexts: list = []


def before_write(tensor) -> None:
    """Called by every in-place write of ``tensor`` while a context is open, before its
    memory changes: clone what this thread's ``allow_mutation_on_saved_tensors`` block saved
    of it (See NOTE [Clone before mutate])."""
    ctx = _local.ctx
    if ctx is None:
        return
    tids = ctx.sid_to_tid.get(_get_sid(tensor))
    if not tids:
        return
    for tid in tids:
        handle = ctx.tid_to_weakhandle.get(tid)
        if handle is None or handle in ctx.cloned:  # freed by a backward, or cloned already
            continue
        ctx.cloned[handle] = ctx.original.pop(handle)._detached_copy()


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Allow in-place changes of tensors saved for backward: the saved value is cloned just
    before it changes, and backward uses the clone (``torch.autograd.graph.
    allow_mutation_on_saved_tensors``). Yields the context; contexts cannot be nested.

    Example::

        >>> import nbgrad
        >>> with nbgrad.autograd.graph.allow_mutation_on_saved_tensors():
        ...     a = nbgrad.ones(2, requires_grad=True)
        ...     b = a.clone()
        ...     out = (b * b).sum()
        ...     _ = b.sin_()
        ...     out.backward()
        >>> a.grad
        tensor([2., 2.])
    """
    ctx = _AllowMutationOnSavedContext()
    with _swap_with_cloned(ctx):
        prev = _local.ctx
        _local.ctx = ctx
        mutation_contexts.append(ctx)
        try:
            if _state.enabled:
                raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
            _state.enabled = True
            yield ctx
        finally:
            ctx.clear()
            mutation_contexts.remove(ctx)
            _local.ctx = prev
            _state.enabled = False
