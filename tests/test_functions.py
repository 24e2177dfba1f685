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
