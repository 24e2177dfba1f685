"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

Mirrors ``torch/autograd/grad_mode.py``. The flag is thread-local, as in PyTorch; each mode is
both a context manager and a decorator.
"""

from __future__ import annotations

import functools
import threading

__all__ = [
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
]


class _GradState(threading.local):
    enabled = True
    inference = False


_state = _GradState()


def is_grad_enabled() -> bool:
    """True when operations are being recorded for autograd on this thread."""
    return _state.enabled


def is_inference_mode_enabled() -> bool:
    return _state.inference


class _DecoratorContextManager:
    """A context manager that also works as a function decorator."""

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return func(*args, **kwargs)

        return wrapper

    _args = ()


class no_grad(_DecoratorContextManager):
    """Disable gradient recording inside the block.

    Example:
        >>> import nbgrad as ng
        >>> x = ng.ones(2, requires_grad=True)
        >>> with ng.no_grad():
        ...     y = x * 2
        >>> y.requires_grad
        False
    """

    def __enter__(self):
        self._prev = _state.enabled
        _state.enabled = False

    def __exit__(self, *exc):
        _state.enabled = self._prev
        return False


class enable_grad(_DecoratorContextManager):
    """Enable gradient recording inside the block (e.g. within ``no_grad``)."""

    def __enter__(self):
        self._prev = _state.enabled
        _state.enabled = True

    def __exit__(self, *exc):
        _state.enabled = self._prev
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Set gradient recording on or off; takes effect at once and also works as a context."""

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled() expected a bool for 'mode', got {mode!r}")
        self._args = (mode,)
        self._prev = _state.enabled
        _state.enabled = mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _state.enabled = self._prev
        return False

    def __call__(self, func):
        _state.enabled = self._prev  # used as a decorator: undo the immediate effect
        return super().__call__(func)


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad``, for code that will never need gradients."""

    def __init__(self, mode: bool = True):
        self._args = (mode,)
        self.mode = mode

    def __enter__(self):
        self._prev = (_state.enabled, _state.inference)
        # as PyTorch's InferenceMode guard: inference_mode(False) enables grad
        _state.enabled = not self.mode
        _state.inference = self.mode

    def __exit__(self, *exc):
        _state.enabled, _state.inference = self._prev
        return False
