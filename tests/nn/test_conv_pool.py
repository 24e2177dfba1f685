"""Conv1d, Conv3d, the transposed convolutions, 1-d, 3-d and adaptive pooling, 3-d norms,
max unpooling, the padding layers, Fold
and Unfold against PyTorch: outputs, grad_fn names, input and parameter gradients (float64,
1e-6) with torch's weights loaded, state_dict keys, reprs, init; gradcheck and gradgradcheck
of the functional forms on small sizes."""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng
from tests.nn import test_layer_init
from tests.nn.test_layer_parity import check_parity

torch = pytest.importorskip("torch")


# name -> (constructor for either library, input shapes, nbgrad's grad_fn name where it differs)
def _samples(nn, shape):
    """The same fractional max pooling starts for either library (``nn`` is its ``nn``)."""
    lib = ng if nn is ng.nn else torch
    return lib.tensor(np.random.default_rng(1).random(shape), dtype=lib.float64)


LAYERS = {
    "conv1d": (lambda nn: nn.Conv1d(2, 4, 3), [(2, 2, 7)]),
    "conv1d-stride-pad-dil": (
        lambda nn: nn.Conv1d(2, 3, 3, stride=2, padding=2, dilation=2),
        [(2, 2, 9)],
    ),
    "conv1d-groups-no-bias": (lambda nn: nn.Conv1d(4, 6, 2, groups=2, bias=False), [(3, 4, 5)]),
    "conv1d-same-even": (lambda nn: nn.Conv1d(2, 2, 4, padding="same", dilation=2), [(1, 2, 9)]),
    "conv1d-valid-unbatched": (lambda nn: nn.Conv1d(3, 2, 2, padding="valid"), [(3, 6)]),
    "conv1d-reflect": (
        lambda nn: nn.Conv1d(2, 3, 3, padding=2, padding_mode="reflect"),
        [(2, 2, 6)],
    ),
    "conv1d-replicate": (
        lambda nn: nn.Conv1d(2, 3, 3, padding=1, padding_mode="replicate", stride=2),
        [(2, 2, 6)],
    ),
    "conv1d-circular-same": (
        lambda nn: nn.Conv1d(2, 3, 4, padding="same", padding_mode="circular"),
        [(2, 2, 6)],
    ),
    "conv2d-reflect": (
        lambda nn: nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="reflect"),
        [(2, 2, 5, 6)],
    ),
    "conv2d-circular": (
        lambda nn: nn.Conv2d(2, 2, 3, padding=1, padding_mode="circular"),
        [(1, 2, 4, 4)],
    ),
    "convT1d": (lambda nn: nn.ConvTranspose1d(2, 3, 3), [(2, 2, 5)]),
    "convT1d-stride-outpad-groups": (
        lambda nn: nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
        [(2, 4, 5)],
    ),
    "convT1d-dilation-no-bias-unbatched": (
        lambda nn: nn.ConvTranspose1d(2, 2, 2, dilation=3, bias=False),
        [(2, 4)],
    ),
    "convT2d": (lambda nn: nn.ConvTranspose2d(2, 3, 3), [(2, 2, 4, 4)]),
    "convT2d-stride-pad-outpad": (
        lambda nn: nn.ConvTranspose2d(
            2, 4, (3, 2), stride=(2, 3), padding=(1, 0), output_padding=(1, 2)
        ),
        [(2, 2, 3, 4)],
    ),
    "convT2d-groups-dilation": (
        lambda nn: nn.ConvTranspose2d(4, 2, 3, groups=2, dilation=(2, 1), padding=1),
        [(1, 4, 4, 3)],
    ),
    "convT2d-unbatched": (lambda nn: nn.ConvTranspose2d(3, 2, 2, stride=2), [(3, 3, 3)]),
    "maxpool1d": (lambda nn: nn.MaxPool1d(2), [(2, 3, 7)]),
    "maxpool1d-pad-dil-ceil": (
        lambda nn: nn.MaxPool1d(3, 2, padding=1, dilation=2, ceil_mode=True),
        [(2, 3, 10)],
    ),
    "maxpool1d-unbatched": (lambda nn: nn.MaxPool1d(3, 1), [(3, 6)]),
    "avgpool1d": (lambda nn: nn.AvgPool1d(3), [(2, 3, 7)]),
    "avgpool1d-pad-ceil": (lambda nn: nn.AvgPool1d(3, 2, 1, ceil_mode=True), [(2, 3, 8)]),
    "avgpool1d-no-pad-count": (
        lambda nn: nn.AvgPool1d(4, 3, 2, count_include_pad=False),
        [(1, 2, 9)],
    ),
    "adaptive-avgpool1d": (lambda nn: nn.AdaptiveAvgPool1d(3), [(2, 3, 7)]),
    "adaptive-avgpool1d-1": (lambda nn: nn.AdaptiveAvgPool1d(1), [(2, 3, 7)]),
    "adaptive-maxpool1d": (lambda nn: nn.AdaptiveMaxPool1d(4), [(2, 3, 7)]),
    "adaptive-maxpool2d": (lambda nn: nn.AdaptiveMaxPool2d((3, 2)), [(2, 3, 7, 5)]),
    "adaptive-maxpool2d-none": (lambda nn: nn.AdaptiveMaxPool2d((None, 3)), [(2, 4, 8)]),
    "adaptive-maxpool2d-grow": (lambda nn: nn.AdaptiveMaxPool2d(4), [(1, 2, 3, 3)]),
    # 3-d: the N-d kernels of NOTE [N-d convolution and pooling kernels]
    "conv3d": (lambda nn: nn.Conv3d(2, 3, 2), [(2, 2, 4, 3, 4)]),
    "conv3d-stride-pad-dil-groups": (
        lambda nn: nn.Conv3d(4, 2, (2, 3, 1), (2, 1, 1), (1, 0, 2), (1, 2, 1), groups=2),
        [(1, 4, 5, 6, 3)],
    ),
    "conv3d-same-unbatched-no-bias": (
        lambda nn: nn.Conv3d(2, 2, (2, 3, 2), padding="same", bias=False),
        [(2, 3, 4, 3)],
    ),
    "conv3d-replicate": (
        lambda nn: nn.Conv3d(1, 2, 3, padding=1, padding_mode="replicate"),
        [(1, 1, 3, 4, 3)],
    ),
    "convT3d": (lambda nn: nn.ConvTranspose3d(2, 3, 2), [(2, 2, 3, 2, 3)]),
    "convT3d-stride-outpad-groups-dil": (
        lambda nn: nn.ConvTranspose3d(
            4, 2, (3, 2, 2), (2, 1, 3), (1, 0, 1), (1, 0, 2), groups=2, dilation=(1, 2, 1)
        ),
        [(1, 4, 3, 2, 2)],
    ),
    "convT3d-unbatched": (lambda nn: nn.ConvTranspose3d(2, 1, 2, stride=2), [(2, 2, 2, 2)]),
    "maxpool3d": (lambda nn: nn.MaxPool3d(2), [(2, 2, 4, 5, 4)]),
    "maxpool3d-pad-dil-ceil": (
        lambda nn: nn.MaxPool3d((3, 2, 2), (2, 1, 2), (1, 0, 1), (2, 1, 1), ceil_mode=True),
        [(1, 2, 7, 4, 5)],
    ),
    "maxpool3d-unbatched": (lambda nn: nn.MaxPool3d(2, 1), [(2, 3, 3, 3)]),
    "avgpool3d": (lambda nn: nn.AvgPool3d(2), [(2, 2, 4, 5, 4)]),
    "avgpool3d-pad-ceil-no-count": (
        lambda nn: nn.AvgPool3d(3, 2, 1, ceil_mode=True, count_include_pad=False),
        [(1, 2, 5, 4, 6)],
    ),
    "avgpool3d-divisor-unbatched": (
        lambda nn: nn.AvgPool3d((2, 1, 2), divisor_override=3),
        [(2, 4, 3, 4)],
    ),
    "adaptive-avgpool3d": (lambda nn: nn.AdaptiveAvgPool3d((2, 3, 2)), [(2, 2, 5, 7, 3)]),
    "adaptive-avgpool3d-1": (lambda nn: nn.AdaptiveAvgPool3d(1), [(2, 2, 3, 3, 3)]),
    "adaptive-avgpool3d-none": (
        lambda nn: nn.AdaptiveAvgPool3d((None, 2, None)),
        [(2, 3, 5, 4)],
    ),
    "adaptive-maxpool3d": (lambda nn: nn.AdaptiveMaxPool3d((3, 2, 2)), [(2, 2, 5, 4, 3)]),
    "adaptive-maxpool3d-grow": (lambda nn: nn.AdaptiveMaxPool3d(3), [(1, 2, 2, 2, 2)]),
    "fractional-maxpool2d": (
        lambda nn: nn.FractionalMaxPool2d(2, (3, 4), _random_samples=_samples(nn, (2, 3, 2))),
        [(2, 3, 6, 7)],
    ),
    "fractional-maxpool3d-ratio": (
        lambda nn: nn.FractionalMaxPool3d(
            (2, 1, 2), output_ratio=0.5, _random_samples=_samples(nn, (1, 2, 3))
        ),
        [(2, 5, 6, 7)],
    ),
    "lppool3d": (lambda nn: nn.LPPool3d(2, 2), [(2, 2, 4, 4, 4)]),
    "lppool3d-p3-stride": (lambda nn: nn.LPPool3d(3, (2, 1, 2), (1, 2, 1)), [(1, 2, 3, 4, 3)]),
    "batchnorm3d": (lambda nn: nn.BatchNorm3d(3), [(2, 3, 3, 2, 4)]),
    "instancenorm3d": (lambda nn: nn.InstanceNorm3d(3), [(2, 3, 3, 2, 4)]),
    "instancenorm3d-affine-unbatched": (
        lambda nn: nn.InstanceNorm3d(2, affine=True),
        [(2, 3, 2, 4)],
    ),
    "maxunpool3d": (lambda nn: _PoolUnpool(nn, 3), [(2, 2, 4, 4, 6)]),
    "maxunpool2d": (lambda nn: _PoolUnpool(nn, 2), [(2, 2, 4, 6)]),
    "maxunpool1d": (lambda nn: _PoolUnpool(nn, 1), [(2, 2, 6)]),
}


