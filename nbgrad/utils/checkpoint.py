"""``nbgrad.utils.checkpoint``: activation checkpointing, as PyTorch's
``torch/utils/checkpoint.py``.

A checkpointed function keeps no activations from its forward: backward runs the function
again to get them. Two ways, as in PyTorch:

- ``use_reentrant=True``: ``CheckpointFunction``, a custom Function whose forward runs under
  ``no_grad`` and whose backward runs the function again under ``enable_grad`` and calls
  ``nbgrad.autograd.backward`` on what it built: a backward inside a backward (reentrant).
- ``use_reentrant=False``: saved-tensor hooks (``_checkpoint_hook``) that keep a placeholder
  for each tensor saved in forward; the first unpack in a backward pass runs the function
  again under ``_recomputation_hook``, which files each tensor saved there under its
  placeholder, and stops as soon as the last one is in (early stop). See NOTE [Nestable
  checkpoint].
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import traceback
import uuid
import warnings
import weakref
from collections import defaultdict

from nbgrad._functions import random as _random
from nbgrad._graph.grad_state import enable_grad, is_grad_enabled, no_grad
from nbgrad._graph.node import UINT64_MAX, next_sequence_nr
from nbgrad._graph.observer import GraphObserver, backward_observer, forward_observer, observe
from nbgrad._graph.observer import current as _current
from nbgrad.autograd import _is_checkpoint_valid
from nbgrad.autograd import backward as _backward
from nbgrad.autograd.function import Function
from nbgrad.autograd.graph import SavedTensor, saved_tensors_hooks
from nbgrad.autograd.graph_task import current_graph_task_id
from nbgrad.nn import Sequential
from nbgrad.tensor import Tensor

__all__ = [
    "checkpoint",
    "checkpoint_sequential",
    "CheckpointError",
    "CheckpointFunction",
    "check_backward_validity",
    "detach_variable",
    "noop_context_fn",
    "set_checkpoint_early_stop",
    "set_checkpoint_debug_enabled",
    "GraphExecGroup",
]

_DEFAULT_DETERMINISM_MODE = "default"

_checkpoint_debug_enabled: bool | None = None
_enable_checkpoint_early_stop: bool | None = None


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None):
    """Whether non-reentrant checkpoints made inside it report the ops of the forward and of
    the recomputation when they detect non-determinism; overrides each call's ``debug``
    (``None`` defers to it)."""
    global _checkpoint_debug_enabled
    prev = _checkpoint_debug_enabled
    _checkpoint_debug_enabled = enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = prev


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Whether non-reentrant checkpoints made inside it stop recomputing once every tensor
    they need is back; overrides each call's ``early_stop``. Only forward needs to run inside
    it: the setting is read when the checkpoint is made."""
    global _enable_checkpoint_early_stop
    prev = _enable_checkpoint_early_stop
    _enable_checkpoint_early_stop = enable
    try:
        yield
    finally:
        _enable_checkpoint_early_stop = prev


