"""The one table of ops: forward kernels and derivative formulas, one row per op.

Mirrors PyTorch's ``tools/autograd/derivatives.yaml`` with the density of tinygrad's gradient
table. Each row names the op, the Node class PyTorch would create (``MulBackward0``), its
tensor inputs, an array-level forward kernel that receives ``xp`` (NumPy or CuPy, so one kernel
serves every device), and one formula per differentiable input.

The formulas' parameters are a fixed vocabulary: ``grad`` (or ``grads`` for several outputs),
``result``, the row's input and attribute names, and ``<input>_shape``. A node saves exactly
what its formulas name (``_saved_self``, ``_saved_result``, ...). Formulas use Tensor ops, never
raw arrays, so backward is itself differentiable (``create_graph=True``). No formula handles
broadcasting: the engine sums each gradient to its input's shape (``validate_outputs``).

The table is checked at import: a formula naming an unknown parameter, or a tensor input with
neither a formula nor a ``nondiff`` mark, raises.
"""

from __future__ import annotations

import inspect
import linecache
import math
import os
import sys
import warnings

import numpy as np

from nbgrad._graph.graph import ERR_FREED, FREED, Node, SavedTensor, unpack_saved
from nbgrad._tensor import conversion as _conversion
from nbgrad._tensor import creation as _C
from nbgrad._tensor import dispatch as _D
from nbgrad._tensor.dispatch import OPS, _dispatch
from nbgrad._tensor.math_methods import sum_to
from nbgrad._tensor.views import _NoGrad
from nbgrad.backend import erf
from nbgrad.tensor import Tensor


class OpInfo:
    """One row of the table."""

    def __init__(
        row,
        name,
        node,
        inputs,
        forward,
        *,
        attrs="",
        promote=None,
        view=False,
        outputs=1,
        diff_outputs=None,
        nondiff=(),
        differentiable=True,
        promote_attrs=(),
        quiet=None,
        **formulas,
    ):
        row.name = name
        row.node_name = node
        row.inputs = tuple(i.rstrip("*") for i in inputs.split())
        row.list_input = tuple(i.endswith("*") for i in inputs.split())
        row.attrs = tuple(attrs.split())
        row.forward = forward
        row.promote = promote  # None | "binary" | "float" | "cmp"
        row.view = view
        row.outputs = outputs
        row.diff_outputs = diff_outputs  # None: every output is differentiable
        row.nondiff = frozenset(nondiff)
        row.promoted = tuple(i not in row.nondiff for i in row.inputs)
        row.promote_attrs = promote_attrs
        # NumPy warns on overflow, 0/0, log(0)...; PyTorch gives inf/nan silently
        row.quiet = name in _QUIET if quiet is None else quiet
        row.differentiable = differentiable and bool(formulas)
        row.formulas = formulas
        row.node_class = None
        row._check()

    def _check(self):
        vocab = {"grad", "grads", "result", *self.inputs, *self.attrs}
        vocab |= {f"{i}_shape" for i in self.inputs}
        if self.outputs > 1:
            vocab |= {f"result{k}" for k in range(self.outputs)}
        for inp, f in self.formulas.items():
            if inp not in self.inputs:
                raise TypeError(f"op table row '{self.name}': formula for unknown input '{inp}'")
            for p in inspect.signature(f).parameters:
                if p not in vocab:
                    raise TypeError(
                        f"op table row '{self.name}': formula for '{inp}' names unknown "
                        f"parameter '{p}' (known: {sorted(vocab)})"
                    )
        if self.differentiable:
            for inp in self.inputs:
                if inp not in self.formulas and inp not in self.nondiff:
                    raise TypeError(
                        f"op table row '{self.name}': input '{inp}' has neither a formula nor a "
                        "nondiff mark"
                    )


_QUIET = {
    "div",
    "pow",
    "pow_tensor",
    "rpow",
    "exp",
    "log",
    "log1p",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "sigmoid",
    "var",
    "std",
    "mean",
    "mean_dim",
    "norm",
    "logsumexp",
    "softmax",
    "log_softmax",
    "prod",
    "prod_dim",
    "erf",
    "gelu",
    "matmul",
    "mm",
    "bmm",
    "mv",
    "dot",
}


def op(name, node, inputs, forward, **kw):
    OPS[name] = OpInfo(name, node, inputs, forward, **kw)


def _mm_check(xp, a, b):
    if a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, a.shape))} and "
            f"{'x'.join(map(str, b.shape))})"
        )
    return a @ b


# fmt: off
# ---- the table --------------------------------------------------------------------------------
# elementwise binary
op("add", "AddBackward0", "self other", lambda xp, self, other, alpha: self + other if alpha == 1 else self + alpha * other,
   attrs="alpha", promote="binary",
   self=lambda grad: grad,
   other=lambda grad, alpha: grad if alpha == 1 else grad * alpha)
op("sub", "SubBackward0", "self other", lambda xp, self, other, alpha: self - other if alpha == 1 else self - alpha * other,
   attrs="alpha", promote="binary",
   self=lambda grad: grad,
   other=lambda grad, alpha: -grad if alpha == 1 else grad * -alpha)
op("rsub", "RsubBackward1", "self", lambda xp, self, other, alpha: other - self if alpha == 1 else other - alpha * self,
   attrs="other alpha", promote="binary", promote_attrs=("other",),
   self=lambda grad, alpha: -grad if alpha == 1 else grad * -alpha)
op("mul", "MulBackward0", "self other", lambda xp, self, other: self * other, promote="binary",
   self=lambda grad, other: grad * other,
   other=lambda grad, self: grad * self)
op("div", "DivBackward0", "self other", lambda xp, self, other: self / other, promote="float",
   self=lambda grad, other: grad / other,
   other=lambda grad, self, other: -grad * ((self / other) / other))
# ``//`` has no derivative in PyTorch either: its node is "NotImplemented", whose backward raises
op("floor_divide", "NotImplemented", "self other", lambda xp, self, other: _floor_divide(xp, self, other), promote="binary", quiet=True,
   self=lambda grad: _not_implemented("floor_divide"),
   other=lambda grad: _not_implemented("floor_divide"))
# ``%``: PyTorch's remainder, whose node depends on the overload (a number as ``other``:
# RemainderBackward0; a tensor: RemainderBackward1; a number ``% tensor``: NotImplemented)
op("remainder_scalar", "RemainderBackward0", "self", lambda xp, self, other: _remainder(xp, self, other), attrs="other", promote="binary", promote_attrs=("other",), quiet=True,
   self=lambda grad: grad)
op("remainder", "RemainderBackward1", "self other", lambda xp, self, other: _remainder(xp, self, other), promote="binary", quiet=True,
   self=lambda grad: grad,
   other=lambda grad, self, other: -grad * _floor_quotient(self, other))
op("rremainder", "NotImplemented", "other", lambda xp, other, self: _remainder(xp, self, other), attrs="self", promote="binary", promote_attrs=("self",), quiet=True,
   other=lambda grad: _not_implemented("remainder"))
# (NumPy computes bool ** bool in int8; the operands are already promoted, so keep their dtype)
op("pow", "PowBackward0", "self", lambda xp, self, exponent: _pow_scalar(xp, self, exponent),
   attrs="exponent", promote="binary", promote_attrs=("exponent",),
   self=lambda grad, self, exponent: _pow_backward(grad, self, exponent))
op("pow_tensor", "PowBackward1", "self exponent", lambda xp, self, exponent: (self ** exponent).astype(self.dtype, copy=False),
   promote="binary",
   self=lambda grad, self, exponent: _pow_backward(grad, self, exponent),
   exponent=lambda grad, self, exponent, result: _pow_backward_exponent(grad, self, exponent, result))
op("rpow", "PowBackward2", "exponent", lambda xp, exponent, self: _contiguous(xp, self ** exponent),
   attrs="self", promote="float", promote_attrs=("self",),
   exponent=lambda grad, self, exponent, result: _rpow_backward_exponent(grad, self, exponent, result))
op("maximum", "MaximumBackward0", "self other", lambda xp, self, other: xp.maximum(self, other),
   promote="binary",
   self=lambda grad, self, other: _C.where(self == other, grad / 2, grad).masked_fill(self < other, 0),
   other=lambda grad, self, other: _C.where(self == other, grad / 2, grad).masked_fill(self > other, 0))
op("minimum", "MinimumBackward0", "self other", lambda xp, self, other: xp.minimum(self, other),
   promote="binary",
   self=lambda grad, self, other: _C.where(self == other, grad / 2, grad).masked_fill(self > other, 0),
   other=lambda grad, self, other: _C.where(self == other, grad / 2, grad).masked_fill(self < other, 0))
op("where", "WhereBackward0", "condition self other", lambda xp, condition, self, other: xp.where(condition, self, other),
   promote="binary", nondiff=("condition",),
   self=lambda grad, condition: _C.where(condition, grad, 0.0),
   other=lambda grad, condition: _C.where(condition, 0.0, grad))
op("masked_fill", "MaskedFillBackward0", "self mask", lambda xp, self, mask, value: _contiguous(xp, xp.where(mask, xp.asarray(value, dtype=self.dtype), self)),
   attrs="value", nondiff=("mask",),
   self=lambda grad, mask: grad.masked_fill(mask, 0))
# comparisons and logic: no gradient
for _name, _fn in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                   ("gt", np.greater), ("ge", np.greater_equal)):
    op(_name, None, "self other", (lambda f: lambda xp, self, other: getattr(xp, f.__name__)(self, other))(_fn),
       promote="binary", differentiable=False)
op("logical_and", None, "self other", lambda xp, self, other: xp.logical_and(self, other), differentiable=False)
op("logical_or", None, "self other", lambda xp, self, other: xp.logical_or(self, other), differentiable=False)
op("logical_xor", None, "self other", lambda xp, self, other: xp.logical_xor(self, other), differentiable=False)
op("logical_not", None, "self", lambda xp, self: xp.logical_not(self), differentiable=False)
op("isnan", None, "self", lambda xp, self: xp.isnan(self), differentiable=False)
op("isinf", None, "self", lambda xp, self: xp.isinf(self), differentiable=False)
op("isfinite", None, "self", lambda xp, self: xp.isfinite(self), differentiable=False)
op("argmax", None, "self", lambda xp, self, dim, keepdim: _argreduce(xp.argmax, xp, self, dim, keepdim), attrs="dim keepdim", differentiable=False)
op("argmin", None, "self", lambda xp, self, dim, keepdim: _argreduce(xp.argmin, xp, self, dim, keepdim), attrs="dim keepdim", differentiable=False)

