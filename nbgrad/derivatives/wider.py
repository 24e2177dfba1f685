"""Op table rows for PyTorch's wider surface: more pointwise math (``acosh``, ``xlogy``,
``fmax``, ``addcmul``...), scans and reductions (``cummax``, ``logcumsumexp``, ``nansum``,
``kthvalue``, ``mode``...), products (``addmv``, ``addr``, ``addbmm``, ``vdot``), indexing
(``index_copy``, ``scatter_reduce``, ``masked_scatter``, ``put``...), and the counting and
searching ops that have no gradient (``histc``, ``bincount``, ``searchsorted``, ``isin``...).

The formulas are those of PyTorch's ``derivatives.yaml`` for the same ops; the kernels are in
``_kernels_wider.py``.
"""

from __future__ import annotations

import math

import nbgrad
from nbgrad._kernels import _contiguous, _floor_divide, _split
from nbgrad._tensor import creation as _C
from nbgrad._tensor.dispatch import OPS, _dispatch
from nbgrad.derivatives._kernels_fills import (
    _cauchy,
    _compared,
    _exponential,
    _geometric,
    _log_normal,
    _normal_fill,
    _random,
    _uniform,
)
from nbgrad.derivatives._kernels_wider import (
    _addbmm,
    _addmv,
    _addr,
    _aminmax,
    _bincount,
    _bitwise,
    _block_diag,
    _copysign,
    _cumextreme,
    _dist,
    _erfc,
    _frexp,
    _gcd_lcm,
    _heaviside,
    _histc,
    _histogram,
    _histogramdd,
    _index_copy,
    _index_fill,
    _index_put_accumulate,
    _isin,
    _kthvalue,
    _ldexp,
    _logcumsumexp,
    _logit,
    _masked_scatter,
    _mode,
    _nanmedian,
    _nanmedian_all,
    _nansum,
    _put,
    _renorm,
    _scatter_reduce,
    _searchsorted,
    _unfold,
    _unfold_backward,
    _unique_consecutive,
    _xlogy,
)
from nbgrad.derivatives.opinfo import op
from nbgrad.derivatives.pointwise import _not_implemented
from nbgrad.derivatives.reductions import (
    _evenly_distribute,
    _expand_reduced,
    _norm_backward,
    _scale_grad_by_count,
    _value_selecting_backward,
)
from nbgrad.derivatives.shape import _cat_grads

_PI = math.pi

# fmt: off
# pointwise
op("acosh", "AcoshBackward0", "self", lambda xp, self: xp.arccosh(self), promote="float", quiet=True,
   self=lambda grad, self: grad * (self * self - 1).rsqrt())
op("asinh", "AsinhBackward0", "self", lambda xp, self: xp.arcsinh(self), promote="float",
   self=lambda grad, self: grad * (self * self + 1).rsqrt())
op("atanh", "AtanhBackward0", "self", lambda xp, self: xp.arctanh(self), promote="float", quiet=True,
   self=lambda grad, self: grad * (1 - self * self).reciprocal())
op("erfc", "ErfcBackward0", "self", lambda xp, self: _erfc(xp, self), promote="float",
   self=lambda grad, self: grad * (-2 / math.sqrt(_PI)) * (-self * self).exp())
op("deg2rad", "Deg2RadBackward0", "self", lambda xp, self: self * (_PI / 180), promote="float",
   self=lambda grad: grad * (_PI / 180))
op("rad2deg", "Rad2DegBackward0", "self", lambda xp, self: self * (180 / _PI), promote="float",
   self=lambda grad: grad * (180 / _PI))
op("logit", "LogitBackward0", "self", lambda xp, self, eps: _logit(xp, self, eps), attrs="eps", promote="float", quiet=True,
   self=lambda grad, self, eps: _logit_backward(grad, self, eps))
op("sinc", "SincBackward0", "self", lambda xp, self: xp.sinc(self), promote="float", quiet=True,
   self=lambda grad, self: grad * _sinc_derivative(self))
