"""Op table rows: the ops behind ``nbgrad.nn.functional`` (convolution, padding, pooling,
normalisation, distances, embedding); its losses are in ``losses.py``, ``addmm`` in ``linalg.py``."""

from __future__ import annotations

from nbgrad._tensor import creation as _C
from nbgrad._tensor.dispatch import OPS, _dispatch
from nbgrad.derivatives.opinfo import op
from nbgrad.derivatives.reductions import _norm_backward
from nbgrad.kernels.nn import (
    _adaptive_avg_pool,
    _adaptive_avg_pool_backward,
    _adaptive_max_pool,
    _affine_base_grid,
    _affine_grid,
    _avg_pool,
    _avg_pool_backward,
    _batch_norm,
    _cdist,
    _channel_shape,
    _constant_pad,
    _conv,
    _conv_input_grad,
    _conv_transpose,
    _conv_weight_grad,
    _embedding_bag,
    _fractional_max_pool,
    _group_norm,
    _layer_norm,
    _max_pool,
    _max_pool_backward,
    _max_unpool,
    _pdist,
    _pdist_pairs,
)

# fmt: off
# padding is ((top, bottom), (left, right)); see NOTE [Convolution's double backward] and, for
# 3-d inputs (conv1d), NOTE [N-d convolution and pooling kernels]
op("convolution", "ConvolutionBackward0", "input weight bias", lambda xp, input, weight, bias, stride, padding, dilation, groups: _conv(xp, input, weight, bias, stride, padding, dilation, groups),
   attrs="stride padding dilation groups",
   input=lambda grad, weight, input_shape, stride, padding, dilation, groups: _conv2d_input_grad(grad, weight, input_shape, stride, padding, dilation, groups),
   weight=lambda grad, input, weight_shape, stride, padding, dilation, groups: _conv2d_weight_grad(input, grad, weight_shape, stride, padding, dilation, groups),
   bias=lambda grad: _sum_but_channels(grad))
op("convolution_input_grad", "ConvolutionBackwardBackward0", "grad_output weight", lambda xp, grad_output, weight, input_shape, stride, padding, dilation, groups: _conv_input_grad(xp, grad_output, weight, input_shape, stride, padding, dilation, groups),
   attrs="input_shape stride padding dilation groups",
   grad_output=lambda grad, weight, stride, padding, dilation, groups: _conv2d_call(grad, weight, stride, padding, dilation, groups),
   weight=lambda grad, grad_output, weight_shape, stride, padding, dilation, groups: _conv2d_weight_grad(grad, grad_output, weight_shape, stride, padding, dilation, groups))
op("convolution_weight_grad", "ConvolutionBackwardBackward0", "input grad_output", lambda xp, input, grad_output, weight_shape, stride, padding, dilation, groups: _conv_weight_grad(xp, input, grad_output, weight_shape, stride, padding, dilation, groups),
   attrs="weight_shape stride padding dilation groups",
   input=lambda grad, grad_output, input_shape, stride, padding, dilation, groups: _conv2d_input_grad(grad_output, grad, input_shape, stride, padding, dilation, groups),
   grad_output=lambda grad, input, stride, padding, dilation, groups: _conv2d_call(input, grad, stride, padding, dilation, groups))
# the transposed convolution (PyTorch's convolution with transposed=True): T(input, weight) of
# NOTE [Convolution's double backward], so its derivatives are C and W again
op("convolution_transpose", "ConvolutionBackward0", "input weight bias", lambda xp, input, weight, bias, stride, padding, output_padding, dilation, groups: _conv_transpose(xp, input, weight, bias, stride, padding, output_padding, dilation, groups),
   attrs="stride padding output_padding dilation groups",
   input=lambda grad, weight, stride, padding, dilation, groups: _conv2d_call(grad, weight, stride, padding, dilation, groups),
   weight=lambda grad, input, weight_shape, stride, padding, dilation, groups: _conv2d_weight_grad(grad, input, weight_shape, stride, padding, dilation, groups),
   bias=lambda grad: _sum_but_channels(grad))
# pad: (last dim's left, right, the one before's left, right, ...); negative amounts crop, so
# the backward is the same op with the amounts negated
op("constant_pad_nd", "ConstantPadNdBackward0", "self", lambda xp, self, pad, value: _constant_pad(xp, self, pad, value),
   attrs="pad value",
   self=lambda grad, pad: _dispatch(OPS["constant_pad_nd"], (grad,), {"pad": tuple(-p for p in pad), "value": 0}))
