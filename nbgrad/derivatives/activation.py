"""Op table rows: the activations that PyTorch runs as one op each (``relu``, ``leaky_relu``,
``threshold``, ``hardtanh``, ``silu``, ``elu``, ``softplus``, ``log_sigmoid``, ``gelu``, ``mish``,
``hardswish``, ``hardsigmoid``, ``selu``, ``celu``, ``softshrink``, ``hardshrink``, ``glu``,
``prelu``), and the backward rows of the first (``threshold_backward``...).

Their formulas are Tensor ops, so they are differentiable to any order; where PyTorch's
double backward is zero (the piecewise-linear ones), a ``where`` on a constant mask gives zero.
"""

from __future__ import annotations

import math

import numpy as np

from nbgrad._tensor import creation as _C
from nbgrad._tensor.dispatch import OPS, _dispatch
from nbgrad.derivatives.opinfo import op, row_function
from nbgrad.kernels.activation import _elu, _gelu, _glu, _mish, _softplus, _threshold
from nbgrad.kernels.common import _contiguous, _sigmoid

# torch.nn.functional.selu's constants (``SELU``: Klambauer et al., 2017)
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946

_ONE_SIXTH_F32 = float(np.float32(1 / 6))

# fmt: off
op("mish", "MishBackward0", "self", lambda xp, self: _mish(xp, self), promote="float",
   self=lambda grad, self: _mish_backward(grad, self))
op("hardswish", "HardswishBackward0", "self", lambda xp, self: self * xp.clip(self + 3, 0, 6) / 6, promote="float",
   self=lambda grad, self: grad * _C.where(self < -3, 0.0, _C.where(self <= 3, self / 3 + 0.5, 1.0)))
# PyTorch's CPU kernel multiplies the gradient by 1/6 as a float32 even for double
op("hardsigmoid", "HardsigmoidBackward0", "self", lambda xp, self: xp.clip(self + 3, 0, 6) / 6, promote="float",
   self=lambda grad, self: _C.where((self > -3).logical_and(self < 3), grad * _ONE_SIXTH_F32, 0.0))
# selu is elu with a scale (PyTorch: EluBackward0, and EluBackward1 in place, which saves the result)
op("selu", "EluBackward0", "self", lambda xp, self: SELU_SCALE * _elu(xp, self, SELU_ALPHA), promote="float",
   self=lambda grad, self: _C.where(self > 0, grad * SELU_SCALE, grad * (SELU_SCALE * SELU_ALPHA) * _below(self, 0.0).exp()))
op("selu_", "EluBackward1", "self", lambda xp, self: SELU_SCALE * _elu(xp, self, SELU_ALPHA), promote="float",
   self=lambda grad, result: _C.where(result > 0, grad * SELU_SCALE, grad * (_below(result, 0.0) + SELU_SCALE * SELU_ALPHA)))
op("celu", "CeluBackward0", "self", lambda xp, self, alpha: _elu(xp, self / alpha, 1.0) * alpha, attrs="alpha", promote="float",
   self=lambda grad, self, alpha: _C.where(self > 0, grad, grad * (_below(self, 0.0) / alpha).exp()))
op("celu_", "CeluBackward1", "self", lambda xp, self, alpha: _elu(xp, self / alpha, 1.0) * alpha, attrs="alpha", promote="float",
   self=lambda grad, result, alpha: _C.where(result > 0, grad, grad * (_below(result, 0.0) / alpha + 1)))
op("softshrink", "SoftshrinkBackward0", "self", lambda xp, self, lambd: xp.where(self > lambd, self - lambd, xp.where(self < -lambd, self + lambd, 0)).astype(self.dtype, copy=False),
   attrs="lambd", promote="float",
   self=lambda grad, self, lambd: _C.where(self.abs() > lambd, grad, 0.0))
op("hardshrink", "HardshrinkBackward0", "self", lambda xp, self, lambd: xp.where(xp.abs(self) > lambd, self, 0).astype(self.dtype, copy=False),
   attrs="lambd",
   self=lambda grad, self, lambd: _C.where(self.abs() > lambd, grad, 0.0))
op("glu", "GluBackward0", "self", lambda xp, self, dim: _glu(xp, self, dim), attrs="dim", promote="float",
   self=lambda grad, self, dim: _glu_backward(grad, self, dim))
# weight arrives already viewed to broadcast along the channel dim (F.prelu views it, as PyTorch)
op("prelu", "PreluKernelBackward0", "self weight", lambda xp, self, weight: xp.where(self > 0, self, weight * self), promote="binary",
   self=lambda grad, self, weight: _C.where(self > 0, grad, grad * weight),
   weight=lambda grad, self: _C.where(self > 0, 0.0, grad * self))
# fmt: on


def _mish_backward(grad, x):
    t = _dispatch(OPS["softplus"], (x,), {"beta": 1.0, "threshold": 20.0}).tanh()
    return grad * (t + x * x.sigmoid() * (1 - t * t))


def _glu_backward(grad, x, dim):
    first, second = x.chunk(2, dim)
    s = second.sigmoid()
    return _dispatch(OPS["cat"], ([grad * s, grad * first * s * (1 - s)],), {"dim": dim})


threshold_backward = row_function("threshold_backward")


leaky_relu_backward = row_function("leaky_relu_backward")


hardtanh_backward = row_function("hardtanh_backward")


# fmt: off
op("relu", "ReluBackward0", "self", lambda xp, self: xp.maximum(self, 0), on_arrays=True, self=lambda grad, result: threshold_backward(grad, result, threshold=0))
op("leaky_relu", "LeakyReluBackward0", "self", lambda xp, self, negative_slope: xp.where(self > 0, self, self * negative_slope), on_arrays=True, attrs="negative_slope",
   self=lambda grad, self, negative_slope: leaky_relu_backward(grad, self, negative_slope=negative_slope))