op("xlogy", "XlogyBackward0", "self other", lambda xp, self, other: _xlogy(xp, self, other), promote="float", quiet=True,
   self=lambda grad, self, other: grad * _xlogy_of_nonzero(self, other),
   other=lambda grad, self, other: grad * self / other)
op("xlogy_self_scalar", "XlogyBackward1", "other", lambda xp, other, self: _xlogy(xp, xp.asarray(self, other.dtype), other), on_arrays=True, attrs="self", promote="float", promote_attrs=("self",), quiet=True,
   other=lambda grad, self, other: grad * self / other)
op("xlogy_other_scalar", "XlogyBackward2", "self", lambda xp, self, other: _xlogy(xp, self, xp.asarray(other, self.dtype)), attrs="other", promote="float", promote_attrs=("other",), quiet=True,
   self=lambda grad, self, other: grad * _xlogy_of_nonzero(self, other))
op("fmax", "FmaxBackward0", "self other", lambda xp, self, other: xp.fmax(self, other), promote="binary",
   self=lambda grad, self, other: grad.masked_fill((self >= other).logical_or(other.isnan()).logical_not(), 0),
   other=lambda grad, self, other: grad.masked_fill((self >= other).logical_or(other.isnan()), 0))
op("fmin", "FminBackward0", "self other", lambda xp, self, other: xp.fmin(self, other), promote="binary",
   self=lambda grad, self, other: grad.masked_fill((self <= other).logical_or(other.isnan()).logical_not(), 0),
   other=lambda grad, self, other: grad.masked_fill((self <= other).logical_or(other.isnan()), 0))
op("copysign", "CopysignBackward0", "self other", lambda xp, self, other: _copysign(xp, self, other), promote="float",
   self=lambda grad, self, result: grad * _copysign_ratio(self, result),
   other=lambda grad, other: _C.zeros_like(other))
op("copysign_scalar", "CopysignBackward1", "self", lambda xp, self, other: _copysign(xp, self, other), attrs="other", promote="float", promote_attrs=("other",),
   self=lambda grad, self, result: grad * _copysign_ratio(self, result))
op("logaddexp2", "Logaddexp2Backward0", "self other", lambda xp, self, other: xp.logaddexp2(self, other), promote="float",
   self=lambda grad, self, other: grad / (1 + (other - self).exp2()),
   other=lambda grad, self, other: grad / (1 + (self - other).exp2()))
op("ldexp", "LdexpBackward0", "self other", lambda xp, self, other: _ldexp(xp, self, other), promote="float", quiet=True,
   self=lambda grad, other: grad * other.exp2(),
   other=lambda grad, result: grad * result * math.log(2))
op("nextafter", "NextafterBackward0", "self other", lambda xp, self, other: xp.nextafter(self, other), promote="binary",
   self=lambda grad: grad,
   other=lambda grad, other: _C.zeros_like(other))
op("heaviside", "NotImplemented", "self values", lambda xp, self, values: _heaviside(xp, self, values),
   self=lambda grad: _not_implemented("heaviside"),
   values=lambda grad: _not_implemented("heaviside"))
# (the exponent, an integer output, is detached: a saved output comes back attached to its node)
op("frexp", "FrexpBackward0", "self", lambda xp, self: _frexp(xp, self), outputs=2, diff_outputs=(0,),
   self=lambda grad, result1: grad / result1.detach().exp2())
op("addcmul", "AddcmulBackward0", "self tensor1 tensor2", lambda xp, self, tensor1, tensor2, value: self + value * tensor1 * tensor2, on_arrays=True, attrs="value", promote="binary",
   self=lambda grad: grad,
   tensor1=lambda grad, tensor2, value: grad * tensor2 * value,
   tensor2=lambda grad, tensor1, value: grad * tensor1 * value)
