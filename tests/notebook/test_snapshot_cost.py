"""What a snapshot costs, as behaviours (its speed is printed by
``tests/benchmarks/notebook_shapes.py``): no cyclic collection while it is made (NOTE [No
collection while drawing] in snapshot.py), each node's id made once."""

import copy
import gc
import json
import sys

import nbgrad as ng
from nbgrad.notebook.recorder import Recorder
from nbgrad.notebook.snapshot import IdMap, build_snapshot, details, no_collection


def recorded_chain(calls):
    rec = Recorder()
    with rec:
        h = ng.ones(4, requires_grad=True)
        for _ in range(calls // 2):
            h = (h * 1.0001).tanh()
        loss = h.sum()
        loss.backward(retain_graph=True)
    return rec, loss


def test_no_collection_while_a_snapshot_is_made():
    rec, _loss = recorded_chain(2000)
    starts = []

    def count(phase, info):  # a collection that starts inside build_snapshot
        frame = sys._getframe(1)
        while (
            frame is not None
            and frame.f_code is not getattr(build_snapshot, "__wrapped__", build_snapshot).__code__
        ):
            frame = frame.f_back
        if phase == "start" and frame is not None:
            starts.append(info["generation"])

    old = gc.get_threshold()
    gc.set_threshold(50, 2, 2)  # a collection every 50 new containers
    gc.callbacks.append(count)
    try:
        snap = build_snapshot(rec)
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*old)
    assert len(snap["nodes"]) > 2000
    assert starts == []
    assert gc.isenabled()


def test_no_collection_restores_the_collector_as_it_was():
    assert gc.isenabled()
    try:
        with no_collection():
            assert not gc.isenabled()
            raise KeyError("inside")
    except KeyError:
        pass
    assert gc.isenabled()
    gc.disable()
    try:
        with no_collection():
            pass
        assert not gc.isenabled()  # a caller's own pause is left alone
    finally:
        gc.enable()


class CountingIds(IdMap):
    calls = 0

    def __call__(self, node):
        CountingIds.calls += 1
        return super().__call__(node)


def test_each_node_id_is_made_once():
    rec, _loss = recorded_chain(1000)
    ids = CountingIds(rec.graph_source)
    snap = build_snapshot(rec, ids=ids)
    plain = build_snapshot(rec, ids=IdMap(rec.graph_source))
    assert snap == plain
    # numbering the leaves, sorting and the table of ids: a few calls a node, not one a use
    assert CountingIds.calls <= 3 * len(snap["nodes"])


def test_a_pass_says_whether_it_saw_nan_or_inf():
    # the NaN and Inf answers skip the passes that saw none (answers_values.find_nonfinite)
    from nbgrad.notebook.answers_values import find_nonfinite

    rec, _loss = recorded_chain(200)
    assert rec.passes[-1].nonfinite_seen is False
    assert find_nonfinite(rec) == []
    rec = Recorder()
    with rec:
        x = ng.tensor([1.0, 0.0], requires_grad=True)
        x.sqrt().sum().backward()  # d sqrt(x) / dx at 0 is inf
    assert rec.passes[-1].nonfinite_seen is True
    assert [(f.node, f.phase) for f in find_nonfinite(rec)][0] == ("SqrtBackward0", "backward")


def test_a_chain_steps_share_their_empty_queue_and_buffers():
    # NOTE [Steps read alike] in records.py: the steps of a long chain hold one empty value
    rec, _loss = recorded_chain(1000)
    steps = rec.passes[-1].steps
    assert len(steps) > 1000
    assert all(s.ready == {"cpu": []} and s.buffers == {} for s in steps)
    assert len({id(s.ready) for s in steps}) == 1
    assert len({id(s.buffers) for s in steps}) == 1


def test_a_cut_snapshot_makes_the_records_it_keeps_only(monkeypatch):
    from nbgrad.notebook import records

    rec, _loss = recorded_chain(2000)
    made = []
    real = records._new_record
    monkeypatch.setattr(records, "_new_record", lambda cls: made.append(1) or real(cls))
    snap = build_snapshot(rec, max_nodes=50)
    assert snap["truncated"] and len(snap["records"]) < 60
    assert len(made) == len(snap["records"])
    # read in order later, the calls kept are the same Records
    kept = rec.records.since(snap["records"][0]["index"])
    everything = list(rec.records)
    assert len(everything) == 2001
    assert everything[snap["records"][0]["index"]] is kept[0]
    assert [r.index for r in everything] == list(range(2001))


def test_a_graph_with_more_calls_than_fit_is_cut_in_one_walk(monkeypatch):
    # more recorded nodes than max_nodes: the cut (breadth-first, to the end) is the one walk,
    # with no depth-first walk of max_nodes nodes before it that finds the graph too big
    rec, _loss = recorded_chain(2000)
    source = rec.graph_source
    walked = []
    real = source.next_edges
    monkeypatch.setattr(source, "next_edges", lambda node: walked.append(1) or real(node))
    snap = build_snapshot(rec, max_nodes=200)
    assert snap["truncated"] and len(snap["nodes"]) == 200
    # the cut walks every node once; the drawing reads a drawn node's edges at most 5 times
    assert len(walked) <= 2002 + 5 * 200


