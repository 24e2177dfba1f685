"""``nbgrad.utils.hooks`` and ``nbgrad.functional`` against ``torch.utils.hooks`` and
``torch.functional``: the same objects as nbgrad's own (one RemovableHandle, one BackwardHook),
and the functions giving PyTorch's results (``cdist`` with its gradients too)."""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng
import nbgrad.functional as ngf
from nbgrad.utils import hooks as ng_hooks

torch = pytest.importorskip("torch")
import torch.functional as tf  # noqa: E402
import torch.utils.hooks as torch_hooks  # noqa: E402


def test_removable_handle_is_the_one_register_hook_returns():
    x = ng.ones(2, requires_grad=True)
    handle = x.register_hook(lambda g: g * 2)
    assert type(handle) is ng_hooks.RemovableHandle
    assert ng_hooks.RemovableHandle is ng.autograd.graph.RemovableHandle
    handle.remove()
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    module = ng.nn.Linear(2, 2)
    assert type(module.register_forward_hook(lambda *a: None)) is ng_hooks.RemovableHandle


def test_backward_hook_is_the_modules():
    from nbgrad.nn.modules._backward_hook import BackwardHook

    assert ng_hooks.BackwardHook is BackwardHook


def test_unserializable_hook_marks_the_hook_as_torch():
    def hook(grad):
        return grad

    for hooks in (ng_hooks, torch_hooks):
        assert hooks.unserializable_hook(hook) is hook
        assert hook.__torch_unserializable__ is True
        del hook.__torch_unserializable__


def a(L, *shape):
    return L.tensor(np.arange(np.prod(shape), dtype=np.float64).reshape(shape) - 2.5)


CALLS = {
    "atleast_1d": lambda F, L: F.atleast_1d(L.tensor(1.0)),
    "atleast_2d": lambda F, L: F.atleast_2d(a(L, 3)),
    "atleast_3d": lambda F, L: F.atleast_3d(a(L, 2, 3)),
    "block_diag": lambda F, L: F.block_diag(a(L, 2, 2), a(L, 1, 3)),
    "broadcast_shapes": lambda F, L: tuple(F.broadcast_shapes((2, 1), (1, 3))),
    "broadcast_tensors": lambda F, L: F.broadcast_tensors(a(L, 2, 1), a(L, 3)),
    "cartesian_prod": lambda F, L: F.cartesian_prod(a(L, 2), a(L, 3)),
    "cdist": lambda F, L: F.cdist(a(L, 2, 3), a(L, 4, 3)),
    "einsum": lambda F, L: F.einsum("ij,jk->ik", a(L, 2, 3), a(L, 3, 2)),
    "meshgrid": lambda F, L: F.meshgrid(a(L, 2), a(L, 3), indexing="ij"),
    "norm": lambda F, L: F.norm(a(L, 2, 3), p=1, dim=1),
    "split": lambda F, L: F.split(a(L, 5), 2),
    "tensordot": lambda F, L: F.tensordot(a(L, 2, 3), a(L, 3, 2), dims=1),
    "unique": lambda F, L: F.unique(L.tensor([3, 1, 3, 2]), return_counts=True),
    "unique_consecutive": lambda F, L: F.unique_consecutive(L.tensor([1, 1, 2, 2, 1])),
    "unravel_index": lambda F, L: F.unravel_index(L.tensor([5, 7]), (2, 4)),
}


def plain(x):
    if isinstance(x, (ng.Tensor, torch.Tensor)):
        return (str(x.dtype).split(".")[-1], x.tolist())
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    return x


def test_every_torch_functional_function_of_nbgrad_is_tested():
    assert sorted(CALLS) == sorted(n for n in ngf.__all__ if n != "Tensor")


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
def test_functional_as_torch(call):
    assert plain(call(ngf, ng)) == plain(call(tf, torch))


def test_functional_is_nbgrads_own():
    assert ngf.Tensor is ng.Tensor
    assert all(getattr(ngf, n) is getattr(ng, n) for n in ngf.__all__)


P_VALUES = [2.0, 1.0, 0.5, 3.0, float("inf"), 0.0]
SHAPES = [((4, 3), (5, 3)), ((2, 4, 3), (5, 3)), ((2, 1, 4, 3), (3, 5, 3))]


@pytest.mark.parametrize("shapes", SHAPES, ids=[f"{a}-{b}" for a, b in SHAPES])
@pytest.mark.parametrize("p", P_VALUES)
def test_cdist_values_and_gradients_as_torch(p, shapes):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    if a.ndim == b.ndim == 2:
        b[0] = a[0]  # a zero distance: PyTorch's gradient there is zero
    weights = None
    got = []
    for L, F in ((ng, ngf), (torch, tf)):
        x, y = L.tensor(a, requires_grad=True), L.tensor(b, requires_grad=True)
        d = F.cdist(x, y, p=p)
        weights = rng.standard_normal(tuple(d.shape)) if weights is None else weights
        (d * L.tensor(weights)).sum().backward()
        got.append((type(d.grad_fn).__name__, d.detach().numpy(), x.grad.numpy(), y.grad.numpy()))
    assert got[0][0] == got[1][0] == "CdistBackward0"
    for ours, theirs in zip(got[0][1:], got[1][1:], strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-9)


CDIST_ERRORS = {
    "1-d": lambda L: L.cdist(L.ones(3), L.ones(2, 3)),
    "columns": lambda L: L.cdist(L.ones(2, 3), L.ones(2, 4)),
    "negative p": lambda L: L.cdist(L.ones(2, 3), L.ones(2, 3), p=-1.0),
}


@pytest.mark.parametrize("call", CDIST_ERRORS.values(), ids=CDIST_ERRORS.keys())
def test_cdist_errors_as_torch(call):
    errors = []
    for L in (ng, torch):
        with pytest.raises(RuntimeError) as info:
            call(L)
        errors.append(str(info.value))
    assert errors[0] == errors[1]
