"""``nbgrad.utils.hooks``: PyTorch's ``torch.utils.hooks``: the :class:`RemovableHandle` every
``register_*hook`` returns (the graph layer's) and the :class:`BackwardHook` behind a Module's
full backward hooks (``nbgrad.nn``'s), re-exported; :func:`unserializable_hook`."""

from nbgrad.autograd.graph import RemovableHandle
from nbgrad.nn.modules._backward_hook import BackwardHook

__all__ = ["BackwardHook", "RemovableHandle", "unserializable_hook"]


def unserializable_hook(f):
    """Mark a hook as one that is not saved with its tensor (PyTorch's decorator)."""
    f.__torch_unserializable__ = True
    return f