def detach_variable(inputs):
    """Each tensor of the tuple ``inputs`` detached, keeping its ``requires_grad``."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(
            "Only tuple of tensors is supported. Got Unsupported input type: "
            f"{type(inputs).__name__}"
        )
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs):
    """Warn when no input requires grad: a reentrant checkpoint then gives no gradients."""
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn(
            "None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2
        )


# NOTE [Checkpoint and the random state]
# With ``preserve_rng_state`` (the default) a checkpoint stashes the generator's state before
# its forward, and the recomputation runs from that state, so that dropout and ``rand`` draw
# the same numbers again; the state around the recomputation is restored after it (PyTorch's
# ``fork_rng``). nbgrad draws every random number on the host, for every device, from the one
# default generator, so its state is all there is to stash: PyTorch's per-device CUDA states
# have no counterpart here.
@contextlib.contextmanager
def _forward_rng_state(preserve_rng_state, fwd_state):
    """Run the block from the generator state ``fwd_state``; restore the state around it."""
    if not preserve_rng_state:
        yield
        return
    surrounding = _random.get_rng_state()
    _random.set_rng_state(fwd_state)
    try:
        yield
    finally:
        _random.set_rng_state(surrounding)


# NOTE [Recomputation, seen]
# Tools see a checkpointed segment as one group and its recomputation as it happens. Each
# checkpoint has an id. While something watches forward calls (the notebook's recorder), the
# nodes a segment's forward made carry it as ``metadata["checkpoint"]``: those reached from its
# outputs whose sequence numbers were taken during its forward (the reentrant kind makes one
# node, CheckpointFunctionBackward). A recomputation is reported to the observer of the pass it
# runs in, as ``recompute_start`` and ``recompute_end`` around the forward calls it makes, on
# the thread that runs it; nothing is marked or reported when nothing watches.
_checkpoint_ids = itertools.count()


def _mark_segment(outputs, checkpoint_id, first_sequence_nr):
    """``metadata["checkpoint"] = checkpoint_id`` on the nodes made since ``first_sequence_nr``
    that ``outputs`` (tensors, in any nesting of tuples, lists and dicts) reach."""
    end = next_sequence_nr()
    stack, seen = [], set()

    def visit(value):
        if isinstance(value, Tensor):
            stack.append(value.grad_fn)
        elif isinstance(value, (tuple, list)):
            for v in value:
                visit(v)
        elif isinstance(value, dict):
            for v in value.values():
                visit(v)

    visit(outputs)
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if first_sequence_nr <= node._sequence_nr_ < end and node._sequence_nr_ != UINT64_MAX:
            node.metadata["checkpoint"] = checkpoint_id
            stack.extend(fn for fn, _ in node.next_functions)


@contextlib.contextmanager
def _reported_recomputation(checkpoint_id, reentrant):
    """Report the block, a recomputation, to the observer of the pass running on this thread."""
    graph_task = _current.graph_task
    observer = graph_task.observer if graph_task is not None else backward_observer()
    if observer is None:
        yield
        return
    observer.recompute_start(graph_task, checkpoint_id, reentrant)
    error = None
    try:
        yield
    except _StopRecomputationError:
        raise  # an early stop: the recomputation ended as planned
    except BaseException as e:
        error = e
        raise
    finally:
        observer.recompute_end(graph_task, checkpoint_id, error)


# -- use_reentrant=True ---------------------------------------------------------------------


class CheckpointFunction(Function):
    """The reentrant checkpoint: forward runs ``run_function`` under ``no_grad``; backward
    runs it again under ``enable_grad`` and backpropagates through what it built with a
    backward of its own, inside this one."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.checkpoint_id = next(_checkpoint_ids)  # See NOTE [Recomputation, seen]
        if forward_observer:
            ctx.metadata["checkpoint"] = ctx.checkpoint_id
        if preserve_rng_state:
            ctx.fwd_cpu_state = _random.get_rng_state()
        # the non-tensor inputs are kept in ctx; the tensors are saved, and put back in backward
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        if not _is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible"
                " with .grad() or passing an `inputs` parameter to .backward()."
                " To resolve this error, you can either set use_reentrant=False,"
                " or call .backward() without passing the `inputs` argument."
            )
        inputs = list(ctx.inputs)
        for i, tensor in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = tensor
        with (
            _reported_recomputation(ctx.checkpoint_id, reentrant=True),
            _forward_rng_state(ctx.preserve_rng_state, getattr(ctx, "fwd_cpu_state", None)),
        ):
            detached_inputs = detach_variable(tuple(inputs))
            with enable_grad():
                outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        # backward through the outputs that require grad only
        outputs_with_grad = []
        args_with_grad = []
        for output, grad in zip(outputs, args):
            if isinstance(output, Tensor) and output.requires_grad:
                outputs_with_grad.append(output)
                args_with_grad.append(grad)
        if not outputs_with_grad:
            raise RuntimeError(
                "none of output has requires_grad=True, this checkpoint() is not necessary"
            )
        _backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp.grad if isinstance(inp, Tensor) else None for inp in detached_inputs)
        return (None, None) + grads


def _explicit(use_reentrant, warning):
    """``use_reentrant``; when it was not passed, PyTorch 2.13's ``warning`` and True."""
    if use_reentrant is None:
        warnings.warn(warning, stacklevel=3)
        return True
    return use_reentrant


