"""dtypes and PyTorch's type promotion (``c10/core/ScalarType.h``, ``TensorIterator``).

NumPy's rules differ from PyTorch's (an int64 array times 2.5 is float64 in NumPy, float32 in
PyTorch), so nbgrad computes the result dtype itself and casts before calling a kernel.
"""

from __future__ import annotations

import threading

import numpy as np

__all__ = [
    "dtype",
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "float32",
    "float64",
    "get_default_dtype",
    "set_default_dtype",
    "result_type",
]

_builtin_bool = bool


class dtype:
    """A tensor element type, e.g. ``nbgrad.float32``."""

    __slots__ = (
        "name",
        "np",
        "is_floating_point",
        "is_signed",
        "itemsize",
        "_kind",
        "_rank",
        "_legacy",
    )

    def __init__(self, name, np_dtype, kind, rank, legacy):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = kind == 2
        self.is_signed = name != "uint8" and name != "bool"
        self.itemsize = self.np.itemsize
        self._kind = kind  # 0 bool, 1 integral, 2 floating
        self._rank = rank
        self._legacy = legacy  # "FloatTensor", used in error messages as PyTorch does

    def __repr__(self):
        return f"nbgrad.{self.name}"

    def __reduce__(self):
        return self.name


bool = dtype("bool", np.bool_, 0, 0, "BoolTensor")
uint8 = dtype("uint8", np.uint8, 1, 1, "ByteTensor")
int8 = dtype("int8", np.int8, 1, 1, "CharTensor")
int16 = dtype("int16", np.int16, 1, 2, "ShortTensor")
int32 = dtype("int32", np.int32, 1, 3, "IntTensor")
int64 = dtype("int64", np.int64, 1, 4, "LongTensor")
float16 = dtype("float16", np.float16, 2, 1, "HalfTensor")
float32 = dtype("float32", np.float32, 2, 2, "FloatTensor")
float64 = dtype("float64", np.float64, 2, 3, "DoubleTensor")

half, float, double, short, int, long = float16, float32, float64, int16, int32, int64

_ALL = (bool, uint8, int8, int16, int32, int64, float16, float32, float64)

# the C++ names of the types that some of PyTorch's messages print (caffe2's TypeMeta names)
_TYPE_META_NAMES = {
    "bool": "bool",
    "uint8": "unsigned char",
    "int8": "signed char",
    "int16": "short int",
    "int32": "int",
    "int64": "long int",
    "float16": "c10::Half",
    "float32": "float",
    "float64": "double",
}


def type_meta_name(d: dtype) -> str:
    """The C++ type name PyTorch's messages give ``d`` (``'double'`` for float64)."""
    return _TYPE_META_NAMES[d.name]


_FROM_NP = {d.np: d for d in _ALL}


def from_numpy_dtype(np_dtype) -> dtype:
    """The nbgrad dtype of a NumPy dtype (RuntimeError for unsupported ones)."""
    try:
        return _FROM_NP[np_dtype]
    except KeyError:
        pass
    try:
        return _FROM_NP[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types "
            "are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool."
        ) from None


def as_dtype(d) -> dtype:
    """Accept an nbgrad dtype, a NumPy dtype or a Python type."""
    if type(d) is dtype:
        return d
    if d is _builtin_bool:
        return bool
    if d is builtins_int:
        return int64
    if d is builtins_float:
        return get_default_dtype()
    try:
        return from_numpy_dtype(d)
    except TypeError:
        raise TypeError(f"expected a dtype such as nbgrad.float32, got {d!r}") from None


import builtins as _builtins  # noqa: E402

builtins_int = _builtins.int
builtins_float = _builtins.float


class _DefaultDtype(threading.local):
    value = float32


_default = _DefaultDtype()


def get_default_dtype() -> dtype:
    """The dtype of floating tensors made from Python floats (float32 unless changed)."""
    return _default.value


def set_default_dtype(d):
    """Set the default floating dtype (float32 or float64, as in PyTorch)."""
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default.value = d


def promote_types(a: dtype, b: dtype) -> dtype:
    """PyTorch's ``promoteTypes``: the kind wins (bool < integral < floating), then the rank."""
    if a is b:
        return a
    if a._kind != b._kind:
        return a if a._kind > b._kind else b
    if a._kind == 1 and (a is uint8 or b is uint8):
        other = b if a is uint8 else a
        return int16 if other is int8 else other
    return a if a._rank >= b._rank else b


def _combine(higher, lower):
    """PyTorch's ``combine_categories`` for the three priority levels of operands."""
    if higher is None:
        return lower
    if higher.is_floating_point:
        return higher
    if higher is bool or (lower is not None and lower.is_floating_point):
        return promote_types(higher, lower) if lower is not None else higher
    return higher


def scalar_dtype(value) -> dtype:
    """The dtype a Python scalar takes when it stands alone (``tensor(2.5)``)."""
    t = type(value)
    if t is _builtin_bool or t is np.bool_:
        return bool
    if t is builtins_int or isinstance(value, np.integer):
        return int64
    if isinstance(value, (builtins_float, np.floating)):
        return get_default_dtype()
    raise TypeError(f"unsupported scalar type {t.__name__}")


def result_type(tensors, scalars=()) -> dtype:
    """PyTorch's result type of an op on ``tensors`` (nbgrad Tensors) and Python ``scalars``.

    Dimensioned tensors take precedence over 0-d tensors, which take precedence over Python
    scalars, unless a lower level has a higher kind (``int_tensor * 2.5`` is floating).
    """
    dim_result = zero_result = wrapped = None
    for t in tensors:
        d = t.dtype
        if t._data.ndim:
            dim_result = d if dim_result is None else promote_types(dim_result, d)
        else:
            zero_result = d if zero_result is None else promote_types(zero_result, d)
    for s in scalars:
        d = scalar_dtype(s)
        wrapped = d if wrapped is None else promote_types(wrapped, d)
    return _combine(dim_result, _combine(zero_result, wrapped))
