"""``nbgrad.autograd.grad_mode``: the grad modes' public names (PyTorch's
``torch/autograd/grad_mode.py``); they live in :mod:`nbgrad._graph.grad_state`, below the Tensor."""

from nbgrad._graph.grad_state import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from nbgrad._graph.multithreading import (
    is_multithreading_enabled,
    set_multithreading_enabled,
)

__all__ = [
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "set_multithreading_enabled",
    "is_multithreading_enabled",
]
