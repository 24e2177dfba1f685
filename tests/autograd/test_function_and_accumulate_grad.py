"""AccumulateGrad, ``.grad`` and custom Functions, against PyTorch: accumulation with and
without ``create_graph`` (the accumulated ``.grad`` differentiated again), ``retain_grad``,
the order of hooks on a leaf, gradient buffers that must not be aliased into ``.grad``, and a
custom Function's ``needs_input_grad``, ``mark_non_differentiable``, ``set_materialize_grads``
and ``once_differentiable``."""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng

# (both libraries warn that backward(create_graph=True) makes a reference cycle: expected here.
# PyTorch warns once per process, so test_errors.py, which checks that warning, runs first)
pytestmark = pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")

torch = pytest.importorskip("torch")
LIBS = [ng, torch]
X = [0.5, -1.5, 2.0]


def leaf(lib, values=X):
    return lib.tensor(values, dtype=lib.float64, requires_grad=True)


def arr(t):
    return np.asarray(t.detach().numpy()).copy()


def both(run):
    a, b = run(ng), run(torch)
    assert len(a) == len(b)
    for u, v in zip(a, b):
        if isinstance(u, np.ndarray) or isinstance(v, np.ndarray):
            np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)
        else:
            assert u == v


def test_accumulation_without_create_graph_is_in_place():
    def run(lib):
        x = leaf(lib)
        (x * x).sum().backward()
        g = x.grad
        (x * 3).sum().backward()
        return [arr(x.grad), x.grad is g, arr(g), x.grad.requires_grad]

    both(run)


def test_accumulated_grad_under_create_graph_is_differentiable():
    def run(lib):
        x = leaf(lib)
        (x**3).sum().backward(create_graph=True, inputs=[x])
        first = [arr(x.grad), x.grad.requires_grad]
        (x * x).sum().backward(create_graph=True, inputs=[x])  # .grad = 3x^2 + 2x, with its graph
        (h,) = lib.autograd.grad(x.grad.sum(), x)
        return first + [arr(x.grad), x.grad.requires_grad, arr(h)]

    both(run)


def test_retain_grad_under_create_graph_and_accumulation():
    def run(lib):
        x = leaf(lib)
        y = x * x
        y.retain_grad()
        (y * y).sum().backward(create_graph=True, inputs=[x, y])
        out = [arr(y.grad), y.grad.requires_grad]
        (h,) = lib.autograd.grad(y.grad.sum(), x, retain_graph=True)
        out.append(arr(h))
        z = x * 2
        z.retain_grad()
        (z * z).sum().backward(retain_graph=True)
        (z * z).sum().backward()
        return out + [arr(z.grad), z.grad.requires_grad]

    both(run)


def test_retained_grad_is_not_the_leafs_grad():
    def run(lib):
        x = leaf(lib)
        y = x.clone()
        y.retain_grad()
        y.sum().backward(retain_graph=True)
        shared = np.shares_memory(x.grad.numpy(), y.grad.numpy())
        y.sum().backward()
        return [shared, arr(x.grad), arr(y.grad)]

    both(run)


def test_hook_order_on_a_leaf():
    def run(lib):
        log = []
        x = leaf(lib)
        x.register_hook(lambda g: log.append(("tensor 1", g.tolist())) or g * 2)
        x.register_hook(lambda g: log.append(("tensor 2", g.tolist())) or g + 1)
        x.register_post_accumulate_grad_hook(lambda t: log.append(("post 1", t.grad.tolist())))
        x.register_post_accumulate_grad_hook(lambda t: log.append(("post 2", t.grad.tolist())))
        (x * x).sum().backward()
        (x * 3).sum().backward()
        return log + [arr(x.grad)]

    both(run)


def test_a_gradient_a_hook_keeps_is_not_aliased_into_grad():
    """A hook that keeps the gradient tensor it saw must not see it change when ``.grad``
    accumulates in place later."""

    def run(lib):
        x = leaf(lib)
        kept = []
        x.register_hook(kept.append)
        (x * x).sum().backward()
        (x * 3).sum().backward()
        return [arr(kept[0]), arr(kept[1]), arr(x.grad)]

    both(run)


def test_a_gradient_that_is_a_view_accumulates():
    def run(lib):
        x = leaf(lib)
        g = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
        x.reshape(3, 1).backward(g.reshape(3, 1) * 1)
        x.reshape(3, 1).backward(g.reshape(3, 1) * 2)
        return [arr(x.grad)]

    both(run)


def test_grad_of_one_output_of_a_multi_output_node():
    def run(lib):
        x = leaf(lib, [[1.0, 2.0], [3.0, 4.0]])
        a, b = x.unbind(0)
        b.register_hook(lambda g: g * 10)
        out = (a * 2 + b * b).sum()
        return [arr(g) for g in lib.autograd.grad(out, [b, a, x])]

    both(run)