op("addcdiv", "AddcdivBackward0", "self tensor1 tensor2", lambda xp, self, tensor1, tensor2, value: self + value * tensor1 / tensor2, on_arrays=True, attrs="value", promote="binary", quiet=True,
   self=lambda grad: grad,
   tensor1=lambda grad, tensor2, value: grad * value / tensor2,
   tensor2=lambda grad, tensor1, tensor2, value: -grad * value * tensor1 / (tensor2 * tensor2))
op("rsub_tensor", "RsubBackward0", "self other", lambda xp, self, other, alpha: other - self if alpha == 1 else other - alpha * self, on_arrays=True, attrs="alpha", promote="binary",
   self=lambda grad, alpha: -grad if alpha == 1 else grad * -alpha,
   other=lambda grad: grad)
op("div_rounding", "DivBackward2", "self other", lambda xp, self, other, rounding_mode: _rounded_quotient(xp, self, other, rounding_mode), attrs="rounding_mode", promote="binary", quiet=True,
   self=lambda grad, other: _C.zeros_like(grad),
   other=lambda grad, self: _C.zeros_like(grad))
# a tensor times (or over) a number inside a composite (``trapezoid``): ATen's mul.Scalar and
# div.Scalar, whose nodes are MulBackward1 and DivBackward1
op("mul_scalar", "MulBackward1", "self", lambda xp, self, other: self * other, on_arrays=True, attrs="other", promote="binary", promote_attrs=("other",),
   self=lambda grad, other: grad * other)
op("div_scalar", "DivBackward1", "self", lambda xp, self, other: self / other, on_arrays=True, attrs="other", promote="float", promote_attrs=("other",), quiet=True,
   self=lambda grad, other: grad / other)
# fill out of place (``nbgrad.fill``): FillBackward0
op("fill_new", "FillBackward0", "self", lambda xp, self, value: xp.full(self.shape, value, dtype=self.dtype), attrs="value",
   self=lambda grad: _C.zeros_like(grad))
op("signbit", None, "self", lambda xp, self: xp.signbit(self), differentiable=False)
op("isposinf", None, "self", lambda xp, self: xp.isposinf(self) if self.dtype.kind == "f" else xp.zeros(self.shape, bool), differentiable=False)
op("isneginf", None, "self", lambda xp, self: xp.isneginf(self) if self.dtype.kind == "f" else xp.zeros(self.shape, bool), differentiable=False)
op("gcd", None, "self other", lambda xp, self, other: _gcd_lcm(xp, "gcd", self, other), promote="binary", differentiable=False)
op("lcm", None, "self other", lambda xp, self, other: _gcd_lcm(xp, "lcm", self, other), promote="binary", differentiable=False)
for _name, _np_name in (("bitwise_and", "bitwise_and"), ("bitwise_or", "bitwise_or"), ("bitwise_xor", "bitwise_xor"),
                        ("bitwise_left_shift", "left_shift"), ("bitwise_right_shift", "right_shift")):
    op(_name, None, "self other", (lambda n: lambda xp, self, other: _bitwise(xp, n, self, other))(_np_name), promote="binary", differentiable=False)
op("bitwise_not", None, "self", lambda xp, self: _bitwise(xp, "invert", self, self), differentiable=False)

# scans and reductions
op("cummax", "CummaxBackward0", "self", lambda xp, self, dim: _cumextreme(xp, self, dim, xp.greater_equal), attrs="dim",
   outputs=2, diff_outputs=(0,), self=lambda grad, self, result1, dim: _cumextreme_backward(grad, self, result1, dim))
op("cummin", "CumminBackward0", "self", lambda xp, self, dim: _cumextreme(xp, self, dim, xp.less_equal), attrs="dim",
   outputs=2, diff_outputs=(0,), self=lambda grad, self, result1, dim: _cumextreme_backward(grad, self, result1, dim))
