"""``LinearCrossEntropyOptions``. Mirrors ``torch/nn/modules/linear_cross_entropy_options.py``.

NOTE [Linear cross entropy in one piece]
PyTorch's options choose a chunked kernel that never
holds the whole ``(N, C)`` logits, a memory saving for large vocabularies. nbgrad checks and
keeps the options but always computes the reference composition ``cross_entropy(linear(...))``
(the same values and gradients, to any order), so its nodes are those ops'.
"""

from __future__ import annotations

import dataclasses

from nbgrad import dtypes

__all__ = ["LinearCrossEntropyOptions"]


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """How PyTorch's chunked ``linear_cross_entropy`` splits the batch and at which precision
    it accumulates (NOTE [Linear cross entropy in one piece])."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: dtypes.dtype | None = None

    def __post_init__(self):
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            if not sep:
                factor = "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (
            self.batch_chunk_size is None
            or (isinstance(self.batch_chunk_size, int) and self.batch_chunk_size > 0)
        ):
            raise ValueError(
                f"batch_chunk_size must be positive int or None, got {self.batch_chunk_size!r}"
            )
        supported = (dtypes.float16, dtypes.float32, dtypes.float64)  # (no bfloat16 here)
        if self.acc_dtype is not None and self.acc_dtype not in supported:
            raise ValueError(
                "acc_dtype must be one of {None, torch.float16, torch.bfloat16, torch.float32, "
                f"torch.float64}}, got {self.acc_dtype!r}. Pass acc_dtype=None to let the op "
                "pick automatically."
            )
