"""How a gradient or a tensor is summarised for the browser: :class:`GradFacts`, the numbers
taken when a backward event happens, and the :class:`GradSummary` / :class:`TensorSummary`
records made from them when a snapshot shows them (NOTE [Summarise when shown])."""

from __future__ import annotations

import math
import weakref

import numpy as np

from .answers_values import nonfinite_kinds
from .schema import GradSummary, TensorSummary
from .sources import NBGRAD


def _num(v):
    """A JSON-safe, deterministic number: 6 significant digits; non-finite as strings."""
    v = float(v)
    if math.isfinite(v):
        return float(f"{v:.6g}")
    if v != v:
        return "nan"
    return "inf" if v > 0 else "-inf"


LARGE = 8192  # elements: see NOTE [Summing a large gradient]
_HYPOT = 16  # elements: see NOTE [A small gradient's norm]
_hypot = math.hypot
_isfinite = math.isfinite


def _nums(a, finite=False):
    """``_num`` of each value of a small array (the common all-finite case in one pass);
    ``finite``: the values are known to be finite (their norm is)."""
    if not finite and a.dtype.kind in "fc" and not np.isfinite(a).all():
        return [_num(v) for v in a.tolist()]
    return [float(f"{v:.6g}") for v in a.tolist()]


# NOTE [Shared shapes]
# A summary's shape is a list (JSON's array), and most of a graph's tensors have one of a few
# shapes: each summary made its own list (a 20,000-node chain's snapshot held 40,000 of them,
# 3 MB), and each GradFacts its own tuple (a 100,000-node backward pass kept 100,000 of them,
# 4.8 MB). ``shape_list`` gives one list per shape, shared by the summaries (read, never
# changed), and ``shape_tuple`` one tuple, from small tables emptied when they fill.
_SHAPES: dict = {}
_SHAPE_TUPLES: dict = {}


def shape_tuple(shape: tuple) -> tuple:
    """``shape``, or an equal tuple met before (NOTE [Shared shapes])."""
    got = _SHAPE_TUPLES.get(shape)
    if got is None:
        if len(_SHAPE_TUPLES) >= 256:
            _SHAPE_TUPLES.clear()
        got = _SHAPE_TUPLES[shape] = shape
    return got


def shape_list(shape) -> list:
    """``list(shape)`` (a tuple), the same list for equal shapes (NOTE [Shared shapes])."""
    got = _SHAPES.get(shape)
    if got is None:
        if len(_SHAPES) >= 256:
            _SHAPES.clear()
        got = _SHAPES[shape] = list(shape)
    return got


class _SummaryKeys:
    """Made for its ``__dict__`` alone: NOTE [Entries that share their keys] in snapshot.py."""


# NOTE [Summarise when shown]
# A backward pass reports its gradients at every engine event (a node's inputs and outputs, a
# hook's before and after, a leaf's accumulation). Formatting each as a GradSummary (six
# significant digits per value, a dict) when it happens was most of what recording a training
# loop cost, and most passes of a loop are never shown. So an event keeps a GradFacts: the
# numbers, taken at once (the norm and a copy of the first values: the tensor may change in
# place or be freed before anything is shown, and keeping it alive would change what the
# framework does, e.g. torch steals a gradient nobody else holds), formatted into the summary
# the first time a snapshot, a test or the user reads it.
class GradFacts:
    """A gradient as an engine event saw it; reads as its :class:`GradSummary` (``facts["norm"]``,
    ``facts.summary()``), which is built once, when first read.

    NOTE [Facts kept small]
    A backward pass keeps a GradFacts per gradient it saw (some 100,000 on a 100,000-node
    chain), so each holds only what differs from gradient to gradient: its shape, dtype name,
    size and NumPy dtype are one tuple shared by the gradients of that kind (``_kind``), and the
    norm of a gradient whose first values are all its values (NOTE [A small gradient's norm]) is
    not kept but worked out again from those values when read (``_norm`` is ``FROM_HEAD``): the
    same values in the same order give the same float. 72 bytes a GradFacts, not 96, and no
    float of 24.
    """

    __slots__ = ("_kind", "_norm", "_head", "_summary", "nonfinite")

    @property
    def shape(self) -> tuple:
        return self._kind[0]

    @property
    def dtype(self) -> str:
        return self._kind[1]

    @property
    def numel(self) -> int:
        return self._kind[2]

    @property
    def norm(self):
        """The gradient's norm (None when its values are not numbers)."""
        norm = self._norm
        return small_norm(self.head) if norm is FROM_HEAD else norm

    @property
    def head(self):
        """The first values, an array (kept as its bytes: NOTE [First values as bytes])."""
        head = self._head
        return np.frombuffer(head, self._kind[3]) if type(head) is bytes else head

    def summary(self) -> GradSummary:
        summary = self._summary
        if summary is None:
            kind = self._kind
            head = self.head
            norm = self._norm
            if norm is FROM_HEAD:  # (its values read once, for the norm and the summary)
                values = head.tolist()
                norm = _hypot(*values)
                if _isfinite(norm):
                    values = [float(f"{v:.6g}") for v in values]
                else:
                    norm = small_norm(head)
                    values = _nums(head)
            else:
                values = _nums(head, norm is not None and _isfinite(norm))
            # (one table of keys for all: NOTE [Entries that share their keys] in snapshot.py)
            summary = self._summary = _SummaryKeys().__dict__
            summary["shape"] = shape_list(kind[0])
            summary["dtype"] = kind[1]
            summary["norm"] = _num(norm) if norm is not None else None
            summary["numel"] = kind[2]
            summary["values"] = values
            summary["truncated"] = bool(kind[2] > len(head))
        return summary

    def __getitem__(self, key):
        return self.summary()[key]

    def get(self, key, default=None):
        return self.summary().get(key, default)

    def __eq__(self, other):
        if isinstance(other, GradFacts):
            return (
                self.shape == other.shape
                and self.dtype == other.dtype
                and self.norm == other.norm
                and np.array_equal(self.head, other.head, equal_nan=self.head.dtype.kind == "f")
            )
        if isinstance(other, dict):
            return self.summary() == other
        return NotImplemented

    __hash__ = None

    def __repr__(self):
        return f"GradFacts({self.summary()})"


