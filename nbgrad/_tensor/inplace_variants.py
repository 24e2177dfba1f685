"""The in-place variants of the out-of-place Tensor methods (``sqrt_``, ``masked_fill_``,
``addmm_``, ``eq_``...), the random fills (``normal_``, ``uniform_``...) and the cheap
attributes and conversions PyTorch's Tensor has (``is_cpu``, ``nbytes``, ``byte()``...).
:class:`nbgrad.Tensor` inherits them.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

import nbgrad
from nbgrad import backend, dtypes
from nbgrad._graph.forward_grad import _state as _fw
from nbgrad._graph.forward_grad import get_tangent, set_tangent
from nbgrad._graph.saved_mutation import before_write, mutation_contexts
from nbgrad._tensor import conversion as _conversion
from nbgrad._tensor.conversion import _arg, _scalar
from nbgrad._tensor.dispatch import _NO_ATTRS, _dim, _dispatch, _op, _shape_arg
from nbgrad._tensor.math_methods import sum_to
from nbgrad._tensor.views import (
    _mark_base_changed,
    _multiple_views_message,
    _NoGrad,
    _track_view,
)

# NOTE [In-place variants, generated]
# PyTorch's ``x.op_(...)`` computes what ``x.op(...)`` computes, writes it into ``x`` and
# records the out-of-place op's node (``SqrtBackward0`` for ``sqrt_``). So each in-place
# variant here is generated from one line of ``_VARIANTS``, ``in-place name: out-of-place
# method``: the method, with its argument checks, runs through ``_inplace_via`` (in
# nbgrad/_tensor/inplace.py), which does what ``_inplace`` does for one row: PyTorch's checks,
# the write, the version bump, the history rebased onto the node (through ``CopySlices`` on a
# view). Where PyTorch's in-place op differs from its out-of-place one (a comparison writes 0/1
# and records ``EqBackward0``; ``float_power_`` refuses a result that is not its dtype), a
# method below says so.
_VARIANTS = {
    "abs_": "abs",
    "absolute_": "abs",
    "acos_": "acos",
    "arccos_": "acos",
    "acosh_": "acosh",
    "arccosh_": "acosh",
    "asin_": "asin",
    "arcsin_": "asin",
    "asinh_": "asinh",
    "arcsinh_": "asinh",
    "atan_": "atan",
    "arctan_": "atan",
    "atanh_": "atanh",
    "arctanh_": "atanh",
    "atan2_": "atan2",
    "arctan2_": "atan2",
    "addbmm_": "addbmm",
    "addcdiv_": "addcdiv",
    "addcmul_": "addcmul",
    "addmm_": "addmm",
    "addmv_": "addmv",
    "addr_": "addr",
    "baddbmm_": "baddbmm",
    "bitwise_and_": "bitwise_and",
    "bitwise_or_": "bitwise_or",
    "bitwise_xor_": "bitwise_xor",
    "bitwise_not_": "bitwise_not",
    "bitwise_left_shift_": "bitwise_left_shift",
    "bitwise_right_shift_": "bitwise_right_shift",
    "ceil_": "ceil",
    "clamp_min_": "clamp_min",
    "clamp_max_": "clamp_max",
    "clip_": "clamp",
    "copysign_": "copysign",
    "cos_": "cos",
    "cosh_": "cosh",
    "cumprod_": "cumprod",
    "cumsum_": "cumsum",
    "deg2rad_": "deg2rad",
    "rad2deg_": "rad2deg",
    "divide_": "divide",
    "true_divide_": "div",
    "multiply_": "mul",
    "subtract_": "sub",
    "erf_": "erf",
    "erfc_": "erfc",
    "erfinv_": "erfinv",
    "exp2_": "exp2",
    "expm1_": "expm1",
    "floor_": "floor",
    "fix_": "trunc",
    "trunc_": "trunc",
    "fmod_": "fmod",
    "frac_": "frac",
    "gcd_": "gcd",
    "lcm_": "lcm",
    "heaviside_": "heaviside",
    "hypot_": "hypot",
    "index_add_": "index_add",
    "ldexp_": "ldexp",
    "lerp_": "lerp",
    "log_": "log",
    "log10_": "log10",
    "log1p_": "log1p",
    "log2_": "log2",
    "logical_and_": "logical_and",
    "logical_or_": "logical_or",
    "logical_xor_": "logical_xor",
    "logical_not_": "logical_not",
    "logit_": "logit",
    "masked_fill_": "masked_fill",
    "nan_to_num_": "nan_to_num",
    "neg_": "neg",
    "negative_": "neg",
    "nextafter_": "nextafter",
    "pow_": "pow",
    "reciprocal_": "reciprocal",
    "renorm_": "renorm",
    "round_": "round",
    "rsqrt_": "rsqrt",
    "scatter_": "scatter",
    "scatter_add_": "scatter_add",
    "sigmoid_": "sigmoid",
    "sign_": "sign",
    "sin_": "sin",
    "sinc_": "sinc",
    "sinh_": "sinh",
    "sqrt_": "sqrt",
    "square_": "square",
    "tan_": "tan",
    "tanh_": "tanh",
    "tril_": "tril",
    "triu_": "triu",
    "xlogy_": "xlogy",
}

# the in-place comparisons, by their row (see the rows ``eq_`` and ``eq_scalar_``)
_COMPARISONS = {
    "eq_": "eq",
    "ne_": "ne",
    "not_equal_": "ne",
    "lt_": "lt",
    "less_": "lt",
    "le_": "le",
    "less_equal_": "le",
    "gt_": "gt",
    "greater_": "gt",
    "ge_": "ge",
    "greater_equal_": "ge",
}


# as PyTorch: these write into a leaf that requires grad, and keep the history (no derivative)
_NOT_DIFFERENTIABLE = frozenset({"logical_and_", "logical_or_", "logical_xor_", "logical_not_"})
# as PyTorch: ``derivatives.yaml`` has no formula for their in-place forms
_NO_INPLACE_DERIVATIVE = frozenset(
    {"acosh_", "arccosh_", "asinh_", "arcsinh_", "atanh_", "arctanh_"}
)


def _is_tensor(x):
    return isinstance(
        x, _conversion.Tensor
    )  # (the class, bound late: NOTE [The Tensor class, bound late])


def _variant(name, method):
    """``name``, the in-place variant of the Tensor method ``method``: see NOTE [In-place
    variants, generated]."""

    differentiable = name not in _NOT_DIFFERENTIABLE
    no_derivative = name in _NO_INPLACE_DERIVATIVE

    def inplace(self, *args, **kwargs):
        others = tuple(a for a in (*args, *kwargs.values()) if _is_tensor(a))
        if no_derivative and self.requires_grad and nbgrad.is_grad_enabled():
            self._check_inplace(None, others)  # (a leaf's error comes first)
            raise NotImplementedError(
                f"the derivative for 'inplace version of {method}' is not implemented."
            )
        compute = lambda t: getattr(t, method)(*args, **kwargs)  # noqa: E731
        return self._inplace_via(compute, others, differentiable)

    inplace.__name__ = inplace.__qualname__ = name
    inplace.__doc__ = f"In-place version of :meth:`{method}`."
    return inplace


def _comparison(name, row):
    def compare(self, other):
        other = _arg(other)
        if _is_tensor(other):
            return self._inplace(_op(row + "_"), (other,), _NO_ATTRS)
        return self._inplace(_op(row + "_scalar_"), (), {"other": other})

    compare.__name__ = compare.__qualname__ = name
    compare.__doc__ = f"In-place version of :meth:`{row}`: 1 where it holds, 0 elsewhere."
    return compare


# ``random_()``'s default range, ``[0, 2 ** digits]`` for a float dtype: every integer in it
# is exact in the dtype
_FLOAT_DIGITS = {np.dtype("float16"): 11, np.dtype("float32"): 24, np.dtype("float64"): 53}


def _from_to(name, args, kwargs, defaults):
    """``from`` and ``to`` given by position or keyword (``from`` is a Python keyword)."""
    names = ("from", "to")
    if len(args) > 2 or set(kwargs) - set(names):
        bad = next(iter(set(kwargs) - set(names)), None)
        raise TypeError(
            f"{name}() got an unexpected keyword argument '{bad}'"
            if bad
            else f"{name}() takes at most 2 positional arguments ({len(args)} given)"
        )
    values = list(defaults)
    for k, a in enumerate(args):
        values[k] = a
    for k, n in enumerate(names):
        if n in kwargs:
            values[k] = kwargs[n]
    return values


def _type_name(t):
    return t.dtype._legacy[:-6]


def _check_floating(t, kernel):
    if not t.is_floating_point():
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_type_name(t)}'")


# NOTE [In-place view ops]
# ``t_``, ``transpose_``, ``squeeze_`` and ``unsqueeze_`` change a tensor's shape and strides,
# not its values: the tensor keeps its memory (and its base, if it is a view) and gets the
# view's layout. As PyTorch's, each checks as an in-place op does (a leaf that requires grad is
# refused), bumps the version, and makes a node of its own (``TBackward1``,
# ``TransposeBackward1``, ``SqueezeBackward3/4/5``, ``UnsqueezeBackward1``) over the old
# history the tensor's ``grad_fn``; a retained gradient stays with the old value, as PyTorch's.
# A view's chain gets the out-of-place view op, so what is written into it later reaches its
# base through ``CopySlices`` at the right places.
def _inplace_view(self, row, attrs, step):
    """Give ``self`` the layout that the view ``step`` (an out-of-place view row and its
    attributes) makes, recording the node of ``row`` (NOTE [In-place view ops])."""
    grad_on = self._check_inplace(True, ())
    record = grad_on and self._requires_grad
    if record and self._base is not None and self._view_chain is None:
        raise RuntimeError(_multiple_views_message(self))
    if record:
        result = _dispatch(_op(row), (self._shadow(False),), attrs)
    else:
        with _NoGrad():
            result = _dispatch(_op(row), (self,), attrs)
    if mutation_contexts:  # See NOTE [Clone before mutate]
        before_write(self)
    self._data = result._data
    if _fw.active:  # the tangent takes the same layout (NOTE [Forward-mode AD])
        set_tangent(self, get_tangent(result))
    if record:
        self.grad_fn = result.grad_fn
        self._output_nr = 0
        _mark_base_changed(self._base if self._base is not None else self, self)
    if self._base is not None and self._view_chain is not None:
        self._view_chain = self._view_chain + (step,)
    self._counter()[0] += 1
    return self


def _squeeze_dims(t, dim):
    """``squeeze``'s dims, as a tuple of dims in range, or None for all."""
    if dim is None:
        return None
    n = t.ndim
    return tuple(_dim(d, n) for d in dim) if isinstance(dim, (tuple, list)) else _dim(dim, n)


