"""The array kernels of the rows in ``nbgrad/derivatives/nn.py``: convolutions, poolings,
normalisations and index-mapping layers, for any number of spatial dims.

NOTE [N-d convolution and pooling kernels]
one kernel serves 1-, 2- and 3-d inputs. The
spatial dims are those after ``(N, C)``; attributes are tuples with one entry per spatial dim
(convolution padding: one ``(before, after)`` pair per dim), and each kernel reads the number
of spatial dims from them. im2col is a strided view ``(groups, C / groups, *k, N, *out)``
reshaped to one matrix per group.
"""

from __future__ import annotations

import math
from functools import reduce

import numpy as np

from nbgrad.kernels.common import _contiguous, _vector_norm

# NOTE [Convolution's double backward]
# conv2d C(x, w) is bilinear, so with F(x, w, gy) = <gy, C(x, w)> its input gradient
# T(gy, w) = dF/dx and weight gradient W(x, gy) = dF/dw are bilinear too, and the derivatives
# of T and W are again C, T and W: the backward of T(gy, w) sends C(g, w) to gy and W(g, gy) to
# w; the backward of W(x, gy) sends T(gy, g) to x and C(x, g) to gy. Three rows (convolution,
# convolution_input_grad, convolution_weight_grad) with NumPy kernels (im2col through a strided
# view and one matmul per group) are thus differentiable to any order. PyTorch has one
# ConvolutionBackwardBackward0 node for both gradients; nbgrad has one of that name for each.
# The N-d kernels are below.