def noop_context_fn():
    """The default ``context_fn``: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint(
    function,
    *args,
    use_reentrant: bool | None = None,
    context_fn=noop_context_fn,
    determinism_check: str = _DEFAULT_DETERMINISM_MODE,
    debug: bool = False,
    early_stop: bool = True,
    **kwargs,
):
    """Run ``function(*args, **kwargs)`` keeping none of its activations: backward runs it
    again to get them (PyTorch's ``torch.utils.checkpoint.checkpoint``).

    Args:
        function: what to run; it gets ``*args`` (and, with ``use_reentrant=False``,
            ``**kwargs``).
        use_reentrant: pass it. ``True``: a custom Function whose backward recomputes and runs
            a backward of its own (only ``backward()`` without ``inputs``; an input and an
            output must require grad). ``False`` (recommended): saved-tensor hooks that
            recompute on the first unpack; works with ``grad``, nests, and stops early.
            Not passing it warns and means ``True``.
        preserve_rng_state: run the recomputation from the generator state of the forward
            (default True).
        context_fn: returns two context managers, for the forward and the recomputation
            (``use_reentrant=False`` only).
        determinism_check: ``"default"`` compares the shape, dtype and device of each
            recomputed tensor with the saved one; ``"none"`` does not.
        debug: with a detected non-determinism, list the ops of the forward and of the
            recomputation, with where they ran (``use_reentrant=False`` only).
        early_stop: stop recomputing once every tensor needed is back
            (``use_reentrant=False``; see ``set_checkpoint_early_stop``).

    Example:
        >>> import nbgrad as ng
        >>> from nbgrad.utils.checkpoint import checkpoint
        >>> x = ng.tensor([0.0, 1.0], requires_grad=True)
        >>> y = checkpoint(lambda t: t.exp().sin(), x, use_reentrant=False)
        >>> y.sum().backward()
        >>> x.grad
        tensor([ 0.5403, -2.4784])
    """
    use_reentrant = _explicit(
        use_reentrant,
        "torch.utils.checkpoint: the use_reentrant parameter should be "
        "passed explicitly. Starting in PyTorch 2.9, calling checkpoint "
        "without use_reentrant will raise an exception. use_reentrant=False is "
        "recommended, but if you need to preserve the current default "
        "behavior, you can pass use_reentrant=True. Refer to docs for more "
        "details on the differences between the two variants.",
    )
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError(
                "Passing `context_fn` or `debug` is only supported when use_reentrant=False."
            )
        return CheckpointFunction.apply(function, preserve, *args)
    gen = _checkpoint_without_reentrant_generator(
        function, preserve, context_fn, determinism_check, debug, early_stop, *args, **kwargs
    )
    frame = next(gen)  # before the forward: the hooks go on
    try:
        ret = function(*args, **kwargs)
    except BaseException as e:
        try:
            gen.throw(e)
        except StopIteration as stop:
            raise RuntimeError(_ERR_SUPPRESSED) from stop
        raise
    try:
        next(gen)  # after the forward: the hooks come off
    except StopIteration:
        if frame is not None and forward_observer:  # See NOTE [Recomputation, seen]
            _mark_segment(ret, frame.checkpoint_id, frame.first_sequence_nr)
        return ret
    raise AssertionError(
        "torch.utils.checkpoint: expected context_fn generator to yield "
        "exactly twice, but it yielded more than twice."
    )


_ERR_SUPPRESSED = (
    "torch.utils.checkpoint: the forward context provided by context_fn suppressed an "
    "exception raised during the checkpointed forward. This is not supported because checkpoint "
    "cannot return a value for a failed forward."
)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run ``functions`` (a ``Sequential``, or a list of modules or functions) one after the
    other on ``input``, in ``segments`` chunks: every chunk but the last is checkpointed
    (PyTorch's ``torch.utils.checkpoint.checkpoint_sequential``).

    Example:
        >>> import nbgrad as ng
        >>> from nbgrad.utils.checkpoint import checkpoint_sequential
        >>> model = ng.nn.Sequential(ng.nn.Linear(3, 3), ng.nn.Tanh(), ng.nn.Linear(3, 1))
        >>> out = checkpoint_sequential(model, 2, ng.ones(4, 3), use_reentrant=False)
        >>> out.shape
        nbgrad.Size([4, 1])
    """
    use_reentrant = _explicit(
        use_reentrant,
        "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
        "parameter should be passed explicitly. "
        "In version 2.9 we will raise an exception if use_reentrant "
        "is not passed. use_reentrant=False is "
        "recommended, but if you need to preserve the current default "
        "behavior, you can pass use_reentrant=True. Refer to docs for more "
        "details on the differences between the two variants.",
    )
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input

        return forward

    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1  # the last chunk runs as it is: its activations are needed at once
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(
            run_function(start, end, functions),
            input,
            use_reentrant=use_reentrant,
            preserve_rng_state=preserve,
        )
    return run_function(end + 1, len(functions) - 1, functions)(input)


# -- use_reentrant=False ----------------------------------------------------------------------

# NOTE [Nestable checkpoint]
# As PyTorch's note "Nestable Checkpoint" (torch/utils/checkpoint.py), whose rules this follows:
# 1. A tensor saved inside nested checkpoints belongs to the innermost one only.
# 2. The inputs of a checkpoint are saved (as SavedTensors, made while the enclosing
#    checkpoint's hooks are on) to the enclosing checkpoint. So unpacking a tensor recomputes
#    every checkpoint around it that has not yet been recomputed in this backward pass: the
#    inner one's inputs are themselves unpacked from the outer one.
# 3. A recomputation runs as if no checkpoint were active (its own hook goes on top of the
#    stack); checkpoints met while recomputing are checkpoints again.
# 4. Recomputed tensors belong to one backward pass (one graph task id, or one
#    GraphExecGroup): each is dropped as soon as it is unpacked, even with retain_graph=True.
#    The forward packs a ``_Holder`` (a container) for each saved tensor; the frame keeps weak
#    references to the holders, and a recomputation files each tensor under a fresh
#    ``_Handle`` in the holder, for the pass's id. A holder that backward has freed is skipped.
# 5. Early stop: the recomputation raises ``_StopRecomputationError`` from the pack hook as
#    soon as it has saved as many tensors as the forward did, and the unpack hook catches it.
# 6. A backward inside the checkpointed function works: unpacking there recomputes too; with
#    early stop off, a recomputation that saves more than the forward had saved by then is
#    allowed while the forward has not completed.


class CheckpointError(RuntimeError):
    """A checkpoint's recomputation did not match its forward, or a tensor was unpacked twice."""


class _Handle:
    pass


class _Holder:
    def __init__(self):
        self.handles: dict = {}


def _internal_assert(cond):
    if not cond:
        raise AssertionError(
            "Something went unexpectedly wrong in activation checkpoint. "
            "Please report this bug by filing an issue to PyTorch."
        )


_debug_tip_msg = """
Tip: To see a more detailed error message, either pass `debug=True` to
`torch.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint-debug mode globally.
"""


class _CheckpointFrame:
    """One non-reentrant checkpoint: its recompute function, its saved inputs, the holders of
    what its forward saved, and what each backward pass recomputed."""

    def __init__(self, recompute_fn, early_stop, unpack_error_cb, metadata_fn):
        self.recompute_fn = recompute_fn
        self.saved_args = []
        self.weak_holders = []
        # per pass id: handle -> recomputed tensor (weak keys: a freed holder drops its entry)
        self.recomputed = defaultdict(weakref.WeakKeyDictionary)
        self.recomp_counter = defaultdict(int)
        self.is_recomputed = defaultdict(bool)
        self.early_stop = early_stop
        self.metadata_fn = metadata_fn
        self.unpack_error_cb = unpack_error_cb
        self.x_metadatas = []
        self.forward_completed = False
        self.ignore_saved_mismatch = False
        self.checkpoint_id = next(_checkpoint_ids)  # See NOTE [Recomputation, seen]
        self.first_sequence_nr = None

    def save_inputs(self, *args):
        # made while an enclosing checkpoint's hooks are on: saved to it (NOTE [Nestable
        # checkpoint], rule 2)
        self.saved_args = [SavedTensor(a) if isinstance(a, Tensor) else a for a in args]

    def get_inputs(self):
        return [a.unpack(None) if isinstance(a, SavedTensor) else a for a in self.saved_args]

    def check_recomputed_tensors_match(self, gid):
        """Raise ``CheckpointError`` when the recomputation saved other tensors than the
        forward: more or fewer, or some of another shape, dtype or device."""
        if self.ignore_saved_mismatch:
            return
        if len(self.weak_holders) != self.recomp_counter[gid]:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved "
                "during the original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.weak_holders)}\n"
                f"Number of tensors saved during recomputation: {self.recomp_counter[gid]}.\n"
                f"{_debug_tip_msg}"
            )
        different = []
        for idx, weak_holder in enumerate(self.weak_holders):
            holder = weak_holder()
            if holder is None:
                continue
            _internal_assert(gid in holder.handles)
            _internal_assert(holder.handles[gid] is not None)
            _internal_assert(holder.handles[gid] in self.recomputed[gid])
            x_meta = self.x_metadatas[idx]
            recomputed_meta = self.metadata_fn(self.recomputed[gid][holder.handles[gid]])
            if x_meta != recomputed_meta:
                different.append((idx, x_meta, recomputed_meta))
        if different:
            mismatched = "".join(
                f"tensor at position {idx}:\nsaved metadata: {x_meta}\n"
                f"recomputed metadata: {recomputed_meta}\n"
                for idx, x_meta, recomputed_meta in different
            )
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors "
                f"have different metadata than during the forward pass.\n{mismatched}.\n"
                f"{_debug_tip_msg}"
            )