class InplaceViewMethods:
    """Mixed into :class:`nbgrad.Tensor`: the in-place view ops (NOTE [In-place view ops])."""

    __slots__ = ()

    def t_(self):
        if self.ndim > 2:
            raise RuntimeError(
                f"t_() expects a tensor with <= 2 dimensions, but self is {self.ndim}D"
            )
        return _inplace_view(self, "t_", _NO_ATTRS, ("t", _NO_ATTRS))

    def as_strided_(self, size, stride, storage_offset=None):
        attrs = self._as_strided_attrs(size, stride, storage_offset)
        return _inplace_view(self, "as_strided_", attrs, ("as_strided", attrs))

    def transpose_(self, dim0, dim1):
        n = self.ndim
        attrs = {"dim0": _dim(dim0, n), "dim1": _dim(dim1, n)}
        return _inplace_view(self, "transpose_", attrs, ("transpose", attrs))

    def swapdims_(self, dim0, dim1):
        return self.transpose_(dim0, dim1)

    def swapaxes_(self, axis0, axis1):
        return self.transpose_(axis0, axis1)

    def squeeze_(self, dim=None):
        dims = _squeeze_dims(self, dim)
        if dims is None:
            return _inplace_view(self, "squeeze_", _NO_ATTRS, ("squeeze", _NO_ATTRS))
        if type(dims) is tuple:
            attrs = {"dims": dims}
            return _inplace_view(self, "squeeze_dims_", attrs, ("squeeze_dims", attrs))
        attrs = {"dim": dims}
        return _inplace_view(self, "squeeze_dim_", attrs, ("squeeze_dim", attrs))

    def unsqueeze_(self, dim):
        attrs = {"dim": _dim(dim, self.ndim + 1)}
        return _inplace_view(self, "unsqueeze_", attrs, ("unsqueeze", attrs))


