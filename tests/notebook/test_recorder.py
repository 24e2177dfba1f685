"""The recorder: forward calls, line numbers, module groups, backward traces, and nothing
recorded outside its block (nbgrad/notebook/recorder.py)."""

import gc
import importlib
import sys

import numpy as np
import pytest

import nbgrad as ng
from nbgrad.notebook import record
from nbgrad.notebook import recorder as recorder_mod

observer_mod = importlib.import_module("nbgrad._graph.observer")


def _line_of(text):
    """The line number of ``text`` in this file."""
    with open(__file__) as f:
        for i, line in enumerate(f, 1):
            if text in line and "_line_of" not in line:
                return i
    raise AssertionError(text)


def test_records_each_forward_call_with_inputs_outputs_node_and_time():
    x = ng.ones(2, 3, requires_grad=True)
    w = ng.full((3,), 2.0, requires_grad=True)
    with record() as rec:
        y = (x * w).exp()
        z = y.sum(dim=1)
    ops = [(r.op, r.node.name() if r.node is not None else None) for r in rec.records]
    assert ops == [("mul", "MulBackward0"), ("exp", "ExpBackward0"), ("sum_dim", "SumBackward1")]
    mul = rec.records[0]
    assert [i.shape for i in mul.inputs] == [(2, 3), (3,)]
    assert [i.dtype for i in mul.inputs] == ["float32", "float32"]
    assert mul.inputs[0].node is x.grad_fn or mul.inputs[0].node is x._grad_accumulator
    assert mul.outputs[0].shape == (2, 3) and mul.outputs[0].device == "cpu"
    assert all(r.elapsed >= 0 for r in rec.records)
    assert rec.records[2].node is z.grad_fn
    assert rec.records[1].output_tensors() == [y]


def _expected_input(t):
    """What a record shows for a tensor argument: its grad_fn, else its AccumulateGrad, else
    no node; with its shape and dtype."""
    node = t.grad_fn or (t._grad_accumulator if t.requires_grad else None)
    return node, tuple(t.shape), str(t.dtype).rsplit(".", 1)[-1]


def test_record_inputs_whether_read_from_the_node_edges_or_kept_per_argument():
    """See NOTE [Recording cost]: when every argument has an edge, a record reads its inputs from
    the node's edges later; otherwise it keeps them per argument. Both show the same."""
    x = ng.ones(2, 3, requires_grad=True)
    w = ng.full((3,), 2.0, requires_grad=True)
    c = ng.ones(3)  # a constant: no edge
    mask = ng.tensor([True, False, True])
    with record() as rec:
        a = x * w  # every argument has an edge
        b = a * c  # a constant tensor
        d = b * 2.0  # a number
        e = ng.cat([a, d], 0)  # a list of tensors
        f = ng.where(mask, a, d)  # a non-differentiable mask
        g, h = e.split(2)  # several outputs
        k = a.clone()
        k.add_(w)  # in place
    expected = [
        [x, w],
        [a, c],
        [b],
        [a, d],
        [mask, a, d],
        [e],
        [a],
    ]
    records = list(rec.records)
    assert [r.op for r in records[:7]] == ["mul", "mul", "mul", "cat", "where", "split", "clone"]
    for r, tensors in zip(records, expected):
        got = [(i.node, i.shape, i.dtype) for i in r.inputs]
        assert got == [_expected_input(t) for t in tensors], r.op
    inplace = records[7]
    assert inplace.op == "add" and [i.shape for i in inplace.inputs] == [(2, 3), (3,)]
    assert inplace.inputs[1].node is w._grad_accumulator
    assert [i.requires_grad for i in records[1].inputs] == [True, False]
    del f, g, h


def test_records_the_user_line_that_made_each_op():
    x = ng.ones(3, requires_grad=True)
    with record() as rec:
        a = x * 2  # line-a
        b = ng.tanh(a)  # line-b
        b.sum()  # line-c
    assert [r.line for r in rec.records] == [
        _line_of("# line-a"),
        _line_of("# line-b"),
        _line_of("# line-c"),
    ]
    assert rec.records[0].source == "a = x * 2  # line-a"
    assert rec.records[0].filename == __file__


def test_nothing_is_recorded_outside_the_block():
    x = ng.ones(3, requires_grad=True)
    (x * 2).sum()
    with record() as rec:
        y = x * 3
    z = (y + 1).sum()
    z.backward()
    assert [r.op for r in rec.records] == ["mul"]
    assert rec.passes == []
    assert observer_mod._forward == [] and observer_mod._backward == []
    assert recorder_mod.current() is None


