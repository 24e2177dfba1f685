"""Higher-level differentiation: ``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``hvp``, ``vhp``.

Mirrors ``torch/autograd/functional.py`` (reverse mode; ``jvp`` by the double-vjp trick).
"""

from __future__ import annotations

import nbgrad
from nbgrad._graph.grad_state import enable_grad
from nbgrad.autograd import forward_ad
from nbgrad.tensor import Tensor, ones_like, stack, zeros, zeros_like

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _as_tuple(x, arg_name, fn_name):
    if isinstance(x, Tensor):
        return False, (x,)
    if not isinstance(x, (tuple, list)):
        raise TypeError(
            f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
            f"the value given is of type {type(x).__name__}."
        )
    for el in x:
        if not isinstance(el, Tensor):
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors "
                f"but one element is of type {type(el).__name__}."
            )
    return True, tuple(x)


def _prep(inputs, create_graph):
    out = []
    for t in inputs:
        if create_graph and t.requires_grad:
            out.append(t.view_as(t))
        else:
            out.append(t.detach().requires_grad_(True))
    return tuple(out)


def _finish(xs, is_tuple, create_graph):
    xs = tuple(x if create_graph or x is None else x.detach() for x in xs)
    return xs if is_tuple else xs[0]


def _grads(outputs, inputs, grad_outputs, create_graph, strict, fn_name):
    outs = [o for o in outputs if o.requires_grad]
    gos = [g for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not outs:
        if strict:
            raise RuntimeError(
                f"The output of the user-provided function given to {fn_name} is independent "
                "of its inputs. This is not allowed in strict mode."
            )
        return tuple(zeros_like(x) for x in inputs)
    res = nbgrad.autograd.grad(
        outs, inputs, gos, create_graph=create_graph, retain_graph=True, allow_unused=True
    )
    result = []
    for i, (g, x) in enumerate(zip(res, inputs)):
        if g is None:
            if strict:
                raise RuntimeError(
                    f"The output of the user-provided function is independent of input {i}. "
                    "This is not allowed in strict mode."
                )
            g = zeros_like(x)
        result.append(g)
    return tuple(result)


def _vjp_of_grads(gs, wrt, vs, create_graph):
    """``sum_i vs[i] . d gs[i] / d wrt`` (zeros where unused): the second backward of ``jvp``'s
    double-vjp trick and of ``vhp``."""
    pairs = [(g, v) for g, v in zip(gs, vs) if g.requires_grad]
    res = (None,) * len(wrt)
    if pairs:
        res = nbgrad.autograd.grad(
            [g for g, _ in pairs],
            wrt,
            [v for _, v in pairs],
            create_graph=create_graph,
            retain_graph=True,
            allow_unused=True,
        )
    return tuple(zeros_like(x) if r is None else r for r, x in zip(res, wrt))


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``."""
    with enable_grad():
        is_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prep(inputs, create_graph)
        out_tuple, outputs = _as_tuple(
            func(*inputs), "outputs of the user-provided function", "vjp"
        )
        if v is None:
            if any(o.numel() != 1 for o in outputs):
                raise RuntimeError(
                    "The vector v can only be None if the user-provided function returns a "
                    "single Tensor with a single element."
                )
            vs = (None,) * len(outputs)
        else:
            vs = _as_tuple(v, "v", "vjp")[1]
            for o, vv in zip(outputs, vs):
                if o.shape != vv.shape:
                    raise RuntimeError(
                        f"Mismatch in shape: v has shape {vv.shape} but the output has shape "
                        f"{o.shape}"
                    )
        grads = _grads(outputs, inputs, vs, create_graph, strict, "vjp")
    return _finish(outputs, out_tuple, create_graph), _finish(grads, is_tuple, create_graph)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)`` by the double-vjp trick."""
    with enable_grad():
        is_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prep(inputs, create_graph)
        if v is None:
            if any(x.numel() != 1 for x in inputs):
                raise RuntimeError(
                    "The vector v can only be None if the input to the user-provided function is "
                    "a single Tensor with a single element."
                )

            vs = tuple(ones_like(x) for x in inputs)
        else:
            vs = _as_tuple(v, "v", "jvp")[1]
        out_tuple, outputs = _as_tuple(
            func(*inputs), "outputs of the user-provided function", "jvp"
        )
        us = tuple(zeros_like(o).requires_grad_(True) for o in outputs)
        gs = _grads(outputs, inputs, us, True, strict, "jvp")
        res = _vjp_of_grads(gs, us, vs, create_graph)
    return _finish(outputs, out_tuple, create_graph), _finish(res, out_tuple, create_graph)


def jacobian(
    func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"
):
    """The Jacobian of ``func`` at ``inputs``: shape ``output.shape + input.shape`` per pair;
    ``strategy="forward-mode"`` (with ``vectorize=True``, as PyTorch's) takes one
    Jacobian-vector product per input element, with dual tensors."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".'
        )
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either set '
                '`create_graph=False` or `strategy="reverse-mode"`.'
            )
        return _jacfwd(func, inputs, strict, vectorize)
    with enable_grad():
        is_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prep(inputs, create_graph)
        out_tuple, outputs = _as_tuple(
            func(*inputs), "outputs of the user-provided function", "jacobian"
        )
        jac = []
        for o in outputs:
            rows = [[] for _ in inputs]
            for j in range(o.numel()):
                g = zeros(o.numel(), dtype=o.dtype, device=o.device)
                g._data[j] = 1
                g = g.reshape(o.shape)
                gs = _grads((o,), inputs, (g,), create_graph, strict, "jacobian")
                for i, gi in enumerate(gs):
                    rows[i].append(gi)
            per_input = []
            for i, x in enumerate(inputs):
                if rows[i]:
                    per_input.append(stack(rows[i]).reshape(tuple(o.shape) + tuple(x.shape)))
                else:
                    per_input.append(zeros(tuple(o.shape) + tuple(x.shape), dtype=x.dtype))
            jac.append(_finish(per_input, is_tuple, create_graph))
    return tuple(jac) if out_tuple else jac[0]


def _jacfwd(func, inputs, strict=False, vectorize=False):
    """The Jacobian by forward mode (PyTorch's ``_jacfwd``): one jvp per standard basis
    vector of the inputs, where PyTorch batches them with vmap (the same numbers)."""
    if strict:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` and "
            '`strategy="forward-mode"` are not supported together (yet). Please either set '
            '`strict=False` or `strategy="reverse-mode"`.'
        )
    is_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError(
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
            "only implemented for `vectorize=True`."
        )
    columns = None  # per output: per input, the jvp of each of its elements
    out_tuple = False
    for j, x in enumerate(inputs):
        for k in range(x.numel()):
            with forward_ad.dual_level():
                duals = []
                for i, y in enumerate(inputs):
                    tangent = zeros(y.numel(), dtype=y.dtype, device=y.device)
                    if i == j:
                        tangent._data[k] = 1
                    duals.append(forward_ad.make_dual(y, tangent.reshape(y.shape)))
                out_tuple, outputs = _as_tuple(func(*duals), "outputs", "jacobian")
                if columns is None:
                    columns = [[[] for _ in inputs] for _ in outputs]
                for o, out in enumerate(outputs):
                    primal, tangent = forward_ad.unpack_dual(out)
                    columns[o][j].append(zeros_like(primal) if tangent is None else tangent)
                shapes = [tuple(forward_ad.unpack_dual(out).primal.shape) for out in outputs]
    if columns is None:  # (inputs with no elements: one call for the outputs' shapes)
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs", "jacobian")
        columns = [[[] for _ in inputs] for _ in outputs]
        shapes = [tuple(out.shape) for out in outputs]
    jac = []  # (lists, as PyTorch's forward mode gives them: see _tuple_postprocess)
    for o, shape in enumerate(shapes):
        per_input = []
        for j, x in enumerate(inputs):
            if columns[o][j]:
                per_input.append(stack(columns[o][j], -1).reshape(shape + tuple(x.shape)))
            else:
                per_input.append(zeros(shape + tuple(x.shape), dtype=x.dtype, device=x.device))
        jac.append(per_input)
    if not is_tuple:
        jac = tuple(per_input[0] for per_input in jac)
    return jac if out_tuple else jac[0]


def hessian(
    func,
    inputs,
    create_graph=False,
    strict=False,
    vectorize=False,
    outer_jacobian_strategy="reverse-mode",
):
    """The Hessian of a scalar function ``func`` at ``inputs``; with
    ``outer_jacobian_strategy="forward-mode"`` (and ``vectorize=True``, as PyTorch's), forward
    mode over the reverse-mode gradient."""
    is_tuple, inputs_t = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":  # (as PyTorch's: dual inputs need grad)
            inp = tuple(t.requires_grad_(True) for t in inp)
        out = func(*inp)
        _, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError(
                "The Tensor returned by the function given to hessian should contain a single "
                "element"
            )
        return jacobian(lambda *x: func(*x).reshape(()), inp, create_graph=True)

    # jac_func returns one gradient per input, so ``res[i][j]`` is d2f / dx_i dx_j
    res = jacobian(
        jac_func,
        inputs_t,
        create_graph=create_graph,
        strict=strict,
        vectorize=vectorize,
        strategy=outer_jacobian_strategy,
    )
    return res if is_tuple else res[0][0]


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)`` for a scalar function."""
    with enable_grad():
        is_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _prep(inputs, create_graph)
        out = func(*inputs)
        _, outs = _as_tuple(out, "outputs of the user-provided function", "vhp")
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError(
                "The function given in vhp should return a single Tensor with a single element."
            )
        if v is None:
            if any(x.numel() != 1 for x in inputs):
                raise RuntimeError(
                    "The vector v can only be None if the input to the user-provided function is "
                    "a single Tensor with a single element."
                )

            vs = tuple(ones_like(x) for x in inputs)
        else:
            vs = _as_tuple(v, "v", "vhp")[1]
        gs = _grads(outs, inputs, (None,), True, strict, "vhp")
        res = _vjp_of_grads(gs, inputs, vs, create_graph)
    return _finish(outs, False, create_graph), _finish(res, is_tuple, create_graph)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)``; the Hessian of a twice-differentiable scalar function is
    symmetric, so this equals ``vhp``."""
    return vhp(func, inputs, v, create_graph, strict)
