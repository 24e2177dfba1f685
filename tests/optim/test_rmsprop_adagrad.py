"""``nbgrad.optim.RMSprop`` and ``Adagrad`` against PyTorch's: 20-step trajectories in float64
(with a parameter that has no gradient in some steps), the final state, state-dict resume."""

from __future__ import annotations

import pytest

import nbgrad as ng

from .optim_helpers import check_resume, check_trajectory

torch = pytest.importorskip("torch")

CONFIGS = {
    "rmsprop": ("RMSprop", dict()),
    "rmsprop-centered": ("RMSprop", dict(lr=0.005, centered=True, alpha=0.9)),
    "rmsprop-momentum": ("RMSprop", dict(lr=0.002, momentum=0.9, eps=1e-4)),
    "rmsprop-centered-momentum-wd": (
        "RMSprop",
        dict(lr=0.003, centered=True, momentum=0.5, weight_decay=0.1),
    ),
    "rmsprop-maximize": ("RMSprop", dict(lr=0.001, maximize=True, weight_decay=0.01)),
    "adagrad": ("Adagrad", dict(lr=0.1)),
    "adagrad-lr-decay": ("Adagrad", dict(lr=0.2, lr_decay=0.05)),
    "adagrad-init-acc-wd": (
        "Adagrad",
        dict(lr=0.1, initial_accumulator_value=0.5, weight_decay=0.1, eps=1e-6),
    ),
    "adagrad-maximize": ("Adagrad", dict(lr=0.05, maximize=True, lr_decay=0.01)),
}


def maker(cls, kwargs):
    def make(lib, model, extra):
        return getattr(lib.optim, cls)([*model.parameters(), extra], **kwargs)

    return make


@pytest.mark.parametrize("name", CONFIGS)
def test_trajectory_and_state_match_torch(name):
    check_trajectory(torch, maker(*CONFIGS[name]))


@pytest.mark.parametrize(
    "name", ["rmsprop-centered-momentum-wd", "rmsprop", "adagrad-lr-decay", "adagrad"]
)
def test_state_dict_resumes_torch_trajectory(name):
    check_resume(torch, maker(*CONFIGS[name]))


def groups(cls):
    def make(lib, model, extra):
        opt = getattr(lib.optim, cls)
        return opt(
            [
                {"params": model[0].parameters(), "lr": 0.003, "weight_decay": 0.1},
                {"params": [*model[2].parameters(), extra]},
            ],
            lr=0.01,
        )

    return make


@pytest.mark.parametrize("cls", ["RMSprop", "Adagrad"])
def test_parameter_groups_match_torch(cls):
    check_trajectory(torch, groups(cls))


@pytest.mark.parametrize("cls", ["RMSprop", "Adagrad"])
def test_defaults_match_torch(cls):
    ours = getattr(ng.optim, cls)([ng.nn.Parameter(ng.ones(1))])
    theirs = getattr(torch.optim, cls)([torch.nn.Parameter(torch.ones(1))])
    assert ours.defaults == theirs.defaults
    assert list(ours.defaults) == list(theirs.defaults)


@pytest.mark.parametrize(
    "cls, kwargs, message",
    [
        ("RMSprop", dict(lr=-1.0), "Invalid learning rate"),
        ("RMSprop", dict(alpha=-0.1), "Invalid alpha value"),
        ("RMSprop", dict(momentum=-0.1), "Invalid momentum value"),
        ("Adagrad", dict(lr_decay=-1.0), "Invalid lr_decay value"),
        ("Adagrad", dict(initial_accumulator_value=-1.0), "Invalid initial_accumulator_value"),
        ("Adagrad", dict(eps=-1.0), "Invalid epsilon value"),
    ],
)
@pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])
def test_invalid_arguments(lib, cls, kwargs, message):
    with pytest.raises(ValueError, match=message):
        getattr(lib.optim, cls)([lib.nn.Parameter(lib.ones(1))], **kwargs)


@pytest.mark.parametrize(
    "cls, flag", [("RMSprop", "capturable"), ("RMSprop", "differentiable"), ("Adagrad", "fused")]
)
def test_unsupported_implementations_raise(cls, flag):
    with pytest.raises(NotImplementedError, match=f"{flag}=True is not supported"):
        getattr(ng.optim, cls)([ng.nn.Parameter(ng.ones(1))], **{flag: True})
