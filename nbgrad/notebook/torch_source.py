"""PyTorch's own ``grad_fn`` graph, read for the notebook (a :class:`GraphSource`).

The second implementation of the seam of ``sources.py``: the snapshot, the layout, the still
pictures and the widgets draw a torch model's backward graph as they draw nbgrad's. It reads
torch's public and semi-public API only (``name()``, ``next_functions``, ``metadata``,
``_input_metadata``, ``_sequence_nr()``, the ``_saved_<name>`` attributes, a tensor's
``_version``, ``_backward_hooks`` and ``_post_accumulate_grad_hooks``, a module's hook dicts).

NOTE [torch stays optional]
Nothing here imports torch: an object is torch's when torch is already imported and the object
is one of its tensors, modules or nodes (whose Python types live in ``builtins``), so
``import nbgrad.notebook`` never imports torch, and a machine without it never needs it.
"""

from __future__ import annotations

import sys

import numpy as np

from .sources import (
    GraphSource,
    HookInfo,
    InputMeta,
    NodeHooks,
    SavedValue,
    TensorFacts,
    dtype_name,
)

__all__ = ["TorchSource", "TORCH"]


def _torch():
    return sys.modules.get("torch")


class _Handle:
    """A hook of torch's as the notebook's hook lists hold one (as nbgrad's RemovableHandle)."""

    def __init__(self, hid, fn, kind, owner, hooks_dict):
        self.id, self.fn, self.kind, self.owner = hid, fn, kind, owner
        self.name = getattr(fn, "__qualname__", None) or repr(fn)
        self.enabled = True
        self._dict = hooks_dict

    def remove(self):
        self._dict.pop(self.id, None)


def _handles(hooks_dict, kind, owner):
    if not hooks_dict:
        return ()
    return tuple(_Handle(k, fn, kind, owner, hooks_dict) for k, fn in list(hooks_dict.items()))


class TorchSource(GraphSource):
    """PyTorch's graph, read through its public API (NOTE [torch stays optional])."""

    name = "torch"

    def owns(self, obj) -> bool:
        torch = _torch()
        if torch is None:
            return False
        return self.is_tensor(obj) or self.is_node(obj) or isinstance(obj, torch.nn.Module)

    def is_node(self, obj) -> bool:
        return (
            _torch() is not None
            and type(obj).__module__ == "builtins"
            and hasattr(obj, "next_functions")
            and hasattr(obj, "_sequence_nr")
        )

    def is_tensor(self, obj) -> bool:
        torch = _torch()
        return torch is not None and isinstance(obj, torch.Tensor)

    # -- nodes -----------------------------------------------------------------------------
    def node_name(self, node) -> str:
        return node.name()

    def next_edges(self, node):
        return node.next_functions

    def sequence_nr(self, node) -> int:
        return node._sequence_nr()

    def variable(self, node):
        return getattr(node, "variable", None) if self.is_accumulator(node) else None

    def is_accumulator(self, node) -> bool:
        return node.name() == "torch::autograd::AccumulateGrad"

    def metadata(self, node) -> dict:
        return node.metadata

    def input_metadata(self, node) -> tuple:
        return tuple(
            InputMeta(tuple(m.shape), dtype_name(m.dtype), str(m.device))
            for m in getattr(node, "_input_metadata", ())
        )

    def saved(self, node) -> list:
        out = []
        for attr in dir(node):
            if not attr.startswith("_saved_"):
                continue
            name = attr[len("_saved_") :]
            try:
                value = getattr(node, attr)
            except RuntimeError:  # released after a backward without retain_graph
                out.append(SavedValue(name, "freed"))
                continue
            out.append(self._saved_value(name, value))
        return out

    def _saved_value(self, name, value) -> SavedValue:
        if value is None:
            return SavedValue(name, "none")
        if self.is_tensor(value):
            return SavedValue(
                name,
                "tensor",
                shape=list(value.shape),
                dtype=dtype_name(value.dtype),
                version=value._version,
            )
        if isinstance(value, (list, tuple)) and value and all(self.is_tensor(v) for v in value):
            return SavedValue(
                name,
                "tensors",
                shape=[list(v.shape) for v in value],
                dtype=dtype_name(value[0].dtype),
            )
        return SavedValue(name, "value", value=repr(value)[:200])

    def node_hooks(self, node) -> NodeHooks:
        leaf = self.variable(node)
        tensor_hooks, post_acc = (), ()
        if leaf is not None:
            tensor_hooks = _handles(leaf._backward_hooks, "tensor_hook", leaf)
            post_acc = _handles(
                getattr(leaf, "_post_accumulate_grad_hooks", None), "post_accumulate_grad", leaf
            )
        return NodeHooks(
            pre_hooks=(),  # torch keeps a node's own hooks in C++, where Python cannot list them
            hooks=(),
            tensor_hooks=tensor_hooks,
            retains_grad=(),
            post_accumulate_grad=post_acc,
        )

    def module_hooks(self, module) -> list:
        torch = _torch()
        if torch is None or not isinstance(module, torch.nn.Module):
            return []
        out = []
        for attr, kind in (
            ("_forward_pre_hooks", "forward_pre"),
            ("_forward_hooks", "forward"),
            ("_backward_pre_hooks", "full_backward_pre"),
            ("_backward_hooks", "full_backward"),
        ):
            for h in _handles(getattr(module, attr, None), kind, module):
                out.append(HookInfo(kind, "module", module, h.name, True, h))
        return out

    # -- tensors ---------------------------------------------------------------------------
    def tensor_facts(self, tensor) -> TensorFacts:
        fn = tensor.grad_fn
        return TensorFacts(
            shape=tuple(tensor.shape),
            dtype=dtype_name(tensor.dtype),
            device=str(tensor.device),
            requires_grad=bool(tensor.requires_grad),
            is_leaf=bool(tensor.is_leaf),
            grad_fn=fn,
            output_nr=tensor.output_nr if fn is not None else 0,
            version=tensor._version,
        )

    def gradient_node(self, tensor, create=True):
        fn = tensor.grad_fn
        if fn is not None or not tensor.requires_grad or not create:
            return fn
        # a leaf's accumulator, as torch reaches it: the first next function of a view of it
        return tensor.view_as(tensor).grad_fn.next_functions[0][0]

    def grad(self, tensor):
        return tensor.grad if tensor.is_leaf or tensor.retains_grad else None

    def to_numpy(self, tensor) -> np.ndarray:
        return tensor.detach().cpu().numpy()


TORCH = TorchSource()
