"""``nbgrad.nn``: Modules, Parameters, layers, losses, ``functional`` and ``init``.

Mirrors ``torch/nn/__init__.py``.
"""

from nbgrad.nn import functional, init, utils
from nbgrad.nn.modules import (
    GELU,
    Conv2d,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    LeakyReLU,
    Linear,
    LogSoftmax,
    Module,
    ModuleDict,
    ModuleList,
    MSELoss,
    NLLLoss,
    ParameterDict,
    ParameterList,
    ReLU,
    Sequential,
    Sigmoid,
    Softmax,
    Tanh,
)
from nbgrad.nn.parameter import Parameter

__all__ = [
    "Parameter",
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
    "MSELoss",
    "CrossEntropyLoss",
    "NLLLoss",
    "functional",
    "init",
    "modules",
    "utils",
]
