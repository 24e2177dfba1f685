"""Tensor methods that index by a tensor of positions: ``index_copy``, ``index_fill``,
``index_put``, ``index_reduce``, ``scatter_reduce``, ``masked_scatter``, ``put``, each with its
in-place form, and the checks of their arguments (PyTorch's messages).
:class:`nbgrad.Tensor` inherits them.
"""

from __future__ import annotations

import numpy as np

from nbgrad._tensor.conversion import _scalar, _tensor_arg, tensor
from nbgrad._tensor.dispatch import _dim, _dispatch, _expect_tensor, _op

Tensor = None  # the Tensor class: see NOTE [The Tensor class, bound late]

_SCATTER_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


class IndexMethods:
    """Mixed into :class:`nbgrad.Tensor`."""

    __slots__ = ()

    # -- indexing -----------------------------------------------------------------------------
    def index_copy(self, dim, index, source):
        """A copy of self with the slices of ``source`` at ``index`` along ``dim``."""
        d, index, source = _index_args(self, "index_copy", dim, index, source)
        return _dispatch(_op("index_copy"), (self, index, source), {"dim": d})

    def index_copy_(self, dim, index, source):
        d, index, source = _index_args(self, "index_copy_", dim, index, source)
        return self._inplace(_op("index_copy"), (index, source), {"dim": d})

    def index_fill(self, dim, index, value):
        """A copy of self with ``value`` at ``index`` along ``dim``."""
        d, index, _ = _index_args(self, "index_fill", dim, index, None)
        return _dispatch(_op("index_fill"), (self, index), {"dim": d, "value": _scalar(value)})

    def index_fill_(self, dim, index, value):
        d, index, _ = _index_args(self, "index_fill_", dim, index, None)
        return self._inplace(_op("index_fill"), (index,), {"dim": d, "value": _scalar(value)})

    def index_put(self, indices, values, accumulate=False):
        """A copy of self with ``values`` at the advanced index ``indices`` (a tuple of
        tensors), added to what is there with ``accumulate`` (``IndexPutBackward0``)."""
        key, values = _index_put_args(self, indices, values)
        name = "index_put_accumulate" if accumulate else "index_put"
        return _dispatch(_op(name), (self, values), {"indices": key})

    def index_put_(self, indices, values, accumulate=False):
        key, values = _index_put_args(self, indices, values)
        name = "index_put_accumulate" if accumulate else "index_put"
        return self._inplace(_op(name), (values,), {"indices": key})

    def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
        """``src`` reduced into a copy of self at ``index`` along ``dim`` with ``reduce``
        (``"sum"``, ``"prod"``, ``"mean"``, ``"amax"``, ``"amin"``)."""
        d, index, src, attrs = _scatter_reduce_args(self, dim, index, src, reduce, include_self)
        return _dispatch(_op("scatter_reduce"), (self, index, src), attrs)

    def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
        d, index, src, attrs = _scatter_reduce_args(self, dim, index, src, reduce, include_self)
        return self._inplace(_op("scatter_reduce"), (index, src), attrs)

    def index_reduce(self, dim, index, source, reduce, *, include_self=True):
        """``source``'s slices along ``dim`` reduced (``"prod"``, ``"mean"``, ``"amax"``,
        ``"amin"``) into a copy of self at the positions ``index`` names
        (``IndexReduceBackward0``); ``include_self=False`` leaves out the values there before."""
        index, attrs = _index_reduce_args(self, dim, index, source, reduce, include_self)
        return _dispatch(_op("index_reduce"), (self, index, source), attrs)

    def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
        index, attrs = _index_reduce_args(self, dim, index, source, reduce, include_self)
        return self._inplace(_op("index_reduce"), (index, source), attrs)

    def masked_scatter(self, mask, source):
        """A copy of self with the elements of ``source``, in order, where ``mask`` is True."""
        mask, source = _masked_scatter_args(self, mask, source)
        return _dispatch(_op("masked_scatter"), (self, mask, source))

    def masked_scatter_(self, mask, source):
        mask, source = _masked_scatter_args(self, mask, source)
        return self._inplace(_op("masked_scatter"), (mask, source), {})

    def put(self, index, source, accumulate=False):
        """A copy of self with ``source`` written (or added) at ``index`` of the flattened
        tensor (``PutBackward0``)."""
        index, source = _put_args(self, index, source)
        return _dispatch(_op("put"), (self, index, source), {"accumulate": bool(accumulate)})

    def put_(self, index, source, accumulate=False):
        index, source = _put_args(self, index, source)
        return self._inplace(_op("put"), (index, source), {"accumulate": bool(accumulate)})