# elementwise unary
op("neg", "NegBackward0", "self", lambda xp, self: -self, self=lambda grad: -grad)
op("abs", "AbsBackward0", "self", lambda xp, self: xp.abs(self), self=lambda grad, self: grad * self.sign())
op("sign", "SignBackward0", "self", lambda xp, self: _sign(xp, self), self=lambda grad: _C.zeros_like(grad))
op("exp", "ExpBackward0", "self", lambda xp, self: xp.exp(self), promote="float", self=lambda grad, result: grad * result)
op("log", "LogBackward0", "self", lambda xp, self: xp.log(self), promote="float", self=lambda grad, self: grad / self)
op("log1p", "Log1PBackward0", "self", lambda xp, self: xp.log1p(self), promote="float", self=lambda grad, self: grad / (self + 1))
op("sqrt", "SqrtBackward0", "self", lambda xp, self: xp.sqrt(self), promote="float", self=lambda grad, result: grad / (2 * result))
op("rsqrt", "RsqrtBackward0", "self", lambda xp, self: 1 / xp.sqrt(self), promote="float", self=lambda grad, result: -0.5 * grad * result ** 3)
op("reciprocal", "ReciprocalBackward0", "self", lambda xp, self: 1 / self, promote="float", self=lambda grad, result: -grad * (result * result))
op("expm1", "Expm1Backward0", "self", lambda xp, self: xp.expm1(self), promote="float", self=lambda grad, result: grad * (result + 1))
op("exp2", "Exp2Backward0", "self", lambda xp, self: xp.exp2(self), promote="float", self=lambda grad, result: grad * result * math.log(2))
op("log2", "Log2Backward0", "self", lambda xp, self: xp.log2(self), promote="float", self=lambda grad, self: grad / (self * math.log(2)))
op("log10", "Log10Backward0", "self", lambda xp, self: xp.log10(self), promote="float", self=lambda grad, self: grad / (self * math.log(10)))
op("tan", "TanBackward0", "self", lambda xp, self: xp.tan(self), promote="float", self=lambda grad, result: grad * (1 + result * result))
op("asin", "AsinBackward0", "self", lambda xp, self: xp.arcsin(self), promote="float", self=lambda grad, self: grad * (1 - self * self).rsqrt())
op("acos", "AcosBackward0", "self", lambda xp, self: xp.arccos(self), promote="float", self=lambda grad, self: -grad * (1 - self * self).rsqrt())
op("atan", "AtanBackward0", "self", lambda xp, self: xp.arctan(self), promote="float", self=lambda grad, self: grad / (1 + self * self))
op("sinh", "SinhBackward0", "self", lambda xp, self: xp.sinh(self), promote="float", self=lambda grad, self: grad * self.cosh())
op("cosh", "CoshBackward0", "self", lambda xp, self: xp.cosh(self), promote="float", self=lambda grad, self: grad * self.sinh())
# rounding: integer tensors come back as they are (a copy); the derivative is zero, as PyTorch's
op("floor", "FloorBackward0", "self", lambda xp, self: _rounded(xp, xp.floor, self), self=lambda grad: _C.zeros_like(grad))
op("ceil", "CeilBackward0", "self", lambda xp, self: _rounded(xp, xp.ceil, self), self=lambda grad: _C.zeros_like(grad))
op("round", "RoundBackward0", "self", lambda xp, self: _rounded(xp, xp.round, self), self=lambda grad: _C.zeros_like(grad))
op("trunc", "TruncBackward0", "self", lambda xp, self: _rounded(xp, xp.trunc, self), self=lambda grad: _C.zeros_like(grad))
op("frac", "FracBackward0", "self", lambda xp, self: self - xp.trunc(self), promote="float", self=lambda grad: grad)
op("sin", "SinBackward0", "self", lambda xp, self: xp.sin(self), promote="float", self=lambda grad, self: grad * self.cos())
op("cos", "CosBackward0", "self", lambda xp, self: xp.cos(self), promote="float", self=lambda grad, self: grad * -self.sin())
op("tanh", "TanhBackward0", "self", lambda xp, self: xp.tanh(self), promote="float", self=lambda grad, result: _dispatch(OPS["tanh_backward"], (grad, result)))
op("sigmoid", "SigmoidBackward0", "self", lambda xp, self: _sigmoid(xp, self), promote="float", self=lambda grad, result: _dispatch(OPS["sigmoid_backward"], (grad, result)))
op("relu", "ReluBackward0", "self", lambda xp, self: xp.maximum(self, 0), self=lambda grad, result: _dispatch(OPS["threshold_backward"], (grad, result), {"threshold": 0}))
# their backward formulas, as ops of their own as in PyTorch: one fused pass and one array,
# not three (see NOTE [Fused backward kernels]); differentiable for double backward
op("tanh_backward", "TanhBackwardBackward0", "grad_output output", lambda xp, grad_output, output: _tanh_backward(xp, grad_output, output), promote="binary",
   grad_output=lambda grad, output: _dispatch(OPS["tanh_backward"], (grad, output)),
   output=lambda grad, grad_output, output: grad * (-2 * output * grad_output))
op("sigmoid_backward", "SigmoidBackwardBackward0", "grad_output output", lambda xp, grad_output, output: _sigmoid_backward(xp, grad_output, output), promote="binary",
   grad_output=lambda grad, output: _dispatch(OPS["sigmoid_backward"], (grad, output)),
   output=lambda grad, grad_output, output: grad * grad_output * (1 - 2 * output))
op("leaky_relu", "LeakyReluBackward0", "self", lambda xp, self, negative_slope: xp.where(self > 0, self, self * negative_slope), attrs="negative_slope",
   self=lambda grad, self, negative_slope: _dispatch(OPS["leaky_relu_backward"], (grad, self), {"negative_slope": negative_slope}))
# leaky_relu_ (in place) saves its result instead, as PyTorch's LeakyReluBackward1
op("leaky_relu_", "LeakyReluBackward1", "self", lambda xp, self, negative_slope: xp.where(self > 0, self, self * negative_slope), attrs="negative_slope",
   self=lambda grad, result, negative_slope: _dispatch(OPS["leaky_relu_backward"], (grad, result), {"negative_slope": negative_slope}))
# NOTE [Piecewise-linear backwards are ops]: as in PyTorch, the backwards of relu, leaky_relu and
# hardtanh are ops of their own, whose derivative for ``self`` is zero. So under create_graph
# the gradient they give requires grad even when it does not depend on ``self`` (a second
# grad gives zeros, not an error), and a NaN input takes PyTorch's branch.
# threshold: ``value`` where ``self <= threshold``; in place (ThresholdBackward1) the formula
# reads the result, as PyTorch's (whose saved self is the modified tensor)
op("threshold", "ThresholdBackward0", "self", lambda xp, self, threshold, value: _threshold(xp, self, threshold, value), attrs="threshold value",
   self=lambda grad, self, threshold: _dispatch(OPS["threshold_backward"], (grad, self), {"threshold": threshold}))
op("threshold_", "ThresholdBackward1", "self", lambda xp, self, threshold, value: _threshold(xp, self, threshold, value), attrs="threshold value",
   self=lambda grad, result, threshold: _dispatch(OPS["threshold_backward"], (grad, result), {"threshold": threshold}))
op("threshold_backward", "ThresholdBackwardBackward0", "grad_output self", lambda xp, grad_output, self, threshold: _contiguous(xp, xp.where(self <= threshold, 0, grad_output)),
   attrs="threshold", promote="binary",
   grad_output=lambda grad, self, threshold: _dispatch(OPS["threshold_backward"], (grad, self), {"threshold": threshold}),
   self=lambda grad: _C.zeros_like(grad))
op("leaky_relu_backward", "LeakyReluBackwardBackward0", "grad_output self", lambda xp, grad_output, self, negative_slope: _contiguous(xp, xp.where(self > 0, grad_output, grad_output * negative_slope)),
   attrs="negative_slope", promote="binary",
   grad_output=lambda grad, self, negative_slope: _dispatch(OPS["leaky_relu_backward"], (grad, self), {"negative_slope": negative_slope}),
   self=lambda grad: _C.zeros_like(grad))
op("hardtanh_backward", "HardtanhBackwardBackward0", "grad_output self", lambda xp, grad_output, self, min_val, max_val: _contiguous(xp, xp.where((self <= min_val) | (self >= max_val), 0, grad_output)),
   attrs="min_val max_val", promote="binary",
   grad_output=lambda grad, self, min_val, max_val: _dispatch(OPS["hardtanh_backward"], (grad, self), {"min_val": min_val, "max_val": max_val}),
   self=lambda grad: _C.zeros_like(grad))
op("silu", "SiluBackward0", "self", lambda xp, self: self * _sigmoid(xp, self), promote="float",
   self=lambda grad, self: _silu_backward(grad, self))
op("elu", "EluBackward0", "self", lambda xp, self, alpha: _elu(xp, self, alpha), attrs="alpha", promote="float",
   self=lambda grad, self, alpha: _C.where(self > 0, grad, grad * alpha * _below(self, 0.0).exp()))
# elu_ (in place) saves its result, as PyTorch's EluBackward1: exp(x) is result / alpha + 1
op("elu_", "EluBackward1", "self", lambda xp, self, alpha: _elu(xp, self, alpha), attrs="alpha", promote="float",
   self=lambda grad, result, alpha: _C.where(result > 0, grad, grad * (_below(result, 0.0) + alpha)))
op("softplus", "SoftplusBackward0", "self", lambda xp, self, beta, threshold: _softplus(xp, self, beta, threshold), attrs="beta threshold", promote="float",
   self=lambda grad, self, beta, threshold: _C.where(self * beta > threshold, grad, grad * _below(self * beta, threshold).sigmoid()))
op("hardtanh", "HardtanhBackward0", "self", lambda xp, self, min_val, max_val: xp.clip(self, min_val, max_val), attrs="min_val max_val",
   self=lambda grad, self, min_val, max_val: _dispatch(OPS["hardtanh_backward"], (grad, self), {"min_val": min_val, "max_val": max_val}))
op("log_sigmoid", "LogSigmoidBackward0", "self", lambda xp, self: -_softplus(xp, -self, 1.0, 20.0), promote="float",
   self=lambda grad, self: grad * (-self).sigmoid())
op("erf", "ErfBackward0", "self", lambda xp, self: _erf(xp, self), promote="float", self=lambda grad, self: grad * (2 / math.sqrt(math.pi)) * (-self * self).exp())
op("gelu", "GeluBackward0", "self", lambda xp, self, approximate: _gelu(xp, self, approximate), attrs="approximate", promote="float",
   self=lambda grad, self, approximate: _gelu_backward(grad, self, approximate))
op("clamp", "ClampBackward1", "self", lambda xp, self, min, max: _clamp(xp, self, min, max), attrs="min max",
   self=lambda grad, self, min, max: _C.where(_clamp_mask(self, min, max), grad, 0.0))
op("clamp_min", "ClampMinBackward0", "self", lambda xp, self, min: xp.maximum(self, min), attrs="min",
   self=lambda grad, self, min: _C.where(self >= min, grad, 0.0))
op("clamp_max", "ClampMaxBackward0", "self", lambda xp, self, max: xp.minimum(self, max), attrs="max",
   self=lambda grad, self, max: _C.where(self <= max, grad, 0.0))
op("to_dtype", "ToCopyBackward0", "self", lambda xp, self, dtype: self.astype(dtype.np), attrs="dtype", self=lambda grad: grad)
op("clone", "CloneBackward0", "self", lambda xp, self, memory_format: _clone(xp, self, memory_format), attrs="memory_format", self=lambda grad: grad)

# reductions
op("sum", "SumBackward0", "self", lambda xp, self, dtype: _sum(xp, self, None, False, dtype), attrs="dtype",
   self=lambda grad, self_shape: grad.expand(self_shape))
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

# linear algebra
op("mm", "MmBackward0", "self mat2", _mm_check,
   self=lambda grad, mat2: grad.mm(mat2.t()),
   mat2=lambda grad, self: self.t().mm(grad))
op("dot", "DotBackward0", "self tensor", lambda xp, self, tensor: xp.dot(self, tensor),
   self=lambda grad, tensor: grad * tensor,
   tensor=lambda grad, self: grad * self)
op("mv", "MvBackward0", "self vec", _mm_check,
   self=lambda grad, vec: grad.unsqueeze(1) * vec.unsqueeze(0),
   vec=lambda grad, self: self.t().mv(grad))
op("bmm", "BmmBackward0", "self mat2", lambda xp, self, mat2: xp.matmul(self, mat2),
   self=lambda grad, mat2: grad.bmm(mat2.transpose(1, 2)),
   mat2=lambda grad, self: self.transpose(1, 2).bmm(grad))
# matmul has no row: as in PyTorch it is composite (dot, mv, mm, or bmm/mm plus _unsafe_view)

# views (share memory with their base) and shape ops
op("view", "ViewBackward0", "self", lambda xp, self, shape: _view(xp, self, shape), attrs="shape", view=True,
   self=lambda grad, self_shape: grad.reshape(self_shape))
# the legacy constructor's alias of a tensor of its own type (``FloatTensor(t)``)
op("alias", "AliasBackward0", "self", lambda xp, self: self.view(), view=True, self=lambda grad: grad)
# reshape of a viewable but non-contiguous tensor (PyTorch's _reshape_alias)
op("reshape_alias", "ReshapeAliasBackward0", "self", lambda xp, self, shape: _view(xp, self, shape), attrs="shape", view=True,
   self=lambda grad, self_shape: grad.reshape(self_shape))
