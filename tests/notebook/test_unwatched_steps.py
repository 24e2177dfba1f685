"""The counted iterations of a torch training loop under ``%%autograd`` run with the watch
mode off torch's stack, their leaves' hooks noting the gradients (NOTE [Repeated steps
counted] in nbgrad/notebook/steps.py): what the cell shows (the passes counted, the last pass,
the gradient flow over steps) is what ``--all-steps`` records, whatever the loop does."""

import pytest
from IPython.utils.capture import capture_output

torch = pytest.importorskip("torch", reason="PyTorch is the test oracle (the test extra has it)")

SETUP = (
    "import torch\ntorch.manual_seed(0)\nnn, F = torch.nn, torch.nn.functional\n"
    "model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "x, y = torch.randn(5, 6), torch.tensor([0, 2, 1, 1, 0])\n"
    "depths = []\n"
)
STEP = (
    "    depths.append(torch._C._len_torch_function_stack())\n"
    "    opt.zero_grad()\n"
    "    loss = F.cross_entropy(model(x), y)\n"
    "    loss.backward()\n"
    "    nn.utils.clip_grad_norm_(model.parameters(), 0.05)\n"  # (the flow reads before it)
    "    opt.step()\n"
)


def _cell(ip, source, ok=True):
    with capture_output():
        result = ip.run_cell(source)
    assert result.success == ok, result.error_in_exec
    return result


def _run(ip, loop, options=""):
    """``loop`` run under the magic on a fresh model: its recorder, and what it showed and
    left in the namespace."""
    _cell(ip, SETUP)
    _cell(ip, f"%%autograd -o s {options}\n{loop}")
    s, ns = ip.user_ns["s"], ip.user_ns
    rec = s.record
    last = [(st.node.name(), [round(g.norm, 6) for g in st.inputs]) for st in rec.passes[-1].steps]
    return rec, {
        "passes": rec._pass_count,
        "last": last,
        "flow": [s.graph.flow.norms.get(id(m)) for m in ns["model"].modules()],
        "depths": ns["depths"],
        "after": ns.get("after"),
        "calls": getattr(ns.get("Counting"), "calls", None),
        "origin": [str(f) for f in s.nonfinite() if f.origin],
        "found": [str(f) for f in s.nonfinite()],
        "hooks": sum(len(p._post_accumulate_grad_hooks or {}) for p in ns["model"].parameters()),
    }


def _as_recorded_in_full(ip, loop, ends_early=False):
    """Run ``loop`` counted and with every step recorded: what both show is the same (the last
    pass drawn too, unless the loop ``ends_early``); the counted run's recorder and facts."""
    rec, shown = _run(ip, loop)
    full, every = _run(ip, loop, "--all-steps")
    assert full.counted_steps == 0 and rec.counted_steps > 0
    assert shown["passes"] == every["passes"] == len(full.passes)
    assert shown["flow"] == every["flow"]
    if not ends_early:
        assert shown["last"] == every["last"]
    return rec, shown


def test_counted_iterations_run_with_the_mode_off(ip):
    rec, shown = _as_recorded_in_full(ip, "for step in range(20):\n" + STEP)
    # recorded in full: steps 0-2; the mode comes off when iteration 3 starts, and is back on
    # for iteration 18, whose backward pass ends the last counted step
    assert shown["depths"] == [1] * 3 + [0] * 15 + [1] * 2
    assert [p.index for p in rec.passes] == [0, 1, 2, 19] and rec.counted_steps == 16
    assert rec.counted_unlike == 0 and rec.counted_at_end == 0
    assert torch._C._len_torch_function_stack() == 0
    assert shown["hooks"] == 0  # the leaves' hooks are gone (the hook editor lists none)


def test_iterations_of_no_pass_or_two_passes_are_counted_as_they_ran(ip):
    loop = (
        "for step in range(30):\n"
        "    if step == 8:\n"
        "        continue\n" + STEP + "    if step == 14:\n"
        "        F.cross_entropy(model(x), y).backward()\n"
    )
    rec, shown = _as_recorded_in_full(ip, loop)
    assert rec._pass_count == 30  # 29 iterations ran a pass, one ran two
    assert rec.counted_unlike == 2
    # (no entry for iteration 8) the mode is back on for the iteration after each of those,
    # and off again after it
    assert shown["depths"] == [1] * 3 + [0] * 5 + [1] + [0] * 5 + [1] + [0] * 12 + [1] * 2


def test_a_break_puts_the_mode_back_for_the_code_after_the_loop(ip):
    loop = (
        "for step in range(20):\n" + STEP + "    if step == 10:\n"
        "        break\n"
        "after = torch._C._len_torch_function_stack()\n"
        "bad = torch.zeros(2) / 0.0\n"
    )
    rec, shown = _as_recorded_in_full(ip, loop, ends_early=True)
    assert shown["after"] == 1
    assert rec.counted_at_end > 0 and "ran after the last step drawn" in rec.summary()
    # the NaN made after the loop is seen as it is made, and drawn
    (origin,) = shown["origin"]
    assert origin.startswith("origin: forward: div made nan from 0, 0 at line 12")


