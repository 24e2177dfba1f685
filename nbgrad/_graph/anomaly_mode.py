"""Anomaly detection: ``detect_anomaly`` / ``set_detect_anomaly``.

Mirrors ``torch/autograd/anomaly_mode.py``.

While enabled, each node records the forward traceback that created it in
``node.metadata["traceback_"]``; a failing backward node reports it, and a node that produces a
NaN gradient raises naming itself.
"""

from __future__ import annotations

import threading

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]


class _AnomalyState(threading.local):
    enabled = False
    check_nan = True


_state = _AnomalyState()


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
        import warnings

        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should "
            "only be enabled for debugging.",
            stacklevel=2,
        )
        self._prev = (_state.enabled, _state.check_nan)
        _state.enabled, _state.check_nan = True, self.check_nan
        return self

    def __exit__(self, *exc):
        _state.enabled, _state.check_nan = self._prev
        return False

    def __call__(self, func):
        import functools

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
        _state.enabled, _state.check_nan = mode, check_nan

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _state.enabled, _state.check_nan = self._prev
        return False


def record_traceback(node):
    """Store the current forward traceback on ``node`` (called while anomaly mode is on)."""
    import traceback

    node.metadata["traceback_"] = traceback.format_stack()[:-2]
    parent = _running.node
    if parent is not None and parent is not node:  # made by a backward: for the report
        node.metadata["parent_"] = parent
