"""Creation, dtype and tensor helpers: ``asarray``, ``scalar_tensor``, ``range``, ``clone``,
``detach``; ``finfo``, ``iinfo``, ``promote_types``, ``result_type``, ``can_cast``; the predicates
(``is_tensor``, ``is_floating_point``, ``is_nonzero``...) and anomaly-mode switches."""

from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from .. import backend, dtypes
from .._graph.anomaly_state import _state as _anomaly_state
from .._graph.anomaly_state import is_anomaly_enabled, set_detect_anomaly
from .._tensor.conversion import _scalar
from .._tensor.memory_formats import preserve_format
from ..tensor import Tensor, as_tensor, full, tensor

__all__ = [
    "clone",
    "detach",
    "numel",
    "is_tensor",
    "asarray",
    "scalar_tensor",
    "range",
    "finfo",
    "iinfo",
    "promote_types",
    "result_type",
    "can_cast",
    "is_floating_point",
    "is_signed",
    "is_nonzero",
    "is_same_size",
    "is_inference",
    "get_device",
    "to_dlpack",
    "set_default_tensor_type",
    "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled",
    "set_anomaly_enabled",
]


def clone(input, *, memory_format=preserve_format):
    return input.clone(memory_format=memory_format)


def detach(input):
    return input.detach()


def numel(input):
    return input.numel()


def is_tensor(obj):
    return isinstance(obj, Tensor)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """``obj`` as a tensor, sharing its memory where it can (a tensor of the same dtype and
    device comes back as it is), or a copy with ``copy=True``."""
    if copy is False and isinstance(obj, Tensor):
        if (dtype is not None and dtypes.as_dtype(dtype) is not obj.dtype) or (
            device is not None and backend.Device(device) != obj.device
        ):
            raise ValueError("can't alias tensor to a different dtype or device without copying")
    out = as_tensor(obj, dtype=dtype, device=device)
    if copy:
        out = out.clone() if out is obj or isinstance(obj, Tensor) else out
    if requires_grad:
        out.requires_grad_(True)
    return out


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    """A 0-d tensor holding ``s``, of the default float dtype unless ``dtype`` is given."""
    d = dtypes.get_default_dtype() if dtype is None else dtype
    return full((), _scalar(s), dtype=d, device=device, requires_grad=requires_grad)


def range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):  # noqa: A001
    """Deprecated: the values from ``start`` to ``end`` inclusive (PyTorch's warning)."""
    warnings.warn(
        "torch.range is deprecated and will be removed in a future release because its "
        "behavior is inconsistent with Python's range builtin. Instead, use torch.arange, "
        "which produces values in [start, end).",
        UserWarning,
        stacklevel=2,
    )
    if end is None:
        start, end = 0, start
    count = int(math.floor((end - start) / step)) + 1
    d = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
    values = np.asarray([start + i * step for i in builtins.range(max(count, 0))], dtype=d.np)
    return tensor(values, dtype=d, device=device, requires_grad=requires_grad)


class finfo:
    """The numerical properties of a floating dtype (``eps``, ``max``, ``tiny``...)."""

    def __init__(self, type=None):
        d = dtypes.get_default_dtype() if type is None else dtypes.as_dtype(type)
        if not d.is_floating_point:
            raise TypeError(
                "torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                "'torch.finfo'"
            )
        info = np.finfo(d.np)
        self.bits = info.bits
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = float(info.tiny)
        self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0**-info.precision  # (exactly, as PyTorch; NumPy rounds it)
        self.dtype = d.name

    def __repr__(self):
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
            f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, "
            f"dtype={self.dtype})"
        )


class iinfo:
    """The range of an integer dtype (``min``, ``max``, ``bits``)."""

    def __init__(self, type):
        d = dtypes.as_dtype(type)
        if d.is_floating_point:
            raise TypeError(
                "torch.iinfo() requires an integer input type. Use torch.finfo to handle "
                "'torch.iinfo'"
            )
        info = np.iinfo(np.uint8 if d is dtypes.bool else d.np)
        self.bits = info.bits
        self.max = int(info.max) if d is not dtypes.bool else 1
        self.min = int(info.min)
        self.dtype = d.name

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


def promote_types(type1, type2):
    """The smallest dtype that both ``type1`` and ``type2`` cast to without losing kind."""
    return dtypes.promote_types(dtypes.as_dtype(type1), dtypes.as_dtype(type2))


def result_type(tensor1, tensor2):
    """The dtype an arithmetic op on the two (tensors or numbers) computes in."""
    tensors = [t for t in (tensor1, tensor2) if isinstance(t, Tensor)]
    scalars = [s for s in (tensor1, tensor2) if not isinstance(s, Tensor)]
    return dtypes.result_type(tensors, scalars)


def can_cast(from_, to):
    """Whether PyTorch's type promotion allows the cast: not floating to integral, and not
    anything else to bool."""
    a, b = dtypes.as_dtype(from_), dtypes.as_dtype(to)
    if a.is_floating_point and not b.is_floating_point:
        return False
    return not (a is not dtypes.bool and b is dtypes.bool)


def is_floating_point(input):
    return input.is_floating_point()


def is_signed(input):
    return input.is_signed()


def is_nonzero(input):
    return input.is_nonzero()


def is_same_size(input, other):
    return input.is_same_size(other)


def is_inference(input):
    return input.is_inference()


def get_device(input):
    """The device index of a tensor: -1 on the CPU."""
    return -1 if input.device.type == "cpu" else input.device.index


def to_dlpack(tensor):
    """A DLPack capsule of the tensor's memory (shared)."""
    return tensor._data.__dlpack__()


def set_default_tensor_type(t):
    """Deprecated: the default dtype from a tensor type (``nbgrad.DoubleTensor`` or its
    name)."""
    warnings.warn(
        "torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
        "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
        UserWarning,
        stacklevel=2,
    )
    name = t if isinstance(t, str) else getattr(t, "__name__", str(t))
    legacy = name.rsplit(".", 1)[-1]
    for d in (dtypes.float16, dtypes.float32, dtypes.float64):
        if d._legacy == legacy:
            dtypes.set_default_dtype(d)
            return
    raise TypeError("only floating-point types are supported as the default type")


def is_anomaly_check_nan_enabled():
    return _anomaly_state.check_nan


def set_anomaly_enabled(enabled, check_nan=True):
    """Turn anomaly mode on or off (``set_detect_anomaly``, without the context)."""
    set_detect_anomaly(enabled, check_nan)
