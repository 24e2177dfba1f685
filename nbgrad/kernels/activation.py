"""The array kernels of the rows in ``nbgrad/derivatives/activation.py``: functions of ``xp``
(NumPy or CuPy) and arrays."""

from __future__ import annotations

import math

import numpy as np

from nbgrad.kernels.common import _erf, _sigmoid


def _mish(xp, a):
    with np.errstate(over="ignore"):
        return a * xp.tanh(xp.logaddexp(0, a))


def _glu(xp, a, dim):
    first, second = xp.split(a, 2, axis=dim)
    return first * _sigmoid(xp, second)


def _elu(xp, a, alpha):
    with np.errstate(over="ignore"):
        return xp.where(a > 0, a, alpha * xp.expm1(xp.minimum(a, 0)))


def _threshold(xp, a, threshold, value):
    return xp.where(a <= threshold, xp.asarray(value, dtype=a.dtype), a)


def _softplus(xp, a, beta, threshold):
    """``log(1 + exp(beta * a)) / beta``, and ``a`` itself where ``beta * a > threshold``."""
    scaled = a * beta
    return xp.where(scaled > threshold, a, xp.logaddexp(0, xp.minimum(scaled, threshold)) / beta)


def _gelu(xp, a, approximate):
    if approximate == "tanh":
        k = math.sqrt(2 / math.pi)
        return 0.5 * a * (1 + xp.tanh(k * (a + 0.044715 * a**3)))
    return (a * 0.5 * (1 + _erf(xp, a / math.sqrt(2)))).astype(a.dtype, copy=False)
