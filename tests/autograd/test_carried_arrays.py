"""NOTE [Gradients carried as arrays] (nbgrad/_graph/table_node.py): in a pass that nothing
watches, gradients travel between row nodes as arrays and NumPy scalars, and are wrapped where
Tensor code takes over. These tests check that every row's ``_apply_arrays`` computes what its
``apply`` computes, that whole passes give bit for bit the gradients of a pass on Tensors only
(``graph_task.CARRY_ARRAYS = False``) and PyTorch's, that the path is taken, that an array held
by anyone but one input buffer is never summed into, and that hooks, Functions, ``grad()`` and
leaves see Tensors.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import nbgrad as ng
from nbgrad import backend
from nbgrad._graph.table_node import RAW_GRADS
from nbgrad.autograd import graph_task as _graph_task
from nbgrad.autograd import input_buffer as _input_buffer
from nbgrad.autograd.graph import GraphObserver, observe
from nbgrad.derivatives import OPS
from tests import test_derivatives as _derivatives
from tests.autograd.test_backward_arrays import ARRAY_ROWS, GRAPHS, INPUTS, ZERO_D, _leaves, _np
from tests.benchmarks.engine import w9_loss


@pytest.fixture
def tensors_only(monkeypatch):
    monkeypatch.setattr(_graph_task, "CARRY_ARRAYS", False)


def _array_nodes(case, shapes, dtype):
    values = _derivatives._sample_values(case, shapes, 0)
    inputs = [ng.tensor(np.asarray(v, dtype=dtype), requires_grad=True) for v in values]
    outputs = _derivatives._as_tuple(case.fn(*inputs))
    return [
        n
        for n in _derivatives._reachable_nodes(outputs)
        if type(n)._apply_arrays is not None and n._next_fns
    ]


def _check_against_apply(node, grad):
    """``_apply_arrays`` on ``grad`` as a Tensor, an array and (0-d) a NumPy scalar gives what
    ``apply`` gives on the Tensor: same values, dtypes and shapes, as arrays."""
    with ng.no_grad():
        expected = node.apply([ng.tensor(grad)])
        for given in (ng.tensor(grad), grad, grad[()]):
            carried = node._apply_arrays([given])
            for c, e in zip(carried, expected, strict=True):
                assert (c is None) == (e is None), node.name()
                if c is None:
                    continue
                assert type(c) in RAW_GRADS, (node.name(), type(c))
                assert c.dtype is e._data.dtype and c.shape == e._data.shape, node.name()
                # bits: one generated apply, the same formulas and kernels on the same values
                np.testing.assert_array_equal(np.asarray(c), _np(e), err_msg=node.name())


def test_rows_with_the_array_path_carry_arrays():
    assert ARRAY_ROWS
    for name in ARRAY_ROWS:
        assert OPS[name].node_class._apply_arrays is not None, name
    for name in ("pow_tensor", "sum_dim", "mm", "clone"):
        assert OPS[name].node_class._apply_arrays is None, name


@pytest.mark.parametrize("case, dtype", ZERO_D)
def test_apply_arrays_on_0d_matches_apply(case, dtype):
    nodes = _array_nodes(case, tuple(() for _ in case.samples[0]), dtype)
    assert nodes, case.op
    for node in nodes:
        (meta,) = node._input_metadata_
        _check_against_apply(node, np.asarray(-1.375, dtype=meta.dtype.np))


SHAPED = [
    pytest.param(case, dtype, id=f"{case.op}-{k}-{dtype}")
    for k, case in enumerate(_derivatives.CASES)
    if case.op in ARRAY_ROWS and all(type(s) is tuple for s in case.samples[0])
    for dtype in ("float64", "float32")
]


def test_every_array_row_has_a_shaped_case():
    assert {p.values[0].op for p in SHAPED} == set(ARRAY_ROWS)


@pytest.mark.parametrize("case, dtype", SHAPED)
def test_apply_arrays_on_arrays_matches_apply(case, dtype):
    for node in _array_nodes(case, case.samples[0], dtype):
        (meta,) = node._input_metadata_
        grad = np.random.default_rng(1).uniform(-2, 2, meta.shape).astype(meta.dtype.np)
        _check_against_apply(node, np.asarray(grad))


# -- whole passes ---------------------------------------------------------------------------------
def _mlp_grads(lib, dtype):
    rng = np.random.default_rng(4)
    leaf = lambda v: lib.tensor(v, dtype=getattr(lib, dtype), requires_grad=True)  # noqa: E731
    const = lambda v: lib.tensor(v, dtype=getattr(lib, dtype))  # noqa: E731
    layers = [
        ([[leaf(v) for v in row] for row in rng.uniform(-1, 1, (o, i))], [leaf(v) for v in b])
        for i, o, b in ((2, 4, rng.uniform(-1, 1, 4)), (4, 1, rng.uniform(-1, 1, 1)))
    ]
    xs = [[const(v) for v in x] for x in rng.standard_normal((5, 2))]
    ys = [const(v) for v in rng.standard_normal(5)]
    w9_loss(xs, ys, layers).backward()  # (the benchmark's W9 MLP, smaller)
    return [p.grad for w, b in layers for p in [*(q for row in w for q in row), *b]]


def _passes(monkeypatch, run):
    carried = run()
    monkeypatch.setattr(_graph_task, "CARRY_ARRAYS", False)
    try:
        on_tensors = run()
    finally:
        monkeypatch.setattr(_graph_task, "CARRY_ARRAYS", True)
    return carried, on_tensors


def _assert_same(carried, on_tensors):
    assert len(carried) == len(on_tensors)
    for c, t in zip(carried, on_tensors):
        assert isinstance(c, ng.Tensor) and type(c._data) is np.ndarray
        assert c.dtype == t.dtype and c.shape == t.shape and not c.requires_grad
        # bits: the same nodes run the same formulas and kernels on the same values, in the
        # same order; carrying arrays only skips the wrapping in Tensors
        np.testing.assert_array_equal(_np(c), _np(t))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_0d_mlp_matches_tensors_only_and_torch(monkeypatch, dtype):
    carried, on_tensors = _passes(monkeypatch, lambda: _mlp_grads(ng, dtype))
    _assert_same(carried, on_tensors)
    tol = 1e-5 if dtype == "float32" else 1e-12
    for c, e in zip(carried, _mlp_grads(torch, dtype)):
        assert str(c.dtype) == str(e.dtype).replace("torch.", "nbgrad.")
        np.testing.assert_allclose(_np(c), e.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("graph", GRAPHS)
@pytest.mark.parametrize("specs", INPUTS, ids=lambda s: "-".join(f"{d}{list(sh)}" for sh, d in s))
def test_mixed_graphs_match_tensors_only(monkeypatch, graph, specs):
    def run():
        x, y = _leaves(ng, specs, 3)
        (GRAPHS[graph](ng, x, y).sum() * 2).backward()
        return [x.grad, y.grad]

    _assert_same(*_passes(monkeypatch, run))


def test_the_carried_path_is_taken(monkeypatch):
    seen = []
    cls = OPS["mul"].node_class
    original = cls._apply_arrays

    def spy(self, grads, release=False):
        seen.append(type(grads[0]))
        return original(self, grads, release)

    monkeypatch.setattr(cls, "_apply_arrays", spy)
    x = ng.tensor(0.5, requires_grad=True)
    ((x * 2.0) * 3.0 * x).backward()
    assert np.float32 in seen  # a mul node received its gradient as a NumPy scalar
    seen.clear()
    ng.autograd.grad((x * 2.0) * 3.0 * x, x)  # ``grad(inputs=)`` too
    assert np.float32 in seen
    seen.clear()
    monkeypatch.setattr(_graph_task, "CARRY_ARRAYS", False)
    ((x * 2.0) * 3.0 * x).backward()
    ng.autograd.grad((x * 2.0) * 3.0 * x, x)
    assert seen == []


def _grad_calls(lib):
    """``grad(inputs=)`` passes: leaves, an intermediate (captured at its node, with a tensor
    hook), a GradientEdge, a branch that leads to no input, an unused input, a Hessian-vector
    product's second pass."""
    rng = np.random.default_rng(7)
    x = lib.tensor(rng.uniform(-1, 1, 5), requires_grad=True)
    b = lib.tensor(rng.uniform(-1, 1, 5), requires_grad=True)
    s = lib.tensor(0.75, dtype=lib.float64, requires_grad=True)
    h = (x * 3.0).tanh()
    h.register_hook(lambda g: g * 2.0)
    side = (b * s).exp() * 0.5  # leads to b and s only
    y = ((h * s + side) ** 2).sum() + (h * x).sin().sum()
    out = list(lib.autograd.grad(y, (x, h), retain_graph=True))
    out += lib.autograd.grad(y, (s, lib.autograd.graph.get_gradient_edge(h)), retain_graph=True)
    unused = lib.tensor(1.0, requires_grad=True)
    gx, none = lib.autograd.grad(y, (x, unused), allow_unused=True, retain_graph=True)
    out += [gx]
    assert none is None
    (g,) = lib.autograd.grad((x.tanh() ** 3).sum(), x, create_graph=True)
    out += lib.autograd.grad((g * b).sum(), x)
    return out