def _PoolUnpool(nn, n):  # noqa: N802
    """MaxPool{n}d then MaxUnpool{n}d (the unpooling's input and indices from the pooling)."""
    pool = getattr(nn, f"MaxPool{n}d")(2, return_indices=True)
    unpool = getattr(nn, f"MaxUnpool{n}d")(2)

    class PoolUnpool(nn.Module):
        def forward(self, x):
            return unpool(*pool(x))

    return PoolUnpool()


# the padding layers (each PyTorch's own node, CopySlices for circular), unfold and fold
PADS = {
    "zeropad1d": (lambda nn: nn.ZeroPad1d((2, -1)), [(2, 3, 5)]),
    "zeropad2d": (lambda nn: nn.ZeroPad2d(1), [(2, 3, 4, 4)]),
    "constpad1d": (lambda nn: nn.ConstantPad1d(2, 3.5), [(2, 3, 5)]),
    "constpad2d": (lambda nn: nn.ConstantPad2d((1, 2, 0, -1), -1.25), [(3, 4, 4)]),
    "reflectpad1d": (lambda nn: nn.ReflectionPad1d((3, 1)), [(2, 3, 5)]),
    "reflectpad2d": (lambda nn: nn.ReflectionPad2d((1, 2, 3, 0)), [(2, 2, 4, 4)]),
    "reflectpad2d-unbatched": (lambda nn: nn.ReflectionPad2d(2), [(2, 3, 4)]),
    "replicatepad1d": (lambda nn: nn.ReplicationPad1d((0, 4)), [(2, 3, 3)]),
    "replicatepad2d": (lambda nn: nn.ReplicationPad2d(2), [(2, 2, 3, 4)]),
    "circularpad1d": (lambda nn: nn.CircularPad1d((3, 1)), [(2, 3, 4)]),
    "circularpad2d": (lambda nn: nn.CircularPad2d((1, 2, 2, -1)), [(2, 2, 3, 4)]),
    "reflectpad3d": (lambda nn: nn.ReflectionPad3d((1, 0, 2, 1, 0, 1)), [(1, 2, 3, 4, 3)]),
    "replicatepad3d": (lambda nn: nn.ReplicationPad3d(1), [(2, 3, 2, 3)]),
    "circularpad3d": (lambda nn: nn.CircularPad3d((1, 2, 0, 1, 1, 0)), [(1, 1, 2, 3, 3)]),
    "unfold": (lambda nn: nn.Unfold(2), [(2, 3, 4, 5)]),
    "unfold-all": (
        lambda nn: nn.Unfold((2, 3), dilation=(2, 1), padding=1, stride=(1, 2)),
        [(2, 2, 5, 6)],
    ),
    "unfold-unbatched": (lambda nn: nn.Unfold(3, padding=1), [(2, 3, 3)]),
    "fold": (lambda nn: nn.Fold((4, 5), 2), [(2, 12, 12)]),
    "fold-all": (
        lambda nn: nn.Fold((5, 6), (2, 3), dilation=(2, 1), padding=1, stride=(1, 2)),
        [(2, 12, 15)],
    ),
    "fold-unbatched": (lambda nn: nn.Fold(3, 2, stride=1), [(8, 4)]),
}