# _unsafe_view: a reshape of a fresh tensor that PyTorch does not track as a view (no copy)
op("unsafe_view", "UnsafeViewBackward0", "self", lambda xp, self, shape: xp.reshape(self, shape), attrs="shape",
   self=lambda grad, self_shape: grad.reshape(self_shape))
# squeeze_(dim) on a fresh (non-view) tensor, as matmul's 1-D @ 2-D case does
op("squeeze_dim_", "SqueezeBackward4", "self", lambda xp, self, dim: xp.squeeze(self, dim) if self.shape[dim] == 1 else self, attrs="dim",
   self=lambda grad, self_shape: grad.reshape(self_shape))
op("t", "TBackward0", "self", lambda xp, self: self.T, view=True, self=lambda grad: grad.t())
op("transpose", "TransposeBackward0", "self", lambda xp, self, dim0, dim1: xp.swapaxes(self, dim0, dim1), attrs="dim0 dim1", view=True,
   self=lambda grad, dim0, dim1: grad.transpose(dim0, dim1))
op("permute", "PermuteBackward0", "self", lambda xp, self, dims: xp.transpose(self, dims), attrs="dims", view=True,
   self=lambda grad, dims: grad.permute(tuple(np.argsort(dims))))
op("flip", "FlipBackward0", "self", lambda xp, self, dims: _contiguous(xp, xp.flip(self, dims)), attrs="dims",
   self=lambda grad, dims: grad.flip(dims))
op("roll", "RollBackward0", "self", lambda xp, self, shifts, dims: xp.roll(self, shifts, dims), attrs="shifts dims",
   self=lambda grad, shifts, dims: grad.roll(-shifts if dims is None else tuple(-k for k in shifts), dims))
op("cumsum", "CumsumBackward0", "self", lambda xp, self, dim, dtype: _cumsum(xp, self, dim, dtype), attrs="dim dtype",
   self=lambda grad, dim: grad.flip((dim,)).cumsum(dim).flip((dim,)))
op("tril", "TrilBackward0", "self", lambda xp, self, diagonal: xp.tril(self, diagonal), attrs="diagonal",
   self=lambda grad, diagonal: grad.tril(diagonal))
op("triu", "TriuBackward0", "self", lambda xp, self, diagonal: xp.triu(self, diagonal), attrs="diagonal",
   self=lambda grad, diagonal: grad.triu(diagonal))
op("expand", "ExpandBackward0", "self", lambda xp, self, size: _expand(xp, self, size), attrs="size", view=True,
   self=lambda grad, self_shape: sum_to(grad, self_shape))
op("squeeze", "SqueezeBackward0", "self", lambda xp, self: xp.reshape(self, tuple(s for s in self.shape if s != 1)), view=True,
   self=lambda grad, self_shape: grad.reshape(self_shape))
op("squeeze_dim", "SqueezeBackward1", "self", lambda xp, self, dim: xp.squeeze(self, dim) if self.ndim and self.shape[dim] == 1 else self[...], attrs="dim", view=True,
   self=lambda grad, self_shape: grad.reshape(self_shape))
op("unsqueeze", "UnsqueezeBackward0", "self", lambda xp, self, dim: xp.expand_dims(self, dim), attrs="dim", view=True,
   self=lambda grad, dim: grad.squeeze(dim))
# the trailing Ellipsis keeps a full index a 0-d view (NumPy would return a scalar copy)
op("select", "SelectBackward0", "self", lambda xp, self, dim, index: self[(slice(None),) * dim + (index, Ellipsis)], attrs="dim index", view=True,
   self=lambda grad, self_shape, dim, index: _dispatch(OPS["select_backward"], (grad,), {"shape": self_shape, "dim": dim, "index": index}))
op("slice", "SliceBackward0", "self", lambda xp, self, dim, start, end, step: self[(slice(None),) * dim + (slice(start, end, step),)],
   attrs="dim start end step", view=True,
   self=lambda grad, self_shape, dim, start, end, step: _dispatch(OPS["slice_backward"], (grad,), {"shape": self_shape, "dim": dim, "start": start, "end": end, "step": step}))
op("index", "IndexBackward0", "self", lambda xp, self, indices: _contiguous(xp, self[indices]), attrs="indices",
   self=lambda grad, self_shape, indices: grad._index_backward(self_shape, indices, True))
# the backward formulas of select, slice and index, as ops of their own (double backward)
op("select_backward", "SelectBackwardBackward0", "self", lambda xp, self, shape, dim, index: _index_backward(xp, self, shape, (slice(None),) * dim + (index,), False),
   attrs="shape dim index", self=lambda grad, dim, index: _dispatch(OPS["select"], (grad,), {"dim": dim, "index": index}))
op("slice_backward", "SliceBackwardBackward0", "self", lambda xp, self, shape, dim, start, end, step: _index_backward(xp, self, shape, (slice(None),) * dim + (slice(start, end, step),), False),
   attrs="shape dim start end step", self=lambda grad, dim, start, end, step: _dispatch(OPS["slice"], (grad,), {"dim": dim, "start": start, "end": end, "step": step}))
# diagonal: a (writable) view whose last dim is the diagonal of dims dim1 and dim2
op("diagonal", "DiagonalBackward0", "self", lambda xp, self, offset, dim1, dim2: _diagonal(xp, self, offset, dim1, dim2), attrs="offset dim1 dim2", view=True,
   self=lambda grad, self_shape, offset, dim1, dim2: _dispatch(OPS["diagonal_backward"], (grad,), {"shape": self_shape, "offset": offset, "dim1": dim1, "dim2": dim2}))
op("diagonal_backward", "DiagonalBackwardBackward0", "self", lambda xp, self, shape, offset, dim1, dim2: _diagonal_backward(xp, self, shape, offset, dim1, dim2),
   attrs="shape offset dim1 dim2", self=lambda grad, offset, dim1, dim2: grad.diagonal(offset, dim1, dim2))
# PyTorch's index backward is _index_put_impl_(zeros, indices, grad, accumulate=True)
op("index_backward", "IndexPutImplBackward0", "self", lambda xp, self, shape, indices, accumulate: _index_backward(xp, self, shape, indices, accumulate),
   attrs="shape indices accumulate", self=lambda grad, indices: grad[indices])
op("index_put", "IndexPutBackward0", "self values", lambda xp, self, values, indices: _index_put(xp, self, values, indices),
   attrs="indices", promote="binary",
   self=lambda grad, indices: grad._index_put(indices, 0.0),
   values=lambda grad, indices: grad[indices])
op("cat", "CatBackward0", "tensors*", lambda xp, tensors, dim: _contiguous(xp, xp.concatenate(tensors, axis=dim)), attrs="dim", promote="binary",
   tensors=lambda grad, tensors_shape, dim: _split_like(grad, [s[dim] for s in tensors_shape], dim))
op("stack", "StackBackward0", "tensors*", lambda xp, tensors, dim: _contiguous(xp, xp.stack(tensors, axis=dim)), attrs="dim", promote="binary",
   tensors=lambda grad, tensors_shape, dim: [grad.select(dim, i) for i in range(len(tensors_shape))])
op("split", "SplitBackward0", "self", lambda xp, self, sizes, dim: _split(xp, self, sizes, dim), attrs="sizes dim", outputs=-1, view=True,
   self=lambda grads, self_shape, sizes, dim: _cat_grads(grads, self_shape, sizes, dim))
op("split_with_sizes", "SplitWithSizesBackward0", "self", lambda xp, self, sizes, dim: _split(xp, self, sizes, dim), attrs="sizes dim", outputs=-1, view=True,
   self=lambda grads, self_shape, sizes, dim: _cat_grads(grads, self_shape, sizes, dim))
op("unbind", "UnbindBackward0", "self", lambda xp, self, dim: tuple(xp.moveaxis(self, dim, 0)), attrs="dim", outputs=-1, view=True,
   self=lambda grads, self_shape, dim: _unbind_backward(grads, self_shape, dim))
op("repeat", "RepeatBackward0", "self", lambda xp, self, repeats: _contiguous(xp, xp.tile(self, repeats)), attrs="repeats",
   self=lambda grad, self_shape, repeats: _repeat_backward(grad, self_shape, repeats))
op("gather", "GatherBackward0", "self index", lambda xp, self, index, dim: _gather(xp, self, index, dim), attrs="dim", nondiff=("index",),
   self=lambda grad, self_shape, dim, index: _C.zeros(self_shape, dtype=grad.dtype, device=grad.device).scatter_add(dim, index, grad))
op("scatter_add", "ScatterAddBackward0", "self index src", lambda xp, self, index, src, dim: _scatter_add(xp, self, dim, index, src), attrs="dim",
   nondiff=("index",), promote="binary",
   self=lambda grad: grad,
   src=lambda grad, dim, index: grad.gather(dim, index))
op("index_select", "IndexSelectBackward0", "self index", lambda xp, self, index, dim: xp.take(self, index, axis=dim), attrs="dim", nondiff=("index",),
   self=lambda grad, self_shape, dim, index: _C.zeros(self_shape, dtype=grad.dtype, device=grad.device).index_add(dim, index, grad))
op("index_add", "IndexAddBackward0", "self index source", lambda xp, self, index, source, dim: _index_add(xp, self, dim, index, source), attrs="dim",
   nondiff=("index",), promote="binary",
   self=lambda grad: grad,
   source=lambda grad, dim, index: grad.index_select(dim, index))

# in-place forms (their out-of-place kernels; see Tensor._inplace)
op("copy", "CopyBackwards", "self src", lambda xp, self, src: xp.broadcast_to(src.astype(self.dtype, copy=False), self.shape).copy(),
   self=lambda grad: _C.zeros_like(grad), src=lambda grad: grad)
op("fill", "FillBackward2", "self", lambda xp, self, value: xp.full(self.shape, value, dtype=self.dtype), attrs="value",
   self=lambda grad: _C.zeros_like(grad))
op("zero", "ZeroBackward0", "self", lambda xp, self: xp.zeros_like(self), self=lambda grad: _C.zeros_like(grad))

# random draws: 0s and 1s of self's dtype; the gradient is zero (or, for a float p, undefined)
op("bernoulli", "BernoulliBackward0", "self", lambda xp, self: _bernoulli(xp, self, self),
   self=lambda grad: _C.zeros_like(grad))
op("bernoulli_p", "NotImplemented", "self", lambda xp, self, p: _bernoulli(xp, self, p), attrs="p",
   self=lambda grad: _not_implemented("bernoulli"))
op("bernoulli_tensor", "BernoulliBackward1", "self p", lambda xp, self, p: _bernoulli(xp, self, p),
   self=lambda grad: _C.zeros_like(grad), p=lambda grad, p: _C.zeros_like(p))
op("bernoulli_float", "BernoulliBackward2", "self", lambda xp, self, p: _bernoulli(xp, self, p), attrs="p",
   self=lambda grad: _C.zeros_like(grad))

# nn: linear, convolution, losses, normalisation, embedding (reached through nbgrad.nn.functional)
op("addmm", "AddmmBackward0", "self mat1 mat2", lambda xp, self, mat1, mat2, beta, alpha: _addmm(xp, self, mat1, mat2, beta, alpha),
   attrs="beta alpha",
   self=lambda grad, beta: grad if beta == 1 else grad * beta,
   mat1=lambda grad, mat2, alpha: grad.mm(mat2.t()) if alpha == 1 else grad.mm(mat2.t()) * alpha,
   mat2=lambda grad, mat1, alpha: mat1.t().mm(grad) if alpha == 1 else mat1.t().mm(grad) * alpha)