def test_grad_with_inputs_matches_tensors_only_and_torch(monkeypatch):
    carried, on_tensors = _passes(monkeypatch, lambda: _grad_calls(ng))
    _assert_same(carried, on_tensors)
    for c, t in zip(carried, _grad_calls(torch), strict=True):
        np.testing.assert_allclose(_np(c), t.numpy(), rtol=1e-13, atol=1e-15)


def test_a_sole_carried_array_is_summed_in_place(monkeypatch):
    calls = []

    def add(a, b, out=None):
        calls.append(out is a)
        return np.add(a, b, out=out)

    monkeypatch.setattr(_input_buffer, "_np_add", add)
    x = ng.tensor(np.linspace(-1, 1, 4), requires_grad=True)
    h = x.sin()
    sum(h * (k + 1.5) for k in range(5)).sum().backward()
    assert calls.count(True) == 4  # h's buffer: four sums into the first gradient it got
    tx = torch.tensor(np.linspace(-1, 1, 4), requires_grad=True)
    th = tx.sin()
    sum(th * (k + 1.5) for k in range(5)).sum().backward()
    np.testing.assert_allclose(_np(x.grad), tx.grad.numpy(), rtol=1e-14)


@pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])
def test_a_gradient_held_elsewhere_is_not_summed_into(lib):
    """The user's gradient, passed on as it is by ``+``, reaches a buffer that sums a second
    gradient later: the sum is new, the user's tensor and the other branch keep their values."""
    a = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
    u, v = a.sin(), a.cos()
    w = u * 3.0  # made first: runs after ``u + v`` has passed the gradient to u and v
    z = v * 5.0
    y = (u + v) + w + z
    seed = lib.tensor([1.0, 2.0, 4.0], dtype=lib.float64)
    y.backward(seed)
    # the seed given, left as it was: not computed
    np.testing.assert_array_equal(_np(seed), [1.0, 2.0, 4.0])
    a0 = np.array([0.5, -1.0, 2.0])
    expected = np.array([1.0, 2.0, 4.0]) * (4 * np.cos(a0) - 6 * np.sin(a0))
    np.testing.assert_allclose(_np(a.grad), expected, rtol=1e-14)


