"""The layers, activations and losses added for real models run on the strict test device (NOTE
[Strict test device] in nbgrad/_testing/strict_device.py: its arrays refuse plain NumPy
operands, as CuPy's do, so any host/device mix fails here) and give the CPU's outputs and
parameter gradients."""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng
from nbgrad import backend, nn

DEV = "strictnn"
F = nn.functional


@pytest.fixture(scope="module", autouse=True)
def device():
    backend.register_device_type(DEV, count=1, strict=True)
    yield
    backend.unregister_device_type(DEV)


def _self_attention():
    mha = nn.MultiheadAttention(8, 2, batch_first=True)

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = mha

        def forward(self, x):
            return self.mha(x, x, x, need_weights=False)[0]

    return SelfAttention()


def _pool_unpool():
    pool, unpool = nn.MaxPool3d(2, return_indices=True), nn.MaxUnpool3d(2)

    class PoolUnpool(nn.Module):
        def forward(self, x):
            return unpool(*pool(x))

    return PoolUnpool()


def _bag(mode, **kw):
    """An EmbeddingBag whose input is the bags' weights (sum) or a factor on its output."""
    bag = nn.EmbeddingBag(6, 3, mode=mode, **kw)

    class Bag(nn.Module):
        def __init__(self):
            super().__init__()
            self.bag = bag

        def forward(self, x):
            indices, offsets = ng.tensor([1, 2, 4, 1, 0, 2]), ng.tensor([0, 3, 3])
            indices, offsets = indices.to(x.device), offsets.to(x.device)
            if mode == "sum":
                return self.bag(indices, offsets, per_sample_weights=x)
            return self.bag(indices, offsets) * x

    return Bag()


def _adaptive_softmax():
    asm = nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3, 6], div_value=2.0, head_bias=True)

    class Loss(nn.Module):
        def __init__(self):
            super().__init__()
            self.asm = asm

        def forward(self, x):
            return self.asm(x, ng.tensor([0, 4, 9, 2, 7]).to(x.device)).output

    return Loss()


def _loss(fn, *extra):
    class Loss(nn.Module):
        def forward(self, x):
            return fn(x, *(e.to(x.device) for e in extra))

    return Loss


