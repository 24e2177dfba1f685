"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

Mirrors ``torch/autograd/grad_mode.py`` and the decorator machinery of
``torch/utils/_contextlib.py``. The flag is thread-local, as in PyTorch; each mode is both a
context manager and a decorator (``@no_grad()``; ``@no_grad`` and ``@enable_grad`` also without
parentheses, and ``no_grad(fn)``).
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import warnings

__all__ = [
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
]


class _GradState(threading.local):
    enabled = True  # ops are recorded (what the dispatch reads)
    inference = False
    grad_mode = False  # inside inference mode: the grad mode a user sets, which records nothing


_state = _GradState()


# NOTE [Inference tensors]
# As PyTorch's, a tensor made in inference mode is an inference tensor (``is_inference()``),
# and so is a view or a detached alias of one; a view of a normal tensor stays normal. A view
# of an inference tensor, made in any mode, is no view to autograd: no base, no history, and it
# never requires grad (even where its source does). An inference tensor may not be saved for
# backward (a node that would save it raises when it is recorded), changed in place outside
# inference mode, or set to require grad there. A tensor carries the mark in an optional slot;
# until the first inference tensor is made (``made``, for the process, not a thread) none of
# these checks reads it, so code that never uses inference mode pays nothing.
class _InferenceTensors:
    made = False
    # whether any thread ever entered inference mode: until then the hot paths (``_wrap``,
    # the dispatch) skip reading the thread-local ``_state.inference``, a plain attribute read
    # instead of a thread-local one on every op
    entered = False


_inference_tensors = _InferenceTensors()


# NOTE [Grad mode inside inference mode]
# As PyTorch's, inference mode records nothing, even where ``enable_grad`` or
# ``set_grad_enabled(True)`` turns grad mode back on inside it: ``is_grad_enabled()`` says
# True there, but ``_state.enabled`` (the one flag the dispatch reads on every op) stays False.
def _mode() -> bool:
    return _state.grad_mode if _state.inference else _state.enabled


def _set_mode(mode):
    if _state.inference:
        _state.grad_mode = mode
    else:
        _state.enabled = mode


def is_grad_enabled() -> bool:
    """True when grad mode is on on this thread (ops are recorded, outside inference mode)."""
    return _state.grad_mode if _state.inference else _state.enabled


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()`` (with its default ``mode=True``) on this thread."""
    return _state.inference


def _set_grad_enabled(mode):
    if not isinstance(mode, bool):
        raise TypeError(
            "set_grad_enabled(): argument 'enabled' (position 1) must be bool, not "
            f"{type(mode).__name__}"
        )
    _set_mode(mode)


# NOTE [Grad modes on generators]
# A decorated generator function is suspended at each ``yield`` and resumed later, perhaps
# under another mode. As in PyTorch (its PR #49017), the mode is set afresh around each
# resumption of the generator (``send``, ``throw``, ``close``) and the caller's mode is back
# in force whenever the generator is suspended. A fresh context manager is made for each
# resumption (``ctx_factory``), since a context manager object may be entered only once at a
# time. ``async def`` coroutines are not wrapped this way (nor in PyTorch): the mode holds only
# while the coroutine object is created.
def _wrap_generator(ctx_factory, func):
    @functools.wraps(func)
    def generator_context(*args, **kwargs):
        gen = func(*args, **kwargs)
        try:
            with ctx_factory():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with ctx_factory():
                        gen.close()
                    raise
                except BaseException:
                    with ctx_factory():
                        response = gen.throw(*sys.exc_info())
                else:
                    with ctx_factory():
                        response = gen.send(request)
        except StopIteration as e:
            return e.value

    return generator_context


def _context_decorator(ctx_factory, func):
    """``func`` run under a fresh ``ctx_factory()`` at each call (each resumption, for a
    generator function)."""
    if inspect.isclass(func):
        raise RuntimeError(
            "Cannot decorate classes; it is ambiguous whether or not only the "
            "constructor or all methods should have the context manager applied; "
            "additionally, decorating a class at definition-site will prevent "
            "use of the identifier as a conventional type.  "
            "To specify which methods to decorate, decorate each of them "
            "individually."
        )
    if inspect.isgeneratorfunction(func):
        return _wrap_generator(ctx_factory, func)

    @functools.wraps(func)
    def decorate_context(*args, **kwargs):
        with ctx_factory():
            return func(*args, **kwargs)

    return decorate_context


class _DecoratorContextManager:
    """A context manager that also works as a function decorator."""

    def __call__(self, orig_func):
        if inspect.isclass(orig_func):
            warnings.warn(
                "Decorating classes is deprecated and will be disabled in "
                "future versions. You should only decorate functions or methods. "
                "To preserve the current behavior of class decoration, you can "
                "directly decorate the `__init__` method and nothing else.",
                FutureWarning,
                stacklevel=2,
            )

            def func(*args, **kwargs):
                return orig_func(*args, **kwargs)

        else:
            func = orig_func
        return _context_decorator(self.clone, func)

    def __enter__(self):
        raise NotImplementedError

    def __exit__(self, exc_type, exc_value, traceback):
        raise NotImplementedError

    def clone(self):
        """A fresh copy of this context manager (one per call of a decorated function)."""
        return self.__class__()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also a decorator without parentheses: ``@no_grad`` as well as ``@no_grad()``."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Disable gradient recording inside the block.

    Also a decorator: ``@no_grad()``, ``@no_grad`` or ``no_grad(fn)``; on a generator function
    the mode holds inside the generator each time it runs (see NOTE [Grad modes on generators]).

    Example:
        >>> import nbgrad as ng
        >>> x = ng.ones(2, requires_grad=True)
        >>> with ng.no_grad():
        ...     y = x * 2
        >>> y.requires_grad
        False
        >>> @ng.no_grad
        ... def doubler(x):
        ...     return x * 2
        >>> doubler(x).requires_grad
        False
    """

    def __init__(self):
        self.prev = False

    def __enter__(self):
        self.prev = _mode()
        _set_mode(False)

    def __exit__(self, exc_type, exc_value, traceback):
        _set_mode(self.prev)


