"""Tensor methods that reduce and scan: ``sum``, ``mean``, ``max`` and the other reductions, the
running extremes and ``logcumsumexp``, the nan-aware reductions (``nansum``, ``nanmean``,
``nanmedian``, ``nanquantile``), ``kthvalue``, ``mode``, ``aminmax``, ``msort``, ``diff``, and the
counts (``histc``, ``histogram``, ``bincount``). :class:`nbgrad.Tensor` inherits them.

Where PyTorch's op is composite (``diff``, ``nanmean``...) the method is made of the same ops,
so the graph shows PyTorch's nodes; otherwise it is one row of the op table.
"""

from __future__ import annotations

from nbgrad import return_types
from nbgrad._tensor.conversion import _scalar, tensor
from nbgrad._tensor.creation import cat
from nbgrad._tensor.dispatch import OPS, _dim, _dims, _dispatch, _op, _unary
from nbgrad._tensor.math_methods import _quantile

Tensor = None  # the Tensor class: see NOTE [The Tensor class, bound late]


class ReductionMethods:
    """Mixed into :class:`nbgrad.Tensor`."""

    __slots__ = ()

    # -- reductions -------------------------------------------------------------------------
    def sum(self, dim=None, keepdim=False, *, dtype=None):
        if dim is None and keepdim:  # as PyTorch: every dimension kept, with size 1
            dim = tuple(range(self.ndim))
        if dim is None:
            if dtype is None:  # (a float tensor's sum keeps its dtype)
                return _unary(OPS["sum"], self, {"dtype": None})
            return _dispatch(_op("sum"), (self,), {"dtype": dtype})
        dims = _dims(dim, self.ndim)
        return _dispatch(_op("sum_dim"), (self,), {"dim": dims, "keepdim": keepdim, "dtype": dtype})

    def mean(self, dim=None, keepdim=False, *, dtype=None):
        if dtype is not None:
            return self.to(dtype).mean(dim, keepdim)
        if not self.is_floating_point():
            raise RuntimeError(
                "mean(): could not infer output dtype. Input dtype must be either a floating "
                f"point or complex dtype. Got: {self.dtype._legacy[:-6]}"
            )
        if dim is None and keepdim:  # as PyTorch: every dimension kept, with size 1
            dim = tuple(range(self.ndim))
        if dim is None:
            return _unary(OPS["mean"], self)
        return _dispatch(
            _op("mean_dim"), (self,), {"dim": _dims(dim, self.ndim), "keepdim": keepdim}
        )

    def prod(self, dim=None, keepdim=False):
        if dim is None:
            return _dispatch(_op("prod"), (self,))
        return _dispatch(
            _op("prod_dim"), (self,), {"dim": _dims(dim, self.ndim), "keepdim": keepdim}
        )

    def _minmax(self, name, dim, keepdim):
        if dim is None:
            return _dispatch(_op(name), (self,))
        if isinstance(dim, Tensor):
            return self.maximum(dim) if name == "max" else self.minimum(dim)
        values, indices = _dispatch(
            _op(name + "_dim"), (self,), {"dim": _dim(dim, self.ndim), "keepdim": keepdim}
        )
        return getattr(return_types, name)(values, indices)

    def max(self, dim=None, keepdim=False):
        return self._minmax("max", dim, keepdim)

    def min(self, dim=None, keepdim=False):
        return self._minmax("min", dim, keepdim)

    def amax(self, dim=(), keepdim=False):
        dims = _dims(dim, self.ndim) if dim not in ((), None) else None
        return _dispatch(_op("amax"), (self,), {"dim": dims, "keepdim": keepdim})

    def amin(self, dim=(), keepdim=False):
        dims = _dims(dim, self.ndim) if dim not in ((), None) else None
        return _dispatch(_op("amin"), (self,), {"dim": dims, "keepdim": keepdim})

    def argmax(self, dim=None, keepdim=False):
        d = None if dim is None else _dim(dim, self.ndim)
        return _dispatch(_op("argmax"), (self,), {"dim": d, "keepdim": keepdim})

    def argmin(self, dim=None, keepdim=False):
        d = None if dim is None else _dim(dim, self.ndim)
        return _dispatch(_op("argmin"), (self,), {"dim": d, "keepdim": keepdim})

    def _var_args(self, dim, unbiased, keepdim, correction):
        if correction is None:
            correction = 1 if unbiased in (None, True) else 0
        dims = None if dim is None else _dims(dim, self.ndim)
        return {"dim": dims, "correction": correction, "keepdim": keepdim}

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        return _dispatch(_op("var"), (self,), self._var_args(dim, unbiased, keepdim, correction))

    def _spread_mean(self, name, dim, unbiased, keepdim, correction):
        """``var_mean`` / ``std_mean`` (functions only in PyTorch): one node, two outputs."""
        return _dispatch(_op(name), (self,), self._var_args(dim, unbiased, keepdim, correction))

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        return _dispatch(_op("std"), (self,), self._var_args(dim, unbiased, keepdim, correction))

    def norm(self, p="fro", dim=None, keepdim=False):
        ord = 2 if p in ("fro", None) else p
        if not isinstance(ord, (int, float)):  # (a RuntimeError in PyTorch too)
            raise RuntimeError(f"norm(): order {p!r} not supported: p must be a number or 'fro'")
        dims = None if dim is None else _dims(dim, self.ndim)
        return _dispatch(_op("norm"), (self,), {"ord": ord, "dim": dims, "keepdim": keepdim})

    def logsumexp(self, dim, keepdim=False):
        return _dispatch(
            _op("logsumexp"), (self,), {"dim": _dims(dim, self.ndim), "keepdim": keepdim}
        )

    def softmax(self, dim):
        return _dispatch(_op("softmax"), (self,), {"dim": _dim(dim, self.ndim)})

    def log_softmax(self, dim):
        return _dispatch(_op("log_softmax"), (self,), {"dim": _dim(dim, self.ndim)})

    # -- scans and reductions ---------------------------------------------------------------
    def cummax(self, dim):
        """``(values, indices)``: the running maximum along ``dim`` and where it was reached."""
        out = _dispatch(_op("cummax"), (self,), {"dim": _dim(dim, self.ndim)})
        return return_types.cummax(*out)

    def cummin(self, dim):
        """``(values, indices)``: the running minimum along ``dim`` and where it was reached."""
        out = _dispatch(_op("cummin"), (self,), {"dim": _dim(dim, self.ndim)})
        return return_types.cummin(*out)

    def logcumsumexp(self, dim):
        """``log(cumsum(exp(self), dim))``, computed without overflow."""
        return _dispatch(_op("logcumsumexp"), (self,), {"dim": _dim(dim, self.ndim)})

    def nansum(self, dim=None, keepdim=False, *, dtype=None):
        """The sum, NaN counted as 0 (``NansumBackward0``)."""
        dims = None if dim is None else _dims(dim, self.ndim)
        attrs = {"dim": dims, "keepdim": keepdim, "dtype": dtype}
        return _dispatch(_op("nansum"), (self,), attrs)

    def nanmean(self, dim=None, keepdim=False, *, dtype=None):
        """The mean of the numbers (not NaN): ``nansum / count``, as PyTorch's composite."""
        if not self.is_floating_point():
            raise RuntimeError(
                "nanmean(): expected input to have floating point dtype but got "
                + self.dtype._legacy[:-6]
            )
        count = self.isnan().logical_not().sum(dim, keepdim)
        return self.nansum(dim, keepdim, dtype=dtype).div(count)

    def nanmedian(self, dim=None, keepdim=False):
        """The lower median of the numbers (not NaN): of all elements, or ``(values,
        indices)`` along ``dim``."""
        if dim is None:
            return _dispatch(_op("nanmedian"), (self,))
        attrs = {"dim": _dim(dim, self.ndim), "keepdim": keepdim}
        return return_types.nanmedian(*_dispatch(_op("nanmedian_dim"), (self,), attrs))

    def nanquantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        """``quantile`` of the numbers (not NaN); a slice of NaN only gives NaN."""
        return _quantile(self, q, dim, keepdim, interpolation, ignore_nan=True)

    def kthvalue(self, k, dim=-1, keepdim=False):
        """``(values, indices)``: the ``k``-th smallest element along ``dim``."""
        attrs = {"k": int(k), "dim": _dim(dim, self.ndim), "keepdim": keepdim}
        return return_types.kthvalue(*_dispatch(_op("kthvalue"), (self,), attrs))

    def mode(self, dim=-1, keepdim=False):
        """``(values, indices)``: the most frequent value along ``dim`` (the smallest of
        equally frequent ones) and its last index."""
        attrs = {"dim": _dim(dim, self.ndim), "keepdim": keepdim}
        return return_types.mode(*_dispatch(_op("mode"), (self,), attrs))

    def aminmax(self, *, dim=None, keepdim=False):
        """``(min, max)``: both from one node (``AminmaxBackward0``)."""
        attrs = {"dim": None if dim is None else _dim(dim, self.ndim), "keepdim": keepdim}
        return return_types.aminmax(*_dispatch(_op("aminmax"), (self,), attrs))

    def msort(self):
        """The values sorted along dim 0 (``sort(dim=0).values``)."""
        return self.sort(0).values

    def diff(self, n=1, dim=-1, prepend=None, append=None):
        """The ``n``-th forward difference along ``dim`` (a ``sub`` of two slices, or a
        ``logical_xor`` for bool tensors), after ``prepend`` and ``append``."""
        if self.ndim == 0:
            raise RuntimeError("diff expects input to be at least one-dimensional")
        d = _dim(dim, self.ndim)
        x = self
        parts = [p for p in (prepend, x, append) if p is not None]
        if len(parts) > 1:
            x = cat([_broadcast_for_diff(p, x, d) for p in parts], d)
        for _ in range(int(n)):
            length = x.shape[d]
            if length == 0:
                break
            later, earlier = x.narrow(d, 1, length - 1), x.narrow(d, 0, length - 1)
            x = later.logical_xor(earlier) if x._data.dtype.kind == "b" else later.sub(earlier)
        return x

    def histc(self, bins=100, min=0, max=0):
        """Counts of the values in ``bins`` equal bins between ``min`` and ``max`` (the
        data's range when both are 0)."""
        if not self.is_floating_point():
            raise NotImplementedError(
                f"\"histogram_cpu\" not implemented for '{self.dtype._legacy[:-6]}'"
            )
        attrs = {"bins": int(bins), "min": _scalar(min), "max": _scalar(max)}
        return _dispatch(_op("histc"), (self,), attrs)

    def histogram(self, bins=100, *, range=None, weight=None, density=False):
        """``(hist, bin_edges)``: ``bins`` (a count or the edges, a tensor)."""
        edges = bins._data if isinstance(bins, Tensor) else int(bins)
        attrs = {"bins": edges, "range": range, "density": density}
        return return_types.histogram(*_dispatch(_op("histogram"), (self, weight), attrs))

    def bincount(self, weights=None, minlength=0):
        """How often each non-negative integer occurs (weighted by ``weights``)."""
        if self._data.dtype.kind not in "iu":
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        return _dispatch(_op("bincount"), (self, weights), {"minlength": int(minlength)})


def _broadcast_for_diff(p, x, d):
    """``prepend``/``append`` of ``diff``: a number becomes a slice of ``x``'s shape."""
    if isinstance(p, Tensor):
        if p.ndim == 0:
            shape = list(x.shape)
            shape[d] = 1
            return p.expand(shape)
        return p
    shape = list(x.shape)
    shape[d] = 1
    return tensor(p, dtype=x.dtype, device=x.device).expand(shape)
