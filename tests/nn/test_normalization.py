"""GroupNorm, RMSNorm, LocalResponseNorm, InstanceNorm1d/2d and EmbeddingBag against PyTorch:
outputs, grad_fn names, input and parameter gradients (float64, 1e-6) with torch's weights
loaded, state_dict keys, reprs, init and running statistics; gradcheck / gradgradcheck."""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng
from tests.nn import test_layer_init
from tests.nn.test_layer_parity import Const, check_parity

torch = pytest.importorskip("torch")

INDICES = Const([1, 2, 4, 5, 4, 3, 2, 9, 0])
OFFSETS = Const([0, 2, 2, 5])  # an empty bag in the middle
LAST_OFFSETS = Const([0, 3, 3, 7, 9])  # with include_last_offset: the last one ends the last bag

# name -> (constructor for either library, input specs, nbgrad's grad_fn where it differs)
LAYERS = {
    "groupnorm": (lambda nn: nn.GroupNorm(2, 4), [(3, 4, 5)], None),
    "groupnorm-4d": (lambda nn: nn.GroupNorm(3, 6, eps=1e-3), [(2, 6, 3, 4)], None),
    "groupnorm-2d-input": (lambda nn: nn.GroupNorm(2, 6), [(3, 6)], None),
    "groupnorm-no-affine": (lambda nn: nn.GroupNorm(4, 4, affine=False), [(2, 4, 3, 3)], None),
    "groupnorm-no-bias": (lambda nn: nn.GroupNorm(1, 3, bias=False), [(2, 3, 4)], None),
    "rmsnorm": (lambda nn: nn.RMSNorm(4), [(3, 4)], None),
    "rmsnorm-2d-eps": (lambda nn: nn.RMSNorm([3, 4], eps=1e-3), [(2, 3, 4)], None),
    "rmsnorm-no-affine": (lambda nn: nn.RMSNorm(5, elementwise_affine=False), [(2, 3, 5)], None),
    "lrn-3d": (lambda nn: nn.LocalResponseNorm(3, alpha=0.5), [(2, 5, 4)], None),
    "lrn-4d": (
        lambda nn: nn.LocalResponseNorm(2, alpha=0.3, beta=0.5, k=2.0),
        [(2, 5, 3, 3)],
        None,
    ),
    "lrn-5d": (lambda nn: nn.LocalResponseNorm(4, alpha=1.0), [(1, 6, 2, 3, 2)], None),
    "instancenorm1d": (lambda nn: nn.InstanceNorm1d(3), [(2, 3, 5)], None),
    "instancenorm1d-affine": (lambda nn: nn.InstanceNorm1d(3, affine=True), [(2, 3, 5)], None),
    "instancenorm2d-affine-unbatched": (
        lambda nn: nn.InstanceNorm2d(2, affine=True),
        [(2, 3, 4)],
        None,
    ),
    "embeddingbag-mean": (lambda nn: nn.EmbeddingBag(10, 3), [INDICES, OFFSETS], None),
    "embeddingbag-sum-2d": (
        lambda nn: nn.EmbeddingBag(10, 3, mode="sum"),
        [Const([[1, 2, 2], [0, 9, 4]])],
        None,
    ),
    "embeddingbag-max": (
        lambda nn: nn.EmbeddingBag(10, 4, mode="max"),
        [INDICES, OFFSETS],
        None,
    ),
    "embeddingbag-max-2d": (
        lambda nn: nn.EmbeddingBag(10, 4, mode="max"),
        [Const([[1, 2, 2], [0, 9, 4]])],
        None,
    ),
    "embeddingbag-padding-mean": (
        lambda nn: nn.EmbeddingBag(10, 3, padding_idx=4),
        [INDICES, OFFSETS],
        None,
    ),
    "embeddingbag-padding-max": (
        lambda nn: nn.EmbeddingBag(10, 3, mode="max", padding_idx=-8),
        [INDICES, OFFSETS],
        None,
    ),
    "embeddingbag-last-offset-sum": (
        lambda nn: nn.EmbeddingBag(10, 3, mode="sum", include_last_offset=True),
        [INDICES, LAST_OFFSETS],
        None,
    ),
    "embeddingbag-per-sample-weights": (
        lambda nn: nn.EmbeddingBag(10, 3, mode="sum", padding_idx=2),
        [INDICES, OFFSETS, (9,)],
        None,
    ),
}


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("name", LAYERS)
def test_layer_parity(name, train):
    make, specs, ng_name = LAYERS[name]
    ng_mod, th_mod = check_parity(lambda lib: make(lib.nn), specs, train=train, name=ng_name)
    assert list(ng_mod.state_dict()) == list(th_mod.state_dict())
    assert repr(ng_mod) == repr(th_mod)


