"""Tensor methods of PyTorch's wider surface: NumPy-style aliases (``absolute``, ``arccos``,
``greater``...), more pointwise math and scans (``xlogy``, ``cummax``, ``logcumsumexp``...),
nan-aware reductions, products (``addmv``, ``addr``, ``inner``...), splits and rotations, and
indexing (``index_copy``, ``scatter_reduce``, ``put``...). :class:`nbgrad.Tensor` inherits
them.

Where PyTorch's op is composite (``diff``, ``tensor_split``, ``ravel``, ``nanmean``...) the
method is made of the same ops, so the graph shows PyTorch's nodes; otherwise it is one row of
the op table (:mod:`nbgrad.derivatives`). An alias is the same method under a second name, as in
PyTorch (``Tensor.absolute`` is ``Tensor.abs``'s twin, and records ``AbsBackward0``).
"""

from __future__ import annotations

import numpy as np

from nbgrad import return_types
from nbgrad._tensor.conversion import _arg, _scalar, _tensor_arg, tensor
from nbgrad._tensor.creation import cat
from nbgrad._tensor.dispatch import _dim, _dims, _dispatch, _expect_tensor, _op
from nbgrad._tensor.linalg_methods import tensordot
from nbgrad._tensor.math_methods import _quantile

Tensor = None  # the Tensor class: see NOTE [The Tensor class, bound late]

_SCATTER_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


