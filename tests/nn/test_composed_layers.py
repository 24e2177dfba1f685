"""The layers ``Softmax2d``, ``RReLU``, ``ChannelShuffle``, ``Bilinear``, ``LPPool1d/2d``,
``MaxUnpool1d/2d``, ``MultiLabelMarginLoss``, ``TripletMarginWithDistanceLoss`` and
``nn.Buffer`` against PyTorch: signatures, reprs, parameters and state_dict keys, init
statistics, outputs and gradients."""

from __future__ import annotations

import copy
import inspect
import math

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

TOL = dict(rtol=1e-6, atol=1e-6)


def _rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# (class name, constructor args, constructor kwargs, input arrays)
X4 = _rand((2, 6, 4, 3))
X3 = _rand((2, 3, 8))
CASES = [
    ("Softmax2d", (), {}, [X4]),
    ("Softmax2d", (), {}, [X4[0]]),
    ("RReLU", (), {}, [X4]),
    ("RReLU", (0.2, 0.4), {"inplace": True}, [X4]),
    ("ChannelShuffle", (3,), {}, [X4]),
    ("LPPool2d", (2, 2), {}, [np.abs(X4) + 0.1]),
    ("LPPool2d", (1.5, (2, 3)), {"stride": 1, "ceil_mode": True}, [np.abs(X4) + 0.1]),
    ("LPPool1d", (3, 3), {"stride": 2}, [np.abs(X3) + 0.1]),
    (
        "MultiLabelMarginLoss",
        (),
        {},
        [_rand((3, 4)), np.array([[1, 2, -1, 0], [3, -1, 1, 1], [0, 1, 2, 3]])],
    ),
    (
        "MultiLabelMarginLoss",
        (),
        {"reduction": "none"},
        [_rand((2, 3)), np.array([[2, -1, 0], [0, 1, -1]])],
    ),
    ("TripletMarginWithDistanceLoss", (), {}, [_rand((4, 5), s) for s in range(3)]),
    (
        "TripletMarginWithDistanceLoss",
        (),
        {"margin": 0.5, "swap": True, "reduction": "sum"},
        [_rand((4, 5), s) for s in range(3)],
    ),
]
IDS = [f"{c[0]}-{c[1]}-{c[2]}" for c in CASES]


