"""The backward graph's nodes: ``Node``, ``Edge``, ``GraphRoot``, sequence numbers, gradient edges.

Mirrors ``torch/csrc/autograd/function.h`` (Node), ``edge.h`` and ``torch/autograd/graph.py``. A
Node is a backward function: it takes the gradients of its forward outputs and returns the
gradients of its forward inputs, which flow along ``next_functions`` (one Edge per forward input)
to the next nodes. ``AccumulateGrad`` is in ``accumulate_grad.py``, saved tensors in
``saved_tensor.py``, hook handles and the saved-tensor hooks in ``hooks.py``.
"""

from __future__ import annotations

import itertools
import weakref
from typing import NamedTuple

from .hooks import HookList, RemovableHandle

__all__ = [
    "Node",
    "Edge",
    "GraphRoot",
    "InputMetadata",
    "UINT64_MAX",
    "GradientEdge",
    "get_gradient_edge",
    "increment_version",
    "grad_accumulator",
    "try_get_grad_accumulator",
]

UINT64_MAX = 2**64 - 1

# NOTE [sequence_nr]
# PyTorch takes a node's sequence number from a per-thread counter when the forward op runs, so
# that later ops run first in backward. nbgrad uses one process-wide counter (itertools.count is
# atomic under the GIL): the order within a thread is the same, and numbers stay unique across
# threads, which also makes them stable node ids for the notebook's snapshots.
_sequence_counter = itertools.count()
next_sequence_nr = _sequence_counter.__next__
"""Take the next sequence number: above every node made so far, below every node made later
(the notebook's recorder marks where its block starts and ends with it)."""


class Edge(NamedTuple):
    """``(function, input_nr)``: which input of which Node a gradient flows into."""

    function: Node | None
    input_nr: int


NO_EDGE = Edge(None, 0)


# NOTE [Edges stored as two tuples]
# A node keeps its next edges as two parallel tuples rather than a tuple of Edge objects:
# ``_next_fns`` (the Node, or None, of each forward input) and ``_next_nrs`` (the input_nr of
# each). Every Edge and the tuple holding them are objects the cyclic GC tracks, and they
# outlive the forward pass with the graph: three or so per op, each scanned by every collection
# until the graph is freed. The numbers are ints only, and one shared tuple serves every node
# with the same numbers (``edge_numbers``), so a node adds one tracked tuple to its own object.
# ``next_edges()``, ``next_functions`` and ``_next_edges`` build Edges from the two on demand.
_EDGE_NUMBERS: dict = {}
_ZERO_NUMBERS = tuple((0,) * n for n in range(9))


def edge_numbers(nrs) -> tuple:
    """The one shared tuple equal to ``tuple(nrs)`` (see NOTE [Edges stored as two tuples])."""
    nrs = tuple(nrs)
    shared = _EDGE_NUMBERS.get(nrs)
    if shared is None:
        if len(_EDGE_NUMBERS) > 4096:
            _EDGE_NUMBERS.clear()
        shared = _EDGE_NUMBERS[nrs] = nrs
    return shared


for _zeros in _ZERO_NUMBERS:
    _EDGE_NUMBERS[_zeros] = _zeros


def zero_numbers(n: int) -> tuple:
    """The shared ``(0,) * n``: the input numbers of a node whose inputs are all outputs 0."""
    return _ZERO_NUMBERS[n] if n < 9 else edge_numbers((0,) * n)


def _new_edge(function, input_nr):
    return _tuple_new(Edge, (function, input_nr))


_tuple_new = tuple.__new__


class GradientEdge(NamedTuple):
    """``(node, output_nr)``: where a tensor's gradient goes, usable in place of the tensor in
    ``autograd.grad`` and ``autograd.backward`` (PyTorch's ``torch.autograd.graph.GradientEdge``):
    it keeps pointing at the same node after the tensor is modified in place or freed."""

    node: Node
    output_nr: int


def increment_version(tensor):
    """Bump ``tensor``'s version counter, as an in-place op would (for code that changes a
    tensor's memory behind autograd's back, so that saved-tensor checks see it)."""
    tensor._counter()[0] += 1


