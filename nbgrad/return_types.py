"""``nbgrad.return_types``: the named tuples of ops with several results, as
``torch.return_types`` (``max(dim)``, ``min(dim)``, ``sort`` and ``topk`` give ``values`` and
``indices``)."""

from __future__ import annotations

__all__ = ["max", "min", "sort", "topk", "median"]


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
