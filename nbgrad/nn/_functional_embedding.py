"""``embedding_bag`` and ``one_hot`` of ``nbgrad.nn.functional`` (``functional.py`` holds
``embedding``). ``embedding_bag`` is PyTorch's ``EmbeddingBagBackward0`` row (NOTE [Embedding
bag row]).
"""

from __future__ import annotations

import numpy as np

import nbgrad  # nbgrad.nn.functional, read at call time: that module imports this one
from nbgrad import dtypes
from nbgrad._tensor.dispatch import _dispatch
from nbgrad.derivatives import OPS
from nbgrad.tensor import Tensor, tensor

__all__ = [
    "one_hot",
    "embedding_bag",
]


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """An int64 tensor of shape ``(*tensor.shape, num_classes)``, 1 at each class index
    (``num_classes=-1``: one more than the largest index)."""
    if tensor.dtype != dtypes.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    idx = np.asarray(tensor)
    if num_classes == -1:
        if idx.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(idx.max()) + 1
    if idx.size and idx.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if idx.size and idx.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = (idx[..., None] == np.arange(num_classes)).astype(np.int64)
    return nbgrad.tensor(out, device=tensor.device)


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """The sum, mean or max of the embeddings of each bag of indices: the rows of a 2-d
    ``input``, or the runs of a 1-d ``input`` that start at ``offsets``.
    An empty bag gives zeros; ``padding_idx`` entries count for nothing (nor in a bag's size).
    """
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, "
            f"then it must have the same shape as the input ({input.shape})"
        )
    if weight.dim() != 2:
        raise ValueError(
            f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}"
        )
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a "
                "mini-batch of fixed length sequences. However, found offsets of type "
                f"{type(offsets)}"
            )
        starts = np.arange(0, input.numel(), input.shape[1])
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        starts = np.asarray(offsets).astype(np.int64)
    else:
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}"
        )
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding_bag: scale_grad_by_freq and sparse are not supported")
    if max_norm is not None:
        nbgrad.nn.functional._embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub."
        )
    indices = np.asarray(input).astype(np.int64)
    total = len(indices)
    if include_last_offset:
        bounds = starts
    else:
        bounds = np.append(starts, total)
    if len(starts) and starts[0] != 0:
        raise RuntimeError(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
            f"from position 0. However, got {starts[0]}"
        )
    bags = len(bounds) - 1
    bag_of = np.repeat(np.arange(bags), np.diff(bounds))
    indices = indices[: len(bag_of)]
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    keep = indices != padding_idx if padding_idx is not None else np.ones(len(bag_of), bool)
    counts = np.bincount(bag_of[keep], minlength=bags)
    scale = keep / np.maximum(counts, 1)[bag_of] if mode == "mean" else keep
    kept = np.flatnonzero(keep)
    slots = np.full((bags, max(1, counts.max(initial=0))), -1, dtype=np.int64)
    slots[bag_of[kept], np.arange(len(kept)) - np.searchsorted(bag_of[kept], bag_of[kept])] = kept
    if per_sample_weights is not None and len(per_sample_weights) != len(bag_of):
        per_sample_weights = per_sample_weights[: len(bag_of)]
    device = weight.device
    inputs = (
        weight,
        per_sample_weights,
        tensor(indices, device=device),
        tensor(bag_of, device=device),
        tensor(scale.astype(weight.dtype.np), device=device),
    )
    return _dispatch(OPS["_embedding_bag"], inputs, {"slots": slots, "mode": mode})[0]
