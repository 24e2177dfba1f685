"""Module-level functions of PyTorch's wider surface (``nbgrad.addcmul``, ``nbgrad.hstack``,
``nbgrad.finfo``...): the function forms of the methods in ``_tensor/wider_methods.py``, the
composites of ``torch/functional.py`` and ATen (``atleast_2d``, ``cartesian_prod``, ``cov``,
``trapezoid``...), and the dtype and tensor predicates."""

from __future__ import annotations

import builtins
import itertools
import warnings

import numpy as np

from .. import dtypes, return_types
from .._tensor.conversion import _arg, _scalar
from .._tensor.dispatch import OPS, _dim, _dispatch, _expect_tensor
from .._tensor.linalg_methods import meshgrid
from ..tensor import Tensor, as_tensor, cat, linspace, ones, stack, tensor
from .math import _out_variant, _t, broadcast_shapes

__all__ = [
    "cdist",
    # aliases
    "absolute",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctanh",
    "concat",
    "concatenate",
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
    "trapz",
    "true_divide",
    # pointwise
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
    # scans and reductions
    "cummax",
    "cummin",
    "logcumsumexp",
    "nansum",
    "nanmean",
    "nanmedian",
    "nanquantile",
    "kthvalue",
    "mode",
    "aminmax",
    "msort",
    "diff",
    "trapezoid",
    "cumulative_trapezoid",
    "gradient",
    "histc",
    "histogram",
    "histogramdd",
    "bincount",
    "searchsorted",
    "bucketize",
    "isin",
    "unique_consecutive",
    # products
    "addmv",
    "addr",
    "addbmm",
    "inner",
    "vdot",
    "dist",
    "renorm",
    "block_diag",
    "cartesian_prod",
    "combinations",
    "cov",
    "corrcoef",
    "vander",
    "diagflat",
    # indexing
    "index_copy",
    "index_fill",
    "index_put",
    "scatter_reduce",
    "index_reduce",
    "poisson",
    "binomial",
    "masked_scatter",
    "put",
]


# ---- aliases: the same function under PyTorch's second name ----------------------------------
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
def concat(tensors, dim=0):
    return cat(tensors, dim)


@_out_variant
def concatenate(tensors, axis=0):
    return cat(tensors, axis)


# ---- pointwise -----------------------------------------------------------------------------
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


# ---- scans and reductions ------------------------------------------------------------------
def cummax(input, dim):
    return input.cummax(dim)


def cummin(input, dim):
    return input.cummin(dim)


@_out_variant
def logcumsumexp(input, dim):
    return input.logcumsumexp(dim)


@_out_variant
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    return input.nansum(dim, keepdim, dtype=dtype)


@_out_variant
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    return input.nanmean(dim, keepdim, dtype=dtype)


def nanmedian(input, dim=None, keepdim=False):
    return input.nanmedian(dim, keepdim)


@_out_variant
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    return input.nanquantile(q, dim, keepdim, interpolation=interpolation)


def kthvalue(input, k, dim=-1, keepdim=False):
    return input.kthvalue(k, dim, keepdim)


def mode(input, dim=-1, keepdim=False):
    return input.mode(dim, keepdim)


def aminmax(input, *, dim=None, keepdim=False):
    return input.aminmax(dim=dim, keepdim=keepdim)


@_out_variant
def msort(input):
    return input.msort()


def diff(input, n=1, dim=-1, prepend=None, append=None):
    return input.diff(n, dim, prepend, append)


def _trapezoid_spacing(y, x, dx, dim):
    """The spacing of ``trapezoid``: a number, or the differences of ``x`` shaped to broadcast
    with ``y``'s slices along ``dim``."""
    if x is None:
        return 1.0 if dx is None else float(_scalar(dx))
    d = _dim(dim, y.ndim)
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError("trapezoid: There must be one `x` value for each sample point")
        shape = [1] * y.ndim
        shape[d] = x.shape[0] - 1
        return x.diff().view(shape)
    return x.diff(dim=dim)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The integral of ``y`` along ``dim`` by the trapezoidal rule (spacing ``dx``, or the
    sample points ``x``), as PyTorch's composite."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments")
    if isinstance(x, (int, float)):
        x, dx = None, x
    d = _dim(dim, y.ndim)
    if y.shape[d] == 0:
        return y.sum(d) * 0
    spacing = _trapezoid_spacing(y, x, dx, d)
    if isinstance(spacing, Tensor):
        n = y.shape[d]
        return _over((spacing * (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1))).sum(d), 2.0)
    ends = _times(y.select(d, 0) + y.select(d, -1), 0.5)
    return _times(y.sum(d) - ends, spacing)


