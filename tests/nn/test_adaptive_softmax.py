"""``AdaptiveLogSoftmaxWithLoss`` against PyTorch with torch's weights loaded: outputs, loss,
node names and gradients in float64 (1e-6), ``log_prob``, ``predict``, the checks of its
arguments, repr and state-dict keys; gradcheck / gradgradcheck."""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")
TOL = {"rtol": 1e-6, "atol": 1e-6}


def _pair(head_bias=True, cutoffs=(3, 6), seed=0):
    torch.manual_seed(seed)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs, 2.0, head_bias).double()
    ours = ng.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs, 2.0, head_bias).double()
    ours.load_state_dict({k: ng.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize(
    "shape, target, head_bias",
    [((7, 8), [0, 4, 9, 2, 7, 5, 1], True), ((4, 8), [0, 1, 2, 1], False), ((8,), 7, True)],
)
def test_forward_and_gradients_match_pytorch(shape, target, head_bias):
    ours, theirs = _pair(head_bias)
    x = np.random.default_rng(0).standard_normal(shape)
    tx, nx = torch.tensor(x, requires_grad=True), ng.tensor(x, requires_grad=True)
    t_out, n_out = theirs(tx, torch.tensor(target)), ours(nx, ng.tensor(target))
    for a, b in zip(n_out, t_out):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **TOL)
        assert a.grad_fn.name() == b.grad_fn.name()
    t_grads = torch.autograd.grad(t_out.loss, [tx, *theirs.parameters()], allow_unused=True)
    n_grads = ng.autograd.grad(n_out.loss, [nx, *ours.parameters()], allow_unused=True)
    for a, b in zip(n_grads, t_grads):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a.numpy(), b.numpy(), **TOL)


def test_log_prob_predict_repr_and_state_dict_match_pytorch():
    ours, theirs = _pair()
    x = np.random.default_rng(1).standard_normal((9, 8)) * 3
    np.testing.assert_allclose(
        ours.log_prob(ng.tensor(x)).detach().numpy(),
        theirs.log_prob(torch.tensor(x)).detach().numpy(),
        **TOL,
    )
    assert ours.predict(ng.tensor(x)).tolist() == theirs.predict(torch.tensor(x)).tolist()
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())


@pytest.mark.parametrize(
    "make, call, error",
    [
        (lambda nn: nn.AdaptiveLogSoftmaxWithLoss(4, 10, []), None, ValueError),
        (lambda nn: nn.AdaptiveLogSoftmaxWithLoss(4, 10, [5, 3]), None, ValueError),
        (lambda nn: nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3, 10]), None, ValueError),
        (None, lambda m, lib: m(lib.zeros(3, 4), lib.tensor([0, 1])), RuntimeError),
        (None, lambda m, lib: m(lib.zeros(2, 4), lib.tensor([0, 10])), RuntimeError),
        (None, lambda m, lib: m(lib.zeros(4), lib.tensor([[0]])), RuntimeError),
        (None, lambda m, lib: m(lib.zeros(2, 4), lib.tensor(1)), RuntimeError),
    ],
)
def test_errors_match_pytorch(make, call, error):
    messages = []
    for lib in (ng, torch):
        with pytest.raises(error) as info:
            if make is not None:
                make(lib.nn)
            else:
                call(lib.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3, 6], 2.0), lib)
        messages.append(str(info.value))
    assert messages[0].replace("nbgrad.Size", "torch.Size") == messages[1]


def test_gradcheck():
    ours, _ = _pair()
    target = ng.tensor([0, 4, 9, 2])

    def fn(x):
        return ours(x, target).loss

    x = ng.tensor(np.random.default_rng(2).standard_normal((4, 8)), requires_grad=True)
    assert ng.autograd.gradcheck(fn, [x])
    assert ng.autograd.gradgradcheck(fn, [x])
