"""Tests for ``nbgrad/tensor.py``: creation and dtype inference, type promotion, views and
memory sharing, version counters, conversions, DLPack, printing, indexing and ``__setitem__``.
PyTorch (where installed) and NumPy are the references.
"""

import json
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

import nbgrad as ng
from tests.torch_oracle import same

torch = pytest.importorskip("torch")


def dname(dtype):
    """``'float32'`` for ``torch.float32`` and ``nbgrad.float32`` alike."""
    return str(dtype).rsplit(".", 1)[-1]


# -- creation and dtype inference -----------------------------------------------------------------
@pytest.mark.parametrize(
    "data",
    [
        [1, 2, 3],
        [1.0, 2.0],
        [1, 2.5],
        3,
        2.5,
        True,
        [True, False],
        [[1, 2], [3, 4]],
        [],
        np.array([1, 2], dtype=np.int32),
        np.array([1.0, 2.0], dtype=np.float64),
        np.array([1.0], dtype=np.float16),
        np.array([True]),
    ],
    ids=repr,
)
def test_tensor_dtype_inference_like_pytorch(data):
    t, n = torch.tensor(data), ng.tensor(data)
    assert dname(n.dtype) == dname(t.dtype)
    assert tuple(n.shape) == tuple(t.shape)
    # the same data, converted without arithmetic: the same bits
    np.testing.assert_array_equal(n.numpy(), t.numpy())


def test_default_float_dtype_is_float32_and_ints_are_int64():
    assert ng.get_default_dtype() is ng.float32
    assert ng.tensor([1.0]).dtype is ng.float32
    assert ng.tensor([1]).dtype is ng.int64
    assert ng.tensor(True).dtype is ng.bool
    assert ng.zeros(2).dtype is ng.float32
    assert ng.tensor([1, 2], dtype=ng.float64).dtype is ng.float64


def test_set_default_dtype():
    try:
        ng.set_default_dtype(ng.float64)
        assert ng.tensor([1.0]).dtype is ng.float64
        assert ng.ones(2).dtype is ng.float64
        assert ng.tensor([1]).dtype is ng.int64
    finally:
        ng.set_default_dtype(ng.float32)
    assert ng.tensor([1.0]).dtype is ng.float32


def _creations(lib):
    return {
        "zeros": lib.zeros(2, 3),
        "zeros_tuple": lib.zeros((2, 3)),
        "ones": lib.ones(4),
        "ones_int": lib.ones(2, dtype=lib.int64),
        "full_float": lib.full((2, 2), 1.5),
        "full_int": lib.full((2,), 7),
        "full_bool": lib.full((2,), True),
        "empty": lib.empty(3, 1),
        "arange_int": lib.arange(5),
        "arange_float": lib.arange(0, 1, 0.25),
        "arange_start": lib.arange(2, 8, 2),
        "linspace": lib.linspace(0, 1, 5),
        "eye": lib.eye(3),
        "eye_rect": lib.eye(2, 3),
        "zeros_like": lib.zeros_like(lib.ones(2, dtype=lib.float64)),
        "ones_like": lib.ones_like(lib.tensor([1, 2])),
        "full_like": lib.full_like(lib.ones(3), 2.0),
        "rand": lib.rand(2, 3),
        "randn": lib.randn(3),
        "randint": lib.randint(0, 10, (4,)),
        "rand_f64": lib.rand(2, dtype=lib.float64),
    }


def test_creation_functions_like_pytorch():
    t, n = _creations(torch), _creations(ng)
    for key in t:
        assert tuple(n[key].shape) == tuple(t[key].shape), key
        assert dname(n[key].dtype) == dname(t[key].dtype), key
        assert not n[key].requires_grad
        if key not in ("empty", "rand", "randn", "randint", "rand_f64"):
            np.testing.assert_allclose(n[key].numpy(), t[key].numpy(), err_msg=key)


def test_random_ranges_and_seed():
    ng.manual_seed(0)
    a = ng.rand(1000)
    assert 0.0 <= a.numpy().min() and a.numpy().max() < 1.0
    r = ng.randint(3, 6, (1000,))
    assert set(np.unique(r.numpy())) <= {3, 4, 5}
    ng.manual_seed(123)
    x = ng.randn(5)
    ng.manual_seed(123)
    y = ng.randn(5)
    # the same seed: the same generator draws the same numbers, bits included
    np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_creation_requires_grad():
    x = ng.zeros(2, requires_grad=True)
    assert x.requires_grad and x.is_leaf and x.grad_fn is None
    assert ng.tensor([1.0], requires_grad=True).requires_grad


def test_tensor_copies_and_as_tensor_shares():
    a = np.array([1.0, 2.0], dtype=np.float32)
    t = ng.tensor(a)
    a[0] = 10
    assert t[0].item() == 1.0
    s = ng.as_tensor(a)
    a[1] = 20
    assert s[1].item() == 20.0


def test_metadata():
    x = ng.zeros(2, 3, 4)
    assert x.shape == (2, 3, 4)
    assert x.size() == (2, 3, 4)
    assert x.size(1) == 3 and x.size(-1) == 4
    assert x.dim() == 3 and x.ndim == 3
    assert x.numel() == 24
    assert repr(x.shape) == "nbgrad.Size([2, 3, 4])"
    assert str(x.device) == "cpu"
    assert len(x) == 2


# -- type promotion -------------------------------------------------------------------------------
DTYPES = ["bool", "int32", "int64", "float16", "float32", "float64"]
SCALARS = [2, 2.5, True]


def _dtype_or_error(fn):
    """The result's dtype name, or the type of the exception raised."""
    try:
        return dname(fn().dtype)
    except Exception as e:  # noqa: BLE001 - compared with PyTorch's
        return type(e)


def _make(lib, dtype_name, zero_dim=False):
    data = [1, 0] if dtype_name == "bool" else [1, 2]
    t = lib.tensor(data, dtype=getattr(lib, dtype_name))
    return t[0] if zero_dim else t


@pytest.mark.parametrize("op", ["add", "mul", "sub", "div"])
@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("b", DTYPES)
def test_tensor_tensor_promotion_like_pytorch(op, a, b):
    results = {}
    for lib in (torch, ng):
        for zero_dim in (False, True):
            x, y = _make(lib, a), _make(lib, b, zero_dim)
            results[(lib.__name__, zero_dim)] = _dtype_or_error(lambda x=x, y=y: getattr(x, op)(y))
    assert results[("nbgrad", False)] == results[("torch", False)]
    assert results[("nbgrad", True)] == results[("torch", True)]


