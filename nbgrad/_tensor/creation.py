"""Creation functions: ``tensor``, ``zeros``, ``randn``, ``arange``... and ``cat`` / ``stack`` /
``where`` (PyTorch's factory functions).
"""

from __future__ import annotations

import numpy as np

from nbgrad import backend, dtypes
from nbgrad._tensor.conversion import _arg, _place, _scalar, _wrap, tensor
from nbgrad._tensor.dispatch import Size, _dim, _dispatch, _expect_tensor, _op, _shape_arg

Tensor = None  # the Tensor class: see NOTE [The Tensor class, bound late]


def _creation_shape(size):
    shape = _shape_arg(size)
    for s in shape:
        if s < 0:
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {s}: {list(shape)}"
            )
    return shape


def _size_keyword(size, kwargs, fname):
    """``*size``, or the same given as PyTorch's ``size=`` keyword (``zeros(size=(2, 3))``)."""
    if not kwargs:
        return size
    unknown = [k for k in kwargs if k != "size"]
    if unknown or size:
        name = unknown[0] if unknown else "size"
        raise TypeError(f"{fname}() got an unexpected keyword argument '{name}'")
    return (kwargs["size"],)


def _factory(fill, size, dtype, device, requires_grad, default=None):
    shape = _creation_shape(size)
    d = dtypes.as_dtype(dtype) if dtype is not None else (default or dtypes.get_default_dtype())
    dev = backend.factory_device(device)
    xp = backend.get_xp(dev)
    arr = fill(xp, shape, d.np)
    t = _wrap(arr, dev)
    if requires_grad is not False:
        t.requires_grad_(requires_grad)  # (a TypeError unless a bool)
    return t