class enable_grad(_NoParamDecoratorContextManager):
    """Enable gradient recording inside the block (e.g. within ``no_grad``).

    Also a decorator, with or without parentheses, as ``no_grad``.
    """

    def __enter__(self):
        self.prev = _mode()
        _set_mode(True)

    def __exit__(self, exc_type, exc_value, traceback):
        _set_mode(self.prev)


class set_grad_enabled(_DecoratorContextManager):
    """Set gradient recording on or off.

    It takes effect at once (``set_grad_enabled(False)`` as a plain call), and it also works as
    a context manager, restoring the previous mode on exit, and as a decorator
    (``@set_grad_enabled(False)``), where the call's immediate effect is undone.
    """

    def __init__(self, mode: bool):
        self.prev = _mode()
        self.mode = mode
        _set_grad_enabled(mode)

    def __call__(self, orig_func):
        _set_mode(self.prev)
        return super().__call__(orig_func)

    def __enter__(self):
        _set_mode(self.mode)

    def __exit__(self, exc_type, exc_value, traceback):
        _set_mode(self.prev)

    def __str__(self):
        return f"{type(self).__module__}.{type(self).__qualname__}(mode={self.mode})"

    def __repr__(self):
        return str(self)

    def clone(self):
        """A fresh ``set_grad_enabled`` with the same mode."""
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad``, for code that will never need gradients.

    ``inference_mode(False)`` turns inference mode off and gradient recording on inside the
    block, as PyTorch's. Also a decorator: ``@inference_mode()``, ``@inference_mode(False)``
    or ``inference_mode(fn)``.
    """

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode: bool = True):
        self.mode = mode

    def __enter__(self):
        self._prev = (_state.enabled, _state.inference, _state.grad_mode)
        # as PyTorch's InferenceMode guard: grad mode is ``not mode`` (inference_mode(False)
        # enables grad); see NOTE [Grad mode inside inference mode]
        _state.enabled = not self.mode
        if self.mode:
            _inference_tensors.entered = True
        _state.inference = self.mode
        _state.grad_mode = False

    def __exit__(self, exc_type, exc_value, traceback):
        _state.enabled, _state.inference, _state.grad_mode = self._prev

    def clone(self):
        """A fresh ``inference_mode`` with the same mode."""
        return self.__class__(self.mode)
