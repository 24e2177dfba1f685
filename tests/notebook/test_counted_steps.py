"""A training cell under ``%%autograd`` records in full the steps it may show and counts the
others (NOTE [Repeated steps counted] in nbgrad/notebook/steps.py): what is drawn is what a
full recording of the same steps holds, the series box counts every step, and whatever must
be exact (a NaN's origin, a loop that ends early) stops or reports the counting."""

import traceback

import pytest
from IPython.utils.capture import capture_output

from nbgrad.notebook import record
from nbgrad.notebook.layout import default_collapsed, layout

SETUP = {
    "nbgrad": "import nbgrad as ng\nng.manual_seed(0)\nnn, F, lib = ng.nn, ng.nn.functional, ng\n",
    "torch": "import torch\ntorch.manual_seed(0)\n"
    "nn, F, lib = torch.nn, torch.nn.functional, torch\n",
}
MODEL = (
    "model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))\n"
    "opt = lib.optim.SGD(model.parameters(), lr=0.1)\n"
    "x, y = lib.randn(5, 6), lib.tensor([0, 2, 1, 1, 0])\n"
)
STEP = (
    "    opt.zero_grad()\n"
    "    loss = F.cross_entropy(model(x), y)\n"
    "    loss.backward()\n"
    "    opt.step()\n"
)


def _cell(ip, source):
    with capture_output() as cap:
        result = ip.run_cell(source)
    assert result.success, result.error_in_exec
    return cap


def _last_pass(rec):
    """The last backward pass as names and the norms each node received and sent."""
    return [
        (
            s.node.name(),
            [round(g.norm, 6) for g in s.inputs],
            [g and round(g.norm, 6) for g in s.outputs],
        )
        for s in rec.passes[-1].steps
    ]


@pytest.mark.parametrize("framework", ["nbgrad", "torch"])
def test_the_last_step_is_recorded_as_in_full_and_the_others_counted(ip, framework):
    if framework == "torch":
        pytest.importorskip("torch", reason="PyTorch is the test oracle (the test extra has it)")
    _cell(ip, SETUP[framework] + MODEL)
    cap = _cell(ip, "%%autograd -o s\nfor step in range(20):\n" + STEP)
    rec = ip.user_ns["s"].record
    # the first step, two repeats (which show the step repeats) and the last: 16 counted
    assert rec.counted_steps == 16 and rec.counted_unlike == 0 and rec.counted_at_end == 0
    assert [p.index for p in rec.passes] == [0, 1, 2, 19]
    assert "16 repeats of a step counted, not recorded" in rec.summary()
    svg = cap.outputs[2].data["image/svg+xml"]
    assert "×19 more (16 counted)" in svg  # the series box counts every step
    shown = _last_pass(rec)
    ops = [r.op for r in rec.records]

    # the same 20 steps from the same start, each recorded in full
    _cell(ip, SETUP[framework] + MODEL)
    ns = ip.user_ns
    with record() as full:
        for _ in range(20):
            ns["opt"].zero_grad()
            loss = ns["F"].cross_entropy(ns["model"](ns["x"]), ns["y"])
            loss.backward()
            ns["opt"].step()
    assert len(full.passes) == 20 and full.counted_steps == 0
    assert _last_pass(full) == shown
    per_step = len(ops) // 4
    assert [r.op for r in full.records][-per_step:] == ops[-per_step:]
    snap = ip.user_ns["s"].graph.snapshot
    lay = layout(snap, default_collapsed(snap))
    (steps,) = lay["series"]
    assert steps["count"] + snap["counted_steps"] == 19


@pytest.mark.parametrize("framework", ["nbgrad", "torch"])
def test_a_loop_over_enumerate_or_zip_counts_its_steps(ip, framework):
    """``for i, batch in enumerate(batches)``: the steps are counted by ``batches``' length
    (an enumerate has none), ``zip``'s by its shortest argument's, and a cell's own
    ``enumerate`` is the one its loop calls."""
    if framework == "torch":
        pytest.importorskip("torch", reason="PyTorch is the test oracle (the test extra has it)")
    _cell(ip, SETUP[framework] + MODEL)
    body = STEP + "    seen.append(i)\n"
    _cell(ip, "%%autograd -o s\nseen = []\nfor i, b in enumerate([x] * 20, start=1):\n" + body)
    rec = ip.user_ns["s"].record
    assert ip.user_ns["seen"] == list(range(1, 21))
    assert rec.counted_steps == 16 and [p.index for p in rec.passes] == [0, 1, 2, 19]
    own = "def enumerate(xs, start=0):\n    return [(10 * start, v) for v in xs]\n"
    _cell(ip, "%%autograd -o s\n" + own + "seen = []\nfor i, b in enumerate([x] * 3, 2):\n" + body)
    assert ip.user_ns["seen"] == [20, 20, 20] and len(ip.user_ns["s"].record.passes) == 3
    del ip.user_ns["enumerate"]
    _cell(ip, "%%autograd -o s\nseen = []\nfor i, b in zip(range(50), [x] * 20):\n" + body)
    rec = ip.user_ns["s"].record
    assert ip.user_ns["seen"] == list(range(20))
    assert rec.counted_steps == 16 and [p.index for p in rec.passes] == [0, 1, 2, 19]
    # one iterator given twice: its length says nothing of the zip's, so nothing is counted
    # by it (the steps recorded, in a ring)
    _cell(ip, "%%autograd -o s\nit = iter(range(16))\nseen = []\nfor i, b in zip(it, it):\n" + body)
    rec = ip.user_ns["s"].record
    assert ip.user_ns["seen"] == list(range(0, 16, 2)) and rec.counted_at_end == 0
    assert [p.index for p in rec.passes] == [0, 5, 6, 7]