# leaky_relu_ (in place) saves its result instead, as PyTorch's LeakyReluBackward1
op("leaky_relu_", "LeakyReluBackward1", "self", lambda xp, self, negative_slope: xp.where(self > 0, self, self * negative_slope), on_arrays=True, attrs="negative_slope",
   self=lambda grad, result, negative_slope: leaky_relu_backward(grad, result, negative_slope=negative_slope))
# NOTE [Piecewise-linear backwards are ops]
# as in PyTorch, the backwards of relu, leaky_relu and
# hardtanh are ops of their own, whose derivative for ``self`` is zero. So under create_graph
# the gradient they give requires grad even when it does not depend on ``self`` (a second
# grad gives zeros, not an error), and a NaN input takes PyTorch's branch.
# threshold: ``value`` where ``self <= threshold``; in place (ThresholdBackward1) the formula
# reads the result, as PyTorch's (whose saved self is the modified tensor)
op("threshold", "ThresholdBackward0", "self", lambda xp, self, threshold, value: _threshold(xp, self, threshold, value), on_arrays=True, attrs="threshold value",
   self=lambda grad, self, threshold: threshold_backward(grad, self, threshold=threshold))
op("threshold_", "ThresholdBackward1", "self", lambda xp, self, threshold, value: _threshold(xp, self, threshold, value), on_arrays=True, attrs="threshold value",
   self=lambda grad, result, threshold: threshold_backward(grad, result, threshold=threshold))
op("threshold_backward", "ThresholdBackwardBackward0", "grad_output self", lambda xp, grad_output, self, threshold: _contiguous(xp, xp.where(self <= threshold, 0, grad_output)),
   attrs="threshold", promote="binary",
   grad_output=lambda grad, self, threshold: threshold_backward(grad, self, threshold=threshold),
   self=lambda grad: _C.zeros_like(grad))
op("leaky_relu_backward", "LeakyReluBackwardBackward0", "grad_output self", lambda xp, grad_output, self, negative_slope: _contiguous(xp, xp.where(self > 0, grad_output, grad_output * negative_slope)),
   attrs="negative_slope", promote="binary",
   grad_output=lambda grad, self, negative_slope: leaky_relu_backward(grad, self, negative_slope=negative_slope),
   self=lambda grad: _C.zeros_like(grad))
op("hardtanh_backward", "HardtanhBackwardBackward0", "grad_output self", lambda xp, grad_output, self, min_val, max_val: _contiguous(xp, xp.where((self <= min_val) | (self >= max_val), 0, grad_output)),
   attrs="min_val max_val", promote="binary",
   grad_output=lambda grad, self, min_val, max_val: hardtanh_backward(grad, self, min_val=min_val, max_val=max_val),
   self=lambda grad: _C.zeros_like(grad))
op("silu", "SiluBackward0", "self", lambda xp, self: self * _sigmoid(xp, self), promote="float",
   self=lambda grad, self: _silu_backward(grad, self))
op("elu", "EluBackward0", "self", lambda xp, self, alpha: _elu(xp, self, alpha), attrs="alpha", promote="float",
   self=lambda grad, self, alpha: _C.where(self > 0, grad, grad * alpha * _below(self, 0.0).exp()))
# elu_ (in place) saves its result, as PyTorch's EluBackward1: exp(x) is result / alpha + 1
op("elu_", "EluBackward1", "self", lambda xp, self, alpha: _elu(xp, self, alpha), attrs="alpha", promote="float",
   self=lambda grad, result, alpha: _C.where(result > 0, grad, grad * (_below(result, 0.0) + alpha)))
op("softplus", "SoftplusBackward0", "self", lambda xp, self, beta, threshold: _softplus(xp, self, beta, threshold), attrs="beta threshold", promote="float",
   self=lambda grad, self, beta, threshold: _C.where(self * beta > threshold, grad, grad * _below(self * beta, threshold).sigmoid()))
op("hardtanh", "HardtanhBackward0", "self", lambda xp, self, min_val, max_val: xp.clip(self, min_val, max_val), on_arrays=True, attrs="min_val max_val",
   self=lambda grad, self, min_val, max_val: hardtanh_backward(grad, self, min_val=min_val, max_val=max_val))
op("log_sigmoid", "LogSigmoidBackward0", "self", lambda xp, self: -_softplus(xp, -self, 1.0, 20.0), promote="float",
   self=lambda grad, self: grad * (-self).sigmoid())
op("gelu", "GeluBackward0", "self", lambda xp, self, approximate: _gelu(xp, self, approximate), attrs="approximate", promote="float",
   self=lambda grad, self, approximate: _gelu_backward(grad, self, approximate))
# fmt: on


def _silu_backward(grad, self):
    s = self.sigmoid()
    return grad * s * (1 + self * (1 - s))


def _gelu_backward(grad, x, approximate):
    if approximate == "tanh":
        k = math.sqrt(2 / math.pi)
        inner = k * (x + 0.044715 * x**3)
        t = inner.tanh()
        d_inner = k * (1 + 3 * 0.044715 * x * x)
        return grad * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner)
    cdf = 0.5 * (1 + (x * (1 / math.sqrt(2))).erf())
    pdf = (x * x * -0.5).exp() * (1 / math.sqrt(2 * math.pi))
    return grad * (cdf + x * pdf)


def _below(x, threshold):
    """``x`` where it is below ``threshold``, else the constant ``threshold``: the same values
    up to the threshold, but a derivative of 0 on it. PyTorch's double backward of elu and
    softplus masks with a strict ``x < threshold``, so the second derivative on a kink is 0."""
    return _C.where(x < threshold, x, threshold)