def grad_accumulator(tensor):
    """A leaf's AccumulateGrad, made if it has none (PyTorch's C++
    ``impl::grad_accumulator``); None for a tensor that has a ``grad_fn``, that does not
    require grad, or that can get no gradient (a no-grad view). The leaf refers to it weakly
    until a hook is registered on it (see NOTE [A leaf and its AccumulateGrad])."""
    if tensor.grad_fn is not None or not tensor.requires_grad:
        return None
    return tensor._get_grad_accumulator()


def try_get_grad_accumulator(tensor):
    """A leaf's AccumulateGrad if one is alive, else None; never makes one (PyTorch's C++
    ``impl::try_get_grad_accumulator``)."""
    if tensor.grad_fn is not None:
        return None
    return tensor._grad_accumulator


def get_gradient_edge(tensor) -> GradientEdge:
    """The GradientEdge of ``tensor``: its ``grad_fn`` (or, for a leaf, its AccumulateGrad)."""
    if not tensor.requires_grad:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require "
            "gradients"
        )
    if tensor.grad_fn is not None:
        return GradientEdge(tensor.grad_fn, tensor._output_nr)
    return GradientEdge(tensor._pin_grad_accumulator(), 0)


class InputMetadata(NamedTuple):
    """Shape, dtype and device of a gradient that a node expects (one per forward output)."""

    shape: tuple
    dtype: object
    device: object