op("logcumsumexp", "LogcumsumexpBackward0", "self", lambda xp, self, dim: _logcumsumexp(xp, self, dim), attrs="dim", promote="float", quiet=True,
   self=lambda grad, self, result, dim: _logcumsumexp_backward(grad, self, result, dim))
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

# products
op("addmv", "AddmvBackward0", "self mat vec", lambda xp, self, mat, vec, beta, alpha: _addmv(xp, self, mat, vec, beta, alpha), attrs="beta alpha",
   self=lambda grad, beta: grad if beta == 1 else grad * beta,
   mat=lambda grad, vec, alpha: grad.outer(vec) * alpha,
   vec=lambda grad, mat, alpha: mat.t().mv(grad) * alpha)
op("addr", "AddrBackward0", "self vec1 vec2", lambda xp, self, vec1, vec2, beta, alpha: _addr(xp, self, vec1, vec2, beta, alpha), attrs="beta alpha",
   self=lambda grad, beta: grad if beta == 1 else grad * beta,
   vec1=lambda grad, vec2, alpha: grad.mv(vec2) * alpha,
   vec2=lambda grad, vec1, alpha: grad.t().mv(vec1) * alpha)
op("addbmm", "AddbmmBackward0", "self batch1 batch2", lambda xp, self, batch1, batch2, beta, alpha: _addbmm(xp, self, batch1, batch2, beta, alpha), attrs="beta alpha",
   self=lambda grad, beta: grad if beta == 1 else grad * beta,
   batch1=lambda grad, batch1, batch2, alpha: grad.expand((batch1.shape[0],) + tuple(grad.shape)).bmm(batch2.transpose(1, 2)) * alpha,
   batch2=lambda grad, batch1, alpha: batch1.transpose(1, 2).bmm(grad.expand((batch1.shape[0],) + tuple(grad.shape))) * alpha)
op("vdot", "VdotBackward0", "self other", lambda xp, self, other: xp.asarray(xp.vdot(self, other)),
   on_arrays=True, self=lambda grad, other: grad * other,
   other=lambda grad, self: grad * self)
op("dist", "DistBackward0", "self other", lambda xp, self, other, p: _dist(xp, self, other, p), attrs="p", promote="float",
   self=lambda grad, self, other, result, p: _norm_backward(grad, self - other, result, p, None, False),
   other=lambda grad, self, other, result, p: -_norm_backward(grad, self - other, result, p, None, False))
op("block_diag", "BlockDiagBackward0", "tensors*", lambda xp, tensors: _block_diag(xp, tensors), promote="binary",
   tensors=lambda grad, tensors_shape: _block_diag_backward(grad, tensors_shape))
op("renorm", "RenormBackward0", "self", lambda xp, self, p, dim, maxnorm: _renorm(xp, self, p, dim, maxnorm), attrs="p dim maxnorm", quiet=True,
   self=lambda grad, self, p, dim, maxnorm: _renorm_backward(grad, self, p, dim, maxnorm))
op("rot90", "Rot90Backward0", "self", lambda xp, self, k, dims: _contiguous(xp, xp.rot90(self, k, dims)), attrs="k dims",
   self=lambda grad, k, dims: grad.rot90(-k, dims))
op("unsafe_split", "UnsafeSplitBackward0", "self", lambda xp, self, sizes, dim: tuple(_contiguous(xp, p.copy()) for p in _split(xp, self, sizes, dim)), attrs="sizes dim", outputs=-1,
   self=lambda grads, self_shape, sizes, dim: _cat_grads(grads, self_shape, sizes, dim))
op("unsafe_split_with_sizes", "UnsafeSplitWithSizesBackward0", "self", lambda xp, self, sizes, dim: tuple(_contiguous(xp, p.copy()) for p in _split(xp, self, sizes, dim)), attrs="sizes dim", outputs=-1,
   self=lambda grads, self_shape, sizes, dim: _cat_grads(grads, self_shape, sizes, dim))