@pytest.mark.parametrize("op", ["add", "mul", "div", "rsub", "rmul", "pow"])
@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("s", SCALARS, ids=repr)
def test_tensor_scalar_promotion_like_pytorch(op, a, s):
    fns = {
        "add": lambda x: x + s,
        "mul": lambda x: x * s,
        "div": lambda x: x / s,
        "rsub": lambda x: s - x,
        "rmul": lambda x: s * x,
        "pow": lambda x: x**s,
    }
    res = {}
    for lib in (torch, ng):
        x = _make(lib, a)
        try:
            r = fns[op](x)
        except Exception as e:  # noqa: BLE001 - compared with PyTorch's
            res[lib.__name__] = (type(e), None)
        else:
            res[lib.__name__] = (dname(r.dtype), r.tolist())
    assert res["nbgrad"][0] == res["torch"][0]
    if res["torch"][1] is not None:
        np.testing.assert_allclose(res["nbgrad"][1], res["torch"][1], rtol=1e-3)


def test_promotion_examples_from_the_contract():
    assert (ng.tensor([1, 2]) * 2.5).dtype is ng.float32
    x32 = ng.tensor([1.0, 2.0])
    assert (x32 * ng.tensor(2.0, dtype=ng.float64)).dtype is ng.float32
    assert (x32 * 3).dtype is ng.float32
    assert (ng.tensor([1, 2]) + ng.tensor([True, False])).dtype is ng.int64
    assert (ng.tensor([1, 2], dtype=ng.int32) + ng.tensor(5)).dtype is ng.int32
    assert (ng.tensor([1, 2]) / 2).dtype is ng.float32
    assert (ng.tensor([True]) + True).dtype is ng.bool
    assert (x32 + ng.tensor([1.0], dtype=ng.float64)).dtype is ng.float64


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("b", DTYPES)
def test_comparison_and_where_dtypes_like_pytorch(a, b):
    res = {}
    for lib in (torch, ng):
        x, y = _make(lib, a), _make(lib, b)
        res[lib.__name__] = (
            dname((x < y).dtype),
            dname((x == y).dtype),
            dname(lib.where(x > 0, x, y).dtype),
        )
    assert res["nbgrad"] == res["torch"]


# -- views and memory -----------------------------------------------------------------------------
def test_from_numpy_shares_memory_both_ways():
    a = np.arange(6, dtype=np.float32)
    t = ng.from_numpy(a)
    a[0] = 100
    assert t[0].item() == 100
    t[1] = 200.0
    assert a[1] == 200
    t.add_(1)
    assert a[2] == 3
    assert t.dtype is ng.float32
    assert ng.from_numpy(np.arange(3)).dtype is ng.int64


@pytest.mark.parametrize(
    "make_view",
    [
        lambda t: t.view(2, 3),
        lambda t: t.view(3, 2).t(),
        lambda t: t.view(2, 3).transpose(0, 1),
        lambda t: t.view(2, 3).permute(1, 0),
        lambda t: t[1:4],
        lambda t: t[::2],
        lambda t: t[2],
        lambda t: t.unsqueeze(0),
        lambda t: t.view(1, 6).squeeze(0),
        lambda t: t.view(2, 3)[:, 1],
        lambda t: t.reshape(3, 2),
        lambda t: t.view(2, 3).expand(2, 2, 3),
        lambda t: t.flatten(),
        lambda t: t.view(2, 3).select(1, 2),
        lambda t: t.narrow(0, 1, 3),
        lambda t: t.split(2)[1],
        lambda t: t.detach(),
        lambda t: t[...],
    ],
)
def test_views_share_memory_with_base_and_numpy(make_view):
    a = np.arange(6, dtype=np.float32)
    base = ng.from_numpy(a)
    v = make_view(base)
    assert np.shares_memory(np.asarray(v), a)
    assert v._version == base._version
    before = base._version
    base.add_(1)
    # both views read the same memory: the same bits
    np.testing.assert_array_equal(np.asarray(v), np.asarray(make_view(ng.from_numpy(a))))
    assert v._version == base._version == before + 1
    # and with PyTorch: the same op is a view there
    tb = torch.arange(6, dtype=torch.float32)
    tv = make_view(tb)
    assert tv.untyped_storage().data_ptr() == tb.untyped_storage().data_ptr()


def test_is_view_as_pytorch():
    """``_is_view()``: views (of any mode, of several outputs) but not copies, detached aliases,
    ``.data`` or views of an inference tensor."""

    def run(lib):
        x = lib.ones(2, 3, requires_grad=True)
        y = x * 2
        made = [x, x.detach(), x.view(-1), y[0], y.unbind()[0], x.clone(), y.t().reshape(-1)]
        made += [x.data, y[:, 1:]]
        with lib.no_grad():
            made.append(x.view(-1))
        with lib.inference_mode():
            made.append(x.view(-1))
            c = lib.ones(3)
        made.append(c.view(3))
        return [t._is_view() for t in made]

    assert run(ng) == run(torch)


def test_memory_formats_as_pytorch():
    """``contiguous``, ``clone``, ``to`` and ``is_contiguous`` with ``memory_format``: strides,
    which call copies, the node, the gradient's layout, errors for a tensor of another rank."""

    def run(lib):
        out = []
        x = lib.arange(120.0).reshape(2, 3, 4, 5)
        last = x.contiguous(memory_format=lib.channels_last)
        cube = lib.ones(2, 3, 4, 5, 6).contiguous(memory_format=lib.channels_last_3d)
        for t in (x, last, lib.ones(2, 1, 4, 1), lib.ones(2, 3), x.permute(0, 2, 3, 1), cube):
            out.append((t.stride(), t.is_contiguous()))
            formats = (lib.channels_last, lib.channels_last_3d)
            out += [t.is_contiguous(memory_format=f) for f in formats]
        out.append(
            (last.contiguous() is last, last.contiguous().stride(), last.tolist() == x.tolist())
        )
        out.append(last.to(memory_format=lib.contiguous_format).stride())
        out.append(
            (last.contiguous(memory_format=lib.channels_last) is last, last.clone().stride())
        )
        out.append(lib.clone(x, memory_format=lib.channels_last).stride())
        leaf = lib.rand(2, 3, 4, 5, requires_grad=True)
        for r in (
            leaf.contiguous(memory_format=lib.channels_last),
            leaf.clone(memory_format=lib.channels_last),
        ):
            out.append((r.grad_fn.name(), r.stride()))
        r = leaf.to(memory_format=lib.channels_last)
        (r * x).sum().backward()
        out.append((r.stride(), leaf.grad.stride(), leaf.grad.tolist() == x.tolist()))
        for fmt in (lib.channels_last, lib.channels_last_3d):
            for method in ("contiguous", "clone"):
                with pytest.raises(RuntimeError) as info:
                    getattr(lib.rand(2, 3), method)(memory_format=fmt)
                out.append(str(info.value))
        names = (
            lib.channels_last,
            lib.contiguous_format,
            lib.preserve_format,
            lib.channels_last_3d,
        )
        out.append([repr(f).split(".")[1] for f in names])
        out.append(pickle.loads(pickle.dumps(lib.channels_last)) is lib.channels_last)
        out.append(isinstance(lib.channels_last, lib.memory_format))
        return out

    assert run(ng) == run(torch)


AS_STRIDED = [  # size, stride, storage offset (None: the view's own, 2 here)
    ((3, 2), (1, 1), None),
    ((2, 3), (3, 1), 3),
    ((2, 2), (1, 2), 1),
    ((4,), (0,), 5),
    ((0, 3), (3, 1), 0),
    ((2, 2), (6, 1), None),
]


