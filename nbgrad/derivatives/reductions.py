"""Op table rows: reductions (sums, means, norms, extremes and their indices, medians, modes),
sort and topk, softmax and logsumexp."""

from __future__ import annotations

import math

from nbgrad._tensor import creation as _C
from nbgrad.derivatives.opinfo import op, row_function
from nbgrad.kernels.common import _vector_norm
from nbgrad.kernels.reductions import (
    _aminmax,
    _argreduce,
    _dist,
    _kthvalue,
    _log_softmax,
    _logsumexp,
    _mean,
    _median,
    _median_all,
    _mode,
    _nanmedian,
    _nanmedian_all,
    _nansum,
    _renorm,
    _softmax,
    _sort,
    _sum,
    _topk,
    _value_and_index,
    _var_std,
)

expand = row_function("expand")  # for formulas that run on arrays (NOTE [Backward on arrays])

# fmt: off
# reductions
op("sum", "SumBackward0", "self", lambda xp, self, dtype: _sum(xp, self, None, False, dtype), on_arrays=True, attrs="dtype",
   self=lambda grad, self_shape: expand(grad, size=self_shape))
op("sum_dim", "SumBackward1", "self", lambda xp, self, dim, keepdim, dtype: _sum(xp, self, dim, keepdim, dtype), attrs="dim keepdim dtype",
   self=lambda grad, self_shape, dim, keepdim: _expand_reduced(grad, self_shape, dim, keepdim))
op("mean", "MeanBackward0", "self", lambda xp, self: _mean(xp, self, None, False), promote="float",
   self=lambda grad, self_shape: grad.expand(self_shape) / max(math.prod(self_shape), 1))
op("mean_dim", "MeanBackward1", "self", lambda xp, self, dim, keepdim: _mean(xp, self, dim, keepdim), attrs="dim keepdim", promote="float",
   self=lambda grad, self_shape, dim, keepdim: _expand_reduced(grad, self_shape, dim, keepdim) / _count(self_shape, dim))
op("prod", "ProdBackward0", "self", lambda xp, self: xp.prod(self), self=lambda grad, self, result: _prod_backward(grad, self, result, None, False))
op("prod_dim", "ProdBackward1", "self", lambda xp, self, dim, keepdim: xp.prod(self, axis=dim, keepdims=keepdim), attrs="dim keepdim",
   self=lambda grad, self, result, dim, keepdim: _prod_backward(grad, self, result, dim, keepdim))
op("max", "MaxBackward1", "self", lambda xp, self: _nonempty(xp.max, self, "max"), self=lambda grad, self, result: _evenly_distribute(grad, self, result))
op("min", "MinBackward1", "self", lambda xp, self: _nonempty(xp.min, self, "min"), self=lambda grad, self, result: _evenly_distribute(grad, self, result))
op("max_dim", "MaxBackward0", "self", lambda xp, self, dim, keepdim: _value_and_index(xp, xp.argmax, self, dim, keepdim), attrs="dim keepdim",
   outputs=2, diff_outputs=(0,), self=lambda grad, result1, self_shape, dim, keepdim: _value_selecting_backward(grad, dim, result1, self_shape, keepdim))
op("min_dim", "MinBackward0", "self", lambda xp, self, dim, keepdim: _value_and_index(xp, xp.argmin, self, dim, keepdim), attrs="dim keepdim",
   outputs=2, diff_outputs=(0,), self=lambda grad, result1, self_shape, dim, keepdim: _value_selecting_backward(grad, dim, result1, self_shape, keepdim))
# sort and topk: the values and their indices along ``dim`` (stable: equal values keep their
# order); the gradient goes back to where each value came from
op("sort", "SortBackward0", "self", lambda xp, self, dim, descending: _sort(xp, self, dim, descending), attrs="dim descending",
   outputs=2, diff_outputs=(0,), self=lambda grad, result1, self_shape, dim: _value_selecting_backward(grad, dim, result1, self_shape, True))
op("topk", "TopkBackward0", "self", lambda xp, self, k, dim, largest: _topk(xp, self, k, dim, largest), attrs="k dim largest",
   outputs=2, diff_outputs=(0,), self=lambda grad, result1, self_shape, dim: _value_selecting_backward(grad, dim, result1, self_shape, True))
op("amax", "AmaxBackward0", "self", lambda xp, self, dim, keepdim: xp.amax(self, axis=dim, keepdims=keepdim), attrs="dim keepdim",
   self=lambda grad, self, result, dim, keepdim: _scale_grad_by_count(grad, self, result, dim, keepdim))