# padding is ((top, bottom), (left, right)); see NOTE [Convolution's double backward]
op("convolution", "ConvolutionBackward0", "input weight bias", lambda xp, input, weight, bias, stride, padding, dilation, groups: _conv2d(xp, input, weight, bias, stride, padding, dilation, groups),
   attrs="stride padding dilation groups",
   input=lambda grad, weight, input_shape, stride, padding, dilation, groups: _conv2d_input_grad(grad, weight, input_shape, stride, padding, dilation, groups),
   weight=lambda grad, input, weight_shape, stride, padding, dilation, groups: _conv2d_weight_grad(input, grad, weight_shape, stride, padding, dilation, groups),
   bias=lambda grad: grad.sum((0, 2, 3)))
op("convolution_input_grad", "ConvolutionBackwardBackward0", "grad_output weight", lambda xp, grad_output, weight, input_shape, stride, padding, dilation, groups: _conv2d_transpose(xp, grad_output, weight, input_shape, stride, padding, dilation, groups),
   attrs="input_shape stride padding dilation groups",
   grad_output=lambda grad, weight, stride, padding, dilation, groups: _conv2d_call(grad, weight, stride, padding, dilation, groups),
   weight=lambda grad, grad_output, weight_shape, stride, padding, dilation, groups: _conv2d_weight_grad(grad, grad_output, weight_shape, stride, padding, dilation, groups))
op("convolution_weight_grad", "ConvolutionBackwardBackward0", "input grad_output", lambda xp, input, grad_output, weight_shape, stride, padding, dilation, groups: _conv2d_weight(xp, input, grad_output, weight_shape, stride, padding, dilation, groups),
   attrs="weight_shape stride padding dilation groups",
   input=lambda grad, grad_output, input_shape, stride, padding, dilation, groups: _conv2d_input_grad(grad_output, grad, input_shape, stride, padding, dilation, groups),
   grad_output=lambda grad, input, stride, padding, dilation, groups: _conv2d_call(input, grad, stride, padding, dilation, groups))
op("mse_loss", "MseLossBackward0", "self target", lambda xp, self, target, reduction: _loss_reduction((self - target) ** 2, reduction),
   attrs="reduction", promote="binary",
   self=lambda grad, self, target, reduction: _mse_loss_backward(grad, self, target, reduction),
   target=lambda grad, self, target, reduction: -_mse_loss_backward(grad, self, target, reduction))
op("smooth_l1_loss", "SmoothL1LossBackward0", "self target", lambda xp, self, target, reduction, beta: _loss_reduction(_smooth_l1(xp, self - target, beta), reduction),
   attrs="reduction beta", promote="binary",
   self=lambda grad, self, target, reduction, beta: _smooth_l1_backward(grad, self - target, reduction, beta),
   target=lambda grad, self, target, reduction, beta: -_smooth_l1_backward(grad, self - target, reduction, beta))
op("huber_loss", "HuberLossBackward0", "self target", lambda xp, self, target, reduction, delta: _loss_reduction(_smooth_l1(xp, self - target, delta) * delta, reduction),
   attrs="reduction delta", promote="binary",
   self=lambda grad, self, target, reduction, delta: _smooth_l1_backward(grad, self - target, reduction, delta) * delta,
   target=lambda grad, self, target, reduction, delta: -_smooth_l1_backward(grad, self - target, reduction, delta) * delta)
# weight: a constant (PyTorch gives it no gradient either)
op("binary_cross_entropy", "BinaryCrossEntropyBackward0", "self target weight", lambda xp, self, target, weight, reduction: _loss_reduction(_bce(xp, self, target, weight), reduction),
   attrs="reduction", promote="binary", nondiff=("weight",),
   self=lambda grad, self, target, weight, reduction: _loss_grad(grad, self, reduction) * (self - target) / ((1 - self) * self).clamp(min=1e-12) * _weight_or_1(weight),
   target=lambda grad, self, weight, reduction: _loss_grad(grad, self, reduction) * (_clamped_log(1 - self) - _clamped_log(self)) * _weight_or_1(weight))
op("binary_cross_entropy_with_logits", "BinaryCrossEntropyWithLogitsBackward0", "self target weight pos_weight",
   lambda xp, self, target, weight, pos_weight, reduction: _loss_reduction(_bce_logits(xp, self, target, weight, pos_weight), reduction),
   attrs="reduction", promote="binary", nondiff=("weight", "pos_weight"),
   self=lambda grad, self, target, weight, pos_weight, reduction: _loss_grad(grad, self, reduction) * _bce_logits_self_grad(self, target, pos_weight) * _weight_or_1(weight),
   target=lambda grad, self, weight, pos_weight, reduction: _loss_grad(grad, self, reduction) * _bce_logits_target_grad(self, pos_weight) * _weight_or_1(weight))
op("nll_loss", "NllLossBackward0", "self target weight", lambda xp, self, target, weight, reduction, ignore_index: _nll_loss(xp, self, target, weight, reduction, ignore_index),
   attrs="reduction ignore_index", nondiff=("target", "weight"), quiet=True,
   self=lambda grad, self_shape, target, weight, reduction, ignore_index: _nll_loss_backward(grad, self_shape, target, weight, reduction, ignore_index))
# (N, C, H, W) log-probabilities and (N, H, W) targets
op("nll_loss2d", "NllLoss2DBackward0", "self target weight", lambda xp, self, target, weight, reduction, ignore_index: _nll_loss2d(xp, self, target, weight, reduction, ignore_index),
   attrs="reduction ignore_index", nondiff=("target", "weight"), quiet=True,
   self=lambda grad, self_shape, target, weight, reduction, ignore_index: _nll_loss2d_backward(grad, self_shape, target, weight, reduction, ignore_index))
op("layer_norm", "NativeLayerNormBackward0", "input weight bias", lambda xp, input, weight, bias, normalized_shape, eps: _layer_norm(xp, input, weight, bias, normalized_shape, eps),
   attrs="normalized_shape eps",
   input=lambda grad, input, weight, normalized_shape, eps: _layer_norm_input_grad(grad, input, weight, normalized_shape, eps),
   weight=lambda grad, input, normalized_shape, eps: _sum_leading(grad * _layer_norm_stats(input, normalized_shape, eps)[0], len(normalized_shape)),
   bias=lambda grad, normalized_shape: _sum_leading(grad, len(normalized_shape)))
# running_mean / running_var are attributes (tensors that no gradient reaches); in eval mode
# ``F.batch_norm`` passes copies, so that a later training step cannot change what backward uses
op("batch_norm", "NativeBatchNormBackward0", "input weight bias", lambda xp, input, weight, bias, running_mean, running_var, training, momentum, eps: _batch_norm(xp, input, weight, bias, running_mean, running_var, training, momentum, eps),
   attrs="running_mean running_var training momentum eps",
   input=lambda grad, input, weight, running_mean, running_var, training, eps: _batch_norm_input_grad(grad, input, weight, running_mean, running_var, training, eps),
   weight=lambda grad, input, running_mean, running_var, training, eps: _batch_norm_weight_grad(grad, input, running_mean, running_var, training, eps),
   bias=lambda grad, input: grad.sum((0,) + tuple(range(2, input.dim()))))
# pooling: max keeps the flat index of each maximum (its second, non-differentiable output).
# Each backward is an op of its own, as in PyTorch: linear in the gradient (its derivative is
# the forward again, or a gather), and with ``self`` as an input whose derivative is zero
_POOL_ATTRS = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")
op("max_pool2d", "MaxPool2DWithIndicesBackward0", "self", lambda xp, self, kernel_size, stride, padding, dilation, ceil_mode: _max_pool2d(xp, self, kernel_size, stride, padding, dilation, ceil_mode),
   attrs="kernel_size stride padding dilation ceil_mode", outputs=2, diff_outputs=(0,),
   self=lambda grad, self, result1: _dispatch(OPS["max_pool2d_backward"], (grad, self, result1)))
op("max_pool2d_backward", "MaxPool2DWithIndicesBackwardBackward0", "grad_output self indices", lambda xp, grad_output, self, indices: _max_pool2d_backward(xp, grad_output, self.shape, indices),
   nondiff=("indices",),
   grad_output=lambda grad, indices: grad.flatten(-2).gather(-1, indices.flatten(-2)).reshape(indices.shape),
   self=lambda grad, self_shape: _C.zeros(self_shape, dtype=grad.dtype, device=grad.device))
op("avg_pool2d", "AvgPool2DBackward0", "self", lambda xp, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override: _avg_pool2d(xp, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override),
   attrs=" ".join(_POOL_ATTRS),
   self=lambda grad, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override: _dispatch(OPS["avg_pool2d_backward"], (grad, self), dict(zip(_POOL_ATTRS, (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)))))
op("avg_pool2d_backward", "AvgPool2DBackwardBackward0", "grad_output self", lambda xp, grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override: _avg_pool2d_backward(xp, grad_output, self.shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override),
   attrs=" ".join(_POOL_ATTRS),
   grad_output=lambda grad, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override: _dispatch(OPS["avg_pool2d"], (grad,), dict(zip(_POOL_ATTRS, (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)))),
   self=lambda grad, self_shape: _C.zeros(self_shape, dtype=grad.dtype, device=grad.device))
op("adaptive_avg_pool2d", "AdaptiveAvgPool2DBackward0", "self", lambda xp, self, output_size: _adaptive_avg_pool2d(xp, self, output_size), attrs="output_size",
   self=lambda grad, self: _dispatch(OPS["adaptive_avg_pool2d_backward"], (grad, self)))
op("adaptive_avg_pool2d_backward", "AdaptiveAvgPool2DBackwardBackward0", "grad_output self", lambda xp, grad_output, self: _adaptive_avg_pool2d_backward(xp, grad_output, self.shape),
   grad_output=lambda grad, grad_output_shape: _dispatch(OPS["adaptive_avg_pool2d"], (grad,), {"output_size": tuple(grad_output_shape[-2:])}),
   self=lambda grad, self_shape: _C.zeros(self_shape, dtype=grad.dtype, device=grad.device))
op("embedding", "EmbeddingBackward0", "weight indices", lambda xp, weight, indices, padding_idx: xp.take(weight, indices, axis=0),
   attrs="padding_idx", nondiff=("indices",),
   weight=lambda grad, weight_shape, indices, padding_idx: _embedding_backward(grad, weight_shape, indices, padding_idx))
# fmt: on


def _sigmoid(xp, a):
    # numerically stable for large |a|
    with np.errstate(over="ignore"):
        return 1 / (1 + xp.exp(-a))


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _user_stacklevel():
    """``warnings.warn``'s stacklevel, for its caller, that names the first frame outside
    nbgrad: the user's line, however many of nbgrad's calls lie between."""
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


def _var_std(xp, name, a, dim, correction, keepdim):
    """``var`` / ``std`` with PyTorch's warning when there are no degrees of freedom left (the
    result is nan or inf, as in PyTorch; NumPy would warn in its own words)."""
    n = math.prod(a.shape[d] for d in dim) if dim is not None else a.size
    kernel = xp.var if name == "var" else xp.std
    if n - correction > 0:
        return kernel(a, axis=dim, ddof=correction, keepdims=keepdim)
    warnings.warn(
        f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
        "reduction factor (input numel divided by output numel).",
        UserWarning,
        stacklevel=_user_stacklevel(),
    )
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return kernel(a, axis=dim, ddof=correction, keepdims=keepdim)


def _rounded(xp, fn, a):
    return a.copy() if a.dtype.kind in "biu" else fn(a)


def _cumsum(xp, a, dim, dtype):
    return xp.cumsum(_summand(a, dtype), axis=dim)


def _check_int_divisor(xp, a, b):
    """PyTorch raises for an integer division by zero (NumPy warns and gives 0)."""
    kind = a.dtype.kind if hasattr(a, "dtype") else b.dtype.kind  # promoted: one is an array
    if kind in "biu" and bool(xp.any(xp.asarray(b) == 0)):
        raise RuntimeError("ZeroDivisionError")


def _floor_divide(xp, a, b):
    _check_int_divisor(xp, a, b)
    return xp.floor_divide(a, b)