def test_as_strided_and_storage_offset_as_pytorch():
    """``as_strided`` reads the storage (from a view's own offset by default), is a view of
    it (a write through it reaches the base), and its gradient sums overlapping places and
    splits among an expanded input's; ``as_strided_``; ``storage_offset``; PyTorch's errors."""

    def run(lib):
        out = []
        x = lib.arange(12.0, dtype=lib.float64).requires_grad_()
        y = x * 1
        for size, stride, offset in AS_STRIDED:
            y = x * 1
            v = (y[2:] if offset is None else y).as_strided(size, stride, offset)
            w = lib.linspace(-1, 1, v.numel(), dtype=lib.float64).reshape(v.shape)
            (g,) = lib.autograd.grad((v * w).sum(), x)
            grad = np.round(g.tolist(), 12).tolist()
            out.append((v.tolist(), v.stride(), v.storage_offset(), v._base is y, grad))
        t = y.view(3, 4).t()
        out.append((t.storage_offset(), y[5:].storage_offset(), t[1:].storage_offset()))
        out.append(t.as_strided((2,), (1,)).tolist())
        e = lib.arange(6.0, dtype=lib.float64).requires_grad_()
        z = e.view(2, 3).expand(4, 2, 3).as_strided((2, 3), (1, 2), 0)
        (g,) = lib.autograd.grad((z * lib.arange(6.0, dtype=lib.float64).view(2, 3)).sum(), e)
        out.append((z.tolist(), g.tolist()))
        y.detach().as_strided((2,), (2,), 1).mul_(10)
        out.append(y.tolist())
        y = x * 1
        v = y[1:]
        v.as_strided_((3, 2), (2, 1), 1)  # (in place: v keeps its base, takes the geometry)
        v.mul_(2)
        (g,) = lib.autograd.grad((y * lib.arange(12.0, dtype=lib.float64)).sum(), x)
        out.append((v.grad_fn.name(), v.stride(), v._base is y, y.tolist(), g.tolist()))
        for size, stride, offset in [((3, 4), (4, 1), 5), ((2,), (1, 1), 0)]:
            with pytest.raises(RuntimeError) as info:
                y.as_strided(size, stride, offset)
            out.append(str(info.value))
        return out

    assert run(ng) == run(torch)


def test_storages_as_pytorch():
    """``untyped_storage()`` (bytes) and the deprecated ``storage()`` (elements) of a view are
    its base's memory: sizes, pointers, values."""

    def run(lib):
        base = lib.arange(6.0)
        x = base[2:]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (TypedStorage is deprecated, said once)
            s = x.storage()
        out = [type(s).__name__, len(s), s.size(), str(s.dtype).split(".")[1], s.nbytes()]
        out += [s.element_size(), s.data_ptr() == base.data_ptr(), str(s.device), s.tolist(), s[1]]
        u = x.untyped_storage()
        out += [type(u).__name__, len(u), u.size(), u.nbytes(), u.element_size()]
        out += [u.data_ptr() == x.data_ptr() - 8, str(u.device), u[4], u.tolist()[4:8]]
        out.append(u.data_ptr() == x.view(2, 2).t().untyped_storage().data_ptr())
        out.append(x.clone().untyped_storage().data_ptr() == u.data_ptr())
        out.append(isinstance(u, lib.UntypedStorage))
        return out

    assert run(ng) == run(torch)


def test_writing_through_a_view_changes_the_base():
    a = np.zeros(6, dtype=np.float32)
    base = ng.from_numpy(a)
    v = base.view(2, 3)
    v[1, 2] = 5.0
    v[0].fill_(2.0)
    # values written, not computed
    np.testing.assert_array_equal(a, [2, 2, 2, 0, 0, 5])
    assert base._version == v._version == 2


def test_view_on_non_contiguous_raises_and_reshape_copies_like_pytorch():
    errors = {}
    for lib in (torch, ng):
        x = lib.arange(6.0).view(2, 3).t()
        assert not x.is_contiguous()
        with pytest.raises(RuntimeError) as info:
            x.view(6)
        errors[lib.__name__] = info.value
        assert "view size is not compatible with input tensor's size and stride" in str(info.value)
        r = x.reshape(6)
        assert r.tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
        r.add_(100)
        assert x.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]  # a copy: x unchanged
    assert type(errors["nbgrad"]) is type(errors["torch"])
    x = ng.arange(6.0).view(2, 3).t()
    assert not np.shares_memory(np.asarray(x.reshape(6)), np.asarray(x))
    assert np.shares_memory(np.asarray(x.reshape(3, 1, 2)), np.asarray(x))
    c = x.contiguous()
    assert c.is_contiguous() and not np.shares_memory(np.asarray(c), np.asarray(x))
    y = ng.arange(6.0)
    assert y.contiguous() is y


def test_is_contiguous_like_pytorch():
    def cases(lib):
        x = lib.arange(24.0).view(2, 3, 4)
        return [x, x.t() if x.dim() == 2 else x.transpose(0, 2), x[:, 1], x[:, :, ::2], x[0], x[1:]]

    for n, t in zip(cases(ng), cases(torch)):
        assert n.is_contiguous() == t.is_contiguous()


# -- version counters -----------------------------------------------------------------------------
def test_version_counter_like_pytorch():
    res = {}
    for lib in (torch, ng):
        x = lib.ones(4)
        v = x[1:3]
        d = x.detach()
        log = [x._version]
        x.add_(1)
        log.append(x._version)
        v.mul_(2)
        log += [x._version, v._version, d._version]
        x[0] = 5.0
        log.append(x._version)
        d.zero_()
        log += [x._version, v._version]
        y = x * 2  # a new tensor starts at 0
        log.append(y._version)
        x.copy_(lib.ones(4))
        x.fill_(3.0)
        x.clamp_(0.0, 1.0)
        x.sub_(1)
        x.div_(2)
        log.append(x._version)
        res[lib.__name__] = log
    assert res["nbgrad"] == res["torch"]
    assert res["nbgrad"][1] == 1


def test_out_of_place_ops_do_not_bump_versions():
    x = ng.ones(3)
    _ = x + 1
    _ = x.exp()
    _ = x.view(3)
    assert x._version == 0


# See NOTE [Blocked scaled updates]: ``p.sub_(g, alpha=lr)`` on a large contiguous operand runs
# block by block; the result must be the plain ``p - lr * g``, bit for bit, in every case
BIG = 16384 * 3 + 5  # several blocks and a partial one


