"""Random number generators and their state, as ``torch.random`` and ``torch.Generator``.

nbgrad draws on the host from a NumPy ``Generator`` (PCG64) that ``manual_seed`` replaces
(``nbgrad._tensor.creation._rng``); ``default_generator`` is the :class:`Generator` over that
one. A state is a uint8 tensor (``get_rng_state``), as PyTorch's: here the PCG64 state and
increment (16 bytes each, little-endian) and the buffered 32-bit draw (5 bytes).

Also the functions that draw from a tensor's values: ``bernoulli``, ``multinomial``, ``poisson``
and ``binomial``.
"""

from __future__ import annotations

import numpy as np

from nbgrad import dtypes
from nbgrad._tensor import creation as _creation
from nbgrad._tensor.conversion import tensor
from nbgrad._tensor.dispatch import OPS, _dispatch, _expect_tensor
from nbgrad.backend import Device
from nbgrad.tensor import Tensor

__all__ = [
    "Generator",
    "default_generator",
    "get_rng_state",
    "set_rng_state",
    "manual_seed",
    "seed",
    "initial_seed",
    "bernoulli",
    "multinomial",
    "poisson",
    "binomial",
]

_DEFAULT_SEED = 67280421310721  # PyTorch's seed of a new Generator
_STATE_BYTES = 37


def _encode(rng):
    state = rng.bit_generator.state
    raw = (
        int(state["state"]["state"]).to_bytes(16, "little")
        + int(state["state"]["inc"]).to_bytes(16, "little")
        + bytes([int(state["has_uint32"])])
        + int(state["uinteger"]).to_bytes(4, "little")
    )
    return tensor(np.frombuffer(raw, dtype=np.uint8).copy(), dtype=dtypes.uint8)


def _decode_into(rng, new_state):
    if not isinstance(new_state, Tensor):
        raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
    if new_state.dtype is not dtypes.uint8:
        raise TypeError("RNG state must be a torch.ByteTensor")
    if new_state.numel() != _STATE_BYTES:
        raise RuntimeError(
            f"Expected a CPUGeneratorImplState of size {_STATE_BYTES} but found the input RNG "
            f"state size to be {new_state.numel()}"
        )
    raw = bytes(new_state.numpy().tolist())
    rng.bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {
            "state": int.from_bytes(raw[0:16], "little"),
            "inc": int.from_bytes(raw[16:32], "little"),
        },
        "has_uint32": raw[32],
        "uinteger": int.from_bytes(raw[33:37], "little"),
    }


def _fresh_seed():
    return int(np.random.SeedSequence().entropy % (1 << 63))


class Generator:
    """A random number generator (``torch.Generator``): seeded, reseeded, its state saved and
    restored. A new one starts from PyTorch's default seed."""

    def __init__(self, device="cpu"):
        self.device = Device(device)
        self._rng = np.random.default_rng(_DEFAULT_SEED)

    def manual_seed(self, seed):
        self._rng = np.random.default_rng(int(seed) % (1 << 64))
        return self

    def seed(self):
        """Seed from a fresh random number, which is returned."""
        s = _fresh_seed()
        self.manual_seed(s)
        return s

    def initial_seed(self):
        """The seed this generator started from (the last ``manual_seed`` or ``seed``)."""
        return int(self._rng.bit_generator.seed_seq.entropy)

    def get_state(self):
        return _encode(self._rng)

    def set_state(self, new_state):
        _decode_into(self._rng, new_state)
        return self

    def __repr__(self):
        return f"<nbgrad.Generator object at {id(self):#x}>"


class _DefaultGenerator(Generator):
    """The generator behind ``rand``, ``randn``, the initialisers and dropout."""

    def __init__(self):
        self.device = Device("cpu")

    @property
    def _rng(self):
        return _creation._rng  # read now: manual_seed replaces it

    @_rng.setter
    def _rng(self, rng):
        _creation._rng = rng


default_generator = _DefaultGenerator()


def manual_seed(seed):
    """Seed nbgrad's random number generator; returns ``default_generator``, as PyTorch."""
    _creation.manual_seed(seed)
    return default_generator


def seed():
    """Seed nbgrad's generator from a fresh random number, which is returned."""
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    """The state of nbgrad's generator, a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restore a state from ``get_rng_state``: the same draws follow."""
    default_generator.set_state(new_state)


# ---- sampling from a tensor's values -------------------------------------------------------------
def bernoulli(input, p=None):
    return input.bernoulli(p)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    return input.multinomial(num_samples, replacement, generator=generator)


def poisson(input, generator=None):
    """Poisson counts of the rates ``input`` (``PoissonBackward0``: a zero gradient)."""
    _expect_tensor(input, "poisson", "input", 1)
    return _dispatch(OPS["poisson"], (input,), {"generator": generator})


def binomial(count, prob, generator=None):
    """Binomial counts of ``count`` trials, each of probability ``prob`` (no derivative)."""
    _expect_tensor(count, "binomial", "count", 1)
    _expect_tensor(prob, "binomial", "prob", 2)
    if not count.dtype.is_floating_point:
        name = count.dtype._legacy[:-6]
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {name}")
    if prob.dtype is not count.dtype:
        raise RuntimeError(
            f"Found dtype {prob.dtype._legacy[:-6]} but expected {count.dtype._legacy[:-6]}"
        )
    return _dispatch(OPS["binomial"], (count, prob), {"generator": generator})
