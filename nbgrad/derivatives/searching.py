"""Op table rows: counting and searching, none with a gradient (``histc``, ``bincount``,
``searchsorted``, ``isin``, ``unique``...)."""

from __future__ import annotations

from nbgrad.derivatives.opinfo import op
from nbgrad.derivatives.pointwise import _not_implemented
from nbgrad.kernels.searching import (
    _bincount,
    _histc,
    _histogram,
    _histogramdd,
    _isin,
    _searchsorted,
    _unique,
    _unique_consecutive,
)

# fmt: off
# counting and searching: no gradient
op("histc", None, "self", lambda xp, self, bins, min, max: _histc(xp, self, bins, min, max), attrs="bins min max", differentiable=False)
op("histogram", None, "self weight", lambda xp, self, weight, bins, range, density: _histogram(xp, self, bins, range, weight, density),
   attrs="bins range density", outputs=2, differentiable=False)
# histogramdd: PyTorch's hist requires grad, through a node whose backward raises
op("histogramdd", "NotImplemented", "self weight", lambda xp, self, weight, edges, density, aten: _histogramdd(xp, self, weight, edges, density),
   attrs="edges density aten", nondiff=("weight",), self=lambda grad, aten: _not_implemented(aten))
op("bincount", None, "self weights", lambda xp, self, weights, minlength: _bincount(xp, self, weights, minlength), attrs="minlength", differentiable=False)
op("searchsorted", None, "sorted_sequence self", lambda xp, sorted_sequence, self, right, out_int32: _searchsorted(xp, sorted_sequence, self, right, out_int32),
   attrs="right out_int32", differentiable=False)
op("isin", None, "elements test_elements", lambda xp, elements, test_elements, invert: _isin(xp, elements, test_elements, invert), attrs="invert", differentiable=False)
op("unique_consecutive", None, "self", lambda xp, self, dim: _unique_consecutive(xp, self, dim), attrs="dim", outputs=3, differentiable=False)
# fmt: on


# fmt: off
# unique has no derivative in PyTorch: its nodes' backward raises
op("unique", "Unique2Backward0", "self", lambda xp, self, sorted: _unique(xp, self, sorted, None), attrs="sorted",
   outputs=3, diff_outputs=(0,), self=lambda grads: _no_derivative("_unique2"))
op("unique_dim", "UniqueDimBackward0", "self", lambda xp, self, sorted, dim: _unique(xp, self, sorted, dim), attrs="sorted dim",
   outputs=3, diff_outputs=(0,), self=lambda grads: _no_derivative("unique_dim"))
# fmt: on


def _no_derivative(name):
    raise RuntimeError(f"the derivative for '{name}' is not implemented.")