@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("dims", [1, 2])
def test_instance_norm_running_stats_match_pytorch(dims, affine):
    """With track_running_stats: batch statistics and updated running ones in training, the
    running ones in eval."""
    shape = (3, 4, 5) if dims == 1 else (3, 4, 3, 5)

    def make(lib):
        cls = lib.nn.InstanceNorm1d if dims == 1 else lib.nn.InstanceNorm2d
        return cls(4, momentum=0.3, affine=affine, track_running_stats=True)

    for train in (True, False):
        ng_mod, th_mod = check_parity(make, [shape], train=train)
        for key in ("running_mean", "running_var", "num_batches_tracked"):
            a, b = ng_mod.state_dict()[key].numpy(), th_mod.state_dict()[key].numpy()
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=key)


def test_embedding_bag_max_norm_renorms_like_pytorch():
    ng_mod, th_mod = check_parity(
        lambda lib: lib.nn.EmbeddingBag(10, 4, max_norm=1.0, mode="sum"),
        [INDICES, OFFSETS],
    )
    np.testing.assert_allclose(ng_mod.weight.detach().numpy(), th_mod.weight.detach().numpy())


def test_embedding_bag_from_pretrained_and_errors():
    w = np.random.default_rng(0).standard_normal((5, 2))
    ours = ng.nn.EmbeddingBag.from_pretrained(ng.tensor(w), mode="sum")
    theirs = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(w), mode="sum")
    assert repr(ours) == repr(theirs)
    assert ours.weight.requires_grad == theirs.weight.requires_grad
    idx = [[0, 1], [4, 4]]
    np.testing.assert_allclose(
        ours(ng.tensor(idx)).detach().numpy(), theirs(torch.tensor(idx)).detach().numpy()
    )
    for lib in (ng, torch):
        bag = lib.nn.EmbeddingBag(5, 2, mode="mean")
        with pytest.raises(NotImplementedError, match="per_sample_weights"):
            bag(lib.tensor([0, 1]), lib.tensor([0]), lib.tensor([1.0, 2.0]))
        with pytest.raises(ValueError, match="offsets has to be None"):
            bag(lib.tensor([[0, 1]]), lib.tensor([0]))
        with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
            bag(lib.tensor([0, 1]))


def test_group_norm_checks_like_pytorch():
    for lib in (ng, torch):
        with pytest.raises(ValueError, match="must be divisible by num_groups"):
            lib.nn.GroupNorm(3, 4)
        lib.nn.functional.group_norm(lib.zeros(2, 4), 4)  # one value per group: allowed
        with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
            lib.nn.functional.group_norm(lib.zeros(1, 4), 4)


def test_rms_norm_default_eps_is_the_dtype_epsilon():
    x = np.full((2, 3), 1e-9)
    for dtype, th_dtype in ((ng.float32, torch.float32), (ng.float64, torch.float64)):
        ours = ng.nn.functional.rms_norm(ng.tensor(x, dtype=dtype), (3,)).numpy()
        theirs = torch.nn.functional.rms_norm(torch.tensor(x, dtype=th_dtype), (3,)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-5)


F = ng.nn.functional
GRADCHECKS = {
    "group_norm": (lambda x, w, b: F.group_norm(x, 2, w, b), [(2, 4, 3), (4,), (4,)], True),
    "rms_norm": (lambda x, w: F.rms_norm(x, (3,), w), [(2, 3), (3,)], True),
    "local_response_norm": (lambda x: F.local_response_norm(x, 3, 0.5), [(1, 4, 2, 2)], True),
    "instance_norm": (
        lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
        [(2, 3, 4), (3,), (3,)],
        False,
    ),
    "embedding_bag-mean": (
        lambda w: F.embedding_bag(ng.tensor([1, 2, 4, 1]), w, ng.tensor([0, 1, 1])),
        [(5, 2)],
        True,
    ),
    "embedding_bag-max": (
        lambda w: F.embedding_bag(ng.tensor([[1, 2], [3, 0]]), w, mode="max"),
        [(5, 3)],
        True,
    ),
    "embedding_bag-psw": (
        lambda w, p: F.embedding_bag(
            ng.tensor([1, 2, 4, 1]), w, ng.tensor([0, 2]), mode="sum", per_sample_weights=p
        ),
        [(5, 2), (4,)],
        True,
    ),
}


@pytest.mark.parametrize("name", GRADCHECKS)
def test_gradcheck(name):
    fn, shapes, gradgrad = GRADCHECKS[name]
    rng = np.random.default_rng(0)
    inputs = [ng.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]
    assert ng.autograd.gradcheck(fn, inputs)
    if gradgrad:
        assert ng.autograd.gradgradcheck(fn, inputs)


INIT = {
    "GroupNorm(2, 4)": (lambda nn: nn.GroupNorm(2, 4), 3),
    "RMSNorm((2, 3))": (lambda nn: nn.RMSNorm((2, 3)), 3),
    "EmbeddingBag(10, 4)": (lambda nn: nn.EmbeddingBag(10, 4), 200),
    "EmbeddingBag(10, 4, padding_idx=3)": (lambda nn: nn.EmbeddingBag(10, 4, padding_idx=3), 200),
}


@pytest.mark.parametrize("layer", sorted(INIT))
def test_init_distribution_matches_pytorch(layer, monkeypatch):
    monkeypatch.setitem(test_layer_init.LAYERS, layer, INIT[layer])
    test_layer_init.test_layer_init_distribution_matches_pytorch(layer)