def _index_args(self, name, dim, index, source):
    index = index if isinstance(index, Tensor) else tensor(index)
    if index._data.dtype.kind not in "iu":
        raise RuntimeError(
            f"{name}(): Expected a long tensor for index, but got {index.dtype._legacy[:-6]}"
        )
    if index.ndim > 1:
        raise IndexError(f"{name}(): Index should have dimension 1 or 0 (got {index.ndim})")
    d = _dim(dim, self.ndim)
    index = index.reshape(-1)
    size = self.shape[d] if self.ndim else 1
    bad = [int(i) for i in index.tolist() if not -size <= i < size]
    if bad:
        raise IndexError(f"index {bad[0]} is out of bounds for dimension {d} with size {size}")
    if source is not None:
        _expect_tensor(source, name, "source", 3)
        if source._data.dtype != self._data.dtype:
            raise RuntimeError(
                f"{name}(): self and source expected to have the same dtype, but got (self) "
                f"{self.dtype._legacy[:-6]} and (source) {source.dtype._legacy[:-6]}"
            )
    return d, index, source


def _index_put_args(self, indices, values):
    if not isinstance(indices, (tuple, list)):
        raise TypeError("index_put(): argument 'indices' must be tuple of Tensors")
    key = tuple(
        i._data if isinstance(i, Tensor) else (i if i is None else np.asarray(i)) for i in indices
    )
    values = _tensor_arg(values, self)
    if values._data.dtype != self._data.dtype:
        raise RuntimeError(
            "Index put requires the source and destination dtypes match, got "
            f"{self.dtype._legacy[:-6]} for the destination and {values.dtype._legacy[:-6]} "
            "for the source."
        )
    return key, values


def _scatter_reduce_args(self, dim, index, src, reduce, include_self):
    if reduce not in _SCATTER_REDUCTIONS:
        raise RuntimeError(
            "reduce argument must be either sum, prod, mean, amax or amin, got " + str(reduce)
        )
    index = index if isinstance(index, Tensor) else tensor(index)
    _expect_tensor(src, "scatter_reduce", "src", 3)
    if src._data.dtype != self._data.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    d = _dim(dim, self.ndim)
    attrs = {"dim": d, "reduce": reduce, "include_self": bool(include_self)}
    return d, index, src, attrs


def _masked_scatter_args(self, mask, source):
    mask = _tensor_arg(mask, self)
    if mask._data.dtype.kind != "b":
        raise RuntimeError(
            "masked_scatter_ only supports boolean masks, but got mask with dtype "
            + mask.dtype._legacy[:-6]
        )
    _expect_tensor(source, "masked_scatter", "source", 2)
    if source._data.dtype != self._data.dtype:
        raise RuntimeError(
            "masked_scatter: expected self and source to have same dtypes but got "
            f"{self.dtype._legacy[:-6]} and {source.dtype._legacy[:-6]}"
        )
    return mask, source


def _put_args(self, index, source):
    index = index if isinstance(index, Tensor) else tensor(index)
    if index._data.dtype.kind not in "iu":
        raise RuntimeError(
            "put_(): Expected a long tensor for index, but got " + index.dtype._legacy[:-6]
        )
    _expect_tensor(source, "put", "source", 2)
    if source._data.dtype != self._data.dtype:
        raise RuntimeError(
            "put_(): self and source expected to have the same dtype, but got "
            f"self.dtype = {self.dtype._legacy[:-6]} and source.dtype = "
            f"{source.dtype._legacy[:-6]}"
        )
    if index.numel() != source.numel():
        raise RuntimeError(
            f"put_(): Expected source and index to have the same number of elements, but got "
            f"source.numel() = {source.numel()}, index.numel() = {index.numel()}"
        )
    return index, source


def _index_reduce_args(self, dim, index, source, reduce, include_self):
    """``index_reduce``'s checks, as PyTorch's: the index tensor and the attributes."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(
            "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
            f"{reduce}."
        )
    index = index if isinstance(index, Tensor) else tensor(index)
    d = _dim(dim, self.ndim)
    if index.ndim > 1:
        raise IndexError(
            "index_reduce_(): Index is supposed to be a vector, but got dim: "
            f"{index.ndim} with type: {index.dtype._legacy[:-6]} and size: {list(index.shape)}"
        )
    if index.numel() != (source.shape[d] if source.ndim else 1):
        raise RuntimeError(
            f"index_reduce_(): Number of indices ({index.numel()}) should be equal to "
            f"source.size(dim): ({source.shape[d]}), for dim: {d}"
        )
    positions = np.asarray(index.cpu()) if index.numel() else np.zeros(0, np.int64)
    if ((positions < 0) | (positions >= self.shape[d])).any():  # (no negative indices)
        raise IndexError("index out of range in self")
    return index, {"dim": d, "reduce": reduce, "include_self": bool(include_self)}
