"""Array kernels that rows of several families share, and their helpers."""

from __future__ import annotations

import math
import os
import sys

import numpy as np

from nbgrad.backend import erf, quiet_float_errors

_ndarray = np.ndarray


def _sigmoid(xp, a):
    # numerically stable for large |a|
    with np.errstate(over="ignore"):
        return 1 / (1 + xp.exp(-a))


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # nbgrad/


# the code of the wrapper a quiet row's forward runs in (NOTE [Quiet rows wrapped once])
_QUIET_WRAPPER = quiet_float_errors()(lambda: None).__code__


def _user_stacklevel():
    """``warnings.warn``'s stacklevel, for its caller, that names the first frame outside
    nbgrad: the user's line, however many of nbgrad's calls (and quiet wrappers) lie between."""
    frame, level = sys._getframe(2), 2
    while frame is not None and (
        frame.f_code.co_filename.startswith(_PACKAGE_DIR) or frame.f_code is _QUIET_WRAPPER
    ):
        frame, level = frame.f_back, level + 1
    return level


def _summand(a, dtype):
    """``a`` in the dtype a sum accumulates in: ``dtype`` if given, int64 for integers and
    bools (as PyTorch), else its own."""
    if dtype is not None:
        return a.astype(dtype.np)
    if a.dtype.kind in "biu":
        return a.astype(np.int64)
    return a


def _vector_norm(xp, a, ord, dim, keepdim):
    absa = xp.abs(a)
    if ord == math.inf:
        return xp.amax(absa, axis=dim, keepdims=keepdim)
    if ord == 2:
        return xp.sqrt(xp.sum(a * a, axis=dim, keepdims=keepdim))
    if ord == 1:
        return xp.sum(absa, axis=dim, keepdims=keepdim)
    return xp.sum(absa**ord, axis=dim, keepdims=keepdim) ** (1.0 / ord)


def _contiguous(xp, a):
    """``a`` in C order, as the fresh outputs of PyTorch's cat, stack, masked_fill, softmax...
    are, so that ``view`` works on them where it does in PyTorch. Unlike NumPy's
    ascontiguousarray, a 0-d array (or a NumPy scalar) stays 0-d."""
    a = xp.asarray(a)
    return a if a.flags.c_contiguous else xp.ascontiguousarray(a)


def _index_backward(xp, grad, shape, indices, accumulate):
    out = xp.zeros(shape, dtype=grad.dtype)
    if accumulate:
        xp.add.at(out, indices, grad)
    else:
        out[indices] = grad
    return out


def _erf(xp, a):
    return erf(xp, a).astype(a.dtype, copy=False)
