"""Op table rows: random draws (``bernoulli``, ``poisson``, ``normal``, ``multinomial``) and the
random fills (``normal_``, ``uniform_``, ``random_``...)."""

from __future__ import annotations

from nbgrad._tensor import creation as _C
from nbgrad.derivatives.opinfo import op
from nbgrad.derivatives.pointwise import _not_implemented
from nbgrad.derivatives.shape import _broadcast
from nbgrad.kernels.random import (
    _bernoulli,
    _binomial,
    _cauchy,
    _exponential,
    _geometric,
    _log_normal,
    _multinomial,
    _normal,
    _normal_fill,
    _poisson,
    _random,
    _uniform,
)

# fmt: off
# the random fills (``normal_``...): the drawn values do not depend on the old ones
op("uniform_", "UniformBackward0", "self", lambda xp, self, low, high, generator: _uniform(xp, self, low, high, generator),
   attrs="low high generator", self=lambda grad: _C.zeros_like(grad))
op("normal_", "NormalBackward0", "self", lambda xp, self, mean, std, generator: _normal_fill(xp, self, mean, std, generator),
   attrs="mean std generator", self=lambda grad: _C.zeros_like(grad))
op("exponential_", "ExponentialBackward0", "self", lambda xp, self, lambd, generator: _exponential(xp, self, lambd, generator),
   attrs="lambd generator", self=lambda grad: _C.zeros_like(grad))
op("cauchy_", "CauchyBackward0", "self", lambda xp, self, median, sigma, generator: _cauchy(xp, self, median, sigma, generator),
   attrs="median sigma generator", self=lambda grad: _C.zeros_like(grad))
op("log_normal_", "LogNormalBackward0", "self", lambda xp, self, mean, std, generator: _log_normal(xp, self, mean, std, generator),
   attrs="mean std generator", self=lambda grad: _C.zeros_like(grad))
op("geometric_", "GeometricBackward0", "self", lambda xp, self, p, generator: _geometric(xp, self, p, generator),
   attrs="p generator", self=lambda grad: _C.zeros_like(grad))
# fmt: on


# (PyTorch's node says which arguments were given: from and to, to only, neither)
for _k in range(3):
    op(
        f"random_{_k}",
        f"RandomBackward{_k}",
        "self",
        lambda xp, self, low, high, generator: _random(xp, self, low, high, generator),
        attrs="low high generator",
        self=lambda grad: _C.zeros_like(grad),
    )


# fmt: off
# random draws: 0s and 1s of self's dtype; the gradient is zero (or, for a float p, undefined)
op("bernoulli", "BernoulliBackward0", "self", lambda xp, self: _bernoulli(xp, self, self),
   self=lambda grad: _C.zeros_like(grad))
op("bernoulli_p", "NotImplemented", "self", lambda xp, self, p: _bernoulli(xp, self, p), attrs="p",
   self=lambda grad: _not_implemented("bernoulli"))
op("bernoulli_tensor", "BernoulliBackward1", "self p", lambda xp, self, p: _bernoulli(xp, self, p),
   self=lambda grad: _C.zeros_like(grad), p=lambda grad, p: _C.zeros_like(p))
op("bernoulli_float", "BernoulliBackward2", "self", lambda xp, self, p: _bernoulli(xp, self, p), attrs="p",
   self=lambda grad: _C.zeros_like(grad))
# Poisson draws (the gradient is zero, as PyTorch's) and binomial ones (no derivative)
op("poisson", "PoissonBackward0", "self", lambda xp, self, generator: _poisson(xp, self, generator), attrs="generator",
   self=lambda grad: _C.zeros_like(grad))
op("binomial", "NotImplemented", "count prob", lambda xp, count, prob, generator: _binomial(xp, count, prob, generator), attrs="generator",
   count=lambda grad: _not_implemented("binomial"), prob=lambda grad: _not_implemented("binomial"))
# normal draws (the gradient is zero) and multinomial ones (no gradient)
op("normal_tensor_float", "NormalBackward1", "mean", lambda xp, mean, std: _normal(xp, mean, std, mean.shape), attrs="std",
   mean=lambda grad: _C.zeros_like(grad))
op("normal_float_tensor", "NormalBackward2", "std", lambda xp, std, mean: _normal(xp, mean, std, std.shape), attrs="mean",
   std=lambda grad: _C.zeros_like(grad))
op("normal_tensor_tensor", "NormalBackward3", "mean std", lambda xp, mean, std: _normal(xp, mean, std, _broadcast(mean.shape, std.shape)), promote="binary",
   mean=lambda grad: _C.zeros_like(grad), std=lambda grad: _C.zeros_like(grad))
op("multinomial", None, "self", lambda xp, self, num_samples, replacement, generator: _multinomial(xp, self, num_samples, replacement, generator), attrs="num_samples replacement generator",
   differentiable=False)
# fmt: on
