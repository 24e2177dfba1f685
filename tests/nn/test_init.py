"""``nbgrad.nn.init`` (``nbgrad/nn/init.py``): gains, fans, bounds and distributions as in
PyTorch, reproducible with ``ng.manual_seed``."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nbgrad as ng
from nbgrad.nn import init

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "args",
    [
        ("linear",),
        ("conv2d",),
        ("sigmoid",),
        ("tanh",),
        ("relu",),
        ("leaky_relu",),
        ("leaky_relu", 0.2),
        ("selu",),
    ],
)
def test_calculate_gain_matches_torch(args):
    assert init.calculate_gain(*args) == torch.nn.init.calculate_gain(*args)


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="not a valid number"):
        init.calculate_gain("leaky_relu", "x")


@pytest.mark.parametrize("shape", [(3, 5), (4, 2, 3, 3), (6, 1, 2)])
def test_fans_match_torch(shape):
    assert init._calculate_fan_in_and_fan_out(ng.empty(shape)) == (
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    )


def test_fan_errors():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(ng.empty(3))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(ng.empty(3, 3), mode="fan_avg")


def _stats(t):
    a = t.detach().numpy()
    return a.min(), a.max(), a.mean(), a.std()


@pytest.mark.parametrize(
    "fill, low, high, std",
    [
        (lambda t: init.uniform_(t, -2.0, 3.0), -2.0, 3.0, 5 / math.sqrt(12)),
        (
            lambda t: init.kaiming_uniform_(t, a=math.sqrt(5)),
            -1 / 20,
            1 / 20,
            1 / 20 / math.sqrt(3),
        ),
        (
            lambda t: init.kaiming_uniform_(t, nonlinearity="relu"),
            -math.sqrt(6 / 400),
            math.sqrt(6 / 400),
            math.sqrt(2 / 400),
        ),
        (
            lambda t: init.xavier_uniform_(t, gain=2.0),
            -2 * math.sqrt(6 / 700),
            2 * math.sqrt(6 / 700),
            2 * math.sqrt(2 / 700),
        ),
        (lambda t: init.trunc_normal_(t, std=0.5, a=-0.4, b=0.9), -0.4, 0.9, None),
    ],
    ids=["uniform", "kaiming-linear", "kaiming-relu", "xavier-uniform", "trunc-normal"],
)
def test_bounded_fills(fill, low, high, std):
    t = ng.empty(300, 400)
    ng.manual_seed(0)
    assert fill(t) is t
    lo, hi, _, s = _stats(t)
    assert low <= lo < low + 0.01 * (high - low) and high - 0.01 * (high - low) < hi <= high
    if std is not None:
        assert abs(s - std) < 0.01 * std


@pytest.mark.parametrize(
    "fill, mean, std",
    [
        (lambda t: init.normal_(t, 1.5, 0.25), 1.5, 0.25),
        (
            lambda t: init.kaiming_normal_(t, mode="fan_out"),
            0.0,
            math.sqrt(2 / (1 + 0.01**2)) / math.sqrt(300),
        ),
        (lambda t: init.xavier_normal_(t), 0.0, math.sqrt(2 / 700)),
    ],
    ids=["normal", "kaiming-normal-fan-out", "xavier-normal"],
)
def test_normal_fills(fill, mean, std):
    t = fill(ng.empty(300, 400))
    _, _, m, s = _stats(t)
    assert abs(m - mean) < 0.01 * max(std, 1e-3) * 10 and abs(s - std) < 0.01 * std


def test_constant_fills_and_eye():
    t = ng.empty(2, 3)
    assert init.constant_(t, 0.5).tolist() == [[0.5] * 3] * 2
    assert init.ones_(t).tolist() == [[1.0] * 3] * 2
    assert init.zeros_(t).tolist() == [[0.0] * 3] * 2
    # ones and zeros written, not computed
    np.testing.assert_array_equal(init.eye_(t).numpy(), np.eye(2, 3))
    with pytest.raises(ValueError, match="2 dimensions"):
        init.eye_(ng.empty(2, 2, 2))


def test_orthogonal():
    for shape in [(4, 6), (6, 4), (3, 2, 2)]:
        t = init.orthogonal_(ng.empty(*shape, dtype=ng.float64), gain=2.0)
        m = t.numpy().reshape(shape[0], -1)
        small = m @ m.T if shape[0] <= m.shape[1] else m.T @ m
        np.testing.assert_allclose(small, 4 * np.eye(small.shape[0]), atol=1e-10)


def test_fills_are_seeded_in_place_and_not_recorded():
    p = ng.nn.Parameter(ng.empty(3, 3))
    version = p._version
    ng.manual_seed(3)
    init.kaiming_uniform_(p)
    first = p.detach().numpy().copy()
    ng.manual_seed(3)
    init.kaiming_uniform_(p)
    # the same seed: the same draws by the same code, bits included
    np.testing.assert_array_equal(first, p.detach().numpy())
    assert p.is_leaf and p.grad_fn is None and p._version > version
    rng = np.random.default_rng(0)
    a = init.normal_(ng.empty(3), generator=rng).numpy().copy()
    b = init.normal_(ng.empty(3), generator=np.random.default_rng(0)).numpy()
    # the same seed: the same draws by the same code, bits included
    np.testing.assert_array_equal(a, b)


def test_zero_element_tensor_warns():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(ng.empty(0, 3))
