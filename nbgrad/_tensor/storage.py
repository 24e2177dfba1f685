"""Storages, as PyTorch's ``torch/storage.py``: the memory a tensor's elements live in, shared
with its views. ``Tensor.untyped_storage()`` counts bytes; the deprecated ``Tensor.storage()``
counts elements of the tensor's dtype. Both read that memory; neither copies it."""

from __future__ import annotations

import warnings

from nbgrad import dtypes
from nbgrad._tensor.memory_formats import _address


class UntypedStorage:
    """The bytes of a tensor's storage (``Tensor.untyped_storage()``)."""

    def __init__(self, flat, device):
        self._flat = flat  # the storage's elements, flat
        self.device = device

    def nbytes(self) -> int:
        return int(self._flat.nbytes)

    def size(self) -> int:
        return self.nbytes()

    def __len__(self):
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    def data_ptr(self) -> int:
        return _address(self._flat)

    def _bytes(self):
        return self._flat.view("uint8")

    def __getitem__(self, i):
        return int(self._bytes()[i])

    def tolist(self):
        return self._bytes().tolist()


class TypedStorage(UntypedStorage):
    """The elements of a tensor's storage, in its dtype (``Tensor.storage()``, deprecated)."""

    @property
    def dtype(self):
        return dtypes.from_numpy_dtype(self._flat.dtype)

    def size(self) -> int:
        return int(self._flat.size)

    def __len__(self):
        return self.size()

    def element_size(self) -> int:
        return self._flat.itemsize

    def __getitem__(self, i):
        return self._flat[i].item()

    def tolist(self):
        return self._flat.tolist()

    def untyped(self):
        return UntypedStorage(self._flat, self.device)


_WARNED = []  # as PyTorch: the deprecation is said once


def _warn_typed_storage_removal():
    if not _WARNED:
        _WARNED.append(True)
        warnings.warn(
            "TypedStorage is deprecated. It will be removed in the future and UntypedStorage "
            "will be the only storage class. This should only matter to you if you are using "
            "storages directly.  To access UntypedStorage directly, use "
            "tensor.untyped_storage() instead of tensor.storage()",
            UserWarning,
            stacklevel=3,
        )
