"""``nbgrad.nn.functional`` (``nbgrad/nn/functional.py``): the graph it builds and the errors
and warnings it gives, against ``torch.nn.functional`` (values are covered by test_layer_parity)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

LIBS = pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])


def F(lib):
    return lib.nn.functional


def _names(t):
    return [
        None if fn is None else fn.name().removeprefix("torch::autograd::")
        for fn, _ in t.grad_fn.next_functions
    ]


@pytest.mark.parametrize("x_grad", [True, False])
def test_linear_graph_matches_torch(x_grad):
    def build(lib):
        x = lib.ones(2, 3, requires_grad=x_grad)
        w = lib.ones(4, 3, requires_grad=True)
        b = lib.ones(4, requires_grad=True)
        return F(lib).linear(x, w, b)

    a, b = build(ng), build(torch)
    assert a.grad_fn.name() == b.grad_fn.name() == "AddmmBackward0"
    assert _names(a) == _names(b)


def test_conv2d_graph_matches_torch():
    def build(lib):
        x = lib.ones(1, 2, 4, 4, requires_grad=True)
        w = lib.ones(3, 2, 2, 2, requires_grad=True)
        return F(lib).conv2d(x, w)

    a, b = build(ng), build(torch)
    assert a.grad_fn.name() == b.grad_fn.name() == "ConvolutionBackward0"
    assert _names(a) == _names(b)


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the test compares the kind and the message
        return type(e), str(e)
    return None


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: F(lib).conv2d(lib.ones(1, 4, 5, 5), lib.ones(3, 2, 3, 3)),
        lambda lib: F(lib).conv2d(lib.ones(1, 4, 5, 5), lib.ones(3, 2, 3, 3), groups=2),
        lambda lib: F(lib).conv2d(lib.ones(4, 5), lib.ones(3, 4, 3, 3)),
        lambda lib: F(lib).linear(lib.ones(2, 3), lib.ones(5, 4)),
        lambda lib: F(lib).nll_loss(lib.zeros(3, 4), lib.tensor([0, 5, 1])),
        lambda lib: F(lib).nll_loss(lib.zeros(3, 4), lib.tensor([0, 1])),
        lambda lib: F(lib).cross_entropy(lib.zeros(3, 4), lib.tensor([0, 1, 2]), reduction="avg"),
        lambda lib: F(lib).dropout(lib.ones(2), p=-0.1),
        lambda lib: F(lib).embedding(lib.tensor([0, 7]), lib.ones(5, 2)),
    ],
    ids=[
        "conv-channels",
        "conv-groups",
        "conv-dims",
        "linear-shapes",
        "nll-bounds",
        "nll-batch",
        "bad-reduction",
        "dropout-p",
        "embedding-range",
    ],
)
def test_errors_match_torch(call):
    ng_err, th_err = _error(lambda: call(ng)), _error(lambda: call(torch))
    assert ng_err is not None and th_err is not None
    assert ng_err[0] is th_err[0]
    if ng_err[0] is not IndexError or "Target" in th_err[1]:
        assert ng_err[1] == th_err[1]


@LIBS
def test_error_kinds(lib):
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        F(lib).conv2d(lib.ones(1, 1, 2, 2), lib.ones(1, 1, 3, 3))
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        lib.nn.Conv2d(1, 1, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        lib.nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(
        RuntimeError, match="expected target dtype to be Long or Byte, but got Float"
    ):
        F(lib).nll_loss(lib.zeros(2, 3), lib.zeros(2))
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices'"):
        F(lib).embedding(lib.zeros(2), lib.ones(3, 2))
    with pytest.raises(RuntimeError, match="Given normalized_shape=\\[3\\], expected input"):
        F(lib).layer_norm(lib.ones(2, 4), (3,))


@LIBS
def test_softmax_implicit_dim_warns(lib):
    x = lib.tensor(np.arange(6.0).reshape(2, 3))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        out = F(lib).softmax(x)
    np.testing.assert_allclose(out.numpy(), torch.softmax(torch.tensor(x.numpy()), 1).numpy())
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax"):
        lib.nn.LogSoftmax()(x)


@LIBS
def test_mse_broadcast_warns(lib):
    with pytest.warns(UserWarning, match="Using a target size"):
        out = F(lib).mse_loss(lib.ones(2, 3), lib.zeros(3))
    assert out.item() == 1.0


@LIBS
def test_cross_entropy_all_ignored_is_nan(lib):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss = F(lib).cross_entropy(lib.zeros(2, 3), lib.tensor([1, 1]), ignore_index=1)
    assert np.isnan(loss.item())


def test_softmax_dtype_argument():
    out = F(ng).softmax(ng.ones(2, 2), dim=1, dtype=ng.float64)
    assert out.dtype is ng.float64 and out.grad_fn is None


def test_relu_inplace_keeps_identity_and_graph():
    x = ng.tensor([-1.0, 2.0], requires_grad=True)
    y = x * 1
    z = F(ng).relu(y, inplace=True)
    assert z is y and z.grad_fn.name() == "ReluBackward0" and z._version == 1
    z.sum().backward()
    assert x.grad.tolist() == [0.0, 1.0]


def test_functional_exports():
    for name in ng.nn.functional.__all__:
        assert callable(getattr(ng.nn.functional, name))
        assert hasattr(torch.nn.functional, name)
