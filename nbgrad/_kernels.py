"""The op table's array kernels: functions of ``xp`` (NumPy or CuPy) and arrays, one per
forward (or fused backward) that is more than a one-line expression in its row. They never see a
Tensor; :mod:`nbgrad.derivatives` names them in its rows.
"""

from __future__ import annotations

import math
import os
import sys
import warnings

import numpy as np

from nbgrad._tensor import creation as _C
from nbgrad._tensor import dispatch as _D
from nbgrad.backend import erf, erfinv, to_host

_ndarray = np.ndarray
_add_reduce = np.add.reduce


def _mm_check(xp, a, b):
    if a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, a.shape))} and "
            f"{'x'.join(map(str, b.shape))})"
        )
    return a @ b


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


def _erfinv(xp, a):
    return erfinv(xp, a).astype(a.dtype, copy=False)


def _gelu(xp, a, approximate):
    if approximate == "tanh":
        k = math.sqrt(2 / math.pi)
        return 0.5 * a * (1 + xp.tanh(k * (a + 0.044715 * a**3)))
    return (a * 0.5 * (1 + _erf(xp, a / math.sqrt(2)))).astype(a.dtype, copy=False)


def _clamp(xp, a, lo, hi):
    if lo is not None:
        a = xp.maximum(a, lo)
    if hi is not None:
        a = xp.minimum(a, hi)
    return a.astype(a.dtype, copy=False)


def _expand(xp, a, size):
    """A view of ``a`` broadcast to ``size``, writable where ``a`` is (as PyTorch's expand; an
    in-place op on the whole of it is refused, see ``_check_no_internal_overlap``)."""
    if xp is np and type(a) is not _ndarray:  # a 0-d gradient as a NumPy scalar (NOTE [0-d
        a = np.array(a)  # gradients as NumPy scalars]): a view of an array of its own, writable
    # NOTE [Expand as one ndarray call]: a contiguous array is viewed with stride 0 along its
    # broadcast dimensions by one ndarray constructor over its memory (what as_strided does
    # after broadcast_to, both pure-Python wrappers that cost ten times more): the backward of
    # every ``sum()`` and ``mean()`` expands its 0-d gradient this way, with stride 0 throughout
    if xp is np and not a.ndim:  # (a negative size raises ValueError, as broadcast_to's)
        if a.flags.writeable and not a.dtype.hasobject:
            return _ndarray(tuple(size), a.dtype, a, 0, (0,) * len(size))
    elif xp is np and a.flags.c_contiguous and a.flags.writeable and not a.dtype.hasobject:
        lead = len(size) - a.ndim
        if lead >= 0:
            strides = [0] * lead
            for n, s, st in zip(a.shape, size[lead:], a.strides):
                if n == s:
                    strides.append(st)
                elif n == 1 and s >= 0:
                    strides.append(0)
                else:
                    break
            else:
                if all(s >= 0 for s in size[:lead]):
                    return _ndarray(tuple(size), a.dtype, a, 0, tuple(strides))
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


def _summand(a, dtype):
    """``a`` in the dtype a sum accumulates in: ``dtype`` if given, int64 for integers and
    bools (as PyTorch), else its own."""
    if dtype is not None:
        return a.astype(dtype.np)
    if a.dtype.kind in "biu":
        return a.astype(np.int64)
    return a


def _sum(xp, a, dim, keepdim, dtype):
    if xp is np:  # np.sum's Python wrapper costs twice the reduction of a small array
        return _add_reduce(_summand(a, dtype), axis=dim, keepdims=keepdim, out=...)
    return xp.sum(_summand(a, dtype), axis=dim, keepdims=keepdim)


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


def _vector_norm(xp, a, ord, dim, keepdim):
    absa = xp.abs(a)
    if ord == math.inf:
        return xp.amax(absa, axis=dim, keepdims=keepdim)
    if ord == 2:
        return xp.sqrt(xp.sum(a * a, axis=dim, keepdims=keepdim))
    if ord == 1:
        return xp.sum(absa, axis=dim, keepdims=keepdim)
    return xp.sum(absa**ord, axis=dim, keepdims=keepdim) ** (1.0 / ord)


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
        if xp is np:  # (the method: np.reshape is a Python wrapper around it)
            return a.reshape(shape, copy=False)
        return xp.reshape(a, shape, copy=False)
    except ValueError:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        ) from None