def _default_meta_extractor(x):
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


_allowed_determinism_checks_to_fns = {
    _DEFAULT_DETERMINISM_MODE: _default_meta_extractor,
    "none": lambda _: None,
}


class _StopRecomputationError(Exception):
    """Raised by the recomputation's pack hook once every needed tensor is back (early stop)."""


# NOTE [Early stop leaves no cycle]
# The early stop is an exception raised from deep inside the recomputation, possibly through a
# backward run inside the checkpointed function (whose GraphTask keeps the exception, whose
# traceback keeps the frames that hold that GraphTask): a reference cycle that would keep the
# recomputed graph, and the nodes of the forward it reaches, alive until the cyclic garbage
# collector runs. PyTorch's C++ frames hold nothing, so its graph dies at once. Once the stop
# is caught, the frames it went through are finished: clearing their locals breaks the cycle.


class _recomputation_hook(saved_tensors_hooks):
    """The hooks in force while a frame recomputes in the pass ``gid``: each tensor saved is
    filed under its forward twin's holder (NOTE [Nestable checkpoint], rules 4-6)."""

    def __init__(self, target_frame_ref, gid):
        def pack_hook(x):
            x = x.detach() if x.requires_grad else x
            target_frame = target_frame_ref()
            _internal_assert(target_frame is not None)
            recomp_idx = target_frame.recomp_counter[gid]
            target_frame.recomp_counter[gid] += 1
            if recomp_idx >= len(target_frame.weak_holders):
                _internal_assert(not target_frame.early_stop)
                if not target_frame.forward_completed:
                    # a backward inside the forward, without early stop: more may be saved
                    target_frame.ignore_saved_mismatch = True
                    return x
                raise CheckpointError(
                    "torch.utils.checkpoint: trying to save more tensors during "
                    "recomputation than during the original forward pass.\n"
                    f"{_debug_tip_msg}"
                )
            holder = target_frame.weak_holders[recomp_idx]()
            if holder is not None:  # (else freed by a backward inside the forward: skipped)
                _internal_assert(holder.handles.get(gid) is None)
                holder.handles[gid] = _Handle()
                target_frame.recomputed[gid][holder.handles[gid]] = x
            if target_frame.early_stop and target_frame.recomp_counter[gid] == len(
                target_frame.weak_holders
            ):
                raise _StopRecomputationError
            return x  # a backward through the recomputed graph unpacks it as it is

        def unpack_hook(x):
            return x

        super().__init__(pack_hook, unpack_hook)


