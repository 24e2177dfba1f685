"""Op table rows: random draws (``bernoulli``, ``poisson``, ``normal``, ``multinomial``) and the
random fills (``normal_``, ``uniform_``, ``random_``...)."""

from __future__ import annotations

from nbgrad._tensor import creation as _C
from nbgrad.derivatives._kernels_fills import (
    _cauchy,
    _exponential,
    _geometric,
    _log_normal,
    _normal_fill,
    _random,
    _uniform,
)
from nbgrad.derivatives.opinfo import op

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
