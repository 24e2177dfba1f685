"""What recording costs per node, as behaviours (its speed is printed by
``tests/benchmarks/notebook_shapes.py`` and ``notebook.py``): no ``next_functions`` tuple made
per node, the memory a recorded chain keeps per node bounded, and the passes' ``edge_grads``
and ``node_inputs`` the same as their steps' outputs and inputs (NOTE [Gradients read from
the steps] in records.py)."""

import gc
import tracemalloc

import nbgrad as ng
from nbgrad._graph.node import Node
from nbgrad.notebook.recorder import Recorder


def chain(calls, x=None):
    x = ng.ones(4, requires_grad=True) if x is None else x
    h = x
    for _ in range(calls // 2):
        h = (h * 1.0001).tanh()
    return x, h.sum()


def test_recording_reads_no_next_functions(monkeypatch):
    reads = []
    plain = Node.next_functions.fget

    def counted(node):
        reads.append(node)
        return plain(node)

    monkeypatch.setattr(Node, "next_functions", property(counted))
    with Recorder() as rec:
        _x, loss = chain(200)
        loss.backward()
    assert len(rec.records) == 201 and len(rec.passes[0].steps) == 202
    assert reads == []


def test_a_recorded_chain_keeps_a_bounded_memory_per_node():
    nodes = 20_000
    x = ng.ones(4, requires_grad=True)
    chain(nodes, x)[1].backward()  # (made once outside: the op tables, caches)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        with Recorder() as rec:
            _x, loss = chain(nodes, x)
            loss.backward()
        del loss, _x
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(rec.passes[0].steps) == nodes + 2
    # the nodes themselves (kept by the records), a forward call's record and a step each;
    # 1,734 bytes a node before the steps' fields were made compact (1,244 after; issue 34),
    # 1,089 with a Step object a node, 741 with the steps kept as columns, 728 before the calls
    # were kept flat and the gradients' facts small (NOTE [Calls kept flat], NOTE [Facts kept
    # small]), 551 after, 523 with a gradient sent beside a None kept alone, 506 with the
    # usual ready queue and buffers not kept a step, 490 with the calls' elapsed times in an
    # array
    assert kept / nodes < 520


def test_the_records_of_outputs_gone_read_as_before():
    # (NOTE [Calls kept flat]) the references of the outputs that died are dropped at the end
    x = ng.arange(6.0).reshape(2, 3).requires_grad_()
    with Recorder() as rec:
        v, i = x.max(dim=0)
        kept = x.max(dim=1)
        y = v * 2
        _ = rec.records[0]  # (a Record made while the outputs lived)
        del v, i
    gone, alive, mul = rec.records
    assert (gone.n_outputs, gone.output_tensors()) == (2, [])
    assert alive.n_outputs == 2 and alive.output_tensors() == list(kept)
    assert mul.output_tensors() == [y] and [r.op for r in rec.records] == ["max_dim"] * 2 + ["mul"]
    assert len(rec.records[:]) == 3 and rec.records.made()[2] == (y.grad_fn, mul._outputs_ref)
    calls = rec._raw  # (read as tuples: steps.py's signatures, answers_values' last op)
    assert calls[1:] == [calls[1], calls[-1]] and calls[-1][3:5] == (y.grad_fn, mul.elapsed)
    assert calls.fields(1, 0, 3) == [("max_dim", kept.values.grad_fn), ("mul", y.grad_fn)]
    # what steps.py compares a step by, a tuple for each kind of call
    sig = calls.signature(0)
    assert sig == [(c[0], c[5], c[6], c[3] is None) for c in calls] and sig[0] is not sig[2]
    with Recorder() as loop:
        for _ in range(3):
            x = x * 1.5
    assert len(loop._raw.signature(0)) == 3 and len({id(s) for s in loop._raw.signature(0)}) == 1


def test_edge_grads_and_node_inputs_are_the_steps():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    with Recorder() as rec:
        y = x * 3
        loss = (y * y).sum() + y.sum()
        loss.backward()
    (trace,) = rec.passes
    steps = trace.steps
    edges = {(s.node, i): g for s in steps for i, g in enumerate(s.outputs)}
    assert dict(trace.edge_grads) == edges and len(trace.edge_grads) == len(edges) > 4
    assert trace.edge_grads[(y.grad_fn, 0)]["values"] == [2 * 3.0 * 3 + 3, 4 * 3.0 * 3 + 3]
    n = len(y.grad_fn.next_functions)
    assert (y.grad_fn, n) not in trace.edge_grads and (y.grad_fn, -1) not in trace.edge_grads
    assert dict(trace.node_inputs) == {s.node: s.inputs for s in steps}
    assert y.grad_fn in trace.node_inputs and x not in trace.node_inputs


def test_a_record_with_numbers_among_its_arguments_lists_its_tensors():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    with Recorder() as rec:
        h = x.tanh()
        (h * 1.5 + ng.ones(2)) ** 2
    mul, add, pow_ = rec.records[1:]
    assert [(i.node, i.shape) for i in mul.inputs] == [(h.grad_fn, (2,))]
    assert [i.node for i in add.inputs] == [mul.node, None]
    assert add.inputs[1].shape == (2,) and not add.inputs[1].requires_grad
    assert [i.node for i in pow_.inputs] == [add.node]


def test_reading_a_passes_gradients_by_node_keeps_little():
    # (NOTE [Steps found by id]) a pass finds a node's step by its sorted ids, 16 bytes a step
    # (a dict node -> step kept 80 bytes a step on a 100,000-node chain)
    with Recorder() as rec:
        _x, loss = chain(20_000)
        loss.backward()
    (trace,) = rec.passes
    nodes = list(trace.order)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in nodes:
            trace.node_inputs[n], trace.edge_grads.get((n, 0))
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept / len(nodes) < 30
    steps = trace.steps
    assert [trace.node_inputs[n] for n in nodes] == [s.inputs for s in steps]
    assert [trace.edge_grads.get((n, 0)) for n in nodes] == [
        (s.outputs or [None])[0] for s in steps
    ]
