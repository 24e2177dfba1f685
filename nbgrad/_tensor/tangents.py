"""Tangents of forward-mode AD: the rule that gives an op's output tangent from its inputs'
(PyTorch's ``*_jvp`` formulas of ``derivatives.yaml`` and ``FunctionsManual.cpp``).

Dispatch calls :func:`propagate` after each op while a dual level holds a tangent, and the
in-place write calls :func:`inplace`. See NOTE [Forward-mode AD].
"""

from __future__ import annotations

import nbgrad
from nbgrad._graph.forward_grad import _state as _fw
from nbgrad._graph.forward_grad import get_tangent, remember_saved, set_tangent, suspended
from nbgrad._graph.grad_state import _state as _grad_state
from nbgrad._tensor import dispatch as _d
from nbgrad._tensor.conversion import _wrap
from nbgrad._tensor.views import _EnableGrad

# NOTE [Forward-mode AD]
# A dual tensor carries, besides its value (the primal), a tangent: the directional derivative
# of that value along the direction the user gave with ``make_dual``. Each op maps its inputs'
# tangents to its outputs' by its Jacobian, J v, as the op runs: no graph, no second pass.
#
# Where the tangent lives. In the tensor's ``_fw_grad`` slot, unset on every other tensor; the
# level (``nbgrad/_graph/forward_grad.py``) keeps weak references to the tensors it gave one
# and deletes their tangents when it exits. As PyTorch, there is one level, 0; entering a second
# raises. Dispatch pays one flag check per op (``_fw.active``: a level is entered and holds a
# tangent); the arithmetic fast paths (``_binary``, ``_unary``, the in-place ufunc path) step
# aside to ``_dispatch`` while it is set.
#
# The rule of a row, with no jvp column in the op table. Each row already has a backward
# formula, vjp(u) = u^T J, linear in the gradient u, and written with Tensor ops, so it is
# differentiable in u (gradgradcheck checks that for every row). Then
#     J v = d/du < vjp(u), v >
# (the "double-vjp" trick): record the row's node on aliases of the inputs that carry tangents
# (on the op's actual results: random ops are not run again), take vjp(u) at u = 0 with
# ``create_graph``, contract it with the tangents and differentiate once more, in u. Every
# row's tangent is right wherever its gradient is, by construction, and a new row needs
# nothing more. It costs two tiny backward passes per op, so the rows that dominate real
# graphs have an explicit formula in ``_RULES`` below (checked against the generic one and
# against PyTorch by tests/autograd/test_forward_ad_ops.py), and the rows that are linear in their
# one tensor input (views, sums, clone ...) apply themselves to the tangent: a view's tangent
# is then the same view of the input's tangent, so an in-place op on either updates both, as
# PyTorch's forward grad views.
#
# Tangents are computed with forward AD suspended (one level: a tangent has no tangent) and in
# the caller's grad mode, so that a tangent records a graph when grad mode is on (reverse over
# forward) and none under ``no_grad``; in inference mode no tangent is computed, as PyTorch.
#
# In place. The row's out-of-place result carries the new tangent; ``inplace`` copies it into
# the written tensor's tangent, in place, so that its views' tangents see it. A tensor without
# a tangent gets one: zeros for its base (when it is a view) and the view chain replayed on
# them. A view of a base that has a tangent has that tangent's same view, made when first
# asked for (``forward_grad.get_tangent``), as PyTorch's forward grad of a view. ``detach()``
# and ``make_dual``'s result are no such views: in place on them leaves the base's tangent.
#
# Forward over reverse. A backward pass run while a level holds tangents computes its
# gradients with the same ops, so they get tangents (a Hessian-vector product). Three fast
# paths of reverse mode would drop them and step aside: the array paths of the engine and of
# the generated ``apply`` (NOTE [Gradients carried as arrays], NOTE [Backward on arrays]) and
# the in-place sum of the input buffer; and a node that saved its own output keeps only its
# data, so the output's tangent is remembered by that data (``remember_saved``) and given to
# the tensor that backward unpacks from it (PyTorch's ``SavedVariable`` keeps ``fw_grad``).
#
# A custom Function: see NOTE [A custom Function's forward mode] in
# nbgrad/autograd/forward_ad.py.


def _tangents_of(args):
    """Each argument's tangent (a list for a list argument), and whether any has one."""
    out = []
    found = False
    Tensor = _d.Tensor
    for a in args:
        if type(a) is list:
            ts = [get_tangent(t) for t in a]
            found = found or any(t is not None for t in ts)
            out.append(ts)
        elif isinstance(a, Tensor):
            t = get_tangent(a)
            found = found or t is not None
            out.append(t)
        else:
            out.append(None)
    return out, found


