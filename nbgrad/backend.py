"""Devices and their array modules: the one place that knows about CuPy.

Mirrors Chainer's ``_backend.py`` / ``backends/_cpu.py``: a :class:`Device` names where a
tensor's array lives, and :func:`get_xp` hands out the array module (``numpy`` for the CPU,
``cupy`` for CUDA) that the op table's forward kernels receive as ``xp``. Tests may register
an extra host-memory device type (see :func:`register_device_type`) to exercise the
multi-device engine on machines without a GPU.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np

__all__ = [
    "Device",
    "as_device",
    "get_xp",
    "register_device_type",
    "unregister_device_type",
    "transfer",
    "to_host",
    "erf",
    "cuda_is_available",
    "cuda_device_count",
    "cuda_synchronize",
    "set_default_device",
    "get_default_device",
]


class _DeviceType:
    """How arrays of one device type are made, moved and synchronised."""

    __slots__ = ("name", "xp", "is_host", "count", "synchronize", "from_host")

    def __init__(self, name, xp, *, is_host, count, synchronize=None, from_host=None):
        self.name = name
        self.xp = xp
        self.is_host = is_host
        self.count = count
        self.synchronize = synchronize or (lambda index: None)
        self.from_host = from_host or (lambda array, index: array)


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
            )
            _HOST_COPIES[_cupy.ndarray] = _cupy.asnumpy
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


# NOTE [Default device]
# ``set_default_device`` sets the device that the factory functions
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
    host = np.array(to_host(array), copy=True)
    return _device_type(dst).from_host(host, dst.index or 0)


# NOTE [Host copies by array type]
# What it takes to read an array in host memory is decided by the array, as Chainer's
# ``backend.to_numpy(array)`` decides it: a NumPy array (or NumPy scalar) is one already, a
# CuPy array is copied by ``cupy.asnumpy``, and an array type a test device registers says its
# own way. Code that needs host values (a kernel that samples on the host, a tensor's
# ``numpy()``) calls ``to_host`` and never asks which device, nor tests for ``.get``.
_HOST_COPIES = {}  # array type -> its host copy; NumPy's types are not in it


def to_host(array):
    """``array`` in host memory as a NumPy array: itself when it is a NumPy array or NumPy
    scalar, else the copy its array type makes (``cupy.asnumpy``); Python numbers and lists
    are made NumPy arrays. See NOTE [Host copies by array type]."""
    t = type(array)
    if t is np.ndarray or isinstance(array, np.generic):
        return array
    copy = _HOST_COPIES.get(t)
    return np.asarray(array) if copy is None else copy(array)


def special_functions(xp):
    """The module of special functions (``erf``, ``erfinv``) for arrays of ``xp``: SciPy's
    for NumPy, ``cupyx.scipy.special`` for CuPy, else the array module's own ``special``."""
    if xp is np:
        import scipy.special

        return scipy.special
    if xp is _cupy and xp is not None:
        import cupyx.scipy.special

        return cupyx.scipy.special
    return xp.special


def erf(xp, a):
    """The error function elementwise, for NumPy or CuPy arrays."""
    return special_functions(xp).erf(a)


def erfinv(xp, a):
    """The inverse error function elementwise, for NumPy or CuPy arrays."""
    return special_functions(xp).erfinv(a)


# NOTE [Float warnings of the other ops]
# PyTorch never warns on IEEE special values (``0 * inf``, an overflow); NumPy warns, once per
# place. The ops whose rows are in ``_QUIET`` (derivatives/opinfo.py) and every backward pass run
# under ``quiet_float_errors``: NumPy's own error state, exact whatever the user's filters or
# ``np.seterr``. Every other op (``mul``, ``add``, ``tanh`` ...) would pay about 1 us for it, a
# third of a small op, so they run without: the RuntimeWarnings NumPy raises on their behalf
# are filtered instead, once, at import, and only those attributed to nbgrad's modules (a user's
# own NumPy code warns as before). A filter the user puts before it (``warnings.simplefilter
# ("error")``) still sees them, and ``np.seterr(all="raise")`` still raises in those ops.
warnings.filterwarnings(
    "ignore",
    message=r"(invalid value|overflow|divide by zero|underflow) encountered",
    category=RuntimeWarning,
    module=r"nbgrad(\.|$)",
)


def quiet_float_errors():
    """A context in which NumPy's floating-point warnings (``0 * inf``, ``log(0)``) are off.

    PyTorch never warns on IEEE special values; NumPy does, per thread. See NOTE [Quiet
    backward] in the engine.
    """
    return np.errstate(all="ignore")


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


def register_device_type(
    name,
    *,
    xp=np,
    count=1,
    is_host=True,
    strict=False,
    from_host=None,
    to_host=None,
    array_type=None,
):
    """Register an extra device type whose arrays live in host memory (for tests).

    Its nodes run on a ready queue and worker thread of their own, like a GPU's would.
    ``from_host(array, index)`` makes one of its arrays from a NumPy array (default: the array
    itself); its arrays are of ``array_type`` (default: NumPy's), which ``to_host`` turns back
    into NumPy arrays. ``strict=True`` registers the strict test device of
    ``nbgrad._testing.strict_device`` instead, whose array module refuses NumPy operands as CuPy
    does.
    """
    if name in ("cpu", "cuda"):
        raise ValueError(f"cannot re-register the built-in device type '{name}'")
    if strict:  # (a call-time import: the testing module builds on this one)
        from nbgrad._testing import strict_device

        strict_device.register(name, count=count, is_host=is_host)
        return
    _DEVICE_TYPES[name] = _DeviceType(
        name, xp, is_host=is_host, count=lambda: count, from_host=from_host
    )
    if array_type is not None and array_type is not np.ndarray:
        _HOST_COPIES[array_type] = to_host or np.asarray


def unregister_device_type(name):
    _DEVICE_TYPES.pop(name, None)
