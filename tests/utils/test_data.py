"""``nbgrad.utils.data`` against ``torch.utils.data``: the same batches for the same data and
indices; the same errors. Random orders are checked as properties (a permutation, the same for
the same seed): nbgrad's generator is NumPy's PCG64, so its draws are not PyTorch's."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import nbgrad as ng
from nbgrad.utils import data as nd

torch = pytest.importorskip("torch")
td = torch.utils.data

LIBS = [(ng, nd), (torch, td)]


def plain(x):
    """A batch as plain Python: tensors to (dtype name, nested lists), containers walked."""
    if isinstance(x, (ng.Tensor, torch.Tensor)):
        return ("tensor", str(x.dtype).split(".")[-1], x.tolist())
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, [plain(v) for v in x])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [plain(v) for v in x])
    return x


def both(make):
    """``make(L, D)`` under nbgrad and torch, as plain Python."""
    return [plain(make(L, D)) for L, D in LIBS]


def tensors(L):
    x = np.arange(30, dtype=np.float32).reshape(10, 3)
    return L.tensor(x), L.tensor(np.arange(10) % 3)


LOADERS = {
    "batch_size=4": dict(batch_size=4),
    "drop_last": dict(batch_size=4, drop_last=True),
    "batch_size=None": dict(batch_size=None),
    "batch_size=10": dict(batch_size=10),
    "sampler": dict(batch_size=3, sampler=[9, 0, 4, 4, 1]),
    "batch_sampler": dict(batch_sampler=[[1, 2], [7], [0, 5, 3]]),
    "collate_fn": dict(batch_size=3, collate_fn=lambda b: [s[1].item() * 2 for s in b]),
    "num_workers=2": dict(batch_size=4, num_workers=2),
}


@pytest.mark.parametrize("kwargs", LOADERS.values(), ids=LOADERS.keys())
def test_tensor_dataset_batches_as_torch(kwargs):
    def run(L, D):
        loader = D.DataLoader(D.TensorDataset(*tensors(L)), **kwargs)
        return len(loader), list(loader)

    ours, theirs = both(run)
    assert ours == theirs


Point = collections.namedtuple("Point", "x y")


class Samples:
    """A map-style dataset of mixed samples: numbers, arrays, strings, dicts, named tuples."""

    def __init__(self, L):
        self.L = L

    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {
            "f": float(i) / 2,
            "i": i,
            "b": i % 2 == 0,
            "np": np.full((2,), i, dtype=np.int32),
            "npf": np.float32(i),
            "s": f"s{i}",
            "t": self.L.tensor([i, -i]),
            "pair": (i, [float(i), 1.0]),
            "point": Point(i, self.L.tensor(float(i))),
        }


def test_default_collate_of_mixed_samples_as_torch():
    ours, theirs = both(lambda L, D: list(D.DataLoader(Samples(L), batch_size=2)))
    assert ours == theirs


def test_default_convert_without_batching_as_torch():
    ours, theirs = both(lambda L, D: list(D.DataLoader(Samples(L), batch_size=None)))
    assert ours == theirs


def test_default_collate_errors_as_torch():
    for bad in ([object(), object()], [[1, 2], [1]], [np.array(["a"]), np.array(["b"])]):
        errors = []
        for _, D in LIBS:
            with pytest.raises((TypeError, RuntimeError)) as info:
                D.default_collate(bad)
            errors.append((type(info.value), str(info.value).replace("torch", "nbgrad")))
        if "object" in errors[1][1]:  # the type's repr names its module: compare the head
            errors = [(t, m.split("found")[0]) for t, m in errors]
        assert errors[0] == errors[1]


class Stream:
    """An iterable dataset of 0..n-1, with a length."""

    def __init__(self, n, base):
        self.n = n
        self.base = base

    def make(self):
        n = self.n

        class S(self.base):
            def __iter__(self):
                return iter(range(n))

            def __len__(self):
                return n

        return S()


@pytest.mark.parametrize(
    "kwargs", [dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None)]
)
def test_iterable_dataset_batches_as_torch(kwargs):
    def run(L, D):
        loader = D.DataLoader(Stream(7, D.IterableDataset).make(), **kwargs)
        return len(loader), list(loader)

    ours, theirs = both(run)
    assert ours == theirs


def test_datasets_compose_as_torch():
    def run(L, D):
        x, y = tensors(L)
        a, b = D.TensorDataset(x, y), D.TensorDataset(x[:4] * 10, y[:4])
        cat = a + b
        sub = D.Subset(cat, [13, 0, -1, 11])
        stacked = D.StackDataset(a, a)
        keyed = D.StackDataset(x=a, y=a)
        chained = Stream(2, D.IterableDataset).make() + Stream(3, D.IterableDataset).make()
        return (
            len(cat),
            cat.cumulative_sizes,
            [cat[i] for i in (0, 9, 10, 13, -1, -14)],
            len(sub),
            [sub[i] for i in range(4)],
            stacked[2],
            keyed[3],
            list(chained),
            len(chained),
            list(D.DataLoader(sub, batch_size=3)),
        )

    ours, theirs = both(run)
    assert ours == theirs


def test_samplers_as_torch():
    def run(L, D):
        seq = D.SequentialSampler(range(5))
        batches = D.BatchSampler(seq, 2, False)
        dropped = D.BatchSampler([4, 3, 2, 1, 0], 2, True)
        return list(seq), len(seq), list(batches), len(batches), list(dropped), len(dropped)

    ours, theirs = both(run)
    assert ours == theirs


def draws(make):
    """Two runs of ``make(seed)`` with seed 0 and one with seed 1, as lists."""
    return [list(make(s)) for s in (0, 0, 1)]


RANDOM = {  # (sampler, what it permutes)
    "RandomSampler": (lambda D, L, g: D.RandomSampler(range(10), generator=g), range(10)),
    "RandomSampler num_samples": (
        lambda D, L, g: D.RandomSampler(range(10), num_samples=25, generator=g),
        range(10),
    ),
    "SubsetRandomSampler": (
        lambda D, L, g: D.SubsetRandomSampler([3, 5, 7, 11, 13], generator=g),
        [3, 5, 7, 11, 13],
    ),
    "DataLoader shuffle": (
        lambda D, L, g: (
            b[0].item()
            for b in D.DataLoader(D.TensorDataset(L.arange(10)), shuffle=True, generator=g)
        ),
        range(10),
    ),
}


@pytest.mark.parametrize("L, D", LIBS, ids=["nbgrad", "torch"])
@pytest.mark.parametrize("make, universe", RANDOM.values(), ids=RANDOM.keys())
def test_random_orders_are_permutations_repeated_by_their_seed(make, universe, L, D):
    universe = list(universe)
    first, again, other = draws(lambda s: make(D, L, L.Generator().manual_seed(s)))
    assert first == again and first != other
    assert len(list(make(D, L, None))) == len(first)
    if len(first) == 25:  # two whole permutations, then 5 of a third
        assert sorted(first[:10]) == sorted(first[10:20]) == universe
        assert len(set(first[20:])) == 5 and set(first[20:]) <= set(universe)
    else:
        assert sorted(first) == universe and first != universe


def test_unseeded_shuffle_follows_manual_seed():
    for L, D in LIBS:
        orders = []
        for seed in (5, 5, 6):
            L.manual_seed(seed)
            orders.append(list(D.RandomSampler(range(20))))
        assert orders[0] == orders[1] != orders[2]


@pytest.mark.parametrize("L, D", LIBS, ids=["nbgrad", "torch"])
def test_replacement_draws_in_range_and_repeat_by_seed(L, D):
    first, again, other = draws(
        lambda s: D.RandomSampler(
            range(4), replacement=True, num_samples=70, generator=L.Generator().manual_seed(s)
        )
    )
    assert first == again != other and len(first) == 70 and set(first) == {0, 1, 2, 3}
    w = [0.0, 1.0, 0.0, 3.0]
    first, again, other = draws(
        lambda s: D.WeightedRandomSampler(w, 200, generator=L.Generator().manual_seed(s))
    )
    assert first == again != other and set(first) == {1, 3}
    assert 100 < first.count(3) < 200  # weight 3 of 4
    once = list(D.WeightedRandomSampler([1.0] * 6, 6, replacement=False))
    assert sorted(once) == list(range(6))


def test_random_split_as_torch():
    def run(L, D):
        ds = D.TensorDataset(L.arange(10))
        g = L.Generator().manual_seed(0)
        parts = D.random_split(ds, [3, 7], generator=g)
        fractions = D.random_split(range(11), [0.5, 0.3, 0.2], generator=g)
        return [len(p) for p in parts], [len(p) for p in fractions]

    ours, theirs = both(run)
    assert ours == theirs
    for L, D in LIBS:
        ds = list(range(10))
        split = [p.indices for p in D.random_split(ds, [4, 6], L.Generator().manual_seed(1))]
        again = [p.indices for p in D.random_split(ds, [4, 6], L.Generator().manual_seed(1))]
        assert split == again and sorted(split[0] + split[1]) == ds


ERRORS = {
    "num_workers<0": lambda L, D: D.DataLoader([1], num_workers=-1),
    "timeout<0": lambda L, D: D.DataLoader([1], timeout=-1),
    "prefetch without workers": lambda L, D: D.DataLoader([1], prefetch_factor=2),
    "persistent without workers": lambda L, D: D.DataLoader([1], persistent_workers=True),
    "sampler and shuffle": lambda L, D: D.DataLoader([1], sampler=[0], shuffle=True),
    "batch_sampler and batch_size": lambda L, D: D.DataLoader(
        [1], batch_sampler=[[0]], batch_size=2
    ),
    "batch_size=None and drop_last": lambda L, D: D.DataLoader(
        [1], batch_size=None, drop_last=True
    ),
    "iterable and shuffle": lambda L, D: D.DataLoader(
        Stream(2, D.IterableDataset).make(), shuffle=True
    ),
    "iterable and sampler": lambda L, D: D.DataLoader(
        Stream(2, D.IterableDataset).make(), sampler=[0]
    ),
    "set after init": lambda L, D: setattr(D.DataLoader([1]), "batch_size", 3),
    "batch_size 0": lambda L, D: D.BatchSampler([0], 0, False),
    "drop_last not bool": lambda L, D: D.BatchSampler([0], 1, 1),
    "replacement not bool": lambda L, D: D.RandomSampler([0], replacement=1),
    "num_samples 0": lambda L, D: D.RandomSampler([0], num_samples=0),
    "weights 2d": lambda L, D: D.WeightedRandomSampler([[1.0]], 1),
    "weighted num_samples": lambda L, D: D.WeightedRandomSampler([1.0], -1),
    "too many without replacement": lambda L, D: list(
        D.WeightedRandomSampler([1.0, 2.0], 3, replacement=False)
    ),
    "negative weight": lambda L, D: list(D.WeightedRandomSampler([1.0, -1.0], 2)),
    "zero weights": lambda L, D: list(D.WeightedRandomSampler([0.0, 0.0], 2)),
    "nan weight": lambda L, D: list(D.WeightedRandomSampler([1.0, float("nan")], 2)),
    "inf weight": lambda L, D: list(D.WeightedRandomSampler([1.0, float("inf")], 2)),
    "split lengths": lambda L, D: D.random_split(range(5), [2, 2]),
    "concat empty": lambda L, D: D.ConcatDataset([]),
    "concat iterable": lambda L, D: D.ConcatDataset([Stream(2, D.IterableDataset).make()]),
    "concat index": lambda L, D: D.ConcatDataset([[1, 2]])[-3],
    "tensor sizes": lambda L, D: D.TensorDataset(L.zeros(2), L.zeros(3)),
    "dataset getitem": lambda L, D: D.Dataset()[0],
    "stack sizes": lambda L, D: D.StackDataset([1], [1, 2]),
}


@pytest.mark.parametrize("make", ERRORS.values(), ids=ERRORS.keys())
def test_errors_as_torch(make):
    errors = []
    for L, D in LIBS:
        with pytest.raises(Exception) as info:
            make(L, D)
        errors.append((type(info.value).__name__, str(info.value)))
    assert errors[0] == errors[1]


def test_workers_that_would_change_the_batches_are_refused():
    with pytest.raises(NotImplementedError, match="num_workers=0"):
        nd.DataLoader(Stream(3, nd.IterableDataset).make(), num_workers=2)
    with pytest.raises(NotImplementedError, match="num_workers=0"):
        nd.DataLoader([1, 2], num_workers=2, worker_init_fn=print)
    assert nd.get_worker_info() is None


def test_a_training_loop_over_a_dataloader_as_torch():
    """The tutorials' loop: shuffle-free batches, a linear model, SGD; the same weights after."""

    def run(L, D):
        x, y = tensors(L)
        model = L.nn.Linear(3, 1)
        with L.no_grad():
            model.weight.copy_(L.tensor([[0.1, -0.2, 0.05]]))
            model.bias.zero_()
        opt = L.optim.SGD(model.parameters(), lr=1e-3)
        for xb, yb in D.DataLoader(D.TensorDataset(x, y.float()), batch_size=4):
            opt.zero_grad()
            loss = ((model(xb).squeeze(1) - yb) ** 2).mean()
            loss.backward()
            opt.step()
        return [round(v, 5) for v in model.weight.flatten().tolist() + model.bias.tolist()]

    ours, theirs = both(run)
    assert ours == theirs