def _remainder(xp, a, b):
    _check_int_divisor(xp, a, b)
    r = xp.remainder(a, b)  # the sign of the divisor, as Python's % and PyTorch's remainder
    if r.dtype.kind == "f":  # but a zero has the dividend's sign in PyTorch (NumPy: divisor's)
        r = xp.where(r == 0, xp.copysign(r, a), r)
    return r


def _floor_quotient(self, other):
    """``self // other`` as a constant: its derivative is zero (PyTorch's formula for
    ``remainder`` uses ``div(rounding_mode="floor")``, whose derivative is zero)."""
    with _NoGrad():
        return self // other


def _bernoulli(xp, self, p):
    """1 with probability ``p`` (a number, or an array broadcast to ``self``), in self's dtype.
    The uniform draws come from nbgrad's generator on the host (``manual_seed``)."""
    if isinstance(p, (int, float)):
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    else:
        if p is self and self.dtype.kind != "f":
            name = _D._FROM_NP[self.dtype]._legacy[: -len("Tensor")]
            raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for '{name}'")
        if p.size and not bool(((p >= 0) & (p <= 1)).all()):
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        p = xp.broadcast_to(p, self.shape)
    return (xp.asarray(_C._rng.random(self.shape)) < p).astype(self.dtype)


def _not_implemented(name):
    raise RuntimeError(f"derivative for aten::{name} is not implemented")


# NOTE [Fused backward kernels]
# A formula such as ``grad * (1 - result * result)``, run as three Tensor ops, allocates three
# arrays the size of the activation and walks memory three times. tanh and sigmoid, the hot
# activations of an MLP, have their backward as a row of its own (``tanh_backward``,
# ``sigmoid_backward``, as in PyTorch) whose kernel writes every step into the one array it
# allocates. Shapes that differ (broadcasting) and 0-d arrays (where NumPy returns scalars) take
# the plain expression.
def _tanh_backward(xp, grad_output, output):
    if output.ndim == 0 or grad_output.shape != output.shape:
        return grad_output * (1 - output * output)
    out = xp.multiply(output, output)
    xp.subtract(1, out, out=out)
    return xp.multiply(grad_output, out, out=out)


def _sigmoid_backward(xp, grad_output, output):
    if output.ndim == 0 or grad_output.shape != output.shape:
        return grad_output * (1 - output) * output
    out = xp.subtract(1, output)
    xp.multiply(out, output, out=out)
    return xp.multiply(grad_output, out, out=out)


def _silu_backward(grad, self):
    s = self.sigmoid()
    return grad * s * (1 + self * (1 - s))


def _elu(xp, a, alpha):
    with np.errstate(over="ignore"):
        return xp.where(a > 0, a, alpha * xp.expm1(xp.minimum(a, 0)))


def _threshold(xp, a, threshold, value):
    return xp.where(a <= threshold, xp.asarray(value, dtype=a.dtype), a)


def _softplus(xp, a, beta, threshold):
    """``log(1 + exp(beta * a)) / beta``, and ``a`` itself where ``beta * a > threshold``."""
    scaled = a * beta
    return xp.where(scaled > threshold, a, xp.logaddexp(0, xp.minimum(scaled, threshold)) / beta)


def _erf(xp, a):
    return erf(xp, a).astype(a.dtype, copy=False)


def _gelu(xp, a, approximate):
    if approximate == "tanh":
        k = math.sqrt(2 / math.pi)
        return 0.5 * a * (1 + xp.tanh(k * (a + 0.044715 * a**3)))
    return (a * 0.5 * (1 + _erf(xp, a / math.sqrt(2)))).astype(a.dtype, copy=False)


def _gelu_backward(grad, x, approximate):
    if approximate == "tanh":
        k = math.sqrt(2 / math.pi)
        inner = k * (x + 0.044715 * x**3)
        t = inner.tanh()
        d_inner = k * (1 + 3 * 0.044715 * x * x)
        return grad * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner)
    cdf = 0.5 * (1 + (x * (1 / math.sqrt(2))).erf())
    pdf = (x * x * -0.5).exp() * (1 / math.sqrt(2 * math.pi))
    return grad * (cdf + x * pdf)


def _below(x, threshold):
    """``x`` where it is below ``threshold``, else the constant ``threshold``: the same values
    up to the threshold, but a derivative of 0 on it. PyTorch's double backward of elu and
    softplus masks with a strict ``x < threshold``, so the second derivative on a kink is 0."""
    return _C.where(x < threshold, x, threshold)


def _clamp(xp, a, lo, hi):
    if lo is not None:
        a = xp.maximum(a, lo)
    if hi is not None:
        a = xp.minimum(a, hi)
    return a.astype(a.dtype, copy=False)


def _clamp_mask(x, lo, hi):
    if lo is not None and hi is not None:
        return (x >= lo).logical_and(x <= hi)
    if lo is not None:
        return x >= lo
    if hi is not None:
        return x <= hi
    return _C.ones_like(x, dtype=_D.bool_)


def _expand(xp, a, size):
    """A view of ``a`` broadcast to ``size``, writable where ``a`` is (as PyTorch's expand; an
    in-place op on the whole of it is refused, see ``_check_no_internal_overlap``)."""
    out = xp.broadcast_to(a, size)
    if xp is np and a.flags.writeable:  # (NumPy's broadcast views are read-only; CuPy's not)
        out = np.lib.stride_tricks.as_strided(a, out.shape, out.strides)
    return out


def _sign(xp, a):
    # PyTorch's sign of NaN is 0 (NumPy's is NaN); abs's gradient at NaN follows it
    r = xp.sign(a)
    if r.dtype.kind == "f":
        r = xp.where(r == r, r, 0)  # (NaN != NaN)
    return r


def _pow_scalar(xp, a, exponent):
    # small integer powers by multiplication: NumPy's general pow is ~20x slower (x ** 3)
    if type(exponent) is int and 2 < exponent <= 4 and a.dtype.kind == "f":
        return a * a * a if exponent == 3 else xp.square(xp.square(a))
    return (a**exponent).astype(a.dtype, copy=False)  # bool ** bool is int8 in NumPy


def _pow_backward(grad, self, exponent):
    if not isinstance(exponent, Tensor) and exponent == 0:
        return _C.zeros_like(grad)
    # at self == 0 a negative power is inf and 0 * inf is nan, as in PyTorch (NumPy's warning
    # is off in backward: see NOTE [Quiet backward] in the engine)
    if isinstance(exponent, Tensor):
        return _C.where(exponent == 0, 0.0, grad * exponent * self ** (exponent - 1))
    return grad * exponent * self ** (exponent - 1)


def _pow_backward_exponent(grad, self, exponent, result):
    # d(self ** e)/de = self ** e * log(self); where self is 0 and e >= 0 PyTorch takes 0, and
    # where e < 0 it keeps result * log(0) = inf * -inf = -inf (its second derivative, nan,
    # comes from the same formula). See NOTE [Quiet backward] in the engine.
    return grad * _C.where((self == 0) & (exponent >= 0), 0.0, result * self.log())


def _rpow_backward_exponent(grad, base, exponent, result):
    # ``base ** exponent`` for a number ``base``: as above, with log(base) a number
    # (-inf at 0; nan below, as PyTorch's log of a negative number)
    if base > 0:
        return grad * result * math.log(base)
    log_base = -math.inf if base == 0 else math.nan
    if base == 0:
        return grad * _C.where(exponent >= 0, 0.0, result * log_base)
    return grad * (result * log_base)


def _summand(a, dtype):
    """``a`` in the dtype a sum accumulates in: ``dtype`` if given, int64 for integers and
    bools (as PyTorch), else its own."""
    if dtype is not None:
        return a.astype(dtype.np)
    if a.dtype.kind in "biu":
        return a.astype(np.int64)
    return a


def _sum(xp, a, dim, keepdim, dtype):
    return xp.sum(_summand(a, dtype), axis=dim, keepdims=keepdim)


def _count(shape, dim):
    return max(math.prod(shape[d] for d in dim), 1) if dim is not None else max(math.prod(shape), 1)


def _mean(xp, a, dim, keepdim):
    if a.size:
        return xp.mean(a, axis=dim, keepdims=keepdim)
    # the mean of nothing is nan, quietly, as in PyTorch (NumPy warns "Mean of empty slice")
    n = math.prod(a.shape[d] for d in dim) if dim is not None else 0
    with np.errstate(all="ignore"):
        return (
            xp.sum(a, axis=dim, keepdims=keepdim) / n
            if n
            else xp.sum(a, axis=dim, keepdims=keepdim) * math.nan
        )


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


def _argreduce(fn, xp, a, dim, keepdim):
    if dim is None:
        r = fn(a)
        return xp.reshape(r, (1,) * a.ndim) if keepdim else r
    r = fn(a, axis=dim)
    return xp.expand_dims(r, dim) if keepdim else r


def _value_and_index(xp, argfn, a, dim, keepdim):
    if a.shape and a.shape[dim] == 0:
        raise IndexError(f"max(): Expected reduction dim {dim} to have non-zero size.")
    idx = argfn(a, axis=dim) if a.ndim else xp.zeros((), dtype=np.int64)
    idx = idx.astype(np.int64)
    idx_k = xp.expand_dims(idx, dim) if a.ndim else idx
    values = xp.take_along_axis(a, idx_k, axis=dim) if a.ndim else a.copy()
    if not keepdim and a.ndim:
        values = xp.squeeze(values, dim)
        return values, idx
    return values, idx_k


def _sort(xp, a, dim, descending):
    if a.ndim == 0:
        return a.copy(), xp.zeros((), dtype=np.int64)
    # descending and stable: sort the reversed order ascending, then map indices back
    key = -a if descending and a.dtype.kind != "b" else a
    if descending and a.dtype.kind == "b":
        key = ~a
    idx = xp.argsort(key, axis=dim, kind="stable").astype(np.int64)
    return xp.take_along_axis(a, idx, axis=dim), idx


def _topk(xp, a, k, dim, largest):
    n = a.shape[dim] if a.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    values, idx = _sort(xp, a, dim, largest)
    if a.ndim == 0:
        return values, idx
    keep = [slice(None)] * a.ndim
    keep[dim] = slice(0, k)
    return _contiguous(xp, values[tuple(keep)]), _contiguous(xp, idx[tuple(keep)])


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
    mask = self == result
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


def _vector_norm(xp, a, ord, dim, keepdim):
    absa = xp.abs(a)
    if ord == math.inf:
        return xp.amax(absa, axis=dim, keepdims=keepdim)
    if ord == 2:
        return xp.sqrt(xp.sum(a * a, axis=dim, keepdims=keepdim))
    if ord == 1:
        return xp.sum(absa, axis=dim, keepdims=keepdim)
    return xp.sum(absa**ord, axis=dim, keepdims=keepdim) ** (1.0 / ord)


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


def _logsumexp(xp, a, dim, keepdim):
    if a.size == 0:
        return xp.log(xp.sum(xp.exp(a), axis=dim, keepdims=keepdim))
    m = xp.amax(a, axis=dim, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)
    out = xp.log(xp.sum(xp.exp(a - m), axis=dim, keepdims=True)) + m
    return out if keepdim else xp.squeeze(out, axis=dim)


def _clone(xp, a, memory_format):
    """A copy of ``a`` in the layout PyTorch's clone gives: ``"preserve"`` keeps ``a``'s
    layout (a transposed tensor's clone is transposed, so that a later ``reshape`` copies or
    views exactly where PyTorch's does), ``"contiguous"`` is C order, and a tuple of strides
    takes the layout those strides describe (dense, in their order: ``infer_dense_strides``)."""
    if memory_format == "contiguous" or a.ndim < 2 or a.size == 0:
        return xp.array(a, order="C", copy=True)
    strides = a.strides if memory_format == "preserve" else memory_format
    if memory_format == "preserve" and a.flags.c_contiguous:
        return a.copy()
    order = _dense_order(a.shape, strides)  # outermost dim first
    out = xp.empty([a.shape[d] for d in order], dtype=a.dtype).transpose(np.argsort(order))
    out[...] = a
    return out