class _checkpoint_hook(saved_tensors_hooks):
    """The hooks in force during a frame's forward: a holder is saved in place of each tensor,
    and the first unpack in a pass recomputes (NOTE [Nestable checkpoint])."""

    def __init__(self, frame):
        def pack_hook(x):
            holder = _Holder()
            frame.weak_holders.append(weakref.ref(holder))
            if frame.metadata_fn is not None:  # to detect non-determinism
                with no_grad():
                    frame.x_metadatas.append(frame.metadata_fn(x))
            return holder

        def unpack_hook(holder):
            gid = GraphExecGroup._get_current_group()
            if gid is None:
                gid = current_graph_task_id()
                if gid == -1:  # unpacked outside backward: a pass of its own
                    gid = int(uuid.uuid4())
            if not frame.is_recomputed[gid]:
                args = frame.get_inputs()
                try:
                    with (
                        _reported_recomputation(frame.checkpoint_id, reentrant=False),
                        _recomputation_hook(weakref.ref(frame), gid),
                        enable_grad(),
                    ):
                        frame.recompute_fn(*args)
                except _StopRecomputationError as stop:
                    # See NOTE [Early stop leaves no cycle]
                    traceback.clear_frames(stop.__traceback__)
                frame.is_recomputed[gid] = True
                frame.check_recomputed_tensors_match(gid)
            _internal_assert(gid in holder.handles)
            if holder.handles[gid] is None:
                extra = ""
                if GraphExecGroup._get_current_group() is not None:
                    extra = (
                        "Performing two backward calls that overlap (i.e. require the same "
                        "saved activation in order to compute gradients) is not allowed while "
                        "under the torch.utils.checkpoint.GraphExecGroup context. "
                    )
                raise CheckpointError(
                    "torch.utils.checkpoint: Unpack is being triggered for a tensor that was "
                    f"already unpacked once. {extra}If you are calling ctx.saved_tensors in "
                    "backward, make sure to do so only once. Otherwise please open an issue "
                    "with details on your use case."
                )
            _internal_assert(holder.handles[gid] in frame.recomputed[gid])
            ret = frame.recomputed[gid][holder.handles[gid]]
            holder.handles[gid] = None
            return ret

        if frame.unpack_error_cb is not None:

            def unpack_hook_with_error_cb(holder):
                try:
                    return unpack_hook(holder)
                except CheckpointError as e:
                    frame.unpack_error_cb(e)

            super().__init__(pack_hook, unpack_hook_with_error_cb)
        else:
            super().__init__(pack_hook, unpack_hook)


