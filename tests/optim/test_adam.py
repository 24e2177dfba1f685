"""``nbgrad.optim.Adam`` and ``AdamW`` (``nbgrad/optim/adam.py``, ``adamw.py``) against
PyTorch's: parameter trajectories over 20 steps to 1e-6 in float64, and their state."""

from __future__ import annotations

import pytest

import nbgrad as ng

from .optim_helpers import assert_same_trajectory, make_model, train

torch = pytest.importorskip("torch")

CONFIGS = {
    "adam": ("Adam", dict(lr=0.01)),
    "adam-weight-decay": ("Adam", dict(lr=0.01, weight_decay=0.1)),
    "adam-amsgrad": ("Adam", dict(lr=0.05, amsgrad=True, betas=(0.8, 0.9))),
    "adam-maximize-eps": ("Adam", dict(lr=0.01, maximize=True, eps=1e-3)),
    "adam-decoupled": ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    "adamw": ("AdamW", dict(lr=0.01)),
    "adamw-weight-decay": ("AdamW", dict(lr=0.02, weight_decay=0.5)),
    "adamw-amsgrad": ("AdamW", dict(lr=0.02, amsgrad=True)),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_trajectory_matches_torch(name):
    cls, kwargs = CONFIGS[name]
    _, _, ng_traj = train(ng, lambda lib, m: getattr(lib.optim, cls)(m.parameters(), **kwargs))
    _, _, th_traj = train(torch, lambda lib, m: getattr(lib.optim, cls)(m.parameters(), **kwargs))
    assert_same_trajectory(ng_traj, th_traj)


def groups(lib, model):
    return lib.optim.Adam(
        [
            {"params": model[0].parameters(), "lr": 0.03, "betas": (0.5, 0.9)},
            {"params": model[2].parameters(), "weight_decay": 0.2},
        ],
        lr=0.01,
    )


def test_parameter_groups_match_torch():
    _, ng_opt, ng_traj = train(ng, groups)
    _, th_opt, th_traj = train(torch, groups)
    assert_same_trajectory(ng_traj, th_traj)
    assert ng_opt.state_dict()["param_groups"] == th_opt.state_dict()["param_groups"]


@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
def test_state_dict_matches_torch_and_resumes(cls):
    def make(lib, m):
        return getattr(lib.optim, cls)(m.parameters(), lr=0.02, amsgrad=True)

    _, th_opt, th_traj = train(torch, make, steps=20)
    model, opt, first = train(ng, make, steps=10)
    sd = opt.state_dict()
    th_sd = th_opt.state_dict()
    assert sd["param_groups"] == th_sd["param_groups"]
    assert list(sd["state"][0]) == list(th_sd["state"][0])
    assert sd["state"][0]["step"].item() == 10.0 and sd["state"][0]["step"].dtype is ng.float32
    # a fresh model and optimizer resume from the saved states
    resumed = make_model(ng)
    resumed.load_state_dict(model.state_dict())
    new_opt = make(ng, resumed)
    new_opt.load_state_dict(sd)
    assert new_opt.state_dict()["state"][0]["exp_avg"] is not sd["state"][0]["exp_avg"]
    _, _, rest = train(ng, None, steps=10, model=resumed, optimizer=new_opt)
    assert_same_trajectory(first + rest, th_traj)
    # the saved state was copied, not shared
    assert sd["state"][0]["step"].item() == 10.0


def test_adamw_defaults_and_invalid_arguments():
    p = [ng.nn.Parameter(ng.ones(1))]
    tp = [torch.nn.Parameter(torch.ones(1))]
    assert ng.optim.AdamW(p).defaults == torch.optim.AdamW(tp).defaults
    assert ng.optim.Adam(p).defaults == torch.optim.Adam(tp).defaults
    for lib, params in ((ng, p), (torch, tp)):
        with pytest.raises(ValueError, match="Invalid beta parameter at index 0"):
            lib.optim.Adam(params, betas=(1.0, 0.9))
        with pytest.raises(ValueError, match="Invalid epsilon value"):
            lib.optim.AdamW(params, eps=-1)
        with pytest.raises(ValueError, match="Invalid learning rate"):
            lib.optim.Adam(params, lr=-0.1)
