"""Tensor methods that reshape, view and index: ``view``, ``reshape``, ``permute``, ``expand``,
``__getitem__``, ``gather``... :class:`nbgrad.Tensor` inherits them.
"""

from __future__ import annotations

import math

import numpy as np

from nbgrad import backend, dtypes
from nbgrad._tensor.conversion import _arg, _tensor_arg, _wrap, tensor
from nbgrad._tensor.dispatch import (
    OPS,
    _dim,
    _dispatch,
    _expect_tensor,
    _op,
    _shape_arg,
    _unary,
)
from nbgrad._tensor.memory_formats import _storage_of
from nbgrad._tensor.storage import TypedStorage, UntypedStorage, _warn_typed_storage_removal
from nbgrad.backend import CPU

Tensor = None  # the Tensor class: see NOTE [The Tensor class, bound late]


class ShapeMethods:
    """Mixed into :class:`nbgrad.Tensor`."""

    __slots__ = ()

    # -- shape ops and views ----------------------------------------------------------------
    def view(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], dtypes.dtype):
            raise NotImplementedError("view(dtype) is not supported by nbgrad")
        return _unary(OPS["view"], self, {"shape": self._infer_shape(_shape_arg(shape))})

    def view_as(self, other):
        return self.view(other.shape)

    def reshape(self, *shape):
        shape = self._infer_shape(_shape_arg(shape))
        # as PyTorch's reshape: view if contiguous, _reshape_alias if viewable, else
        # _unsafe_view(clone()) (ViewBackward0 / ReshapeAliasBackward0 / UnsafeViewBackward0)
        if self._data.flags.c_contiguous:
            return _unary(OPS["view"], self, {"shape": shape})
        try:
            np.reshape(self._data, shape, copy=False)
        except ValueError:
            clone = self._clone("contiguous")  # as ATen's _reshape_copy
            return _dispatch(_op("unsafe_view"), (clone,), {"shape": shape})
        return _dispatch(_op("reshape_alias"), (self,), {"shape": shape})

    def reshape_as(self, other):
        return self.reshape(other.shape)

    def _infer_shape(self, shape):
        n = self._data.size
        if shape.count(-1) > 1:
            raise RuntimeError("only one dimension can be inferred")
        if -1 in shape:
            known = math.prod(s for s in shape if s != -1)
            if known == 0 or n % known:
                raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {n}")
            shape = tuple(n // known if s == -1 else s for s in shape)
        if math.prod(shape) != n:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {n}")
        return shape

    def t(self):
        if self.ndim > 2:
            raise RuntimeError(
                f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D"
            )
        return _unary(OPS["t"], self)

    def transpose(self, dim0, dim1):
        n = self.ndim
        return _unary(OPS["transpose"], self, {"dim0": _dim(dim0, n), "dim1": _dim(dim1, n)})

    def swapaxes(self, axis0, axis1):
        return self.transpose(axis0, axis1)

    def permute(self, *dims):
        dims = _shape_arg(dims)
        n = self.ndim
        if len(dims) != n:
            raise RuntimeError(
                f"permute(sparse_coo): number of dimensions in the tensor input does not match "
                f"the length of the desired ordering of dimensions i.e. input.dim() = {n} is not "
                f"equal to len(dims) = {len(dims)}"
            )
        dims = tuple(_dim(d, n) for d in dims)
        if len(set(dims)) != n:
            raise RuntimeError("permute(): duplicate dims are not allowed.")
        return _unary(OPS["permute"], self, {"dims": dims})

    def expand(self, *sizes):
        sizes = _shape_arg(sizes)
        if len(sizes) < self.ndim:
            raise RuntimeError(
                f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to "
                f"the number of dimensions in the tensor ({self.ndim})"
            )
        lead = len(sizes) - self.ndim
        final = []
        for i, s in enumerate(sizes):
            if i >= lead:
                cur = self._data.shape[i - lead]
                if s == -1:
                    s = cur
                elif cur != 1 and cur != s:
                    raise RuntimeError(
                        f"The expanded size of the tensor ({s}) must match the existing size "
                        f"({cur}) at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  "
                        f"Tensor sizes: {list(self.shape)}"
                    )
            elif s == -1:
                raise RuntimeError(
                    "The expanded size of the tensor (-1) isn't allowed in a leading, "
                    "non-existing dimension 0"
                )
            final.append(s)
        return _unary(OPS["expand"], self, {"size": tuple(final)})

    def expand_as(self, other):
        return self.expand(other.shape)

    def broadcast_to(self, shape):
        return self.expand(shape)

    def swapdims(self, dim0, dim1):
        return self.transpose(dim0, dim1)

    def movedim(self, source, destination):
        """Dims ``source`` moved to ``destination`` (a permute), the others keeping order."""
        src = [source] if isinstance(source, int) else list(source)
        dst = [destination] if isinstance(destination, int) else list(destination)
        if len(src) != len(dst):
            raise RuntimeError(
                "movedim: Invalid source or destination dims: source "
                f"({src} dims) should contain the same number of dims as destination ({dst} dims)"
            )
        n = self.ndim
        src = [_dim(d, n) for d in src]
        dst = [_dim(d, n) for d in dst]
        for name, dims in (("source", src), ("destination", dst)):
            if len(set(dims)) != len(dims):
                raise RuntimeError(f"movedim: repeated dim in `{name}` ({dims})")
        order = [None] * n
        for s, d in zip(src, dst):
            order[d] = s
        rest = iter(d for d in range(n) if d not in src)
        order = [next(rest) if o is None else o for o in order]
        return self.permute(order) if n else self.view(())

    moveaxis = movedim

    def tile(self, *dims):
        """``repeat`` with ``dims`` padded with leading 1s to the tensor's rank."""
        dims = _shape_arg(dims)
        return self.repeat(*((1,) * (self.ndim - len(dims)) + tuple(dims)))

    def repeat_interleave(self, repeats=None, dim=None, *, output_size=None):
        """Each element repeated ``repeats`` times along ``dim`` (of the flattened tensor when
        None): a number of repeats is an expand of a new dim, a tensor of them an
        ``index_select``, as PyTorch's."""
        if repeats is None:  # ``repeat_interleave(counts)``: the indices, each count times
            return _repeat_index(self)
        x = self.reshape(-1) if dim is None else self
        d = 0 if dim is None else _dim(dim, self.ndim)
        if isinstance(repeats, Tensor) and repeats.ndim == 1 and repeats.numel() != 1:
            if repeats.numel() != x.shape[d]:
                raise RuntimeError(
                    "repeats must have the same size as input along dim, but got "
                    f"repeats.size(0) = {repeats.numel()} and input.size({d}) = {x.shape[d]}"
                )
            return x.index_select(d, _repeat_index(repeats))
        r = int(repeats.item() if isinstance(repeats, Tensor) else repeats)
        if r < 0:
            raise RuntimeError("Repeats must be non-negative")
        if x.ndim == 0:
            x = x.reshape(1)
        shape = list(x.shape)
        expanded = shape[: d + 1] + [r] + shape[d + 1 :]
        out = x.unsqueeze(d + 1).expand(expanded).clone()
        shape[d] *= r
        return out.view(shape)

    def take(self, index):
        """The elements at ``index`` of the flattened tensor (``TakeBackward0``)."""
        index = _index_tensor(index, "take")
        n = self.numel()
        bad = _out_of_range(index, n) if index.numel() else None
        if bad is not None and not -n <= bad < n:
            raise IndexError(
                f"out of range: tried to access index {bad} on a tensor of {n} elements."
            )
        if bad is not None:  # negative indices count from the end
            index = index.remainder(n)
        return _dispatch(_op("take"), (self, index))

    def masked_select(self, mask):
        """The elements where ``mask`` (broadcast with self) is True, as a 1-d tensor."""
        mask = _tensor_arg(mask, self)
        if mask._data.dtype.kind != "b":
            raise RuntimeError("masked_select: expected BoolTensor for mask")
        try:
            np.broadcast_shapes(self.shape, mask.shape)
        except ValueError:
            raise RuntimeError(
                f"The size of tensor a ({list(mask.shape)}) must match the size of tensor b "
                f"({list(self.shape)}) at non-singleton dimension"
            ) from None
        return _dispatch(_op("masked_select"), (self, mask))

    def scatter(self, dim, index, src=None, *, value=None, reduce=None):
        """A copy of self with ``src`` (a tensor, or a number) written at ``index`` along
        ``dim`` (``ScatterBackward0``; a number: ``ScatterBackward1``)."""
        if reduce is not None:
            raise NotImplementedError("scatter(reduce=...) is not supported by nbgrad")
        if src is None:
            src = value
        index = _index_tensor(index, "scatter")
        d = _dim(dim, self.ndim)
        if isinstance(src, Tensor):
            if src._data.dtype != self._data.dtype:
                raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
            _check_gather_index("scatter", self, d, index, src)
            return _dispatch(_op("scatter"), (self, index, src), {"dim": d})
        _check_gather_index("scatter", self, d, index, None)
        return _dispatch(_op("scatter_value"), (self, index), {"dim": d, "value": src})

    def squeeze(self, dim=None):
        if dim is None:
            return _unary(OPS["squeeze"], self)
        if isinstance(dim, (tuple, list)):
            dims = tuple(_dim(d, self.ndim) for d in dim)
            return _dispatch(_op("squeeze_dims"), (self,), {"dims": dims})
        return _unary(OPS["squeeze_dim"], self, {"dim": _dim(dim, self.ndim)})

    def unsqueeze(self, dim):
        return _unary(OPS["unsqueeze"], self, {"dim": _dim(dim, self.ndim + 1)})

    def flatten(self, start_dim=0, end_dim=-1):
        if self.ndim == 0:
            return self.reshape(1)
        s, e = _dim(start_dim, self.ndim), _dim(end_dim, self.ndim)
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        if s == e:
            return self
        shape = self.shape
        return self.reshape(shape[:s] + (math.prod(shape[s : e + 1]),) + shape[e + 1 :])

    def select(self, dim, index):
        d = _dim(dim, self.ndim)
        size = self._data.shape[d]
        if not -size <= index < size:
            raise IndexError(
                f"select(): index {index} out of range for tensor of size {list(self.shape)} at "
                f"dimension {d}"
            )
        return _unary(OPS["select"], self, {"dim": d, "index": int(index) % size})

    def narrow(self, dim, start, length):
        if not self.ndim:
            raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
        d = _dim(dim, self.ndim)
        size = self._data.shape[d]
        if not -size <= start <= size:
            raise IndexError(
                f"start out of range (expected to be in range of [{-size}, {size}], but got "
                f"{start})"
            )
        start = start + size if start < 0 else start
        if length < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        if start + length > size:
            raise RuntimeError(
                f"start ({start}) + length ({length}) exceeds dimension size ({size})."
            )
        return _dispatch(
            _op("slice"), (self,), {"dim": d, "start": start, "end": start + length, "step": 1}
        )

    def as_strided(self, size, stride, storage_offset=None):
        """A view of this tensor's memory (its storage) with the given sizes and strides, from
        ``storage_offset`` (this tensor's own by default), as PyTorch's."""
        return _dispatch(
            OPS["as_strided"], (self,), self._as_strided_attrs(size, stride, storage_offset)
        )

    def _as_strided_attrs(self, size, stride, storage_offset):
        """``as_strided``'s checked arguments, with this tensor's geometry (for the gradient)."""
        size, stride = tuple(_shape_arg((size,))), tuple(_shape_arg((stride,)))
        if len(size) != len(stride):
            raise RuntimeError("mismatch in length of strides and shape")
        if any(s < 0 for s in stride):
            raise RuntimeError(
                "as_strided: Negative strides are not supported at the moment, "
                f"got strides: {list(stride)}"
            )
        flat, offset = _storage_of(self._data)
        geometry = (tuple(self.shape), self.stride(), offset, flat.size)
        attrs = {"size": size, "stride": stride, "geometry": geometry}
        attrs["storage_offset"] = offset if storage_offset is None else storage_offset
        return attrs

    def untyped_storage(self):
        """The bytes of this tensor's storage, shared with its views (no copy)."""
        return UntypedStorage(_storage_of(self._data)[0], self._device)

    def storage(self):
        """The elements of this tensor's storage (deprecated, as PyTorch's TypedStorage)."""
        _warn_typed_storage_removal()
        return TypedStorage(_storage_of(self._data)[0], self._device)

    def storage_offset(self):
        """This tensor's first element's place in its storage, in elements."""
        return _storage_of(self._data)[1]

    def diagonal(self, offset=0, dim1=0, dim2=1):
        """The diagonal of dims ``dim1`` and ``dim2`` as the last dim of a view.

        Example:
            >>> import nbgrad as ng
            >>> ng.arange(6.0).view(2, 3).diagonal(1)
            tensor([1., 5.])
        """
        n = self.ndim
        d1, d2 = _dim(dim1, n), _dim(dim2, n)
        if d1 == d2:
            raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        return _dispatch(_op("diagonal"), (self,), {"offset": int(offset), "dim1": d1, "dim2": d2})

    def repeat(self, *repeats):
        """Tile the tensor ``repeats[i]`` times along dim ``i`` (leading dims added as needed).

        Example:
            >>> import nbgrad as ng
            >>> ng.tensor([1, 2]).repeat(2, 2)
            tensor([[1, 2, 1, 2],
                    [1, 2, 1, 2]])
        """
        if not repeats:
            raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
        repeats = _shape_arg(repeats)
        if len(repeats) < self.ndim:
            raise RuntimeError(
                "Number of dimensions of repeat dims can not be smaller than number of "
                "dimensions of tensor"
            )
        shape = (1,) * (len(repeats) - self.ndim) + tuple(self.shape)
        if any(r < 0 for r in repeats):
            sizes = [r * s for r, s in zip(repeats, shape)]
            bad = next(s for s in sizes if s < 0)
            raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {sizes}")
        return _dispatch(_op("repeat"), (self,), {"repeats": tuple(int(r) for r in repeats)})

    def unbind(self, dim=0):
        if not self.ndim:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        return _dispatch(_op("unbind"), (self,), {"dim": _dim(dim, self.ndim)})

    def split_with_sizes(self, split_sizes, dim=0):
        """``split`` into pieces of the given sizes (``SplitWithSizesBackward0``)."""
        return self.split(list(split_sizes), dim)

    def split(self, split_size_or_sections, dim=0):
        d = _dim(dim, self.ndim)
        n = self._data.shape[d]
        if isinstance(split_size_or_sections, (list, tuple)):
            sizes = tuple(int(s) for s in split_size_or_sections)
            if sum(sizes) != n:
                raise RuntimeError(
                    f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's "
                    f"size at dimension {d}), but got split_sizes={list(sizes)}"
                )
            return _dispatch(_op("split_with_sizes"), (self,), {"sizes": sizes, "dim": d})
        if not isinstance(split_size_or_sections, (int, np.integer)):
            raise TypeError(
                "split(): argument 'split_size' must be an int or a list of ints, not "
                f"{type(split_size_or_sections).__name__}"
            )
        step = int(split_size_or_sections)
        if step <= 0:
            raise RuntimeError(
                f"split expects split_size be non-negative, but got split_size={step}"
            )
        sizes = tuple(min(step, n - i) for i in range(0, n, step)) or (0,)
        return _dispatch(_op("split"), (self,), {"sizes": sizes, "dim": d})

    def chunk(self, chunks, dim=0):
        if chunks <= 0:
            raise RuntimeError("chunk expects `chunks` to be greater than 0")
        n = self.shape[_dim(dim, self.ndim)]
        return self.split(max(-(-n // chunks), 1), dim)

    def gather(self, dim, index):
        index = _index_tensor(index, "gather")
        d = _dim(dim, self.ndim)
        _check_gather_index("gather", self, d, index, None)
        return _dispatch(_op("gather"), (self, index), {"dim": d})

    def scatter_add(self, dim, index, src):
        index = _index_tensor(index, "scatter_add")
        src = _expect_tensor(src, "scatter_add", "src", 3)
        d = _dim(dim, self.ndim)
        _check_gather_index("scatter_add", self, d, index, src)
        return _dispatch(_op("scatter_add"), (self, index, src), {"dim": d})

    def index_select(self, dim, index):
        index = _index_tensor(index, "index_select")
        if index.ndim > 1:
            raise IndexError("index_select(): Index is supposed to be a vector")
        d = _dim(dim, self.ndim)
        index = index.reshape(-1)
        bad = _out_of_range(index, self._data.shape[d] if self.ndim else 1)
        if bad is not None:
            if bad < 0:
                raise IndexError("index out of range in self")
            raise RuntimeError(
                f"index_select(): index {bad} is out of bounds for dimension {d} with size "
                f"{self._data.shape[d]}"
            )
        return _dispatch(_op("index_select"), (self, index), {"dim": d})

    def index_add(self, dim, index, source):
        index = _index_tensor(index, "index_add")
        if index.ndim > 1:
            raise IndexError(
                f"index_add(): Index is supposed to be a vector, got shape {list(index.shape)}"
            )
        source = _expect_tensor(source, "index_add", "source", 3)
        d = _dim(dim, self.ndim)
        if self.ndim and source.ndim:
            expected = list(self.shape)
            expected[d] = index.numel()
            if list(source.shape) != expected:
                raise RuntimeError(
                    "source tensor shape must match self tensor shape, excluding the specified "
                    f"dimension, and have one slice per index. Got self.shape = "
                    f"{list(self.shape)} source.shape = {list(source.shape)}, "
                    f"{index.numel()} indices"
                )
        size = self._data.shape[d] if self.ndim else 1
        bad = _out_of_range(index, size)
        if bad is not None:
            raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {size}")
        return _dispatch(_op("index_add"), (self, index, source), {"dim": d})

    def _index_backward(self, shape, indices, accumulate):
        return _dispatch(
            _op("index_backward"),
            (self,),
            {"shape": tuple(shape), "indices": indices, "accumulate": accumulate},
        )

    def _index_put(self, indices, values):
        return _dispatch(_op("index_put"), (self, _arg(values)), {"indices": indices})

    def __getitem__(self, key):
        """Basic indexing makes views (``SelectBackward0``, ``SliceBackward0``, ...); advanced
        indexing makes a copy (``IndexBackward0``), as in PyTorch."""
        if type(key) is int and self._data.ndim:  # ``x[i]``, the commonest: one select
            return _select_key(self, 0, key, 0)
        if type(key) is tuple and len(key) <= self._data.ndim:
            for k in key:
                if type(k) is not int and type(k) is not slice:
                    break
            else:  # ints and slices only (``m[:, 1:3]``, ``m[i, j]``): views, one per key
                t, dim = self, 0
                for position, k in enumerate(key):
                    if type(k) is int:
                        t = _select_key(t, dim, k, position)
                    else:
                        t = _slice_key(t, dim, k)
                        dim += 1
                return t if t is not self else _unary(OPS["alias"], t)
        if not self._data.ndim and not isinstance(key, tuple):
            _check_0d_index(key)  # (one int or slice: PyTorch's own messages for a 0-d tensor)
        lone_slice = isinstance(key, slice)
        key = _scalar_tensor_indices(key if isinstance(key, tuple) else (key,))
        t = self
        dim = 0
        advanced = []
        has_advanced = False
        n_specified = sum(
            1 for k in key if k is not None and k is not Ellipsis and not _is_bool_mask(k)
        )
        n_specified += sum(_bool_ndim(k) for k in key if _is_bool_mask(k))
        if n_specified > self.ndim:
            raise IndexError(f"too many indices for tensor of dimension {self.ndim}")
        for position, k in enumerate(key):
            if k is Ellipsis:
                skip = self.ndim - n_specified
                dim += skip
                advanced.extend([slice(None)] * skip)
                n_specified += skip  # only one Ellipsis
            elif k is None:
                t = t.unsqueeze(dim)
                advanced.append(slice(None))
                dim += 1
            elif isinstance(k, (int, np.integer)) and not isinstance(k, bool):
                t = _select_key(t, dim, int(k), position)
            elif isinstance(k, slice):
                t = _slice_key(t, dim, k)
                advanced.append(slice(None))
                dim += 1
            else:
                idx = _index_array(k, self._device)
                advanced.append(idx)
                has_advanced = True
                dim += idx.ndim if idx.dtype.kind == "b" else 1
        if has_advanced:
            try:
                t = _dispatch(_op("index"), (t,), {"indices": tuple(advanced)})
            except (IndexError, RuntimeError) as e:
                raise IndexError(str(e)) from None
        elif t is self:  # a key that keeps everything: a view all the same, as PyTorch's
            if lone_slice:  # (``x[:]``, a slice; ``x[...]``, ``m[:, :]``, an alias)
                t = _unary(OPS["slice"], t, {"dim": 0, "start": 0, "end": len(t), "step": 1})
            else:
                t = _unary(OPS["alias"], t)
        return t

    def __setitem__(self, key, value):
        """``t[key] = value``: ``CopySlices`` for basic keys, ``IndexPutBackward0`` otherwise."""
        keys = key = _scalar_tensor_indices(key if isinstance(key, tuple) else (key,))
        if isinstance(value, Tensor) and value.ndim and value.shape[0] == 1:
            # as PyTorch (slicePrefix1sSize): leading 1s of the value's shape are dropped, so
            # that ``t[1] = ng.tensor([2.0])`` works
            shape = value.shape
            while shape and shape[0] == 1:
                shape = shape[1:]
            value = value.reshape(shape)
        if all(k is Ellipsis or (isinstance(k, slice) and k == slice(None)) for k in keys):
            self.copy_(_tensor_arg(value, self))  # ``t[...] = v`` / ``t[:] = v``: CopyBackwards
            return
        if all(k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice)) for k in keys):
            view = self[key]
            view._view_copy_(_tensor_arg(value, self))
            return
        indices = tuple(
            _index_array(k, self._device)
            if not (k is None or k is Ellipsis or isinstance(k, (int, slice)))
            else k
            for k in keys
        )
        self._inplace(_op("index_put"), (_arg(value),), {"indices": indices})

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


def _scalar_tensor_indices(keys):
    """A 0-d integer tensor in an index acts as a Python int, as in PyTorch: ``x[t]`` is a
    view (``SelectBackward0``), not advanced indexing."""
    return tuple(
        int(k._data)
        if type(k) is Tensor and k._data.ndim == 0 and k._data.dtype.kind in "iu"
        else k
        for k in keys
    )


def _select_key(t, dim, k, position):
    """``t`` indexed by the int ``k`` at ``dim``, the ``position``-th entry of a key."""
    size = t._data.shape[dim]
    if not -size <= k < size:  # (PyTorch names the index's place in the key)
        raise IndexError(f"index {k} is out of bounds for dimension {position} with size {size}")
    return _unary(OPS["select"], t, {"dim": dim, "index": k % size})


def _slice_key(t, dim, k):
    """``t`` indexed by the slice ``k`` at ``dim`` (``t`` itself for a slice of everything)."""
    size = t._data.shape[dim]
    start, stop, step = k.indices(size)
    if k.step is not None and k.step <= 0:
        raise ValueError("step must be greater than zero")
    if (start, stop, step) == (0, size, 1):
        return t
    return _unary(
        OPS["slice"], t, {"dim": dim, "start": start, "end": max(stop, start), "step": step}
    )


def _check_0d_index(key):
    """Raise PyTorch's IndexError for an int or a slice used alone on a 0-d tensor."""
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        if key == 0:
            raise IndexError(
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
            )
        raise IndexError(f"index {key} is out of bounds for dimension 0 with size 0")
    if isinstance(key, slice):
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")


def _is_bool_mask(k):
    if type(k) is bool:  # a Python bool: a 0-d mask (a new dim of size 1 or 0), as PyTorch's
        return True
    if isinstance(k, Tensor):
        return k._data.dtype.kind == "b"
    if isinstance(k, np.ndarray):
        return k.dtype.kind == "b"
    return isinstance(k, list) and len(k) > 0 and all(isinstance(v, bool) for v in k)


def _bool_ndim(k):
    if type(k) is bool:
        return 0
    return k.ndim if hasattr(k, "ndim") else 1


def _index_array(k, device):
    if isinstance(k, Tensor):
        if k._data.dtype.kind not in "biu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return k._data
    arr = np.asarray(k)
    if arr.dtype.kind not in "biu":
        raise IndexError(
            "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
            f"valid indices (got {type(k).__name__})"
        )
    if device is not CPU:
        arr = backend.transfer(arr, CPU, device)
    return arr


def _out_of_range(index, size):
    """The first index value outside ``[0, size)`` (PyTorch's gather/index checks), or None."""
    if not index._data.size:
        return None
    lo, hi = int(index._data.min()), int(index._data.max())
    return lo if lo < 0 else hi if hi >= size else None


def _check_gather_index(fname, self, dim, index, src):
    """PyTorch's checks of a gather / scatter index: same rank, no larger than ``self`` (and
    ``src``) apart from ``dim``, values in range; each a RuntimeError naming the shapes."""
    if not self.ndim and index.ndim <= 1:
        size = 1
    else:
        if index.ndim != self.ndim:
            what = "input" if src is None else "self"
            raise RuntimeError(
                f"{fname}(): Index tensor must have the same number of dimensions as {what} "
                f"tensor (index {list(index.shape)}, {what} {list(self.shape)})"
            )
        ishape, sshape = index.shape, self.shape
        for k in range(index.ndim):
            too_big = k != dim and ishape[k] > sshape[k]
            if src is None and too_big:
                raise RuntimeError(
                    f"Size does not match at dimension {k} expected index {list(ishape)} to be "
                    f"no larger than self {list(sshape)} apart from dimension {dim}"
                )
            if src is not None and (too_big or src.ndim != index.ndim or ishape[k] > src.shape[k]):
                raise RuntimeError(
                    f"Expected index {list(ishape)} to be no larger than self {list(sshape)} "
                    f"apart from dimension {dim} and to be no larger size than src "
                    f"{list(src.shape)}"
                )
        size = sshape[dim]
    bad = _out_of_range(index, size)
    if bad is not None:
        raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} with size {size}")


def _repeat_index(counts):
    """``repeat_interleave(counts)``: ``i`` repeated ``counts[i]`` times (int64)."""
    if counts.ndim > 1 or counts._data.dtype.kind not in "iu":
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if counts.numel() and int(counts._data.min()) < 0:
        raise RuntimeError("repeats can not be negative")
    xp = backend.get_xp(counts._device)
    data = xp.repeat(xp.arange(counts.numel(), dtype=np.int64), counts._data.reshape(-1))
    return _wrap(data, counts._device)


def _index_tensor(index, fname):
    if not isinstance(index, Tensor):
        index = tensor(index)
    if index._data.dtype.kind not in "iu":
        raise RuntimeError(f"{fname}(): Expected dtype int64 for index, got {index.dtype}")
    return index