# indexing
op("index_copy", "IndexCopyBackward0", "self index source", lambda xp, self, index, source, dim: _index_copy(xp, self, dim, index, source), attrs="dim",
   nondiff=("index",), promote="binary",
   self=lambda grad, dim, index: grad.index_fill(dim, index, 0),
   source=lambda grad, dim, index: grad.index_select(dim, index))
op("index_fill", "IndexFillBackward0", "self index", lambda xp, self, index, dim, value: _index_fill(xp, self, dim, index, value), attrs="dim value",
   nondiff=("index",), self=lambda grad, dim, index: grad.index_fill(dim, index, 0))
op("index_put_accumulate", "IndexPutBackward0", "self values", lambda xp, self, values, indices: _index_put_accumulate(xp, self, values, indices),
   attrs="indices", promote="binary",
   self=lambda grad: grad,
   values=lambda grad, indices: grad[indices])
op("scatter_reduce", "ScatterReduceBackward0", "self index src", lambda xp, self, index, src, dim, reduce, include_self: _scatter_reduce(xp, self, dim, index, src, reduce, include_self),
   attrs="dim reduce include_self", nondiff=("index",), quiet=True,
   self=lambda grad, self, index, src, result, dim, reduce, include_self: _scatter_reduce_backward(grad, self, index, src, result, dim, reduce, include_self)[0],
   src=lambda grad, self, index, src, result, dim, reduce, include_self: _scatter_reduce_backward(grad, self, index, src, result, dim, reduce, include_self)[1])
# index_reduce: scatter_reduce with the index vector spread over source's other dims
op("index_reduce", "IndexReduceBackward0", "self index source", lambda xp, self, index, source, dim, reduce, include_self: _scatter_reduce(xp, self, dim, xp.broadcast_to(index.reshape(_along(source.ndim, dim)), source.shape), source, reduce, include_self),
   attrs="dim reduce include_self", nondiff=("index",), quiet=True,
   self=lambda grad, self, index, source, result, dim, reduce, include_self: _index_reduce_backward(grad, self, index, source, result, dim, reduce, include_self)[0],
   source=lambda grad, self, index, source, result, dim, reduce, include_self: _index_reduce_backward(grad, self, index, source, result, dim, reduce, include_self)[1])
op("masked_scatter", "MaskedScatterBackward0", "self mask source", lambda xp, self, mask, source: _masked_scatter(xp, self, mask, source), nondiff=("mask",),
   self=lambda grad, mask: grad.masked_fill(mask, 0),
   source=lambda grad, mask, source_shape: _masked_scatter_source_backward(grad, mask, source_shape))
op("put", "PutBackward0", "self index source", lambda xp, self, index, source, accumulate: _put(xp, self, index, source, accumulate), attrs="accumulate",
   nondiff=("index",), promote="binary",
   self=lambda grad, index, source, accumulate: grad if accumulate else grad.put(index, _C.zeros_like(source)),
   source=lambda grad, index, source_shape: grad.take(index).reshape(source_shape))

# counting and searching: no gradient
op("histc", None, "self", lambda xp, self, bins, min, max: _histc(xp, self, bins, min, max), attrs="bins min max", differentiable=False)
op("histogram", None, "self weight", lambda xp, self, weight, bins, range, density: _histogram(xp, self, bins, range, weight, density),
   attrs="bins range density", outputs=2, differentiable=False)
# histogramdd: PyTorch's hist requires grad, through a node whose backward raises
op("histogramdd", "NotImplemented", "self weight", lambda xp, self, weight, edges, density, aten: _histogramdd(xp, self, weight, edges, density),
   attrs="edges density aten", nondiff=("weight",), self=lambda grad, aten: _not_implemented(aten))
op("bincount", None, "self weights", lambda xp, self, weights, minlength: _bincount(xp, self, weights, minlength), attrs="minlength", differentiable=False)
op("searchsorted", None, "sorted_sequence self", lambda xp, sorted_sequence, self, right, out_int32: _searchsorted(xp, sorted_sequence, self, right, out_int32),
   attrs="right out_int32", differentiable=False)
