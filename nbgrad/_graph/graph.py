"""The backward graph: ``Node``, ``Edge``, ``GraphRoot``, ``AccumulateGrad`` and saved tensors.

Mirrors ``torch/csrc/autograd/function.h`` (Node), ``edge.h``, ``functions/accumulate_grad.h``,
``saved_variable.h`` and ``torch/autograd/graph.py``. A Node is a backward function: it takes
the gradients of its forward outputs and returns the gradients of its forward inputs, which
flow along ``next_functions`` (one Edge per forward input) to the next nodes.

It knows no Tensor class: see NOTE [The Tensor class, bound late].
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import threading
import weakref
from typing import NamedTuple

import numpy as np

from nbgrad import dtypes
from nbgrad.backend import get_xp

from .anomaly_mode import _state as _anomaly_state
from .grad_mode import _inference_tensors
from .grad_mode import _state as _grad_state
from .hooks import HookList, RemovableHandle
from .observer import current as _running

__all__ = [
    "Node",
    "Edge",
    "GraphRoot",
    "AccumulateGrad",
    "RemovableHandle",
    "SavedTensor",
    "saved_tensors_hooks",
    "disable_saved_tensors_hooks",
    "InputMetadata",
    "UINT64_MAX",
    "GradientEdge",
    "get_gradient_edge",
    "increment_version",
    "grad_accumulator",
    "try_get_grad_accumulator",
]

UINT64_MAX = 2**64 - 1

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


class AccumulateGrad(Node):
    """The node of a leaf: it writes the incoming gradient into ``variable.grad``.

    It is the only code that writes ``.grad`` (besides ``retain_grad``). Its ``sequence_nr`` is
    2**64 - 1, so a leaf's gradient is stored as soon as it is ready.
    """

    # NOTE [The name of AccumulateGrad]
    # PyTorch's ``name()`` of this node is its C++ name, "torch::autograd::AccumulateGrad"
    # (its Python class and repr say AccumulateGrad). nbgrad's ``name()`` is "AccumulateGrad",
    # by contract (API.md, section 3): the name a learner reads in every printed graph, hook
    # log and widget. It is the one node name that differs; code ported from PyTorch that
    # compares names can strip the prefix (``name().removeprefix("torch::autograd::")``).

    __slots__ = ("variable",)

    def __init__(self, variable):
        super().__init__((), sequence_nr=UINT64_MAX)
        self.variable = variable
        # the dtype its gradient gets (NOTE [grad_dtype]; None: any, which the engine asks)
        self._input_metadata_ = (variable._metadata_tuple(getattr(variable, "_grad_dtype", None)),)

    def register_prehook(self, fn) -> RemovableHandle:
        self.variable._pin_grad_accumulator()  # see NOTE [A leaf and its AccumulateGrad]
        return super().register_prehook(fn)

    def register_hook(self, fn) -> RemovableHandle:
        self.variable._pin_grad_accumulator()
        return super().register_hook(fn)

    def apply(self, grads):
        """Accumulate, then the post-accumulate-grad hooks, each reported to the observer of
        the pass that runs this node (NOTE [One engine path]) with the ``.grad`` before (a
        copy: accumulation and hooks may change it in place) and after."""
        grad = grads[0]
        var = self.variable
        if grad is None:
            return ()
        # out of the input buffer while it is accumulated: see NOTE [Stealing the gradient]
        grads[0] = None
        sole = _STEAL and _getrefcount(grad) == _SOLE_LOCAL
        task = _running.graph_task
        observer = task.observer if task is not None else None
        if observer is None:
            _accumulate_into_grad(var, grad, sole)
        else:
            old = var._grad
            before = old._detached_copy() if old is not None else None
            _accumulate_into_grad(var, grad, sole)
            observer.grad_accumulated(task, self, var, grad, before, var._grad)
        grads[0] = grad  # (what post hooks get as grad_outputs)
        hooks = var._post_accumulate_grad_hooks
        if hooks:
            for h in tuple(hooks):
                if not h.enabled:
                    continue
                if observer is None:
                    out = h.fn(var)
                else:
                    before = var._grad._detached_copy() if var._grad is not None else None
                    out = h.fn(var)
                    observer.hook(task, "post_accumulate_grad", self, h, before, var._grad)
                if out is not None:
                    raise RuntimeError("Tensor post accumulate grad hooks should return None.")
        return ()


_accumulate_lock = threading.Lock()  # several threads may run backward into one leaf


def _accumulate_into_grad(var, grad, sole=False):
    """``AccumulateGrad::accumulateGrad``: store or add ``grad`` into ``var.grad``; ``sole``:
    nothing but the caller holds the tensor ``grad`` (NOTE [Stealing the gradient])."""
    with _accumulate_lock:
        _accumulate_locked(var, grad, sole)


def _accumulate_locked(var, grad, sole):
    old = var._grad
    if _grad_state.enabled:  # create_graph: keep the graph of the gradient
        if old is not None:
            var._grad = old + grad
        elif grad._requires_grad:
            # a copy, never the gradient itself (which may be the user's tensor or another
            # leaf's .grad), differentiable as PyTorch's: CopyBackwards(None, grad's node)
            var._grad = grad.new_empty(grad.shape).copy_(grad)
        else:
            var._grad = grad._detached_copy()
        return
    if old is None:
        if not var._data.flags.c_contiguous and _dense(var._data):
            var._grad = _in_layout_of(var, grad)
        else:
            var._grad = (
                grad._detached_alias() if sole and _can_steal(grad) else grad._detached_copy()
            )
    elif old._requires_grad:
        var._grad = old.detach() + grad
    else:
        old._add_inplace_data(grad)


def _dense(a):
    """Whether ``a``'s elements fill its memory without gaps or overlaps, in some order of
    dimensions (a transpose of a contiguous array, say)."""
    expected = a.itemsize
    for size, stride in sorted(zip(a.shape, a.strides), key=lambda d: d[1]):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True


# NOTE [The layout of .grad]
# PyTorch's layout contract (``utils::obeys_layout_contract`` in AccumulateGrad): a leaf that is
# dense gets ``.grad`` in its own strides, a leaf that is not dense a row-major ``.grad``,
# whatever the layout of the gradient that arrives (``a * b`` hands ``a`` a gradient in ``b``'s
# layout). A dense leaf that is not row-major gets a copy in its strides (``_in_layout_of``);
# for the others, a stolen gradient must already be row-major (``_can_steal``), and a copy is.
def _in_layout_of(var, grad):
    """A copy of ``grad`` laid out as ``var`` (PyTorch's layout contract for ``.grad``: a leaf
    that is dense but not contiguous, a transposed weight say, gets its gradient in its own
    strides, so that ``p.grad.stride() == p.stride()``)."""
    out = get_xp(var._device).empty_like(var._data, dtype=grad._data.dtype)  # order "K"
    out[...] = grad._data
    return _wrap(out, var._device)


# NOTE [Stealing the gradient]
# PyTorch's AccumulateGrad stores the incoming gradient itself as ``.grad`` when nothing else
# holds it (``use_count() == 1``) and copies it otherwise, so that a later accumulation into
# ``.grad`` in place cannot change a tensor someone else sees (another leaf fed the same
# gradient, a hook that kept it, the user's own tensor). nbgrad asks CPython the same question,
# with one rule that a reader checks within one function: a value is held by nothing else when
# its reference count is that of a local variable nothing else refers to, ``_SOLE_LOCAL``: 2,
# the local and ``sys.getrefcount``'s own argument. For that, the holder counted must be a
# local of the function that asks, so ``AccumulateGrad.apply`` first takes the gradient out of
# its input buffer (the list the engine hands it) and then counts the tensor: the engine's
# frames name the buffer, never the gradient in it, when a node runs (NOTE [A plain pass]
# clears its own names before it). ``_can_steal`` counts the tensor's array the same way: the
# tensor's ``_data`` and its own local ``data`` (``_SOLE_LOCAL + 1``); a carried array routed
# to two buffers (``AddBackward0`` hands one array to both of its inputs) is held by the other
# buffer too, and copied. The input buffer's sums in place follow the same rule (NOTE
# [Accumulate in place]). CPython before 3.14 only, whose stack holds a reference for each name
# read (from 3.14 some reads borrow one, and the count of a sole local would be 1); elsewhere
# the gradient is copied and buffers sum into new arrays.
# tests/autograd/test_stealing.py feeds gradients to several leaves and to hooks that keep
# them, in plain and general passes (no ``.grad`` may share memory a user can see), and
# measures with tracemalloc that a gradient nothing else holds is stolen and summed in place.
_STEAL = sys.implementation.name == "cpython" and sys.version_info < (3, 14)
_SOLE_LOCAL = 2
_getrefcount = sys.getrefcount


def _can_steal(grad):
    """Whether ``.grad`` may take the array of ``grad``, a tensor nothing else holds, without a
    copy: the tensor is the array's only holder, the array owns its memory and may be written,
    and the gradient has no graph (NOTE [Stealing the gradient])."""
    data = grad._data
    return (
        type(data) is np.ndarray
        and data.base is None
        and data.flags.writeable
        and data.flags.c_contiguous  # see NOTE [The layout of .grad]
        and _getrefcount(data) == _SOLE_LOCAL + 1
        and not grad._requires_grad
    )


# -- saved tensors ------------------------------------------------------------------------

ERR_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


class _Freed:
    __slots__ = ()

    def __repr__(self):
        return "<freed>"


FREED = _Freed()


class _SavedHooksState(threading.local):
    stack = ()
    disabled = None  # the message of ``disable_saved_tensors_hooks`` while it is in force


_saved_hooks = _SavedHooksState()


class _SavedHooksUsed:
    """Whether any thread ever entered ``saved_tensors_hooks``: until then a SavedTensor skips
    reading the thread-local stack (a plain attribute read instead, on every saved tensor)."""

    entered = False


_saved_hooks_used = _SavedHooksUsed()


class saved_tensors_hooks:
    """Context manager setting ``pack_hook`` / ``unpack_hook`` for tensors saved for backward.

    Mirrors ``torch.autograd.graph.saved_tensors_hooks``: every tensor a node saves inside the
    block is passed to ``pack_hook``; what it returns is stored, and ``unpack_hook`` turns it back
    into a tensor when backward needs it.
    """

    def __init__(self, pack_hook, unpack_hook):
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("saved_tensors_hooks() expects two callables: pack_hook, unpack_hook")
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _saved_hooks.disabled is not None:
            raise RuntimeError(_saved_hooks.disabled)
        _saved_hooks_used.entered = True
        _saved_hooks.stack = _saved_hooks.stack + ((self.pack_hook, self.unpack_hook),)
        return self

    def __exit__(self, *exc):
        _saved_hooks.stack = _saved_hooks.stack[:-1]
        return False


class disable_saved_tensors_hooks(contextlib.ContextDecorator):
    """Inside it, setting saved-tensor hooks raises ``RuntimeError(error_message)``, as
    ``torch.autograd.graph.disable_saved_tensors_hooks`` (which also refuses to start while
    such hooks are in force). Also a decorator."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        if _saved_hooks.stack:
            raise RuntimeError(self.error_message)
        self._prev = _saved_hooks.disabled
        _saved_hooks.disabled = self.error_message
        return self

    def __exit__(self, *exc):
        _saved_hooks.disabled = self._prev
        return False


