"""The function forms (nbgrad/_functions.py): PyTorch's ``out=`` keyword, against torch."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import nbgrad as ng
from nbgrad import _functions

torch = pytest.importorskip("torch")

# (function, arguments: "x"/"y" are 2x3 float tensors, "i" an index, "m" a 2x3x2 tensor)
OUT_CASES = [
    ("mul", ("x", "y")),
    ("add", ("x", 2.0)),
    ("sub", ("x", "y")),
    ("div", ("x", "y")),
    ("pow", ("x", 2)),
    ("exp", ("x",)),
    ("abs", ("x",)),
    ("tanh", ("x",)),
    ("clamp", ("x", -0.5, 0.5)),
    ("maximum", ("x", "y")),
    ("sum", ("x", 1)),
    ("mean", ("x", 0)),
    ("prod", ("x", 1)),
    ("amax", ("x", 1)),
    ("argmax", ("x", 1)),
    ("all", ("x",)),
    ("var", ("x", 1)),
    ("logsumexp", ("x", 1)),
    ("cumsum", ("x", 1)),
    ("tril", ("x",)),
    ("matmul", ("x", "m")),
    ("mm", ("x", "yt")),
    ("gather", (("x", 1, "i"))),
    ("index_select", ("x", 1, "i1")),
    ("lt", ("x", "y")),
]


def _inputs(lib, requires_grad=False):
    rng = np.random.default_rng(0)
    values = {
        "x": rng.standard_normal((2, 3)),
        "y": rng.standard_normal((2, 3)) + 3,
        "yt": rng.standard_normal((3, 2)),
        "m": rng.standard_normal((2, 3, 2)),
    }
    made = {k: lib.tensor(v, requires_grad=requires_grad) for k, v in values.items()}
    made["i"] = lib.tensor([[0, 2], [1, 1]])
    made["i1"] = lib.tensor([2, 0])
    return made


def _args(lib, spec, requires_grad=False):
    made = _inputs(lib, requires_grad)
    return [made[a] if isinstance(a, str) else a for a in spec]


@pytest.mark.parametrize(("name", "spec"), OUT_CASES, ids=[c[0] for c in OUT_CASES])
def test_out_writes_the_result_as_torch(name, spec):
    results = []
    for lib in (torch, ng):
        fn = getattr(lib, name)
        expected = fn(*_args(lib, spec))
        out = lib.empty(0, dtype=expected.dtype)
        returned = fn(*_args(lib, spec), out=out)
        assert returned is out
        assert out.shape == expected.shape
        results.append(out.numpy())
        np.testing.assert_allclose(out.numpy(), expected.numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12)


NOT_DIFFERENTIABLE = ("argmax", "all", "lt")


@pytest.mark.parametrize(("name", "spec"), OUT_CASES, ids=[c[0] for c in OUT_CASES])
def test_out_refuses_inputs_that_require_grad_as_torch(name, spec):
    messages = []
    for lib in (torch, ng):
        fn = getattr(lib, name)
        dtype = fn(*_args(lib, spec)).dtype
        out = lib.zeros(1, dtype=dtype)
        if name in NOT_DIFFERENTIABLE:  # no gradient would flow: allowed
            fn(*_args(lib, spec, requires_grad=True), out=lib.empty(0, dtype=dtype))
            continue
        with pytest.raises(RuntimeError) as info:
            fn(*_args(lib, spec, requires_grad=True), out=out)
        messages.append(str(info.value))
        assert out.tolist() == [0]  # nothing written
        with lib.no_grad():  # allowed in no-grad mode
            fn(*_args(lib, spec, requires_grad=True), out=lib.empty(0, dtype=dtype))
    if messages:
        assert messages[1] == messages[0]
        assert "out=... arguments don't support automatic differentiation" in messages[1]


def test_out_that_requires_grad_raises_and_resizes_with_torchs_warning():
    messages = []
    for lib in (torch, ng):
        a, b = lib.ones(2, 2), lib.ones(2, 2)
        with pytest.raises(RuntimeError) as info:
            lib.mul(a, b, out=lib.zeros(2, 2, requires_grad=True))
        messages.append(str(info.value))
        out = lib.zeros(3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.mul(a, b, out=out)
        assert out.shape == (2, 2) and out.tolist() == [[1.0, 1.0], [1.0, 1.0]]
        warned = [str(w.message) for w in caught]
        assert len(warned) == 1 and warned[0].startswith("An output with one or more elements")
        version = out._version
        lib.add(a, 1, out=out)
        assert out._version > version
    assert messages[1] == messages[0]


def test_out_keeps_its_dtype_and_refuses_a_narrowing_cast_as_torch():
    messages = []
    for lib in (torch, ng):
        out = lib.zeros(2, dtype=lib.float64)
        lib.add(lib.ones(2), 1, out=out)
        assert out.dtype == lib.float64 and out.tolist() == [2.0, 2.0]
        with pytest.raises(RuntimeError) as info:
            lib.add(lib.ones(2), 1, out=lib.zeros(2, dtype=lib.int64))
        messages.append(str(info.value))
    assert messages[1] == messages[0]


def test_out_is_keyword_only_in_the_signature():
    for name, _ in OUT_CASES:
        param = inspect.signature(getattr(_functions, name)).parameters["out"]
        assert param.kind is inspect.Parameter.KEYWORD_ONLY and param.default is None


# ---- PyTorch's wider surface: dtype helpers, predicates and the generator's state ---------
DTYPE_NAMES = ["float16", "float32", "float64"]
INT_NAMES = ["uint8", "int8", "int16", "int32", "int64", "bool"]


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_finfo_matches_torch(name):
    ours, theirs = ng.finfo(getattr(ng, name)), torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("name", INT_NAMES[:-1])
def test_iinfo_matches_torch(name):
    ours, theirs = ng.iinfo(getattr(ng, name)), torch.iinfo(getattr(torch, name))
    assert (ours.bits, ours.max, ours.min, ours.dtype) == (
        theirs.bits,
        theirs.max,
        theirs.min,
        theirs.dtype,
    )


def test_finfo_and_iinfo_refuse_the_other_kind_as_torch():
    for lib in (ng, torch):
        with pytest.raises(TypeError, match="requires a floating point input type"):
            lib.finfo(lib.int32)
        with pytest.raises(TypeError, match="requires an integer input type"):
            lib.iinfo(lib.float32)


@pytest.mark.parametrize("a", DTYPE_NAMES + INT_NAMES)
@pytest.mark.parametrize("b", DTYPE_NAMES + INT_NAMES)
def test_promote_types_and_can_cast_match_torch(a, b):
    assert (
        str(ng.promote_types(getattr(ng, a), getattr(ng, b))).split(".")[-1]
        == str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[-1]
    )
    assert ng.can_cast(getattr(ng, a), getattr(ng, b)) == torch.can_cast(
        getattr(torch, a), getattr(torch, b)
    )


@pytest.mark.parametrize(
    "pair", [([1, 2], 1.0), ([1.0], 2), (2, 3.0), ([True], 2), ([1], [2.5]), (1, True)]
)
def test_result_type_matches_torch(pair):
    def args(lib):
        return [lib.tensor(p) if isinstance(p, list) else p for p in pair]

    assert (
        str(ng.result_type(*args(ng))).split(".")[-1]
        == str(torch.result_type(*args(torch))).split(".")[-1]
    )


def test_tensor_predicates_match_torch():
    cases = [[1.5], [0], [2], [True], []]
    for values in cases:
        ours, theirs = ng.tensor(values), torch.tensor(values)
        assert ng.is_floating_point(ours) == torch.is_floating_point(theirs)
        assert ng.is_signed(ours) == torch.is_signed(theirs)
        assert ng.is_same_size(ours, ng.zeros(1)) == torch.is_same_size(theirs, torch.zeros(1))
        if len(values) == 1:
            assert ng.is_nonzero(ours) == torch.is_nonzero(theirs)
    for lib in (ng, torch):
        with pytest.raises(RuntimeError, match="with no values is ambiguous"):
            lib.is_nonzero(lib.tensor([]))
        with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
            lib.is_nonzero(lib.tensor([1, 2]))
    assert ng.get_device(ng.zeros(2)) == torch.get_device(torch.zeros(2)) == -1


def test_scalar_tensor_asarray_and_range_match_torch():
    for lib in (ng, torch):
        s = lib.scalar_tensor(3)
        assert s.shape == () and str(s.dtype).endswith("float32") and s.item() == 3
    t = ng.tensor([1.0, 2.0])
    assert ng.asarray(t) is t
    assert ng.asarray(t, copy=True) is not t
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        r = ng.range(1, 4)
    # whole numbers 1..4: exact
    np.testing.assert_array_equal(r.numpy(), torch.range(1, 4).numpy())


def test_rng_state_restores_the_same_draws():
    ng.manual_seed(5)
    state = ng.get_rng_state()
    assert state.dtype is ng.uint8
    first = ng.randn(4)
    ng.set_rng_state(state)
    # the same state: the same draws by the same code, bits included
    np.testing.assert_array_equal(ng.randn(4).numpy(), first.numpy())
    assert ng.initial_seed() == 5
    assert ng.manual_seed(7) is ng.default_generator
    s = ng.seed()
    assert ng.initial_seed() == s
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        ng.set_rng_state(ng.zeros(3))
    with pytest.raises(RuntimeError, match="CPUGeneratorImplState of size"):
        ng.set_rng_state(ng.zeros(3, dtype=ng.uint8))


def test_a_generator_has_its_own_state():
    g = ng.Generator().manual_seed(3)
    assert g.initial_seed() == 3
    state = g.get_state()
    a = g._rng.random(3)
    g.set_state(state)
    # the same state: the same draws by the same code, bits included
    np.testing.assert_array_equal(g._rng.random(3), a)
    assert ng.Generator().initial_seed() == torch.Generator().initial_seed()