op("amin", "AminBackward0", "self", lambda xp, self, dim, keepdim: xp.amin(self, axis=dim, keepdims=keepdim), attrs="dim keepdim",
   self=lambda grad, self, result, dim, keepdim: _scale_grad_by_count(grad, self, result, dim, keepdim))
op("var", "VarBackward0", "self", lambda xp, self, dim, correction, keepdim: _var_std(xp, "var", self, dim, correction, keepdim), attrs="dim correction keepdim", promote="float",
   self=lambda grad, self, dim, correction, keepdim: _var_backward(grad, self, dim, correction, keepdim))
op("std", "StdBackward0", "self", lambda xp, self, dim, correction, keepdim: _var_std(xp, "std", self, dim, correction, keepdim), attrs="dim correction keepdim", promote="float",
   self=lambda grad, self, result, dim, correction, keepdim: _std_backward(grad, self, result, dim, correction, keepdim))
op("var_mean", "VarMeanBackward0", "self", lambda xp, self, dim, correction, keepdim: (_var_std(xp, "var", self, dim, correction, keepdim), xp.mean(self, axis=dim, keepdims=keepdim)), attrs="dim correction keepdim", promote="float",
   outputs=2, self=lambda grads, self, dim, correction, keepdim: _var_mean_backward(grads, self, dim, correction, keepdim))
op("std_mean", "StdMeanBackward0", "self", lambda xp, self, dim, correction, keepdim: (_var_std(xp, "std", self, dim, correction, keepdim), xp.mean(self, axis=dim, keepdims=keepdim)), attrs="dim correction keepdim", promote="float",
   outputs=2, self=lambda grads, self, result0, dim, correction, keepdim: _var_mean_backward(grads, self, dim, correction, keepdim, std=result0))
op("norm", "LinalgVectorNormBackward0", "self", lambda xp, self, ord, dim, keepdim: _vector_norm(xp, self, ord, dim, keepdim), attrs="ord dim keepdim", promote="float",
   self=lambda grad, self, result, ord, dim, keepdim: _norm_backward(grad, self, result, ord, dim, keepdim))
op("logsumexp", "LogsumexpBackward0", "self", lambda xp, self, dim, keepdim: _logsumexp(xp, self, dim, keepdim), attrs="dim keepdim", promote="float",
   self=lambda grad, self, result, dim, keepdim: _expand_reduced(grad, self.shape, dim, keepdim) * (self - _expand_reduced(result, self.shape, dim, keepdim)).exp())
op("softmax", "SoftmaxBackward0", "self", lambda xp, self, dim: _softmax(xp, self, dim), attrs="dim", promote="float",
   self=lambda grad, result, dim: (grad - (grad * result).sum(dim, keepdim=True)) * result)
op("log_softmax", "LogSoftmaxBackward0", "self", lambda xp, self, dim: _log_softmax(xp, self, dim), attrs="dim", promote="float",
   self=lambda grad, result, dim: grad - result.exp() * grad.sum(dim, keepdim=True))

# median: the lower of the two middle values (no dim: MedianBackward0, the gradient split among
# equal values as max's; with dim: MedianBackward1, to the index it returns)
op("median", "MedianBackward0", "self", lambda xp, self: _median_all(xp, self), self=lambda grad, self, result: _evenly_distribute(grad, self, result))
op("median_dim", "MedianBackward1", "self", lambda xp, self, dim, keepdim: _median(xp, self, dim, keepdim), attrs="dim keepdim",
   outputs=2, diff_outputs=(0,), self=lambda grad, result1, self_shape, dim, keepdim: _value_selecting_backward(grad, dim, result1, self_shape, keepdim))
op("count_nonzero", None, "self", lambda xp, self, dim: xp.asarray(xp.count_nonzero(self, axis=dim)).astype("int64"), attrs="dim", differentiable=False)

# matmul has no row: as in PyTorch it is composite (dot, mv, mm, or bmm/mm plus _unsafe_view)
# fmt: on


def _count(shape, dim):
    return max(math.prod(shape[d] for d in dim), 1) if dim is not None else max(math.prod(shape), 1)


def _expand_reduced(grad, self_shape, dim, keepdim):
    """Undo a reduction's shape change: unsqueeze reduced dims, then expand."""
    if dim is None:
        return grad.reshape((1,) * len(self_shape)).expand(self_shape) if self_shape else grad
    if not keepdim:
        for d in sorted(dim):
            grad = grad.unsqueeze(d)
    return grad.expand(self_shape)