def test_a_loop_of_unknown_length_records_every_step(ip):
    _cell(ip, SETUP["nbgrad"] + MODEL)
    _cell(ip, "%%autograd -o s\nfor step in (i for i in range(10)):\n" + STEP)
    rec = ip.user_ns["s"].record
    # every pass ran recorded: the ring keeps the first step and the last three, and the
    # gradient norms of the six it dropped
    assert [p.index for p in rec.passes] == [0, 7, 8, 9]
    assert rec.counted_steps == 6 and len(rec.step_norms) == 6
    assert all(len(norms) == 4 for norms in rec.step_norms)


@pytest.mark.parametrize("framework", ["nbgrad", "torch"])
def test_a_nan_in_a_counted_step_stops_the_counting_at_its_origin(ip, framework):
    """nbgrad's counted steps check each call: the origin is the call that made the Inf. A
    torch loop's counted iterations run unwatched (NOTE [Repeated steps counted]): the answer
    says where the Inf was found, that the iterations before ran unrecorded, and how to see
    the call, which ``--all-steps`` shows."""
    if framework == "torch":
        pytest.importorskip("torch", reason="PyTorch is the test oracle (the test extra has it)")
    cell = (
        "%%autograd -o s {}\n"
        "for step in range(20):\n" + STEP + "    with lib.no_grad():\n"
        "        model[0].bias.div_(0.0 if step == 12 else 1.0)\n"
    )
    found, recs = [], []
    for options in ("", "--all-steps"):
        _cell(ip, SETUP[framework] + MODEL)
        _cell(ip, cell.format(options))
        found.append([str(f) for f in ip.user_ns["s"].nonfinite()])
        recs.append(ip.user_ns["s"].record)
        assert recs[-1].passes[-1].index == 19 and recs[-1].counted_at_end == 0
    (origin,) = [f for f in found[1] if f.startswith("origin")]
    assert "forward: div" in origin and " made " in origin and "line 8" in origin  # (div_: torch)
    if framework == "nbgrad":
        assert found[0] == found[1]
        assert 0 < recs[0].counted_steps < 12  # counted before the Inf, recorded from it on
        return
    # the bias's Inf does not reach the gradients (tanh): found when the unwatched run ends
    assert found[0][0] == (
        "origin: model.0.bias held +inf/-inf after the loop's iteration 17 (counting from "
        "0), found there: iterations 3 to 17 ran unrecorded (repeats of the step, only counted), "
        "so the call that made it is not drawn; %%autograd --all-steps records every step and "
        "shows it"
    )
    assert set(found[0][1:]) <= set(found[1])  # what the steps recorded after say of it


def test_a_loop_that_ends_early_says_the_last_steps_were_counted(ip):
    _cell(ip, SETUP["nbgrad"] + MODEL)
    _cell(
        ip,
        "%%autograd -o s\nfor step in range(20):\n" + STEP + "    if step == 10:\n        break\n",
    )
    rec = ip.user_ns["s"].record
    assert rec.counted_at_end > 0
    assert "ran after the last step drawn" in rec.summary()


def test_loops_of_any_iterable_run_as_in_a_plain_cell(ip):
    """The loop wrapper changes nothing the cell sees: a length that fails to say is unknown,
    and a loop over what is not iterable fails in the cell's own frame."""
    _cell(
        ip,
        "%%autograd -o s\n"
        "class Bad:\n"
        "    def __iter__(self):\n"
        "        return iter(range(3))\n"
        "    def __len__(self):\n"
        "        raise NotImplementedError\n"
        "w = ng.ones(2, requires_grad=True)\n"
        "seen = [i for i in Bad()]\n"
        "for i in Bad():\n"
        "    (w * i).sum().backward()\n",
    )
    assert ip.user_ns["seen"] == [0, 1, 2] and len(ip.user_ns["s"].record.passes) == 3
    with capture_output():
        result = ip.run_cell("%%autograd\nfor i in 5:\n    pass\n")
    assert isinstance(result.error_in_exec, TypeError)
    frames = [
        f.f_code.co_filename for f, _ in traceback.walk_tb(result.error_in_exec.__traceback__)
    ]
    assert not any(name.endswith("steps.py") for name in frames)


def test_a_transposed_weight_checked_finite_in_the_step_is_not_read_again(ip, monkeypatch):
    """nbgrad's ``Linear`` calls ``w.t()`` after the optimizer updated ``w`` (checked finite
    then): the transpose holds the same values, so a counted step does not check it again;
    a weight changed since (a new version) is checked."""
    from nbgrad.notebook import steps

    checked = []
    finite = steps._finite

    def counting(result):
        checked.append(tuple(result.shape))
        return finite(result)

    monkeypatch.setattr(steps, "_finite", counting)
    _cell(ip, SETUP["nbgrad"] + MODEL)
    _cell(ip, "%%autograd -o s\nfor step in range(20):\n" + STEP)
    assert ip.user_ns["s"].record.counted_steps == 16
    assert (8, 6) in checked and (6, 8) not in checked and (8, 3) not in checked  # w, w.t()
    checked.clear()
    _cell(  # a row of the weight scaled after the update (a new version): the transpose is checked
        ip,
        "%%autograd -o s\nfor step in range(20):\n" + STEP + "    with lib.no_grad():\n"
        "        model[0].weight[0].mul_(1.0)\n",
    )
    assert ip.user_ns["s"].record.counted_steps == 16 and (6, 8) in checked
