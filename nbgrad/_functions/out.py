"""PyTorch's ``out=`` keyword for the module-level functions (NOTE [out=])."""

from __future__ import annotations

import functools
import inspect
import warnings

from .. import backend
from .._graph.grad_state import _inference_tensors, is_grad_enabled, no_grad
from .._graph.grad_state import _state as _grad_state
from .._tensor.inplace import _check_not_inference
from .._tensor.tangents import check_out
from ..tensor import Tensor, as_tensor


def _t(x):
    return x if isinstance(x, Tensor) else as_tensor(x)


# NOTE [out=]
# PyTorch's functions take ``out=``: the result is written into that tensor (resized when its
# shape differs, with a warning unless it was empty), which is returned. No graph is recorded
# through it: with grad mode on, a differentiable result or an ``out`` that requires grad is an
# error, as in PyTorch (which raises before it computes; nbgrad computes, then raises, so the
# error is the same and nothing is written). ``_out_variant``
# adds the keyword to a module-level function; the write is Tensor's in-place write (dtype
# check, version bump).
def _out_variant(fn):
    name = fn.__name__

    @functools.wraps(fn)
    def with_out(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        return _into_out(name, fn, args, kwargs, out)

    sig = inspect.signature(fn)
    params = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    params.append(inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None))
    with_out.__signature__ = sig.replace(parameters=params)
    return with_out


def _into_out(name, fn, args, kwargs, out):
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    check_out(name, args, out)  # see NOTE [Forward-mode AD]
    # (an op whose result is not differentiable, as a comparison, may take inputs that do)
    result = fn(*args, **kwargs)
    if is_grad_enabled() and (out.requires_grad or result.requires_grad):
        raise RuntimeError(
            f"{name}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad."
        )
    if result.shape != out.shape:
        if out.numel():
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out.shape)}, which does not match the required output shape "
                f"{list(result.shape)}. This behavior is deprecated, and in a future PyTorch "
                "release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
                "with t.resize_(0).",
                UserWarning,
                stacklevel=3,
            )
        out._data = backend.get_xp(out.device).empty(result.shape, dtype=out._data.dtype)
    with no_grad():
        out._write(result)
    if _inference_tensors.made and not _grad_state.inference:  # NOTE [Inference tensors]
        _check_not_inference(out)  # (as PyTorch's: after the write)
    return out