def test_nested_loops(ip):
    loop = "for epoch in range(3):\n    for step in range(8):\n    " + STEP.replace("\n", "\n    ")
    rec, shown = _as_recorded_in_full(ip, loop.rstrip(" "))
    # each epoch's first iteration ends a step recorded in full (the step before it was the
    # last of its loop), the next ones run unwatched until the one before the last
    assert rec._pass_count == 24
    assert shown["depths"] == [1, 1, 1, 0, 0, 0, 1, 1] + [1, 0, 0, 0, 0, 0, 1, 1] * 2


def test_a_users_own_mode_sees_every_call(ip):
    mode = (
        "class Counting(torch.overrides.TorchFunctionMode):\n"
        "    calls = 0\n"
        "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
        "        Counting.calls += 1\n"
        "        return func(*args, **(kwargs or {}))\n"
    )
    around = (
        mode
        + "with Counting():\n    for step in range(20):\n    "
        + STEP.replace("\n", "\n    ").rstrip(" ")
    )
    inside = (
        mode
        + "for step in range(20):\n    with Counting():\n    "
        + STEP.replace("\n", "\n    ").rstrip(" ")
    )
    for loop in (around, inside):
        _cell(ip, SETUP)
        _cell(ip, loop)  # not recorded: what the user's mode sees
        plain = ip.user_ns["Counting"].calls
        rec, shown = _as_recorded_in_full(ip, loop)
        assert shown["calls"] == plain
        if loop is around:  # the watch mode is not the innermost: it stays on
            assert shown["depths"] == [2] * 20
        else:
            assert shown["depths"].count(1) == 15  # (the user's mode alone in the unwatched ones)
        assert rec.counted_steps == 16


def test_an_exception_in_a_counted_iteration_leaves_torch_as_it_was(ip):
    _cell(ip, SETUP)
    result = _cell(
        ip,
        "%%autograd -o s\nfor step in range(20):\n"
        "    if step == 10:\n"
        "        raise ValueError('stop')\n" + STEP,
        ok=False,
    )
    assert isinstance(result.error_in_exec, ValueError)
    rec = ip.user_ns["s"].record
    assert rec._pass_count == 10 and rec.counted_steps == 7
    assert torch._C._len_torch_function_stack() == 0
    assert not torch.nn.modules.module._global_forward_hooks
    assert all(not p._post_accumulate_grad_hooks for p in ip.user_ns["model"].parameters())


def test_a_nan_made_in_an_unwatched_iteration_is_told_where_it_was_found(ip):
    loop = (
        "for step in range(20):\n"
        "    with torch.no_grad():\n"
        "        model[2].weight.div_(0.0 if step == 12 else 1.0)\n" + STEP
    )
    rec, shown = _run(ip, loop)
    assert shown["origin"] == [
        "origin: the gradient model.2.bias got in the loop's iteration 12 held nan "
        "(counting from 0), found there: iterations 3 to 12 ran unrecorded (repeats of the "
        "step, only counted), so the call that made it is not drawn; %%autograd --all-steps "
        "records every step and shows it"
    ]
    assert [p.index for p in rec.passes] == [0, 1, 2, *range(13, 20)]  # recorded from then on
    _, every = _run(ip, loop, "--all-steps")
    # the call that made it is drawn there (the origin told is a later one: an in-place op
    # reads its input changed, see answers_values.py)
    assert any(f.startswith("forward: div_ made +inf/-inf") for f in every["found"])


def test_a_data_loader_adam_and_an_evaluation_every_few_steps(ip):
    loop = (
        "opt = torch.optim.Adam(model.parameters(), lr=0.01)\n"
        "data = torch.utils.data.TensorDataset(torch.randn(60, 6), torch.randint(0, 3, (60,)))\n"
        "step = 0\n"
        "for x, y in torch.utils.data.DataLoader(data, batch_size=4):\n"
        + STEP
        + "    if step % 5 == 0:\n"
        "        with torch.no_grad():\n"
        "            accuracy = (model(x).argmax(1) == y).float().mean()\n"
        "    step += 1\n"
    )
    rec, shown = _as_recorded_in_full(ip, loop)
    # (the evaluation after step 0 makes step 1 unlike step 2: steps 0-3 are recorded) the
    # evaluations after 5 and 10 run unwatched: no node made, the leaves one gradient each
    assert rec._pass_count == 15 and shown["depths"] == [1] * 4 + [0] * 9 + [1] * 2
