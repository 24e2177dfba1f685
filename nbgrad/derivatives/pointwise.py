"""Op table rows: pointwise ops (arithmetic, comparisons, unary math, bitwise ops)."""

from __future__ import annotations

import math

import numpy as np

from nbgrad._tensor import creation as _C
from nbgrad._tensor import dispatch as _D
from nbgrad._tensor.views import _NoGrad
from nbgrad.derivatives.opinfo import _ON_ARRAYS, op, row_function
from nbgrad.kernels.common import _contiguous, _erf, _sigmoid
from nbgrad.kernels.pointwise import (
    _bitwise,
    _clamp,
    _clone,
    _compared,
    _copysign,
    _erfc,
    _erfinv,
    _floor_divide,
    _fmod,
    _frexp,
    _gcd_lcm,
    _heaviside,
    _ldexp,
    _lerp,
    _logit,
    _nan_to_num,
    _pow_scalar,
    _remainder,
    _rounded,
    _rounded_quotient,
    _sigmoid_backward,
    _sign,
    _tanh_backward,
    _xlogy,
)

_PI = math.pi

# rows that formulas below call as functions (on Tensors or arrays: NOTE [Backward on arrays])
sin, cos = row_function("sin"), row_function("cos")
tanh_backward = row_function("tanh_backward")
sigmoid_backward = row_function("sigmoid_backward")
power = row_function("pow")  # (``**`` on arrays is NumPy's pow, not the row's kernel)


def zeros_like(a):
    """Zeros of ``a``'s shape and dtype, for a formula that runs on Tensors and on arrays
    (NOTE [Backward on arrays]): NumPy's on an array or NumPy scalar, else a new tensor."""
    return np.zeros_like(a) if isinstance(a, _ON_ARRAYS) else _C.zeros_like(a)


zeros_like.on_arrays = True


def _atan2_scale(self, other):
    """``1 / (self**2 + other**2)``, 0 where that is inf, so that atan2's gradient at (0, 0) is 0
    as PyTorch's ``atan2_backward`` (on Tensors or arrays: NOTE [Backward on arrays])."""
    denominator = self * self + other * other
    if isinstance(denominator, _ON_ARRAYS):
        recip = 1 / denominator
        return np.where(np.isinf(recip), 0, recip)
    recip = denominator.reciprocal()
    return recip.masked_fill(recip.isinf(), 0)


_atan2_scale.on_arrays = True

# fmt: off
# elementwise binary
op("add", "AddBackward0", "self other", lambda xp, self, other, alpha: self + other if alpha == 1 else self + alpha * other,
   on_arrays=True, attrs="alpha", promote="binary", ufunc=np.add,
   self=lambda grad: grad,
   other=lambda grad, alpha: grad if alpha == 1 else grad * alpha)
op("sub", "SubBackward0", "self other", lambda xp, self, other, alpha: self - other if alpha == 1 else self - alpha * other,
   on_arrays=True, attrs="alpha", promote="binary", ufunc=np.subtract,
   self=lambda grad: grad,
   other=lambda grad, alpha: -grad if alpha == 1 else grad * -alpha)
op("rsub", "RsubBackward1", "self", lambda xp, self, other, alpha: other - self if alpha == 1 else other - alpha * self,
   on_arrays=True, attrs="other alpha", promote="binary", promote_attrs=("other",),
   self=lambda grad, alpha: -grad if alpha == 1 else grad * -alpha)
op("mul", "MulBackward0", "self other", lambda xp, self, other: self * other, on_arrays=True, promote="binary", ufunc=np.multiply,
   self=lambda grad, other: grad * other,
   other=lambda grad, self: grad * self)
op("div", "DivBackward0", "self other", lambda xp, self, other: self / other, on_arrays=True, promote="float", ufunc=np.true_divide,
   self=lambda grad, other: grad / other,
   other=lambda grad, self, other: -grad * ((self / other) / other))
# ``//`` has no derivative in PyTorch either: its node is "NotImplemented", whose backward raises
op("floor_divide", "NotImplemented", "self other", lambda xp, self, other: _floor_divide(xp, self, other), promote="binary", quiet=True,
   self=lambda grad: _not_implemented("floor_divide"),
   other=lambda grad: _not_implemented("floor_divide"))
# ``%``: PyTorch's remainder, whose node depends on the overload (a number as ``other``:
# RemainderBackward0; a tensor: RemainderBackward1; a number ``% tensor``: NotImplemented)
op("remainder_scalar", "RemainderBackward0", "self", lambda xp, self, other: _remainder(xp, self, other), on_arrays=True, attrs="other", promote="binary", promote_attrs=("other",), quiet=True,
   self=lambda grad: grad)