op("layer_norm", "NativeLayerNormBackward0", "input weight bias", lambda xp, input, weight, bias, normalized_shape, eps: _layer_norm(xp, input, weight, bias, normalized_shape, eps),
   attrs="normalized_shape eps",
   input=lambda grad, input, weight, normalized_shape, eps: _layer_norm_input_grad(grad, input, weight, normalized_shape, eps),
   weight=lambda grad, input, normalized_shape, eps: _sum_leading(grad * _layer_norm_stats(input, normalized_shape, eps)[0], len(normalized_shape)),
   bias=lambda grad, normalized_shape: _sum_leading(grad, len(normalized_shape)))
# group norm: layer norm of the input viewed as (N, G, -1), then a per-channel affine step
op("native_group_norm", "NativeGroupNormBackward0", "input weight bias", lambda xp, input, weight, bias, num_groups, eps: _group_norm(xp, input, weight, bias, num_groups, eps),
   attrs="num_groups eps",
   input=lambda grad, input, weight, num_groups, eps: _group_norm_input_grad(grad, input, weight, num_groups, eps),
   weight=lambda grad, input, num_groups, eps: _sum_but_channels(grad * _group_norm_x_hat(input, num_groups, eps)),
   bias=lambda grad: _sum_but_channels(grad))
# pdist: the norms of the differences of the rows i < j (the pairs of ``_pdist_pairs``)
op("_pdist_forward", "PdistBackward0", "self", lambda xp, self, p: _pdist(xp, self, p),
   attrs="p",
   self=lambda grad, self, p, result: _pdist_backward(grad, self, p, result))
# cdist: the norms of the differences of every row of x1 with every row of x2 (batched)
op("_cdist_forward", "CdistBackward0", "x1 x2", lambda xp, x1, x2, p: _cdist(xp, x1, x2, p),
   attrs="p",
   x1=lambda grad, x1, x2, p, result: _cdist_backward(grad, x1, x2, p, result)[0],
   x2=lambda grad, x1, x2, p, result: _cdist_backward(grad, x1, x2, p, result)[1])
# running_mean / running_var are attributes (tensors that no gradient reaches); in eval mode
# ``F.batch_norm`` passes copies, so that a later training step cannot change what backward uses
op("batch_norm", "NativeBatchNormBackward0", "input weight bias", lambda xp, input, weight, bias, running_mean, running_var, training, momentum, eps: _batch_norm(xp, input, weight, bias, running_mean, running_var, training, momentum, eps),
   attrs="running_mean running_var training momentum eps",
   input=lambda grad, input, weight, running_mean, running_var, training, eps: _batch_norm_input_grad(grad, input, weight, running_mean, running_var, training, eps),
   weight=lambda grad, input, running_mean, running_var, training, eps: _batch_norm_weight_grad(grad, input, running_mean, running_var, training, eps),
   bias=lambda grad, input: grad.sum((0,) + tuple(range(2, input.dim()))))
op("embedding", "EmbeddingBackward0", "weight indices", lambda xp, weight, indices, padding_idx: xp.take(weight, indices, axis=0),
   attrs="padding_idx", nondiff=("indices",),
   weight=lambda grad, weight_shape, indices, padding_idx: _embedding_backward(grad, weight_shape, indices, padding_idx))
# NOTE [Embedding bag row]
# the caller (``F.embedding_bag``) lays the bags out in NumPy: entry
# ``i`` reads row ``indices[i]`` into bag ``bag_of[i]`` counted ``scale[i]`` times (0 for
# ``padding_idx``, ``1 / size`` of its bag for "mean"; times ``per_sample_weights[i]``), and
# ``slots`` (bags, longest bag) lists each bag's entries (-1: none). "max" also returns the row
# of each maximum, through which its gradient goes, as PyTorch's ``max_indices``.
op("_embedding_bag", "EmbeddingBagBackward0", "weight per_sample_weights indices bag_of scale", lambda xp, weight, per_sample_weights, indices, bag_of, scale, slots, mode: _embedding_bag(xp, weight, per_sample_weights, indices, scale, slots, mode),
   attrs="slots mode", outputs=2, diff_outputs=(0,), nondiff=("indices", "bag_of", "scale"),
   weight=lambda grad, weight_shape, per_sample_weights, indices, bag_of, scale, mode, result1: _embedding_bag_weight_grad(grad, weight_shape, per_sample_weights, indices, bag_of, scale, mode, result1),
   per_sample_weights=lambda grad, weight, indices, bag_of, scale: grad.index_select(0, bag_of).mul(weight.index_select(0, indices)).sum(1) * scale)
