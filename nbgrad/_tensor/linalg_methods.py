"""Linear algebra: the matrix products (``matmul``, ``mm``, ``bmm``, ``mv``, ``dot``), ``addmm``,
``baddbmm``, ``outer``, ``cross``, ``diag``, ``trace``, ``kron``, and the composites of
``torch/functional.py``: ``einsum``, ``tensordot``, ``meshgrid``. :class:`nbgrad.Tensor` inherits
the methods.

As in PyTorch, ``outer``, ``kron``, ``einsum``, ``tensordot`` and ``meshgrid`` have no node of
their own: they are made of views, products and sums, whose nodes their graphs show.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from nbgrad._tensor.conversion import _scalar, _tensor_arg
from nbgrad._tensor.dispatch import OPS, _dim, _dispatch, _expect_tensor, _op

Tensor = None  # the Tensor class: see NOTE [The Tensor class, bound late]


class LinalgMethods:
    """Mixed into :class:`nbgrad.Tensor`."""

    __slots__ = ()

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

    def addmm(self, mat1, mat2, *, beta=1, alpha=1):
        """``beta * self + alpha * (mat1 @ mat2)`` (``AddmmBackward0``)."""
        _expect_tensor(mat1, "addmm", "mat1", 1)
        _expect_tensor(mat2, "addmm", "mat2", 2)
        for name, m in (("mat1", mat1), ("mat2", mat2)):
            if m.ndim != 2:
                raise RuntimeError(f"{name} must be a matrix, got {m.ndim}-D tensor")
        return _dispatch(OPS["addmm"], (self, mat1, mat2), {"beta": beta, "alpha": alpha})

    def baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
        """``beta * self + alpha * (batch1 @ batch2)`` over a batch (``BaddbmmBackward0``)."""
        _expect_tensor(batch1, "baddbmm", "batch1", 1)
        _expect_tensor(batch2, "baddbmm", "batch2", 2)
        for name, m in (("batch1", batch1), ("batch2", batch2)):
            _dim(2, m.ndim)  # (PyTorch's IndexError for fewer dims)
            if m.ndim != 3:
                raise RuntimeError(f"{name} must be a 3D tensor")
        b, n, k = batch1.shape
        if batch2.shape[:2] != (b, k):
            raise RuntimeError(
                f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {k}] but "
                f"got: [{batch2.shape[0]}, {batch2.shape[1]}]."
            )
        return _dispatch(_op("baddbmm"), (self, batch1, batch2), {"beta": beta, "alpha": alpha})

    def outer(self, vec2):
        """The outer product of two vectors: ``self.reshape(-1, 1) * vec2``, as PyTorch's."""
        _expect_tensor(vec2, "outer", "vec2", 1)
        if self.ndim != 1 or vec2.ndim != 1:
            raise RuntimeError(
                f"outer: Expected 1-D argument self, but got {self.ndim}-D"
                if self.ndim != 1
                else f"outer: Expected 1-D argument vec2, but got {vec2.ndim}-D"
            )
        return self.reshape(self.shape[0], 1) * vec2

    ger = outer

    def cross(self, other, dim=None):
        """The cross product along ``dim`` (of size 3), as ``linalg.cross``.

        Without ``dim``, the first dim of size 3, with PyTorch's deprecation warning.
        """
        _expect_tensor(other, "cross", "other", 1)
        if self.ndim != other.ndim:
            raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
        if dim is None:
            warnings.warn(
                "Using torch.cross without specifying the dim arg is deprecated.\n"
                "Please either pass the dim explicitly or simply use torch.linalg.cross.\n"
                "The default value of dim will change to agree with that of linalg.cross in a "
                "future release.",
                UserWarning,
                stacklevel=2,
            )
            shape = self.shape
            dim = next((i for i, s in enumerate(shape) if s == 3), -1)
        d = _dim(dim, self.ndim)
        if self.shape[d] != 3 or other.shape[d] != 3:
            raise RuntimeError(
                f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                f"{self.shape[d]} and {other.shape[d]}"
            )
        return _dispatch(_op("cross"), (self, other), {"dim": d})

    def diag(self, diagonal=0):
        """A vector's square matrix with it on the ``diagonal``-th diagonal
        (``DiagEmbedBackward0``), or a matrix's diagonal as a new vector."""
        if self.ndim == 1:
            return _dispatch(_op("diag_embed"), (self,), {"offset": int(diagonal)})
        if self.ndim != 2:
            raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{self.ndim}D")
        attrs = {"offset": int(diagonal), "dim1": 0, "dim2": 1}
        return _dispatch(_op("diagonal_copy"), (self,), attrs)

    def diag_embed(self, offset=0, dim1=-2, dim2=-1):
        """The last dim as the ``offset`` diagonal of two new last dims."""
        if (dim1, dim2) not in ((-2, -1), (self.ndim - 1, self.ndim)):
            raise NotImplementedError("diag_embed: nbgrad puts the diagonal in the last two dims")
        return _dispatch(_op("diag_embed"), (self,), {"offset": int(offset)})

    def trace(self):
        """The sum of a matrix's main diagonal (``TraceBackward0``)."""
        if self.ndim != 2:
            raise RuntimeError(
                "trace: expected a matrix, but got tensor with dim " + str(self.ndim)
            )
        return _dispatch(_op("trace"), (self,))

    def kron(self, other):
        """The Kronecker product, as PyTorch's: a product of two reshaped operands."""
        _expect_tensor(other, "kron", "other", 1)
        n = max(self.ndim, other.ndim)
        a_shape = (1,) * (n - self.ndim) + tuple(self.shape)
        b_shape = (1,) * (n - other.ndim) + tuple(other.shape)
        a_view, b_view = [], []
        for sa, sb in zip(a_shape, b_shape):
            a_view += [sa, 1]
            b_view += [1, sb]
        out_shape = tuple(sa * sb for sa, sb in zip(a_shape, b_shape))
        a = _dispatch(_op("unsafe_view"), (self,), {"shape": tuple(a_view)})
        b = _dispatch(_op("unsafe_view"), (other,), {"shape": tuple(b_view)})
        return _dispatch(_op("unsafe_view"), (a * b,), {"shape": out_shape})

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


