"""``nbgrad.optim.LBFGS`` against PyTorch's: 20 closure steps in float64, with and without the
strong-Wolfe line search (a parameter has no gradient in some steps), the closure calls, the
state (after one step from the same state), state-dict resume, and the errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import nbgrad as ng

from .optim_helpers import (
    assert_same_trajectory,
    copy_problem,
    data,
    make_problem,
    problem_loss,
    problem_params,
    to_numpy,
)

torch = pytest.importorskip("torch")

# both libraries warn when the closure's loss (which requires grad) becomes a float
pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad")

L2 = 0.1

CONFIGS = {
    "plain": dict(lr=0.5, max_iter=4),
    "defaults": dict(),
    "small-history": dict(lr=0.8, max_iter=6, history_size=3),
    "max-eval": dict(lr=1.0, max_iter=10, max_eval=7, history_size=5),
    "strong-wolfe": dict(max_iter=5, line_search_fn="strong_wolfe"),
    "strong-wolfe-defaults": dict(line_search_fn="strong_wolfe"),
    "strong-wolfe-history": dict(max_iter=6, history_size=3, line_search_fn="strong_wolfe"),
    "tolerances": dict(max_iter=20, tolerance_grad=1e-3, tolerance_change=1e-5),
}


def run(lib, kwargs, steps=20, start=0, problem=None, optimizer=None):
    """Closure steps ``start .. start + steps - 1``; the trajectory, losses and closure calls."""
    model, extra = problem if problem is not None else make_problem(lib)
    if optimizer is None:
        optimizer = lib.optim.LBFGS(problem_params(model, extra), **kwargs)
    x, y = data(lib)
    trajectory, losses, calls = [], [], []
    for step in range(start, start + steps):
        count = [0]

        def closure(count=count, step=step):
            count[0] += 1
            optimizer.zero_grad()
            loss = problem_loss(lib, model, extra, step, x, y)
            # A well-posed problem: the L2 term gives the loss a minimum; without it
            # the logits grow without bound and round-off grows ~100x a step in both libraries
            loss = loss + L2 * sum((p * p).sum() for p in model.parameters())
            loss.backward()
            return loss

        losses.append(optimizer.step(closure).item())
        calls.append(count[0])
        trajectory.append([p.detach().numpy().copy() for p in problem_params(model, extra)])
    return (model, extra), optimizer, trajectory, losses, calls


# NOTE [What of the L-BFGS state is compared]
# NumPy and PyTorch round differently (their matmul and dot products sum in other orders), so
# the two trajectories start 1e-15 apart and the gap grows as L-BFGS iterates: about 5e-10 in
# the parameters after 20 steps, far inside the trajectory's 1e-6. The history does not share
# that margin: near the minimum ``y = g_new - g_old`` and ``y . s`` are differences of nearly
# equal numbers, and ``al = (s . q) / (y . s)`` and ``H_diag = (y . s) / (y . y)`` magnify their
# round-off. After the 20 steps of "strong-wolfe-history" nbgrad's ``al`` is 2e-4 (relative)
# from torch's, and torch's own ``al`` moves by 3e-5 to 3e-4 when one starting weight moves by
# one ulp: round-off, not a different algorithm. So the 20-step runs compare the trajectory,
# the losses, the closure calls, the counters and the shape of the state (keys, history
# lengths, empty slots), and ``test_one_step_from_the_same_state_matches_torch`` compares every
# value of the state: both libraries take one step from the same parameters and state, where
# the values agree to about 1e-11 and a change to the order of the line search's or the
# history update's steps moves them by far more than the 1e-8 allowed; and
# ``test_strong_wolfe_matches_torch`` runs the line search alone, on the same numbers as torch's,
# through every branch of it.


def to_torch_value(value):
    """A state value of nbgrad's as torch's (tensors copied, lists element by element)."""
    if isinstance(value, list):
        return [to_torch_value(v) for v in value]
    if isinstance(value, ng.Tensor):
        return torch.tensor(value.detach().numpy().copy())
    return value


def assert_same_lbfgs_state(ours, theirs, rtol=None):
    """Same param_groups, keys in the same order, counters, history lengths and empty slots;
    with ``rtol``, every value within ``rtol`` of torch's, relative to its norm."""
    assert ours["param_groups"] == theirs["param_groups"]
    assert list(ours["state"]) == list(theirs["state"]) == [0]
    a, b = ours["state"][0], theirs["state"][0]
    assert list(a) == list(b)
    assert (a["func_evals"], a["n_iter"]) == (b["func_evals"], b["n_iter"])
    np.testing.assert_allclose(float(a["prev_loss"]), float(b["prev_loss"]), rtol=1e-9)
    for key in b:
        u, v = a[key], b[key]
        if isinstance(v, list):
            assert len(u) == len(v), key
            assert [w is None for w in u] == [w is None for w in v], key
            pairs = [(s, w) for s, w in zip(u, v) if w is not None]
        else:
            pairs = [(u, v)]
        for s, w in pairs:
            s, w = np.asarray(to_numpy(s), dtype=float), np.asarray(to_numpy(w), dtype=float)
            assert s.shape == w.shape, key
            if rtol is not None:
                error, size = np.linalg.norm(s - w), np.linalg.norm(w)
                assert error <= rtol * size, f"{key}: {error:.3g} off, norm {size:.3g}"


