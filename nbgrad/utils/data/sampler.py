"""Samplers, as PyTorch's ``torch/utils/data/sampler.py``: iterables of dataset indices (or, for
:class:`BatchSampler`, of lists of them) that a :class:`~nbgrad.utils.data.DataLoader` fetches.

The random ones draw from the ``generator`` given, else (as PyTorch's :class:`RandomSampler`) from
a fresh :class:`~nbgrad.Generator` seeded by a draw of nbgrad's, so that ``manual_seed`` makes a
run repeat. nbgrad's generators are NumPy's PCG64, not PyTorch's Mersenne Twister: the same seed
gives the same order every time in nbgrad, but not the order PyTorch gives.
"""

from __future__ import annotations

import itertools
from typing import Generic, TypeVar

from nbgrad import dtypes
from nbgrad._functions import random as _random
from nbgrad._tensor.conversion import as_tensor
from nbgrad._tensor.creation import empty, randint, randperm

__all__ = [
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "BatchSampler",
]


_T_co = TypeVar("_T_co", covariant=True)


class Sampler(Generic[_T_co]):
    """The base of samplers: ``__iter__`` yields indices; ``__len__`` is optional. Generic, as
    PyTorch's (``Sampler[int]``)."""

    def __init__(self, data_source=None):
        if data_source is not None:
            import warnings

            warnings.warn(
                "`data_source` argument is not used and will be removed in 2.2.0."
                "You may still have custom implementation that utilizes it.",
                stacklevel=2,
            )

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


def _sampler_generator(generator):
    """``generator``, else a fresh one seeded by a draw of nbgrad's default generator."""
    if generator is not None:
        return generator
    seed = int(empty((), dtype=dtypes.int64).random_().item())
    return _random.Generator().manual_seed(seed)


class RandomSampler(Sampler):
    """A random permutation of the indices (one after another for ``num_samples`` beyond the
    length), or ``num_samples`` indices drawn with ``replacement``."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={self.replacement}"
            )
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got "
                f"num_samples={self.num_samples}"
            )

    @property
    def num_samples(self):
        # the dataset's length may change after the sampler is made
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        generator = _sampler_generator(self.generator)
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from randint(high=n, size=(32,), generator=generator).tolist()
            yield from randint(high=n, size=(self.num_samples % 32,), generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from randperm(n, generator=generator).tolist()
            yield from randperm(n, generator=generator).tolist()[: self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order, without replacement."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices in ``[0, len(weights))``, each drawn with probability
    proportional to its weight (``multinomial``'s draw)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        weights_tensor = as_tensor(weights, dtype=dtypes.float64)
        if len(weights_tensor.shape) != 1:
            raise ValueError(
                "weights should be a 1d sequence but given "
                f"weights have shape {tuple(weights_tensor.shape)}"
            )
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        draws = self.weights.multinomial(
            self.num_samples, self.replacement, generator=self.generator
        )
        yield from draws.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler``; the last one shorter, or dropped with
    ``drop_last``."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        sampler_iter = iter(self.sampler)
        while batch := list(itertools.islice(sampler_iter, self.batch_size)):
            if self.drop_last and len(batch) < self.batch_size:
                return
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
