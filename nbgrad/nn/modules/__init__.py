"""The layers of ``nbgrad.nn``. Mirrors ``torch/nn/modules/__init__.py``."""

from nbgrad.nn.modules.activation import (
    GELU,
    LeakyReLU,
    LogSoftmax,
    ReLU,
    Sigmoid,
    Softmax,
    Tanh,
)
from nbgrad.nn.modules.container import (
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from nbgrad.nn.modules.conv import Conv2d
from nbgrad.nn.modules.dropout import Dropout
from nbgrad.nn.modules.flatten import Flatten
from nbgrad.nn.modules.linear import Identity, Linear
from nbgrad.nn.modules.loss import CrossEntropyLoss, MSELoss, NLLLoss
from nbgrad.nn.modules.module import Module
from nbgrad.nn.modules.normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from nbgrad.nn.modules.sparse import Embedding

__all__ = [
    "Module",
    "Identity",
    "Linear",
    "Conv2d",
    "ReLU",
    "LeakyReLU",
    "Tanh",
    "Sigmoid",
    "GELU",
    "Softmax",
    "LogSoftmax",
    "Dropout",
    "Flatten",
    "Sequential",
    "ModuleList",
    "ModuleDict",
    "ParameterList",
    "ParameterDict",
    "Embedding",
    "LayerNorm",
    "BatchNorm1d",
    "BatchNorm2d",
    "MSELoss",
    "CrossEntropyLoss",
    "NLLLoss",
]
