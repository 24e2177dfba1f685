"""The in-place view ops (``t_``, ``transpose_``, ``swapdims_``, ``swapaxes_``, ``squeeze_``,
``unsqueeze_``) against PyTorch: layout, version, node and its next edge, base, errors, a
retained gradient, no-grad mode, and gradients through a view changed so and then written
(the op-table test checks each op's values, gradients and node)."""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

CALLS = {
    "t_": lambda t: t.t_(),
    "transpose_": lambda t: t.transpose_(0, -1),
    "swapdims_": lambda t: t.swapdims_(1, 0),
    "swapaxes_": lambda t: t.swapaxes_(-1, 0),
    "squeeze_": lambda t: t.squeeze_(),
    "squeeze_dim": lambda t: t.squeeze_(1),
    "squeeze_dims": lambda t: t.squeeze_((1, 0)),
    "unsqueeze_": lambda t: t.unsqueeze_(-1),
}


def _facts(t, lib):
    fn = t.grad_fn
    return (
        list(t.shape),
        [s for s in t.stride()],
        t._version,
        None if fn is None else fn.name(),
        None if fn is None else [f.name() if f else None for f, _ in fn.next_functions],
        t.requires_grad,
    )


@pytest.mark.parametrize("call", CALLS)
def test_an_in_place_view_op_on_a_non_leaf_and_on_a_plain_tensor(call):
    results = []
    for lib in (ng, torch):
        x = lib.tensor(np.arange(6.0).reshape(2, 1, 3)[:, 0], requires_grad=True)
        y = x * 2
        out = CALLS[call](y)
        plain = lib.tensor(np.arange(6.0).reshape(2, 3))
        CALLS[call](plain)
        (y * lib.arange(1.0, 7.0).reshape(y.shape)).sum().backward()
        results.append(
            (out is y, y._base is None, _facts(y, lib), _facts(plain, lib), x.grad.tolist())
        )
    assert results[0] == results[1]


@pytest.mark.parametrize("call", CALLS)
def test_an_in_place_view_op_on_a_view_then_a_write_through_it(call):
    """The view keeps its base; a write into it afterwards reaches the base at the places the
    changed layout names, and the gradients follow (CopySlices replays the view's chain)."""
    results = []
    for lib in (ng, torch):
        x = lib.tensor(np.arange(1.0, 13.0).reshape(2, 6), requires_grad=True)
        base = x * 1
        view = base[:, :3]  # a view of base: (2, 3), or (2, 1, 3)
        view = view if call == "t_" else view.unsqueeze(1)
        CALLS[call](view)
        view.mul_(lib.arange(1.0, 7.0).reshape(view.shape))
        (base * base).sum().backward()
        results.append(
            (view._base is base, list(view.shape), base.detach().tolist(), x.grad.tolist())
        )
    assert results[0] == results[1]


def _outcome(fn):
    try:
        t = fn()
        return "ok", list(t.shape), t.requires_grad, t.grad_fn is None
    except (RuntimeError, IndexError) as e:
        return type(e).__name__, str(e)


def _modes(lib, call):
    """What the op does to a leaf that requires grad, in grad mode and in no-grad mode, to a
    4-d non-leaf, and what a gradient retained before it holds."""
    shape = (2, 3) if call == "t_" else (2, 1, 3)
    op = CALLS[call]
    row = [_outcome(lambda: op(lib.ones(shape, requires_grad=True)))]
    with lib.no_grad():
        row.append(_outcome(lambda: op(lib.ones(shape, requires_grad=True))))
    row.append(_outcome(lambda: op(lib.ones(2, 1, 3, 4).requires_grad_() * 1)))
    retained = lib.ones(shape, requires_grad=True) * 1
    retained.retain_grad()
    op(retained).sum().backward()
    row.append(list(retained.grad.shape))  # the gradient of the value it had before
    return row


@pytest.mark.parametrize("call", CALLS)
def test_in_place_view_op_errors_and_modes_match_pytorch(call):
    assert _modes(ng, call) == _modes(torch, call)


def test_dims_out_of_range_and_t_of_3d_as_pytorch():
    calls = [
        lambda lib: lib.ones(2, 2, 2).t_(),
        lambda lib: lib.ones(2).transpose_(0, 3),
        lambda lib: lib.ones(2).unsqueeze_(3),
        lambda lib: lib.ones(2).squeeze_(2),
        lambda lib: lib.ones(2).squeeze_((0, 1)),
    ]
    for call in calls:
        errors = []
        for lib in (ng, torch):
            with pytest.raises((RuntimeError, IndexError)) as info:
                call(lib)
            errors.append((type(info.value).__name__, str(info.value)))
        assert errors[0] == errors[1]
