"""Function forms of the Tensor methods (``ng.exp(x)``, ``ng.matmul(a, b)``, ...)."""

from __future__ import annotations

import functools
import inspect
import warnings

from . import backend
from ._graph.grad_state import _inference_tensors, is_grad_enabled, no_grad
from ._graph.grad_state import _state as _grad_state
from ._tensor.conversion import _tensor_arg
from ._tensor.inplace import _check_not_inference
from ._tensor.linalg_methods import einsum, meshgrid, tensordot
from ._tensor.memory_formats import preserve_format
from .tensor import Size, Tensor, as_tensor

__all__ = [
    "add",
    "as_strided",
    "var_mean",
    "std_mean",
    "all",
    "any",
    "sub",
    "mul",
    "div",
    "floor_divide",
    "remainder",
    "pow",
    "neg",
    "abs",
    "sign",
    "exp",
    "bernoulli",
    "log",
    "log1p",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "sin",
    "clamp_min",
    "clamp_max",
    "isnan",
    "isinf",
    "isfinite",
    "sort",
    "argsort",
    "topk",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "expm1",
    "exp2",
    "log2",
    "log10",
    "floor",
    "ceil",
    "round",
    "trunc",
    "frac",
    "square",
    "flip",
    "roll",
    "cumsum",
    "tril",
    "triu",
    "cos",
    "tanh",
    "sigmoid",
    "relu",
    "gelu",
    "erf",
    "clamp",
    "clip",
    "maximum",
    "minimum",
    "sum",
    "mean",
    "prod",
    "max",
    "min",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "var",
    "std",
    "norm",
    "logsumexp",
    "softmax",
    "log_softmax",
    "matmul",
    "mm",
    "bmm",
    "mv",
    "dot",
    "t",
    "transpose",
    "permute",
    "reshape",
    "squeeze",
    "unsqueeze",
    "flatten",
    "split",
    "chunk",
    "gather",
    "index_select",
    "masked_fill",
    "scatter_add",
    "index_add",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "clone",
    "detach",
    "numel",
    "allclose",
    "equal",
    "is_tensor",
    "unbind",
    "narrow",
    "select",
    "diagonal",
    "expand_copy",
    "isclose",
    "einsum",
    "outer",
    "ger",
    "cross",
    "diag",
    "diag_embed",
    "trace",
    "logaddexp",
    "lerp",
    "addmm",
    "baddbmm",
    "meshgrid",
    "multinomial",
    "nonzero",
    "argwhere",
    "unique",
    "masked_select",
    "scatter",
    "repeat_interleave",
    "tile",
    "broadcast_to",
    "broadcast_tensors",
    "broadcast_shapes",
    "movedim",
    "moveaxis",
    "swapaxes",
    "swapdims",
    "take",
    "cumprod",
    "atan2",
    "arctan2",
    "hypot",
    "fmod",
    "logical_and",
    "logical_or",
    "logical_not",
    "logical_xor",
    "median",
    "quantile",
    "kron",
    "tensordot",
    "nan_to_num",
    "count_nonzero",
    "erfinv",
]


def _t(x):
    return x if isinstance(x, Tensor) else as_tensor(x)


# NOTE [out=]
# PyTorch's functions take ``out=``: the result is written into that tensor (resized when its
# shape differs, with a warning unless it was empty), which is returned. No graph is recorded
# through it: with grad mode on, a differentiable result or an ``out`` that requires grad is an
# error, as in PyTorch (which raises before it computes; nbgrad computes, then raises, so the
# error is the same and nothing is written). ``_out_variant``
# adds the keyword to a function of this module; the write is Tensor's in-place write (dtype
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


@_out_variant
def add(input, other, *, alpha=1):
    return _t(input).add(other, alpha=alpha)


@_out_variant
def sub(input, other, *, alpha=1):
    return _t(input).sub(other, alpha=alpha)


@_out_variant
def mul(input, other):
    return _t(input).mul(other)


@_out_variant
def div(input, other, *, rounding_mode=None):
    return _t(input).div(other, rounding_mode=rounding_mode)


