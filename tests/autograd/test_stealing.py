"""NOTE [Stealing the gradient] and NOTE [Accumulate in place]: a gradient nothing else holds
becomes ``.grad`` without a copy, or is summed into in place; one that anything else holds
(another leaf, a hook that kept it, the user's tensor, another input buffer) never is.

The first tests build graphs where one gradient reaches several leaves, or where hooks keep
what they are given, and check which of the tensors a user can see share memory, as PyTorch's
do, in a plain pass (gradients carried as arrays) and in a general one (anomaly mode: Tensors
everywhere). The last ones measure with tracemalloc that a gradient nothing else holds is not
copied, so that an extra reference in the engine (which would make every gradient count as
held elsewhere) does not go unnoticed either.
"""

from __future__ import annotations

import contextlib
import sys
import tracemalloc
import warnings

import numpy as np
import pytest

import nbgrad as ng
from nbgrad._graph.accumulate_grad import _SOLE_LOCAL, _STEAL

torch = pytest.importorskip("torch")


def leaf(lib, value=1.0):
    return lib.tensor([value, 2 * value], dtype=lib.float64, requires_grad=True)


def ones(lib):
    return lib.ones(2, dtype=lib.float64)


# Each scenario runs a backward pass in ``lib`` and returns the tensors a user can see: the
# leaves' ``.grad``, what hooks kept, the gradient the user passed.


def two_leaves(lib):
    x, y = leaf(lib), leaf(lib, 3.0)
    ((x + y) * 2.0).backward(ones(lib))  # AddBackward0 hands one gradient to both leaves
    return {"x.grad": x.grad, "y.grad": y.grad}


def two_leaves_and_the_users_gradient(lib):
    x, y, g = leaf(lib), leaf(lib, 3.0), ones(lib)
    (x + y).backward(g)  # the user's own tensor, to both leaves
    return {"x.grad": x.grad, "y.grad": y.grad, "g": g}


def a_leaf_and_the_users_gradient(lib):
    x, g = leaf(lib), ones(lib)
    x.backward(g)
    return {"x.grad": x.grad, "g": g}


def three_leaves_one_summed(lib):
    x, y, w = leaf(lib), leaf(lib, 3.0), leaf(lib, 5.0)
    ((x + x) + (y - w) * 1.0).mul(2.0).backward(ones(lib))  # x's buffer sums one gradient twice
    return {"x.grad": x.grad, "y.grad": y.grad, "w.grad": w.grad}


def a_tensor_hook_keeps(lib):
    x, kept = leaf(lib), []
    x.register_hook(kept.append)
    (x * 2.0).backward(ones(lib))
    return {"x.grad": x.grad, "kept": kept[0]}


def tensor_hooks_keep_one_gradient_of_two_leaves(lib):
    x, y, kept = leaf(lib), leaf(lib, 3.0), []
    x.register_hook(kept.append)
    ((x + y) * 2.0).backward(ones(lib))
    return {"x.grad": x.grad, "y.grad": y.grad, "kept": kept[0]}


def a_post_hook_keeps_grad_inputs(lib):
    x, kept = leaf(lib), []
    z = x * 2.0
    z.grad_fn.register_hook(lambda grad_inputs, grad_outputs: kept.append(grad_inputs[0]))
    z.backward(ones(lib))
    return {"x.grad": x.grad, "kept": kept[0]}


def a_post_hook_keeps_what_two_leaves_get(lib):
    x, y, kept = leaf(lib), leaf(lib, 3.0), []
    z = x + y
    z.grad_fn.register_hook(lambda grad_inputs, grad_outputs: kept.extend(grad_inputs))
    (z * 2.0).backward(ones(lib))
    return {"x.grad": x.grad, "y.grad": y.grad, "kept 0": kept[0], "kept 1": kept[1]}


def a_prehook_of_the_accumulator_keeps(lib):
    x, kept = leaf(lib), []
    z = x * 2.0
    z.grad_fn.next_functions[0][0].register_prehook(
        lambda grad_outputs: kept.append(grad_outputs[0])
    )
    z.backward(ones(lib))
    return {"x.grad": x.grad, "kept": kept[0]}


def a_post_hook_of_the_accumulator_keeps(lib):
    # (PyTorch steals here: the hook runs after the accumulation, and sees ``.grad``'s memory)
    x, kept = leaf(lib), []
    z = x * 2.0
    acc = z.grad_fn.next_functions[0][0]
    acc.register_hook(lambda grad_inputs, grad_outputs: kept.append(grad_outputs[0]))
    z.backward(ones(lib))
    return {"x.grad": x.grad, "kept": kept[0]}