@pytest.mark.parametrize("name", LAYERS)
def test_layer_parity(name):
    make, specs = LAYERS[name]
    ng_mod, th_mod = check_parity(lambda lib: make(lib.nn), specs)
    assert list(ng_mod.state_dict()) == list(th_mod.state_dict())
    assert repr(ng_mod) == repr(th_mod)


@pytest.mark.parametrize("name", PADS)
def test_padding_and_fold_parity(name):
    make, specs = PADS[name]
    ng_mod, th_mod = check_parity(lambda lib: make(lib.nn), specs)
    assert repr(ng_mod) == repr(th_mod)


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("kind", ["max1d", "adaptive1d", "adaptive2d"])
def test_pool_return_indices_match_pytorch(kind, ceil_mode):
    rng = np.random.default_rng(1)
    shape, make = {
        "max1d": (
            (2, 3, 9),
            lambda nn: nn.MaxPool1d(3, 2, 1, ceil_mode=ceil_mode, return_indices=True),
        ),
        "adaptive1d": ((2, 3, 9), lambda nn: nn.AdaptiveMaxPool1d(4, return_indices=True)),
        "adaptive2d": ((2, 3, 5, 7), lambda nn: nn.AdaptiveMaxPool2d((2, 3), return_indices=True)),
    }[kind]
    x = rng.standard_normal(shape)
    ours, ours_idx = make(ng.nn)(ng.tensor(x))
    theirs, theirs_idx = make(torch.nn)(torch.tensor(x))
    # bits: max pooling selects input values, no arithmetic (and the indices are ints)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(ours_idx.numpy(), theirs_idx.numpy())
    assert ours_idx.dtype == ng.int64


