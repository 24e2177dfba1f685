"""``index_reduce``'s errors, and ``poisson`` / ``binomial``: their distributions, errors and
gradients, against PyTorch (the op-table test checks ``index_reduce``'s values and
gradients)."""

from __future__ import annotations

import warnings

import numpy as np
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


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_methods_match_pytorch(reduce, include_self):
    """``Tensor.index_reduce`` and ``index_reduce_`` (on a non-leaf): values, node names and
    the gradients of the input and the source, against PyTorch."""
    rng = np.random.default_rng(0)
    a, s = rng.normal(size=(4, 3)), rng.normal(size=(5, 3))
    results = []
    for lib in (ng, torch):
        x = lib.tensor(a, requires_grad=True)
        src = lib.tensor(s, requires_grad=True)
        index = lib.tensor([0, 2, 0, 3, 2])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch: "index_reduce() is in beta"
            out = x.index_reduce(0, index, src, reduce, include_self=include_self)
            y = x * 2
            y.index_reduce_(0, index, src, reduce, include_self=include_self)
        (out.sum() + (y * y).sum()).backward()
        results.append(
            (out.detach().numpy(), y.detach().numpy(), out.grad_fn.name(), y.grad_fn.name())
            + (x.grad.numpy(), src.grad.numpy())
        )
    ours, theirs = results
    assert ours[2:4] == theirs[2:4] == ("IndexReduceBackward0", "IndexReduceBackward0")
    for o, t in zip(ours[:2] + ours[4:], theirs[:2] + theirs[4:]):
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-12)


# ---- poisson and binomial ---------------------------------------------------------------------
def _moments(draws):
    draws = np.asarray(draws, dtype=np.float64)
    return draws.mean(), draws.var()


@pytest.mark.parametrize("fn", ["scatter_reduce", "index_reduce"])
@pytest.mark.parametrize("src", [[0.0, 0.0, 3.0], [0.0, 2.0, 0.0], [1.0, 2.0, 3.0]])
def test_prod_double_backward_with_two_zeros_in_one_place_raises_as_pytorch(fn, src):
    """The "prod" reduction's first derivatives as PyTorch's; with two zeros of src reduced
    into one place, differentiating src's gradient raises PyTorch's error (its node: Error)."""

    def run(lib):
        self = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        source = lib.tensor(src, dtype=lib.float64, requires_grad=True)
        index = lib.tensor([0, 0, 1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (torch: index_reduce is in beta)
            out = getattr(lib, fn)(self, 0, index, source, "prod")
        g_self, g_src = lib.autograd.grad(out.sum(), (self, source), create_graph=True)
        result = [out.tolist(), g_self.tolist(), g_src.tolist(), type(g_src.grad_fn).__name__]
        try:
            second = lib.autograd.grad(g_src.sum(), (self, source), allow_unused=True)
            result.append([t.tolist() for t in second])
        except RuntimeError as e:
            result.append(str(e))
        return result

    assert run(ng) == run(torch)


@pytest.mark.parametrize("rate", [0.3, 4.0, 40.0])
def test_poisson_draws_follow_pytorchs_distribution(rate):
    """Mean and variance both ``rate``, within 6 standard errors, as torch's draws."""
    n = 20000
    ng.manual_seed(0)
    torch.manual_seed(0)
    ours = ng.poisson(ng.full((n,), rate, dtype=ng.float64)).numpy()
    theirs = torch.poisson(torch.full((n,), rate, dtype=torch.float64)).numpy()
    for draws in (ours, theirs):
        assert (draws == np.round(draws)).all() and (draws >= 0).all()
        mean, var = _moments(draws)
        assert abs(mean - rate) < 6 * np.sqrt(rate / n)
        assert abs(var - rate) < 6 * np.sqrt((rate + 2 * rate**2) / n)


@pytest.mark.parametrize("count, prob", [(10.0, 0.3), (1.0, 0.9), (50.0, 0.02)])
def test_binomial_draws_follow_pytorchs_distribution(count, prob):
    n = 20000
    ng.manual_seed(0)
    torch.manual_seed(0)
    ours = ng.binomial(ng.full((n,), count), ng.full((n,), prob)).numpy()
    theirs = torch.binomial(torch.full((n,), count), torch.full((n,), prob)).numpy()
    mu, sigma2 = count * prob, count * prob * (1 - prob)
    for draws in (ours, theirs):
        assert (draws == np.round(draws)).all() and ((draws >= 0) & (draws <= count)).all()
        mean, var = _moments(draws)
        assert abs(mean - mu) < 6 * np.sqrt(sigma2 / n)
        assert abs(var - sigma2) < 0.1 * sigma2


def test_poisson_and_binomial_edges_match_pytorch():
    """Certain draws (a zero rate, probabilities 0 and 1, a negative count), the result
    dtype, and the generator argument."""
    for lib in (ng, torch):
        out = lib.poisson(lib.tensor([0.0, 0.0], dtype=lib.float64))
        assert out.dtype == lib.float64 and out.tolist() == [0.0, 0.0]
        out = lib.binomial(lib.tensor([5.0, 3.0, -1.0]), lib.tensor([1.0, 0.0, 0.5]))
        assert out.tolist() == [5.0, 0.0, 0.0]
        g = lib.Generator().manual_seed(3)
        a = lib.poisson(lib.full((5,), 3.0), generator=g)
        b = lib.poisson(lib.full((5,), 3.0), generator=lib.Generator().manual_seed(3))
        # the same seed: the same draws by the same code, bits included
        assert a.tolist() == b.tolist()


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda lib: lib.poisson(lib.tensor([-1.0])), RuntimeError),
        (lambda lib: lib.poisson(lib.tensor([float("nan")])), RuntimeError),
        (lambda lib: lib.poisson(lib.tensor([1])), NotImplementedError),
        (lambda lib: lib.binomial(lib.tensor([5]), lib.tensor([0.5])), ValueError),
        (
            lambda lib: lib.binomial(lib.tensor([5.0]), lib.tensor([0.5], dtype=lib.float64)),
            RuntimeError,
        ),
    ],
)
def test_poisson_and_binomial_errors_match_pytorch(call, error):
    messages = []
    for lib in (ng, torch):
        with pytest.raises(error) as info:
            call(lib)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_poisson_gradient_is_zero_and_binomial_has_none_as_pytorch():
    for lib in (ng, torch):
        rate = lib.tensor([0.5, 2.0], requires_grad=True)
        out = lib.poisson(rate)
        assert out.grad_fn.name() == "PoissonBackward0"
        out.sum().backward()
        assert rate.grad.tolist() == [0.0, 0.0]
        count = lib.tensor([3.0], requires_grad=True)
        out = lib.binomial(count, lib.tensor([0.5]))
        with pytest.raises(RuntimeError, match="derivative for aten::binomial is not implemented"):
            out.backward()