@pytest.mark.parametrize("name,args,kw,arrays", CASES, ids=IDS)
def test_layer_matches_pytorch(name, args, kw, arrays):
    ours = getattr(ng.nn, name)(*args, **kw).eval()
    theirs = getattr(torch.nn, name)(*args, **kw).eval()
    assert repr(ours) == repr(theirs)
    xa = [ng.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    xb = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    # an in-place layer writes into a non-leaf
    ia = [x * 1 if x.requires_grad else x for x in xa]
    ib = [x * 1 if x.requires_grad else x for x in xb]
    out_a, out_b = ours(*ia), theirs(*ib)
    np.testing.assert_allclose(out_a.detach().numpy(), out_b.detach().numpy(), **TOL)
    g = _rand(tuple(out_b.shape), 7)
    ga = ng.autograd.grad(out_a, [x for x in xa if x.requires_grad], ng.tensor(g))
    gb = torch.autograd.grad(out_b, [x for x in xb if x.requires_grad], torch.tensor(g))
    for a, b in zip(ga, gb):
        np.testing.assert_allclose(a.numpy(), b.numpy(), **TOL)


SIGNATURES = """Softmax2d RReLU ChannelShuffle Bilinear LPPool1d LPPool2d MaxUnpool1d MaxUnpool2d
    MultiLabelMarginLoss TripletMarginWithDistanceLoss""".split()


@pytest.mark.parametrize("name", SIGNATURES)
def test_constructor_signatures_match_pytorch(name):
    ours = inspect.signature(getattr(ng.nn, name)).parameters
    theirs = inspect.signature(getattr(torch.nn, name)).parameters
    assert list(ours) == list(theirs)
    for k in ours:
        assert ours[k].kind == theirs[k].kind and ours[k].default == theirs[k].default, k


def test_softmax2d_rejects_other_ranks():
    with pytest.raises(ValueError, match="expected input to be 3D or 4D, got 2D"):
        ng.nn.Softmax2d()(ng.zeros(2, 3))


def test_rrelu_layer_training_draws_slopes():
    ng.manual_seed(0)
    layer = ng.nn.RReLU(0.1, 0.3)
    x = -np.abs(_rand((100, 100))) - 0.1
    y = layer(ng.tensor(x)).numpy()
    slopes = y / x
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and abs(slopes.mean() - 0.2) < 0.003
    assert len(np.unique(slopes)) > 1000  # one draw per element
    np.testing.assert_allclose(layer.eval()(ng.tensor(x)).numpy(), 0.2 * x)


@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_layer_matches_pytorch(bias):
    ours = ng.nn.Bilinear(3, 4, 5, bias=bias, dtype=ng.float64)
    theirs = torch.nn.Bilinear(3, 4, 5, bias=bias, dtype=torch.float64)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for k, v in theirs.state_dict().items():
        assert tuple(ours.state_dict()[k].shape) == tuple(v.shape)
    ours.load_state_dict({k: ng.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x1, x2 = _rand((6, 3), 1), _rand((6, 4), 2)
    out_a = ours(ng.tensor(x1), ng.tensor(x2))
    out_b = theirs(torch.tensor(x1), torch.tensor(x2))
    np.testing.assert_allclose(out_a.detach().numpy(), out_b.detach().numpy(), **TOL)
    out_a.sum().backward()
    out_b.sum().backward()
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), **TOL)


def test_bilinear_init_bounds():
    ng.manual_seed(0)
    layer = ng.nn.Bilinear(16, 9, 40)
    bound = 1 / math.sqrt(16)
    w, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01
    with pytest.raises(ValueError, match="in1_features must be > 0"):
        ng.nn.Bilinear(0, 2, 3)


@pytest.mark.parametrize("dims", [1, 2])
def test_max_unpool_layers_invert_max_pool(dims):
    pool_a = getattr(ng.nn, f"MaxPool{dims}d")(2, stride=2, return_indices=True)
    unpool_a = getattr(ng.nn, f"MaxUnpool{dims}d")(2, stride=2)
    unpool_b = getattr(torch.nn, f"MaxUnpool{dims}d")(2, stride=2)
    assert repr(unpool_a) == repr(unpool_b)
    x = _rand((2, 3) + (5,) * dims)
    values, indices = pool_a(ng.tensor(x))
    va = ng.tensor(values.numpy(), requires_grad=True)
    vb = torch.tensor(values.numpy(), requires_grad=True)
    size = list(x.shape)
    out_a = unpool_a(va, indices, output_size=size)
    out_b = unpool_b(vb, torch.tensor(indices.numpy()), output_size=size)
    np.testing.assert_allclose(out_a.detach().numpy(), out_b.detach().numpy(), **TOL)
    g = _rand(tuple(out_b.shape), 3)
    (ga,) = ng.autograd.grad(out_a, va, ng.tensor(g))
    (gb,) = torch.autograd.grad(out_b, vb, torch.tensor(g))
    np.testing.assert_allclose(ga.numpy(), gb.numpy(), **TOL)


def test_triplet_margin_with_distance_loss_layer():
    layer = ng.nn.TripletMarginWithDistanceLoss()
    assert isinstance(layer.distance_function, ng.nn.PairwiseDistance)
    assert [n for n, _ in layer.named_modules()] == [
        n for n, _ in torch.nn.TripletMarginWithDistanceLoss().named_modules()
    ]
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        ng.nn.TripletMarginWithDistanceLoss(margin=0)


# ---- nn.Buffer --------------------------------------------------------------------------------
def _module(lib):
    m = lib.nn.Module()
    m.kept = lib.nn.Buffer(lib.zeros(2))
    m.scratch = lib.nn.Buffer(lib.ones(3), persistent=False)
    m.plain = lib.zeros(1)  # a plain tensor: not a buffer
    return m


def test_buffer_registers_on_assignment():
    ours, theirs = _module(ng), _module(torch)
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["kept"]
    assert isinstance(ours.kept, ng.nn.Buffer) and isinstance(ours.kept, ng.Tensor)
    assert not ours.kept.requires_grad
    assert type(ours.kept * 2) is ng.Tensor
    # a deep copy keeps which buffers persist
    assert list(copy.deepcopy(ours).state_dict()) == ["kept"]
    # reassigning a registered buffer with a plain tensor keeps it a buffer
    ours.kept = ng.ones(2)
    assert "kept" in dict(ours.named_buffers())


def test_buffer_shares_memory_and_keeps_requires_grad():
    x = ng.zeros(3)
    b = ng.nn.Buffer(x)
    x.add_(2)
    # 0 + 2, exact, through shared memory
    np.testing.assert_array_equal(b.numpy(), [2, 2, 2])
    assert b.persistent
    assert ng.nn.Buffer(ng.ones(2, requires_grad=True)).requires_grad
    assert tuple(ng.nn.Buffer().shape) == tuple(torch.nn.Buffer().shape) == (0,)
    assert list(inspect.signature(ng.nn.Buffer).parameters) == ["data", "persistent"]


# ---- 3-d padding and dropout ------------------------------------------------------------------
PAD3D = [
    ("ZeroPad3d", (1,)),
    ("ConstantPad3d", ((1, 2, 0, 1, 2, 1), -0.5)),
    ("ReflectionPad3d", ((1, 2, 2, 1, 1, 0),)),
    ("ReplicationPad3d", (2,)),
    ("CircularPad3d", ((1, 0, 2, 1, 1, 2),)),
]


@pytest.mark.parametrize("name,args", PAD3D, ids=[p[0] for p in PAD3D])
@pytest.mark.parametrize("batched", [True, False])
def test_padding_3d_matches_pytorch(name, args, batched):
    ours, theirs = getattr(ng.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    x = _rand((2, 3, 3, 4, 5) if batched else (3, 3, 4, 5))
    a, b = ng.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out_a, out_b = ours(a), theirs(b)
    np.testing.assert_allclose(out_a.detach().numpy(), out_b.detach().numpy(), **TOL)
    g = _rand(tuple(out_b.shape), 1)
    (ga,) = ng.autograd.grad(out_a, a, ng.tensor(g))
    (gb,) = torch.autograd.grad(out_b, b, torch.tensor(g))
    np.testing.assert_allclose(ga.numpy(), gb.numpy(), **TOL)


@pytest.mark.parametrize("shape", [(8, 40, 2, 3, 2), (40, 2, 3, 2)], ids=str)
def test_dropout3d_zeroes_whole_channels(shape):
    ng.manual_seed(0)
    layer = ng.nn.Dropout3d(p=0.3)
    assert repr(layer) == repr(torch.nn.Dropout3d(p=0.3))
    x = np.abs(_rand(shape)) + 1.0
    a = ng.tensor(x, requires_grad=True)
    out = layer(a)
    y = out.detach().numpy().reshape(-1, 12) / x.reshape(-1, 12)
    # each channel all kept (scaled by 1 / (1 - p)) or all dropped
    kept = np.isclose(y, 1 / 0.7).all(1)
    dropped = (y == 0).all(1)
    assert (kept | dropped).all()
    assert 0.15 < dropped.mean() < 0.45
    (g,) = ng.autograd.grad(out.sum(), a)
    np.testing.assert_allclose(g.numpy().reshape(-1, 12), y)
    # eval mode gives the input's values back: no arithmetic
    np.testing.assert_array_equal(layer.eval()(a).detach().numpy(), x)
    # in place, unbatched: the input itself, changed
    b = ng.tensor(x.copy())
    assert ng.nn.functional.dropout3d(b, 0.5, inplace=True) is b
    with pytest.warns(UserWarning, match="Received a 3-D input to dropout3d"):
        ng.nn.functional.dropout3d(ng.ones(2, 3, 4))
