"""The padding layers: zero, constant, reflection, replication and circular, in 1, 2
and 3 dims.

Mirrors ``torch/nn/modules/padding.py``; each is ``F.pad`` with its mode. ``padding`` is an int
(every side) or ``(left, right)`` / ``(left, right, top, bottom)`` / those and
``(front, back)``.
"""

from __future__ import annotations

from nbgrad.nn import functional as F
from nbgrad.nn.modules.module import Module
from nbgrad.tensor import Tensor

__all__ = [
    "ZeroPad1d",
    "ZeroPad2d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "CircularPad1d",
    "CircularPad2d",
    "ZeroPad3d",
    "ConstantPad3d",
    "ReflectionPad3d",
    "ReplicationPad3d",
    "CircularPad3d",
]


def _sides(padding, n):
    return tuple(padding) if isinstance(padding, (list, tuple)) else (padding,) * n


class _PadNd(Module):
    mode = "constant"
    _n = 1

    def __init__(self, padding):
        super().__init__()
        self.padding = _sides(padding, 2 * self._n)

    def forward(self, input: Tensor) -> Tensor:
        if self.mode == "circular" and input.dim() not in (self._n + 1, self._n + 2):
            raise ValueError(
                f"expected {self._n + 1}D or {self._n + 2}D input (got {input.dim()}D input)"
            )
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ConstantPad1d(_PadNd):
    """Pad the last dim with ``value``."""

    def __init__(self, padding, value: float):
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad2d(ConstantPad1d):
    """Pad the last two dims with ``value``."""

    _n = 2


class ZeroPad1d(ConstantPad1d):
    """Pad the last dim with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ZeroPad1d):
    """Pad the last two dims with zeros."""

    _n = 2


class ReflectionPad1d(_PadNd):
    """Pad the last dim with its reflection (the edge not repeated)."""

    mode = "reflect"


class ReflectionPad2d(ReflectionPad1d):
    """Pad the last two dims with their reflection."""

    _n = 2


class ReplicationPad1d(_PadNd):
    """Pad the last dim by repeating its edge values."""

    mode = "replicate"


class ReplicationPad2d(ReplicationPad1d):
    """Pad the last two dims by repeating their edge values."""

    _n = 2


class CircularPad1d(_PadNd):
    """Pad the last dim by wrapping around."""

    mode = "circular"


class CircularPad2d(CircularPad1d):
    """Pad the last two dims by wrapping around."""

    _n = 2


class ConstantPad3d(ConstantPad1d):
    """Pad the last three dims with ``value``."""

    _n = 3


class ZeroPad3d(ZeroPad1d):
    """Pad the last three dims with zeros."""

    _n = 3


class ReflectionPad3d(ReflectionPad1d):
    """Pad the last three dims with their reflection."""

    _n = 3


class ReplicationPad3d(ReplicationPad1d):
    """Pad the last three dims by repeating their edge values."""

    _n = 3


class CircularPad3d(CircularPad1d):
    """Pad the last three dims by wrapping around."""

    _n = 3
