"""``nn.DataParallel`` against PyTorch's. Without a GPU both are a plain wrapper: the module's
outputs, gradients, state_dict keys (``module.``...) and repr. With one GPU: the module and the
inputs moved there (See NOTE [DataParallel on one device])."""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng
from nbgrad import backend

torch = pytest.importorskip("torch")


def model(L):
    net = L.nn.Sequential(L.nn.Linear(3, 4), L.nn.Tanh(), L.nn.Linear(4, 2))
    with L.no_grad():
        for i, p in enumerate(net.parameters()):
            p.copy_(L.tensor(np.linspace(-1, 1, p.numel()).reshape(tuple(p.shape)) * (i + 1)))
    return net


def run(L):
    dp = L.nn.DataParallel(model(L))
    x = L.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 5)
    out = dp(x)
    out.pow(2).sum().backward()
    return {
        "out": np.array(out.tolist()),
        "grads": [np.array(p.grad.tolist()) for p in dp.parameters()],
        "keys": list(dp.state_dict()),
        "device_ids": dp.device_ids,
        "repr": repr(dp),
        "is module": isinstance(dp, L.nn.Module),
    }


@pytest.mark.skipif(torch.cuda.is_available() or backend.cuda_is_available(), reason="no GPU")
def test_without_a_gpu_it_wraps_the_module_as_torch():
    ours, theirs = run(ng), run(torch)
    np.testing.assert_allclose(ours.pop("out"), theirs.pop("out"), rtol=1e-6)
    for g, h in zip(ours.pop("grads"), theirs.pop("grads"), strict=True):
        np.testing.assert_allclose(g, h, rtol=1e-5, atol=1e-6)
    assert ours == theirs


def test_kwargs_and_several_inputs_reach_the_module():
    class Two(ng.nn.Module):
        def forward(self, a, b, *, scale):
            return (a + b) * scale

    dp = ng.nn.DataParallel(Two())
    assert dp(ng.ones(2), ng.ones(2), scale=3.0).tolist() == [6.0, 6.0]


@pytest.mark.skipif(not backend.cuda_is_available(), reason="needs a GPU")
def test_on_one_gpu_the_module_and_inputs_move_there():
    dp = ng.nn.DataParallel(model(ng), device_ids=[0])
    assert dp.device_ids == [0] and all(p.device.type == "cuda" for p in dp.parameters())
    out = dp(ng.ones(2, 3))  # a CPU input, moved to cuda:0
    assert str(out.device) == "cuda:0"
    out.sum().backward()
    assert all(p.grad is not None for p in dp.parameters())
    dp.module.cpu()
    with pytest.raises(RuntimeError, match="module must have its parameters and buffers"):
        dp(ng.ones(2, 3))
