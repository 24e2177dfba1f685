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


__all__ = ["make_model", "data", "train", "assert_same_trajectory", "ng"]