def test_an_exception_inside_leaves_the_recorder_consistent(fake_model):
    x = ng.ones(3, requires_grad=True)
    with pytest.raises(ZeroDivisionError):
        with record() as rec:
            fake_model(x)
            y = x * 5
            with recorder_mod._active[-1].resume_backward():
                pass
            y = 1 / 0
    assert not rec.running and rec.error == "ZeroDivisionError: division by zero"
    assert observer_mod._forward == [] and observer_mod._backward == []
    assert recorder_mod._active == []
    assert [r.op for r in rec.records][-1] == "mul"
    assert all(g.end is not None for g in rec.modules)
    # afterwards: nothing more is recorded, and a new recorder works
    (y * 2).sum()
    assert rec.records[-1].op == "mul" and len(rec.records) == 5
    with record() as rec2:
        y * 2
    assert len(rec2.records) == 1


def test_an_exception_inside_a_module_closes_its_group():
    class Boom:
        def __call__(self, x):
            token = recorder_mod.module_enter(self)
            try:
                x * 2
                raise ValueError("inside the module")
            finally:
                recorder_mod.module_exit(token, "ValueError")

    x = ng.ones(2, requires_grad=True)
    with record() as rec:
        with pytest.raises(ValueError):
            Boom()(x)
        x * 3
    assert rec.modules[0].end == 1 and rec.modules[0].error == "ValueError"
    assert rec.records[1].group is None


def test_module_groups_nest_through_the_recorder_stack(fake_model):
    x = ng.ones(3, requires_grad=True)
    with record() as rec:
        fake_model(x).sum()
    # a top module is named by its type (the snapshot uses the user's name when it has one)
    assert [(g.path, g.depth) for g in rec.modules] == [("FakeModule", 0), ("FakeModule.inner", 1)]
    outer, inner = rec.modules
    assert inner.parent is outer
    groups = [r.group.name if r.group else None for r in rec.records]
    assert groups == ["FakeModule", "inner", "inner", "FakeModule", None]


def test_nn_modules_are_groups():
    import nbgrad.nn as nn

    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1))
    call = nn.Module.__dict__["__call__"]
    x = ng.randn(2, 4)
    with record() as rec:
        model(x).sum()
    assert [(g.type, g.path) for g in rec.modules] == [
        ("Sequential", "Sequential"),
        ("Linear", "Sequential.0"),
        ("Tanh", "Sequential.1"),
        ("Linear", "Sequential.2"),
    ]
    assert nn.Module.__dict__["__call__"] is call  # way 3 puts the original back
    assert {r.group.path for r in rec.records if r.group} >= {"Sequential.0", "Sequential.2"}


@pytest.mark.parametrize("framework", ["nbgrad", "torch"])
def test_modules_reached_through_an_uncalled_container_are_named_by_their_path(framework):
    """A TransformerEncoder calls its layers from a ModuleList it never calls: each layer is
    ``layers.0``, ``layers.1`` (named_modules' names), not its class name, and not one path
    shared by both layers."""
    lib = ng if framework == "nbgrad" else pytest.importorskip("torch", reason="test oracle")
    lib.manual_seed(0)
    nn = lib.nn
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
    enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    x = lib.randn(4, 3, 8)
    with record() as rec:
        enc(x).sum()
    paths = [g.path for g in rec.modules]
    assert paths[:2] == ["TransformerEncoder", "TransformerEncoder.layers.0"]
    assert "TransformerEncoder.layers.1.linear2" in paths
    assert not any("TransformerEncoderLayer" in p for p in paths)


@pytest.mark.parametrize("framework", ["nbgrad", "torch"])
def test_a_deep_encoders_modules_are_named_by_one_walk(framework):
    """Each layer call of a TransformerEncoder is named by its path below the encoder; one
    walk of the encoder's modules names them all (a walk per layer call made a deep
    encoder's cell quadratic)."""
    lib = ng if framework == "nbgrad" else pytest.importorskip("torch", reason="test oracle")
    lib.manual_seed(0)
    nn = lib.nn
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
    enc = nn.TransformerEncoder(layer, num_layers=30, enable_nested_tensor=False)
    walks = []
    for name in ("named_modules", "named_children"):
        found = getattr(enc, name)
        object.__setattr__(
            enc, name, lambda *a, _f=found, _n=name, **k: walks.append(_n) or _f(*a, **k)
        )
    recorder_mod._CHILD_NAMES.clear()
    with record() as rec:
        enc(lib.randn(4, 3, 8)).sum()
    paths = [g.path for g in rec.modules]
    assert [p for p in paths if p.count(".") == 2] == [
        f"TransformerEncoder.layers.{i}" for i in range(30)
    ]
    assert len(walks) <= 2, walks