class WiderMethods:
    """Mixed into :class:`nbgrad.Tensor`."""

    __slots__ = ()

    # -- aliases: the same op under PyTorch's second (NumPy) name ---------------------------
    def absolute(self):
        return self.abs()

    def arccos(self):
        return self.acos()

    def arcsin(self):
        return self.asin()

    def arctan(self):
        return self.atan()

    def arccosh(self):
        return self.acosh()

    def arcsinh(self):
        return self.asinh()

    def arctanh(self):
        return self.atanh()

    def negative(self):
        return self.neg()

    def positive(self):
        """``self`` itself (PyTorch refuses a bool tensor)."""
        if self._data.dtype.kind == "b":
            raise RuntimeError(
                "The `+` operator, on a bool tensor is not supported. If you are trying to "
                "invert a mask, use the `~` or `logical_not()` operator instead."
            )
        return self

    def multiply(self, other):
        return self.mul(other)

    def subtract(self, other, *, alpha=1):
        return self.sub(other, alpha=alpha)

    def divide(self, other, *, rounding_mode=None):
        """``self / other``; with ``rounding_mode`` ``"floor"`` or ``"trunc"``, rounded
        (``DivBackward2``, whose gradient is zero)."""
        if rounding_mode is None:
            return self.div(other)
        if rounding_mode not in ("floor", "trunc"):
            raise RuntimeError(
                "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                f"'{rounding_mode}'"
            )
        attrs = {"rounding_mode": rounding_mode}
        return _dispatch(_op("div_rounding"), (self, _arg(other)), attrs)

    def true_divide(self, other):
        return self.div(other)

    def greater(self, other):
        return self.gt(other)

    def greater_equal(self, other):
        return self.ge(other)

    def less(self, other):
        return self.lt(other)

    def less_equal(self, other):
        return self.le(other)

    def not_equal(self, other):
        return self.ne(other)

    def fix(self):
        return self.trunc()

    # -- pointwise ---------------------------------------------------------------------------
    def acosh(self):
        return _dispatch(_op("acosh"), (self,))

    def asinh(self):
        return _dispatch(_op("asinh"), (self,))

    def atanh(self):
        return _dispatch(_op("atanh"), (self,))

    def erfc(self):
        return _dispatch(_op("erfc"), (self,))

    def deg2rad(self):
        return _dispatch(_op("deg2rad"), (self,))

    def rad2deg(self):
        return _dispatch(_op("rad2deg"), (self,))

    def logit(self, eps=None):
        """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is
        given."""
        return _dispatch(_op("logit"), (self,), {"eps": None if eps is None else float(eps)})

    def sinc(self):
        """``sin(pi x) / (pi x)``, 1 at 0."""
        return _dispatch(_op("sinc"), (self,))

    def xlogy(self, other):
        """``self * log(other)``, 0 where ``self`` is 0 (unless ``other`` is NaN)."""
        other = _arg(other)
        if isinstance(other, Tensor):
            return _dispatch(_op("xlogy"), (self, other))
        return _dispatch(_op("xlogy_other_scalar"), (self,), {"other": other})

    def fmax(self, other):
        """The elementwise maximum, ignoring a NaN where the other value is a number."""
        return _dispatch(_op("fmax"), (self, _expect_tensor(other, "fmax", "other", 1)))

    def fmin(self, other):
        """The elementwise minimum, ignoring a NaN where the other value is a number."""
        return _dispatch(_op("fmin"), (self, _expect_tensor(other, "fmin", "other", 1)))

    def copysign(self, other):
        """The magnitude of ``self`` with the sign of ``other``."""
        other = _arg(other)
        if isinstance(other, Tensor):
            return _dispatch(_op("copysign"), (self, other))
        return _dispatch(_op("copysign_scalar"), (self,), {"other": other})

    def logaddexp2(self, other):
        """``log2(2 ** self + 2 ** other)``, computed without overflow."""
        return _dispatch(_op("logaddexp2"), (self, _tensor_arg(other, self)))

    def ldexp(self, other):
        """``self * 2 ** other``."""
        return _dispatch(_op("ldexp"), (self, _expect_tensor(other, "ldexp", "other", 1)))

    def nextafter(self, other):
        """The next floating-point value after ``self`` toward ``other``."""
        return _dispatch(_op("nextafter"), (self, _expect_tensor(other, "nextafter", "other", 1)))

    def heaviside(self, values):
        """0 where ``self < 0``, 1 where ``self > 0``, ``values`` where ``self == 0``."""
        values = _expect_tensor(values, "heaviside", "values", 1)
        return _dispatch(_op("heaviside"), (self, values))

    def frexp(self):
        """``(mantissa, exponent)`` with ``self == mantissa * 2 ** exponent``."""
        if not self.is_floating_point():
            raise RuntimeError("torch.frexp() only supports floating-point dtypes")
        return return_types.frexp(*_dispatch(_op("frexp"), (self,)))

    def float_power(self, exponent):
        """``self ** exponent`` computed in float64, as PyTorch's (a copy to double first)."""
        base = self.double()
        if isinstance(exponent, Tensor):
            return base.pow(exponent.double())
        return base.pow(float(_scalar(exponent)))

    def addcmul(self, tensor1, tensor2, *, value=1):
        """``self + value * tensor1 * tensor2`` (``AddcmulBackward0``)."""
        _expect_tensor(tensor1, "addcmul", "tensor1", 1)
        _expect_tensor(tensor2, "addcmul", "tensor2", 2)
        return _dispatch(_op("addcmul"), (self, tensor1, tensor2), {"value": _scalar(value)})

    def addcdiv(self, tensor1, tensor2, *, value=1):
        """``self + value * tensor1 / tensor2`` (``AddcdivBackward0``)."""
        _expect_tensor(tensor1, "addcdiv", "tensor1", 1)
        _expect_tensor(tensor2, "addcdiv", "tensor2", 2)
        if tensor1._data.dtype.kind in "iub" and tensor2._data.dtype.kind in "iub":
            raise RuntimeError(
                "Integer division with addcdiv is no longer supported, and in a future release "
                "addcdiv will perform a true division of tensor1 and tensor2. The historic "
                "addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / "
                "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
                "tensor2) for float inputs. The future addcdiv behavior is just the latter "
                "implementation: (input + value * tensor1 / tensor2), for all dtypes."
            )
        return _dispatch(_op("addcdiv"), (self, tensor1, tensor2), {"value": _scalar(value)})

    def signbit(self):
        return _dispatch(_op("signbit"), (self,))

    def isposinf(self):
        return _dispatch(_op("isposinf"), (self,))

    def isneginf(self):
        return _dispatch(_op("isneginf"), (self,))

    def gcd(self, other):
        return _dispatch(_op("gcd"), (self, _expect_tensor(other, "gcd", "other", 1)))

    def lcm(self, other):
        return _dispatch(_op("lcm"), (self, _expect_tensor(other, "lcm", "other", 1)))

    def bitwise_and(self, other):
        return _dispatch(_op("bitwise_and"), (self, _arg(other)))

    def bitwise_or(self, other):
        return _dispatch(_op("bitwise_or"), (self, _arg(other)))

    def bitwise_xor(self, other):
        return _dispatch(_op("bitwise_xor"), (self, _arg(other)))

    def bitwise_not(self):
        return _dispatch(_op("bitwise_not"), (self,))

    def bitwise_left_shift(self, other):
        return _dispatch(_op("bitwise_left_shift"), (self, _arg(other)))

    def bitwise_right_shift(self, other):
        return _dispatch(_op("bitwise_right_shift"), (self, _arg(other)))

    # -- scans and reductions ---------------------------------------------------------------
    def cummax(self, dim):
        """``(values, indices)``: the running maximum along ``dim`` and where it was reached."""
        out = _dispatch(_op("cummax"), (self,), {"dim": _dim(dim, self.ndim)})
        return return_types.cummax(*out)

    def cummin(self, dim):
        """``(values, indices)``: the running minimum along ``dim`` and where it was reached."""
        out = _dispatch(_op("cummin"), (self,), {"dim": _dim(dim, self.ndim)})
        return return_types.cummin(*out)

    def logcumsumexp(self, dim):
        """``log(cumsum(exp(self), dim))``, computed without overflow."""
        return _dispatch(_op("logcumsumexp"), (self,), {"dim": _dim(dim, self.ndim)})

    def nansum(self, dim=None, keepdim=False, *, dtype=None):
        """The sum, NaN counted as 0 (``NansumBackward0``)."""
        dims = None if dim is None else _dims(dim, self.ndim)
        attrs = {"dim": dims, "keepdim": keepdim, "dtype": dtype}
        return _dispatch(_op("nansum"), (self,), attrs)

    def nanmean(self, dim=None, keepdim=False, *, dtype=None):
        """The mean of the numbers (not NaN): ``nansum / count``, as PyTorch's composite."""
        if not self.is_floating_point():
            raise RuntimeError(
                "nanmean(): expected input to have floating point dtype but got "
                + self.dtype._legacy[:-6]
            )
        count = self.isnan().logical_not().sum(dim, keepdim)
        return self.nansum(dim, keepdim, dtype=dtype).div(count)

    def nanmedian(self, dim=None, keepdim=False):
        """The lower median of the numbers (not NaN): of all elements, or ``(values,
        indices)`` along ``dim``."""
        if dim is None:
            return _dispatch(_op("nanmedian"), (self,))
        attrs = {"dim": _dim(dim, self.ndim), "keepdim": keepdim}
        return return_types.nanmedian(*_dispatch(_op("nanmedian_dim"), (self,), attrs))

    def nanquantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        """``quantile`` of the numbers (not NaN); a slice of NaN only gives NaN."""
        return _quantile(self, q, dim, keepdim, interpolation, ignore_nan=True)

    def kthvalue(self, k, dim=-1, keepdim=False):
        """``(values, indices)``: the ``k``-th smallest element along ``dim``."""
        attrs = {"k": int(k), "dim": _dim(dim, self.ndim), "keepdim": keepdim}
        return return_types.kthvalue(*_dispatch(_op("kthvalue"), (self,), attrs))

    def mode(self, dim=-1, keepdim=False):
        """``(values, indices)``: the most frequent value along ``dim`` (the smallest of
        equally frequent ones) and its last index."""
        attrs = {"dim": _dim(dim, self.ndim), "keepdim": keepdim}
        return return_types.mode(*_dispatch(_op("mode"), (self,), attrs))

    def aminmax(self, *, dim=None, keepdim=False):
        """``(min, max)``: both from one node (``AminmaxBackward0``)."""
        attrs = {"dim": None if dim is None else _dim(dim, self.ndim), "keepdim": keepdim}
        return return_types.aminmax(*_dispatch(_op("aminmax"), (self,), attrs))

    def msort(self):
        """The values sorted along dim 0 (``sort(dim=0).values``)."""
        return self.sort(0).values

    def diff(self, n=1, dim=-1, prepend=None, append=None):
        """The ``n``-th forward difference along ``dim`` (a ``sub`` of two slices, or a
        ``logical_xor`` for bool tensors), after ``prepend`` and ``append``."""
        if self.ndim == 0:
            raise RuntimeError("diff expects input to be at least one-dimensional")
        d = _dim(dim, self.ndim)
        x = self
        parts = [p for p in (prepend, x, append) if p is not None]
        if len(parts) > 1:
            x = cat([_broadcast_for_diff(p, x, d) for p in parts], d)
        for _ in range(int(n)):
            length = x.shape[d]
            if length == 0:
                break
            later, earlier = x.narrow(d, 1, length - 1), x.narrow(d, 0, length - 1)
            x = later.logical_xor(earlier) if x._data.dtype.kind == "b" else later.sub(earlier)
        return x

    def histc(self, bins=100, min=0, max=0):
        """Counts of the values in ``bins`` equal bins between ``min`` and ``max`` (the
        data's range when both are 0)."""
        if not self.is_floating_point():
            raise NotImplementedError(
                f"\"histogram_cpu\" not implemented for '{self.dtype._legacy[:-6]}'"
            )
        attrs = {"bins": int(bins), "min": _scalar(min), "max": _scalar(max)}
        return _dispatch(_op("histc"), (self,), attrs)

    def histogram(self, bins=100, *, range=None, weight=None, density=False):
        """``(hist, bin_edges)``: ``bins`` (a count or the edges, a tensor)."""
        edges = bins._data if isinstance(bins, Tensor) else int(bins)
        attrs = {"bins": edges, "range": range, "density": density}
        return return_types.histogram(*_dispatch(_op("histogram"), (self, weight), attrs))

    def bincount(self, weights=None, minlength=0):
        """How often each non-negative integer occurs (weighted by ``weights``)."""
        if self._data.dtype.kind not in "iu":
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        return _dispatch(_op("bincount"), (self, weights), {"minlength": int(minlength)})

    # -- products ----------------------------------------------------------------------------
    def addmv(self, mat, vec, *, beta=1, alpha=1):
        """``beta * self + alpha * (mat @ vec)`` (``AddmvBackward0``)."""
        _expect_tensor(mat, "addmv", "mat", 1)
        _expect_tensor(vec, "addmv", "vec", 2)
        if mat.ndim != 2 or vec.ndim != 1:
            raise RuntimeError(
                f"vector + matrix @ vector expected, got {self.ndim}, {mat.ndim}, {vec.ndim}"
            )
        if mat.shape[1] != vec.shape[0]:
            raise RuntimeError(
                f"size mismatch, got input ({self.shape[0] if self.ndim else 1}), mat "
                f"({mat.shape[0]}x{mat.shape[1]}), vec ({vec.shape[0]})"
            )
        attrs = {"beta": _scalar(beta), "alpha": _scalar(alpha)}
        return _dispatch(_op("addmv"), (self, mat, vec), attrs)

    def addr(self, vec1, vec2, *, beta=1, alpha=1):
        """``beta * self + alpha * outer(vec1, vec2)`` (``AddrBackward0``)."""
        _expect_tensor(vec1, "addr", "vec1", 1)
        _expect_tensor(vec2, "addr", "vec2", 2)
        if vec1.ndim != 1 or vec2.ndim != 1:
            raise RuntimeError(
                "addr: Expected 1-D argument vec1, but got " + f"{vec1.ndim}-D"
                if vec1.ndim != 1
                else f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D"
            )
        attrs = {"beta": _scalar(beta), "alpha": _scalar(alpha)}
        return _dispatch(_op("addr"), (self, vec1, vec2), attrs)

    def addbmm(self, batch1, batch2, *, beta=1, alpha=1):
        """``beta * self + alpha * sum_b(batch1[b] @ batch2[b])`` (``AddbmmBackward0``)."""
        _expect_tensor(batch1, "addbmm", "batch1", 1)
        _expect_tensor(batch2, "addbmm", "batch2", 2)
        if batch1.ndim != 3:
            raise RuntimeError("batch1 must be a 3D tensor")
        if batch2.ndim != 3:
            raise RuntimeError("batch2 must be a 3D tensor")
        if batch1.shape[0] != batch2.shape[0] or batch1.shape[2] != batch2.shape[1]:
            raise RuntimeError(
                f"Expected size for first two dimensions of batch2 tensor to be: "
                f"[{batch1.shape[0]}, {batch1.shape[2]}] but got: [{batch2.shape[0]}, "
                f"{batch2.shape[1]}]."
            )
        attrs = {"beta": _scalar(beta), "alpha": _scalar(alpha)}
        return _dispatch(_op("addbmm"), (self, batch1, batch2), attrs)

    def inner(self, other):
        """The sum of products over the last dims: ``tensordot`` on them (a product, for a
        0-d operand), as PyTorch's composite."""
        _expect_tensor(other, "inner", "other", 1)
        if self.ndim == 0 or other.ndim == 0:
            return self * other
        if self.shape[-1] != other.shape[-1]:
            raise RuntimeError(
                f"inner() the last dimension must match on both input tensors but got shapes "
                f"{list(self.shape)} and {list(other.shape)}"
            )
        return tensordot(self, other, ([-1], [-1]))

    def vdot(self, other):
        """The dot product of two vectors (``VdotBackward0``)."""
        _expect_tensor(other, "vdot", "other", 1)
        if self.ndim != 1 or other.ndim != 1:
            raise RuntimeError(
                f"1D tensors expected, but got {self.ndim}D and {other.ndim}D tensors"
            )
        if self._data.dtype != other._data.dtype:
            raise RuntimeError(
                "vdot : expected both vectors to have same dtype, but found "
                f"{self.dtype._legacy[:-6]} and {other.dtype._legacy[:-6]}"
            )
        if self.shape[0] != other.shape[0]:
            raise RuntimeError(
                "inconsistent tensor size, expected tensor [" + f"{self.shape[0]}] and src "
                f"[{other.shape[0]}] to have the same number of elements, but got "
                f"{self.shape[0]} and {other.shape[0]} elements respectively"
            )
        return _dispatch(_op("vdot"), (self, other))

    def dist(self, other, p=2):
        """``(self - other).norm(p)`` (``DistBackward0``)."""
        _expect_tensor(other, "dist", "other", 1)
        return _dispatch(_op("dist"), (self, other), {"p": float(_scalar(p))})

    def renorm(self, p, dim, maxnorm):
        """Each sub-tensor along ``dim`` scaled down to a ``p``-norm of at most ``maxnorm``."""
        if p <= 0:
            raise RuntimeError("renorm: non-positive-norm not supported")
        if maxnorm < 0:
            raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
        attrs = {"p": float(p), "dim": _dim(dim, self.ndim), "maxnorm": float(maxnorm)}
        return _dispatch(_op("renorm"), (self,), attrs)

    # -- shapes: rotations, flips, splits -----------------------------------------------------
    def rot90(self, k=1, dims=(0, 1)):
        """A rotation by 90 degrees ``k`` times, from dim ``dims[0]`` toward ``dims[1]``."""
        dims = tuple(dims)
        if len(dims) != 2:
            raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
        if self.ndim < 2:
            raise RuntimeError(f"expected total dims >= 2, but got total dims = {self.ndim}")
        d0, d1 = _dim(dims[0], self.ndim), _dim(dims[1], self.ndim)
        if d0 == d1:
            raise RuntimeError(
                f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}"
            )
        return _dispatch(_op("rot90"), (self,), {"k": int(k) % 4, "dims": (d0, d1)})

    def fliplr(self):
        if self.ndim < 2:
            raise RuntimeError("Input must be >= 2-d.")
        return self.flip(1)

    def flipud(self):
        if self.ndim < 1:
            raise RuntimeError("Input must be >= 1-d.")
        return self.flip(0)

    def unflatten(self, dim, sizes):
        """Dim ``dim`` viewed as ``sizes`` (one of them may be -1)."""
        d = _dim(dim, self.ndim)
        sizes = [int(s) for s in sizes]
        if not sizes:
            raise RuntimeError("unflatten: sizes must be non-empty")
        shape = list(self.shape[:d]) + sizes + list(self.shape[d + 1 :])
        if -1 not in sizes and int(np.prod(sizes)) != self.shape[d]:
            raise RuntimeError(
                f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {dim} "
                f"({self.shape[d]}) in the input tensor"
            )
        return self.view(shape)

    def ravel(self):
        """The elements as a 1-d view (of a contiguous copy where they are not in order)."""
        return self.contiguous().view(-1)

    def adjoint(self):
        """The last two dims swapped (the conjugate is the tensor itself: dtypes are real)."""
        if self.ndim < 2:
            raise RuntimeError(
                "tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                f"{self.ndim}-D tensor."
            )
        return self.transpose(-2, -1)

    def take_along_dim(self, indices, dim=None):
        """The values at ``indices`` along ``dim`` (``gather``, with the two broadcast to each
        other elsewhere), or of the flattened tensor."""
        indices = _expect_tensor(indices, "take_along_dim", "indices", 1)
        if indices._data.dtype.kind not in "iu":
            raise RuntimeError(
                f"torch.take_along_dim(): dtype of indices should be int64 but got "
                f"{indices.dtype._legacy[:-6]} instead"
            )
        if dim is None:
            return self.reshape(-1).gather(0, indices.reshape(-1))
        d = _dim(dim, self.ndim)
        if self.ndim != indices.ndim:
            raise RuntimeError(
                "torch.take_along_dim(): input and indices should have the same number of "
                f"dimensions, but got {self.ndim} dimensions for input, and {indices.ndim} "
                "dimensions for indices"
            )
        self_shape, index_shape = list(self.shape), list(indices.shape)
        self_shape[d], index_shape[d] = 1, 1
        shape = list(np.broadcast_shapes(tuple(self_shape), tuple(index_shape)))
        self_size, index_size = list(shape), list(shape)
        self_size[d], index_size[d] = self.shape[d], indices.shape[d]
        source = self if list(self.shape) == self_size else self.expand(self_size)
        index = indices if list(indices.shape) == index_size else indices.expand(index_size)
        return source.gather(d, index)

    def tensor_split(self, indices_or_sections, dim=0):
        """Slices along ``dim``: ``n`` nearly equal ones (the first ``size % n`` one longer),
        or cut at the given indices (``SliceBackward0`` each)."""
        if self.ndim == 0:
            raise RuntimeError(
                "tensor_split expected at least a 1-dimensional tensor, but got a tensor with "
                "0 dims"
            )
        d = _dim(dim, self.ndim)
        n = self.shape[d]
        if isinstance(indices_or_sections, Tensor):
            if indices_or_sections.ndim == 0:
                indices_or_sections = int(indices_or_sections.item())
            else:
                indices_or_sections = indices_or_sections.tolist()
        if isinstance(indices_or_sections, (int, np.integer)):
            sections = int(indices_or_sections)
            if sections <= 0:
                raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
            size, extra = divmod(n, sections)
            bounds, start = [], 0
            for i in range(sections):
                stop = start + size + (1 if i < extra else 0)
                bounds.append((start, stop))
                start = stop
        else:
            cuts = [int(i) for i in indices_or_sections]
            edges = [0] + cuts + [n]
            bounds = list(zip(edges[:-1], edges[1:]))
        return tuple(self._slice_of(d, start, stop) for start, stop in bounds)

    def _slice_of(self, dim, start, stop):
        """``self[..., start:stop]`` along ``dim`` (indices clamped to the size, as Python's)."""
        n = self.shape[dim]
        start = min(max(start + n if start < 0 else start, 0), n)
        stop = min(max(stop + n if stop < 0 else stop, start), n)
        return self.narrow(dim, start, stop - start)

    def hsplit(self, indices_or_sections):
        if self.ndim < 1:
            raise RuntimeError(
                "torch.hsplit requires a tensor with at least 1 dimension, but got a tensor "
                f"with {self.ndim} dimensions!"
            )
        return self._split_for("hsplit", 1 if self.ndim > 1 else 0, indices_or_sections)

    def vsplit(self, indices_or_sections):
        if self.ndim < 2:
            raise RuntimeError(
                "torch.vsplit requires a tensor with at least 2 dimension, but got a tensor "
                f"with {self.ndim} dimensions!"
            )
        return self._split_for("vsplit", 0, indices_or_sections)

    def dsplit(self, indices_or_sections):
        if self.ndim < 3:
            raise RuntimeError(
                "torch.dsplit requires a tensor with at least 3 dimension, but got a tensor "
                f"with {self.ndim} dimensions!"
            )
        return self._split_for("dsplit", 2, indices_or_sections)

    def _split_for(self, name, dim, indices_or_sections):
        if isinstance(indices_or_sections, (int, np.integer)):
            n = self.shape[dim]
            if indices_or_sections <= 0 or n % indices_or_sections:
                raise RuntimeError(
                    f"torch.{name} attempted to split along dimension {dim}, but the size of "
                    f"the dimension {n} is not divisible by the split_size "
                    f"{indices_or_sections}!"
                )
        return self.tensor_split(indices_or_sections, dim)

    def unsafe_split(self, split_size, dim=0):
        """``split`` whose pieces are not views (``UnsafeSplitBackward0``)."""
        pieces = self.split(split_size, dim)  # (its checks and sizes)
        sizes = tuple(p.shape[_dim(dim, self.ndim)] for p in pieces)
        attrs = {"sizes": sizes, "dim": _dim(dim, self.ndim)}
        return _dispatch(_op("unsafe_split"), (self,), attrs)

    def unsafe_chunk(self, chunks, dim=0):
        if chunks <= 0:
            raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
        n = self.shape[_dim(dim, self.ndim)]
        return self.unsafe_split(max(-(-n // chunks), 1), dim)

    def unsafe_split_with_sizes(self, split_sizes, dim=0):
        """``split_with_sizes`` whose pieces are not views."""
        self.split(list(split_sizes), dim)  # (its checks)
        attrs = {"sizes": tuple(int(s) for s in split_sizes), "dim": _dim(dim, self.ndim)}
        return _dispatch(_op("unsafe_split_with_sizes"), (self,), attrs)

    def diagflat(self, offset=0):
        """The flattened tensor on the ``offset``-th diagonal of a square matrix
        (``DiagEmbedBackward0``)."""
        return _dispatch(_op("diag_embed"), (self.contiguous().view(-1),), {"offset": int(offset)})

    def unfold(self, dimension, size, step):
        """A view of the windows of ``size`` elements every ``step`` along ``dimension``, the
        window as a new last dim (``UnfoldBackward0``)."""
        d = _dim(dimension, self.ndim)
        n = self.shape[d] if self.ndim else 1
        if size > n:
            raise RuntimeError(
                f"maximum size for tensor at dimension {d} is {n} but size is {size}"
            )
        if size < 0:
            raise RuntimeError(f"size is {size} but must be >= 0")
        if step <= 0:
            raise RuntimeError(f"step is {step} but must be > 0")
        attrs = {"dim": d, "size": int(size), "step": int(step)}
        return _dispatch(_op("unfold"), (self,), attrs)

    # -- indexing -----------------------------------------------------------------------------
    def index_copy(self, dim, index, source):
        """A copy of self with the slices of ``source`` at ``index`` along ``dim``."""
        d, index, source = _index_args(self, "index_copy", dim, index, source)
        return _dispatch(_op("index_copy"), (self, index, source), {"dim": d})

    def index_copy_(self, dim, index, source):
        d, index, source = _index_args(self, "index_copy_", dim, index, source)
        return self._inplace(_op("index_copy"), (index, source), {"dim": d})

    def index_fill(self, dim, index, value):
        """A copy of self with ``value`` at ``index`` along ``dim``."""
        d, index, _ = _index_args(self, "index_fill", dim, index, None)
        return _dispatch(_op("index_fill"), (self, index), {"dim": d, "value": _scalar(value)})

    def index_fill_(self, dim, index, value):
        d, index, _ = _index_args(self, "index_fill_", dim, index, None)
        return self._inplace(_op("index_fill"), (index,), {"dim": d, "value": _scalar(value)})

    def index_put(self, indices, values, accumulate=False):
        """A copy of self with ``values`` at the advanced index ``indices`` (a tuple of
        tensors), added to what is there with ``accumulate`` (``IndexPutBackward0``)."""
        key, values = _index_put_args(self, indices, values)
        name = "index_put_accumulate" if accumulate else "index_put"
        return _dispatch(_op(name), (self, values), {"indices": key})

    def index_put_(self, indices, values, accumulate=False):
        key, values = _index_put_args(self, indices, values)
        name = "index_put_accumulate" if accumulate else "index_put"
        return self._inplace(_op(name), (values,), {"indices": key})

    def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
        """``src`` reduced into a copy of self at ``index`` along ``dim`` with ``reduce``
        (``"sum"``, ``"prod"``, ``"mean"``, ``"amax"``, ``"amin"``)."""
        d, index, src, attrs = _scatter_reduce_args(self, dim, index, src, reduce, include_self)
        return _dispatch(_op("scatter_reduce"), (self, index, src), attrs)

    def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
        d, index, src, attrs = _scatter_reduce_args(self, dim, index, src, reduce, include_self)
        return self._inplace(_op("scatter_reduce"), (index, src), attrs)

    def index_reduce(self, dim, index, source, reduce, *, include_self=True):
        """``source``'s slices along ``dim`` reduced (``"prod"``, ``"mean"``, ``"amax"``,
        ``"amin"``) into a copy of self at the positions ``index`` names
        (``IndexReduceBackward0``); ``include_self=False`` leaves out the values there before."""
        index, attrs = _index_reduce_args(self, dim, index, source, reduce, include_self)
        return _dispatch(_op("index_reduce"), (self, index, source), attrs)

    def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
        index, attrs = _index_reduce_args(self, dim, index, source, reduce, include_self)
        return self._inplace(_op("index_reduce"), (index, source), attrs)

    def masked_scatter(self, mask, source):
        """A copy of self with the elements of ``source``, in order, where ``mask`` is True."""
        mask, source = _masked_scatter_args(self, mask, source)
        return _dispatch(_op("masked_scatter"), (self, mask, source))

    def masked_scatter_(self, mask, source):
        mask, source = _masked_scatter_args(self, mask, source)
        return self._inplace(_op("masked_scatter"), (mask, source), {})

    def put(self, index, source, accumulate=False):
        """A copy of self with ``source`` written (or added) at ``index`` of the flattened
        tensor (``PutBackward0``)."""
        index, source = _put_args(self, index, source)
        return _dispatch(_op("put"), (self, index, source), {"accumulate": bool(accumulate)})

    def put_(self, index, source, accumulate=False):
        index, source = _put_args(self, index, source)
        return self._inplace(_op("put"), (index, source), {"accumulate": bool(accumulate)})

    # -- predicates --------------------------------------------------------------------------
    def is_signed(self):
        return self._data.dtype.kind in "if"

    def is_nonzero(self):
        """The truth of a one-element tensor (PyTorch's errors otherwise)."""
        n = self.numel()
        if n == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        if n > 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def is_same_size(self, other):
        return tuple(self.shape) == tuple(other.shape)


# ---- helpers ------------------------------------------------------------------------------
def _broadcast_for_diff(p, x, d):
    """``prepend``/``append`` of ``diff``: a number becomes a slice of ``x``'s shape."""
    if isinstance(p, Tensor):
        if p.ndim == 0:
            shape = list(x.shape)
            shape[d] = 1
            return p.expand(shape)
        return p
    shape = list(x.shape)
    shape[d] = 1
    return tensor(p, dtype=x.dtype, device=x.device).expand(shape)


def _index_args(self, name, dim, index, source):
    index = index if isinstance(index, Tensor) else tensor(index)
    if index._data.dtype.kind not in "iu":
        raise RuntimeError(
            f"{name}(): Expected a long tensor for index, but got {index.dtype._legacy[:-6]}"
        )
    if index.ndim > 1:
        raise IndexError(f"{name}(): Index should have dimension 1 or 0 (got {index.ndim})")
    d = _dim(dim, self.ndim)
    index = index.reshape(-1)
    size = self.shape[d] if self.ndim else 1
    bad = [int(i) for i in index.tolist() if not -size <= i < size]
    if bad:
        raise IndexError(f"index {bad[0]} is out of bounds for dimension {d} with size {size}")
    if source is not None:
        _expect_tensor(source, name, "source", 3)
        if source._data.dtype != self._data.dtype:
            raise RuntimeError(
                f"{name}(): self and source expected to have the same dtype, but got (self) "
                f"{self.dtype._legacy[:-6]} and (source) {source.dtype._legacy[:-6]}"
            )
    return d, index, source


def _index_put_args(self, indices, values):
    if not isinstance(indices, (tuple, list)):
        raise TypeError("index_put(): argument 'indices' must be tuple of Tensors")
    key = tuple(
        i._data if isinstance(i, Tensor) else (i if i is None else np.asarray(i)) for i in indices
    )
    values = _tensor_arg(values, self)
    if values._data.dtype != self._data.dtype:
        raise RuntimeError(
            "Index put requires the source and destination dtypes match, got "
            f"{self.dtype._legacy[:-6]} for the destination and {values.dtype._legacy[:-6]} "
            "for the source."
        )
    return key, values


def _scatter_reduce_args(self, dim, index, src, reduce, include_self):
    if reduce not in _SCATTER_REDUCTIONS:
        raise RuntimeError(
            "reduce argument must be either sum, prod, mean, amax or amin, got " + str(reduce)
        )
    index = index if isinstance(index, Tensor) else tensor(index)
    _expect_tensor(src, "scatter_reduce", "src", 3)
    if src._data.dtype != self._data.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    d = _dim(dim, self.ndim)
    attrs = {"dim": d, "reduce": reduce, "include_self": bool(include_self)}
    return d, index, src, attrs


def _masked_scatter_args(self, mask, source):
    mask = _tensor_arg(mask, self)
    if mask._data.dtype.kind != "b":
        raise RuntimeError(
            "masked_scatter_ only supports boolean masks, but got mask with dtype "
            + mask.dtype._legacy[:-6]
        )
    _expect_tensor(source, "masked_scatter", "source", 2)
    if source._data.dtype != self._data.dtype:
        raise RuntimeError(
            "masked_scatter: expected self and source to have same dtypes but got "
            f"{self.dtype._legacy[:-6]} and {source.dtype._legacy[:-6]}"
        )
    return mask, source


def _put_args(self, index, source):
    index = index if isinstance(index, Tensor) else tensor(index)
    if index._data.dtype.kind not in "iu":
        raise RuntimeError(
            "put_(): Expected a long tensor for index, but got " + index.dtype._legacy[:-6]
        )
    _expect_tensor(source, "put", "source", 2)
    if source._data.dtype != self._data.dtype:
        raise RuntimeError(
            "put_(): self and source expected to have the same dtype, but got "
            f"self.dtype = {self.dtype._legacy[:-6]} and source.dtype = "
            f"{source.dtype._legacy[:-6]}"
        )
    if index.numel() != source.numel():
        raise RuntimeError(
            f"put_(): Expected source and index to have the same number of elements, but got "
            f"source.numel() = {source.numel()}, index.numel() = {index.numel()}"
        )
    return index, source


def _index_reduce_args(self, dim, index, source, reduce, include_self):
    """``index_reduce``'s checks, as PyTorch's: the index tensor and the attributes."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(
            "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
            f"{reduce}."
        )
    index = index if isinstance(index, Tensor) else tensor(index)
    d = _dim(dim, self.ndim)
    if index.ndim > 1:
        raise IndexError(
            "index_reduce_(): Index is supposed to be a vector, but got dim: "
            f"{index.ndim} with type: {index.dtype._legacy[:-6]} and size: {list(index.shape)}"
        )
    if index.numel() != (source.shape[d] if source.ndim else 1):
        raise RuntimeError(
            f"index_reduce_(): Number of indices ({index.numel()}) should be equal to "
            f"source.size(dim): ({source.shape[d]}), for dim: {d}"
        )
    positions = np.asarray(index.cpu()) if index.numel() else np.zeros(0, np.int64)
    if ((positions < 0) | (positions >= self.shape[d])).any():  # (no negative indices)
        raise IndexError("index out of range in self")
    return index, {"dim": d, "reduce": reduce, "include_self": bool(include_self)}
