"""``nbgrad.autograd``: backward, grad, Functions, grad modes, gradcheck and the engine.

Mirrors ``torch/autograd/__init__.py``: ``backward`` and ``grad`` check their arguments as
PyTorch's ``_make_grads`` does, then hand the roots to the engine.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from nbgrad import tensor as _T
from nbgrad._tensor.conversion import _wrap
from nbgrad._tensor.dispatch import _edge_of
from nbgrad._tensor.math_methods import sum_to
from nbgrad.backend import CPU

from . import forward_ad, functional, graph, profiler
from .anomaly_mode import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .engine import get_default_engine
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    is_multithreading_enabled,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)
from .gradcheck import gradcheck, gradgradcheck
from .graph import SavedTensor
from .graph_task import _is_checkpoint_valid as _is_checkpoint_valid
from .profiler import DeviceType, ProfilerActivity, kineto_available
from .profiler import _profiler_enabled as _profiler_enabled
from .variable import Variable

# NOTE [nbgrad.autograd.torch]
# In PyTorch, ``torch.autograd.torch`` is the torch package itself (``torch/autograd/__init__.py``
# imports it), and old code reaches the factories through it (``torch.autograd.torch.randn``).
# Here that name is the nbgrad package, so such code runs with ``import nbgrad as torch``.
torch = sys.modules[__name__.rpartition(".")[0]]

__all__ = [
    "SavedTensor",
    "backward",
    "grad",
    "Function",
    "FunctionCtx",
    "once_differentiable",
    "gradcheck",
    "gradgradcheck",
    "forward_ad",
    "functional",
    "graph",
    "profiler",
    "kineto_available",
    "DeviceType",
    "ProfilerActivity",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "set_multithreading_enabled",
    "is_multithreading_enabled",
    "detect_anomaly",
    "set_detect_anomaly",
    "is_anomaly_enabled",
    "Variable",
]


def _tensor_or_tensors(x, what, edges=False):
    """``x`` as a tuple of Tensors (and, with ``edges``, GradientEdges), checked."""
    Tensor = _T.Tensor

    if isinstance(x, Tensor) or (edges and isinstance(x, graph.GradientEdge)):
        return (x,)
    if x is None:
        return ()
    if not isinstance(x, (list, tuple)):
        raise TypeError(f"{what} must be a Tensor or a sequence of Tensors, got {type(x).__name__}")
    for t in x:
        if edges and isinstance(t, graph.GradientEdge):
            continue
        if t is not None and not isinstance(t, Tensor):
            if what == "inputs":  # PyTorch's type for this one
                raise RuntimeError(f"all inputs have to be Tensors, but got {type(t).__name__}")
            raise TypeError(f"{what} must contain only Tensors, got {type(t).__name__}")
    return tuple(x)


def _gradients_for(outputs, grads, what, prefix):
    """One gradient (or None) per output, checked for count."""
    grads = [None] * len(outputs) if grads is None else list(_tensor_or_tensors(grads, what))
    if len(grads) != len(outputs):
        raise RuntimeError(f"{prefix}got {len(outputs)} tensors and {len(grads)} gradients")
    return grads


def _make_grads(outputs, grads):
    """Check or create the gradient for each output (``_make_grads``)."""
    T = _T
    Tensor = T.Tensor
    ones_like = T.ones_like

    new_grads = []
    for i, (out, grad) in enumerate(zip(outputs, grads)):
        if isinstance(out, graph.GradientEdge):  # its shape, dtype, device: the node's input's
            meta = out.node._input_metadata_[out.output_nr]
            out = T.empty(meta.shape, dtype=meta.dtype, device=meta.device, requires_grad=True)
        if isinstance(grad, Tensor):
            if grad.shape != out.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {grad.shape} and "
                    f"output[{i}] has a shape of {out.shape}."
                )
            if grad._device != out._device:
                raise RuntimeError(
                    f"invalid gradient at index {i} - expected device {out.device} but got "
                    f"{grad.device}"
                )
            new_grads.append(grad)
        elif grad is None:
            if out._requires_grad:
                if out._data.size != 1:
                    raise RuntimeError(
                        "grad can be implicitly created only for scalar outputs; output "
                        f"{i} has shape {list(out.shape)}. Pass gradient= (a tensor of that "
                        "shape), or reduce the output first, e.g. out.sum().backward()."
                    )
                if not out.is_floating_point():
                    raise RuntimeError(
                        "grad can be implicitly created only for real scalar outputs but got "
                        f"{out.dtype}"
                    )
                data = out._data
                if out._device is CPU:  # the seed of every backward: made directly
                    seed = (
                        np.array(1, data.dtype)
                        if not data.ndim
                        else np.ones(data.shape, data.dtype)
                    )
                    new_grads.append(_wrap(seed))
                else:
                    new_grads.append(ones_like(out))
            else:
                new_grads.append(None)
        else:
            raise TypeError(
                f"gradients can be either Tensors or None, but got {type(grad).__name__}"
            )
    return new_grads


def _root_edges(tensors):

    edges = []
    for i, t in enumerate(tensors):
        if isinstance(t, graph.GradientEdge):
            edges.append(graph.Edge(t.node, t.output_nr))
            continue
        if not t._requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn. "
                "Call requires_grad_() on the leaf tensors you want gradients for before the "
                "forward pass."
            )
        edges.append(_edge_of(t))
    return edges


def backward(
    tensors,
    grad_tensors=None,
    retain_graph=None,
    create_graph=False,
    grad_variables=None,
    inputs=None,
):
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves (or of ``inputs``).

    Example:
        >>> import nbgrad as ng
        >>> x = ng.tensor([1.0, 2.0], requires_grad=True)
        >>> ng.autograd.backward((x * x).sum())
        >>> x.grad
        tensor([2., 4.])
    """

    if grad_variables is not None:
        grad_tensors = grad_variables
    if inputs is not None:
        inputs = _tensor_or_tensors(inputs, "inputs", edges=True)
        if len(inputs) == 0:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    tensors = _tensor_or_tensors(tensors, "tensors", edges=True)
    grads = _make_grads(tensors, _gradients_for(tensors, grad_tensors, "grad_tensors", ""))
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between the "
            "parameter and its gradient which can cause a memory leak. We recommend using "
            "autograd.grad when creating the graph to avoid this. If you have to use this "
            "function, make sure to reset the .grad fields of your parameters to None after use "
            "to break the cycle and avoid the leak.",
            UserWarning,
            stacklevel=3,
        )
    roots = _root_edges(tensors)
    outputs = None
    if inputs is not None:
        outputs = []
        for t in inputs:
            if isinstance(t, graph.GradientEdge):
                outputs.append(graph.Edge(t.node, t.output_nr))
                continue
            if not t._requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            if t.grad_fn is not None:
                t.retain_grad()
            outputs.append(_edge_of(t))
    get_default_engine().execute(
        roots, grads, retain_graph, create_graph, outputs, accumulate_grad=True
    )


