"""Saved tensors (``SavedTensor`` in nbgrad/_graph/saved_tensor.py): the objects behind
``grad_fn._raw_saved_*``, their hooks and errors, ``clear_saved_tensors_on_access``, and
references released as PyTorch releases them. Each scenario runs on nbgrad and on PyTorch.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
import torch

import nbgrad as ng

LIBS = pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])


def _np(t):
    return np.asarray(t.detach())


# -- the SavedTensor object ----------------------------------------------------------------------
@LIBS
def test_raw_saved_data_and_unpack_hook(lib):
    def pack(t):
        return t

    def unpack(t):
        return t

    a = lib.tensor(2.0, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
        b = a**2
    c = b.exp()
    d = c**2
    assert b.grad_fn._raw_saved_self.data is a  # the packed object, as it is
    assert b.grad_fn._raw_saved_self.unpack_hook is unpack
    result = c.grad_fn._raw_saved_result
    assert result.data is not c and result.unpack_hook is None  # an output: detached
    assert result.data.grad_fn is None and not result.data.requires_grad
    assert _np(result.data) == _np(c)
    assert d.grad_fn._raw_saved_self.data is c  # an input: the original


@LIBS
def test_raw_saved_of_a_value_not_saved_stands_for_none(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    z = lib.tensor([3.0, 4.0]) * a  # ``other`` is not needed: nothing is saved for it
    raw = z.grad_fn._raw_saved_other
    assert raw.data is None and raw.unpack_hook is None
    with pytest.raises(RuntimeError, match="with value None is forbidden"):
        raw.register_hooks(lambda x: x, lambda x: x)


@LIBS
def test_register_hooks_packs_now_and_unpacks_as_the_original(lib):
    a = 1 + lib.tensor([1.0, 2.0, 3.0], requires_grad=True)  # not a leaf
    y = a * a
    y.grad_fn._raw_saved_self.register_hooks(lambda x: 2 * x, lambda x: x)
    saved = y.grad_fn._saved_self
    np.testing.assert_allclose(_np(saved), 2 * _np(a))
    assert saved.grad_fn is a.grad_fn
    leaf = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = leaf * leaf
    y.grad_fn._raw_saved_self.register_hooks(lambda x: 2 * x, lambda x: x)
    y.sum().backward()
    np.testing.assert_allclose(_np(leaf.grad), 3 * _np(leaf))  # saved self 2a, saved other a
    out = lib.tensor([0.5, 1.0], requires_grad=True).exp()
    out.grad_fn._raw_saved_result.register_hooks(lambda x: x, lambda x: x)
    assert out.grad_fn._saved_result.grad_fn is out.grad_fn


@LIBS
def test_register_hooks_errors(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    y = a * a
    raw = y.grad_fn._raw_saved_self
    with pytest.raises(TypeError, match="incompatible function arguments"):
        raw.register_hooks(lambda x: x)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        raw.register_hooks(1, 1)
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        raw.register_hooks(lambda x, b: x, lambda x: x)
    y = a * a
    raw = y.grad_fn._raw_saved_self
    raw.register_hooks(lambda x: x, lambda x: x)
    with pytest.raises(RuntimeError, match="whose hooks have already been set"):
        raw.register_hooks(lambda x: x, lambda x: x)
    y = a * a
    raw = y.grad_fn._raw_saved_self
    y.sum().backward()
    assert raw.data is None and y.grad_fn._raw_saved_self.data is None  # freed, no error
    with pytest.raises(RuntimeError, match="after it has been freed"):
        raw.register_hooks(lambda x: x, lambda x: x)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        _ = y.grad_fn._saved_self
    y = a * a
    y.grad_fn._raw_saved_self.register_hooks(lambda x: x, lambda x: 1)
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor"):
        _ = y.grad_fn._saved_self


@LIBS
def test_a_pack_hook_must_not_modify_its_input_in_place(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)

    def inc(x):
        x += 1
        return x

    message = "A saved tensor pack hook is modifying its input in place."
    with lib.autograd.graph.saved_tensors_hooks(inc, lambda x: x):
        with pytest.raises(RuntimeError, match=message):
            lib.exp(a)
    y = lib.exp(a)
    with pytest.raises(RuntimeError, match=message):
        y.grad_fn._raw_saved_result.register_hooks(inc, lambda x: x)
    b = a * 1
    y = b * b
    with pytest.raises(RuntimeError, match=message):  # the original's data, detached
        y.grad_fn._raw_saved_self.register_hooks(inc, lambda x: x)


@LIBS
def test_no_version_check_through_hooks(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        b = a.clone()
        y = b.exp()
    with lib.no_grad():
        b.mul_(2)  # without hooks: "modified by an inplace operation"
    y.sum().backward()
    np.testing.assert_allclose(_np(a.grad), np.exp([1.0, 2.0]), rtol=1e-6)  # exp saved its result


@LIBS
def test_saved_input_detached_in_place_raises(lib):
    a = lib.tensor(1.0, requires_grad=True).clone()
    b = a.sin()
    a.detach_()
    with pytest.raises(RuntimeError, match="Trying to use a saved tensor that has been detached"):
        b.backward()
    a = lib.tensor(1.0, requires_grad=True).clone()
    b = a.exp()  # saves its output, not ``a``
    a.detach_()
    b.backward()


# -- custom Functions ------------------------------------------------------------------------------
def _clearing_fn(lib, log):
    class MyFn(lib.autograd.Function):
        clear_saved_tensors_on_access = True

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            ref = weakref.ref(x)
            del x
            log.append(ref() is None)
            log.append(ctx._raw_saved_tensors)
            try:
                _ = ctx.saved_tensors
            except RuntimeError as e:
                log.append(str(e))
            return grad

    return MyFn


@LIBS
def test_clear_saved_tensors_on_access(lib):
    assert lib.autograd.Function.clear_saved_tensors_on_access is False
    log = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    _clearing_fn(lib, log).apply(x.clone()).sum().backward()
    assert log[:2] == [True, ()]  # the local was the only reference
    assert "saved_tensors can only be accessed once" in log[2]
    assert log[2] == ng.autograd.function.ERR_CLEARED


@LIBS
def test_ctx_keeps_no_reference_to_marked_tensors(lib):
    class Test(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    def scope():
        x = lib.tensor(1.0, requires_grad=True).clone()
        y = Test.apply(x)
        assert y.grad_fn.dirty_tensors is None and y.grad_fn.to_save is None
        return weakref.ref(x)

    gc.collect()
    gc.disable()
    try:
        assert scope()() is None  # no cycle: freed without the cyclic collector
    finally:
        gc.enable()


# -- saved-tensor hooks entered or left during backward ------------------------------------------
@LIBS
def test_hooks_entered_in_backward_do_not_leak(lib):
    def scope():
        def unpack(x):
            weak_ctx().__enter__()
            return x

        ctx = lib.autograd.graph.saved_tensors_hooks(lambda x: x, unpack)
        weak_ctx = weakref.ref(ctx)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with ctx:
            x.sin().sum().backward()
        return weakref.ref(unpack)

    gc.collect()
    gc.disable()
    try:
        assert scope()() is None
    finally:
        gc.enable()


@LIBS
def test_hooks_left_in_backward_leave_the_stack_as_torch(lib):
    def unpack(x):
        ctx_1.__exit__()
        return x

    ctx_1 = lib.autograd.graph.saved_tensors_hooks(lambda x: x, unpack)
    ctx_2 = lib.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x)
    for _ in range(3):
        with ctx_2:
            ctx_1.__enter__()
            lib.tensor([1.0], requires_grad=True).sin().sum().backward()
    for _ in range(3):
        ctx_1.__exit__()
    y = lib.tensor(1.0, requires_grad=True).exp()
    assert y.grad_fn._raw_saved_result.unpack_hook is None  # no hooks left on the stack


@pytest.mark.parametrize(
    "inplace",
    [
        lambda v: v.relu_(),
        lambda v: v.mul_(2).relu_(),
        lambda v: v.exp_(),
    ],
    ids=["relu_", "mul_ then relu_", "exp_"],
)
def test_a_saved_result_of_an_inplace_op_on_a_view_stands_for_the_view(inplace):
    """See NOTE [In place on a view: the saved result]: a double backward through the saved
    result goes through CopySlices, so the wrapped node runs (and is released) once."""
    results = []
    for lib in (ng, torch):
        x = lib.tensor([[-1.0, 2.0], [0.5, 3.0]], dtype=lib.float64, requires_grad=True)
        y = (x * 1).view(4)
        z = inplace(y).view(2, 2)
        (g,) = lib.autograd.grad(z.pow(3).sum(), [x], create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), [x])
        results.append((g.detach().numpy(), gg.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12)
