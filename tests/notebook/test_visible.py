"""A click that opens or closes a module group (nbgrad/notebook/visible.py's NOTE [A click
changes what it opens]): the visible graph made from the one kept before is the one made
anew, and the click does not walk the whole snapshot to make it."""

import random

import nbgrad as ng
from nbgrad import nn
from nbgrad.notebook import GraphView, build_snapshot, record
from nbgrad.notebook.layout import default_collapsed, layout
from nbgrad.notebook.visible import Visible, visible_graph

FIELDS = ("vis", "units", "_places", "members", "_entry", "_boxes", "out", "hidden")


def _training(steps):
    ng.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    x, y = ng.randn(16, 4), ng.randn(16, 1)
    with record() as rec:
        for _ in range(steps):
            loss = ((model(x) - y) ** 2).mean()
            model.zero_grad()
            loss.backward()
    return rec


def _transformer():
    ng.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    with record() as rec:
        enc(ng.randn(2, 3, 8)).pow(2).mean().backward()
    return rec


def _same(made, fresh):
    for name in FIELDS:
        assert getattr(made, name) == getattr(fresh, name), name
    if made._of_unit is not None:
        assert made._of_unit == fresh.of_unit()


def test_a_visible_graph_made_from_a_kept_one_is_the_one_made_anew():
    # groups opened one level, closed, and sets far apart (nested groups in both: a group
    # and a group inside it change together), on a training loop and a transformer stack
    for rec in (_training(12), _transformer()):
        snap = build_snapshot(rec, max_nodes=10**6)
        groups = {g["id"]: g for g in snap["groups"]}
        rng, cache = random.Random(0), {}
        shut = set(default_collapsed(snap))
        made = 0
        for step in range(40):
            got = visible_graph(snap, shut, cache)
            if step % 3 == 0:
                got.of_unit()  # (then made from the kept one's too)
            _same(got, Visible(snap, shut))
            made += "index" in cache
            gid = rng.choice(sorted(groups))
            if step % 9 == 8:  # a set far from the last
                shut = set(rng.sample(sorted(groups), 4))
            elif gid in shut:  # open one level, as a click does
                shut.discard(gid)
                shut |= {g for g, x in groups.items() if x["parent"] == gid}
            else:
                shut.add(gid)
        assert made > 20  # (most made from a kept one)


class _Unwalkable(list):
    """A snapshot's node or edge list that a click on a group must not walk."""

    def __iter__(self):
        raise AssertionError("a click walked every node or edge of the snapshot")


def test_opening_and_closing_a_group_walks_only_what_it_opens():
    view = GraphView(recorder=_training(30), max_nodes=10**6)
    first, *_, last = view.collapsed
    view.toggle(first)  # the first click reads the snapshot once (visible.py's _Index)
    snap = view.snapshot
    saved = snap["nodes"], snap["edges"]
    snap["nodes"], snap["edges"] = _Unwalkable(saved[0]), _Unwalkable(saved[1])
    view.toggle(last)
    opened = dict(view.graph_layout)
    view.toggle(last)
    snap["nodes"], snap["edges"] = saved
    assert opened["nodes"] and opened != view.graph_layout
    # what the clicks showed is what a layout of the whole snapshot shows
    assert opened == layout(snap, opened["collapsed"], expanded=opened["expanded"])
    assert view.graph_layout == layout(snap, view.collapsed, expanded=view.expanded)
