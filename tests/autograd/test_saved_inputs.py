"""Inputs a generated node saves as themselves (NOTE [A saved input stored as itself] in
nbgrad/_graph/table_node.py) behave as SavedTensors do: the same errors, hooks and objects."""

import gc

import pytest

import nbgrad as ng
from nbgrad._graph import hooks
from nbgrad._graph.grad_state import _inference_tensors
from nbgrad.autograd.graph import SavedTensor


@pytest.fixture(autouse=True)
def stored_as_themselves(monkeypatch):
    """As in a fresh process: no saved-tensor hooks entered, no inference tensor made yet."""
    monkeypatch.setattr(hooks._saved_hooks_used, "entered", False)
    monkeypatch.setattr(_inference_tensors, "made", False)


def test_a_node_saving_inputs_adds_no_saved_tensor_objects():
    a = ng.tensor([1.0, 2.0], requires_grad=True)
    b = ng.tensor([3.0, 4.0], requires_grad=True)
    y = a * b
    assert not any(type(o) is SavedTensor for o in gc.get_referents(y.grad_fn))
    y.sum().backward()
    assert a.grad.tolist() == [3.0, 4.0] and b.grad.tolist() == [1.0, 2.0]


def test_modified_in_place_raises_the_version_error():
    a = ng.tensor([1.0, 2.0], requires_grad=True)
    h = a * 2.0
    y = h * h
    h.add_(1.0)
    with pytest.raises(RuntimeError, match=r"output 0 of AddBackward0, is at version 1; expected"):
        y.sum().backward()


def test_a_leaf_saved_then_modified_raises():
    a = ng.tensor([1.0, 2.0])
    w = ng.tensor([1.0, 1.0], requires_grad=True)
    y = w * a
    with ng.no_grad():
        a.mul_(2.0)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        y.sum().backward()


def test_detached_in_place_raises():
    a = ng.tensor([1.0, 2.0], requires_grad=True)
    h = a * 2.0
    y = h * a
    h.detach_()
    with pytest.raises(RuntimeError, match="detached in-place"):
        y.sum().backward()


def test_raw_saved_is_one_object_and_its_hooks_run():
    a = ng.tensor([1.0, 2.0], requires_grad=True)
    b = ng.tensor([3.0, 4.0], requires_grad=True)
    y = a * b
    raw = y.grad_fn._raw_saved_self
    assert raw is y.grad_fn._raw_saved_self
    assert y.grad_fn.saved_values()["self"] is raw and raw.version == 0
    seen = []
    raw.register_hooks(lambda t: t * 10.0, lambda p: seen.append(p) or p)
    y.sum().backward()
    assert len(seen) == 1 and b.grad.tolist() == [10.0, 20.0]
    assert raw.is_freed


def test_second_backward_raises_freed():
    a = ng.tensor([1.0, 2.0], requires_grad=True)
    y = (a * a).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
