"""PyTorch's own ``grad_fn`` graph, read for the notebook (a :class:`GraphSource`).

The second implementation of the seam of ``sources.py``: the snapshot, the layout, the still
pictures and the widgets draw a torch model's backward graph as they draw nbgrad's. It reads
torch's public and semi-public API only (``name()``, ``next_functions``, ``metadata``,
``_input_metadata``, ``_sequence_nr()``, ``torch.autograd._get_sequence_nr()``, the
``_saved_<name>`` attributes, a tensor's ``_version``, ``_backward_hooks`` and
``_post_accumulate_grad_hooks``, a module's hook dicts).

NOTE [torch stays optional]
Nothing here imports torch: an object is torch's when torch is already imported and the object
is one of its tensors, modules or nodes (whose Python types live in ``builtins``), so
``import nbgrad.notebook`` never imports torch, and a machine without it never needs it.
"""

from __future__ import annotations

import re
import sys
import time

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


_TENSOR_CLASS: list = []  # [torch.Tensor], once torch is imported (read on every event)


def _tensor_class():
    torch = _torch()
    if torch is None or not hasattr(torch, "Tensor"):  # (not imported, or half imported)
        return None
    _TENSOR_CLASS.append(torch.Tensor)
    return torch.Tensor


class _Handle:
    """A hook of torch's as the notebook's hook lists hold one (as nbgrad's RemovableHandle)."""

    def __init__(self, hid, fn, kind, owner, hooks_dict):
        self.id, self.fn, self.kind, self.owner = hid, fn, kind, owner
        self.name = getattr(fn, "__qualname__", None) or repr(fn)
        self.enabled = True
        self._dict = hooks_dict

    def remove(self):
        self._dict.pop(self.id, None)

    def enable(self):
        pass

    def disable(self):
        raise ValueError(
            f"{self.name} was registered outside nbgrad: torch cannot switch it off; remove it "
            "(and register it again later)"
        )


# The kinds of hook events (GraphObserver.hook) for the hooks nbgrad registers on torch objects
_EVENT_KINDS = {"tensor_hook": "tensor", "node_prehook": "prehook", "node_hook": "posthook"}
# the pass being watched now (NOTE [Watching torch]): [(observer, TorchPass, node running)]
_WATCHED: list = []


class TorchHook:
    """A hook nbgrad registered on a torch tensor, node or module (the hook editor's): torch
    calls it; it calls ``fn`` unless disabled (then it changes nothing), and reports the call
    to the pass being watched, as nbgrad's engine reports its hooks. Its own handle."""

    def __init__(self, fn, kind, owner):
        self.fn, self.kind, self.owner = fn, kind, owner
        self.name = getattr(fn, "__qualname__", None) or repr(fn)
        self.enabled = True
        self.id = None
        self._torch_handle = None

    def __call__(self, *args):
        if not self.enabled:
            return None
        post_acc = self.kind == "post_accumulate_grad"
        if post_acc and _WATCHED:
            g = args[0].grad
            before = g.detach().clone() if g is not None else None
        result = self.fn(*args)
        if _WATCHED:
            observer, task, node = _WATCHED[-1]  # the node running (a module hook's)
            if self.kind in ("node_prehook", "node_hook"):
                node = self.owner
            elif self.kind == "tensor_hook" and self.owner.grad_fn is not None:
                node = self.owner.grad_fn  # (it runs before its node's pre-hooks)
            if post_acc:
                before_after = (before, args[0].grad)
            else:
                before_after = (
                    args[-1] if self.kind.startswith("full_backward") else args[0],
                    result,
                )
            observer.hook(task, _EVENT_KINDS.get(self.kind, self.kind), node, self, *before_after)
        return result

    def enable(self):
        self.enabled = True

    def disable(self):
        self.enabled = False

    def remove(self):
        if self._torch_handle is not None:
            self._torch_handle.remove()
        _NODE_HOOKS.get(id(self.owner), {}).pop(self.id, None)
        if not _NODE_HOOKS.get(id(self.owner), True):
            del _NODE_HOOKS[id(self.owner)]

    def __repr__(self):
        return f"<torch hook {self.name} ({self.kind})>"


