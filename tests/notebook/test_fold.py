"""Folding big graphs (nbgrad/notebook/fold.py, layout.py's NOTE [Readable at open]) and what
the graph widget is sent (snapshot.py's NOTE [Send less]), without a browser."""

import json
import random

import pytest
from test_visible import _training

import nbgrad as ng
from nbgrad import nn
from nbgrad.notebook import GraphView, build_snapshot, record
from nbgrad.notebook.fold import MIN_REPEATS, SPLIT, find_series
from nbgrad.notebook.layout import FIT, default_collapsed, layout
from nbgrad.notebook.schema import read_view
from nbgrad.notebook.snapshot import cut_note, view_snapshot
from nbgrad.notebook.svg import snapshot_svg


def _chain(kinds, leaves=()):
    """A chain of units top down with the given kinds; ``leaves``: (unit index, leaf id)."""
    order = [f"u{i}" for i in range(len(kinds))]
    kind = dict(zip(order, kinds))
    succ = {u: [] for u in order}
    pred = {u: [] for u in order}
    for a, b in zip(order, order[1:]):
        succ[a].append(b)
        pred[b].append(a)
    for i, leaf in leaves:
        if leaf not in succ:
            order.append(leaf)
            kind[leaf] = "AccumulateGrad"
            succ[leaf], pred[leaf] = [], []
        succ[order[i]].append(leaf)
        pred[leaf].append(order[i])
    return order, kind, succ, pred


def test_a_loop_folds_into_one_series_keeping_the_first_repeat():
    body = ["Tanh", "Add", "Mul"]
    kinds = ["Sum"] + body * 50
    leaves = [(i, "w") for i, k in enumerate(kinds) if k == "Mul"]
    (series,) = find_series(*_chain(kinds, leaves))
    assert series["period"] == 3
    assert series["count"] == 49  # the first of the 50 repeats stays drawn
    assert series["units"][0] == "u4" and len(series["units"]) == 147
    assert series["kinds"] == ["Mul", "Add", "Tanh"]  # forward order


def test_short_runs_and_branches_do_not_fold():
    assert find_series(*_chain(["A", "B"] * (MIN_REPEATS - 1))) == []
    order, kind, succ, pred = _chain(["A"] * 10)
    succ["u4"].append("u7")  # a second way into u7: the chain breaks there
    pred["u7"].append("u4")
    for s in find_series(order, kind, succ, pred):
        assert "u7" not in s["units"][1:] or s["units"][0] == "u7"


def test_a_series_stays_inside_its_module_group():
    order, kind, succ, pred = _chain(["A"] * 12)
    group = {u: ("g0" if int(u[1:]) < 6 else "g1") for u in order}
    for s in find_series(order, kind, succ, pred, group):
        assert len({group[u] for u in s["units"]}) == 1


def _loop(n):
    h = ng.randn(16, requires_grad=True)
    w = ng.full((16,), 0.5, requires_grad=True)
    for _ in range(n):
        h = (h * w + 0.1).tanh()
    return h.sum()


def test_layout_folds_a_big_loop_and_expands_it_on_request():
    snap = build_snapshot(None, [_loop(300)])
    folded = layout(snap)
    assert len(folded["nodes"]) < FIT
    (series,) = folded["series"]
    assert series["count"] == 299 and series["nodes"] == 897 and not series["expanded"]
    assert [b["kind"] for b in folded["nodes"]].count("series") == 1
    # it opens as SPLIT parts of 30 repeats (NOTE [Splitting a long series] in fold.py) ...
    opened = layout(snap, expanded=[series["id"]])
    parts = [b for b in opened["nodes"] if b["kind"] == "series"]
    assert len(parts) == SPLIT and len(opened["nodes"]) < FIT
    assert sorted(x["count"] for x in opened["series"] if x["id"] != series["id"]) == [29] + [
        30
    ] * (SPLIT - 1)
    assert opened["expanded"] == [series["id"]]
    # ... and so on, down to every node
    shown, levels = opened, 1
    while not all(x["expanded"] for x in shown["series"]):
        shown = layout(snap, expanded=[x["id"] for x in shown["series"]])
        levels += 1
    assert len(shown["nodes"]) == len(snap["nodes"]) and levels == 3  # 299, 30, 3 repeats
    # the same snapshot always folds the same way
    assert json.dumps(layout(snap)) == json.dumps(folded)