def _unsqueeze(a, dim):
    """A view of ``a`` with a dimension of size 1 inserted at ``dim`` (what ``expand_dims``
    does for one dim, without its Python-level argument handling)."""
    shape = a.shape
    if dim < 0:
        dim += len(shape) + 1
    return a.reshape(shape[:dim] + (1,) + shape[dim:])


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


def _split(xp, a, sizes, dim):
    outs, start = [], 0
    for s in sizes:
        outs.append(a[(slice(None),) * dim + (slice(start, start + s),)])
        start += s
    return tuple(outs)


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
# The N-d kernels are in nbgrad/derivatives/_kernels_nn.py.


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


def _smooth_l1(xp, d, beta):
    """PyTorch's smooth L1 of the differences ``d`` (``beta`` > 0): quadratic below ``beta``,
    linear above; Huber's loss is this times ``delta``."""
    a = xp.abs(d)
    return xp.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta)


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


def _nll_loss2d(xp, self, target, weight, reduction, ignore_index):
    """``_nll_loss`` with the classes in dim 1 of a 4-d ``self``, one row per pixel."""
    flat = xp.transpose(self, (0, 2, 3, 1)).reshape(-1, self.shape[1])
    return _nll_loss(xp, flat, target, weight, reduction, ignore_index)


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


# ---- helpers of the rows added for PyTorch's wider surface (indexing, random, reductions) -------
def _scatter(xp, a, dim, index, src):
    """``a`` with ``src`` (an array, or a number) written at ``index`` along ``dim``."""
    out = a.copy()
    if index.size:
        if not isinstance(src, (int, float, bool)):
            src = src[tuple(slice(0, s) for s in index.shape)]
        out[_along_axis_key(xp, index, dim)] = src
    return out


def _diag_embed(xp, a, offset):
    """``a``'s last dim as the ``offset`` diagonal of new last two dims (``diag`` of a vector)."""
    n = (a.shape[-1] if a.ndim else 1) + abs(offset)
    shape = a.shape[:-1] + (n, n)
    return _diagonal_backward(xp, a, shape, offset, len(shape) - 2, len(shape) - 1)


def _masked_select(xp, a, mask):
    shape = np.broadcast_shapes(a.shape, mask.shape)
    return xp.broadcast_to(a, shape)[xp.broadcast_to(mask, shape)]


def _take(xp, a, index):
    return a.reshape(-1)[index] if a.size else xp.zeros(index.shape, a.dtype)


def _nonzero(xp, a):
    """The indices of the nonzero elements, one row each (``(n, ndim)``, int64)."""
    if a.ndim == 0:
        return xp.zeros((1 if bool(a) else 0, 0), dtype=np.int64)
    return xp.stack(xp.nonzero(a), axis=1).astype(np.int64).reshape(-1, a.ndim)


def _unique(xp, a, sorted, dim):
    """Values, inverse indices and counts, as PyTorch's ``_unique2`` / ``unique_dim``."""
    if dim is None:
        values, inverse, counts = xp.unique(a.reshape(-1), return_inverse=True, return_counts=True)
        return values, inverse.reshape(a.shape).astype(np.int64), counts.astype(np.int64)
    values, inverse, counts = xp.unique(a, return_inverse=True, return_counts=True, axis=dim)
    return values, inverse.reshape(-1).astype(np.int64), counts.astype(np.int64)