def test_a_live_refresh_waits_while_it_would_take_more_than_its_share(monkeypatch):
    # GraphView's live refreshes, this one included, take at most LIVE_SHARE of the cell
    from nbgrad.notebook import graph_view

    clock = [0.0]
    monkeypatch.setattr(graph_view.time, "perf_counter", lambda: clock[0])
    rec = Recorder()
    view = graph_view.GraphView(recorder=rec, live=True, interval=0.25)
    view._per_node = 1e-3  # as if a refresh took 1 ms a node: 250 ms for 250 calls
    refreshes = []
    real = view.refresh
    monkeypatch.setattr(view, "refresh", lambda: refreshes.append(clock[0]) or real())
    with rec:
        h = ng.ones(4, requires_grad=True)
        for _ in range(500):
            clock[0] += 0.002  # 1 s in all: a refresh of 500 ms would take half of it
            h = h * 1.0001
    view.stop_live()
    assert refreshes == [clock[0]]  # the final one only
    assert len(view.snapshot["nodes"]) > 500


def test_a_snapshot_keeps_none_of_the_records_it_made(monkeypatch):
    # whole or cut, the Records made for a snapshot die with it (NOTE [Records read once])
    import weakref

    from nbgrad.notebook import records

    rec, _loss = recorded_chain(400)
    made = []
    real = records._new_record

    def new(cls):
        r = real(cls)
        made.append(weakref.ref(r))
        return r

    monkeypatch.setattr(records, "_new_record", new)
    whole = build_snapshot(rec)
    cut = build_snapshot(rec, max_nodes=50)
    gc.collect()
    assert len(made) == len(whole["records"]) + len(cut["records"])
    assert all(r() is None for r in made)
    last = whole["records"][-len(cut["records"]) :]
    assert [(r["index"], r["source"]) for r in cut["records"]] == [
        (r["index"], r["source"]) for r in last
    ]
    # read in order, they are made then, and kept
    assert list(rec.records)[0].op == whole["records"][0]["op"]
    assert rec.records[0] is rec.records[0]


def test_a_snapshot_shares_the_line_of_a_loop():
    rec, _loss = recorded_chain(400)
    snap = build_snapshot(rec)
    lines = [n["source"] for n in snap["nodes"] if n["source"]] + [
        r["source"] for r in snap["records"] if r["source"]
    ]
    assert len(lines) > 400 and len({id(s) for s in lines}) == len(set(lines))
    assert all(n["metadata"] == {} for n in snap["nodes"])


def test_the_summaries_of_a_snapshot_share_their_shapes():
    # NOTE [Shared shapes] in summaries.py: the chain's gradients and tensors have one shape
    rec, _loss = recorded_chain(400)
    snap = build_snapshot(rec)
    shapes = [e["grad"]["shape"] for e in snap["edges"]]
    shapes += [g["shape"] for n in snap["nodes"] for g in n["grad"] or ()]
    shapes += [i["shape"] for r in snap["records"] for i in r["inputs"] + r["outputs"]]
    assert len(shapes) > 1000 and {tuple(s) for s in shapes} == {(), (4,)}
    assert len({id(s) for s in shapes}) == 2
    # and the facts the backward pass kept (GradFacts), one tuple per shape
    facts = [g for gs in rec.passes[-1].node_inputs.values() for g in gs if g is not None]
    assert len(facts) > 400 and len({id(f.shape) for f in facts}) == 2


def test_the_facts_keep_a_gradients_first_values_as_bytes():
    # NOTE [First values as bytes] in summaries.py: read back as the same array of values
    import numpy as np

    from nbgrad.notebook.summaries import array_facts

    for a in (np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(40.0), np.ones(3, bool)):
        facts = array_facts(a, ng.tensor(a), max_values=16)
        assert type(facts._head) is bytes
        assert facts.head.dtype == a.dtype and list(facts.head) == list(a.ravel()[:16])
        assert facts.summary()["values"] == [float(v) for v in a.ravel()[:16]]


