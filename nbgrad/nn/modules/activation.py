"""Activation layers: ``ReLU``, ``Tanh``, ``Sigmoid``, ``GELU``, ``Softmax``, ``LogSoftmax``.

Mirrors ``torch/nn/modules/activation.py``.
"""

from __future__ import annotations

from nbgrad.nn import functional as F
from nbgrad.nn.modules.module import Module
from nbgrad.tensor import Tensor

__all__ = [
    "ReLU",
    "Threshold",
    "LeakyReLU",
    "SiLU",
    "ELU",
    "Softplus",
    "Hardtanh",
    "ReLU6",
    "LogSigmoid",
    "Tanh",
    "Sigmoid",
    "GELU",
    "Softmax",
    "LogSoftmax",
]


class ReLU(Module):
    """``max(x, 0)`` elementwise; ``inplace=True`` overwrites the input."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Threshold(Module):
    """``value`` where the input is at most ``threshold``, else the input."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        inplace = ", inplace=True" if self.inplace else ""
        return f"threshold={self.threshold}, value={self.value}{inplace}"


class LeakyReLU(Module):
    """``x`` where positive, ``negative_slope * x`` elsewhere."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class SiLU(Module):
    """``x * sigmoid(x)``."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ELU(Module):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta`` (``x`` itself above ``threshold / beta``)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """``x`` clamped to ``[min_val, max_val]``."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        inplace = ", inplace=True" if self.inplace else ""
        return f"min_val={self.min_val}, max_val={self.max_val}{inplace}"


class ReLU6(Hardtanh):
    """``x`` clamped to ``[0, 6]``."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class LogSigmoid(Module):
    """``log(sigmoid(x))``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:
        return input.tanh()


class Sigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return input.sigmoid()


class GELU(Module):
    """``x * Phi(x)``; ``approximate="tanh"`` uses the tanh approximation."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softmax(Module):
    """Softmax along ``dim`` (PyTorch's deprecated implicit choice when ``dim`` is None)."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
