"""``nbgrad.nn``: Modules, Parameters, layers, losses, ``functional`` and ``init``.

Mirrors ``torch/nn/__init__.py``.
"""

from nbgrad.nn import functional, init, modules, parallel, utils
from nbgrad.nn.modules import *  # noqa: F403
from nbgrad.nn.parallel import DataParallel
from nbgrad.nn.parameter import Buffer, Parameter

__all__ = [
    "Parameter",
    "Buffer",
    *modules.__all__,
    "DataParallel",
    "functional",
    "init",
    "modules",
    "parallel",
    "utils",
]
