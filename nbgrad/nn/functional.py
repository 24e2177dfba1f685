"""``nbgrad.nn.functional``: the functions behind the layers and losses.

Mirrors ``torch/nn/functional.py``: same names, signatures, defaults, and the same ``grad_fn``
names where PyTorch has one op (``AddmmBackward0`` for ``linear``, ``ConvolutionBackward0``,
``NllLossBackward0``, ``MseLossBackward0``, ``NativeLayerNormBackward0``,
``EmbeddingBackward0``): those are rows of the op table in ``nbgrad/derivatives.py``, so they
are differentiable to any order. The rest is composed from Tensor ops, as in PyTorch.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.grad_mode import no_grad
from nbgrad.derivatives import OPS
from nbgrad.tensor import Tensor, _dispatch, _rng_state, tensor

__all__ = ["linear", "conv2d", "relu", "tanh", "sigmoid", "gelu", "softmax", "log_softmax",
           "dropout", "embedding", "layer_norm", "mse_loss", "nll_loss", "cross_entropy"]
