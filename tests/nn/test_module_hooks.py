"""Module hooks (``nbgrad/nn/modules/module.py`` and ``_backward_hook.py``) against PyTorch.

Each scenario is written once for a library ``lib`` (nbgrad or torch) and returns the log of
the calls it saw; the logs must be equal, so the order of forward hooks, full backward
(pre-)hooks, tensor hooks and post-accumulate-grad hooks is PyTorch's.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

LIBS = {"nbgrad": ng, "torch": torch}


def shapes(grads):
    return [None if g is None else tuple(g.shape) for g in grads]


def hook_everything(lib, log, named_modules):
    """Register every kind of module hook on each module, and tensor hooks on parameters."""
    for name, mod in named_modules:
        mod.register_forward_pre_hook(lambda m, args, name=name: log.append(f"{name}.fwd_pre"))
        mod.register_forward_hook(lambda m, args, out, name=name: log.append(f"{name}.fwd"))
        mod.register_full_backward_pre_hook(
            lambda m, go, name=name: log.append(f"{name}.bwd_pre {shapes(go)}")
        )
        mod.register_full_backward_hook(
            lambda m, gi, go, name=name: log.append(f"{name}.bwd {shapes(gi)} {shapes(go)}")
        )
        for pname, p in mod.named_parameters(recurse=False):
            p.register_hook(lambda g, n=f"{name}.{pname}": log.append(f"{n}.tensor_hook"))
            p.register_post_accumulate_grad_hook(
                lambda t, n=f"{name}.{pname}": log.append(f"{n}.post_acc")
            )


def fill_params(lib, module, seed=0):
    """Give the parameters the same values in both libraries."""
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for p in module.parameters():
            values = rng.uniform(-0.5, 0.5, tuple(p.shape))
            p.copy_(lib.tensor(values, dtype=p.dtype))
    return module


def make_block(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(3, 4)
            self.act = nn.Tanh()
            self.fc2 = nn.Linear(4, 3)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x)))

    return Block()


def reference_scenario(lib):
    """One module with children; hooks on modules, parameters, input and output."""
    log = []
    lib.manual_seed(0)
    m = make_block(lib)
    hook_everything(lib, log, [("block", m), ("fc1", m.fc1), ("act", m.act), ("fc2", m.fc2)])
    x = lib.tensor(np.arange(6.0).reshape(2, 3) / 5, dtype=lib.float32, requires_grad=True)
    x.register_hook(lambda g: log.append("x.tensor_hook"))
    y = m(x)
    y.register_hook(lambda g: log.append("y.tensor_hook"))
    log.append(f"y.grad_fn={y.grad_fn.name()}")
    log.append("backward")
    y.sum().backward()
    return log


def nested_scenario(lib):
    """Sequential(Block, Block, Linear) inside an outer module, used twice (two calls)."""
    log = []
    nn = lib.nn
    lib.manual_seed(0)

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(make_block(lib), make_block(lib))
            self.head = nn.Linear(3, 1)

        def forward(self, x):
            return self.head(self.body(x) + self.body[1](x))

    outer = fill_params(lib, Outer())
    hook_everything(lib, log, [(n or "outer", m) for n, m in outer.named_modules()])
    x = lib.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=lib.float32, requires_grad=True)
    out = outer(x)
    log.append("backward")
    (out * out).sum().backward()
    log.append(f"x.grad={np.round(x.grad.numpy(), 5).tolist()}")
    return log


def no_input_grad_scenario(lib):
    """The module input does not require grad: the backward hook fires at output time."""
    log = []
    lib.manual_seed(0)
    m = make_block(lib)
    hook_everything(lib, log, [("block", m), ("fc1", m.fc1)])
    x = lib.ones(2, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m(x).sum().backward()
    log.append(f"warned={any('Full backward hook is firing' in str(w.message) for w in caught)}")
    return log


def tuple_scenario(lib):
    """Several inputs (one not a tensor, one not requiring grad) and a tuple output."""
    log = []
    nn = lib.nn

    class Pair(nn.Module):
        def forward(self, a, b, scale, c):
            return a * b * scale, a + c

    m = Pair()
    m.register_full_backward_pre_hook(
        lambda mod, go: log.append(("pre", [np.round(g.numpy(), 6).tolist() for g in go]))
    )

    def bwd(mod, gi, go):
        log.append(("gi", [None if g is None else np.round(g.numpy(), 6).tolist() for g in gi]))
        log.append(("go", [None if g is None else np.round(g.numpy(), 6).tolist() for g in go]))

    m.register_full_backward_hook(bwd)
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, -1.0], requires_grad=True)
    c = lib.tensor([0.5, 0.5])
    p, s = m(a, b, 2.0, c)
    log.append(("names", p.grad_fn.name(), s.grad_fn.name()))
    (p * 3 + s * s).sum().backward()
    log.append(("grads", a.grad.tolist(), b.grad.tolist()))
    return log


@pytest.mark.parametrize(
    "scenario", [reference_scenario, nested_scenario, no_input_grad_scenario, tuple_scenario]
)
def test_hook_sequence_matches_torch(scenario):
    ng_log = scenario(ng)
    th_log = scenario(torch)
    assert ng_log == th_log


def test_reference_scenario_order():
    """The order the issue describes, spelled out (PyTorch's, verified by the test above)."""
    log = reference_scenario(ng)
    i = log.index
    assert log[:8] == [
        "block.fwd_pre",
        "fc1.fwd_pre",
        "fc1.fwd",
        "act.fwd_pre",
        "act.fwd",
        "fc2.fwd_pre",
        "fc2.fwd",
        "block.fwd",
    ]
    assert log[8] == "y.grad_fn=BackwardHookFunctionBackward"
    # the backward pre-hook runs after the output's tensor hooks, before the module's inside
    assert i("y.tensor_hook") < i("block.bwd_pre [(2, 3)]") < i("fc2.bwd_pre [(2, 3)]")
    # the backward hook runs after the parameters' gradients, before the input's tensor hooks
    assert i("fc1.weight.post_acc") < i("fc1.bwd [(2, 3)] [(2, 4)]") < i("x.tensor_hook")
    assert log[-1] == "x.tensor_hook"


def replacing_scenario(lib):
    """Hooks that replace inputs, outputs and gradients."""
    m = fill_params(lib, lib.nn.Linear(3, 2))
    m.register_forward_pre_hook(lambda mod, args: args[0] * 2)  # a bare tensor is wrapped
    m.register_forward_pre_hook(
        lambda mod, args, kwargs: ((args[0] + 1,), kwargs), with_kwargs=True
    )
    m.register_forward_hook(lambda mod, args, out: out * 3)
    m.register_forward_hook(lambda mod, args, kwargs, out: out - args[0].sum(), with_kwargs=True)
    m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 10,))
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] + 1,))
    x = lib.tensor([[1.0, -2.0, 0.5]], requires_grad=True)
    y = m(x)
    (y * y).sum().backward()
    return [y.detach().numpy(), x.grad.numpy(), m.weight.grad.numpy(), m.bias.grad.numpy()]


