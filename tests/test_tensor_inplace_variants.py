"""The in-place variants (``sqrt_``, ``masked_fill_``, ``eq_``...), the random fills and the
cheap attributes of Tensor (nbgrad/_tensor/inplace_variants.py), against PyTorch: values,
the node recorded, gradients through a non-leaf and through a view, the version bump, and the
errors (a leaf that requires grad, bad parameters)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import nbgrad as ng
from nbgrad._tensor.inplace_variants import _COMPARISONS, _VARIANTS

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
A = RNG.uniform(0.2, 0.9, (3, 3))
B = RNG.uniform(0.2, 0.9, (3, 3))
MASK = RNG.random((3, 3)) > 0.5
BATCH1 = RNG.uniform(0.2, 0.9, (2, 3, 4))
BATCH2 = RNG.uniform(0.2, 0.9, (2, 4, 3))
VEC = RNG.uniform(0.2, 0.9, 3)
INDEX = np.array([[0, 1], [2, 0], [1, 2]])


def arguments(name, lib):
    """The arguments of ``x.<name>(...)`` for a (3, 3) float64 ``x``, as ``lib``'s tensors."""
    t = lib.tensor
    b = t(B)
    special = {
        "addbmm_": (t(BATCH1), t(BATCH2)),
        "addcdiv_": (b, b + 1),
        "addcmul_": (b, b),
        "addmm_": (b, b),
        "addmv_": None,  # (a vector: below)
        "addr_": (t(VEC), t(VEC)),
        "baddbmm_": None,  # (a batch of matrices: below, on (2, 3, 3))
        "clamp_min_": (0.5,),
        "clamp_max_": (0.5,),
        "clip_": (0.3, 0.6),
        "cumprod_": (0,),
        "cumsum_": (1,),
        "index_add_": (0, t(np.array([0, 2])), t(B[:2])),
        "lerp_": (b, 0.3),
        "logit_": (0.1,),
        "masked_fill_": (t(MASK), 0.5),
        "renorm_": (2, 0, 0.5),
        "scatter_": (1, t(INDEX), t(B[:, :2])),
        "scatter_add_": (1, t(INDEX), t(B[:, :2])),
        "triu_": (1,),
        "tril_": (-1,),
        "round_": (),
    }
    if name in special:
        return special[name]
    method = _VARIANTS.get(name) or _COMPARISONS.get(name)
    try:  # unary, or binary with a tensor ``other``
        getattr(ng.tensor(A), method)()
        return ()
    except TypeError:
        return (b,)


INTEGER_OPS = {n for n in _VARIANTS if n.startswith(("bitwise_", "gcd", "lcm"))}
FLOAT_OPS = sorted(n for n in [*_VARIANTS, *_COMPARISONS] if n not in INTEGER_OPS)
FLOAT_OPS = [n for n in FLOAT_OPS if arguments(n, ng) is not None]


def run(lib, name, *, on_view=False):
    """``y = x * 1`` then ``y.<name>(...)`` (or on a view of ``y``), and the backward of a
    weighted sum: value, node name, version bump, the gradient of ``x``."""
    x = lib.tensor(A, requires_grad=True)
    y = x * 1
    target = y.t() if on_view else y
    version = target._version
    out = getattr(target, name)(*arguments(name, lib))
    assert out is target
    bumped = target._version - version
    node = y.grad_fn.name().replace("torch::autograd::", "") if y.grad_fn is not None else None
    weights = lib.tensor(np.arange(9.0).reshape(3, 3))
    (y * weights).sum().backward()
    return y.detach().numpy(), node, bumped, x.grad.numpy()


def _outcome(lib, name, **kw):
    try:
        return run(lib, name, **kw)
    except (RuntimeError, NotImplementedError) as e:
        return type(e).__name__, str(e).split("\n")[0]