op("isin", None, "elements test_elements", lambda xp, elements, test_elements, invert: _isin(xp, elements, test_elements, invert), attrs="invert", differentiable=False)
op("unique_consecutive", None, "self", lambda xp, self, dim: _unique_consecutive(xp, self, dim), attrs="dim", outputs=3, differentiable=False)
# fmt: on


def _logit_backward(grad, self, eps):
    """As PyTorch's (differentiable) logit backward: 0 outside ``[eps, 1 - eps]``, or NaN
    outside ``[0, 1]`` without ``eps``."""
    lo, hi = (0.0, 1.0) if eps is None else (eps, 1 - eps)
    inside = (self >= lo).logical_and(self <= hi)
    return _C.where(inside, grad / (self * (1 - self)), math.nan if eps is None else 0.0)


def _sinc_derivative(x):
    """d sinc(x)/dx = (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 at x = 0."""
    zero = x == 0
    safe = _C.where(zero, 1.0, x)
    spx = safe * _PI
    return _C.where(zero, 0.0, (spx * spx.cos() - spx.sin()) / (spx * safe))


def _xlogy_of_nonzero(self, other):
    """``xlogy(self != 0, other)``: ``log(other)`` where ``self`` is not 0, else 0."""
    return (self != 0).to(self.dtype).xlogy(other)


def _masked_scatter_source_backward(grad, mask, source_shape):
    """The masked elements of ``grad``, in order, padded with zeros to ``source``'s size."""
    picked = grad.masked_select(mask)
    pad = _C.zeros(math.prod(source_shape) - picked.numel(), dtype=grad.dtype, device=grad.device)
    return _C.cat([picked, pad]).reshape(source_shape)


def _copysign_ratio(self, result):
    """``result / self``, 0 where ``self`` is 0 (PyTorch's copysign_tensor_self_backward)."""
    return (result / self).masked_fill(self == 0, 0)


def _rounded_quotient(xp, self, other, rounding_mode):
    """``self / other`` rounded down (``"floor"``) or toward zero (``"trunc"``)."""
    if rounding_mode == "floor":
        return _floor_divide(xp, self, other)
    if self.dtype.kind in "iub":  # (integers: the floor of the magnitudes, signed)
        floor = _floor_divide(xp, xp.abs(self), abs(other))
        return floor * (xp.sign(self) * xp.sign(other)).astype(self.dtype)
    return xp.trunc(self / other).astype(self.dtype, copy=False)


def _cumextreme_backward(grad, self, indices, dim):
    """PyTorch's cummaxmin_backward: each grad to the index its running extreme came from."""
    if self.ndim == 0:
        return grad
    return _C.zeros_like(grad).scatter_add(dim, indices, grad)


def _logcumsumexp_backward(grad, self, result, dim):
    """``grad_i = sum_{k >= i} grad_k exp(self_i - result_k)``, scaled by the first running
    value of each slice (``result`` grows along ``dim``) so that nothing overflows there."""
    if self.ndim == 0:
        return grad
    if self.shape[dim] == 0:
        return grad
    first = result.narrow(dim, 0, 1)
    tail = (grad * (first - result).exp()).flip((dim,)).cumsum(dim).flip((dim,))
    return tail * (self - first).exp()


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


def _block_diag_backward(grad, tensors_shape):
    grads, r, c = [], 0, 0
    for shape in tensors_shape:
        rows, cols = (1, shape[0]) if len(shape) == 1 else (1, 1) if not shape else shape
        block = grad[r : r + rows, c : c + cols]
        grads.append(block.reshape(shape))
        r, c = r + rows, c + cols
    return grads


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


def _along(ndim, dim):
    """The shape that lays a vector along ``dim`` of ``ndim`` dims."""
    return tuple(-1 if d == dim else 1 for d in range(ndim))