@pytest.mark.parametrize(
    "case",
    [
        "contiguous",
        "2-d",
        "operand is p",
        "transposed view of p",
        "overlapping view",
        "broadcast",
        "float32",
    ],
)
@pytest.mark.parametrize("method", ["sub_", "add_"])
def test_scaled_inplace_update_matches_the_plain_expression(case, method):
    rng = np.random.default_rng(7)
    dtype = np.float32 if case == "float32" else np.float64
    shape = (300, 300) if case in ("2-d", "transposed view of p") else (BIG,)
    p = ng.tensor(rng.standard_normal(shape).astype(dtype))
    if case == "overlapping view":  # p and g share all but one element, shifted by one
        base = ng.tensor(rng.standard_normal(BIG + 1))
        p, g = base[1:], base[:-1]
    elif case == "operand is p":
        g = p
    elif case == "transposed view of p":
        g = p.t()
    elif case == "broadcast":
        g = ng.tensor(rng.standard_normal(1).astype(dtype))
    else:
        g = ng.tensor(rng.standard_normal(shape).astype(dtype))
    before, g_before = p.numpy().copy(), g.numpy().copy()
    scaled = g_before * 0.01
    expected = before - scaled if method == "sub_" else before + scaled
    with ng.no_grad():
        getattr(p, method)(g, alpha=0.01)
    # bits: the same two correctly rounded IEEE steps (a product, then a sum or difference)
    # per element as the expression; the blocks change which elements go together, not the steps
    np.testing.assert_array_equal(p.numpy(), expected)
    assert p.numpy().dtype == dtype
    assert p._version == 1
    if case not in ("operand is p", "transposed view of p", "overlapping view"):
        np.testing.assert_array_equal(g.numpy(), g_before)  # the operand is left alone


def test_scaled_inplace_update_with_a_bad_shape_changes_nothing():
    p = ng.zeros(BIG)
    with pytest.raises(RuntimeError):
        p.sub_(ng.ones(BIG - 1), alpha=0.5)
    assert not p.numpy().any() and p._version == 0


# -- // and % ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "expr",
    [
        lambda lib: lib.tensor([5, -3]) // 0,
        lambda lib: lib.tensor([5, -3]) % lib.tensor([2, 0]),
        lambda lib: 5 % lib.tensor([0]),
        lambda lib: 7 // lib.tensor([0, 1]),
    ],
)
def test_integer_division_by_zero_raises_like_pytorch(expr):
    for lib in (torch, ng):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            expr(lib)


def test_float_floor_division_and_remainder_match_pytorch_at_edges():
    cases = [
        lambda lib: lib.tensor([5.0, -5.0, 0.0]) // 0,
        lambda lib: lib.tensor([5.0, -5.0, 0.0]) % 0,
        lambda lib: lib.tensor([7.5, -7.5, 3.0]) % -2.5,  # a zero has the dividend's sign
        lambda lib: lib.tensor([-0.0, 0.0, -2.0]) % 1.0,
        lambda lib: 3.0 % lib.tensor([-1.5, 1.5]),
        lambda lib: lib.tensor([7.5, -7.5]) % lib.tensor([2.5, 2.5]),
        lambda lib: lib.tensor([-7, 7]) % 3,
        lambda lib: 2.5 // lib.tensor([1, -2]),
    ]
    for case in cases:
        ours, theirs = case(ng), case(torch)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        # bits: these quotients and remainders are exact in binary (whole numbers and halves),
        # so every correct kernel gives them
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert np.signbit(ours.numpy()).tolist() == np.signbit(theirs.numpy()).tolist()


def test_in_place_floor_division_and_remainder_like_pytorch():
    for lib in (torch, ng):
        a = lib.tensor([5, -7])
        alias = a
        a //= 2
        assert alias.numpy().tolist() == [2, -4] and a._version == 1
        b = lib.tensor([5.0, -7.0])
        b %= lib.tensor([2.0, 3.0])
        assert b.numpy().tolist() == [1.0, 2.0]
        x = lib.tensor([5.0, 7.0], requires_grad=True)
        y = x * 1
        y %= 2.5
        y.sum().backward()
        assert x.grad.numpy().tolist() == [1.0, 1.0]
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            a //= 0
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            a %= 2.5
        assert a.numpy().tolist() == [2, -4] and a._version == 1  # unchanged after the errors


def test_float_of_a_tensor_that_requires_grad_warns_like_pytorch():
    for lib in (torch, ng):
        with pytest.warns(UserWarning, match="Converting a tensor with requires_grad=True"):
            assert float(lib.ones(1, requires_grad=True)) == 1.0
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            float(lib.ones(1))
            int(lib.ones(1, requires_grad=True))  # only float() warns


# -- detach and conversions -----------------------------------------------------------------------
def test_detach_of_a_leaf_may_change_in_place_like_pytorch():
    for lib in (ng, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        d = x.detach()
        d.add_(1)  # not a view for autograd: allowed, and seen by x
        assert x.tolist() == [2.0, 3.0] and x._version == d._version == 1
        assert d._base is None and d.is_leaf and not d.requires_grad


def test_stride_in_elements_like_pytorch():
    for make in (
        lambda lib: lib.ones(2, 3, 4),
        lambda lib: lib.ones(2, 3, 4).permute(2, 0, 1),
        lambda lib: lib.ones(4, 3)[::2],
        lambda lib: lib.ones(3, 1).expand(3, 4),
        lambda lib: lib.tensor(1.0),
    ):
        ours, theirs = make(ng), make(torch)
        assert ours.stride() == theirs.stride()
        assert [ours.stride(d) for d in range(-ours.dim(), ours.dim())] == [
            theirs.stride(d) for d in range(-theirs.dim(), theirs.dim())
        ]


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.ones(3, 2).t(),
        lambda lib: lib.ones(2, 3, 4).permute(2, 0, 1),
        lambda lib: lib.ones(4, 3)[::2],  # not dense: a contiguous gradient
        lambda lib: lib.ones(2, 3),
    ],
)
def test_grad_of_a_leaf_has_its_layout_like_pytorch(make):
    strides = []
    for lib in (ng, torch):
        w = make(lib).detach().requires_grad_()
        (w * 2).sum().backward()
        (w * 3).sum().backward()  # accumulated in place: the layout stays
        assert w.grad.tolist() == (lib.ones(w.shape) * 5).tolist()
        strides.append((w.stride(), w.grad.stride()))
    assert strides[0] == strides[1]


def test_setitem_drops_leading_ones_of_the_value_like_pytorch():
    results = []
    for lib in (ng, torch):
        x = lib.zeros(2, 3)
        v = lib.tensor([[4.0, 5.0, 6.0]], requires_grad=True)
        x[1] = v  # (1, 3) into a row of 3
        x[0, 0] = lib.tensor([7.0])  # (1,) into a scalar
        x[[0, 1], 2] = lib.ones(1, 1, 2)
        x.sum().backward()
        results.append((x.tolist(), v.grad.tolist()))
    assert results[0] == results[1]


