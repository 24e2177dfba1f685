"""``GradientEdge`` and ``get_gradient_edge`` in ``autograd.grad`` and ``autograd.backward``,
compared with PyTorch."""

import pytest
import torch

import nbgrad as ng


def _edge(lib, t):
    return lib.autograd.graph.get_gradient_edge(t)


def test_grad_to_an_edge_sees_the_value_before_an_in_place_op():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True).clone()
        edge = _edge(lib, x)
        x *= 2
        g_old, g_new = lib.autograd.grad(x.sum(), (edge, x))
        return g_old.tolist(), g_new.tolist()

    assert run(ng) == run(torch) == ([2.0, 2.0], [1.0, 1.0])


def test_edges_built_by_hand_give_the_tensors_gradients():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True).clone()
        y = lib.tensor([3.0, -1.0], requires_grad=True).clone()
        out = (x * y).sum()
        edges = (
            lib.autograd.graph.GradientEdge(x.grad_fn, x.output_nr),
            lib.autograd.graph.GradientEdge(y.grad_fn, y.output_nr),
        )
        return [g.tolist() for g in lib.autograd.grad(out, edges)]

    assert run(ng) == run(torch)


def test_an_edge_to_a_leaf_accumulates_as_the_leaf():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        edge = _edge(lib, x)
        out = (x * 3).sum()
        (g,) = lib.autograd.grad(out, edge)
        return g.tolist(), edge.output_nr, type(edge.node).__name__

    assert run(ng) == run(torch)


@pytest.mark.parametrize("which", ["edge_x", "edge_y", "both"])
def test_backward_and_grad_with_edges_as_inputs(which):
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True).clone()
        y = lib.tensor([3.0, 4.0], requires_grad=True).clone()
        ex = _edge(lib, x) if which in ("edge_x", "both") else x
        ey = _edge(lib, y) if which in ("edge_y", "both") else y
        out = x.clone().sum()
        lib.autograd.backward(out, inputs=(ex, ey))
        out = x.clone().sum()
        try:
            got = lib.autograd.grad(out, (ex, ey), allow_unused=True, materialize_grads=True)
            got = [None if g is None else g.tolist() for g in got]
        except RuntimeError as e:
            got = str(e)
        return got

    assert run(ng) == run(torch)


def test_backward_from_an_edge_after_its_tensor_is_gone():
    def run(lib):
        inp = lib.tensor([1.5], requires_grad=True)
        out = (inp * 2).clone()
        edge = _edge(lib, out)
        del out
        lib.autograd.backward(edge)  # a one-element output: an implicit gradient of ones
        return inp.grad.tolist()

    assert run(ng) == run(torch)


def test_no_edge_for_a_tensor_that_does_not_require_grad():
    with pytest.raises(RuntimeError, match="not possible to get the gradient edge"):
        _edge(ng, ng.ones(2))
    with pytest.raises(RuntimeError, match="not possible to get the gradient edge"):
        _edge(torch, torch.ones(2))


@pytest.mark.parametrize("mode", ["all", "any"])
def test_register_multi_grad_hook(mode):
    def run(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0], requires_grad=True)
        c = a * b
        d = a * b
        log = []

        def fn(grads):
            if mode == "all":
                log.append([None if g is None else g.tolist() for g in grads])
            else:
                log.append(grads.tolist())

        handle = lib.autograd.graph.register_multi_grad_hook((a, b, c, d), fn, mode=mode)
        c.sum().backward(retain_graph=True)
        c.sum().backward(inputs=(a,), retain_graph=True)
        (c + d).sum().backward(retain_graph=True)
        handle.remove()
        c.sum().backward()
        return log

    assert run(ng) == run(torch)


def test_register_multi_grad_hook_checks_its_mode():
    x = ng.ones(1, requires_grad=True)
    with pytest.raises(ValueError, match="Expects mode to be one of"):
        ng.autograd.graph.register_multi_grad_hook((x,), print, mode="some")