@_out_variant
def floor_divide(input, other):
    if not isinstance(input, Tensor):
        return other.__rfloordiv__(input)
    return input.floor_divide(other)


@_out_variant
def remainder(input, other):
    if not isinstance(input, Tensor):
        return other.__rmod__(input)
    return input.remainder(other)


@_out_variant
def pow(input, exponent):
    if not isinstance(input, Tensor):
        return exponent.__rpow__(input)
    return input.pow(exponent)


@_out_variant
def neg(input):
    return input.neg()


@_out_variant
def abs(input):
    return input.abs()


@_out_variant
def sign(input):
    return input.sign()


def bernoulli(input, p=None):
    return input.bernoulli(p)


@_out_variant
def exp(input):
    return input.exp()


@_out_variant
def log(input):
    return input.log()


@_out_variant
def log1p(input):
    return input.log1p()


@_out_variant
def sqrt(input):
    return input.sqrt()


@_out_variant
def rsqrt(input):
    return input.rsqrt()


@_out_variant
def reciprocal(input):
    return input.reciprocal()


@_out_variant
def sin(input):
    return input.sin()


@_out_variant
def tan(input):
    return input.tan()


@_out_variant
def asin(input):
    return input.asin()


@_out_variant
def acos(input):
    return input.acos()


@_out_variant
def atan(input):
    return input.atan()


@_out_variant
def sinh(input):
    return input.sinh()


@_out_variant
def cosh(input):
    return input.cosh()


@_out_variant
def expm1(input):
    return input.expm1()


@_out_variant
def exp2(input):
    return input.exp2()


@_out_variant
def log2(input):
    return input.log2()


@_out_variant
def log10(input):
    return input.log10()


@_out_variant
def floor(input):
    return input.floor()


@_out_variant
def ceil(input):
    return input.ceil()


@_out_variant
def round(input):
    return input.round()


@_out_variant
def trunc(input):
    return input.trunc()


@_out_variant
def frac(input):
    return input.frac()


@_out_variant
def square(input):
    return input.square()


def flip(input, dims):
    return input.flip(dims)


def roll(input, shifts, dims=None):
    return input.roll(shifts, dims)


@_out_variant
def cumsum(input, dim, dtype=None):
    return input.cumsum(dim, dtype=dtype)


@_out_variant
def tril(input, diagonal=0):
    return input.tril(diagonal)


@_out_variant
def triu(input, diagonal=0):
    return input.triu(diagonal)


@_out_variant
def cos(input):
    return input.cos()


@_out_variant
def tanh(input):
    return input.tanh()


@_out_variant
def sigmoid(input):
    return input.sigmoid()


def relu(input):
    return input.relu()


def gelu(input, approximate="none"):
    return input.gelu(approximate)


@_out_variant
def erf(input):
    return input.erf()


@_out_variant
def clamp(input, min=None, max=None):
    return input.clamp(min, max)


clip = clamp


@_out_variant
def maximum(input, other):
    return input.maximum(_tensor_arg(other, input))


@_out_variant
def minimum(input, other):
    return input.minimum(_tensor_arg(other, input))


@_out_variant
def sum(input, dim=None, keepdim=False, *, dtype=None):
    return input.sum(dim, keepdim, dtype=dtype)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var, mean)`` from one node (``VarMeanBackward0``)."""
    return input._spread_mean("var_mean", dim, unbiased, keepdim, correction)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std, mean)`` from one node (``StdMeanBackward0``)."""
    return input._spread_mean("std_mean", dim, unbiased, keepdim, correction)


@_out_variant
def all(input, dim=None, keepdim=False):
    return _t(input).all(dim, keepdim)


@_out_variant
def any(input, dim=None, keepdim=False):
    return _t(input).any(dim, keepdim)


@_out_variant
def mean(input, dim=None, keepdim=False, *, dtype=None):
    return input.mean(dim, keepdim, dtype=dtype)


@_out_variant
def prod(input, dim=None, keepdim=False):
    return input.prod(dim, keepdim)


