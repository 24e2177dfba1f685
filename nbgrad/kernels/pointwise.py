"""The array kernels of the rows in ``nbgrad/derivatives/pointwise.py``: functions of ``xp``
(NumPy or CuPy) and arrays."""

from __future__ import annotations

import numpy as np

from nbgrad.backend import erf, erfinv
from nbgrad.kernels.common import _contiguous, _ndarray


def _rounded(xp, fn, a):
    return a.copy() if a.dtype.kind in "biu" else fn(a)


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


# NOTE [Fused backward kernels]
# A formula such as ``grad * (1 - result * result)``, run as three Tensor ops, allocates three
# arrays the size of the activation and walks memory three times. tanh and sigmoid, the hot
# activations of an MLP, have their backward as a row of its own (``tanh_backward``,
# ``sigmoid_backward``, as in PyTorch) whose kernel writes every step into the one array it
# allocates. Shapes that differ (broadcasting), 0-d arrays (where NumPy returns scalars) and small
# arrays (below ``_FUSED_SIZE`` elements, where three ufunc calls with ``out=`` cost more than
# the two arrays they save) take the plain expression, which computes the same values.
_FUSED_SIZE = 4096


def _tanh_backward(xp, grad_output, output):
    if output.size < _FUSED_SIZE or grad_output.shape != output.shape:
        return grad_output * (1.0 - output * output)
    out = xp.multiply(output, output)
    xp.subtract(1, out, out=out)
    return xp.multiply(grad_output, out, out=out)


def _sigmoid_backward(xp, grad_output, output):
    if output.size < _FUSED_SIZE or grad_output.shape != output.shape:
        return grad_output * (1.0 - output) * output
    out = xp.subtract(1, output)
    xp.multiply(out, output, out=out)
    return xp.multiply(grad_output, out, out=out)


def _erfinv(xp, a):
    return erfinv(xp, a).astype(a.dtype, copy=False)


def _clamp(xp, a, lo, hi):
    if lo is not None:
        a = xp.maximum(a, lo)
    if hi is not None:
        a = xp.minimum(a, hi)
    return a.astype(a.dtype, copy=False)


def _sign(xp, a):
    # PyTorch's sign of NaN is 0 (NumPy's is NaN); abs's gradient at NaN follows it
    r = xp.sign(a)
    if r.dtype.kind == "f":
        r = xp.where(r == r, r, 0)  # (NaN != NaN)
    return r


# NOTE [pow of a NumPy scalar]
# ``**`` on a NumPy scalar (``np.float64``) is NumPy's scalar math, which calls C's ``pow``; on
# an array, 0-d included, it is the ``power`` ufunc, whose loop NumPy picks by CPU: where it has
# AVX-512 a SIMD ``pow`` that differs from C's in the last bit for some inputs (about one in 20
# for ``x ** -0.5``, ``1.4554425309821815`` one of them); elsewhere the loop calls C's ``pow``.
# The array path of a backward hands the ``pow`` row's kernel a 0-d gradient's NumPy scalar
# (NOTE [0-d gradients as NumPy scalars] in nbgrad/_graph/table_node.py) where the Tensor path
# hands it the 0-d array, so the kernel computes a scalar's general power on a 0-d array of it:
# the same ufunc loop on the same input, thus the same bits on every CPU. (``+ - * /``, the
# only other operators formulas and row kernels apply to such scalars, round as the ufuncs
# do: IEEE's one correct rounding.)
def _pow_scalar(xp, a, exponent):
    # small whole powers of floats as PyTorch computes them (a copy for 1, x * x for 2, x * x * x
    # for 3), by the ufunc itself: NumPy's general pow is ~20x slower (x ** 3), and its own
    # paths for 1 and 2 cost more than the copy and the square they stand for (x ** 1: 3x)
    if (type(exponent) is int or type(exponent) is float) and a.dtype.kind == "f":
        if exponent == 2:
            return xp.square(a)
        if exponent == 1:
            return a.copy()
        if exponent == 3:
            return a * a * a
        if exponent == 4:
            return xp.square(xp.square(a))
    if xp is np and type(a) is not _ndarray:  # See NOTE [pow of a NumPy scalar]
        a = np.asarray(a)
    return (a**exponent).astype(a.dtype, copy=False)  # bool ** bool is int8 in NumPy


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


