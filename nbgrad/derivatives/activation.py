"""Op table rows: the activations that PyTorch runs as one op each (``mish``, ``hardswish``,
``hardsigmoid``, ``selu``, ``celu``, ``softshrink``, ``hardshrink``, ``glu``, ``prelu``).

Their formulas are Tensor ops, so they are differentiable to any order; where PyTorch's
double backward is zero (the piecewise-linear ones), a ``where`` on a constant mask gives zero.
"""

from __future__ import annotations

import numpy as np

from nbgrad._tensor import creation as _C
from nbgrad._tensor.dispatch import OPS, _dispatch
from nbgrad.derivatives.opinfo import op
from nbgrad.derivatives.pointwise import _below
from nbgrad.kernels.activation import _glu, _mish
from nbgrad.kernels.common import _elu

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
