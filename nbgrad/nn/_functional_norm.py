"""More normalisation of ``nbgrad.nn.functional`` (``functional.py`` holds ``layer_norm``,
``batch_norm``, ``instance_norm``): ``group_norm``, ``rms_norm``, ``local_response_norm`` and
``normalize``.

All are composed from table ops, so their gradients are the table's, to any order. ``rms_norm``
and ``local_response_norm`` follow PyTorch's own composition (the same ``grad_fn`` names:
``MulBackward0``, ``DivBackward0``, ``AddBackward0``); ``group_norm`` is PyTorch's
``NativeGroupNormBackward0`` row.
"""

from __future__ import annotations

import math

import numpy as np

import nbgrad  # nbgrad.nn.functional, read at call time: that module imports this one
from nbgrad._tensor.dispatch import _dispatch
from nbgrad.derivatives import OPS
from nbgrad.tensor import Tensor

__all__ = [
    "normalize",
    "group_norm",
    "rms_norm",
    "local_response_norm",
]


def normalize(
    input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None
) -> Tensor:
    """``input`` divided by its ``p``-norm along ``dim`` (at least ``eps``)."""
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is None:
        return input / denom
    out.copy_(input / denom)
    return out


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each sample's channels in ``num_groups`` groups (over the group's channels and
    the spatial dims), then scale and shift per channel.

    One node, PyTorch's ``NativeGroupNormBackward0`` (its row in nbgrad/derivatives/nn.py).
    """
    if input.dim() < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {input.dim()}"
        )
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got "
            f"input of shape {list(input.shape)} and num_groups={num_groups}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != c):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in "
                f"input, but got {name} of shape {list(t.shape)} and input of shape "
                f"{list(input.shape)}"
            )
    size = [n * c // num_groups, num_groups, *input.shape[2:]]
    if math.prod(size) // num_groups == 1:  # PyTorch's _verify_batch_size
        raise ValueError(
            f"Expected more than 1 value per channel when training, got input size {size}"
        )
    attrs = {"num_groups": num_groups, "eps": eps}
    return _dispatch(OPS["native_group_norm"], (input, weight, bias), attrs)


def rms_norm(
    input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None
) -> Tensor:
    """``input * rsqrt(mean(input ** 2) + eps) * weight`` over the trailing
    ``normalized_shape`` dims, as PyTorch's composite; ``eps`` defaults to the dtype's
    machine epsilon."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    n = len(normalized_shape)
    if n == 0 or input.dim() < n or tuple(input.shape[-n:]) != normalized_shape:
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[*, {', '.join(map(str, normalized_shape))}], but got input of size"
            f"{list(input.shape)}"
        )
    if eps is None:
        eps = float(np.finfo(input.dtype.np).eps)
    dims = tuple(range(input.dim() - n, input.dim()))
    out = input * (input.pow(2).mean(dims, keepdim=True) + eps).rsqrt()
    return out * weight if weight is not None else out


def local_response_norm(
    input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor:
    """Divide each element by ``(k + alpha * mean of the squares of the ``size`` neighbouring
    channels) ** beta``, as PyTorch's composite (its 3-d average pool is the 2-d one over the
    flattened spatial dims)."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = div.unsqueeze(1)
    else:
        div = div.view(input.shape[0], 1, input.shape[1], -1)
    div = nbgrad.nn.functional.pad(div, (0, 0, size // 2, (size - 1) // 2))
    div = nbgrad.nn.functional.avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    if dim > 3:
        div = div.view(input.shape)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div
