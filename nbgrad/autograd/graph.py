"""``nbgrad.autograd.graph``: the backward graph's public names (PyTorch's
``torch/autograd/graph.py``).

The graph itself (Node, Edge, AccumulateGrad, saved tensors) lives in :mod:`nbgrad._graph`,
below the Tensor; this module adds what needs the engine (``register_multi_grad_hook``) and
``save_on_cpu``, and (nbgrad's own, for tools) the typed observer of forward calls and
backward passes, ``GraphObserver`` and ``observe`` (NOTE [One engine path]).
"""

from __future__ import annotations

import threading
from typing import NamedTuple

from nbgrad._graph.accumulate_grad import AccumulateGrad
from nbgrad._graph.hooks import RemovableHandle, disable_saved_tensors_hooks, saved_tensors_hooks
from nbgrad._graph.node import (
    UINT64_MAX,
    Edge,
    GradientEdge,
    GraphRoot,
    InputMetadata,
    Node,
    get_gradient_edge,
    grad_accumulator,
    increment_version,
    next_sequence_nr,
    try_get_grad_accumulator,
)
from nbgrad._graph.observer import GraphObserver, ObserverHandle, observe
from nbgrad._graph.saved_mutation import allow_mutation_on_saved_tensors
from nbgrad._graph.saved_tensor import SavedTensor

from .graph_task import current_graph_task_id, will_engine_execute_node

__all__ = [
    "Node",
    "Edge",
    "GraphRoot",
    "AccumulateGrad",
    "RemovableHandle",
    "SavedTensor",
    "saved_tensors_hooks",
    "save_on_cpu",
    "allow_mutation_on_saved_tensors",
    "disable_saved_tensors_hooks",
    "InputMetadata",
    "UINT64_MAX",
    "GradientEdge",
    "get_gradient_edge",
    "register_multi_grad_hook",
    "increment_version",
    "HookInfo",
    "hook_inventory",
    "grad_accumulator",
    "try_get_grad_accumulator",
    "next_sequence_nr",
    "GraphObserver",
    "ObserverHandle",
    "observe",
]


class save_on_cpu(saved_tensors_hooks):
    """Tensors saved for backward inside it are kept on the CPU and moved back to their
    device when backward needs them, as ``torch.autograd.graph.save_on_cpu`` (nbgrad has no
    pinned memory: ``pin_memory`` is accepted and changes nothing)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack_to_cpu(tensor):
            return tensor.device, tensor.cpu()

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


class _MultiHandle:
    """The handle of a multi-grad hook: removes the hook from every tensor."""

    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for handle in self.handles:
            handle.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Call ``fn`` once per backward pass for a group of tensors (PyTorch's
    ``torch.autograd.graph.register_multi_grad_hook``).

    ``mode="all"``: after the gradients of every tensor the pass computes, with a list of them
    (None for the others). ``mode="any"``: at the first of them, with that gradient.
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    lock = threading.Lock()
    if mode == "any":
        ran = set()

        def any_hook(grad):
            task = current_graph_task_id()
            with lock:
                if task in ran:
                    return
                ran.add(task)
            fn(grad)

        return _MultiHandle(tuple(t.register_hook(any_hook) for t in tensors if t.requires_grad))

    nodes = [get_gradient_edge(t).node for t in tensors]
    counts, buffers, expected = {}, {}, {}

    def hook_for(idx):
        def all_hook(grad):
            task = current_graph_task_id()
            with lock:
                seen = counts.get(task, 0)
                if seen == 0:  # the first call of this pass: how many will come
                    expected[task] = sum(map(will_engine_execute_node, nodes))
                    buffers[task] = [None] * len(nodes)
                counts[task] = seen + 1
                buffers[task][idx] = grad
                done = seen + 1 == expected[task]
                if done:
                    grads = buffers.pop(task)
                    del counts[task], expected[task]
            if done:
                fn(grads)

        return all_hook

    return _MultiHandle(tuple(t.register_hook(hook_for(i)) for i, t in enumerate(tensors)))


# -- the hook inventory ---------------------------------------------------------------------


class HookInfo(NamedTuple):
    """One registered hook, as listed by :func:`hook_inventory`."""

    kind: str  # tensor_hook | node_prehook | node_hook | post_accumulate_grad | module hooks
    target_kind: str  # "tensor" | "node" | "module"
    target: object
    name: str
    enabled: bool
    handle: RemovableHandle


def _infos(handles, target_kind, target=None):
    for h in tuple(handles or ()):
        owner = target if target is not None else h.owner
        yield HookInfo(h.kind, target_kind, owner, h.name, h.enabled, h)


def hook_inventory(*roots) -> list[HookInfo]:
    """Every hook reachable from the graphs of ``roots`` (tensors, nodes or modules).

    PyTorch has no such list; nbgrad's hook editor is built on it. Each entry carries its
    handle: ``handle.enabled = False`` switches a hook off without removing it,
    ``handle.remove()`` removes it.

    Example:
        >>> import nbgrad as ng
        >>> x = ng.ones(2, requires_grad=True)
        >>> y = x * 2
        >>> h = y.register_hook(lambda g: g)
        >>> [(i.kind, i.target_kind) for i in hook_inventory(y)]
        [('tensor_hook', 'tensor')]
    """
    out: list[HookInfo] = []
    start: list[Node] = []
    for r in roots:
        if isinstance(r, Node):
            start.append(r)
        elif hasattr(r, "_module_hook_infos"):
            out.extend(r._module_hook_infos())
        elif hasattr(r, "grad_fn"):
            if r.grad_fn is not None:
                start.append(r.grad_fn)
            elif getattr(r, "_grad_accumulator", None) is not None:
                start.append(r._grad_accumulator)
        else:
            raise TypeError(
                f"hook_inventory() takes tensors, nodes or modules, got {type(r).__name__}"
            )
    seen = set(start)
    stack = list(start)
    order = []
    while stack:
        node = stack.pop()
        order.append(node)
        for fn in node._next_fns:
            if fn is not None and fn not in seen:
                seen.add(fn)
                stack.append(fn)
    order.sort(key=lambda n: -n._sequence_nr_ if n._sequence_nr_ != UINT64_MAX else 1)
    for node in order:
        out.extend(_infos(node._tensor_pre_hooks, "tensor"))
        out.extend(_infos(node._pre_hooks, "node", node))
        out.extend(_infos(node._post_hooks, "node", node))
        if isinstance(node, AccumulateGrad):
            out.extend(_infos(node.variable._post_accumulate_grad_hooks, "tensor", node.variable))
    return out
