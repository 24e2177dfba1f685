"""The pointwise functions: arithmetic, exponentials and logs, trigonometry, rounding,
comparisons and predicates, bitwise and logical ops, softmax; with PyTorch's second (NumPy) names
(``absolute``, ``arccos``, ``multiply``, ``greater``...) as the same functions."""

from __future__ import annotations

from .._tensor.conversion import _arg, _scalar, _tensor_arg
from .._tensor.dispatch import OPS, _dispatch, _expect_tensor
from ..tensor import Tensor
from .out import _out_variant, _t

__all__ = [
    "add",
    "sub",
    "mul",
    "div",
    "floor_divide",
    "remainder",
    "pow",
    "neg",
    "abs",
    "sign",
    "exp",
    "log",
    "log1p",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "sin",
    "clamp_min",
    "clamp_max",
    "isnan",
    "isinf",
    "isfinite",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "expm1",
    "exp2",
    "log2",
    "log10",
    "floor",
    "ceil",
    "round",
    "trunc",
    "frac",
    "square",
    "cos",
    "tanh",
    "sigmoid",
    "relu",
    "gelu",
    "erf",
    "clamp",
    "clip",
    "maximum",
    "minimum",
    "softmax",
    "log_softmax",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "allclose",
    "equal",
    "isclose",
    "logaddexp",
    "lerp",
    "atan2",
    "arctan2",
    "hypot",
    "fmod",
    "logical_and",
    "logical_or",
    "logical_not",
    "logical_xor",
    "nan_to_num",
    "erfinv",
    "absolute",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctanh",
    "divide",
    "fix",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "multiply",
    "negative",
    "not_equal",
    "positive",
    "subtract",
    "true_divide",
    "acosh",
    "asinh",
    "atanh",
    "erfc",
    "deg2rad",
    "rad2deg",
    "logit",
    "sinc",
    "xlogy",
    "fmax",
    "fmin",
    "copysign",
    "logaddexp2",
    "ldexp",
    "nextafter",
    "heaviside",
    "frexp",
    "float_power",
    "addcmul",
    "addcdiv",
    "rsub",
    "signbit",
    "isposinf",
    "isneginf",
    "gcd",
    "lcm",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "fill",
]


@_out_variant
def add(input, other, *, alpha=1):
    return _t(input).add(other, alpha=alpha)


@_out_variant
def sub(input, other, *, alpha=1):
    return _t(input).sub(other, alpha=alpha)


@_out_variant
def mul(input, other):
    return _t(input).mul(other)


@_out_variant
def div(input, other, *, rounding_mode=None):
    return _t(input).div(other, rounding_mode=rounding_mode)


@_out_variant
def floor_divide(input, other):
    if not isinstance(input, Tensor):
        return other.__rfloordiv__(input)
    return input.floor_divide(other)


@_out_variant
def remainder(input, other):
    if not isinstance(input, Tensor):
        return other.__rmod__(input)
    return input.remainder(other)


@_out_variant
def pow(input, exponent):
    if not isinstance(input, Tensor):
        return exponent.__rpow__(input)
    return input.pow(exponent)


@_out_variant
def neg(input):
    return input.neg()


@_out_variant
def abs(input):
    return input.abs()


@_out_variant
def sign(input):
    return input.sign()


@_out_variant
def exp(input):
    return input.exp()


@_out_variant
def log(input):
    return input.log()


@_out_variant
def log1p(input):
    return input.log1p()


@_out_variant
def sqrt(input):
    return input.sqrt()


@_out_variant
def rsqrt(input):
    return input.rsqrt()


@_out_variant
def reciprocal(input):
    return input.reciprocal()


@_out_variant
def sin(input):
    return input.sin()


@_out_variant
def tan(input):
    return input.tan()


@_out_variant
def asin(input):
    return input.asin()


@_out_variant
def acos(input):
    return input.acos()


@_out_variant
def atan(input):
    return input.atan()


