"""nbgrad.save / nbgrad.load (nbgrad/serialization.py), against PyTorch's torch.save / load."""

from __future__ import annotations

import io
import os
import pickle
import uuid

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")


def _round_trip(lib, obj, **load_kw):
    buf = io.BytesIO()
    lib.save(obj, buf)
    buf.seek(0)
    return lib.load(buf, **load_kw)


def _describe(t):
    return (t.detach().numpy().tolist(), str(t.dtype).split(".")[-1], t.requires_grad, t.is_leaf)


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.ones(3, requires_grad=True),
        lambda lib: lib.ones(3, requires_grad=True) * 2,  # a non-leaf loads as a leaf
        lambda lib: lib.tensor([1, 2]),
        lambda lib: lib.tensor(1.5, dtype=lib.float16),
        lambda lib: lib.arange(6.0).view(2, 3).t(),
    ],
)
def test_a_tensor_round_trips_as_torch(make):
    expected = _describe(_round_trip(torch, make(torch)))
    assert _describe(_round_trip(ng, make(ng))) == expected


def test_containers_and_parameters_round_trip():
    sd = _round_trip(ng, {"w": ng.nn.Parameter(ng.ones(2)), "b": [ng.zeros(1), (ng.ones(1),)]})
    assert isinstance(sd["w"], ng.nn.Parameter) and sd["w"].requires_grad
    assert sd["b"][0].tolist() == [0.0] and sd["b"][1][0].tolist() == [1.0]
    model = ng.nn.Linear(2, 3)
    loaded = _round_trip(ng, model.state_dict())
    assert list(loaded) == ["weight", "bias"]
    # saving and loading copy the values: the same bits
    assert np.array_equal(loaded["weight"].numpy(), model.weight.detach().numpy())


def test_a_path_and_map_location(tmp_path):
    name = tmp_path / "x.pt"
    ng.save(ng.tensor([1.0, 2.0], requires_grad=True), name)
    for kw in ({}, {"map_location": "cpu"}, {"map_location": ng.device("cpu")}):
        t = ng.load(str(name), **kw)
        assert t.device == ng.device("cpu") and t.tolist() == [1.0, 2.0] and t.requires_grad
    assert ng.load(name, map_location={"cpu": "cpu"}).tolist() == [1.0, 2.0]


class _Thing:
    def __init__(self, value):
        self.value = value


def test_weights_only_refuses_other_objects_as_torch():
    for lib in (torch, ng):
        buf = io.BytesIO()
        lib.save(_Thing(lib.ones(1)), buf)
        buf.seek(0)
        with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
            lib.load(buf)
        buf.seek(0)
        assert lib.load(buf, weights_only=False).value.tolist() == [1.0]


def test_saved_tensor_hooks_may_save_to_disk(tmp_path):
    """PyTorch's test_saving_variable_to_disk: saved tensors packed as files."""

    def pack(x):
        name = os.path.join(tmp_path, str(uuid.uuid4()))
        ng.save(x, name)
        return name

    with ng.autograd.graph.saved_tensors_hooks(pack, ng.load):
        a = ng.ones(5, requires_grad=True)
        y = a * a
        assert y.grad_fn._saved_self.tolist() == a.tolist()
        y.sum().backward()
    assert a.grad.tolist() == [2.0] * 5
