"""Devices and their array modules: the one place that knows about CuPy.

Mirrors Chainer's ``_backend.py`` / ``backends/_cpu.py``: a :class:`Device` names where a
tensor's array lives, and :func:`get_xp` hands out the array module (``numpy`` for the CPU,
``cupy`` for CUDA) that the op table's forward kernels receive as ``xp``. Tests may register
an extra host-memory device type (see :func:`register_device_type`) to exercise the
multi-device engine on machines without a GPU.
"""

from __future__ import annotations

import threading
import types

import numpy as np

__all__ = [
    "Device",
    "as_device",
    "get_xp",
    "register_device_type",
    "StrictArray",
    "unregister_device_type",
    "transfer",
    "to_numpy",
    "erf",
    "cuda_is_available",
    "cuda_device_count",
    "cuda_synchronize",
    "set_default_device",
    "get_default_device",
]


class _DeviceType:
    """How arrays of one device type are made, moved and synchronised."""

    __slots__ = ("name", "xp", "is_host", "count", "synchronize", "from_host", "to_host")

    def __init__(self, name, xp, *, is_host, count, synchronize=None, from_host=None, to_host=None):
        self.name = name
        self.xp = xp
        self.is_host = is_host
        self.count = count
        self.synchronize = synchronize or (lambda index: None)
        self.from_host = from_host or (lambda array, index: array)
        self.to_host = to_host or (lambda array: array)


_DEVICE_TYPES: dict[str, _DeviceType] = {
    "cpu": _DeviceType("cpu", np, is_host=True, count=lambda: 1),
}

# NOTE [CuPy seam]
# CuPy is imported lazily, the first time anyone asks about CUDA, and only here. With no CuPy
# or no GPU, ``cuda_is_available()`` is False and asking for a CUDA array raises a clear
# RuntimeError; importing nbgrad never fails.
_cupy = None
_cupy_checked = False


def _get_cupy():
    global _cupy, _cupy_checked
    if not _cupy_checked:
        _cupy_checked = True
        try:
            import cupy

            if cupy.cuda.runtime.getDeviceCount() > 0:
                _cupy = cupy
        except Exception:  # no CuPy, no driver, no device
            _cupy = None
        if _cupy is not None:

            def from_host(array, index):
                with _cupy.cuda.Device(index):
                    return _cupy.asarray(array)

            _DEVICE_TYPES["cuda"] = _DeviceType(
                "cuda",
                _cupy,
                is_host=False,
                count=lambda: _cupy.cuda.runtime.getDeviceCount(),
                synchronize=lambda index: _cupy.cuda.Device(index).synchronize(),
                from_host=from_host,
                to_host=lambda array: _cupy.asnumpy(array),
            )
    return _cupy


class Device:
    """Where a tensor lives: ``Device("cpu")``, ``Device("cuda")``, ``Device("cuda:1")``.

    Example:
        >>> import nbgrad as ng
        >>> ng.device("cuda:1")
        device(type='cuda', index=1)
    """

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, Device):
            type, index = type.type, type.index if index is None else index
        if not isinstance(type, str):
            raise TypeError(f"device() expected a string like 'cpu' or 'cuda:0', got {type!r}")
        if ":" in type:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index: {type!r}")
            type, _, idx = type.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}:{idx}'")
            index = int(idx)
        if type not in ("cpu", "cuda") and type not in _DEVICE_TYPES:
            known = ", ".join(sorted({"cpu", "cuda", *_DEVICE_TYPES}))
            raise RuntimeError(
                f"Expected one of {known} device type at start of device string: {type}"
            )
        if type == "cpu":
            index = None
        elif index is not None and (not isinstance(index, int) or index < 0):
            raise RuntimeError(f"Device index must not be negative, got {index!r}")
        self.type = type
        self.index = index

    def __eq__(self, other):
        if isinstance(other, str):
            other = Device(other)
        return isinstance(other, Device) and self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __enter__(self):
        """``with device(...)``: the default device inside (NOTE [Default device])."""
        _default.__dict__.setdefault("outer", []).append(getattr(_default, "device", None))
        _default.device = self
        return self

    def __exit__(self, *exc):
        _default.device = _default.outer.pop()

    @property
    def _normalized(self):
        """The device with a concrete index (``cuda`` -> ``cuda:0``)."""
        if self.type == "cpu" or self.index is not None:
            return self
        return Device(self.type, 0)