op("remainder", "RemainderBackward1", "self other", lambda xp, self, other: _remainder(xp, self, other), promote="binary", quiet=True,
   self=lambda grad: grad,
   other=lambda grad, self, other: -grad * _floor_quotient(self, other))
op("rremainder", "NotImplemented", "other", lambda xp, other, self: _remainder(xp, self, other), attrs="self", promote="binary", promote_attrs=("self",), quiet=True,
   other=lambda grad: _not_implemented("remainder"))
# (NumPy computes bool ** bool in int8; the operands are already promoted, so keep their dtype;
# the gradient of ``x ** 0`` is 0, as PyTorch's ``pow_backward``, not 0 * x ** -1, nan at 0)
op("pow", "PowBackward0", "self", lambda xp, self, exponent: _pow_scalar(xp, self, exponent),
   on_arrays=True, attrs="exponent", promote="binary", promote_attrs=("exponent",),
   self=lambda grad, self, exponent: zeros_like(grad) if exponent == 0 else grad * exponent * power(self, exponent=exponent - 1))
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

# elementwise unary
op("neg", "NegBackward0", "self", lambda xp, self: -self, on_arrays=True, self=lambda grad: -grad)
op("abs", "AbsBackward0", "self", lambda xp, self: xp.abs(self), ufunc=np.abs, self=lambda grad, self: grad * self.sign())
op("sign", "SignBackward0", "self", lambda xp, self: _sign(xp, self), self=lambda grad: _C.zeros_like(grad))
op("exp", "ExpBackward0", "self", lambda xp, self: xp.exp(self), on_arrays=True, ufunc=np.exp, promote="float", self=lambda grad, result: grad * result)
op("log", "LogBackward0", "self", lambda xp, self: xp.log(self), on_arrays=True, ufunc=np.log, promote="float", self=lambda grad, self: grad / self)
op("log1p", "Log1PBackward0", "self", lambda xp, self: xp.log1p(self), on_arrays=True, ufunc=np.log1p, promote="float", self=lambda grad, self: grad / (self + 1))
op("sqrt", "SqrtBackward0", "self", lambda xp, self: xp.sqrt(self), on_arrays=True, ufunc=np.sqrt, promote="float", self=lambda grad, result: grad / (2 * result))
op("rsqrt", "RsqrtBackward0", "self", lambda xp, self: 1 / xp.sqrt(self), promote="float", self=lambda grad, result: -0.5 * grad * result ** 3)
op("reciprocal", "ReciprocalBackward0", "self", lambda xp, self: 1 / self, on_arrays=True, promote="float", self=lambda grad, result: -grad * (result * result))
op("expm1", "Expm1Backward0", "self", lambda xp, self: xp.expm1(self), on_arrays=True, ufunc=np.expm1, promote="float", self=lambda grad, result: grad * (result + 1))
op("exp2", "Exp2Backward0", "self", lambda xp, self: xp.exp2(self), promote="float", self=lambda grad, result: grad * result * math.log(2))
op("log2", "Log2Backward0", "self", lambda xp, self: xp.log2(self), promote="float", self=lambda grad, self: grad / (self * math.log(2)))
op("log10", "Log10Backward0", "self", lambda xp, self: xp.log10(self), promote="float", self=lambda grad, self: grad / (self * math.log(10)))
op("tan", "TanBackward0", "self", lambda xp, self: xp.tan(self), on_arrays=True, ufunc=np.tan, promote="float", self=lambda grad, result: grad * (1 + result * result))
op("asin", "AsinBackward0", "self", lambda xp, self: xp.arcsin(self), promote="float", self=lambda grad, self: grad * (1 - self * self).rsqrt())
op("acos", "AcosBackward0", "self", lambda xp, self: xp.arccos(self), promote="float", self=lambda grad, self: -grad * (1 - self * self).rsqrt())
op("atan", "AtanBackward0", "self", lambda xp, self: xp.arctan(self), on_arrays=True, ufunc=np.arctan, promote="float", self=lambda grad, self: grad / (1 + self * self))
op("sinh", "SinhBackward0", "self", lambda xp, self: xp.sinh(self), promote="float", self=lambda grad, self: grad * self.cosh())
op("cosh", "CoshBackward0", "self", lambda xp, self: xp.cosh(self), promote="float", self=lambda grad, self: grad * self.sinh())
# rounding: integer tensors come back as they are (a copy); the derivative is zero, as PyTorch's
op("floor", "FloorBackward0", "self", lambda xp, self: _rounded(xp, xp.floor, self), self=lambda grad: _C.zeros_like(grad))
op("ceil", "CeilBackward0", "self", lambda xp, self: _rounded(xp, xp.ceil, self), self=lambda grad: _C.zeros_like(grad))
op("round", "RoundBackward0", "self", lambda xp, self: _rounded(xp, xp.round, self), self=lambda grad: _C.zeros_like(grad))
op("trunc", "TruncBackward0", "self", lambda xp, self: _rounded(xp, xp.trunc, self), self=lambda grad: _C.zeros_like(grad))
op("frac", "FracBackward0", "self", lambda xp, self: self - xp.trunc(self), on_arrays=True, promote="float", self=lambda grad: grad)
op("sin", "SinBackward0", "self", lambda xp, self: xp.sin(self), on_arrays=True, ufunc=np.sin, promote="float", self=lambda grad, self: grad * cos(self))
op("cos", "CosBackward0", "self", lambda xp, self: xp.cos(self), on_arrays=True, ufunc=np.cos, promote="float", self=lambda grad, self: grad * -sin(self))
op("tanh", "TanhBackward0", "self", lambda xp, self: xp.tanh(self), on_arrays=True, ufunc=np.tanh, promote="float", self=lambda grad, result: tanh_backward(grad, result))
op("sigmoid", "SigmoidBackward0", "self", lambda xp, self: _sigmoid(xp, self), on_arrays=True, promote="float", self=lambda grad, result: sigmoid_backward(grad, result))
# their backward formulas, as ops of their own as in PyTorch: one fused pass and one array,
# not three (see NOTE [Fused backward kernels]); differentiable for double backward
op("tanh_backward", "TanhBackwardBackward0", "grad_output output", lambda xp, grad_output, output: _tanh_backward(xp, grad_output, output), on_arrays=True, promote="binary",
   grad_output=lambda grad, output: tanh_backward(grad, output),
   output=lambda grad, grad_output, output: grad * (-2 * output * grad_output))
