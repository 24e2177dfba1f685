"""``nbgrad.optim.lr_scheduler`` against ``torch.optim.lr_scheduler``.

While training (``StepLR``, ``MultiStepLR``, ``ExponentialLR``, ``CosineAnnealingLR``,
``LambdaLR``): the same rates, step by step, bit for bit, with several param groups, and through
a state dict. The others (``ConstantLR``, ``LinearLR``, ``PolynomialLR``, ``SequentialLR``,
``CosineAnnealingWarmRestarts``, ``OneCycleLR``, ``MultiplicativeLR``, ``ChainedScheduler``,
``CyclicLR``, ``ReduceLROnPlateau``): the same rates (and cycled momenta), bit for bit, for 40
steps with two param groups, the same scheduler state, resumption from a state dict, signatures
and errors."""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")


# ---- while training: the step schedulers ---------------------------------------------------------
TRAINING = {
    "step": lambda S, opt: S.StepLR(opt, step_size=3, gamma=0.5),
    "multistep": lambda S, opt: S.MultiStepLR(opt, milestones=[2, 5, 5, 9], gamma=0.3),
    "exponential": lambda S, opt: S.ExponentialLR(opt, gamma=0.9),
    "cosine": lambda S, opt: S.CosineAnnealingLR(opt, T_max=4, eta_min=0.01),
    "lambda": lambda S, opt: S.LambdaLR(opt, lambda k: 1 / (k + 1)),
    "lambda-per-group": lambda S, opt: S.LambdaLR(opt, [lambda k: 0.9**k, lambda k: math.sqrt(k)]),
}


def _trained_rates(lib, name, steps=14):
    w = lib.ones(2, requires_grad=True)
    b = lib.zeros(1, requires_grad=True)
    opt = lib.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.3}], lr=0.1, momentum=0.9)
    sched = TRAINING[name](lib.optim.lr_scheduler, opt)
    rates = [sched.get_last_lr()]
    for _ in range(steps):
        opt.zero_grad()
        ((w * w).sum() + (b * 3).sum()).backward()
        opt.step()
        sched.step()
        rates.append(sched.get_last_lr())
    state = {k: v for k, v in sched.state_dict().items() if k != "_get_lr_called_within_step"}
    return rates, [g["lr"] for g in opt.param_groups], w.tolist(), sched.last_epoch, state


@pytest.mark.parametrize("name", TRAINING)
def test_rates_while_training_like_pytorch(name):
    ours, theirs = _trained_rates(ng, name), _trained_rates(torch, name)
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


def test_lambda_and_step_errors_like_pytorch():
    for lib in (ng, torch):
        opt = lib.optim.SGD([lib.ones(1, requires_grad=True)], lr=1.0)
        with pytest.raises(ValueError, match="Expected 1 lr_lambdas"):
            lib.optim.lr_scheduler.LambdaLR(opt, [lambda k: 1.0, lambda k: 2.0])
        with pytest.raises(KeyError, match="initial_lr"):
            lib.optim.lr_scheduler.StepLR(opt, 2, last_epoch=3)
        with pytest.raises(TypeError):
            lib.optim.lr_scheduler.StepLR("not an optimizer", 2)


# ---- 40 steps, two param groups: the other schedulers --------------------------------------------
STEPS = 40


def sgd(lib):
    w, b = lib.ones(2, requires_grad=True), lib.zeros(1, requires_grad=True)
    return lib.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.3}], lr=0.1, momentum=0.9)


def adam(lib):
    w, b = lib.ones(2, requires_grad=True), lib.zeros(1, requires_grad=True)
    return lib.optim.Adam([{"params": [w]}, {"params": [b], "lr": 0.02, "betas": (0.8, 0.9)}])


