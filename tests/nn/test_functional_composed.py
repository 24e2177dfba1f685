"""Functions of ``nbgrad.nn.functional`` composed from table ops (NOTE [Composed gaps]: in-place
activations, ``normalize``, ``one_hot``, ``pdist``, ``gumbel_softmax``, the ``*_with_indices``
poolings, ``channel_shuffle``, ``bilinear``, ``lp_pool*``, ``rrelu``, ``max_unpool*``,
``multilabel_margin_loss``, ``triplet_margin_with_distance_loss``) against PyTorch: values
and gradients in float64, gradcheck, errors; for the random ones, their deterministic forms
and the structure or statistics of their draws."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

TOL = dict(rtol=1e-6, atol=1e-6)
NF, TF = ng.nn.functional, torch.nn.functional


def _rand(shape, seed=0, scale=1.0):
    return np.random.default_rng(seed).standard_normal(shape) * scale


def _pair(x):
    return ng.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a.detach()), b.detach().numpy(), **TOL)


def _check(fn_ng, fn_torch, arrays, seed=1):
    """Outputs equal, and the gradients of every input for a random output gradient."""
    ours = [ng.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    theirs = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    out_a, out_b = fn_ng(*ours), fn_torch(*theirs)
    _close(out_a, out_b)
    g = _rand(tuple(out_b.shape), seed)
    diff_a = [t for t in ours if t.requires_grad]
    diff_b = [t for t in theirs if t.requires_grad]
    ga = ng.autograd.grad(out_a, diff_a, ng.tensor(g), allow_unused=True)
    gb = torch.autograd.grad(out_b, diff_b, torch.tensor(g), allow_unused=True)
    for x, y in zip(ga, gb):
        if y is None:
            assert x is None or not np.asarray(x).any()
        else:
            _close(x, y)
    return out_a, out_b


# ---- in-place activations ---------------------------------------------------------------------
INPLACE = [
    ("relu_", {}),
    ("elu_", {}),
    ("elu_", {"alpha": 0.5}),
    ("celu_", {"alpha": 2.0}),
    ("selu_", {}),
    ("leaky_relu_", {"negative_slope": 0.2}),
    ("hardtanh_", {"min_val": -0.5, "max_val": 0.7}),
    ("threshold_", {"threshold": 0.1, "value": -3.0}),
    ("rrelu_", {"lower": 0.1, "upper": 0.3}),  # evaluation: the mean slope
]


@pytest.mark.parametrize("name,kw", INPLACE, ids=[f"{n}-{kw}" for n, kw in INPLACE])
def test_inplace_forms_match_pytorch(name, kw):
    x = _rand((3, 5), scale=2)
    a, b = _pair(x)
    ya, yb = a * 1, b * 1
    out_a = getattr(NF, name)(ya, **kw)
    out_b = getattr(TF, name)(yb, **kw)
    assert out_a is ya and out_b is yb
    _close(out_a, out_b)
    if name != "rrelu_":  # PyTorch's node: RreluWithNoiseBackward1; here the leaky ReLU's
        assert out_a.grad_fn.name() == out_b.grad_fn.name()
    g = _rand((3, 5), 1)
    _close(
        ng.autograd.grad(out_a, a, ng.tensor(g))[0],
        torch.autograd.grad(out_b, b, torch.tensor(g))[0],
    )


def test_inplace_forms_signatures():
    sigs = {
        "relu_": "(input)",
        "selu_": "(input)",
        "elu_": "(input, alpha=1.0)",
        "celu_": "(input, alpha=1.0)",
        "leaky_relu_": "(input, negative_slope=0.01)",
        "hardtanh_": "(input, min_val=-1.0, max_val=1.0)",
        "threshold_": "(input, threshold, value)",
    }
    for name, sig in sigs.items():
        params = inspect.signature(getattr(NF, name)).parameters.values()
        text = (
            "("
            + ", ".join(p.name + ("" if p.default is p.empty else f"={p.default}") for p in params)
            + ")"
        )
        assert text == sig, name


# ---- rrelu ------------------------------------------------------------------------------------
@pytest.mark.parametrize("lower,upper", [(0.125, 1 / 3), (0.0, 0.5), (0.3, 0.3)])
def test_rrelu_eval_matches_pytorch(lower, upper):
    x = _rand((4, 6), scale=2)
    _check(
        lambda t: NF.rrelu(t, lower, upper, training=False),
        lambda t: TF.rrelu(t, lower, upper, training=False),
        [x],
    )


def test_rrelu_training_slopes_and_gradient():
    ng.manual_seed(0)
    x = _rand((200, 50), scale=2)
    x[0, 0] = 0.0
    a = ng.tensor(x, requires_grad=True)
    out = NF.rrelu(a, 0.1, 0.3, training=True)
    y = out.detach().numpy()
    pos = x > 0
    # positive inputs pass unchanged: no arithmetic
    np.testing.assert_array_equal(y[pos], x[pos])
    slopes = y[~pos & (x != 0)] / x[~pos & (x != 0)]
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 0.005 and abs(slopes.std() - 0.2 / math.sqrt(12)) < 0.005
    (g,) = ng.autograd.grad(out.sum(), a)
    # the gradient is the slope drawn (1 where positive), as PyTorch's noise
    np.testing.assert_allclose(g.numpy()[~pos & (x != 0)], slopes, rtol=1e-12)
    # the gradient 1 passes unchanged where the input is positive
    np.testing.assert_array_equal(g.numpy()[pos], 1.0)
    # in place, training: the same kind of draw, written into the input
    b = ng.tensor(x.copy())
    assert NF.rrelu_(b, 0.1, 0.3, training=True) is b
    assert np.all(b.numpy()[pos] == x[pos]) and np.all(b.numpy()[~pos] >= 0.3 * x[~pos])


# ---- normalize, one_hot, pdist ----------------------------------------------------------------
@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, 0), (3.0, -1), (math.inf, 1), (0.5, 1)])
def test_normalize_matches_pytorch(p, dim):
    x = _rand((4, 5, 3))
    if p >= 1:  # a zero vector: the norm clamped at eps (its gradient is ill-defined for p < 1)
        x[0, :, 0] = 0.0
    _check(lambda t: NF.normalize(t, p, dim), lambda t: TF.normalize(t, p, dim), [x])


def test_normalize_out_and_gradcheck():
    x = _rand((3, 4))
    out = ng.empty(3, 4, dtype=ng.float64)
    assert NF.normalize(ng.tensor(x), out=out) is out
    _close(out, TF.normalize(torch.tensor(x)))
    a = ng.tensor(_rand((2, 3)), requires_grad=True)
    assert ng.autograd.gradcheck(lambda t: NF.normalize(t, 3.0, 0), (a,))
    assert ng.autograd.gradgradcheck(lambda t: NF.normalize(t), (a,))


@pytest.mark.parametrize("num_classes", [-1, 7])
@pytest.mark.parametrize("shape", [(5,), (2, 3), ()], ids=str)
def test_one_hot_matches_pytorch(shape, num_classes):
    idx = np.random.default_rng(0).integers(0, 5, size=shape)
    ours = NF.one_hot(ng.tensor(idx), num_classes)
    theirs = TF.one_hot(torch.tensor(idx), num_classes)
    assert ours.dtype == ng.int64 and tuple(ours.shape) == tuple(theirs.shape)
    # ones and zeros (ints), not computed
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize(
    "idx,num_classes",
    [([1, -1], -1), ([1, 3], 3), ([], -1)],
    ids=["negative", "too-large", "empty"],
)
def test_one_hot_errors_match_pytorch(idx, num_classes):
    with pytest.raises(RuntimeError) as theirs:
        TF.one_hot(torch.tensor(idx, dtype=torch.int64), num_classes)
    with pytest.raises(RuntimeError) as ours:
        NF.one_hot(ng.tensor(np.array(idx, dtype=np.int64)), num_classes)
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(RuntimeError, match="LongTensor"):
        NF.one_hot(ng.tensor([1.0]))


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, math.inf, 0.0])
@pytest.mark.parametrize("n", [1, 2, 5])
def test_pdist_matches_pytorch(n, p):
    x = _rand((n, 4))
    _check(lambda t: NF.pdist(t, p), lambda t: TF.pdist(t, p), [x])


def test_pdist_gradcheck_and_errors():
    a = ng.tensor(_rand((4, 3)), requires_grad=True)
    assert ng.autograd.gradcheck(lambda t: NF.pdist(t), (a,))
    assert ng.autograd.gradcheck(lambda t: NF.pdist(t, 1.5), (a,))
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        NF.pdist(ng.zeros(2, 2, 2))


# ---- gumbel_softmax ---------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [-1, 0])
def test_gumbel_softmax_soft_and_hard(dim):
    ng.manual_seed(0)
    logits = ng.tensor(_rand((6, 4)), requires_grad=True)
    soft = NF.gumbel_softmax(logits, tau=0.5, dim=dim)
    np.testing.assert_allclose(soft.detach().numpy().sum(dim), 1.0, rtol=1e-12)
    assert (soft.detach().numpy() > 0).all()
    hard = NF.gumbel_softmax(logits, tau=0.5, hard=True, dim=dim)
    h = hard.detach().numpy()
    assert set(np.unique(h)) <= {0.0, 1.0}
    # bits: each row is one 1.0 and zeros (as the line above checks), so its sum is exact
    np.testing.assert_array_equal(h.sum(dim), 1.0)
    # straight-through: the gradient is that of the soft sample behind the one-hot
    w = ng.tensor(_rand((6, 4), 3))
    (g,) = ng.autograd.grad((hard * w).sum(), logits)
    assert np.isfinite(g.numpy()).all() and np.abs(g.numpy()).sum() > 0


def test_gumbel_softmax_statistics():
    """The argmax of a hard sample follows ``softmax(logits)``."""
    ng.manual_seed(1)
    logits = np.log(np.array([0.1, 0.2, 0.7]))
    draws = NF.gumbel_softmax(ng.tensor(np.tile(logits, (20000, 1))), hard=True)
    freq = draws.numpy().mean(0)
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.7], atol=0.015)
    with pytest.warns(UserWarning, match="eps"):
        NF.gumbel_softmax(ng.tensor(logits), eps=1e-3)


# ---- pooling with indices, channel shuffle, bilinear ------------------------------------------
def test_with_indices_forms_match_pytorch():
    x = _rand((2, 3, 7, 6))
    for name, args in [
        ("max_pool2d_with_indices", (3, 2, 1)),
        ("adaptive_max_pool2d_with_indices", ((3, 2),)),
    ]:
        # (the indices are ints: compared exactly)
        va, ia = getattr(NF, name)(ng.tensor(x), *args)
        vb, ib = getattr(TF, name)(torch.tensor(x), *args)
        _close(va, vb)
        np.testing.assert_array_equal(ia.numpy(), ib.numpy())
    x1 = _rand((2, 3, 9))
    for name, args in [
        ("max_pool1d_with_indices", (3, 2, 1)),
        ("adaptive_max_pool1d_with_indices", (4,)),
    ]:
        # (the indices are ints: compared exactly)
        va, ia = getattr(NF, name)(ng.tensor(x1), *args)
        vb, ib = getattr(TF, name)(torch.tensor(x1), *args)
        _close(va, vb)
        np.testing.assert_array_equal(ia.numpy(), ib.numpy())


@pytest.mark.parametrize("shape,groups", [((2, 6, 3, 2), 3), ((1, 4, 5), 2), ((2, 6, 2, 2, 2), 2)])
def test_channel_shuffle_matches_pytorch(shape, groups):
    x = _rand(shape)
    _check(lambda t: NF.channel_shuffle(t, groups), lambda t: TF.channel_shuffle(t, groups), [x])


def test_channel_shuffle_errors():
    with pytest.raises(RuntimeError, match="divisible by groups"):
        NF.channel_shuffle(ng.zeros(1, 5, 2), 2)
    with pytest.raises(RuntimeError, match="must be positive"):
        NF.channel_shuffle(ng.zeros(1, 4, 2), 0)


@pytest.mark.parametrize("lead", [(5,), (2, 3), ()], ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_matches_pytorch(lead, bias):
    x1, x2 = _rand((*lead, 3), 0), _rand((*lead, 4), 1)
    w, b = _rand((2, 3, 4), 2), _rand((2,), 3)
    arrays = [x1, x2, w] + ([b] if bias else [])
    _check(NF.bilinear, TF.bilinear, arrays)
    a = [ng.tensor(v[..., :2] if i < 2 else v, requires_grad=True) for i, v in enumerate(arrays)]
    a[2] = ng.tensor(w[:, :2, :2], requires_grad=True)
    assert ng.autograd.gradcheck(NF.bilinear, tuple(a))


# ---- lp pooling, unpooling --------------------------------------------------------------------
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3, 1.5, math.inf])
@pytest.mark.parametrize("stride,ceil_mode", [(None, False), (2, True), (1, False)])
def test_lp_pool_matches_pytorch(norm_type, stride, ceil_mode):
    x = np.abs(_rand((2, 3, 7, 6))) + 0.1  # positive: fractional powers are defined
    _check(
        lambda t: NF.lp_pool2d(t, norm_type, (3, 2), stride, ceil_mode),
        lambda t: TF.lp_pool2d(t, norm_type, (3, 2), stride, ceil_mode),
        [x],
    )
    x1 = np.abs(_rand((2, 3, 8))) + 0.1
    _check(
        lambda t: NF.lp_pool1d(t, norm_type, 3, stride, ceil_mode),
        lambda t: TF.lp_pool1d(t, norm_type, 3, stride, ceil_mode),
        [x1],
    )


def test_lp_pool_signed_input_matches_pytorch():
    x = _rand((1, 2, 4, 4))
    _check(lambda t: NF.lp_pool2d(t, 2, 2), lambda t: TF.lp_pool2d(t, 2, 2), [x])


@pytest.mark.parametrize(
    "kernel,stride,padding,output_size,hw",
    [
        (2, None, 0, None, (6, 4)),
        (3, 2, 1, None, (7, 5)),
        ((2, 3), (2, 1), (1, 0), (7, 5), (7, 5)),
        (2, 2, 0, (2, 3, 7, 5), (7, 5)),
    ],
)
def test_max_unpool2d_matches_pytorch(kernel, stride, padding, output_size, hw):
    x = _rand((2, 3, *hw))
    values, indices = TF.max_pool2d(torch.tensor(x), kernel, stride, padding, return_indices=True)
    v = values.numpy()
    _check(
        lambda t, i: NF.max_unpool2d(t, i, kernel, stride, padding, output_size),
        lambda t, i: TF.max_unpool2d(t, i, kernel, stride, padding, output_size),
        [v, indices.numpy()],
    )
    # unbatched
    _check(
        lambda t, i: NF.max_unpool2d(t, i, kernel, stride, padding, hw),
        lambda t, i: TF.max_unpool2d(t, i, kernel, stride, padding, hw),
        [v[0], indices.numpy()[0]],
    )


@pytest.mark.parametrize("kernel,stride,padding,output_size", [(2, None, 0, None), (3, 2, 1, [9])])
def test_max_unpool1d_matches_pytorch(kernel, stride, padding, output_size):
    x = _rand((2, 3, 9))
    values, indices = TF.max_pool1d(torch.tensor(x), kernel, stride, padding, return_indices=True)
    for v, i in [(values.numpy(), indices.numpy()), (values.numpy()[0], indices.numpy()[0])]:
        _check(
            lambda t, j: NF.max_unpool1d(t, j, kernel, stride, padding, output_size),
            lambda t, j: TF.max_unpool1d(t, j, kernel, stride, padding, output_size),
            [v, i],
        )


def test_max_unpool_errors_and_gradcheck():
    v, i = NF.max_pool2d(ng.tensor(_rand((1, 1, 4, 4))), 2, return_indices=True)
    with pytest.raises(ValueError, match="invalid output_size"):
        NF.max_unpool2d(v, i, 2, output_size=(9, 9))
    with pytest.raises(RuntimeError, match="invalid max index"):
        NF.max_unpool2d(v, i + 100, 2)
    a = ng.tensor(v.numpy(), requires_grad=True)
    assert ng.autograd.gradcheck(lambda t: NF.max_unpool2d(t, i, 2), (a,))


# ---- losses -----------------------------------------------------------------------------------
def _multilabel_target(n, c, seed):
    rng = np.random.default_rng(seed)
    t = np.full((n, c), -1, dtype=np.int64)
    for r in range(n):
        k = rng.integers(0, c + 1)
        t[r, :k] = rng.choice(c, size=k, replace=False)
        if k < c - 1:
            t[r, k + 1 :] = rng.integers(0, c, size=c - k - 1)  # after the -1: ignored
    return t


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("n,c", [(4, 5), (1, 3), (6, 2)])
def test_multilabel_margin_loss_matches_pytorch(n, c, reduction):
    x, t = _rand((n, c), scale=0.7), _multilabel_target(n, c, n + c)
    _check(
        lambda a, b: NF.multilabel_margin_loss(a, b, reduction=reduction),
        lambda a, b: TF.multilabel_margin_loss(a, b, reduction=reduction),
        [x, t],
    )
    _check(
        lambda a, b: NF.multilabel_margin_loss(a, b, reduction=reduction),
        lambda a, b: TF.multilabel_margin_loss(a, b, reduction=reduction),
        [x[0], t[0]],
    )


def test_multilabel_margin_loss_duplicates_and_gradcheck():
    x = _rand((2, 4))
    t = np.array([[1, 1, 2, -1], [3, -1, 0, 0]], dtype=np.int64)  # a repeated target counts twice
    _check(NF.multilabel_margin_loss, TF.multilabel_margin_loss, [x, t])
    a = ng.tensor(x, requires_grad=True)
    assert ng.autograd.gradcheck(lambda v: NF.multilabel_margin_loss(v, ng.tensor(t)), (a,))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("distance", ["default", "cosine", "l1"])
def test_triplet_margin_with_distance_loss_matches_pytorch(distance, swap, reduction):
    def dist(lib):
        if distance == "default":
            return None
        if distance == "cosine":
            return lambda x, y: 1.0 - lib.nn.functional.cosine_similarity(x, y)
        return lambda x, y: (x - y).abs().sum(-1)

    arrays = [_rand((5, 4), s) for s in range(3)]
    _check(
        lambda a, p, n: NF.triplet_margin_with_distance_loss(
            a, p, n, distance_function=dist(ng), margin=0.8, swap=swap, reduction=reduction
        ),
        lambda a, p, n: TF.triplet_margin_with_distance_loss(
            a, p, n, distance_function=dist(torch), margin=0.8, swap=swap, reduction=reduction
        ),
        arrays,
    )


def test_triplet_margin_with_distance_loss_errors():
    a = ng.zeros(2, 3)
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        NF.triplet_margin_with_distance_loss(a, a, a, margin=0)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        NF.triplet_margin_with_distance_loss(a, a, ng.zeros(3))
    with pytest.raises(TypeError):
        NF.triplet_margin_with_distance_loss(a, a, a, None)  # keyword-only, as PyTorch's


SIGNATURE_NAMES = """normalize gumbel_softmax max_pool1d_with_indices max_pool2d_with_indices
    adaptive_max_pool1d_with_indices adaptive_max_pool2d_with_indices lp_pool1d lp_pool2d rrelu
    multilabel_margin_loss triplet_margin_with_distance_loss max_unpool1d max_unpool2d""".split()


@pytest.mark.parametrize("name", SIGNATURE_NAMES)
def test_signatures_match_pytorch(name):
    ours = inspect.signature(getattr(NF, name)).parameters
    theirs = inspect.signature(getattr(TF, name)).parameters
    assert list(ours) == list(theirs)
    for k in ours:
        assert ours[k].kind == theirs[k].kind, k
        assert ours[k].default == theirs[k].default, k