CPU = Device("cpu")


def as_device(device) -> Device:
    """Turn ``None``, a string or a Device into a concrete Device (None means CPU)."""
    if device is None:
        return CPU
    if type(device) is Device:
        dev = device
    elif isinstance(device, (str, Device)):
        dev = Device(device)
    elif isinstance(device, int):
        dev = Device("cuda", device)
    else:
        raise TypeError(f"expected a device such as 'cpu' or 'cuda:0', got {type(device).__name__}")
    dev = dev._normalized
    if dev.type != "cpu":
        _check_available(dev)
    return dev


# NOTE [Default device]: ``set_default_device`` sets the device that the factory functions
# (``tensor``, ``zeros``, ``randn``, ``arange``...) make tensors on when given no ``device``;
# per thread, as PyTorch's. ``as_device(None)`` stays the CPU: the factories ask
# ``factory_device``, so that a ``None`` elsewhere (``to()``, ``*_like``) keeps its meaning.
# ``with device(...)`` sets it for a block and then puts back the one outside.
_default = threading.local()


def set_default_device(device):
    """The device factory functions use when given none (``None``: back to the CPU)."""
    if isinstance(device, bool) or not isinstance(device, (type(None), str, Device, int)):
        raise TypeError(f"expected a device such as 'cpu' or 'cuda:0', got {type(device).__name__}")
    _default.device = Device(device) if isinstance(device, str) else device  # (checks the name)


def get_default_device() -> Device:
    """The device factory functions use when given none: the CPU unless set."""
    device = getattr(_default, "device", None)
    return CPU if device is None else as_device(device)


def factory_device(device) -> Device:
    """The device a factory function makes its tensor on. See NOTE [Default device]."""
    if device is None:
        device = getattr(_default, "device", None)
    return as_device(device)


def _device_type(device: Device) -> _DeviceType:
    if device.type == "cuda":
        _get_cupy()
    try:
        return _DEVICE_TYPES[device.type]
    except KeyError:
        raise RuntimeError(f"no backend registered for device type '{device.type}'") from None


def _check_available(device: Device):
    if device.type == "cuda" and _get_cupy() is None:
        raise RuntimeError(
            "nbgrad was asked for a CUDA tensor but CUDA is not available: CuPy is not "
            "installed or no GPU was found. On a machine with an NVIDIA GPU, install the CuPy "
            "that matches its CUDA version (`nvidia-smi` shows it): `pip install 'nbgrad[cuda12]'` "
            "for CUDA 12 or `pip install 'nbgrad[cuda13]'` for CUDA 13; or use device='cpu'."
        )
    dtype = _device_type(device)
    if device.index is not None and device.index >= dtype.count():
        raise RuntimeError(
            f"device {device} is out of range: {dtype.count()} {device.type} device(s) present"
        )


def get_xp(device: Device):
    """The array module (``numpy`` or ``cupy``) for ``device``."""
    if device.type == "cpu":
        return np
    return _device_type(device).xp


def is_host(device: Device) -> bool:
    return device.type == "cpu" or _device_type(device).is_host


def transfer(array, src: Device, dst: Device):
    """Copy ``array`` from ``src`` to ``dst`` (a new array, never an alias)."""
    if src == dst:
        return array
    host = _device_type(src).to_host(array)
    host = np.array(host, copy=True)
    return _device_type(dst).from_host(host, dst.index or 0)


def to_numpy(array, device: Device):
    """A NumPy array for ``array`` (no copy on host devices)."""
    if device.type == "cpu":
        return array
    return np.asarray(_device_type(device).to_host(array))