def _pool_size(size, k, s, p, d, ceil_mode):
    """PyTorch's ``pooling_output_shape``: floor or ceil, and with ceil no window that starts
    in the right padding."""
    num = size + 2 * p - d * (k - 1) - 1
    out = (num + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _adaptive_ranges(size, out):
    """PyTorch's adaptive windows: ``[floor(i * size / out), ceil((i + 1) * size / out))``."""
    return [((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


def _layer_norm(xp, x, weight, bias, normalized_shape, eps):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    y = (x - mean) / xp.sqrt(var + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y.astype(x.dtype, copy=False)


def _channel_shape(ndim, c):
    """A per-channel vector's shape for broadcasting over ``(N, C, *)``: ``(1, C, 1, ...)``."""
    return (1, c) + (1,) * (ndim - 2)


def _batch_norm(xp, x, weight, bias, running_mean, running_var, training, momentum, eps):
    """Batch norm's forward; in training, also the in-place update of the running stats."""
    dims = (0,) + tuple(range(2, x.ndim))
    shape = _channel_shape(x.ndim, x.shape[1])
    if training:
        mean = x.mean(axis=dims)
        var = x.var(axis=dims)
        if running_mean is not None:  # as PyTorch: the running variance is the unbiased one
            n = x.size // x.shape[1]
            for buf, batch in ((running_mean, mean), (running_var, var * (n / max(n - 1, 1)))):
                buf._data *= 1 - momentum
                buf._data += (momentum * batch).astype(buf._data.dtype, copy=False)
                buf._counter()[0] += 1
    else:
        mean, var = running_mean._data, running_var._data
    y = (x - mean.reshape(shape)) / xp.sqrt(var.reshape(shape) + eps)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y.astype(x.dtype, copy=False)


# ---- convolution (NOTE [Convolution's double backward]) ----------------------------------------
def _conv_columns(xp, x, kernel, stride, padding, dilation, groups):
    """im2col: the padded input's sliding windows as one ``(C / groups * prod(k), N *
    prod(out))`` matrix per group; returns ``(columns, out)``."""
    if any(p for pair in padding for p in pair):
        x = xp.pad(x, ((0, 0), (0, 0), *padding))
    n, c, *size = x.shape
    out = [(s - d * (k - 1) - 1) // st + 1 for s, k, st, d in zip(size, kernel, stride, dilation)]
    if any(o <= 0 for o in out):
        eff = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, size))}). Kernel "
            f"size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than actual "
            "input size"
        )
    cg = c // groups
    s0, s1, *ss = x.strides
    shape = (groups, cg, *kernel, n, *out)
    strides = (s1 * cg, s1, *(s * d for s, d in zip(ss, dilation)), s0)
    strides += tuple(s * st for s, st in zip(ss, stride))
    windows = xp.lib.stride_tricks.as_strided(x, shape, strides)
    return windows.reshape(groups, cg * math.prod(kernel), n * math.prod(out)), out


def _grouped_grad_output(gy, groups):
    """``(N, O, *out)`` -> ``(groups, O / groups, N * prod(out))``."""
    n, o = gy.shape[:2]
    flat = gy.reshape(n, groups, o // groups, -1).transpose(1, 2, 0, 3)
    return flat.reshape(groups, o // groups, -1)


def _conv(xp, x, weight, bias, stride, padding, dilation, groups):
    """C(x, w): the N-d cross-correlation of ``(N, C, *size)`` by ``(O, C / groups, *k)``."""
    o, cg, *kernel = weight.shape
    n = x.shape[0]
    cols, out = _conv_columns(xp, x, kernel, stride, padding, dilation, groups)
    y = xp.matmul(weight.reshape(groups, o // groups, -1), cols)
    y = y.reshape(o, n, *out).swapaxes(0, 1)
    if bias is not None:
        y = y + bias.reshape((1, o) + (1,) * len(out))
    return xp.ascontiguousarray(y)


def _conv_input_grad(xp, gy, weight, input_shape, stride, padding, dilation, groups):
    """T(gy, w): the gradient of the convolution with respect to its input (col2im of
    ``w^T gy``)."""
    o, cg, *kernel = weight.shape
    n, c, *size = input_shape
    out = gy.shape[2:]
    w_t = weight.reshape(groups, o // groups, -1).transpose(0, 2, 1)
    cols = xp.matmul(w_t, _grouped_grad_output(gy, groups)).reshape(c, *kernel, n, *out)
    padded = [s + before + after for s, (before, after) in zip(size, padding)]
    dx = xp.zeros((n, c, *padded), dtype=cols.dtype)
    for offset in np.ndindex(*kernel):
        window = tuple(
            slice(i * d, i * d + st * (m - 1) + 1, st)
            for i, d, st, m in zip(offset, dilation, stride, out)
        )
        dx[(slice(None), slice(None)) + window] += cols[(slice(None),) + offset].swapaxes(0, 1)
    crop = tuple(slice(before, before + s) for s, (before, _) in zip(size, padding))
    return xp.ascontiguousarray(dx[(slice(None), slice(None)) + crop])


def _conv_weight_grad(xp, x, gy, weight_shape, stride, padding, dilation, groups):
    """W(x, gy): the gradient of the convolution with respect to its weight."""
    o, cg, *kernel = weight_shape
    cols, _ = _conv_columns(xp, x, kernel, stride, padding, dilation, groups)
    dw = xp.matmul(_grouped_grad_output(gy, groups), cols.transpose(0, 2, 1))
    return dw.reshape(tuple(weight_shape))


def _conv_transpose_size(size, k, s, pads, d, output_padding):
    return (size - 1) * s - pads[0] - pads[1] + d * (k - 1) + output_padding + 1


def _conv_transpose(xp, x, weight, bias, stride, padding, output_padding, dilation, groups):
    """The transposed convolution: conv's input gradient ``T(x, w)`` of the output size
    (grown by ``output_padding``), plus the bias. ``weight``: ``(C_in, C_out / groups, *k)``."""
    _, cog, *kernel = weight.shape
    size = [
        _conv_transpose_size(*args)
        for args in zip(x.shape[2:], kernel, stride, padding, dilation, output_padding)
    ]
    shape = (x.shape[0], cog * groups, *size)
    out = _conv_input_grad(xp, x, weight, shape, stride, padding, dilation, groups)
    if bias is not None:
        out = out + bias.reshape((1, -1) + (1,) * len(size))
    return xp.ascontiguousarray(out)


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


# ---- pooling ----------------------------------------------------------------------------------
def _batched(kernel):
    """Run ``kernel(xp, x, *args)`` on an unbatched ``(C, *size)`` input as a batch of one."""

    def run(xp, x, spatial, *args):
        if x.ndim == spatial + 1:
            out = kernel(xp, x[None], spatial, *args)
            return tuple(o[0] for o in out) if isinstance(out, tuple) else out[0]
        return kernel(xp, x, spatial, *args)

    return run


def _pool_windows(xp, x, kernel_size, stride, padding, dilation, ceil_mode, fill):
    """``(N, C, *out, *k)`` windows of ``x`` padded with ``fill`` (a view), and ``out``."""
    n, c, *size = x.shape
    for p, k, d in zip(padding, kernel_size, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={p}, "
                f"kernel_size={k} and dilation={d}"
            )
    out = [
        _pool_size(*args, ceil_mode) for args in zip(size, kernel_size, stride, padding, dilation)
    ]
    if any(o < 1 for o in out):
        raise RuntimeError(
            f"Given input size: ({'x'.join(map(str, [c, *size]))}). Calculated output size: "
            f"({'x'.join(map(str, [c, *out]))}). Output size is too small"
        )
    widths = [
        (p, max((o - 1) * st + d * (k - 1) + 1 - s - p, 0))
        for s, o, k, st, p, d in zip(size, out, kernel_size, stride, padding, dilation)
    ]
    padded = xp.pad(x, ((0, 0), (0, 0), *widths), constant_values=fill)
    s0, s1, *ss = padded.strides
    strides = (
        s0,
        s1,
        *(s * st for s, st in zip(ss, stride)),
        *(s * d for s, d in zip(ss, dilation)),
    )
    return xp.lib.stride_tricks.as_strided(padded, (n, c, *out, *kernel_size), strides), out


@_batched
def _max_pool(xp, x, spatial, kernel_size, stride, padding, dilation, ceil_mode):
    """The maxima and, as PyTorch, their flat indices in each spatial volume of ``x``."""
    windows, out = _pool_windows(xp, x, kernel_size, stride, padding, dilation, ceil_mode, -xp.inf)
    flat = windows.reshape(windows.shape[: 2 + spatial] + (-1,))
    arg = flat.argmax(-1)  # the first maximum, or the first nan, as PyTorch
    values = xp.take_along_axis(flat, arg[..., None], -1)[..., 0]
    index = 0
    for i in range(spatial):
        along = xp.arange(out[i]).reshape((out[i],) + (1,) * (spatial - 1 - i))
        k_i = (arg // math.prod(kernel_size[i + 1 :])) % kernel_size[i]
        pos = along * stride[i] - padding[i] + k_i * dilation[i]
        index = index * x.shape[2 + i] + pos
    return _contiguous(xp, values), index.astype(np.int64)


def _max_pool_backward(xp, g, self_shape, indices, spatial):
    """Each output's gradient added at the position of its maximum."""
    lead, volume = tuple(self_shape[:-spatial]), math.prod(self_shape[-spatial:])
    offsets = xp.arange(math.prod(lead)).reshape(lead + (1,) * spatial) * volume
    size = math.prod(self_shape)
    out = xp.bincount((indices + offsets).ravel(), weights=g.ravel(), minlength=size)
    return out.reshape(tuple(self_shape)).astype(g.dtype, copy=False)


def _avg_pool_divisors(xp, size, out, kernel_size, stride, padding, count_include_pad):
    """PyTorch's divisor of each output position: the window's size within the padded input
    (``count_include_pad``) or within the input itself."""
    lengths = []
    for s, o, k, st, p in zip(size, out, kernel_size, stride, padding):
        start = np.arange(o) * st - p
        end = np.minimum(start + k, s + p)
        length = end - start
        if not count_include_pad:
            length = np.minimum(end, s) - np.maximum(start, 0)
        lengths.append(length)
    return xp.asarray(reduce(np.multiply.outer, lengths))


@_batched
def _avg_pool(xp, x, spatial, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor):
    ones = (1,) * spatial
    windows, out = _pool_windows(xp, x, kernel_size, stride, padding, ones, ceil_mode, 0)
    sums = windows.sum(axis=tuple(range(-spatial, 0)))
    if divisor is None:
        divisor = _avg_pool_divisors(
            xp, x.shape[2:], out, kernel_size, stride, padding, count_include_pad
        ).astype(x.dtype)
    return _contiguous(xp, (sums / divisor).astype(x.dtype, copy=False))


def _avg_pool_backward(xp, g, input_shape, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, divisor):  # fmt: skip
    """The adjoint of ``_avg_pool``: each output's gradient, divided, spread over its window."""
    spatial = len(kernel_size)
    if len(input_shape) == spatial + 1:  # unbatched
        args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor)
        return _avg_pool_backward(xp, g[None], (1, *input_shape), *args)[0]
    n, c, *size = input_shape
    out = g.shape[2:]
    if divisor is None:
        divisor = _avg_pool_divisors(
            xp, size, out, kernel_size, stride, padding, count_include_pad
        ).astype(g.dtype)
    share = g / divisor
    padded = [
        p + s + max((o - 1) * st + k - s - p, 0)
        for s, o, k, st, p in zip(size, out, kernel_size, stride, padding)
    ]
    grad = xp.zeros((n, c, *padded), dtype=g.dtype)
    for offset in np.ndindex(*kernel_size):
        window = tuple(slice(i, i + st * o, st) for i, st, o in zip(offset, stride, out))
        grad[(slice(None), slice(None)) + window] += share
    crop = tuple(slice(p, p + s) for p, s in zip(padding, size))
    return _contiguous(xp, grad[(slice(None), slice(None)) + crop])


def _adaptive_windows(size, output_size):
    """Each output position and the slices of its adaptive window (PyTorch's ranges)."""
    ranges = [_adaptive_ranges(s, o) for s, o in zip(size, output_size)]
    for position in np.ndindex(*output_size):
        yield position, tuple(slice(*ranges[i][j]) for i, j in enumerate(position))


def _adaptive_avg_pool(xp, x, output_size):
    spatial = len(output_size)
    axes = tuple(range(-spatial, 0))
    out = xp.empty(x.shape[:-spatial] + tuple(output_size), dtype=x.dtype)
    for position, window in _adaptive_windows(x.shape[-spatial:], output_size):
        out[(Ellipsis, *position)] = x[(Ellipsis, *window)].mean(axis=axes)
    return out


def _adaptive_avg_pool_backward(xp, g, input_shape, spatial):
    out = xp.zeros(tuple(input_shape), dtype=g.dtype)
    for position, window in _adaptive_windows(input_shape[-spatial:], g.shape[-spatial:]):
        count = math.prod(s.stop - s.start for s in window)
        out[(Ellipsis, *window)] += (g[(Ellipsis, *position)] / count)[(...,) + (None,) * spatial]
    return out


def _adaptive_max_pool(xp, x, output_size):
    """The maximum over each adaptive window and, as PyTorch, its flat index in its spatial
    volume (the first maximum, or the first nan)."""
    spatial = len(output_size)
    size = x.shape[-spatial:]
    lead = x.shape[:-spatial]
    values = xp.empty(lead + tuple(output_size), dtype=x.dtype)
    indices = xp.empty(lead + tuple(output_size), dtype=np.int64)
    for position, window in _adaptive_windows(size, output_size):
        lengths = [s.stop - s.start for s in window]
        block = x[(Ellipsis, *window)].reshape(lead + (-1,))
        arg = block.argmax(-1)
        values[(Ellipsis, *position)] = xp.take_along_axis(block, arg[..., None], -1)[..., 0]
        index = 0
        for i, s in enumerate(window):
            index = index * size[i] + s.start + (arg // math.prod(lengths[i + 1 :])) % lengths[i]
        indices[(Ellipsis, *position)] = index
    return values, indices


def _max_unpool(xp, x, indices, output_size):
    """Each value of ``x`` written at its flat index in a zero volume of ``output_size``."""
    lead = x.shape[: x.ndim - len(output_size)]
    out = xp.zeros(lead + (math.prod(output_size),), dtype=x.dtype)
    xp.put_along_axis(out, indices.reshape(lead + (-1,)), x.reshape(lead + (-1,)), axis=-1)
    return out.reshape(lead + tuple(output_size))


# ---- affine grids -----------------------------------------------------------------------------
def _affine_base_grid(spatial, align_corners):
    """PyTorch's base grid of ``affine_grid``: ``(prod(spatial), k + 1)`` rows ``(x, y[, z],
    1)`` in [-1, 1] (pixel centres unless ``align_corners``), x running fastest."""
    axes = []
    for n in spatial:
        steps = np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
        axes.append(steps if align_corners else steps * (n - 1) / n)
    mesh = np.meshgrid(*axes, indexing="ij")  # (D,) H, W
    coords = [m.reshape(-1) for m in reversed(mesh)]  # x, y[, z]
    return np.stack(coords + [np.ones_like(coords[0])], axis=1)


def _affine_grid(xp, theta, size, align_corners):
    """``(N, *spatial, k)``: each base point mapped by the batch's ``(k, k + 1)`` matrices."""
    spatial = tuple(size[2:])
    base = xp.asarray(_affine_base_grid(spatial, align_corners).astype(theta.dtype))
    out = xp.matmul(base, theta.transpose(0, 2, 1))
    return xp.ascontiguousarray(out.reshape((theta.shape[0], *spatial, theta.shape[1])))


# ---- embedding bags (NOTE [Embedding bag row] in nbgrad/derivatives/nn.py) --------------------
def _embedding_bag(xp, weight, per_sample_weights, indices, scale, slots, mode):
    """``(output, max_indices)``: each bag's sum, mean or max of the rows of ``weight`` that
    its entries read; ``max_indices`` (mode "max") the row each maximum came from, ``-1`` in
    an empty bag, else empty as PyTorch's."""
    rows = weight[indices]
    fill = -np.inf if mode == "max" else 0
    if mode == "max":
        rows = xp.where(scale[:, None] > 0, rows, fill)
    else:
        rows = rows * (scale if per_sample_weights is None else scale * per_sample_weights)[:, None]
    slots = xp.asarray(slots)
    padded = xp.concatenate([rows, xp.full((1, weight.shape[1]), fill, dtype=weight.dtype)])
    values = padded[slots]  # (bags, longest bag, dim)
    if mode != "max":
        return values.sum(1), xp.zeros((0,), dtype=np.int64)
    at = values.argmax(1)
    entry = xp.take_along_axis(slots[:, :, None], at[:, None, :], axis=1)[:, 0]
    picked = xp.where(entry >= 0, xp.concatenate([indices, indices[:1] * 0 - 1])[entry], -1)
    out = xp.where(picked >= 0, values.max(1), 0).astype(weight.dtype, copy=False)
    return out, picked.astype(np.int64, copy=False)


# ---- fractional max pooling -------------------------------------------------------------------
def _fractional_starts(xp, samples, size, out, k):
    """ATen's ``generate_intervals``: the window starts ``(N, C, out)`` along a dim of ``size``
    for pseudo-random ``samples`` ``(N, C)``, in the input's dtype."""
    if out == 1:
        return xp.full(samples.shape + (1,), size - k, dtype=np.int64)
    dtype = samples.dtype.type
    alpha = dtype(size - k) / dtype(out - 1)
    s = samples[..., None]
    i = xp.arange(out - 1, dtype=samples.dtype)
    starts = ((i + s) * alpha).astype(np.int64) - (s * alpha).astype(np.int64)
    last = xp.full(samples.shape + (1,), size - k, dtype=np.int64)
    return xp.concatenate([starts, last], axis=-1)


def _fractional_max_pool(xp, x, samples, kernel_size, output_size):
    """``(values, flat indices)`` of the maximum of each window of an ``(N, C, *size)`` input,
    the windows starting where ``_fractional_starts`` says; ``samples[..., d]`` is for spatial
    dim ``d`` read from the last (ATen's order for 2-d: width, then height). An unbatched
    ``(C, *size)`` input takes ``(1, C, n)`` samples."""
    n = len(kernel_size)
    if x.ndim == n + 1:
        values, indices = _fractional_max_pool(xp, x[None], samples, kernel_size, output_size)
        return values[0], indices[0]
    size = x.shape[2:]
    flat = xp.zeros(x.shape[:2] + (1,) * (2 * n), dtype=np.int64)
    for d in range(n):
        sample = samples[..., n - 1 - d] if n == 2 else samples[..., d]
        starts = _fractional_starts(xp, sample, size[d], output_size[d], kernel_size[d])
        pos = starts[..., :, None] + xp.arange(kernel_size[d])  # (N, C, out_d, k_d)
        shape = [1] * (2 * n)
        shape[d], shape[n + d] = output_size[d], kernel_size[d]
        flat = flat * size[d] + pos.reshape(x.shape[:2] + tuple(shape))
    flat = flat.reshape(x.shape[:2] + tuple(output_size) + (-1,))
    values = xp.take_along_axis(
        x.reshape(x.shape[:2] + (-1,)), flat.reshape(x.shape[:2] + (-1,)), 2
    )
    values = values.reshape(flat.shape)
    at = values.argmax(-1)[..., None]
    return xp.take_along_axis(values, at, -1)[..., 0], xp.take_along_axis(flat, at, -1)[..., 0]


def _group_norm(xp, input, weight, bias, num_groups, eps):
    n, c = input.shape[:2]
    shape = _channel_shape(input.ndim, c)
    out = _layer_norm(xp, input.reshape(n, num_groups, -1), None, None, (1,), eps)
    out = out.reshape(input.shape)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out.astype(input.dtype, copy=False)


def _pdist_pairs(n):
    i, j = np.triu_indices(n, 1)
    return i.astype(np.int64), j.astype(np.int64)


def _pdist(xp, self, p):
    i, j = (xp.asarray(k) for k in _pdist_pairs(self.shape[0]))
    diff = self[i] - self[j]
    if p == 0:  # the count of entries that differ (gradient zero)
        return (diff != 0).sum(1).astype(self.dtype)
    return _vector_norm(xp, diff, p, (1,), False)


def _cdist(xp, x1, x2, p):
    diff = x1[..., :, None, :] - x2[..., None, :, :]
    if p == 0:  # the count of entries that differ (gradient zero)
        return (diff != 0).sum(-1).astype(x1.dtype)
    return _vector_norm(xp, diff, p, (-1,), False)