def test_hooks_replace_inputs_outputs_and_gradients_like_torch():
    for a, b in zip(replacing_scenario(ng), replacing_scenario(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def order_scenario(lib, disable):
    """``prepend``, ``remove`` and (for nbgrad) disabling; the log of forward hooks."""
    log = []
    m = lib.nn.Tanh()
    m.register_forward_hook(lambda *a: log.append("first"))
    h = m.register_forward_hook(lambda *a: log.append("second"))
    m.register_forward_hook(lambda *a: log.append("prepended"), prepend=True)
    m.register_forward_pre_hook(lambda *a: log.append("pre"))
    m.register_forward_pre_hook(lambda *a: log.append("pre-prepended"), prepend=True)
    m(lib.ones(1))
    if disable:
        h.enabled = False
    else:
        h.remove()
    m(lib.ones(1))
    return log


def test_prepend_remove_and_disable():
    expected = [
        "pre-prepended",
        "pre",
        "prepended",
        "first",
        "second",
        "pre-prepended",
        "pre",
        "prepended",
        "first",
    ]
    assert order_scenario(torch, disable=False) == expected
    assert order_scenario(ng, disable=False) == expected
    assert order_scenario(ng, disable=True) == expected


def test_disabled_backward_hooks_are_skipped_even_after_forward():
    log = []
    m = ng.nn.Linear(2, 2)
    pre = m.register_full_backward_pre_hook(lambda mod, go: log.append("pre"))
    post = m.register_full_backward_hook(lambda mod, gi, go: log.append("post"))
    x = ng.ones(1, 2, requires_grad=True)
    y = m(x)  # the hooks are captured now
    pre.enabled = False
    y.sum().backward(retain_graph=True)
    assert log == ["post"]
    pre.enabled, post.enabled = True, False
    y.sum().backward()
    assert log == ["post", "pre"]


def removed_after_forward_scenario(lib):
    log = []
    m = lib.nn.Linear(2, 2)
    h = m.register_full_backward_hook(lambda mod, gi, go: log.append("post"))
    y = m(lib.ones(1, 2, requires_grad=True))
    h.remove()  # as PyTorch: a graph built before the removal still calls it
    y.sum().backward()
    m(lib.ones(1, 2, requires_grad=True)).sum().backward()
    return log


def test_removal_after_forward_matches_torch():
    assert removed_after_forward_scenario(ng) == removed_after_forward_scenario(torch) == ["post"]


def always_call_scenario(lib):
    log = []

    class Failing(lib.nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Failing()
    m.register_forward_hook(lambda *a: log.append("always"), always_call=True)
    m.register_forward_hook(lambda *a: log.append("normal"))
    with pytest.raises(ValueError, match="boom"):
        m(lib.ones(1))
    return log


def test_always_call_matches_torch():
    assert always_call_scenario(ng) == always_call_scenario(torch) == ["always"]


@pytest.mark.parametrize("lib", LIBS.values(), ids=LIBS.keys())
def test_hook_errors(lib):
    m = lib.nn.Linear(2, 2)
    h = m.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        m(lib.ones(1, 2))
    h.remove()
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    with pytest.raises(
        RuntimeError, match="Backward hook returned an invalid number of grad_input"
    ):
        m(lib.ones(1, 2, requires_grad=True)).sum().backward()
    m2 = lib.nn.Linear(2, 2)
    m2.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match="Backward pre hook returned an invalid number"):
        m2(lib.ones(1, 2, requires_grad=True)).sum().backward()


def test_no_hooks_no_hook_nodes():
    m = ng.nn.Linear(2, 2)
    assert m(ng.ones(1, 2)).grad_fn.name() == "AddmmBackward0"
    h = m.register_full_backward_hook(lambda *a: None)
    assert m(ng.ones(1, 2)).grad_fn.name() == "BackwardHookFunctionBackward"
    h.remove()
    assert m(ng.ones(1, 2)).grad_fn.name() == "AddmmBackward0"
    with ng.no_grad():
        m.register_full_backward_hook(lambda *a: None)
        assert m(ng.ones(1, 2)).grad_fn is None
