"""``nbgrad.utils``: PyTorch's ``torch.utils`` for autograd work; ``checkpoint`` (activation
checkpointing) so far."""

from . import checkpoint

__all__ = ["checkpoint"]