FROM_HEAD = object()  # a GradFacts's norm, read from its values (NOTE [Facts kept small])
_new_facts = object.__new__


def small_norm(a) -> float:
    """The norm of the few values of ``a`` (NOTE [A small gradient's norm])."""
    norm = _hypot(*a.ravel().tolist())
    if not math.isfinite(norm):
        f64 = a.astype(np.float64, copy=False)
        norm = math.sqrt(float(np.vdot(f64, f64)))
    return norm


def grad_facts(value, max_values=16, source=None, norms=None):
    """What a summary of ``value`` needs, taken now (NOTE [Summarise when shown]): a
    :class:`GradFacts` for a tensor, None for None, ``{"repr": ...}`` for another value.
    ``norms``: a dict that remembers the norms of large gradients (NOTE [A norm read once])."""
    if value is None:
        return None
    source = source or NBGRAD
    if not source.is_tensor(value):
        return {"repr": repr(value)[:200]}
    return array_facts(source.to_numpy(value), value, max_values, source, norms)


def array_facts(a, value, max_values=16, source=NBGRAD, norms=None):
    """:func:`grad_facts` of the tensor ``value`` of ``source``, read as the array ``a``."""
    size = a.size
    dt = a.dtype  # (the head's too: read once)
    kind = dt.kind
    facts = _new_facts(GradFacts)
    if size <= _HYPOT and size <= max_values and kind in "fiub":
        # NOTE [A small gradient's norm]
        # the values of a gradient of a few elements, read as Python numbers once, give both
        # the norm (``math.hypot`` of them: in C, no float64 copy and no NumPy reduction) and
        # the first values (all of them: the norm is read from those again, NOTE [Facts kept
        # small]); a NaN among them would make the hypot NaN, an Inf makes it Inf even beside
        # a NaN, so a norm that is not finite is taken again as the sum of squares (NumPy's
        # NaN where both are), as larger gradients' are
        values = (a if a.ndim == 1 else a.ravel()).tolist()
        facts._norm = FROM_HEAD
        facts.nonfinite = None if _isfinite(_hypot(*values)) else nonfinite_kinds(a)
        facts._head = a.tobytes()  # (in C order, as the values)
        shape = a.shape
        kinds = _KINDS.get(shape)  # (``_kind_of``, its commonest case inline)
        if kinds is not None and kinds[0][3] is dt:
            facts._kind = kinds[0]
        else:
            facts._kind = _kind_of(shape, dt, size, source, value)
        facts._summary = None
        return facts
    norm = None
    if size > LARGE and kind == "f":
        # NOTE [Summing a large gradient]
        # float32 by BLAS's dot in float32 (no float64 copy,
        # over 16x faster; as good as the 4 to 6 digits shown), float64 by einsum: BLAS splits
        # a long float64 dot over threads, which on a busy machine (torch's threads beside
        # NumPy's) takes milliseconds; read as it lies in memory (a transposed gradient: the
        # norm does not depend on the order, and a C-order copy would cost more)
        mem = a.T if a.flags.f_contiguous and not a.flags.c_contiguous else a
        key = None
        if norms is not None and mem.flags.c_contiguous:
            # NOTE [A norm read once]
            # a large gradient often reaches several events as other
            # tensor objects over the same memory (a transposed view, a new wrapper of the same
            # storage for each hook); the memory it spans, its dtype and version name its
            # values while the tensor first seen lives (its memory cannot be reused before)
            key = (source.address(value, a), size, a.dtype.str, source.version(value))
            hit = norms.get(key)
            if hit is not None and hit[0]() is not None:
                norm = hit[1]
        if norm is None:
            flat = mem.reshape(-1)
            if dt == np.float32:
                sq = np.dot(flat, flat)
            else:
                sq = np.einsum("i,i->", flat, flat, dtype=np.float64)
            norm = math.sqrt(float(sq))
            if key is not None:
                try:
                    norms[key] = (weakref.ref(value), norm)
                except TypeError:  # a tensor that takes no weak reference: not remembered
                    pass
        head = a.reshape(-1)[:max_values] if mem is a else np.asarray(a.flat[:max_values])
    else:
        if kind in "fiub":
            # np.vdot (the dot of the flattened arrays), not ``@``: with torch imported,
            # NumPy's matmul of two vectors can take milliseconds where the dot takes
            # microseconds; as few NumPy calls as can be (this runs inside every backward hook)
            f64 = a.astype(np.float64, copy=False)
            norm = math.sqrt(float(np.vdot(f64, f64))) if size else 0.0
        head = a.flat[:max_values]  # (a copy, in C order)
    facts._norm = norm
    # the kinds of non-finite values, read only when the norm says there are some
    facts.nonfinite = None if norm is None or _isfinite(norm) else nonfinite_kinds(a)
    # NOTE [First values as bytes]
    # A backward pass keeps a GradFacts per event (some 250,000 for a 100,000-node chain), each
    # with a copy of the gradient's first values: as an array, 137 bytes for four floats; as
    # the bytes of those values (``head`` reads them back as an array, read-only), 57, made
    # faster too. An array of objects (no numbers) stays an array.
    facts._head = head.tobytes() if kind in "fiubc" else head
    facts._kind = _kind_of(a.shape, dt, size, source, value)
    facts._summary = None
    return facts