def test_conv_transpose_output_size_matches_pytorch():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 3, 3))
    for size in ([6, 6], [1, 3, 5, 6]):
        torch.manual_seed(0)
        th = torch.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1).double()
        ours = ng.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1).double()
        ours.load_state_dict({k: ng.tensor(v.numpy()) for k, v in th.state_dict().items()})
        a, b = ours(ng.tensor(x), output_size=size), th(torch.tensor(x), output_size=size)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="requested an output size"):
        ours(ng.tensor(x), output_size=[9, 9])


def test_conv_transpose_padding_mode_raises_as_pytorch():
    for lib in (torch, ng):
        with pytest.raises(ValueError, match='Only "zeros" padding mode'):
            lib.nn.ConvTranspose1d(2, 2, 3, padding_mode="reflect")


def test_reflect_pad_too_large_raises():
    for lib in (torch, ng):
        with pytest.raises(RuntimeError, match="Padding size should be less than"):
            lib.nn.functional.pad(lib.zeros(1, 2, 3), (3, 0), mode="reflect")


def _gradcheck(fn, *shapes, gradgrad=False, seed=0):
    rng = np.random.default_rng(seed)
    inputs = [ng.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]
    assert ng.autograd.gradcheck(fn, inputs)
    if gradgrad:
        assert ng.autograd.gradgradcheck(fn, inputs)


