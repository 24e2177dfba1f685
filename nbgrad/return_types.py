"""``nbgrad.return_types``: the named tuples of ops with several results, as
``torch.return_types`` (``max(dim)``, ``min(dim)``, ``sort`` and ``topk`` give ``values`` and
``indices``)."""

from __future__ import annotations

__all__ = [
    "max",
    "min",
    "sort",
    "topk",
    "median",
    "nanmedian",
    "kthvalue",
    "mode",
    "cummax",
    "cummin",
    "aminmax",
    "frexp",
    "histogram",
    "histogramdd",
]


class _ValuesIndices(tuple):
    """``(values, indices)``, also by name; printed as PyTorch prints its return types."""

    __slots__ = ()

    def __new__(cls, values, indices):
        return super().__new__(cls, (values, indices))

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]

    def __repr__(self):
        name = f"{type(self).__module__}.{type(self).__qualname__}"
        return f"{name}(\nvalues={self[0]!r},\nindices={self[1]!r})"


class max(_ValuesIndices):  # noqa: A001 - PyTorch's name
    __slots__ = ()


class min(_ValuesIndices):  # noqa: A001 - PyTorch's name
    __slots__ = ()


class sort(_ValuesIndices):  # noqa: A001 - PyTorch's name
    __slots__ = ()


class topk(_ValuesIndices):
    __slots__ = ()


class median(_ValuesIndices):
    pass


class nanmedian(_ValuesIndices):
    __slots__ = ()


class kthvalue(_ValuesIndices):
    __slots__ = ()


class mode(_ValuesIndices):
    __slots__ = ()


class cummax(_ValuesIndices):
    __slots__ = ()


class cummin(_ValuesIndices):
    __slots__ = ()


class _Pair(tuple):
    """A named pair whose field names each class gives in ``_fields``."""

    __slots__ = ()
    _fields = ("first", "second")

    def __new__(cls, first, second):
        return super().__new__(cls, (first, second))

    def __getattr__(self, name):
        if name in type(self)._fields:
            return self[type(self)._fields.index(name)]
        raise AttributeError(name)

    def __repr__(self):
        name = f"{type(self).__module__}.{type(self).__qualname__}"
        a, b = type(self)._fields
        return f"{name}(\n{a}={self[0]!r},\n{b}={self[1]!r})"


class aminmax(_Pair):
    __slots__ = ()
    _fields = ("min", "max")


class frexp(_Pair):
    __slots__ = ()
    _fields = ("mantissa", "exponent")


class histogram(_Pair):
    __slots__ = ()
    _fields = ("hist", "bin_edges")


class histogramdd(_Pair):
    __slots__ = ()
    _fields = ("hist", "bin_edges")