# hooks nbgrad put on torch nodes, which torch keeps where Python cannot list them:
# id(node) -> {hook id: TorchHook} (a hook holds its node until removed)
_NODE_HOOKS: dict = {}


def _handles(hooks_dict, kind, owner):
    if not hooks_dict:
        return ()
    return tuple(
        fn if isinstance(fn, TorchHook) else _Handle(k, fn, kind, owner, hooks_dict)
        for k, fn in list(hooks_dict.items())
    )


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
        tensor = _TENSOR_CLASS[0] if _TENSOR_CLASS else _tensor_class()
        return tensor is not None and isinstance(obj, tensor)

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
        attrs = _SAVED_ATTRS.get(type(node))
        if attrs is None:  # (a node's saved values are its type's attributes: listed once)
            attrs = _SAVED_ATTRS[type(node)] = [a for a in dir(node) if a.startswith("_saved_")]
        for attr in attrs:
            name = attr[len("_saved_") :]
            try:
                value = getattr(node, attr)
            except RuntimeError:  # released after a backward without retain_graph
                out.append(SavedValue(name, "freed"))
                continue
            out.append(self._saved_value(name, value))
        return out

    def saved_tensors(self, node) -> list:
        out = []
        for value in self.saved(node):
            if value.kind not in ("tensor", "tensors"):
                continue
            got = getattr(node, "_saved_" + value.name)
            for t in got if isinstance(got, (list, tuple)) else (got,):
                out.append((value.name, t))
        return out

    def stale_saved(self, node) -> list:
        out = []
        attrs = _SAVED_ATTRS.get(type(node)) or [a for a in dir(node) if a.startswith("_saved_")]
        for attr in attrs:
            try:
                getattr(node, attr)
            except RuntimeError as e:  # torch unpacks it, and checks the version as backward
                found = _VERSIONS.search(str(e))
                if found:
                    out.append((attr[len("_saved_") :], int(found[2]), int(found[1])))
        return out

    def storage(self, tensor) -> tuple:
        block = tensor.untyped_storage()
        key = block.data_ptr() if tensor.is_cpu else (str(tensor.device), block.data_ptr())
        return key, block.nbytes()

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
        # torch keeps a node's own hooks where Python cannot list them: those nbgrad registered
        ours = list(_NODE_HOOKS.get(id(node), {}).values())
        return NodeHooks(
            pre_hooks=tuple(h for h in ours if h.kind == "node_prehook"),
            hooks=tuple(h for h in ours if h.kind == "node_hook"),
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
                out.append(HookInfo(kind, "module", module, h.name, h.enabled, h))
        # the global module hooks (``register_module_forward_hook``...) act on every module:
        # listed with each, as torch itself lists them nowhere
        where = torch.nn.modules.module
        for attr, kind in (
            ("_global_forward_pre_hooks", "global_forward_pre"),
            ("_global_forward_hooks", "global_forward"),
            ("_global_backward_pre_hooks", "global_full_backward_pre"),
            ("_global_backward_hooks", "global_full_backward"),
        ):
            for h in _handles(getattr(where, attr, None), kind, None):
                out.append(HookInfo(kind, "module", module, h.name, h.enabled, h))
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

    def version(self, tensor) -> int:
        return tensor._version

    def to_numpy(self, tensor) -> np.ndarray:
        try:  # a CPU tensor that needs no grad (a gradient, mostly): a view, one call
            return tensor.numpy()
        except (RuntimeError, TypeError):
            return tensor.detach().cpu().numpy()

    def address(self, tensor, array):
        # the tensor's own memory (numpy's ``ctypes.data`` costs a microsecond and more; for a
        # tensor off the CPU it would name a host copy that dies at once)
        return tensor.data_ptr() if tensor.is_cpu else (str(tensor.device), tensor.data_ptr())

    def register_hook(self, owner, method, fn, kind):
        hook = TorchHook(fn, kind, owner)
        hook._torch_handle = getattr(owner, method)(hook)
        hook.id = hook._torch_handle.id
        if self.is_node(owner):
            _NODE_HOOKS.setdefault(id(owner), {})[hook.id] = hook
        return hook

    # -- watching --------------------------------------------------------------------------
    def can_observe(self) -> bool:
        return _torch() is not None

    def observe(self, observer, *, forward=True, backward=True):
        torch = _torch()
        if torch is None:
            raise RuntimeError("torch is not imported: there is nothing of torch's to watch")
        mode = _watch_mode(torch)(self, observer, forward, backward)
        mode.__enter__()
        return _ModeHandle(mode)

    def next_sequence_nr(self) -> int:
        # NOTE [A sequence number without a node]
        # torch's thread-local counter, read as
        # torch.fx reads it (``torch.autograd._get_sequence_nr()`` is the number the next node
        # will take); making a throwaway node instead costs tens of microseconds at each start
        # and end of a block, and shifts the numbers of the nodes made after it
        torch = _torch()
        peek = _PEEK.get(torch)
        if peek is None:
            peek = _PEEK[torch] = getattr(torch.autograd, "_get_sequence_nr", False)
        if peek:
            return peek() - 1
        with torch.enable_grad():  # a throwaway node takes one: the next nodes number above
            probe = torch.zeros((), requires_grad=True) * 1
        return probe.grad_fn._sequence_nr()

    def module_call_hooks(self, pre_hook, post_hook) -> list:
        torch = _torch()
        if torch is None:
            return []
        module = torch.nn.modules.module
        return [
            module.register_module_forward_pre_hook(pre_hook),
            module.register_module_forward_hook(post_hook),
        ]


TORCH = TorchSource()
_PEEK: dict = {}  # the torch module -> torch.autograd._get_sequence_nr (False: none)


# -- watching torch at work ------------------------------------------------------------------
# NOTE [Watching torch]
# Forward calls: a ``torch.overrides.TorchFunctionMode`` sees every torch function and Tensor
# method called while it is entered (torch turns the mode off inside its own handler, so the
# calls torch makes for one call are not seen again). Backward passes: ``Tensor.backward``,
# ``torch.autograd.backward`` and ``torch.autograd.grad`` reach the mode too; it walks the
# graph from the roots, registers a pre-hook and a hook on each node (both return None: torch's
# gradients do not change), runs torch's real backward, and removes them. The pre-hooks give
# the order torch ran the nodes in and what each received; the hooks what each returned. Torch
# shows no ready queue, dependency counts or input buffers: a :class:`TorchPass` keeps nbgrad's
# model of them (PyTorch's engine, NOTE [Ready queues]), run over what the hooks saw when the
# trace is first read (NOTE [The model run when read]), and notes each step where torch ran
# another node than the model would (``differs``).
#
# NOTE [Recording torch's cost]
# Recording a torch training step costs what torch's own machinery costs (a
# TorchFunctionMode through which every call of the step goes in Python, the global module
# hooks, a pre-hook and a hook on each node), the facts of each gradient, and per call a
# record tuple and the walk to the user's line (NOTE [Recording cost]), per module call a
# group, per node a Step. ``tests/benchmarks/notebook.py --only torch`` prints the figures
# (a 784-256-10 MLP step, plain and recorded). The recorder keeps per event only what cannot
# wait: a record tuple per call, the facts of each gradient (a norm and the first values,
# see NOTE [Summarise when shown]; taken when the event happens, since the gradient may change in
# place or be freed later, and holding it instead would change what torch does: it steals a
# gradient nobody else holds, and sums a fan-in in place; a ``.grad`` that took the incoming
# gradient's memory is not read again, NOTE [A stolen gradient]) and a Step; the model of the
# engine runs when the trace is read (NOTE [The model run when read]); the block's sequence
# numbers are read, not taken (NOTE [A sequence number without a node]). Two savings are
# left out on purpose: the mode stays on while ``optimizer.step()`` runs (pausing it would
# drop the step's ``add_`` calls from the records), and each node keeps its post-hook even
# where what it sent could be read from what the next node received (a hook torch cannot
# list, a tensor hook on a non-leaf or a module's backward hooks, may change the gradient
# between the two, and the edges would then be wrong).

_SKIP = frozenset(
    {"__get__", "__set__", "__repr__", "__format__", "__str__", "__len__", "__bool__"}
)


def _op_name(func) -> str:
    name = getattr(func, "__name__", None) or repr(func)
    return name[2:-2] if name.startswith("__") and name.endswith("__") else name


def _recorded_name(func) -> str:
    """The op name a call of ``func`` is recorded under; "" for those not recorded."""
    return "" if getattr(func, "__name__", "") in _SKIP else _op_name(func)


class _ReadyModel:
    """PyTorch's CPU ready queue, modelled: a ``std::priority_queue`` of nodes by sequence
    number (libstdc++'s binary heap, step for step: nodes with equal numbers, a leaf's
    accumulators, come out in the order that heap gives them, not first in first out)."""

    def __init__(self, sequence_nr):
        self.heap: list = []
        self._seq = sequence_nr

    def _less(self, a, b):
        return self._seq(a) < self._seq(b)

    def _sift_up(self, heap, hole, top, value):  # std::__push_heap
        parent = (hole - 1) // 2
        while hole > top and self._less(heap[parent], value):
            heap[hole] = heap[parent]
            hole = parent
            parent = (hole - 1) // 2
        heap[hole] = value

    def push(self, node):
        self.heap.append(node)
        self._sift_up(self.heap, len(self.heap) - 1, 0, node)

    def _pop(self, heap):  # std::pop_heap, then pop_back
        if len(heap) > 1:
            value, heap[-1] = heap[-1], heap[0]
            n, hole, child = len(heap) - 1, 0, 0
            while child < (n - 1) // 2:  # std::__adjust_heap
                child = 2 * (child + 1)
                if self._less(heap[child], heap[child - 1]):
                    child -= 1
                heap[hole] = heap[child]
                hole = child
            if n % 2 == 0 and child == (n - 2) // 2:
                child = 2 * (child + 1)
                heap[hole] = heap[child - 1]
                hole = child - 1
            self._sift_up(heap, hole, 0, value)
        return heap.pop()

    def top(self):
        return self.heap[0] if self.heap else None

    def take(self, node):
        """Take ``node`` out: the top, as the engine would, or (where torch ran another node
        than the model's top) wherever it is."""
        if self.heap and self.heap[0] is node:
            self._pop(self.heap)
        elif node in self.heap:
            rest = [n for n in self.heap if n is not node]
            self.heap = []
            for n in rest:
                self.push(n)

    def snapshot(self):
        """The waiting nodes in the order the engine would run them."""
        if len(self.heap) < 2:
            return list(self.heap)
        heap, out = list(self.heap), []
        while heap:
            out.append(self._pop(heap))
        return out


class TorchPass:
    """One torch backward pass as the observer's ``graph_task``: what the hooks saw, in the
    order they saw it, and (run when first read, NOTE [The model run when read]) nbgrad's model
    of the engine's state over it (``dependencies``, ``not_ready`` input buffers,
    ``cpu_ready_queue``) and the steps where torch's order ``differs`` from the model's."""

    def __init__(self, source, roots):
        self.source = source
        self.roots = roots
        self.dependencies: dict = {}
        # what the hooks read of each node, read once here (each read of a torch node's
        # next_functions, sequence number or input metadata builds Python objects)
        self.edges: dict = {}
        self.seq: dict = {}
        stack = list(roots)
        while stack:  # incoming edges of each node reachable from the roots
            node = stack.pop()
            if node in self.edges:
                continue
            edges = self.edges[node] = source.next_edges(node)
            self.seq[node] = source.sequence_nr(node)
            for fn, _ in edges:
                if fn is not None:
                    self.dependencies[fn] = self.dependencies.get(fn, 0) + 1
                    stack.append(fn)
        self.nodes = self.edges.keys()
        # the pass as the hooks saw it: (node, None) when a node started, (node, sums) when
        # it ended (sums: the input buffer slots its gradients added to, see fan_in)
        self.events: list = []
        # the nodes with several incoming edges: the engine adds the gradients of a slot
        # reached twice, so the model does too, as they come (the only tensors it keeps)
        self.fan_in = {fn for fn, count in self.dependencies.items() if count > 1}
        self._slots: dict = {}  # fan-in node -> {input_nr: gradient so far}
        self._left = {fn: self.dependencies[fn] for fn in self.fan_in}
        self.differs: list = []
        self._devices: dict = {}

    def next_edges(self, node):
        """``node``'s next edges, as read when the pass began."""
        return self.edges[node]

    def device(self, node) -> str:
        """The device of ``node``'s ready queue: that of its first input."""
        device = self._devices.get(node)
        if device is None:
            meta = getattr(node, "_input_metadata", ())
            device = self._devices[node] = str(meta[0].device) if meta else "cpu"
        return device

    def start(self, node):
        """``node`` starts (its pre-hook)."""
        self.events.append((node, None))

    def end(self, node, grads):
        """``node`` returned ``grads`` (its hook): the sums of gradients into the slots of a
        fan-in node that is still waiting for more are made now, as the engine makes them."""
        sums = ()
        fan_in = self.fan_in
        if fan_in:
            for (fn, input_nr), grad in zip(self.edges[node], grads):
                if fn is None or fn not in fan_in:
                    continue
                left = self._left[fn] = self._left[fn] - 1
                slots = self._slots.setdefault(fn, {})
                if grad is not None:
                    before = slots.get(input_nr)
                    slots[input_nr] = grad if before is None else before + grad
                    if before is not None and left:
                        sums = sums or {}
                        sums[(fn, input_nr)] = slots[input_nr]
                if not left:
                    del self._slots[fn]
        self.events.append((node, sums))

    # NOTE [The model run when read]
    # The ready queue, the dependency counts and the input buffers of a torch pass are nbgrad's
    # model, not torch's state: they follow from the order the hooks saw and from which
    # gradients were None. So the hooks only note what happened (``events``) and the
    # gradients' facts (the observer's), and the model runs over those notes when the trace
    # is first read (``BackwardTrace.steps`` ...), filling each Step's ``device``, ``ready``,
    # ``dependencies``, ``buffers`` and ``made_ready`` and the trace's ``initial_ready``,
    # final counts and buffers and ``model_differs``, as they were filled while the pass ran
    # before. A buffer slot shows the facts of the gradient sent into it (the edge's); a slot
    # reached twice while its node still waits shows the sum, which the model made then.
    def replay(self, trace):
        """Run the model over the pass as observed, into ``trace`` (its Steps, in order)."""
        deps = dict(self.dependencies)
        not_ready: dict = {}
        queue = _ReadyModel(self.seq.__getitem__)
        waiting: dict = {}  # device -> {node: None}, the nodes made ready and not started
        for node in self.roots:
            queue.push(node)
            device = self.device(node)
            waiting.setdefault(device, {})[node] = None
            trace._initial_ready.setdefault(device, []).append(node)
        steps = {}
        for step in trace._steps:
            steps.setdefault(step.node, step)
        edge_grads = trace.edge_grads
        pending: list = []
        running = None
        differs = []
        index = 0
        for node, sums in self.events:
            if sums is None:  # started
                if queue.top() is not node:
                    differs.append(index)
                index += 1
                queue.take(node)
                running = steps.get(node)
                if running is None:
                    continue
                for device, nodes in waiting.items():
                    if node in nodes:
                        running.device = device
                        del nodes[node]
                        break
                running.dependencies, running.buffers = _changed(pending, self, deps, not_ready)
                pending = []
                ready = {"cpu": queue.snapshot()}
                for device, nodes in waiting.items():
                    if device != "cpu":
                        ready[device] = sorted(nodes, key=lambda n: -self.seq[n])
                running.ready = ready
                continue
            for i, (fn, input_nr) in enumerate(self.edges[node]):  # ended: route, as the engine
                if fn is None:
                    continue
                count = deps.get(fn, 1) - 1
                deps[fn] = count
                buf = not_ready.get(fn)
                if buf is None:
                    size = len(getattr(fn, "_input_metadata", ())) if count else 0
                    buf = [None] * max(size, input_nr + 1)
                grad = edge_grads.get((node, i))
                if grad is not None:
                    total = sums.get((fn, input_nr)) if sums else None
                    buf[input_nr] = grad if total is None else trace._summary(total)
                if count:
                    not_ready[fn] = buf
                else:
                    not_ready.pop(fn, None)
                    queue.push(fn)
                    waiting.setdefault(self.device(fn), {})[fn] = None
                    if running is not None and running.node is node:
                        running.made_ready.append(fn)
            pending.append(node)
        trace._final_dependencies, trace._final_buffers = _changed(pending, self, deps, not_ready)
        trace._model_differs = differs
        self.differs = differs
        self.events = []


class _CountedPass:
    """The graph task of a torch backward pass that is only counted."""


def _changed(ended, task, deps, not_ready):
    """The counts and buffers of the nodes that the nodes ``ended`` (since the last step)
    route gradients to: what their routing changed."""
    deps_changed, buffers = {}, {}
    for node in ended:
        for fn, _ in task.edges[node]:
            if fn is None or fn in deps_changed:
                continue
            deps_changed[fn] = deps.get(fn, 0)
            buf = not_ready.get(fn)
            if buf is not None:
                buffers[fn] = list(buf)
    return deps_changed, buffers


# NOTE [A stolen gradient]
# Into a ``.grad`` that was None, torch's AccumulateGrad puts the incoming gradient itself when
# nothing else holds it (``new_grad.detach()``: another tensor object over the same memory,
# with the same version counter), else a copy. Where ``.grad`` after is that memory, in that
# layout, the observer is given the incoming gradient for it: the same values, whose facts the
# pass has already taken (its memo is by tensor object), instead of reading them again.
def _stolen(grad, after) -> bool:
    return (
        grad is not None
        and after is not None
        and after.data_ptr() == grad.data_ptr()
        and after.dtype == grad.dtype
        and after.shape == grad.shape
        and after.stride() == grad.stride()
        and after._version == grad._version
    )


def _roots(func, args, kwargs, torch):
    first = args[0] if args else kwargs.get("tensors", kwargs.get("outputs"))
    items = first if isinstance(first, (list, tuple)) else (first,)
    return [t for t in items if isinstance(t, torch.Tensor)]


def _watched_backward(source, observer, func, args, kwargs, torch):
    """Run torch's backward ``func`` with the observer told of each step (NOTE [Watching
    torch])."""
    nodes = []
    for t in _roots(func, args, kwargs, torch):
        node = source.gradient_node(t) if t.requires_grad else None
        if node is not None and node not in nodes:
            nodes.append(node)
    if not nodes:
        return func(*args, **kwargs)
    counting = getattr(observer, "counting", None)
    if counting is not None and counting():  # NOTE [Repeated steps counted]: start and end
        task, error = _CountedPass(), None
        observer.task_start(task, nodes[0], {})
        try:
            return func(*args, **kwargs)
        except BaseException as e:
            error = e
            raise
        finally:
            observer.task_end(task, error)
    task = TorchPass(source, nodes)
    handles = []
    before = {}

    accumulators = {node for node in task.nodes if source.is_accumulator(node)}

    def pre(node):
        def hook(grad_outputs):
            task.events.append((node, None))
            _WATCHED[-1] = (observer, task, node)
            if node in accumulators:
                g = node.variable.grad
                before[node] = g.detach().clone() if g is not None else None
            observer.node_start(task, node, list(grad_outputs))

        return hook

    def post(node):
        def hook(grad_inputs, grad_outputs):
            if node in accumulators:
                var = node.variable
                grad, after = grad_outputs[0], var.grad
                if _stolen(grad, after):
                    after = grad  # the same values: read once (NOTE [A stolen gradient])
                observer.grad_accumulated(task, node, var, grad, before.pop(node, None), after)
            observer.node_end(task, node, list(grad_inputs))
            task.end(node, grad_inputs)

        return hook

    try:
        for node in task.nodes:
            try:
                handles.append(node.register_prehook(pre(node)))
                handles.append(node.register_hook(post(node)))
            except (RuntimeError, AttributeError):  # a node that takes no hooks: not watched
                continue
        observer.task_start(task, nodes[0], dict(task.dependencies))
        error = None
        _WATCHED.append((observer, task, None))
        try:
            return func(*args, **kwargs)
        except BaseException as e:
            error = e
            raise
        finally:
            _WATCHED.pop()
            observer.task_end(task, error)
    finally:
        for h in handles:
            h.remove()


def _watch_mode(torch):
    """The TorchFunctionMode class (made once torch is imported: this module never imports
    it, NOTE [torch stays optional])."""
    cls = _MODE.get("cls")
    if cls is not None:
        return cls
    clock = time.perf_counter
    # func -> its op name ("" for those not recorded, _SKIP; _BACKWARD for a backward pass):
    # NOTE [One look-up a call]
    # every call of a block comes here, most of them (``.grad``
    # reads, grad-mode switches) to be passed on unrecorded, so one dict look-up decides
    names: dict = {f: _BACKWARD for f in (torch.Tensor.backward, torch.autograd.backward)}
    names[torch.autograd.grad] = _BACKWARD

    class WatchMode(torch.overrides.TorchFunctionMode):
        def __init__(self, source, observer, forward, backward):
            super().__init__()
            self.source = source
            self.observer = observer
            self.forward = forward
            self.backward = backward

        def __torch_function__(self, func, types, args=(), kwargs=None):
            try:
                name = names[func]
            except KeyError:
                name = names[func] = _recorded_name(func)
            except TypeError:  # (a function that cannot be a key: named at each call)
                name = _recorded_name(func)
            if name is _BACKWARD:
                if self.backward:
                    return _watched_backward(
                        self.source, self.observer, func, args, kwargs or {}, torch
                    )
            elif name and self.forward:
                t0 = clock()
                result = func(*args, **kwargs) if kwargs else func(*args)
                self.observer.forward(name, args, kwargs, result, clock() - t0)
                return result
            return func(*args, **kwargs) if kwargs else func(*args)

    _MODE["cls"] = WatchMode
    return WatchMode


_VERSIONS = re.compile(r"is at version (\d+); expected version (\d+) instead")
_SAVED_ATTRS: dict = {}  # node type -> the names of its saved values' attributes
_BACKWARD = "\0backward"  # the name of the functions that run a backward pass (not an op's)
_MODE: dict = {}


class _ModeHandle:
    """An entered watch mode; ``remove()`` leaves it; ``pause()`` and ``resume()`` take it off
    torch's function-mode stack and put it back (NOTE [Repeated steps counted] in steps.py)."""

    def __init__(self, mode):
        self.mode = mode
        self.paused = False

    def pause(self) -> bool:
        """Take the mode off torch's stack when it is the only mode there (with a mode of the
        user's inside it or around it, it stays, so that theirs sees what it saw before):
        whether it was taken off."""
        stack = _torch().overrides._get_current_function_mode_stack()
        if self.paused or len(stack) != 1 or stack[0] is not self.mode:
            return False
        self.mode.__exit__(None, None, None)  # (pops the innermost mode: this one)
        self.paused = True
        return True

    def resume(self):
        """Put a paused mode back on torch's stack."""
        if self.paused:
            self.paused = False
            self.mode.__enter__()

    def remove(self):
        self.resume()
        mode, self.mode = self.mode, None
        if mode is not None:
            mode.__exit__(None, None, None)