def _median(xp, a, dim, keepdim):
    """The lower median along ``dim`` and its index (PyTorch's ``median(dim)``)."""
    if a.ndim == 0:
        return a.copy(), xp.zeros((), dtype=np.int64)
    n = a.shape[dim]
    if n == 0:
        raise IndexError(f"median(): Expected reduction dim {dim} to have non-zero size.")
    order = xp.argsort(a, axis=dim, kind="stable")
    # NaN sorts last; as PyTorch, the median of a slice with a NaN is that NaN
    has_nan = xp.isnan(a).any(axis=dim, keepdims=True) if a.dtype.kind == "f" else None
    k = (n - 1) // 2
    idx = xp.take(order, [k], axis=dim)
    if has_nan is not None:
        first_nan = xp.argmax(xp.isnan(a), axis=dim).reshape(idx.shape)
        idx = xp.where(has_nan, first_nan, idx)
    idx = idx.astype(np.int64)
    values = xp.take_along_axis(a, idx, axis=dim)
    if not keepdim:
        values, idx = values.squeeze(dim), idx.squeeze(dim)
    return values, idx


def _median_all(xp, a):
    if a.size == 0:
        return xp.asarray(np.nan, dtype=a.dtype) if a.dtype.kind == "f" else a.reshape(-1)[:0]
    flat = a.reshape(-1)
    if a.dtype.kind == "f" and bool(xp.isnan(flat).any()):
        return xp.asarray(np.nan, dtype=a.dtype)
    return xp.sort(flat)[(flat.size - 1) // 2].copy()


def _cumprod(xp, a, dim, dtype):
    if dtype is not None:
        a = a.astype(dtype.np)
    elif a.dtype.kind in "biu":
        a = a.astype(np.int64)
    return xp.cumprod(a, axis=dim) if a.ndim else a.copy()


def _cross(xp, a, b, dim):
    shape = np.broadcast_shapes(a.shape, b.shape)
    a, b = xp.broadcast_to(a, shape), xp.broadcast_to(b, shape)
    return xp.moveaxis(xp.cross(xp.moveaxis(a, dim, -1), xp.moveaxis(b, dim, -1)), -1, dim).copy()


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


def _normal(xp, mean, std, shape):
    """Normal draws of ``mean`` and ``std`` (arrays or numbers) broadcast to ``shape``, from
    nbgrad's generator on the host (``manual_seed``)."""
    if not isinstance(std, (int, float)) and std.size and bool((std < 0).any()):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    if isinstance(std, (int, float)) and std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    dtype = next(x.dtype for x in (mean, std) if not isinstance(x, (int, float)))
    draws = xp.asarray(_C._rng.standard_normal(shape)).astype(dtype)
    return (draws * std + mean).astype(dtype, copy=False)


def _multinomial(xp, probs, num_samples, replacement, generator=None):
    """``num_samples`` category indices per row of ``probs`` (PyTorch's ``multinomial``), drawn
    from ``generator`` (else nbgrad's)."""
    rng = _C._rng if generator is None else generator._rng
    host = np.asarray(to_host(probs), dtype=np.float64)
    rows = host.reshape(-1, host.shape[-1])
    out = np.empty((rows.shape[0], num_samples), dtype=np.int64)
    for i, p in enumerate(rows):
        # PyTorch's checks: one for its exponential draw (without replacement, or one sample),
        # else its CPU sampler's, in their order (a NaN fails ``p >= 0``)
        if (not replacement or num_samples == 1) and not (np.isfinite(p).all() and (p >= 0).all()):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if not (p >= 0).all():
            raise RuntimeError(
                "invalid multinomial distribution (encountering probability entry < 0)"
            )
        if not np.isfinite(p).all():
            raise RuntimeError(
                "invalid multinomial distribution "
                "(encountering probability entry = infinity or NaN)"
            )
        if p.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        nonzero = np.count_nonzero(p)
        if replacement or num_samples <= nonzero:
            out[i] = rng.choice(p.size, num_samples, replace=replacement, p=p / p.sum())
        else:  # as PyTorch's CPU draw: the weighted categories first, then zero-weight ones
            first = rng.choice(p.size, nonzero, replace=False, p=p / p.sum())
            rest = rng.permutation(np.flatnonzero(p == 0))[: num_samples - nonzero]
            out[i] = np.concatenate([first, rest])
    return xp.asarray(out.reshape(host.shape[:-1] + (num_samples,)))