def _spread_index(index, source, dim):
    return index.reshape(_along(source.dim(), dim)).expand(source.shape)


def _index_reduce_backward(grad, self, index, source, result, dim, reduce, include_self):
    """PyTorch's index_reduce_backward: scatter_reduce's, the index spread over source."""
    index = _spread_index(index, source, dim)
    return _scatter_reduce_backward(
        grad, self, index, source, result, dim, reduce, include_self, "index_reduce", "source"
    )


def _scatter_reduce_backward(
    grad, self, index, src, result, dim, reduce, include_self, name="scatter_reduce", src_name="src"
):
    """PyTorch's scatter_reduce_backward (and index_reduce_backward, ``name``, whose ``src`` is
    called ``source``): the gradients for ``self`` and ``src``."""
    if reduce == "sum":
        grad_self, grad_src = grad, grad.gather(dim, index)
    elif reduce == "mean":
        n = _C.ones_like(grad) if include_self else _C.zeros_like(grad)
        n = n.scatter_add(dim, index, _C.ones_like(src))
        n = n.masked_fill(n == 0, 1)
        grad_self = grad / n
        grad_src = grad.gather(dim, index) / n.gather(dim, index)
    elif reduce in ("amax", "amin"):
        value = result.gather(dim, index)
        self_is_result = (self == result).to(self.dtype)
        src_is_result = (src == value).to(self.dtype)
        count = self_is_result.scatter_add(dim, index, src_is_result)
        distributed = grad / count
        grad_self = (self == result) * distributed
        grad_src = (src == value) * distributed.gather(dim, index)
    else:  # prod
        masked_self = self.masked_fill(self == 0, 1)
        masked_self_result = masked_self.scatter_reduce(
            dim, index, src, reduce, include_self=include_self
        )
        grad_self = grad * masked_self_result / masked_self
        src_zero = src == 0
        zeros_there = _C.zeros_like(self).scatter_add(dim, index, src_zero.to(self.dtype))
        src_num_zeros = zeros_there.gather(dim, index)
        src_single_zero = src_zero.logical_and(src_num_zeros == 1)
        masked_src = src.masked_fill(src_single_zero, 1)
        masked_src_result = self.scatter_reduce(
            dim, index, masked_src, reduce, include_self=include_self
        )
        grad_src = _C.where(
            src_single_zero,
            (grad * masked_src_result).gather(dim, index),
            (grad * result).gather(dim, index) / src.masked_fill(src_zero, 1),
        )
        if grad_src._requires_grad and bool((src_num_zeros > 1).any()):
            # (two zeros in one place: the formula has no derivative there)
            grad_src = nbgrad.autograd.function._delayed_error(
                f"{name}(): Double backward is unsupported for {src_name} when >1 zeros in "
                f"{src_name} are scattered to the same position in self",
                grad_src,
            )
    if not include_self:
        grad_self = grad_self.scatter(dim, index, 0.0)
    return grad_self, grad_src


# fmt: off
# the in-place comparisons (``y.eq_(0)``): 0/1 in self's dtype, and a node whose gradients are
# zeros, as PyTorch's (``EqBackward0`` for a number, ``EqBackward1`` for a tensor)
for _name, _np_name in (("eq", "equal"), ("ne", "not_equal"), ("lt", "less"), ("le", "less_equal"),
                        ("gt", "greater"), ("ge", "greater_equal")):
    op(f"{_name}_", f"{_name.capitalize()}Backward1", "self other",
       (lambda n: lambda xp, self, other: _compared(xp, n, self, other))(_np_name),
       self=lambda grad: _C.zeros_like(grad),
       other=lambda grad, other_shape: _C.zeros(other_shape, dtype=grad.dtype, device=grad.device))
    op(f"{_name}_scalar_", f"{_name.capitalize()}Backward0", "self",
       (lambda n: lambda xp, self, other: _compared(xp, n, self, other))(_np_name), attrs="other",
       self=lambda grad: _C.zeros_like(grad))

