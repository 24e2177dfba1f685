"""``nbgrad.optim.Optimizer`` (``nbgrad/optim/optimizer.py``): parameter groups, ``zero_grad``,
state dicts and the errors PyTorch raises."""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

LIBS = pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])


@LIBS
def test_construction_errors(lib):
    p = lib.nn.Parameter(lib.ones(2))
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        lib.optim.SGD(p, lr=0.1)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        lib.optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        lib.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        lib.optim.SGD([p * 2], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        lib.optim.SGD([{"params": {p}}], lr=0.1)


@LIBS
def test_zero_grad(lib):
    p = lib.nn.Parameter(lib.ones(2))
    opt = lib.optim.SGD([p], lr=0.1)
    (p * 2).sum().backward()
    opt.zero_grad(set_to_none=False)
    # zeros written, not computed
    assert p.grad is not None and p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_add_param_group_and_defaults():
    a, b = ng.nn.Parameter(ng.ones(1)), ng.nn.Parameter(ng.ones(1))
    opt = ng.optim.SGD([a], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": b, "lr": 0.5})
    assert opt.param_groups[1]["params"] == [b] and opt.param_groups[1]["momentum"] == 0.9
    assert opt.param_groups[1]["lr"] == 0.5
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    opt.param_groups[0]["lr"] = 1.0  # changing a group's option takes effect at the next step
    a.grad = ng.ones(1)
    opt.step()
    # exact: 1 - 1.0 * 1
    assert a.item() == 0.0
    assert "Parameter Group 1" in repr(opt) and "lr: 0.5" in repr(opt)


def test_load_state_dict_errors():
    a, b = ng.nn.Parameter(ng.ones(1)), ng.nn.Parameter(ng.ones(1))
    one = ng.optim.Adam([a])
    two = ng.optim.Adam([{"params": [a]}, {"params": [b]}])
    with pytest.raises(ValueError, match="different number of parameter groups"):
        one.load_state_dict(two.state_dict())
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        one.load_state_dict(ng.optim.Adam([a, b]).state_dict())


def test_load_state_dict_casts_to_the_parameters():
    p32 = ng.nn.Parameter(ng.ones(3))
    opt32 = ng.optim.Adam([p32], lr=0.1)
    p32.grad = ng.ones(3)
    opt32.step()
    p64 = ng.nn.Parameter(ng.ones(3, dtype=ng.float64))
    opt64 = ng.optim.Adam([p64], lr=0.1)
    opt64.load_state_dict(opt32.state_dict())
    state = opt64.state[p64]
    assert state["exp_avg"].dtype is ng.float64
    assert state["step"].dtype is ng.float32  # the step is not cast, as PyTorch
    np.testing.assert_allclose(state["exp_avg"].numpy(), 0.1)
    assert opt64.param_groups[0]["params"] == [p64]


def test_seed_snippet_runs_verbatim():
    """The API's promise: ``optimizer.zero_grad(); loss_fn(model(input), target).backward();
    optimizer.step()`` runs unchanged on a two-layer MLP (and the loss goes down)."""
    ng.manual_seed(0)
    model = ng.nn.Sequential(ng.nn.Linear(4, 16), ng.nn.ReLU(), ng.nn.Linear(16, 3))
    loss_fn = ng.nn.CrossEntropyLoss()
    optimizer = ng.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    input = ng.randn(32, 4)
    target = (input[:, 0] > 0).long() + (input[:, 1] > 0).long()  # learnable classes
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        loss_fn(model(input), target).backward()
        optimizer.step()  # noqa: E702
        losses.append(loss_fn(model(input), target).item())
    assert losses[-1] < 0.3 * losses[0]
