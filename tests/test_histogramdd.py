"""``histogramdd`` against PyTorch: counts, weighted counts and densities, bin edges (counts,
ranges, given edges), float32, a constant dim, the errors, and hist's raising node (the op
table test checks the row itself)."""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
POINTS = RNG.standard_normal((40, 3))
WEIGHTS = RNG.random(40)
EDGES = [[-3.0, 0.0, 3.0], [-1.0, 0.0, 0.5, 1.0], [-2.0, 2.0]]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"bins": 4},
        {"bins": [2, 3, 5], "weight": WEIGHTS},
        {"bins": 3, "range": [-1.0, 1.0, -2.0, 2.0, 0.0, 3.0], "density": True},
        {"bins": "edges", "weight": WEIGHTS, "density": True},
    ],
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_histogramdd_matches_pytorch(kwargs, dtype):
    results = []
    for lib in (ng, torch):
        dt = getattr(lib, dtype)
        kw = {k: lib.tensor(v, dtype=dt) if k == "weight" else v for k, v in kwargs.items()}
        if kw["bins"] == "edges":
            kw["bins"] = [lib.tensor(e, dtype=dt) for e in EDGES]
        results.append(lib.histogramdd(lib.tensor(POINTS, dtype=dt), **kw))
    ours, theirs = results
    np.testing.assert_allclose(ours.hist.numpy(), theirs.hist.numpy(), rtol=1e-5, atol=1e-7)
    assert len(ours.bin_edges) == len(theirs.bin_edges) == 3
    for a, b in zip(ours.bin_edges, theirs.bin_edges):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    assert ours.hist.dtype.name == dtype


def test_a_constant_dim_and_batched_points_match_pytorch():
    points = np.stack([np.ones(6), np.arange(6.0)], -1).reshape(2, 3, 2)
    ours = ng.histogramdd(ng.tensor(points), bins=[2, 3])
    theirs = torch.histogramdd(torch.tensor(points), bins=[2, 3])
    assert type(ours) is ng.return_types.histogramdd  # as torch.return_types.histogramdd
    assert repr(ours).split("(")[0].replace("nbgrad", "torch") == repr(theirs).split("(")[0]
    # counts: whole numbers, exact
    np.testing.assert_array_equal(ours.hist.numpy(), theirs.hist.numpy())
    for a, b in zip(ours.bin_edges, theirs.bin_edges):
        np.testing.assert_allclose(a.numpy(), b.numpy())


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda lib: lib.histogramdd(lib.zeros(3, 2), bins=[2, 3, 4]), RuntimeError),
        (lambda lib: lib.histogramdd(lib.zeros(3, 2), bins=2, range=[0.0, 1.0]), RuntimeError),
        (lambda lib: lib.histogramdd(lib.zeros(3, 2), bins=2, weight=lib.ones(2)), RuntimeError),
        (lambda lib: lib.histogramdd(lib.tensor([[1, 2]]), bins=2), NotImplementedError),
        (
            lambda lib: lib.histogramdd(
                lib.zeros(3, 1, dtype=lib.float64), bins=[lib.tensor([0.0, 1.0])]
            ),
            RuntimeError,
        ),
    ],
)
def test_histogramdd_errors_match_pytorch(call, error):
    messages = []
    for lib in (ng, torch):
        with pytest.raises(error) as info:
            call(lib)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("given_edges", [False, True])
def test_hist_requires_grad_and_its_backward_raises_as_pytorchs(given_edges):
    for lib in (ng, torch):
        x = lib.tensor(POINTS[:, :1], requires_grad=True)
        bins = [lib.tensor([-3.0, 0.0, 3.0], dtype=lib.float64)] if given_edges else 2
        hist = lib.histogramdd(x, bins=bins).hist
        assert hist.requires_grad
        aten = "_histogramdd_from_bin_tensors" if given_edges else "_histogramdd_from_bin_cts"
        with pytest.raises(RuntimeError, match=f"derivative for aten::{aten} is not implemented"):
            hist.sum().backward()