def _dense_order(shape, strides):
    """The dims from outermost to innermost, as ATen's ``infer_dense_strides`` orders them:
    by stride, a stride-0 (expanded) dim staying where it is."""
    perm = list(range(len(shape) - 1, -1, -1))  # innermost first

    def should_swap(d0, d1):
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return 1 if s0 > s1 else -1
        return 1 if shape[d0] > shape[d1] else 0

    for i in range(1, len(perm)):
        d1 = i
        for j in range(1, i + 1):
            d0 = i - j
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm[::-1]


def _contiguous(xp, a):
    """``a`` in C order, as the fresh outputs of PyTorch's cat, stack, masked_fill, softmax...
    are, so that ``view`` works on them where it does in PyTorch. Unlike NumPy's
    ascontiguousarray, a 0-d array (or a NumPy scalar) stays 0-d."""
    a = xp.asarray(a)
    return a if a.flags.c_contiguous else xp.ascontiguousarray(a)


def _softmax(xp, a, dim):
    if a.size == 0:
        return a.copy()
    e = xp.exp(a - xp.amax(a, axis=dim, keepdims=True))
    return _contiguous(xp, e / xp.sum(e, axis=dim, keepdims=True))


def _log_softmax(xp, a, dim):
    if a.size == 0:
        return a.copy()
    s = a - xp.amax(a, axis=dim, keepdims=True)
    return _contiguous(xp, s - xp.log(xp.sum(xp.exp(s), axis=dim, keepdims=True)))


def _view(xp, a, shape):
    try:
        return xp.reshape(a, shape, copy=False)
    except ValueError:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        ) from None


def _index_backward(xp, grad, shape, indices, accumulate):
    out = xp.zeros(shape, dtype=grad.dtype)
    if accumulate:
        xp.add.at(out, indices, grad)
    else:
        out[indices] = grad
    return out


def _index_put(xp, a, values, indices):
    out = a.copy()
    out[indices] = values
    return out


def _diagonal(xp, a, offset, dim1, dim2):
    d = xp.diagonal(a, offset, dim1, dim2)
    # NumPy's diagonal is a read-only view; PyTorch's may be written (CuPy's flags have no
    # writeable: its views are always writable)
    if not getattr(d.flags, "writeable", True) and a.flags.writeable:
        d.flags.writeable = True
    return d


def _diagonal_backward(xp, grad, shape, offset, dim1, dim2):
    out = xp.zeros(shape, dtype=grad.dtype)
    _diagonal(xp, out, offset, dim1, dim2)[...] = grad
    return out


def _repeat_backward(grad, self_shape, repeats):
    """Sum the tiles: ``grad`` as ``(r0, s0, r1, s1, ...)``, summed over each ``r``."""
    if not repeats:  # a 0-d tensor repeated ``()``
        return grad
    shape = (1,) * (len(repeats) - len(self_shape)) + tuple(self_shape)
    tiled = []
    for r, s in zip(repeats, shape):
        tiled += [r, s]
    summed = grad.reshape(tiled).sum(tuple(range(0, len(tiled), 2)))
    return summed.reshape(self_shape)


def _split(xp, a, sizes, dim):
    outs, start = [], 0
    for s in sizes:
        outs.append(a[(slice(None),) * dim + (slice(start, start + s),)])
        start += s
    return tuple(outs)


def _split_like(grad, sizes, dim):
    outs, start = [], 0
    for s in sizes:
        outs.append(grad.narrow(dim, start, s))
        start += s
    return outs


def _cat_grads(grads, self_shape, sizes, dim):
    # split's backward saves sizes, not the input (PyTorch's SplitWithSizesBackward0 keeps
    # ``self_sym_sizes``), so it runs again after the graph is freed, as in PyTorch
    like = next(g for g in grads if g is not None)
    parts = []
    for g, s in zip(grads, sizes):
        if g is None:
            shape = list(self_shape)
            shape[dim] = s
            g = _C.zeros(shape, dtype=like.dtype, device=like.device)
        parts.append(g)
    return _C.cat(parts, dim)


def _unbind_backward(grads, self_shape, dim):
    like = next(g for g in grads if g is not None)
    shape = self_shape[:dim] + self_shape[dim + 1 :]
    zeros = lambda: _C.zeros(shape, dtype=like.dtype, device=like.device)  # noqa: E731
    return _C.stack([zeros() if g is None else g for g in grads], dim)


def _along_axis_key(xp, index, dim):
    key = list(xp.indices(index.shape, sparse=True))
    key[dim] = index
    return tuple(key)


def _gather(xp, a, index, dim):
    """``out[i][j] = a[i][index[i][j]]`` (dim 1) over the index's own extent: as PyTorch, the
    index may be smaller than ``a`` in the other dims (NumPy's take_along_axis broadcasts)."""
    if index.ndim == 0:
        return a.reshape(-1)[index].copy() if a.ndim <= 1 else a[index]
    return a[_along_axis_key(xp, index, dim)]


def _scatter_add(xp, a, dim, index, src):
    out = a.copy()
    src = src[tuple(slice(0, s) for s in index.shape)]
    xp.add.at(out, _along_axis_key(xp, index, dim), src)
    return out


def _index_add(xp, a, dim, index, source):
    out = a.copy()
    xp.add.at(out, (slice(None),) * dim + (index,), source)
    return out


# ---- helpers of the nn rows: linear, convolution, losses, normalisation --------------------------
def _addmm(xp, self, mat1, mat2, beta, alpha):
    prod = _mm_check(xp, mat1, mat2)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:  # as PyTorch: self is ignored, even its nan and inf
        return prod
    return prod + (self if beta == 1 else beta * self)


# NOTE [Convolution's double backward]
# conv2d C(x, w) is bilinear, so with F(x, w, gy) = <gy, C(x, w)> its input gradient
# T(gy, w) = dF/dx and weight gradient W(x, gy) = dF/dw are bilinear too, and the derivatives
# of T and W are again C, T and W: the backward of T(gy, w) sends C(g, w) to gy and W(g, gy) to
# w; the backward of W(x, gy) sends T(gy, g) to x and C(x, g) to gy. Three rows (convolution,
# convolution_input_grad, convolution_weight_grad) with NumPy kernels (im2col through a strided
# view and one matmul per group) are thus differentiable to any order. PyTorch has one
# ConvolutionBackwardBackward0 node for both gradients; nbgrad has one of that name for each.
def _conv_columns(xp, x, kh, kw, stride, padding, dilation, groups):
    """im2col: the padded input's sliding windows as one ``(K, N * Ho * Wo)`` matrix per group,
    ``K = C / groups * kh * kw``; returns ``(columns, Ho, Wo)``."""
    (pt, pb), (pl, pr) = padding
    if pt or pb or pl or pr:
        x = xp.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    n, c, h, w = x.shape
    (sh, sw), (dh, dw) = stride, dilation
    ho = (h - dh * (kh - 1) - 1) // sh + 1
    wo = (w - dw * (kw - 1) - 1) // sw + 1
    if ho <= 0 or wo <= 0:
        raise RuntimeError(
            f"Calculated padded input size per channel: ({h} x {w}). Kernel size: "
            f"({dh * (kh - 1) + 1} x {dw * (kw - 1) + 1}). Kernel size can't be greater than "
            "actual input size"
        )
    cg = c // groups
    s0, s1, s2, s3 = x.strides
    windows = xp.lib.stride_tricks.as_strided(
        x, (groups, cg, kh, kw, n, ho, wo), (s1 * cg, s1, s2 * dh, s3 * dw, s0, s2 * sh, s3 * sw)
    )
    return windows.reshape(groups, cg * kh * kw, n * ho * wo), ho, wo


def _pool_size(size, k, s, p, d, ceil_mode):
    """PyTorch's ``pooling_output_shape``: floor or ceil, and with ceil no window that starts
    in the right padding."""
    num = size + 2 * p - d * (k - 1) - 1
    out = (num + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pool_windows(xp, x, kernel_size, stride, padding, dilation, ceil_mode, fill):
    """``(N, C, Ho, Wo, kh, kw)`` windows of ``x`` padded with ``fill`` (a view)."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel_size, stride, padding, dilation
    if ph > (dh * (kh - 1) + 1) // 2 or pw > (dw * (kw - 1) + 1) // 2:
        raise RuntimeError(
            f"pad should be at most half of effective kernel size, but got pad={ph}, "
            f"kernel_size={kh} and dilation={dh}"
        )
    ho = _pool_size(h, kh, sh, ph, dh, ceil_mode)
    wo = _pool_size(w, kw, sw, pw, dw, ceil_mode)
    if ho < 1 or wo < 1:
        raise RuntimeError(
            f"Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{ho}x{wo}). "
            "Output size is too small"
        )
    bottom = max((ho - 1) * sh + dh * (kh - 1) + 1 - h - ph, 0)
    right = max((wo - 1) * sw + dw * (kw - 1) + 1 - w - pw, 0)
    padded = xp.pad(x, ((0, 0), (0, 0), (ph, bottom), (pw, right)), constant_values=fill)
    s0, s1, s2, s3 = padded.strides
    windows = xp.lib.stride_tricks.as_strided(
        padded, (n, c, ho, wo, kh, kw), (s0, s1, s2 * sh, s3 * sw, s2 * dh, s3 * dw)
    )
    return windows, ho, wo


def _max_pool2d(xp, x, kernel_size, stride, padding, dilation, ceil_mode):
    """The maxima and, as PyTorch, their flat indices in each ``H x W`` plane of ``x``."""
    if x.ndim == 3:  # unbatched
        values, indices = _max_pool2d(
            xp, x[None], kernel_size, stride, padding, dilation, ceil_mode
        )
        return values[0], indices[0]
    n, c, h, w = x.shape
    windows, ho, wo = _pool_windows(
        xp, x, kernel_size, stride, padding, dilation, ceil_mode, -xp.inf
    )
    flat = windows.reshape(n, c, ho, wo, -1)
    arg = flat.argmax(-1)  # the first maximum, or the first nan, as PyTorch
    values = xp.take_along_axis(flat, arg[..., None], -1)[..., 0]
    kw, (sh, sw), (ph, pw), (dh, dw) = kernel_size[1], stride, padding, dilation
    rows = xp.arange(ho).reshape(ho, 1) * sh - ph + (arg // kw) * dh
    cols = xp.arange(wo).reshape(1, wo) * sw - pw + (arg % kw) * dw
    return _contiguous(xp, values), (rows * w + cols).astype(np.int64)


def _max_pool2d_backward(xp, g, self_shape, indices):
    """Each output's gradient added at the position of its maximum."""
    lead, (h, w) = tuple(self_shape[:-2]), self_shape[-2:]
    planes = xp.arange(math.prod(lead)).reshape(lead + (1, 1)) * (h * w)
    size = math.prod(self_shape)
    out = xp.bincount((indices + planes).ravel(), weights=g.ravel(), minlength=size)
    return out.reshape(self_shape).astype(g.dtype, copy=False)


def _avg_pool_divisors(xp, h, w, ho, wo, kernel_size, stride, padding, count_include_pad):
    """PyTorch's divisor of each output position: the window's size within the padded input
    (``count_include_pad``) or within the input itself."""
    out = []
    for size, o, k, s, p in zip((h, w), (ho, wo), kernel_size, stride, padding):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, size + p)
        length = end - start
        if not count_include_pad:
            length = np.minimum(end, size) - np.maximum(start, 0)
        out.append(length)
    return xp.asarray(np.outer(out[0], out[1]))