def _checkpoint_without_reentrant_generator(
    fn,
    preserve_rng_state=True,
    context_fn=noop_context_fn,
    determinism_check=_DEFAULT_DETERMINISM_MODE,
    debug=False,
    early_stop=True,
    *args,
    **kwargs,
):
    """The non-reentrant checkpoint around one forward: yields its frame (None when grad
    mode is off) before it runs (the hooks on) and returns after it (the hooks off)."""
    unpack_error_cb = None
    if _checkpoint_debug_enabled if _checkpoint_debug_enabled is not None else debug:
        if context_fn is not noop_context_fn:
            raise ValueError("debug=True is incompatible with non-default context_fn")
        context_fn, unpack_error_cb = _get_debug_context_and_cb()
    if determinism_check not in _allowed_determinism_checks_to_fns:
        raise ValueError(
            "determinism_check should be one of "
            f"{list(_allowed_determinism_checks_to_fns.keys())}, but got {determinism_check}"
        )
    metadata_fn = _allowed_determinism_checks_to_fns[determinism_check]
    forward_context, recompute_context = context_fn()
    fwd_cpu_state = _random.get_rng_state() if preserve_rng_state else None

    def recompute_fn(*inputs):
        # See NOTE [Checkpoint and the random state]
        with _forward_rng_state(preserve_rng_state, fwd_cpu_state), recompute_context:
            fn(*inputs, **kwargs)

    early_stop = (
        _enable_checkpoint_early_stop if _enable_checkpoint_early_stop is not None else early_stop
    )
    new_frame = _CheckpointFrame(recompute_fn, early_stop, unpack_error_cb, metadata_fn)
    if not is_grad_enabled():  # nothing will be saved: nothing to recompute
        yield None
        return
    new_frame.save_inputs(*args)
    new_frame.first_sequence_nr = next_sequence_nr()
    forward_context_suppressed_exc = False
    with _checkpoint_hook(new_frame), forward_context:
        try:
            yield new_frame
        except BaseException:
            forward_context_suppressed_exc = True
            raise
    if forward_context_suppressed_exc:
        raise RuntimeError(_ERR_SUPPRESSED)
    new_frame.forward_completed = True


class _GraphExecGroupState(threading.local):
    group = None


_graph_exec_group = _GraphExecGroupState()


