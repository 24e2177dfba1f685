"""``nbgrad.optim.Adadelta``, ``Adamax``, ``NAdam``, ``RAdam``, ``ASGD``, ``Rprop`` and
``Adafactor`` against
PyTorch's: 20-step trajectories in float64 (with a parameter that has no gradient in some
steps), the final state, state-dict resume, defaults and argument checks."""

from __future__ import annotations

import pytest

import nbgrad as ng

from .optim_helpers import check_resume, check_trajectory

torch = pytest.importorskip("torch")

CONFIGS = {
    "adadelta": ("Adadelta", dict()),
    "adadelta-rho-wd": ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1)),
    "adadelta-maximize": ("Adadelta", dict(lr=0.3, maximize=True)),
    "adamax": ("Adamax", dict(lr=0.01)),
    "adamax-wd-betas": ("Adamax", dict(lr=0.02, betas=(0.8, 0.99), weight_decay=0.1)),
    "adamax-maximize": ("Adamax", dict(lr=0.005, maximize=True, eps=1e-3)),
    "nadam": ("NAdam", dict(lr=0.01)),
    "nadam-wd": ("NAdam", dict(lr=0.01, weight_decay=0.1, momentum_decay=0.01)),
    "nadam-decoupled": ("NAdam", dict(lr=0.02, weight_decay=0.2, decoupled_weight_decay=True)),
    "nadam-maximize": ("NAdam", dict(lr=0.005, maximize=True, betas=(0.8, 0.9))),
    # beta2 = 0.9: rho_t > 5 from step 6 on, so both branches of the rectification run
    "radam": ("RAdam", dict(lr=0.01, betas=(0.9, 0.9))),
    "radam-default": ("RAdam", dict(lr=0.01)),
    "radam-wd": ("RAdam", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1)),
    "radam-decoupled": (
        "RAdam",
        dict(lr=0.02, betas=(0.9, 0.9), weight_decay=0.3, decoupled_weight_decay=True),
    ),
    "radam-maximize": ("RAdam", dict(lr=0.005, betas=(0.9, 0.9), maximize=True)),
    "asgd": ("ASGD", dict(lr=0.05)),
    "asgd-averaging": ("ASGD", dict(lr=0.1, lambd=0.01, alpha=0.5, t0=4)),
    "asgd-wd-maximize": ("ASGD", dict(lr=0.02, t0=2, weight_decay=0.1, maximize=True)),
    "rprop": ("Rprop", dict()),
    "rprop-etas-sizes": ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.08))),
    "rprop-maximize": ("Rprop", dict(lr=0.001, maximize=True)),
    "adafactor": ("Adafactor", dict()),
    "adafactor-lr-decay-d": ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, d=1.2)),
    "adafactor-eps-wd-maximize": (
        "Adafactor",
        dict(lr=0.02, eps=(1e-20, 1e-2), weight_decay=0.1, maximize=True),
    ),
}


def maker(cls, kwargs):
    def make(lib, model, extra):
        return getattr(lib.optim, cls)([*model.parameters(), extra], **kwargs)

    return make


@pytest.mark.parametrize("name", CONFIGS)
def test_trajectory_and_state_match_torch(name):
    check_trajectory(torch, maker(*CONFIGS[name]))


@pytest.mark.parametrize(
    "name",
    [
        "adadelta-rho-wd",
        "adamax-wd-betas",
        "nadam-decoupled",
        "radam",
        "asgd-averaging",
        "rprop",
        "adafactor-lr-decay-d",
    ],
)
def test_state_dict_resumes_torch_trajectory(name):
    check_resume(torch, maker(*CONFIGS[name]))


NAMES = ["Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"]


def groups(cls):
    def make(lib, model, extra):
        return getattr(lib.optim, cls)(
            [
                {"params": model[0].parameters(), "lr": 0.003},
                {"params": [*model[2].parameters(), extra]},
            ],
            lr=0.02,
        )

    return make


@pytest.mark.parametrize("cls", [*NAMES, "Adafactor"])
def test_parameter_groups_match_torch(cls):
    check_trajectory(torch, groups(cls))


@pytest.mark.parametrize("cls", [*NAMES, "Adafactor"])
def test_defaults_match_torch(cls):
    ours = getattr(ng.optim, cls)([ng.nn.Parameter(ng.ones(1))])
    theirs = getattr(torch.optim, cls)([torch.nn.Parameter(torch.ones(1))])
    assert ours.defaults == theirs.defaults
    assert list(ours.defaults) == list(theirs.defaults)


@pytest.mark.parametrize(
    "cls, kwargs, message",
    [
        ("Adadelta", dict(rho=1.5), "Invalid rho value"),
        ("Adadelta", dict(lr=-1.0), "Invalid learning rate"),
        ("Adamax", dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1"),
        ("NAdam", dict(momentum_decay=-1.0), "Invalid momentum_decay value"),
        ("NAdam", dict(betas=(-0.1, 0.9)), "Invalid beta parameter at index 0"),
        ("RAdam", dict(weight_decay=-1.0), "Invalid weight_decay value"),
        ("ASGD", dict(weight_decay=-1.0), "Invalid weight_decay value"),
        ("Rprop", dict(etas=(1.2, 0.5)), "Invalid eta values"),
        ("Adafactor", dict(beta2_decay=0.5), "beta2_decay should be <= 0"),
        ("Adafactor", dict(eps=(-1.0, 1e-3)), "epsilon1 should be >= 0"),
        ("Adafactor", dict(d=0.5), "Clipping threshold d should be >= 1"),
    ],
)
@pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])
def test_invalid_arguments(lib, cls, kwargs, message):
    with pytest.raises(ValueError, match=message):
        getattr(lib.optim, cls)([lib.nn.Parameter(lib.ones(1))], **kwargs)


@pytest.mark.parametrize("cls", NAMES)
@pytest.mark.parametrize("flag", ["capturable", "differentiable"])
def test_unsupported_implementations_raise(cls, flag):
    with pytest.raises(NotImplementedError, match=f"{flag}=True is not supported"):
        getattr(ng.optim, cls)([ng.nn.Parameter(ng.ones(1))], **{flag: True})


@pytest.mark.parametrize("cls", [*NAMES, "RMSprop", "Adagrad", "Adafactor"])
def test_foreach_is_accepted_and_recorded(cls):
    """``foreach=True`` runs nbgrad's one implementation; torch's multi-tensor path (CPU too)
    gives the same trajectory, and both record the flag in the param groups."""
    kwargs = dict(foreach=True, lr=0.01) if cls != "Adadelta" else dict(foreach=True)
    check_trajectory(torch, maker(cls, kwargs))