F = ng.nn.functional
GRADCHECKS = {
    "conv1d": (
        lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, groups=2),
        [(2, 4, 5), (2, 2, 3), (2,)],
        True,
    ),
    "conv_transpose1d": (
        lambda x, w, b: F.conv_transpose1d(x, w, b, 2, 1, 1, 2, 1),
        [(1, 4, 3), (4, 1, 3), (2,)],
        True,
    ),
    "conv_transpose2d": (
        lambda x, w: F.conv_transpose2d(x, w, None, (2, 1), (0, 1), (1, 0), 1, (1, 2)),
        [(1, 2, 2, 3), (2, 2, 2, 2)],
        True,
    ),
    "max_pool1d": (lambda x: F.max_pool1d(x, 3, 2, 1, ceil_mode=True), [(1, 2, 6)], False),
    "avg_pool1d": (lambda x: F.avg_pool1d(x, 3, 2, 1, count_include_pad=False), [(1, 2, 6)], True),
    "adaptive_max_pool2d": (lambda x: F.adaptive_max_pool2d(x, (2, 3)), [(1, 2, 5, 4)], True),
    "adaptive_max_pool1d": (lambda x: F.adaptive_max_pool1d(x, 3), [(2, 5)], False),
    "adaptive_avg_pool1d": (lambda x: F.adaptive_avg_pool1d(x, 3), [(1, 2, 5)], False),
    "pad-constant": (lambda x: F.pad(x, (1, -1, 2, 0), value=2.0), [(2, 3, 3)], True),
    "pad-reflect": (lambda x: F.pad(x, (2, 1, 1, 1), mode="reflect"), [(1, 2, 3, 4)], True),
    "pad-replicate": (lambda x: F.pad(x, (2, 0), mode="replicate"), [(2, 3)], True),
    "pad-circular": (lambda x: F.pad(x, (1, 2, 2, 1), mode="circular"), [(1, 1, 3, 3)], True),
    "pad-reflect-3d": (
        lambda x: F.pad(x, (1, 1, 0, 1, 1, 0), mode="reflect"),
        [(1, 2, 2, 3)],
        True,
    ),
    "pad-replicate-3d": (
        lambda x: F.pad(x, (1, 0, 2, 1, 0, 1), mode="replicate"),
        [(1, 2, 2, 2)],
        True,
    ),
    "unfold-unbatched": (lambda x: F.unfold(x, (2, 1), 1, (1, 0), 1), [(2, 3, 2)], True),
    "fold-unbatched": (lambda x: F.fold(x, (3, 3), 2, padding=1, stride=2), [(4, 4)], True),
    "unfold": (lambda x: F.unfold(x, 2, 1, 1, 2), [(1, 2, 3, 4)], True),
    "fold": (lambda x: F.fold(x, (3, 4), 2, 1, 1, 2), [(1, 8, 6)], True),
    "conv3d": (
        lambda x, w, b: F.conv3d(x, w, b, (2, 1, 1), (1, 0, 1), (1, 2, 1), groups=2),
        [(1, 4, 3, 4, 3), (2, 2, 2, 1, 2), (2,)],
        True,
    ),
    "conv_transpose3d": (
        lambda x, w, b: F.conv_transpose3d(x, w, b, (2, 1, 1), (1, 0, 0), (1, 0, 0), 1, (1, 1, 2)),
        [(1, 2, 2, 2, 2), (2, 1, 2, 2, 2), (1,)],
        True,
    ),
    "max_pool3d": (
        lambda x: F.max_pool3d(x, 2, (1, 2, 1), 1, ceil_mode=True),
        [(1, 1, 3, 4, 3)],
        True,
    ),
    "avg_pool3d": (
        lambda x: F.avg_pool3d(x, 2, 1, 1, count_include_pad=False),
        [(1, 1, 3, 2, 3)],
        True,
    ),
    "adaptive_avg_pool3d": (lambda x: F.adaptive_avg_pool3d(x, (2, 1, 3)), [(1, 1, 3, 2, 4)], True),
    "adaptive_max_pool3d": (lambda x: F.adaptive_max_pool3d(x, (2, 2, 1)), [(1, 1, 3, 3, 2)], True),
    "lp_pool3d": (lambda x: F.lp_pool3d(x, 2, 2), [(1, 1, 2, 4, 2)], False),
    "max_unpool3d": (lambda x: _unpool3d(x), [(1, 2, 1, 2, 2)], True),
}


def _unpool3d(x):
    """max_unpool3d of ``x`` at the indices of the maxima of a fixed volume."""
    volume = ng.tensor(np.random.default_rng(4).standard_normal((1, 2, 2, 4, 4)))
    _, indices = F.max_pool3d(volume, 2, return_indices=True)
    return F.max_unpool3d(x, indices, 2)


@pytest.mark.parametrize("name", GRADCHECKS)
def test_gradcheck(name):
    fn, shapes, gradgrad = GRADCHECKS[name]
    _gradcheck(fn, *shapes, gradgrad=gradgrad)


def test_fold_is_the_adjoint_of_unfold():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((2, 3, 5, 6)), rng.standard_normal((2, 3 * 6, 9))
    args = ((2, 3), 1, 1, 2)
    lhs = (F.unfold(ng.tensor(x), *args) * ng.tensor(y)).sum().item()
    rhs = (ng.tensor(x) * F.fold(ng.tensor(y), (5, 6), *args)).sum().item()
    assert abs(lhs - rhs) < 1e-9


INIT = {
    "Conv1d(3, 4, 3)": (lambda nn: nn.Conv1d(3, 4, 3), 200),
    "ConvTranspose1d(4, 6, 3, groups=2)": (lambda nn: nn.ConvTranspose1d(4, 6, 3, groups=2), 200),
    "ConvTranspose2d(3, 2, 2)": (lambda nn: nn.ConvTranspose2d(3, 2, 2), 200),
    "Conv3d(2, 3, 2)": (lambda nn: nn.Conv3d(2, 3, 2), 200),
    "ConvTranspose3d(2, 4, 2, groups=2)": (lambda nn: nn.ConvTranspose3d(2, 4, 2, groups=2), 200),
}


@pytest.mark.parametrize("layer", sorted(INIT))
def test_init_distribution_matches_pytorch(layer, monkeypatch):
    monkeypatch.setitem(test_layer_init.LAYERS, layer, INIT[layer])
    test_layer_init.test_layer_init_distribution_matches_pytorch(layer)
