"""BatchNorm1d / BatchNorm2d against PyTorch's over several steps: outputs, gradients, the
running statistics and ``num_batches_tracked``, train then eval; and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")


def _steps(lib, cls, shape, eval_last, **kwargs):
    rng = np.random.default_rng(0)
    bn = getattr(lib.nn, cls)(shape[1], **kwargs).double()
    if bn.weight is not None:
        with lib.no_grad():
            bn.weight.copy_(lib.tensor(rng.standard_normal(shape[1])))
            bn.bias.copy_(lib.tensor(rng.standard_normal(shape[1])))
    steps = []
    for step in range(3):
        if eval_last and step == 2:
            bn.eval()
        x = lib.tensor(rng.standard_normal(shape), requires_grad=True)
        y = bn(x)
        (y * lib.tensor(rng.standard_normal(shape))).sum().backward()
        weight_grad = None if bn.weight is None else bn.weight.grad.numpy().copy()
        steps.append((y.detach().numpy(), x.grad.numpy(), weight_grad, y.grad_fn.name()))
    state = {k: v.numpy().copy() for k, v in bn.state_dict().items()}
    return steps, state, repr(bn).replace("torch.", "").replace("nbgrad.", "")


@pytest.mark.parametrize("eval_last", [False, True])
@pytest.mark.parametrize(
    "cls, shape, kwargs",
    [
        ("BatchNorm1d", (4, 3), {}),
        ("BatchNorm1d", (4, 3, 5), {"momentum": 0.3}),
        ("BatchNorm2d", (2, 3, 4, 4), {"eps": 1e-3}),
        ("BatchNorm2d", (2, 3, 4, 4), {"affine": False}),
        ("BatchNorm1d", (4, 3), {"momentum": None}),  # a cumulative average
        ("BatchNorm1d", (4, 3), {"track_running_stats": False}),
    ],
)
def test_batch_norm_steps_like_pytorch(cls, shape, kwargs, eval_last):
    ours, theirs = (
        _steps(ng, cls, shape, eval_last, **kwargs),
        _steps(torch, cls, shape, eval_last, **kwargs),
    )
    assert ours[2] == theirs[2]
    for a, b in zip(ours[0], theirs[0]):
        np.testing.assert_allclose(a[0], b[0], atol=1e-10)
        np.testing.assert_allclose(a[1], b[1], atol=1e-10)
        assert (a[2] is None) == (b[2] is None) and a[3] == b[3]
        if a[2] is not None:
            np.testing.assert_allclose(a[2], b[2], atol=1e-10)
    assert list(ours[1]) == list(theirs[1])
    for k in ours[1]:
        np.testing.assert_allclose(ours[1][k], theirs[1][k], atol=1e-12, err_msg=k)


def test_eval_mode_backward_uses_the_stats_of_its_forward():
    bn = ng.nn.BatchNorm1d(2).double().eval()
    x = ng.tensor([[1.0, 2.0], [3.0, 5.0]], requires_grad=True)
    y = bn(x)
    bn.train()
    bn(ng.tensor([[10.0, 20.0], [30.0, 50.0]], dtype=ng.float64))  # moves the running stats
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 2), 1 / np.sqrt(1 + 1e-5)))


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda lib: lib.nn.BatchNorm1d(3)(lib.randn(1, 3)), ValueError, "more than 1 value"),
        (lambda lib: lib.nn.BatchNorm1d(3)(lib.randn(4, 5)), RuntimeError, "should contain 5"),
        (lambda lib: lib.nn.BatchNorm2d(3)(lib.randn(4, 3)), ValueError, "expected 4D input"),
        (lambda lib: lib.nn.BatchNorm1d(3)(lib.randn(2, 3, 4, 5)), ValueError, "2D or 3D"),
    ],
)
def test_batch_norm_errors_like_pytorch(call, error, message):
    for lib in (ng, torch):
        with pytest.raises(error, match=message):
            call(lib)