# fmt: on

# NOTE [Pooling rows]
# max keeps the flat index of each maximum in its spatial volume (its
# second, non-differentiable output). Each backward is an op of its own, as in PyTorch: linear
# in the gradient (its derivative is the forward again, or a gather), and with ``self`` as an
# input whose derivative is zero. One set of rows per number of spatial dims (2 and 3; the 1-d
# poolings are the 2-d ones over a height of 1), all on the N-d kernels of ``nbgrad/kernels/nn.py``.
_POOL_ATTRS = (
    "kernel_size",
    "stride",
    "padding",
    "ceil_mode",
    "count_include_pad",
    "divisor_override",
)


def _zeros_like_shape(grad, shape):
    return _C.zeros(shape, dtype=grad.dtype, device=grad.device)


def _gather_at_indices(grad, indices, n):
    """The adjoint of the max pools' backward: each position's gradient read at its index."""
    return grad.flatten(-n).gather(-1, indices.flatten(-n)).reshape(indices.shape)


def _pool_rows(n):
    """Register the ``n``-d max, average and adaptive pooling rows and their backward rows."""
    max_back, avg, avg_back = f"max_pool{n}d_backward", f"avg_pool{n}d", f"avg_pool{n}d_backward"
    adaptive_avg, adaptive_avg_back = f"adaptive_avg_pool{n}d", f"adaptive_avg_pool{n}d_backward"
    # fmt: off
    op(f"max_pool{n}d", f"MaxPool{n}DWithIndicesBackward0", "self", lambda xp, self, kernel_size, stride, padding, dilation, ceil_mode: _max_pool(xp, self, n, kernel_size, stride, padding, dilation, ceil_mode),
       attrs="kernel_size stride padding dilation ceil_mode", outputs=2, diff_outputs=(0,),
       self=lambda grad, self, result1: _dispatch(OPS[max_back], (grad, self, result1)))
    op(max_back, f"MaxPool{n}DWithIndicesBackwardBackward0", "grad_output self indices", lambda xp, grad_output, self, indices: _max_pool_backward(xp, grad_output, self.shape, indices, n),
       nondiff=("indices",),
       grad_output=lambda grad, indices: _gather_at_indices(grad, indices, n),
       self=lambda grad, self_shape: _zeros_like_shape(grad, self_shape))
    op(avg, f"AvgPool{n}DBackward0", "self", lambda xp, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override: _avg_pool(xp, self, n, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override),
       attrs=" ".join(_POOL_ATTRS),
       self=lambda grad, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override: _dispatch(OPS[avg_back], (grad, self), dict(zip(_POOL_ATTRS, (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)))))
    op(avg_back, f"AvgPool{n}DBackwardBackward0", "grad_output self", lambda xp, grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override: _avg_pool_backward(xp, grad_output, self.shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override),
       attrs=" ".join(_POOL_ATTRS),
       grad_output=lambda grad, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override: _dispatch(OPS[avg], (grad,), dict(zip(_POOL_ATTRS, (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)))),
       self=lambda grad, self_shape: _zeros_like_shape(grad, self_shape))
    op(adaptive_avg, f"AdaptiveAvgPool{n}DBackward0", "self", lambda xp, self, output_size: _adaptive_avg_pool(xp, self, output_size), attrs="output_size",
       self=lambda grad, self: _dispatch(OPS[adaptive_avg_back], (grad, self)))
    op(adaptive_avg_back, f"AdaptiveAvgPool{n}DBackwardBackward0", "grad_output self", lambda xp, grad_output, self: _adaptive_avg_pool_backward(xp, grad_output, self.shape, n),
       grad_output=lambda grad, grad_output_shape: _dispatch(OPS[adaptive_avg], (grad,), {"output_size": tuple(grad_output_shape[-n:])}),
       self=lambda grad, self_shape: _zeros_like_shape(grad, self_shape))
    # adaptive max pooling keeps flat indices as max pooling does, and shares its backward row
    op(f"adaptive_max_pool{n}d", f"AdaptiveMaxPool{n}DBackward0", "self", lambda xp, self, output_size: _adaptive_max_pool(xp, self, output_size),
       attrs="output_size", outputs=2, diff_outputs=(0,),
       self=lambda grad, self, result1: _dispatch(OPS[max_back], (grad, self, result1)))
    # max unpooling: the adjoint of the max pools' backward (a write where the maxima were)
    op(f"max_unpool{n}d", f"MaxUnpool{n}DBackward0", "self indices", lambda xp, self, indices, output_size: _max_unpool(xp, self, indices, output_size),
       attrs="output_size", nondiff=("indices",),
       self=lambda grad, indices: _gather_at_indices(grad, indices, n))
    # fmt: on


