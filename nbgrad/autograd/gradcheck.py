"""Finite-difference checks of gradients: ``gradcheck`` and ``gradgradcheck``.

Mirrors ``torch/autograd/gradcheck.py`` (slow mode): the numerical Jacobian from central
differences is compared with the analytical one built row by row from vector-Jacobian
products. Use float64 inputs.
"""

from __future__ import annotations

import numpy as np

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` when the analytical and numerical gradients disagree."""


def _as_tuple(x):
    from nbgrad.tensor import Tensor

    return (x,) if isinstance(x, Tensor) else tuple(x)


def _outputs(func, inputs):
    from nbgrad.tensor import Tensor

    out = func(*inputs)
    return tuple(o for o in _as_tuple(out) if isinstance(o, Tensor))


def _numerical_jacobian(func, inputs, diff_idx, outputs, eps):
    """``J[out][inp]`` of shape (out.numel(), inp.numel()) by central differences."""
    jac = [[np.zeros((o.numel(), inputs[i].numel())) for i in diff_idx] for o in outputs]
    if True:  # inputs are perturbed in place, behind autograd's back (no version bump)
        for col, i in enumerate(diff_idx):
            data = inputs[i]._data
            for j in range(data.size):
                idx = np.unravel_index(j, data.shape)
                orig = data[idx].item()
                data[idx] = orig - eps
                minus = [
                    np.asarray(o._data, dtype=np.float64).copy() for o in _outputs(func, inputs)
                ]
                data[idx] = orig + eps
                plus = [
                    np.asarray(o._data, dtype=np.float64).copy() for o in _outputs(func, inputs)
                ]
                data[idx] = orig
                for k in range(len(outputs)):
                    jac[k][col][:, j] = ((plus[k] - minus[k]) / (2 * eps)).reshape(-1)
    return jac


def _analytical_jacobian(inputs, diff_idx, outputs):
    from nbgrad.autograd import grad
    from nbgrad.tensor import zeros_like

    jac = [[np.zeros((o.numel(), inputs[i].numel())) for i in diff_idx] for o in outputs]
    diff_inputs = [inputs[i] for i in diff_idx]
    for k, out in enumerate(outputs):
        if not out._requires_grad:
            continue
        for r in range(out.numel()):
            g = zeros_like(out)
            g._data[np.unravel_index(r, out.shape)] = 1
            grads = grad(out, diff_inputs, g, retain_graph=True, allow_unused=True)
            for col, gi in enumerate(grads):
                if gi is not None:
                    jac[k][col][r, :] = np.asarray(gi._data, dtype=np.float64).reshape(-1)
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
    from nbgrad.tensor import Tensor

    inputs = _as_tuple(inputs)
    diff_idx = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    for i in diff_idx:
        if inputs[i].dtype.name != "float64":
            import warnings

            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point. "
                "This check will likely fail if all the inputs are not of double precision "
                "floating point.",
                UserWarning,
                stacklevel=2,
            )
    outputs = _outputs(func, inputs)
    numerical = _numerical_jacobian(func, inputs, diff_idx, outputs, eps)
    analytical = _analytical_jacobian(inputs, diff_idx, outputs)
    for k in range(len(outputs)):
        for col, i in enumerate(diff_idx):
            a, n = analytical[k][col], numerical[k][col]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                msg = (
                    f"Jacobian mismatch for output {k} with respect to input {i},\n"
                    f"numerical:{n}\nanalytical:{a}\n"
                )
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


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
    from nbgrad.autograd import grad
    from nbgrad.tensor import Tensor, randn

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
        grads = grad(outs, diff_in, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        new_func,
        inputs + tuple(grad_outputs),
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
    )
