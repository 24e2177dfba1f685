"""Anomaly detection: ``detect_anomaly`` / ``set_detect_anomaly``.

Mirrors ``torch/autograd/anomaly_mode.py``.

While enabled, each node records the forward traceback that created it in
``node.metadata["traceback_"]``; a failing backward node reports it, and a node that produces a
NaN gradient raises naming itself.
"""

from __future__ import annotations

import functools
import sys
import threading
import traceback
import warnings

from nbgrad.backend import get_xp

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]


class _AnomalyState(threading.local):
    enabled = False
    check_nan = True


_state = _AnomalyState()


class _Used:
    """Whether any thread ever turned anomaly mode on: until then the dispatch skips reading
    the thread-local ``_state`` on every op (a plain attribute read instead)."""

    enabled = False


_used = _Used()


class _RunningNode(threading.local):
    node = None  # the node a backward pass in anomaly mode is running on this thread


_running = _RunningNode()


def is_anomaly_enabled() -> bool:
    return _state.enabled


class detect_anomaly:
    """Context manager (and decorator) enabling anomaly detection for the block."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should "
            "only be enabled for debugging.",
            stacklevel=2,
        )
        self._prev = (_state.enabled, _state.check_nan)
        _used.enabled = True
        _state.enabled, _state.check_nan = True, self.check_nan
        return self

    def __exit__(self, *exc):
        _state.enabled, _state.check_nan = self._prev
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return func(*args, **kwargs)

        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off; takes effect at once and also works as a context."""

    def __init__(self, mode: bool, check_nan: bool = True):
        if not isinstance(mode, bool):
            raise TypeError(f"set_detect_anomaly() expected a bool for 'mode', got {mode!r}")
        self._prev = (_state.enabled, _state.check_nan)
        if mode:
            _used.enabled = True
        _state.enabled, _state.check_nan = mode, check_nan

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _state.enabled, _state.check_nan = self._prev
        return False


def record_traceback(node):
    """Store the current forward traceback on ``node`` (called while anomaly mode is on)."""
    node.metadata["traceback_"] = traceback.format_stack()[:-2]
    parent = _running.node
    if parent is not None and parent is not node:  # made by a backward: for the report
        node.metadata["parent_"] = parent


def report_failure(error, node):
    """Anomaly mode's warning for the node that failed (PyTorch's ``print_stack``), and a
    note naming the node on the error (called by the engine when a node raises)."""
    if _state.enabled:
        if node._metadata and "traceback_" in node._metadata:
            message = (
                f"Error detected in {node.name()}. Traceback of forward call that caused the "
                "error:\n" + "".join(node._metadata["traceback_"])
            )
        else:
            message = (
                f"Error detected in {node.name()}. No forward pass information available. "
                "Enable detect anomaly during forward pass for more information."
            )
        messages = [message]
        parent = node._metadata.get("parent_") if node._metadata else None
        while parent is not None and parent._metadata and "traceback_" in parent._metadata:
            messages.append(
                f"\n\nPrevious calculation was induced by {parent.name()}. Traceback of "
                "forward call that induced the previous calculation:\n"
                + "".join(parent._metadata["traceback_"])
            )
            parent = parent._metadata.get("parent_")
        for message in messages:
            try:
                warnings.warn(message, UserWarning, stacklevel=3)
            except Warning:  # warnings made errors: printed instead, the error goes on
                print(f"UserWarning: {message}", file=sys.stderr)
    note = f"(raised in the backward of {node.name()})"
    if hasattr(error, "add_note") and note not in getattr(error, "__notes__", ()):
        error.add_note(note)


def check_nan(node, outputs):
    """Anomaly mode's check of a node's gradients (PyTorch's ``validate_outputs`` under
    ``detect_anomaly(check_nan=True)``), with the array module of each gradient's device."""
    for i, g in enumerate(outputs):
        if g is not None and g._data.dtype.kind == "f":
            if bool(get_xp(g._device).isnan(g._data).any()):
                raise RuntimeError(
                    f"Function '{node.name()}' returned nan values in its {i}th output."
                )