@_out_variant
def sinh(input):
    return input.sinh()


@_out_variant
def cosh(input):
    return input.cosh()


@_out_variant
def expm1(input):
    return input.expm1()


@_out_variant
def exp2(input):
    return input.exp2()


@_out_variant
def log2(input):
    return input.log2()


@_out_variant
def log10(input):
    return input.log10()


@_out_variant
def floor(input):
    return input.floor()


@_out_variant
def ceil(input):
    return input.ceil()


@_out_variant
def round(input):
    return input.round()


@_out_variant
def trunc(input):
    return input.trunc()


@_out_variant
def frac(input):
    return input.frac()


@_out_variant
def square(input):
    return input.square()


@_out_variant
def cos(input):
    return input.cos()


@_out_variant
def tanh(input):
    return input.tanh()


@_out_variant
def sigmoid(input):
    return input.sigmoid()


def relu(input):
    return input.relu()


def gelu(input, approximate="none"):
    return input.gelu(approximate)


@_out_variant
def erf(input):
    return input.erf()


@_out_variant
def clamp(input, min=None, max=None):
    return input.clamp(min, max)


clip = clamp


@_out_variant
def maximum(input, other):
    return input.maximum(_tensor_arg(other, input))


@_out_variant
def minimum(input, other):
    return input.minimum(_tensor_arg(other, input))


def softmax(input, dim):
    return input.softmax(dim)


def log_softmax(input, dim):
    return input.log_softmax(dim)


@_out_variant
def eq(input, other):
    return input == other


@_out_variant
def ne(input, other):
    return input != other


@_out_variant
def lt(input, other):
    return input < other


@_out_variant
def le(input, other):
    return input <= other


@_out_variant
def gt(input, other):
    return input > other


@_out_variant
def ge(input, other):
    return input >= other


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return input.allclose(other, rtol, atol, equal_nan)


def equal(input, other):
    return input.equal(other)


def clamp_min(input, min):
    return input.clamp_min(min)


def clamp_max(input, max):
    return input.clamp_max(max)


def isnan(input):
    return input.isnan()


def isinf(input):
    return input.isinf()


def isfinite(input):
    return input.isfinite()


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return input.isclose(other, rtol, atol, equal_nan)


@_out_variant
def logaddexp(input, other):
    return input.logaddexp(other)


@_out_variant
def lerp(input, end, weight):
    return input.lerp(end, weight)


@_out_variant
def atan2(input, other):
    return input.atan2(other)


arctan2 = atan2


@_out_variant
def hypot(input, other):
    return input.hypot(other)


@_out_variant
def fmod(input, other):
    return input.fmod(other)


@_out_variant
def logical_and(input, other):
    return input.logical_and(other)


@_out_variant
def logical_or(input, other):
    return input.logical_or(other)


@_out_variant
def logical_xor(input, other):
    return input.logical_xor(other)


@_out_variant
def logical_not(input):
    return input.logical_not()


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    return input.nan_to_num(nan, posinf, neginf)


@_out_variant
def erfinv(input):
    return input.erfinv()


@_out_variant
def absolute(input):
    return input.abs()


@_out_variant
def arccos(input):
    return input.acos()


@_out_variant
def arcsin(input):
    return input.asin()


@_out_variant
def arctan(input):
    return input.atan()


@_out_variant
def arccosh(input):
    return input.acosh()


@_out_variant
def arcsinh(input):
    return input.asinh()


@_out_variant
def arctanh(input):
    return input.atanh()


@_out_variant
def negative(input):
    return input.neg()


def positive(input):
    return input.positive()


@_out_variant
def multiply(input, other):
    return _t(input).mul(other)


@_out_variant
def subtract(input, other, *, alpha=1):
    return _t(input).sub(other, alpha=alpha)


@_out_variant
def divide(input, other, *, rounding_mode=None):
    return _t(input).divide(other, rounding_mode=rounding_mode)