# the random fills (``normal_``...): the drawn values do not depend on the old ones
op("uniform_", "UniformBackward0", "self", lambda xp, self, low, high, generator: _uniform(xp, self, low, high, generator),
   attrs="low high generator", self=lambda grad: _C.zeros_like(grad))
op("normal_", "NormalBackward0", "self", lambda xp, self, mean, std, generator: _normal_fill(xp, self, mean, std, generator),
   attrs="mean std generator", self=lambda grad: _C.zeros_like(grad))
op("exponential_", "ExponentialBackward0", "self", lambda xp, self, lambd, generator: _exponential(xp, self, lambd, generator),
   attrs="lambd generator", self=lambda grad: _C.zeros_like(grad))
op("cauchy_", "CauchyBackward0", "self", lambda xp, self, median, sigma, generator: _cauchy(xp, self, median, sigma, generator),
   attrs="median sigma generator", self=lambda grad: _C.zeros_like(grad))
op("log_normal_", "LogNormalBackward0", "self", lambda xp, self, mean, std, generator: _log_normal(xp, self, mean, std, generator),
   attrs="mean std generator", self=lambda grad: _C.zeros_like(grad))
op("geometric_", "GeometricBackward0", "self", lambda xp, self, p, generator: _geometric(xp, self, p, generator),
   attrs="p generator", self=lambda grad: _C.zeros_like(grad))
# (PyTorch's node says which arguments were given: from and to, to only, neither)
for _k in range(3):
    op(f"random_{_k}", f"RandomBackward{_k}", "self", lambda xp, self, low, high, generator: _random(xp, self, low, high, generator),
       attrs="low high generator", self=lambda grad: _C.zeros_like(grad))

# Tensor.unfold: a (writable) view of sliding windows; its backward sums them back
op("unfold", "UnfoldBackward0", "self", lambda xp, self, dim, size, step: _unfold(xp, self, dim, size, step),
   attrs="dim size step", view=True,
   self=lambda grad, self_shape, dim, size, step: _unfold_backward_op(grad, self_shape, dim, size, step))
op("unfold_backward", "UnfoldBackwardBackward0", "self",
   lambda xp, self, shape, dim, size, step: _unfold_backward(xp, self, shape, dim, size, step),
   attrs="shape dim size step", self=lambda grad, dim, size, step: grad.unfold(dim, size, step))

# squeeze of several dims, and the in-place view ops' own nodes (NOTE [In-place view ops] in
# nbgrad/_tensor/inplace_variants.py; transpose_, unsqueeze_ and squeeze_(dim) are in shape.py)
op("squeeze_dims", "SqueezeBackward2", "self", lambda xp, self, dims: _squeezed(xp, self, dims), attrs="dims", view=True,
   self=lambda grad, self_shape: grad.reshape(self_shape))
op("squeeze_dims_", "SqueezeBackward5", "self", lambda xp, self, dims: _squeezed(xp, self, dims), attrs="dims",
   self=lambda grad, self_shape: grad.reshape(self_shape))
op("squeeze_", "SqueezeBackward3", "self", lambda xp, self: xp.squeeze(self), self=lambda grad, self_shape: grad.reshape(self_shape))
op("t_", "TBackward1", "self", lambda xp, self: self.T, self=lambda grad: grad.t())
# fmt: on


def _unfold_backward_op(grad, shape, dim, size, step):
    return _dispatch(
        OPS["unfold_backward"],
        (grad,),
        {"shape": tuple(shape), "dim": dim, "size": size, "step": step},
    )


def _squeezed(xp, a, dims):
    """``a`` without those of ``dims`` that have size 1 (a view)."""
    return xp.squeeze(a, tuple(d for d in dims if a.shape[d] == 1)) if a.ndim else a[...]
