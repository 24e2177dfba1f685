"""The feature and alpha dropouts of ``nbgrad.nn.functional`` (``functional.py`` holds
``dropout``): ``dropout1d``..``dropout3d``, ``alpha_dropout``, ``feature_alpha_dropout``,
composed as PyTorch composes them (``MulBackward0``, ``AddBackward0``).
"""

from __future__ import annotations

import math
import warnings

import nbgrad  # nbgrad.nn.functional, read at call time: that module imports this one
from nbgrad.tensor import Tensor, tensor

__all__ = [
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "alpha_dropout",
    "feature_alpha_dropout",
]


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


_ALPHA = 1.7580993408473766  # -SELU's lambda * alpha: the value a dropped unit takes


def _dropout_impl(input, p, training, inplace, feature, alpha):
    """ATen's ``_dropout_impl``: a keep mask drawn with probability ``1 - p`` (one per channel
    for the feature dropouts), scaled by ``1 / (1 - p)``; the alpha dropouts scale by ``a`` and
    shift by ``b`` instead, keeping a standard normal input's mean and variance."""
    _check_p(p)
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        zero = tensor(0.0, dtype=input.dtype, device=input.device)
        return input.mul_(zero) if inplace else input * zero
    shape = tuple(input.shape)
    if feature:
        shape = shape[:2] + (1,) * (len(shape) - 2)
    keep = (nbgrad.nn.functional._generator().random(shape) >= p).astype(input.dtype.np)
    if not alpha:
        noise = tensor(keep / (1 - p), device=input.device)
        return input.mul_(noise) if inplace else input * noise
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    b = tensor((keep - 1) * (_ALPHA * a) + _ALPHA * a * p, device=input.device)
    noise = tensor(keep * a, device=input.device)
    return input.mul_(noise).add_(b) if inplace else input * noise + b


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of an ``(N, C, L)`` or ``(C, L)`` input with probability ``p``."""
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note "
            "that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs)."
        )
    if input.dim() == 2:
        return _dropout_impl(input.unsqueeze(0), p, training, inplace, True, False).squeeze(0)
    return _dropout_impl(input, p, training, inplace, True, False)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of an ``(N, C, H, W)`` input with probability ``p`` (a 3-d input is
    taken as ``(N, C, L)``, with PyTorch's warning)."""
    _check_p(p)
    if input.dim() not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is deprecated "
            "and will result in an error in a future release. To retain the behavior and "
            "silence this warning, please use dropout instead. Note that dropout2d exists to "
            "provide channel-wise dropout on inputs with 2 spatial dimensions, a channel "
            "dimension, and an optional batch dimension (i.e. 3D or 4D inputs).",
            stacklevel=2,
        )
    if input.dim() == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret "
            "the input as one without a batch dimension, i.e. shape (C, H, W). To maintain "
            "the 1D channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _dropout_impl(input, p, training, inplace, True, False)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of an ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input with
    probability ``p``."""
    _check_p(p)
    if input.dim() not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.dim()}-D input to dropout3d, which is deprecated "
            "and will result in an error in a future release. To retain the behavior and "
            "silence this warning, please use dropout instead. Note that dropout3d exists to "
            "provide channel-wise dropout on inputs with 3 spatial dimensions, a channel "
            "dimension, and an optional batch dimension (i.e. 4D or 5D inputs).",
            stacklevel=2,
        )
    if input.dim() != 5:  # in place: through a batched view of the input, which is returned
        out = _dropout_impl(input.unsqueeze(0), p, training, inplace, True, False)
        return input if inplace else out.squeeze(0)
    return _dropout_impl(input, p, training, inplace, True, False)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Dropout for SELU networks: dropped units take SELU's negative saturation value, and an
    affine map keeps the mean and variance."""
    return _dropout_impl(input, p, training, inplace, False, True)


def feature_alpha_dropout(
    input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
):
    """``alpha_dropout`` of whole channels."""
    return _dropout_impl(input, p, training, inplace, True, True)
