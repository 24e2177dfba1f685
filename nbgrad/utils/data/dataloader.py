"""The :class:`DataLoader`, as PyTorch's ``torch/utils/data/dataloader.py``, in the main process:
a dataset, a sampler of its indices (or a batch sampler of lists of them) and a collate
function, iterated into batches.

NOTE [DataLoader workers]
PyTorch's ``num_workers > 0`` fetches batches in worker processes
and, with ``in_order=True`` (the default), hands them back in the sampler's order: for a
map-style dataset the batches are the ones ``num_workers=0`` gives. nbgrad fetches them in the
main process (its arrays are NumPy's; a worker would only copy them back), so a map-style
dataset with workers gives PyTorch's batches. What workers would change is refused with a
``NotImplementedError``: an ``IterableDataset`` (each of PyTorch's workers iterates its own
copy, ``get_worker_info`` telling it which), a ``worker_init_fn`` (it runs in each worker), and
``in_order=False``.
"""

from __future__ import annotations

import itertools
from typing import Generic, TypeVar

from ._collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]


def get_worker_info():
    """The worker process's id, seed and dataset copy; ``None`` in the main process, which is
    where nbgrad's DataLoader fetches (NOTE [DataLoader workers])."""
    return None


class _InfiniteConstantSampler(Sampler):
    """``None`` forever: the sampler of an iterable dataset, which picks its own samples."""

    def __iter__(self):
        while True:
            yield None


def _check_worker_options(
    dataset, num_workers, timeout, prefetch_factor, persistent_workers, worker_init_fn, in_order
):
    """PyTorch's checks of the worker options; the ``prefetch_factor`` to keep (2 by default
    with workers)."""
    if num_workers < 0:
        raise ValueError(
            "num_workers option should be non-negative; "
            "use num_workers=0 to disable multiprocessing."
        )
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError(
            "prefetch_factor option could only be specified in multiprocessing."
            "let num_workers > 0 to enable multiprocessing, otherwise set "
            "prefetch_factor to None."
        )
    if num_workers > 0 and prefetch_factor is None:
        prefetch_factor = 2
    elif prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if num_workers > 0:  # See NOTE [DataLoader workers]
        if isinstance(dataset, IterableDataset):
            raise NotImplementedError(
                "nbgrad's DataLoader fetches in the main process: an IterableDataset with "
                "num_workers > 0 (each worker iterating its own copy) is not supported; "
                "use num_workers=0"
            )
        if worker_init_fn is not None or not in_order:
            raise NotImplementedError(
                "nbgrad's DataLoader fetches in the main process: worker_init_fn and "
                "in_order=False need worker processes, which are not supported; "
                "use num_workers=0"
            )
    return prefetch_factor


def _check_iterable_options(shuffle, sampler, batch_sampler):
    """An iterable dataset picks its own samples: no shuffle, sampler or batch sampler."""
    if shuffle not in {False, None}:
        raise ValueError(
            "DataLoader with IterableDataset: expected unspecified shuffle option, "
            f"but got shuffle={shuffle}"
        )
    if sampler is not None:
        raise ValueError(
            "DataLoader with IterableDataset: expected unspecified sampler option, "
            f"but got sampler={sampler}"
        )
    if batch_sampler is not None:
        raise ValueError(
            "DataLoader with IterableDataset: expected unspecified batch_sampler "
            f"option, but got batch_sampler={batch_sampler}"
        )


_T_co = TypeVar("_T_co", covariant=True)


class DataLoader(Generic[_T_co]):
    """Batches of ``dataset``: ``batch_size`` samples each (``None``: samples one by one, not
    collated), in order, shuffled (``shuffle=True``, drawn from ``generator``), or as ``sampler``
    or ``batch_sampler`` give the indices, joined by ``collate_fn`` (``default_collate``)."""

    def __init__(
        self,
        dataset,
        batch_size=1,
        shuffle=None,
        sampler=None,
        batch_sampler=None,
        num_workers=0,
        collate_fn=None,
        pin_memory=False,
        drop_last=False,
        timeout=0,
        worker_init_fn=None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor=None,
        persistent_workers=False,
        pin_memory_device="",
        in_order=True,
    ):
        prefetch_factor = _check_worker_options(
            dataset,
            num_workers,
            timeout,
            prefetch_factor,
            persistent_workers,
            worker_init_fn,
            in_order,
        )

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = "iterable"
            _check_iterable_options(shuffle, sampler, batch_sampler)
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = "map"

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive "
                    "with batch_size, shuffle, sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching "
                "and is mutually exclusive with drop_last"
            )

        if sampler is None:
            if self._dataset_kind == "iterable":
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True

    def __setattr__(self, attr, val):
        if self.__dict__.get("_DataLoader__initialized") and attr in (
            "batch_size",
            "batch_sampler",
            "sampler",
            "drop_last",
            "dataset",
            "persistent_workers",
        ):
            raise ValueError(
                f"{attr} attribute should not be set after {self.__class__.__name__} is initialized"
            )
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        if self._dataset_kind == "iterable":
            return self._iter_iterable()
        return self._iter_map()

    def _fetch(self, indices):
        dataset = self.dataset
        if callable(getattr(dataset, "__getitems__", None)):
            return dataset.__getitems__(indices)
        return [dataset[i] for i in indices]

    def _iter_map(self):
        for index in self._index_sampler:
            data = self._fetch(index) if self._auto_collation else self.dataset[index]
            yield self.collate_fn(data)

    def _iter_iterable(self):
        dataset_iter = iter(self.dataset)
        if not self._auto_collation:
            for data in dataset_iter:
                yield self.collate_fn(data)
            return
        for _ in self.batch_sampler:  # lists of ``None``: only the batch size is used
            data = list(itertools.islice(dataset_iter, self.batch_size))
            if not data or (self.drop_last and len(data) < self.batch_size):
                return
            yield self.collate_fn(data)

    def __len__(self):
        if self._dataset_kind == "iterable":
            length = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    return length // self.batch_size
                return -(-length // self.batch_size)
            return length
        return len(self._index_sampler)