def test_backward_passes_are_traced_step_by_step():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    w = ng.tensor([3.0, 4.0], requires_grad=True)
    with record() as rec:
        y = x * w
        h = y.register_hook(lambda g: g * 10)
        loss = (y + x).sum()
        loss.backward()
    h.remove()
    assert len(rec.passes) == 1
    tr = rec.passes[0]
    assert tr.root is loss.grad_fn and tr.error is None and tr.finished
    names = [s.node.name() for s in tr.steps]
    assert names[:3] == ["SumBackward0", "AddBackward0", "MulBackward0"]
    assert sorted(names[3:]) == ["AccumulateGrad", "AccumulateGrad"]
    add = tr.steps[1]
    assert add.inputs[0]["values"] == [1.0, 1.0]
    assert {n.name() for n in add.made_ready} == {"MulBackward0"}
    # x's AccumulateGrad waits on two edges: after AddBackward0 one is left
    mul = tr.steps[2]
    acc_x = x.grad_fn or x._grad_accumulator
    assert mul.dependencies[acc_x] == 1
    assert mul.buffers[acc_x][0]["values"] == [1.0, 1.0]
    # the tensor hook on y fired before MulBackward0, with the gradient before and after
    [call] = mul.hooks
    assert call.kind == "tensor" and call.changed
    assert call.before["values"] == [1.0, 1.0] and call.after["values"] == [10.0, 10.0]
    # gradients on edges: MulBackward0's outputs
    assert tr.edge_grads[(y.grad_fn, 0)]["values"] == [30.0, 40.0]
    assert x.grad.tolist() == [31.0, 41.0]
    # the backward's own ops are counted, not recorded: they are not part of the forward graph
    assert len(rec.records) == 3 and rec.backward_ops > 0
    assert rec.nodes() == [y.grad_fn, loss.grad_fn.next_functions[0][0], loss.grad_fn]


