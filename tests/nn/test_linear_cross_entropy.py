"""``F.linear_cross_entropy``, ``nn.LinearCrossEntropyLoss`` and ``LinearCrossEntropyOptions``
against PyTorch 2.13: values, node names and gradients in float64 (1e-6) for class indices and
probabilities, K-dimensional losses, bias, class weights, ignore_index and label smoothing;
the errors and the warning of options that the chunked path cannot take; gradcheck and
gradgradcheck (NOTE [Linear cross entropy in one piece])."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")
TOL = {"rtol": 1e-6, "atol": 1e-6}

# name -> (module keyword arguments, input shape, target: ints or a shape of probabilities)
CASES = {
    "plain": ({}, (6, 5), [0, 3, 9, 2, 2, 7]),
    "bias-sum": ({"bias": True, "reduction": "sum"}, (6, 5), [0, 3, 9, 2, 2, 7]),
    "unbatched": ({"bias": True}, (5,), 4),
    "ignore-index-none": ({"ignore_index": 3, "reduction": "none"}, (4, 5), [3, 1, 3, 0]),
    "label-smoothing": ({"label_smoothing": 0.2, "bias": True}, (4, 5), [1, 2, 3, 4]),
    "probabilities": ({}, (4, 5), (4, 10)),
    "k-dim": ({"out_features": (2, 3), "bias": True}, (3, 5), np.arange(18).reshape(3, 2, 3) % 10),
    "k-dim-none": ({"out_features": (2,), "reduction": "none"}, (3, 5), [[1, 2], [9, 0], [4, 4]]),
}


def _target(lib, spec, rng):
    if isinstance(spec, tuple):
        return lib.tensor(rng.dirichlet(np.ones(spec[-1]), spec[:-1]))
    return lib.tensor(np.asarray(spec))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name", CASES)
def test_loss_matches_pytorch(name, weighted):
    kwargs, shape, spec = CASES[name]
    rng = np.random.default_rng(0)
    if weighted:
        kwargs = {**kwargs, "weight": rng.random(10) + 0.5}
    torch.manual_seed(0)

    def make(lib):
        kw = {k: lib.tensor(v) if k == "weight" else v for k, v in kwargs.items()}
        return lib.nn.LinearCrossEntropyLoss(5, 10, **kw).double()

    theirs, ours = make(torch), make(ng)
    ours.load_state_dict({k: ng.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    x = rng.standard_normal(shape)
    tx, nx = torch.tensor(x, requires_grad=True), ng.tensor(x, requires_grad=True)
    t_out = theirs(tx, _target(torch, spec, np.random.default_rng(1)))
    n_out = ours(nx, _target(ng, spec, np.random.default_rng(1)))
    np.testing.assert_allclose(n_out.detach().numpy(), t_out.detach().numpy(), **TOL)
    assert n_out.grad_fn.name() == t_out.grad_fn.name()
    up = rng.standard_normal(tuple(t_out.shape))
    t_grads = torch.autograd.grad(t_out, [tx, *theirs.parameters()], torch.tensor(up))
    n_grads = ng.autograd.grad(n_out, [nx, *ours.parameters()], ng.tensor(up))
    for a, b in zip(n_grads, t_grads):
        np.testing.assert_allclose(a.numpy(), b.numpy(), **TOL)


def test_options_give_the_reference_values_and_warn_as_pytorch():
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((4, 5)), rng.standard_normal((10, 5))
    for lib in (ng, torch):
        opts = lib.nn.LinearCrossEntropyOptions(batch_chunk_size=2)
        args = (lib.tensor(x), lib.tensor(w), lib.tensor([1, 2, 3, 4]))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            chunked = lib.nn.functional.linear_cross_entropy(*args, options=opts)
        plain = lib.nn.functional.linear_cross_entropy(*args)
        np.testing.assert_allclose(float(chunked), float(plain), rtol=1e-12)
        with pytest.warns(UserWarning, match="``options`` ignored; chunked path needs"):
            lib.nn.functional.linear_cross_entropy(*args, label_smoothing=0.1, options=opts)
    assert repr(ng.nn.LinearCrossEntropyOptions()) == repr(torch.nn.LinearCrossEntropyOptions())


def _lce(input, weight, target, **kw):
    """``linear_cross_entropy`` of zero tensors of these shapes (``target``: class indices
    as a list, or a shape of probabilities)."""

    def call(lib):
        t = lib.tensor(target) if isinstance(target, list) else lib.zeros(*target)
        kw_ = {k: lib.zeros(*v) if isinstance(v, tuple) else v for k, v in kw.items()}
        return lib.nn.functional.linear_cross_entropy(
            lib.zeros(*input), lib.zeros(*weight), t, **kw_
        )

    return call


@pytest.mark.parametrize(
    "call, error",
    [
        (_lce((2, 2, 5), (3, 5), [0]), RuntimeError),
        (_lce((2, 5), (5,), [0, 1]), RuntimeError),
        (_lce((2, 5), (3, 4), [0, 1]), RuntimeError),
        (_lce((2, 5), (3, 5), [0, 1], linear_bias=(2,)), RuntimeError),
        (_lce((5,), (3, 2, 5), [0, 1]), RuntimeError),
        (_lce((2, 5), (3, 5), (2, 3), ignore_index=1), RuntimeError),
        (lambda lib: lib.nn.LinearCrossEntropyLoss(5, 3, weight=lib.ones(2)), RuntimeError),
        (lambda lib: lib.nn.LinearCrossEntropyLoss(5, 3, label_smoothing=1.5), RuntimeError),
        (lambda lib: lib.nn.LinearCrossEntropyOptions(acc_policy="fast"), ValueError),
        (lambda lib: lib.nn.LinearCrossEntropyOptions(chunking_method="rows:2"), ValueError),
        (lambda lib: lib.nn.LinearCrossEntropyOptions(batch_chunk_size=0), ValueError),
    ],
)
def test_errors_match_pytorch(call, error):
    messages = []
    for lib in (ng, torch):
        with pytest.raises(error) as info:
            call(lib)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_gradcheck():
    target = ng.tensor([1, 0, 2])

    def fn(x, w, b):
        return ng.nn.functional.linear_cross_entropy(
            x, w, target, linear_bias=b, label_smoothing=0.1
        )

    rng = np.random.default_rng(4)
    inputs = [ng.tensor(rng.standard_normal(s), requires_grad=True) for s in ((3, 4), (3, 4), (3,))]
    assert ng.autograd.gradcheck(fn, inputs)
    assert ng.autograd.gradgradcheck(fn, inputs)
