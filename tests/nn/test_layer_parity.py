"""Parity of every layer and loss of ``nbgrad.nn`` with PyTorch's, weights copied across.

For each case the same module is built in both libraries (in float64), torch's state dict is
loaded into nbgrad's module, and the outputs, the ``grad_fn`` names, and the gradients of the
inputs and of every parameter for a random upstream gradient must agree to 1e-6. Also: default
initialisation, Dropout's statistics, and second-order gradients through Conv2d.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

TOL = dict(rtol=1e-6, atol=1e-6)


class Const:
    """An input that does not require grad (class indices, say)."""

    def __init__(self, values):
        self.values = np.asarray(values)


def _inputs(lib, specs, rng):
    out = []
    for spec in specs:
        if isinstance(spec, Const):
            out.append(lib.tensor(spec.values))
        else:
            out.append(lib.tensor(rng.standard_normal(spec), requires_grad=True))
    return out


def _numpy(t):
    return t.detach().numpy()


def check_parity(make, specs, seed=0, train=False, name=None):
    """Build with ``make(lib)``, copy torch's weights into nbgrad, compare outputs and grads.

    ``name``: the ``grad_fn`` name nbgrad gives where it differs from torch's.
    """
    torch.manual_seed(seed)
    th_mod = make(torch).double().train(train)
    ng_mod = make(ng).double().train(train)
    state = {k: ng.tensor(v.detach().numpy()) for k, v in th_mod.state_dict().items()}
    ng_mod.load_state_dict(state)
    rng = np.random.default_rng(seed)
    th_in = _inputs(torch, specs, rng)
    ng_in = [ng.tensor(t.detach().numpy(), requires_grad=t.requires_grad) for t in th_in]
    th_out, ng_out = th_mod(*th_in), ng_mod(*ng_in)
    assert tuple(ng_out.shape) == tuple(th_out.shape)
    np.testing.assert_allclose(_numpy(ng_out), _numpy(th_out), **TOL)
    if th_out.grad_fn is None:
        assert ng_out.grad_fn is None
        return ng_mod, th_mod
    assert ng_out.grad_fn.name() == (
        name or th_out.grad_fn.name().removeprefix("torch::autograd::")
    )
    upstream = rng.standard_normal(tuple(th_out.shape))
    th_wrt = [t for t in th_in if t.requires_grad] + list(th_mod.parameters())
    ng_wrt = [t for t in ng_in if t.requires_grad] + list(ng_mod.parameters())
    th_grads = torch.autograd.grad(th_out, th_wrt, torch.tensor(upstream), allow_unused=True)
    ng_grads = ng.autograd.grad(ng_out, ng_wrt, ng.tensor(upstream), allow_unused=True)
    assert len(ng_grads) == len(th_grads)
    for i, (a, b) in enumerate(zip(ng_grads, th_grads)):
        assert (a is None) == (b is None), i
        if a is not None:
            np.testing.assert_allclose(_numpy(a), _numpy(b), err_msg=f"gradient {i}", **TOL)
    return ng_mod, th_mod


LAYERS = {
    "linear-2d": (lambda lib: lib.nn.Linear(3, 4), [(5, 3)]),
    "linear-3d": (lambda lib: lib.nn.Linear(3, 4), [(2, 5, 3)]),
    "linear-1d": (lambda lib: lib.nn.Linear(3, 4), [(3,)]),
    "linear-no-bias": (lambda lib: lib.nn.Linear(3, 4, bias=False), [(5, 3)]),
    "linear-no-bias-3d": (lambda lib: lib.nn.Linear(3, 4, bias=False), [(2, 5, 3)]),
    "conv2d": (lambda lib: lib.nn.Conv2d(2, 4, 3), [(2, 2, 6, 6)]),
    "conv2d-stride-pad-dilation": (
        lambda lib: lib.nn.Conv2d(2, 4, (3, 2), stride=(2, 1), padding=(1, 2), dilation=(2, 1)),
        [(2, 2, 7, 6)],
    ),
    "conv2d-groups-same": (
        lambda lib: lib.nn.Conv2d(4, 6, 3, groups=2, padding="same"),
        [(2, 4, 5, 5)],
    ),
    "conv2d-same-even-kernel": (
        lambda lib: lib.nn.Conv2d(2, 2, 4, padding="same", dilation=2),
        [(1, 2, 9, 8)],
    ),
    "conv2d-depthwise": (
        lambda lib: lib.nn.Conv2d(3, 3, 3, groups=3, padding=1, stride=2),
        [(2, 3, 7, 7)],
    ),
    "conv2d-valid-no-bias-unbatched": (
        lambda lib: lib.nn.Conv2d(2, 3, 2, padding="valid", bias=False),
        [(2, 5, 5)],
    ),
    "maxpool": (lambda lib: lib.nn.MaxPool2d(2), [(2, 3, 5, 5)]),
    "maxpool-padded-ceil": (lambda lib: lib.nn.MaxPool2d(3, 2, 1, ceil_mode=True), [(1, 2, 6, 7)]),
    "avgpool": (lambda lib: lib.nn.AvgPool2d(3, stride=1, padding=1), [(2, 3, 5, 5)]),
    "avgpool-no-pad-count": (
        lambda lib: lib.nn.AvgPool2d(2, padding=1, count_include_pad=False),
        [(1, 2, 5, 4)],
    ),
    "adaptive-avgpool": (lambda lib: lib.nn.AdaptiveAvgPool2d((2, 3)), [(2, 3, 5, 7)]),
    "adaptive-avgpool-1": (lambda lib: lib.nn.AdaptiveAvgPool2d(1), [(2, 3, 5, 7)]),
    "cnn": (
        lambda lib: lib.nn.Sequential(
            lib.nn.Conv2d(1, 4, 3, padding=1),
            lib.nn.BatchNorm2d(4),
            lib.nn.ReLU(),
            lib.nn.MaxPool2d(2),
            lib.nn.Conv2d(4, 4, 3),
            lib.nn.SiLU(),
            lib.nn.AdaptiveAvgPool2d(1),
            lib.nn.Flatten(),
            lib.nn.Linear(4, 2),
        ),
        [(3, 1, 8, 8)],
    ),
    "relu": (lambda lib: lib.nn.ReLU(), [(3, 4)]),
    "tanh": (lambda lib: lib.nn.Tanh(), [(3, 4)]),
    "sigmoid": (lambda lib: lib.nn.Sigmoid(), [(3, 4)]),
    "leaky_relu": (lambda lib: lib.nn.LeakyReLU(0.2), [(3, 4)]),
    "leaky_relu-default": (lambda lib: lib.nn.LeakyReLU(), [(3, 4)]),
    "silu": (lambda lib: lib.nn.SiLU(), [(3, 4)]),
    "elu": (lambda lib: lib.nn.ELU(alpha=0.7), [(3, 4)]),
    "softplus": (lambda lib: lib.nn.Softplus(beta=2.0, threshold=1.0), [(3, 4)]),
    "hardtanh": (lambda lib: lib.nn.Hardtanh(-0.5, 0.5), [(3, 4)]),
    "relu6": (lambda lib: lib.nn.ReLU6(), [(3, 4)]),
    "logsigmoid": (lambda lib: lib.nn.LogSigmoid(), [(3, 4)]),
    "gelu": (lambda lib: lib.nn.GELU(), [(3, 4)]),
    "gelu-tanh": (lambda lib: lib.nn.GELU(approximate="tanh"), [(3, 4)]),
    "softmax": (lambda lib: lib.nn.Softmax(dim=1), [(3, 4)]),
    "softmax-last": (lambda lib: lib.nn.Softmax(dim=-1), [(2, 3, 4)]),
    "log-softmax": (lambda lib: lib.nn.LogSoftmax(dim=1), [(3, 4)]),
    "dropout-eval": (lambda lib: lib.nn.Dropout(0.3), [(3, 4)]),
    "flatten": (lambda lib: lib.nn.Flatten(), [(2, 3, 4)]),
    "embedding": (lambda lib: lib.nn.Embedding(10, 3), [Const([[1, 2, 9], [1, 0, 4]])]),
    "embedding-padding": (
        lambda lib: lib.nn.Embedding(10, 3, padding_idx=2),
        [Const([[1, 2, 2], [5, 2, 4]])],
    ),
    "layernorm": (lambda lib: lib.nn.LayerNorm(4), [(3, 4)]),
    "layernorm-2d": (lambda lib: lib.nn.LayerNorm((2, 4), eps=1e-3), [(3, 2, 4)]),
    "layernorm-no-affine": (lambda lib: lib.nn.LayerNorm(4, elementwise_affine=False), [(3, 4)]),
    "layernorm-no-bias": (lambda lib: lib.nn.LayerNorm(4, bias=False), [(2, 3, 4)]),
    # (in training mode: batch statistics; the running ones move; see test_batch_norm_*)
    "batchnorm1d": (lambda lib: lib.nn.BatchNorm1d(4), [(3, 4)]),
    "batchnorm1d-3d": (lambda lib: lib.nn.BatchNorm1d(3, momentum=0.3), [(2, 3, 5)]),
    "batchnorm2d": (lambda lib: lib.nn.BatchNorm2d(3, eps=1e-3), [(2, 3, 4, 4)]),
    "batchnorm2d-no-affine": (lambda lib: lib.nn.BatchNorm2d(2, affine=False), [(2, 2, 3, 3)]),
    "batchnorm1d-eval": (lambda lib: lib.nn.BatchNorm1d(4).eval(), [(3, 4)]),
    "sequential-mlp": (
        lambda lib: lib.nn.Sequential(
            lib.nn.Linear(4, 8), lib.nn.GELU(), lib.nn.Linear(8, 3), lib.nn.LayerNorm(3)
        ),
        [(5, 4)],
    ),
    "sequential-cnn": (
        lambda lib: lib.nn.Sequential(
            lib.nn.Conv2d(1, 3, 3, padding=1),
            lib.nn.ReLU(),
            lib.nn.Conv2d(3, 2, 3, stride=2),
            lib.nn.Tanh(),
            lib.nn.Flatten(),
            lib.nn.Linear(8, 2),
        ),
        [(2, 1, 6, 6)],
    ),
}


@pytest.mark.parametrize("name", LAYERS)
def test_layer_parity(name):
    make, specs = LAYERS[name]
    check_parity(make, specs)


def _module_list_net(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = lib.nn.ModuleList([lib.nn.Linear(3, 3) for _ in range(3)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x).tanh() + x
            return x

    return Net()


def test_module_list_parity():
    check_parity(_module_list_net, [(4, 3)])


def _inplace_relu_net(lib):
    return lib.nn.Sequential(lib.nn.Linear(3, 3), lib.nn.ReLU(inplace=True), lib.nn.Linear(3, 2))


def test_inplace_relu_parity():
    check_parity(_inplace_relu_net, [(4, 3)])


def test_embedding_max_norm_parity():
    ng_mod, th_mod = check_parity(
        lambda lib: lib.nn.Embedding(6, 4, max_norm=1.0), [Const([[0, 3], [3, 5]])]
    )
    np.testing.assert_allclose(_numpy(ng_mod.weight), _numpy(th_mod.weight), **TOL)


WEIGHTS = [0.5, 2.0, 1.0, 1.5]
TARGETS = Const([0, 3, 1, 1, 2])
PROBABILITIES = Const(np.random.default_rng(5).uniform(0, 1, (3, 4)))


def _on_probabilities(lib, loss):
    """``loss`` of ``sigmoid(x)`` and ``sigmoid(t)``: a binary cross entropy's inputs."""

    class OnProbabilities(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.loss = loss

        def forward(self, x, t):
            return self.loss(x.sigmoid(), t.sigmoid())

    return OnProbabilities()


def _weights(lib):
    return lib.tensor(WEIGHTS, dtype=lib.float64)


LOSSES = {
    "l1": (lambda lib: lib.nn.L1Loss(), [(3, 4), (3, 4)]),
    "l1-none": (lambda lib: lib.nn.L1Loss(reduction="none"), [(3, 4), (3, 4)]),
    "smooth-l1": (lambda lib: lib.nn.SmoothL1Loss(beta=0.5), [(3, 4), (3, 4)]),
    "huber": (lambda lib: lib.nn.HuberLoss(delta=0.7, reduction="sum"), [(3, 4), (3, 4)]),
    "bce": (lambda lib: _on_probabilities(lib, lib.nn.BCELoss()), [(3, 4), (3, 4)]),
    "bce-weight": (
        lambda lib: _on_probabilities(lib, lib.nn.BCELoss(weight=_weights(lib))),
        [(3, 4), (3, 4)],
    ),
    "bce-logits": (lambda lib: lib.nn.BCEWithLogitsLoss(), [(3, 4), PROBABILITIES]),
    "bce-logits-pos-weight": (
        lambda lib: lib.nn.BCEWithLogitsLoss(pos_weight=_weights(lib), reduction="none"),
        [(3, 4), PROBABILITIES],
    ),
    "mse": (lambda lib: lib.nn.MSELoss(), [(3, 4), (3, 4)]),
    "mse-sum": (lambda lib: lib.nn.MSELoss(reduction="sum"), [(3, 4), (3, 4)]),
    "mse-none": (lambda lib: lib.nn.MSELoss(reduction="none"), [(3, 4), (3, 4)]),
    "cross-entropy": (lambda lib: lib.nn.CrossEntropyLoss(), [(5, 4), TARGETS]),
    "cross-entropy-sum": (lambda lib: lib.nn.CrossEntropyLoss(reduction="sum"), [(5, 4), TARGETS]),
    "cross-entropy-none": (
        lambda lib: lib.nn.CrossEntropyLoss(reduction="none"),
        [(5, 4), TARGETS],
    ),
    "cross-entropy-weight": (
        lambda lib: lib.nn.CrossEntropyLoss(weight=lib.tensor(WEIGHTS, dtype=lib.float64)),
        [(5, 4), TARGETS],
    ),
    "cross-entropy-ignore": (
        lambda lib: lib.nn.CrossEntropyLoss(ignore_index=1),
        [(5, 4), TARGETS],
    ),
    "cross-entropy-smoothing": (
        lambda lib: lib.nn.CrossEntropyLoss(label_smoothing=0.2),
        [(5, 4), TARGETS],
    ),
    "cross-entropy-smoothing-weight-ignore": (
        lambda lib: lib.nn.CrossEntropyLoss(
            weight=lib.tensor(WEIGHTS, dtype=lib.float64), ignore_index=3, label_smoothing=0.1
        ),
        [(5, 4), TARGETS],
    ),
    "cross-entropy-smoothing-none": (
        lambda lib: lib.nn.CrossEntropyLoss(label_smoothing=0.3, reduction="none", ignore_index=0),
        [(5, 4), TARGETS],
    ),
    "cross-entropy-probabilities": (
        lambda lib: lib.nn.CrossEntropyLoss(),
        [(3, 4), Const(np.full((3, 4), 0.25))],
    ),
    "cross-entropy-probabilities-weight-smoothing": (
        lambda lib: lib.nn.CrossEntropyLoss(
            weight=lib.tensor(WEIGHTS, dtype=lib.float64), label_smoothing=0.1
        ),
        [(3, 4), Const([[0.1, 0.2, 0.3, 0.4]] * 3)],
    ),
    "cross-entropy-4d": (
        lambda lib: lib.nn.CrossEntropyLoss(),
        [(2, 3, 2, 2), Const([[[0, 1], [2, 2]], [[1, 1], [0, 2]]])],
    ),
    "cross-entropy-unbatched": (lambda lib: lib.nn.CrossEntropyLoss(), [(4,), Const(2)]),
    "nll": (lambda lib: lib.nn.NLLLoss(), [(5, 4), TARGETS]),
    "nll-weight-ignore-none": (
        lambda lib: lib.nn.NLLLoss(
            weight=lib.tensor(WEIGHTS, dtype=lib.float64), ignore_index=0, reduction="none"
        ),
        [(5, 4), TARGETS],
    ),
    "nll-3d-sum": (
        lambda lib: lib.nn.NLLLoss(reduction="sum"),
        [(2, 3, 4), Const([[0, 1, 2, 2], [1, 1, 0, 2]])],
    ),
    "nll-3d-none": (
        lambda lib: lib.nn.NLLLoss(reduction="none"),
        [(2, 3, 4), Const([[0, 1, 2, 2], [1, 1, 0, 2]])],
    ),
    "nll-5d-weight-ignore": (
        lambda lib: lib.nn.NLLLoss(
            weight=lib.tensor(WEIGHTS[:3], dtype=lib.float64), ignore_index=1
        ),
        [(2, 3, 2, 1, 2), Const(np.arange(8).reshape(2, 2, 1, 2) % 3)],
    ),
}


@pytest.mark.parametrize("name", LOSSES)
def test_loss_parity(name):
    make, specs = LOSSES[name]
    check_parity(make, specs)


def test_legacy_reduction_arguments():
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        out = ng.nn.functional.mse_loss(ng.ones(2), ng.zeros(2), size_average=False)
    assert out.item() == 2.0
    with pytest.warns(UserWarning, match="size_average and reduce"):
        assert ng.nn.MSELoss(reduce=False).reduction == "none"
    with pytest.warns(UserWarning, match="size_average and reduce"):
        assert torch.nn.MSELoss(reduce=False).reduction == "none"


# ---- initialisation -------------------------------------------------------------------------
def test_default_parameter_shapes_match_torch():
    def layers(lib):
        return [
            lib.nn.Linear(5, 3),
            lib.nn.Conv2d(4, 6, (3, 2), groups=2),
            lib.nn.Embedding(7, 2),
            lib.nn.LayerNorm((2, 3)),
        ]

    for a, b in zip(layers(ng), layers(torch)):
        assert [
            (n, tuple(p.shape), p.dtype.__repr__().split(".")[-1]) for n, p in a.named_parameters()
        ] == [(n, tuple(p.shape), str(p.dtype).split(".")[-1]) for n, p in b.named_parameters()]


@pytest.mark.parametrize(
    "make, fan_in",
    [(lambda: ng.nn.Linear(400, 300), 400), (lambda: ng.nn.Conv2d(40, 64, 5, groups=2), 500)],
    ids=["linear", "conv2d"],
)
def test_kaiming_uniform_defaults(make, fan_in):
    ng.manual_seed(0)
    layer = make()
    bound = 1 / math.sqrt(fan_in)
    w, b = _numpy(layer.weight), _numpy(layer.bias)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound  # U(-bound, bound)
    assert abs(w.mean()) < 0.02 * bound
    assert w.dtype == np.float32


def test_other_defaults_and_seeding():
    ng.manual_seed(1)
    emb = ng.nn.Embedding(1000, 50, padding_idx=3)
    w = _numpy(emb.weight)
    assert abs(w.std() - 1) < 0.02 and abs(w.mean()) < 0.02
    # constants written (the padding row, LayerNorm's ones and zeros below), not computed
    np.testing.assert_array_equal(w[3], 0)
    ln = ng.nn.LayerNorm(3)
    np.testing.assert_array_equal(_numpy(ln.weight), 1)
    np.testing.assert_array_equal(_numpy(ln.bias), 0)
    ng.manual_seed(7)
    a = _numpy(ng.nn.Linear(3, 3).weight)
    ng.manual_seed(7)
    b = _numpy(ng.nn.Linear(3, 3).weight)
    c = _numpy(ng.nn.Linear(3, 3).weight)
    # the same seed: the same draws by the same code, bits included
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)
    assert ng.nn.Linear(2, 2, dtype=ng.float64).weight.dtype is ng.float64


