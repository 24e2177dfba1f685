"""More pooling of ``nbgrad.nn.functional`` (``functional.py`` holds the 2-d ones): the 1-d and
3-d poolings, the adaptive max poolings, the ``*_with_indices`` forms, fractional max pooling,
the power-average (``lp_pool*``) poolings and ``max_unpool*``.

As PyTorch: ``adaptive_max_pool2d`` is ``AdaptiveMaxPool2DBackward0``; the 1-d poolings are the
2-d ones over a height of 1 (``SqueezeBackward1``, as PyTorch's). ``max_unpool*`` is composed
(NOTE [Composed gaps]).
"""

from __future__ import annotations

import math

import numpy as np

import nbgrad  # nbgrad.nn.functional, read at call time: that module imports this one
from nbgrad import dtypes
from nbgrad._tensor.dispatch import _dispatch
from nbgrad.derivatives import OPS
from nbgrad.nn._functional_conv import _F, _tuple
from nbgrad.tensor import Tensor

__all__ = [
    "max_pool1d",
    "avg_pool1d",
    "adaptive_avg_pool1d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "max_pool3d",
    "max_pool3d_with_indices",
    "avg_pool3d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
]


def _check_pool1d_input(input, name):
    if input.dim() not in (2, 3):
        raise RuntimeError(f"{name}: Expected 2D or 3D (batch mode) tensor, got {input.dim()}D")


def max_pool1d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """The maximum of each window of an ``(N, C, L)`` or ``(C, L)`` input (and its index)."""
    _check_pool1d_input(input, "max_pool1d")
    (k,) = _tuple(kernel_size, 1, "kernel_size")
    (s,) = _tuple(k if stride is None or stride == [] else stride, 1, "stride")
    (p,), (d,) = _tuple(padding, 1, "padding"), _tuple(dilation, 1, "dilation")
    out = nbgrad.nn.functional.max_pool2d(
        input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode, True
    )
    values, indices = out[0].squeeze(-2), out[1].squeeze(-2)
    return (values, indices) if return_indices else values


def avg_pool1d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """The mean of each window of an ``(N, C, L)`` or ``(C, L)`` input."""
    _check_pool1d_input(input, "avg_pool1d")
    (k,) = _tuple(kernel_size, 1, "kernel_size")
    (s,) = _tuple(k if stride is None or stride == [] else stride, 1, "stride")
    (p,) = _tuple(padding, 1, "padding")
    out = nbgrad.nn.functional.avg_pool2d(
        input.unsqueeze(-2), (1, k), (1, s), (0, p), ceil_mode, count_include_pad
    )
    return out.squeeze(-2)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """The mean over ``output_size`` windows that tile the last dim."""
    _check_pool1d_input(input, "adaptive_avg_pool1d")
    (size,) = _tuple(output_size, 1, "output_size")
    return nbgrad.nn.functional.adaptive_avg_pool2d(input.unsqueeze(-2), (1, size)).squeeze(-2)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """The maximum over ``output_size`` windows that tile the last two dims (and its flat
    index in its plane) (``AdaptiveMaxPool2DBackward0``)."""
    if input.dim() not in (3, 4):
        raise RuntimeError(
            f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got {input.dim()}D"
        )
    size = output_size if isinstance(output_size, (list, tuple)) else (output_size, output_size)
    size = tuple(input.shape[-2 + i] if s is None else int(s) for i, s in enumerate(size))
    values, indices = _dispatch(OPS["adaptive_max_pool2d"], (input,), {"output_size": size})
    return (values, indices) if return_indices else values


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """The maximum over ``output_size`` windows that tile the last dim (and its index)."""
    _check_pool1d_input(input, "adaptive_max_pool1d")
    (size,) = _tuple(output_size, 1, "output_size")
    values, indices = adaptive_max_pool2d(input.unsqueeze(-2), (1, size), True)
    values, indices = values.squeeze(-2), indices.squeeze(-2)
    return (values, indices) if return_indices else values


def _pool_attrs(kernel_size, stride, padding, n):
    kernel_size = _tuple(kernel_size, n, "kernel_size")
    no_stride = stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0)
    stride = kernel_size if no_stride else _tuple(stride, n, "stride")
    return {"kernel_size": kernel_size, "stride": stride, "padding": _tuple(padding, n, "padding")}


def _check_pool3d_input(input, name):
    if input.dim() not in (4, 5):
        raise RuntimeError(
            f"{name}: non-empty 4D or 5D (batch mode) tensor expected for input, got {input.dim()}D"
        )


def max_pool3d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """The maximum of each window of an ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input
    (``MaxPool3DWithIndicesBackward0``); with ``return_indices``, also the flat index of each
    maximum in its ``D x H x W`` volume."""
    _check_pool3d_input(input, "max_pool3d")
    attrs = _pool_attrs(kernel_size, stride, padding, 3)
    attrs.update(dilation=_tuple(dilation, 3, "dilation"), ceil_mode=bool(ceil_mode))
    values, indices = _dispatch(OPS["max_pool3d"], (input,), attrs)
    return (values, indices) if return_indices else values


