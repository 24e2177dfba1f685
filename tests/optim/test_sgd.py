"""``nbgrad.optim.SGD`` (``nbgrad/optim/sgd.py``) against ``torch.optim.SGD``: the parameter
trajectory of a small MLP over 20 steps, same weights and data, to 1e-6 in float64."""

from __future__ import annotations

import pytest

import nbgrad as ng

from .optim_helpers import assert_same_trajectory, train

torch = pytest.importorskip("torch")

CONFIGS = {
    "plain": dict(lr=0.1),
    "momentum": dict(lr=0.1, momentum=0.9),
    "dampening": dict(lr=0.1, momentum=0.9, dampening=0.5),
    "weight-decay": dict(lr=0.1, weight_decay=0.1),
    "nesterov": dict(lr=0.05, momentum=0.8, nesterov=True),
    "nesterov-weight-decay": dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01),
    "maximize": dict(lr=0.01, momentum=0.5, maximize=True),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_sgd_trajectory_matches_torch(name):
    kwargs = CONFIGS[name]
    _, _, ng_traj = train(ng, lambda lib, m: lib.optim.SGD(m.parameters(), **kwargs))
    _, _, th_traj = train(torch, lambda lib, m: lib.optim.SGD(m.parameters(), **kwargs))
    assert_same_trajectory(ng_traj, th_traj)


def groups(lib, model):
    return lib.optim.SGD(
        [
            {"params": model[0].parameters(), "lr": 0.2, "momentum": 0.5},
            {"params": model[2].parameters()},
        ],
        lr=0.05,
        momentum=0.9,
        nesterov=True,
    )


def test_parameter_groups_match_torch():
    _, ng_opt, ng_traj = train(ng, groups)
    _, th_opt, th_traj = train(torch, groups)
    assert_same_trajectory(ng_traj, th_traj)
    assert [g["lr"] for g in ng_opt.param_groups] == [0.2, 0.05]
    assert [g["nesterov"] for g in ng_opt.param_groups] == [True, True]


def test_momentum_buffer_state_matches_torch():
    _, ng_opt, _ = train(
        ng, lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9), steps=3
    )
    _, th_opt, _ = train(
        torch, lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9), steps=3
    )
    ng_sd, th_sd = ng_opt.state_dict(), th_opt.state_dict()
    assert ng_sd["param_groups"] == th_sd["param_groups"]
    assert sorted(ng_sd["state"]) == sorted(th_sd["state"]) == [0, 1, 2, 3]
    for k in th_sd["state"]:
        assert list(ng_sd["state"][k]) == list(th_sd["state"][k]) == ["momentum_buffer"]
        assert ng_sd["state"][k]["momentum_buffer"].numpy() == pytest.approx(
            th_sd["state"][k]["momentum_buffer"].numpy(), abs=1e-9
        )
    plain = ng.optim.SGD([ng.nn.Parameter(ng.ones(1))], lr=0.1)
    plain.param_groups[0]["params"][0].grad = ng.ones(1)
    plain.step()
    assert dict(plain.state) == {}  # no momentum: no state, as PyTorch


def test_skips_parameters_without_grad_and_returns_closure_loss():
    a, b = ng.nn.Parameter(ng.ones(2)), ng.nn.Parameter(ng.ones(2))
    opt = ng.optim.SGD([a, b], lr=0.5)

    def closure():
        opt.zero_grad()
        loss = (a * 3).sum()
        loss.backward()
        return loss

    # exact: whole numbers and halves (1 - 0.5 * 3)
    assert opt.step(closure).item() == 6.0
    assert a.tolist() == [-0.5, -0.5] and b.tolist() == [1.0, 1.0]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(lr=-1.0), "Invalid learning rate: -1.0"),
        (dict(lr=0.1, momentum=-0.5), "Invalid momentum value: -0.5"),
        (dict(lr=0.1, weight_decay=-1), "Invalid weight_decay value: -1"),
        (dict(lr=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
        (dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov momentum requires"),
    ],
)
@pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])
def test_invalid_arguments(lib, kwargs, message):
    with pytest.raises(ValueError, match=message):
        lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], **kwargs)


def test_default_learning_rate_matches_torch():
    p = ng.nn.Parameter(ng.ones(1))
    assert (
        ng.optim.SGD([p]).defaults == torch.optim.SGD([torch.nn.Parameter(torch.ones(1))]).defaults
    )