def test_the_drawing_is_sent_before_the_details_are_read(monkeypatch):
    # first_view gets the snapshot with what a drawing reads, its details (saved values,
    # metadata, next edges, records, passes' order) still to come; the snapshot returned is
    # whole, the same as one built without first_view (see NOTE [The drawing before the
    # details] in snapshot_details.py)
    from nbgrad.notebook import snapshot

    rec, _loss = recorded_chain(400)
    seen = []
    # a small graph is built whole, then laid out
    assert build_snapshot(rec, first_view=seen.append) and seen == []
    monkeypatch.setattr(snapshot, "FIRST_VIEW_NODES", 400)

    def first_view(snap):
        node = snap["nodes"][0]
        seen.append(
            (
                len(snap["nodes"]),
                len(snap["edges"]),
                snap["records"],
                node["saved"],
                node["next"],
                snap["passes"][0]["order"],
            )
        )

    whole = build_snapshot(rec, timings=False, first_view=first_view)
    assert seen == [(402, 401, [], None, None, None)]
    assert whole == build_snapshot(rec, timings=False)
    assert whole["records"] and whole["nodes"][0]["saved"] and whole["passes"][0]["order"]
    # the graph view lays out and sends its drawing there, before its nodes' details are read
    # (a graph under FIRST_VIEW_NODES: after); its records are left unread
    from nbgrad.notebook import graph_view, snapshot_details

    sent_first = []
    real = snapshot_details.node_details

    def details_read(ordered, *args):
        if ordered:  # (not the empty view's, made when the view is)
            sent_first.append(json.loads(view._layout_json)["nodes"] != [])
        return real(ordered, *args)

    monkeypatch.setattr(snapshot_details, "node_details", details_read)
    for big in (403, 400):
        monkeypatch.setattr(snapshot, "FIRST_VIEW_NODES", big)
        view = graph_view.GraphView()
        view.recorder = rec
        view.refresh()
        assert dict.__getitem__(view.snapshot, "records") == []
        assert view.snapshot["nodes"][0]["saved"] and len(view.graph_layout["nodes"]) > 0
    assert sent_first == [False, True]


def test_the_graph_view_reads_its_records_when_first_asked(monkeypatch):
    # NOTE [Records read when first asked] in snapshot_details.py: the view's refresh makes no
    # record entry (nor Record); a selection makes its node's alone; reading the records (or
    # the snapshot whole) makes them all, and the snapshot is then what build_snapshot makes
    from nbgrad.notebook import graph_view, records, snapshot_details

    rec, _loss = recorded_chain(400)
    entries, made = [], []
    real_entries, real_record = snapshot_details.record_entries, records._new_record
    monkeypatch.setattr(
        snapshot_details,
        "record_entries",
        lambda rs, *a: entries.append(len(rs)) or real_entries(rs, *a),
    )
    monkeypatch.setattr(records, "_new_record", lambda cls: made.append(1) or real_record(cls))
    view = graph_view.GraphView(recorder=rec, timings=False)
    assert len(view.snapshot["nodes"]) == 402 and json.loads(view._layout_json)["nodes"]
    assert view.snapshot["nodes"][5]["saved"] and entries == []  # (a node's details: read)
    made.clear()  # (the Records the snapshot read once)
    node = view.snapshot["nodes"][5]["id"]
    view.select(node)
    shown = json.loads(view._details_json)
    assert shown["record"]["index"] == shown["node"]["record"]
    assert entries == [1] and len(made) == 1  # (that node's alone)
    eager = details(build_snapshot(rec, timings=False), node)
    assert [shown["node"], shown["record"]] == json.loads(
        json.dumps((eager["node"], eager["record"]))
    )
    assert view.snapshot == build_snapshot(rec, timings=False)
    assert json.dumps(view.snapshot) == json.dumps(build_snapshot(rec, timings=False))
    # a snapshot read whole by JSON, a copy or its records has its records there
    reads = (json.dumps, dict, lambda s: {**s}, copy.deepcopy, repr)
    for read in reads + (lambda s: s["records"], lambda s: s.get("records")):
        lazy = build_snapshot(rec, timings=False, whole=False)
        assert dict.__getitem__(lazy, "records") == []
        read(lazy)
        assert len(dict.__getitem__(lazy, "records")) == 401
        assert lazy == build_snapshot(rec, timings=False)
    # compared with a snapshot that differs in more (a node's wall time, a cut), it reads none
    lazy = build_snapshot(rec, timings=False, whole=False)
    assert lazy != build_snapshot(rec) and lazy != build_snapshot(rec, max_nodes=300)
    assert dict.__getitem__(lazy, "records") == []


def test_a_selections_tensor_makes_no_record(monkeypatch):
    # the hook editor follows a selection to its tensor: found among the calls' outputs
    # without making their Records (a 100,000-call cell's first click made and kept them all:
    # 0.45 s, 30 MB; NOTE [Records read once] in snapshot.py)
    from nbgrad.notebook import graph_view, records

    rec = Recorder()
    with rec:
        h = ng.ones(4, requires_grad=True)
        outs = [h := (h * 1.0001).tanh() for _ in range(200)]
        loss = h.sum()
    made = []
    real = records._new_record
    monkeypatch.setattr(records, "_new_record", lambda cls: made.append(1) or real(cls))
    view = graph_view.GraphView(recorder=rec)
    made.clear()  # (those the snapshot read once, let go)
    assert view.tensor(view.id_of(loss.grad_fn)) is loss
    assert view.tensor(view.id_of(outs[100].grad_fn)) is outs[100]
    assert view.tensor(view.id_of(outs[100].grad_fn.next_functions[0][0])) is None  # (freed)
    assert made == []
    # nor a pair for each call: the call that made the node is found in C (each click on a
    # 100,000-call cell's graph paid 10 ms for the pairs)
    monkeypatch.setattr(records.RecordList, "made", None)
    assert view.tensor(view.id_of(outs[150].grad_fn)) is outs[150]
