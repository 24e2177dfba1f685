"""``AccumulateGrad``: the node of a leaf, the only code that writes ``.grad``.

Mirrors ``torch/csrc/autograd/functions/accumulate_grad.h``.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

from nbgrad.backend import get_xp

from . import tensor_class as _tc
from .grad_state import _state as _grad_state
from .hooks import RemovableHandle
from .node import UINT64_MAX, Node
from .observer import current as _running

__all__ = ["AccumulateGrad"]


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
    return _tc._wrap(out, var._device)


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