@_out_variant
def true_divide(input, other):
    return _t(input).div(other)


@_out_variant
def greater(input, other):
    return input > other


@_out_variant
def greater_equal(input, other):
    return input >= other


@_out_variant
def less(input, other):
    return input < other


@_out_variant
def less_equal(input, other):
    return input <= other


@_out_variant
def not_equal(input, other):
    return input != other


@_out_variant
def fix(input):
    return input.trunc()


@_out_variant
def acosh(input):
    return input.acosh()


@_out_variant
def asinh(input):
    return input.asinh()


@_out_variant
def atanh(input):
    return input.atanh()


@_out_variant
def erfc(input):
    return input.erfc()


@_out_variant
def deg2rad(input):
    return input.deg2rad()


@_out_variant
def rad2deg(input):
    return input.rad2deg()


@_out_variant
def logit(input, eps=None):
    return input.logit(eps)


@_out_variant
def sinc(input):
    return input.sinc()


@_out_variant
def xlogy(input, other):
    """``input * log(other)``, 0 where ``input`` is 0; either may be a number."""
    if not isinstance(input, Tensor):
        other = _expect_tensor(other, "xlogy", "other", 2)
        return _dispatch(OPS["xlogy_self_scalar"], (other,), {"self": _scalar(input)})
    return input.xlogy(other)


@_out_variant
def fmax(input, other):
    return input.fmax(other)


@_out_variant
def fmin(input, other):
    return input.fmin(other)


@_out_variant
def copysign(input, other):
    return input.copysign(other)


@_out_variant
def logaddexp2(input, other):
    return input.logaddexp2(other)


@_out_variant
def ldexp(input, other):
    return input.ldexp(other)


@_out_variant
def nextafter(input, other):
    return input.nextafter(other)


@_out_variant
def heaviside(input, values):
    return input.heaviside(values)


def frexp(input):
    return input.frexp()


@_out_variant
def float_power(input, exponent):
    """``input ** exponent`` in float64 (``input`` or ``exponent`` may be a number)."""
    if not isinstance(input, Tensor):
        return exponent.double().__rpow__(float(input))
    return input.float_power(exponent)


@_out_variant
def addcmul(input, tensor1, tensor2, *, value=1):
    return input.addcmul(tensor1, tensor2, value=value)


@_out_variant
def addcdiv(input, tensor1, tensor2, *, value=1):
    return input.addcdiv(tensor1, tensor2, value=value)


def rsub(input, other, *, alpha=1):
    """``other - alpha * input`` (``RsubBackward0``; a number ``other``: ``RsubBackward1``)."""
    other = _arg(other)
    if isinstance(other, Tensor):
        return _dispatch(OPS["rsub_tensor"], (input, other), {"alpha": alpha})
    return _dispatch(OPS["rsub"], (input,), {"other": other, "alpha": alpha})


@_out_variant
def signbit(input):
    return input.signbit()


@_out_variant
def isposinf(input):
    return input.isposinf()


@_out_variant
def isneginf(input):
    return input.isneginf()


@_out_variant
def gcd(input, other):
    return input.gcd(other)


@_out_variant
def lcm(input, other):
    return input.lcm(other)


@_out_variant
def bitwise_and(input, other):
    return input.bitwise_and(other)


@_out_variant
def bitwise_or(input, other):
    return input.bitwise_or(other)


@_out_variant
def bitwise_xor(input, other):
    return input.bitwise_xor(other)


@_out_variant
def bitwise_not(input):
    return input.bitwise_not()


@_out_variant
def bitwise_left_shift(input, other):
    return input.bitwise_left_shift(other)


@_out_variant
def bitwise_right_shift(input, other):
    return input.bitwise_right_shift(other)


def fill(input, value):
    """A new tensor of ``input``'s shape and dtype full of ``value`` (``FillBackward0``)."""
    return _dispatch(OPS["fill_new"], (input,), {"value": _scalar(value)})
