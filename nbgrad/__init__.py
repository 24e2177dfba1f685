"""nbgrad: a PyTorch-style reverse-mode autograd engine on NumPy (and CuPy), built to be seen.

``import nbgrad as ng`` stands in for ``import torch`` for autograd work: the same names,
signatures, gradients, ``grad_fn`` names, hook order and errors. In a notebook,
``%load_ext nbgrad`` adds the ``%%autograd`` cell magic (``pip install nbgrad[notebook]``).
"""

from __future__ import annotations

import math as _math

# NOTE [Import order]: the Tensor (through _functions), then the op table, which fills the
# Tensor's table of rows by name (NOTE [The op table, by name])
from . import (  # noqa: E402
    _functions,  # noqa: E402
    autograd,  # noqa: E402
    backend,
    cuda,  # noqa: E402
    derivatives,
    dtypes,
    nn,
    optim,
)
from ._functions import *  # noqa: E402,F401,F403
from ._tensor.creation import rand_like, randn_like, randperm
from ._tensor_types import TENSOR_TYPES as _TENSOR_TYPES
from .autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .backend import Device as device
from .dtypes import (
    bool,
    double,
    float,
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    int,
    int8,
    int16,
    int32,
    int64,
    long,
    set_default_dtype,
    short,
    uint8,
)
from .dtypes import dtype as dtype
from .serialization import load, save
from .tensor import (
    Size,
    Tensor,
    arange,
    as_tensor,
    cat,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    stack,
    tensor,
    where,
    zeros,
    zeros_like,
)

# the constants PyTorch exports as ``torch.inf``, ``torch.nan``, ``torch.e``, ``torch.pi``
inf = _math.inf
nan = _math.nan
e = _math.e
pi = _math.pi
newaxis = None

# PyTorch's legacy tensor types: ``FloatTensor``, ``LongTensor``, ... (nbgrad/_tensor_types.py)
globals().update(_TENSOR_TYPES)

__version__ = "0.1.0"


def load_ipython_extension(ipython):
    """``%load_ext nbgrad``: register the ``%%autograd`` cell magic (needs nbgrad[notebook])."""
    from .notebook import load_ipython_extension as _load

    _load(ipython)