# ---- custom Functions --------------------------------------------------------------------------
def make_mixed(lib):
    class Mixed(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, k, c):
            ctx.log = [tuple(ctx.needs_input_grad), lib.is_grad_enabled()]
            ctx.save_for_backward(a, b, c)
            ctx.k = k
            return a * b * k, 7, c * 2

        @staticmethod
        def backward(ctx, g1, g2, g3):
            a, b, c = ctx.saved_tensors
            return g1 * b * ctx.k, g1 * a * ctx.k, None, g3 * 3

    return Mixed


def test_needs_input_grad_and_routing_with_mixed_inputs_and_outputs():
    def run(lib):
        a, c = leaf(lib), leaf(lib, [1.0, 2.0, 3.0])
        b = lib.tensor([2.0, 3.0, 4.0], dtype=lib.float64)
        y, seven, z = make_mixed(lib).apply(a, b, 5.0, c)
        ga, gc = lib.autograd.grad((y * 2 + z).sum(), [a, c])
        log = y.grad_fn.log
        with lib.no_grad():
            q = make_mixed(lib).apply(a, b, 5.0, c)[0]
        return log + [seven, arr(ga), arr(gc), q.requires_grad, q.grad_fn is None]

    both(run)


@pytest.mark.parametrize("materialize", [True, False])
def test_outputs_that_are_not_tensors_are_inputs_of_the_node(materialize):
    """As PyTorch: the node has an input per output of forward, a tensor output's output_nr is
    its position among them all, and the node's hooks see None for a non-tensor output, which
    materialize_grads leaves None (the unused tensor output's gradient it makes zeros)."""

    def run(lib):
        seen = []

        class Mixed(lib.autograd.Function):
            @staticmethod
            def forward(ctx, k, x, y):
                ctx.set_materialize_grads(materialize)
                return k, x * 2, y * 3

            @staticmethod
            def backward(ctx, gk, gx, gy):
                seen.append(
                    ["backward"] + [None if g is None else g.tolist() for g in (gk, gx, gy)]
                )
                return None, gx * 2, None if gy is None else gy * 3

        x, y = leaf(lib), leaf(lib, [1.0, 2.0, 3.0])
        k, a, b = Mixed.apply(4, x, y)
        node = a.grad_fn
        node.register_prehook(lambda g: seen.append(["pre", len(g), g[0] is None, g[2] is None]))
        node.register_hook(lambda gi, go: seen.append(["post", len(gi), len(go)]))
        meta = [
            (list(m.shape), str(m.dtype).split(".")[1], str(m.device)) for m in node._input_metadata
        ]
        a.sum().backward()
        gy = None if y.grad is None else arr(y.grad)
        return seen + [k, a.output_nr, b.output_nr, meta, arr(x.grad), gy]

    both(run)


def test_mark_non_differentiable_and_an_input_returned():
    def run(lib):
        class Sorted(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                idx = x.argsort().to(x.dtype)
                ctx.mark_non_differentiable(idx)
                return x, idx

            @staticmethod
            def backward(ctx, g, g_idx):
                return g * 2

        x = leaf(lib)
        y, idx = Sorted.apply(x)
        (g,) = lib.autograd.grad(y.sum(), x)
        return [idx.requires_grad, y is x, y.requires_grad, arr(g)]

    both(run)


@pytest.mark.parametrize("materialize", [True, False])
def test_set_materialize_grads(materialize):
    def run(lib):
        seen = []

        class Two(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                seen.append([None if g is None else g.tolist() for g in (g1, g2)])
                return g1 * 2 if g2 is None else g1 * 2 + g2 * 3

        x = leaf(lib)
        y, _ = Two.apply(x)
        y.sum().backward()
        return seen + [arr(x.grad)]

    both(run)


def test_once_differentiable_under_create_graph():
    def run(lib):
        from_fn = lib.autograd.function.once_differentiable

        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x**3

            @staticmethod
            @from_fn
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 3 * x * x

        x = leaf(lib)
        y = Cube.apply(x)
        upstream = lib.ones(3, dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(y, x, upstream, create_graph=True)
        return [arr(g), g.requires_grad]

    both(run)


def test_a_saved_output_changed_in_place_names_its_function_as_pytorch():
    """The version error for an output a custom Function saved says whose output it is."""
    import torch

    def make(lib):
        class Exp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, i):
                result = i.exp()
                ctx.save_for_backward(result)
                return result

            @staticmethod
            def backward(ctx, grad_output):
                (result,) = ctx.saved_tensors
                return grad_output * result

        return Exp

    messages = []
    for lib in (ng, torch):
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        y = make(lib).apply(x * 1)
        y.add_(1)
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
        messages.append(str(info.value).split("Hint")[0].replace("nbgrad.", "torch."))
    assert messages[0] == messages[1]
    assert "which is output 0 of Exp, is at version 1" in messages[0]