def _nonempty(fn, a, name):
    if a.size == 0:
        raise RuntimeError(
            f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
            "Specify the reduction dim with the 'dim' argument."
        )
    return fn(a)


def _value_selecting_backward(grad, dim, indices, self_shape, keepdim):
    if not self_shape:
        return grad
    if not keepdim:
        grad = grad.unsqueeze(dim)
        indices = indices.unsqueeze(dim)
    return _C.zeros(self_shape, dtype=grad.dtype, device=grad.device).scatter_add(
        dim, indices, grad
    )


def _evenly_distribute(grad, self, result):
    """The gradient split among the values equal to ``result``; a NaN result (max, min, median
    of an input with NaNs) came from the NaNs, which share it, as PyTorch's
    ``evenly_distribute_backward``."""
    mask = self.isnan() if bool(result.isnan()) else self == result
    return _C.where(mask, grad / mask.sum(), 0.0)


def _scale_grad_by_count(grad, self, result, dim, keepdim):
    mask = self == _expand_reduced(result, self.shape, dim, keepdim)
    count = mask.sum(dim, keepdim=True) if dim is not None else mask.sum()
    return _C.where(mask, _expand_reduced(grad, self.shape, dim, keepdim) / count, 0.0)


def _prod_backward(grad, self, result, dim, keepdim):
    if self.ndim == 0:  # as PyTorch: the gradient itself (no graph through the result)
        return grad
    g = _expand_reduced(grad, self.shape, dim, keepdim)
    if not bool((self == 0).any()):
        return g * _expand_reduced(result, self.shape, dim, keepdim) / self
    # with zeros: the product of all the other elements, computed without dividing
    x = self if dim else self.reshape(-1)  # dim None (all) or () (a 0-d tensor)
    d = dim[0] if dim else 0
    n = x.shape[d]
    others = []
    for i in range(n):
        parts = [x.narrow(d, j, 1) for j in range(n) if j != i]
        if parts:
            others.append(_C.cat(parts, d).prod(d, keepdim=True))
        else:
            others.append(_C.ones_like(x.narrow(d, 0, 1)))
    excl = _C.cat(others, d).reshape(self.shape)
    return g * excl


def _var_backward(grad, self, dim, correction, keepdim):
    n = _count(self.shape, dim)
    return (
        (2.0 / max(n - correction, 0))
        * _expand_reduced(grad, self.shape, dim, keepdim)
        * (self - (self.mean(dim, keepdim=True) if dim is not None else self.mean()))
    )


def _var_mean_backward(grads, self, dim, correction, keepdim, std=None):
    """The gradient of ``var_mean`` / ``std_mean``: the var's (or std's) plus the mean's."""
    g_spread, g_mean = grads
    out = None
    if g_spread is not None:
        if std is None:
            out = _var_backward(g_spread, self, dim, correction, keepdim)
        else:
            out = _std_backward(g_spread, self, std, dim, correction, keepdim)
    if g_mean is not None:
        m = _expand_reduced(g_mean, self.shape, dim, keepdim) / _count(self.shape, dim)
        out = m if out is None else out + m
    return out


def _std_backward(grad, self, result, dim, correction, keepdim):
    # PyTorch's std_backward: var's backward of a masked grad / (2 std), so that at std 0 the
    # first and second derivatives are 0, as PyTorch's
    g = (grad / (result * 2)).masked_fill(result == 0, 0)
    return _var_backward(g, self, dim, correction, keepdim)


def _norm_backward(grad, self, result, ord, dim, keepdim):
    g = _expand_reduced(grad, self.shape, dim, keepdim)
    r = _expand_reduced(result, self.shape, dim, keepdim)
    if ord == 2:
        return g * (self / r).masked_fill(r == 0, 0)
    if ord == 1:
        return self.sign() * g
    if ord == math.inf:
        mask = self.abs() == r
        count = mask.sum(dim, keepdim=True) if dim is not None else mask.sum()
        return _C.where(mask, self.sign() * g / count, 0.0)
    # as PyTorch's norm_backward: the masked quotient, so that double backward at a zero norm
    # gives PyTorch's values (0 or nan) and not 0 * inf
    scale = (g / r ** (ord - 1)).masked_fill(r == 0, 0)
    if ord < 2:
        return self.sign() * self.abs() ** (ord - 1) * scale
    return self * self.abs() ** (ord - 2) * scale