def max(input, dim=None, keepdim=False):
    return input.max(dim, keepdim)


def min(input, dim=None, keepdim=False):
    return input.min(dim, keepdim)


@_out_variant
def amax(input, dim=(), keepdim=False):
    return input.amax(dim, keepdim)


@_out_variant
def amin(input, dim=(), keepdim=False):
    return input.amin(dim, keepdim)


@_out_variant
def argmax(input, dim=None, keepdim=False):
    return input.argmax(dim, keepdim)


@_out_variant
def argmin(input, dim=None, keepdim=False):
    return input.argmin(dim, keepdim)


@_out_variant
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return input.var(dim, unbiased, keepdim, correction=correction)


@_out_variant
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return input.std(dim, unbiased, keepdim, correction=correction)


def norm(input, p="fro", dim=None, keepdim=False):
    return input.norm(p, dim, keepdim)


@_out_variant
def logsumexp(input, dim, keepdim=False):
    return input.logsumexp(dim, keepdim)


def softmax(input, dim):
    return input.softmax(dim)


def log_softmax(input, dim):
    return input.log_softmax(dim)


@_out_variant
def matmul(input, other):
    return input.matmul(other)


@_out_variant
def mm(input, mat2):
    return input.mm(mat2)


@_out_variant
def bmm(input, mat2):
    return input.bmm(mat2)


@_out_variant
def mv(input, vec):
    return input.mv(vec)


@_out_variant
def dot(input, tensor):
    return input.dot(tensor)


def t(input):
    return input.t()


def transpose(input, dim0, dim1):
    return input.transpose(dim0, dim1)


def permute(input, dims):
    return input.permute(dims)


def reshape(input, shape):
    return input.reshape(shape)


def squeeze(input, dim=None):
    return input.squeeze(dim)


def unsqueeze(input, dim):
    return input.unsqueeze(dim)


def flatten(input, start_dim=0, end_dim=-1):
    return input.flatten(start_dim, end_dim)


def split(tensor, split_size_or_sections, dim=0):
    return tensor.split(split_size_or_sections, dim)


def chunk(input, chunks, dim=0):
    return input.chunk(chunks, dim)


def unbind(input, dim=0):
    return input.unbind(dim)


def narrow(input, dim, start, length):
    return input.narrow(dim, start, length)


def select(input, dim, index):
    return input.select(dim, index)


def diagonal(input, offset=0, dim1=0, dim2=1):
    return input.diagonal(offset, dim1, dim2)


@_out_variant
def gather(input, dim, index):
    return input.gather(dim, index)


@_out_variant
def scatter_add(input, dim, index, src):
    return input.scatter_add(dim, index, src)


@_out_variant
def index_select(input, dim, index):
    return input.index_select(dim, index)


@_out_variant
def index_add(input, dim, index, source):
    return input.index_add(dim, index, source)


def masked_fill(input, mask, value):
    return input.masked_fill(mask, value)


@_out_variant
def eq(input, other):
    return input == other


@_out_variant
def ne(input, other):
    return input != other


@_out_variant
def lt(input, other):
    return input < other


@_out_variant
def le(input, other):
    return input <= other


@_out_variant
def gt(input, other):
    return input > other


@_out_variant
def ge(input, other):
    return input >= other


def as_strided(input, size, stride, storage_offset=None):
    return input.as_strided(size, stride, storage_offset)


def clone(input, *, memory_format=preserve_format):
    return input.clone(memory_format=memory_format)


def detach(input):
    return input.detach()


def numel(input):
    return input.numel()


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return input.allclose(other, rtol, atol, equal_nan)


def equal(input, other):
    return input.equal(other)


def is_tensor(obj):
    return isinstance(obj, Tensor)


def expand_copy(input, size):
    return input.expand(size).clone()


def clamp_min(input, min):
    return input.clamp_min(min)


def clamp_max(input, max):
    return input.clamp_max(max)


def isnan(input):
    return input.isnan()


def isinf(input):
    return input.isinf()


def isfinite(input):
    return input.isfinite()


