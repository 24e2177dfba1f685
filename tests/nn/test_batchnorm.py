"""BatchNorm1d / BatchNorm2d against PyTorch's over several steps: outputs, gradients, the
running statistics and ``num_batches_tracked``, train then eval; and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")


def _steps(lib, cls, shape, eval_last, features=1, **kwargs):
    """Three steps of the layer; ``features``: the dim of the channels (0 when unbatched)."""
    rng = np.random.default_rng(0)
    c = shape[features]
    bn = getattr(lib.nn, cls)(c, **kwargs).double()
    if bn.weight is not None:
        with lib.no_grad():
            bn.weight.copy_(lib.tensor(rng.standard_normal(c)))
            bn.bias.copy_(lib.tensor(rng.standard_normal(c)))
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


@pytest.mark.parametrize("eval_last", [False, True])
@pytest.mark.parametrize(
    "cls, shape, kwargs",
    [
        ("InstanceNorm2d", (2, 3, 4, 4), {}),
        ("InstanceNorm2d", (2, 3, 4, 5), {"affine": True, "eps": 1e-3}),
        ("InstanceNorm2d", (2, 3, 2, 2), {"track_running_stats": True, "momentum": 0.3}),
        ("InstanceNorm1d", (4, 3, 5), {"affine": True, "track_running_stats": True}),
        ("InstanceNorm1d", (3, 5), {"affine": True}),  # unbatched
        ("InstanceNorm2d", (3, 4, 4), {"track_running_stats": True}),  # unbatched
    ],
)
def test_instance_norm_steps_like_pytorch(cls, shape, kwargs, eval_last):
    """Instance norm is batch norm of the input viewed as one sample of N * C channels:
    ViewBackward0 over NativeBatchNormBackward0, the running stats the mean of N updates."""
    features = 0 if len(shape) == (2 if cls == "InstanceNorm1d" else 3) else 1
    ours = _steps(ng, cls, shape, eval_last, features, **kwargs)
    theirs = _steps(torch, cls, shape, eval_last, features, **kwargs)
    assert ours[2] == theirs[2]
    for a, b in zip(ours[0], theirs[0]):
        for k in range(3):
            assert (a[k] is None) == (b[k] is None)
            if a[k] is not None:
                np.testing.assert_allclose(a[k], b[k], atol=1e-10)
        assert a[3] == b[3]
    assert list(ours[1]) == list(theirs[1])
    for k in ours[1]:
        np.testing.assert_allclose(ours[1][k], theirs[1][k], atol=1e-12, err_msg=k)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda lib: lib.nn.InstanceNorm2d(3)(lib.randn(4, 3)), ValueError, "3D or 4D input"),
        (lambda lib: lib.nn.InstanceNorm1d(3)(lib.randn(2, 3, 1)), ValueError, "spatial element"),
        (
            lambda lib: lib.nn.InstanceNorm1d(3, affine=True)(lib.randn(2, 4, 5)),
            ValueError,
            "to match num_features",
        ),
    ],
)
def test_instance_norm_errors_like_pytorch(call, error, message):
    for lib in (ng, torch):
        with pytest.raises(error, match=message):
            call(lib)


def test_instance_norm_warns_when_num_features_is_unused_and_differs():
    for lib in (ng, torch):
        with pytest.warns(UserWarning, match="does not match num_features"):
            lib.nn.InstanceNorm2d(2)(lib.randn(1, 1, 1, 2))


def test_in_place_relu_after_instance_norm_differentiates_twice_as_torch():
    """PyTorch's test_inplace_on_view_backward: relu_ on the view instance norm returns saves
    its result, which stands for the view (NOTE [In place on a view: the saved result])."""
    results = []
    for lib in (ng, torch):
        net = lib.nn.Sequential(lib.nn.InstanceNorm2d(1), lib.nn.ReLU(True))
        x = lib.tensor([[[[1.0, 2.0, 4.0]]]], dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(net(x).pow(3).sum(), [x], create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), [x])
        results.append((g.detach().numpy(), gg.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, atol=1e-10)
