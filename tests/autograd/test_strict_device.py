"""The strict test device (NOTE [Strict test device] in nbgrad/_testing/strict_device.py): its
arrays are of their own type and its array module refuses NumPy operands, as CuPy does, so that
every host/device mix fails on any machine; and the mixes it found stay fixed."""

import numpy as np
import pytest

import nbgrad as ng
from nbgrad import backend
from nbgrad._testing.strict_device import STRICT_XP, StrictArray
from nbgrad.derivatives import OPS

DEV = "strictdev"


@pytest.fixture(scope="module", autouse=True)
def device():
    backend.register_device_type(DEV, count=1, strict=True)
    yield
    backend.unregister_device_type(DEV)


def test_the_array_module_refuses_numpy_operands_as_cupy_does():
    a = STRICT_XP.asarray(np.arange(3.0))  # the host-to-device copy
    assert type(a) is StrictArray and type(STRICT_XP.exp(a)) is StrictArray
    assert type(a + 1) is StrictArray and type(a * np.float64(2.0)) is StrictArray  # scalars
    host = np.ones(3)
    for mix in (
        lambda: a + host,
        lambda: host * a,
        lambda: STRICT_XP.maximum(a, host),
        lambda: STRICT_XP.concatenate([a, host]),
        lambda: a.__setitem__(slice(None), host),
    ):
        with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
            mix()
    assert STRICT_XP.asarray(a) is not None and np.shares_memory(STRICT_XP.asarray(a), a)


def test_a_kernel_handed_a_numpy_array_raises():
    a = STRICT_XP.asarray(np.ones(3))
    with pytest.raises(TypeError, match="Unsupported type"):
        OPS["mul"].forward(STRICT_XP, a, np.ones(3))
    assert type(OPS["mul"].forward(STRICT_XP, a, a)) is StrictArray


def test_the_mixes_it_found_stay_fixed():
    t = ng.tensor([1.0, 2.0, 4.0]).to(DEV)
    # _tensor_arg wrapped a NumPy array with the tensor's device (``2 // t``)
    assert type((2 // t)._data) is StrictArray and (2 // t).tolist() == [2.0, 1.0, 0.0]
    assert type(t.any()._data) is StrictArray and type(t.all(0)._data) is StrictArray
    # anomaly mode's NaN check made a NumPy array of the gradient
    x = ng.tensor([0.0, 1.0], requires_grad=True)
    with ng.autograd.detect_anomaly(), pytest.raises(RuntimeError, match="returned nan"):
        (x.to(DEV) / x.to(DEV)).sum().backward()