def test_a_failing_backward_is_recorded_and_the_recorder_stays_consistent():
    x = ng.ones(2, requires_grad=True)
    with record() as rec:
        y = x * 2
        y.register_hook(lambda g: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            y.sum().backward()
        z = x * 3
    assert rec.passes[0].error.startswith("ZeroDivisionError")
    assert rec.passes[0].finished
    assert rec.records[-1].node is z.grad_fn
    assert rec._backward_depth == 0


def test_every_forward_path_is_seen():
    """The general dispatch, the binary-operator fast path and the in-place ufunc fast path."""
    x = ng.ones(3, requires_grad=True)
    p = ng.zeros(3)
    with record() as rec:
        x.exp()  # _dispatch
        x * 2.0  # _binary
        p.sub_(1.0)  # in place, no graph
    assert [r.op for r in rec.records] == ["exp", "mul", "sub"]
    assert p.tolist() == [-1.0, -1.0, -1.0]


def test_nested_recorders_both_record():
    x = ng.ones(2, requires_grad=True)
    with record() as outer:
        x * 2
        with record() as inner:
            x * 3
        x * 4
    assert len(outer.records) == 3 and len(inner.records) == 1
    assert recorder_mod._active == []


def test_no_observer_means_no_cost_beyond_an_empty_list_check():
    assert observer_mod.forward_observer == []
    x = ng.ones(2, requires_grad=True)
    with record():
        assert len(observer_mod.forward_observer) == 1
        assert observer_mod.backward_observer() is observer_mod.forward_observer[0]
    assert observer_mod.forward_observer == [] and observer_mod.backward_observer() is None
    assert "nbgrad.notebook" in sys.modules  # imported by this test ...
    (x * 2).sum().backward()  # ... and the core still runs without it


def test_ops_run_by_subscribers_are_not_recorded():
    x = ng.ones(2, requires_grad=True)
    seen = []

    def subscriber(rec, final):
        seen.append(final)
        (ng.ones(2) * 2).sum()  # a live view's own work

    with record() as rec:
        rec.subscribe(subscriber)
        y = (x * 3).sum()
        y.backward()
    assert [r.op for r in rec.records] == ["mul", "sum"]
    assert seen[-1] is True and len(seen) >= 3  # the first op (told in batches), the pass, the end
    # the lazily built parts of a record
    mul = rec.records[0]
    assert [i.shape for i in mul.inputs] == [(2,)] and mul.outputs[
        0
    ].node is y.grad_fn.next_functions[0][0]
    assert mul.source == "y = (x * 3).sum()" and mul.output_tensors() == []


def test_a_gradient_changed_in_place_is_summarised_again():
    """A pass summarises a tensor once while it is unchanged (a node's output is the next
    node's input), and again after an in-place change (here by a hook)."""
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    with record() as rec:
        y = x * 3
        y.register_hook(lambda g: g.mul_(2).__class__ and None)
        (y * 5.0).sum().backward()
    [trace] = rec.passes
    step = next(s for s in trace.steps if s.node is y.grad_fn)
    assert step.inputs[0]["values"] == [10.0, 10.0] and x.grad.tolist() == [30.0, 30.0]
    mul5 = trace.steps[1]  # as it was when (y * 5.0)'s node ended
    assert mul5.outputs[0]["values"] == [5.0, 5.0]


def test_a_fan_in_buffer_shows_the_sum_of_what_reached_it_so_far():
    """The input buffer of a node that four edges reach shows, at each step while it waits,
    the sum of the gradients sent to it so far, and the node then receives the whole sum (the
    engine sums into the buffer in place: a value read earlier must not be shown again)."""
    a = ng.tensor([0.5, -1.0, 2.0], requires_grad=True)
    b = ng.tensor([1.5, 0.25, -0.5], requires_grad=True)
    with record() as rec:
        h = a * b
        (h + h.exp() + h.sin() + h * 2).sum().backward()
    (trace,) = rec.passes
    node = h.grad_fn
    sent, shown, received = [], [], None
    for step in trace.steps:
        if node in step.buffers:
            (slot,) = step.buffers[node]
            total = np.sum(sent, axis=0)
            assert slot["values"] == pytest.approx(total.tolist(), rel=1e-4)
            assert slot["norm"] == pytest.approx(float(np.linalg.norm(total)), rel=1e-4)
            shown.append(len(sent))
        if step.node is node:
            received = step.inputs[0]["values"]
        for (fn, _), out in zip(step.node.next_functions, step.outputs):
            if fn is node and out is not None:
                sent.append(np.array(out["values"]))
    assert shown == [1, 2, 3]  # the fourth made it ready: a ready node has no buffer shown
    hd = h.detach().numpy()
    assert received == pytest.approx((1 + np.exp(hd) + np.cos(hd) + 2).tolist(), rel=1e-4)


def test_the_collector_runs_less_often_in_a_large_recording_and_as_before_after(monkeypatch):
    """In a large recording (here: 3 calls or more, nodes in a pass) the collector's first
    threshold is raised, and collection paused while a large pass is recorded in full (also
    one that fails), both as they were after; a small pass and a small recording leave the
    collector as it is (see NOTE [The collector while recording])."""
    monkeypatch.setattr(recorder_mod, "LARGE", 3)
    before = gc.get_threshold()
    assert gc.isenabled() and before[0] < recorder_mod.COLLECT_EVERY
    x = ng.ones(2, requires_grad=True)
    during = []

    def hook(g):
        during.append((gc.isenabled(), gc.get_threshold()[0]))

    def fails(g):
        raise ValueError("a hook that fails")

    with record() as rec:
        small = x * 2
        small.register_hook(hook)
        small.sum().backward()  # a pass of two nodes below its root
        assert gc.get_threshold() == before  # two calls so far
        y = (x * 2) * 3
        y.register_hook(hook)
        assert gc.get_threshold()[0] == recorder_mod.COLLECT_EVERY  # the third call
        y.sum().backward()
        assert gc.isenabled()
        z = (x * 3) * 4
        z.register_hook(fails)
        with pytest.raises(ValueError, match="a hook that fails"):
            z.sum().backward()
        assert gc.isenabled()
    assert during == [(True, before[0]), (False, recorder_mod.COLLECT_EVERY)]
    assert gc.get_threshold() == before and gc.isenabled()
    assert [t.error for t in rec.passes] == [None, None, "ValueError: a hook that fails"]


def test_a_step_keeps_its_small_gradients_compactly():
    """NOTE [Steps read alike] and NOTE [First values as bytes]: a step's one input, one
    output and one node made ready read as tuples of one; a small gradient's first values are
    kept as bytes, read as a read-only array of its dtype, not changed by a later in-place
    change; the steps of a chain share their gradients' shape (NOTE [Shared shapes])."""
    x = ng.ones(3, requires_grad=True)
    with record() as rec:
        h = x
        for _ in range(3):
            h = (h * 2.0).tanh()
        h.sum().backward()
    steps = rec.passes[0].steps
    tanh = [s for s in steps if s.node.name() == "TanhBackward0"]
    assert all(type(s.inputs) is tuple and len(s.inputs) == 1 for s in tanh)
    assert all(type(s.outputs) is tuple and len(s.outputs) == 1 for s in tanh)
    made = [s.made_ready for s in tanh]
    assert all(type(m) is tuple and len(m) == 1 for m in made), made
    head = tanh[0].outputs[0].head
    assert head.dtype == np.float32 and head.shape == (3,) and not head.flags.writeable
    assert tanh[0].outputs[0]["values"] == [float(f"{v:.6g}") for v in head.tolist()]
    assert tanh[0].outputs[0].shape is tanh[1].outputs[0].shape  # one tuple, shared

    from nbgrad.notebook.summaries import array_facts

    a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    facts = array_facts(a, ng.tensor(a))
    a[0] = 99.0
    assert facts.head.tolist() == [1.0, 2.0, 3.0] and facts["values"] == [1.0, 2.0, 3.0]