@pytest.mark.parametrize(
    "name, expr",
    [
        ("std", lambda lib: lib.ones(1).std()),
        ("var", lambda lib: lib.ones(2, 1).var(dim=1)),
        ("var", lambda lib: lib.ones(3).var(correction=3)),
    ],
)
def test_var_and_std_without_degrees_of_freedom_warn_like_pytorch(name, expr):
    expected = (
        f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
        "reduction factor (input numel divided by output numel)."
    )
    for lib in (ng, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = expr(lib)
        assert [str(w.message).split(" (Triggered")[0] for w in caught] == [expected]
        assert caught[0].filename == __file__  # the user's line, not nbgrad's
        assert np.isnan(result.numpy()).all()


def test_detach_shares_memory_and_leaves_the_graph():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    assert np.shares_memory(np.asarray(d), np.asarray(y))
    d[0] = 10.0
    assert y[0].item() == 10.0
    assert y._version == d._version == 1
    xd = x.detach()
    assert np.shares_memory(xd.numpy(), np.asarray(x))


def test_item_tolist_numpy():
    x = ng.tensor([[1.5, 2.0], [3.0, 4.0]])
    assert x.tolist() == [[1.5, 2.0], [3.0, 4.0]]
    assert isinstance(x[0, 0].item(), float) and x[0, 0].item() == 1.5
    assert isinstance(ng.tensor(3).item(), int)
    assert isinstance(ng.tensor(True).item(), bool)
    assert ng.tensor([7]).item() == 7
    assert ng.tensor(2.5).tolist() == 2.5
    arr = x.numpy()
    assert isinstance(arr, np.ndarray) and arr.dtype == np.float32
    arr[0, 0] = 9.0
    assert x[0, 0].item() == 9.0  # numpy() shares memory
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        x.item()
    assert float(ng.tensor(2.5)) == 2.5 and int(ng.tensor(3)) == 3
    r = ng.tensor([1.0], requires_grad=True)
    assert r.detach().numpy().tolist() == [1.0]
    # the tensor's data itself, not computed
    np.testing.assert_array_equal(np.asarray(r), [1.0])


def test_item_and_tolist_like_pytorch():
    for data in ([1, 2], [[1.5], [2.5]], 3.25, [True, False]):
        n, t = ng.tensor(data), torch.tensor(data)
        assert n.tolist() == t.tolist()
    assert ng.tensor([4.5]).item() == torch.tensor([4.5]).item()


def test_dtype_conversions():
    x = ng.tensor([1.7, -2.2])
    assert x.double().dtype is ng.float64
    assert x.long().tolist() == torch.tensor([1.7, -2.2]).long().tolist()
    assert x.int().dtype is ng.int32
    assert x.bool().tolist() == [True, True]
    assert x.to(ng.float16).dtype is ng.float16
    assert x.float() is x


def test_clone_copies():
    x = ng.tensor([1.0, 2.0])
    c = x.clone()
    c[0] = 5.0
    assert x[0].item() == 1.0
    assert x._version == 0


# -- DLPack ---------------------------------------------------------------------------------------
def test_dlpack_to_numpy_shares_memory():
    t = ng.tensor([1.0, 2.0, 3.0])
    a = np.from_dlpack(t)
    # the tensor's data itself, not computed
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0])
    assert a.dtype == np.float32
    t[0] = 10.0
    assert a[0] == 10.0
    assert t.__dlpack_device__() == (1, 0)


def test_dlpack_from_numpy_shares_memory():
    a = np.arange(4, dtype=np.float64)
    t = ng.from_dlpack(a)
    assert t.dtype is ng.float64
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    a[3] = 30
    assert t[3].item() == 30.0


def test_dlpack_round_trip_and_with_pytorch():
    t = ng.arange(6.0).view(2, 3)
    back = ng.from_dlpack(np.from_dlpack(t))
    assert back.tolist() == t.tolist()
    assert np.shares_memory(np.asarray(back), np.asarray(t))
    tt = torch.from_dlpack(t)
    assert tt.tolist() == t.tolist()
    from_torch = ng.from_dlpack(torch.arange(3))
    assert from_torch.dtype is ng.int64 and from_torch.tolist() == [0, 1, 2]


def test_dlpack_of_requires_grad_tensor():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    a = np.from_dlpack(x)
    assert a.tolist() == [1.0, 2.0]


# -- printing -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.tensor([1.0, 2.0, 3.0]),
        lambda lib: lib.tensor([1, 2, 3]),
        lambda lib: lib.tensor(3.5),
        lambda lib: lib.tensor([1.5, -2.25]),
        lambda lib: lib.tensor([True, False]),
        lambda lib: lib.tensor([[1.0, 2.0], [3.0, 4.0]]),
        lambda lib: lib.tensor([1.0, 2.0], dtype=lib.float64),
        lambda lib: lib.tensor([1, 2], dtype=lib.int32),
        lambda lib: lib.tensor([1.0, 2.0], requires_grad=True),
        lambda lib: lib.tensor([1.0, 2.0], requires_grad=True) * 2,
        lambda lib: lib.tensor([0.1234567, 10.5]),
        lambda lib: lib.zeros(0),
        lambda lib: lib.tensor([1e-5, 1.0]),
        lambda lib: lib.tensor([float("nan"), float("inf"), 1.0]),
        # integers spanning more than 1e3 print in scientific notation, as other numbers
        lambda lib: lib.tensor([1.0, 2000.0]),
        lambda lib: lib.tensor([-3.0, 2999.0]),
        lambda lib: lib.tensor([1.0, 1000.0]),
        lambda lib: lib.tensor([float("nan"), 5000.0, 1.0]),
        lambda lib: lib.tensor(12345678.0),
        # empty tensors name their shape (unless (0,)) and any dtype but the default
        lambda lib: lib.zeros(0, 3),
        lambda lib: lib.zeros(0, dtype=lib.int64),
        lambda lib: lib.zeros(2, 0, dtype=lib.bool),
        lambda lib: lib.zeros(0, 2, dtype=lib.float64),
        lambda lib: lib.tensor([[1.0, 3.0], [2.0, 0.5]]).max(dim=1),
        lambda lib: lib.tensor([[1.0, 3.0], [2.0, 0.5]]).min(dim=0, keepdim=True),
    ],
)
def test_repr_like_pytorch(make):
    assert repr(make(ng)) == repr(make(torch)).replace("torch.", "nbgrad.")


def test_repr_of_larger_tensors_like_pytorch():
    data = np.linspace(-3, 50, 12, dtype=np.float32).reshape(3, 4)
    assert repr(ng.from_numpy(data)) == repr(torch.from_numpy(data))
    big = np.arange(2000, dtype=np.float32) / 7
    assert repr(ng.from_numpy(big)) == repr(torch.from_numpy(big))
    # rows of as many elements as fit in 80 columns, blocks, summaries: PyTorch's layout
    rng = np.random.default_rng(0)
    for data in (
        np.ones((2, 20)) / 3,
        rng.standard_normal((2, 3, 14)),
        np.zeros(100),
        np.arange(40).reshape(2, 20),
        rng.standard_normal((2, 600)),
        rng.standard_normal((10, 10, 12)),
        rng.standard_normal((4, 30)) > 0,
        np.array([True, True]),
        rng.integers(-1000, 1000, (6, 15)),
    ):
        assert repr(ng.tensor(data)) == repr(torch.tensor(data)).replace("torch.", "nbgrad.")
    # a summarised print chooses its format from the elements it shows, as PyTorch
    for data in (
        np.arange(2000, dtype=np.float32),
        np.arange(1500, dtype=np.float32).reshape(30, 50),
        np.arange(3000, dtype=np.float32).reshape(1000, 3) / 3,
        np.arange(1200, dtype=np.float32) / 1000,
    ):
        assert repr(ng.from_numpy(data)) == repr(torch.from_numpy(data))