@pytest.mark.parametrize("name", FLOAT_OPS)
@pytest.mark.parametrize("on_view", [False, True], ids=["plain", "view"])
def test_inplace_variant_matches_torch(name, on_view):
    got, want = _outcome(ng, name, on_view=on_view), _outcome(torch, name, on_view=on_view)
    if isinstance(want[0], str):  # PyTorch refuses it (no in-place derivative): so does nbgrad
        assert isinstance(got[0], str) and got[0] == want[0], got
        assert got[1].replace("aten::heaviside ", "aten::heaviside_ ") == want[1]
        return
    assert not isinstance(got[0], str), got
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12)
    assert got[1] == want[1]  # the node (SqrtBackward0, EqBackward1, CopySlices...)
    assert got[2] == want[2] == 1  # one version bump
    np.testing.assert_allclose(got[3], want[3], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", FLOAT_OPS)
def test_inplace_variant_on_a_leaf(name):
    """A leaf that requires grad is refused, with PyTorch's error (the logical ops are not
    differentiable and write it, as PyTorch's)."""
    outcomes = []
    for lib in (ng, torch):
        x = lib.tensor(A, requires_grad=True)
        try:
            getattr(x, name)(*arguments(name, lib))
            outcomes.append(("written", x.detach().numpy().tolist()))
        except (RuntimeError, NotImplementedError) as e:
            outcomes.append((type(e).__name__, str(e)))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("name", sorted(INTEGER_OPS))
def test_integer_inplace_variant_matches_torch(name):
    a, b = np.array([[5, 12, -7], [3, 0, 9]]), np.array([[3, 8, 2], [1, 4, 1]])
    got, want = ng.tensor(a), torch.tensor(a)
    args = () if name == "bitwise_not_" else (ng.tensor(b),)
    getattr(got, name)(*args)
    getattr(want, name)(*[torch.tensor(np.asarray(o)) for o in args])
    # ints: exact
    assert got.tolist() == want.tolist()


def test_baddbmm_addmv_and_float_power_in_place():
    results = []
    for lib in (ng, torch):
        x = lib.tensor(np.stack([A, B]), requires_grad=True)
        y = x * 1
        y.baddbmm_(lib.tensor(BATCH1), lib.tensor(BATCH2), beta=0.5, alpha=2)
        v = lib.tensor(VEC, requires_grad=True)
        w = v * 1
        w.addmv_(lib.tensor(A), lib.tensor(VEC), alpha=3)
        (y.sum() + (w * w).sum()).backward()
        results.append((y.grad_fn.name(), w.grad_fn.name(), x.grad.numpy(), v.grad.numpy()))
    assert results[0][:2] == results[1][:2] == ("BaddbmmBackward0", "AddmvBackward0")
    for got, want in zip(results[0][2:], results[1][2:]):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert_same(ng.tensor(A).float_power_(2), torch.tensor(A).float_power_(2))
    with pytest.raises(RuntimeError, match="float_power_ has dtype Float but the operation"):
        ng.tensor(A, dtype=ng.float32).float_power_(2)


def test_inplace_on_int_refuses_a_float_result():
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired"):
        ng.tensor([1, 4]).sqrt_()
    x = ng.tensor([1, 2, 3])
    x.eq_(2.0)  # a comparison writes 0/1 in the tensor's own dtype
    assert x.tolist() == [0, 1, 0] and x.dtype == ng.int64


def test_inplace_variant_gradcheck():
    x = ng.tensor(A, requires_grad=True)
    assert ng.autograd.gradcheck(lambda t: (t * 1).sqrt_().addcmul_(t, t, value=0.5), (x,))
    assert ng.autograd.gradgradcheck(lambda t: (t * 1).sigmoid_().pow_(2), (x,))


def assert_same(got, want):
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)


