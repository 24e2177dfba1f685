"""The backend seam: the host copy of an array is decided by the array (``backend.to_host``),
NumPy's error state is handled through its public functions, and the strict test device plugs
into the seam from a testing module of its own."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

import nbgrad as ng
from nbgrad import backend
from nbgrad._testing import strict_device

NBGRAD = pathlib.Path(ng.__file__).parent


def test_to_host_gives_numpy_arrays_back_as_they_are():
    a = np.arange(3.0)
    assert backend.to_host(a) is a
    s = np.float32(2.0)
    assert backend.to_host(s) is s
    assert type(backend.to_host([1.0, 2.0])) is np.ndarray


def test_to_host_asks_the_array_type_of_a_registered_device():
    a = strict_device.STRICT_XP.asarray(np.arange(3.0))
    host = backend.to_host(a)
    assert type(host) is np.ndarray and np.shares_memory(host, a.view(np.ndarray))


class _Tagged(np.ndarray):
    """A device's array type whose host copy is its own."""


def test_a_device_type_registers_its_host_copy():
    copies = []

    def to_host(array):
        copies.append(array)
        return np.array(array.view(np.ndarray))

    backend.register_device_type(
        "tagdev",
        from_host=lambda array, index: np.array(array).view(_Tagged),
        array_type=_Tagged,
        to_host=to_host,
    )
    try:
        t = ng.tensor([1.0, 2.0]).to("tagdev")
        assert type(t._data) is _Tagged
        assert t.tolist() == [1.0, 2.0] and len(copies) == 1
        assert type(t.to("cpu")._data) is np.ndarray and len(copies) == 2
    finally:
        backend.unregister_device_type("tagdev")
        backend._HOST_COPIES.pop(_Tagged, None)


def test_no_host_copy_by_duck_typing_and_no_private_numpy_names():
    for path in NBGRAD.rglob("*.py"):
        text = path.read_text()
        assert not re.search(r"hasattr\(\w+, \"get\"\)", text), path
        assert "_extobj" not in text, path
    assert "numpy._core" not in (NBGRAD / "backend.py").read_text()


def test_quiet_float_errors_silences_numpy_and_restores_the_state_outside():
    with np.errstate(all="raise"):
        with backend.quiet_float_errors():
            assert np.log(np.zeros(1))[0] == -np.inf
        with pytest.raises(FloatingPointError):
            np.log(np.zeros(1))
    with backend.quiet_float_errors():  # nested, as a formula's op inside a backward pass
        with backend.quiet_float_errors():
            pass
        assert np.geterr()["divide"] == "ignore"


def test_the_strict_device_lives_outside_the_backend():
    assert not hasattr(backend, "STRICT_XP") and not hasattr(backend, "StrictArray")
    backend.register_device_type("strictseam", strict=True)
    try:
        t = ng.tensor([1.0, 4.0]).to("strictseam")
        assert type(t._data) is strict_device.StrictArray
        assert ng.erf(t).tolist() == pytest.approx([0.8427007929497149, 1.0])
    finally:
        backend.unregister_device_type("strictseam")