def test_typed_subclasses_as_torch():
    """Tutorials subclass ``Dataset[...]`` and ``Sampler[int]``; both are generic, as torch's."""

    def run(L, D):
        class Squares(D.Dataset[tuple]):
            def __len__(self):
                return 4

            def __getitem__(self, i):
                return L.tensor(float(i)), i * i

        class Backwards(D.Sampler[int]):
            def __init__(self, n):
                self.n = n

            def __iter__(self):
                return iter(range(self.n - 1, -1, -1))

            def __len__(self):
                return self.n

        class Count(D.IterableDataset[int]):
            def __iter__(self):
                return iter(range(3))

        loader: D.DataLoader[tuple] = D.DataLoader(Squares(), batch_size=3, sampler=Backwards(4))
        return list(loader), list(D.DataLoader(Count(), batch_size=2))

    ours, theirs = both(run)
    assert ours == theirs


@pytest.mark.parametrize("L", [ng, torch], ids=["nbgrad", "torch"])
def test_multinomial_draws_from_its_generator(L):
    """WeightedRandomSampler's draw: ``multinomial(..., generator=)``, repeated by the seed and
    leaving the default generator alone."""
    w = L.tensor([1.0, 2.0, 3.0, 4.0])
    L.manual_seed(3)
    before = L.rand(3).tolist()
    L.manual_seed(3)
    runs = [
        w.multinomial(50, True, generator=L.Generator().manual_seed(s)).tolist() for s in (7, 7, 8)
    ]
    assert runs[0] == runs[1] != runs[2]
    assert L.rand(3).tolist() == before
    assert L.multinomial(w, 4, generator=L.Generator().manual_seed(7)).sort().values.tolist() == [
        0,
        1,
        2,
        3,
    ]


@pytest.mark.parametrize("L", [ng, torch], ids=["nbgrad", "torch"])
def test_zero_weights_come_last_without_replacement(L):
    """PyTorch's CPU draw without replacement takes the weighted categories first, then those
    of weight zero (it does not raise)."""
    for seed in range(5):
        g = L.Generator().manual_seed(seed)
        drawn = L.tensor([0.0, 2.0, 0.0, 1.0]).multinomial(4, generator=g).tolist()
        assert sorted(drawn[:2]) == [1, 3] and sorted(drawn[2:]) == [0, 2]