def _avg_pool2d(xp, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor):
    if x.ndim == 3:  # unbatched
        args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor)
        return _avg_pool2d(xp, x[None], *args)[0]
    n, c, h, w = x.shape
    windows, ho, wo = _pool_windows(xp, x, kernel_size, stride, padding, (1, 1), ceil_mode, 0)
    sums = windows.sum(axis=(-2, -1))
    if divisor is None:
        divisor = _avg_pool_divisors(
            xp, h, w, ho, wo, kernel_size, stride, padding, count_include_pad
        ).astype(x.dtype)
    return _contiguous(xp, (sums / divisor).astype(x.dtype, copy=False))


def _avg_pool2d_backward(xp, g, input_shape, kernel_size, stride, padding, ceil_mode,
                         count_include_pad, divisor):  # fmt: skip
    """The adjoint of ``_avg_pool2d``: each output's gradient, divided, spread over its
    window."""
    if len(input_shape) == 3:  # unbatched
        args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor)
        return _avg_pool2d_backward(xp, g[None], (1, *input_shape), *args)[0]
    n, c, h, w = input_shape
    ho, wo = g.shape[-2:]
    (kh, kw), (sh, sw), (ph, pw) = kernel_size, stride, padding
    if divisor is None:
        divisor = _avg_pool_divisors(
            xp, h, w, ho, wo, kernel_size, stride, padding, count_include_pad
        ).astype(g.dtype)
    share = g / divisor
    bottom = max((ho - 1) * sh + kh - h - ph, 0)
    right = max((wo - 1) * sw + kw - w - pw, 0)
    out = xp.zeros((n, c, h + ph + bottom, w + pw + right), dtype=g.dtype)
    for i in range(kh):
        for j in range(kw):
            out[:, :, i : i + sh * ho : sh, j : j + sw * wo : sw] += share
    return _contiguous(xp, out[:, :, ph : ph + h, pw : pw + w])