@pytest.mark.parametrize(
    "args", [(1, 0), (1.0, 0.0), (1, 0.5), (True, False), (np.float64(2.0), 1)]
)
def test_where_of_two_numbers_has_pytorchs_dtype(args):
    results = [lib.where(lib.tensor([True, False]), *args) for lib in (ng, torch)]
    assert [str(r.dtype).split(".")[-1] for r in results] == [str(results[1].dtype)[6:]] * 2
    assert results[0].tolist() == results[1].tolist()


def test_negating_a_bool_tensor_raises_like_pytorch():
    for lib in (ng, torch):
        with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor"):
            -lib.tensor([True, False])


# -- indexing -------------------------------------------------------------------------------------
INDICES = [
    1,
    -1,
    (0, 2),
    slice(1, 3),
    slice(None, None, 2),
    (slice(None), 1),
    (Ellipsis, 0),
    (None, 1),
    (slice(1, None), None, slice(None, 2)),
    [0, 2],
    ([0, 2], [1, 3]),
    (slice(None), [3, 0, 0]),
    np.array([[0, 1], [2, 2]]),
    np.array([True, False, True]),
    (1, [0, 1, 3]),
    ([[0], [2]], [1, 3]),
    (Ellipsis, [1, 2]),
    (slice(0, 3, 2), [True, False, True, False]),
]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_getitem_like_numpy(index):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ng.from_numpy(a.copy())
    got = t[index]
    # indexing copies values: no arithmetic, the same bits
    np.testing.assert_array_equal(got.numpy(), a[index])
    assert tuple(got.shape) == a[index].shape


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_getitem_like_pytorch(index):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    tidx = index
    if isinstance(index, np.ndarray):
        tidx = torch.from_numpy(index)
    got, ref = ng.from_numpy(a.copy())[index], torch.from_numpy(a.copy())[tidx]
    assert tuple(got.shape) == tuple(ref.shape)
    # indexing copies values: no arithmetic, the same bits
    np.testing.assert_array_equal(got.numpy(), ref.numpy())


def test_getitem_with_tensor_indices():
    x = ng.arange(10.0)
    # indexing copies values: no arithmetic, the same bits
    np.testing.assert_array_equal(x[ng.tensor([1, 3])].numpy(), [1.0, 3.0])
    np.testing.assert_array_equal(x[x > 6].numpy(), [7.0, 8.0, 9.0])
    assert x[ng.tensor(4)].item() == 4.0


def test_getitem_errors_like_pytorch():
    for lib in (torch, ng):
        x = lib.zeros(3, 4)
        with pytest.raises(IndexError):
            x[3]
        with pytest.raises(IndexError):
            x[0, 0, 0]
        with pytest.raises(IndexError):
            x[[0, 5]]


def test_basic_indexing_is_a_view_and_advanced_a_copy():
    x = ng.arange(12.0).view(3, 4)
    assert np.shares_memory(np.asarray(x[1]), np.asarray(x))
    assert np.shares_memory(np.asarray(x[:, 1:3]), np.asarray(x))
    assert not np.shares_memory(np.asarray(x[[0, 1]]), np.asarray(x))
    assert not np.shares_memory(np.asarray(x[x > 3]), np.asarray(x))


SETITEMS = [
    (1, 5.0),
    ((0, 2), -1.0),
    (slice(1, 3), 7.0),
    ((slice(None), 1), np.array([1.0, 2.0, 3.0], dtype=np.float32)),
    (Ellipsis, 0.0),
    ([0, 2], 9.0),
    (([0, 2], [1, 3]), np.array([4.0, 5.0], dtype=np.float32)),
    (np.array([True, False, True]), 3.0),
    ((slice(None), slice(None, None, 2)), np.array([[1.0, 2.0]], dtype=np.float32)),
    (slice(None), np.arange(4, dtype=np.float32)),
]


@pytest.mark.parametrize("index, value", SETITEMS, ids=repr)
def test_setitem_like_numpy_and_pytorch(index, value):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ng.from_numpy(a.copy())
    ref = a.copy()
    ref[index] = value
    nvalue = ng.from_numpy(value) if isinstance(value, np.ndarray) else value
    t[index] = nvalue
    # writes copy values: no arithmetic, the same bits
    np.testing.assert_array_equal(t.numpy(), ref)
    assert t._version == 1
    tt = torch.from_numpy(a.copy())
    tidx = torch.from_numpy(index) if isinstance(index, np.ndarray) else index
    tt[tidx] = torch.from_numpy(value) if isinstance(value, np.ndarray) else value
    # writes copy values: no arithmetic, the same bits
    np.testing.assert_array_equal(t.numpy(), tt.numpy())


def test_setitem_with_tensor_value_and_mask():
    x = ng.zeros(5)
    x[x == 0] = 2.0
    x[ng.tensor([0, 4])] = ng.tensor([1.0, 3.0])
    assert x.tolist() == [1.0, 2.0, 2.0, 2.0, 3.0]


def test_setitem_casts_to_the_tensor_dtype():
    x = ng.zeros(3, dtype=ng.int64)
    x[0] = 2
    assert x.dtype is ng.int64 and x.tolist() == [2, 0, 0]
    y = ng.zeros(2)
    y[0] = ng.tensor(3.0, dtype=ng.float64)
    assert y.dtype is ng.float32 and y.tolist() == [3.0, 0.0]


