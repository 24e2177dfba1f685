"""Forward-mode AD state: the dual level and the tangents it holds (PyTorch's
``torch/csrc/autograd/forward_grad.h``: ``ForwardADLevel``, ``ForwardGrad``).

Knows no Tensor class: a tangent lives in a tensor's ``_fw_grad`` slot (unset on every tensor
that has none), and the level keeps weak references to the tensors it gave one, so that
leaving the level deletes them all. The rules that compute tangents live in
``nbgrad/_tensor/tangents.py``; the public API in ``nbgrad/autograd/forward_ad.py``.
"""

from __future__ import annotations

import weakref


class _ForwardADState:
    """The one forward-AD level (PyTorch supports a single level, 0) and its switch.

    ``active`` is what dispatch checks, once per op: a level is entered, forward grad is on
    (off inside a tangent rule and a custom Function's forward), and the level holds at least
    one tangent.
    """

    __slots__ = (
        "level",
        "enabled",
        "active",
        "duals",
        "prune_at",
        "saved",
        "propagate",
        "inplace",
        "view_tangent",
    )

    def __init__(self):
        self.level = -1
        self.enabled = True
        self.active = False
        self.duals = []  # weak references to the tensors given a tangent at this level
        self.prune_at = 1024  # (dead references are dropped when there are this many)
        self.saved = {}  # id(array) -> (array, tangent): recorded outputs, see remember_saved
        self.propagate = None  # bound by nbgrad._tensor.tangents: (op, args, attrs, results)
        self.inplace = None  # bound by nbgrad._tensor.tangents: (self, result)
        self.view_tangent = None  # bound by nbgrad._tensor.tangents: (view) -> its tangent

    def refresh(self):
        self.active = self.level >= 0 and self.enabled and bool(self.duals)


_state = _ForwardADState()


def enter_level():
    """``ForwardADLevel::get_next_idx``: level 0, or PyTorch's error for a nested one."""
    if _state.level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _state.level = 0
    _state.refresh()
    return 0


def exit_level(level):
    """Delete every tangent of ``level`` and leave it."""
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    duals, _state.duals = _state.duals, []
    _state.prune_at = 1024
    _state.saved = {}
    for ref in duals:
        t = ref()
        if t is not None and hasattr(t, "_fw_grad"):
            del t._fw_grad
    _state.level = level - 1
    _state.refresh()


def get_tangent(t):
    """The tangent of ``t`` at the current level, or None; a view of a base that has one
    has (from now on) that tangent's same view, as PyTorch's forward grad of a view."""
    tangent = getattr(t, "_fw_grad", None)
    if tangent is None and _state.level >= 0:
        base = t._base
        if base is not None and t._view_chain is not None and hasattr(base, "_fw_grad"):
            tangent = _state.view_tangent(t)
    return tangent


def set_tangent(t, tangent):
    """Give ``t`` a tangent at the current level (None deletes it)."""
    if tangent is None:
        if hasattr(t, "_fw_grad"):
            del t._fw_grad
        return
    if not hasattr(t, "_fw_grad"):
        duals = _state.duals
        duals.append(weakref.ref(t))
        if len(duals) > _state.prune_at:  # a long level (a loop in it) keeps the list short
            _state.duals = duals = [r for r in duals if r() is not None]
            _state.prune_at = 2 * len(duals) + 1024
    t._fw_grad = tangent
    _state.refresh()


def remember_saved(t, tangent):
    """Keep the tangent of a recorded output ``t``: its node may save it as its data only (no
    tensor), and a backward run under this level (forward over reverse) needs the tangent of
    the tensor it unpacks from that data (``SavedVariable``'s ``fw_grad_``)."""
    _state.saved[id(t._data)] = (t._data, tangent)


def restore_saved_tangent(t):
    """Give ``t``, unpacked from a saved output's data, that output's tangent."""
    entry = _state.saved.get(id(t._data))
    if entry is not None and entry[0] is t._data:
        set_tangent(t, entry[1])


class suspended:
    """No tangents are computed inside (a tangent rule's own ops; a custom Function's forward,
    as PyTorch's ``AutoFwGradMode(false)``)."""

    __slots__ = ("prev",)

    def __enter__(self):
        self.prev = _state.enabled
        _state.enabled = False
        _state.active = False

    def __exit__(self, *exc):
        _state.enabled = self.prev
        _state.refresh()