def a_prehook_of_a_pass_through_node_keeps(lib):
    x, kept = leaf(lib), []
    z = x + 1.0  # AddBackward0 passes its gradient on as it is
    z.grad_fn.register_prehook(lambda grad_outputs: kept.append(grad_outputs[0]))
    (z * 2.0).backward(ones(lib))
    return {"x.grad": x.grad, "kept": kept[0]}


def a_retained_gradient(lib):
    x = leaf(lib)
    h = x + 1.0
    h.retain_grad()
    (h * 2.0).backward(ones(lib))
    return {"x.grad": x.grad, "h.grad": h.grad}


def a_hook_keeps_a_gradient_a_buffer_sums_into(lib):
    x, y, kept = leaf(lib), leaf(lib, 3.0), []
    a, b = x * 2.0, x * 3.0
    for node in (a.grad_fn, b.grad_fn):  # (the first to reach x's buffer is the one summed into)
        node.register_hook(lambda grad_inputs, grad_outputs: kept.append(grad_inputs[0]))
    (a + b + y).backward(ones(lib))
    return {"x.grad": x.grad, "y.grad": y.grad, "kept 0": kept[0], "kept 1": kept[1]}


def a_gradient_two_buffers_hold_is_summed_into(lib):
    x, w = leaf(lib), leaf(lib, 3.0)
    a = x.exp()
    u = w * 2.0  # its node runs last: the gradient waits in its buffer meanwhile
    b = a * 3.0
    s = a + u  # AddBackward0 hands one gradient to ExpBackward0's buffer and to u's node
    ((s * s).sum() + b.sum()).backward()  # b's gradient then reaches ExpBackward0's buffer
    return {"x.grad": x.grad, "w.grad": w.grad}


SCENARIOS = [
    two_leaves,
    two_leaves_and_the_users_gradient,
    a_leaf_and_the_users_gradient,
    three_leaves_one_summed,
    a_tensor_hook_keeps,
    tensor_hooks_keep_one_gradient_of_two_leaves,
    a_post_hook_keeps_grad_inputs,
    a_post_hook_keeps_what_two_leaves_get,
    a_prehook_of_the_accumulator_keeps,
    a_post_hook_of_the_accumulator_keeps,
    a_prehook_of_a_pass_through_node_keeps,
    a_retained_gradient,
    a_hook_keeps_a_gradient_a_buffer_sums_into,
    a_gradient_two_buffers_hold_is_summed_into,
]


def pass_of(lib, kind):
    """The context of a plain pass, or of a general one (anomaly mode: no carried arrays)."""
    if kind == "plain":
        return contextlib.nullcontext()
    return lib.autograd.detect_anomaly(check_nan=False)


