"""PyTorch's legacy tensor types and constructors: ``FloatTensor`` and friends, ``Tensor(...)``,
``Tensor.new(...)`` and ``Tensor.type(...)``.

Mirrors ``torch/csrc/tensor/python_tensor.cpp`` (the ``tensortype`` classes) and the legacy
constructor of ``torch/csrc/utils/tensor_new.cpp``. Old tutorials spell tensors this way;
new code writes ``nbgrad.tensor``, ``nbgrad.empty`` and ``Tensor.to``.
"""

from __future__ import annotations

import numpy as np

from nbgrad import backend, dtypes
from nbgrad._tensor.conversion import from_numpy, tensor
from nbgrad._tensor.creation import empty
from nbgrad._tensor.dispatch import _NO_ATTRS, OPS, Size, _dispatch

__all__ = ["tensortype", "legacy_new", "type_from_name", "TENSOR_TYPES", "CUDA_TENSOR_TYPES"]


Tensor = None  # the Tensor class: see NOTE [The Tensor class, bound late]


def _options(dtype, device_type):
    return f"TensorOptions(dtype={dtype.name}, device={device_type})"


_SIGNATURES = (
    " * (*, nbgrad.device device = None)\n"
    " * (Tensor other)\n"
    " * (tuple of ints size, *, nbgrad.device device = None)\n"
    " * (object data, *, nbgrad.device device = None)\n"
)


def _invalid(args, kwargs):
    def name(v):
        return "nbgrad.dtype" if isinstance(v, dtypes.dtype) else type(v).__name__

    got = [name(a) for a in args] + [f"{k}={name(v)}" for k, v in kwargs.items()]
    return TypeError(
        f"new() received an invalid combination of arguments - got ({', '.join(got)}), but "
        f"expected one of:\n{_SIGNATURES}"
    )


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


# NOTE [Legacy constructors]
# ``FloatTensor(...)``, ``Tensor(...)`` and ``t.new(...)`` take, as PyTorch's legacy constructor:
# nothing (an empty 1-D tensor); sizes (ints, or one ``Size``: an uninitialised tensor); one
# tensor of the same type (an alias of it: same memory, ``AliasBackward0`` when it requires
# grad); or data (a sequence or a NumPy array, converted to the type; an array of the type
# itself is shared, not copied). A lone tuple or list is data, not sizes: ``FloatTensor((2, 3))``
# is ``tensor([2., 3.])``. The only keyword is ``device``, whose type must be the type's own.
def legacy_new(dtype, device, args, kwargs):
    """A tensor of ``dtype`` on ``device`` (a Device) from legacy constructor arguments."""
    if set(kwargs) - {"device"}:
        raise _invalid(args, kwargs)
    asked = kwargs.get("device")
    if asked is not None:
        # the type is checked before the device is looked for, as in PyTorch
        asked_type = "cuda" if _is_int(asked) else backend.Device(asked).type
        if asked_type != device.type:
            raise RuntimeError(
                f"legacy constructor expects device type: {device.type} but device type: "
                f"{asked_type} was passed"
            )
        device = backend.as_device(asked)
    if not args:
        return empty(0, dtype=dtype, device=device)
    first = args[0]
    if len(args) == 1 and isinstance(first, Tensor):
        if kwargs:
            raise _invalid(args, kwargs)
        if first.dtype is not dtype or first.device.type != device.type:
            raise TypeError(
                f"expected {_options(dtype, device.type)} (got "
                f"{_options(first.dtype, first.device.type)})"
            )
        return _dispatch(OPS["alias"], (first,), _NO_ATTRS)
    if (len(args) == 1 and isinstance(first, Size)) or _is_int(first):
        size = tuple(first) if isinstance(first, Size) else args
        for k, s in enumerate(size):
            if not _is_int(s):
                raise TypeError(
                    f"new(): argument 'size' failed to unpack the object at pos {k + 1} with "
                    f'error "type must be tuple of ints,but got {type(s).__name__}"'
                )
        return empty(*size, dtype=dtype, device=device)
    if len(args) > 1:
        raise _invalid(args, kwargs)
    if isinstance(first, str):
        raise TypeError("new(): invalid data type 'str'")
    if not isinstance(first, (list, tuple, np.ndarray)):
        raise TypeError(f"new(): data must be a sequence (got {type(first).__name__})")
    if isinstance(first, np.ndarray) and first.dtype == dtype.np and device.type == "cpu":
        return from_numpy(first)
    return tensor(first, dtype=dtype, device=device)


class tensortype(type):
    """The metaclass of ``FloatTensor`` and friends: a tensor is an instance of one when it has
    that dtype on that device type; calling one is the legacy constructor."""

    def __instancecheck__(cls, other):
        return (
            isinstance(other, Tensor)
            and other.dtype is cls.dtype
            and other.device.type == cls._device_type
        )

    def __call__(cls, *args, **kwargs):
        device = backend.as_device(cls._device_type)
        return legacy_new(cls.dtype, device, args, kwargs)

    @property
    def is_cuda(cls):
        return cls._device_type == "cuda"

    @property
    def is_sparse(cls):
        return False


def _make(dtype, module, device_type):
    return tensortype(
        dtype._legacy,
        (),
        {
            "__module__": module,
            "__doc__": f"A {device_type.upper()} tensor of dtype {dtype!r} (legacy type).",
            "dtype": dtype,
            "_device_type": device_type,
        },
    )


TENSOR_TYPES = {d._legacy: _make(d, "nbgrad", "cpu") for d in dtypes._ALL}
CUDA_TENSOR_TYPES = {d._legacy: _make(d, "nbgrad.cuda", "cuda") for d in dtypes._ALL}


def type_name(t) -> str:
    """``t.type()``: ``"nbgrad.FloatTensor"``, or ``"nbgrad.cuda.FloatTensor"`` on a GPU."""
    prefix = "nbgrad.cuda." if t.device.type == "cuda" else "nbgrad."
    return prefix + t.dtype._legacy


def type_from_name(name):
    """The tensortype that a name such as ``"nbgrad.FloatTensor"`` names. PyTorch's spelling,
    ``"torch.cuda.FloatTensor"``, names the same type, so old code's strings work unchanged."""
    module, _, cls = name.rpartition(".")
    table = {
        "nbgrad": TENSOR_TYPES,
        "torch": TENSOR_TYPES,
        "nbgrad.cuda": CUDA_TENSOR_TYPES,
        "torch.cuda": CUDA_TENSOR_TYPES,
    }.get(module)
    if table is None or cls not in table:
        raise ValueError(f"invalid type: '{name}'")
    return table[cls]
