"""Finite-difference checks of gradients: ``gradcheck`` and ``gradgradcheck``.

Mirrors ``torch/autograd/gradcheck.py`` (slow mode): the numerical Jacobian from central
differences is compared with the analytical one built row by row from vector-Jacobian
products. Use float64 inputs.
"""

from __future__ import annotations

import warnings

import numpy as np

import nbgrad
from nbgrad._graph.node import Node
from nbgrad._tensor.dispatch import _edge_of
from nbgrad.autograd._gradcheck_forward import forward_ad_mismatch
from nbgrad.tensor import Tensor, randn, tensor, zeros, zeros_like

__all__ = [
    "gradcheck",
    "gradgradcheck",
    "GradcheckError",
    "get_numerical_jacobian",
    "get_analytical_jacobian",
]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` when the analytical and numerical gradients disagree."""


def _as_tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _outputs(func, inputs):
    out = func(*inputs)
    return tuple(o for o in _as_tuple(out) if isinstance(o, Tensor))


def _numerical_jacobian(func, inputs, diff_idx, outputs, eps, keep=None):
    """``J[out][inp]`` of shape (out.numel(), inp.numel()) by central differences; ``keep``:
    the positions of ``outputs`` among all of ``func``'s tensor outputs (default: all)."""
    keep = range(len(outputs)) if keep is None else keep
    jac = [[np.zeros((o.numel(), inputs[i].numel())) for i in diff_idx] for o in outputs]
    if True:  # inputs are perturbed in place, behind autograd's back (no version bump)
        for col, i in enumerate(diff_idx):
            data = inputs[i]._data
            for j in range(data.size):
                idx = np.unravel_index(j, data.shape)
                orig = data[idx].item()
                data[idx] = orig - eps
                minus = _perturbed_outputs(func, inputs)
                data[idx] = orig + eps
                plus = _perturbed_outputs(func, inputs)
                data[idx] = orig
                for a, b in zip(minus, plus):
                    _check_outputs_same_dtype_and_shape(a, b, eps, tuple(int(n) for n in idx))
                minus = [np.asarray(o._data, dtype=np.float64) for o in minus]
                plus = [np.asarray(o._data, dtype=np.float64) for o in plus]
                for k, pos in enumerate(keep):
                    jac[k][col][:, j] = ((plus[pos] - minus[pos]) / (2 * eps)).reshape(-1)
    return jac


def _perturbed_outputs(func, inputs):
    """``func``'s tensor outputs, copied (an output may share the perturbed input's memory)."""
    return [o.detach().clone() for o in _outputs(func, inputs)]


def _check_outputs_same_dtype_and_shape(output1, output2, eps, idx=None):
    """PyTorch's check that perturbing an input changed no output's shape or dtype."""
    on_index = f"on index {idx} " if idx is not None else ""
    if output1.shape != output2.shape:
        raise AssertionError(
            "Expected `func` to return outputs with the same shape when inputs are perturbed "
            f"{on_index}by {eps}, but got: shapes {output1.shape} and {output2.shape}."
        )
    if output1.dtype != output2.dtype:
        raise AssertionError(
            "Expected `func` to return outputs with the same dtype when inputs are perturbed "
            f"{on_index}by {eps}, but got: dtypes {output1.dtype} and {output2.dtype}."
        )


_FAILED_NONDET_MSG = """\n
NOTE: If your op relies on non-deterministic operations i.e., it is listed here:
https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html
this failure might be expected.

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `nondet_tol=<tol>` as a keyword argument.
"""


def _vjps(output, diff_inputs):
    """For each element ``r`` of ``output``: ``r`` and the gradients of ``diff_inputs`` for an
    output gradient that is one at ``r`` and zero elsewhere (a row of the Jacobian)."""
    for r in range(output.numel()):
        g = zeros_like(output)
        g._data[np.unravel_index(r, output.shape)] = 1
        yield r, nbgrad.autograd.grad(output, diff_inputs, g, retain_graph=True, allow_unused=True)


def _analytical_jacobian(inputs, diff_idx, outputs, nondet_tol=0.0, check_grad_dtypes=False):
    """``J[out][inp]`` row by row from vector-Jacobian products, each row built twice: as
    PyTorch's, a backward that gives different values for the same input and output gradient
    (beyond ``nondet_tol``) is not reentrant; a gradient of the wrong size fails, one of the
    wrong dtype too with ``check_grad_dtypes``."""
    jac = [[np.zeros((o.numel(), inputs[i].numel())) for i in diff_idx] for o in outputs]
    diff_inputs = [inputs[i] for i in diff_idx]
    reentrant = sizes_ok = types_ok = True
    for k, out in enumerate(outputs):
        if not out._requires_grad:
            continue
        for (r, first), (_, again) in zip(_vjps(out, diff_inputs), _vjps(out, diff_inputs)):
            for col, (gi, gj) in enumerate(zip(first, again)):
                if gi is None:
                    continue
                if gi.shape != diff_inputs[col].shape:
                    sizes_ok = False
                    continue
                if gi.dtype is not diff_inputs[col].dtype:
                    types_ok = False
                row = np.asarray(gi._data, dtype=np.float64).reshape(-1)
                if (
                    gj is None
                    or np.abs(row - np.asarray(gj._data, np.float64).reshape(-1)).max(initial=0.0)
                    > nondet_tol
                ):
                    reentrant = False
                jac[k][col][r, :] = row
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not reentrant:
        raise GradcheckError(
            "Backward is not reentrant, i.e., running backward with same input and grad_output "
            "multiple times gives different values, although analytical gradient matches "
            f"numerical gradient.The tolerance for nondeterminism was {nondet_tol}."
            + _FAILED_NONDET_MSG
        )
    return jac


def gradcheck(
    func,
    inputs,
    *,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    raise_exception=True,
    nondet_tol=0.0,
    check_undefined_grad=True,
    check_grad_dtypes=False,
    check_batched_grad=False,
    check_batched_forward_grad=False,
    check_forward_ad=False,
    check_backward_ad=True,
    fast_mode=False,
    masked=None,
):
    """Check the gradients of ``func`` at ``inputs`` against finite differences.

    Returns True, or raises ``GradcheckError`` (False if ``raise_exception=False``).

    Example:
        >>> import nbgrad as ng
        >>> x = ng.randn(3, dtype=ng.float64, requires_grad=True)
        >>> ng.autograd.gradcheck(lambda t: (t.sin() * t).sum(), (x,))
        True
    """
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    for i in diff_idx:
        if inputs[i].dtype.name != "float64":
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point. "
                "This check will likely fail if all the inputs are not of double precision "
                "floating point.",
                UserWarning,
                stacklevel=2,
            )
    all_outputs = _outputs(func, inputs)
    keep = [k for k, o in enumerate(all_outputs) if o.requires_grad]
    outputs = tuple(all_outputs[k] for k in keep)

    def fail(msg):
        if raise_exception:
            raise GradcheckError(msg)
        return False

    if check_forward_ad:  # see NOTE [gradcheck in forward mode]
        message = forward_ad_mismatch(func, inputs, diff_idx, _numerical_jacobian, eps, rtol, atol)
        if message is not None:
            return fail(message)
    if not check_backward_ad:
        return True
    if not outputs:  # nothing to differentiate: the function must not depend on its inputs
        numerical = _numerical_jacobian(func, inputs, diff_idx, all_outputs, eps)
        if any(np.any(n != 0) for row in numerical for n in row):
            return fail("Numerical gradient for function expected to be zero")
        return True
    numerical = _numerical_jacobian(func, inputs, diff_idx, outputs, eps, keep)
    try:
        analytical = _analytical_jacobian(inputs, diff_idx, outputs, nondet_tol, check_grad_dtypes)
    except GradcheckError as e:
        return fail(str(e))
    for k in range(len(outputs)):
        for col, i in enumerate(diff_idx):
            a, n = analytical[k][col], numerical[k][col]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                msg = (
                    f"Jacobian mismatch for output {k} with respect to input {i},\n"
                    f"numerical:{n}\nanalytical:{a}\n"
                )
                return fail(msg)
    if check_undefined_grad:
        try:
            _check_undefined_grad(func, inputs, diff_idx)
        except GradcheckError as e:
            return fail(str(e))
    return True


class _UndefinedGrad(Node):
    """Hands on no gradient (None) for its output: how gradcheck asks a backward to handle
    undefined output gradients (PyTorch's ``UndefinedGrad``)."""

    def apply(self, grads):
        return [None]


def _undefined(t):
    """``t`` behind an ``_UndefinedGrad`` node: whatever gradient reaches it, None goes on."""
    node = _UndefinedGrad((_edge_of(t),))
    node._input_metadata_ = (t._metadata_tuple(),)
    out = t.detach()
    out.grad_fn = node
    out._output_nr = 0
    out._requires_grad = True
    return out


def _check_undefined_grad(func, inputs, diff_idx):
    """PyTorch's ``_test_undefined_backward_mode``: with every output's gradient undefined (and,
    for several outputs, each one's in turn), backward runs and gives no gradient or zeros."""
    diff_inputs = [inputs[i] for i in diff_idx]

    def differentiable():
        return [o for o in _outputs(func, inputs) if o.requires_grad]

    cases = [[_undefined(o) for o in differentiable()]]
    if len(cases[0]) > 1:
        for k in range(len(cases[0])):
            cases.append([_undefined(o) if j == k else o for j, o in enumerate(differentiable())])
    for outs in cases:
        try:
            grads = nbgrad.autograd.grad(
                outs, diff_inputs, [zeros_like(o) for o in outs], allow_unused=True
            )
        except RuntimeError as e:
            _warn_undefined_grad_check()
            raise GradcheckError(
                "Expected backward function to handle undefined output grads. Please look at "
                '"Notes about undefined output gradients" in "tools/autograd/derivatives.yaml"'
            ) from e
        if any(g is not None and bool((g != 0).any()) for g in grads):
            _warn_undefined_grad_check()
            raise GradcheckError(
                "Expected all input grads to be undefined or zero when all output grads are "
                'undefined or zero. Please look at "Notes about undefined output gradients" in '
                '"tools/autograd/derivatives.yaml"'
            )


def _warn_undefined_grad_check():
    warnings.warn(
        "Backwards compatibility: New undefined gradient support checking feature is enabled by "
        "default, but it may break existing callers of this function. If this is true for you, "
        'you can call this function with "check_undefined_grad=False" to disable the feature',
        UserWarning,
        stacklevel=4,
    )


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    *,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    gen_non_contig_grad_outputs=False,
    raise_exception=True,
    nondet_tol=0.0,
    check_undefined_grad=True,
    check_grad_dtypes=False,
    check_batched_grad=False,
    check_fwd_over_rev=False,
    check_rev_over_rev=True,
    fast_mode=False,
    masked=False,
):
    """Check second derivatives: ``gradcheck`` of the gradient of ``func`` (built with
    ``create_graph=True``) with respect to the inputs and the output gradients."""
    inputs = _as_tuple(inputs)
    outputs = _outputs(func, inputs)
    diff_outputs = [o for o in outputs if o.requires_grad and o.is_floating_point()]
    if grad_outputs is None:
        grad_outputs = tuple(
            randn(o.shape, dtype=o.dtype, device=o.device, requires_grad=True) for o in diff_outputs
        )
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff_idx = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]

    def new_func(*args):
        inp, gos = args[:n_in], args[n_in:]
        outs = [o for o in _outputs(func, inp) if o.requires_grad and o.is_floating_point()]
        diff_in = [inp[i] for i in diff_idx]
        if not outs:
            return ()
        grads = nbgrad.autograd.grad(outs, diff_in, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        new_func,
        inputs + tuple(grad_outputs),
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
    )


def _deprecated(name):
    warnings.warn(
        f"`{name}` was part of PyTorch's private API and not "
        "meant to be exposed. We are deprecating it and it will be removed "
        "in a future version of PyTorch. If you have a specific use for "
        "this or feature request for this to be a stable API, please file "
        "us an issue at https://github.com/pytorch/pytorch/issues/new",
        FutureWarning,
        stacklevel=3,
    )


def _check_grad_out(grad_out, name):
    if grad_out != 1.0:  # kept in the signature only for old callers, as in PyTorch
        raise ValueError(
            f"Expected grad_out to be 1.0. {name} no longer supports values of grad_out != 1.0."
        )


# NOTE [Deprecated Jacobian helpers]
# ``get_numerical_jacobian`` and ``get_analytical_jacobian`` are PyTorch's old gradcheck helpers,
# kept (deprecated, with its FutureWarning) for old code. As in PyTorch, their Jacobians are laid
# out one per input, of shape ``(input.numel(), output.numel())`` (the transpose of the matrices
# ``gradcheck`` compares), and only the first output of ``fn`` counts for the numerical one.
def get_numerical_jacobian(fn, inputs, target=None, eps=1e-3, grad_out=1.0):
    """Deprecated: the Jacobians of ``fn(inputs)`` (its first output; ``fn`` takes the inputs as
    one tuple) with respect to each tensor of ``target`` (default ``inputs``) that requires grad,
    by central differences: a tuple of ``(input.numel(), output.numel())`` tensors."""
    _deprecated("get_numerical_jacobian")
    _check_grad_out(grad_out, "get_numerical_jacobian")
    inputs = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    target = inputs if target is None else target
    targets = [target] if isinstance(target, Tensor) else list(target)
    targets = [t for t in targets if isinstance(t, Tensor) and t.requires_grad]

    def first_output():
        return _outputs(lambda *a: fn(a), inputs)[0]

    out = first_output()
    result = []
    for t in targets:
        jac = np.zeros((t.numel(), out.numel()))
        data = t._data  # perturbed in place, behind autograd's back
        for j in range(data.size):
            idx = np.unravel_index(j, data.shape)
            orig = data[idx].item()
            data[idx] = orig - eps
            minus = np.asarray(first_output()._data, dtype=np.float64).copy()
            data[idx] = orig + eps
            plus = np.asarray(first_output()._data, dtype=np.float64).copy()
            data[idx] = orig
            jac[j] = ((plus - minus) / (2 * eps)).reshape(-1)
        result.append(tensor(jac, dtype=out.dtype, device=out.device))
    return tuple(result)


def get_analytical_jacobian(inputs, output, nondet_tol=0.0, grad_out=1.0):
    """Deprecated: ``(jacobians, reentrant, correct_grad_sizes, correct_grad_types)``, with one
    ``(input.numel(), output.numel())`` Jacobian of ``output`` per input that requires grad,
    built twice from vector-Jacobian products; ``reentrant`` says the two agree within
    ``nondet_tol``."""
    _deprecated("get_analytical_jacobian")
    _check_grad_out(grad_out, "get_analytical_jacobian")
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    diff_inputs = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    sizes_ok = types_ok = True

    def build():
        nonlocal sizes_ok, types_ok
        jacs = [
            zeros(t.numel(), output.numel(), dtype=t.dtype, device=t.device) for t in diff_inputs
        ]
        for j, grads in _vjps(output, diff_inputs):
            for jac, t, d in zip(jacs, diff_inputs, grads):
                if d is None:
                    continue
                if d.shape != t.shape:
                    sizes_ok = False
                elif d.dtype is not t.dtype:
                    types_ok = False
                jac._data[:, j] = d.detach()._data.reshape(-1)
        return tuple(jacs)

    jacobians, again = build(), build()
    reentrant = all(
        a.numel() == 0 or float(np.abs(a._data - b._data).max()) <= nondet_tol
        for a, b in zip(jacobians, again)
    )
    return jacobians, reentrant, sizes_ok, types_ok