op("sigmoid_backward", "SigmoidBackwardBackward0", "grad_output output", lambda xp, grad_output, output: _sigmoid_backward(xp, grad_output, output), on_arrays=True, promote="binary",
   grad_output=lambda grad, output: sigmoid_backward(grad, output),
   output=lambda grad, grad_output, output: grad * grad_output * (1 - 2 * output))
op("erf", "ErfBackward0", "self", lambda xp, self: _erf(xp, self), promote="float", self=lambda grad, self: grad * (2 / math.sqrt(math.pi)) * (-self * self).exp())
op("clamp", "ClampBackward1", "self", lambda xp, self, min, max: _clamp(xp, self, min, max), attrs="min max",
   self=lambda grad, self, min, max: _C.where(_clamp_mask(self, min, max), grad, 0.0))
op("clamp_min", "ClampMinBackward0", "self", lambda xp, self, min: xp.maximum(self, min), attrs="min",
   self=lambda grad, self, min: _C.where(self >= min, grad, 0.0))
op("clamp_max", "ClampMaxBackward0", "self", lambda xp, self, max: xp.minimum(self, max), attrs="max",
   self=lambda grad, self, max: _C.where(self <= max, grad, 0.0))
# binary math
op("logaddexp", "LogaddexpBackward0", "self other", lambda xp, self, other: xp.logaddexp(self, other), promote="float",
   self=lambda grad, self, other: grad / (1 + (other - self).exp()),
   other=lambda grad, self, other: grad / (1 + (self - other).exp()))
op("lerp", "LerpBackward0", "self end", lambda xp, self, end, weight: _lerp(xp, self, end, weight), on_arrays=True, attrs="weight", promote="binary",
   self=lambda grad, weight: grad * (1 - weight),
   end=lambda grad, weight: grad * weight)
op("lerp_tensor", "LerpBackward1", "self end weight", lambda xp, self, end, weight: _lerp(xp, self, end, weight), on_arrays=True, promote="binary",
   self=lambda grad, weight: grad * (1 - weight),
   end=lambda grad, weight: grad * weight,
   weight=lambda grad, self, end: grad * (end - self))
op("atan2", "Atan2Backward0", "self other", lambda xp, self, other: xp.arctan2(self, other), on_arrays=True, promote="float",
   self=lambda grad, self, other: grad * other * _atan2_scale(self, other),
   other=lambda grad, self, other: grad * -self * _atan2_scale(self, other))
op("hypot", "HypotBackward0", "self other", lambda xp, self, other: xp.hypot(self, other), on_arrays=True, promote="binary",
   self=lambda grad, self, result: grad * self / result,
   other=lambda grad, other, result: grad * other / result)
# fmod: the remainder of C's truncating division (a number as ``other``: FmodBackward0)
op("fmod_scalar", "FmodBackward0", "self", lambda xp, self, other: _fmod(xp, self, other), on_arrays=True, attrs="other", promote="binary", promote_attrs=("other",), quiet=True,
   self=lambda grad: grad)
