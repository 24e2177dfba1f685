"""More activations of ``nbgrad.nn.functional`` (``functional.py`` holds the common ones):
``prelu``, ``glu``, ``mish``, ``hardswish``, ``hardsigmoid``, ``selu``, ``celu``, ``softmin``,
``softsign``, ``softshrink``, ``hardshrink``, ``tanhshrink``, ``rrelu``, ``gumbel_softmax``, and
the in-place forms (``relu_``, ``elu_``...).

NOTE [One op or composed]
where PyTorch runs one ATen op with its own backward node
(``MishBackward0``, ``GluBackward0``, ``PreluKernelBackward0``...), nbgrad has a row of the op
table (``nbgrad/derivatives/activation.py``) with that node name; where PyTorch composes
(``softsign``, ``tanhshrink``, ``softmin``), nbgrad composes the same ops, so the graphs match.
``rrelu`` is composed from table ops where PyTorch has ``RreluWithNoiseBackward0``: its
``grad_fn`` is the last op composed (NOTE [Composed gaps]).
"""

from __future__ import annotations

import warnings

import numpy as np

import nbgrad  # nbgrad.nn.functional, read at call time: that module imports this one
from nbgrad import dtypes
from nbgrad._tensor import creation as _creation
from nbgrad._tensor.dispatch import _dispatch
from nbgrad.derivatives import OPS
from nbgrad.nn._functional_conv import _F
from nbgrad.tensor import Tensor, tensor

__all__ = [
    "prelu",
    "glu",
    "mish",
    "hardswish",
    "hardsigmoid",
    "selu",
    "celu",
    "softmin",
    "softsign",
    "softshrink",
    "hardshrink",
    "tanhshrink",
    "relu_",
    "elu_",
    "celu_",
    "selu_",
    "leaky_relu_",
    "hardtanh_",
    "threshold_",
    "rrelu",
    "rrelu_",
    "gumbel_softmax",
]


def _unary(name, input, attrs, inplace=False, inplace_row=None):
    if inplace:
        return input._inplace(OPS[inplace_row or name], (), attrs)
    return _dispatch(OPS[name], (input,), attrs)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``x`` where positive, ``weight * x`` elsewhere; ``weight`` has one slope, or one per
    channel (dim 1) (``PreluKernelBackward0``)."""
    if weight.dim() > 1:
        raise RuntimeError(
            f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}"
        )
    if input.dtype != weight.dtype:
        raise RuntimeError(
            "prelu: Type promoting not supported. Got "
            f"{input.dtype._legacy[:-6]} and {weight.dtype._legacy[:-6]}"
        )
    n = weight.numel()
    channels = input.shape[1] if input.dim() >= 2 else 1
    if n != 1 and n != channels:
        raise RuntimeError(
            "Mismatch of parameter numbers and input channel size. Found parameter numbers = "
            f"{n} and channel size = {channels}."
        )
    # as PyTorch: the weight viewed to broadcast along dim 1 (ViewBackward0)
    shape = (n,) + (1,) * (input.dim() - 2) if n > 1 else (1,) * input.dim()
    weight = weight.view(shape)
    return _dispatch(OPS["prelu"], (input, weight), {})


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """``a * sigmoid(b)`` for ``a, b`` the halves of ``input`` along ``dim`` (``GluBackward0``)."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim + input.dim() if dim < 0 else dim
    if not 0 <= d < input.dim():
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-input.dim()}, "
            f"{input.dim() - 1}], but got {dim})"
        )
    if input.shape[d] % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}"
        )
    return _dispatch(OPS["glu"], (input,), {"dim": d})


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))`` (``MishBackward0``)."""
    return _unary("mish", input, {}, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6`` (``HardswishBackward0``)."""
    return _unary("hardswish", input, {}, inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6`` (``HardsigmoidBackward0``)."""
    return _unary("hardsigmoid", input, {}, inplace)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``scale * elu(x, alpha)`` with the self-normalising constants (``EluBackward0``)."""
    return _unary("selu", input, {}, inplace, "selu_")


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` (``CeluBackward0``)."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _unary("celu", input, {"alpha": float(alpha)}, inplace, "celu_")


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``softmax(-input, dim)``."""
    # nbgrad.nn.functional, read at call time: that module imports this one
    _softmax_dim = nbgrad.nn.functional._softmax_dim

    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    if dtype is not None:
        input = input.to(dtypes.as_dtype(dtype))
    return (-input).softmax(dim)


def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``."""
    return input / (input.abs() + 1)


def _check_lambd(input, lambd):
    if lambd < 0:
        name = {"float64": "Double", "float32": "Float", "float16": "Half"}.get(
            str(input.dtype).replace("nbgrad.", ""), "Float"
        )
        hi = "1.79769e+308" if name == "Double" else "3.40282e+38"
        raise RuntimeError(
            f"lambda must be in range [0, {hi}] for input dtype {name}, but found {lambd:g}"
        )


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0
    (``SoftshrinkBackward0``)."""
    _check_lambd(input, lambd)
    return _unary("softshrink", input, {"lambd": float(lambd)})


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0 (``HardshrinkBackward0``)."""
    return _unary("hardshrink", input, {"lambd": float(lambd)})


def tanhshrink(input: Tensor) -> Tensor:
    """``x - tanh(x)``."""
    return input - input.tanh()


def relu_(input: Tensor) -> Tensor:
    """``relu`` in place."""
    return _F().relu(input, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``elu`` in place (``EluBackward1``)."""
    return _F().elu(input, alpha, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``celu`` in place (``CeluBackward1``)."""
    return _F().celu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:
    """``selu`` in place (``EluBackward1``)."""
    return _F().selu(input, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``leaky_relu`` in place (``LeakyReluBackward1``)."""
    return _F().leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``hardtanh`` in place."""
    return _F().hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """``threshold`` in place (``ThresholdBackward1``)."""
    return _F().threshold(input, threshold, value, inplace=True)


def rrelu(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
) -> Tensor:
    """Randomised leaky ReLU: in training, each non-positive entry times a slope drawn
    uniformly from ``[lower, upper]``; in evaluation, ``leaky_relu`` with the mean slope.

    NOTE [RReLU as leaky ReLU or a product]
    PyTorch's one node is ``RreluWithNoiseBackward0``;
    here evaluation is the ``leaky_relu`` row and training ``input * noise`` with the noise
    (the slopes, and 1 where positive) drawn in NumPy: the gradients are the same.
    """
    if not training:
        return _F().leaky_relu(input, (lower + upper) / 2, inplace)
    x = np.asarray(input.detach())
    slopes = _creation._rng.uniform(lower, upper, size=x.shape)
    noise = tensor(np.where(x <= 0, slopes, 1.0).astype(input.dtype.np), device=input.device)
    return input.mul_(noise) if inplace else input * noise


def rrelu_(
    input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False
) -> Tensor:
    """``rrelu`` in place."""
    return rrelu(input, lower, upper, training, inplace=True)


def gumbel_softmax(
    logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1
) -> Tensor:
    """A sample of the Gumbel-softmax distribution: ``softmax((logits + g) / tau)`` for Gumbel
    noise ``g``; with ``hard``, the one-hot of its argmax, with the soft sample's gradient."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    draws = _creation._rng.exponential(size=tuple(logits.shape)).astype(logits.dtype.np)
    gumbels = -tensor(draws, device=logits.device).log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = _creation.zeros_like(logits).scatter(dim, index, value=1.0)
    return y_hard - y_soft.detach() + y_soft
