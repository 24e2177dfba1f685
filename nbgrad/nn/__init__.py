"""``nbgrad.nn``: Modules, Parameters, layers, losses, ``functional`` and ``init``.

Mirrors ``torch/nn/__init__.py``.
"""

from nbgrad.nn import functional, init, modules, utils
from nbgrad.nn.modules import *  # noqa: F403
from nbgrad.nn.parameter import Buffer, Parameter

__all__ = ["Parameter", "Buffer", *modules.__all__, "functional", "init", "modules", "utils"]