# fmt: off
op("nansum", "NansumBackward0", "self", lambda xp, self, dim, keepdim, dtype: _nansum(xp, self, dim, keepdim, dtype), attrs="dim keepdim dtype",
   self=lambda grad, self, dim, keepdim: _expand_reduced(grad, self.shape, dim, keepdim) * self.isnan().logical_not())
op("nanmedian", "NanmedianBackward0", "self", lambda xp, self: _nanmedian_all(xp, self),
   self=lambda grad, self, result: _evenly_distribute(grad, self, result))
op("nanmedian_dim", "NanmedianBackward1", "self", lambda xp, self, dim, keepdim: _nanmedian(xp, self, dim, keepdim), attrs="dim keepdim",
   outputs=2, diff_outputs=(0,), self=lambda grad, result1, self_shape, dim, keepdim: _value_selecting_backward(grad, dim, result1, self_shape, keepdim))
op("kthvalue", "KthvalueBackward0", "self", lambda xp, self, k, dim, keepdim: _kthvalue(xp, self, k, dim, keepdim), attrs="k dim keepdim",
   outputs=2, diff_outputs=(0,), self=lambda grad, result1, self_shape, dim, keepdim: _value_selecting_backward(grad, dim, result1, self_shape, keepdim))
op("mode", "ModeBackward0", "self", lambda xp, self, dim, keepdim: _mode(xp, self, dim, keepdim), attrs="dim keepdim",
   outputs=2, diff_outputs=(0,), self=lambda grad, result1, self_shape, dim, keepdim: _value_selecting_backward(grad, dim, result1, self_shape, keepdim))
op("aminmax", "AminmaxBackward0", "self", lambda xp, self, dim, keepdim: _aminmax(xp, self, dim, keepdim), attrs="dim keepdim",
   outputs=2, self=lambda grads, self, result0, result1, dim, keepdim: _aminmax_backward(grads, self, result0, result1, dim, keepdim))
op("dist", "DistBackward0", "self other", lambda xp, self, other, p: _dist(xp, self, other, p), attrs="p", promote="float",
   self=lambda grad, self, other, result, p: _norm_backward(grad, self - other, result, p, None, False),
   other=lambda grad, self, other, result, p: -_norm_backward(grad, self - other, result, p, None, False))
op("renorm", "RenormBackward0", "self", lambda xp, self, p, dim, maxnorm: _renorm(xp, self, p, dim, maxnorm), attrs="p dim maxnorm", quiet=True,
   self=lambda grad, self, p, dim, maxnorm: _renorm_backward(grad, self, p, dim, maxnorm))
# fmt: on


def _aminmax_backward(grads, self, result0, result1, dim, keepdim):
    g_min, g_max = grads
    dims = None if dim is None else (dim,)
    out = None
    for g, r in ((g_min, result0), (g_max, result1)):
        if g is None:
            continue
        part = _scale_grad_by_count(g, self, r, dims, keepdim)
        out = part if out is None else out + part
    return out


def _renorm_backward(grad, self, p, dim, maxnorm):
    """The gradient of ``self * factor`` with ``factor = maxnorm / (norm + 1e-7)`` where a
    sub-tensor's ``p``-norm is above ``maxnorm`` (else 1), the norms over every dim but
    ``dim``."""
    dims = tuple(d for d in range(self.ndim) if d != dim)
    norm = self.norm(p, dims, keepdim=True)
    over = norm > maxnorm
    factor = _C.where(over, maxnorm / (norm + 1e-7), 1.0)
    dfactor = _C.where(over, -maxnorm / ((norm + 1e-7) * (norm + 1e-7)), 0.0)
    dnorm = _norm_backward((grad * self).sum(dims, keepdim=True), self, norm, p, dims, True)
    return grad * factor + dfactor * dnorm


# fmt: off
# at::norm(self, p, dim, keepdim), which pairwise_distance calls: the vector norm's kernel and
# formula under PyTorch's node name for this overload
op("norm_scalar_dim", "NormBackward1", "self", lambda xp, self, ord, dim, keepdim: _vector_norm(xp, self, ord, dim, keepdim), attrs="ord dim keepdim", promote="float",
   self=lambda grad, self, result, ord, dim, keepdim: _norm_backward(grad, self, result, ord, dim, keepdim))
# fmt: on


# fmt: off
op("argmax", None, "self", lambda xp, self, dim, keepdim: _argreduce(xp.argmax, xp, self, dim, keepdim), attrs="dim keepdim", differentiable=False)
op("argmin", None, "self", lambda xp, self, dim, keepdim: _argreduce(xp.argmin, xp, self, dim, keepdim), attrs="dim keepdim", differentiable=False)
# fmt: on
