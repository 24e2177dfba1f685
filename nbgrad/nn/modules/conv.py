"""``Conv2d``. Mirrors ``torch/nn/modules/conv.py`` (``_ConvNd`` and ``Conv2d``)."""

from __future__ import annotations

import math

from nbgrad.nn import functional as F
from nbgrad.nn import init
from nbgrad.nn.modules.module import Module
from nbgrad.nn.parameter import Parameter
from nbgrad.tensor import Tensor, empty

__all__ = ["Conv2d"]


def _pair(x):
    return tuple(x) if isinstance(x, (list, tuple)) else (x, x)


class Conv2d(Module):
    """2-d convolution (cross-correlation) with stride, padding, dilation and groups.

    ``weight`` has shape ``(out_channels, in_channels // groups, kh, kw)``; weight and bias are
    drawn from U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with ``fan_in = in_channels // groups * kh *
    kw``, as in PyTorch. Only ``padding_mode="zeros"`` is supported.

    Example:
        >>> import nbgrad as ng
        >>> conv = ng.nn.Conv2d(1, 4, 3, padding=1)
        >>> conv
        Conv2d(1, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
        >>> conv(ng.zeros(2, 1, 8, 8)).shape
        nbgrad.Size([2, 4, 8, 8])
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        stride, dilation, kernel_size = _pair(stride), _pair(dilation), _pair(kernel_size)
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}"
                )
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = _pair(padding)
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(
                f"padding_mode must be one of {valid_padding_modes}, but got "
                f"padding_mode='{padding_mode}'"
            )
        if padding_mode != "zeros":
            raise NotImplementedError(f"Conv2d: padding_mode='{padding_mode}' is not supported")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = False
        self.output_padding = (0, 0)
        self.groups = groups
        self.padding_mode = padding_mode
        shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.conv2d(
            input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )

    def extra_repr(self) -> str:
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s