def max_pool3d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=True
):
    """``max_pool3d``'s values and indices (always both)."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool3d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override=None,
) -> Tensor:
    """The mean of each window of an ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input
    (``AvgPool3DBackward0``)."""
    _check_pool3d_input(input, "avg_pool3d")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    attrs = _pool_attrs(kernel_size, stride, padding, 3)
    attrs.update(
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad),
        divisor_override=divisor_override,
    )
    return _dispatch(OPS["avg_pool3d"], (input,), attrs)


def _adaptive_size(input, output_size, n):
    """``output_size`` as ``n`` ints (``None``: the input's size)."""
    size = tuple(output_size) if isinstance(output_size, (list, tuple)) else (output_size,) * n
    return tuple(input.shape[-n + i] if s is None else int(s) for i, s in enumerate(size))


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """The mean over ``output_size`` windows that tile the last three dims (as PyTorch: a
    mean, ``MeanBackward1``, for a 1 x 1 x 1 output; ``AdaptiveAvgPool3DBackward0``
    otherwise)."""
    _check_pool3d_input(input, "adaptive_avg_pool3d")
    size = _adaptive_size(input, output_size, 3)
    if size == (1, 1, 1):
        return input.mean((-1, -2, -3), keepdim=True)
    return _dispatch(OPS["adaptive_avg_pool3d"], (input,), {"output_size": size})


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """The maximum over ``output_size`` windows that tile the last three dims (and its flat
    index in its volume) (``AdaptiveMaxPool3DBackward0``)."""
    _check_pool3d_input(input, "adaptive_max_pool3d")
    size = _adaptive_size(input, output_size, 3)
    values, indices = _dispatch(OPS["adaptive_max_pool3d"], (input,), {"output_size": size})
    return (values, indices) if return_indices else values


def adaptive_max_pool3d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """``adaptive_max_pool3d``'s values and indices (always both)."""
    return adaptive_max_pool3d(input, output_size, True)


def _fractional_max_pool(n, input, kernel_size, output_size, output_ratio, _random_samples):
    name = f"fractional_max_pool{n}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    kernel_size = _tuple(kernel_size, n, "kernel_size")
    if output_size is None:
        ratio = output_ratio if isinstance(output_ratio, (list, tuple)) else (output_ratio,) * n
        output_size = tuple(int(input.shape[-n + d] * ratio[d]) for d in range(n))
    output_size = _tuple(output_size, n, "output_size")
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(
            f"{name}(): Expected {n + 1}D or {n + 2}D tensor, but got: {list(input.shape)}"
        )
    if _random_samples is None:
        batch = 1 if input.dim() == n + 1 else input.shape[0]
        _random_samples = nbgrad.rand(
            batch, input.shape[-n - 1], n, dtype=input.dtype, device=input.device
        )
    for d, dim in enumerate(("time", "height", "width")[3 - n :]):
        size = input.shape[-n + d]
        if output_size[d] + kernel_size[d] - 1 > size - (n == 3):  # ATen's checks
            raise RuntimeError(
                f"{name}_out(): pool {dim} {kernel_size[d]} too large relative to input "
                f"{dim} {size}"
            )
    attrs = {"kernel_size": kernel_size, "output_size": output_size}
    return _dispatch(OPS[name], (input, _random_samples), attrs)


def fractional_max_pool2d_with_indices(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None,
):  # fmt: skip
    """The maximum of each of ``output_size`` windows of ``kernel_size`` at pseudo-random
    starts (``FractionalMaxPool2DBackward0``), and its flat index in its plane."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool2d(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None,
):  # fmt: skip
    """``fractional_max_pool2d_with_indices``'s values (and indices with ``return_indices``)."""
    out = _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, _random_samples)
    return out if return_indices else out[0]


def fractional_max_pool3d_with_indices(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None,
):  # fmt: skip
    """The 3-d ``fractional_max_pool2d_with_indices`` (``FractionalMaxPool3DBackward0``)."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool3d(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None,
):  # fmt: skip
    """``fractional_max_pool3d_with_indices``'s values (and indices with ``return_indices``)."""
    out = _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, _random_samples)
    return out if return_indices else out[0]