_pool_rows(2)
_pool_rows(3)


def _fractional_pool_rows(n):
    """Fractional max pooling: windows at pseudo-random starts (``_random_samples``, an input
    without gradient), indices and backward as the max pools' (NOTE [Pooling rows])."""
    back = f"fractional_max_pool{n}d_backward"
    # fmt: off
    op(f"fractional_max_pool{n}d", f"FractionalMaxPool{n}DBackward0", "self random_samples", lambda xp, self, random_samples, kernel_size, output_size: _fractional_max_pool(xp, self, random_samples, kernel_size, output_size),
       attrs="kernel_size output_size", outputs=2, diff_outputs=(0,), nondiff=("random_samples",),
       self=lambda grad, self, result1: _dispatch(OPS[back], (grad, self, result1)))
    op(back, f"FractionalMaxPool{n}DBackwardBackward0", "grad_output self indices", lambda xp, grad_output, self, indices: _max_pool_backward(xp, grad_output, self.shape, indices, n),
       nondiff=("indices",),
       grad_output=lambda grad, indices: _gather_at_indices(grad, indices, n),
       self=lambda grad, self_shape: _zeros_like_shape(grad, self_shape))
    # fmt: on


_fractional_pool_rows(2)
_fractional_pool_rows(3)

# fmt: off
# affine_grid: the base grid (a constant) times each matrix, so theta's gradient is grad^T base
op("affine_grid_generator", "AffineGridGeneratorBackward0", "theta", lambda xp, theta, size, align_corners: _affine_grid(xp, theta, size, align_corners),
   attrs="size align_corners",
   theta=lambda grad, theta_shape, size, align_corners: _affine_grid_theta_grad(grad, theta_shape, size, align_corners))
# fmt: on


def _affine_grid_theta_grad(grad, theta_shape, size, align_corners):
    base = _affine_base_grid(tuple(size[2:]), align_corners)
    base = _C.tensor(base, dtype=grad.dtype, device=grad.device)
    return grad.reshape(theta_shape[0], -1, theta_shape[1]).transpose(1, 2).matmul(base)


def _sum_but_channels(grad):
    return grad.sum((0,) + tuple(range(2, grad.dim())))


def _conv_attrs(stride, padding, dilation, groups):
    return {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}


def _conv2d_call(input, weight, stride, padding, dilation, groups):
    attrs = _conv_attrs(stride, padding, dilation, groups)
    return _dispatch(OPS["convolution"], (input, weight, None), attrs)


def _conv2d_input_grad(grad_output, weight, input_shape, stride, padding, dilation, groups):
    attrs = _conv_attrs(stride, padding, dilation, groups)
    attrs["input_shape"] = tuple(input_shape)
    return _dispatch(OPS["convolution_input_grad"], (grad_output, weight), attrs)


def _conv2d_weight_grad(input, grad_output, weight_shape, stride, padding, dilation, groups):
    attrs = _conv_attrs(stride, padding, dilation, groups)
    attrs["weight_shape"] = tuple(weight_shape)
    return _dispatch(OPS["convolution_weight_grad"], (input, grad_output), attrs)


def _normalized(input, dims, eps):
    """``(x_hat, rstd)`` of ``input`` normalised over ``dims``, recomputed with Tensor ops (so
    that they are differentiable): layer norm's trailing dims, batch norm's all but 1."""
    centred = input - input.mean(dims, keepdim=True)
    rstd = ((centred * centred).mean(dims, keepdim=True) + eps).rsqrt()
    return centred * rstd, rstd


def _normalized_input_grad(grad, input, weight, dims, eps):
    """The gradient of ``normalise(input) * weight`` w.r.t. ``input``, batch statistics."""
    x_hat, rstd = _normalized(input, dims, eps)
    g = grad * weight if weight is not None else grad
    return rstd * (g - g.mean(dims, keepdim=True) - x_hat * (g * x_hat).mean(dims, keepdim=True))


def _layer_norm_dims(input, normalized_shape):
    return tuple(range(input.dim() - len(normalized_shape), input.dim()))