def _nan_to_num(xp, a, nan, posinf, neginf):
    if a.dtype.kind != "f":
        return a.copy()
    info = xp.finfo(a.dtype)
    return xp.nan_to_num(
        a,
        nan=0.0 if nan is None else nan,
        posinf=info.max if posinf is None else posinf,
        neginf=info.min if neginf is None else neginf,
    )


def _lerp(xp, self, end, weight):
    """``self + weight * (end - self)``, computed from the nearer end as PyTorch's kernel."""
    near_start = self + weight * (end - self)
    near_end = end - (end - self) * (1 - weight)
    return xp.where(xp.abs(weight) < 0.5, near_start, near_end).astype(near_start.dtype, copy=False)


def _fmod(xp, a, b):
    if a.dtype.kind in "iu":
        _check_int_divisor(xp, a, b)
    return xp.fmod(a, b)


def _compared(xp, name, self, other):
    """``self <op> other`` as 0 and 1 in ``self``'s dtype (``eq_`` writes it into ``self``)."""
    return getattr(xp, name)(self, other).astype(self.dtype)


# ---- pointwise -----------------------------------------------------------------------------
def _erfc(xp, a):
    return (1 - erf(xp, a)).astype(a.dtype, copy=False)


def _xlogy(xp, self, other):
    """``self * log(other)``, 0 where ``self`` is 0 (unless ``other`` is NaN), as PyTorch's."""
    out = xp.where(self == 0, xp.zeros((), self.dtype), self * xp.log(other))
    return _contiguous(xp, xp.where(xp.isnan(other), other, out).astype(self.dtype, copy=False))


def _logit(xp, a, eps):
    if eps is not None:
        a = xp.clip(a, eps, 1 - eps)
    return xp.log(a / (1 - a))


def _frexp(xp, a):
    mantissa, exponent = xp.frexp(a)
    return mantissa, exponent.astype("int32")


def _ldexp(xp, self, other):
    return self * xp.exp2(other)


def _heaviside(xp, self, values):
    if self.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
    return _contiguous(xp, xp.heaviside(self, values).astype(self.dtype, copy=False))


def _copysign(xp, self, other):
    return xp.copysign(self, other)


def _gcd_lcm(xp, name, a, b):
    if a.dtype.kind not in "iub" or b.dtype.kind not in "iub":
        raise RuntimeError(f"\"{name}_cpu\" not implemented for '{_type_name(a, b)}'")
    return getattr(xp, name)(a, b)


def _type_name(a, b):
    kind = a if a.dtype.kind == "f" else b
    return {"float64": "Double", "float32": "Float", "float16": "Half"}.get(str(kind.dtype), "?")


def _bitwise(xp, name, a, b):
    for t in (a, b):
        if getattr(t, "dtype", np.dtype("int64")).kind == "f":
            raise RuntimeError(f"\"{name}_cpu\" not implemented for '{_type_name(a, b)}'")
    return getattr(xp, name)(a, b)


def _rounded_quotient(xp, self, other, rounding_mode):
    """``self / other`` rounded down (``"floor"``) or toward zero (``"trunc"``)."""
    if rounding_mode == "floor":
        return _floor_divide(xp, self, other)
    if self.dtype.kind in "iub":  # (integers: the floor of the magnitudes, signed)
        floor = _floor_divide(xp, xp.abs(self), abs(other))
        return floor * (xp.sign(self) * xp.sign(other)).astype(self.dtype)
    return xp.trunc(self / other).astype(self.dtype, copy=False)
