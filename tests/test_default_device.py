"""``set_default_device`` / ``get_default_device`` against PyTorch's: the factory functions make
their tensors on the default device when given none; an explicit ``device``, ``*_like`` and
``to()`` are not affected; ``None`` resets; the setting is per thread; ``with device(...)`` sets
it for a block."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

FACTORIES = {
    "tensor": lambda L: L.tensor([1.0, 2.0]),
    "as_tensor": lambda L: L.as_tensor(np.ones(2)),
    "zeros": lambda L: L.zeros(2),
    "full": lambda L: L.full((2,), 3.0),
    "randn": lambda L: L.randn(2),
    "randint": lambda L: L.randint(3, (2,)),
    "randperm": lambda L: L.randperm(3),
    "arange": lambda L: L.arange(3),
    "eye": lambda L: L.eye(2),
    "linspace": lambda L: L.linspace(0, 1, 3),
    "Linear": lambda L: L.nn.Linear(2, 2).weight,
}


@pytest.fixture
def reset():
    yield
    ng.set_default_device(None)
    torch.set_default_device(None)


def devices(L, device):
    """The device type each factory makes on under ``set_default_device(device)``."""
    L.set_default_device(device)
    return {name: make(L).device.type for name, make in FACTORIES.items()}


def test_cpu_by_default_and_after_reset(reset):
    for L in (ng, torch):
        assert repr(L.get_default_device()) == "device(type='cpu')"
        L.set_default_device("cpu")
        assert repr(L.get_default_device()) == "device(type='cpu')"
        L.set_default_device(None)
        assert str(L.zeros(1).device) == "cpu"


# a device type on the host, as the engine's multi-device tests use, stands in for a GPU
@pytest.fixture
def other_device(reset):
    from nbgrad import backend

    backend.register_device_type("privateuseone")
    yield "privateuseone"
    backend.unregister_device_type("privateuseone")


def test_factories_follow_the_default_device(other_device):
    made = devices(ng, other_device)
    assert made == {name: other_device for name in FACTORIES}
    assert ng.get_default_device().type == other_device
    # what names its device, or follows a tensor's, is not moved
    assert ng.zeros(1, device="cpu").device.type == "cpu"
    x = ng.zeros(2, device="cpu")
    assert ng.ones_like(x).device.type == "cpu"
    assert x.to(dtype=ng.float64).device.type == "cpu"
    assert ng.from_numpy(np.ones(1)).device.type == "cpu"
    ng.set_default_device(None)
    assert devices(ng, None) == {name: "cpu" for name in FACTORIES}


def test_the_default_device_is_per_thread(other_device):
    ng.set_default_device(other_device)
    seen = {}
    thread = threading.Thread(target=lambda: seen.update(d=ng.zeros(1).device.type))
    thread.start()
    thread.join()
    assert seen["d"] == "cpu" and ng.zeros(1).device.type == other_device


def test_cpu_only_set_default_device_as_torch(reset):
    assert devices(ng, "cpu") == devices(torch, "cpu") == {name: "cpu" for name in FACTORIES}


def test_bad_devices_raise_as_torch(reset):
    for bad in ("foo", 3.5):
        errors = []
        for L in (ng, torch):
            with pytest.raises((RuntimeError, TypeError)) as info:
                L.set_default_device(bad)
            errors.append(type(info.value))
        assert errors[0] == errors[1]


def test_a_device_is_a_context_manager_as_torch(other_device):
    ng.set_default_device(other_device)
    with ng.device("cpu") as d:
        assert repr(d) == "device(type='cpu')"
        assert ng.zeros(1).device.type == "cpu" and ng.get_default_device().type == "cpu"
        with ng.device(other_device):
            assert ng.zeros(1).device.type == other_device
        assert ng.zeros(1).device.type == "cpu"
    assert ng.zeros(1).device.type == other_device
    ng.set_default_device(None)
    for L in (ng, torch):
        with L.device("cpu") as d:
            assert str(L.get_default_device()) == "cpu" and str(L.zeros(1).device) == "cpu"
        assert str(L.get_default_device()) == "cpu"
