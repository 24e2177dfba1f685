"""The one table of ops: forward kernels and derivative formulas, one row per op.

Mirrors PyTorch's ``tools/autograd/derivatives.yaml`` with the density of tinygrad's gradient
table. Each row names the op, the Node class PyTorch would create (``MulBackward0``), its
tensor inputs, an array-level forward kernel that receives ``xp`` (NumPy or CuPy, so one kernel
serves every device), and one formula per differentiable input.

The formulas' parameters are a fixed vocabulary: ``grad`` (or ``grads`` for several outputs),
``result``, the row's input and attribute names, and ``<input>_shape``. A node saves exactly
what its formulas name (``_saved_self``, ``_saved_result``, ...). Formulas use Tensor ops, never
raw arrays, so backward is itself differentiable (``create_graph=True``). No formula handles
broadcasting: the engine sums each gradient to its input's shape (``validate_outputs``).

The table is checked at import: a formula naming an unknown parameter, or a tensor input with
neither a formula nor a ``nondiff`` mark, raises.
"""

from __future__ import annotations

from nbgrad._graph.table_node import _build_node_class
from nbgrad._tensor.dispatch import OPS
from nbgrad._tensor.inplace import _apply_view_chain
from nbgrad._tensor.math_methods import sum_to

# the families of rows: importing each runs its ``op(...)`` calls, which register the rows in OPS
from . import (  # noqa: F401
    activation,
    grid_sampler,
    index_maps,
    indexing,
    linalg,
    losses,
    nn,
    pointwise,
    random,
    reductions,
    scans,
    searching,
    shape,
)
from .opinfo import OpInfo, op

__all__ = ["OPS", "OpInfo", "op", "sum_to", "_apply_view_chain"]

# every row's Node class, built once the table is complete
for _info in OPS.values():
    if _info.differentiable:
        _info.node_class = _build_node_class(_info)