# ---- the composites of torch/functional.py ---------------------------------------------------
def tensordot(a, b, dims=2):
    """Sum the products over ``dims`` of ``a`` and ``b``: a number of trailing dims of ``a``
    and leading dims of ``b``, or two lists of dims. Permutes, reshapes and one ``mm``."""
    _expect_tensor(a, "tensordot", "a", 1)
    _expect_tensor(b, "tensordot", "b", 2)
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a, dims_b = list(range(-dims, 0)), list(range(dims))
    else:
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    for da, db in zip(dims_a, dims_b):  # (named as given, as PyTorch's message)
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {a.shape[da]} in dim "
                f"{da} and second has size {b.shape[db]} in dim {db}"
            )
    dims_a = [_dim(d, a.ndim) for d in dims_a]
    dims_b = [_dim(d, b.ndim) for d in dims_b]
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    size = math.prod(a.shape[d] for d in dims_a)
    left = a.permute(free_a + dims_a).reshape(math.prod(a.shape[d] for d in free_a), size)
    right = b.permute(dims_b + free_b).reshape(size, math.prod(b.shape[d] for d in free_b))
    out_shape = [a.shape[d] for d in free_a] + [b.shape[d] for d in free_b]
    return left.mm(right).reshape(out_shape)


def meshgrid(*tensors, indexing=None):
    """Grids of coordinates from 0-d or 1-d tensors: each a view, expanded (``"ij"``, the
    default, with PyTorch's warning when not given; ``"xy"`` swaps the first two dims)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
            "argument.",
            UserWarning,
            stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(
                f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}"
            )
    # "xy": the first two inputs' dims swap places in every grid
    places = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        places[0], places[1] = 1, 0
    shape = [0] * len(tensors)
    for t, p in zip(tensors, places):
        shape[p] = t.numel()
    grids = []
    for t, p in zip(tensors, places):
        view = [1] * len(tensors)
        view[p] = -1
        grids.append(t.view(view).expand(shape))
    return tuple(grids)


def einsum(*args):
    """Einstein summation, as PyTorch's: each operand's repeated labels become diagonals, the
    operands are aligned to one order of labels (the output's, then the summed ones), then
    multiplied pair by pair, a pair with labels to sum out through one ``bmm``."""
    if len(args) < 2:
        raise TypeError("einsum(): must specify the equation string and at least one operand")
    equation, operands = args[0], args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    for t in operands:
        _expect_tensor(t, "einsum", "operands", 2)
    terms, out = _parse_einsum(equation.replace(" ", ""), operands)
    summed = []
    for c in "".join(terms):
        if c not in out and c not in summed:
            summed.append(c)
    order = list(out) + summed
    aligned = [_align(t, term, order) for t, term in zip(operands, terms)]
    if len(aligned) == 1:
        result = aligned[0]
        if summed:
            return result.sum(tuple(range(len(out), len(order))))
        return result
    result = aligned[0]
    for k in range(1, len(aligned)):
        later = set("".join(terms[k + 1 :]))
        sum_dims = [len(out) + i for i, c in enumerate(summed) if c not in later]
        result = _sumproduct_pair(result, aligned[k], sum_dims)
    if summed:
        result = result.view([result.shape[i] for i in range(len(out))])
    return result


def _parse_einsum(equation, operands):
    """The operands' label strings and the output's, with ``...`` spelt as one private label
    per broadcast dim (aligned from the right, as NumPy and PyTorch)."""
    lhs, arrow, out = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        more = "more" if len(operands) > len(terms) else "fewer"
        raise RuntimeError(
            f"einsum(): {more} operands were provided than specified in the equation"
        )
    ell = max(
        (t.ndim - (len(term) - 3) for term, t in zip(terms, operands) if "..." in term), default=0
    )
    ell_labels = "".join(chr(0x3B1 + i) for i in range(ell))  # α, β, ... (never in an equation)
    spelt = []
    for term, t in zip(terms, operands):
        if "..." in term:
            n = t.ndim - (len(term) - 3)
            term = term.replace("...", ell_labels[ell - n :])
        if len(term) != t.ndim:
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({len(term)}) does not match "
                f"the number of dimensions ({t.ndim}) for operand {len(spelt)}"
                + ("" if "..." in equation else " and no ellipsis was given")
            )
        spelt.append(term)
    if arrow:
        out = out.replace("...", ell_labels)
    else:
        seen = "".join(spelt)
        out = ell_labels + "".join(
            sorted(c for c in set(seen) if seen.count(c) == 1 and c not in ell_labels)
        )
    return spelt, out


def _align(t, term, order):
    """``t`` with one dim per label of ``order``: diagonals for repeated labels, size 1 for
    labels it lacks."""
    term = list(term)
    while len(set(term)) < len(term):
        c = next(c for c in term if term.count(c) > 1)
        i = term.index(c)
        j = term.index(c, i + 1)
        t = t.diagonal(0, i, j)  # the diagonal goes last
        term = [x for k, x in enumerate(term) if k not in (i, j)] + [c]
    for c in order:
        if c not in term:
            t = t.unsqueeze(-1)
            term.append(c)
    return t.permute([term.index(c) for c in order])


def _sumproduct_pair(left, right, sum_dims):
    """``(left * right).sum(sum_dims, keepdim=True)`` through one ``bmm`` (ATen's
    ``sumproduct_pair``): dims in both are the batch, dims in one are its rows or columns."""
    if not sum_dims:
        return left * right
    batch, lonly, ronly, summed = [], [], [], []
    for d in range(left.ndim):
        ls, rs = left.shape[d] != 1, right.shape[d] != 1
        if d in sum_dims:
            if ls and rs:
                summed.append(d)
            elif ls:
                left = left.sum(d, keepdim=True)
            elif rs:
                right = right.sum(d, keepdim=True)
        elif ls and rs:
            if left.shape[d] != right.shape[d]:
                raise RuntimeError(
                    f"einsum(): operands do not broadcast with remapped shapes (original->"
                    f"remapped): {list(left.shape)} and {list(right.shape)}"
                )
            batch.append(d)
        elif rs:
            ronly.append(d)
        else:
            lonly.append(d)
    ones = [d for d in sum_dims if d not in summed]
    size = lambda t, dims: math.prod(t.shape[d] for d in dims)  # noqa: E731
    lhs = left.permute(batch + lonly + summed + ronly + ones)
    lhs = lhs.reshape(size(left, batch), size(left, lonly), size(left, summed))
    rhs = right.permute(batch + summed + ronly + lonly + ones)
    rhs = rhs.reshape(size(right, batch), size(right, summed), size(right, ronly))
    out_dims = batch + lonly + summed + ones + ronly
    out_shape = [left.shape[d] for d in batch + lonly] + [1] * (len(summed) + len(ones))
    out_shape += [right.shape[d] for d in ronly]
    inverse = [out_dims.index(d) for d in range(left.ndim)]
    return lhs.bmm(rhs).view(out_shape).permute(inverse)


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
