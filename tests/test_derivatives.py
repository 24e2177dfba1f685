"""One parametrised test over every row of the op table (``nbgrad.derivatives.OPS``).

Modelled on PyTorch's OpInfo: each row has a small declarative list of cases. A case names its
row, a callable that reaches the row through the public Tensor API (``lambda x, y: x * y``), a
NumPy reference, and a few samples (shapes, with broadcasting, 0-d and empty tensors where the
op allows them). The same callable runs on nbgrad and on torch tensors (``lib(x)`` is the
library of ``x``), so torch is only a test oracle, imported inside the parity test.

Checks per case:

- forward against the NumPy reference;
- ``gradcheck`` and ``gradgradcheck`` in float64 (differentiable rows); a row with
  ``differentiable=False`` checks instead that its output does not require grad;
- parity with PyTorch in float64: outputs, dtypes, gradients for a random upstream gradient,
  and ``grad_fn.name()``.

Rows that are internal helpers (``rsub``, ``unsafe_view``, ``index_backward``, ``copy``, ...)
are reached through the public API that uses them: ``2 - x``, ``x ** y``, ``x @ y``, in-place
ops on a clone, ``t[k] = v``, and double backward through indexing or through an in-place op on
a view. For each differentiable case the row's node must show up in the graph that the case
builds, so a case cannot claim a row that it does not exercise.
"""

from __future__ import annotations

import math
import sys
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
import scipy.linalg
import scipy.special

import nbgrad as ng
from nbgrad._graph.table_node import TableNode
from nbgrad.derivatives import OPS

# NumPy's RuntimeWarnings (0 * inf, 0 / 0, overflow) are errors here: PyTorch computes the same
# values silently, so a kernel or a formula that warns has a stray warning to silence
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


# ---- the vocabulary of the cases -----------------------------------------------------------
def lib(t):
    """The library that tensor ``t`` belongs to: nbgrad, or torch in the parity test."""
    return ng if isinstance(t, ng.Tensor) else sys.modules["torch"]


class Const:
    """An input that does not require grad (an index, a mask), given by its values."""

    def __init__(self, values):
        self.values = np.asarray(values)

    def __repr__(self):
        return f"const{list(self.values.shape)}"


class Values:
    """A float64 input that requires grad, with these exact values (ties, zeros, ...)."""

    def __init__(self, values):
        self.values = np.asarray(values, dtype=np.float64)

    def __repr__(self):
        return f"values{list(self.values.shape)}"


@dataclass
class Case:
    """One way to reach a row of the table, on several samples.

    ``samples``: a list of tuples of input specs; a spec is a shape (a random float64 tensor
    that requires grad, drawn from ``domain``), ``Values`` or ``Const``.
    ``domain``: ``"signed"`` (|x| in [0.25, 2], either sign), ``"positive"`` ([0.5, 2]) or
    ``"ints"`` (integers in [-2, 2], to get ties and zeros for comparisons and logic).
    ``grad``: False for parity-only cases at points where the op is not differentiable (ties),
    where finite differences mean nothing; ``gradgrad``: False where only the second
    derivative is undefined. ``not_implemented``: for a row whose node is PyTorch's
    ``NotImplemented``, the op named in the error that backward raises.
    """

    op: str
    fn: Callable
    ref: Callable
    samples: list
    domain: str = "signed"
    grad: bool = True
    gradgrad: bool = True
    gradcheck_kw: dict = field(default_factory=dict)
    not_implemented: str | None = None  # the op name of PyTorch's error when backward runs


UNARY = [((2, 3),), ((),), ((0, 2),)]
BINARY = [((2, 3), (2, 3)), ((2, 3), (3,)), ((), (2, 1)), ((2, 1), (1, 3)), ((0, 3), (1, 3))]
NO_EMPTY = [((2, 3),), ((),), ((4,),)]


# ---- small helpers shared by functions and references ----------------------------------------
def gelu(x, approximate="none"):
    if isinstance(x, ng.Tensor):
        return x.gelu(approximate)
    return sys.modules["torch"].nn.functional.gelu(x, approximate=approximate)


def np_gelu(a, approximate="none"):
    if approximate == "tanh":
        return 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a**3)))
    return 0.5 * a * (1 + scipy.special.erf(a / math.sqrt(2)))


def np_softmax(a, dim):
    e = np.exp(a - np.max(a, axis=dim, keepdims=True)) if a.size else a
    return e / np.sum(e, axis=dim, keepdims=True) if a.size else a


def np_norm(a, p=2, dim=None, keepdim=False):
    if p == math.inf:
        return np.amax(np.abs(a), axis=dim, keepdims=keepdim)
    return np.sum(np.abs(a) ** p, axis=dim, keepdims=keepdim) ** (1 / p)


def np_mean(a, axis=None, keepdims=False):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.mean(a, axis=axis, keepdims=keepdims)


def np_scatter(shape, index, values):
    out = np.zeros(shape)
    np.add.at(out, index, values)
    return out


def np_put(a, key, v):
    out = a.copy()
    out[key] = v
    return out


def put_items(x, v):
    y = x.clone()
    y[[0, 1], [2, 0]] = v
    return y


def put_mask(x, mask):
    y = x.clone()
    y[mask] = 0.5
    return y


def put_slice(x, v):
    y = x * 1
    y[0:1] = v
    return y


def copy_into(x, v):
    y = x.clone()
    y.copy_(v)
    return y


def mul_on_view(x, w):
    """An in-place op on a view of a non-leaf: CopySlices over the base."""
    y = x.clone()
    y[0].mul_(w)
    return y


def grad_of(fn, create_graph=True):
    """The first-order gradient of ``sum(fn(x, ...) ** 2)`` w.r.t. ``x``, recorded (so that
    checking it checks the rows that the backward pass itself uses)."""

    def g(x, *rest):
        y = fn(x, *rest)
        return lib(x).autograd.grad((y * y).sum(), x, create_graph=create_graph)[0]

    return g


def np_grad_index(a, key):
    return np_scatter(a.shape, key, 2 * a[key])


def np_squeeze_dims(a, dims):
    return np.squeeze(a, tuple(d for d in dims if a.shape[d] == 1)) if a.ndim else a


def np_unfold(a, dim, size, step):
    windows = np.lib.stride_tricks.sliding_window_view(a, size, axis=dim)
    return windows[(slice(None),) * (dim % a.ndim) + (slice(None, None, step),)]


