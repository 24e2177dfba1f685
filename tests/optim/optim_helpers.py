"""Shared helpers of the optimizer tests: one small model in nbgrad and torch, same weights."""

from __future__ import annotations

import numpy as np

import nbgrad as ng


def make_model(lib, seed=0):
    """A float64 MLP with deterministic weights, identical in both libraries."""
    model = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Linear(8, 3)).double()
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(rng.uniform(-0.5, 0.5, tuple(p.shape))))
    return model


def data(lib, seed=1):
    rng = np.random.default_rng(seed)
    x = lib.tensor(rng.standard_normal((16, 4)))
    y = lib.tensor(rng.integers(0, 3, 16))
    return x, y


def train(lib, make_optimizer, steps=20, model=None, optimizer=None):
    """Run ``steps`` steps; return the model, the optimizer and every parameter after each."""
    model = model if model is not None else make_model(lib)
    optimizer = optimizer if optimizer is not None else make_optimizer(lib, model)
    x, y = data(lib)
    loss_fn = lib.nn.CrossEntropyLoss()
    trajectory = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
        trajectory.append([p.detach().numpy().copy() for p in model.parameters()])
    return model, optimizer, trajectory


def assert_same_trajectory(a, b, tol=1e-6):
    assert len(a) == len(b)
    for step, (pa, pb) in enumerate(zip(a, b)):
        for i, (u, v) in enumerate(zip(pa, pb)):
            np.testing.assert_allclose(u, v, rtol=tol, atol=tol, err_msg=f"step {step} param {i}")


# -- a problem with a parameter that has no gradient in some steps ---------------------------


def make_problem(lib, seed=0):
    """The MLP of ``make_model`` plus a float64 vector ``extra`` used only in some steps."""
    model = make_model(lib, seed)
    rng = np.random.default_rng(seed + 7)
    extra = lib.nn.Parameter(lib.tensor(rng.uniform(-1.0, 1.0, (5,))))
    return model, extra


def problem_params(model, extra):
    return [*model.parameters(), extra]


def _uses_extra(step):
    return step % 3 != 1  # steps 1, 4, 7, ...: ``extra.grad`` is None


def problem_loss(lib, model, extra, step, x, y):
    loss = lib.nn.CrossEntropyLoss()(model(x), y)
    if _uses_extra(step):
        loss = loss + ((extra - 0.3) ** 2 * lib.arange(1, 6, dtype=lib.float64)).sum()
    return loss


def run_problem(lib, make_optimizer, steps=20, start=0, problem=None, optimizer=None):
    """Run steps ``start .. start + steps - 1`` of the problem with ``step()`` (no closure).

    Returns the problem, the optimizer and every parameter after each step.
    """
    model, extra = problem if problem is not None else make_problem(lib)
    optimizer = optimizer if optimizer is not None else make_optimizer(lib, model, extra)
    x, y = data(lib)
    trajectory = []
    for step in range(start, start + steps):
        optimizer.zero_grad()
        problem_loss(lib, model, extra, step, x, y).backward()
        optimizer.step()
        trajectory.append([p.detach().numpy().copy() for p in problem_params(model, extra)])
    return (model, extra), optimizer, trajectory


def copy_problem(lib, problem):
    """A fresh problem holding the parameters of ``problem``."""
    model, extra = make_problem(lib, seed=5)
    with lib.no_grad():
        for p, q in zip(problem_params(model, extra), problem_params(*problem)):
            p.copy_(q)
    return model, extra


def to_numpy(value):
    return value.detach().numpy() if hasattr(value, "detach") else value


def assert_same_state(ng_sd, th_sd, tol=1e-6):
    """Same param_groups, same state keys in the same order, same values (to ``tol``)."""
    assert ng_sd["param_groups"] == th_sd["param_groups"]
    assert sorted(ng_sd["state"]) == sorted(th_sd["state"])
    for index, th_state in th_sd["state"].items():
        ng_state = ng_sd["state"][index]
        assert list(ng_state) == list(th_state), index
        for key, th_value in th_state.items():
            ng_value = ng_state[key]
            if hasattr(th_value, "dtype"):
                assert str(ng_value.dtype).split(".")[-1] == str(th_value.dtype).split(".")[-1]
                assert tuple(ng_value.shape) == tuple(th_value.shape), key
            np.testing.assert_allclose(
                to_numpy(ng_value), to_numpy(th_value), rtol=tol, atol=tol, err_msg=key
            )


def check_trajectory(torch, make_optimizer, steps=20):
    """nbgrad follows torch's trajectory and ends with torch's state."""
    _, ng_opt, ng_traj = run_problem(ng, make_optimizer, steps)
    _, th_opt, th_traj = run_problem(torch, make_optimizer, steps)
    assert_same_trajectory(ng_traj, th_traj)
    assert_same_state(ng_opt.state_dict(), th_opt.state_dict())


def check_resume(torch, make_optimizer, steps=20, split=8):
    """Save nbgrad's state after ``split`` steps, load it into a fresh optimizer of a fresh
    problem and go on: the whole trajectory is torch's uninterrupted one."""
    _, _, th_traj = run_problem(torch, make_optimizer, steps)
    problem, opt, first = run_problem(ng, make_optimizer, split)
    saved = opt.state_dict()
    resumed = copy_problem(ng, problem)
    new_opt = make_optimizer(ng, *resumed)
    new_opt.load_state_dict(saved)
    _, _, rest = run_problem(
        ng, None, steps - split, start=split, problem=resumed, optimizer=new_opt
    )
    assert_same_trajectory(first + rest, th_traj)


__all__ = [
    "make_model",
    "data",
    "train",
    "assert_same_trajectory",
    "make_problem",
    "problem_params",
    "problem_loss",
    "to_numpy",
    "run_problem",
    "copy_problem",
    "assert_same_state",
    "check_trajectory",
    "check_resume",
    "ng",
]
