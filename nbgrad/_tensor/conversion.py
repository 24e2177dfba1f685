"""From Python data and arrays to tensors and back: ``tensor``, ``as_tensor``, ``from_numpy``,
``_wrap`` (an array and a device -> a tensor outside the graph) and the operand conversions
of the Tensor methods (a Python number stays a number, a list becomes a tensor).
"""

from __future__ import annotations

import numbers

import numpy as np

from nbgrad import backend, dtypes
from nbgrad._graph.grad_state import _inference_tensors
from nbgrad._graph.grad_state import _state as _grad_state
from nbgrad.backend import CPU

Tensor = None  # the Tensor class: see NOTE [The Tensor class, bound late]


_ndarray = np.ndarray


def _wrap(data, device=CPU, requires_grad=False):
    if type(data) is not _ndarray and device is CPU:
        data = np.asarray(data)
    t = Tensor.__new__(Tensor)
    t._data = data
    t._device = device
    t._requires_grad = requires_grad
    t.grad_fn = None
    t._grad = None
    t._output_nr = 0
    t._version_counter = None  # see NOTE [Lazy version counters]
    t._base = None
    t._view_chain = None
    t._retains_grad = False
    t._acc = None
    t._post_accumulate_grad_hooks = None
    if _inference_tensors.entered and _grad_state.inference:
        _set_inference(t, True)
    return t


def _set_inference(t, inference):
    """Mark ``t`` as an inference tensor, or not (see NOTE [Inference tensors])."""
    if inference:
        t._inference = True
        _inference_tensors.made = True
    elif _inference_tensors.made and hasattr(t, "_inference"):
        del t._inference


def _is_inference(t):
    return _inference_tensors.made and getattr(t, "_inference", False)


# ---- creation -----------------------------------------------------------------------------
def _infer_np(data, dtype):
    """NumPy array for ``data`` with PyTorch's dtype inference."""
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    if isinstance(data, Tensor):
        arr = backend.to_host(data._data)
    elif isinstance(data, np.ndarray):
        arr = data
    else:
        if isinstance(data, (list, tuple)) and any(isinstance(v, Tensor) for v in _flat(data)):
            data = _nested_tolist(data)
        try:
            arr = np.array(data)
        except ValueError as e:
            raise ValueError(f"could not build a tensor from the given data: {e}") from None
        if arr.dtype.kind in "USV":
            raise TypeError(f"could not convert data of type {type(data).__name__} to a tensor")
        if arr.dtype == object:  # as PyTorch: None, a dict, an object among the numbers
            leaves = _flat(data) if isinstance(data, (list, tuple)) else [data]
            odd = next((v for v in leaves if not isinstance(v, numbers.Number)), data)
            raise RuntimeError(f"Could not infer dtype of {type(odd).__name__}")
        if dtype is None:
            if arr.dtype.kind == "f":
                arr = arr.astype(dtypes.get_default_dtype().np)
            elif arr.dtype.kind in "iu":
                arr = arr.astype(np.int64)
    if dtype is not None:
        if arr.dtype != dtype.np:
            arr = arr.astype(dtype.np)
    else:
        dtypes.from_numpy_dtype(arr.dtype)
    return arr


def _flat(data):
    for v in data:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        else:
            yield v


def _nested_tolist(data):
    if isinstance(data, Tensor):
        return data.tolist()
    if isinstance(data, (list, tuple)):
        return [_nested_tolist(v) for v in data]
    return data


def _place(arr, device, requires_grad):
    device = backend.factory_device(device)
    if device is not CPU and device != CPU:
        arr = backend.transfer(arr, CPU, device)
    else:
        device = CPU
    t = _wrap(arr, device)
    if requires_grad is not False:
        t.requires_grad_(requires_grad)  # (a TypeError unless a bool)
    return t


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of ``data`` (nested lists, scalars, arrays or a Tensor).

    Example:
        >>> import nbgrad as ng
        >>> ng.tensor([1, 2]).dtype, ng.tensor([1.0, 2.0]).dtype
        (nbgrad.int64, nbgrad.float32)
    """
    arr = _infer_np(data, dtype)
    arr = np.array(arr, copy=True)
    return _place(arr, device, requires_grad)


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but shares memory with ``data`` when it can."""
    if isinstance(data, Tensor):
        out = data
        if dtype is not None or device is not None:
            out = data.to(dtype=dtype, device=device)
        return out
    arr = _infer_np(data, dtype)
    return _place(arr, device, False)


def from_numpy(ndarray):
    """A tensor sharing memory with ``ndarray`` (changes to one show in the other)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    dtypes.from_numpy_dtype(ndarray.dtype)
    return _wrap(ndarray, CPU)


def from_dlpack(ext_tensor):
    """A tensor sharing memory with any object that implements the DLPack protocol."""
    if hasattr(ext_tensor, "__dlpack_device__"):
        dev_type, dev_id = ext_tensor.__dlpack_device__()
        if dev_type == 2:  # kDLCUDA
            xp = backend.get_xp(backend.as_device(f"cuda:{dev_id}"))
            return _wrap(xp.from_dlpack(ext_tensor), backend.as_device(f"cuda:{dev_id}"))
    return _wrap(np.from_dlpack(ext_tensor), CPU)


def _arg(x):
    """An operand: a Tensor stays, a Python/NumPy scalar becomes a plain number."""
    if type(x) is Tensor:
        return x
    if type(x) is float or type(x) is int or type(x) is bool:
        return x
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, numbers.Number):
        return x
    if isinstance(x, (np.ndarray, list, tuple)):
        return as_tensor(x)
    raise TypeError(f"unsupported operand type: {type(x).__name__}")


def _sub_arg(self, other):
    """``_arg(other)`` for a subtraction, which PyTorch refuses on bools."""
    other_bool = type(other) is bool or (
        isinstance(other, Tensor) and other._data.dtype.kind == "b"
    )
    if self._data.dtype.kind == "b" and other_bool and isinstance(other, Tensor):
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
            "or `logical_xor()` operator instead."
        )
    if self._data.dtype.kind == "b" or other_bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return _arg(other)


def _scalar(x):
    if isinstance(x, Tensor):
        if x.numel() != 1:
            raise RuntimeError("a Tensor with more than one element cannot be used as a scalar")
        return x.item()
    if isinstance(x, np.generic):
        return x.item()
    if not isinstance(x, numbers.Number):
        raise TypeError(f"expected a number, got {type(x).__name__}")
    return x


def _opt_scalar(x):
    return None if x is None else _scalar(x)


def _tensor_arg(x, like):
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (bool, int, float)):
        d = dtypes.result_type([like], [x])
        data = np.asarray(x, dtype=d.np)
        if like._device is not CPU:  # a device's array, made by the copy to it
            data = backend.transfer(data, CPU, like._device)
        return _wrap(data, like._device)
    return as_tensor(x, device=like._device)