def np_grad_unfold(a, dim, size, step):
    """The gradient of ``sum(unfold(x) ** 2)``: 2x times the number of windows holding x."""
    cover = np.zeros(a.shape)
    for j in range((a.shape[dim] - size) // step + 1):
        cover[(slice(None),) * dim + (slice(j * step, j * step + size),)] += 1
    return 2 * a * cover


def np_grad_diagonal(a, offset, dim1, dim2):
    g = np.zeros_like(a)
    d = np.diagonal(g, offset, dim1, dim2)
    d.flags.writeable = True
    d[...] = 2 * np.diagonal(a, offset, dim1, dim2)
    return g


def np_grad_mul_on_view(a, w):
    g = 2 * a.copy()
    g[0] = 2 * a[0] * w * w
    return g


def np_max_dim(a, dim, keepdim=False):
    return np.max(a, axis=dim, keepdims=keepdim), np.argmax(a, axis=dim, keepdims=keepdim)


def np_min_dim(a, dim, keepdim=False):
    return np.min(a, axis=dim, keepdims=keepdim), np.argmin(a, axis=dim, keepdims=keepdim)


def np_split(a, sizes, dim):
    return tuple(np.split(a, np.cumsum(sizes)[:-1], axis=dim))


def np_along(a, dim, index):
    return np.take_along_axis(a, index, axis=dim)


def np_scatter_add(a, dim, index, src):
    out = a.copy()
    key = list(np.indices(index.shape, sparse=True))
    key[dim] = index
    np.add.at(out, tuple(key), src[tuple(slice(0, s) for s in index.shape)])
    return out


def np_index_add(a, dim, index, src):
    out = a.copy()
    np.add.at(out, (slice(None),) * dim + (index,), src)
    return out


TIES = Values([[1.0, 3.0, 3.0], [0.5, -1.0, 0.5]])
INT_VALUES = Const(np.array([[5, -3, 0], [7, -8, 1]]))  # integer tensors (no grad)
FD = "floor_divide"
WITH_ZERO = Values([[1.5, 0.0, -2.0], [0.5, 1.25, -0.75]])
TWO_ZEROS = Values([[1.5, 0.0, 0.0], [0.5, 1.25, -0.75]])
MASK = Const([[True, False, True], [False, False, True]])
MASK_ROW = Const([False, True, True])
INDEX = Const([[0, 2], [1, 1]])


# ---- the cases, grouped as the table is --------------------------------------------------
# fmt: off
CASES = [
    # elementwise binary
    Case("add", lambda x, y: x + y, np.add, BINARY),
    Case("add", lambda x, y: x.add(y, alpha=2), lambda a, b: a + 2 * b, BINARY[:2]),
    Case("add", lambda x: x + 2.5, lambda a: a + 2.5, UNARY),
    Case("add", lambda x, y: x.clone().add_(y), np.add, BINARY[:2]),
    Case("sub", lambda x, y: x - y, np.subtract, BINARY),
    Case("sub", lambda x, y: x.sub(y, alpha=0.5), lambda a, b: a - 0.5 * b, BINARY[:2]),
    Case("sub", lambda x: x - 1.5, lambda a: a - 1.5, UNARY),
    Case("rsub", lambda x: 2.5 - x, lambda a: 2.5 - a, UNARY),
    Case("rsub", lambda x: _rsub(x, other=2.5, alpha=3.0), lambda a: 2.5 - 3.0 * a, UNARY),
    Case("mul", lambda x, y: x * y, np.multiply, BINARY),
    Case("mul", lambda x: x * 3, lambda a: a * 3, UNARY),
    Case("mul", lambda x, y: x.clone().mul_(y), np.multiply, BINARY[:2]),
    Case("div", lambda x, y: x / y, np.divide, BINARY),
    Case("div", lambda x: x / 4, lambda a: a / 4, UNARY),
    Case("div", lambda x, y: x.clone().div_(y), np.divide, BINARY[:2]),
    Case("floor_divide", lambda x, y: x // y, np.floor_divide, BINARY, not_implemented=FD),
    Case("floor_divide", lambda x: x // 0.5, lambda a: a // 0.5, UNARY, not_implemented=FD),
    Case("floor_divide", lambda x: 3 // x, lambda a: 3 // a, UNARY[:2], not_implemented=FD),
    Case("floor_divide", lambda x: x // 2, lambda a: a // 2, [(INT_VALUES,)]),
    Case("remainder_scalar", lambda x: x % 2.5, lambda a: np.remainder(a, 2.5), UNARY),
    Case("remainder_scalar", lambda x: x % -3.0, lambda a: np.remainder(a, -3.0), UNARY),
    Case("remainder_scalar", lambda x: x % 3, lambda a: np.remainder(a, 3), [(INT_VALUES,)]),
    Case("remainder", lambda x, y: x % y, np.remainder, BINARY, domain="positive"),
    Case("remainder", lambda x, y: x % y, np.remainder, [(Values([[7.5, -3]]), (2,))], grad=False),
    Case("rremainder", lambda x: 3 % x, lambda a: np.remainder(3, a), UNARY[:2],
         not_implemented="remainder"),
    Case("pow", lambda x: x**2, lambda a: a**2, UNARY),
    Case("pow", lambda x: x**3, lambda a: a**3, UNARY),
    Case("pow", lambda x: x**0, lambda a: a**0, UNARY),
    Case("pow", lambda x: x**0.5, np.sqrt, UNARY, domain="positive"),
    Case("pow", lambda x: x**-1.5, lambda a: a**-1.5, UNARY, domain="positive"),
    Case("pow_tensor", lambda x, y: x**y, np.power, BINARY, domain="positive"),
    Case("rpow", lambda x: 2**x, lambda a: 2.0**a, UNARY),
    Case("rpow", lambda x: 0.5**x, lambda a: 0.5**a, UNARY),
    Case("maximum", lambda x, y: x.maximum(y), np.maximum, BINARY),
    Case("maximum", lambda x, y: lib(x).maximum(x, y), np.maximum, [(TIES, TIES)], grad=False),
    Case("minimum", lambda x, y: x.minimum(y), np.minimum, BINARY),
    Case("minimum", lambda x, y: lib(x).minimum(x, y), np.minimum, [(TIES, TIES)], grad=False),
    Case("where", lambda c, x, y: lib(x).where(c, x, y), np.where,
         [(MASK, (2, 3), (2, 3)), (MASK_ROW, (2, 1), (3,)), (Const(True), (), (2,)),
          (Const(np.zeros((0, 3), bool)), (0, 3), (3,))]),
    Case("where", lambda x, y: lib(x).where(x > 0, x, y), lambda a, b: np.where(a > 0, a, b),
         BINARY[:2]),
    Case("masked_fill", lambda x, m: x.masked_fill(m, 0.5), lambda a, m: np.where(m, 0.5, a),
         [((2, 3), MASK), ((2, 3), MASK_ROW), ((), Const(True)), ((0, 3), MASK_ROW)]),
    # comparisons and logic: forward only, never require grad
    Case("eq", lambda x, y: x == y, np.equal, BINARY, domain="ints"),
    Case("eq", lambda x: x == 1, lambda a: a == 1, UNARY, domain="ints"),
    Case("ne", lambda x, y: x != y, np.not_equal, BINARY, domain="ints"),
    Case("lt", lambda x, y: x < y, np.less, BINARY, domain="ints"),
    Case("le", lambda x, y: x <= y, np.less_equal, BINARY, domain="ints"),
    Case("gt", lambda x, y: x > y, np.greater, BINARY, domain="ints"),
    Case("gt", lambda x: x > 0, lambda a: a > 0, UNARY, domain="ints"),
    Case("ge", lambda x, y: x >= y, np.greater_equal, BINARY, domain="ints"),
    Case("logical_and", lambda x, y: x.logical_and(y), np.logical_and, BINARY, domain="ints"),
    Case("logical_and", lambda x, y: (x > 0) & (y > 0), lambda a, b: (a > 0) & (b > 0),
         BINARY[:2], domain="ints"),
    Case("logical_or", lambda x, y: x.logical_or(y), np.logical_or, BINARY, domain="ints"),
    Case("logical_xor", lambda x, y: x.logical_xor(y), np.logical_xor, BINARY, domain="ints"),
    Case("logical_not", lambda x: x.logical_not(), np.logical_not, UNARY, domain="ints"),
    Case("logical_not", lambda x: ~(x > 0), lambda a: ~(a > 0), UNARY, domain="ints"),
    Case("argmax", lambda x: x.argmax(), np.argmax, NO_EMPTY),
    Case("argmax", lambda x: x.argmax(1), lambda a: np.argmax(a, 1), [((2, 3),), ((0, 3),)]),
    Case("argmax", lambda x: x.argmax(0), np.argmax, [((),)]),
    Case("argmax", lambda x: x.argmax(0, keepdim=True), lambda a: np.argmax(a, 0, keepdims=True),
         [((2, 3),)]),
    Case("argmin", lambda x: x.argmin(), np.argmin, NO_EMPTY),
    Case("argmin", lambda x: x.argmin(-1), lambda a: np.argmin(a, -1), [((2, 3),)]),
    # elementwise unary
    Case("neg", lambda x: -x, np.negative, UNARY),
    Case("neg", lambda x: x.neg(), np.negative, UNARY),
    Case("abs", lambda x: x.abs(), np.abs, UNARY),
    Case("abs", lambda x: abs(x), np.abs, UNARY),
    Case("sign", lambda x: x.sign(), np.sign, UNARY),
    Case("exp", lambda x: x.exp(), np.exp, UNARY),
    Case("log", lambda x: x.log(), np.log, UNARY, domain="positive"),
    Case("log1p", lambda x: x.log1p(), np.log1p, UNARY, domain="positive"),
    Case("sqrt", lambda x: x.sqrt(), np.sqrt, UNARY, domain="positive"),
    Case("rsqrt", lambda x: x.rsqrt(), lambda a: 1 / np.sqrt(a), UNARY, domain="positive"),
    Case("reciprocal", lambda x: x.reciprocal(), np.reciprocal, UNARY),
    Case("reciprocal", lambda x: 1 / x, np.reciprocal, UNARY),
    Case("sin", lambda x: x.sin(), np.sin, UNARY),
    Case("cos", lambda x: x.cos(), np.cos, UNARY),
    Case("tanh", lambda x: x.tanh(), np.tanh, UNARY),
    Case("expm1", lambda x: x.expm1(), np.expm1, UNARY),
    Case("exp2", lambda x: x.exp2(), np.exp2, UNARY),
    Case("log2", lambda x: x.log2(), np.log2, UNARY, domain="positive"),
    Case("log10", lambda x: x.log10(), np.log10, UNARY, domain="positive"),
    Case("tan", lambda x: (x * 0.6).tan(), lambda a: np.tan(0.6 * a), UNARY),
    Case("asin", lambda x: (x * 0.4).asin(), lambda a: np.arcsin(0.4 * a), UNARY),
    Case("acos", lambda x: (x * 0.4).acos(), lambda a: np.arccos(0.4 * a), UNARY),
    Case("atan", lambda x: x.atan(), np.arctan, UNARY),
    Case("sinh", lambda x: x.sinh(), np.sinh, UNARY),
    Case("cosh", lambda x: x.cosh(), np.cosh, UNARY),
    # away from the jumps of the rounding functions (the domain's points are not integers)
    Case("floor", lambda x: x.floor(), np.floor, UNARY),
    Case("floor", lambda x: x.floor(), np.floor, [(INT_VALUES,)]),
    Case("ceil", lambda x: x.ceil(), np.ceil, UNARY),
    Case("round", lambda x: (x + 0.1).round(), lambda a: np.round(a + 0.1), UNARY),
    Case("trunc", lambda x: x.trunc(), np.trunc, UNARY),
    Case("frac", lambda x: x.frac(), lambda a: a - np.trunc(a), UNARY),
    Case("sigmoid", lambda x: x.sigmoid(), lambda a: 1 / (1 + np.exp(-a)), UNARY),
    Case("relu", lambda x: x.relu(), lambda a: np.maximum(a, 0), UNARY),
    Case("silu", lambda x: nnf(x).silu(x), lambda a: a / (1 + np.exp(-a)), UNARY),
    Case("elu", lambda x: nnf(x).elu(x), lambda a: np.where(a > 0, a, np.expm1(a)), UNARY),
    Case("elu", lambda x: nnf(x).elu(x, 0.5), lambda a: np.where(a > 0, a, 0.5 * np.expm1(a)),
         UNARY[:1]),
    Case("elu_", lambda x: nnf(x).elu(x.clone(), inplace=True),
         lambda a: np.where(a > 0, a, np.expm1(a)), UNARY[:2]),
    Case("softplus", lambda x: nnf(x).softplus(x), lambda a: np.log1p(np.exp(a)), UNARY),
    Case("threshold", lambda x: nnf(x).threshold(x, 0.5, -3.0),
         lambda a: np.where(a <= 0.5, -3.0, a), UNARY),
    Case("threshold_", lambda x: nnf(x).threshold(x.clone(), 0.5, -3.0, True),
         lambda a: np.where(a <= 0.5, -3.0, a), UNARY),
    Case("softplus", lambda x: nnf(x).softplus(x, 2.0, 1.0),  # both sides of the threshold
         lambda a: np.where(2 * a > 1, a, np.log1p(np.exp(2 * a)) / 2), UNARY[:1]),
    Case("hardtanh", lambda x: nnf(x).hardtanh(x), lambda a: np.clip(a, -1, 1), UNARY),
    Case("hardtanh", lambda x: nnf(x).hardtanh(x, -0.5, 1.5), lambda a: np.clip(a, -0.5, 1.5),
         UNARY[:1]),
    Case("hardtanh", lambda x: nnf(x).relu6(x * 4), lambda a: np.clip(4 * a, 0, 6), UNARY[:1]),
    Case("log_sigmoid", lambda x: nnf(x).logsigmoid(x), lambda a: -np.log1p(np.exp(-a)), UNARY),
    Case("leaky_relu", lambda x: nnf(x).leaky_relu(x, 0.2), lambda a: np.where(a > 0, a, 0.2 * a),
         UNARY),
    Case("leaky_relu_", lambda x: nnf(x).leaky_relu(x.clone(), inplace=True),
         lambda a: np.where(a > 0, a, 0.01 * a), UNARY[:1]),
    Case("erf", lambda x: x.erf(), scipy.special.erf, UNARY),
    Case("gelu", gelu, np_gelu, UNARY),
    Case("gelu", lambda x: gelu(x, "tanh"), lambda a: np_gelu(a, "tanh"), UNARY),
    Case("clamp", lambda x: x.clamp(-0.5, 1.0), lambda a: np.clip(a, -0.5, 1.0), UNARY),
    Case("clamp", lambda x: x.clamp(min=0.3), lambda a: np.maximum(a, 0.3), UNARY),
    Case("clamp", lambda x: x.clamp(max=0.3), lambda a: np.minimum(a, 0.3), UNARY),
    Case("clamp", lambda x: x.clone().clamp_(-1.0, 1.0), lambda a: np.clip(a, -1, 1), UNARY),
    # float32 output: finite differences need a larger step and tolerance
    Case("to_dtype", lambda x: x.to(lib(x).float32), lambda a: a.astype(np.float32), UNARY,
         gradcheck_kw=dict(eps=1e-3, atol=1e-3)),
    Case("to_dtype", lambda x: x.float(), lambda a: a.astype(np.float32), UNARY[:1],
         gradcheck_kw=dict(eps=1e-3, atol=1e-3)),
    Case("clone", lambda x: x.clone(), np.copy, UNARY),
    # reductions
    Case("sum", lambda x: x.sum(), np.sum, UNARY),
    Case("sum_dim", lambda x: x.sum(1), lambda a: a.sum(1), [((2, 3),), ((0, 3),), ((2, 0),)]),
    Case("sum_dim", lambda x: x.sum((0, 2), keepdim=True), lambda a: a.sum((0, 2), keepdims=True),
         [((2, 1, 3),)]),
    Case("sum_dim", lambda x: x.sum(-1), lambda a: a.sum(-1), [((2, 3),), ((),)]),
    Case("mean", lambda x: x.mean(), np_mean, UNARY),
    Case("mean_dim", lambda x: x.mean(1), lambda a: np_mean(a, 1), [((2, 3),), ((0, 3),)]),
    Case("mean_dim", lambda x: x.mean(0), np_mean, [((),)]),
    Case("mean_dim", lambda x: x.mean((0, 1), keepdim=True),
         lambda a: np_mean(a, (0, 1), keepdims=True), [((2, 3),), ((2, 3, 1),)]),
    Case("prod", lambda x: x.prod(), np.prod, UNARY + [(WITH_ZERO,), (TWO_ZEROS,)]),
    Case("prod_dim", lambda x: x.prod(1), lambda a: a.prod(1),
         [((2, 3),), (WITH_ZERO,), (TWO_ZEROS,), ((0, 3),)]),
    Case("prod_dim", lambda x: x.prod(0, keepdim=True), lambda a: a.prod(0, keepdims=True),
         [((2, 3),), (WITH_ZERO,)]),
    Case("prod_dim", lambda x: x.prod(0), np.prod, [((),), (Values(0.0),)]),
    Case("max", lambda x: x.max(), np.max, NO_EMPTY),
    Case("max", lambda x: x.max(), np.max, [(TIES,)], grad=False),
    Case("min", lambda x: x.min(), np.min, NO_EMPTY),
    Case("min", lambda x: x.min(), np.min, [(TIES,)], grad=False),
    Case("max_dim", lambda x: tuple(x.max(1)), lambda a: np_max_dim(a, 1), [((2, 3),), ((0, 3),)]),
    Case("max_dim", lambda x: tuple(x.max(0, keepdim=True)), lambda a: np_max_dim(a, 0, True),
         [((2, 3),)]),
    Case("max_dim", lambda x: x.max(0)[0], np.max, [((),)]),
    Case("min_dim", lambda x: tuple(x.min(-1)), lambda a: np_min_dim(a, -1), [((2, 3),)]),
    Case("min_dim", lambda x: x.min(1, keepdim=True).values, lambda a: a.min(1, keepdims=True),
         [((2, 3),)]),
    Case("amax", lambda x: x.amax(1), lambda a: a.max(1), [((2, 3),), ((0, 3),)]),
    Case("amax", lambda x: x.amax(0), np.max, [((),)]),
    Case("amax", lambda x: x.amax(), np.max, NO_EMPTY),
    Case("amax", lambda x: x.amax((0, 1), keepdim=True), lambda a: a.max((0, 1), keepdims=True),
         [((2, 3),)]),
    Case("amax", lambda x: x.amax(1), lambda a: a.max(1), [(TIES,)], grad=False),
    Case("amin", lambda x: x.amin(0), lambda a: a.min(0), [((2, 3),)]),
    Case("amin", lambda x: x.amin(), np.min, [(TIES,)], grad=False),
    Case("var", lambda x: x.var(), lambda a: np.var(a, ddof=1), [((2, 3),), ((4,),)]),
    Case("var_mean", lambda x: lib(x).var_mean(x, 1), lambda a: (np.var(a, 1, ddof=1), a.mean(1)),
         [((2, 3),)]),
    Case("var_mean", lambda x: lib(x).var_mean(x), lambda a: (np.var(a, ddof=1), a.mean()),
         [((4,),)]),
    Case("std_mean", lambda x: lib(x).std_mean(x, 0, keepdim=True),
         lambda a: (np.std(a, 0, ddof=1, keepdims=True), a.mean(0, keepdims=True)), [((3, 2),)]),
    # std is 0 here: its second derivative is nan (as in torch), so no gradgradcheck
    Case("std", lambda x: x.std(0, correction=0), np.std, [((),)], gradgrad=False),
    Case("var", lambda x: x.var(1), lambda a: np.var(a, 1, ddof=1), [((2, 3),)]),
    Case("var", lambda x: x.var(0, keepdim=True, correction=0),
         lambda a: np.var(a, 0, keepdims=True), [((2, 3),)]),
    Case("var", lambda x: x.var(0, correction=0), np.var, [((),)]),
    Case("var", lambda x: x.var(unbiased=False), np.var, [((2, 3),), ((),)]),
    Case("std", lambda x: x.std(), lambda a: np.std(a, ddof=1), [((2, 3),), ((4,),)]),
    Case("std", lambda x: x.std(1, keepdim=True), lambda a: np.std(a, 1, ddof=1, keepdims=True),
         [((2, 3),)]),
    Case("std", lambda x: x.std(correction=0), np.std, [((2, 3),)]),
    Case("norm", lambda x: x.norm(), np_norm, [((2, 3),), ((),), ((0, 3),)]),
    Case("norm", lambda x: x.norm(1), lambda a: np_norm(a, 1), NO_EMPTY),
    Case("norm", lambda x: x.norm(float("inf")), lambda a: np_norm(a, math.inf), NO_EMPTY),
    Case("norm", lambda x: x.norm(3, dim=1), lambda a: np_norm(a, 3, 1), [((2, 3),)]),
    Case("norm", lambda x: x.norm(dim=0), np.abs, [((),)]),
    Case("norm", lambda x: x.norm(dim=0, keepdim=True), lambda a: np_norm(a, 2, 0, True),
         [((2, 3),)]),
    Case("logsumexp", lambda x: x.logsumexp(1), lambda a: scipy.special.logsumexp(a, 1),
         [((2, 3),), ((0, 3),)]),
    Case("logsumexp", lambda x: x.logsumexp((0, 1), keepdim=True),
         lambda a: scipy.special.logsumexp(a, (0, 1), keepdims=True), [((2, 3),)]),
    Case("logsumexp", lambda x: x.logsumexp(0), lambda a: scipy.special.logsumexp(a), [((),)]),
    Case("softmax", lambda x: x.softmax(1), lambda a: np_softmax(a, 1), [((2, 3),), ((0, 3),)]),
    Case("softmax", lambda x: x.softmax(0), lambda a: np_softmax(a, 0), [((2, 3),), ((),)]),
    Case("log_softmax", lambda x: x.log_softmax(-1), lambda a: np.log(np_softmax(a, -1)),
         [((2, 3),), ((),), ((0, 3),)]),
    # linear algebra
    Case("mm", lambda x, y: x.mm(y), np.matmul,
         [((2, 3), (3, 2)), ((0, 3), (3, 2)), ((2, 0), (0, 3))]),
    Case("mm", lambda x, y: x @ y, np.matmul, [((2, 3), (3, 1))]),
    Case("dot", lambda x, y: x.dot(y), np.dot, [((3,), (3,)), ((0,), (0,))]),
    Case("dot", lambda x, y: x @ y, np.dot, [((3,), (3,))]),
    Case("mv", lambda x, y: x.mv(y), np.matmul, [((2, 3), (3,)), ((0, 3), (3,))]),
    Case("mv", lambda x, y: x @ y, np.matmul, [((2, 3), (3,))]),
    Case("bmm", lambda x, y: x.bmm(y), np.matmul, [((2, 2, 3), (2, 3, 2)), ((0, 2, 3), (0, 3, 1))]),
    # views and shape ops
    Case("view", lambda x: x.view(3, 2), lambda a: a.reshape(3, 2), [((2, 3),), ((6,),)]),
    # the legacy constructor's alias of a tensor of its own type
    Case("alias", lambda x: x.new(x), lambda a: a.copy(), UNARY),
    Case("view", lambda x: x.view(-1), lambda a: a.reshape(-1), [((2, 3),), ((),), ((0, 3),)]),
    Case("view", lambda x: x.reshape(1, 3, 2), lambda a: a.reshape(1, 3, 2), [((2, 3),)]),
    Case("view", lambda x: x.flatten(), lambda a: a.reshape(-1), [((2, 1, 3),)]),
    Case("reshape_alias", lambda x: x.t().reshape(x.shape[1], x.shape[0], 1),
         lambda a: a.T[..., None], [((2, 3),), ((3, 2),)]),
    Case("reshape_alias", lambda x: x.transpose(0, 1).reshape(3, 2), lambda a: a.T, [((2, 3),)]),
    Case("reshape_alias", lambda x: x[:, ::2].reshape(2, 2, 1), lambda a: a[:, ::2][..., None],
         [((2, 3),)]),
    # a reshape that must copy: clone, then _unsafe_view
    Case("unsafe_view", lambda x: x.t().reshape(-1), lambda a: a.T.reshape(-1), [((2, 3),)]),
    Case("unsafe_view", lambda x: x.transpose(0, 1).reshape(-1), lambda a: a.T.reshape(-1),
         [((2, 3),)]),
    # torch's matmul is composite: it folds the batch into mm/mv or expands it into bmm and
    # ends in an _unsafe_view
    Case("unsafe_view", lambda x, y: x @ y, np.matmul,
         [((2, 2, 3), (3, 2)), ((3,), (2, 3, 2)), ((2, 3, 2), (2,)), ((2, 1, 2, 3), (3, 3, 1)),
          ((2, 2, 3), (2, 3, 1))]),
    Case("t", lambda x: x.t(), np.transpose, [((2, 3),), ((3,),), ((),), ((0, 2),)]),
    Case("transpose", lambda x: x.transpose(0, 2), lambda a: np.swapaxes(a, 0, 2),
         [((2, 1, 3),), ((2, 0, 1),)]),
    Case("transpose", lambda x: x.transpose(-1, 0), lambda a: np.swapaxes(a, -1, 0), [((2, 3),)]),
    Case("permute", lambda x: x.permute(2, 0, 1), lambda a: np.transpose(a, (2, 0, 1)),
         [((2, 1, 3),), ((2, 0, 1),)]),
    Case("expand", lambda x: x.expand(2, 3), lambda a: np.broadcast_to(a, (2, 3)),
         [((3,),), ((1, 3),), ((),)]),
    Case("expand", lambda x: x.expand(2, -1, 0), lambda a: np.broadcast_to(a, (2, 1, 0)),
         [((1, 1),)]),
    Case("expand", lambda x, y: x + y.expand_as(x), lambda a, b: a + b, [((2, 3), (1, 3))]),
    Case("squeeze", lambda x: x.squeeze(), np.squeeze, [((2, 1, 3),), ((1, 1),), ((),), ((0, 1),)]),
    Case("squeeze_dim", lambda x: x.squeeze(1), lambda a: np.squeeze(a, 1), [((2, 1, 3),)]),
    Case("squeeze_dim", lambda x: x.squeeze(0), lambda a: a, [((2, 3),), ((),)]),
    # 1-d @ 2-d: mm of the unsqueezed vector, then squeeze_(0) on the fresh result
    Case("squeeze_dim_", lambda x, y: x @ y, np.matmul, [((2,), (2, 3)), ((0,), (0, 2))]),
    Case("unsqueeze", lambda x: x.unsqueeze(0), lambda a: a[None], UNARY),
    Case("unsqueeze", lambda x: x.unsqueeze(-1), lambda a: a[..., None], UNARY),
    Case("unsqueeze", lambda x: x[:, None], lambda a: a[:, None], [((2, 3),)]),
    Case("select", lambda x: x[1], lambda a: a[1], [((2, 3),), ((3,),)]),
    Case("select", lambda x: x.select(1, -1), lambda a: a[:, -1], [((2, 3),), ((0, 3),)]),
    Case("unbind", lambda x: x.unbind(1), lambda a: tuple(np.moveaxis(a, 1, 0)),
         [((2, 3),), ((0, 3),)]),
    Case("unbind", lambda x: x.unbind()[1], lambda a: a[1], [((3, 2),)]),
    Case("unbind", lambda x: tuple(x), lambda a: tuple(a), [((2, 3),), ((3,),)]),
    Case("slice", lambda x: x[:, 1:], lambda a: a[:, 1:], [((2, 3),)]),
    Case("slice", lambda x: x[::2], lambda a: a[::2], [((3, 2),), ((5,),)]),
    Case("slice", lambda x: x.narrow(1, 0, 2), lambda a: a[:, 0:2], [((2, 3),)]),
    Case("slice", lambda x: x[2:], lambda a: a[2:], [((2, 3),)]),
    Case("index", lambda x: x[[0, 1, 0]], lambda a: a[[0, 1, 0]], [((2, 3),)]),
    Case("index", lambda x: x[:, [2, 0]], lambda a: a[:, [2, 0]], [((2, 3),)]),
    Case("index", lambda x, m: x[m], lambda a, m: a[m], [((2, 3), MASK)]),
    Case("index", lambda x, m: x[:, m], lambda a, m: a[:, m], [((2, 3), MASK_ROW)]),
    Case("index", lambda x, i: x[i], lambda a, i: a[i],
         [((3, 2), INDEX), ((3,), Const(np.zeros(0, np.int64)))]),
    Case("index", lambda x: x[[0, 1], [2, 2]], lambda a: a[[0, 1], [2, 2]], [((2, 3),)]),
    Case("index_put", put_items, lambda a, v: np_put(a, ([0, 1], [2, 0]), v),
         [((2, 3), (2,)), ((2, 3), ())]),
    Case("index_put", put_mask, lambda a, m: np_put(a, m, 0.5), [((2, 3), MASK)]),
    Case("cat", lambda x, y: lib(x).cat([x, y]), lambda a, b: np.concatenate([a, b]),
         [((2, 3), (1, 3)), ((0, 3), (2, 3)), ((2,), (0,))]),
    Case("cat", lambda x, y: lib(x).cat([x, y, x], 1), lambda a, b: np.concatenate([a, b, a], 1),
         [((2, 1), (2, 2))]),
    Case("stack", lambda x, y: lib(x).stack([x, y]), lambda a, b: np.stack([a, b]),
         [((2, 3), (2, 3)), ((), ()), ((0,), (0,))]),
    Case("stack", lambda x, y: lib(x).stack([x, y], -1), lambda a, b: np.stack([a, b], -1),
         [((2, 3), (2, 3))]),
    Case("split", lambda x: x.split(2), lambda a: np_split(a, [2, 2, 1], 0), [((5, 2),)]),
    Case("split", lambda x: x.split(1, dim=1), lambda a: np_split(a, [1, 1, 1], 1), [((2, 3),)]),
    Case("split", lambda x: x.chunk(2), lambda a: np_split(a, [2, 1], 0), [((3, 2),)]),
    # only the first output is used: the others' gradients are undefined (None)
    Case("split", lambda x: x.split(2)[0], lambda a: a[:2], [((3, 2),)]),
    Case("split_with_sizes", lambda x: x.split([1, 2], dim=1),
         lambda a: np_split(a, [1, 2], 1), [((2, 3),)]),
    Case("split_with_sizes", lambda x: x.split([0, 2]), lambda a: np_split(a, [0, 2], 0),
         [((2, 3),)]),
    Case("as_strided", lambda x: x.as_strided((3, 2), (2, 1), 1),
         lambda a: np_strided(a, (3, 2), (2, 1), 1), [((8,),), ((2, 4),)]),
    Case("as_strided_", lambda x: (x * 1).as_strided_((3, 2), (2, 1), 1),
         lambda a: np_strided(a, (3, 2), (2, 1), 1), [((8,),)]),
    # (overlapping places: their gradients add)
    Case("as_strided", lambda x: lib(x).as_strided(x, (3, 2), (1, 1)),
         lambda a: np_strided(a, (3, 2), (1, 1), 0), [((2, 3),)]),
    Case("diagonal", lambda x: x.diagonal(), np.diagonal, [((3, 3),), ((2, 3),), ((0, 2),)]),
    Case("diagonal", lambda x: x.diagonal(1), lambda a: np.diagonal(a, 1), [((3, 4),), ((2, 2),)]),
    Case("diagonal", lambda x: lib(x).diagonal(x, -1, 2, 0), lambda a: np.diagonal(a, -1, 2, 0),
         [((3, 2, 4),)]),
    Case("diagonal", lambda x: x.diagonal(5), lambda a: np.diagonal(a, 5), [((2, 3),)]),
    Case("repeat", lambda x: x.repeat(2, 3), lambda a: np.tile(a, (2, 3)),
         [((2, 3),), ((3,),), ((),), ((0, 2),)]),
    Case("repeat", lambda x: x.repeat(2, 1, 2), lambda a: np.tile(a, (2, 1, 2)), [((2, 3),)]),
    Case("repeat", lambda x: x.t().repeat(1, 1), lambda a: a.T.copy(), [((2, 3),)]),
    Case("repeat", lambda x: x.repeat(0, 2), lambda a: np.tile(a, (0, 2)), [((2, 3),)]),
    Case("gather", lambda x, i: x.gather(1, i), lambda a, i: np_along(a, 1, i),
         [((2, 3), INDEX), ((2, 3), Const(np.zeros((2, 0), np.int64)))]),
    Case("gather", lambda x, i: x.gather(0, i), lambda a, i: np_along(a, 0, i),
         [((3, 2), Const([[2, 0], [2, 2], [1, 0]]))]),
    Case("scatter_add", lambda x, i, s: x.scatter_add(0, i, s),
         lambda a, i, s: np_scatter_add(a, 0, i, s),
         [((2, 3), Const([[0, 1, 0], [0, 0, 1]]), (2, 3)), ((2, 3), Const([[1, 1, 0]]), (1, 3))]),
    Case("scatter_add", lambda x, i, s: x.scatter_add(1, i, s),
         lambda a, i, s: np_scatter_add(a, 1, i, s), [((2, 3), INDEX, (2, 2))]),
    Case("index_select", lambda x, i: x.index_select(0, i),
         lambda a, i: np.take(a, i, 0),
         [((2, 3), Const([1, 0, 1])), ((2, 3), Const(np.zeros(0, np.int64)))]),
    Case("index_select", lambda x, i: x.index_select(1, i), lambda a, i: np.take(a, i, 1),
         [((2, 3), Const([2]))]),
    Case("index_add", lambda x, i, s: x.index_add(0, i, s),
         lambda a, i, s: np_index_add(a, 0, i, s), [((2, 3), Const([1, 0, 1]), (3, 3))]),
    Case("index_add", lambda x, i, s: x.index_add(1, i, s),
         lambda a, i, s: np_index_add(a, 1, i, s), [((2, 3), Const([2, 2]), (2, 2))]),
    # in-place forms, on a clone (a leaf that requires grad may not be changed in place)
    Case("copy", copy_into, lambda a, v: np.broadcast_to(v, a.shape).copy(),
         [((2, 3), (2, 3)), ((2, 3), (3,)), ((), ())]),
    Case("copy", put_slice, lambda a, v: np_put(a, slice(0, 1), v), [((2, 3), (3,))]),
    Case("fill", lambda x: x.clone().fill_(2.0), lambda a: np.full_like(a, 2.0), UNARY),
    Case("zero", lambda x: x.clone().zero_(), np.zeros_like, UNARY),
    # random draws, at probabilities 0 and 1 (certain outcomes, a zero gradient)
    Case("bernoulli", lambda x: (x * 0).bernoulli(), np.zeros_like, UNARY),
    Case("bernoulli", lambda x: (x * 0 + 1).bernoulli(), np.ones_like, UNARY),
    Case("bernoulli_p", lambda x: x.bernoulli(1.0), np.ones_like, UNARY,
         not_implemented="bernoulli"),
    Case("bernoulli_float", lambda x: x.clone().bernoulli_(0.0), np.zeros_like, UNARY),
    Case("bernoulli_float", lambda x: x.clone().bernoulli_(1), np.ones_like, UNARY),
    Case("bernoulli_tensor", lambda x, p: x.clone().bernoulli_(p * 0 + 1),
         lambda a, p: np.ones_like(a), [((2, 3), (2, 3)), ((2, 3), (3,)), ((), ())]),
    Case("poisson", lambda x: lib(x).poisson(x * 0), np.zeros_like, UNARY),
    Case("binomial", lambda c, p: lib(c).binomial(c * 0 + 3, p * 0 + 1),
         lambda a, b: np.full(np.broadcast_shapes(a.shape, b.shape), 3.0),
         [((2, 3), (2, 3))], not_implemented="binomial"),
    Case("binomial", lambda c, p: lib(c).binomial(c * 0 + 4, p * 0),
         lambda a, b: np.zeros(np.broadcast_shapes(a.shape, b.shape)),
         [((3,), (3,))], not_implemented="binomial"),
    # rows reached only from inside backward formulas: first-order gradients, recorded
    Case("index_backward", grad_of(lambda x: x[[0, 1, 0]]),
         lambda a: np_grad_index(a, [0, 1, 0]), [((2, 3),)]),
    Case("select_backward", grad_of(lambda x: x[1]), lambda a: np_grad_index(a, 1), [((2, 3),)]),
    Case("tanh_backward", grad_of(lambda x: x.tanh()),
         lambda a: 2 * np.tanh(a) * (1 - np.tanh(a) ** 2), UNARY),
    Case("sigmoid_backward", grad_of(lambda x: x.sigmoid()),
         lambda a: 2 * (s := 1 / (1 + np.exp(-a))) * s * (1 - s), UNARY),
    Case("threshold_backward", grad_of(lambda x: x.relu()), lambda a: 2 * np.maximum(a, 0), UNARY),
    Case("leaky_relu_backward", grad_of(lambda x: nnf(x).leaky_relu(x, 0.2)),
         lambda a: 2 * np.where(a > 0, a, 0.2 * a) * np.where(a > 0, 1, 0.2), UNARY),
    Case("hardtanh_backward", grad_of(lambda x: nnf(x).hardtanh(x)),
         lambda a: 2 * np.clip(a, -1, 1) * ((a > -1) & (a < 1)), UNARY),
    Case("select_backward", grad_of(lambda x: x.select(1, 0)),
         lambda a: np_grad_index(a, (slice(None), 0)), [((2, 3),)]),
    Case("slice_backward", grad_of(lambda x: x[:, 1:]),
         lambda a: np_grad_index(a, (slice(None), slice(1, None))), [((2, 3),)]),
    Case("slice_backward", grad_of(lambda x: x[::2]), lambda a: np_grad_index(a, slice(0, None, 2)),
         [((3, 2),)]),
    Case("diagonal_backward", grad_of(lambda x: x.diagonal(1)),
         lambda a: np_grad_diagonal(a, 1, 0, 1), [((3, 4),)]),
    Case("diagonal_backward", grad_of(lambda x: x.diagonal(-1, 2, 0)),
         lambda a: np_grad_diagonal(a, -1, 2, 0), [((3, 2, 4),)]),
    Case("unfold", lambda x: x.unfold(0, 3, 2), lambda a: np_unfold(a, 0, 3, 2),
         [((7,),), ((8, 2),)]),
    Case("unfold", lambda x: x.unfold(-1, 2, 1), lambda a: np_unfold(a, -1, 2, 1),
         [((2, 3, 4),), ((2, 2),)]),
    Case("unfold", lambda x: x.unfold(1, 1, 3), lambda a: np_unfold(a, 1, 1, 3), [((2, 5),)]),
    Case("unfold", lambda x: x.unfold(0, 1, 1), lambda a: a.reshape(1), [((),)]),
    Case("unfold_backward", grad_of(lambda x: x.unfold(0, 3, 2)),
         lambda a: np_grad_unfold(a, 0, 3, 2),
         [((7,),), ((6, 2),)]),
    Case("unfold_backward", grad_of(lambda x: x.unfold(1, 2, 1)),
         lambda a: np_grad_unfold(a, 1, 2, 1),
         [((2, 4),)]),
    Case("squeeze_dims", lambda x: x.squeeze((0, 2)), lambda a: np_squeeze_dims(a, (0, 2)),
         [((1, 3, 1),), ((1, 3, 2),), ((2, 3, 1),)]),
    # the in-place view ops, on a non-leaf
    Case("t_", lambda x: (x * 1).t_(), lambda a: a.T, [((2, 3),), ((3,),), ((),)]),
    Case("transpose_", lambda x: (x * 1).transpose_(0, -1), lambda a: np.swapaxes(a, 0, -1),
         [((2, 3, 4),)]),
    Case("squeeze_", lambda x: (x * 1).squeeze_(), np.squeeze, [((2, 1, 3),), ((),)]),
    Case("squeeze_dim_", lambda x: (x * 1).squeeze_(-1), lambda a: np_squeeze_dims(a, (-1,)),
         [((2, 1),), ((2, 3),), ((),)]),
    Case("squeeze_dims_", lambda x: (x * 1).squeeze_((0, 2)),
         lambda a: np_squeeze_dims(a, (0, 2)), [((1, 3, 1),), ((1, 3, 2),)]),
    Case("unsqueeze_", lambda x: (x * 1).unsqueeze_(1), lambda a: np.expand_dims(a, 1),
         [((2, 3),)]),
    # CopySlices' backward copies fn's gradient into a view of the base's gradient with copy_
    Case("copy", grad_of(mul_on_view), np_grad_mul_on_view, [((2, 3), (3,)), ((2, 3), ())]),
]
# fmt: on


# ---- the nn rows, reached through nn.functional (nbgrad's or torch's) ----------------------------
def nnf(t):
    """``nn.functional`` of the library of tensor ``t``."""
    return lib(t).nn.functional


def row_or_torch(name, torch_fn):
    """A row called directly with its attributes in nbgrad (where no public function takes
    them), ``torch_fn`` in torch: for ``rsub`` and ``addmm`` with alpha and beta."""

    def call(*args, **attrs):
        if isinstance(args[0], ng.Tensor):
            return sys.modules["nbgrad._tensor.dispatch"]._dispatch(OPS[name], args, attrs)
        return torch_fn(*args, **attrs)

    return call


_rsub = row_or_torch(
    "rsub", lambda x, **a: sys.modules["torch"].rsub(x, a["other"], alpha=a["alpha"])
)
_addmm = row_or_torch("addmm", lambda *args, **a: sys.modules["torch"].addmm(*args, **a))


def _np_conv_loop(x, w, stride, padding, dilation, groups):
    """Yield ``(group slice, output slice, i, j, input window slices)`` for a direct conv2d."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    for g in range(groups):
        for i in range(ho):
            for j in range(wo):
                rows = slice(i * sh, i * sh + dh * (kh - 1) + 1, dh)
                cols = slice(j * sw, j * sw + dw * (kw - 1) + 1, dw)
                yield slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og), i, j, rows, cols
    return ho, wo


def np_conv2d(x, w, b=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    (ph, pw) = padding
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    o, _, kh, kw = w.shape
    ho = (xp.shape[2] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (xp.shape[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((x.shape[0], o, ho, wo))
    for gc, go, i, j, rows, cols in _np_conv_loop(x, w, stride, padding, dilation, groups):
        out[:, go, i, j] = np.einsum("nckl,ockl->no", xp[:, gc, rows, cols], w[go])
    return out if b is None else out + b[None, :, None, None]


def np_conv2d_grads(x, w, gy, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    """Gradients of ``sum(gy * conv2d(x, w))`` with respect to ``x`` and ``w``."""
    (ph, pw) = padding
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    gxp, gw = np.zeros_like(xp), np.zeros_like(w)
    for gc, go, i, j, rows, cols in _np_conv_loop(x, w, stride, padding, dilation, groups):
        gout = gy[:, go, i, j]
        gw[go] += np.einsum("no,nckl->ockl", gout, xp[:, gc, rows, cols])
        gxp[:, gc, rows, cols] += np.einsum("no,ockl->nckl", gout, w[go])
    return gxp[:, :, ph : ph + x.shape[2], pw : pw + x.shape[3]], gw


def np_conv2d_grad_of(x, w, **kw):
    """The gradients of ``sum(conv2d(x, w) ** 2)`` (what ``grad_of`` records)."""
    return np_conv2d_grads(x, w, 2 * np_conv2d(x, w, **kw), **kw)


def np_nll(a, t, w=None, reduction="mean", ignore_index=-100):
    a = a.reshape(1, -1) if a.ndim == 1 else a
    t = np.asarray(t).reshape(-1)
    valid = t != ignore_index
    safe = np.where(valid, t, 0)
    weights = (np.ones(len(t)) if w is None else w[safe]) * valid
    losses = -a[np.arange(len(t)), safe] * weights
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.sum() / weights.sum()


def np_pool(a, k, s, p, reduce, fill=0.0, ceil=False):
    """A reference pooling by loops over the windows (square ``k``, stride ``s``, pad ``p``)."""
    lead, (h, w) = a.shape[:-2], a.shape[-2:]

    def size(n):
        num = n + 2 * p - k + ((s - 1) if ceil else 0)
        out = num // s + 1
        return out - 1 if ceil and (out - 1) * s >= n + p else out

    ho, wo = size(h), size(w)
    padded = np.full(lead + (h + 2 * p + k, w + 2 * p + k), fill)
    padded[..., p : p + h, p : p + w] = a
    out = np.empty(lead + (ho, wo))
    for i in range(ho):
        for j in range(wo):
            win = padded[..., i * s : i * s + k, j * s : j * s + k]
            out[..., i, j] = reduce(win.reshape(lead + (-1,)), axis=-1)
    return out


def np_grad_pool_max(a, k, s):
    """d sum(max_pool(x) ** 2) / dx by loops (grad_of's function)."""
    g = np.zeros_like(a)
    ho, wo = (a.shape[-2] - k) // s + 1, (a.shape[-1] - k) // s + 1
    for idx in np.ndindex(a.shape[:-2]):
        for i in range(ho):
            for j in range(wo):
                win = a[idx][i * s : i * s + k, j * s : j * s + k]
                r, c = np.unravel_index(np.argmax(win), win.shape)
                g[idx][i * s + r, j * s + c] += 2 * win[r, c]
    return g


def np_grad_pool_avg(a, k, s, p):
    """d sum(avg_pool(x) ** 2) / dx (divisor k * k, padding counted) by loops."""
    y = np_pool(a, k, s, p, np.mean)
    g = np.zeros(a.shape[:-2] + (a.shape[-2] + 2 * p + k, a.shape[-1] + 2 * p + k))
    for i in range(y.shape[-2]):
        for j in range(y.shape[-1]):
            g[..., i * s : i * s + k, j * s : j * s + k] += (2 * y[..., i, j] / (k * k))[
                ..., None, None
            ]
    return g[..., p : p + a.shape[-2], p : p + a.shape[-1]]


def _adaptive(n, out):
    return [(i * n // out, -(-(i + 1) * n // out)) for i in range(out)]


def np_adaptive_max(a, size):
    out = np.empty(a.shape[:-2] + size)
    for i, (r0, r1) in enumerate(_adaptive(a.shape[-2], size[0])):
        for j, (c0, c1) in enumerate(_adaptive(a.shape[-1], size[1])):
            out[..., i, j] = a[..., r0:r1, c0:c1].max(axis=(-2, -1))
    return out


def np_conv_transpose2d(a, w, b=None, stride=(1, 1), padding=(0, 0), output_padding=(0, 0),
                        dilation=(1, 1), groups=1):  # fmt: skip
    """The transposed convolution as conv2d's input gradient (``a`` as the output gradient)."""
    size = [(n - 1) * s - 2 * p + d * (k - 1) + o + 1 for n, s, p, d, k, o in
            zip(a.shape[2:], stride, padding, dilation, w.shape[2:], output_padding)]  # fmt: skip
    x = np.zeros((a.shape[0], w.shape[1] * groups, *size))
    out = np_conv2d_grads(x, w, a, stride, padding, dilation, groups)[0]
    return out if b is None else out + b[None, :, None, None]


def np_lifted(fn):
    """``fn`` of 2-d arrays applied to 1-d ones (``(N, C, L)`` as ``(N, C, 1, L)``)."""
    return lambda *arrays: fn(*[None if a is None else a[:, :, None] if a.ndim == 3 else a
                                for a in arrays])[:, :, 0]  # fmt: skip


def np_adaptive_avg(a, size):
    out = np.empty(a.shape[:-2] + size)
    for i, (r0, r1) in enumerate(_adaptive(a.shape[-2], size[0])):
        for j, (c0, c1) in enumerate(_adaptive(a.shape[-1], size[1])):
            out[..., i, j] = a[..., r0:r1, c0:c1].mean(axis=(-2, -1))
    return out


def np_grad_adaptive(a, size):
    y, g = np_adaptive_avg(a, size), np.zeros_like(a)
    for i, (r0, r1) in enumerate(_adaptive(a.shape[-2], size[0])):
        for j, (c0, c1) in enumerate(_adaptive(a.shape[-1], size[1])):
            area = (r1 - r0) * (c1 - c0)
            g[..., r0:r1, c0:c1] += (2 * y[..., i, j] / area)[..., None, None]
    return g


def sig(a):
    return 1 / (1 + np.exp(-a))


def np_huber(a, b, delta=1.0):
    d = np.abs(a - b)
    return np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))


def np_bce(p, t, pos_weight=1.0):
    return -(pos_weight * t * np.log(p) + (1 - t) * np.log(1 - p))


def np_batch_norm(a, w=None, b=None, mean=None, var=None, eps=1e-5):
    """Per channel (dim 1): batch statistics, or the running ones given."""
    axes = (0,) + tuple(range(2, a.ndim))
    shape = (1, a.shape[1]) + (1,) * (a.ndim - 2)
    m = a.mean(axes, keepdims=True) if mean is None else np.reshape(mean, shape)
    v = a.var(axes, keepdims=True) if var is None else np.reshape(var, shape)
    y = (a - m) / np.sqrt(v + eps)
    return y * (1 if w is None else np.reshape(w, shape)) + (
        0 if b is None else np.reshape(b, shape)
    )


def np_layer_norm(a, n, w=None, b=None, eps=1e-5):
    axes = tuple(range(a.ndim - n, a.ndim))
    y = (a - a.mean(axes, keepdims=True)) / np.sqrt(a.var(axes, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


GROUPED = dict(stride=(2, 1), padding=(1, 1), dilation=(1, 2), groups=2)
TARGETS = Const([0, 3, 1])
CLASS_WEIGHTS = Const([0.5, 1.0, 2.0, 1.5])
CLASS_WEIGHTS_3 = Const([0.5, 1.0, 2.0])

# fmt: off
CASES += [
    Case("addmm", lambda x, w, b: nnf(x).linear(x, w, b), lambda a, w, b: a @ w.T + b,
         [((2, 3), (4, 3), (4,)), ((2, 3), (4, 3), (1,)), ((0, 3), (2, 3), (2,))]),
    Case("addmm", lambda b, x, w: _addmm(b, x, w, beta=0.5, alpha=2.0),
         lambda b, x, w: 0.5 * b + 2.0 * (x @ w), [((2, 4), (2, 3), (3, 4))]),
    Case("convolution", lambda x, w, b: nnf(x).conv2d(x, w, b), np_conv2d,
         [((2, 2, 4, 4), (3, 2, 2, 2), (3,))]),
    Case("convolution", lambda x, w: nnf(x).conv2d(x, w, None, **GROUPED),
         lambda a, w: np_conv2d(a, w, **GROUPED), [((2, 4, 5, 5), (2, 2, 3, 2))]),
    Case("convolution_input_grad", grad_of(lambda x, w: nnf(x).conv2d(x, w, padding=1)),
         lambda a, w: np_conv2d_grad_of(a, w, padding=(1, 1))[0], [((1, 2, 4, 4), (2, 2, 3, 3))]),
    Case("convolution_input_grad", grad_of(lambda x, w: nnf(x).conv2d(x, w, **GROUPED)),
         lambda a, w: np_conv2d_grad_of(a, w, **GROUPED)[0], [((1, 4, 5, 4), (2, 2, 2, 2))]),
    Case("convolution_weight_grad", grad_of(lambda w, x: nnf(x).conv2d(x, w, stride=2)),
         lambda w, a: np_conv2d_grad_of(a, w, stride=(2, 2))[1], [((2, 2, 2, 2), (1, 2, 5, 5))]),
    Case("convolution_weight_grad", grad_of(lambda w, x: nnf(x).conv2d(x, w, **GROUPED)),
         lambda w, a: np_conv2d_grad_of(a, w, **GROUPED)[1], [((2, 2, 2, 2), (1, 4, 4, 5))]),
    Case("mse_loss", lambda x, y: nnf(x).mse_loss(x, y), lambda a, b: np.mean((a - b) ** 2),
         [((2, 3), (2, 3)), ((), ())]),
    Case("mse_loss", lambda x, y: nnf(x).mse_loss(x, y, reduction="sum"),
         lambda a, b: np.sum((a - b) ** 2), [((3,), (3,))]),
    Case("mse_loss", lambda x, y: nnf(x).mse_loss(x, y, reduction="none"),
         lambda a, b: (a - b) ** 2, [((2, 3), (2, 3))]),
    Case("nll_loss", lambda x, t: nnf(x).nll_loss(x, t), np_nll,
         [((3, 4), TARGETS), ((4,), Const(2))]),
    Case("nll_loss", lambda x, t: nnf(x).nll_loss(x, t, reduction="none", ignore_index=3),
         lambda a, t: np_nll(a, t, reduction="none", ignore_index=3), [((3, 4), TARGETS)]),
    Case("nll_loss", lambda x, t, w: nnf(x).nll_loss(x, t, w, reduction="sum"),
         lambda a, t, w: np_nll(a, t, w, reduction="sum"), [((3, 4), TARGETS, CLASS_WEIGHTS)]),
    Case("nll_loss", lambda x, t, w: nnf(x).nll_loss(x, t, w), np_nll,
         [((3, 4), TARGETS, CLASS_WEIGHTS)]),
    Case("nll_loss2d", lambda x, t: nnf(x).nll_loss(x, t),
         lambda a, t: np_nll(a.transpose(0, 2, 3, 1).reshape(-1, a.shape[1]), t),
         [((2, 3, 2, 2), Const([[[0, 1], [2, 2]], [[1, 0], [0, 2]]]))]),
    Case("nll_loss2d", lambda x, t, w: nnf(x).nll_loss(x, t, w, reduction="none", ignore_index=2),
         lambda a, t, w: np_nll(a.transpose(0, 2, 1).reshape(-1, 3), t, w, "none", 2).reshape(2, 4),
         [((2, 3, 4), Const([[0, 1, 2, 2], [1, 0, 0, 2]]), Const([0.5, 1.0, 2.0]))]),
    Case("smooth_l1_loss", lambda x, y: nnf(x).smooth_l1_loss(x, y),
         lambda a, b: np_huber(a, b).mean(), [((2, 3), (2, 3))]),
    Case("smooth_l1_loss", lambda x, y: nnf(x).smooth_l1_loss(x, y, reduction="none", beta=0.5),
         lambda a, b: np_huber(a, b, 0.5) / 0.5, [((2, 3), (2, 3))]),
    Case("huber_loss", lambda x, y: nnf(x).huber_loss(x, y, delta=0.5, reduction="sum"),
         lambda a, b: np_huber(a, b, 0.5).sum(), [((2, 3), (2, 3))]),
    Case("huber_loss", lambda x, y, w: nnf(x).huber_loss(x, y, weight=w),
         lambda a, b, w: (np_huber(a, b) * w).mean(),
         [((2, 3), (2, 3), Const([[0.5, 1.0, 2.0], [1.5, 0.25, 1.0]]))]),
    Case("binary_cross_entropy", lambda x, y: nnf(x).binary_cross_entropy(x.sigmoid(), y.sigmoid()),
         lambda a, b: np_bce(sig(a), sig(b)).mean(), [((2, 3), (2, 3))]),
    Case("binary_cross_entropy",
         lambda x, y, w: nnf(x).binary_cross_entropy(x.sigmoid(), y.sigmoid(), w, reduction="sum"),
         lambda a, b, w: (np_bce(sig(a), sig(b)) * w).sum(), [((2, 3), (2, 3), CLASS_WEIGHTS_3)]),
    Case("binary_cross_entropy_with_logits",
         lambda x, y: nnf(x).binary_cross_entropy_with_logits(x, y.sigmoid()),
         lambda a, b: np_bce(sig(a), sig(b)).mean(), [((2, 3), (2, 3))]),
    Case("binary_cross_entropy_with_logits",
         lambda x, y, w, pw: nnf(x).binary_cross_entropy_with_logits(
             x, y.sigmoid(), w, reduction="none", pos_weight=pw),
         lambda a, b, w, pw: np_bce(sig(a), sig(b), pw) * w,
         [((2, 3), (2, 3), CLASS_WEIGHTS_3, Const([2.0, 0.5, 1.5]))]),
    Case("layer_norm", lambda x, w, b: nnf(x).layer_norm(x, (3,), w, b),
         lambda a, w, b: np_layer_norm(a, 1, w, b), [((2, 3), (3,), (3,))]),
    Case("layer_norm", lambda x: nnf(x).layer_norm(x, (2, 3)), lambda a: np_layer_norm(a, 2),
         [((2, 2, 3),)]),
    Case("batch_norm", lambda x, w, b: nnf(x).batch_norm(x, None, None, w, b, training=True),
         lambda a, w, b: np_batch_norm(a, w, b), [((4, 3), (3,), (3,)), ((2, 3, 4), (3,), (3,))]),
    Case("batch_norm", lambda x: nnf(x).batch_norm(x, None, None, training=True, eps=1e-3),
         lambda a: np_batch_norm(a, eps=1e-3), [((2, 2, 3, 3),)]),
    Case("batch_norm", lambda x, w, b, m, v: nnf(x).batch_norm(x, m, v, w, b),  # eval mode
         lambda a, w, b, m, v: np_batch_norm(a, w, b, m, v),
         [((4, 3), (3,), (3,), Const([0.5, -1.0, 2.0]), Const([1.5, 0.5, 2.0]))]),
    Case("sort", lambda x: x.sort(), lambda a: (np.sort(a, -1), np.argsort(a, -1, kind="stable")),
         [((2, 3),), ((3,),)]),
    Case("sort", lambda x: x.sort(), lambda a: (a, np.array(0)), [((),)]),
    Case("sort", lambda x: x.sort(0, descending=True),
         lambda a: (-np.sort(-a, 0), np.argsort(-a, 0, kind="stable")), [((3, 2),)]),
    Case("sort", lambda x: x.sort(), lambda a: (np.sort(a, -1), np.argsort(a, -1, kind="stable")),
         [(TIES,)], grad=False),  # equal values keep their order, as PyTorch's CPU sort
    Case("topk", lambda x: x.topk(2), lambda a: (-np.sort(-a, -1)[..., :2],
         np.argsort(-a, -1, kind="stable")[..., :2]), [((2, 3),)]),
    Case("topk", lambda x: x.topk(2, 0, largest=False), lambda a: (np.sort(a, 0)[:2],
         np.argsort(a, 0, kind="stable")[:2]), [((3, 2),)]),
    Case("clamp_min", lambda x: x.clamp_min(0.3), lambda a: np.maximum(a, 0.3), UNARY),
    Case("clamp_max", lambda x: x.clamp_max(-0.3), lambda a: np.minimum(a, -0.3), UNARY),
    Case("isnan", lambda x: x.isnan(), np.isnan, [(Values([[0.5, np.nan, np.inf]]),)]),
    Case("isinf", lambda x: x.isinf(), np.isinf, [(Values([[0.5, np.nan, -np.inf]]),)]),
    Case("isfinite", lambda x: x.isfinite(), np.isfinite, [(Values([[0.5, np.nan, np.inf]]),)]),
    Case("flip", lambda x: x.flip(0), lambda a: np.flip(a, 0), [((2, 3),), ((0, 2),)]),
    Case("flip", lambda x: x.flip(0, -1), lambda a: np.flip(a, (0, 2)), [((2, 3, 2),)]),
    Case("roll", lambda x: x.roll(1, 1), lambda a: np.roll(a, 1, 1), [((2, 3),)]),
    Case("roll", lambda x: x.roll((2, -1), (0, 1)), lambda a: np.roll(a, (2, -1), (0, 1)),
         [((3, 2),)]),
    Case("roll", lambda x: x.roll(-2), lambda a: np.roll(a, -2), [((2, 3),), ((),)]),
    Case("cumsum", lambda x: x.cumsum(1), lambda a: np.cumsum(a, 1), [((2, 3),), ((0, 2),)]),
    Case("cumsum", lambda x: x.cumsum(0), lambda a: np.cumsum(a, 0), [(INT_VALUES,)]),
    Case("tril", lambda x: x.tril(), np.tril, [((3, 3),), ((2, 3, 4),)]),
    Case("tril", lambda x: x.tril(-1), lambda a: np.tril(a, -1), [((3, 4),)]),
    Case("triu", lambda x: x.triu(1), lambda a: np.triu(a, 1), [((3, 3),), ((2, 3, 4),)]),
    Case("max_pool2d", lambda x: nnf(x).max_pool2d(x, 2), lambda a: np_pool(a, 2, 2, 0, np.max),
         [((2, 2, 4, 5),), ((2, 4, 4),)]),
    Case("max_pool2d", lambda x: nnf(x).max_pool2d(x, 3, 2, 1, ceil_mode=True),
         lambda a: np_pool(a, 3, 2, 1, np.max, fill=-np.inf, ceil=True), [((1, 2, 6, 6),)]),
    Case("max_pool2d_backward", grad_of(lambda x: nnf(x).max_pool2d(x, 2, 1)),
         lambda a: np_grad_pool_max(a, 2, 1), [((1, 2, 3, 4),)]),
    Case("avg_pool2d", lambda x: nnf(x).avg_pool2d(x, 2), lambda a: np_pool(a, 2, 2, 0, np.mean),
         [((2, 2, 4, 5),), ((2, 4, 4),)]),
    Case("avg_pool2d", lambda x: nnf(x).avg_pool2d(x, 3, 2, 1, count_include_pad=False),
         lambda a: np_pool(a, 3, 2, 1, np.nanmean, fill=np.nan), [((1, 2, 5, 5),)]),
    Case("avg_pool2d_backward", grad_of(lambda x: nnf(x).avg_pool2d(x, 2, 1, 1)),
         lambda a: np_grad_pool_avg(a, 2, 1, 1), [((1, 2, 3, 3),)]),
    Case("adaptive_avg_pool2d", lambda x: nnf(x).adaptive_avg_pool2d(x, (2, 3)),
         lambda a: np_adaptive_avg(a, (2, 3)), [((2, 2, 5, 4),), ((2, 3, 3),)]),
    Case("adaptive_avg_pool2d_backward", grad_of(lambda x: nnf(x).adaptive_avg_pool2d(x, 2)),
         lambda a: np_grad_adaptive(a, (2, 2)), [((1, 2, 3, 5),)]),
    Case("convolution", lambda x, w, b: nnf(x).conv1d(x, w, b, stride=2, padding=1, groups=2),
         np_lifted(lambda a, w, b: np_conv2d(a, w, b, (1, 2), (0, 1), groups=2)),
         [((2, 4, 5), (2, 2, 3), (2,))]),
    Case("convolution_transpose", lambda x, w, b: nnf(x).conv_transpose2d(x, w, b),
         np_conv_transpose2d, [((2, 4, 3, 3), (4, 3, 2, 2), (3,))]),
    Case("convolution_transpose",
         lambda x, w: nnf(x).conv_transpose2d(x, w, None, (2, 1), (1, 0), (1, 0), 2, (1, 2)),
         lambda a, w: np_conv_transpose2d(a, w, None, (2, 1), (1, 0), (1, 0), (1, 2), 2),
         [((1, 4, 3, 3), (4, 1, 2, 3))]),
    Case("convolution_transpose",
         lambda x, w, b: nnf(x).conv_transpose1d(x, w, b, stride=2, output_padding=1),
         np_lifted(lambda a, w, b: np_conv_transpose2d(a, w, b, (1, 2), output_padding=(0, 1))),
         [((2, 2, 3), (2, 3, 2), (3,))]),
    Case("constant_pad_nd", lambda x: nnf(x).pad(x, (1, 2), value=0.5),
         lambda a: np.pad(a, ((0, 0), (1, 2)), constant_values=0.5), [((2, 3),)]),
    Case("constant_pad_nd", lambda x: nnf(x).pad(x, (1, -1, 0, 2)),
         lambda a: np.pad(a[..., :, :-1], ((0, 0), (0, 2), (1, 0))), [((2, 3, 4),)]),
    Case("adaptive_max_pool2d", lambda x: nnf(x).adaptive_max_pool2d(x, (2, 3)),
         lambda a: np_adaptive_max(a, (2, 3)), [((2, 2, 5, 4),), ((2, 3, 3),)]),
    Case("embedding", lambda w, i: nnf(w).embedding(i, w), lambda a, i: a[i], [((4, 3), INDEX)]),
    # the padding row gets no gradient although it is used: parity only, no gradcheck
    Case("embedding", lambda w, i: nnf(w).embedding(i, w, padding_idx=1), lambda a, i: a[i],
         [((4, 3), INDEX)], grad=False),
]
# fmt: on


# ---- PyTorch's wider surface: rows and the composites that reach them -----------------------
def np_lerp(a, b, w):
    return a + w * (b - a)


def np_cumprod_grad(a, dim):
    """The gradient of ``sum(cumprod(a) ** 2)`` by brute force."""
    out = np.zeros_like(a)
    c = np.cumprod(a, dim)
    moved, cm = np.moveaxis(a, dim, -1), np.moveaxis(c, dim, -1)
    g = np.moveaxis(out, dim, -1)
    n = moved.shape[-1]
    for i in range(n):
        for k in range(i, n):
            others = np.prod(np.delete(moved[..., : k + 1], i, axis=-1), axis=-1)
            g[..., i] += 2 * cm[..., k] * others
    return out


def np_median(a, dim=None, keepdim=False):
    if dim is None:
        return np.sort(a.reshape(-1))[(a.size - 1) // 2]
    idx = np.take(np.argsort(a, axis=dim, kind="stable"), [(a.shape[dim] - 1) // 2], axis=dim)
    vals = np.take_along_axis(a, idx, axis=dim)
    return (vals, idx) if keepdim else (vals.squeeze(dim), idx.squeeze(dim))


def np_scatter_to(a, dim, index, src):
    out = a.copy()
    if np.ndim(src):
        src = src[tuple(slice(0, s) for s in index.shape)]
    np.put_along_axis(out, index, src, dim)
    return out


def np_masked_select(a, m):
    shape = np.broadcast_shapes(a.shape, m.shape)
    return np.broadcast_to(a, shape)[np.broadcast_to(m, shape)]


def np_strided(a, size, stride, offset):
    """NumPy's as_strided of ``a``'s elements in C order, strides in elements."""
    flat = np.ascontiguousarray(a).reshape(-1)[offset:]
    return np.lib.stride_tricks.as_strided(flat, size, [s * a.itemsize for s in stride]).copy()


def np_diag(a, k=0):
    return np.diag(a, k)


def np_quantile(a, q, dim=None, keepdim=False, method="linear"):
    return np.quantile(a, q, axis=dim, keepdims=keepdim, method=method)


def np_repeat_interleave(a, r, dim=None):
    return np.repeat(a, r, axis=dim)


def meshgrid_ij(x, y):
    return lib(x).meshgrid(x, y, indexing="ij")


def meshgrid_xy(x, y, z):
    return lib(x).meshgrid(x, y, z, indexing="xy")


# inputs with no repeated values (sorting, median and quantile pick one element each)
DISTINCT = Values([[0.3, -1.2, 2.0, 0.7], [1.1, -0.4, 0.9, -2.0], [0.5, 1.6, -0.8, 0.1]])
SCATTER_INDEX = Const([[0, 1, 2], [2, 0, 1]])
FLAT_INDEX = Const([[0, 5], [3, 2]])
PROBS = Values([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])

# fmt: off
CASES += [
    # binary math
    Case("logaddexp", lambda x, y: x.logaddexp(y), np.logaddexp, BINARY),
    Case("logaddexp", lambda x, y: lib(x).logaddexp(x, y), np.logaddexp, [(TIES, TIES)]),
    Case("lerp", lambda x, y: x.lerp(y, 0.3), lambda a, b: np_lerp(a, b, 0.3), BINARY),
    Case("lerp", lambda x, y: lib(x).lerp(x, y, 0.75), lambda a, b: np_lerp(a, b, 0.75),
         BINARY[:2]),
    Case("lerp_tensor", lambda x, y, w: x.lerp(y, w), np_lerp,
         [((2, 3), (2, 3), (2, 3)), ((2, 3), (3,), (2, 1)), ((), (), ())]),
    Case("atan2", lambda x, y: x.atan2(y), np.arctan2, BINARY),
    Case("atan2", lambda x, y: lib(x).arctan2(x, y), np.arctan2, BINARY[:1]),
    Case("hypot", lambda x, y: lib(x).hypot(x, y), np.hypot, BINARY),
    Case("fmod", lambda x, y: x.fmod(y), np.fmod, BINARY[:4]),
    Case("fmod", lambda x, y: lib(x).fmod(x, y), np.fmod, [(INT_VALUES, Const([[2, 3, 5], [-3, 4,
         3]]))]),
    Case("fmod_scalar", lambda x: x.fmod(0.7), lambda a: np.fmod(a, 0.7), UNARY),
    Case("fmod_scalar", lambda x: lib(x).fmod(x, -3), lambda a: np.fmod(a, -3), [(INT_VALUES,)]),
    Case("nan_to_num", lambda x: x.nan_to_num(), lambda a: np.nan_to_num(a), UNARY),
    Case("nan_to_num", lambda x: lib(x).nan_to_num(x, 1.5, 9.0, -9.0),
         lambda a: np.nan_to_num(a, nan=1.5, posinf=9.0, neginf=-9.0),
         [(Values([[0.5, np.nan, np.inf], [-np.inf, 2.0, -1.0]]),)]),
    Case("erfinv", lambda x: (x * 0.4).erfinv(), lambda a: scipy.special.erfinv(0.4 * a), UNARY),
    Case("erfinv", lambda x: lib(x).erfinv(x * 0.3), lambda a: scipy.special.erfinv(0.3 * a),
         UNARY[:1]),
    Case("isclose", lambda x, y: x.isclose(y), np.isclose, BINARY, domain="ints"),
    Case("isclose", lambda x, y: lib(x).isclose(x, y + 1e-3, rtol=0, atol=1e-2),
         lambda a, b: np.isclose(a, b + 1e-3, rtol=0, atol=1e-2), BINARY[:2]),
    Case("isclose", lambda x: x.isclose(x, equal_nan=True), lambda a: np.isclose(a, a,
         equal_nan=True),
         [(Values([[np.nan, 1.0, np.inf]]),)]),
    # linear algebra
    Case("addmm", lambda b, x, w: lib(x).addmm(b, x, w), lambda b, x, w: b + x @ w,
         [((2, 4), (2, 3), (3, 4)), ((4,), (2, 3), (3, 4)), ((), (0, 3), (3, 2))]),
    Case("addmm", lambda b, x, w: b.addmm(x, w, beta=0.5, alpha=-2),
         lambda b, x, w: 0.5 * b + -2 * (x @ w), [((2, 4), (2, 3), (3, 4))]),
    Case("baddbmm", lambda b, x, w: lib(x).baddbmm(b, x, w), lambda b, x, w: b + x @ w,
         [((2, 2, 4), (2, 2, 3), (2, 3, 4)), ((4,), (2, 2, 3), (2, 3, 4))]),
    Case("baddbmm", lambda b, x, w: b.baddbmm(x, w, beta=2, alpha=0.5),
         lambda b, x, w: 2 * b + 0.5 * (x @ w), [((2, 2, 4), (2, 2, 3), (2, 3, 4))]),
    Case("cross", lambda x, y: lib(x).cross(x, y, dim=1), lambda a, b: np.cross(a, b, axis=1),
         [((2, 3), (2, 3)), ((2, 3), (1, 3))]),
    Case("cross", lambda x, y: x.cross(y, 0), lambda a, b: np.cross(a, b, axis=0), [((3, 2), (3,
         2)), ((3,), (3,))]),
    Case("trace", lambda x: x.trace(), np.trace, [((3, 3),), ((2, 4),), ((0, 2),)]),
    Case("trace", lambda x: lib(x).trace(x), np.trace, [(INT_VALUES,)]),
    # composites: outer, kron, tensordot, einsum (their nodes are those of the ops they use)
    Case("mul", lambda x, y: lib(x).outer(x, y), np.outer, [((3,), (2,)), ((0,), (2,))]),
    Case("mul", lambda x, y: x.outer(y), np.outer, [((2,), (3,))]),
    Case("unsafe_view", lambda x, y: lib(x).kron(x, y), np.kron,
         [((2, 3), (2, 2)), ((2,), (3, 2)), ((2, 1, 2), (2, 3))]),
    Case("view", lambda x, y: lib(x).tensordot(x, y, 1), lambda a, b: np.tensordot(a, b, 1),
         [((2, 3), (3, 2)), ((2, 2, 3), (3, 2))]),
    Case("view", lambda x, y: lib(x).tensordot(x, y, ([1, 0], [0, 2])),
         lambda a, b: np.tensordot(a, b, ([1, 0], [0, 2])), [((2, 3), (3, 4, 2))]),
    Case("view", lambda x, y: lib(x).einsum("ij,jk->ik", x, y), lambda a,
         b: np.einsum("ij,jk->ik", a, b),
         [((2, 3), (3, 4))]),
    Case("view", lambda x, y: lib(x).einsum("bij,bjk->bik", x, y), lambda a,
         b: np.einsum("bij,bjk->bik", a, b),
         [((2, 2, 3), (2, 3, 4))]),
    Case("view", lambda x, y: lib(x).einsum("ij,ij->i", x, y), lambda a, b: np.einsum("ij,ij->i",
         a, b),
         [((2, 3), (2, 3))]),
    Case("view", lambda x, y, z: lib(x).einsum("ij,jk,kl->il", x, y, z),
         lambda a, b, c: np.einsum("ij,jk,kl->il", a, b, c), [((2, 3), (3, 2), (2, 4))]),
    Case("view", lambda x, y: lib(x).einsum("...ij,...jk", x, y), lambda a,
         b: np.einsum("...ij,...jk", a, b),
         [((2, 2, 3), (3, 2))]),
    Case("mul", lambda x, y: lib(x).einsum("i,j->ij", x, y), lambda a, b: np.einsum("i,j->ij", a,
         b),
         [((3,), (2,))]),
    Case("sum_dim", lambda x: lib(x).einsum("ii", x), np.trace, [((3, 3),)]),
    Case("sum_dim", lambda x: lib(x).einsum("ij->j", x), lambda a: a.sum(0), [((2, 3),)]),
    Case("permute", lambda x: lib(x).einsum("ij->ji", x), lambda a: a.T, [((2, 3),)]),
    Case("diagonal", lambda x: lib(x).einsum("ii->i", x), np.diagonal, [((3, 3),)]),
    # diag: of a vector (a matrix), of a matrix (a copy of its diagonal)
    Case("diag_embed", lambda x: x.diag(), np_diag, [((3,),), ((0,),)]),
    Case("diag_embed", lambda x: lib(x).diag(x, -1), lambda a: np_diag(a, -1), [((3,),)]),
    Case("diag_embed", lambda x: lib(x).diag_embed(x, 1), lambda a: np.stack([np.diag(r,
         1) for r in a]),
         [((2, 3),)]),
    Case("diagonal_copy", lambda x: x.diag(), np_diag, [((3, 3),), ((2, 4),)]),
    Case("diagonal_copy", lambda x: lib(x).diag(x, 1), lambda a: np_diag(a, 1), [((3, 3),)]),
    # reductions
    Case("cumprod", lambda x: x.cumprod(1), lambda a: np.cumprod(a, 1), [((2, 3),), ((0, 2),)]),
    Case("cumprod", lambda x: lib(x).cumprod(x, 0), lambda a: np.cumprod(a, 0).reshape(a.shape),
         [((3, 2),), ((),)]),
    Case("cumprod", lambda x: x.cumprod(-1), lambda a: np.cumprod(a, -1), [(WITH_ZERO,),
         (TWO_ZEROS,)]),
    Case("cumprod", lambda x: x.cumprod(0), lambda a: np.cumprod(a, 0), [(INT_VALUES,)]),
    # (with zeros, torch's first-order gradient is made in place: a CopySlices, not compared)
    Case("cumprod", grad_of(lambda x: x.cumprod(1)), lambda a: np_cumprod_grad(a, 1), [((2, 3),)]),
    Case("median", lambda x: x.median(), np_median, [(DISTINCT,), ((5,),), ((),)]),
    Case("median", lambda x: lib(x).median(x), np_median, [(TIES,)], grad=False),
    Case("median_dim", lambda x: tuple(x.median(1)), lambda a: np_median(a, 1), [(DISTINCT,), ((2,
         3),)]),
    Case("median_dim", lambda x: tuple(lib(x).median(x, 0, keepdim=True)), lambda a: np_median(a,
         0, True),
         [(DISTINCT,)]),
    Case("count_nonzero", lambda x: x.count_nonzero(), np.count_nonzero, UNARY, domain="ints"),
    Case("count_nonzero", lambda x: lib(x).count_nonzero(x, 1), lambda a: np.count_nonzero(a, 1),
         [((2, 3),)], domain="ints"),
    Case("count_nonzero", lambda x: x.count_nonzero((0, 1)), np.count_nonzero, [((2, 3),)],
         domain="ints"),
    # quantile: sort, gather, lerp, then squeeze_ (with unsqueeze_ and transpose_ for several q)
    Case("squeeze_dim_", lambda x: x.quantile(0.3), lambda a: np_quantile(a, 0.3), [(DISTINCT,),
         ((5,),)]),
    Case("squeeze_dim_", lambda x: lib(x).quantile(x, 0.6, dim=1, keepdim=True),
         lambda a: np_quantile(a, 0.6, 1, True), [(DISTINCT,)]),
    Case("squeeze_dim_", lambda x: x.quantile(0.25, 0, interpolation="nearest"),
         lambda a: np_quantile(a, 0.25, 0, method="nearest"), [(DISTINCT,)]),
    Case("squeeze_dim_", lambda x: x.quantile(0.4, interpolation="lower"),
         lambda a: np_quantile(a, 0.4, method="lower"), [(DISTINCT,)]),
    Case("squeeze_dim_", lambda x: x.quantile(0.4, 1, interpolation="higher"),
         lambda a: np_quantile(a, 0.4, 1, method="higher"), [(DISTINCT,)]),
    Case("squeeze_dim_", lambda x: x.quantile(0.3, interpolation="midpoint"),
         lambda a: np_quantile(a, 0.3, method="midpoint"), [(DISTINCT,)]),
    Case("transpose_", lambda x: x.quantile(x.new_tensor([0.2, 0.9])), lambda a: np_quantile(a,
         [0.2, 0.9]),
         [(DISTINCT,)]),
    Case("unsqueeze_", lambda x: x.quantile(x.new_tensor([0.1, 0.5, 1.0]), dim=0, keepdim=True),
         lambda a: np_quantile(a, [0.1, 0.5, 1.0], 0, True), [(DISTINCT,)]),
    # indexing
    Case("scatter", lambda x, i, s: x.scatter(1, i, s), lambda a, i, s: np_scatter_to(a, 1, i, s),
         [((2, 3), SCATTER_INDEX, (2, 3))]),
    Case("scatter", lambda x, i, s: lib(x).scatter(x, 0, i, s), lambda a, i, s: np_scatter_to(a,
         0, i, s),
         [((3, 3), Const([[2, 0, 1]]), (1, 3))]),
    Case("scatter_value", lambda x, i: x.scatter(1, i, 1.5), lambda a, i: np_scatter_to(a, 1, i,
         1.5),
         [((2, 3), SCATTER_INDEX), ((2, 3), Const(np.zeros((2, 0), np.int64)))]),
    Case("scatter_value", lambda x, i: lib(x).scatter(x, 0, i, value=-2.0),
         lambda a, i: np_scatter_to(a, 0, i, -2.0), [((3, 2), Const([[1, 2]]))]),
    Case("masked_select", lambda x, m: x.masked_select(m), lambda a, m: a[m], [((2, 3), MASK)]),
    Case("masked_select", lambda x, m: lib(x).masked_select(x, m), np_masked_select,
         [((2, 1), MASK), ((2, 3), MASK_ROW), ((), MASK)]),
    Case("take", lambda x, i: x.take(i), lambda a, i: a.reshape(-1)[i], [((2, 3), FLAT_INDEX),
         ((3,), Const([2, 2]))]),
    Case("take", lambda x, i: lib(x).take(x, i), lambda a, i: a.reshape(-1)[i], [((2, 3),
         Const([-1, 0]))]),
    Case("nonzero", lambda x: x.nonzero(), np.argwhere, [((2, 3),), ((4,),), ((0, 2),)],
         domain="ints"),
    Case("nonzero", lambda x: lib(x).nonzero(x, as_tuple=True), np.nonzero, [((2, 3),)],
         domain="ints"),
    Case("nonzero", lambda x: lib(x).argwhere(x), np.argwhere, [((2, 3),)], domain="ints"),
    Case("unique", lambda x: x.unique(), np.unique, [(TIES,), ((4,),)],
         not_implemented="the derivative for '_unique2' is not implemented."),
    Case("unique", lambda x: lib(x).unique(x, return_inverse=True, return_counts=True),
         lambda a: np.unique(a, return_inverse=True, return_counts=True), [(TIES,)],
         not_implemented="the derivative for '_unique2' is not implemented."),
    Case("unique", lambda x: x.unique(), np.unique, [(INT_VALUES,)]),
    Case("unique_dim", lambda x: lib(x).unique(x, dim=0, return_counts=True),
         lambda a: np.unique(a, axis=0, return_counts=True), [(Values([[1.0, 2.0], [0.5, 1.0],
         [1.0, 2.0]]),)],
         not_implemented="the derivative for 'unique_dim' is not implemented."),
    # shape composites: movedim, tile, repeat_interleave, broadcast_to, swapaxes, meshgrid
    Case("permute", lambda x: x.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1), [((2, 1, 3),)]),
    Case("permute", lambda x: lib(x).movedim(x, (0, 1), (2, 0)), lambda a: np.moveaxis(a, (0, 1),
         (2, 0)),
         [((2, 1, 3),)]),
    Case("permute", lambda x: lib(x).moveaxis(x, -1, 0), lambda a: np.moveaxis(a, -1, 0), [((2,
         3),)]),
    Case("repeat", lambda x: x.tile((2,)), lambda a: np.tile(a, 2), [((2, 3),), ((3,),)]),
    Case("repeat", lambda x: lib(x).tile(x, (2, 1, 2)), lambda a: np.tile(a, (2, 1, 2)), [((2,
         3),)]),
    Case("view", lambda x: x.repeat_interleave(2, dim=0), lambda a: np_repeat_interleave(a, 2, 0),
         [((2, 3),)]),
    Case("view", lambda x: lib(x).repeat_interleave(x, 3), lambda a: np_repeat_interleave(a, 3),
         [((2, 3),), ((),)]),
    Case("index_select", lambda x, r: x.repeat_interleave(r, dim=1), lambda a,
         r: np_repeat_interleave(a, r, 1),
         [((2, 3), Const([1, 0, 2]))]),
    Case("expand", lambda x: x.broadcast_to((2, 3)), lambda a: np.broadcast_to(a, (2, 3)),
         [((3,),)]),
    Case("expand", lambda x: lib(x).broadcast_to(x, (2, 2, 3)), lambda a: np.broadcast_to(a, (2,
         2, 3)),
         [((1, 3),)]),
    Case("expand", lambda x, y: lib(x).broadcast_tensors(x, y), lambda a,
         b: np.broadcast_arrays(a, b),
         [((2, 1), (3,))]),
    Case("transpose", lambda x: lib(x).swapaxes(x, 0, 1), lambda a: np.swapaxes(a, 0, 1), [((2,
         3),)]),
    Case("transpose", lambda x: x.swapdims(-1, 0), lambda a: np.swapaxes(a, -1, 0), [((2, 1, 3),)]),
    Case("transpose", lambda x: x.transpose(0, -1), lambda a: a, [((),)]),
    Case("expand", meshgrid_ij, lambda a, b: np.meshgrid(a, b, indexing="ij"), [((3,), (2,)), ((),
         (2,))]),
    Case("expand", meshgrid_xy, lambda a, b, c: np.meshgrid(a, b, c, indexing="xy"), [((3,), (2,),
         (2,))]),
    # random draws where the result is certain: std 0, or one category of nonzero weight
    Case("normal_tensor_float", lambda x: lib(x).normal(x * 0, 0.0), np.zeros_like, UNARY),
    Case("normal_float_tensor", lambda s: lib(s).normal(1.5, s * 0), lambda a: np.full_like(a,
         1.5), UNARY),
    Case("normal_tensor_tensor", lambda m, s: lib(m).normal(m * 0, s * 0),
         lambda a, b: np.zeros(np.broadcast_shapes(a.shape, b.shape)),
         BINARY[:4]),
    Case("multinomial", lambda p: p.multinomial(1), lambda a: np.argmax(a, -1)[:, None],
         [(PROBS,)]),
    Case("multinomial", lambda p: lib(p).multinomial(p[0], 3, replacement=True),
         lambda a: np.full(3, 2),
         [(PROBS,)]),
]
# fmt: on


# ---- the rows of nbgrad/derivatives/activation.py and losses.py: references are PyTorch's
def _via_torch(fn):
    """A reference that runs ``fn`` on torch tensors (these rows are PyTorch's own ops)."""

    def ref(*arrays):
        torch = pytest.importorskip("torch")
        ts = [torch.tensor(a, requires_grad=i == 0) for i, a in enumerate(arrays)]
        return fn(*ts).detach().numpy()

    return ref


def _case(op, fn, samples, **kw):
    return Case(op, fn, _via_torch(fn), samples, **kw)


MARGIN_TARGETS = Const([0, 3, 1])
SIGNS = Const([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]])
CTC_TARGETS = Const([[1, 2], [3, 3]])


def _ctc(x, t, reduction="mean"):
    return nnf(x).ctc_loss(x.log_softmax(2), t, (5, 4), (2, 2), reduction=reduction)


# fmt: off
CASES += [
    _case("mish", lambda x: nnf(x).mish(x), UNARY),
    _case("hardswish", lambda x: nnf(x).hardswish(x * 2), UNARY),
    _case("hardsigmoid", lambda x: nnf(x).hardsigmoid(x * 2), UNARY, gradgrad=False),
    _case("selu", lambda x: nnf(x).selu(x), UNARY),
    _case("selu_", lambda x: nnf(x).selu(x * 1, inplace=True), UNARY),
    _case("celu", lambda x: nnf(x).celu(x, 0.5), UNARY),
    _case("celu_", lambda x: nnf(x).celu(x * 1, 2.0, inplace=True), UNARY),
    _case("softshrink", lambda x: nnf(x).softshrink(x, 0.1), UNARY, gradgrad=False),
    _case("hardshrink", lambda x: nnf(x).hardshrink(x, 0.1), UNARY, gradgrad=False),
    _case("glu", lambda x: nnf(x).glu(x, 1), [((2, 4),), ((0, 2),)]),
    _case("glu", lambda x: nnf(x).glu(x, 0), [((2, 3),)]),
    _case("prelu", lambda x, w: nnf(x).prelu(x, w),
          [((2, 3, 2), (3,)), ((2, 3), (1,)), ((3,), (1,))]),
    _case("soft_margin_loss", lambda x, y: nnf(x).soft_margin_loss(x, y), [((2, 3), SIGNS)]),
    _case("soft_margin_loss", lambda x, y: nnf(x).soft_margin_loss(x, y, reduction="none"),
          [((2, 3), SIGNS), ((2, 3), Const([0.5, -2.0, 1.0]))]),
    _case("multi_margin_loss", lambda x, t: nnf(x).multi_margin_loss(x, t),
          [((3, 4), MARGIN_TARGETS)], gradgrad=False),
    _case("multi_margin_loss", lambda x, t: nnf(x).multi_margin_loss(x * 0.2, t, 2, 0.5),
          [((3, 4), MARGIN_TARGETS)], gradgrad=False),
    _case("norm_scalar_dim", lambda x, y: nnf(x).pairwise_distance(x, y, 3.0), [((2, 3), (2, 3))]),
    _case("ctc_loss", _ctc, [((5, 2, 4), CTC_TARGETS)], gradgrad=False),
    _case("ctc_loss", lambda x, t: _ctc(x, t, "none"), [((5, 2, 4), CTC_TARGETS)], gradgrad=False),
    _case("ctc_loss_backward", grad_of(_ctc, create_graph=False), [((5, 2, 4), CTC_TARGETS)]),
]
# fmt: on


# 3-d pooling and max unpooling (NOTE [Pooling rows] in nbgrad/derivatives/nn.py)
UNPOOL_INDICES = Const([[[[[3, 12]]], [[[0, 15]]]]])  # flat indices in 2 x 2 x 4 volumes


def _fractional(x, n, kernel_size, output_size):
    batch, channels = (x.shape[0] if x.dim() == n + 2 else 1), x.shape[-n - 1]
    samples = np.random.default_rng(n).random((batch, channels, n))
    samples = lib(x).tensor(samples, dtype=x.dtype, device=x.device)
    fn = getattr(nnf(x), f"fractional_max_pool{n}d")
    return fn(x, kernel_size, output_size, _random_samples=samples)


def BAG_INDICES(w):
    return lib(w).tensor([1, 2, 4, 1, 0, 2], device=w.device)


def BAG_OFFSETS(w):
    return lib(w).tensor([0, 3, 3], device=w.device)


def _unpool2d(x):
    indices = lib(x).tensor([[[[1, 6]], [[4, 3]]]], device=x.device)
    return nnf(x).max_unpool2d(x, indices, 2, output_size=(2, 4))


# fmt: off
CASES += [
    _case("max_pool3d", lambda x: nnf(x).max_pool3d(x, 2), [((1, 2, 2, 4, 4),), ((2, 4, 2, 2),)]),
    _case("max_pool3d",
          lambda x: nnf(x).max_pool3d(x, (2, 1, 3), (1, 2, 2), (1, 0, 1), ceil_mode=True),
          [((1, 1, 3, 3, 4),)]),
    _case("max_pool3d_backward", grad_of(lambda x: nnf(x).max_pool3d(x, 2, 1)),
          [((1, 1, 3, 2, 3),)]),
    _case("avg_pool3d", lambda x: nnf(x).avg_pool3d(x, 2), [((1, 2, 2, 4, 4),), ((2, 4, 2, 2),)]),
    _case("avg_pool3d", lambda x: nnf(x).avg_pool3d(x, 3, 2, 1, count_include_pad=False),
          [((1, 1, 3, 4, 5),)]),
    _case("avg_pool3d_backward", grad_of(lambda x: nnf(x).avg_pool3d(x, 2, 1, 1)),
          [((1, 1, 2, 3, 2),)]),
    _case("adaptive_avg_pool3d", lambda x: nnf(x).adaptive_avg_pool3d(x, (2, 3, 1)),
          [((1, 2, 3, 4, 2),), ((2, 3, 3, 3),)]),
    _case("adaptive_avg_pool3d_backward", grad_of(lambda x: nnf(x).adaptive_avg_pool3d(x, 2)),
          [((1, 1, 3, 2, 3),)]),
    _case("adaptive_max_pool3d", lambda x: nnf(x).adaptive_max_pool3d(x, (2, 1, 3)),
          [((1, 2, 3, 4, 5),), ((2, 3, 2, 3),)]),
    _case("max_unpool2d", _unpool2d, [((1, 2, 1, 2),)]),
    _case("max_unpool3d", lambda x, i: nnf(x).max_unpool3d(x, i, 2),
          [((1, 2, 1, 1, 2), UNPOOL_INDICES)]),
    # fractional max pooling at fixed pseudo-random starts
    _case("fractional_max_pool2d", lambda x: _fractional(x, 2, (2, 3), (3, 2)),
          [((2, 2, 5, 6),), ((2, 4, 4),)]),
    _case("fractional_max_pool2d_backward", grad_of(lambda x: _fractional(x, 2, 2, 3)),
          [((1, 2, 5, 5),)]),
    _case("fractional_max_pool3d", lambda x: _fractional(x, 3, 2, (2, 3, 2)),
          [((1, 2, 4, 5, 4),), ((2, 4, 5, 4),)]),
    _case("fractional_max_pool3d_backward", grad_of(lambda x: _fractional(x, 3, 2, 2)),
          [((1, 2, 4, 4, 4),)]),
    # embedding bags: an empty bag, a padding entry, per-sample weights
    _case("_embedding_bag", lambda w: nnf(w).embedding_bag(BAG_INDICES(w), w, BAG_OFFSETS(w)),
          [((5, 3),)]),
    _case("_embedding_bag",
          lambda w: nnf(w).embedding_bag(BAG_INDICES(w), w, BAG_OFFSETS(w), mode="max",
                                         padding_idx=2), [((5, 3),)]),
    _case("_embedding_bag",
          lambda w, p: nnf(w).embedding_bag(BAG_INDICES(w), w, BAG_OFFSETS(w), mode="sum",
                                            per_sample_weights=p, padding_idx=4),
          [((5, 3), (6,))]),
    # grid sampling (NOTE [Grid sampler rows]): points inside and outside the input
    _case("grid_sampler_2d",
          lambda x, g: nnf(x).grid_sample(x, g * 1.3, align_corners=False),
          [((1, 2, 3, 4), (1, 2, 3, 2))]),
    _case("grid_sampler_2d",
          lambda x, g: nnf(x).grid_sample(x, g, padding_mode="reflection", align_corners=True),
          [((2, 1, 3, 3), (2, 2, 2, 2))]),
    _case("grid_sampler_2d",
          lambda x, g: nnf(x).grid_sample(x, g, "nearest", "border", align_corners=False),
          [((1, 2, 3, 4), (1, 2, 2, 2))]),
    _case("grid_sampler_3d",
          lambda x, g: nnf(x).grid_sample(x, g, padding_mode="border", align_corners=False),
          [((1, 2, 2, 3, 2), (1, 2, 1, 2, 3))]),
    _case("affine_grid_generator",
          lambda t: nnf(t).affine_grid(t, (2, 1, 3, 2), align_corners=False), [((2, 2, 3),)]),
    _case("affine_grid_generator",
          lambda t: nnf(t).affine_grid(t, (1, 1, 2, 2, 3), align_corners=True), [((1, 3, 4),)]),
]
# fmt: on


# fmt: off
# the index-map rows (NOTE [Index-map rows] in nbgrad/derivatives/index_maps.py): each gather row
# through its layer, and its scatter row through the layer's recorded backward
def _interp(mode, **kw):
    return lambda x: nnf(x).interpolate(x, mode=mode, **kw)


INDEX_MAPS = [  # (gather row, scatter row, function, input shapes)
    *[(f"{kind}_pad{n}d", f"{kind}_pad{n}d_backward",
       lambda x, n=n, m=mode: nnf(x).pad(x, (2, 1, 0, 1, 1, 0)[: 2 * n], mode=m), shape)
      for kind, mode in (("reflection", "reflect"), ("replication", "replicate"))
      for n, shape in ((1, (2, 3)), (2, (1, 2, 3, 3)), (3, (1, 2, 2, 3)))],
    *[(f"{aten}{n}d", f"{aten}{n}d_backward", _interp(mode, size=size), shape)
      for aten, mode in (("upsample_nearest", "nearest"),
                         ("_upsample_nearest_exact", "nearest-exact"))
      for n, size, shape in ((1, 5, (1, 2, 3)), (2, (3, 2), (1, 1, 2, 3)),
                             (3, (3, 1, 2), (1, 1, 2, 2, 3)))],
    ("upsample_linear1d", "upsample_linear1d_backward", _interp("linear", size=5), (1, 2, 3)),
    ("upsample_bilinear2d", "upsample_bilinear2d_backward",
     _interp("bilinear", scale_factor=1.5, align_corners=True), (1, 1, 2, 3)),
    ("upsample_bicubic2d", "upsample_bicubic2d_backward",
     _interp("bicubic", size=(3, 4)), (1, 1, 2, 3)),
    ("upsample_trilinear3d", "upsample_trilinear3d_backward",
     _interp("trilinear", size=(3, 2, 2)), (1, 1, 2, 3, 2)),
    ("pixel_shuffle", "pixel_shuffle_backward", lambda x: nnf(x).pixel_shuffle(x, 2), (2, 4, 1, 2)),
    ("pixel_unshuffle", "pixel_unshuffle_backward",
     lambda x: nnf(x).pixel_unshuffle(x, 2), (1, 2, 2)),
    ("im2col", "col2im", lambda x: nnf(x).unfold(x, 2, 1, (1, 0), 1), (1, 2, 2, 3)),
]
CASES += [
    case
    for gather, scatter, fn, shape in INDEX_MAPS
    for case in (_case(gather, fn, [(shape,)]), _case(scatter, grad_of(fn), [(shape,)]))
]
CASES += [
    _case("native_group_norm", lambda x, w, b: nnf(x).group_norm(x, 2, w, b),
          [((2, 4, 3), (4,), (4,)), ((3, 2), (2,), (2,))]),
    _case("native_group_norm", lambda x: nnf(x).group_norm(x, 1), [((2, 3, 2, 2),)]),
    _case("_pdist_forward", lambda x: nnf(x).pdist(x), [((4, 3),), ((1, 2),)]),
    _case("_pdist_forward", lambda x: nnf(x).pdist(x, 1.5), [((3, 2),)]),
    # (PyTorch's double backward of cdist is not implemented)
    _case("_cdist_forward", lambda x, y: lib(x).cdist(x, y),
          [((3, 2), (4, 2)), ((2, 3, 2), (4, 2))], gradgrad=False),
    _case("_cdist_forward", lambda x, y: lib(x).cdist(x, y, 1.5), [((3, 2), (2, 2))],
          gradgrad=False),
    _case("_cdist_forward", lambda x, y: lib(x).cdist(x, y, float("inf")), [((3, 2), (2, 2))],
          gradgrad=False),
]
CASES += [_case("col2im", lambda x: nnf(x).fold(x, (3, 2), 2, padding=(0, 1)),
                [((1, 8, 6),), ((4, 6),)])]
# fmt: on


# ---- PyTorch's wider surface (its rows in nbgrad/derivatives/ and the composites of
# nbgrad/_functions/; an alias or composite is listed under the node it records)
def np_cumextreme(a, dim, fn):
    values = fn.accumulate(a, axis=dim)
    n = a.shape[dim]
    idx = np.zeros(a.shape, dtype=np.int64)
    moved_a, moved_v, moved_i = (np.moveaxis(t, dim, 0) for t in (a, values, idx))
    for i in range(1, n):
        moved_i[i] = np.where(moved_a[i] == moved_v[i], i, moved_i[i - 1])
    return values, idx


def np_logcumsumexp(a, dim):
    return np.logaddexp.accumulate(a, axis=dim)


def np_kthvalue(a, k, dim):
    idx = np.take(np.argsort(a, axis=dim, kind="stable"), [k - 1], axis=dim)
    return np.take_along_axis(a, idx, axis=dim).squeeze(dim), idx.squeeze(dim)


def np_nanmedian(a, dim=None):
    if dim is None:
        flat = np.sort(a.reshape(-1))
        n = np.count_nonzero(~np.isnan(flat))
        return flat[(n - 1) // 2] if n else np.nan
    vals = np.sort(a, axis=dim)
    n = np.count_nonzero(~np.isnan(a), axis=dim, keepdims=True)
    pos = np.where(n > 0, (n - 1) // 2, 0)
    order = np.argsort(a, axis=dim, kind="stable")
    return (
        np.take_along_axis(vals, pos, dim).squeeze(dim),
        np.take_along_axis(order, pos, dim).squeeze(dim),
    )


def np_renorm(a, p, dim, maxnorm):
    dims = tuple(d for d in range(a.ndim) if d != dim)
    norm = np.sum(np.abs(a) ** p, axis=dims, keepdims=True) ** (1 / p)
    return a * np.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)


def np_index_reduce(a, dim, index, s, reduce, include_self=True):
    shape = [1] * s.ndim
    shape[dim] = -1
    spread = np.broadcast_to(np.reshape(index, shape), s.shape)
    return np_scatter_reduce(a, dim, spread, s, reduce, include_self)


def np_scatter_reduce(a, dim, index, src, reduce, include_self=True):
    out = a.copy()
    fn = {
        "sum": np.add,
        "prod": np.multiply,
        "amax": np.maximum,
        "amin": np.minimum,
        "mean": np.add,
    }[reduce]
    key = list(np.indices(index.shape, sparse=True))
    key[dim] = index
    key = tuple(key)
    if not include_self:
        out[key] = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}[reduce]
    fn.at(out, key, src[tuple(slice(0, s) for s in index.shape)])
    if reduce == "mean":
        count = np.ones_like(a) if include_self else np.zeros_like(a)
        np.add.at(count, key, 1)
        out = out / np.where(count == 0, 1, count)
    if not include_self:
        touched = np.zeros(a.shape, bool)
        touched[key] = True
        out = np.where(touched, out, a)
    return out


def np_masked_scatter(a, mask, src):
    out = a.copy()
    out[mask] = src.reshape(-1)[: mask.sum()]
    return out


def np_put_flat(a, index, src, accumulate=False):
    out = a.copy().reshape(-1)
    if accumulate:
        np.add.at(out, index.reshape(-1), src.reshape(-1))
    else:
        out[index.reshape(-1)] = src.reshape(-1)
    return out.reshape(a.shape)


def np_block_diag(*arrays):
    arrays = [np.atleast_2d(a) for a in arrays]
    return scipy.linalg.block_diag(*arrays)


def np_gradient(a, spacing=1.0, edge_order=1):
    out = np.gradient(a, spacing, edge_order=edge_order)
    return tuple(out) if isinstance(out, (list, tuple)) else (out,)


def np_trapezoid(a, dx=1.0):
    return np.trapezoid(a, dx=dx, axis=-1)


def np_cumulative_trapezoid(a, dx=1.0):
    return np.cumsum((a[..., 1:] + a[..., :-1]) * dx / 2, axis=-1)


def np_cov(a):
    return np.cov(a)


def np_vander(a, increasing=False):
    return np.vander(a, increasing=increasing)


def np_mode(a, dim):
    moved = np.moveaxis(a, dim, -1)
    vals, idx = [], []
    for row in moved.reshape(-1, moved.shape[-1]):
        u, c = np.unique(row, return_counts=True)
        best = u[np.argmax(c)]
        vals.append(best)
        idx.append(np.nonzero(row == best)[0][-1])
    return np.array(vals).reshape(moved.shape[:-1]), np.array(idx).reshape(moved.shape[:-1])


def np_unique_consecutive(a):
    keep = np.concatenate([[True], a[1:] != a[:-1]])
    first = np.nonzero(keep)[0]
    return a[first], np.cumsum(keep) - 1, np.diff(np.append(first, a.size))


def np_combinations(a, r=2, with_replacement=False):
    import itertools

    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    return np.array(list(pick(a.tolist(), r)))


def np_cartesian(a, b):
    return np.array([[x, y] for x in a for y in b])


WITH_NAN = Values([[0.3, np.nan, 2.0, 0.7], [1.1, -0.4, np.nan, np.nan], [0.5, 1.6, -0.8, 0.1]])
SPECIALS = Values([[0.5, -0.0, np.inf], [-np.inf, 2.0, np.nan]])
INTS_A = Const(np.array([[12, -18, 7], [0, 9, 4]]))
INTS_B = Const(np.array([[8, 24, 3], [5, -6, 4]]))
MODE_VALUES = Values([[3.0, 1.0, 3.0, 1.0, 2.0], [1.0, 1.0, 2.0, 2.0, 2.0]])
SORTED = Const([[0.5, 1.0, 2.0, 3.5], [-1.0, 0.0, 1.0, 2.0]])
REDUCE_INDEX = Const([[0, 1], [1, 1], [2, 0]])
SINC_ZERO = Values([[0.0, 0.5, -1.5]])

CASES += [
    # aliases: the node of the op they name
    Case("abs", lambda x: lib(x).absolute(x), np.abs, UNARY[:1]),
    Case("abs", lambda x: x.absolute(), np.abs, UNARY[:1]),
    Case("acos", lambda x: lib(x).arccos(x * 0.4), lambda a: np.arccos(0.4 * a), UNARY[:1]),
    Case("asin", lambda x: (x * 0.4).arcsin(), lambda a: np.arcsin(0.4 * a), UNARY[:1]),
    Case("atan", lambda x: lib(x).arctan(x), np.arctan, UNARY[:1]),
    Case("neg", lambda x: lib(x).negative(x), np.negative, UNARY[:1]),
    Case("trunc", lambda x: lib(x).fix(x), np.trunc, UNARY[:1]),
    Case("mul", lambda x, y: lib(x).multiply(x, y), np.multiply, BINARY[:2]),
    Case("sub", lambda x, y: lib(x).subtract(x, y, alpha=2), lambda a, b: a - 2 * b, BINARY[:2]),
    Case("div", lambda x, y: lib(x).divide(x, y), np.divide, BINARY[:2]),
    Case("div", lambda x, y: lib(x).true_divide(x, y), np.divide, BINARY[:1]),
    Case("gt", lambda x, y: lib(x).greater(x, y), np.greater, BINARY[:2], domain="ints"),
    Case("ge", lambda x, y: x.greater_equal(y), np.greater_equal, BINARY[:2], domain="ints"),
    Case("lt", lambda x, y: lib(x).less(x, y), np.less, BINARY[:2], domain="ints"),
    Case("le", lambda x, y: x.less_equal(y), np.less_equal, BINARY[:2], domain="ints"),
    Case("ne", lambda x, y: lib(x).not_equal(x, y), np.not_equal, BINARY[:2], domain="ints"),
    # pointwise rows
    Case("acosh", lambda x: (x.abs() + 1.2).acosh(), lambda a: np.arccosh(np.abs(a) + 1.2), UNARY),
    Case(
        "acosh",
        lambda x: lib(x).arccosh(x.abs() + 1.5),
        lambda a: np.arccosh(np.abs(a) + 1.5),
        UNARY[:1],
    ),
    Case("asinh", lambda x: x.asinh(), np.arcsinh, UNARY),
    Case("asinh", lambda x: lib(x).arcsinh(x), np.arcsinh, UNARY[:1]),
    Case("atanh", lambda x: (x * 0.4).atanh(), lambda a: np.arctanh(0.4 * a), UNARY),
    Case("atanh", lambda x: lib(x).arctanh(x * 0.3), lambda a: np.arctanh(0.3 * a), UNARY[:1]),
    Case("erfc", lambda x: lib(x).erfc(x), scipy.special.erfc, UNARY),
    Case("deg2rad", lambda x: lib(x).deg2rad(x), np.deg2rad, UNARY),
    Case("rad2deg", lambda x: x.rad2deg(), np.rad2deg, UNARY),
    Case(
        "logit",
        lambda x: (x * 0.2 + 0.5).logit(),
        lambda a: scipy.special.logit(0.2 * a + 0.5),
        UNARY,
    ),
    Case(
        "logit",
        lambda x: lib(x).logit(x * 0.2 + 0.5, eps=0.2),
        lambda a: scipy.special.logit(np.clip(0.2 * a + 0.5, 0.2, 0.8)),
        UNARY[:1],
    ),
    Case("sinc", lambda x: lib(x).sinc(x), np.sinc, UNARY),
    Case("sinc", lambda x: x.sinc(), np.sinc, [(SINC_ZERO,)], gradgrad=False),
    Case("xlogy", lambda x, y: lib(x).xlogy(x, y), scipy.special.xlogy, BINARY, domain="positive"),
    Case("xlogy", lambda x, y: x.xlogy(y), scipy.special.xlogy, [(WITH_ZERO, (2, 3))], grad=False),
    Case(
        "xlogy_self_scalar",
        lambda y: lib(y).xlogy(2.0, y),
        lambda b: scipy.special.xlogy(2.0, b),
        UNARY,
        domain="positive",
    ),
    Case(
        "xlogy_other_scalar", lambda x: x.xlogy(3.0), lambda a: scipy.special.xlogy(a, 3.0), UNARY
    ),
    Case("fmax", lambda x, y: lib(x).fmax(x, y), np.fmax, BINARY),
    Case(
        "fmax",
        lambda x, y: x.fmax(y),
        np.fmax,
        [(SPECIALS, Values([[1.0, np.nan, 0.0], [np.nan, 1.0, 2.0]]))],
        grad=False,
    ),
    Case("fmin", lambda x, y: lib(x).fmin(x, y), np.fmin, BINARY),
    Case(
        "fmin",
        lambda x, y: x.fmin(y),
        np.fmin,
        [(SPECIALS, Values([[1.0, np.nan, 0.0], [np.nan, 1.0, 2.0]]))],
        grad=False,
    ),
    Case("copysign", lambda x, y: lib(x).copysign(x, y), np.copysign, BINARY),
    Case("copysign_scalar", lambda x: x.copysign(-1.0), lambda a: np.copysign(a, -1.0), UNARY),
    Case("logaddexp2", lambda x, y: lib(x).logaddexp2(x, y), np.logaddexp2, BINARY),
    Case("ldexp", lambda x, y: lib(x).ldexp(x, y), lambda a, b: a * 2.0**b, BINARY),
    Case("nextafter", lambda x, y: lib(x).nextafter(x, y), np.nextafter, BINARY[:4]),
    Case(
        "heaviside",
        lambda x, y: lib(x).heaviside(x, y),
        np.heaviside,
        BINARY[:2],
        domain="ints",
        not_implemented="heaviside",
    ),
    Case("frexp", lambda x: tuple(lib(x).frexp(x)), np.frexp, UNARY),
    Case("pow", lambda x: lib(x).float_power(x, 2), lambda a: a**2, UNARY[:2]),
    Case("pow_tensor", lambda x, y: x.float_power(y), np.power, BINARY[:2], domain="positive"),
    Case(
        "addcmul",
        lambda x, y, z: lib(x).addcmul(x, y, z, value=0.5),
        lambda a, b, c: a + 0.5 * b * c,
        [((2, 3), (2, 3), (2, 3)), ((3,), (2, 1), (1, 3)), ((), (), ())],
    ),
    Case(
        "addcdiv",
        lambda x, y, z: x.addcdiv(y, z, value=-2),
        lambda a, b, c: a - 2 * b / c,
        [((2, 3), (2, 3), (2, 3)), ((3,), (2, 1), (1, 3))],
    ),
    Case(
        "rsub_tensor", lambda x, y: lib(x).rsub(x, y, alpha=2), lambda a, b: b - 2 * a, BINARY[:3]
    ),
    Case("rsub", lambda x: lib(x).rsub(x, 1.5), lambda a: 1.5 - a, UNARY[:1]),
    Case(
        "div_rounding",
        lambda x, y: lib(x).div(x, y, rounding_mode="floor"),
        lambda a, b: np.floor(a / b),
        BINARY[:3],
    ),
    Case(
        "div_rounding",
        lambda x, y: x.divide(y, rounding_mode="trunc"),
        lambda a, b: np.trunc(a / b),
        BINARY[:2],
    ),
    Case(
        "div_rounding",
        lambda x: lib(x).div(x, 2, rounding_mode="trunc"),
        lambda a: np.trunc(a / 2),
        [(INT_VALUES,)],
    ),
    Case("fill_new", lambda x: lib(x).fill(x, 2.5), lambda a: np.full_like(a, 2.5), UNARY),
    Case("signbit", lambda x: x.signbit(), np.signbit, [(SPECIALS,)]),
    Case("isposinf", lambda x: lib(x).isposinf(x), np.isposinf, [(SPECIALS,)]),
    Case("isneginf", lambda x: lib(x).isneginf(x), np.isneginf, [(SPECIALS,)]),
    Case("gcd", lambda x, y: lib(x).gcd(x, y), np.gcd, [(INTS_A, INTS_B)]),
    Case("lcm", lambda x, y: x.lcm(y), np.lcm, [(INTS_A, INTS_B)]),
    Case("bitwise_and", lambda x, y: lib(x).bitwise_and(x, y), np.bitwise_and, [(INTS_A, INTS_B)]),
    Case("bitwise_or", lambda x, y: x.bitwise_or(y), np.bitwise_or, [(INTS_A, INTS_B)]),
    Case("bitwise_xor", lambda x, y: lib(x).bitwise_xor(x, y), np.bitwise_xor, [(INTS_A, INTS_B)]),
    Case("bitwise_not", lambda x: lib(x).bitwise_not(x), np.invert, [(INTS_A,)]),
    Case(
        "bitwise_left_shift",
        lambda x: lib(x).bitwise_left_shift(x.abs(), 2),
        lambda a: np.abs(a) << 2,
        [(INTS_A,)],
    ),
    Case(
        "bitwise_right_shift",
        lambda x, y: x.abs().bitwise_right_shift(y.abs() % 3),
        lambda a, b: np.abs(a) >> (np.abs(b) % 3),
        [(INTS_A, INTS_B)],
    ),
    # scans and reductions
    Case(
        "cummax",
        lambda x: tuple(lib(x).cummax(x, 1)),
        lambda a: np_cumextreme(a, 1, np.maximum),
        [((2, 4),), ((0, 2),)],
    ),
    Case(
        "cummax",
        lambda x: tuple(x.cummax(0)),
        lambda a: np_cumextreme(a, 0, np.maximum),
        [(TIES,)],
        grad=False,
    ),
    Case(
        "cummin",
        lambda x: tuple(x.cummin(-1)),
        lambda a: np_cumextreme(a, -1, np.minimum),
        [((3, 4),)],
    ),
    Case(
        "cummin",
        lambda x: tuple(lib(x).cummin(x, 1)),
        lambda a: np_cumextreme(a, 1, np.minimum),
        [(TIES,)],
        grad=False,
    ),
    Case(
        "logcumsumexp",
        lambda x: lib(x).logcumsumexp(x, 1),
        lambda a: np_logcumsumexp(a, 1),
        [((2, 4),), ((0, 2),)],
    ),
    Case("logcumsumexp", lambda x: x.logcumsumexp(0), lambda a: np_logcumsumexp(a, 0), [((3, 2),)]),
    Case("nansum", lambda x: lib(x).nansum(x), np.nansum, UNARY + [(WITH_NAN,)]),
    Case(
        "nansum",
        lambda x: x.nansum(1, keepdim=True),
        lambda a: np.nansum(a, 1, keepdims=True),
        [(WITH_NAN,)],
    ),
    Case(
        "div", lambda x: lib(x).nanmean(x, 1), lambda a: np.nanmean(a, 1), [(WITH_NAN,), ((2, 3),)]
    ),
    Case("div", lambda x: x.nanmean(), np.nanmean, [(WITH_NAN,)]),
    Case("nanmedian", lambda x: lib(x).nanmedian(x), np_nanmedian, [(WITH_NAN,), (DISTINCT,)]),
    Case(
        "nanmedian_dim",
        lambda x: tuple(x.nanmedian(1)),
        lambda a: np_nanmedian(a, 1),
        [(WITH_NAN,), (DISTINCT,)],
    ),
    Case(
        "squeeze_dim_",
        lambda x: lib(x).nanquantile(x, 0.3, dim=1),
        lambda a: np.nanquantile(a, 0.3, axis=1),
        [(WITH_NAN,)],
    ),
    Case(
        "squeeze_dim_",
        lambda x: x.nanquantile(0.6),
        lambda a: np.nanquantile(a, 0.6),
        [(WITH_NAN,), (DISTINCT,)],
    ),
    Case(
        "kthvalue",
        lambda x: tuple(lib(x).kthvalue(x, 2, 1)),
        lambda a: np_kthvalue(a, 2, 1),
        [(DISTINCT,)],
    ),
    Case(
        "kthvalue", lambda x: tuple(x.kthvalue(3, 0)), lambda a: np_kthvalue(a, 3, 0), [(DISTINCT,)]
    ),
    Case("mode", lambda x: tuple(lib(x).mode(x, 1)), lambda a: np_mode(a, 1), [(DISTINCT,)]),
    Case("mode", lambda x: tuple(x.mode()), lambda a: np_mode(a, -1), [(MODE_VALUES,)], grad=False),
    Case("aminmax", lambda x: tuple(lib(x).aminmax(x)), lambda a: (a.min(), a.max()), NO_EMPTY),
    Case(
        "aminmax",
        lambda x: tuple(x.aminmax(dim=1, keepdim=True)),
        lambda a: (a.min(1, keepdims=True), a.max(1, keepdims=True)),
        [((2, 3),)],
    ),
    Case("sort", lambda x: lib(x).msort(x), lambda a: np.sort(a, 0), [(DISTINCT,)]),
    Case("sub", lambda x: lib(x).diff(x), lambda a: np.diff(a), [((2, 4),)]),
    Case(
        "sub",
        lambda x, y: x.diff(2, 0, prepend=y),
        lambda a, b: np.diff(a, 2, 0, prepend=b),
        [((3, 2), (1, 2))],
    ),
    Case("cumsum", lambda x: lib(x).cumulative_trapezoid(x), np_cumulative_trapezoid, [((2, 4),)]),
    Case(
        "cumsum",
        lambda x: lib(x).cumulative_trapezoid(x, dx=0.5),
        lambda a: np_cumulative_trapezoid(a, 0.5),
        [((3,),)],
    ),
    Case("mul_scalar", lambda x: lib(x).trapezoid(x), np_trapezoid, [((2, 4),), ((3,),)]),
    Case(
        "mul_scalar",
        lambda x: lib(x).trapezoid(x, dx=0.5),
        lambda a: np_trapezoid(a, 0.5),
        [((2, 4),)],
    ),
    Case(
        "div_scalar",
        lambda y, x: lib(x).trapezoid(y, x),
        lambda b, a: np.trapezoid(b, a, axis=-1),
        [((2, 4), (4,))],
    ),
    Case(
        "div_scalar",
        lambda y, x: lib(x).cumulative_trapezoid(y, x),
        lambda b, a: np.cumsum((b[..., 1:] + b[..., :-1]) * np.diff(a) / 2, -1),
        [((2, 4), (4,))],
    ),
    Case("cat", lambda x: lib(x).gradient(x), np_gradient, [((3, 4),), ((5,),)]),
    Case(
        "cat",
        lambda x: lib(x).gradient(x, spacing=0.5, edge_order=2),
        lambda a: np_gradient(a, 0.5, 2),
        [((3, 4),)],
    ),
    # products
    Case(
        "addmv",
        lambda b, m, v: lib(b).addmv(b, m, v),
        lambda b, m, v: b + m @ v,
        [((2,), (2, 3), (3,)), ((), (2, 3), (3,))],
    ),
    Case(
        "addmv",
        lambda b, m, v: b.addmv(m, v, beta=0.5, alpha=2),
        lambda b, m, v: 0.5 * b + 2 * (m @ v),
        [((2,), (2, 3), (3,))],
    ),
    Case(
        "addr",
        lambda b, u, v: lib(b).addr(b, u, v),
        lambda b, u, v: b + np.outer(u, v),
        [((2, 3), (2,), (3,)), ((3,), (2,), (3,))],
    ),
    Case(
        "addr",
        lambda b, u, v: b.addr(u, v, beta=2, alpha=-1),
        lambda b, u, v: 2 * b - np.outer(u, v),
        [((2, 3), (2,), (3,))],
    ),
    Case(
        "addbmm",
        lambda b, x, y: lib(b).addbmm(b, x, y),
        lambda b, x, y: b + (x @ y).sum(0),
        [((2, 4), (3, 2, 3), (3, 3, 4)), ((4,), (2, 2, 3), (2, 3, 4))],
    ),
    Case(
        "addbmm",
        lambda b, x, y: b.addbmm(x, y, beta=0.5, alpha=3),
        lambda b, x, y: 0.5 * b + 3 * (x @ y).sum(0),
        [((2, 4), (3, 2, 3), (3, 3, 4))],
    ),
    Case("view", lambda x, y: lib(x).inner(x, y), np.inner, [((3,), (3,)), ((2, 3), (4, 3))]),
    Case("mul", lambda x, y: x.inner(y), np.inner, [((), (3,))]),
    Case("vdot", lambda x, y: lib(x).vdot(x, y), np.vdot, [((3,), (3,)), ((0,), (0,))]),
    Case("dist", lambda x, y: lib(x).dist(x, y), lambda a, b: np_norm(a - b), BINARY[:4]),
    Case("dist", lambda x, y: x.dist(y, 1), lambda a, b: np_norm(a - b, 1), BINARY[:2]),
    Case("dist", lambda x, y: x.dist(y, 3), lambda a, b: np_norm(a - b, 3), BINARY[:2]),
    Case(
        "dist", lambda x, y: x.dist(y, math.inf), lambda a, b: np_norm(a - b, math.inf), BINARY[:2]
    ),
    Case(
        "block_diag",
        lambda x, y: lib(x).block_diag(x, y),
        np_block_diag,
        [((2, 3), (2,)), ((), (2, 2))],
    ),
    Case(
        "block_diag",
        lambda x, y, z: lib(x).block_diag(x, y, z),
        np_block_diag,
        [((1, 2), (3, 1), (2,))],
    ),
    Case("renorm", lambda x: x.renorm(2, 0, 2.5), lambda a: np_renorm(a, 2, 0, 2.5), [((3, 4),)]),
    Case(
        "renorm",
        lambda x: lib(x).renorm(x, 1, 1, 2.0),
        lambda a: np_renorm(a, 1, 1, 2.0),
        [((3, 4),), ((2, 3, 2),)],
    ),
    Case(
        "renorm", lambda x: x.renorm(3, 2, 1.5), lambda a: np_renorm(a, 3, 2, 1.5), [((2, 2, 3),)]
    ),
    Case("stack", lambda x, y: lib(x).cartesian_prod(x, y), np_cartesian, [((3,), (2,))]),
    Case("stack", lambda x: lib(x).combinations(x), np_combinations, [((4,),)]),
    Case(
        "stack",
        lambda x: lib(x).combinations(x, 3, with_replacement=True),
        lambda a: np_combinations(a, 3, True),
        [((3,),)],
    ),
    Case("squeeze", lambda x: lib(x).cov(x), np_cov, [((3, 5),), ((4,),)]),
    Case("clamp", lambda x: lib(x).corrcoef(x), np.corrcoef, [((3, 5),)]),
    # (PyTorch's vander has no working gradient: its backward raises on its own in-place write)
    Case("flip", lambda x: lib(x).vander(x), np_vander, [(Const([0.5, -1.0, 2.0]),)]),
    Case("flip", lambda x: lib(x).vander(x, 2), lambda a: np.vander(a, 2), [(Const([1, 2, 3]),)]),
    Case(
        "diag_embed", lambda x: lib(x).diagflat(x), lambda a: np.diagflat(a), [((3,),), ((2, 2),)]
    ),
    Case("diag_embed", lambda x: x.diagflat(-1), lambda a: np.diagflat(a, -1), [((3,),)]),
    # shapes
    Case("view", lambda x: lib(x).atleast_1d(x), np.atleast_1d, [((),)]),
    Case("view", lambda x: lib(x).atleast_2d(x), np.atleast_2d, [((),)]),
    Case("unsqueeze", lambda x: lib(x).atleast_2d(x), np.atleast_2d, [((3,),)]),
    Case("unsqueeze", lambda x: lib(x).atleast_3d(x), np.atleast_3d, [((3,),), ((2, 3),)]),
    Case(
        "unsqueeze",
        lambda x, y: lib(x).atleast_3d((x, y)),
        lambda a, b: np.atleast_3d(a, b),
        [((2, 3), (3,))],
    ),
    Case(
        "cat",
        lambda x, y: lib(x).hstack([x, y]),
        lambda a, b: np.hstack([a, b]),
        [((2, 3), (2, 1)), ((3,), (2,))],
    ),
    Case(
        "cat",
        lambda x, y: lib(x).vstack((x, y)),
        lambda a, b: np.vstack([a, b]),
        [((2, 3), (1, 3)), ((3,), (3,))],
    ),
    Case(
        "cat",
        lambda x, y: lib(x).row_stack((x, y)),
        lambda a, b: np.vstack([a, b]),
        [((2, 3), (3,))],
    ),
    Case(
        "cat",
        lambda x, y: lib(x).dstack([x, y]),
        lambda a, b: np.dstack([a, b]),
        [((2, 3), (2, 3)), ((3,), (3,))],
    ),
    Case(
        "cat",
        lambda x, y: lib(x).column_stack([x, y]),
        lambda a, b: np.column_stack([a, b]),
        [((3,), (3, 2)), ((2,), (2,))],
    ),
    Case(
        "cat",
        lambda x, y: lib(x).concat([x, y], dim=1),
        lambda a, b: np.concatenate([a, b], 1),
        [((2, 3), (2, 1))],
    ),
    Case(
        "cat",
        lambda x, y: lib(x).concatenate([x, y], axis=0),
        lambda a, b: np.concatenate([a, b], 0),
        [((2, 3), (1, 3))],
    ),
    Case(
        "slice",
        lambda x: lib(x).tensor_split(x, 3, dim=1),
        lambda a: tuple(np.array_split(a, 3, 1)),
        [((2, 7),), ((2, 2),)],
    ),
    Case(
        "slice", lambda x: x.tensor_split([1, 3]), lambda a: tuple(np.split(a, [1, 3])), [((5, 2),)]
    ),
    Case(
        "slice",
        lambda x: lib(x).hsplit(x, 2),
        lambda a: tuple(np.hsplit(a, 2)),
        [((2, 4),), ((4,),)],
    ),
    Case("slice", lambda x: lib(x).vsplit(x, [1]), lambda a: tuple(np.vsplit(a, [1])), [((3, 2),)]),
    Case("slice", lambda x: lib(x).dsplit(x, 2), lambda a: tuple(np.dsplit(a, 2)), [((1, 2, 4),)]),
    Case(
        "split_with_sizes",
        lambda x: lib(x).split_with_sizes(x, [1, 3], 1),
        lambda a: tuple(np.split(a, [1], 1)),
        [((2, 4),)],
    ),
    Case(
        "unsafe_split",
        lambda x: lib(x).unsafe_split(x, 2, 1),
        lambda a: tuple(np.split(a, [2], 1)),
        [((2, 3),)],
    ),
    Case(
        "unsafe_split", lambda x: x.unsafe_chunk(2), lambda a: tuple(np.split(a, [2])), [((4, 2),)]
    ),
    Case(
        "unsafe_split_with_sizes",
        lambda x: lib(x).unsafe_split_with_sizes(x, [1, 2], 1),
        lambda a: tuple(np.split(a, [1], 1)),
        [((2, 3),)],
    ),
    Case("flip", lambda x: lib(x).fliplr(x), np.fliplr, [((2, 3),)]),
    Case("flip", lambda x: x.flipud(), np.flipud, [((2, 3),), ((3,),)]),
    Case("rot90", lambda x: lib(x).rot90(x), np.rot90, [((2, 3),)]),
    Case("rot90", lambda x: x.rot90(2, (1, 0)), lambda a: np.rot90(a, 2, (1, 0)), [((2, 3),)]),
    Case("rot90", lambda x: x.rot90(-1, [1, 2]), lambda a: np.rot90(a, -1, (1, 2)), [((2, 3, 4),)]),
    Case(
        "view", lambda x: lib(x).unflatten(x, 1, (2, 2)), lambda a: a.reshape(3, 2, 2), [((3, 4),)]
    ),
    Case("view", lambda x: x.unflatten(-1, (-1, 2)), lambda a: a.reshape(3, 2, 2), [((3, 4),)]),
    Case("view", lambda x: lib(x).ravel(x), np.ravel, [((2, 3),)]),
    Case("view", lambda x: x.t().ravel(), lambda a: np.ravel(a.T), [((2, 3),)]),
    Case(
        "transpose",
        lambda x: lib(x).adjoint(x),
        lambda a: np.swapaxes(a, -1, -2),
        [((2, 3),), ((2, 3, 4),)],
    ),
    Case(
        "gather",
        lambda x, i: lib(x).take_along_dim(x, i, 1),
        lambda a, i: np.take_along_axis(a, i, 1),
        [((3, 4), Const([[0], [3], [1]]))],
    ),
    Case(
        "gather",
        lambda x, i: lib(x).take_along_dim(x, i),
        lambda a, i: a.reshape(-1)[i],
        [((3, 4), Const([0, 5, 11]))],
    ),
    Case(
        "gather",
        lambda x, i: x.take_along_dim(i, 0),
        lambda a, i: np.take_along_axis(a, np.broadcast_to(i, (2, 4)), 0),
        [((3, 4), Const([[2], [0]]))],
    ),
    # indexing
    Case(
        "index_copy",
        lambda x, i, y: lib(x).index_copy(x, 1, i, y),
        lambda a, i, b: np.concatenate([b[:, 1:2], a[:, 1:2], b[:, 0:1]], 1),
        [((2, 3), Const([2, 0]), (2, 2))],
    ),
    Case(
        "index_copy",
        lambda x, i, y: x.clone().index_copy_(0, i, y),
        lambda a, i, b: np.concatenate([a[:1], b]),
        [((2, 3), Const([1]), (1, 3))],
    ),
    Case(
        "index_fill",
        lambda x, i: lib(x).index_fill(x, 1, i, -1.5),
        lambda a, i: np.where([True, False, True], -1.5, a),
        [((2, 3), Const([0, 2]))],
    ),
    Case(
        "index_fill",
        lambda x, i: x.clone().index_fill_(0, i, 2.0),
        lambda a, i: np.where([[False], [True]], 2.0, a),
        [((2, 3), Const([1]))],
    ),
    Case(
        "index_put",
        lambda x, y: lib(x).index_put(x, (lib(x).tensor([0, 2]),), y),
        lambda a, b: np_put(a, ([0, 2],), b),
        [((3, 2), (2, 2))],
    ),
    Case(
        "index_put_accumulate",
        lambda x, y: lib(x).index_put(x, (lib(x).tensor([0, 1, 0]),), y, accumulate=True),
        lambda a, b: a + np.stack([b[0] + b[2], b[1], 0 * b[0]]),
        [((3, 2), (3, 2))],
    ),
    Case(
        "index_put_accumulate",
        lambda x, y: x.clone().index_put_((lib(x).tensor([1, 1]),), y, True),
        lambda a, b: a + np.array([0.0, 2 * b, 0.0]),
        [((3,), ())],
    ),
    Case(
        "scatter_reduce",
        lambda x, i, s: lib(x).scatter_reduce(x, 1, i, s, "sum"),
        lambda a, i, s: np_scatter_reduce(a, 1, i, s, "sum"),
        [((3, 3), REDUCE_INDEX, (3, 2))],
    ),
    Case(
        "scatter_reduce",
        lambda x, i, s: x.scatter_reduce(1, i, s, "mean", include_self=False),
        lambda a, i, s: np_scatter_reduce(a, 1, i, s, "mean", False),
        [((3, 3), REDUCE_INDEX, (3, 2))],
    ),
    Case(
        "scatter_reduce",
        lambda x, i, s: x.scatter_reduce(1, i, s, "amax"),
        lambda a, i, s: np_scatter_reduce(a, 1, i, s, "amax"),
        [((3, 3), REDUCE_INDEX, (3, 2))],
    ),
    Case(
        "scatter_reduce",
        lambda x, i, s: x.scatter_reduce(1, i, s, "amin", include_self=False),
        lambda a, i, s: np_scatter_reduce(a, 1, i, s, "amin", False),
        [((3, 3), REDUCE_INDEX, (3, 2))],
    ),
    Case(
        "scatter_reduce",
        lambda x, i, s: x.scatter_reduce(1, i, s, "prod"),
        lambda a, i, s: np_scatter_reduce(a, 1, i, s, "prod"),
        [((3, 3), REDUCE_INDEX, (3, 2))],
    ),
    Case(
        "scatter_reduce",
        lambda x, i, s: x.clone().scatter_reduce_(0, i, s, "sum", include_self=False),
        lambda a, i, s: np_scatter_reduce(a, 0, i, s, "sum", False),
        [((3, 2), Const([[2, 0]]), (1, 2))],
    ),
    Case(
        "index_reduce",
        lambda x, s: lib(x).index_reduce(
            x, 0, lib(x).tensor([0, 2, 0], device=x.device), s, "prod", include_self=True
        ),
        lambda a, s: np_index_reduce(a, 0, [0, 2, 0], s, "prod", True),
        [((3, 2), (3, 2))],
    ),
    Case(
        "index_reduce",
        lambda x, s: lib(x).index_reduce(
            x, 1, lib(x).tensor([1, 1, 0], device=x.device), s, "prod", include_self=False
        ),
        lambda a, s: np_index_reduce(a, 1, [1, 1, 0], s, "prod", False),
        [((2, 3), (2, 3))],
    ),
    Case(
        "index_reduce",
        lambda x, s: lib(x).index_reduce(
            x, 1, lib(x).tensor([2, 0, 2, 2], device=x.device), s, "mean", include_self=True
        ),
        lambda a, s: np_index_reduce(a, 1, [2, 0, 2, 2], s, "mean", True),
        [((2, 3), (2, 4))],
    ),
    Case(
        "index_reduce",
        lambda x, s: lib(x).index_reduce(
            x, 0, lib(x).tensor([1, 1], device=x.device), s, "mean", include_self=False
        ),
        lambda a, s: np_index_reduce(a, 0, [1, 1], s, "mean", False),
        [((3, 2), (2, 2))],
    ),
    Case(
        "index_reduce",
        lambda x, s: lib(x).index_reduce(
            x, 0, lib(x).tensor([2, 0, 2], device=x.device), s, "amax", include_self=True
        ),
        lambda a, s: np_index_reduce(a, 0, [2, 0, 2], s, "amax", True),
        [((3, 2), (3, 2))],
    ),
    Case(
        "index_reduce",
        lambda x, s: lib(x).index_reduce(
            x, 1, lib(x).tensor([0, 2, 0], device=x.device), s, "amin", include_self=False
        ),
        lambda a, s: np_index_reduce(a, 1, [0, 2, 0], s, "amin", False),
        [((2, 3), (2, 3))],
    ),
    Case(
        "masked_scatter",
        lambda x, s: lib(x).masked_scatter(x, x > 0, s),
        lambda a, s: np_masked_scatter(a, a > 0, s),
        [((2, 3), (2, 3)), ((2, 3), (7,))],
    ),
    Case(
        "masked_scatter",
        lambda x, m, s: x.masked_scatter(m, s),
        lambda a, m, s: np_masked_scatter(a, m, s),
        [((2, 3), MASK, (3,))],
    ),
    Case("put", lambda x, i, s: lib(x).put(x, i, s), np_put_flat, [((2, 3), Const([0, 5]), (2,))]),
    Case(
        "put",
        lambda x, i, s: x.put(i, s, accumulate=True),
        lambda a, i, s: np_put_flat(a, i, s, True),
        [((2, 3), Const([[1, 1]]), (1, 2))],
    ),
    # counting and searching: no gradient
    Case(
        "histc",
        lambda x: lib(x).histc(x, bins=4, min=-2, max=2),
        lambda a: np.histogram(a, 4, (-2, 2))[0].astype(a.dtype),
        [((2, 3),)],
    ),
    Case(
        "histc",
        lambda x: x.histc(3),
        lambda a: np.histogram(a, 3, (a.min(), a.max()))[0].astype(a.dtype),
        [((5,),)],
    ),
    Case(
        "histogram",
        lambda x: tuple(lib(x).histogram(x, 4)),
        lambda a: tuple(np.histogram(a, 4)),
        [(Const([[0.5, -1.0, 2.0], [1.5, 0.25, 1.0]]),)],
    ),
    Case(
        "histogramdd",
        lambda x: lib(x).histogramdd(x, [3, 2]).hist,
        lambda a: np.histogramdd(a, [3, 2])[0],
        [((6, 2),)],
        not_implemented="_histogramdd_from_bin_cts",
    ),
    Case(
        "histogramdd",
        lambda x, w: (
            lib(x)
            .histogramdd(
                x, 2, range=[-1.0, 1.0, 0.0, 2.0, -2.0, 0.0], weight=w.detach(), density=True
            )
            .hist
        ),
        lambda a, w: np.histogramdd(
            a.reshape(-1, 3), 2, [(-1, 1), (0, 2), (-2, 0)], density=True, weights=w.reshape(-1)
        )[0],
        [((2, 4, 3), (2, 4))],
        not_implemented="_histogramdd_from_bin_cts",
    ),
    Case(
        "bincount",
        lambda x: lib(x).bincount(x.abs()),
        lambda a: np.bincount(np.abs(a)),
        [(Const(np.array([1, 4, 1, 0])),)],
    ),
    Case(
        "bincount",
        lambda x, w: x.bincount(w, minlength=6),
        lambda a, w: np.bincount(a, w, 6),
        [(Const(np.array([1, 4, 1])), Const([0.5, 1.0, 2.0]))],
    ),
    Case(
        "searchsorted",
        lambda s, v: lib(s).searchsorted(s, v),
        lambda s, v: np.stack([np.searchsorted(r, w) for r, w in zip(s, v)]),
        [(SORTED, Const([[0.7, 3.5], [1.0, -2.0]]))],
    ),
    Case(
        "searchsorted",
        lambda s, v: lib(s).bucketize(v, s[0], right=True),
        lambda s, v: np.searchsorted(s[0], v, "right"),
        [(SORTED, Const([[0.7, 3.5], [1.0, -2.0]]))],
    ),
    Case("isin", lambda x, y: lib(x).isin(x, y), np.isin, [(INTS_A, INTS_B)]),
    Case(
        "isin",
        lambda x, y: lib(x).isin(x, y, invert=True),
        lambda a, b: np.isin(a, b, invert=True),
        [(INTS_A, Const([7, 9]))],
    ),
    Case(
        "unique_consecutive",
        lambda x: lib(x).unique_consecutive(x, return_inverse=True, return_counts=True),
        np_unique_consecutive,
        [(Const(np.array([1, 1, 2, 2, 3, 1, 1])),)],
    ),
]

# ---- in-place comparisons and random fills (nbgrad/_tensor/inplace_variants.py) ---------------
INPLACE_BINARY = [((2, 3), (2, 3)), ((2, 3), (3,)), ((), ())]


def compare_inplace(name, other=None):
    """``x.clone().<name>_(y)`` (a tensor ``y``), or ``x.clone().<name>_(other)``."""
    if other is None:
        return lambda x, y: getattr(x.clone(), name + "_")(y)
    return lambda x: getattr(x.clone(), name + "_")(other)


def np_compared(f, other=None):
    if other is None:
        return lambda a, b: f(a, b).astype(a.dtype)
    return lambda a: f(a, other).astype(a.dtype)


_COMPARE = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}
CASES += [  # ties (parity only: finite differences jump there), and away from ties
    *(
        Case(
            f"{n}_",
            compare_inplace(n),
            np_compared(f),
            INPLACE_BINARY,
            domain=domain,
            grad=domain != "ints",
        )
        for n, f in _COMPARE.items()
        for domain in ("ints", "signed")
    ),
    *(
        Case(
            f"{n}_scalar_",
            compare_inplace(n, 1),
            np_compared(f, 1),
            UNARY,
            domain=domain,
            grad=domain != "ints",
        )
        for n, f in _COMPARE.items()
        for domain in ("ints", "signed")
    ),
    # the fills: degenerate parameters, or a result that hides the draws
    Case("uniform_", lambda x: x.clone().uniform_(0.5, 0.5), lambda a: np.full_like(a, 0.5), UNARY),
    Case("normal_", lambda x: x.clone().normal_(2, 0), lambda a: np.full_like(a, 2.0), UNARY),
    Case("exponential_", lambda x: x.clone().exponential_(math.inf), np.zeros_like, UNARY),
    Case("cauchy_", lambda x: x.clone().cauchy_() * 0, np.zeros_like, UNARY),
    Case("log_normal_", lambda x: x.clone().log_normal_() * 0, np.zeros_like, UNARY),
    Case("geometric_", lambda x: x.clone().geometric_(0.5).clamp(max=1), np.ones_like, UNARY),
    Case("random_0", lambda x: x.clone().random_(3, 4), lambda a: np.full_like(a, 3.0), UNARY),
    Case("random_1", lambda x: x.clone().random_(1), np.zeros_like, UNARY),
    Case("random_2", lambda x: x.clone().random_() * 0, np.zeros_like, UNARY),
]


# ---- running a case on nbgrad and on torch -------------------------------------------------
def _sample_values(case, sample, seed):
    rng = np.random.default_rng(seed)
    values = []
    for spec in sample:
        if isinstance(spec, (Const, Values)):
            values.append(spec.values)
        elif case.domain == "positive":
            values.append(rng.uniform(0.5, 2.0, spec))
        elif case.domain == "ints":
            values.append(rng.integers(-2, 3, spec).astype(np.float64))
        else:
            values.append(rng.uniform(0.25, 2.0, spec) * rng.choice([-1.0, 1.0], spec))
    return [np.asarray(v) for v in values]  # 0-d draws come back as NumPy scalars


def _requires_grad(spec):
    return not isinstance(spec, Const)


def _ng_inputs(sample, values):
    return [
        ng.tensor(v, requires_grad=True) if _requires_grad(s) else ng.tensor(v)
        for s, v in zip(sample, values)
    ]


def _as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _to_numpy(t):
    return np.asarray(t.detach().cpu().numpy())


def _dtype_name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def _node_names(outputs):
    """Names of every node reachable from ``outputs`` (and of the nodes a CopySlices wraps)."""
    seen, names = set(), set()
    stack = [o.grad_fn for o in outputs if isinstance(o, ng.Tensor) and o.grad_fn is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        names.add(node.name())
        if getattr(node, "fn", None) is not None and hasattr(node.fn, "next_functions"):
            stack.append(node.fn)
        stack.extend(fn for fn, _ in node.next_functions if fn is not None)
    return names


def _params():
    params, count = [], {}
    for case in CASES:
        for sample in case.samples:
            k = count[case.op] = count.get(case.op, -1) + 1
            name = f"{case.op}-{k}-" + ",".join(map(repr, sample))
            params.append(pytest.param(case, sample, zlib.crc32(name.encode()), id=name))
    return params


PARAMS = _params()
DIFF_PARAMS = [
    p
    for p in PARAMS
    if OPS[p.values[0].op].differentiable
    and p.values[0].grad
    and not p.values[0].not_implemented
    and any(_requires_grad(s) for s in p.values[1])
]
GRADGRAD_PARAMS = [p for p in DIFF_PARAMS if p.values[0].gradgrad]


# ---- the checks ----------------------------------------------------------------------------
def test_every_row_has_a_case():
    covered = {case.op for case in CASES}
    assert covered == set(OPS), (
        f"rows without a case: {sorted(set(OPS) - covered)}; "
        f"cases for unknown rows: {sorted(covered - set(OPS))}"
    )


def test_every_differentiable_row_is_gradchecked():
    checked = {p.values[0].op for p in DIFF_PARAMS}
    not_implemented = {c.op for c in CASES if c.not_implemented}
    assert checked == {name for name, row in OPS.items() if row.differentiable} - not_implemented
    # (or a node of PyTorch's own name whose backward raises, as unique's)
    named = {c.op for c in CASES if c.not_implemented and " " in c.not_implemented}
    assert all(OPS[op].node_name == "NotImplemented" for op in not_implemented - named)


@pytest.mark.parametrize("case, sample, seed", PARAMS)
def test_forward(case, sample, seed):
    values = _sample_values(case, sample, seed)
    inputs = _ng_inputs(sample, values)
    outputs = _as_tuple(case.fn(*inputs))
    expected = _as_tuple(case.ref(*[v.copy() for v in values]))
    assert len(outputs) == len(expected)
    for out, exp in zip(outputs, expected):
        assert isinstance(out, ng.Tensor)
        exp = np.asarray(exp)
        assert tuple(out.shape) == exp.shape
        np.testing.assert_allclose(_to_numpy(out), exp, rtol=1e-6, atol=1e-7)
    row = OPS[case.op]
    if not row.differentiable:
        assert not any(o.requires_grad for o in outputs)
        assert all(o.grad_fn is None for o in outputs)
    elif any(_requires_grad(s) for s in sample):  # (integer-only cases record no node)
        names = _node_names(outputs)
        assert row.node_name in names, f"{case.op}: the case never reaches {row.node_name}"


@pytest.mark.parametrize("case, sample, seed", DIFF_PARAMS)
def test_gradcheck(case, sample, seed):
    inputs = _ng_inputs(sample, _sample_values(case, sample, seed))
    assert ng.autograd.gradcheck(case.fn, inputs, **case.gradcheck_kw)


@pytest.mark.parametrize("case, sample, seed", GRADGRAD_PARAMS)
@pytest.mark.filterwarnings("ignore:Input #.* is not a double precision")  # float32 outputs
def test_gradgradcheck(case, sample, seed):
    inputs = _ng_inputs(sample, _sample_values(case, sample, seed))
    ng.manual_seed(seed)
    assert ng.autograd.gradgradcheck(case.fn, inputs, **case.gradcheck_kw)


def _reachable_nodes(outputs):
    seen, stack = {}, [o.grad_fn for o in outputs if isinstance(o, ng.Tensor) and o.grad_fn]
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen[id(node)] = node
            stack.extend(fn for fn, _ in node.next_functions if fn is not None)
    return list(seen.values())


@pytest.mark.parametrize("case, sample, seed", DIFF_PARAMS)
def test_generated_apply_matches_the_table_walk(case, sample, seed):
    """See NOTE [Generated apply]: each node's generated ``apply`` returns what ``TableNode.apply``
    (the generic walk of the row's formulas) returns, on every node the case records."""
    outputs = _as_tuple(case.fn(*_ng_inputs(sample, _sample_values(case, sample, seed))))
    nodes = [n for n in _reachable_nodes(outputs) if "_apply_source" in vars(type(n))]
    rng = np.random.default_rng(seed)
    for node in nodes:
        grads = [ng.tensor(rng.standard_normal(m.shape)).to(m.dtype) for m in node._input_metadata_]
        with ng.no_grad():
            generated = node.apply(list(grads))
            walked = TableNode.apply(node, list(grads))
        assert len(generated) == len(walked), node.name()
        for g, w in zip(generated, walked):
            assert (g is None) == (w is None), node.name()
            if g is not None:
                # bits: the generated apply and the walk run the same formulas with the same kernels
                # on the same values (NOTE [Generated apply])
                np.testing.assert_array_equal(_to_numpy(g), _to_numpy(w), err_msg=node.name())


@pytest.mark.parametrize("case, sample, seed", PARAMS)
def test_torch_parity(case, sample, seed):
    torch = pytest.importorskip("torch")
    values = _sample_values(case, sample, seed)
    ng_in = _ng_inputs(sample, values)
    th_in = [
        torch.tensor(v, requires_grad=_requires_grad(s) and v.dtype.kind == "f")
        for s, v in zip(sample, values)
    ]
    ng_out = _as_tuple(case.fn(*ng_in))
    th_out = _as_tuple(case.fn(*th_in))
    assert len(ng_out) == len(th_out)
    for a, b in zip(ng_out, th_out):
        assert tuple(a.shape) == tuple(b.shape)
        assert _dtype_name(a.dtype) == _dtype_name(b.dtype)
        np.testing.assert_allclose(_to_numpy(a), _to_numpy(b), rtol=1e-6, atol=1e-6)
        assert a.requires_grad == b.requires_grad
        if b.grad_fn is not None:
            expected = b.grad_fn.name().removeprefix("torch::autograd::")
            assert a.grad_fn is not None and a.grad_fn.name() == expected

    # gradients for a random upstream gradient
    diff = [k for k, b in enumerate(th_out) if b.requires_grad]
    if not diff:
        return
    wrt = [k for k, t in enumerate(th_in) if t.requires_grad]
    rng = np.random.default_rng(seed + 1)
    upstream = [rng.standard_normal(tuple(th_out[k].shape)) for k in diff]

    def grads(lib, outs, ins):
        args = [outs[k] for k in diff], [ins[i] for i in wrt], [lib.tensor(g) for g in upstream]
        return lib.autograd.grad(*args, allow_unused=True)

    if case.not_implemented:  # PyTorch's NotImplemented node: backward raises, in both
        message = case.not_implemented  # (a whole message: a node whose backward raises)
        if " " not in message:
            message = f"derivative for aten::{message} is not implemented"
        for lib, outs, ins in ((torch, th_out, th_in), (ng, ng_out, ng_in)):
            with pytest.raises(RuntimeError, match=message):
                grads(lib, outs, ins)
        return
    ng_grads = grads(ng, ng_out, ng_in)
    th_grads = grads(torch, th_out, th_in)
    for i, a, b in zip(wrt, ng_grads, th_grads):
        assert (a is None) == (b is None), f"input {i}: nbgrad {a}, torch {b}"
        if a is not None:
            np.testing.assert_allclose(_to_numpy(a), _to_numpy(b), rtol=1e-6, atol=1e-6)

    # a second pass through the freed graph raises exactly where PyTorch's does: where a node
    # saved a tensor (an input, its result, index tensors), and nowhere else
    def second_pass(lib, outs, ins):
        try:
            grads(lib, outs, ins)
        except RuntimeError as e:
            return "second time" in str(e)
        return False

    assert second_pass(ng, ng_out, ng_in) == second_pass(torch, th_out, th_in)


# ---- every row on every device ---------------------------------------------------------------
# The host-memory test device runs each node on its own ready queue and worker thread (see
# tests/autograd/test_devices.py); CUDA runs where a GPU and CuPy are present.
TEST_DEVICE = "optestdev"


def _devices():
    from nbgrad import backend

    backend.register_device_type(TEST_DEVICE, count=1, strict=True)
    devices = [TEST_DEVICE]
    if ng.cuda.is_available():
        devices.append("cuda")
    return devices


DEVICES = _devices()


def test_op_table_on_cuda():
    if not ng.cuda.is_available():
        pytest.skip("no CUDA GPU with CuPy here: the op table ran on the CPU and the test device")
    assert "cuda" in DEVICES  # test_device_matches_cpu then runs every row on the GPU too


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case, sample, seed", PARAMS)
def test_device_matches_cpu(case, sample, seed, device):
    values = _sample_values(case, sample, seed)

    def run(dev):
        inputs = [
            ng.tensor(v, device=dev, requires_grad=_requires_grad(s) and v.dtype.kind == "f")
            for s, v in zip(sample, values)
        ]
        outputs = _as_tuple(case.fn(*inputs))
        diff = [o for o in outputs if isinstance(o, ng.Tensor) and o.requires_grad]
        wrt = [t for t in inputs if t.requires_grad]
        grads = []
        if diff and wrt and not case.not_implemented:
            rng = np.random.default_rng(seed)
            upstream = [
                ng.tensor(rng.standard_normal(o.shape), dtype=o.dtype, device=dev) for o in diff
            ]
            grads = ng.autograd.grad(diff, wrt, upstream, allow_unused=True)
        return (
            [o.detach().cpu().numpy() for o in outputs],
            [None if g is None else g.cpu().numpy() for g in grads],
            [str(o.device) for o in outputs],
        )

    cpu_out, cpu_grads, _ = run("cpu")
    dev_out, dev_grads, devices = run(device)
    assert all(d.startswith(device) for d in devices)
    for a, b in zip(dev_out, cpu_out):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    for a, b in zip(dev_grads, cpu_grads):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# ---- kinks and ties ----------------------------------------------------------------------------
# Every piecewise op at inputs exactly on its thresholds and at ties, where finite differences
# mean nothing: values, first- and second-order gradients against PyTorch's (which picks a
# one-sided derivative, splits a tie evenly, or gives inf / nan). A new piecewise op adds its
# kinks here, one line each. The upstream gradient requires grad, so that every first-order
# gradient has a graph in both libraries and the second order is compared on the same terms.
@dataclass
class Kink:
    name: str
    fn: Callable
    inputs: list  # the values of the float64 inputs, each requiring grad
    order2: bool = True  # False where only the first order is compared


ON_ZERO = [-1.5, -0.0, 0.0, 2.0]
SLOPES = [[-1.0, -0.5, 0.0, 0.5, 1.0, 1.5]]
KINK_TIES = [[1.0, 3.0, 3.0], [0.5, -1.0, 0.5]]
OTHER = [[1.0, 2.0, 3.0], [0.5, -1.0, 1.0]]  # ties with KINK_TIES in three places
ALL_NAN = [np.nan, np.nan, np.nan]
SOME_NAN = [[1.0, np.nan, 2.0], [np.nan, 0.5, 0.5]]
AT_BETA = [[0.5, -0.5, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]  # differences on the threshold 0.5


def _ranked(t, k):
    """``t`` times 1, 2, ..., k along its last dim: each sorted place gets its own gradient."""
    return t * lib(t).arange(1, k + 1, dtype=t.dtype)


# fmt: off
KINKS = [
    Kink("relu", lambda x: x.relu(), [ON_ZERO]),
    Kink("relu_", lambda x: nnf(x).relu(x * 1, inplace=True), [ON_ZERO]),
    Kink("threshold", lambda x: nnf(x).threshold(x, 0.5, -3.0), SLOPES),
    Kink("threshold_", lambda x: nnf(x).threshold(x * 1, 0.5, -3.0, True), SLOPES),
    Kink("relu6", lambda x: nnf(x).relu6(x * 4), SLOPES),
    Kink("leaky_relu", lambda x: nnf(x).leaky_relu(x, 0.2), [ON_ZERO]),
    Kink("leaky_relu_", lambda x: nnf(x).leaky_relu(x * 1, 0.2, inplace=True), [ON_ZERO]),
    Kink("hardtanh", lambda x: nnf(x).hardtanh(x), SLOPES),
    Kink("hardtanh(-0.5, 0.5)", lambda x: nnf(x).hardtanh(x, -0.5, 0.5), SLOPES),
    Kink("elu", lambda x: nnf(x).elu(x), [ON_ZERO]),
    Kink("elu(0.5)", lambda x: nnf(x).elu(x, 0.5), [ON_ZERO]),
    Kink("elu_(0.5)", lambda x: nnf(x).elu(x * 1, 0.5, inplace=True), [ON_ZERO]),
    Kink("softplus at its threshold", lambda x: nnf(x).softplus(x, 2.0, 1.0), SLOPES),
    Kink("clamp", lambda x: x.clamp(-0.5, 1.0), SLOPES),
    Kink("clamp(min=)", lambda x: x.clamp(min=0.5), SLOPES),
    Kink("clamp(max=)", lambda x: x.clamp(max=0.5), SLOPES),
    Kink("clamp_", lambda x: (x * 1).clamp_(-0.5, 1.0), SLOPES),
    Kink("clamp min == max", lambda x: x.clamp(0.5, 0.5), SLOPES),
    Kink("clamp_min", lambda x: x.clamp_min(0.5), SLOPES),
    Kink("clamp_max", lambda x: x.clamp_max(-0.5), SLOPES),
    Kink("abs", lambda x: x.abs(), [ON_ZERO]),
    Kink("sign", lambda x: x.sign(), [ON_ZERO]),
    Kink("max", lambda x: x.max(), [KINK_TIES]),
    Kink("min", lambda x: x.min(), [[[1.0, -3.0, -3.0], [0.5, -1.0, 0.5]]]),
    # a NaN result came from the NaNs, which share its gradient
    Kink("max of NaNs", lambda x: x.max(), [ALL_NAN]),
    Kink("max with NaNs", lambda x: x.max(), [SOME_NAN]),
    Kink("min of NaNs", lambda x: x.min(), [ALL_NAN]),
    Kink("median of NaNs", lambda x: x.median(), [ALL_NAN]),
    Kink("median with NaNs", lambda x: x.median(), [SOME_NAN]),
    Kink("nanmedian of NaNs", lambda x: x.nanmedian(), [ALL_NAN]),
    Kink("nanmedian with NaNs", lambda x: x.nanmedian(), [SOME_NAN]),
    Kink("max(dim)", lambda x: x.max(1)[0], [KINK_TIES]),
    Kink("min(dim)", lambda x: x.min(0)[0], [KINK_TIES]),
    Kink("amax", lambda x: x.amax(1), [KINK_TIES]),
    Kink("amax()", lambda x: x.amax(), [[[3.0, 1.0, 3.0], [0.5, 3.0, 0.5]]]),
    Kink("amin", lambda x: x.amin(0), [[[1.0, 3.0, 3.0], [1.0, 3.0, 0.5]]]),
    Kink("atan2 at (0, 0)", lambda x, y: x.atan2(y), [ON_ZERO, [0.0, 0.0, -0.0, 1.0]]),
    Kink("maximum", lambda x, y: lib(x).maximum(x, y), [KINK_TIES, OTHER]),
    Kink("minimum", lambda x, y: lib(x).minimum(x, y), [KINK_TIES, OTHER]),
    Kink("where x == y", lambda x, y: lib(x).where(x > y, x, y), [KINK_TIES, OTHER]),
    Kink("x ** 2 at 0", lambda x: x**2, [ON_ZERO]),
    Kink("x ** 3 at 0", lambda x: x**3, [ON_ZERO]),
    Kink("x ** 0 at 0", lambda x: x**0, [ON_ZERO]),
    Kink("x ** 1 at 0", lambda x: x**1, [ON_ZERO]),
    Kink("x ** 0.5 at 0", lambda x: x**0.5, [[0.0, 0.25, 4.0]]),
    Kink("x ** 1.5 at 0", lambda x: x**1.5, [[0.0, 0.25, 4.0]]),
    Kink("x ** e at 0 (e a constant tensor)",
         lambda x: x ** lib(x).tensor([0.0, 0.0, 1.0, 2.0], dtype=x.dtype), [[0.0, 2.0, 0.0, 0.0]]),
    # the gradient for the exponent where the base is 0: -inf for e < 0, 0 for e >= 0
    Kink("0 ** e (a tensor base)", lambda e: lib(e).zeros(5, dtype=e.dtype) ** e,
         [[-1.0, 0.0, 1.0, 0.5, 2.0]]),
    Kink("b ** e with zeros in b", lambda b, e: b ** e,
         [[0.0, 3.0, 0.0, 0.0], [-1.0, 0.5, 0.0, 2.0]]),
    Kink("0 ** e (a number base)", lambda e: 0.0 ** e, [[-1.0, 0.0, 1.0, 0.5, 2.0]]),
    Kink("sqrt at 0", lambda x: x.sqrt(), [[0.0, 0.25, 4.0]]),
    Kink("log at 0", lambda x: x.log(), [[0.0, 0.25, 4.0]]),
    Kink("norm at 0", lambda x: x.norm(), [[[0.0, 0.0], [0.0, 0.0]]]),
    Kink("norm(dim) at 0", lambda x: x.norm(dim=1), [[[0.0, 0.0], [3.0, -4.0]]]),
    Kink("norm(1) at 0", lambda x: x.norm(1), [[[0.0, -1.0], [2.0, 0.0]]]),
    Kink("norm(inf) ties", lambda x: x.norm(float("inf")), [[[3.0, -3.0], [1.0, 0.0]]]),
    Kink("norm(3) at 0", lambda x: x.norm(3, dim=1), [[[0.0, 0.0], [1.0, 0.0]]]),
    Kink("norm(1.5) at 0", lambda x: x.norm(1.5, dim=1), [[[0.0, 0.0], [1.0, 0.0]]]),
    Kink("std of a constant", lambda x: x.std(), [[2.0, 2.0, 2.0]]),
    Kink("std(dim) of a constant row", lambda x: x.std(1), [[[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]]]),
    Kink("prod with one zero", lambda x: x.prod(), [[[2.0, 0.0], [3.0, -1.0]]]),
    Kink("prod with two zeros", lambda x: x.prod(1), [[[2.0, 0.0, 0.0], [3.0, -1.0, 0.5]]]),
    Kink("sort ties", lambda x: _ranked(x.sort()[0], 3), [KINK_TIES]),
    Kink("sort descending ties", lambda x: _ranked(x.sort(descending=True)[0], 3), [KINK_TIES]),
    Kink("topk ties", lambda x: _ranked(x.topk(2)[0], 2), [KINK_TIES]),
    Kink("smooth_l1_loss at beta",
         lambda x, y: nnf(x).smooth_l1_loss(x, y, reduction="none", beta=0.5), AT_BETA),
    Kink("huber_loss at delta",
         lambda x, y: nnf(x).huber_loss(x, y, reduction="none", delta=0.5), AT_BETA),
    Kink("max_pool2d ties", lambda x: nnf(x).max_pool2d(x, 2), [[[[[1.0, 1.0], [1.0, 0.0]]]]]),
    Kink("adaptive_max_pool2d ties", lambda x: nnf(x).adaptive_max_pool2d(x, (1, 2)),
         [[[[[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]]]]]),
]
# fmt: on


def _kink_run(lib_, kink, make):
    """Values, first-order gradients, and the second order (the gradient of the first-order
    gradients against a fixed vector, w.r.t. the inputs and the upstream gradient)."""
    inputs = [make(v) for v in kink.inputs]
    out = kink.fn(*inputs)
    upstream = make(np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape)))
    grads = lib_.autograd.grad(out, inputs, upstream, create_graph=True, allow_unused=True)
    results = [out.detach()] + [g.detach() if g is not None else None for g in grads]
    if kink.order2:
        firsts = [g for g in grads if g is not None and g.requires_grad]
        if firsts:
            # a different vector for each (the same one would cancel where two first-order
            # gradients are opposite, as a loss's for its input and its target)
            vs = [
                make((k + 1) * np.linspace(-1.0, 1.0, g.numel()).reshape(tuple(g.shape)))
                for k, g in enumerate(firsts)
            ]
            second = lib_.autograd.grad(
                firsts, inputs + [upstream], vs, allow_unused=True, materialize_grads=True
            )
            results += [s.detach() for s in second]
    return results


@pytest.mark.parametrize("kink", KINKS, ids=[k.name for k in KINKS])
def test_kinks_and_ties_match_torch(kink):
    torch = pytest.importorskip("torch")
    ours = _kink_run(ng, kink, lambda v: ng.tensor(np.asarray(v, np.float64), requires_grad=True))
    theirs = _kink_run(
        torch, kink, lambda v: torch.tensor(np.asarray(v, np.float64), requires_grad=True)
    )
    assert len(ours) == len(theirs)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert (a is None) == (b is None), f"result {k}"
        if a is not None:
            b = b.detach().cpu().numpy(force=True)  # (force: torch's ZeroTensor)
            np.testing.assert_allclose(
                _to_numpy(a), b, rtol=1e-12, atol=1e-12, err_msg=f"{kink.name}: result {k}"
            )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_atan2_at_the_origin_without_create_graph(dtype):
    """The plain pass (formulas on arrays: NOTE [Backward on arrays]) gives atan2's gradient at
    (0, 0) as PyTorch does: 0, not nan."""
    torch = pytest.importorskip("torch")
    values = [[0.0, -0.0, 1.0, 0.0], [0.0, 0.0, 0.0, -2.0]]

    def run(lib_):
        x, y = (lib_.tensor(v, dtype=getattr(lib_, dtype), requires_grad=True) for v in values)
        lib_.atan2(x, y).backward(lib_.ones(4, dtype=getattr(lib_, dtype)))
        return x.grad, y.grad

    for a, b in zip(run(ng), run(torch)):
        assert a.dtype.itemsize == b.dtype.itemsize
        np.testing.assert_array_equal(_to_numpy(a), b.numpy())


def test_every_piecewise_row_has_a_kink():
    """The rows whose derivative has a kink or a tie are all in KINKS (by node name)."""
    piecewise = {
        "relu",
        "threshold",
        "threshold_",
        "leaky_relu",
        "leaky_relu_",
        "hardtanh",
        "elu",
        "elu_",
        "softplus",
        "clamp",
        "clamp_min",
        "clamp_max",
        "abs",
        "sign",
        "max",
        "min",
        "max_dim",
        "min_dim",
        "amax",
        "amin",
        "maximum",
        "minimum",
        "where",
        "pow",
        "pow_tensor",
        "sqrt",
        "log",
        "norm",
        "std",
        "prod",
        "prod_dim",
        "sort",
        "topk",
        "smooth_l1_loss",
        "huber_loss",
        "max_pool2d",
        "adaptive_max_pool2d",
    }
    reached = set()
    for kink in KINKS:
        out = kink.fn(
            *[ng.tensor(np.asarray(v, np.float64), requires_grad=True) for v in kink.inputs]
        )
        reached |= _node_names([out])
    missing = {op for op in piecewise if OPS[op].node_name not in reached}
    assert not missing, f"piecewise rows without a kink: {sorted(missing)}"
