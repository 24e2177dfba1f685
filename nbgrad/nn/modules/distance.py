"""Distance layers: ``PairwiseDistance``, ``CosineSimilarity``. Mirrors
``torch/nn/modules/distance.py``."""

from __future__ import annotations

from nbgrad.nn import functional as F
from nbgrad.nn.modules.module import Module
from nbgrad.tensor import Tensor

__all__ = ["PairwiseDistance", "CosineSimilarity"]


class PairwiseDistance(Module):
    """The ``p``-norm of ``x1 - x2 + eps`` along the last dim."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """The cosine of the angle between ``x1`` and ``x2`` along ``dim``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
