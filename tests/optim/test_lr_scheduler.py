"""``nbgrad.optim.lr_scheduler`` against ``torch.optim.lr_scheduler``: the same rates, step by
step, bit for bit, with several param groups, and through a state dict."""

from __future__ import annotations

import math

import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

SCHEDULES = {
    "step": lambda S, opt: S.StepLR(opt, step_size=3, gamma=0.5),
    "multistep": lambda S, opt: S.MultiStepLR(opt, milestones=[2, 5, 5, 9], gamma=0.3),
    "exponential": lambda S, opt: S.ExponentialLR(opt, gamma=0.9),
    "cosine": lambda S, opt: S.CosineAnnealingLR(opt, T_max=4, eta_min=0.01),
    "lambda": lambda S, opt: S.LambdaLR(opt, lambda k: 1 / (k + 1)),
    "lambda-per-group": lambda S, opt: S.LambdaLR(opt, [lambda k: 0.9**k, lambda k: math.sqrt(k)]),
}


def _rates(lib, name, steps=14):
    w = lib.ones(2, requires_grad=True)
    b = lib.zeros(1, requires_grad=True)
    opt = lib.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.3}], lr=0.1, momentum=0.9)
    sched = SCHEDULES[name](lib.optim.lr_scheduler, opt)
    rates = [sched.get_last_lr()]
    for _ in range(steps):
        opt.zero_grad()
        ((w * w).sum() + (b * 3).sum()).backward()
        opt.step()
        sched.step()
        rates.append(sched.get_last_lr())
    state = {k: v for k, v in sched.state_dict().items() if k != "_get_lr_called_within_step"}
    return rates, [g["lr"] for g in opt.param_groups], w.tolist(), sched.last_epoch, state


@pytest.mark.parametrize("name", SCHEDULES)
def test_rates_like_pytorch(name):
    ours, theirs = _rates(ng, name), _rates(torch, name)
    # bits: the rates are Python floats computed by the same expressions as PyTorch's
    # schedulers (plain Python), in the same order, with the same math functions
    assert ours[0] == theirs[0]  # every rate, bit for bit
    assert ours[1] == theirs[1] and ours[3] == theirs[3]
    assert ours[2] == pytest.approx(theirs[2], rel=1e-6)  # the weights (float32 updates)
    assert {"base_lrs", "last_epoch", "_step_count"} <= set(ours[4])
    for key in ("base_lrs", "last_epoch", "_step_count", "_last_lr"):
        assert ours[4][key] == theirs[4][key], key


def test_a_schedule_resumes_from_its_state_dict():
    def run(lib):
        opt = lib.optim.SGD([lib.ones(1, requires_grad=True)], lr=1.0)
        sched = lib.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        for _ in range(3):
            opt.step()
            sched.step()
        state = sched.state_dict()
        opt2 = lib.optim.SGD([lib.ones(1, requires_grad=True)], lr=1.0)
        sched2 = lib.optim.lr_scheduler.StepLR(opt2, step_size=2, gamma=0.5)
        sched2.load_state_dict(state)
        opt2.param_groups[0]["lr"] = sched.get_last_lr()[0]
        for _ in range(3):
            opt2.step()
            sched2.step()
        return sched2.get_last_lr(), sched2.last_epoch

    # bits: rates halved from 1.0, exact
    assert run(ng) == run(torch)


def test_bad_arguments_raise_like_pytorch():
    for lib in (ng, torch):
        opt = lib.optim.SGD([lib.ones(1, requires_grad=True)], lr=1.0)
        with pytest.raises(ValueError, match="Expected 1 lr_lambdas"):
            lib.optim.lr_scheduler.LambdaLR(opt, [lambda k: 1.0, lambda k: 2.0])
        with pytest.raises(KeyError, match="initial_lr"):
            lib.optim.lr_scheduler.StepLR(opt, 2, last_epoch=3)
        with pytest.raises(TypeError):
            lib.optim.lr_scheduler.StepLR("not an optimizer", 2)
