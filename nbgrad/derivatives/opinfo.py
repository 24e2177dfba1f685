"""A row of the op table (:class:`OpInfo`) and ``op``, which checks a row and registers it."""

from __future__ import annotations

import inspect

import numpy as np

from nbgrad._tensor.dispatch import _NO_ATTRS, _ON_FLOATS, OPS, _binary, _dispatch, _unary
from nbgrad.backend import quiet_float_errors


class OpInfo:
    """One row of the table."""

    def __init__(
        row,
        name,
        node,
        inputs,
        forward,
        *,
        attrs="",
        promote=None,
        view=False,
        outputs=1,
        diff_outputs=None,
        nondiff=(),
        differentiable=True,
        promote_attrs=(),
        quiet=None,
        ufunc=None,
        on_arrays=False,
        **formulas,
    ):
        row.name = name
        row.node_name = node
        row.inputs = tuple(i.rstrip("*") for i in inputs.split())
        row.list_input = tuple(i.endswith("*") for i in inputs.split())
        row.attrs = tuple(attrs.split())
        row.forward = forward
        row.kernel = forward  # ``forward`` without a quiet row's wrapper (for formulas)
        row.promote = promote  # None | "binary" | "float" | "cmp"
        row.view = view
        row.outputs = outputs
        row.diff_outputs = diff_outputs  # None: every output is differentiable
        row.nondiff = frozenset(nondiff)
        row.promoted = tuple(i not in row.nondiff for i in row.inputs)
        row.promote_attrs = promote_attrs
        # NumPy warns on overflow, 0/0, log(0)...; PyTorch gives inf/nan silently: NOTE [Quiet
        # rows wrapped once]
        row.quiet = name in _QUIET if quiet is None else quiet
        if row.quiet:
            row.forward = quiet_float_errors()(forward)
        # the NumPy ufunc that ``forward`` is when the row's attributes are at their defaults
        # (``alpha`` 1): see NOTE [0-d results stay arrays] in nbgrad/_tensor/dispatch.py
        row.ufunc = ufunc
        row.on_floats = _ON_FLOATS.get(ufunc)  # its operator on two Python floats, if any
        row.differentiable = differentiable and bool(formulas)
        row.formulas = formulas
        # the formulas run on NumPy arrays as on Tensors: checked when the table is complete
        # (NOTE [Backward on arrays] in nbgrad/_graph/table_node.py)
        row.on_arrays = on_arrays
        row.node_class = None
        # ``_binary``'s and ``_unary``'s end, made on first use (NOTE [Generated forward
        # result] in nbgrad/_tensor/dispatch.py)
        row.result = row.result_source = None
        row._check()

    def _check(self):
        vocab = {"grad", "grads", "result", *self.inputs, *self.attrs}
        vocab |= {f"{i}_shape" for i in self.inputs}
        if self.outputs > 1:
            vocab |= {f"result{k}" for k in range(self.outputs)}
        for inp, f in self.formulas.items():
            if inp not in self.inputs:
                raise TypeError(f"op table row '{self.name}': formula for unknown input '{inp}'")
            for p in inspect.signature(f).parameters:
                if p not in vocab:
                    raise TypeError(
                        f"op table row '{self.name}': formula for '{inp}' names unknown "
                        f"parameter '{p}' (known: {sorted(vocab)})"
                    )
        if self.differentiable:
            for inp in self.inputs:
                if inp not in self.formulas and inp not in self.nondiff:
                    raise TypeError(
                        f"op table row '{self.name}': input '{inp}' has neither a formula nor a "
                        "nondiff mark"
                    )


# NOTE [Quiet rows wrapped once]
# A quiet row's ``forward`` is wrapped once, here, in NumPy's error state as a decorator
# (``np.errstate(...)(forward)``), and the dispatch paths call it as any row's: a ``with
# np.errstate(...)`` block per call builds and enters a context object each time, about twice
# the cost, measurable on W6 (engine_ab.py), whose ``pow`` runs twice in each Hessian-vector
# product. A path that calls the row's ``ufunc``
# directly (an in-place ``div_``) enters the state itself. A formula on arrays calls the row's
# ``kernel``, the forward unwrapped: it runs in a backward pass, quiet already (NOTE [Quiet
# backward] in nbgrad/autograd/engine.py).
_QUIET = {
    "div",
    "pow",
    "pow_tensor",
    "rpow",
    "exp",
    "log",
    "log1p",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "sigmoid",
    "var",
    "std",
    "mean",
    "mean_dim",
    "norm",
    "logsumexp",
    "softmax",
    "log_softmax",
    "prod",
    "prod_dim",
    "cumsum",  # NumPy's cumsum is Python: its warning is NumPy's, not nbgrad's (NOTE [Float
    # warnings of the other ops] in nbgrad/backend.py)
    "erf",
    "gelu",
    "matmul",
    "mm",
    "bmm",
    "mv",
    "dot",
}


def op(name, node, inputs, forward, **kw):
    OPS[name] = OpInfo(name, node, inputs, forward, **kw)


_ON_ARRAYS = (np.ndarray, np.generic)  # what a row function computes on with its kernel


def row_function(name):
    """Row ``name`` of the table as a function for formulas (``tanh``'s is
    ``tanh_backward(grad, result)``; ``sin``'s ``grad * cos(self)``).

    On Tensors it dispatches the row, which records it under create_graph; on NumPy arrays it
    calls the row's kernel, so a formula made of such calls and operators also runs on arrays
    (see NOTE [Backward on arrays] in nbgrad/_graph/table_node.py).
    """

    found = [None]  # the row, and the fast path of its Tensor ops (looked up at the first
    # call: a row may be defined after its function)

    def call(*args, **attrs):
        if found[0] is None:
            found[0] = (OPS[name], _fast_path(OPS[name]))
        row, path = found[0]
        if isinstance(args[0], _ON_ARRAYS):  # an array, or a 0-d one's NumPy scalar: in a
            # backward pass, which is quiet already (NOTE [Quiet rows wrapped once])
            return row.kernel(np, *args, **attrs)
        if path is not None and len(args) == len(row.inputs):
            return path(row, *args, attrs or _NO_ATTRS)
        return _dispatch(row, args, attrs)

    call.__name__ = call.__qualname__ = name
    call.on_arrays = True
    return call


def _fast_path(row):
    """``_unary`` or ``_binary`` for a row they can run (one result, no list input, a view only
    of one input; they fall back to ``_dispatch`` for anything but float CPU tensors of one
    dtype), else None: a formula's Tensor op then costs what the same operator costs (NOTE
    [Dispatch fast path])."""
    if row.outputs != 1 or any(row.list_input) or row.view and len(row.inputs) != 1:
        return None
    return {1: _unary, 2: _binary}.get(len(row.inputs))
