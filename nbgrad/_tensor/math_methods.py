"""Tensor methods that compute: operators, pointwise math, comparisons, reductions and matrix
products (each one row of the op table). :class:`nbgrad.Tensor` inherits them.
"""

from __future__ import annotations

import math

import numpy as np

from nbgrad import backend, return_types
from nbgrad._tensor.conversion import (
    _arg,
    _opt_scalar,
    _scalar,
    _sub_arg,
    _tensor_arg,
    _wrap,
    as_tensor,
    tensor,
)
from nbgrad._tensor.creation import empty, full, ones, where, zeros
from nbgrad._tensor.dispatch import (
    _ALPHA1,
    OPS,
    _binary,
    _dim,
    _dims,
    _dispatch,
    _expect_tensor,
    _op,
    _shape_arg,
    _unary,
)
from nbgrad._tensor.views import _NoGrad
from nbgrad.backend import CPU

Tensor = None  # the Tensor class: see NOTE [The Tensor class, bound late]


class MathMethods:
    """Mixed into :class:`nbgrad.Tensor`."""

    __slots__ = ()

    # -- operators --------------------------------------------------------------------------
    def __add__(self, other):
        return _binary(OPS["add"], self, other, _ALPHA1)

    def __radd__(self, other):
        return _binary(OPS["add"], self, other, _ALPHA1)

    def __sub__(self, other):
        return _binary(OPS["sub"], self, _sub_arg(self, other), _ALPHA1)

    def __rsub__(self, other):
        _sub_arg(self, other)
        return _dispatch(_op("rsub"), (self,), {"other": _scalar(other), "alpha": 1})

    def __mul__(self, other):
        return _binary(OPS["mul"], self, other)

    def __rmul__(self, other):
        return _binary(OPS["mul"], self, other)

    def __truediv__(self, other):
        return _binary(OPS["div"], self, other)

    def __rtruediv__(self, other):
        return self.reciprocal() * other

    def __pow__(self, exponent):
        if isinstance(exponent, Tensor):
            return _dispatch(_op("pow_tensor"), (self, exponent))
        if type(exponent) is int or type(exponent) is float:  # a float tensor keeps its dtype
            return _unary(OPS["pow"], self, {"exponent": exponent})
        return _dispatch(_op("pow"), (self,), {"exponent": _scalar(exponent)})

    def __floordiv__(self, other):
        return self.floor_divide(other)

    def __rfloordiv__(self, other):
        return _dispatch(_op("floor_divide"), (_tensor_arg(other, self), self))

    def __mod__(self, other):
        return self.remainder(other)

    def __rmod__(self, other):
        return _dispatch(_op("rremainder"), (self,), {"self": _scalar(other)})

    def __rpow__(self, other):
        return _dispatch(_op("rpow"), (self,), {"self": _scalar(other)})

    def __matmul__(self, other):
        return self.matmul(other)

    def __rmatmul__(self, other):
        return as_tensor(other, device=self._device).matmul(self)

    def __neg__(self):
        return self.neg()

    def __pos__(self):
        return self

    def __abs__(self):
        return self.abs()

    def __eq__(self, other):
        return _dispatch(_op("eq"), (self, _arg(other)))

    def __ne__(self, other):
        return _dispatch(_op("ne"), (self, _arg(other)))

    def __lt__(self, other):
        return _dispatch(_op("lt"), (self, _arg(other)))

    def __le__(self, other):
        return _dispatch(_op("le"), (self, _arg(other)))

    def __gt__(self, other):
        return _dispatch(_op("gt"), (self, _arg(other)))

    def __ge__(self, other):
        return _dispatch(_op("ge"), (self, _arg(other)))

    def __and__(self, other):
        return self.logical_and(other)

    def __or__(self, other):
        return self.logical_or(other)

    def __xor__(self, other):
        return self.logical_xor(other)

    def __invert__(self):
        if self._data.dtype.kind != "b":
            raise TypeError("~ is only supported for bool tensors in nbgrad")
        return self.logical_not()

    __hash__ = object.__hash__

    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    def __ifloordiv__(self, other):
        return self.floor_divide_(other)

    def __imod__(self, other):
        return self.remainder_(other)

    # -- elementwise ops --------------------------------------------------------------------
    def add(self, other, *, alpha=1):
        return _dispatch(OPS["add"], (self, _arg(other)), {"alpha": alpha})

    def sub(self, other, *, alpha=1):
        return _dispatch(OPS["sub"], (self, _sub_arg(self, other)), {"alpha": alpha})

    def mul(self, other):
        return _dispatch(OPS["mul"], (self, _arg(other)))

    def div(self, other, *, rounding_mode=None):
        if rounding_mode is not None:  # (floor or trunc: DivBackward2, see wider_methods.py)
            return self.divide(other, rounding_mode=rounding_mode)
        return _dispatch(OPS["div"], (self, _arg(other)))

    def floor_divide(self, other):
        return _dispatch(_op("floor_divide"), (self, _arg(other)))

    def remainder(self, other):
        other = _arg(other)
        if isinstance(other, Tensor):
            return _dispatch(_op("remainder"), (self, other))
        return _dispatch(_op("remainder_scalar"), (self,), {"other": other})

    def pow(self, exponent):
        return self.__pow__(exponent)

    def neg(self):
        if self._data.dtype.kind == "b":
            raise RuntimeError(
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                "to invert a mask, use the `~` or `logical_not()` operator instead."
            )
        return _unary(OPS["neg"], self)

    def abs(self):
        return _unary(OPS["abs"], self)

    def sign(self):
        return _dispatch(_op("sign"), (self,))

    def bernoulli(self, p=None):
        """0s and 1s, each 1 with the probability in ``self`` (or with ``p``, a number)."""
        if p is None:
            return _dispatch(_op("bernoulli"), (self,))
        return _dispatch(_op("bernoulli_p"), (self,), {"p": _scalar(p)})

    def exp(self):
        return _unary(OPS["exp"], self)

    def log(self):
        return _unary(OPS["log"], self)

    def log1p(self):
        return _unary(OPS["log1p"], self)

    def sqrt(self):
        return _unary(OPS["sqrt"], self)

    def rsqrt(self):
        return _unary(OPS["rsqrt"], self)

    def reciprocal(self):
        return _unary(OPS["reciprocal"], self)

    def sin(self):
        return _unary(OPS["sin"], self)

    def tan(self):
        return _unary(OPS["tan"], self)

    def asin(self):
        return _unary(OPS["asin"], self)

    def acos(self):
        return _unary(OPS["acos"], self)

    def atan(self):
        return _unary(OPS["atan"], self)

    def sinh(self):
        return _unary(OPS["sinh"], self)

    def cosh(self):
        return _unary(OPS["cosh"], self)

    def expm1(self):
        return _unary(OPS["expm1"], self)

    def exp2(self):
        return _unary(OPS["exp2"], self)

    def log2(self):
        return _unary(OPS["log2"], self)

    def log10(self):
        return _unary(OPS["log10"], self)

    def floor(self):
        return _dispatch(_op("floor"), (self,))

    def ceil(self):
        return _dispatch(_op("ceil"), (self,))

    def round(self):
        return _dispatch(_op("round"), (self,))

    def trunc(self):
        return _dispatch(_op("trunc"), (self,))

    def frac(self):
        return _dispatch(_op("frac"), (self,))

    def square(self):
        return self**2  # as PyTorch: PowBackward0

    def flip(self, *dims):
        dims = _shape_arg(dims)
        return _dispatch(_op("flip"), (self,), {"dims": tuple(_dim(d, self.ndim) for d in dims)})

    def roll(self, shifts, dims=None):
        shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
        if dims is None:  # as PyTorch: the flattened tensor rolls, the shape stays
            if len(shifts) != 1:
                raise RuntimeError(
                    f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0"
                )
            return _dispatch(_op("roll"), (self,), {"shifts": shifts[0], "dims": None})
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        if len(shifts) != len(dims):
            raise RuntimeError(
                f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}"
            )
        attrs = {"shifts": shifts, "dims": tuple(_dim(d, self.ndim) for d in dims)}
        return _dispatch(_op("roll"), (self,), attrs)

    def cumsum(self, dim, dtype=None):
        return _dispatch(_op("cumsum"), (self,), {"dim": _dim(dim, self.ndim), "dtype": dtype})

    def tril(self, diagonal=0):
        if self.ndim < 2:
            raise RuntimeError("tril: input tensor must have at least 2 dimensions")
        return _dispatch(_op("tril"), (self,), {"diagonal": diagonal})

    def triu(self, diagonal=0):
        if self.ndim < 2:
            raise RuntimeError("triu: input tensor must have at least 2 dimensions")
        return _dispatch(_op("triu"), (self,), {"diagonal": diagonal})

    def cos(self):
        return _unary(OPS["cos"], self)

    def tanh(self):
        return _unary(OPS["tanh"], self)

    def sigmoid(self):
        return _unary(OPS["sigmoid"], self)

    def relu(self):
        return _unary(OPS["relu"], self)

    def erf(self):
        return _unary(OPS["erf"], self)

    def gelu(self, approximate="none"):
        if approximate not in ("none", "tanh"):
            raise RuntimeError(
                f"approximate argument must be either none or tanh, got {approximate!r}"
            )
        return _dispatch(_op("gelu"), (self,), {"approximate": approximate})

    def clamp(self, min=None, max=None):
        if min is None and max is None:
            raise RuntimeError("clamp(): At least one of 'min' or 'max' must not be None")
        return _dispatch(_op("clamp"), (self,), {"min": _opt_scalar(min), "max": _opt_scalar(max)})

    clip = clamp

    def clamp_min(self, min):
        return _dispatch(_op("clamp_min"), (self,), {"min": _scalar(min)})

    def clamp_max(self, max):
        return _dispatch(_op("clamp_max"), (self,), {"max": _scalar(max)})

    def isnan(self):
        return _dispatch(_op("isnan"), (self,))

    def isinf(self):
        return _dispatch(_op("isinf"), (self,))

    def isfinite(self):
        return _dispatch(_op("isfinite"), (self,))

    def sort(self, dim=-1, descending=False, stable=False):
        """``(values, indices)`` along ``dim`` (always stable here)."""
        attrs = {"dim": _dim(dim, max(self.ndim, 1)) if self.ndim else 0, "descending": descending}
        return return_types.sort(*_dispatch(_op("sort"), (self,), attrs))

    def argsort(self, dim=-1, descending=False, stable=False):
        return self.sort(dim, descending, stable).indices

    def topk(self, k, dim=-1, largest=True, sorted=True):
        """The ``k`` largest (or smallest) values along ``dim`` and their indices, in order."""
        attrs = {"k": int(k), "dim": _dim(dim, max(self.ndim, 1)) if self.ndim else 0}
        attrs["largest"] = largest
        return return_types.topk(*_dispatch(_op("topk"), (self,), attrs))

    # -- binary math ------------------------------------------------------------------------
    def logaddexp(self, other):
        """``log(exp(self) + exp(other))``, computed without overflow."""
        return _dispatch(_op("logaddexp"), (self, _tensor_arg(other, self)))

    def lerp(self, end, weight):
        """``self + weight * (end - self)``; ``weight`` a number or a tensor."""
        end = _expect_tensor(end, "lerp", "end", 1)
        if end._data.dtype != self._data.dtype:
            raise RuntimeError(
                f"expected dtype {self.dtype._legacy[:-6].lower()} for `end` but got dtype "
                f"{end.dtype._legacy[:-6].lower()}"
            )
        if isinstance(weight, Tensor):
            return _dispatch(_op("lerp_tensor"), (self, end, weight))
        return _dispatch(_op("lerp"), (self, end), {"weight": _scalar(weight)})

    def atan2(self, other):
        """The angle of the point ``(other, self)``, elementwise."""
        return _dispatch(_op("atan2"), (self, _tensor_arg(other, self)))

    arctan2 = atan2

    def hypot(self, other):
        """``sqrt(self ** 2 + other ** 2)``, elementwise."""
        return _dispatch(_op("hypot"), (self, _expect_tensor(other, "hypot", "other", 1)))

    def fmod(self, other):
        """The remainder of division rounded toward zero (its sign is the dividend's)."""
        other = _arg(other)
        if isinstance(other, Tensor):
            return _dispatch(_op("fmod"), (self, other))
        return _dispatch(_op("fmod_scalar"), (self,), {"other": other})

    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        """NaN, inf and -inf replaced (by 0 and the dtype's largest and lowest values)."""
        attrs = {"nan": nan, "posinf": posinf, "neginf": neginf}
        return _dispatch(_op("nan_to_num"), (self,), attrs)

    def erfinv(self):
        return _dispatch(_op("erfinv"), (self,))

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """``|self - other| <= atol + rtol * |other|``, elementwise (not differentiable)."""
        other = _expect_tensor(other, "isclose", "other", 1)
        if self._data.dtype != other._data.dtype:
            raise RuntimeError(
                f"{self.dtype._legacy[:-6]} did not match {other.dtype._legacy[:-6]}"
            )
        attrs = {"rtol": rtol, "atol": atol, "equal_nan": equal_nan}
        return _dispatch(_op("isclose"), (self, other), attrs)

    def cumprod(self, dim, dtype=None):
        """The running product along ``dim`` (``CumprodBackward0``)."""
        return _dispatch(_op("cumprod"), (self,), {"dim": _dim(dim, self.ndim), "dtype": dtype})

    def median(self, dim=None, keepdim=False):
        """The lower median: of all elements (a 0-d tensor), or ``(values, indices)`` along
        ``dim``."""
        if dim is None:
            return _dispatch(_op("median"), (self,))
        attrs = {"dim": _dim(dim, self.ndim), "keepdim": keepdim}
        return return_types.median(*_dispatch(_op("median_dim"), (self,), attrs))

    def quantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        """The ``q``-th quantiles (``q`` a number or a 1-d tensor, in [0, 1]) of all elements or
        along ``dim``, interpolated between the two nearest sorted values, as PyTorch's:
        sort, gather, lerp, then ``squeeze_`` of the quantiles' dim."""
        return _quantile(self, q, dim, keepdim, interpolation)

    def count_nonzero(self, dim=None):
        dims = None if dim is None else _dims(dim, self.ndim)
        return _dispatch(_op("count_nonzero"), (self,), {"dim": dims})

    def nonzero(self, *, as_tuple=False):
        """The indices of the nonzero elements: an ``(n, ndim)`` int64 tensor, or one 1-d
        tensor per dim with ``as_tuple=True``."""
        out = _dispatch(_op("nonzero"), (self,))
        if as_tuple:
            if self.ndim == 0:
                return (out.reshape(-1),)
            return tuple(out[:, k] for k in range(self.ndim))
        return out

    def argwhere(self):
        return self.nonzero()

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
        """The distinct values (sorted), with the inverse indices and the counts if asked."""
        if dim is None:
            values, inverse, counts = _dispatch(_op("unique"), (self,), {"sorted": sorted})
        else:
            attrs = {"sorted": sorted, "dim": _dim(dim, self.ndim)}
            values, inverse, counts = _dispatch(_op("unique_dim"), (self,), attrs)
        out = (
            (values,)
            + ((inverse,) if return_inverse else ())
            + ((counts,) if return_counts else ())
        )
        return out[0] if len(out) == 1 else out

    def multinomial(self, num_samples, replacement=False, *, generator=None):
        """``num_samples`` category indices drawn per row with the weights in ``self``, from
        ``generator`` (else nbgrad's)."""
        if self.ndim not in (1, 2):
            raise RuntimeError("prob_dist must be 1 or 2 dim")
        if not self.is_floating_point():
            raise RuntimeError("multinomial only supports floating-point dtypes for input")
        if num_samples <= 0:
            raise RuntimeError("cannot sample n_sample <= 0 samples")
        if not replacement and num_samples > self.shape[-1]:
            raise RuntimeError(
                "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
            )
        attrs = {
            "num_samples": int(num_samples),
            "replacement": replacement,
            "generator": generator,
        }
        return _dispatch(_op("multinomial"), (self,), attrs)

    # -- new tensors like this one ----------------------------------------------------------
    def _like(self, dtype, device):
        return {
            "dtype": self.dtype if dtype is None else dtype,
            "device": self.device if device is None else device,
        }

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        return zeros(*size, **self._like(dtype, device), requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        return ones(*size, **self._like(dtype, device), requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        return empty(*size, **self._like(dtype, device), requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        return full(size, fill_value, **self._like(dtype, device), requires_grad=requires_grad)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        return tensor(data, **self._like(dtype, device), requires_grad=requires_grad)

    def type_as(self, other):
        return self.to(dtype=other.dtype, device=other.device)

    def maximum(self, other):
        return _dispatch(_op("maximum"), (self, _tensor_arg(other, self)))

    def minimum(self, other):
        return _dispatch(_op("minimum"), (self, _tensor_arg(other, self)))

    def masked_fill(self, mask, value):
        mask = _tensor_arg(mask, self)
        if mask._data.dtype.kind != "b":
            raise RuntimeError(
                f"masked_fill only supports boolean masks, but got mask with dtype {mask.dtype}"
            )
        if isinstance(value, Tensor):
            if value.dim() != 0:
                raise RuntimeError(
                    "masked_fill only supports a 0-dimensional value tensor, but got tensor with "
                    f"{value.dim()} dimension(s)."
                )
            return where(mask, value.to(self.dtype), self)
        return _dispatch(_op("masked_fill"), (self, mask), {"value": _scalar(value)})

    def logical_and(self, other):
        return _dispatch(_op("logical_and"), (self, _tensor_arg(other, self)))

    def logical_or(self, other):
        return _dispatch(_op("logical_or"), (self, _tensor_arg(other, self)))

    def logical_xor(self, other):
        return _dispatch(_op("logical_xor"), (self, _tensor_arg(other, self)))

    def logical_not(self):
        return _dispatch(_op("logical_not"), (self,))

    def eq(self, other):
        return self.__eq__(other)

    def ne(self, other):
        return self.__ne__(other)

    def lt(self, other):
        return self.__lt__(other)

    def le(self, other):
        return self.__le__(other)

    def gt(self, other):
        return self.__gt__(other)

    def ge(self, other):
        return self.__ge__(other)

    def any(self, dim=None, keepdim=False):
        return _bool_reduction(self, "any", dim, keepdim)

    def all(self, dim=None, keepdim=False):
        return _bool_reduction(self, "all", dim, keepdim)

    def data_ptr(self) -> int:
        """The address of the first element (the same for tensors sharing that memory)."""
        data = self._data
        interface = getattr(data, "__cuda_array_interface__", None) or data.__array_interface__
        return int(interface["data"][0])

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return bool(np.allclose(np.asarray(self), np.asarray(other), rtol, atol, equal_nan))

    def equal(self, other):
        return self.shape == other.shape and bool(
            np.array_equal(np.asarray(self), np.asarray(other))
        )

    # -- reductions -------------------------------------------------------------------------
    def sum(self, dim=None, keepdim=False, *, dtype=None):
        if dim is None and keepdim:  # as PyTorch: every dimension kept, with size 1
            dim = tuple(range(self.ndim))
        if dim is None:
            if dtype is None:  # (a float tensor's sum keeps its dtype)
                return _unary(OPS["sum"], self, {"dtype": None})
            return _dispatch(_op("sum"), (self,), {"dtype": dtype})
        dims = _dims(dim, self.ndim)
        return _dispatch(_op("sum_dim"), (self,), {"dim": dims, "keepdim": keepdim, "dtype": dtype})

    def mean(self, dim=None, keepdim=False, *, dtype=None):
        if dtype is not None:
            return self.to(dtype).mean(dim, keepdim)
        if not self.is_floating_point():
            raise RuntimeError(
                "mean(): could not infer output dtype. Input dtype must be either a floating "
                f"point or complex dtype. Got: {self.dtype._legacy[:-6]}"
            )
        if dim is None and keepdim:  # as PyTorch: every dimension kept, with size 1
            dim = tuple(range(self.ndim))
        if dim is None:
            return _unary(OPS["mean"], self)
        return _dispatch(
            _op("mean_dim"), (self,), {"dim": _dims(dim, self.ndim), "keepdim": keepdim}
        )

    def prod(self, dim=None, keepdim=False):
        if dim is None:
            return _dispatch(_op("prod"), (self,))
        return _dispatch(
            _op("prod_dim"), (self,), {"dim": _dims(dim, self.ndim), "keepdim": keepdim}
        )

    def _minmax(self, name, dim, keepdim):
        if dim is None:
            return _dispatch(_op(name), (self,))
        if isinstance(dim, Tensor):
            return self.maximum(dim) if name == "max" else self.minimum(dim)
        values, indices = _dispatch(
            _op(name + "_dim"), (self,), {"dim": _dim(dim, self.ndim), "keepdim": keepdim}
        )
        return getattr(return_types, name)(values, indices)

    def max(self, dim=None, keepdim=False):
        return self._minmax("max", dim, keepdim)

    def min(self, dim=None, keepdim=False):
        return self._minmax("min", dim, keepdim)

    def amax(self, dim=(), keepdim=False):
        dims = _dims(dim, self.ndim) if dim not in ((), None) else None
        return _dispatch(_op("amax"), (self,), {"dim": dims, "keepdim": keepdim})

    def amin(self, dim=(), keepdim=False):
        dims = _dims(dim, self.ndim) if dim not in ((), None) else None
        return _dispatch(_op("amin"), (self,), {"dim": dims, "keepdim": keepdim})

    def argmax(self, dim=None, keepdim=False):
        d = None if dim is None else _dim(dim, self.ndim)
        return _dispatch(_op("argmax"), (self,), {"dim": d, "keepdim": keepdim})

    def argmin(self, dim=None, keepdim=False):
        d = None if dim is None else _dim(dim, self.ndim)
        return _dispatch(_op("argmin"), (self,), {"dim": d, "keepdim": keepdim})

    def _var_args(self, dim, unbiased, keepdim, correction):
        if correction is None:
            correction = 1 if unbiased in (None, True) else 0
        dims = None if dim is None else _dims(dim, self.ndim)
        return {"dim": dims, "correction": correction, "keepdim": keepdim}

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        return _dispatch(_op("var"), (self,), self._var_args(dim, unbiased, keepdim, correction))

    def _spread_mean(self, name, dim, unbiased, keepdim, correction):
        """``var_mean`` / ``std_mean`` (functions only in PyTorch): one node, two outputs."""
        return _dispatch(_op(name), (self,), self._var_args(dim, unbiased, keepdim, correction))

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        return _dispatch(_op("std"), (self,), self._var_args(dim, unbiased, keepdim, correction))

    def norm(self, p="fro", dim=None, keepdim=False):
        ord = 2 if p in ("fro", None) else p
        if not isinstance(ord, (int, float)):  # (a RuntimeError in PyTorch too)
            raise RuntimeError(f"norm(): order {p!r} not supported: p must be a number or 'fro'")
        dims = None if dim is None else _dims(dim, self.ndim)
        return _dispatch(_op("norm"), (self,), {"ord": ord, "dim": dims, "keepdim": keepdim})

    def logsumexp(self, dim, keepdim=False):
        return _dispatch(
            _op("logsumexp"), (self,), {"dim": _dims(dim, self.ndim), "keepdim": keepdim}
        )

    def softmax(self, dim):
        return _dispatch(_op("softmax"), (self,), {"dim": _dim(dim, self.ndim)})

    def log_softmax(self, dim):
        return _dispatch(_op("log_softmax"), (self,), {"dim": _dim(dim, self.ndim)})

    # -- linear algebra ---------------------------------------------------------------------
    def matmul(self, other):
        """Matrix product with PyTorch's dispatch: dot, mv, mm, bmm, or broadcast matmul."""
        other = _tensor_arg(other, self)
        a, b = self.ndim, other.ndim
        if a == 0 or b == 0:
            raise RuntimeError(
                f"both arguments to matmul need to be at least 1D, but they are {a}D and {b}D"
            )
        if a == 1 and b == 1:
            return self.dot(other)
        if a == 2 and b == 1:
            return self.mv(other)
        if a == 1 and b == 2:
            out = self.unsqueeze(0).mm(other)
            return _dispatch(_op("squeeze_dim_"), (out,), {"dim": 0})
        if a == 2 and b == 2:
            return self.mm(other)
        if a == 3 and b == 3 and self.shape[0] != other.shape[0]:
            # a batch of one that requires grad is squeezed, so that the product folds into
            # one mm and its gradient is not expanded over the other's batch (as ATen)
            if self.shape[0] == 1 and self._requires_grad:
                return self.squeeze(0).matmul(other)
            if other.shape[0] == 1 and other._requires_grad:
                return self.matmul(other.squeeze(0))
        if _should_fold(self, other):
            return _matmul_folded(self, other)
        return _matmul_batched(self, other)

    def mm(self, mat2):
        _expect_tensor(mat2, "mm", "mat2", 1)
        if self.ndim != 2 or mat2.ndim != 2:
            raise RuntimeError(f"mm(): expected 2-D tensors, got {self.ndim}-D and {mat2.ndim}-D")
        if self._data.dtype != mat2._data.dtype:
            _same_dtype("mm", self, mat2)
        return _dispatch(OPS["mm"], (self, mat2))

    def mv(self, vec):
        _expect_tensor(vec, "mv", "vec", 1)
        if self.ndim != 2 or vec.ndim != 1:
            raise RuntimeError(
                f"vector + matrix @ vector expected, got 1, {self.ndim}, {vec.ndim} (shapes "
                f"{list(self.shape)} and {list(vec.shape)})"
            )
        _same_dtype("mv", self, vec)
        return _dispatch(_op("mv"), (self, vec))

    def dot(self, tensor):
        _expect_tensor(tensor, "dot", "tensor", 1)
        _same_dtype("dot", self, tensor)
        if self.ndim != 1 or tensor.ndim != 1:
            raise RuntimeError(
                f"1D tensors expected, but got {self.ndim}D and {tensor.ndim}D tensors"
            )
        if self.shape[0] != tensor.shape[0]:
            raise RuntimeError(
                f"inconsistent tensor size, expected tensor [{self.shape[0]}] and src "
                f"[{tensor.shape[0]}] to have the same number of elements, but got "
                f"{self.shape[0]} and {tensor.shape[0]} elements respectively"
            )
        return _dispatch(_op("dot"), (self, tensor))

    def bmm(self, mat2):
        _expect_tensor(mat2, "bmm", "mat2", 1)
        if self.ndim != 3 or mat2.ndim != 3:
            raise RuntimeError(f"batch1 must be a 3D tensor, got {self.ndim}D and {mat2.ndim}D")
        _same_dtype("bmm", self, mat2)
        return _dispatch(_op("bmm"), (self, mat2))


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(self, q, dim, keepdim, interpolation, ignore_nan=False):
    """``quantile``; with ``ignore_nan``, ``nanquantile`` (the ranks among each slice's
    numbers, which sort before its NaN)."""
    if not self.is_floating_point() or self._data.dtype.itemsize < 4:
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(
            "quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, "
            f"but got {interpolation}"
        )
    scalar = not isinstance(q, Tensor)
    if scalar:
        if not 0 <= q <= 1:
            raise RuntimeError("quantile() q must be in the range [0, 1] but got " + str(q))
        q = tensor([float(q)], dtype=self.dtype, device=self._device)
    else:
        if q.ndim > 1:
            raise RuntimeError("quantile() q must be a scalar or 1D tensor")
        if q._data.dtype != self._data.dtype:
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
        if q.numel() and not bool(((q >= 0) & (q <= 1)).all()):
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
        scalar = q.ndim == 0
        q = q.reshape(-1)
    if self.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    # the values sorted along the last dim; the reduced dim kept as size 1 with ``keepdim``
    if dim is None:
        lead = (1,) * self.ndim if keepdim else ()
        ordered = self.reshape(-1).sort().values.view(lead + (self.numel(),))
    else:
        d = _dim(dim, self.ndim)
        ordered = self.sort(d).values
        ordered = ordered.unsqueeze(-1).transpose(d, -1) if keepdim else ordered.movedim(d, -1)
    n = ordered.shape[-1]
    with _NoGrad():
        if ignore_nan:  # each slice's count of numbers, less one
            last = ordered.isnan().logical_not().sum(-1, keepdim=True).to(self.dtype) - 1
            ranks = q * last.clamp_min(0)
        else:
            ranks = q * (n - 1)
        if interpolation == "lower":
            ranks = ranks.floor()
        elif interpolation == "higher":
            ranks = ranks.ceil()
        elif interpolation == "nearest":
            ranks = ranks.round()
        shape = tuple(ordered.shape[:-1]) + (q.numel(),)
        ranks = ranks.expand(shape)
        # a slice with a NaN (sorted last) gives that NaN, as PyTorch's (nanquantile: a slice
        # of NaN only)
        nan = ordered.isnan()
        nan_slice = nan.all(-1, keepdim=True) if ignore_nan else nan.any(-1, keepdim=True)
        ranks = where(nan_slice, float(n - 1), ranks)
        below = ranks.floor().long()
        above = ranks.ceil().long()
        weights = ranks - below if interpolation != "midpoint" else (above > below) * 0.5
        weights = weights.to(self.dtype)
    result = ordered.gather(-1, below).lerp(ordered.gather(-1, above), weights)
    if not scalar:  # the quantiles' dim goes first, as PyTorch's unsqueeze_ and transpose_
        result = _dispatch(_op("unsqueeze_"), (result,), {"dim": 0})
        result = _dispatch(_op("transpose_"), (result,), {"dim0": 0, "dim1": result.ndim - 1})
    return _dispatch(_op("squeeze_dim_"), (result,), {"dim": result.ndim - 1})


def _bool_reduction(t, name, dim, keepdim):
    """``any`` / ``all``: a bool tensor (uint8 for uint8 input, as PyTorch), on ``t``'s device,
    computed by its own array module."""
    data = t._data
    axis = None if dim is None else _dims(dim, data.ndim)
    out = getattr(data, name)(axis=axis, keepdims=keepdim)
    xp = np if t._device is CPU else backend.get_xp(t._device)
    out = xp.asarray(out)
    if data.dtype == np.uint8:
        out = out.astype(np.uint8)
    return _wrap(out, t._device)


def _should_fold(tensor1, tensor2):
    """Whether matmul folds the batch of the larger operand into mm/mv (ATen's should_fold)."""
    larger = tensor1.ndim >= tensor2.ndim
    t1 = tensor1._data if larger else np.swapaxes(tensor2._data, -1, -2)
    dim_t2 = tensor2.ndim if larger else tensor1.ndim
    if not (t1.ndim >= 3 and dim_t2 <= 2):
        return False
    if (tensor2 if larger else tensor1)._requires_grad:
        # folding avoids a batched gradient for the small operand (not grad-mode aware, as ATen)
        return True
    if tensor1.ndim == 2:
        return False
    if t1.size == 0:
        return True
    shape, strides = t1.shape, t1.strides
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(t1.ndim - 2))


def _matmul_folded(tensor1, tensor2):
    """N-d @ 1-d/2-d (or the transpose) as one mm/mv, as ATen's ``_matmul_impl``."""
    transpose = tensor2.ndim > tensor1.ndim
    t1 = tensor2.mT if transpose else tensor1
    t2 = (tensor1.t() if tensor1.ndim == 2 else tensor1) if transpose else tensor2
    output_shape = tuple(t1.shape[:-1])
    folded = t1.reshape(math.prod(output_shape), t1.shape[-1])
    if t2.ndim == 2:
        output = _dispatch(
            _op("unsafe_view"), (folded.mm(t2),), {"shape": output_shape + (t2.shape[1],)}
        )
        return output.mT.contiguous() if transpose else output
    return _dispatch(_op("unsafe_view"), (folded.mv(t2),), {"shape": output_shape})


def _matmul_batched(tensor1, tensor2):
    """Broadcast batched matmul through bmm, as ATen's ``_matmul_impl``."""
    d1, d2 = tensor1.ndim, tensor2.ndim
    n = tensor1.shape[-2] if d1 > 1 else 1
    m1 = tensor1.shape[-1]
    m2 = tensor2.shape[-2] if d2 > 1 else tensor2.shape[0]
    p = tensor2.shape[-1] if d2 > 1 else 1
    try:
        batch = tuple(
            np.broadcast_shapes(tensor1.shape[: max(d1 - 2, 0)], tensor2.shape[: max(d2 - 2, 0)])
        )
    except ValueError:
        raise RuntimeError(
            f"The size of tensor a ({list(tensor1.shape[:-2])}) must match the size of tensor b "
            f"({list(tensor2.shape[:-2])}) at a non-singleton batch dimension"
        ) from None
    b = math.prod(batch)
    expanded1 = tensor1.expand(batch + (n, m1)).reshape(b, n, m1)
    if d2 == 1:
        expanded2 = tensor2.expand(batch + (m2,)).reshape(b, m2).unsqueeze(2)
    else:
        expanded2 = tensor2.expand(batch + (m2, p)).reshape(b, m2, p)
    if m1 != m2:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {m1}] but got: "
            f"[{b}, {m2}]."
        )
    output_shape = batch + ((n,) if d1 > 1 else ()) + ((p,) if d2 > 1 else ())
    return _dispatch(_op("unsafe_view"), (expanded1.bmm(expanded2),), {"shape": output_shape})


def _same_dtype(fname, a, b):
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(
            f"{fname}(): expected both tensors to have the same dtype, but got {a.dtype} != "
            f"{b.dtype} (shapes {list(a.shape)} and {list(b.shape)})"
        )


# ---- helpers the formulas and kernels name ------------------------------------------------------
def sum_to(t, shape):
    """Sum ``t`` down to ``shape`` (the reverse of broadcasting), differentiably."""
    shape = tuple(shape)
    tshape = t.shape
    if tshape == shape:
        return t
    lead = len(tshape) - len(shape)
    kept = tuple(i + lead for i, s in enumerate(shape) if s == 1 and tshape[i + lead] != 1)
    r = t.sum(kept, keepdim=True) if kept else t
    # the leading dims go without keepdim: no reshape, so the result owns its memory (and
    # AccumulateGrad can take it without a copy, see NOTE [Stealing the gradient])
    r = r.sum(tuple(range(lead))) if lead else r
    return r if r.shape == shape else r.reshape(shape)