def test_setitem_records_gradients_like_pytorch():
    res = {}
    for lib in (torch, ng):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        v = lib.tensor([10.0, 20.0], requires_grad=True)
        y = x * 2
        y[1:] = v * v
        y[0] = 0.5
        (y * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        res[lib.__name__] = (x.grad.tolist(), v.grad.tolist(), y.grad_fn.name())
    assert res["nbgrad"][:2] == res["torch"][:2]
    assert res["nbgrad"][2] == res["torch"][2].replace("torch::autograd::", "")


def test_set_shares_memory_and_gives_a_leaf_a_new_edge_like_pytorch():
    for lib in (ng, torch):
        x = lib.rand(2, requires_grad=True)
        calls = []
        x.register_hook(lambda g, calls=calls: calls.append(1))
        out = x.clone()
        with lib.no_grad():
            src = lib.ones(3)
            assert x.set_(src) is x
        assert x.shape == (3,) and x._version == 1 and x.is_leaf and x.requires_grad
        with lib.no_grad():
            src.add_(1)
        assert x.tolist() == [2.0, 2.0, 2.0]  # shared memory
        with pytest.raises(RuntimeError, match="to not have been used in the graph"):
            lib.autograd.grad(out.sum(), x)
        x.clone().sum().backward()  # the new edge; the hook went with the leaf
        assert x.grad.tolist() == [1.0, 1.0, 1.0] and calls == [1]
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            x.set_(lib.ones(3))
        with pytest.raises(RuntimeError, match="Could not set tensor of type double to a tensor"):
            lib.zeros(2).set_(lib.zeros(2, dtype=lib.float64))
        y = lib.zeros(2).set_()
        assert y.shape == (0,)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("exponent", [1, 2, 3, 4, 1.0, 2.0, 3.0, 0.5, -1, 2.5, 0])
def test_pow_and_sub_by_a_number_match_torch(dtype, exponent):
    """``**`` and ``-`` with a Python number (the fast path of ``_unary`` and ``_binary``):
    PyTorch's values, dtypes and nodes, at 0 and at negative values too, without warnings."""
    torch = pytest.importorskip("torch")
    values = np.array([-2.0, -0.5, 0.0, 0.5, 3.0])

    def run(lib):
        x = lib.tensor(values.astype(dtype), requires_grad=dtype != "int64")
        y = x**exponent
        z = y - 1.5
        if dtype != "int64":
            z.sum().backward()
        grad = None if x.grad is None else x.grad.numpy()
        return y, z, grad

    if dtype == "int64" and type(exponent) is int and exponent < 0:
        for lib in (ng, torch):
            with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
                run(lib)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = run(ng)
    want = run(torch)
    for a, b in zip(got[:2], want[:2]):
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)
        assert (a.grad_fn is None) == (b.grad_fn is None)
        if a.grad_fn is not None:
            assert a.grad_fn.name() == b.grad_fn.name()
    if got[2] is not None:
        np.testing.assert_allclose(got[2], want[2], rtol=1e-6)


@pytest.mark.parametrize("exponent", [1, 2, 3, 1.0, 2.0, 3.0])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_small_whole_powers_are_torchs_bit_for_bit(dtype, exponent):
    """``x ** 1``, ``** 2`` and ``** 3`` compute as PyTorch's (a copy, ``x * x``,
    ``x * x * x``): the same bits, forward and in double backward, and ``x ** 1`` is a tensor
    of its own, as PyTorch's (writing to it leaves ``x`` as it was)."""
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(3).standard_normal(64).astype(dtype) * 3

    def run(lib):
        x = lib.tensor(values, requires_grad=True)
        y = x**exponent
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        return [t.detach().numpy() for t in (y, g, gg)]

    # bits: the same correctly rounded products, in the same order, as PyTorch's kernels for
    # these exponents (a copy, x * x, x * x * x) and their double backward, on any CPU
    for got, want in zip(run(ng), run(torch)):
        np.testing.assert_array_equal(got, want)
    x = ng.tensor(values)
    y = x**exponent
    y.add_(1.0)
    # x is left as it was: its data, not computed
    np.testing.assert_array_equal(x.numpy(), values)


def test_quiet_ops_warn_nothing_and_leave_numpys_error_state_as_it_was():
    """1 / 0, log(0), overflow: inf and nan silently, as PyTorch, in forward and backward, in a
    context of the caller's or none (``backend.quiet_float_errors``); afterwards NumPy's
    error state, buffer size included, is the caller's again."""

    def run(lib):
        x = lib.tensor([0.0, 1.0, 1000.0], dtype=lib.float64, requires_grad=True)
        ys = [1 / x, x.log(), x**-1.0, x.exp()]  # (rows NumPy would warn on, PyTorch not)
        lib.autograd.backward(ys, [lib.ones_like(y) for y in ys])
        return [y.tolist() for y in ys], x.grad.tolist()

    expected = run(torch)
    old, old_size = np.seterr(all="raise"), np.getbufsize()
    np.setbufsize(16384)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert str(run(ng)) == str(expected)
            with np.errstate(divide="warn", invalid="ignore"):
                assert str(run(ng)) == str(expected)
                assert np.geterr()["divide"] == "warn" and np.geterr()["over"] == "raise"
            assert np.geterr() == dict.fromkeys(("divide", "over", "under", "invalid"), "raise")
            assert np.getbufsize() == 16384
            with pytest.raises(FloatingPointError):
                np.ones(1) / np.zeros(1)
    finally:
        np.seterr(**old)
        np.setbufsize(old_size)


_SPECIAL_VALUES = """
import json, math, sys, warnings
import {lib} as lib
big = 3e38
a = lib.tensor([0.0, big])
x = lib.tensor([0.0, 1.0], requires_grad=True)
with warnings.catch_warnings(record=True) as caught:
    (x * math.inf).sum().backward()
    ys = [
        a * math.inf, math.inf * a, a * 1e10, a + a, lib.tensor([math.inf]) - math.inf,
        lib.tensor([big, big]).sum(), lib.tensor([big, big]).cumsum(0),
        lib.tensor([math.inf]).sin(), a.clone().mul_(math.inf), x.grad,
    ]
    values = str([y.tolist() for y in ys])
    nbgrads = [str(w.message) for w in caught]
    import numpy as np
    np.multiply(np.zeros(1), np.full(1, math.inf))  # the user's own NumPy code
print(json.dumps([values, nbgrads, [str(w.message) for w in caught][len(nbgrads):]]))
"""


def test_the_other_ops_warn_nothing_on_special_values_as_pytorch():
    """``0 * inf``, an overflow in ``mul``/``add``/``sum``/``cumsum``, ``sin(inf)``, an
    in-place ``mul_`` and the backward of ``x * inf``: the values PyTorch gives and no warning
    (NOTE [Float warnings of the other ops] in nbgrad/backend.py), while the user's own NumPy
    code still warns. In a fresh interpreter, as a user's: the filter is set when nbgrad is
    imported, and pytest drops the filters set while it collects."""
    out = {}
    for lib in ("torch", "nbgrad"):
        code = _SPECIAL_VALUES.format(lib=lib)
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        out[lib] = json.loads(run.stdout.splitlines()[-1])
    assert out["nbgrad"][0] == out["torch"][0]
    assert out["nbgrad"][1] == []
    assert out["nbgrad"][2] == ["invalid value encountered in multiply"]


_INDEX_KEYS = [
    # (name of the tensor, key): the same call on torch and nbgrad
    ("x", 1),
    ("x", -1),
    ("x", 3),
    ("x", -4),
    ("x", np.int64(2)),
    ("x", np.int64(7)),
    ("x", True),
    ("x", False),
    ("m", (1, 5)),
    ("m", (None, 5)),
    ("m", (None, 1, 5)),
    ("m", (Ellipsis, 5)),
    ("m", (1, None, 5)),
    ("m", (slice(None), None, 5)),
    ("m", (True, 1)),
    ("m", (1, False)),
    ("m", (1, 2, 3)),
    ("k", ([0], 5)),
    ("k", (0, slice(None), 7)),
    ("k", (None, Ellipsis, 9)),
    ("k", (1, -1)),
    ("k", (slice(1, None), 2)),
    ("s", 0),
    ("s", 1),
    ("s", -1),
    ("s", slice(0, 1)),
    ("s", slice(None)),
    ("s", Ellipsis),
    ("s", None),
    ("s", True),
    ("s", False),
    ("s", (0,)),
    ("s", [0]),
    ("s", (None, 0)),
    ("x", slice(None)),
    ("x", Ellipsis),
    ("m", (slice(None), slice(None))),
    ("m", slice(None)),
    ("m", (Ellipsis, slice(None))),
    ("x", slice(None, None, 1)),
    ("x", (None,)),
    ("x", ()),
    ("s", ()),
    ("m", (1, 2)),
    ("m", (-1, slice(None, None, 2))),
    ("m", (slice(None), 4)),
    ("m", (slice(5, 1),)),
    ("k", (0, 0, 0)),
    ("k", (slice(None), -2, slice(1, 3))),
]