def test_the_still_picture_of_a_3000_node_chain_is_short():
    h = ng.randn(4, requires_grad=True)
    for _ in range(1500):
        h = h * 1.0001 + 0.001
    snap = build_snapshot(None, [h.sum()])
    svg = snapshot_svg(snap)
    height = float(svg.split('height="', 1)[1].split('"', 1)[0])
    assert height < 700, height
    assert "×1499 more" in svg


def test_modules_collapse_to_the_deepest_level_that_fits():
    ng.manual_seed(0)
    blocks = nn.Sequential(
        *[nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8)) for _ in range(8)]
    )
    with record() as rec:
        loss = blocks(ng.randn(2, 8)).sum()
    snap = build_snapshot(rec, [loss])
    assert len(snap["nodes"]) > FIT
    collapsed = default_collapsed(snap)
    depths = {g["id"]: g["depth"] for g in snap["groups"]}
    assert collapsed and len({depths[g] for g in collapsed}) == 1
    lay = layout(snap, collapsed)
    assert len(lay["nodes"]) <= FIT
    # a small graph opens with nothing collapsed
    with record() as rec:
        small = nn.Linear(3, 1)(ng.randn(2, 3)).sum()
    assert default_collapsed(build_snapshot(rec, [small])) == []


def test_reveal_opens_what_hides_a_node():
    view = GraphView(_loop(200))
    ids = [n["id"] for n in view.snapshot["nodes"] if n["name"] == "AddBackward0"]
    hidden = ids[len(ids) // 2]
    assert hidden not in {b["ref"] for b in view.graph_layout["nodes"]}
    view.reveal(hidden)
    assert hidden in {b["ref"] for b in view.graph_layout["nodes"]}
    assert view.selected == hidden
    assert json.loads(view._details_json)["node"]["id"] == hidden
    with pytest.raises(KeyError):
        view.reveal("n-not-there")


@pytest.mark.parametrize("n", [500, 5000])
def test_the_widget_is_sent_few_bytes_per_node(n):
    view = GraphView(_loop(n // 3))
    nodes = len(view.snapshot["nodes"])
    sent = len(view._snapshot_json) + len(view._layout_json)
    assert sent / nodes <= 400, sent / nodes
    full = len(json.dumps(view.snapshot, separators=(",", ":")))
    assert sent < full / 2
    assert json.loads(view._snapshot_json) == json.loads(
        json.dumps(view_snapshot(view.snapshot), separators=(",", ":"))
    )


def test_stacked_identical_layers_fold_into_one_series():
    ng.manual_seed(0)
    layers = []
    for _ in range(12):
        layers += [nn.Linear(8, 8), nn.ReLU()]
    model = nn.Sequential(*layers)
    with record() as rec:
        loss = model(ng.randn(2, 8)).sum()
    snap = build_snapshot(rec, [loss])
    lay = layout(snap, default_collapsed(snap))
    series = [b for b in lay["nodes"] if b["kind"] == "series"]
    assert len(series) == 1 and series[0]["label"] == "Linear → ReLU", lay["nodes"]
    assert len(lay["nodes"]) < 10


# -- shapes beyond chains (NOTE [Series] in fold.py) -------------------------------------------


def _open(snap):
    """The layout a graph opens with, and its series."""
    lay = layout(snap, default_collapsed(snap))
    return lay, {x["id"]: x for x in lay["series"]}


def _fan(n, stacked=False):
    x = ng.randn(8, requires_grad=True)
    ws = [ng.randn(8, requires_grad=True) for _ in range(n)]
    with record() as rec:
        if stacked:
            loss = ng.stack([(x * w).tanh().sum() for w in ws]).sum()
        else:
            loss = sum(((x * w).tanh()).sum() for w in ws)
        loss.backward()
    return build_snapshot(rec, names={id(x): "x"}), ws


@pytest.mark.parametrize("stacked", [False, True])
def test_a_fan_of_distinct_leaves_folds_with_its_leaves(stacked):
    snap, ws = _fan(400, stacked)
    lay, series = _open(snap)
    assert len(lay["nodes"]) < FIT
    (fan,) = series.values()
    assert fan["count"] == (399 if stacked else 398)  # (the first Add of sum() adds to 0)
    assert fan["label"] == "MulBackward0 → TanhBackward0 → SumBackward0" + (
        "" if stacked else " → AddBackward0"
    )
    labels = [b["label"] for b in lay["nodes"]]
    assert labels.count("x") == 1  # the shared input stays drawn, the weights fold
    leaves = sum(b["label"] == "AccumulateGrad" for b in lay["nodes"] if b["kind"] == "node")
    assert leaves <= 2
    assert fan["nodes"] == fan["count"] * (4 if stacked else 5)  # each repeat with its weight


def _rnn(steps):
    ng.manual_seed(0)
    W = ng.randn(8, 8, requires_grad=True)
    U = ng.randn(8, 4, requires_grad=True)
    xs = ng.randn(steps, 4)
    h = ng.zeros(8)
    with record() as rec:
        for t in range(steps):
            h = (W @ h * 0.1 + U @ xs[t]).tanh()
        h.sum().backward()
    return build_snapshot(rec, names={id(W): "W", id(U): "U"}, max_nodes=10**6)


def test_an_rnn_step_with_its_input_branch_folds():
    snap = _rnn(1000)
    lay, series = _open(snap)
    assert len(lay["nodes"]) < FIT
    (step,) = series.values()
    assert step["count"] == 999 and step["period"] == 4
    assert step["nodes"] == 999 * 5
    labels = {b["label"] for b in lay["nodes"]}
    assert {"W", "U"} <= labels  # the weights stay drawn, beside the step drawn in full
    box = next(b for b in lay["nodes"] if b["id"] == step["id"])
    into = {e["to"] for e in lay["edges"] if e["from"] == box["id"]}
    refs = {b["id"]: b["label"] for b in lay["nodes"]}
    assert {"W", "U"} <= {refs[t] for t in into}


def test_the_steps_of_a_training_loop_fold_but_the_last():
    ng.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    x, y = ng.randn(16, 4), ng.randn(16, 1)
    with record() as rec:
        for _ in range(20):
            loss = ((model(x) - y) ** 2).mean()
            model.zero_grad()
            loss.backward()
    snap = build_snapshot(rec, names={id(model): "model"})
    lay, series = _open(snap)
    (steps,) = series.values()
    assert steps["count"] == 19
    last = max(n["seq"] for n in snap["nodes"] if n["seq"] is not None)
    drawn = {b["ref"] for b in lay["nodes"]}
    assert f"n{last}" in drawn  # the last step's loss is drawn, the earlier ones fold
    assert len(lay["nodes"]) < 15


def test_a_long_series_opens_in_parts_down_to_any_repeat():
    snap = _rnn(1000)
    lay, series = _open(snap)
    (step,) = series.values()
    opened = layout(snap, default_collapsed(snap), expanded=[step["id"]])
    parts = [x for x in opened["series"] if x["id"] != step["id"]]
    assert len(parts) == SPLIT and sum(x["count"] for x in parts) == 999
    assert len(opened["nodes"]) < FIT + SPLIT


def _random_dag(n, seed=0):
    """``n // 2`` calls, each on two earlier tensors (one of the last 20): no repeats."""
    rng = random.Random(seed)
    made = [ng.randn(4, requires_grad=True) for _ in range(8)]
    ops = (lambda a, b: a + b, lambda a, b: a * b, lambda a, b: (a - b).tanh())
    with record() as rec:
        for _ in range(n // 2):
            a, b = made[-1 - rng.randrange(min(len(made), 20))], made[rng.randrange(len(made))]
            made.append(rng.choice(ops)(a, b))
        made[-1].sum().backward()
    return GraphView(recorder=rec, max_nodes=10**6)


def test_a_random_dag_opens_in_chunks_that_open_in_parts():
    """NOTE [Chunks] in fold.py: what does not repeat is split as too many children are."""
    view = _random_dag(4000)
    nodes = view.snapshot["nodes"]
    lay = view.graph_layout
    assert len(lay["nodes"]) <= SPLIT, len(lay["nodes"])  # (was 513 boxes)
    chunks = {s["id"]: s for s in lay["series"]}
    assert all(i.startswith("chunk:") for i in chunks)
    assert sum(s["nodes"] for s in chunks.values()) == len(nodes)  # every node in one
    box = next(b for b in lay["nodes"] if b["kind"] == "series")
    assert "boxes" in box["sub"] and "→" not in box["label"]  # its kinds, not a repeat
    view.toggle_series(max(chunks.values(), key=lambda s: s["nodes"])["id"])
    assert len(view.graph_layout["nodes"]) <= 2 * SPLIT  # a click adds at most SPLIT boxes
    members = dict(view._members)  # each shown series' nodes (for the NaN marks)
    folded = [s for s in view.graph_layout["series"] if not s["expanded"]]
    view.toggle_series(max(folded, key=lambda s: s["nodes"])["id"])
    again = [k for k in members if k in view._members]
    assert again and all(view._members[k] is members[k] for k in again)  # not gathered anew
    drawn = {b["ref"] for b in view.graph_layout["nodes"]}
    folded = [n["id"] for n in nodes if n["id"] not in drawn]
    for hidden in folded[:: len(folded) // 4]:
        view.reveal(hidden)  # any node is a few clicks away
        assert hidden in {b["ref"] for b in view.graph_layout["nodes"]}


# -- a cut graph keeps what matters (NOTE [A graph cut at max_nodes] in snapshot.py) ----------


def _rnn_cell(steps, max_nodes):
    ng.manual_seed(0)
    W = ng.randn(8, 8, requires_grad=True)
    U = ng.randn(8, 4, requires_grad=True)
    h0 = ng.randn(8, requires_grad=True)
    xs = ng.randn(steps, 4)
    h = h0
    with record() as rec:
        for t in range(steps):
            h = (W @ h * 0.1 + U @ xs[t]).tanh()
        h.sum().backward()
    names = {id(W): "W", id(U): "U", id(h0): "h0"}
    return build_snapshot(rec, names=names, max_nodes=max_nodes), (W, U, h0)


def test_a_cut_rnn_still_shows_U_and_every_leaf_with_a_gradient():
    snap, (W, U, h0) = _rnn_cell(2000, 1000)  # 10,004 nodes, cut at 1,000
    assert snap["truncated"] and len(snap["nodes"]) <= 1000
    labels = {n["label"]: n for n in snap["nodes"] if n["kind"] == "leaf"}
    assert {"W", "U", "h0"} <= set(labels)  # h0: 10,000 nodes below the cut, kept as a stub
    assert U.grad is not None and labels["U"]["tensor"]["grad"]["norm"] > 0
    # U is drawn with its edges (every step's U @ x[t] is cut at the same depth as W @ h) ...
    into = {e["to"] for e in snap["edges"]}
    assert labels["U"]["id"] in into and labels["W"]["id"] in into
    # ... h0 beyond the cut without them, and the note says so
    assert labels["h0"]["id"] not in into and snap["stubs"] == 1
    assert snap["cut_nodes"] == 5 * 2000 + 4 - len(snap["nodes"])  # 5 a step, sum, 3 leaves
    note = cut_note(snap)
    assert f"{snap['cut_nodes']:,} nodes left out" in note
    assert "1 leaf beyond the cut drawn without their edges" in note
    # the view the widget is sent says it too, and search (over its nodes) finds U and h0
    view = view_snapshot(snap)
    assert view["cut_nodes"] == snap["cut_nodes"] and view["stubs"] == 1
    assert {"U", "h0"} <= {n.get("label") for n in read_view(view)["nodes"]}
    # both branches are cut at the same depth: as many steps use U as use W
    uses = [sum(e["to"] == labels[k]["id"] for e in snap["edges"]) for k in ("U", "W")]
    assert abs(uses[0] - uses[1]) <= 1 and uses[0] > 100, uses


def test_a_cut_fan_opens_as_an_overview_its_stubs_folded():
    """The weights of the branches past the cut are stubs (no edges): they fold "×N" with
    their kind (NOTE [Stubs fold] in fold.py), and the search reveals any of them."""
    ng.manual_seed(0)
    x = ng.randn(4, requires_grad=True)
    ws = [ng.randn(4, requires_grad=True) for _ in range(1000)]
    with record() as rec:
        loss = sum((x * w).tanh().sum() for w in ws)
        loss.backward()
    view = GraphView(recorder=rec, max_nodes=2000)
    snap = view.snapshot
    assert snap["truncated"] and snap["stubs"] > 500
    lay = view.graph_layout
    assert len(lay["nodes"]) < 20, len(lay["nodes"])  # was 2 + the stubs, one box each
    stubs = next(s for s in lay["series"] if s["label"] == "AccumulateGrad")
    assert stubs["count"] >= snap["stubs"] - 2
    drawn = {b["ref"] for b in lay["nodes"]}
    hidden = next(
        n["id"] for n in snap["nodes"] if n["name"] == "AccumulateGrad" and n["id"] not in drawn
    )
    view.reveal(hidden)
    assert hidden in {b["ref"] for b in view.graph_layout["nodes"]}
    assert len(view.graph_layout["nodes"]) < 60


def test_a_graph_that_fits_is_walked_as_before():
    snap, _ = _rnn_cell(20, 10**6)
    assert not snap["truncated"] and snap["cut_nodes"] == 0 and snap["stubs"] == 0
    assert cut_note(snap) == ""


def test_reveal_opens_only_the_parts_on_the_way_to_a_node():
    ng.manual_seed(0)
    W = ng.randn(8, 8, requires_grad=True)
    U = ng.randn(8, 4, requires_grad=True)
    xs = ng.randn(1000, 4)
    h = ng.zeros(8)
    for t in range(1000):
        h = (W @ h * 0.1 + U @ xs[t]).tanh()
    view = GraphView(h.sum(), max_nodes=10**6)
    ids = [n["id"] for n in view.snapshot["nodes"] if n["name"] == "AddBackward0"]
    hidden = ids[len(ids) // 3]
    assert hidden not in {b["ref"] for b in view.graph_layout["nodes"]}
    view.reveal(hidden)
    assert hidden in {b["ref"] for b in view.graph_layout["nodes"]}
    assert len(view.expanded) == 3  # 999 repeats, a part of 100, a part of 10
    # the first step, two levels of at most SPLIT parts, and the 10 steps of the part opened
    assert len(view.graph_layout["nodes"]) <= 10 + 2 * SPLIT + 10 * 5


# -- a click costs what it shows (NOTE [Clicks cost what they show] in visible.py) ------------


class _Unwalkable(list):
    """A snapshot's node or edge list that a click on a series must not walk."""

    def __iter__(self):
        raise AssertionError("a click walked every node or edge of the snapshot")


def _guard(snap):
    saved = snap["nodes"], snap["edges"]
    snap["nodes"], snap["edges"] = _Unwalkable(saved[0]), _Unwalkable(saved[1])
    return saved


def _training_view(steps):
    return GraphView(recorder=_training(steps), max_nodes=10**6)


def test_opening_and_folding_series_walks_only_what_shows():
    ng.manual_seed(0)
    W, U = ng.randn(8, 8, requires_grad=True), ng.randn(8, 4, requires_grad=True)
    xs, h = ng.randn(300, 4), ng.zeros(8)
    for t in range(300):
        h = (W @ h * 0.1 + U @ xs[t]).tanh()
    view = GraphView(h.sum(), max_nodes=10**6)
    (step,) = view.graph_layout["series"]
    saved = _guard(view.snapshot)
    view.toggle_series(step["id"])
    part = max(view.graph_layout["series"][:-1], key=lambda s: s["nodes"])["id"]
    view.toggle_series(part)
    shown = json.dumps(view.graph_layout)
    view.toggle_series(part)
    view.toggle_series(step["id"])
    view.snapshot["nodes"], view.snapshot["edges"] = saved
    # what the clicks showed is what a layout of the whole snapshot shows
    fresh = layout(view.snapshot, view.collapsed, expanded=[step["id"], part])
    assert shown == json.dumps(fresh)
    assert view.graph_layout == layout(view.snapshot, view.collapsed)


def test_closing_a_group_again_walks_only_what_shows():
    view = _training_view(20)
    (gid, *_) = view.collapsed
    at_open = dict(view.graph_layout, collapsed=None)
    view.toggle(gid)  # a new set of collapsed groups: the snapshot is walked once
    saved = _guard(view.snapshot)
    view.toggle(gid)  # back to the boxes of the open view (its groups inside stay collapsed)
    view.snapshot["nodes"], view.snapshot["edges"] = saved
    assert json.dumps(dict(view.graph_layout, collapsed=None)) == json.dumps(at_open)


def test_a_new_snapshot_is_laid_out_anew():
    view = _training_view(3)
    view.expand_all()
    last = [e["label"] for e in view.graph_layout["edges"]]
    view.show_pass(0)  # the first pass's gradients: another snapshot, other labels
    first = [e["label"] for e in view.graph_layout["edges"]]
    fresh = layout(view.snapshot, view.collapsed, fold=False)
    assert first == [e["label"] for e in fresh["edges"]] and first != last


def _reachable(root, match):
    """How many objects ``match`` accepts are reachable from ``root`` (through containers and
    the objects of ``visible.py``)."""
    seen, todo, found = set(), [root], 0
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        found += bool(match(obj))
        if type(obj) is dict:
            todo += obj.keys()
            todo += obj.values()
        elif type(obj) in (list, tuple, set, frozenset):
            todo += obj
        elif type(obj).__module__ == "nbgrad.notebook.visible":
            todo.append(vars(obj))
    return found


def _node_box(obj):
    return type(obj) is dict and obj.get("kind") == "node" and "w" in obj


def test_a_folded_view_keeps_no_box_per_node():
    # NOTE [Boxes when asked] in visible.py: what a folded view keeps makes boxes when asked
    h = ng.ones(4, requires_grad=True)
    for _ in range(1000):
        h = (h * 1.0001).tanh()
    view = GraphView(h.sum())
    assert len(view.snapshot["nodes"]) > 2000 and len(view.graph_layout["nodes"]) < 20
    assert _reachable(view._shown, _node_box) < 20
    (vis,) = view._shown["kept"].values()  # nor a unit per node drawn on its own
    assert vis.vis == {} and len(vis.units) > 2000
    # nor the edges' ids outside the snapshot (NOTE [Bundles are tuples])
    ids = {e["id"] for e in view.snapshot["edges"]}
    kept = {k: v for k, v in vars(vis).items() if k not in ("snapshot", "_entry")}
    assert _reachable(kept, lambda x: type(x) is str and x in ids) == 0
    view.expand_all()  # every node shows: a box each, made for this layout
    assert len(view.graph_layout["nodes"]) > 2000
    assert view.graph_layout == layout(view.snapshot, [], fold=False)


def test_the_graphs_remembered_by_the_search_for_series_hold_no_tuple_a_unit():
    # NOTE [Series found once] in fold.py: its key holds flat tuples, kept after the view
    from nbgrad.notebook import fold

    h = ng.ones(4, requires_grad=True)
    for _ in range(1000):
        h = (h * 1.0001).tanh()
    view = GraphView(h.sum())
    assert view.graph_layout["series"]
    key = list(fold._FOUND)[-1]  # (the last searched)
    assert len(key[0]) > 2000
    assert all(type(x) is not tuple for part in key if part is not None for x in part)
