"""Unflatten, Upsample, PixelShuffle / PixelUnshuffle and the feature and alpha dropouts
against PyTorch: outputs, grad_fn names, gradients (float64, 1e-6), reprs; the dropouts'
masks and affine maps recovered from PyTorch's outputs; gradcheck / gradgradcheck."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nbgrad as ng
from tests.nn.test_layer_parity import check_parity

torch = pytest.importorskip("torch")

# name -> (constructor for either library, input shapes)
LAYERS = {
    "unflatten": (lambda nn: nn.Unflatten(1, (2, 3)), [(4, 6, 2)]),
    "unflatten-neg": (lambda nn: nn.Unflatten(-1, [2, -1]), [(3, 8)]),
    "nearest-2x": (lambda nn: nn.Upsample(scale_factor=2), [(2, 3, 3, 4)]),
    "nearest-size": (lambda nn: nn.Upsample(size=(5, 7)), [(2, 3, 3, 4)]),
    "nearest-down": (lambda nn: nn.Upsample(size=(2, 3)), [(1, 2, 5, 7)]),
    "nearest-frac": (
        lambda nn: nn.Upsample(scale_factor=(1.7, 0.6)),
        [(1, 2, 5, 7)],
    ),
    "nearest-frac-recompute": (
        lambda nn: nn.Upsample(scale_factor=(1.7, 2.3), recompute_scale_factor=True),
        [(1, 2, 5, 3)],
    ),
    "nearest-1d": (lambda nn: nn.Upsample(scale_factor=3), [(2, 3, 4)]),
    "nearest-1d-size": (lambda nn: nn.Upsample(size=7), [(2, 3, 4)]),
    "linear-1d": (
        lambda nn: nn.Upsample(scale_factor=2.5, mode="linear"),
        [(2, 3, 4)],
    ),
    "linear-1d-corners": (
        lambda nn: nn.Upsample(size=9, mode="linear", align_corners=True),
        [(2, 3, 4)],
    ),
    "bilinear": (
        lambda nn: nn.Upsample(scale_factor=2, mode="bilinear"),
        [(2, 3, 3, 4)],
    ),
    "bilinear-size-down": (
        lambda nn: nn.Upsample(size=(2, 5), mode="bilinear"),
        [(2, 2, 5, 7)],
    ),
    "bilinear-corners": (
        lambda nn: nn.Upsample(size=(7, 5), mode="bilinear", align_corners=True),
        [(2, 2, 3, 4)],
    ),
    "bilinear-frac": (
        lambda nn: nn.Upsample(scale_factor=(1.5, 2.25), mode="bilinear"),
        [(1, 2, 4, 3)],
    ),
    "bilinear-to-1": (
        lambda nn: nn.Upsample(size=(1, 3), mode="bilinear", align_corners=True),
        [(1, 2, 4, 3)],
    ),
    "upsampling-nearest2d": (
        lambda nn: nn.UpsamplingNearest2d(scale_factor=2),
        [(1, 2, 3, 3)],
    ),
    "upsampling-bilinear2d": (
        lambda nn: nn.UpsamplingBilinear2d(size=(5, 4)),
        [(1, 2, 3, 3)],
    ),
    "pixelshuffle": (lambda nn: nn.PixelShuffle(2), [(2, 8, 3, 4)]),
    "pixelshuffle-3": (lambda nn: nn.PixelShuffle(3), [(9, 2, 2)]),
    "pixelshuffle-lead": (lambda nn: nn.PixelShuffle(2), [(2, 2, 4, 2, 3)]),
    "pixelunshuffle": (lambda nn: nn.PixelUnshuffle(2), [(2, 2, 4, 6)]),
    "pixelunshuffle-3": (lambda nn: nn.PixelUnshuffle(3), [(1, 3, 3, 6)]),
    "nearest-3d": (lambda nn: nn.Upsample(scale_factor=(2, 1.5, 0.7)), [(1, 2, 4, 3, 5)]),
    "nearest-exact-1d": (lambda nn: nn.Upsample(size=7, mode="nearest-exact"), [(2, 3, 4)]),
    "nearest-exact-2d": (
        lambda nn: nn.Upsample(scale_factor=1.7, mode="nearest-exact"),
        [(1, 2, 4, 3)],
    ),
    "nearest-exact-3d": (
        lambda nn: nn.Upsample(size=(3, 5, 2), mode="nearest-exact"),
        [(1, 2, 4, 3, 3)],
    ),
    "bicubic": (lambda nn: nn.Upsample(scale_factor=2, mode="bicubic"), [(1, 2, 4, 3)]),
    "bicubic-down": (lambda nn: nn.Upsample(size=(3, 2), mode="bicubic"), [(2, 2, 6, 5)]),
    "bicubic-corners": (
        lambda nn: nn.Upsample(size=(7, 5), mode="bicubic", align_corners=True),
        [(1, 2, 4, 3)],
    ),
    "bicubic-frac": (
        lambda nn: nn.Upsample(scale_factor=(1.5, 2.25), mode="bicubic"),
        [(1, 2, 4, 3)],
    ),
    "trilinear": (
        lambda nn: nn.Upsample(scale_factor=(2, 1.5, 0.7), mode="trilinear"),
        [(1, 2, 4, 3, 5)],
    ),
    "trilinear-corners": (
        lambda nn: nn.Upsample(size=(3, 5, 2), mode="trilinear", align_corners=True),
        [(2, 1, 4, 3, 3)],
    ),
    "area-1d": (lambda nn: nn.Upsample(size=3, mode="area"), [(1, 2, 7)]),
    "area-2d": (lambda nn: nn.Upsample(scale_factor=0.5, mode="area"), [(1, 2, 6, 4)]),
    "area-3d": (lambda nn: nn.Upsample(size=(2, 3, 1), mode="area"), [(1, 2, 4, 6, 3)]),
    "dropout1d-eval": (lambda nn: nn.Dropout1d(0.4).eval(), [(2, 3, 4)]),
    "dropout2d-eval": (lambda nn: nn.Dropout2d(0.4).eval(), [(2, 3, 4, 4)]),
    "alphadropout-eval": (lambda nn: nn.AlphaDropout(0.4).eval(), [(2, 3)]),
}


@pytest.mark.parametrize("name", LAYERS)
def test_layer_parity(name):
    make, specs = LAYERS[name]
    ng_mod, th_mod = check_parity(lambda lib: make(lib.nn), specs)
    assert repr(ng_mod) == repr(th_mod)


def test_pixel_unshuffle_inverts_pixel_shuffle():
    x = ng.randn(2, 3, 4, 6)
    # bits: both only move values
    np.testing.assert_array_equal(
        ng.nn.functional.pixel_shuffle(ng.nn.functional.pixel_unshuffle(x, 2), 2).numpy(),
        x.numpy(),
    )


def test_interpolate_errors_as_pytorch():
    for lib in (ng, torch):
        F = lib.nn.functional
        x = lib.zeros(1, 1, 2, 2)
        with pytest.raises(ValueError, match="align_corners option can only be set"):
            F.interpolate(x, scale_factor=2, align_corners=True)
        with pytest.raises(ValueError, match="only one of size or scale_factor"):
            F.interpolate(x, size=3, scale_factor=2)
        with pytest.raises(RuntimeError, match="pixel_shuffle expects its input's 'channel'"):
            F.pixel_shuffle(lib.zeros(1, 3, 2, 2), 2)


# ---- dropout: PyTorch's random draws are not ours, so its masks and maps are recovered --------
def _channel_kept(out, x):
    """Per (N, C) channel: kept (out == x * s for one s), dropped (all zero)."""
    flat_out = out.reshape(out.shape[0], out.shape[1], -1)
    dropped = np.all(flat_out == 0, axis=-1)
    return ~dropped, flat_out


@pytest.mark.parametrize("p", [0.2, 0.5])
@pytest.mark.parametrize("dims", [1, 2])
def test_feature_dropout_matches_pytorch_statistics(dims, p):
    shape = (200, 30, 3) if dims == 1 else (200, 30, 2, 2)
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 1.5, shape)  # no zeros: a dropped channel is all zeros
    make = (lambda nn: nn.Dropout1d(p)) if dims == 1 else (lambda nn: nn.Dropout2d(p))
    outs = {}
    for lib in (ng, torch):
        t = lib.tensor(x, requires_grad=True)
        out = make(lib.nn).train()(t)
        out.sum().backward()
        outs[lib.__name__] = (out.detach().numpy(), t.grad.numpy(), out.grad_fn.name())
    (a, ga, name_a), (b, gb, name_b) = outs["nbgrad"], outs["torch"]
    assert name_a == name_b
    for out, grad in ((a, ga), (b, gb)):
        kept, flat = _channel_kept(out, x)
        scale = flat / x.reshape(flat.shape)
        # a kept channel is scaled by 1 / (1 - p) everywhere, its gradient too
        np.testing.assert_allclose(scale[kept], 1 / (1 - p))
        np.testing.assert_allclose(grad.reshape(flat.shape)[kept], 1 / (1 - p))
        assert np.all(grad.reshape(flat.shape)[~kept] == 0)
        assert abs((~kept).mean() - p) < 0.03
    # unbatched Dropout1d: (C, L)
    if dims == 1:
        out = ng.nn.Dropout1d(p)(ng.tensor(x[0]))
        assert tuple(out.shape) == x[0].shape


def _affine_of(out, x):
    """PyTorch's alpha dropout as ``a * x + b_kept`` where kept and a constant where dropped:
    (a, b_kept, dropped value, dropped fraction)."""
    values, counts = np.unique(out, return_counts=True)
    dropped_value = values[np.argmax(counts)]
    dropped = out == dropped_value
    a, b = np.polyfit(x[~dropped], out[~dropped], 1)
    return a, b, dropped_value, dropped.mean(), dropped


@pytest.mark.parametrize("p", [0.2, 0.5])
@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout_matches_pytorch_affine_map(feature, p):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((400, 20, 4))
    make = (lambda nn: nn.FeatureAlphaDropout(p)) if feature else (lambda nn: nn.AlphaDropout(p))
    ours = make(ng.nn).train()(ng.tensor(x)).numpy()
    theirs = make(torch.nn).train()(torch.tensor(x)).numpy()
    a1, b1, d1, f1, dropped = _affine_of(ours, x)
    a2, b2, d2, f2, _ = _affine_of(theirs, x)
    np.testing.assert_allclose([a1, b1, d1], [a2, b2, d2], rtol=1e-9, atol=1e-9)
    assert abs(f1 - p) < 0.03 and abs(f2 - p) < 0.03
    if feature:  # whole channels dropped
        assert np.all(dropped == dropped[:, :, :1])
    # the defining property: a standard normal input keeps mean 0 and variance 1
    assert abs(ours.mean()) < 0.03 and abs(ours.std() - 1) < 0.03


def test_alpha_dropout_functional_defaults_to_eval_and_p_one():
    x = ng.randn(3, 4)
    assert ng.nn.functional.alpha_dropout(x, 0.5) is x
    for lib in (ng, torch):
        out = lib.nn.functional.alpha_dropout(lib.ones(2, 3), 1.0, training=True)
        assert np.all(out.numpy() == 0)


def test_dropout2d_on_3d_input_warns_as_pytorch():
    for lib in (ng, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.nn.functional.dropout2d(lib.ones(2, 3, 4), 0.5)
        assert any("Received a 3D input to dropout2d" in str(w.message) for w in caught)


def test_dropout1d_rejects_4d_input():
    for lib in (ng, torch):
        with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
            lib.nn.functional.dropout1d(lib.ones(1, 2, 3, 4))


F = ng.nn.functional
GRADCHECKS = {
    "nearest": (lambda x: F.interpolate(x, scale_factor=1.5), (1, 2, 3, 2)),
    "bilinear": (lambda x: F.interpolate(x, size=(4, 5), mode="bilinear"), (1, 2, 3, 2)),
    "bilinear-corners": (
        lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
        (1, 1, 2, 3),
    ),
    "linear": (lambda x: F.interpolate(x, size=5, mode="linear"), (2, 1, 3)),
    "pixel_shuffle": (lambda x: F.pixel_shuffle(x, 2), (1, 4, 2, 3)),
    "pixel_unshuffle": (lambda x: F.pixel_unshuffle(x, 2), (1, 1, 4, 2)),
    "unflatten": (lambda x: ng.nn.Unflatten(1, (2, 2))(x), (3, 4)),
    "nearest-3d": (lambda x: F.interpolate(x, size=(3, 2, 3)), (1, 1, 2, 3, 2)),
    "nearest-exact": (lambda x: F.interpolate(x, size=5, mode="nearest-exact"), (2, 1, 3)),
    "bicubic": (lambda x: F.interpolate(x, size=(4, 3), mode="bicubic"), (1, 1, 3, 2)),
    "trilinear": (
        lambda x: F.interpolate(x, scale_factor=1.5, mode="trilinear", align_corners=True),
        (1, 1, 2, 2, 3),
    ),
    "area": (lambda x: F.interpolate(x, size=(2, 1), mode="area"), (1, 2, 3, 2)),
}


@pytest.mark.parametrize("name", GRADCHECKS)
def test_gradcheck_and_gradgradcheck(name):
    fn, shape = GRADCHECKS[name]
    x = ng.tensor(np.random.default_rng(0).standard_normal(shape), requires_grad=True)
    assert ng.autograd.gradcheck(fn, [x])
    assert ng.autograd.gradgradcheck(fn, [x])