ERR_HOOKS_SET = (
    "Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one "
    "pair of hooks is allowed at a time."
)
ERR_HOOKS_FREED = (
    "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate values "
    "of the graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or if you need to "
    "access saved variables after calling backward."
)
ERR_HOOKS_NONE = "Calling register_hooks on a saved tensor with value None is forbidden"
ERR_PACK_INPLACE = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack "
    "hook can not be modified by in-place operations as this can lead to unexpected side-effects. "
    "Please open an issue if you need to perform in-place operations on the input to a pack hook."
)
ERR_INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
    "`torch.inference_mode()`."
)
ERR_DETACHED = (
    "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This is "
    "not supported, please use out-of-place `.detach()` instead"
)


class SavedTensor:
    """A tensor saved for backward (``SavedVariable``; in Python, PyTorch's
    ``torch._C._autograd.SavedTensor``, reached as ``grad_fn._raw_saved_self``).

    It remembers its version to detect in-place changes, and for a node's own output stores
    only the data, no reference to the node (no cycle). ``register_hooks(pack, unpack)`` packs
    it now; ``data`` is what it holds (the packed object once it has hooks; None once freed).
    """

    __slots__ = (
        "_tensor",
        "_data",
        "_counter",
        "_version",
        "_is_output",
        "_is_leaf",
        "_output_nr",
        "_requires_grad",
        "_device",
        "_grad_fn_name",
        "_packed",
        "_unpack_hook",
        "_weak_grad_fn",
        "_accumulator",
        "_freed",
        "_view_grad_fn",
    )

    def __init__(self, tensor, is_output=False, grad_fn_name=None):
        self._freed = False
        self._view_grad_fn = None  # see NOTE [In place on a view: the saved result]
        if tensor is None:  # PyTorch's default-constructed SavedVariable: a saved None
            self._tensor = self._data = self._packed = self._unpack_hook = None
            self._counter = self._version = self._grad_fn_name = None
            self._is_output = self._requires_grad = False
            self._is_leaf = True
            return
        if _inference_tensors.made and getattr(tensor, "_inference", False):
            raise RuntimeError(ERR_INFERENCE_SAVED)  # see NOTE [Inference tensors]
        counter = tensor._version_counter
        if counter is None:  # see NOTE [Lazy version counters]
            counter = tensor._version_counter = [0]
        self._counter = counter
        self._version = counter[0]
        self._is_output = is_output
        self._output_nr = tensor._output_nr
        self._requires_grad = tensor._requires_grad
        self._packed = None
        self._unpack_hook = None
        grad_fn = tensor.grad_fn
        self._is_leaf = grad_fn is None
        # an input saved as itself is named by its grad_fn when an error needs it (see
        # _raise_version_error); a packed one or an output by the name it has now
        self._grad_fn_name = grad_fn_name
        if _saved_hooks_used.entered and _saved_hooks.stack:
            stack = _saved_hooks.stack
            if grad_fn_name is None and grad_fn is not None:
                self._grad_fn_name = grad_fn.name()
            self._tensor = self._data = None
            if is_output:
                self._pack(stack[-1], tensor.detach(), None)
            else:
                self._pack(stack[-1], tensor, tensor)
            return
        if is_output:
            self._tensor = None
            self._data = tensor._data
            self._device = tensor._device
        else:
            self._tensor = tensor
            self._data = None
        self._weak_grad_fn = None

    @classmethod
    def _of_input(cls, tensor, saved_version):
        """The SavedTensor an input stored as itself stands for (NOTE [A saved input stored
        as itself]): ``saved_version`` is what ``saved_input_version`` gave when it was saved."""
        saved = cls.__new__(cls)
        saved._freed = False
        saved._view_grad_fn = None
        saved._tensor = tensor
        saved._data = saved._packed = saved._unpack_hook = saved._grad_fn_name = None
        saved._weak_grad_fn = None
        saved._counter = tensor._counter()
        saved._is_leaf = saved_version >= 0
        saved._version = saved_version if saved_version >= 0 else ~saved_version
        saved._is_output = False
        saved._output_nr = tensor._output_nr
        saved._requires_grad = tensor._requires_grad
        return saved

    def _pack(self, hooks, value, original):
        """``set_hooks_and_pack_data``: ``pack(value)`` in no-grad mode, which must not modify
        ``value`` in place; remembers what the unpacked tensor will stand for: ``original``'s
        grad_fn or leaf (None for a node's output, which stands for the node's)."""
        pack, unpack = hooks
        self._unpack_hook = unpack
        stack = _saved_hooks.stack
        _saved_hooks.stack = ()  # a pack hook's own saves are not packed again
        prev = _grad_state.enabled
        _grad_state.enabled = False
        try:
            self._packed = pack(value)
        finally:
            _grad_state.enabled = prev
            _saved_hooks.stack = stack
        if self._counter[0] != self._version:
            raise RuntimeError(ERR_PACK_INPLACE)
        # what the unpacked tensor will be, for autograd: the original (see NOTE [Unpacked is
        # the original])
        grad_fn = original.grad_fn if original is not None else None
        self._weak_grad_fn = grad_fn
        self._accumulator = None
        if original is not None and grad_fn is None and self._requires_grad:
            self._accumulator = weakref.ref(original._get_grad_accumulator())

    # -- the Python object (``torch._C._autograd.SavedTensor``) ---------------------------------
    def register_hooks(self, *args):
        """Pack the saved tensor with ``pack_hook`` now; backward unpacks it with
        ``unpack_hook``. Once per saved tensor, before it is freed."""
        if len(args) != 2 or not all(callable(a) for a in args):
            raise TypeError(
                "register_hooks(): incompatible function arguments. The following argument "
                "types are supported:\n    1. (self: SavedTensor, arg0: Callable, "
                f"arg1: Callable) -> None\n\nInvoked with: {self!r}, "
                + ", ".join(repr(a) for a in args)
            )
        if self._unpack_hook is not None:
            raise RuntimeError(ERR_HOOKS_SET)
        if self._freed:
            raise RuntimeError(ERR_HOOKS_FREED)
        if self._counter is None:
            raise RuntimeError(ERR_HOOKS_NONE)
        original = self._tensor
        if original is not None:  # the original: packed detached, standing for it
            if self._grad_fn_name is None and original.grad_fn is not None:
                self._grad_fn_name = original.grad_fn.name()
            self._requires_grad = original._requires_grad
            self._output_nr = original._output_nr
            value = original.detach()
        else:  # a node's output: its data, sharing its version counter
            value = self._data_tensor()
        self._tensor = self._data = None
        self._pack(args, value, original)

    @property
    def data(self):
        """What is saved: the packed object (with hooks), the original tensor, or a node's
        output detached; None once freed."""
        if self._freed:
            return None
        if self._unpack_hook is not None:
            return self._packed
        if self._tensor is not None or not self._is_output:
            return self._tensor
        return self._data_tensor()

    @property
    def unpack_hook(self):
        return self._unpack_hook

    # -- read-only facts, for tools (never raise, never unpack) --------------------------------
    @property
    def shape(self) -> tuple:
        """The saved tensor's shape (``()`` once freed; a packed object's own ``shape``)."""
        return tuple(self._shape())

    @property
    def dtype(self):
        """The saved tensor's dtype, or None (a saved None, a freed or packed one)."""
        src = self._tensor._data if self._tensor is not None else self._data
        return None if src is None else dtypes.from_numpy_dtype(src.dtype)

    @property
    def version(self):
        """The version counter's value when the tensor was saved (None for a saved None);
        backward raises if the tensor's version differs then."""
        return self._version

    @property
    def is_output(self) -> bool:
        """Whether the node saved its own output (stored as data only: no cycle)."""
        return bool(self._is_output)

    @property
    def is_freed(self) -> bool:
        """Whether the graph was released (after a backward without ``retain_graph``)."""
        return self._freed

    def _data_tensor(self):
        """A saved output's data as a tensor outside the graph (PyTorch's ``tensor_data()``)."""
        t = _wrap(self._data, self._device)
        t._version_counter = self._counter  # in place on it bumps the output's version
        return t

    def _free(self):
        """Drop what is saved (``SavedVariable::reset_data``): the graph was released."""
        self._freed = True
        self._tensor = self._data = self._packed = self._unpack_hook = None
        self._weak_grad_fn = None

    # -- backward -----------------------------------------------------------------------------
    def unpack(self, node):
        """The saved tensor, checked against in-place changes (``SavedVariable::unpack``)."""
        if self._unpack_hook is not None:  # as PyTorch: no version check through hooks
            t = self._unpack_hook(self._packed)
            if not isinstance(t, _Tensor):
                raise TypeError(
                    f"Output of saved tensor unpack_hook expected to be a Tensor but got result "
                    f"of type {type(t).__name__}"
                )
            # NOTE [Unpacked is the original]
            # As ``SavedVariable::unpack``: whatever the hooks did to the value, the unpacked
            # tensor stands for the tensor that was saved, so a gradient taken through it (a
            # double backward) flows to the original's grad_fn or leaf, never through the
            # pack hook's own ops.
            if self._is_output:
                return t._alias_with_grad_fn(*self._output_of(node))
            if self._weak_grad_fn is not None:
                return t._alias_with_grad_fn(self._weak_grad_fn, self._output_nr)
            if not self._requires_grad and not t._requires_grad:
                return t  # nothing to stand for: the hook's tensor itself, as PyTorch
            acc = self._accumulator() if self._accumulator is not None else None
            return t._alias_as_leaf(self._requires_grad, acc)
        if self._freed:
            raise RuntimeError(ERR_FREED)
        if self._counter is None:  # a saved None
            return None
        tensor = self._tensor
        if tensor is not None and tensor.grad_fn is None and not self._is_leaf:
            raise RuntimeError(ERR_DETACHED)
        if self._counter[0] != self._version:
            self._raise_version_error()
        if self._is_output:
            owner, output_nr = self._output_of(node)
            return _Tensor._from_saved_output(
                self._data, self._device, owner, output_nr, self._counter
            )
        return tensor

    # NOTE [In place on a view: the saved result]
    # An in-place op on a view that saves its result (``relu_``) is wrapped in CopySlices, and
    # the view's grad_fn is then the view op replayed on the base. As PyTorch's SavedVariable
    # with ``is_inplace_on_view``, the saved result stands for the view as it is after the op
    # (a weak reference to that grad_fn), not for the wrapped node: a double backward through
    # the result goes through CopySlices, which runs the wrapped node inside, so the wrapped
    # node is never also a node of the graph (where it would run, and be released, twice).
    def _output_of(self, node):
        """The node and output number an unpacked saved output stands for."""
        ref = self._view_grad_fn
        if ref is not None:
            fn = ref()
            if fn is not None:
                return fn, 0
        return node, self._output_nr

    def _mark_inplace_on_view(self, view_grad_fn):
        self._view_grad_fn = weakref.ref(view_grad_fn)

    def _raise_version_error(self):
        shape = list(self._shape())
        dtype = self._dtype_name()
        # as PyTorch: a saved input is named by its grad_fn now (the in-place op that changed
        # it), a saved output by the node that produced it
        name, output_nr = self._grad_fn_name, self._output_nr
        if self._tensor is not None and self._tensor.grad_fn is not None:
            name, output_nr = self._tensor.grad_fn.name(), self._tensor._output_nr
        which = f", which is output {output_nr} of {name}," if name else ""
        if _anomaly_state.enabled:  # the warning above the error shows the forward traceback
            hint = (
                "the backtrace further above shows the operation that failed to compute its "
                "gradient. The variable in question was changed in there or anywhere later. "
                "Good luck!"
            )
        else:
            hint = (
                "enable anomaly detection to find the operation that failed to compute its "
                "gradient, with nbgrad.autograd.set_detect_anomaly(True)."
            )
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [nbgrad.{dtype} {shape}]{which} is at version "
            f"{self._counter[0]}; expected version {self._version} instead. Hint: {hint}"
        )

    def _shape(self):
        if self._tensor is not None:
            return self._tensor.shape
        if self._data is not None:
            return self._data.shape
        return getattr(self._packed, "shape", ())

    def _dtype_name(self):
        src = self._tensor._data if self._tensor is not None else self._data
        if src is None:
            return "Tensor"
        return dtypes.from_numpy_dtype(src.dtype)._legacy


def unpack_saved(value, node):
    """Unpack one saved slot: a plain value, a SavedTensor, or FREED (raises)."""
    if type(value) is SavedTensor:
        return value.unpack(node)
    if value is FREED:
        raise RuntimeError(ERR_FREED)
    return value
