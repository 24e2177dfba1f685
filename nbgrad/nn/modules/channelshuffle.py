"""``ChannelShuffle``. Mirrors ``torch/nn/modules/channelshuffle.py``."""

from __future__ import annotations

from nbgrad.nn import functional as F
from nbgrad.nn.modules.module import Module
from nbgrad.tensor import Tensor

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """The channels of an ``(N, C, *)`` input in ``groups`` groups, interleaved."""

    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
