"""The Tensor class, bound late: the graph layer's only way to a tensor (see the NOTE below)."""

from __future__ import annotations

# NOTE [The Tensor class, bound late]
# The graph sits below the Tensor, yet a few of its steps hand back a tensor: a saved output
# unpacked, a gradient laid out as its leaf, a number saved by a table node. ``nbgrad.tensor``
# binds its class, its ``_wrap`` (an array and a device -> a Tensor outside the graph) and
# ``nbgrad.tensor`` (Python data -> a Tensor) here when it is imported, so that the imports go
# one way only (``nbgrad.tensor`` -> ``nbgrad._graph``), as the layers do.
_Tensor = None
_wrap = None
_tensor = None


def bind_tensor(tensor_class, wrap, tensor):
    """Install the Tensor class, ``_wrap`` and ``tensor`` (called once, by ``nbgrad.tensor``)."""
    global _Tensor, _wrap, _tensor
    _Tensor, _wrap, _tensor = tensor_class, wrap, tensor
