"""PyTorch's module-level functions (``nbgrad.exp``, ``nbgrad.matmul``, ``nbgrad.finfo``...),
re-exported by ``nbgrad`` as ``torch`` exports them.
"""

from . import math, random, shapes, types, wider
from .math import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .shapes import *  # noqa: F401,F403
from .types import *  # noqa: F401,F403
from .wider import *  # noqa: F401,F403

__all__ = [*math.__all__, *shapes.__all__, *types.__all__, *wider.__all__, *random.__all__]