def _layer_norm_stats(input, normalized_shape, eps):
    return _normalized(input, _layer_norm_dims(input, normalized_shape), eps)


def _layer_norm_input_grad(grad, input, weight, normalized_shape, eps):
    dims = _layer_norm_dims(input, normalized_shape)
    return _normalized_input_grad(grad, input, weight, dims, eps)


def _group_norm_x_hat(input, num_groups, eps):
    grouped = input.reshape(input.shape[0], num_groups, -1)
    return _normalized(grouped, (2,), eps)[0].reshape(input.shape)


def _group_norm_input_grad(grad, input, weight, num_groups, eps):
    if weight is not None:
        grad = grad * weight.reshape(_channel_shape(input.dim(), input.shape[1]))
    grouped = input.reshape(input.shape[0], num_groups, -1)
    g = grad.reshape(grouped.shape)
    return _normalized_input_grad(g, grouped, None, (2,), eps).reshape(input.shape)


def _pdist_backward(grad, self, p, result):
    if p == 0:
        return _zeros_like_shape(grad, self.shape)
    i, j = (_C.tensor(k, device=grad.device) for k in _pdist_pairs(self.shape[0]))
    diff = self.index_select(0, i) - self.index_select(0, j)
    g = _norm_backward(grad, diff, result, p, (1,), False)
    return _zeros_like_shape(grad, self.shape).index_add(0, i, g).index_add(0, j, -g)


def _cdist_backward(grad, x1, x2, p, result):
    """``(grad x1, grad x2)`` as PyTorch's ``_cdist_backward``: zero where a distance is zero,
    and for ``p = inf`` the sign at every entry that reaches the maximum (no share of ties)."""
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if p == 0:
        g = _zeros_like_shape(grad, diff.shape)
    elif p == float("inf"):
        g = grad.unsqueeze(-1) * diff.sign() * (diff.abs() == result.unsqueeze(-1))
    else:
        g = _norm_backward(grad, diff, result, p, (-1,), False)
        if p < 1:
            g = g.masked_fill(diff == 0, 0)
    return g.sum(-2), -g.sum(-3)


def _batch_norm_x_hat(input, running_var, running_mean, training, eps):
    """``(x_hat, rstd, dims)``: from the batch in training, from the running stats in eval."""
    dims = (0,) + tuple(range(2, input.dim()))
    if training:
        return (*_normalized(input, dims, eps), dims)
    shape = _channel_shape(input.dim(), input.shape[1])
    rstd = (running_var.detach().reshape(shape) + eps).rsqrt()
    return (input - running_mean.detach().reshape(shape)) * rstd, rstd, dims


def _batch_norm_input_grad(grad, input, weight, running_mean, running_var, training, eps):
    shape = _channel_shape(input.dim(), input.shape[1])
    w = weight.reshape(shape) if weight is not None else None
    x_hat, rstd, dims = _batch_norm_x_hat(input, running_var, running_mean, training, eps)
    if training:
        return _normalized_input_grad(grad, input, w, dims, eps)
    return grad * (w * rstd if w is not None else rstd)


def _batch_norm_weight_grad(grad, input, running_mean, running_var, training, eps):
    x_hat, _, dims = _batch_norm_x_hat(input, running_var, running_mean, training, eps)
    return (grad * x_hat).sum(dims)


def _sum_leading(t, n_trailing):
    """Sum over all but the last ``n_trailing`` dimensions."""
    lead = tuple(range(t.dim() - n_trailing))
    return t.sum(lead) if lead else t


def _embedding_backward(grad, weight_shape, indices, padding_idx):
    flat = indices.reshape(-1)
    g = grad.reshape(-1, weight_shape[1])
    if padding_idx is not None:
        g = g.masked_fill((flat == padding_idx).unsqueeze(1), 0)
    out = _C.zeros(weight_shape, dtype=grad.dtype, device=grad.device)
    return out.index_add(0, flat, g)


def _embedding_bag_weight_grad(grad, weight_shape, per_sample_weights, indices, bag_of, scale, mode, result1):  # fmt: skip
    out = _C.zeros(weight_shape, dtype=grad.dtype, device=grad.device)
    if mode == "max":
        return out.scatter_add(0, result1.clamp(min=0), grad.masked_fill(result1 < 0, 0))
    counts = scale if per_sample_weights is None else scale * per_sample_weights
    return out.index_add(0, indices, grad.index_select(0, bag_of) * counts.unsqueeze(1))