class InplaceVariantMethods(InplaceViewMethods):
    """Mixed into :class:`nbgrad.Tensor`."""

    __slots__ = ()

    # -- in-place variants that differ from their out-of-place op ---------------------------
    def fill_diagonal_(self, fill_value, wrap=False):
        """``fill_value`` on the main diagonal (all dims of equal length; a tall matrix starts
        again every ``ncols + 1`` rows with ``wrap``), written through diagonal views, so the
        history is PyTorch's ``CopySlices`` over a fill."""
        if self.ndim < 2:
            raise RuntimeError("dimensions must larger than 1")
        n = self.shape[1]
        if self.ndim > 2 and any(s != n for s in self.shape):
            raise RuntimeError("all dimensions of input must be of equal length")
        rows = self.shape[0]
        starts = range(0, rows, n + 1) if wrap and self.ndim == 2 and rows > n else (0,)
        for start in starts:
            block = self if start == 0 and len(starts) == 1 else self[start : start + n]
            diagonal = block.diagonal(0, 0, 1)
            for _ in range(self.ndim - 2):  # (an n-d diagonal: dims 0 and 1, then again)
                diagonal = diagonal.diagonal(0, 0, -1)
            diagonal.fill_(fill_value)
        return self

    def float_power_(self, exponent):
        """In-place version of :meth:`float_power`: only a float64 tensor can hold its
        result."""
        if self.dtype is not dtypes.float64:
            raise RuntimeError(
                f"the base given to float_power_ has dtype {_type_name(self)} but the "
                "operation's result requires dtype Double"
            )
        others = (exponent,) if _is_tensor(exponent) else ()
        return self._inplace_via(lambda t: t.float_power(exponent), others)

    # -- random fills ----------------------------------------------------------------------
    def uniform_(self, *args, generator=None, **kwargs):
        """``uniform_(from=0, to=1, *, generator=None)``: fill with values drawn uniformly
        from ``[from, to)``."""
        low, high = _from_to("uniform_", args, kwargs, (0, 1))
        _check_floating(self, "check_uniform_bounds")
        low, high = float(_scalar(low)), float(_scalar(high))
        finfo = np.finfo(self._data.dtype)
        for which, v in (("from", low), ("to", high)):
            if not finfo.min <= v <= finfo.max:
                raise RuntimeError(f"{which} is out of bounds for {_type_name(self).lower()}")
        if low > high:
            raise RuntimeError(
                f"uniform_ expects to return a [from, to) range, but found from={_g(low)} > "
                f"to={_g(high)}"
            )
        return self._inplace(
            _op("uniform_"), (), {"low": low, "high": high, "generator": generator}
        )

    def normal_(self, mean=0, std=1, *, generator=None):
        """Fill with values drawn from N(``mean``, ``std`` ** 2)."""
        _check_floating(self, "normal_kernel_cpu")
        mean, std = float(_scalar(mean)), float(_scalar(std))
        if not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(std)}")
        return self._inplace(_op("normal_"), (), {"mean": mean, "std": std, "generator": generator})

    def exponential_(self, lambd=1, *, generator=None):
        """Fill with values drawn from the exponential distribution of rate ``lambd``."""
        if not self.is_floating_point():
            raise RuntimeError(
                "Exponential distribution is a continuous probability distribution. dtype must "
                f"be a floating point but you specified {_type_name(self)}"
            )
        lambd = float(_scalar(lambd))
        if not lambd > 0.0:
            raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_g(lambd)}")
        return self._inplace(_op("exponential_"), (), {"lambd": lambd, "generator": generator})

    def cauchy_(self, median=0, sigma=1, *, generator=None):
        """Fill with values drawn from the Cauchy distribution."""
        _check_floating(self, "cauchy_cpu")
        median, sigma = float(_scalar(median)), float(_scalar(sigma))
        if not sigma > 0.0:
            raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_g(sigma)}")
        attrs = {"median": median, "sigma": sigma, "generator": generator}
        return self._inplace(_op("cauchy_"), (), attrs)

    def log_normal_(self, mean=1, std=2, *, generator=None):
        """Fill with values whose logarithm is drawn from N(``mean``, ``std`` ** 2)."""
        _check_floating(self, "log_normal_cpu")
        mean, std = float(_scalar(mean)), float(_scalar(std))
        if not std > 0.0:
            raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_g(std)}")
        return self._inplace(
            _op("log_normal_"), (), {"mean": mean, "std": std, "generator": generator}
        )

    def geometric_(self, p, *, generator=None):
        """Fill with the number of Bernoulli(``p``) trials up to the first success."""
        p = float(_scalar(p))
        if not 0 < p < 1:
            raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_g(p)}")
        return self._inplace(_op("geometric_"), (), {"p": p, "generator": generator})

    def random_(self, *args, generator=None, **kwargs):
        """``random_(from=0, to=None, *, generator=None)``: fill with integers drawn uniformly
        from ``[from, to)``; ``random_(to)`` from ``[0, to)``; ``random_()`` over the dtype's
        range (for a float dtype, the integers it holds exactly)."""
        given = len(args) + len(kwargs)
        if given == 1 and not kwargs.keys() - {"to"}:  # random_(to)
            args, kwargs = (0, args[0] if args else kwargs["to"]), {}
        low, high = _from_to("random_", args, kwargs, (0, None))
        for v in (low, high):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
                raise TypeError(
                    f"random_() received an invalid combination of arguments - got "
                    f"{type(v).__name__}, but expected (int from, int to, *, Generator generator)"
                )
        dtype = self._data.dtype
        if dtype.kind == "f":  # the integers the dtype holds exactly
            highest = 2 ** _FLOAT_DIGITS.get(dtype, 24)
            lowest = -highest
        elif dtype.kind == "b":
            lowest, highest = 0, 1
        else:
            lowest, highest = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
        if high is None:  # up to the dtype's largest, included
            high = highest + 1
        if low >= high:
            raise RuntimeError(
                f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
            )
        name = self.dtype._legacy[:-6].replace("Byte", "unsigned char").lower()
        if dtype.kind != "f":  # (a float dtype: PyTorch warns, past the exact integers)
            if not lowest <= low <= highest:
                raise RuntimeError(f"from is out of bounds for {name}")
            if not lowest <= high - 1 <= highest:
                raise RuntimeError(f"to - 1 is out of bounds for {name}")
        row = ("random_2", "random_1", "random_0")[min(given, 2)]
        attrs = {"low": int(low), "high": int(high), "generator": generator}
        return self._inplace(_op(row), (), attrs)

    # -- attributes ------------------------------------------------------------------------
    @property
    def is_cpu(self):
        return self.device.type == "cpu"

    @property
    def itemsize(self):
        """The size of one element in bytes."""
        return self._data.dtype.itemsize

    @property
    def nbytes(self):
        """The size of the elements in bytes (``numel() * itemsize``)."""
        return self.numel() * self._data.dtype.itemsize

    @property
    def H(self):
        """The conjugate transpose of a matrix: its transpose, for nbgrad's real dtypes."""
        if self.ndim not in (0, 2):
            raise RuntimeError(
                f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor."
            )
        return self.t() if self.ndim == 2 else self

    @property
    def mH(self):
        """The conjugate transpose of the last two dims (``mT``, for real dtypes)."""
        return self.mT

    def get_device(self):
        """The device's index: -1 on the CPU."""
        index = self.device.index
        return -1 if self.device.type == "cpu" else (index or 0)

    def ndimension(self):
        return self.dim()

    def const_data_ptr(self):
        return self.data_ptr()

    def dim_order(self, *, ambiguity_check=False):
        """The dims from the outermost in memory to the innermost (by decreasing stride)."""
        strides = self.stride()
        return tuple(sorted(range(self.ndim), key=lambda d: -strides[d]))

    # -- conversions and shortcuts -----------------------------------------------------------
    def byte(self, memory_format=None):
        return self.to(dtypes.uint8)

    def char(self, memory_format=None):
        return self.to(dtypes.int8)

    def short(self, memory_format=None):
        return self.to(dtypes.int16)

    def sum_to_size(self, *size):
        """Sum down to ``size``, which must broadcast to this tensor's shape."""
        size = tuple(_shape_arg(size))
        try:
            expandable = np.broadcast_shapes(size, tuple(self.shape)) == tuple(self.shape)
        except ValueError:
            expandable = False
        if not expandable or len(size) > self.ndim:
            raise RuntimeError(
                f"size {{{list(size)}}} is not expandable to size {{{list(self.shape)}}}."
            )
        return sum_to(self, size)

    def where(self, condition, y):
        """``self`` where ``condition`` holds, ``y`` elsewhere (``nbgrad.where``)."""
        return nbgrad.where(condition, self, y)

    def cov(self, *, correction=1, fweights=None, aweights=None):
        return nbgrad.cov(self, correction=correction, fweights=fweights, aweights=aweights)

    def corrcoef(self):
        return nbgrad.corrcoef(self)

    def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
        return nbgrad.unique_consecutive(
            self, return_inverse=return_inverse, return_counts=return_counts, dim=dim
        )

    def is_set_to(self, tensor):
        """Whether both tensors view the same memory with the same shape and strides."""
        return (
            self.data_ptr() == tensor.data_ptr()
            and self.shape == tensor.shape
            and self.stride() == tensor.stride()
            and self.device == tensor.device
        )

    def apply_(self, callable):
        """Replace each element by ``callable(element)`` (CPU only; no autograd)."""
        if self.requires_grad and nbgrad.is_grad_enabled():
            raise RuntimeError(
                "Can't call apply_() on Variable that requires grad. Use var.detach().apply_() "
                "instead."
            )
        if self.device.type != "cpu":
            raise TypeError("apply_ is only implemented on CPU tensors")
        values = [callable(v) for v in self._data.reshape(-1).tolist()]
        with _NoGrad():
            self.copy_(nbgrad.tensor(values, dtype=self.dtype).reshape(self.shape))
        return self

    def map2_(self, x, y, callable):
        """Replace each element ``a`` by ``callable(a, b, c)``, ``b`` and ``c`` the elements of
        ``x`` and ``y`` (broadcast to this shape) at the same place (CPU only; no autograd)."""
        return _map_elements(self, "map2_", (x, y), callable)

    def as_subclass(self, cls):
        """This tensor as an instance of ``cls``, a subclass of Tensor: an alias of it
        (``AliasBackward0`` where it requires grad), made without calling ``cls.__init__``."""
        if not (isinstance(cls, type) and issubclass(cls, nbgrad.Tensor)):
            raise TypeError(
                "Creating a Tensor subclass from a class that does not inherit from Tensor is "
                "not possible. Make sure your class inherits from Tensor."
            )
        alias = _dispatch(_op("alias"), (self,))
        if cls is nbgrad.Tensor:
            return alias
        out = object.__new__(cls)
        for slot in nbgrad.Tensor.__slots__:
            if slot != "__weakref__" and hasattr(alias, slot):
                setattr(out, slot, getattr(alias, slot))
        if out._base is not None and out._view_chain is not None:
            _track_view(out._base, out)
        return out

    def module_load(self, other, assign=False):
        """What ``Module.load_state_dict`` loads into this parameter or buffer: ``other``
        detached with ``assign``, else ``other`` copied into this tensor (under ``no_grad``,
        as ``load_state_dict`` calls it), detached."""
        if assign:
            return other.detach()
        return self.copy_(other).detach()

    def new_empty_strided(
        self, size, stride, *, dtype=None, device=None, requires_grad=False, **kwargs
    ):
        """An uninitialised tensor of ``size`` laid out with ``stride`` (in elements), of this
        tensor's dtype and device unless given."""
        size, stride = tuple(_shape_arg(size)), tuple(_shape_arg(stride))
        if len(size) != len(stride):
            raise RuntimeError(
                f"mismatch in length of strides and shape: {len(stride)} and {len(size)}"
            )
        storage = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
        buffer = self.new_empty(storage, dtype=dtype, device=device)
        step = buffer._data.itemsize
        xp = backend.get_xp(buffer._device)
        data = xp.lib.stride_tricks.as_strided(buffer._data, size, [s * step for s in stride])
        return _conversion._wrap(data, buffer._device, requires_grad)

    def resize_(self, *sizes, memory_format=None):
        """This tensor, reshaped in place to ``sizes``: its first elements when it shrinks,
        then new zeros when it grows (PyTorch leaves those uninitialised)."""
        sizes = tuple(_shape_arg(sizes))
        if self.requires_grad and nbgrad.is_grad_enabled():
            raise RuntimeError("cannot resize variables that require grad")
        if any(n < 0 for n in sizes):
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {min(sizes)}: {list(sizes)}"
            )
        if sizes == self._data.shape:  # as PyTorch: the same sizes change nothing, not even
            return self  # the version
        if mutation_contexts:  # See NOTE [Clone before mutate]
            before_write(self)
        n = math.prod(sizes)
        flat = self._data.reshape(-1)  # (a copy for a tensor that is not contiguous)
        if n <= flat.size and self._data.flags.c_contiguous:  # its first elements, in place
            self._data = flat[:n].reshape(sizes)
        else:
            data = backend.get_xp(self._device).zeros(n, dtype=self._data.dtype)
            data[: min(n, flat.size)] = flat[: min(n, flat.size)]
            self._data = data.reshape(sizes)
        self._counter()[0] += 1
        return self

    def resize_as_(self, the_template, memory_format=None):
        return self.resize_(the_template.shape)

    def resize(self, *sizes):
        """Deprecated: a new shape of as many elements (``ResizeBackward``)."""
        warnings.warn("non-inplace resize is deprecated", stacklevel=2)
        return nbgrad.autograd.function.Resize.apply(self, tuple(_shape_arg(sizes)))

    def resize_as(self, tensor):
        """Deprecated: ``resize`` to the shape of ``tensor``."""
        warnings.warn("non-inplace resize_as is deprecated", stacklevel=2)
        return nbgrad.autograd.function.Resize.apply(self, tuple(tensor.size()))

    def map_(self, tensor, callable):
        """Replace each element ``a`` by ``callable(a, b)``, ``b`` the element of ``tensor``
        (broadcast to this shape) at the same place (CPU only; no autograd)."""
        return _map_elements(self, "map_", (tensor,), callable)


def _map_elements(self, name, others, callable):
    """``map_``/``map2_``: each element replaced by ``callable`` of it and the elements of
    ``others`` at the same place."""
    if self.requires_grad and nbgrad.is_grad_enabled():
        raise RuntimeError(
            f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() "
            "instead."
        )
    columns = [self._data.reshape(-1).tolist()] + [
        np.broadcast_to(np.asarray(t.detach()), self.shape).reshape(-1).tolist() for t in others
    ]
    values = [callable(*elements) for elements in zip(*columns)]
    with _NoGrad():
        self.copy_(nbgrad.tensor(values, dtype=self.dtype).reshape(self.shape))
    return self


def _g(v):
    """A number as PyTorch's messages print it (``1``, ``0.5``)."""
    return int(v) if float(v).is_integer() and math.isfinite(v) else v


for _name, _method in _VARIANTS.items():
    setattr(InplaceVariantMethods, _name, _variant(_name, _method))
for _name, _row in _COMPARISONS.items():
    setattr(InplaceVariantMethods, _name, _comparison(_name, _row))
del _name, _method, _row
