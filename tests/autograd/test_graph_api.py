"""``nbgrad.autograd.graph``'s helpers against ``torch.autograd.graph``'s, run the same way in
both: ``save_on_cpu``, ``disable_saved_tensors_hooks``, ``register_multi_grad_hook``,
``GradientEdge`` / ``get_gradient_edge`` and ``increment_version``."""

from __future__ import annotations

import pytest

import nbgrad as ng
from nbgrad import backend

torch = pytest.importorskip("torch")


def outcome(fn, lib):
    try:
        return "ok", fn(lib)
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        return type(e).__name__, str(e)


def same(fn):
    ours, theirs = outcome(fn, ng), outcome(fn, torch)
    assert ours == theirs
    return ours


def test_save_on_cpu_gives_the_same_gradients():
    def run(lib):
        x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
        with lib.autograd.graph.save_on_cpu():
            y = (x.exp() * x).sin().sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return [round(v, 12) for v in g.tolist()], [round(v, 12) for v in gg.tolist()]

    assert same(run)[0] == "ok"


def test_save_on_cpu_keeps_saved_tensors_on_the_cpu():
    backend.register_device_type("graphapidev", count=1, strict=True)
    x = ng.tensor([0.5, 2.0], dtype=ng.float64, device="graphapidev", requires_grad=True)
    with ng.autograd.graph.save_on_cpu(pin_memory=True):
        y = x * x
    device, packed = y.grad_fn._raw_saved_self.data
    assert str(device).startswith("graphapidev") and packed.device.type == "cpu"
    (g,) = ng.autograd.grad(y.sum(), x)
    assert g.device == x.device and g.tolist() == [1.0, 4.0]


def test_disable_saved_tensors_hooks():
    def inside(lib):
        graph = lib.autograd.graph
        with graph.disable_saved_tensors_hooks("no hooks in here"):
            x = lib.ones(2, requires_grad=True)
            (x * x).sum().backward()  # saving still works
            with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass

    def around(lib):
        graph = lib.autograd.graph
        with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            with graph.disable_saved_tensors_hooks("hooks are on"):
                pass

    def after(lib):
        graph = lib.autograd.graph
        with graph.disable_saved_tensors_hooks("a"):
            with graph.disable_saved_tensors_hooks("b"):
                pass
            try:
                with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
            except RuntimeError as e:
                message = str(e)
        with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            pass
        return message

    def decorated(lib):
        @lib.autograd.graph.disable_saved_tensors_hooks("decorated")
        def f():
            with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass

        f()

    assert same(inside)[0] == "RuntimeError"
    assert same(around)[0] == "RuntimeError"
    assert same(after) == ("ok", "a")
    assert same(decorated) == ("RuntimeError", "decorated")


@pytest.mark.parametrize("mode", ["all", "any"])
def test_register_multi_grad_hook(mode):
    def run(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0], requires_grad=True)
        c = lib.tensor([4.0], requires_grad=True)
        calls = []

        def hook(grads):
            if mode == "all":
                calls.append([None if g is None else g.tolist() for g in grads])
            else:
                calls.append(grads.tolist())

        handle = lib.autograd.graph.register_multi_grad_hook((a, b, c), hook, mode=mode)
        ((a * 2).sum() + (b * 3).sum()).backward()
        (c * 5).sum().backward()
        handle.remove()
        (a.sum() + b.sum()).backward()
        return calls

    same(run)


def test_gradient_edges():
    def run(lib):
        graph = lib.autograd.graph
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = x * 3
        z = y.exp()
        edge = graph.get_gradient_edge(y)
        leaf = graph.get_gradient_edge(x)
        (g,) = lib.autograd.grad(z.sum(), edge)  # the gradient at y, through its edge
        (gx,) = lib.autograd.grad(y.sum(), leaf, retain_graph=True)
        return (
            edge.node.name(),
            edge.output_nr,
            leaf.node.name().rsplit("::", 1)[-1],
            isinstance(edge, graph.GradientEdge),
            [round(v, 10) for v in g.tolist()],
            gx.tolist(),
        )

    assert same(run)[0] == "ok"


def test_increment_version():
    def run(lib):
        x = lib.ones(2, requires_grad=True)
        y = x * 2
        z = y * y
        before = y._version
        lib.autograd.graph.increment_version(y)
        after = y._version
        try:
            z.sum().backward()
        except RuntimeError as e:
            return before, after, str(e).split(":")[0]
        return before, after, None

    ours, theirs = outcome(run, ng), outcome(run, torch)
    assert ours == theirs
