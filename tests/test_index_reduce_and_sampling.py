"""``index_reduce``'s errors, and ``poisson`` / ``binomial``: their distributions, errors and
gradients, against PyTorch (the op-table test checks ``index_reduce``'s values and
gradients)."""

from __future__ import annotations

import warnings

import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "index, source, reduce, error",
    [
        ([0], (1, 2), "sum", RuntimeError),
        ([0], (1, 2), "max", RuntimeError),
        ([0, 1], (1, 2), "prod", RuntimeError),
        ([[0]], (1, 2), "prod", IndexError),
        ([5], (1, 2), "amax", IndexError),
        ([-1], (1, 2), "amin", IndexError),  # PyTorch takes no negative index here
    ],
)
def test_index_reduce_errors_match_pytorch(index, source, reduce, error):
    messages = []
    for lib in (ng, torch):
        with pytest.raises(error) as info, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch: "index_reduce() is in beta"
            lib.index_reduce(lib.ones(3, 2), 0, lib.tensor(index), lib.ones(*source), reduce)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
