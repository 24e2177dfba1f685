"""``Conv1d``, ``Conv2d``, ``Conv3d``, ``ConvTranspose1d``, ``ConvTranspose2d``,
``ConvTranspose3d``.

Mirrors ``torch/nn/modules/conv.py`` (``_ConvNd``, ``_ConvTransposeNd`` and the layers).
"""

from __future__ import annotations

import math

from nbgrad.nn import functional as F
from nbgrad.nn import init
from nbgrad.nn.modules.module import Module
from nbgrad.nn.parameter import Parameter
from nbgrad.tensor import Tensor, empty

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


def _ntuple(x, n):
    return tuple(x) if isinstance(x, (list, tuple)) else (x,) * n


def _single(x):
    return _ntuple(x, 1)


def _pair(x):
    return _ntuple(x, 2)


class _ConvNd(Module):
    """The parameters, checks, init and repr shared by the convolutions.

    ``weight`` is ``(out_channels, in_channels // groups, *kernel_size)`` (transposed:
    ``(in_channels, out_channels // groups, *kernel_size)``); weight and bias are drawn from
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as in PyTorch.
    """

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
        bias,
        padding_mode,
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
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}"
                )
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(
                f"padding_mode must be one of {valid_padding_modes}, but got "
                f"padding_mode='{padding_mode}'"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's amounts (last dim first), for the padding modes other than zeros
        if isinstance(padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    self._reversed_padding_repeated_twice[2 * i] = total // 2
                    self._reversed_padding_repeated_twice[2 * i + 1] = total - total // 2
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(padding) for _ in (0, 1)]
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
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
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def _conv(self, input: Tensor, conv) -> Tensor:
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            zero = (0,) * len(self.kernel_size)
            return conv(
                padded, self.weight, self.bias, self.stride, zero, self.dilation, self.groups
            )
        return conv(
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
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """1-d convolution (cross-correlation) of ``(N, C, L)`` or ``(C, L)`` inputs.

    Example:
        >>> import nbgrad as ng
        >>> conv = ng.nn.Conv1d(2, 4, 3, padding=1)
        >>> conv
        Conv1d(2, 4, kernel_size=(3,), stride=(1,), padding=(1,))
        >>> conv(ng.zeros(5, 2, 8)).shape
        nbgrad.Size([5, 4, 8])
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
        padding = padding if isinstance(padding, str) else _single(padding)
        super().__init__(
            in_channels,
            out_channels,
            _single(kernel_size),
            _single(stride),
            padding,
            _single(dilation),
            False,
            _single(0),
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    def forward(self, input: Tensor) -> Tensor:
        return self._conv(input, F.conv1d)


class Conv2d(_ConvNd):
    """2-d convolution (cross-correlation) with stride, padding, dilation and groups.

    ``weight`` has shape ``(out_channels, in_channels // groups, kh, kw)``; weight and bias are
    drawn from U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with ``fan_in = in_channels // groups * kh *
    kw``, as in PyTorch. A ``padding_mode`` other than ``"zeros"`` pads with ``F.pad`` first.

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
        padding = padding if isinstance(padding, str) else _pair(padding)
        super().__init__(
            in_channels,
            out_channels,
            _pair(kernel_size),
            _pair(stride),
            padding,
            _pair(dilation),
            False,
            _pair(0),
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    def forward(self, input: Tensor) -> Tensor:
        return self._conv(input, F.conv2d)


class Conv3d(_ConvNd):
    """3-d convolution (cross-correlation) of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` inputs.

    Example:
        >>> import nbgrad as ng
        >>> conv = ng.nn.Conv3d(1, 2, 3, padding=1)
        >>> conv
        Conv3d(1, 2, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=(1, 1, 1))
        >>> conv(ng.zeros(2, 1, 4, 4, 4)).shape
        nbgrad.Size([2, 2, 4, 4, 4])
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
        padding = padding if isinstance(padding, str) else _ntuple(padding, 3)
        super().__init__(
            in_channels,
            out_channels,
            _ntuple(kernel_size, 3),
            _ntuple(stride, 3),
            padding,
            _ntuple(dilation, 3),
            False,
            _ntuple(0, 3),
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    def forward(self, input: Tensor) -> Tensor:
        return self._conv(input, F.conv3d)


class _ConvTransposeNd(_ConvNd):
    """A transposed convolution: the gradient of the convolution w.r.t. its input."""

    _n = 0  # spatial dims: each subclass sets it, and inherits this signature (PyTorch's)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ):
        if padding_mode != "zeros":
            raise ValueError(
                f'Only "zeros" padding mode is supported for {self.__class__.__name__}'
            )
        n = self._n
        super().__init__(
            in_channels,
            out_channels,
            _ntuple(kernel_size, n),
            _ntuple(stride, n),
            _ntuple(padding, n),
            _ntuple(dilation, n),
            True,
            _ntuple(output_padding, n),
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    def _output_padding(self, input, output_size, stride, padding, kernel_size, n, dilation=None):
        """``output_padding``, or the one that gives ``output_size``, as PyTorch."""
        if output_size is None:
            return _single(self.output_padding)
        non_spatial = 2 if input.dim() == n + 2 else 1
        output_size = list(output_size)
        if len(output_size) == non_spatial + n:
            output_size = output_size[non_spatial:]
        if len(output_size) != n:
            raise ValueError(
                f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} "
                f"or {non_spatial + n} elements (got {len(output_size)})"
            )
        min_sizes, max_sizes = [], []
        for d in range(n):
            size = (
                (input.size(d + non_spatial) - 1) * stride[d]
                - 2 * padding[d]
                + (dilation[d] if dilation is not None else 1) * (kernel_size[d] - 1)
                + 1
            )
            min_sizes.append(size)
            max_sizes.append(size + stride[d] - 1)
        for size, lo, hi in zip(output_size, min_sizes, max_sizes):
            if size < lo or size > hi:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range "
                    f"from {min_sizes} to {max_sizes} (for an input of {input.size()[2:]})"
                )
        return [size - lo for size, lo in zip(output_size, min_sizes)]

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        n = self._n
        output_padding = self._output_padding(
            input, output_size, self.stride, self.padding, self.kernel_size, n, self.dilation
        )
        conv = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[n - 1]
        return conv(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            output_padding,
            self.groups,
            self.dilation,
        )


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-d convolution of ``(N, C_in, L)`` or ``(C_in, L)`` inputs; the output
    length is ``(L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``."""

    _n = 1


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-d convolution of ``(N, C_in, H, W)`` or ``(C_in, H, W)`` inputs."""

    _n = 2


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-d convolution of ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)`` inputs."""

    _n = 3