def _adaptive_ranges(size, out):
    """PyTorch's adaptive windows: ``[floor(i * size / out), ceil((i + 1) * size / out))``."""
    return [((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


def _adaptive_avg_pool2d(xp, x, output_size):
    oh, ow = output_size
    rows, cols = _adaptive_ranges(x.shape[-2], oh), _adaptive_ranges(x.shape[-1], ow)
    out = xp.empty(x.shape[:-2] + (oh, ow), dtype=x.dtype)
    for i, (r0, r1) in enumerate(rows):
        for j, (c0, c1) in enumerate(cols):
            out[..., i, j] = x[..., r0:r1, c0:c1].mean(axis=(-2, -1))
    return out


def _adaptive_avg_pool2d_backward(xp, g, input_shape):
    oh, ow = g.shape[-2:]
    rows, cols = _adaptive_ranges(input_shape[-2], oh), _adaptive_ranges(input_shape[-1], ow)
    out = xp.zeros(tuple(input_shape), dtype=g.dtype)
    for i, (r0, r1) in enumerate(rows):
        for j, (c0, c1) in enumerate(cols):
            out[..., r0:r1, c0:c1] += (g[..., i, j] / ((r1 - r0) * (c1 - c0)))[..., None, None]
    return out


def _grouped_grad_output(gy, groups):
    """``(N, O, Ho, Wo)`` -> ``(groups, O / groups, N * Ho * Wo)``."""
    n, o, ho, wo = gy.shape
    return (
        gy.reshape(n, groups, o // groups, ho * wo)
        .transpose(1, 2, 0, 3)
        .reshape(groups, o // groups, n * ho * wo)
    )


def _conv2d(xp, x, weight, bias, stride, padding, dilation, groups):
    o, cg, kh, kw = weight.shape
    n, c = x.shape[:2]
    cols, ho, wo = _conv_columns(xp, x, kh, kw, stride, padding, dilation, groups)
    out = xp.matmul(weight.reshape(groups, o // groups, cg * kh * kw), cols)
    out = out.reshape(o, n, ho, wo).transpose(1, 0, 2, 3)
    if bias is not None:
        out = out + bias.reshape(1, o, 1, 1)
    return xp.ascontiguousarray(out)


def _conv2d_transpose(xp, gy, weight, input_shape, stride, padding, dilation, groups):
    """T(gy, w): the gradient of conv2d with respect to its input (col2im of ``w^T gy``)."""
    o, cg, kh, kw = weight.shape
    n, c, h, w = input_shape
    _, _, ho, wo = gy.shape
    (pt, pb), (pl, pr) = padding
    (sh, sw), (dh, dw) = stride, dilation
    w_t = weight.reshape(groups, o // groups, cg * kh * kw).transpose(0, 2, 1)
    cols = xp.matmul(w_t, _grouped_grad_output(gy, groups)).reshape(c, kh, kw, n, ho, wo)
    dx = xp.zeros((n, c, h + pt + pb, w + pl + pr), dtype=cols.dtype)
    for i in range(kh):
        for j in range(kw):
            rows = slice(i * dh, i * dh + sh * (ho - 1) + 1, sh)
            cols_ = slice(j * dw, j * dw + sw * (wo - 1) + 1, sw)
            dx[:, :, rows, cols_] += cols[:, i, j].transpose(1, 0, 2, 3)
    return xp.ascontiguousarray(dx[:, :, pt : pt + h, pl : pl + w])


def _conv2d_weight(xp, x, gy, weight_shape, stride, padding, dilation, groups):
    """W(x, gy): the gradient of conv2d with respect to its weight."""
    o, cg, kh, kw = weight_shape
    cols, _, _ = _conv_columns(xp, x, kh, kw, stride, padding, dilation, groups)
    dw = xp.matmul(_grouped_grad_output(gy, groups), cols.transpose(0, 2, 1))
    return dw.reshape(o, cg, kh, kw)


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


def _loss_reduction(losses, reduction):
    if reduction == "mean":
        return losses.mean()
    if reduction == "sum":
        return losses.sum()
    return losses


def _loss_grad(grad, self, reduction):
    """The upstream gradient of a reduced loss, per element: divided by the count for "mean"."""
    return grad / max(self.numel(), 1) if reduction == "mean" else grad


def _weight_or_1(weight):
    return 1.0 if weight is None else weight


def _smooth_l1(xp, d, beta):
    """PyTorch's smooth L1 of the differences ``d`` (``beta`` > 0): quadratic below ``beta``,
    linear above; Huber's loss is this times ``delta``."""
    a = xp.abs(d)
    return xp.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta)


def _smooth_l1_backward(grad, d, reduction, beta):
    return _loss_grad(grad, d, reduction) * _C.where(d.abs() < beta, d / beta, d.sign())


def _clamped_log(t):
    """``log`` clamped below at -100, as PyTorch's binary cross entropy does."""
    return t.log().clamp(min=-100.0)


def _bce(xp, x, t, weight):
    if bool(xp.any((x < 0) | (x > 1))):
        raise RuntimeError("all elements of input should be between 0 and 1")
    with np.errstate(divide="ignore"):
        log_x = xp.maximum(xp.log(x), -100.0)
        log_1mx = xp.maximum(xp.log(1 - x), -100.0)
    losses = -(t * log_x + (1 - t) * log_1mx)
    return losses if weight is None else losses * weight


def _bce_logits(xp, x, t, weight, pos_weight):
    """``-w [pw t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))]``, written stably."""
    softplus_neg = xp.logaddexp(0, -x)  # log(1 + exp(-x)) = -log sigmoid(x)
    if pos_weight is None:
        losses = (1 - t) * x + softplus_neg
    else:
        losses = (1 - t) * x + ((pos_weight - 1) * t + 1) * softplus_neg
    return losses if weight is None else losses * weight


def _bce_logits_self_grad(x, t, pos_weight):
    if pos_weight is None:
        return x.sigmoid() - t
    return (1 - t) - ((pos_weight - 1) * t + 1) * (-x).sigmoid()


def _bce_logits_target_grad(x, pos_weight):
    if pos_weight is None:
        return -x
    softplus_neg = (-x).relu() + (-x.abs()).exp().log1p()  # log(1 + exp(-x)), stably
    return -x + (pos_weight - 1) * softplus_neg


def _mse_loss_backward(grad, self, target, reduction):
    diff = self - target
    if reduction == "mean":
        return grad * diff * (2 / max(diff.numel(), 1))
    return grad * diff * 2


def _nll_loss(xp, self, target, weight, reduction, ignore_index):
    """``-self[i, target[i]]`` weighted by ``weight[target[i]]``; for 1-d or 2-d ``self``."""
    x = self.reshape(1, -1) if self.ndim == 1 else self
    t = target.reshape(-1)
    valid = t != ignore_index
    bad = (t < 0) | (t >= x.shape[1])
    if bool((bad & valid).any()):
        raise IndexError(f"Target {int(t[bad & valid][0])} is out of bounds.")
    safe = xp.where(valid, t, 0)
    w = weight[safe] if weight is not None else xp.ones(t.shape, dtype=x.dtype)
    w = w * valid
    losses = -x[xp.arange(t.shape[0]), safe] * w
    if reduction == "none":
        return losses.reshape(target.shape)
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / w.sum()


def _nll_loss_backward(grad, self_shape, target, weight, reduction, ignore_index):
    t = target.reshape(-1)
    valid = t != ignore_index
    safe = _C.where(valid, t, 0)
    if weight is not None:
        w = weight.index_select(0, safe).to(grad.dtype) * valid
    else:
        w = valid.to(grad.dtype)
    if reduction == "mean":
        w = w / w.sum()
    g = grad.reshape(-1) if reduction == "none" else grad
    n_classes = self_shape[-1] if self_shape else 1
    out = _C.zeros((t.shape[0], n_classes), dtype=grad.dtype, device=grad.device)
    return out.scatter_add(1, safe.unsqueeze(1), (-w * g).unsqueeze(1)).reshape(self_shape)


def _nll_loss2d(xp, self, target, weight, reduction, ignore_index):
    """``_nll_loss`` with the classes in dim 1 of a 4-d ``self``, one row per pixel."""
    flat = xp.transpose(self, (0, 2, 3, 1)).reshape(-1, self.shape[1])
    return _nll_loss(xp, flat, target, weight, reduction, ignore_index)


def _nll_loss2d_backward(grad, self_shape, target, weight, reduction, ignore_index):
    n, c, h, w = self_shape
    flat = _nll_loss_backward(grad, (n * h * w, c), target, weight, reduction, ignore_index)
    return flat.reshape(n, h, w, c).permute(0, 3, 1, 2)


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


# ---- rows -> Node classes -------------------------------------------------------------------
_MISSING = object()
_GRAD_ONLY = ("grad",)  # the one slots tuple of every formula of ``grad`` alone


class TableNode(Node):
    """A node made from a row of the table: it unpacks what its formulas name and calls them.

    Most rows' classes replace this ``apply`` with one generated from the row, which does the
    same with no loop over the plan (see NOTE [Generated apply]).
    """

    __slots__ = ()
    _op: OpInfo
    _slot_plan: tuple  # ((edge_index, is_list, formula, slot names of its parameters), ...)
    _saved_names: tuple

    def apply(self, grads):
        edges = self._next_edges
        grad = grads[0]
        if grad is None and (self._op.outputs == 1 or all(g is None for g in grads)):
            return [None] * len(edges)
        out = [None] * len(edges)
        unpacked = {}
        for i, is_list, formula, slots in self._slot_plan:
            if is_list:
                if all(e.function is None for e in edges):
                    continue
            elif edges[i][0] is None:
                continue
            if slots is _GRAD_ONLY:  # ``self=lambda grad: grad`` and the like: nothing to unpack
                out[i] = formula(grad)
                continue
            args = []
            for slot in slots:
                if slot == "grad":
                    args.append(grad)
                elif slot == "grads":
                    args.append(grads)
                elif slot in unpacked:  # each saved value is unpacked once per apply
                    args.append(unpacked[slot])
                else:
                    value = getattr(self, slot, _MISSING)
                    if type(value) is SavedTensor:
                        value = value.unpack(self)
                    elif value is FREED:
                        raise RuntimeError(ERR_FREED)
                    elif value is _MISSING:
                        raise RuntimeError(f"{self.name()} did not save '{slot[3:]}'")
                    elif type(value) is list:
                        value = [unpack_saved(v, self) for v in value]
                    unpacked[slot] = value
                    args.append(value)
            value = formula(*args)
            if is_list:
                out[:] = list(value)
            else:
                out[i] = value
        return out

    def release_variables(self):
        for slot in self._tensor_slots:
            value = getattr(self, slot, None)
            if value is not None:
                if type(value) is SavedTensor:
                    value._free()
                elif type(value) is list:
                    for v in value:
                        if type(v) is SavedTensor:
                            v._free()
                setattr(self, slot, FREED)

    def _saved_tensor_names(self):
        return self._saved_names


def _saved_property(name):
    slot = "_s_" + name

    def getter(self):
        value = getattr(self, slot, None)
        if value is FREED:
            raise RuntimeError(ERR_FREED)
        if type(value) is list:
            return tuple(unpack_saved(v, self) for v in value)
        return unpack_saved(value, self)

    getter.__name__ = "_saved_" + name
    return property(getter, doc=f"The saved value '{name}' (as PyTorch's ``_saved_{name}``).")


def _raw_saved_property(name):
    slot = "_s_" + name

    def getter(self):
        value = getattr(self, slot, None)
        if type(value) in (list, tuple):  # a list input, or indexing's indices
            return [_raw_saved(v) for v in value]
        return _raw_saved(value)

    getter.__name__ = "_raw_saved_" + name
    return property(getter, doc=f"The SavedTensor object of '{name}' (``_raw_saved_{name}``).")


def _raw_saved(value):
    """The SavedTensor object of a saved slot, as PyTorch's ``_raw_saved_*``: one standing for
    None where nothing was saved, a freed one after release (neither raises until used), and
    a number's own tensor (PyTorch saves a Python number as a wrapped-number tensor)."""
    if type(value) is SavedTensor:
        return value
    if value is FREED:
        saved = SavedTensor(None)
        saved._free()
        return saved
    if isinstance(value, Tensor):
        return SavedTensor(value)
    if isinstance(value, (bool, int, float, complex, np.ndarray, np.generic)):
        return SavedTensor(_conversion.tensor(value))
    return SavedTensor(None)  # None, or an index that is no tensor (a slice, ...)


# NOTE [Generated apply]
# PyTorch generates each node's code from derivatives.yaml (``Functions.cpp`` for ``apply``,
# ``VariableType`` for what the forward saves). nbgrad generates the same two pieces from each
# row, as straight-line Python with no loop over a plan: ``_save``, which ``_record`` calls
# to store on a new node the values its live formulas need (a slot no live formula needs is set
# to None), and ``apply``, which unpacks every saved tensor once, then runs the formula of each
# input whose edge is live; ``release_variables`` comes with it. Rows with several outputs, list
# inputs or formulas of ``grads`` keep ``TableNode.apply``, the generic walk of ``_slot_plan``
# that does the same more slowly. The sources stay on the class to read:
# ``MulBackward0._save_source``, ``MulBackward0._apply_source``.
def _exec_generated(source, filename, env):
    """Define the generated functions in ``env``; tracebacks through them show their lines."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), env)


# attributes that PyTorch saves as tensors (``std::vector<SavedVariable> indices_``): released
# with the graph like any saved tensor, so a second backward through an indexing node raises
_TENSOR_ATTRS = frozenset({"indices"})


def _released_slots(save_plan):
    """The slots ``release_variables`` frees: saved inputs and results, and tensor attributes."""
    return tuple(
        slot
        for slot, kind, key, _ in save_plan
        if kind in ("input", "result") or (kind == "attr" and key in _TENSOR_ATTRS)
    )


def _generate_apply(info, slot_plan, save_plan):
    if (
        info.outputs != 1
        or any(info.list_input)
        or any("grads" in slots for _, _, _, slots in slot_plan)
    ):
        return {}
    n_edges = sum(1 for inp in info.inputs if inp not in info.nondiff)
    tensor_slots = list(_released_slots(save_plan))
    env = {"SavedTensor": SavedTensor, "FREED": FREED, "ERR_FREED": ERR_FREED}
    lines = ["def apply(self, grads):", "    edges = self._next_edges"]
    for slot in tensor_slots:  # saved tensors: unpacked once, whichever edges are live
        local = "v" + slot[2:]
        lines += [
            f"    {local} = self.{slot}",
            f"    if type({local}) is SavedTensor:",
            f"        {local} = {local}.unpack(self)",
            f"    elif {local} is FREED:",
            "        raise RuntimeError(ERR_FREED)",
        ]
    outs = [f"out{i}" for i in range(n_edges)]
    lines += [
        "    grad = grads[0]",
        "    if grad is None:",
        f"        return [{', '.join(['None'] * n_edges)}]",
        f"    {' = '.join(outs)} = None",
    ]
    for k, (i, _, formula, slots) in enumerate(slot_plan):
        env[f"formula{k}"] = formula
        # ``_record`` sets every slot: to the value where a formula that needs it has a live
        # edge, else to None
        args = ", ".join(s if s == "grad" else "v" + s[2:] for s in slots)
        lines.append(f"    if edges[{i}][0] is not None:")
        for slot in slots:
            if slot != "grad" and slot not in tensor_slots:  # attributes and shapes
                lines.append(f"        v{slot[2:]} = self.{slot}")
        lines.append(f"        out{i} = formula{k}({args})")
    lines.append(f"    return [{', '.join(outs)}]")
    # release_variables, unrolled: every saved input or result goes, Python numbers included
    # (PyTorch saves those as wrapped-number tensors, which are released too)
    lines.append("def release_variables(self):")
    for slot in tensor_slots:  # a SavedTensor object a caller may hold is freed too
        lines += [
            f"    v = self.{slot}",
            "    if v is not None:",
            "        if type(v) is SavedTensor:",
            "            v._free()",
            f"        self.{slot} = FREED",
        ]
    if not tensor_slots:
        lines.append("    pass")
    source = "\n".join(lines) + "\n"
    _exec_generated(source, f"<generated apply of {info.node_name}>", env)
    for fn in ("apply", "release_variables"):
        env[fn].__qualname__ = f"{info.node_name}.{fn}"
    return {
        "apply": env["apply"],
        "release_variables": env["release_variables"],
        "_apply_source": source,
    }


def _generate_save(info, save_plan):
    """``_save(node, edges, args, attrs, results)``: what ``_record`` stores on a new node.

    Straight-line code from ``save_plan`` (NOTE [Generated apply]): a value goes in its slot
    when a formula that needs it has a live edge, else the slot gets None.
    """
    env = {"SavedTensor": SavedTensor, "Tensor": Tensor}
    lines = ["def _save(node, edges, args, attrs, results):"]
    for slot, kind, key, needers in save_plan:
        indent = "    "
        if needers:
            live = " or ".join(f"edges[{i}][0] is not None" for i in needers)
            lines.append(f"    if {live}:")
            indent = "        "
        if kind == "attr":
            lines.append(f"{indent}node.{slot} = attrs[{key!r}]")
        elif kind == "result":
            lines.append(
                f"{indent}node.{slot} = SavedTensor(results[{key}], True, {info.node_name!r})"
            )
        elif kind == "shape":
            value = (
                f"[t.shape for t in args[{key}]]" if info.list_input[key] else f"args[{key}].shape"
            )
            lines.append(f"{indent}node.{slot} = {value}")
        elif info.list_input[key]:
            lines.append(f"{indent}node.{slot} = [SavedTensor(t) for t in args[{key}]]")
        else:  # an input: a tensor, or a Python number or None in its place
            lines += [
                f"{indent}a = args[{key}]",
                f"{indent}node.{slot} = SavedTensor(a) if isinstance(a, Tensor) else a",
            ]
        if needers:
            lines += ["    else:", f"        node.{slot} = None"]
    if not save_plan:
        lines.append("    pass")
    source = "\n".join(lines) + "\n"
    _exec_generated(source, f"<generated save of {info.node_name}>", env)
    env["_save"].__qualname__ = f"{info.node_name}._save"
    return staticmethod(env["_save"]), source


# rows PyTorch differentiates with one formula for all inputs (``input, weight, bias: ...``)
_JOINT_FORMULAS = frozenset({"convolution", "layer_norm", "batch_norm"})


def _build_node_class(info: OpInfo):
    saved = []
    plan = []
    for i, inp in enumerate(info.inputs):
        f = info.formulas.get(inp)
        if f is None:
            continue
        params = tuple(inspect.signature(f).parameters)
        # the node has no edge for a nondiff input: index the plan by edge, not by input
        edge_i = i - sum(1 for inp in info.inputs[:i] if inp in info.nondiff)
        plan.append((edge_i, info.list_input[i], f, params))
        for p in params:
            if p not in ("grad", "grads") and p not in saved:
                saved.append(p)
    # NOTE [Order of a node's formulas]
    # PyTorch's generated ``apply`` computes its inputs' gradients in the sorted order of their
    # names in derivatives.yaml (``mul``: ``other`` before ``self``; ``mm``: ``mat2`` before
    # ``self``), so under create_graph the nodes of the gradient for ``other`` are made first
    # and get the smaller sequence numbers; a double backward then runs them in PyTorch's
    # order. Rows whose inputs PyTorch differentiates in one joint formula keep input order.
    if info.name not in _JOINT_FORMULAS:
        by_name = {info.inputs.index(inp): inp for inp in info.formulas}
        names = [by_name[i] for i in sorted(by_name)]
        plan = [entry for _, entry in sorted(zip(names, plan), key=lambda pair: pair[0])]
    # how _record fills each slot: ("attr", name) | ("result", k) | ("shape", i) | ("input", i)
    # plus the inputs whose formulas need the value: as in PyTorch, a value is saved only when
    # one of them has a live edge (``x * y`` with ``y`` constant does not save ``x``)
    save_plan = []
    for s in saved:
        needers = tuple(i for i, _, _, params in plan if s in params)
        if any(info.list_input):
            needers = ()
        if s in info.attrs:
            save_plan.append(("_s_" + s, "attr", s, needers))
        elif s == "result" or (s.startswith("result") and s[6:].isdigit()):
            save_plan.append(("_s_" + s, "result", int(s[6:] or 0), needers))
        elif s.endswith("_shape"):
            save_plan.append(("_s_" + s, "shape", info.inputs.index(s[:-6]), needers))
        else:
            save_plan.append(("_s_" + s, "input", info.inputs.index(s), needers))
    # the plan ``apply`` walks: formula parameters as slot names ("grad"/"grads" stay as they are)
    slot_plan = tuple(
        (
            i,
            is_list,
            f,
            _GRAD_ONLY
            if params == _GRAD_ONLY and not is_list
            else tuple(p if p in ("grad", "grads") else "_s_" + p for p in params),
        )
        for i, is_list, f, params in plan
    )
    save, save_source = _generate_save(info, save_plan)
    ns = {
        "_slot_plan": slot_plan,
        **_generate_apply(info, slot_plan, save_plan),
        "_tensor_slots": _released_slots(save_plan),
        "_save": save,
        "_save_source": save_source,
        "__slots__": tuple("_s_" + s for s in saved),
        "_op": info,
        "_name": info.node_name,
        "_saved_names": tuple(saved),
        "__doc__": f"Backward of ``{info.name}`` (PyTorch's ``{info.node_name}``).",
    }
    for s in saved:
        ns["_saved_" + s] = _saved_property(s)
    for slot, kind, key, _ in save_plan:  # tensors: their SavedTensor objects as well
        if kind in ("input", "result") or (kind == "attr" and key in _TENSOR_ATTRS):
            ns["_raw_saved_" + slot[3:]] = _raw_saved_property(slot[3:])
    # PyTorch calls the saved shape of ``self`` ``_saved_self_sym_sizes``
    if "self_shape" in saved:
        ns["_saved_self_sym_sizes"] = _saved_property("self_shape")
    return type(info.node_name, (TableNode,), ns)


for _info in OPS.values():
    if _info.differentiable:
        _info.node_class = _build_node_class(_info)