def _times(t, number):
    """``t * number`` as ATen's composites compute it (mul.Scalar: ``MulBackward1``)."""
    return _dispatch(OPS["mul_scalar"], (t,), {"other": number})


def _over(t, number):
    """``t / number`` as ATen's composites compute it (div.Scalar: ``DivBackward1``)."""
    return _dispatch(OPS["div_scalar"], (t,), {"other": number})


trapz = trapezoid


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running integral of ``y`` along ``dim`` by the trapezoidal rule."""
    if isinstance(x, (int, float)):
        x, dx = None, x
    d = _dim(dim, y.ndim)
    n = y.shape[d]
    pairs = y.narrow(d, 0, max(n - 1, 0)) + y.narrow(d, min(1, n), max(n - 1, 0))
    spacing = _trapezoid_spacing(y, x, dx, d)
    if isinstance(spacing, Tensor):
        return _over((spacing * pairs).cumsum(d), 2.0)
    return _times(pairs, spacing / 2.0).cumsum(d)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The derivative estimated by central differences inside and one-sided ones at the edges
    (of ``edge_order`` 1 or 2), along each dim (or those of ``dim``); ``spacing`` a number per
    dim. One tensor per dim, each a ``cat`` of the three parts."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = (
        list(builtins.range(input.ndim))
        if dim is None
        else ([dim] if isinstance(dim, int) else list(dim))
    )
    dims = [_dim(d, input.ndim) for d in dims]
    spacings = spacing if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    out = []
    for d, h in zip(dims, spacings):
        h = float(_scalar(h))
        n = input.shape[d]
        if n < edge_order + 1:
            raise RuntimeError(
                "torch.gradient expected each dimension size to be at least edge_order+1"
            )
        x = input if input.is_floating_point() else input.to(dtypes.get_default_dtype())
        center = _over(x.narrow(d, 2, n - 2) - x.narrow(d, 0, n - 2), h)
        if edge_order == 1:
            first = _over(x.narrow(d, 1, 1) - x.narrow(d, 0, 1), h)
            last = _over(x.narrow(d, n - 1, 1) - x.narrow(d, n - 2, 1), h)
        else:
            a, b, c = (x.narrow(d, i, 1) for i in (0, 1, 2))
            first = _over(_times(a, -1.5) + _times(b, 2) - _times(c, 0.5), h)
            a, b, c = (x.narrow(d, i, 1) for i in (n - 3, n - 2, n - 1))
            last = _over(_times(a, 0.5) - _times(b, 2) + _times(c, 1.5), h)
        out.append(cat([first, _over(center, 2), last], d))
    return tuple(out)


def histc(input, bins=100, min=0, max=0):
    return input.histc(bins, min, max)


def histogramdd(input, bins=None, *, range=None, weight=None, density=False):
    """The D-dimensional histogram of the points ``input`` (``(..., D)``): ``bins`` a count,
    one count per dim, or the edges of each dim (tensors); ``hist`` and the edges."""
    if not input.is_floating_point():
        raise NotImplementedError(
            f"\"histogramdd\" not implemented for '{input.dtype._legacy[:-6]}'"
        )
    d = input.shape[-1]
    points = input.reshape(-1, d)
    given = isinstance(bins, (list, tuple)) and all(isinstance(b, Tensor) for b in bins)
    if given:
        for k, b in enumerate(bins):
            if b.dtype is not input.dtype:
                raise RuntimeError(
                    "torch.histogramdd: input tensor and bins tensors should have the same "
                    "dtype, but got input with dtype "
                    f"{dtypes.type_meta_name(input.dtype)} and bins for dimension {k} with dtype "
                    f"{dtypes.type_meta_name(b.dtype)}"
                )
        edges = list(bins)
    else:
        counts = [int(bins)] * d if isinstance(bins, (int, np.integer)) else [int(b) for b in bins]
        if len(counts) != d:
            raise RuntimeError(
                "histogramdd: The size of bins must be equal to the innermost dimension of the "
                "input."
            )
        if range is not None and len(range) != 2 * d:
            raise RuntimeError(
                f"torch.histogramdd: for a {d}-dimensional histogram range should have "
                f"{2 * d} elements, but got {len(range)}"
            )
        edges = []
        data = np.asarray(points.detach().cpu())
        for k, n in enumerate(counts):
            if range is not None:
                lo, hi = float(range[2 * k]), float(range[2 * k + 1])
            else:
                column = data[:, k]
                lo, hi = (column.min(), column.max()) if column.size else (0.0, 0.0)
                lo, hi = float(lo), float(hi)
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
            edges.append(linspace(lo, hi, n + 1, dtype=input.dtype, device=input.device))
    if len(edges) != d:
        raise RuntimeError(
            "histogramdd: The size of bins must be equal to the innermost dimension of the input."
        )
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape[:-1]):
            raise RuntimeError(
                "torch.histogramdd: if weight tensor is provided it should have the same shape "
                "as the input tensor excluding its innermost dimension, but got input with "
                f"shape {list(input.shape)} and weight with shape {list(weight.shape)}"
            )
        weight = weight.reshape(-1)
    attrs = {
        "edges": tuple(np.asarray(e.detach().cpu()) for e in edges),
        "density": bool(density),
        "aten": "_histogramdd_from_bin_tensors" if given else "_histogramdd_from_bin_cts",
    }
    hist = _dispatch(OPS["histogramdd"], (points, weight), attrs)
    return return_types.histogramdd(hist, tuple(edges))


def histogram(input, bins=100, *, range=None, weight=None, density=False):
    return input.histogram(bins, range=range, weight=weight, density=density)


def bincount(input, weights=None, minlength=0):
    return input.bincount(weights, minlength)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Where each of ``input`` would go in the sorted last dim of ``sorted_sequence``."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(
                f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}"
            )
        if right and side == "left":
            raise RuntimeError(
                "torch.searchsorted(): side and right can't be set to opposites, got side of "
                "left while right was True"
            )
        right = side == "right"
    if sorter is not None:
        sorted_sequence = sorted_sequence.gather(-1, sorter)
    scalar = not isinstance(input, Tensor)
    values = as_tensor(input, dtype=sorted_sequence.dtype) if scalar else input
    if sorted_sequence.ndim > 1 and tuple(sorted_sequence.shape[:-1]) != tuple(values.shape[:-1]):
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            "dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(sorted_sequence.shape)} and input value tensor "
            f"{list(values.shape)}"
        )
    attrs = {"right": bool(right), "out_int32": bool(out_int32)}
    return _dispatch(OPS["searchsorted"], (sorted_sequence, values), attrs)


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The index of the bucket of ``boundaries`` (1-d, sorted) each of ``input`` falls in."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each of ``elements`` is in ``test_elements`` (either may be a number)."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments")
    like = elements if isinstance(elements, Tensor) else test_elements
    elements = elements if isinstance(elements, Tensor) else tensor(elements, device=like.device)
    if not isinstance(test_elements, Tensor):
        test_elements = tensor(test_elements, device=like.device)
    return _dispatch(OPS["isin"], (elements, test_elements), {"invert": bool(invert)})


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """The first of each run of equal consecutive values (slices along ``dim``), with the
    run of each element and the runs' lengths if asked."""
    d = None if dim is None else _dim(dim, input.ndim)
    values, inverse, counts = _dispatch(OPS["unique_consecutive"], (input,), {"dim": d})
    out = (values,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return out[0] if len(out) == 1 else out


# ---- products ----------------------------------------------------------------------------
@_out_variant
def addmv(input, mat, vec, *, beta=1, alpha=1):
    return input.addmv(mat, vec, beta=beta, alpha=alpha)


@_out_variant
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    return input.addr(vec1, vec2, beta=beta, alpha=alpha)


@_out_variant
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return input.addbmm(batch1, batch2, beta=beta, alpha=alpha)


@_out_variant
def inner(input, other):
    return input.inner(other)


@_out_variant
def vdot(input, other):
    return input.vdot(other)


def dist(input, other, p=2):
    return input.dist(other, p)


@_out_variant
def renorm(input, p, dim, maxnorm):
    return input.renorm(p, dim, maxnorm)


def block_diag(*tensors):
    """The tensors (0-d, 1-d or 2-d) as the blocks of a block-diagonal matrix
    (``BlockDiagBackward0``)."""
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} "
                f"has {t.ndim} dimensions"
            )
    return _dispatch(OPS["block_diag"], (list(tensors),))


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-d tensor, as rows (a ``stack`` of the
    flattened ``meshgrid``, as PyTorch's)."""
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.flatten() for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The ``r``-element combinations of a 1-d tensor's elements, as rows (a ``stack`` of
    ``index_select``s)."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty(0)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(builtins.range(input.shape[0]), r))
    if not rows:
        return input.new_empty((0, r))
    columns = np.asarray(rows, dtype=np.int64).T
    return stack([input.index_select(0, tensor(c, device=input.device)) for c in columns], 1)


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance of the rows (variables) over the columns (observations), as PyTorch's
    composite: ``mm`` of the centred data, divided, then ``squeeze``."""
    if input.ndim > 2:
        raise RuntimeError(
            "cov(): expected input to have two or fewer dimensions but got an input with "
            f"{input.ndim} dimensions"
        )
    x = input.view(1, -1) if input.ndim < 2 else input
    if not x.is_floating_point():
        x = x.to(dtypes.get_default_dtype())
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    if w is None:
        avg = x.mean(1)
        norm = n - correction
    else:
        w = w.to(x.dtype)
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = w_sum - correction
        else:
            norm = w_sum - correction * (w * aweights).sum() / w_sum
    if not isinstance(norm, Tensor) and norm <= 0:
        warnings.warn(
            "cov(): degrees of freedom is <= 0. Correction should be strictly less than the "
            "number of observations.",
            UserWarning,
            stacklevel=2,
        )
        norm = 0
    centred = x - avg.unsqueeze(1)
    c = centred.mm((centred if w is None else centred * w).t())
    return c.div(norm).squeeze()


def corrcoef(input):
    """The Pearson correlation coefficients of the rows: ``cov`` scaled by the standard
    deviations, then clipped to [-1, 1], as PyTorch's."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    stddev = c.diagonal().sqrt()
    c = c / stddev.view(-1, 1)
    c = c / stddev.view(1, -1)
    return c.clip(-1, 1)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-d tensor: powers 0 to ``N - 1`` (decreasing unless
    ``increasing``), a ``cumprod`` written into ones, as PyTorch's."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = dtypes.promote_types(x.dtype, dtypes.int64)
    result = ones((x.shape[0], n), dtype=dtype, device=x.device)
    if n > 1:
        result[:, 1:] = x.unsqueeze(1).expand(x.shape[0], n - 1).cumprod(1).to(dtype)
    return result if increasing else result.flip(1)


