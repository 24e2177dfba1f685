"""NOTE [Generated forward result] (nbgrad/_tensor/dispatch.py): the fast paths end in a
function generated per row. These tests run each op twice, through the generated function and
through ``_generic_result`` (``_wrap`` and ``_record``), and compare the tensors and the nodes
recorded: values, dtypes, node names, edges, saved values and their versions, input metadata,
and the gradients of a backward pass, bit for bit."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import nbgrad as ng
from nbgrad._tensor import dispatch
from nbgrad.derivatives import OPS

OPERATIONS = {
    "mul": lambda x, y: x * y,
    "mul_number": lambda x, y: x * 2.5,
    "add": lambda x, y: x + y,
    "radd_number": lambda x, y: 1.5 + x,
    "sub": lambda x, y: x - y,
    "div": lambda x, y: x / y,
    "pow": lambda x, y: x**3,
    "pow_half": lambda x, y: x**0.5,
    "sum": lambda x, y: x.sum(),
    "mean": lambda x, y: x.mean(),
    "tanh": lambda x, y: x.tanh(),
    "sin": lambda x, y: x.sin(),
    "exp": lambda x, y: x.exp(),
    "relu": lambda x, y: x.relu(),
    "neg": lambda x, y: -x,
}
ROWS = {"mul_number": "mul", "radd_number": "add", "pow_half": "pow"}


def _inputs(kind, shape, dtype):
    rng = np.random.default_rng(4)
    x = ng.tensor(rng.uniform(0.5, 2.0, shape).astype(dtype), requires_grad=True)
    y = ng.tensor(rng.uniform(0.5, 2.0, shape).astype(dtype), requires_grad=True)
    if kind == "leaves":
        return x, y, (x, y)
    if kind == "outputs":  # results of other nodes
        return x * 1.0, y + 0.0, (x, y)
    # the second output of ``unbind`` (its node's output 1) and a tensor without grad
    parts = ng.stack([x, y]).unbind(0)
    return parts[1], y.detach(), (x, y)


def _describe(t):
    node = t.grad_fn
    saved = {}
    if node is not None:
        for name in type(node)._saved_names:
            value = getattr(node, "_saved_" + name)
            saved[name] = (
                (value.detach().numpy().tolist(), str(value.dtype), value._version)
                if isinstance(value, ng.Tensor)
                else value
            )
    return {
        "value": t.detach().numpy().tolist(),
        "dtype": str(t.dtype),
        "requires_grad": t.requires_grad,
        "node": None if node is None else node.name(),
        "edges": None
        if node is None
        else [(None if fn is None else fn.name(), nr) for fn, nr in node.next_functions],
        "saved": saved,
        "metadata": None if node is None else [tuple(m) for m in node._input_metadata_],
    }


def _run(name, kind, shape, dtype):
    x, y, leaves = _inputs(kind, shape, dtype)
    out = OPERATIONS[name](x, y)
    facts = _describe(out)
    if out.requires_grad:
        out.sum().backward()
    grads = [None if t.grad is None else t.grad.numpy().tolist() for t in leaves]
    return facts, grads


@pytest.mark.parametrize("name", OPERATIONS)
@pytest.mark.parametrize("kind", ["leaves", "outputs", "other_output"])
@pytest.mark.parametrize("shape, dtype", [((), "float64"), ((3, 2), "float32")])
def test_the_generated_result_records_what_record_records(name, kind, shape, dtype, monkeypatch):
    op = OPS[ROWS.get(name, name)]
    generated = _run(name, kind, shape, dtype)
    assert op.result_source is not None  # the generated function served it
    monkeypatch.setattr(op, "result", partial(dispatch._generic_result, op))
    # bits (values, gradients): both ways run the same kernels on the same values; only
    # the wrapping and recording differ
    assert _run(name, kind, shape, dtype) == generated


def test_rows_it_does_not_serve_get_the_generic_result():
    # several outputs (``max`` with a dim) or a list input: no generated function
    for row in ("cat", "max_dim"):
        result = dispatch._result_function(OPS[row])
        assert isinstance(result, partial) and result.func is dispatch._generic_result
