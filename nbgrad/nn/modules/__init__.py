"""The layers of ``nbgrad.nn``. Mirrors ``torch/nn/modules/__init__.py``.

Each submodule's ``__all__`` names its layers once; this package exports them all.
"""

from nbgrad.nn.modules import (
    activation,
    adaptive,
    channelshuffle,
    container,
    conv,
    distance,
    dropout,
    flatten,
    fold,
    linear,
    linear_cross_entropy_options,
    loss,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
)
from nbgrad.nn.modules.activation import *  # noqa: F403
from nbgrad.nn.modules.adaptive import *  # noqa: F403
from nbgrad.nn.modules.channelshuffle import *  # noqa: F403
from nbgrad.nn.modules.container import *  # noqa: F403
from nbgrad.nn.modules.conv import *  # noqa: F403
from nbgrad.nn.modules.distance import *  # noqa: F403
from nbgrad.nn.modules.dropout import *  # noqa: F403
from nbgrad.nn.modules.flatten import *  # noqa: F403
from nbgrad.nn.modules.fold import *  # noqa: F403
from nbgrad.nn.modules.linear import *  # noqa: F403
from nbgrad.nn.modules.linear_cross_entropy_options import *  # noqa: F403
from nbgrad.nn.modules.loss import *  # noqa: F403
from nbgrad.nn.modules.module import Module
from nbgrad.nn.modules.normalization import *  # noqa: F403
from nbgrad.nn.modules.padding import *  # noqa: F403
from nbgrad.nn.modules.pixelshuffle import *  # noqa: F403
from nbgrad.nn.modules.pooling import *  # noqa: F403
from nbgrad.nn.modules.rnn import *  # noqa: F403
from nbgrad.nn.modules.sparse import *  # noqa: F403
from nbgrad.nn.modules.transformer import *  # noqa: F403
from nbgrad.nn.modules.upsampling import *  # noqa: F403

__all__ = ["Module"] + [
    name
    for submodule in (
        linear,
        conv,
        activation,
        dropout,
        flatten,
        container,
        sparse,
        normalization,
        pooling,
        padding,
        upsampling,
        pixelshuffle,
        channelshuffle,
        fold,
        rnn,
        transformer,
        loss,
        distance,
        adaptive,
        linear_cross_entropy_options,
    )
    for name in submodule.__all__
]