op("fmod", "FmodBackward1", "self other", lambda xp, self, other: _fmod(xp, self, other), promote="binary", quiet=True,
   self=lambda grad: grad,
   other=lambda grad, self, other: -grad * _trunc_quotient(self, other))
op("nan_to_num", "NanToNumBackward0", "self", lambda xp, self, nan, posinf, neginf: _nan_to_num(xp, self, nan, posinf, neginf), attrs="nan posinf neginf",
   self=lambda grad, self: grad * self.isfinite())
op("erfinv", "ErfinvBackward0", "self", lambda xp, self: _erfinv(xp, self), promote="float", quiet=True,
   self=lambda grad, result: grad * (0.5 * math.sqrt(math.pi)) * (result * result).exp())
op("isclose", None, "self other", lambda xp, self, other, rtol, atol, equal_nan: xp.isclose(self, other, rtol=rtol, atol=atol, equal_nan=equal_nan),
   attrs="rtol atol equal_nan", differentiable=False)
op("to_dtype", "ToCopyBackward0", "self", lambda xp, self, dtype: self.astype(dtype.np), on_arrays=True, attrs="dtype", self=lambda grad: grad)
op("clone", "CloneBackward0", "self", lambda xp, self, memory_format: _clone(xp, self, memory_format), on_arrays=True, attrs="memory_format", self=lambda grad: grad)
# fmt: on


def _floor_quotient(self, other):
    """``self // other`` as a constant: its derivative is zero (PyTorch's formula for
    ``remainder`` uses ``div(rounding_mode="floor")``, whose derivative is zero)."""
    with _NoGrad():
        return self // other


def _trunc_quotient(self, other):
    """``self / other`` rounded toward zero, as a constant (PyTorch's fmod formula uses
    ``div(rounding_mode="trunc")``, whose derivative is zero)."""
    with _NoGrad():
        return (self / other).trunc()


def _not_implemented(name):
    raise RuntimeError(f"derivative for aten::{name} is not implemented")


def _clamp_mask(x, lo, hi):
    if lo is not None and hi is not None:
        return (x >= lo).logical_and(x <= hi)
    if lo is not None:
        return x >= lo
    if hi is not None:
        return x <= hi
    return _C.ones_like(x, dtype=_D.bool_)


def _pow_backward(grad, self, exponent):
    # ``pow``'s formula for a tensor ``exponent``: 0 where it is 0 (PyTorch's ``pow_backward``;
    # elsewhere at self == 0 a negative power is inf and 0 * inf is nan, as in PyTorch: NumPy's
    # warning is off in backward, see NOTE [Quiet backward] in the engine)
    return _C.where(exponent == 0, 0.0, grad * exponent * self ** (exponent - 1))


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
# fmt: on


for _name, _np_name in (
    ("bitwise_and", "bitwise_and"),
    ("bitwise_or", "bitwise_or"),
    ("bitwise_xor", "bitwise_xor"),
    ("bitwise_left_shift", "left_shift"),
    ("bitwise_right_shift", "right_shift"),
):
    op(
        _name,
        None,
        "self other",
        (lambda n: lambda xp, self, other: _bitwise(xp, n, self, other))(_np_name),
        promote="binary",
        differentiable=False,
    )


# fmt: off
op("bitwise_not", None, "self", lambda xp, self: _bitwise(xp, "invert", self, self), differentiable=False)
# fmt: on


# the in-place comparisons (``y.eq_(0)``): 0/1 in self's dtype, and a node whose gradients are
# zeros, as PyTorch's (``EqBackward0`` for a number, ``EqBackward1`` for a tensor)
for _name, _np_name in (
    ("eq", "equal"),
    ("ne", "not_equal"),
    ("lt", "less"),
    ("le", "less_equal"),
    ("gt", "greater"),
    ("ge", "greater_equal"),
):
    op(
        f"{_name}_",
        f"{_name.capitalize()}Backward1",
        "self other",
        (lambda n: lambda xp, self, other: _compared(xp, n, self, other))(_np_name),
        self=lambda grad: _C.zeros_like(grad),
        other=lambda grad, other_shape: _C.zeros(other_shape, dtype=grad.dtype, device=grad.device),
    )
    op(
        f"{_name}_scalar_",
        f"{_name.capitalize()}Backward0",
        "self",
        (lambda n: lambda xp, self, other: _compared(xp, n, self, other))(_np_name),
        attrs="other",
        self=lambda grad: _C.zeros_like(grad),
    )


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


def _copysign_ratio(self, result):
    """``result / self``, 0 where ``self`` is 0 (PyTorch's copysign_tensor_self_backward)."""
    return (result / self).masked_fill(self == 0, 0)