@pytest.mark.parametrize("name", CONFIGS)
def test_trajectory_and_state_match_torch(name):
    """20 steps: the trajectory, the losses, the closure calls and the state's shape (see
    NOTE [What of the L-BFGS state is compared])."""
    _, ng_opt, ng_traj, ng_losses, ng_calls = run(ng, CONFIGS[name])
    _, th_opt, th_traj, th_losses, th_calls = run(torch, CONFIGS[name])
    assert ng_calls == th_calls
    np.testing.assert_allclose(ng_losses, th_losses, rtol=1e-9, atol=1e-9)
    assert_same_trajectory(ng_traj, th_traj)
    assert_same_lbfgs_state(ng_opt.state_dict(), th_opt.state_dict())


@pytest.mark.parametrize("name", CONFIGS)
def test_one_step_from_the_same_state_matches_torch(name):
    """nbgrad runs 8 steps; torch's LBFGS gets its parameters and state; one more step each
    ends with the same parameters, closure calls and every state value to 1e-8."""
    kwargs = CONFIGS[name]
    problem, ng_opt, _, _, _ = run(ng, kwargs, steps=8)
    th_problem = make_problem(torch)
    with torch.no_grad():
        for p, q in zip(problem_params(*th_problem), problem_params(*problem)):
            p.copy_(torch.tensor(q.detach().numpy()))
    th_opt = torch.optim.LBFGS(problem_params(*th_problem), **kwargs)
    saved = ng_opt.state_dict()
    th_opt.load_state_dict(
        {
            "state": {0: {key: to_torch_value(v) for key, v in saved["state"][0].items()}},
            "param_groups": saved["param_groups"],
        }
    )
    _, _, ng_traj, ng_losses, ng_calls = run(ng, kwargs, 1, 8, problem, ng_opt)
    _, _, th_traj, th_losses, th_calls = run(torch, kwargs, 1, 8, th_problem, th_opt)
    assert ng_calls == th_calls
    np.testing.assert_allclose(ng_losses, th_losses, rtol=1e-12)  # at the same parameters
    assert_same_trajectory(ng_traj, th_traj, tol=1e-12)
    assert_same_lbfgs_state(ng_opt.state_dict(), th_opt.state_dict(), rtol=1e-8)


@pytest.mark.parametrize("name", ["small-history", "strong-wolfe-history"])
def test_state_dict_resumes_torch_trajectory(name):
    kwargs = CONFIGS[name]
    _, _, th_traj, _, th_calls = run(torch, kwargs)
    problem, opt, first, _, first_calls = run(ng, kwargs, steps=8)
    saved = opt.state_dict()
    resumed = copy_problem(ng, problem)
    new_opt = ng.optim.LBFGS(problem_params(*resumed), **kwargs)
    new_opt.load_state_dict(saved)
    _, _, rest, _, rest_calls = run(
        ng, kwargs, steps=12, start=8, problem=resumed, optimizer=new_opt
    )
    assert first_calls + rest_calls == th_calls
    assert_same_trajectory(first + rest, th_traj)


@pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])
def test_stops_at_once_when_the_gradient_is_zero(lib):
    w = lib.nn.Parameter(lib.zeros(3, dtype=lib.float64))
    opt = lib.optim.LBFGS([w])
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 0.0
    assert len(calls) == 1 and w.tolist() == [0.0, 0.0, 0.0]
    assert opt.state_dict()["state"][0] == {"func_evals": 1, "n_iter": 0}


@pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])
def test_errors(lib):
    a, b = lib.nn.Parameter(lib.ones(1)), lib.nn.Parameter(lib.ones(1))
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        lib.optim.LBFGS([{"params": [a]}, {"params": [b]}])
    with pytest.raises(ValueError, match="Invalid learning rate"):
        lib.optim.LBFGS([a], lr=-1.0)
    opt = lib.optim.LBFGS([a], line_search_fn="backtracking")

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)


def test_defaults_match_torch():
    for kwargs in (dict(), dict(max_iter=8), dict(max_eval=3, line_search_fn="strong_wolfe")):
        ours = ng.optim.LBFGS([ng.nn.Parameter(ng.ones(1))], **kwargs)
        theirs = torch.optim.LBFGS([torch.nn.Parameter(torch.ones(1))], **kwargs)
        assert ours.defaults == theirs.defaults
        assert list(ours.defaults) == list(theirs.defaults)


# functions of the step along the line, with their slopes: bowls, sharp and flat ones, waves
LINE_FUNCTIONS = {
    "bowl": (lambda t: (t - 1) ** 2 - 1, lambda t: 2 * (t - 1)),
    "sharp": (
        lambda t: np.sqrt(1 + 100 * (t - 0.7) ** 2) - 10 * t / 7,
        lambda t: 100 * (t - 0.7) / np.sqrt(1 + 100 * (t - 0.7) ** 2) - 10 / 7,
    ),
    "flat": (lambda t: -t / (1 + t), lambda t: -1 / (1 + t) ** 2),
    "wavy": (lambda t: np.sin(8 * t) - 2 * t + t**2, lambda t: 8 * np.cos(8 * t) - 2 + 2 * t),
    "cliff": (lambda t: np.exp(4 * (t - 2)) - t, lambda t: 4 * np.exp(4 * (t - 2)) - 1),
    "hump": (lambda t: t**4 - t, lambda t: 4 * t**3 - 1),
}


def line_search_problem(lib, name):
    """The arguments of ``_strong_wolfe`` but ``t`` for one of LINE_FUNCTIONS along
    ``d = [2, -1]`` (so that ``|d|`` differs from the sum of its entries), in each library's
    tensors of the same numbers."""
    phi, slope = LINE_FUNCTIONS[name]
    direction = np.array([2.0, -1.0])

    def loss_and_grad(t):  # a gradient whose dot with d is the slope
        return float(phi(t)), lib.tensor(slope(t) * direction / 5)

    def obj_func(x, t, d):
        return loss_and_grad(float(t))

    f, g = loss_and_grad(0.0)
    d = lib.tensor(direction)
    return obj_func, lib.tensor([0.0, 0.0]), d, f, g, g.dot(d)


@pytest.mark.parametrize("name", LINE_FUNCTIONS)
def test_strong_wolfe_matches_torch(name):
    """The line search alone, fed the same numbers as torch's: the same evaluations, step,
    loss and gradient, from steps too short and too long, with few and many evaluations
    allowed and a coarse bracket tolerance (every branch of both phases)."""
    from torch.optim.lbfgs import _strong_wolfe as torch_strong_wolfe

    from nbgrad.optim.lbfgs import _strong_wolfe

    for t, max_ls, tolerance_change in itertools.product(
        np.geomspace(1e-3, 10, 9), (3, 25), (1e-9, 1e-2)
    ):
        case = f"t={t:g}, max_ls={max_ls}, tolerance_change={tolerance_change:g}"
        args = (1e-4, 0.9, tolerance_change, max_ls)
        obj_func, x, d, f, g, gtd = line_search_problem(ng, name)
        ours = _strong_wolfe(obj_func, x, t, d, f, g, gtd, *args)
        obj_func, x, d, f, g, gtd = line_search_problem(torch, name)
        theirs = torch_strong_wolfe(obj_func, x, t, d, f, g, gtd, *args)
        assert ours[3] == theirs[3], case  # evaluations
        np.testing.assert_allclose(float(ours[2]), float(theirs[2]), rtol=1e-12, err_msg=case)
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12, err_msg=case)
        np.testing.assert_allclose(to_numpy(ours[1]), to_numpy(theirs[1]), rtol=1e-12, err_msg=case)