def max_pool1d_with_indices(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """``max_pool1d``'s values and indices (always both, as PyTorch's)."""
    return _F().max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """``max_pool2d``'s values and indices (always both, as PyTorch's)."""
    return _F().max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    """``adaptive_max_pool1d``'s values and indices (always both)."""
    return _F().adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    """``adaptive_max_pool2d``'s values and indices (always both)."""
    return _F().adaptive_max_pool2d(input, output_size, True)


def _lp_finish(out, norm_type, window):
    return (out.sign() * out.abs().relu()).mul(window).pow(1.0 / norm_type)


def lp_pool1d(
    input: Tensor, norm_type: float, kernel_size: int, stride=None, ceil_mode: bool = False
) -> Tensor:
    """``(sum of x ** p over each window) ** (1 / p)`` (max of ``|x|`` for ``p = inf``)."""
    F = _F()  # noqa: N806
    if norm_type == math.inf:
        return F.max_pool1d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -F.max_pool1d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = F.avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kernel_size)


def lp_pool2d(
    input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False
) -> Tensor:
    """``(sum of x ** p over each window) ** (1 / p)`` over the last two dims."""
    F = _F()  # noqa: N806
    kw, kh = F._pair(kernel_size)
    if norm_type == math.inf:
        return F.max_pool2d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -F.max_pool2d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = F.avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kw * kh)


def lp_pool3d(
    input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False
) -> Tensor:
    """``(sum of x ** p over each window) ** (1 / p)`` over the last three dims."""
    F = _F()  # noqa: N806
    if norm_type == math.inf:
        return F.max_pool3d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -F.max_pool3d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = F.avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, math.prod(_tuple(kernel_size, 3, "kernel_size")))


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    n = len(kernel_size)
    default = [
        (input.shape[-n + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(n)
    ]
    if output_size is None:
        ret = default
    else:
        output_size = list(output_size)
        if len(output_size) == n + 2:
            output_size = output_size[2:]
        if len(output_size) != n:
            raise ValueError(
                f"output_size should be a sequence containing {n} or {n + 2} elements, but it "
                f"has a length of '{len(output_size)}'"
            )
        for d in range(n):
            lo, hi = default[d] - stride[d], default[d] + stride[d]
            if not lo < output_size[d] < hi:
                raise ValueError(
                    f'invalid output_size "{output_size}" (dim {d} must be between {lo} and {hi})'
                )
        ret = output_size
    for d in range(n):
        if ret[d] < 0:
            raise ValueError(
                "max_unpooling: output_size must contain non-negative spatial dimensions, but "
                f"got output_size[{d}]={ret[d]}"
            )
    return [int(v) for v in ret]


def _max_unpool(input, indices, size):
    """Each value of ``input`` written at its flat index ``indices`` in a zero volume of
    ``size`` (``MaxUnpool2DBackward0`` / ``MaxUnpool3DBackward0``)."""
    if indices.dtype != dtypes.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {indices.dtype}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor "
            f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}"
        )
    volume = math.prod(size)
    idx = np.asarray(indices)
    if idx.size and (idx.min() < 0 or idx.max() >= volume):
        bad = int(idx.max() if idx.max() >= volume else idx.min())
        raise RuntimeError(
            f"Found an invalid max index: {bad} (output volumes are of size "
            f"{'x'.join(map(str, size))}"
        )
    row = OPS[f"max_unpool{len(size)}d"]
    return _dispatch(row, (input, indices), {"output_size": tuple(size)})


def max_unpool1d(
    input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None
) -> Tensor:
    """The inverse of ``max_pool1d``: each value put back at its index, zeros elsewhere."""
    kernel_size = _tuple(kernel_size, 1, "kernel_size")
    stride = kernel_size if stride is None else _tuple(stride, 1, "stride")
    padding = _tuple(padding, 1, "padding")
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"max_unpool1d: Expected 2D or 3D input, but got input of size {list(input.shape)}"
        )
    size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    out = _max_unpool(input.unsqueeze(-2), indices.unsqueeze(-2), (1, *size))
    return out.squeeze(-2)


def max_unpool2d(
    input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None
) -> Tensor:
    """The inverse of ``max_pool2d``: each value put back at its flat index in its plane."""
    F = _F()  # noqa: N806
    kernel_size = F._pair(kernel_size)
    stride = kernel_size if stride is None else F._pair(stride)
    padding = F._pair(padding)
    if input.dim() not in (3, 4):
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor for input with possibly 0 batch size and "
            f"non-zero dimensions for input, but got: {list(input.shape)}"
        )
    size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return _max_unpool(input, indices, size)


def max_unpool3d(
    input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None
) -> Tensor:
    """The inverse of ``max_pool3d``: each value put back at its flat index in its volume."""
    kernel_size = _tuple(kernel_size, 3, "kernel_size")
    stride = kernel_size if stride is None else _tuple(stride, 3, "stride")
    padding = _tuple(padding, 3, "padding")
    if input.dim() not in (4, 5):
        raise RuntimeError(
            "Expected 4D or 5D (batch mode) tensor for input with possibly 0 batch size and "
            f"non-zero dimensions for input, but got: {list(input.shape)}"
        )
    size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return _max_unpool(input, indices, size)