# ---- random fills ---------------------------------------------------------------------------
N = 20000
# (the fill, its arguments, its mean and variance)
FILLS = [
    ("uniform_", (-1.0, 3.0), 1.0, 16 / 12),
    ("normal_", (2.0, 0.5), 2.0, 0.25),
    ("exponential_", (2.0,), 0.5, 0.25),
    ("log_normal_", (0.0, 0.5), math.exp(0.125), (math.exp(0.25) - 1) * math.exp(0.25)),
    ("geometric_", (0.25,), 4.0, 0.75 / 0.25**2),
    ("random_", (2, 6), 3.5, (4**2 - 1) / 12),
    ("random_", (4,), 1.5, (4**2 - 1) / 12),
]


@pytest.mark.parametrize("name, args, mean, var", FILLS, ids=[f[0] + str(f[1]) for f in FILLS])
def test_random_fill_moments(name, args, mean, var):
    ng.manual_seed(0)
    x = getattr(ng.zeros(N, dtype=ng.float64), name)(*args).numpy()
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / N)
    assert abs(x.var() - var) < 0.1 * var
    if name == "random_":
        low, high = (0, args[0]) if len(args) == 1 else args
        assert set(np.unique(x)) == set(range(low, high))


def test_cauchy_quartiles():
    ng.manual_seed(0)
    x = ng.empty(N, dtype=ng.float64).cauchy_(1.0, 2.0).numpy()
    # the median and quartiles of Cauchy(1, 2): 1 and 1 -+ 2
    np.testing.assert_allclose(np.quantile(x, [0.25, 0.5, 0.75]), [-1, 1, 3], atol=0.15)


def test_random_fills_use_the_generator_given():
    g1, g2 = ng.Generator().manual_seed(5), ng.Generator().manual_seed(5)
    a = ng.empty(5).normal_(generator=g1)
    b = ng.empty(5).normal_(generator=g2)
    # the same seed: the same draws by the same code, bits included
    assert a.tolist() == b.tolist()
    ng.manual_seed(3)
    c = ng.empty(5).uniform_()
    ng.manual_seed(3)
    assert ng.empty(5).uniform_().tolist() == c.tolist()
    assert ng.empty(3).uniform_(**{"from": 2, "to": 3}).min() >= 2
    assert ng.empty(3, dtype=ng.int64).random_().min() >= 0
    assert set(ng.empty(100, dtype=ng.bool).random_().tolist()) == {False, True}


def test_random_fill_node_and_leaf_like_torch():
    for name, args, *_ in FILLS + [("cauchy_", (), 0, 0), ("random_", (), 0, 0)]:
        names = []
        for lib in (ng, torch):
            y = lib.zeros(3, dtype=lib.float64, requires_grad=True) * 1
            getattr(y, name)(*args)
            names.append(y.grad_fn.name())
            with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
                getattr(lib.zeros(3, requires_grad=True), name)(*args)
        assert names[0] == names[1]


BAD_FILLS = [
    ("uniform_", (1, 0), {}),
    ("uniform_", (0, math.inf), {}),
    ("normal_", (0, -1), {}),
    ("exponential_", (0,), {}),
    ("exponential_", (-1,), {}),
    ("cauchy_", (0, 0), {}),
    ("log_normal_", (0, 0), {}),
    ("geometric_", (0,), {}),
    ("geometric_", (1.5,), {}),
    ("random_", (5, 2), {}),
]


@pytest.mark.parametrize("name, args, kwargs", BAD_FILLS, ids=[f"{f[0]}{f[1]}" for f in BAD_FILLS])
def test_random_fill_errors_match_torch(name, args, kwargs):
    with pytest.raises(RuntimeError) as want:
        getattr(torch.zeros(3), name)(*args, **kwargs)
    with pytest.raises(RuntimeError) as got:
        getattr(ng.zeros(3), name)(*args, **kwargs)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("name", ["uniform_", "normal_", "log_normal_", "exponential_"])
def test_continuous_fills_refuse_integer_tensors(name):
    with pytest.raises((RuntimeError, NotImplementedError)) as want:
        getattr(torch.zeros(3, dtype=torch.int64), name)()
    with pytest.raises(want.type) as got:
        getattr(ng.zeros(3, dtype=ng.int64), name)()
    assert str(got.value) == str(want.value)


