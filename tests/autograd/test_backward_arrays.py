"""NOTE [Backward on arrays] (nbgrad/_graph/table_node.py): without create_graph, a generated
``apply`` runs the formulas made of operators and row functions on NumPy arrays. These tests
check which formulas qualify, that the gradients are those of the Tensor path (create_graph,
bit for bit) and PyTorch's (dtypes included, for mixed dtypes and 0-d tensors), and that saved
tensor hooks, in-place checks, freed graphs, tensor hooks and retain_grad behave as PyTorch's.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import nbgrad as ng
from nbgrad._graph.array_formulas import returns_grad, runs_on_arrays
from nbgrad._graph.table_node import TableNode
from nbgrad._tensor import creation as _C
from nbgrad._tensor.dispatch import _dispatch
from nbgrad.autograd.graph import GraphObserver, observe
from nbgrad.derivatives import OPS
from nbgrad.derivatives.pointwise import _pow_backward, tanh_backward
from tests import test_derivatives as _derivatives

LIBS = pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])


def _np(t):
    return np.asarray(t.detach())


# -- which formulas run on arrays -----------------------------------------------------------------
def _closure(k):
    return lambda grad: grad * k


@pytest.mark.parametrize(
    "formula, expected",
    [
        (lambda grad, other: grad * other, True),
        (lambda grad, self, other: -grad * ((self / other) / other), True),
        (lambda grad, alpha: grad if alpha == 1 else grad * alpha, True),
        (lambda grad, result: tanh_backward(grad, result), True),
        (lambda grad, self: grad * self.cos(), False),  # a method: Tensor only
        (lambda grad, result: -0.5 * grad * result**3, False),  # ``**``: Tensor pow differs
        (lambda grad: _C.zeros_like(grad), False),  # a function that is no row function
        (lambda grad, self, exponent: _pow_backward(grad, self, exponent), False),
        (OPS["pow"].formulas["self"], True),  # ``power``, ``zeros_like``, a condition
        (OPS["sum"].formulas["self"], True),  # the ``expand`` row, keyword attributes
        (lambda grad, a, b: grad @ a, False),
        (lambda grad: grad * "2", False),
        (_closure(2.0), False),
    ],
)
def test_which_formulas_run_on_arrays(formula, expected):
    assert runs_on_arrays(formula) is expected


def test_formulas_that_give_grad_back():
    assert returns_grad(lambda grad: grad)
    assert returns_grad(lambda grad, alpha: grad)
    assert not returns_grad(lambda grad: -grad)
    assert not returns_grad(lambda grad, other: other)


@pytest.mark.parametrize(
    "row", ["mul", "div", "sub", "neg", "exp", "sin", "tanh", "relu", "pow", "sum"]
)
def test_hot_rows_have_the_array_path(row):
    assert "NOTE [Backward on arrays]" in OPS[row].node_class._apply_source


@pytest.mark.parametrize("row", ["pow_tensor", "sum_dim", "mm", "clone", "frac"])
def test_other_rows_keep_the_tensor_path_only(row):
    assert "NOTE [Backward on arrays]" not in OPS[row].node_class._apply_source


# -- gradients: the Tensor path's and PyTorch's ---------------------------------------------------
def _chain(lib, x, y):
    h = x
    for i in range(6):
        h = h * y if i % 3 == 0 else (h - 0.25 * y).tanh() if i % 3 == 1 else (h / 1.5).sin()
    return ((h * 2 + 1).relu() + (-h).exp() / (h * h + 1)).cos()


def _mlp0d(lib, x, y):
    act = x * y + 0.5
    act = act.relu() * (y - x) + x / (y + 3)
    return act.sigmoid() * 3 - act.atan()


GRAPHS = {"chain": _chain, "mlp0d": _mlp0d}
# (shape and dtype of x, of y): one dtype, two dtypes, a 0-d tensor with a vector, 0-d only
INPUTS = [
    (((5,), "float64"), ((5,), "float64")),
    (((5,), "float32"), ((5,), "float32")),
    (((5,), "float32"), ((5,), "float64")),
    (((5,), "float32"), ((), "float64")),
    (((2, 3), "float64"), ((3,), "float32")),
    (((), "float64"), ((), "float64")),
    (((), "float32"), ((), "float64")),
]


def _leaves(lib, specs, seed):
    rng = np.random.default_rng(seed)
    out = []
    for shape, dtype in specs:
        values = rng.uniform(0.3, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
        out.append(lib.tensor(np.asarray(values, dtype=dtype), requires_grad=True))
    return out


@pytest.mark.parametrize("graph", GRAPHS)
@pytest.mark.parametrize("specs", INPUTS, ids=lambda s: "-".join(f"{d}{list(sh)}" for sh, d in s))
def test_gradients_match_the_tensor_path_and_torch(graph, specs):
    fn = GRAPHS[graph]
    x, y = _leaves(ng, specs, 3)
    on_arrays = ng.autograd.grad(fn(ng, x, y).sum(), (x, y))
    on_tensors = ng.autograd.grad(fn(ng, x, y).sum(), (x, y), create_graph=True)
    for a, t in zip(on_arrays, on_tensors):
        assert a.dtype == t.dtype and not a.requires_grad
        # bits: both paths run the same formulas with the same kernels on the same arrays
        # (NOTE [Backward on arrays]); PyTorch's sums differ in order, hence its tolerance below
        np.testing.assert_array_equal(_np(a), _np(t))
    tx, ty = _leaves(torch, specs, 3)
    expected = torch.autograd.grad(fn(torch, tx, ty).sum(), (tx, ty))
    for a, e in zip(on_arrays, expected):
        assert str(a.dtype) == str(e.dtype).replace("torch.", "nbgrad.")
        # a float32 leaf makes float32 sums (in PyTorch's order, not NumPy's) of every gradient
        tol = 1e-5 if "float32" in str(specs) else 1e-12
        np.testing.assert_allclose(_np(a), e.numpy(), rtol=tol, atol=tol)


@LIBS
def test_hooks_and_retain_grad_on_the_array_path(lib):
    x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
    y = (x * 3.0).tanh()
    y.retain_grad()
    y.register_hook(lambda g: g * 2)
    z = y * x
    z.register_hook(lambda g: g + 1)
    z.sum().backward()
    expected = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    # checked against the closed form: z = tanh(3x) x, dz = 2 (each z hook adds 1 to 1)
    t = np.tanh(3 * expected.numpy())
    dy = 2 * expected.numpy()
    np.testing.assert_allclose(_np(y.grad), 2 * dy)
    np.testing.assert_allclose(_np(x.grad), 2 * t + 2 * dy * 3 * (1 - t * t))


@LIBS
def test_unpack_hooks_run_once_per_saved_tensor(lib):
    calls = []

    def unpack(t):
        calls.append(tuple(t.shape))
        return t

    x = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([2.0, 3.0], dtype=lib.float64, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
        out = ((x * w).tanh() * 2.0).sum()
    out.backward()
    assert sorted(calls) == [(2,), (2,), (2,)]  # x and w for mul, the result of tanh
    np.testing.assert_allclose(_np(x.grad), _np(w) * 2 * (1 - np.tanh(_np(x * w)) ** 2))


@LIBS
def test_an_in_place_change_of_a_saved_result_is_caught(lib):
    x = lib.tensor([0.5, -1.0], requires_grad=True)
    y = (x * 1.0).tanh()
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@LIBS
def test_an_in_place_change_of_a_saved_input_is_caught(lib):
    x = lib.tensor([0.5, -1.0], requires_grad=True)
    w = lib.tensor([2.0, 3.0], requires_grad=True)
    a = x * 1.0
    b = a * w
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


@LIBS
def test_a_second_backward_through_a_freed_graph_raises(lib):
    x = lib.tensor([0.5, -1.0], requires_grad=True)
    out = ((x * x).sin() * 2.0).sum()
    out.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward()


@LIBS
def test_pow_and_sum_formulas_on_arrays_as_torch(lib):
    """``pow``'s formula on arrays: 0 for ``x ** 0`` even at 0 and for an inf gradient, inf
    and nan where PyTorch has them; ``sum``'s expands a gradient that requires grad as a view
    that requires grad (a hook sees it), and a 0-d gradient into a writable view."""
    x = lib.tensor([0.0, 2.0, -1.0], dtype=lib.float64, requires_grad=True)
    (g0,) = lib.autograd.grad((x**0).sum(), x, lib.tensor(float("inf"), dtype=lib.float64))
    (g1,) = lib.autograd.grad((x**-1.0).sum(), x)
    (g3,) = lib.autograd.grad((x**3).sum(), x)
    assert g0.tolist() == [0.0, 0.0, 0.0]
    assert g1.tolist() == [-float("inf"), -0.25, -1.0]
    assert g3.tolist() == [0.0, 12.0, 3.0]
    seen = []
    t = x * 2.0
    t.register_hook(lambda g: seen.append((g.requires_grad, g.tolist())))
    t.sum().backward(lib.tensor(3.0, dtype=lib.float64, requires_grad=True))
    assert seen == [(True, [3.0, 3.0, 3.0])] and not x.grad.requires_grad

    class Twice(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            return g.mul_(2)  # the expanded gradient of shape (1,) is writable

    y = lib.tensor([1.5], requires_grad=True)
    Twice.apply(y).sum().backward()
    assert y.grad.tolist() == [2.0]


def test_pow_and_sum_run_no_tensor_op_in_backward():
    """Their formulas take the array path (a saved shape, keyword attributes and a condition
    included): no Tensor op runs; under create_graph they are recorded as before."""
    ops = []

    class Ops(GraphObserver):
        def forward(self, op, args, attrs, result, elapsed):
            ops.append(op.name)

    x = ng.tensor([0.5, -1.0, 2.0], dtype=ng.float64, requires_grad=True)
    y = (x**3).sum()
    with observe(Ops()):
        y.backward(retain_graph=True)
        assert ops == []
        ng.autograd.grad(y, x, create_graph=True)
    assert ops == ["expand", "mul", "pow", "mul"]


def test_double_backward_still_records_the_formulas():
    x = ng.tensor([0.5, -1.0, 2.0], dtype=ng.float64, requires_grad=True)
    (g,) = ng.autograd.grad((x.tanh() * x).sin().sum(), x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    (h,) = ng.autograd.grad(g.sum(), x)
    tx = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (tg,) = torch.autograd.grad((tx.tanh() * tx).sin().sum(), tx, create_graph=True)
    (th,) = torch.autograd.grad(tg.sum(), tx)
    np.testing.assert_allclose(_np(h), th.numpy(), rtol=1e-12)


# -- NOTE [0-d gradients as NumPy scalars] -------------------------------------------------------
ARRAY_ROWS = sorted(
    name
    for name, info in OPS.items()
    if "NOTE [Backward on arrays]" in (getattr(info.node_class, "_apply_source", "") or "")
)
ONE_D_ROWS = {"dot", "vdot"}  # (their inputs are 1-d: their gradient has the array path only)
# rows whose cases take no 0-d tensor, reached here on 0-d ones
MORE_0D = [
    _derivatives.Case("mul_scalar", lambda x: _dispatch(OPS["mul_scalar"], (x,), {"other": 1.5}),
                      None, [((),)]),
    _derivatives.Case("div_scalar", lambda x: _dispatch(OPS["div_scalar"], (x,), {"other": 3}),
                      None, [((),)]),
    _derivatives.Case("leaky_relu_", lambda x: ng.nn.functional.leaky_relu(x * 1, 0.2, True),
                      None, [((),)]),
    _derivatives.Case("addcdiv", lambda x, y, z: x.addcdiv(y, z, value=-2), None, [((), (), ())]),
]  # fmt: skip

# each case of an array-path row that takes a 0-d tensor, with all of its inputs made 0-d
ZERO_D = [
    pytest.param(case, dtype, id=f"{case.op}-{k}-{dtype}")
    for k, case in enumerate(_derivatives.CASES + MORE_0D)
    if case.op in ARRAY_ROWS
    and any(all(type(s) is tuple for s in sample) and () in sample for sample in case.samples)
    for dtype in ("float64", "float32")
]


def test_every_array_row_runs_on_0d_scalars():
    assert {p.values[0].op for p in ZERO_D} == set(ARRAY_ROWS) - ONE_D_ROWS


@pytest.mark.parametrize("case, dtype", ZERO_D)
def test_0d_gradients_on_scalars_match_the_tensor_path(case, dtype):
    """The array path on NumPy scalars gives, bit for bit, what the formulas give on Tensors
    (``TableNode.apply``), and wraps 0-d arrays of the gradient's dtype."""
    sample = tuple(() for _ in case.samples[0])
    values = _derivatives._sample_values(case, sample, 0)
    inputs = [ng.tensor(v.astype(dtype), requires_grad=True) for v in values]
    outputs = _derivatives._as_tuple(case.fn(*inputs))
    nodes = [
        n
        for n in _derivatives._reachable_nodes(outputs)
        if "NOTE [Backward on arrays]" in getattr(type(n), "_apply_source", "")
    ]
    assert nodes, f"{case.op}: no node with the array path"
    for node in nodes:
        (meta,) = node._input_metadata_
        grads = [ng.tensor(np.asarray(-1.375, dtype=meta.dtype.np))]
        with ng.no_grad():
            generated = node.apply(list(grads))
            walked = TableNode.apply(node, list(grads))
        for g, w in zip(generated, walked, strict=True):
            assert (g is None) == (w is None), node.name()
            if g is not None:
                assert type(g._data) is np.ndarray and g.dtype == w.dtype, node.name()
                # bits, not a tolerance: both paths run the same formula, with the same kernels
                # on the same values (NOTE [0-d gradients as NumPy scalars])
                np.testing.assert_array_equal(_np(g), _np(w), err_msg=node.name())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("exponent", [-0.5, 1.5, 0.3, -3.0, 2.5])
def test_pow_of_a_0d_tensor_has_the_bits_of_the_tensor_path(exponent, dtype):
    """``x ** e``'s gradient, ``grad * e * x ** (e - 1)``, on a 0-d ``x``: the array path takes
    NumPy scalars, on which ``**`` is C's ``pow``, where the Tensor path's is the ``power``
    ufunc's loop (a SIMD ``pow`` on a CPU with AVX-512). Both must call the row's one kernel
    on the same input, so the bits agree on every CPU (NOTE [pow of a NumPy scalar])."""
    values = np.random.default_rng(5).uniform(0.05, 20.0, 100).astype(dtype)
    for v in values:
        x = ng.tensor(v, requires_grad=True)
        (on_arrays,) = ng.autograd.grad(x**exponent, x)
        (on_tensors,) = ng.autograd.grad(x**exponent, x, create_graph=True)
        np.testing.assert_array_equal(_np(on_arrays), _np(on_tensors), err_msg=repr(v))