def _grad_batched(
    outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads
):
    """``grad(..., is_grads_batched=True)``: the first dimension of each grad_output is a batch
    of vectors, and each result gets the same first dimension. PyTorch vmaps one backward pass
    over it; nbgrad runs the pass once per vector (the same numbers, one pass each)."""
    T = _T
    outputs = _tensor_or_tensors(outputs, "outputs")
    inputs = _tensor_or_tensors(inputs, "inputs")
    if grad_outputs is None:
        raise ValueError(
            "is_grads_batched=True needs grad_outputs: a batch of gradients for each output, "
            "its first dimension being the batch"
        )
    batched = _tensor_or_tensors(grad_outputs, "grad_outputs")
    if len(batched) != len(outputs):
        raise RuntimeError(
            f"grad requires one grad_output per output: got {len(batched)} grad_outputs for "
            f"{len(outputs)} outputs"
        )
    for i, (g, o) in enumerate(zip(batched, outputs)):
        if g.dim() == 0 or tuple(g.shape[1:]) != tuple(o.shape):
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each grad_output "
                "as the batch dimension. The sizes of the remaining dimensions are expected to "
                "match the shape of corresponding output, but a mismatch was detected: "
                f"grad_output[{i}] has a shape of {g.shape[1:]} and output[{i}] has a shape of "
                f"{o.shape}."
            )
    n = batched[0].shape[0]
    if any(g.shape[0] != n for g in batched):
        raise RuntimeError(
            "If `is_grads_batched=True`, every grad_output must have the same batch size (first "
            f"dimension): got {[g.shape[0] for g in batched]}"
        )
    if retain_graph is None:
        retain_graph = create_graph
    rows = [
        grad(
            outputs,
            inputs,
            [g[k] for g in batched],
            retain_graph=retain_graph if k == n - 1 else True,
            create_graph=create_graph,
            allow_unused=allow_unused,
            materialize_grads=materialize_grads,
        )
        for k in range(n)
    ]
    result = []
    for j, t in enumerate(inputs):
        column = [row[j] for row in rows]
        if not column:
            result.append(T.zeros((0, *t.shape), dtype=t.dtype, device=t.device))
        elif all(g is None for g in column):
            result.append(None)
        else:
            result.append(T.stack(column))
    return tuple(result)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    only_inputs=True,
    allow_unused=None,
    is_grads_batched=False,
    materialize_grads=False,
):
    """Gradients of ``outputs`` w.r.t. ``inputs``, returned (not accumulated into ``.grad``).

    Only the nodes needed to reach ``inputs`` run.

    Example:
        >>> import nbgrad as ng
        >>> x = ng.tensor(3.0, requires_grad=True)
        >>> (g,) = ng.autograd.grad(x ** 3, x, create_graph=True)
        >>> g, ng.autograd.grad(g, x)[0]
        (tensor(27., grad_fn=<MulBackward0>), tensor(18.))
    """
    T = _T
    zeros_like = T.zeros_like

    if is_grads_batched:
        return _grad_batched(
            outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
            materialize_grads,
        )  # fmt: skip
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
            "allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _tensor_or_tensors(outputs, "outputs", edges=True)
    inputs = _tensor_or_tensors(inputs, "inputs", edges=True)
    if len(inputs) == 0:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    grads = _make_grads(outputs, _gradients_for(outputs, grad_outputs, "grad_outputs", "grad(): "))
    if retain_graph is None:
        retain_graph = create_graph
    roots = _root_edges(outputs)
    edges = []
    for t in inputs:
        if isinstance(t, graph.GradientEdge):
            edges.append(graph.Edge(t.node, t.output_nr))
            continue
        if not t._requires_grad:
            raise RuntimeError(
                "One of the differentiated Tensors does not require grad. Only tensors with "
                "requires_grad=True (or results computed from them) can be differentiated."
            )
        edges.append(_edge_of(t))
    result = get_default_engine().execute(
        roots, grads, retain_graph, create_graph, edges, accumulate_grad=False
    )
    out = []
    for i, (g, t) in enumerate(zip(result, inputs)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in "
                    "the graph. Set allow_unused=True if this is the desired behavior."
                )
            if materialize_grads:  # a leaf under create_graph, as PyTorch's
                if isinstance(t, graph.GradientEdge):
                    raise RuntimeError(
                        "materialize_grads cannot be used when the given input is a GradientEdge"
                    )
                g = zeros_like(t, requires_grad=create_graph)
        elif not isinstance(t, graph.GradientEdge) and g._data.shape != t._data.shape:
            g = sum_to(g, t.shape)
        out.append(g)
    return tuple(out)