def propagate(op, args, attrs, results):
    """Give ``results`` (a tensor or a tuple) of ``op(*args)`` their tangents."""
    if not op.differentiable or _grad_state.inference:
        return
    tangents, found = _tangents_of(args)
    if not found:
        return
    outs = results if isinstance(results, tuple) else (results,)
    with suspended():
        rule = _RULES.get(op.name)
        if rule is not None:
            out_tangents = rule(args, attrs, outs, tangents)
        elif op.name in _LINEAR:
            out_tangents = _linear(op, args, attrs, tangents)
        else:
            out_tangents = _double_vjp(op, args, attrs, outs, tangents)
        if not isinstance(out_tangents, (tuple, list)):
            out_tangents = (out_tangents,)
        for k, (o, t) in enumerate(zip(outs, out_tangents)):
            if op.diff_outputs is not None and k not in op.diff_outputs:
                continue
            if t is not None and o._data.dtype.kind == "f":
                t = _fit(t, o)
                set_tangent(o, t)
                if o.grad_fn is not None:
                    remember_saved(o, t)


def check_out(name, args, out):
    """PyTorch's error for an ``out=`` function given a dual tensor: no tangent goes through."""
    if _fw.active and _tangents_of((*args, out))[1]:
        raise NotImplementedError(
            f"Trying to use forward AD with {name}_out that does not support it because it is "
            "an out= function"
        )


def _fit(t, o):
    """``t`` with the shape of ``o`` (a rule may leave a broadcast one)."""
    if tuple(t.shape) != tuple(o.shape):
        t = t.expand(o.shape).clone()
    if not _grad_state.enabled and t._requires_grad:
        t = t.detach()
    return t


def _double_vjp(op, args, attrs, outs, tangents):
    """J v by the double-vjp trick (NOTE [Forward-mode AD])."""
    enabled = _grad_state.enabled
    Tensor = _d.Tensor
    wrt, vs = [], []

    def primal(a, t):
        if t is None:
            return a
        if enabled and a._requires_grad:
            p = _d._dispatch(_d.OPS["alias"], (a,), {})  # keeps reverse mode through it
        else:
            p = _wrap(a._data, a._device, True)
        wrt.append(p)
        vs.append(t)
        return p

    with _EnableGrad():
        new_args = []
        for a, t in zip(args, tangents):
            if type(a) is list:
                new_args.append([primal(x, tx) for x, tx in zip(a, t)])
            elif isinstance(a, Tensor):
                new_args.append(primal(a, t))
            else:
                new_args.append(a)
        aliases = tuple(_wrap(o._data, o._device) for o in outs)
        _d._record(op, new_args, attrs, aliases)
        diff = [k for k, al in enumerate(aliases) if al.grad_fn is not None]
        us = [nbgrad.zeros_like(aliases[k]).requires_grad_(True) for k in diff]
        if not diff:
            return [None] * len(outs)
        gs = nbgrad.autograd.grad(
            [aliases[k] for k in diff], wrt, us, create_graph=True, allow_unused=True
        )
        total = None
        for g, v in zip(gs, vs):
            if g is None or not g._requires_grad:
                continue  # a gradient that does not depend on u: a zero tangent
            term = (g * v).sum()
            total = term if total is None else total + term
        # a graph for the tangent only where the caller's inputs or tangents have one
        graph = enabled and any(
            t._requires_grad for t in (*vs, *_flat_tensors(args)) if t is not None
        )
        jvs = [None] * len(us)
        if total is not None:
            jvs = nbgrad.autograd.grad(total, us, create_graph=graph, allow_unused=True)
    result = [None] * len(outs)
    for k, jv in zip(diff, jvs):
        result[k] = jv if jv is not None else nbgrad.zeros_like(outs[k])
    return result


def _flat_tensors(args):
    Tensor = _d.Tensor
    for a in args:
        if type(a) is list:
            yield from a
        elif isinstance(a, Tensor):
            yield a


def _linear(op, args, attrs, tangents):
    """A row linear in its one tensor input: the row applied to the tangent."""
    t = tangents[0]
    if t is None:
        return None
    return _d._dispatch(op, (t, *args[1:]), attrs)


