"""How samples become a batch, as PyTorch's ``torch/utils/data/_utils/collate.py``:
:func:`default_collate` stacks (tensors, NumPy arrays and numbers become tensors with a new first
dimension; dicts, named tuples and sequences are collated field by field) and
:func:`default_convert` (no batching) only turns NumPy arrays into tensors.
"""

from __future__ import annotations

import collections.abc
import re

import numpy as np

from nbgrad import dtypes
from nbgrad._tensor.conversion import as_tensor, tensor
from nbgrad.tensor import Tensor, stack

__all__ = ["default_collate", "default_convert"]

_NP_STR_OBJ = re.compile(r"[SaUO]")
_COLLATE_ERR = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def _same_type(elem, fields):
    """``elem``'s mapping or sequence type remade with ``fields``, else a dict or list (a type
    that cannot be made from one, as PyTorch)."""
    try:
        return type(elem)(fields)
    except TypeError:
        return dict(fields) if isinstance(elem, collections.abc.Mapping) else list(fields)


def default_convert(data):
    """NumPy arrays (not of strings or objects) to tensors, inside mappings and sequences."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray) or isinstance(data, np.generic):
        if isinstance(data, np.ndarray) and _NP_STR_OBJ.search(data.dtype.str):
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _same_type(data, {k: default_convert(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a named tuple
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _same_type(data, [default_convert(d) for d in data])
    return data


def default_collate(batch):
    """A list of samples -> a batch of the samples' structure, each leaf stacked into a tensor
    with the batch as its first dimension (see the module's docstring)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(batch, 0)
    if isinstance(elem, np.ndarray):
        if _NP_STR_OBJ.search(elem.dtype.str):
            raise TypeError(_COLLATE_ERR.format(elem.dtype))
        return default_collate([as_tensor(b) for b in batch])
    if isinstance(elem, np.generic):  # NumPy scalars
        return as_tensor(np.array(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=dtypes.float64)
    if isinstance(elem, bool) or isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _same_type(elem, {k: default_collate([d[k] for d in batch]) for k in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a named tuple
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        return _same_type(elem, [default_collate(samples) for samples in transposed])
    raise TypeError(_COLLATE_ERR.format(type(elem)))
