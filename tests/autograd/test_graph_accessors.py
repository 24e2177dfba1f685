"""The read-only accessors tools use to read a graph (``nbgrad/_graph/node.py``): next edges,
hooks, saved values and a leaf's AccumulateGrad, checked against what the graph does."""

from __future__ import annotations

import gc

import pytest

import nbgrad as ng
from nbgrad.autograd.graph import (
    AccumulateGrad,
    Edge,
    SavedTensor,
    grad_accumulator,
    next_sequence_nr,
    try_get_grad_accumulator,
)


def test_next_edges_are_next_functions_as_edges():
    x = ng.ones(2, requires_grad=True)
    y = x * 3.0 + ng.ones(2)
    node = y.grad_fn
    edges = node.next_edges()
    assert all(type(e) is Edge for e in edges)
    assert [(e.function, e.input_nr) for e in edges] == list(node.next_functions)
    # made on each read from the node's two tuples (NOTE [Edges stored as two tuples])
    assert edges == node.next_edges() and edges is not node.next_edges()


def test_hook_accessors_list_handles_in_run_order_and_are_copies():
    x = ng.ones(2, requires_grad=True)
    y = x * 2
    node = y.grad_fn
    t1 = y.register_hook(lambda g: g)
    t2 = y.register_hook(lambda g: g)
    pre = node.register_prehook(lambda go: None)
    post = node.register_hook(lambda gi, go: None)
    assert node.tensor_pre_hooks() == (t1, t2)
    assert node.pre_hooks() == (pre,) and node.post_hooks() == (post,)
    assert all(h.owner is y for h in node.tensor_pre_hooks())
    t1.remove()
    assert node.tensor_pre_hooks() == (t2,)
    assert isinstance(node.pre_hooks(), tuple)  # a copy: changing it changes no hook
    assert node.retains_grad_hooks() == {}
    y.retain_grad()
    assert node.retains_grad_hooks() == {0: y}
    fresh = (x + 1).grad_fn
    assert fresh.pre_hooks() == fresh.post_hooks() == fresh.tensor_pre_hooks() == ()


def test_retains_grad_hooks_drop_dead_tensors():
    x = ng.ones(2, requires_grad=True)
    y = x * 2
    node = y.grad_fn
    y.retain_grad()
    del y
    gc.collect()
    assert node.retains_grad_hooks() == {}


def test_saved_values_report_what_is_saved_and_freed_without_raising():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = x.tanh()
    z = (y * x).sum()
    mul = z.grad_fn.next_functions[0][0]
    saved = mul.saved_values()
    assert set(saved) == {"self", "other"}
    assert all(isinstance(v, SavedTensor) for v in saved.values())
    assert saved["self"].shape == (2,) and saved["self"].dtype is ng.float32
    assert saved["self"].version == y._version and not saved["self"].is_output
    tanh = y.grad_fn.saved_values()["result"]
    assert tanh.is_output and not tanh.is_freed
    z.backward()
    after = mul.saved_values()
    assert all(v.is_freed for v in after.values())
    with pytest.raises(RuntimeError, match="second time"):
        _ = mul._saved_self  # the unpacking accessor raises; saved_values() does not
    assert ng.ones(1).grad_fn is None and AccumulateGrad(x).saved_values() == {}


def test_saved_values_keep_plain_values():
    x = ng.ones(2, 3, requires_grad=True)
    node = x.sum(1).grad_fn
    values = node.saved_values()
    assert values and not any(isinstance(v, SavedTensor) for v in values.values())
    assert values["self_shape"] == (2, 3)


def test_grad_accumulator_and_try_get():
    x = ng.ones(2, requires_grad=True)
    assert try_get_grad_accumulator(x) is None  # none made yet
    acc = grad_accumulator(x)
    assert type(acc) is AccumulateGrad and acc.variable is x
    assert try_get_grad_accumulator(x) is acc and grad_accumulator(x) is acc
    y = x * 2
    assert y.grad_fn.next_functions[0][0] is acc
    assert grad_accumulator(y) is None and try_get_grad_accumulator(y) is None
    assert grad_accumulator(ng.ones(2)) is None
    del acc, y
    gc.collect()
    assert try_get_grad_accumulator(x) is None  # held weakly: try_get never makes one


def test_next_sequence_nr_separates_graphs():
    x = ng.ones(2, requires_grad=True)
    before = (x * 2).grad_fn.sequence_nr
    mark = next_sequence_nr()
    after = (x * 2).grad_fn.sequence_nr
    assert before < mark < after
