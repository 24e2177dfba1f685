"""Indexing functions: ``gather``, ``scatter``, ``index_select``, ``index_add``, ``index_copy``,
``index_fill``, ``index_put``, ``index_reduce``, ``scatter_reduce``, ``masked_fill``,
``masked_select``, ``masked_scatter``, ``take``, ``put``, ``nonzero`` and ``argwhere``."""

from __future__ import annotations

from .out import _out_variant

__all__ = [
    "gather",
    "index_select",
    "masked_fill",
    "scatter_add",
    "index_add",
    "nonzero",
    "argwhere",
    "masked_select",
    "scatter",
    "take",
    "index_copy",
    "index_fill",
    "index_put",
    "scatter_reduce",
    "index_reduce",
    "masked_scatter",
    "put",
]


@_out_variant
def gather(input, dim, index):
    return input.gather(dim, index)


@_out_variant
def scatter_add(input, dim, index, src):
    return input.scatter_add(dim, index, src)


@_out_variant
def index_select(input, dim, index):
    return input.index_select(dim, index)


@_out_variant
def index_add(input, dim, index, source):
    return input.index_add(dim, index, source)


def masked_fill(input, mask, value):
    return input.masked_fill(mask, value)


def nonzero(input, *, as_tuple=False):
    return input.nonzero(as_tuple=as_tuple)


def argwhere(input):
    return input.argwhere()


@_out_variant
def masked_select(input, mask):
    return input.masked_select(mask)


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    return input.scatter(dim, index, src, value=value, reduce=reduce)


@_out_variant
def take(input, index):
    return input.take(index)


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


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    return input.index_reduce(dim, index, source, reduce, include_self=include_self)


def masked_scatter(input, mask, source):
    return input.masked_scatter(mask, source)


def put(input, index, source, accumulate=False):
    return input.put(index, source, accumulate)