def test_random_bounds_of_small_dtypes():
    for lib in (ng, torch):
        with pytest.raises(RuntimeError, match="from is out of bounds for unsigned char"):
            lib.zeros(3, dtype=lib.uint8).random_(-1, 3)
        with pytest.raises(RuntimeError, match="to - 1 is out of bounds for bool"):
            lib.zeros(3, dtype=lib.bool).random_(0, 5)


# ---- attributes and conversions ---------------------------------------------------------------
def test_attributes_match_torch():
    a = np.arange(24.0).reshape(2, 3, 4)
    for dtype in ("float32", "float64", "int16", "uint8", "bool"):
        x, t = ng.tensor(a.astype(dtype)), torch.tensor(a.astype(dtype))
        assert (x.nbytes, x.itemsize, x.is_cpu) == (t.nbytes, t.itemsize, t.is_cpu)
        assert (x.get_device(), x.ndimension()) == (t.get_device(), t.ndimension())
    x, t = ng.tensor(a), torch.tensor(a)
    for perm in [(0, 1, 2), (2, 0, 1), (1, 2, 0)]:
        assert x.permute(*perm).dim_order() == t.permute(*perm).dim_order()
    assert x.const_data_ptr() == x.data_ptr()
    assert x.is_set_to(x) and not x.is_set_to(x.clone())
    # views and copies of the data: no arithmetic
    assert x[0].H.tolist() == t[0].H.tolist()
    assert x.mH.tolist() == t.mH.tolist()
    with pytest.raises(RuntimeError, match="tensor.H is only supported on matrices"):
        _ = x.H


def test_conversions_match_torch():
    a = np.array([[-3.7, 2.2, 300.5], [0.0, 1.5, -128.9]])
    x, t = ng.tensor(a), torch.tensor(a)
    for name in ("byte", "char", "short"):
        got, want = getattr(x, name)(), getattr(t, name)()
        assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
    assert x.short().tolist() == t.short().tolist()
    xg = ng.tensor(a, requires_grad=True)
    s = xg.sum_to_size(1, 3)
    # bits: each a sum of two values, one correctly rounded addition in either order
    assert s.tolist() == t.sum_to_size(1, 3).tolist()
    assert xg.sum_to_size(3).shape == (3,)
    s.sum().backward()
    assert xg.grad.tolist() == np.ones_like(a).tolist()
    with pytest.raises(RuntimeError, match=r"size \{\[3, 3\]\} is not expandable to size"):
        x.sum_to_size(3, 3)
    cond = ng.tensor(a > 0)
    # a selection of values: no arithmetic
    assert x.where(cond, 0.0).tolist() == t.where(torch.tensor(a > 0), 0.0).tolist()
    assert np.allclose(x.cov().numpy(), t.cov().numpy())
    assert np.allclose(x.corrcoef().numpy(), t.corrcoef().numpy())
    u = ng.tensor([1, 1, 2, 2, 3, 1])
    assert u.unique_consecutive().tolist() == [1, 2, 3, 1]


def test_apply_and_map():
    x = ng.tensor([1.0, 2.0, 3.0])
    assert x.apply_(lambda v: v * 10).tolist() == [10.0, 20.0, 30.0]
    assert x.map_(ng.tensor([1.0, 2.0, 3.0]), lambda a, b: a + b).tolist() == [11.0, 22.0, 33.0]
    with pytest.raises(RuntimeError, match="Can't call apply_\\(\\) on Variable that requires"):
        ng.ones(2, requires_grad=True).apply_(abs)


