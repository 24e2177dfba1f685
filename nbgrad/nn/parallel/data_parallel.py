"""``DataParallel``, as PyTorch's ``torch/nn/parallel/data_parallel.py``, for one device.

NOTE [DataParallel on one device]
PyTorch's DataParallel splits each batch over the GPUs of
``device_ids``, runs a replica of the module on each and gathers the outputs on
``output_device``. With no GPU it is a plain wrapper (``device_ids == []``: ``forward`` calls the
module), and with one it moves the module to that GPU and each call's tensors there. nbgrad has
both of those; it does not replicate a module over several GPUs, so ``device_ids`` of more than
one device raises ``NotImplementedError``.
"""

from __future__ import annotations

import itertools

from nbgrad import backend
from nbgrad.nn.modules.module import Module
from nbgrad.tensor import Tensor

__all__ = ["DataParallel"]


def _to(obj, device):
    """``obj``'s tensors (inside tuples, lists and dicts) moved to ``device`` (a scatter to one
    device)."""
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to(o, device) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to(o, device) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _to(v, device)) for k, v in obj.items())
    return obj


def _device_index(device):
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    return backend.as_device(device).index


class DataParallel(Module):
    """Runs ``module`` on the batch over ``device_ids`` (all GPUs by default); with no GPU, the
    module itself. See NOTE [DataParallel on one device]."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not backend.cuda_is_available():
            self.module = module
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = list(range(backend.cuda_device_count()))
        if output_device is None:
            output_device = device_ids[0]
        self.dim = dim
        self.module = module
        self.device_ids = [_device_index(d) for d in device_ids]
        self.output_device = _device_index(output_device)
        if len(self.device_ids) > 1:
            raise NotImplementedError(
                "nbgrad's DataParallel runs on one device: replicating a module over "
                f"device_ids={self.device_ids} is not supported; pass device_ids=[0]"
            )
        self.src_device_obj = backend.Device("cuda", self.device_ids[0])
        self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in itertools.chain(self.module.parameters(), self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(
                    "module must have its parameters and buffers "
                    f"on device {self.src_device_obj} (device_ids[0]) but found one of "
                    f"them on device: {t.device}"
                )
        return self.module(*_to(inputs, self.src_device_obj), **_to(kwargs, self.src_device_obj))