def test_a_leaf_takes_a_carried_gradient_without_a_copy(monkeypatch):
    copies = []
    original = ng.Tensor._detached_copy
    monkeypatch.setattr(
        ng.Tensor, "_detached_copy", lambda t: copies.append(t.shape) or original(t)
    )
    w = ng.tensor(np.ones((64, 32)), requires_grad=True)
    s = ng.tensor(2.5, requires_grad=True)
    ((w * 3.0).tanh() * s).sum().backward()
    assert copies == []
    assert w.grad.shape == (64, 32) and s.grad.shape == ()


# -- where Tensor code takes over ------------------------------------------------------------------
def test_hooks_functions_and_grad_see_tensors():
    seen = []

    def note(name):
        return lambda *args: seen.append((name, [type(g) for g in args[-1] if g is not None]))

    class Twice(ng.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            seen.append(("Function", [type(g)]))
            return g * 2

    x = ng.tensor([0.5, 1.5], requires_grad=True)
    h = (x * 3.0).sin()
    h.retain_grad()
    h.register_hook(lambda g: seen.append(("tensor hook", [type(g)])))
    k = Twice.apply(h.exp() * 2.0)
    k.grad_fn.register_prehook(note("pre-hook"))
    m = k.tanh() * 1.5
    m.grad_fn.register_hook(note("post hook"))
    loss = (m * 2.0).sum()
    (gx, gh) = ng.autograd.grad(loss, (x, h), retain_graph=True)
    loss.backward()
    assert {name for name, _ in seen} == {"Function", "pre-hook", "post hook", "tensor hook"}
    assert all(t is ng.Tensor for _, types in seen for t in types), seen
    for g in (gx, gh, x.grad, h.grad):
        assert type(g) is ng.Tensor and type(g._data) is np.ndarray
    np.testing.assert_allclose(_np(x.grad), _np(gx), rtol=1e-15)


def test_a_pass_that_turns_to_a_device_worker(monkeypatch):
    backend.register_device_type("carrydev", count=1, strict=True)
    try:

        def run():
            x = ng.tensor([0.5, -1.0, 2.0], dtype=ng.float64, requires_grad=True)
            h = x.tanh() * 1.5  # CPU gradients, carried, wait in x's buffer
            d = (x.to("carrydev") * 2.0).sin().to("cpu")  # then the pass uses the worker
            (h * h + d * 3.0 + h).sum().backward()
            return [x.grad]

        carried, on_tensors = _passes(monkeypatch, run)
        _assert_same(carried, on_tensors)
    finally:
        backend.unregister_device_type("carrydev")


def test_an_observer_is_given_tensors():
    types = set()

    class Types(GraphObserver):
        def node_start(self, graph_task, node, inputs):
            types.update(type(g) for g in inputs if g is not None)

        def node_end(self, graph_task, node, outputs):
            types.update(type(g) for g in outputs if g is not None)

    x = ng.tensor([0.5, -1.0], requires_grad=True)
    y = ng.tensor(1.5, requires_grad=True)
    with observe(Types()):
        ((x * 2.0).tanh() * y + (y * x).sin()).sum().backward()
    assert types == {ng.Tensor}
