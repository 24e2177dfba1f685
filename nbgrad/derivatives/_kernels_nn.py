"""Array kernels of the op-table rows added for the 1-d and transposed convolutions, padding and
adaptive max pooling (``_kernels.py`` holds the others)."""

from __future__ import annotations

import numpy as np

from nbgrad._kernels import _adaptive_ranges, _conv2d, _conv2d_transpose, _conv2d_weight


# NOTE [1-d convolution as 2-d]: a 1-d convolution is the 2-d one over a height of 1. The
# convolution rows keep 2-d attributes (stride ``(1, s)``, padding ``((0, 0), (p, p))``,
# dilation ``(1, d)``) and their kernels lift 3-d arrays (and 3-long shapes) to 4-d and back,
# so ``conv1d`` is the same ``ConvolutionBackward0`` row as PyTorch's, to any order.
def _lift(a):
    return a[:, :, None]


def _lift_shape(shape):
    return (*shape[:2], 1, *shape[2:]) if len(shape) == 3 else tuple(shape)


def _conv(xp, x, weight, bias, stride, padding, dilation, groups):
    if x.ndim == 3:
        out = _conv2d(xp, _lift(x), _lift(weight), bias, stride, padding, dilation, groups)
        return out[:, :, 0]
    return _conv2d(xp, x, weight, bias, stride, padding, dilation, groups)


def _conv_input_grad(xp, gy, weight, input_shape, stride, padding, dilation, groups):
    if gy.ndim == 3:
        shape = _lift_shape(input_shape)
        out = _conv2d_transpose(
            xp, _lift(gy), _lift(weight), shape, stride, padding, dilation, groups
        )
        return out[:, :, 0]
    return _conv2d_transpose(xp, gy, weight, input_shape, stride, padding, dilation, groups)


def _conv_weight_grad(xp, x, gy, weight_shape, stride, padding, dilation, groups):
    if x.ndim == 3:
        shape = _lift_shape(weight_shape)
        out = _conv2d_weight(xp, _lift(x), _lift(gy), shape, stride, padding, dilation, groups)
        return out[:, :, 0]
    return _conv2d_weight(xp, x, gy, weight_shape, stride, padding, dilation, groups)


def _conv_transpose_size(size, k, s, pads, d, output_padding):
    return (size - 1) * s - pads[0] - pads[1] + d * (k - 1) + output_padding + 1


def _conv_transpose(xp, x, weight, bias, stride, padding, output_padding, dilation, groups):
    """The transposed convolution: conv's input gradient ``T(x, w)`` of the output size
    (grown by ``output_padding``), plus the bias. ``weight``: ``(C_in, C_out / groups, *k)``."""
    lifted = x.ndim == 3
    if lifted:
        x, weight = _lift(x), _lift(weight)
    n, _, h, w = x.shape
    _, cog, kh, kw = weight.shape
    ho = _conv_transpose_size(h, kh, stride[0], padding[0], dilation[0], output_padding[0])
    wo = _conv_transpose_size(w, kw, stride[1], padding[1], dilation[1], output_padding[1])
    out = _conv2d_transpose(
        xp, x, weight, (n, cog * groups, ho, wo), stride, padding, dilation, groups
    )
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return xp.ascontiguousarray(out[:, :, 0] if lifted else out)


def _constant_pad(xp, x, pad, value):
    """``x`` padded with ``value`` by ``pad`` = (last dim's left, right, the one before's...);
    negative amounts crop."""
    crop = [slice(None)] * x.ndim
    widths = [(0, 0)] * x.ndim
    for k in range(len(pad) // 2):
        dim = x.ndim - 1 - k
        left, right = pad[2 * k], pad[2 * k + 1]
        crop[dim] = slice(max(-left, 0), x.shape[dim] - max(-right, 0))
        widths[dim] = (max(left, 0), max(right, 0))
    out = xp.pad(x[tuple(crop)], widths, constant_values=value)
    return xp.ascontiguousarray(out)


def _adaptive_max_pool2d(xp, x, output_size):
    """The maximum over each adaptive window and, as PyTorch, its flat index in its ``H x W``
    plane (the first maximum, or the first nan)."""
    oh, ow = output_size
    h, w = x.shape[-2:]
    lead = x.shape[:-2]
    values = xp.empty(lead + (oh, ow), dtype=x.dtype)
    indices = xp.empty(lead + (oh, ow), dtype=np.int64)
    for i, (r0, r1) in enumerate(_adaptive_ranges(h, oh)):
        for j, (c0, c1) in enumerate(_adaptive_ranges(w, ow)):
            window = x[..., r0:r1, c0:c1].reshape(lead + (-1,))
            arg = window.argmax(-1)
            values[..., i, j] = xp.take_along_axis(window, arg[..., None], -1)[..., 0]
            indices[..., i, j] = (r0 + arg // (c1 - c0)) * w + c0 + arg % (c1 - c0)
    return values, indices