# rows linear in their one tensor input (``self``), whose attributes do not add a constant
_LINEAR = frozenset(
    {
        "alias",
        "as_strided",
        "diagonal",
        "expand",
        "permute",
        "reshape_alias",
        "select",
        "slice",
        "split",
        "split_with_sizes",
        "unsafe_split",
        "unsafe_split_with_sizes",
        "squeeze",
        "squeeze_dim",
        "squeeze_dims",
        "t",
        "transpose",
        "unbind",
        "unfold",
        "unsqueeze",
        "view",
        "unsafe_view",
        "sum",
        "sum_dim",
        "mean",
        "mean_dim",
        "clone",
        "neg",
        "flip",
        "roll",
        "rot90",
        "repeat",
        "tril",
        "triu",
        "cumsum",
        "trace",
        "diag_embed",
        "index",
        "index_select",
        "take",
        "pixel_shuffle",
        "pixel_unshuffle",
    }
)


# ---- explicit rules, where they pay ----------------------------------------------------------
def _add(args, attrs, outs, ts):
    ta, tb = ts
    alpha = attrs.get("alpha", 1)
    if tb is not None and alpha != 1:
        tb = tb * alpha
    if ta is None:
        return tb
    return ta if tb is None else ta + tb


def _sub(args, attrs, outs, ts):
    ta, tb = ts
    alpha = attrs.get("alpha", 1)
    if tb is not None:
        tb = -tb if alpha == 1 else tb * -alpha
    if ta is None:
        return tb
    return ta if tb is None else ta + tb


def _mul(args, attrs, outs, ts):
    (a, b), (ta, tb) = args, ts
    left = None if ta is None else ta * b
    right = None if tb is None else a * tb
    if left is None:
        return right
    return left if right is None else left + right


def _div(args, attrs, outs, ts):
    (_, b), (ta, tb) = args, ts
    out = outs[0]
    left = None if ta is None else ta / b
    right = None if tb is None else -(tb * out) / b
    if left is None:
        return right
    return left if right is None else left + right


def _bilinear_rule(name):
    """A rule for a row linear in each of its two inputs (``mm``, ``bmm``, ``mv``, ``dot``)."""

    def rule(args, attrs, outs, ts):
        (a, b), (ta, tb) = args, ts
        op = _d.OPS[name]
        left = None if ta is None else _d._dispatch(op, (ta, b), attrs)
        right = None if tb is None else _d._dispatch(op, (a, tb), attrs)
        if left is None:
            return right
        return left if right is None else left + right

    return rule


def _pointwise(derivative):
    """A rule for a unary row: the tangent times its derivative ``derivative(x, result)``."""

    def rule(args, attrs, outs, ts):
        t = ts[0]
        return None if t is None else t * derivative(args[0], outs[0])

    return rule


_RULES = {
    "add": _add,
    "sub": _sub,
    "mul": _mul,
    "div": _div,
    "exp": _pointwise(lambda x, r: r),
    "log": _pointwise(lambda x, r: x.reciprocal()),
    "sin": _pointwise(lambda x, r: x.cos()),
    "cos": _pointwise(lambda x, r: -x.sin()),
    "tanh": _pointwise(lambda x, r: 1 - r * r),
    "sigmoid": _pointwise(lambda x, r: r * (1 - r)),
    "sqrt": _pointwise(lambda x, r: 0.5 / r),
    "relu": _pointwise(lambda x, r: (r > 0).to(r.dtype)),
}
for _name in ("mm", "bmm", "mv", "dot"):
    _RULES[_name] = _bilinear_rule(_name)


def inplace(self, result):
    """After ``self`` was written with ``result`` in place: ``self``'s tangent becomes
    ``result``'s (see NOTE [Forward-mode AD])."""
    new = get_tangent(result)
    if new is None:
        return
    with suspended():
        own = get_tangent(self)
        if own is None:
            own = _new_tangent(self)
        if own is None:
            set_tangent(self, new.clone())  # (``new`` may be the other operand's own tangent)
            return
        own._data[...] = new._data  # (the tangent's own history is not rewritten)
        own._counter()[0] += 1


def _new_tangent(self):
    """Zeros as ``self``'s tangent, a view of its base's (made zeros too) when it is a view."""
    base, chain = self._base, self._view_chain
    if base is None or chain is None:
        return None
    if get_tangent(base) is None:
        set_tangent(base, nbgrad.zeros_like(base))
    return _view_tangent(self)


def _view_tangent(view):
    """The tangent of ``view``: its chain of views replayed on its base's tangent."""
    with suspended():
        tangent = view._base._fw_grad
        for view_op, attrs in view._view_chain:
            tangent = _d._dispatch(_d.OPS[view_op], (tangent,), attrs)
    set_tangent(view, tangent)
    return tangent


_fw.propagate = propagate
_fw.inplace = inplace
_fw.view_tangent = _view_tangent
