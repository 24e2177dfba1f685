"""The array kernels of the rows in ``nbgrad/derivatives/random.py``: functions of ``xp``
(NumPy or CuPy) and arrays."""

from __future__ import annotations

import numpy as np

from nbgrad._tensor import creation as _C
from nbgrad._tensor import dispatch as _D
from nbgrad.backend import to_host


def _bernoulli(xp, self, p):
    """1 with probability ``p`` (a number, or an array broadcast to ``self``), in self's dtype.
    The uniform draws come from nbgrad's generator on the host (``manual_seed``)."""
    if isinstance(p, (int, float)):
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    else:
        if p is self and self.dtype.kind != "f":
            name = _D._FROM_NP[self.dtype]._legacy[: -len("Tensor")]
            raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for '{name}'")
        if p.size and not bool(((p >= 0) & (p <= 1)).all()):
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        p = xp.broadcast_to(p, self.shape)
    return (xp.asarray(_C._rng.random(self.shape)) < p).astype(self.dtype)


def _normal(xp, mean, std, shape):
    """Normal draws of ``mean`` and ``std`` (arrays or numbers) broadcast to ``shape``, from
    nbgrad's generator on the host (``manual_seed``)."""
    if not isinstance(std, (int, float)) and std.size and bool((std < 0).any()):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    if isinstance(std, (int, float)) and std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    dtype = next(x.dtype for x in (mean, std) if not isinstance(x, (int, float)))
    draws = xp.asarray(_C._rng.standard_normal(shape)).astype(dtype)
    return (draws * std + mean).astype(dtype, copy=False)


def _multinomial(xp, probs, num_samples, replacement, generator=None):
    """``num_samples`` category indices per row of ``probs`` (PyTorch's ``multinomial``), drawn
    from ``generator`` (else nbgrad's)."""
    rng = _C._rng if generator is None else generator._rng
    host = np.asarray(to_host(probs), dtype=np.float64)
    rows = host.reshape(-1, host.shape[-1])
    out = np.empty((rows.shape[0], num_samples), dtype=np.int64)
    for i, p in enumerate(rows):
        # PyTorch's checks: one for its exponential draw (without replacement, or one sample),
        # else its CPU sampler's, in their order (a NaN fails ``p >= 0``)
        if (not replacement or num_samples == 1) and not (np.isfinite(p).all() and (p >= 0).all()):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if not (p >= 0).all():
            raise RuntimeError(
                "invalid multinomial distribution (encountering probability entry < 0)"
            )
        if not np.isfinite(p).all():
            raise RuntimeError(
                "invalid multinomial distribution "
                "(encountering probability entry = infinity or NaN)"
            )
        if p.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        nonzero = np.count_nonzero(p)
        if replacement or num_samples <= nonzero:
            out[i] = rng.choice(p.size, num_samples, replace=replacement, p=p / p.sum())
        else:  # as PyTorch's CPU draw: the weighted categories first, then zero-weight ones
            first = rng.choice(p.size, nonzero, replace=False, p=p / p.sum())
            rest = rng.permutation(np.flatnonzero(p == 0))[: num_samples - nonzero]
            out[i] = np.concatenate([first, rest])
    return xp.asarray(out.reshape(host.shape[:-1] + (num_samples,)))


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


# ---- draws: Poisson and binomial counts ------------------------------------------------------
def _host_rng(generator):
    """The NumPy generator that draws: ``generator``'s, else nbgrad's (``manual_seed``)."""
    return _C._rng if generator is None else generator._rng


def _poisson(xp, rate, generator):
    """Poisson counts of rate ``rate``, in its dtype, drawn on the host."""
    if rate.dtype.kind != "f":
        name = {"i": "Long", "u": "Byte", "b": "Bool"}.get(rate.dtype.kind, str(rate.dtype))
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for '{name}'")
    host = to_host(rate)
    if host.size and not bool((host >= 0).all()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return xp.asarray(np.asarray(_host_rng(generator).poisson(host), dtype=rate.dtype))


def _binomial(xp, count, prob, generator):
    """Binomial counts of ``count`` trials of probability ``prob``, drawn on the host; as
    PyTorch's sampler, a negative count gives 0 and ``prob`` is clipped to [0, 1]."""
    n, p = to_host(count), to_host(prob)
    n, p = np.broadcast_arrays(np.maximum(np.floor(n), 0), np.clip(p, 0, 1))
    draws = _host_rng(generator).binomial(n.astype(np.int64), p)
    return xp.asarray(np.asarray(draws, dtype=count.dtype))
