"""Kernels of the in-place fills: the random draws (``normal_``, ``uniform_``, ``random_``...),
drawn on the host from nbgrad's generator or the one given, and the in-place comparisons
(``eq_``...), whose 0/1 result takes the dtype of the tensor written."""

from __future__ import annotations

import numpy as np

from nbgrad.derivatives._kernels_wider import _host_rng


def _drawn(xp, self, draws):
    return xp.asarray(np.asarray(draws, dtype=self.dtype))


def _uniform(xp, self, low, high, generator):
    return _drawn(xp, self, _host_rng(generator).uniform(low, high, self.shape))


def _normal_fill(xp, self, mean, std, generator):
    return _drawn(xp, self, _host_rng(generator).normal(mean, std, self.shape))


def _exponential(xp, self, lambd, generator):
    return _drawn(xp, self, _host_rng(generator).exponential(1 / lambd, self.shape))


def _cauchy(xp, self, median, sigma, generator):
    return _drawn(xp, self, median + sigma * _host_rng(generator).standard_cauchy(self.shape))


def _log_normal(xp, self, mean, std, generator):
    return _drawn(xp, self, _host_rng(generator).lognormal(mean, std, self.shape))


def _geometric(xp, self, p, generator):
    """The number of Bernoulli(``p``) trials up to the first success (1, 2, ...)."""
    return _drawn(xp, self, _host_rng(generator).geometric(p, self.shape))


def _random(xp, self, low, high, generator):
    """Integers in ``[low, high)``, drawn uniformly."""
    return _drawn(xp, self, _host_rng(generator).integers(low, high, self.shape))


def _compared(xp, name, self, other):
    """``self <op> other`` as 0 and 1 in ``self``'s dtype (``eq_`` writes it into ``self``)."""
    return getattr(xp, name)(self, other).astype(self.dtype)
