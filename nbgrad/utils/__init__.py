"""``nbgrad.utils``: PyTorch's ``torch.utils`` for autograd work: ``checkpoint`` (activation
checkpointing), ``data`` (datasets and the DataLoader) and ``hooks`` (``RemovableHandle``)."""

from . import checkpoint, data, hooks

__all__ = ["checkpoint", "data", "hooks"]