class Node:
    """A backward function in the graph (``torch.autograd.graph.Node``).

    ``next_functions`` holds one ``(Node or None, input_nr)`` per forward input;
    ``_sequence_nr()`` orders ready nodes in the engine (higher runs first).
    """

    __slots__ = (
        "_next_fns",
        "_next_nrs",
        "_sequence_nr_",
        "_input_metadata_",
        "_pre_hooks",
        "_post_hooks",
        "_tensor_pre_hooks",
        "_retains_grad_hooks",
        "_metadata",
        "__weakref__",
    )

    _name = None
    _apply_arrays = None  # a row's node has one: NOTE [Gradients carried as arrays]

    def __init__(self, next_edges=(), sequence_nr=None):
        if next_edges:
            self._next_edges = next_edges
        else:  # (an AccumulateGrad: one for each leaf used in a forward pass)
            self._next_fns = self._next_nrs = ()
        self._sequence_nr_ = next_sequence_nr() if sequence_nr is None else sequence_nr
        self._input_metadata_ = ()
        self._pre_hooks = None
        self._post_hooks = None
        self._tensor_pre_hooks = None
        self._retains_grad_hooks = None
        self._metadata = None

    # -- identity ---------------------------------------------------------------------------
    def name(self) -> str:
        """PyTorch's name for this node, e.g. ``'MulBackward0'``."""
        return self._name or type(self).__name__

    def _sequence_nr(self) -> int:
        return self._sequence_nr_

    @property
    def sequence_nr(self) -> int:
        return self._sequence_nr_

    @property
    def next_functions(self):
        return tuple(zip(self._next_fns, self._next_nrs))

    def next_nodes(self) -> tuple:
        """The Node (or None) of each forward input: ``next_functions`` without the input
        numbers, the tuple the node keeps (nothing made per read, for tools that read every
        node of a large graph, as the notebook's recorder does)."""
        return self._next_fns

    def next_edges(self) -> tuple:
        """The ``Edge`` of each forward input (PyTorch's C++ ``Node::next_edges()``), made on
        each read (see NOTE [Edges stored as two tuples])."""
        return tuple(map(_new_edge, self._next_fns, self._next_nrs))

    @property
    def _next_edges(self) -> tuple:
        return tuple(map(_new_edge, self._next_fns, self._next_nrs))

    @_next_edges.setter
    def _next_edges(self, edges):
        """Store ``edges`` (Edges or ``(function, input_nr)`` pairs) as the two tuples."""
        edges = tuple(edges)
        self._next_fns = tuple(e[0] for e in edges)
        self._next_nrs = edge_numbers(e[1] for e in edges)

    @property
    def num_outputs(self) -> int:
        """How many gradients ``apply`` returns (one per next edge)."""
        return len(self._next_fns)

    @property
    def _input_metadata(self):
        return self._input_metadata_

    @property
    def input_metadata(self):
        return self._input_metadata_

    @property
    def metadata(self) -> dict:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    # -- hooks ------------------------------------------------------------------------------
    def register_prehook(self, fn) -> RemovableHandle:
        """Register ``fn(grad_outputs) -> new grad_outputs or None``, run before the node.

        See NOTE [Hook order] in ``nbgrad/autograd/engine.py``.
        """
        if self._pre_hooks is None:
            self._pre_hooks = HookList()
        return RemovableHandle(self._pre_hooks, fn, "node_prehook", owner=self)

    def register_hook(self, fn) -> RemovableHandle:
        """Register ``fn(grad_inputs, grad_outputs) -> new grad_inputs or None``, run after it."""
        if self._post_hooks is None:
            self._post_hooks = HookList()
        return RemovableHandle(self._post_hooks, fn, "node_hook", owner=self)

    def _register_tensor_pre_hook(self, fn, output_nr, tensor) -> RemovableHandle:
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = HookList()
        return RemovableHandle(
            self._tensor_pre_hooks, fn, "tensor_hook", owner=tensor, output_nr=output_nr
        )

    # NOTE [Reading a node's hooks]
    # Tools (the notebook's graph view and hook editor) list what is registered on a node. As
    # PyTorch's C++ ``Node::pre_hooks()``, ``post_hooks()``, ``tensor_pre_hooks()`` and
    # ``retains_grad_hooks()``, these read-only accessors return copies in run order; the
    # handles they hold are the live ones (``handle.enabled``, ``handle.remove()``).
    def pre_hooks(self) -> tuple:
        """The handles of ``register_prehook``, in the order they run."""
        return tuple(self._pre_hooks or ())

    def post_hooks(self) -> tuple:
        """The handles of ``register_hook``, in the order they run."""
        return tuple(self._post_hooks or ())

    def tensor_pre_hooks(self) -> tuple:
        """The handles of the tensor hooks on this node's outputs (``Tensor.register_hook``);
        ``handle.owner`` is the tensor, ``handle.output_nr`` which output it is."""
        return tuple(self._tensor_pre_hooks or ())

    def retains_grad_hooks(self) -> dict:
        """``{output_nr: tensor}`` for each live output that called ``retain_grad()``."""
        out = {}
        for output_nr, ref in (self._retains_grad_hooks or {}).items():
            tensor = ref()
            if tensor is not None:
                out[output_nr] = tensor
        return out

    def saved_values(self) -> dict:
        """``{name: value}`` for each value this node saved for backward, as stored, without
        unpacking: a :class:`SavedTensor` (a freed one once the graph is released, see
        ``SavedTensor.is_freed``), a list of them, or a plain value (a number, a shape, None).
        The names are those of PyTorch's ``_saved_<name>`` attributes; reading never raises."""
        return {}

    def _add_retains_grad_hook(self, tensor, output_nr):
        if self._retains_grad_hooks is None:
            self._retains_grad_hooks = {}
        self._retains_grad_hooks[output_nr] = weakref.ref(tensor)

    # -- execution ----------------------------------------------------------------------------
    def apply(self, grads):
        """Gradients w.r.t. the forward outputs -> gradients w.r.t. the forward inputs."""
        raise NotImplementedError

    def __call__(self, *grads):
        """Run the node on one gradient per input (``grad_fn(g)``), checked as PyTorch's."""
        n = len(self._input_metadata_)
        if len(grads) != n:
            raise TypeError(f"{self.name()}: expected {n} arguments, got {len(grads)} instead")
        return self.apply(list(grads))

    def release_variables(self):
        """Free saved values after a backward without ``retain_graph``."""

    def _saved_tensor_names(self):
        return ()


class GraphRoot(Node):
    """The root when backward starts from several tensors: it hands out their gradients."""

    __slots__ = ("_grads",)

    def __init__(self, edges, grads):
        super().__init__(edges, sequence_nr=UINT64_MAX)
        self._grads = list(grads)

    def apply(self, grads):
        return list(self._grads)
