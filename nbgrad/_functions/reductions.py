"""Reductions and scans: ``sum``, ``mean``, ``var``, ``max``, ``norm``, ``cumsum``, ``cummax``,
``nansum``, ``median``, ``quantile``, sorting and ``topk``, ``unique``; ``diff``, ``trapezoid``,
``gradient``; the histograms, ``bincount``, ``searchsorted``, ``bucketize`` and ``isin``."""

from __future__ import annotations

import builtins

import numpy as np

from .. import dtypes, return_types
from .._tensor.conversion import _scalar
from .._tensor.dispatch import OPS, _dim, _dispatch
from ..tensor import Tensor, as_tensor, cat, linspace, tensor
from .out import _out_variant, _t

__all__ = [
    "var_mean",
    "std_mean",
    "all",
    "any",
    "sort",
    "argsort",
    "topk",
    "cumsum",
    "sum",
    "mean",
    "prod",
    "max",
    "min",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "var",
    "std",
    "norm",
    "logsumexp",
    "unique",
    "cumprod",
    "median",
    "quantile",
    "count_nonzero",
    "trapz",
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
]


@_out_variant
def cumsum(input, dim, dtype=None):
    return input.cumsum(dim, dtype=dtype)


@_out_variant
def sum(input, dim=None, keepdim=False, *, dtype=None):
    return input.sum(dim, keepdim, dtype=dtype)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var, mean)`` from one node (``VarMeanBackward0``)."""
    return input._spread_mean("var_mean", dim, unbiased, keepdim, correction)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std, mean)`` from one node (``StdMeanBackward0``)."""
    return input._spread_mean("std_mean", dim, unbiased, keepdim, correction)


@_out_variant
def all(input, dim=None, keepdim=False):
    return _t(input).all(dim, keepdim)


@_out_variant
def any(input, dim=None, keepdim=False):
    return _t(input).any(dim, keepdim)


@_out_variant
def mean(input, dim=None, keepdim=False, *, dtype=None):
    return input.mean(dim, keepdim, dtype=dtype)


@_out_variant
def prod(input, dim=None, keepdim=False):
    return input.prod(dim, keepdim)


def max(input, dim=None, keepdim=False):
    return input.max(dim, keepdim)


def min(input, dim=None, keepdim=False):
    return input.min(dim, keepdim)


@_out_variant
def amax(input, dim=(), keepdim=False):
    return input.amax(dim, keepdim)


@_out_variant
def amin(input, dim=(), keepdim=False):
    return input.amin(dim, keepdim)


@_out_variant
def argmax(input, dim=None, keepdim=False):
    return input.argmax(dim, keepdim)


@_out_variant
def argmin(input, dim=None, keepdim=False):
    return input.argmin(dim, keepdim)


@_out_variant
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return input.var(dim, unbiased, keepdim, correction=correction)


@_out_variant
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return input.std(dim, unbiased, keepdim, correction=correction)


def norm(input, p="fro", dim=None, keepdim=False):
    return input.norm(p, dim, keepdim)


@_out_variant
def logsumexp(input, dim, keepdim=False):
    return input.logsumexp(dim, keepdim)


def sort(input, dim=-1, descending=False, stable=False):
    return input.sort(dim, descending, stable)


def argsort(input, dim=-1, descending=False, stable=False):
    return input.argsort(dim, descending, stable)


def topk(input, k, dim=-1, largest=True, sorted=True):
    return input.topk(k, dim, largest, sorted)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    return input.unique(sorted, return_inverse, return_counts, dim)


@_out_variant
def cumprod(input, dim, *, dtype=None):
    return input.cumprod(dim, dtype=dtype)


def median(input, dim=None, keepdim=False):
    return input.median(dim, keepdim)


@_out_variant
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    return input.quantile(q, dim, keepdim, interpolation=interpolation)


def count_nonzero(input, dim=None):
    return input.count_nonzero(dim)


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
    last = builtins.max(n - 1, 0)  # (``max`` and ``min`` here are nbgrad's)
    pairs = y.narrow(d, 0, last) + y.narrow(d, builtins.min(1, n), last)
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
    given = isinstance(bins, (list, tuple)) and builtins.all(isinstance(b, Tensor) for b in bins)
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