@pytest.mark.parametrize(
    "shape, wrap",
    [((3, 3), False), ((2, 5), False), ((5, 2), False), ((7, 3), True), ((8, 2), True),
     ((2, 2, 2), False), ((3, 3, 3, 3), False)],
)  # fmt: skip
def test_fill_diagonal_matches_pytorch(shape, wrap):
    """Values, the node (CopySlices over the fill) and the gradient through a non-leaf."""
    results = []
    for lib in (ng, torch):
        x = lib.tensor(np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape), requires_grad=True)
        y = x * 2
        out = y.fill_diagonal_(-1.5, wrap=wrap)
        (y * y).sum().backward()
        results.append((out is y, type(y.grad_fn).__name__, y.tolist(), x.grad.tolist()))
    assert results[0] == results[1]


@pytest.mark.parametrize("shape", [(3,), (2, 3, 4), ()])
def test_fill_diagonal_errors_match_pytorch(shape):
    errors = []
    for lib in (ng, torch):
        with pytest.raises(RuntimeError) as info:
            lib.zeros(shape).fill_diagonal_(1)
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        ng.zeros(2, 2, requires_grad=True).fill_diagonal_(1)


def _rarer_methods(lib):
    """resize_/resize/resize_as_, as_subclass, new_empty_strided, map2_, module_load."""
    facts = []
    a = lib.arange(6.0)
    a.resize_(2, 2)
    facts.append((a._version, a.tolist()))
    a.resize_(3, 3)
    facts.append((list(a.shape), a.reshape(-1)[:4].tolist()))
    b = lib.arange(6.0)
    view = b[:3]
    view.resize_(2)
    facts.append((view.tolist(), view._base is b))
    c = lib.arange(4.0)
    c.resize_as_(lib.zeros(2, 2))
    facts.append(c.tolist())
    with pytest.raises(RuntimeError) as info:
        lib.ones(2, requires_grad=True).resize_(3)
    facts.append(str(info.value))
    x = lib.arange(6.0, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = x.resize(2, 3)
        z = x.resize_as(lib.zeros(3, 2))
    facts.append([str(w.message) for w in caught])
    (y * y).sum().backward()
    facts.append((y.grad_fn.name(), list(z.shape), x.grad.tolist()))
    with pytest.raises(RuntimeError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x.resize(4)
    facts.append(str(info.value))

    class Sub(lib.Tensor):
        pass

    w = x * 2
    sub = w.as_subclass(Sub)
    facts.append((type(sub).__name__, sub.grad_fn.name(), sub._base is w))
    sub.add_(1)
    facts.append((w.tolist(), type(w.grad_fn).__name__))
    with pytest.raises(TypeError) as info:
        w.as_subclass(int)
    facts.append(str(info.value))
    e = lib.zeros(3, dtype=lib.float64).new_empty_strided((2, 3), (1, 2))
    facts.append((list(e.shape), list(e.stride()), str(e.dtype).split(".")[1]))
    m = lib.arange(3.0)
    m.map2_(lib.ones(3), lib.arange(3.0), lambda p, q, r: p + q * r)
    facts.append(m.tolist())
    param = lib.nn.Parameter(lib.zeros(2))
    with lib.no_grad():
        loaded = param.module_load(lib.ones(2))
    facts.append((loaded.tolist(), param.tolist(), loaded.requires_grad))
    facts.append(param.module_load(lib.full((2,), 3.0), assign=True).tolist())
    return facts


def test_resize_changes_the_version_only_when_the_sizes_change():
    """As PyTorch's resize_: the version moves when the sizes change; resizing to the same sizes
    changes nothing (a transposed tensor keeps its strides and its memory)."""

    def run(lib):
        x = lib.arange(2.0)
        seen = []
        for new in [(1, 2), (3,), (3,), (2,), (2,)]:
            x.resize_(new)
            seen.append(x._version)
        x.resize_as_(lib.zeros(2))
        y = lib.arange(6.0).reshape(2, 3)
        t = y.t()
        t.resize_(3, 2)
        t[0, 1] = -1.0
        return seen, x._version, t._version, t.stride(), y.tolist()

    assert run(ng) == run(torch)


def test_resize_as_subclass_new_empty_strided_map2_and_module_load_match_pytorch():
    assert _rarer_methods(ng) == _rarer_methods(torch)
