"""``nbgrad.cuda``: is CUDA there, how many devices, wait for them (via ``nbgrad.backend``)."""

from __future__ import annotations

from . import backend
from ._tensor.legacy_types import CUDA_TENSOR_TYPES as _CUDA_TENSOR_TYPES

__all__ = ["is_available", "device_count", "synchronize"]

# PyTorch's legacy CUDA tensor types (``nbgrad.cuda.FloatTensor``, ...)
globals().update(_CUDA_TENSOR_TYPES)


def is_available() -> bool:
    """True when CuPy is installed and sees at least one GPU."""
    return backend.cuda_is_available()


def device_count() -> int:
    return backend.cuda_device_count()


def synchronize(device=None):
    """Wait for all work queued on a CUDA device."""
    backend.cuda_synchronize(device)