def zeros(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    size = _size_keyword(size, kwargs, "zeros")
    return _factory(lambda xp, s, d: xp.zeros(s, d), size, dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    size = _size_keyword(size, kwargs, "ones")
    return _factory(lambda xp, s, d: xp.ones(s, d), size, dtype, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    size = _size_keyword(size, kwargs, "empty")
    return _factory(lambda xp, s, d: xp.empty(s, d), size, dtype, device, requires_grad)


def empty_strided(
    size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False
):
    """An uninitialised tensor with the given sizes and strides (in elements), on memory of its
    own just large enough for them, as ``torch.empty_strided``."""
    size, stride = tuple(_shape_arg((size,))), tuple(_shape_arg((stride,)))
    if len(size) != len(stride):
        raise RuntimeError(
            f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
            f"({len(stride)})"
        )

    def fill(xp, shape, np_dtype):
        n = 0 if 0 in shape else 1 + sum((s - 1) * st for s, st in zip(shape, stride))
        flat = xp.empty(n, np_dtype)
        steps = tuple(st * flat.itemsize for st in stride)
        return xp.lib.stride_tricks.as_strided(flat, shape, steps)

    return _factory(fill, (size,), dtype, device, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    default = dtypes.scalar_dtype(fill_value) if dtype is None else None
    return _factory(
        lambda xp, s, d: xp.full(s, fill_value, d),
        (tuple(size),),
        dtype,
        device,
        requires_grad,
        default,
    )


def _like(t, dtype, device, fname="zeros_like"):
    _expect_tensor(t, fname, "input", 1)
    return (dtype if dtype is not None else t.dtype), (device if device is not None else t.device)


def zeros_like(input, dtype=None, device=None, requires_grad=False):
    d, dev = _like(input, dtype, device)
    return zeros(input.shape, dtype=d, device=dev, requires_grad=requires_grad)


def ones_like(input, dtype=None, device=None, requires_grad=False):
    d, dev = _like(input, dtype, device, "ones_like")
    return ones(input.shape, dtype=d, device=dev, requires_grad=requires_grad)


def empty_like(input, dtype=None, device=None, requires_grad=False):
    d, dev = _like(input, dtype, device, "empty_like")
    return empty(input.shape, dtype=d, device=dev, requires_grad=requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False):
    d, dev = _like(input, dtype, device, "full_like")
    return full(input.shape, fill_value, dtype=d, device=dev, requires_grad=requires_grad)


_rng = np.random.default_rng()


def manual_seed(seed):
    """Seed nbgrad's random number generator (``rand``, ``randn``, ``randint``, init)."""
    global _rng
    seed = int(seed)  # as PyTorch: anything int() takes (a TypeError or ValueError otherwise)
    _rng = np.random.default_rng(seed)
    return _rng


def _host_random(fill, size, dtype, device, requires_grad, default=None):
    shape = _creation_shape(size)
    d = dtypes.as_dtype(dtype) if dtype is not None else (default or dtypes.get_default_dtype())
    arr = np.asarray(fill(shape)).astype(d.np)
    return _place(arr, device, requires_grad)


def rand(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    size = _size_keyword(size, kwargs, "rand")
    return _host_random(lambda s: _rng.random(s), size, dtype, device, requires_grad)


def randn(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    size = _size_keyword(size, kwargs, "randn")
    return _host_random(lambda s: _rng.standard_normal(s), size, dtype, device, requires_grad)


def rand_like(input, dtype=None, device=None, requires_grad=False):
    """Uniform on [0, 1), of ``input``'s shape, dtype and device unless given."""
    d, dev = _like(input, dtype, device, "rand_like")
    return rand(input.shape, dtype=d, device=dev, requires_grad=requires_grad)


def randn_like(input, dtype=None, device=None, requires_grad=False):
    """Standard normal, of ``input``'s shape, dtype and device unless given."""
    d, dev = _like(input, dtype, device, "randn_like")
    return randn(input.shape, dtype=d, device=dev, requires_grad=requires_grad)


def randint(
    low=0, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False
):
    """``randint(high, size)`` or ``randint(low, high, size)``, as PyTorch's overloads; drawn
    from ``generator`` (else nbgrad's)."""
    rng = _rng if generator is None else generator._rng
    if size is None and isinstance(high, (tuple, list, Size)):  # randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    if low >= high:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    return _host_random(
        lambda s: rng.integers(low, high, s),
        (tuple(size),),
        dtype,
        device,
        requires_grad,
        dtypes.int64,
    )


def randperm(n, *, generator=None, dtype=None, device=None):
    """A random permutation of ``range(n)``, drawn from ``generator`` (else nbgrad's)."""
    rng = _rng if generator is None else generator._rng
    return _place(
        rng.permutation(n).astype((dtypes.as_dtype(dtype) if dtype else dtypes.int64).np),
        device,
        False,
    )


def arange(start=0, end=None, step=1, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    if dtype is None:
        floating = any(isinstance(v, float) for v in (start, end, step))
        dtype = dtypes.get_default_dtype() if floating else dtypes.int64
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    arr = np.arange(start, end, step).astype(dtypes.as_dtype(dtype).np)
    return _place(arr, device, requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    d = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    if steps < 0:
        raise RuntimeError(f"number of steps must be non-negative, got {steps}")
    return _place(np.linspace(start, end, steps).astype(d.np), device, requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    d = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    for name, v in (("n", n), ("m", m)):
        if v is not None and v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    return _place(np.eye(n, m, dtype=d.np), device, requires_grad)


# ---- functions over several tensors ---------------------------------------------------------
def cat(tensors, dim=0):
    """Concatenate tensors along ``dim`` (``CatBackward0``)."""
    tensors = _tensor_list(tensors, "cat")
    ref = next((t for t in tensors if t.ndim), tensors[0])
    if ref.ndim == 0:
        raise RuntimeError("zero-dimensional tensor cannot be concatenated")
    d = _dim(dim, ref.ndim)
    if ref.ndim != 1:  # legacy empty 1-d tensors are skipped; among 1-d ones they concatenate
        tensors = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or tensors[:1]
    for i, t in enumerate(tensors):
        if t.ndim != ref.ndim or any(
            a != b for k, (a, b) in enumerate(zip(t.shape, ref.shape)) if k != d
        ):
            raise RuntimeError(
                f"Sizes of tensors must match except in dimension {d}. Expected size "
                f"{list(ref.shape)} but got size {list(t.shape)} for tensor number {i} in the list."
            )
    return _dispatch(_op("cat"), (list(tensors),), {"dim": d})


def stack(tensors, dim=0):
    """Stack same-shaped tensors along a new dimension ``dim`` (``StackBackward0``)."""
    tensors = _tensor_list(tensors, "stack")
    shape = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 "
                f"and {list(t.shape)} at entry {i}"
            )
    return _dispatch(_op("stack"), (list(tensors),), {"dim": _dim(dim, len(shape) + 1)})


def _tensor_list(tensors, fname):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(
            f"{fname}(): argument 'tensors' must be a tuple or list of Tensors, got "
            f"{type(tensors).__name__}"
        )
    if not tensors:  # (PyTorch's cat raises a ValueError here, its stack a RuntimeError)
        raise (ValueError if fname == "cat" else RuntimeError)(
            f"{fname}(): expected a non-empty list of Tensors"
        )
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(
                f"{fname}(): expected Tensor as element in argument 'tensors', got "
                f"{type(t).__name__}"
            )
    return list(tensors)


def where(condition, input=None, other=None):
    """Elementwise ``input if condition else other`` (``WhereBackward0``)."""
    if input is None and other is None:
        return tuple(tensor(a) for a in np.nonzero(np.asarray(condition)))
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        # two numbers: each a 0-d tensor of its own kind (int64, the default float, bool), as
        # PyTorch's wrapped numbers, so that where(c, 1.0, 0.0) is float32
        input, other = tensor(_scalar(input)), tensor(_scalar(other))
    if not isinstance(condition, Tensor):
        condition = tensor(condition)
    if condition._data.dtype.kind != "b":
        raise RuntimeError(
            "where expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{condition.dtype}"
        )
    return _dispatch(_op("where"), (condition, _arg(input), _arg(other)))


# ---- more of PyTorch's factories ------------------------------------------------------------
def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    """``steps`` numbers from ``base ** start`` to ``base ** end``, evenly spaced in log."""
    d = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    if steps < 0:
        raise RuntimeError(f"number of steps must be non-negative, got {steps}")
    arr = np.power(float(base), np.linspace(start, end, steps)).astype(d.np)
    return _place(arr, device, requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, requires_grad=False):
    """Random integers in ``[low, high)`` of ``input``'s shape (``randint_like(input, high)``
    or ``randint_like(input, low, high)``), in ``input``'s dtype and device unless given."""
    d, dev = _like(input, dtype, device, "randint_like")
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), dtype=d, device=dev, requires_grad=requires_grad)


def _tri_indices(name, row, col, offset, dtype, device):
    if row < 0 or col < 0:
        what = "row" if row < 0 else "col"
        raise RuntimeError(f"{what} must be non-negative, got{row if row < 0 else col}")
    fn = np.triu_indices if name == "triu_indices" else np.tril_indices
    rows, cols = fn(row, offset, col)
    d = dtypes.as_dtype(dtype) if dtype is not None else dtypes.int64
    return _place(np.stack([rows, cols]).astype(d.np).reshape(2, -1), device, False)


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    """The ``(2, N)`` coordinates of the upper triangle of a ``row`` x ``col`` matrix."""
    return _tri_indices("triu_indices", row, col, offset, dtype, device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    """The ``(2, N)`` coordinates of the lower triangle of a ``row`` x ``col`` matrix."""
    return _tri_indices("tril_indices", row, col, offset, dtype, device)


def normal(
    mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False
):
    """Normal draws: of tensors ``mean`` and/or ``std`` (broadcast; ``NormalBackward1..3``,
    whose gradient is zero), or of two numbers and a ``size``."""
    mean_t, std_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if mean_t and std_t:
        return _dispatch(_op("normal_tensor_tensor"), (mean, std))
    if mean_t:
        return _dispatch(_op("normal_tensor_float"), (mean,), {"std": _scalar(std)})
    if std_t:
        return _dispatch(_op("normal_float_tensor"), (std,), {"mean": _scalar(mean)})
    if size is None:
        raise TypeError("normal() missing required argument 'size' (when mean and std are numbers)")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    return _host_random(
        lambda s: _rng.standard_normal(s) * std + mean, (tuple(size),), dtype, device, requires_grad
    )