def sharing(tensors):
    """The groups of names whose tensors share memory (groups of one left out)."""
    arrays = {name: t.detach().numpy() for name, t in tensors.items()}
    groups = []
    for name, a in arrays.items():
        group = next((g for g in groups if np.shares_memory(arrays[g[0]], a)), None)
        if group is None:
            groups.append([name])
        else:
            group.append(name)
    return sorted(g for g in groups if len(g) > 1)


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
@pytest.mark.parametrize("kind", ["plain", "general"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__)
def test_what_shares_memory_is_what_shares_it_in_pytorch(scenario, kind):
    """Which of the tensors a user sees share memory, and what they hold after each ``.grad``
    is changed in place (a shared array would show the change in another tensor)."""
    results = {}
    for lib in (ng, torch):
        with warnings.catch_warnings(), pass_of(lib, kind):
            warnings.simplefilter("ignore")
            tensors = scenario(lib)
        shared = sharing(tensors)
        for name, t in tensors.items():
            if name.endswith(".grad"):
                t.add_(10.0)
        values = {name: t.detach().numpy().tolist() for name, t in tensors.items()}
        results[lib.__name__] = shared, values
    assert results["nbgrad"] == results["torch"]


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
@pytest.mark.parametrize("kind", ["plain", "general"])
def test_a_gradient_kept_by_a_hook_is_not_grad(kind):
    """PyTorch's parity facts: a tensor hook's kept gradient is not ``.grad`` and shares no
    memory with it, and a later accumulation leaves it as the hook saw it."""
    for lib in (ng, torch):
        x, kept = leaf(lib), []
        x.register_hook(kept.append)
        with warnings.catch_warnings(), pass_of(lib, kind):
            warnings.simplefilter("ignore")
            (x * 2.0).backward(ones(lib))
            (x * 3.0).backward(ones(lib))
        assert x.grad is not kept[0] and x.grad is not kept[1]
        assert not np.shares_memory(x.grad.numpy(), kept[0].numpy())
        assert [k.tolist() for k in kept] == [[2.0, 2.0], [3.0, 3.0]]
        assert x.grad.tolist() == [5.0, 5.0]


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
@pytest.mark.parametrize("kind", ["plain", "general"])
def test_memory_another_tensor_shares_is_neither_summed_into_nor_stolen(kind):
    """A hook keeps ``grad.detach()``, another tensor of the gradient's memory: ``.grad``
    and the input buffer's sum leave it as it was (nbgrad is stricter than PyTorch here, which
    asks only whether the gradient tensor itself is held, and changes what the hook kept)."""
    x, kept = leaf(ng), []
    a, b = x * 2.0, x * 3.0
    for node in (a.grad_fn, b.grad_fn):
        node.register_hook(lambda grad_inputs, grad_outputs: kept.append(grad_inputs[0].detach()))
    with pass_of(ng, kind):
        (a + b).backward(ones(ng))
        (x * 4.0).backward(ones(ng))
    assert sorted(k.tolist() for k in kept) == [[2.0, 2.0], [3.0, 3.0]]
    assert x.grad.tolist() == [9.0, 9.0]


def test_the_sole_holder_count_is_this_interpreters():
    """``_SOLE_LOCAL`` is what ``sys.getrefcount`` says of a local nothing else refers to."""
    probe = object()
    assert sys.getrefcount(probe) == _SOLE_LOCAL


# -- a gradient nothing else holds is not copied ---------------------------------------------
N = 1 << 20  # float64 elements: 8 MiB, against which the rest of a pass's allocations vanish


def peak_in_arrays(fn):
    """The peak of memory ``fn()`` allocates, in arrays of N float64s."""
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return (peak - start) / (8 * N)


@pytest.mark.skipif(not _STEAL, reason="gradients are copied where refcounts do not tell")
@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
@pytest.mark.parametrize("kind", ["plain", "general"])
@pytest.mark.parametrize(
    "uses, arrays",
    # one use: MulBackward0's result becomes .grad (a copy: 2); three uses: two results at
    # once, the third summed into the first in place (a new sum: 3), which becomes .grad
    [(1, 1), (3, 2)],
)
def test_a_gradient_nothing_else_holds_is_not_copied(kind, uses, arrays):
    x = ng.zeros(N, dtype=ng.float64, requires_grad=True)
    g = ng.ones(N, dtype=ng.float64)
    with pass_of(ng, kind):
        y = x * 2.0
        for k in range(1, uses):
            y = y + x * float(k)
        peak = peak_in_arrays(lambda: y.backward(g))
    assert arrays <= peak < arrays + 0.5
    np.testing.assert_array_equal(x.grad.numpy()[:2], [2.0 + sum(range(1, uses))] * 2)


@pytest.mark.skipif(not _STEAL, reason="gradients are copied where refcounts do not tell")
@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
@pytest.mark.parametrize("kind", ["plain", "general"])
def test_the_nodes_run_next_do_not_keep_the_gradients_of_the_node_before(kind):
    """MulBackward0 sends one gradient to x's accumulator (which waits) and one to SinBackward0,
    then ExpBackward0, which run next, in the same call in a plain pass (NOTE [Chains skip the
    queue]); ExpBackward0's result is summed into the first in place, as nothing else holds it
    by then."""
    x = ng.zeros(N, dtype=ng.float64, requires_grad=True)
    g = ng.ones(N, dtype=ng.float64)
    with pass_of(ng, kind):
        y = x * x.exp().sin()
        # MulBackward0's two results and one more at a time along the chain (3), the last
        # summed into the first in place, which becomes .grad (a new sum, or a copy: 4)
        peak = peak_in_arrays(lambda: y.backward(g))
    assert 3 <= peak < 3.5
    d = np.sin(1.0)  # sin(exp(x)) + x cos(exp(x)) exp(x), at 0
    np.testing.assert_allclose(x.grad.numpy()[:2], [d, d], rtol=1e-15)