LAYERS = {
    "LSTM": (lambda: nn.LSTM(3, 4, batch_first=True), (2, 5, 3)),
    "GRU": (lambda: nn.GRU(3, 4), (5, 2, 3)),
    "RNN bidirectional": (lambda: nn.RNN(3, 4, bidirectional=True), (5, 2, 3)),
    "LSTMCell": (lambda: nn.LSTMCell(3, 4), (2, 3)),
    "self-attention": (_self_attention, (2, 3, 8)),
    "TransformerEncoderLayer": (
        lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
        (2, 3, 8),
    ),
    "TransformerEncoder, norm first": (
        lambda: nn.TransformerEncoder(
            nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, norm_first=True), 2
        ),
        (3, 2, 8),
    ),
    "Conv1d": (lambda: nn.Conv1d(2, 3, 3, padding=1, padding_mode="reflect"), (2, 2, 7)),
    "ConvTranspose1d": (lambda: nn.ConvTranspose1d(2, 3, 3, stride=2), (2, 2, 5)),
    "ConvTranspose2d": (lambda: nn.ConvTranspose2d(2, 3, 3, stride=2), (1, 2, 4, 4)),
    "MaxPool1d": (lambda: nn.MaxPool1d(2), (2, 3, 8)),
    "AvgPool1d": (lambda: nn.AvgPool1d(3, stride=2, padding=1), (2, 3, 8)),
    "AdaptiveAvgPool1d": (lambda: nn.AdaptiveAvgPool1d(3), (2, 3, 8)),
    "AdaptiveMaxPool2d": (lambda: nn.AdaptiveMaxPool2d(2), (1, 2, 5, 5)),
    "LPPool1d": (lambda: nn.LPPool1d(2, 2), (2, 3, 8)),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), (2, 4, 3)),
    "InstanceNorm2d": (lambda: nn.InstanceNorm2d(3, affine=True), (2, 3, 4, 4)),
    "RMSNorm": (lambda: nn.RMSNorm(4), (2, 4)),
    "LocalResponseNorm": (lambda: nn.LocalResponseNorm(2), (1, 4, 3, 3)),
    "Upsample bilinear": (lambda: nn.Upsample(scale_factor=2, mode="bilinear"), (1, 2, 3, 3)),
    "PixelShuffle": (lambda: nn.PixelShuffle(2), (1, 4, 2, 2)),
    "Fold": (lambda: nn.Fold((4, 4), 2), (1, 8, 9)),
    "Unfold": (lambda: nn.Unfold(2), (1, 2, 4, 4)),
    "ReflectionPad2d": (lambda: nn.ReflectionPad2d(1), (1, 2, 3, 3)),
    "CircularPad1d": (lambda: nn.CircularPad1d(2), (1, 2, 4)),
    "ChannelShuffle": (lambda: nn.ChannelShuffle(2), (1, 4, 2, 2)),
    "PReLU": (lambda: nn.PReLU(3), (2, 3, 4)),
    "FractionalMaxPool2d": (
        lambda: nn.FractionalMaxPool2d(2, (3, 2), _random_samples=ng.rand(2, 3, 2)),
        (2, 3, 5, 4),
    ),
    "FractionalMaxPool3d": (
        lambda: nn.FractionalMaxPool3d(2, output_ratio=0.6, _random_samples=ng.rand(1, 2, 3)),
        (1, 2, 4, 5, 4),
    ),
    "AdaptiveLogSoftmaxWithLoss": (_adaptive_softmax, (5, 4)),
    "EmbeddingBag sum": (lambda: _bag("sum", padding_idx=4), (6,)),
    "EmbeddingBag max": (lambda: _bag("max"), (3, 3)),
    "EmbeddingBag mean": (lambda: _bag("mean", padding_idx=2), (3, 3)),
    "grid_sample": (
        lambda: _loss(
            lambda x, g: F.grid_sample(x, g, padding_mode="border", align_corners=False),
            ng.rand(1, 3, 3, 2) * 2.4 - 1.2,
        )(),
        (1, 2, 4, 4),
    ),
    "affine_grid": (
        lambda: _loss(lambda t: F.affine_grid(t, (1, 1, 3, 4), align_corners=False))(),
        (1, 2, 3),
    ),
    "Conv3d": (lambda: nn.Conv3d(2, 3, 2, padding=1, groups=1), (1, 2, 3, 4, 3)),
    "ConvTranspose3d": (lambda: nn.ConvTranspose3d(2, 2, 2, stride=2, groups=2), (1, 2, 2, 3, 2)),
    "MaxPool3d": (lambda: nn.MaxPool3d(2, padding=1), (1, 2, 4, 3, 4)),
    "AvgPool3d": (lambda: nn.AvgPool3d(2, 1, 1, count_include_pad=False), (1, 2, 3, 3, 4)),
    "AdaptiveAvgPool3d": (lambda: nn.AdaptiveAvgPool3d((2, 3, 2)), (1, 2, 5, 4, 3)),
    "AdaptiveMaxPool3d": (lambda: nn.AdaptiveMaxPool3d(2), (1, 2, 3, 5, 4)),
    "LPPool3d": (lambda: nn.LPPool3d(2, 2), (1, 2, 4, 4, 2)),
    "MaxUnpool3d": (lambda: _pool_unpool(), (1, 2, 4, 2, 4)),
    "BatchNorm3d": (lambda: nn.BatchNorm3d(2), (2, 2, 3, 2, 2)),
    "InstanceNorm3d": (lambda: nn.InstanceNorm3d(2, affine=True), (2, 2, 3, 2, 2)),
    "GLU": (lambda: nn.GLU(), (2, 4)),
    "Mish": (lambda: nn.Mish(), (2, 4)),
    "SELU": (lambda: nn.SELU(), (2, 4)),
    "Hardswish": (lambda: nn.Hardswish(), (2, 4)),
    "Softmin": (lambda: nn.Softmin(1), (2, 4)),
    "KLDivLoss": (
        lambda: _loss(lambda x, t: F.kl_div(x, t, reduction="batchmean"), ng.rand(2, 4))(),
        (2, 4),
    ),
    "MultiMarginLoss": (lambda: _loss(F.multi_margin_loss, ng.tensor([1, 3]))(), (2, 4)),
    "GaussianNLLLoss": (
        lambda: _loss(F.gaussian_nll_loss, ng.randn(2, 4), ng.ones(2, 4))(),
        (2, 4),
    ),
    "TripletMarginLoss": (
        lambda: _loss(F.triplet_margin_loss, ng.randn(2, 4), ng.randn(2, 4))(),
        (2, 4),
    ),
    "CosineSimilarity": (lambda: _loss(F.cosine_similarity, ng.randn(2, 4))(), (2, 4)),
}


def _run(module, x, device):
    module = module.to(device)
    xd = x.detach().to(device).requires_grad_()
    out = module(xd)
    out = out[0] if isinstance(out, tuple) else out
    out.pow(2).sum().backward()
    grads = [p.grad.cpu().numpy().copy() for p in module.parameters()]
    for p in module.parameters():
        p.grad = None
    return out.detach().cpu().numpy(), xd.grad.cpu().numpy(), grads


@pytest.mark.parametrize("name", LAYERS)
def test_a_layer_on_the_strict_device_gives_the_cpu_results(name):
    ng.manual_seed(0)
    make, shape = LAYERS[name]
    module = make()
    x = ng.randn(*shape)
    out, gx, grads = _run(module, x, "cpu")
    out_d, gx_d, grads_d = _run(module, x, f"{DEV}:0")
    np.testing.assert_allclose(out_d, out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gx_d, gx, rtol=1e-5, atol=1e-6)
    assert len(grads_d) == len(grads)
    for a, b in zip(grads_d, grads):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
