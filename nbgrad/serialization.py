"""``nbgrad.save`` and ``nbgrad.load``: objects holding tensors, to a file and back (as
``torch/serialization.py``).

The format is a plain pickle (not PyTorch's zip archive): a tensor pickles as its values, its
device and its ``requires_grad`` (``Tensor.__reduce_ex__``), so what loads is a leaf, as in
PyTorch (a saved non-leaf comes back as a leaf that requires grad). As PyTorch since 2.6,
``load`` reads only tensors, parameters, NumPy arrays and Python's plain containers unless
``weights_only=False``. Two tensors that share memory load as two tensors (PyTorch keeps their
shared storage).
"""

from __future__ import annotations

import os
import pickle

from .backend import Device
from .nn.parameter import _rebuild_parameter
from .tensor import _rebuild

__all__ = ["save", "load"]

# the globals a weights-only load may name: nbgrad's rebuild functions, NumPy's array
# reconstruction, and the containers a state dict is made of
_WEIGHTS_ONLY_GLOBALS = {
    ("nbgrad.tensor", "_rebuild"),
    ("nbgrad.nn.parameter", "_rebuild_parameter"),
    ("numpy", "dtype"),
    ("numpy", "ndarray"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy.core.multiarray", "scalar"),
    ("_codecs", "encode"),
    ("collections", "OrderedDict"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "slice"),
    ("builtins", "complex"),
}


def save(obj, f, pickle_module=pickle, pickle_protocol=2):
    """Save ``obj`` (a tensor, a state dict, ...) to ``f``, a path or a binary file object.

    Example:
        >>> import io
        >>> import nbgrad as ng
        >>> buf = io.BytesIO()
        >>> ng.save({"w": ng.ones(2, requires_grad=True)}, buf)
        >>> _ = buf.seek(0)
        >>> ng.load(buf)
        {'w': tensor([1., 1.], requires_grad=True)}
    """
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as file:
            pickle_module.dump(obj, file, protocol=pickle_protocol)
    else:
        pickle_module.dump(obj, f, protocol=pickle_protocol)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, **pickle_load_args):
    """Load an object that ``save`` wrote to ``f`` (a path or a binary file object).

    ``map_location``: a device (or its name) for every tensor, or a dict from saved device
    names to the ones to load on. ``weights_only`` (the default, as PyTorch's): refuse any
    object but tensors, parameters, NumPy arrays and plain containers.
    """
    if weights_only is None:
        weights_only = pickle_module is None
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as file:
            return _load(file, map_location, pickle_module, weights_only, pickle_load_args)
    return _load(f, map_location, pickle_module, weights_only, pickle_load_args)


def _map_device(map_location, device):
    if map_location is None:
        return device
    if isinstance(map_location, dict):
        return map_location.get(device, device)
    if isinstance(map_location, (str, Device)):
        return str(map_location)
    raise TypeError(
        "map_location must be None, a device, a device name or a dict of device names, not "
        f"{type(map_location).__name__}"
    )


def _load(file, map_location, pickle_module, weights_only, pickle_load_args):
    if pickle_module is not None and not weights_only:
        if map_location is None:
            return pickle_module.load(file, **pickle_load_args)
    return _Unpickler(file, map_location, weights_only, **pickle_load_args).load()


class _Unpickler(pickle.Unpickler):
    """Rebuilds tensors on ``map_location``'s device; with ``weights_only``, refuses every
    global but those of ``_WEIGHTS_ONLY_GLOBALS``."""

    def __init__(self, file, map_location, weights_only, **kwargs):
        super().__init__(file, **kwargs)
        self._map_location = map_location
        self._weights_only = weights_only

    def find_class(self, module, name):
        if self._weights_only and (module, name) not in _WEIGHTS_ONLY_GLOBALS:
            raise pickle.UnpicklingError(
                "Weights only load failed. This file can still be loaded, to do so you have two "
                "options, do those steps only if you trust the source of the checkpoint. Re-"
                "running `nbgrad.load` with `weights_only` set to `False` will likely succeed, "
                "but it can result in arbitrary code execution. Unsupported global: GLOBAL "
                f"{module}.{name}"
            )
        if (module, name) == ("nbgrad.tensor", "_rebuild"):
            return self._rebuild_tensor
        if (module, name) == ("nbgrad.nn.parameter", "_rebuild_parameter"):
            return self._rebuild_parameter
        return super().find_class(module, name)

    def _rebuild_tensor(self, array, device, requires_grad):
        return _rebuild(array, _map_device(self._map_location, device), requires_grad)

    def _rebuild_parameter(self, array, device, requires_grad):
        device = _map_device(self._map_location, device)
        return _rebuild_parameter(array, device, requires_grad)
