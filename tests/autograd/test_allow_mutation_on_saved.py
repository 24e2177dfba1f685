"""``autograd.graph.allow_mutation_on_saved_tensors`` against torch's, each program run the same
way in both: gradients, the context's bookkeeping (how many clones are alive), and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

X = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]


def leaf(lib):
    return lib.tensor(X, dtype=lib.float64, requires_grad=True)


def outcome(fn, lib):
    try:
        return "ok", fn(lib)
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        return type(e).__name__, str(e)


def arrays(value):
    if isinstance(value, (list, tuple)):
        return [arrays(v) for v in value]
    if hasattr(value, "detach"):
        return np.asarray(value.detach())
    return value


def same(fn):
    (ours_kind, ours), (theirs_kind, theirs) = outcome(fn, ng), outcome(fn, torch)
    assert ours_kind == theirs_kind, (ours, theirs)
    if ours_kind == "ok":
        np.testing.assert_equal(arrays(ours), arrays(theirs))
    return ours_kind, ours


def cloned(ctx):
    return len(list(ctx.cloned.items()))


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b.sin_(),
        lambda b: b.mul_(10),
        lambda b: b.view_as(b).add_(1.0),  # a view at the same address
        lambda b: b[:1].zero_(),
        lambda b: b.copy_(b * 3),
        lambda b: b.__setitem__(0, 5.0),
        lambda b: b.t_(),  # an in-place view op: the saved value keeps its layout
        lambda b: b.detach().resize_(6),
    ],
    ids=["sin_", "mul_", "view_add_", "slice_zero_", "copy_", "setitem", "t_", "resize_"],
)
def test_backward_sees_the_saved_value(mutate):
    def run(lib):
        with lib.autograd.graph.allow_mutation_on_saved_tensors() as ctx:
            a = leaf(lib)
            b = a.clone()
            out = (b**3).sum()
            mutate(b)
            n = cloned(ctx)
            out.backward()
            return a.grad, n, cloned(ctx), b

    kind, (grad, n, after, _) = same(run)
    assert kind == "ok" and n == 1 and after == 0
    np.testing.assert_allclose(grad.numpy(), 3 * np.array(X) ** 2)


def test_without_the_context_the_version_error():
    def run(lib):
        b = leaf(lib).clone()
        out = (b**2).sum()
        b.sin_()
        out.backward()

    kind, message = outcome(run, ng)
    assert outcome(run, torch)[0] == kind == "RuntimeError"
    assert "modified by an inplace operation" in message


def test_saved_view_of_a_modified_base():
    def run(lib):
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            a = leaf(lib)
            b = a.clone()
            out = (b[:] ** 2).sum()
            b *= 2
            out.backward()
            return a.grad

    same(run)


def test_clones_live_as_long_as_the_graph():
    def run(lib):
        with lib.autograd.graph.allow_mutation_on_saved_tensors() as ctx:
            a = leaf(lib).clone()
            counts = [len(list(ctx.tid_to_weakhandle.items()))]
            b = a**2
            c = a**2  # the same tensor at the same version: one handle, one clone
            a.sin_()
            counts.append(cloned(ctx))
            d = a**2
            a.sin_()
            counts.append(cloned(ctx))
            del b, c
            counts.append(cloned(ctx))
            d.sum().backward()  # releases the graph
            counts.append(cloned(ctx))
            a.sin_()  # saved once, but not any more: nothing to clone
            counts.append(cloned(ctx))
            return counts

    assert same(run) == ("ok", [0, 1, 2, 1, 0, 0])


def test_out_variant_clones():
    def run(lib):
        with lib.autograd.graph.allow_mutation_on_saved_tensors() as ctx:
            a = lib.tensor([1.0], requires_grad=True)
            b = lib.tensor([1.0])
            out = a * b
            n = [len(list(ctx.tid_to_weakhandle.items()))]
            lib.sin(lib.tensor([2.0]), out=b)
            n.append(cloned(ctx))
            out.backward()
            n.append(cloned(ctx))
            return a.grad, n

    assert same(run)[1][1] == [1, 1, 0]


def test_double_backward():
    def run(lib):
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            a = leaf(lib)
            b = a.clone()
            out = (b**3).sum()
            b.sin_()
            (da,) = lib.autograd.grad(out, a, create_graph=True)
            (d2a,) = lib.autograd.grad(da.sum(), a)
            return da, d2a

    same(run)


def test_backward_outside_the_context_raises():
    def outside(lib):
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            out = (leaf(lib) ** 2).sum()
        out.backward()

    def in_another(lib):
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            out = (leaf(lib) ** 2).sum()
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            out.backward()

    for run in (outside, in_another):
        kind, message = same(run)
        assert kind == "AssertionError"
        assert message.startswith("Trying to backward outside of the")


def test_contexts_cannot_be_nested():
    def run(lib):
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            with lib.autograd.graph.allow_mutation_on_saved_tensors():
                pass

    assert same(run) == (
        "RuntimeError",
        "allow_mutation_on_saved_tensors contexts cannot be nested",
    )
