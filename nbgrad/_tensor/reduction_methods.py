"""Tensor methods that scan and reduce beyond ``sum`` and ``max``: the running extremes and
``logcumsumexp``, the nan-aware reductions (``nansum``, ``nanmean``, ``nanmedian``,
``nanquantile``), ``kthvalue``, ``mode``, ``aminmax``, ``msort``, ``diff``, and the counts
(``histc``, ``histogram``, ``bincount``). :class:`nbgrad.Tensor` inherits them.

Where PyTorch's op is composite (``diff``, ``nanmean``...) the method is made of the same ops,
so the graph shows PyTorch's nodes; otherwise it is one row of the op table.
"""

from __future__ import annotations

from nbgrad import return_types
from nbgrad._tensor.conversion import _scalar, tensor
from nbgrad._tensor.creation import cat
from nbgrad._tensor.dispatch import _dim, _dims, _dispatch, _op
from nbgrad._tensor.math_methods import _quantile

Tensor = None  # the Tensor class: see NOTE [The Tensor class, bound late]


class ReductionMethods:
    """Mixed into :class:`nbgrad.Tensor`."""

    __slots__ = ()

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
