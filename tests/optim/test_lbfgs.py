"""``nbgrad.optim.LBFGS`` against PyTorch's: 20 closure steps in float64, with and without the
strong-Wolfe line search (a parameter has no gradient in some steps), the closure calls, the
final state, state-dict resume, and the errors."""

from __future__ import annotations

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
            # NOTE [a well-posed problem]: the L2 term gives the loss a minimum; without it
            # the logits grow without bound and round-off grows ~100x a step in both libraries
            loss = loss + L2 * sum((p * p).sum() for p in model.parameters())
            loss.backward()
            return loss

        losses.append(optimizer.step(closure).item())
        calls.append(count[0])
        trajectory.append([p.detach().numpy().copy() for p in problem_params(model, extra)])
    return (model, extra), optimizer, trajectory, losses, calls


def assert_same_lbfgs_state(ours, theirs, tol=1e-6):
    assert ours["param_groups"] == theirs["param_groups"]
    assert list(ours["state"]) == list(theirs["state"]) == [0]
    a, b = ours["state"][0], theirs["state"][0]
    assert list(a) == list(b)
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
            if key == "ro":  # 1 / (y . s): compare y . s, whose round-off is absolute
                s, w = 1 / s, 1 / w
            np.testing.assert_allclose(
                s,
                w,
                rtol=tol,
                atol=tol,
                err_msg=key,
            )


@pytest.mark.parametrize("name", CONFIGS)
def test_trajectory_and_state_match_torch(name):
    _, ng_opt, ng_traj, ng_losses, ng_calls = run(ng, CONFIGS[name])
    _, th_opt, th_traj, th_losses, th_calls = run(torch, CONFIGS[name])
    assert ng_calls == th_calls
    np.testing.assert_allclose(ng_losses, th_losses, rtol=1e-9, atol=1e-9)
    assert_same_trajectory(ng_traj, th_traj)
    assert_same_lbfgs_state(ng_opt.state_dict(), th_opt.state_dict())


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
