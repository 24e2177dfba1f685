"""Bad input to the ops of PyTorch's wider surface raises PyTorch's exception type with its
message, run the same way in both libraries (torch as the oracle)."""

from __future__ import annotations

import warnings

import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

BAD = {
    "addmm 1-d mat1": lambda L: L.addmm(L.ones(2, 2), L.ones(2), L.ones(2, 2)),
    "addmm shapes": lambda L: L.addmm(L.ones(2, 2), L.ones(2, 3), L.ones(2, 2)),
    "baddbmm 2-d": lambda L: L.baddbmm(L.ones(2, 2), L.ones(2, 2), L.ones(2, 2)),
    "baddbmm shapes": lambda L: L.baddbmm(L.ones(2, 2, 2), L.ones(2, 2, 3), L.ones(2, 4, 2)),
    "outer 2-d": lambda L: L.outer(L.ones(2, 2), L.ones(2)),
    "cross length": lambda L: L.cross(L.ones(2, 4), L.ones(2, 4), dim=1),
    "cross ndim": lambda L: L.cross(L.ones(2, 3), L.ones(3), dim=-1),
    "diag 3-d": lambda L: L.diag(L.ones(2, 2, 2)),
    "trace 1-d": lambda L: L.trace(L.ones(3)),
    "lerp dtypes": lambda L: L.lerp(L.ones(2), L.ones(2, dtype=L.float64), 0.5),
    "quantile q range": lambda L: L.quantile(L.ones(3), 1.5),
    "quantile q 2-d": lambda L: L.quantile(L.ones(3), L.ones(2, 2) / 2),
    "quantile q dtype": lambda L: L.quantile(L.ones(3), L.tensor([0.5], dtype=L.float64)),
    "quantile int": lambda L: L.quantile(L.ones(3, dtype=L.int64), 0.5),
    "quantile empty": lambda L: L.quantile(L.ones(0), 0.5),
    "quantile interpolation": lambda L: L.quantile(L.ones(3), 0.5, interpolation="cubic"),
    "masked_select not bool": lambda L: L.masked_select(L.ones(3), L.ones(3)),
    "take out of range": lambda L: L.take(L.ones(2, 2), L.tensor([4])),
    "scatter dtypes": lambda L: L.ones(2, 2).scatter(
        0, L.tensor([[0, 1]]), L.ones(1, 2, dtype=L.float64)
    ),
    "scatter index range": lambda L: L.ones(2, 2).scatter(0, L.tensor([[0, 2]]), 1.0),
    "movedim repeated": lambda L: L.movedim(L.ones(2, 3), (0, 0), (1, 0)),
    "movedim lengths": lambda L: L.movedim(L.ones(2, 3), (0, 1), (1,)),
    "repeat_interleave negative": lambda L: L.repeat_interleave(L.ones(3), -1),
    "repeat_interleave sizes": lambda L: L.repeat_interleave(L.ones(3), L.tensor([1, 2]), dim=0),
    "multinomial 3-d": lambda L: L.multinomial(L.ones(2, 2, 2), 1),
    "multinomial too many": lambda L: L.multinomial(L.ones(3), 4),
    "multinomial zero samples": lambda L: L.multinomial(L.ones(3), 0),
    "multinomial negative": lambda L: L.multinomial(L.tensor([0.5, -1.0]), 1),
    "meshgrid indexing": lambda L: L.meshgrid(L.ones(2), indexing="ji"),
    "einsum operands": lambda L: L.einsum("ij,jk->ik", L.ones(2, 2)),
    "einsum subscripts": lambda L: L.einsum("ijk", L.ones(2, 2)),
    "tensordot sizes": lambda L: L.tensordot(L.ones(2, 3), L.ones(2, 3), dims=1),
    "tensordot lists": lambda L: L.tensordot(L.ones(2, 3), L.ones(3, 2), dims=([1], [0, 1])),
    "normal std": lambda L: L.normal(L.ones(2), -1.0),
    "median empty dim": lambda L: L.median(L.ones(0, 2), 0),
    "isclose dtypes": lambda L: L.isclose(L.ones(2), L.ones(2, dtype=L.float64)),
    "broadcast_shapes": lambda L: L.broadcast_shapes((2, 1), (2, 3), (3,), (4, 2, 1)),
    "broadcast_shapes mismatch": lambda L: L.broadcast_shapes((2, 1), (4, 3), (2,)),
    "triu_indices negative": lambda L: L.triu_indices(-1, 2),
}


def outcome(fn, lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = fn(lib)
        except Exception as e:  # noqa: BLE001 - the error itself is what is compared
            return type(e).__name__, str(e).replace("nbgrad", "torch")
    return "ok", tuple(value) if isinstance(value, tuple) else None


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_raises_as_torch(name):
    assert outcome(BAD[name], ng) == outcome(BAD[name], torch)
