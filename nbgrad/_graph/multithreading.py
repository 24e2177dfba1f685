"""``set_multithreading_enabled`` / ``is_multithreading_enabled``: whether backward sends the
nodes of a non-CPU device to that device's worker thread (PyTorch's
``torch/autograd/grad_mode.py`` ``set_multithreading_enabled`` and the C++
``AutogradState::get_multithreading_enabled``).
"""

from __future__ import annotations

import threading

from nbgrad._graph.grad_state import _DecoratorContextManager

__all__ = ["set_multithreading_enabled", "is_multithreading_enabled"]


# NOTE [Multithreading switch]
# PyTorch's switch is thread-local and read by ``Engine::ready_queue`` each time a ready node is
# queued: when off, every node goes on the calling thread's CPU ready queue, so a backward pass
# runs entirely on the thread that called it. nbgrad's engine reads ``is_multithreading_enabled``
# in ``_push_ready`` only for a node of a non-CPU device (a CPU node never needs it), so the
# switch costs nothing on CPU-only graphs.
class _MultithreadingState(threading.local):
    enabled = True


_state = _MultithreadingState()


def is_multithreading_enabled() -> bool:
    """Whether backward on this thread uses the device worker threads (default True)."""
    return _state.enabled


class set_multithreading_enabled(_DecoratorContextManager):
    """Turn multithreaded backward on or off on this thread: with ``mode=False`` the nodes of
    every device run on the thread that called backward.

    It takes effect at once (also as a plain call) and, as a context manager or decorator,
    restores the previous setting on exit, as ``torch.autograd.set_multithreading_enabled``.
    """

    def __init__(self, mode: bool) -> None:
        self.prev = _state.enabled
        _state.enabled = bool(mode)
        self.mode = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        _state.enabled = self.prev

    def clone(self) -> set_multithreading_enabled:
        """A fresh ``set_multithreading_enabled`` with the same mode."""
        return self.__class__(self.mode)
