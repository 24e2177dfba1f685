"""The strict test device: host-memory arrays that refuse NumPy operands, as CuPy's do.

Tests register it (``register("strictdev")``, or ``backend.register_device_type(name,
strict=True)``) to run the multi-device engine, and catch every host/device mix, on machines
without a GPU. It is no part of the backend: it plugs into the backend's seam like any other
device type would.
"""

from __future__ import annotations

import types

import numpy as np

from nbgrad import backend

__all__ = ["STRICT_XP", "StrictArray", "register"]


# NOTE [Strict test device]
# A test device whose arrays were plain NumPy arrays would hide every host/device mix: code
# that builds ``np.asarray(...)`` and labels it with the tensor's device passes there and fails
# on CUDA, where CuPy refuses NumPy operands ("Unsupported type <class 'numpy.ndarray'>"). So the
# test device is strict, as CuPy is: its arrays are a type of their own (``StrictArray``, an
# ndarray subclass kept in host memory), and its array module (``STRICT_XP``) and their
# operators refuse a NumPy array operand, in functions, ufuncs, operators and item assignment.
# Python and NumPy scalars pass, as in CuPy; ``xp.asarray(numpy_array)`` is the host-to-device
# copy, as ``cupy.asarray``; NumPy index arrays pass in indexing, which CuPy converts too.
class StrictArray(np.ndarray):
    """An array of the strict test device (NOTE [Strict test device])."""

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        _refuse(inputs)
        if out is not None:
            _refuse(out)
            kwargs["out"] = tuple(np.asarray(o) if isinstance(o, StrictArray) else o for o in out)
        args = [np.asarray(a) if isinstance(a, StrictArray) else a for a in inputs]
        return _strict(getattr(ufunc, method)(*args, **kwargs))

    def __array_function__(self, func, types, args, kwargs):
        _refuse(args)
        _refuse(kwargs.values())
        plain = _plain(args)
        return _strict(func(*plain, **_plain_kwargs(kwargs)))

    def __setitem__(self, key, value):
        _refuse((value,))
        np.ndarray.__setitem__(np.asarray(self), key, value)


def _wrap_method(name):
    base = getattr(np.ndarray, name)

    def method(self, *args, **kwargs):  # (axes, shapes and index arrays pass, as in CuPy)
        return _strict(base(self, *_plain(args), **_plain_kwargs(kwargs)))

    method.__name__ = name
    return method


# the methods that make a new array: theirs are StrictArrays too, as CuPy's are cupy arrays
for _name in (
    "argmax argmin argsort nonzero take repeat astype copy dot clip round searchsorted "
    "cumsum cumprod max min sum prod mean std var any all flatten ravel reshape transpose "
    "squeeze swapaxes diagonal trace compress"
).split():
    setattr(StrictArray, _name, _wrap_method(_name))


class _StrictUfunc:
    """A NumPy ufunc as the strict module hands it out: ``xp.add(...)`` and ``xp.add.at``."""

    def __init__(self, ufunc):
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__

    def __call__(self, *args, **kwargs):
        _refuse(args)
        _refuse(kwargs.values())
        return _strict(self._ufunc(*_plain(args), **_plain_kwargs(kwargs)))

    def at(self, a, indices, b=None):
        _refuse((b,))  # index arrays pass, as in CuPy
        plain = a.view(np.ndarray)
        if b is None:
            self._ufunc.at(plain, indices)
        else:
            self._ufunc.at(plain, indices, b.view(np.ndarray) if isinstance(b, np.ndarray) else b)

    def reduce(self, *args, **kwargs):
        _refuse(args)
        return _strict(self._ufunc.reduce(*_plain(args), **_plain_kwargs(kwargs)))

    def accumulate(self, *args, **kwargs):
        _refuse(args)
        return _strict(self._ufunc.accumulate(*_plain(args), **_plain_kwargs(kwargs)))


def _refuse(values):
    for v in values:
        if isinstance(v, np.ndarray) and not isinstance(v, StrictArray):
            raise TypeError(f"Unsupported type {type(v)}")
        if isinstance(v, (list, tuple)):
            _refuse(v)


def _plain(values):
    out = []
    for v in values:
        if isinstance(v, StrictArray):
            out.append(v.view(np.ndarray))
        elif isinstance(v, (list, tuple)):
            out.append(type(v)(_plain(v)))
        else:
            out.append(v)
    return out


def _plain_kwargs(kwargs):
    return {k: (v.view(np.ndarray) if isinstance(v, StrictArray) else v) for k, v in kwargs.items()}


def _strict(result):
    if isinstance(result, np.ndarray) and not isinstance(result, StrictArray):
        return result.view(StrictArray)
    if isinstance(result, tuple):
        return tuple(_strict(r) for r in result)
    if isinstance(result, list):
        return [_strict(r) for r in result]
    return result


class _StrictModule:
    """The strict test device's array module: NumPy's functions (and submodules, as
    ``xp.lib.stride_tricks``), refusing NumPy array operands and giving StrictArrays
    (NOTE [Strict test device])."""

    def __init__(self, module=np):
        self._module = module

    @property
    def special(self):
        """SciPy's special functions (``erf``, ``erfinv``) on this device's arrays (what
        ``backend.special_functions`` hands out for this module)."""
        import scipy.special

        return _StrictModule(scipy.special)

    def __getattr__(self, name):
        attr = getattr(self._module, name)
        if isinstance(attr, types.ModuleType):
            return _StrictModule(attr)
        if name == "broadcast_to":  # writable where the source is, as CuPy's (NumPy's is not)

            def broadcast_to(a, shape):
                _refuse((a,))
                plain = a.view(np.ndarray)
                view = np.broadcast_to(plain, shape)
                out = np.lib.stride_tricks.as_strided(
                    plain, view.shape, view.strides, writeable=plain.flags.writeable
                )
                return out.view(StrictArray)

            return broadcast_to
        if name in ("asarray", "array", "ascontiguousarray", "asanyarray"):

            def convert(a, *args, **kwargs):
                if isinstance(a, StrictArray):  # already the device's: no copy (cupy.asarray)
                    return _strict(attr(a.view(np.ndarray), *args, **kwargs))
                # host data: the host-to-device copy
                return _strict(np.array(attr(_plain([a])[0], *args, **kwargs), copy=True))

            return convert
        if not callable(attr) or isinstance(attr, type):
            return attr
        if isinstance(attr, np.ufunc):
            return _StrictUfunc(attr)

        def strict(*args, **kwargs):
            _refuse(args)
            _refuse(kwargs.values())
            return _strict(attr(*_plain(args), **_plain_kwargs(kwargs)))

        strict.__name__ = name
        return strict


STRICT_XP = _StrictModule()


def register(name, *, count=1, is_host=True):
    """Register the strict test device under ``name`` (NOTE [Strict test device])."""
    backend.register_device_type(
        name,
        xp=STRICT_XP,
        count=count,
        is_host=is_host,
        from_host=lambda array, index: np.array(array, copy=True).view(StrictArray),
        array_type=StrictArray,
        to_host=lambda array: array.view(np.ndarray),
    )