def sort(input, dim=-1, descending=False, stable=False):
    return input.sort(dim, descending, stable)


def argsort(input, dim=-1, descending=False, stable=False):
    return input.argsort(dim, descending, stable)


def topk(input, k, dim=-1, largest=True, sorted=True):
    return input.topk(k, dim, largest, sorted)


# ---- PyTorch's wider surface: the function forms of the methods ------------------------------
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return input.isclose(other, rtol, atol, equal_nan)


@_out_variant
def outer(input, vec2):
    return input.outer(vec2)


ger = outer


def cross(input, other, dim=None):
    return input.cross(other, dim)


def diag(input, diagonal=0):
    return input.diag(diagonal)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    return input.diag_embed(offset, dim1, dim2)


def trace(input):
    return input.trace()


@_out_variant
def logaddexp(input, other):
    return input.logaddexp(other)


@_out_variant
def lerp(input, end, weight):
    return input.lerp(end, weight)


@_out_variant
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    return input.addmm(mat1, mat2, beta=beta, alpha=alpha)


@_out_variant
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return input.baddbmm(batch1, batch2, beta=beta, alpha=alpha)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    return input.multinomial(num_samples, replacement, generator=generator)


def nonzero(input, *, as_tuple=False):
    return input.nonzero(as_tuple=as_tuple)


def argwhere(input):
    return input.argwhere()


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    return input.unique(sorted, return_inverse, return_counts, dim)


@_out_variant
def masked_select(input, mask):
    return input.masked_select(mask)


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    return input.scatter(dim, index, src, value=value, reduce=reduce)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    return input.repeat_interleave(repeats, dim, output_size=output_size)


def tile(input, dims):
    return input.tile(dims)


def broadcast_to(input, size):
    return input.broadcast_to(size)


def broadcast_shapes(*shapes):
    """The shape that ``shapes`` broadcast to (PyTorch's RuntimeError when they do not)."""
    shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    ndims = sorted(len(s) for s in shapes)  # (``max`` here is nbgrad's)
    result = [1] * (ndims[-1] if ndims else 0)
    for k, shape in enumerate(shapes):
        for i in range(1, len(shape) + 1):
            have, new = result[-i], shape[-i]
            if new == 1 or have == new:
                continue
            if have != 1:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {new} at {-i}! Mismatching "
                    f"argument at index {k} had {shape}; but expected shape should be "
                    f"broadcastable to {result}"
                )
            result[-i] = new
    return Size(result)


def broadcast_tensors(*tensors):
    """The tensors expanded to one shape (views, ``ExpandBackward0``)."""
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)


def movedim(input, source, destination):
    return input.movedim(source, destination)


moveaxis = movedim


def swapaxes(input, axis0, axis1):
    return input.swapaxes(axis0, axis1)


def swapdims(input, dim0, dim1):
    return input.swapdims(dim0, dim1)


@_out_variant
def take(input, index):
    return input.take(index)


@_out_variant
def cumprod(input, dim, *, dtype=None):
    return input.cumprod(dim, dtype=dtype)


@_out_variant
def atan2(input, other):
    return input.atan2(other)


arctan2 = atan2


@_out_variant
def hypot(input, other):
    return input.hypot(other)


@_out_variant
def fmod(input, other):
    return input.fmod(other)


@_out_variant
def logical_and(input, other):
    return input.logical_and(other)


@_out_variant
def logical_or(input, other):
    return input.logical_or(other)


@_out_variant
def logical_xor(input, other):
    return input.logical_xor(other)


@_out_variant
def logical_not(input):
    return input.logical_not()


def median(input, dim=None, keepdim=False):
    return input.median(dim, keepdim)


@_out_variant
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    return input.quantile(q, dim, keepdim, interpolation=interpolation)


@_out_variant
def kron(input, other):
    return input.kron(other)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    return input.nan_to_num(nan, posinf, neginf)


def count_nonzero(input, dim=None):
    return input.count_nonzero(dim)


@_out_variant
def erfinv(input):
    return input.erfinv()
