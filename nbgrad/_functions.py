"""Function forms of the Tensor methods (``ng.exp(x)``, ``ng.matmul(a, b)``, ...)."""

from __future__ import annotations

from .tensor import Tensor, _tensor_arg, as_tensor

__all__ = [
    "add",
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
]


def _t(x):
    return x if isinstance(x, Tensor) else as_tensor(x)


def add(input, other, *, alpha=1):
    return _t(input).add(other, alpha=alpha)


def sub(input, other, *, alpha=1):
    return _t(input).sub(other, alpha=alpha)


def mul(input, other):
    return _t(input).mul(other)


def div(input, other):
    return _t(input).div(other)


def floor_divide(input, other):
    if not isinstance(input, Tensor):
        return other.__rfloordiv__(input)
    return input.floor_divide(other)


def remainder(input, other):
    if not isinstance(input, Tensor):
        return other.__rmod__(input)
    return input.remainder(other)


def pow(input, exponent):
    if not isinstance(input, Tensor):
        return exponent.__rpow__(input)
    return input.pow(exponent)


def neg(input):
    return input.neg()


def abs(input):
    return input.abs()


def sign(input):
    return input.sign()


def bernoulli(input, p=None):
    return input.bernoulli(p)


def exp(input):
    return input.exp()


def log(input):
    return input.log()


def log1p(input):
    return input.log1p()


def sqrt(input):
    return input.sqrt()


def rsqrt(input):
    return input.rsqrt()


def reciprocal(input):
    return input.reciprocal()


def sin(input):
    return input.sin()


def tan(input):
    return input.tan()


def asin(input):
    return input.asin()


def acos(input):
    return input.acos()


def atan(input):
    return input.atan()


def sinh(input):
    return input.sinh()


def cosh(input):
    return input.cosh()


def expm1(input):
    return input.expm1()


def exp2(input):
    return input.exp2()


def log2(input):
    return input.log2()


def log10(input):
    return input.log10()


def floor(input):
    return input.floor()


def ceil(input):
    return input.ceil()


def round(input):
    return input.round()


def trunc(input):
    return input.trunc()


def frac(input):
    return input.frac()


def square(input):
    return input.square()


def flip(input, dims):
    return input.flip(dims)


def roll(input, shifts, dims=None):
    return input.roll(shifts, dims)


def cumsum(input, dim, dtype=None):
    return input.cumsum(dim, dtype=dtype)


def tril(input, diagonal=0):
    return input.tril(diagonal)


def triu(input, diagonal=0):
    return input.triu(diagonal)


def cos(input):
    return input.cos()


def tanh(input):
    return input.tanh()


def sigmoid(input):
    return input.sigmoid()


def relu(input):
    return input.relu()


def gelu(input, approximate="none"):
    return input.gelu(approximate)


def erf(input):
    return input.erf()


def clamp(input, min=None, max=None):
    return input.clamp(min, max)


clip = clamp


def maximum(input, other):
    return input.maximum(_tensor_arg(other, input))


def minimum(input, other):
    return input.minimum(_tensor_arg(other, input))


def sum(input, dim=None, keepdim=False, *, dtype=None):
    return input.sum(dim, keepdim, dtype=dtype)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var, mean)`` from one node (``VarMeanBackward0``)."""
    return input._spread_mean("var_mean", dim, unbiased, keepdim, correction)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std, mean)`` from one node (``StdMeanBackward0``)."""
    return input._spread_mean("std_mean", dim, unbiased, keepdim, correction)


def all(input, dim=None, keepdim=False):
    return _t(input).all(dim, keepdim)


def any(input, dim=None, keepdim=False):
    return _t(input).any(dim, keepdim)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    return input.mean(dim, keepdim, dtype=dtype)


def prod(input, dim=None, keepdim=False):
    return input.prod(dim, keepdim)


def max(input, dim=None, keepdim=False):
    return input.max(dim, keepdim)


def min(input, dim=None, keepdim=False):
    return input.min(dim, keepdim)


def amax(input, dim=(), keepdim=False):
    return input.amax(dim, keepdim)


def amin(input, dim=(), keepdim=False):
    return input.amin(dim, keepdim)


def argmax(input, dim=None, keepdim=False):
    return input.argmax(dim, keepdim)


def argmin(input, dim=None, keepdim=False):
    return input.argmin(dim, keepdim)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return input.var(dim, unbiased, keepdim, correction=correction)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return input.std(dim, unbiased, keepdim, correction=correction)


def norm(input, p="fro", dim=None, keepdim=False):
    return input.norm(p, dim, keepdim)


def logsumexp(input, dim, keepdim=False):
    return input.logsumexp(dim, keepdim)


def softmax(input, dim):
    return input.softmax(dim)


def log_softmax(input, dim):
    return input.log_softmax(dim)


def matmul(input, other):
    return input.matmul(other)


def mm(input, mat2):
    return input.mm(mat2)


def bmm(input, mat2):
    return input.bmm(mat2)


def mv(input, vec):
    return input.mv(vec)


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


def gather(input, dim, index):
    return input.gather(dim, index)


def scatter_add(input, dim, index, src):
    return input.scatter_add(dim, index, src)


def index_select(input, dim, index):
    return input.index_select(dim, index)


def index_add(input, dim, index, source):
    return input.index_add(dim, index, source)


def masked_fill(input, mask, value):
    return input.masked_fill(mask, value)


def eq(input, other):
    return input == other


def ne(input, other):
    return input != other


def lt(input, other):
    return input < other


def le(input, other):
    return input <= other


def gt(input, other):
    return input > other


def ge(input, other):
    return input >= other


def clone(input):
    return input.clone()


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