def erf(xp, a):
    """The error function elementwise, for NumPy or CuPy arrays."""
    if xp is STRICT_XP:
        return _strict(erf(np, a.view(np.ndarray)))
    if xp is np:
        from scipy.special import erf as _erf

        return _erf(a)
    import cupyx.scipy.special

    return cupyx.scipy.special.erf(a)


def erfinv(xp, a):
    """The inverse error function elementwise, for NumPy or CuPy arrays."""
    if xp is STRICT_XP:
        return _strict(erfinv(np, a.view(np.ndarray)))
    if xp is np:
        from scipy.special import erfinv as _erfinv

        return _erfinv(a)
    import cupyx.scipy.special

    return cupyx.scipy.special.erfinv(a)


# NOTE [Quiet float errors, cheaply]
# ``np.errstate(all="ignore")`` builds NumPy's error-state object anew each time it is entered.
# The ops that PyTorch runs silently and NumPy would warn on (``/``, ``**``, ``exp``, ``log``...)
# enter such a context on every call, and the engine once a pass. On NumPy 2, whose error state
# is that object in a context variable, the object that ignores everything is built once (for
# the state it was built from, kept beside it) and set for each use: two thirds of the cost.
# Inside a context that already ignores everything (a formula's op in a backward pass), nothing
# is set at all: a quarter of the cost. NumPy 1.x takes ``np.errstate``.
try:
    from numpy._core.umath import _extobj_contextvar as _error_state
except ImportError:  # NumPy 1.x
    _error_state = None

_quiet_state = (None, None)  # (an error state, the same ignoring all errors)


class _QuietFloatErrors:
    __slots__ = ("_token",)

    def __enter__(self):
        global _quiet_state
        state = _error_state.get()
        made_from, quiet = _quiet_state
        if state is quiet:  # already quiet
            self._token = None
            return
        if state is not made_from:
            with np.errstate(all="ignore"):
                quiet = _error_state.get()
            _quiet_state = (state, quiet)
        self._token = _error_state.set(quiet)

    def __exit__(self, *exc):
        if self._token is not None:
            _error_state.reset(self._token)


def quiet_float_errors():
    """A context in which NumPy's floating-point warnings (``0 * inf``, ``log(0)``) are off.

    PyTorch never warns on IEEE special values; NumPy does, per thread. See NOTE [Quiet
    backward] in the engine and NOTE [Quiet float errors, cheaply].
    """
    return _QuietFloatErrors() if _error_state is not None else np.errstate(all="ignore")


def synchronize(device: Device):
    _device_type(device).synchronize(device.index or 0)


def cuda_is_available() -> bool:
    return _get_cupy() is not None


def cuda_device_count() -> int:
    return _DEVICE_TYPES["cuda"].count() if cuda_is_available() else 0


def cuda_synchronize(device=None):
    if not cuda_is_available():
        raise RuntimeError("CUDA is not available: cannot synchronize (no CuPy or no GPU)")
    synchronize(as_device(device if device is not None else "cuda"))


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


def register_device_type(name, *, xp=np, count=1, is_host=True, strict=False):
    """Register an extra device type whose arrays live in host memory (for tests).

    Its nodes run on a ready queue and worker thread of their own, like a GPU's would. With
    ``strict`` its arrays are StrictArrays and its array module refuses NumPy operands, as
    CuPy does (NOTE [Strict test device]).
    """
    if name in ("cpu", "cuda"):
        raise ValueError(f"cannot re-register the built-in device type '{name}'")
    if strict:
        _DEVICE_TYPES[name] = _DeviceType(
            name,
            STRICT_XP,
            is_host=is_host,
            count=lambda: count,
            from_host=lambda array, index: np.array(array, copy=True).view(StrictArray),
            to_host=lambda array: array.view(np.ndarray),
        )
        return
    _DEVICE_TYPES[name] = _DeviceType(name, xp, is_host=is_host, count=lambda: count)


def unregister_device_type(name):
    _DEVICE_TYPES.pop(name, None)