@pytest.mark.parametrize("name, key", _INDEX_KEYS, ids=[f"{n}[{k!r}]" for n, k in _INDEX_KEYS])
def test_indexing_as_torch(name, key):
    """Basic indexing, including its errors, as PyTorch: the same IndexError and message (the
    index's place in the key names the dimension; a 0-d tensor's own messages), or the same
    values and shape and the same gradient (``x[i]`` takes a select of its own)."""
    torch = pytest.importorskip("torch")

    def run(lib):
        shapes = {"x": (3,), "m": (2, 4), "k": (2, 3, 4), "s": ()}
        values = np.arange(np.prod(shapes[name]), dtype=np.float64).reshape(shapes[name]) + 1
        t = lib.tensor(values, requires_grad=True)
        try:
            y = t[key]
        except IndexError as e:
            return str(e)
        (y * y).sum().backward()
        return y.detach().numpy(), t.grad.numpy(), y.grad_fn.name() if y.grad_fn else None

    got, want = run(ng), run(torch)
    if isinstance(want, str):
        assert got == want
        return
    for a, b in zip(got[:2], want[:2]):
        assert a.shape == b.shape
        # bits: whole numbers 1..24, whose squares and gradients 2 * y are exact
        np.testing.assert_array_equal(a, b)
    assert got[2] == want[2]


# ---- creation functions: their overloads, as PyTorch's -------------------------------------------
CREATION = [
    "L.zeros(2, 3)",
    "L.zeros((2, 3))",
    "L.zeros([2, 3])",
    "L.zeros(size=(2, 3))",
    "L.zeros(L.Size([2, 3]))",
    "L.zeros(())",
    "L.ones(size=[2])",
    "L.empty(size=(2,)).shape",
    "L.empty(2, 3).shape",
    "L.rand(size=(2,)).shape",
    "L.randn(size=(2, 1)).shape",
    "L.rand(2, dtype=L.float64).dtype",
    "L.randint(5, (3,)).shape",
    "L.randint(1, 5, (3,)).shape",
    "L.randint(5, size=(3,)).shape",
    "L.randint(1, 5, size=(3,)).shape",
    "L.randint(low=1, high=5, size=(3,)).shape",
    "L.randint(high=5, size=(3,)).shape",
    "L.randint(5, [2, 2]).dtype",
    "L.randint(2, 5, L.Size([2]), dtype=L.float32).dtype",
    "L.randint(3, (2,)).min() >= 0",
    "L.randint(5, 3, (2,))",
    "L.arange(5)",
    "L.arange(5.0)",
    "L.arange(1, 5)",
    "L.arange(1, 5, 2)",
    "L.arange(end=5)",
    "L.arange(start=1, end=5)",
    "L.arange(0, 1, 0.25)",
    "L.linspace(0, 1, steps=5)",
    "L.linspace(start=0, end=1, steps=3)",
    "L.full((2,), True)",
    "L.full((2,), 3)",
    "L.full(size=(2,), fill_value=2.5)",
    "L.eye(n=2, m=3)",
    "L.full_like(L.ones(2), 7)",
    "L.zeros_like(L.ones(2, dtype=L.int64))",
    "L.rand_like(L.ones(2, dtype=L.float64)).dtype",
    "L.randn_like(L.ones(2, 3)).shape",
    "L.zeros(2, sizes=3)",
]


def _plain(value):
    if hasattr(value, "tolist") and hasattr(value, "dtype"):
        return value.tolist(), str(value.dtype).rsplit(".", 1)[-1]
    if isinstance(value, tuple):  # a Size
        return tuple(value)
    return str(value).rsplit(".", 1)[-1]


@pytest.mark.parametrize("expr", CREATION)
def test_creation_overloads(expr):
    same(lambda L: _plain(eval(expr)))


# ---- transpose and swapaxes of a 0-d tensor ------------------------------------------------------
@pytest.mark.parametrize("dims", [(0, 0), (0, -1), (-1, -1), (0, 1), (1, 0)])
@pytest.mark.parametrize("name", ["transpose", "swapaxes", "swapdims"])
def test_transpose_of_a_0d_tensor(name, dims):
    def run(lib):
        x = lib.tensor(2.5, requires_grad=True)
        y = getattr(x, name)(*dims)
        (g,) = lib.autograd.grad(y * 3, x)
        return y.item(), y.shape == (), y.grad_fn.name(), g.item(), y._base is x

    same(run)
    same(lambda lib: getattr(lib, name)(lib.tensor(1.0), *dims).item())


# ---- in-place ops on expanded tensors ------------------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.ones(3, 4).expand(3, 4),  # no stride 0: allowed
        lambda lib: lib.ones(3, 4).expand(-1, 4),
        lambda lib: lib.ones(2, 1, 4).expand(2, 1, 4),
        lambda lib: lib.ones(1, 4).expand(3, 4),  # a real overlap: PyTorch's error
        lambda lib: lib.ones(4).expand(3, 4),
        lambda lib: lib.ones(3, 1).expand(3, 4),
        lambda lib: lib.ones(1, 4).expand(1, 4),
        lambda lib: lib.ones(1).expand(1),
        lambda lib: lib.ones(()).expand(2),
    ],
)
@pytest.mark.parametrize(
    "change", [lambda t: t.add_(1), lambda t: t.mul_(2), lambda t: t.zero_(), lambda t: t.fill_(3)]
)
def test_in_place_on_an_expanded_tensor(make, change):
    def run(lib):
        t = make(lib)
        change(t)
        return t.tolist()

    same(run)


@pytest.mark.parametrize(
    "cast", ["long", "int", "bool", "to_int64", "type_int32", "double", "half"]
)
def test_a_cast_to_an_integral_dtype_does_not_require_grad(cast):
    """As PyTorch's: only floating results are differentiable, so an integral or bool cast of a
    tensor that requires grad has no history; a floating cast records ``ToCopyBackward0``."""
    import torch

    seen = []
    for lib in (ng, torch):
        x = lib.ones(3, requires_grad=True)
        if cast == "to_int64":
            y = x.to(lib.int64)
        elif cast == "type_int32":
            y = x.type(lib.int32)
        else:
            y = getattr(x, cast)()
        seen.append((str(y.dtype).split(".")[-1], y.requires_grad, type(y.grad_fn).__name__))
    assert seen[0] == seen[1]