def diagflat(input, offset=0):
    return input.diagflat(offset)


# ---- indexing ------------------------------------------------------------------------------
@_out_variant
def index_copy(input, dim, index, source):
    return input.index_copy(dim, index, source)


def index_fill(input, dim, index, value):
    return input.index_fill(dim, index, value)


def index_put(input, indices, values, accumulate=False):
    return input.index_put(indices, values, accumulate)


@_out_variant
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    return input.scatter_reduce(dim, index, src, reduce, include_self=include_self)


def poisson(input, generator=None):
    """Poisson counts of the rates ``input`` (``PoissonBackward0``: a zero gradient)."""
    _expect_tensor(input, "poisson", "input", 1)
    return _dispatch(OPS["poisson"], (input,), {"generator": generator})


def binomial(count, prob, generator=None):
    """Binomial counts of ``count`` trials, each of probability ``prob`` (no derivative)."""
    _expect_tensor(count, "binomial", "count", 1)
    _expect_tensor(prob, "binomial", "prob", 2)
    if not count.dtype.is_floating_point:
        name = count.dtype._legacy[:-6]
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {name}")
    if prob.dtype is not count.dtype:
        raise RuntimeError(
            f"Found dtype {prob.dtype._legacy[:-6]} but expected {count.dtype._legacy[:-6]}"
        )
    return _dispatch(OPS["binomial"], (count, prob), {"generator": generator})


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    return input.index_reduce(dim, index, source, reduce, include_self=include_self)


def masked_scatter(input, mask, source):
    return input.masked_scatter(mask, source)


def put(input, index, source, accumulate=False):
    return input.put(index, source, accumulate)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The ``p``-norm distance between each row of ``x1`` (``B x P x M``) and each row of
    ``x2`` (``B x R x M``): ``B x P x R``; batch dimensions broadcast. ``compute_mode`` is
    accepted (nbgrad always takes the differences, PyTorch's exact mode)."""
    if x1.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    batch = tuple(broadcast_shapes(x1.shape[:-2], x2.shape[:-2]))
    if tuple(x1.shape[:-2]) != batch:
        x1 = x1.expand(*batch, *x1.shape[-2:])
    if tuple(x2.shape[:-2]) != batch:
        x2 = x2.expand(*batch, *x2.shape[-2:])
    return _dispatch(OPS["_cdist_forward"], (x1, x2), {"p": float(p)})
