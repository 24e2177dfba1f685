"""``MultiplicativeLR``, ``ChainedScheduler`` and ``CyclicLR`` against
``torch.optim.lr_scheduler``: the same rates (and cycled momenta), bit for bit, for 40 steps
with two param groups, the same scheduler state, resumption from a state dict, errors."""

from __future__ import annotations

import inspect

import pytest

import nbgrad as ng
from tests.optim.test_lr_scheduler_more import STEPS, adam, rates, sgd

torch = pytest.importorskip("torch")


class Halving:
    """A callable object (its ``__dict__`` goes into the state dict, as PyTorch's)."""

    def __init__(self):
        self.factor = 0.5

    def __call__(self, x):
        return self.factor if x % 5 == 0 else 1.0


SCHEDULES = {
    "multiplicative": lambda S, opt: S.MultiplicativeLR(opt, lambda e: 0.95),
    "multiplicative-groups": lambda S, opt: S.MultiplicativeLR(
        opt, [lambda e: 0.9, lambda e: 1.0 + 0.01 * (e % 3)]
    ),
    "chained": lambda S, opt: S.ChainedScheduler(
        [S.ConstantLR(opt, factor=0.1, total_iters=20), S.ExponentialLR(opt, gamma=0.9)]
    ),
    "chained-three": lambda S, opt: S.ChainedScheduler(
        [
            S.StepLR(opt, step_size=3, gamma=0.5),
            S.LinearLR(opt, start_factor=0.5, total_iters=10),
            S.MultiplicativeLR(opt, lambda e: 1.02),
        ],
        optimizer=opt,
    ),
    "cyclic": lambda S, opt: S.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=5),
    "cyclic-down-groups": lambda S, opt: S.CyclicLR(
        opt,
        base_lr=[0.01, 0.02],
        max_lr=[0.1, 0.5],
        step_size_up=3,
        step_size_down=7,
        base_momentum=[0.8, 0.7],
        max_momentum=0.95,
    ),
    "cyclic-triangular2": lambda S, opt: S.CyclicLR(
        opt, 0.001, 0.01, step_size_up=4, mode="triangular2"
    ),
    "cyclic-exp-range": lambda S, opt: S.CyclicLR(
        opt, 0.001, 0.01, step_size_up=4, mode="exp_range", gamma=0.95
    ),
    "cyclic-scale-fn": lambda S, opt: S.CyclicLR(
        opt, 0.01, 0.1, step_size_up=3, scale_fn=lambda x: 1 / (1 + x), scale_mode="iterations"
    ),
    "cyclic-no-momentum": lambda S, opt: S.CyclicLR(
        opt, 0.01, 0.1, step_size_up=6, cycle_momentum=False
    ),
}
ADAM = {"cyclic-adam": lambda S, opt: S.CyclicLR(opt, 0.001, 0.01, step_size_up=5)}


@pytest.mark.parametrize(
    "name, make_opt", [(n, sgd) for n in SCHEDULES] + [(n, adam) for n in ADAM]
)
def test_rates_like_pytorch(name, make_opt):
    make_sched = {**SCHEDULES, **ADAM}[name]
    ours, our_state = rates(ng, make_opt, make_sched)
    theirs, their_state = rates(torch, make_opt, make_sched)
    for step, (a, b) in enumerate(zip(ours, theirs)):
        # bits: Python floats computed by the same expressions as PyTorch's schedulers (plain
        # Python), in the same order, with the same math functions
        assert a == b, step  # rates and group options (momentum, betas), bit for bit
    assert set(our_state) == set(their_state)
    for key, value in their_state.items():
        assert our_state[key] == value, key


@pytest.mark.parametrize(
    "name", ["multiplicative-groups", "chained-three", "cyclic-down-groups", "cyclic-exp-range"]
)
def test_resumes_from_a_state_dict(name):
    """A fresh scheduler that loads the state after 13 steps goes on as the uninterrupted
    torch one."""
    make_sched = SCHEDULES[name]
    theirs, _ = rates(torch, sgd, make_sched)
    opt = sgd(ng)
    sched = make_sched(ng.optim.lr_scheduler, opt)
    ours = [sched.get_last_lr()]
    for _ in range(13):
        opt.step()
        sched.step()
        ours.append(sched.get_last_lr())
    saved, opt_saved = sched.state_dict(), opt.state_dict()
    opt2 = sgd(ng)
    sched2 = make_sched(ng.optim.lr_scheduler, opt2)
    opt2.load_state_dict(opt_saved)
    sched2.load_state_dict(saved)
    for _ in range(STEPS - 13):
        opt2.step()
        sched2.step()
        ours.append(sched2.get_last_lr())
    assert ours == [lr for lr, _ in theirs]


def test_callable_objects_are_saved_and_restored():
    for lib in (ng, torch):
        opt = sgd(lib)
        fn = Halving()
        sched = lib.optim.lr_scheduler.MultiplicativeLR(opt, fn)
        assert sched.state_dict()["lr_lambdas"] == [{"factor": 0.5}, {"factor": 0.5}]
        cyc = lib.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, scale_fn=fn)
        assert cyc.state_dict()["_scale_fn_custom"] == {"factor": 0.5}
        fn2 = Halving()
        sched2 = lib.optim.lr_scheduler.MultiplicativeLR(sgd(lib), fn2)
        state = sched.state_dict()
        state["lr_lambdas"] = [{"factor": 0.25}, {"factor": 0.25}]
        sched2.load_state_dict(state)
        assert fn2.factor == 0.25


def test_errors_match_pytorch():
    S, T = ng.optim.lr_scheduler, torch.optim.lr_scheduler  # noqa: N806
    cases = [
        (lambda L, o: L.MultiplicativeLR(o, [lambda e: 1.0]), ValueError),
        (lambda L, o: L.MultiplicativeLR(o, 0.9), TypeError),
        (lambda L, o: L.ChainedScheduler([]), ValueError),
        (lambda L, o: L.ChainedScheduler([L.ReduceLROnPlateau(o)]), ValueError),
        (lambda L, o: L.CyclicLR(o, 0.1, 1.0, mode="bogus"), ValueError),
        (lambda L, o: L.CyclicLR(o, [0.1], 1.0), ValueError),
    ]
    for make, error in cases:
        with pytest.raises(error) as theirs:
            make(T, sgd(torch))
        with pytest.raises(error) as ours:
            make(S, sgd(ng))
        assert str(ours.value) == str(theirs.value)
    opt = ng.optim.Adagrad([ng.ones(1, requires_grad=True)])
    with pytest.raises(ValueError, match="must support momentum"):
        S.CyclicLR(opt, 0.1, 1.0)
    other = S.StepLR(sgd(ng), 2)
    with pytest.raises(ValueError, match="belong to the same optimizer"):
        S.ChainedScheduler([S.StepLR(sgd(ng), 2), other])


@pytest.mark.parametrize("name", ["MultiplicativeLR", "ChainedScheduler", "CyclicLR"])
def test_signatures_match_pytorch(name):
    ours = inspect.signature(getattr(ng.optim.lr_scheduler, name)).parameters
    theirs = inspect.signature(getattr(torch.optim.lr_scheduler, name)).parameters
    assert list(ours) == list(theirs)
    for k in ours:
        assert ours[k].default == theirs[k].default, k