SCHEDULES = {
    "constant": lambda S, opt: S.ConstantLR(opt),
    "constant-factor": lambda S, opt: S.ConstantLR(opt, factor=0.25, total_iters=12),
    "linear": lambda S, opt: S.LinearLR(opt),
    "linear-down": lambda S, opt: S.LinearLR(
        opt, start_factor=1.0, end_factor=0.05, total_iters=25
    ),
    "linear-up": lambda S, opt: S.LinearLR(opt, start_factor=0.1, end_factor=0.9, total_iters=7),
    "polynomial": lambda S, opt: S.PolynomialLR(opt),
    "polynomial-power": lambda S, opt: S.PolynomialLR(opt, total_iters=30, power=0.9),
    "polynomial-square": lambda S, opt: S.PolynomialLR(opt, total_iters=17, power=2.0),
    "warm-restarts": lambda S, opt: S.CosineAnnealingWarmRestarts(opt, T_0=7),
    "warm-restarts-mult": lambda S, opt: S.CosineAnnealingWarmRestarts(
        opt, T_0=3, T_mult=2, eta_min=0.001
    ),
    "sequential": lambda S, opt: S.SequentialLR(
        opt,
        [S.LinearLR(opt, start_factor=0.2, total_iters=5), S.CosineAnnealingLR(opt, T_max=20)],
        milestones=[5],
    ),
    "sequential-three": lambda S, opt: S.SequentialLR(
        opt,
        [
            S.ConstantLR(opt, factor=0.5, total_iters=4),
            S.ExponentialLR(opt, gamma=0.9),
            S.StepLR(opt, step_size=4, gamma=0.5),
        ],
        milestones=[6, 20],
    ),
    "sequential-multistep-poly": lambda S, opt: S.SequentialLR(
        opt,
        [S.MultiStepLR(opt, [2, 4], gamma=0.5), S.PolynomialLR(opt, total_iters=15, power=2.0)],
        milestones=[10],
    ),
    "one-cycle": lambda S, opt: S.OneCycleLR(opt, max_lr=1.0, total_steps=STEPS),
    "one-cycle-linear-groups": lambda S, opt: S.OneCycleLR(
        opt,
        max_lr=[0.5, 2.0],
        epochs=4,
        steps_per_epoch=10,
        pct_start=0.25,
        anneal_strategy="linear",
        base_momentum=[0.8, 0.7],
        max_momentum=0.99,
        div_factor=10.0,
        final_div_factor=100.0,
    ),
    "one-cycle-three-phase": lambda S, opt: S.OneCycleLR(
        opt, max_lr=0.8, total_steps=STEPS + 5, three_phase=True, pct_start=0.4
    ),
    "one-cycle-no-momentum": lambda S, opt: S.OneCycleLR(
        opt, max_lr=0.3, total_steps=STEPS, cycle_momentum=False
    ),
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
ADAM = {
    "one-cycle-adam": lambda S, opt: S.OneCycleLR(opt, max_lr=0.01, total_steps=STEPS),
    "cyclic-adam": lambda S, opt: S.CyclicLR(opt, 0.001, 0.01, step_size_up=5),
}


def group_options(opt):
    return [
        {k: v for k, v in g.items() if k not in ("params",) and not isinstance(v, bool)}
        for g in opt.param_groups
    ]


def scheduler_state(sched):
    state = sched.state_dict()
    drop = ("_get_lr_called_within_step", "_is_initial", "_schedulers", "_anneal_func")
    return {k: v for k, v in state.items() if k not in drop}


def rates(lib, make_opt, make_sched, steps=STEPS):
    opt = make_opt(lib)
    sched = make_sched(lib.optim.lr_scheduler, opt)
    history = [(sched.get_last_lr(), group_options(opt))]
    for _ in range(steps):
        opt.step()
        sched.step()
        history.append((sched.get_last_lr(), group_options(opt)))
    return history, scheduler_state(sched)


@pytest.mark.parametrize(
    "name, make_opt",
    [(name, sgd) for name in SCHEDULES] + [(name, adam) for name in ADAM],
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


def test_one_cycle_refuses_to_step_past_the_end():
    for lib in (ng, torch):
        opt = sgd(lib)
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=5)
        for _ in range(4):
            opt.step()
            sched.step()
        with pytest.raises(ValueError, match="Tried to step 6 times"):
            sched.step()
            sched.step()


@pytest.mark.parametrize(
    "name",
    [
        "linear-down",
        "polynomial-power",
        "warm-restarts-mult",
        "sequential-three",
        "one-cycle",
        "multiplicative-groups",
        "chained-three",
        "cyclic-down-groups",
        "cyclic-exp-range",
    ],
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


def metric_sequence(seed=3, n=60):
    """Falls, then plateaus with noise, then falls again, then rises."""
    rng = np.random.default_rng(seed)
    trend = np.concatenate(
        [np.linspace(1.0, 0.5, 12), np.full(18, 0.5), np.linspace(0.5, 0.2, 10), np.full(20, 0.3)]
    )
    values = trend[:n] + rng.normal(0, 0.002, n) * (np.arange(n) % 3 == 0)
    return [float(v) for v in values]


PLATEAU = {
    "default": dict(),
    "patience-factor": dict(patience=2, factor=0.5),
    "cooldown-min-lr": dict(patience=1, cooldown=3, factor=0.3, min_lr=[0.01, 0.05]),
    "abs-threshold": dict(patience=3, threshold=0.01, threshold_mode="abs"),
    "max-mode": dict(mode="max", patience=2, factor=0.5),
    "max-abs-eps": dict(mode="max", patience=0, threshold_mode="abs", eps=0.02, min_lr=0.02),
}


def plateau(lib, kwargs, as_tensor=False):
    opt = sgd(lib)
    sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
    sign = -1 if kwargs.get("mode") == "max" else 1
    history = [sched.get_last_lr()]
    for m in metric_sequence():
        opt.step()
        sched.step(lib.tensor(sign * m) if as_tensor else sign * m)
        history.append(sched.get_last_lr())
    state = {k: v for k, v in sched.state_dict().items() if not k.startswith("_get_lr")}
    return history, state


@pytest.mark.parametrize("name", PLATEAU)
def test_reduce_on_plateau_like_pytorch(name):
    ours, our_state = plateau(ng, PLATEAU[name], as_tensor=name == "default")
    theirs, their_state = plateau(torch, PLATEAU[name], as_tensor=name == "default")
    # bits: Python floats, each rate the last one times the factor, as in PyTorch's
    assert ours == theirs
    assert len({tuple(r) for r in theirs}) > 1  # the rate did change
    assert our_state == their_state


def test_reduce_on_plateau_resumes_from_a_state_dict():
    kwargs = PLATEAU["cooldown-min-lr"]
    theirs, _ = plateau(torch, kwargs)
    metrics = metric_sequence()
    opt = sgd(ng)
    sched = ng.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
    ours = [sched.get_last_lr()]
    for m in metrics[:25]:
        sched.step(m)
        ours.append(sched.get_last_lr())
    opt2 = sgd(ng)
    sched2 = ng.optim.lr_scheduler.ReduceLROnPlateau(opt2, mode="max")
    opt2.load_state_dict(opt.state_dict())
    sched2.load_state_dict(sched.state_dict())
    for m in metrics[25:]:
        sched2.step(m)
        ours.append(sched2.get_last_lr())
    # bits: Python floats, each rate the last one times the factor, as in PyTorch's
    assert ours == theirs


def test_warm_restarts_with_fractional_epochs():
    def run(lib):
        opt = sgd(lib)
        sched = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=3)
        out = []
        for epoch in range(12):
            for i in range(4):
                opt.step()
                sched.step(epoch + i / 4)
                out.append((sched.get_last_lr(), sched.T_i, sched.T_cur, sched.last_epoch))
        return out

    with warnings.catch_warnings():  # torch's deprecation warning for step(epoch)
        warnings.simplefilter("ignore")
        theirs = run(torch)
    ours = run(ng)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a[1:] == b[1:]
        assert a[0] == pytest.approx(b[0], rel=1e-12)


@pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])
def test_bad_arguments_raise_like_pytorch(lib):
    S = lib.optim.lr_scheduler  # noqa: N806
    opt = sgd(lib)
    with pytest.raises(ValueError, match="Constant multiplicative factor"):
        S.ConstantLR(opt, factor=1.5)
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        S.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="Ending multiplicative factor"):
        S.LinearLR(opt, end_factor=1.5)
    with pytest.raises(ValueError, match="Expected positive integer T_0"):
        S.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="Expected integer T_mult >= 1"):
        S.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=0)
    with pytest.raises(ValueError, match="You must define either total_steps"):
        S.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="Expected float between 0 and 1 pct_start"):
        S.OneCycleLR(opt, max_lr=1.0, total_steps=10, pct_start=2.0)
    with pytest.raises(ValueError, match="anneal_strategy must be one of"):
        S.OneCycleLR(opt, max_lr=1.0, total_steps=10, anneal_strategy="step")
    with pytest.raises(ValueError, match="max_lr must have the same length"):
        S.OneCycleLR(opt, max_lr=[1.0], total_steps=10)
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        S.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode top is unknown"):
        S.ReduceLROnPlateau(opt, mode="top")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 1"):
        S.ReduceLROnPlateau(opt, min_lr=[0.1])
    with pytest.raises(ValueError, match="number of milestone points"):
        S.SequentialLR(opt, [S.ConstantLR(opt), S.ConstantLR(opt)], milestones=[])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        S.SequentialLR(opt, [S.ReduceLROnPlateau(opt)], milestones=[])
    rms = lib.optim.RMSprop([lib.ones(1, requires_grad=True)])
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        S.OneCycleLR(lib.optim.Adagrad([lib.ones(1, requires_grad=True)]), 1.0, total_steps=3)
    S.OneCycleLR(rms, max_lr=1.0, total_steps=3)  # RMSprop has a momentum


def test_cosine_phase_has_the_right_shape():
    """Independent of torch: the 1cycle rate peaks at max_lr at the end of the first phase."""
    opt = sgd(ng)
    sched = ng.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=20, pct_start=0.5)
    seen = [sched.get_last_lr()[0]]
    for _ in range(19):
        opt.step()
        sched.step()
        seen.append(sched.get_last_lr()[0])
    assert seen[0] == pytest.approx(1.0 / 25)
    assert max(seen) == pytest.approx(1.0) and seen.index(max(seen)) == 9  # end of phase one
    assert seen[-1] == pytest.approx(1.0 / 25 / 1e4)
    assert math.isclose(seen[5], 1.0 / 25 + (1 - 1.0 / 25) * (1 - math.cos(math.pi * 5 / 9)) / 2)


# ---- callable objects, errors, signatures --------------------------------------------------------
class Halving:
    """A callable object (its ``__dict__`` goes into the state dict, as PyTorch's)."""

    def __init__(self):
        self.factor = 0.5

    def __call__(self, x):
        return self.factor if x % 5 == 0 else 1.0


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