# ---- dropout --------------------------------------------------------------------------------
def test_dropout_training():
    ng.manual_seed(0)
    drop = ng.nn.Dropout(0.25)
    x = ng.ones(200, 100, requires_grad=True)
    y = drop(x)
    values = _numpy(y)
    assert set(np.unique(values)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((values == 0).mean() - 0.25) < 0.01
    assert y.grad_fn.name() == "MulBackward0"  # as PyTorch on the CPU
    y.sum().backward()
    # bits: both are 1 * the mask's scale (0 or 1 / 0.75), the same one product
    np.testing.assert_array_equal(_numpy(x.grad), values)
    assert ng.nn.functional.dropout(x, 0.0) is x
    # zeros: every element dropped
    np.testing.assert_array_equal(_numpy(ng.nn.functional.dropout(x, 1.0)), 0)
    z = x * 1
    assert ng.nn.Dropout(0.5, inplace=True)(z) is z
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        ng.nn.Dropout(1.5)


# ---- second order through Conv2d ------------------------------------------------------------
def test_conv2d_gradgradcheck():
    conv = ng.nn.Conv2d(2, 2, 2, stride=(1, 2), padding=1, dilation=(2, 1), groups=2).double()
    x = ng.randn(1, 2, 4, 5, dtype=ng.float64, requires_grad=True)

    def f(x, w, b):
        return ng.nn.functional.conv2d(x, w, b, conv.stride, conv.padding, conv.dilation, 2)

    inputs = (x, conv.weight, conv.bias)
    assert ng.autograd.gradcheck(f, inputs)
    assert ng.autograd.gradgradcheck(f, inputs)


def conv_double_backward(lib, x, w, b):
    x = lib.tensor(x, requires_grad=True)
    w = lib.tensor(w, requires_grad=True)
    b = lib.tensor(b, requires_grad=True)
    y = lib.nn.functional.conv2d(x, w, b, stride=2, padding=1, groups=2).tanh()
    grads = lib.autograd.grad((y * y).sum(), [x, w], create_graph=True)
    penalty = sum((g * g).sum() for g in grads)
    return [_numpy(g) for g in lib.autograd.grad(penalty, [x, w, b])]


def test_conv2d_double_backward_matches_torch():
    rng = np.random.default_rng(3)
    args = (
        rng.standard_normal((2, 4, 5, 5)),
        rng.standard_normal((4, 2, 3, 3)),
        rng.standard_normal(4),
    )
    for a, b in zip(conv_double_backward(ng, *args), conv_double_backward(torch, *args)):
        np.testing.assert_allclose(a, b, **TOL)