class GraphExecGroup:
    """Backward calls made inside the same instance recompute each non-reentrant checkpoint at
    most once, however many there are; they must then need disjoint parts of the graph (no
    saved activation used by two of them), even with ``retain_graph=True``."""

    def __enter__(self):
        if _graph_exec_group.group is not None:
            raise RuntimeError(
                "GraphExecGroup contexts cannot be nested. "
                f"Already inside group {_graph_exec_group.group}"
            )
        _graph_exec_group.group = self
        return self

    def __exit__(self, *args):
        _graph_exec_group.group = None

    @classmethod
    def _get_current_group(cls):
        return _graph_exec_group.group


# -- debug=True -------------------------------------------------------------------------------

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_checkpoint_error_template = """ \
An error happened while unpacking tensors; dumping logs of latest computation
because you passed `debug=True` to `torch.utils.checkpoint.checkpoint()`.
Scroll all the way down for guidance on how to navigate these logs.

+~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~+
|        1. Stack traces of the operators that ran in the original forward     |
+------------------------------------------------------------------------------+

{forward_traces}
+~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~+
|        2. Stack traces of the operators that ran during recomputation        |
+------------------------------------------------------------------------------+

{recompute_traces}
+~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~+
|       3. Log of operators in the original forward and recomputation          |
+------------------------------------------------------------------------------+
(Scroll up to correlate stack traces with each operation listed below. This
 helps identify their source in the code.)

Operations executed during the original forward:

{forward_ops}

Operations executed during recomputation:

{recompute_ops}

+------------------------------------------------------------------------------+
 ERROR: Detected non-determinism while running activation checkpointing

 You are seeing this error because you passed `debug=True` to checkpoint and
 tensors to be saved during the original forward and differ between those saved
 during recomputation. This can happen if different operators were ran in the
 original forward and in the recomputation.

 To identify where the mismatch may be coming from, you can do the following:

 1) Compare the operators ran during original forward and recomputation to
    see where they differ. These operators are printed above in the order they
    were executed.

 2) Review the stack trace for each operator to locate its invocation source.
    Each operator's stack trace is printed in their execution order.

 Note that the logs can be quite long. Here's how they are structured:
 (Tip: you can Ctrl-f for these headers)

 1. Stack traces of the operators that ran in the original forward
 2. Stack traces of the operators that ran during recomputation
 3. Log of operators in the original forward and recomputation
 4. Error message                                             <--- You are here
--------------------------------------------------------------------------------
"""


def _describe(value):
    if isinstance(value, Tensor):
        return f"{str(value.dtype).removeprefix('nbgrad.')}{list(value.shape)}"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_describe(v) for v in value) + ")"
    return repr(value)


class _OpLog(GraphObserver):
    """The ops that ran forward while it was installed, each with the user code that called
    it (the stack without nbgrad's own frames). PyTorch logs the same through a
    LoggingTensorMode; nbgrad's forward observer sees every op of the table."""

    def __init__(self):
        self.logs = None
        self.tbs = None
        self._handle = None

    def forward(self, op, args, attrs, result, elapsed):
        self.logs.append(f"{_describe(result)} = {op.name}{_describe(tuple(args))}")
        self.tbs.append(
            [f for f in traceback.extract_stack()[:-1] if not f.filename.startswith(_PACKAGE_DIR)]
        )

    def __enter__(self):  # (entered again at each recomputation: a log of the latest)
        self.logs, self.tbs = [], []
        self._handle = observe(self, forward=True, backward=False)
        return self

    def __exit__(self, *exc):
        self._handle.remove()
        return False


def _get_debug_context_and_cb():
    """The ``context_fn`` that logs the ops of the forward and of the recomputation, and the
    callback that turns a ``CheckpointError`` into the report of both."""
    forward_log = _OpLog()
    recompute_log = _OpLog()

    def unpack_error_cb(e):
        def traces(label, log):
            out = ""
            total = len(log.logs)
            for i, (line, tb) in enumerate(zip(log.logs, log.tbs)):
                out += f"{line}   ({i + 1} of {total} in {label})\n\n"
                out += "".join(f"{f.filename}:{f.lineno}:{f.name}\n" for f in tb)
                out += "\n\n"
            return out

        raise CheckpointError(
            _checkpoint_error_template.format(
                forward_traces=traces("original", forward_log),
                recompute_traces=traces("recompute", recompute_log),
                forward_ops="\n".join(forward_log.logs or ()),
                recompute_ops="\n".join(recompute_log.logs or ()),
            )
        ) from e

    def context_fn():
        return forward_log, recompute_log

    return context_fn, unpack_error_cb
