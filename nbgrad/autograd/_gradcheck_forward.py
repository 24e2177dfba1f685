"""``gradcheck(check_forward_ad=True)``: the Jacobian by forward-mode AD against finite
differences (PyTorch's ``_get_analytical_jacobian_forward_ad`` in
``torch/autograd/gradcheck.py``)."""

from __future__ import annotations

import numpy as np

from nbgrad.autograd import forward_ad
from nbgrad.tensor import Tensor, zeros_like


# NOTE [gradcheck in forward mode]
# As PyTorch's slow mode: each differentiable input (one that requires grad) is given, element
# by element, a one-hot tangent, the others zero tangents, and the outputs' tangents are the
# Jacobian's column. ``func`` sees dual tensors of detached inputs (none of them requires grad,
# so a custom Function's backward is never what is checked), and an output without a tangent
# gives a zero column.
def forward_ad_mismatch(func, inputs, diff_idx, numerical_jacobian, eps, rtol, atol):
    """PyTorch's error message for the first column that disagrees, or None."""
    primals = [t.detach() if isinstance(t, Tensor) else t for t in inputs]
    outputs = [o for o in _tensor_outputs(func(*primals))]
    keep = [k for k, o in enumerate(outputs) if o.is_floating_point()]
    numerical = numerical_jacobian(func, primals, diff_idx, [outputs[k] for k in keep], eps, keep)
    analytical = [[np.zeros_like(n) for n in row] for row in numerical]
    for col, i in enumerate(diff_idx):
        for j in range(primals[i].numel()):
            with forward_ad.dual_level():
                duals = list(primals)
                for m in diff_idx:
                    tangent = zeros_like(primals[m])
                    if m == i:
                        tangent.view(-1)._data[j] = 1
                    duals[m] = forward_ad.make_dual(primals[m], tangent)
                outs = _tensor_outputs(func(*duals))
                for row, k in enumerate(keep):
                    t = forward_ad.unpack_dual(outs[k]).tangent
                    if t is not None:
                        analytical[row][col][:, j] = np.asarray(t._data, np.float64).reshape(-1)
    for row, k in enumerate(keep):
        for col, i in enumerate(diff_idx):
            a, n = analytical[row][col], numerical[row][col]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                return (
                    f"Jacobian computed with forward mode mismatch for output {k} with respect "
                    f"to input {i},\nnumerical:{n}\nanalytical:{a}\n"
                )
    return None


def _tensor_outputs(out):
    return [o for o in ((out,) if isinstance(out, Tensor) else out) if isinstance(o, Tensor)]