_KINDS: dict = {}  # shape -> the kinds met of that shape (NOTE [Facts kept small])


def _kind_of(shape, dt, size, source, value) -> tuple:
    """``(shape, dtype name, size, NumPy dtype)`` of a gradient, one tuple for each kind met
    (NOTE [Facts kept small]); a dtype is matched by identity first (its hash is slow)."""
    kinds = _KINDS.get(shape)
    if kinds is not None:
        for kind in kinds:
            if kind[3] is dt:
                return kind
    name = _DTYPE_NAMES.get(dt)
    if name is None:  # (another framework's name for a dtype, e.g. bfloat16: not kept)
        return (shape_tuple(shape), source.tensor_facts(value).dtype, size, dt)
    if kinds is None:
        if len(_KINDS) >= 256:
            _KINDS.clear()
        kinds = _KINDS[shape] = []
    for kind in kinds:  # (an equal dtype, another object)
        if kind[3] == dt:
            return kind
    kind = (shape_tuple(shape), name, size, dt)
    kinds.append(kind)
    return kind


def summarised(value):
    """``value`` with each :class:`GradFacts` in it (alone or in a list) as its summary."""
    if type(value) is GradFacts:
        return value.summary()
    if type(value) is list or type(value) is tuple:  # (a list: JSON's array)
        return [v.summary() if type(v) is GradFacts else v for v in value]
    return value


def grad_summary(value, max_values=16, source=None):
    """A gradient (Tensor or None) as a GradSummary dict; other values as ``{"repr": ...}``."""
    return summarised(grad_facts(value, max_values, source))


_DTYPE_NAMES = {  # keyed by dtype (``dtype.str`` makes a string each read)
    np.dtype("<f4"): "float32",
    np.dtype("<f8"): "float64",
    np.dtype("<f2"): "float16",
    np.dtype("<i8"): "int64",
    np.dtype("<i4"): "int32",
    np.dtype("|b1"): "bool",
}


def tensor_summary(t, node_id=None, source=None) -> TensorSummary:
    facts = (source or NBGRAD).tensor_facts(t)
    return {
        "shape": shape_list(tuple(facts.shape)),
        "dtype": facts.dtype,
        "device": facts.device,
        "requires_grad": facts.requires_grad,
        "node": node_id,
    }
