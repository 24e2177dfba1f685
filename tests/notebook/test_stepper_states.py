"""The stepper's state at each step, over random graphs (issue 22, point 8): a node is never
listed both as made ready and as waiting (NOTE [Made ready, not waiting] in
nbgrad/notebook/stepper.py), nor as ready, running or done and waiting; the browser's
``stateAt`` (widgets/stepper.js, run in Node) gives the same state as ``BackwardStepper.state``.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import anywidget  # noqa: F401
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nbgrad as ng
from nbgrad.notebook import BackwardStepper
from nbgrad.notebook._widget import esm

UNARY = {"exp": lambda a: (a * 0.1).exp(), "sin": lambda a: a.sin(), "tanh": lambda a: a.tanh()}
BINARY = {"mul": lambda a, b: a * b, "add": lambda a, b: a + b, "sub": lambda a, b: a - b}


@st.composite
def graphs(draw):
    """A random graph: 1-3 leaves, then 1-12 ops, each on earlier tensors (so a tensor may feed
    several ops and a node wait for several gradients); the output sums 1-3 of them."""
    n_leaves = draw(st.integers(1, 3))
    ops = []
    for k in range(draw(st.integers(1, 12))):
        available = n_leaves + k
        if draw(st.booleans()):
            ops.append((draw(st.sampled_from(sorted(UNARY))), draw(st.integers(0, available - 1))))
        else:
            a, b = draw(st.integers(0, available - 1)), draw(st.integers(0, available - 1))
            ops.append((draw(st.sampled_from(sorted(BINARY))), a, b))
    total = n_leaves + len(ops)
    outs = draw(st.lists(st.integers(n_leaves, total - 1), min_size=1, max_size=3, unique=True))
    return n_leaves, ops, outs


def _stepper(graph):
    n_leaves, ops, outs = graph
    tensors = [ng.tensor([0.5, -1.0], requires_grad=True) for _ in range(n_leaves)]
    for name, *args in ops:
        fn = UNARY.get(name) or BINARY[name]
        tensors.append(fn(*(tensors[i] for i in args)))
    loss = tensors[outs[0]].sum()
    for i in outs[1:]:
        loss = loss + tensors[i].sum()
    return BackwardStepper(loss)


def _check(state):
    waiting = set(state["dependencies"]) | set(state["buffers"])
    made = set(state["made_ready"])
    ready = {i for ids in state["ready"].values() for i in ids}
    running = {state["running"]} if state["running"] else set()
    assert not made & waiting, (state["position"], made & waiting)
    assert not (ready | running | set(state["done"])) & waiting, state["position"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_a_node_made_ready_is_not_waiting_at_the_same_step(graph):
    stepper = _stepper(graph)
    made_somewhere = False
    for position in range(stepper.steps + 2):
        state = stepper.state(position)
        _check(state)
        made_somewhere |= bool(state["made_ready"])
    assert made_somewhere or stepper.steps == 1  # the property was put to the test


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_a_step_shows_the_ready_queue_it_left(graph):
    """Issue 33, point 7: the queue shown at a step holds the nodes it made ready (it said
    "Made ready: x" above "Ready queue: empty"); the next step then takes the queue's head."""
    stepper = _stepper(graph)
    steps = stepper.trace["steps"]
    for position in range(1, stepper.steps + 1):
        state = stepper.state(position)
        queue = state["ready"]["cpu"]
        assert set(state["made_ready"]) <= set(queue), position
        after = steps[position] if position < len(steps) else None
        assert queue == ([after["node"], *after["ready"]["cpu"]] if after else []), position


def test_the_first_step_of_a_chain_makes_its_next_node_ready():
    """The case that showed it: the root's step makes the next node ready, which the counts
    taken when the root started still had waiting for one gradient."""
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    stepper = BackwardStepper((x * 2).exp().sum())
    state = stepper.state(1)
    assert state["made_ready"] and state["made_ready"][0] not in state["dependencies"]
    assert state["dependencies"]  # the nodes further down still wait


def test_the_browser_rebuilds_the_same_states(tmp_path):
    """``stateAt`` of the widget's module (as anywidget loads it: common.js, then stepper.js)
    against ``BackwardStepper.state`` on random graphs."""
    node = shutil.which("node")
    assert node, "Node.js is needed to run the stepper's JS: apt-get install -y nodejs"
    module = tmp_path / "stepper.mjs"
    module.write_text(esm("stepper.js"))
    cases = []
    for graph in [
        (1, [("mul", 0, 0), ("exp", 1), ("sin", 1), ("add", 2, 3)], [4]),
        (2, [("mul", 0, 1), ("tanh", 2), ("sub", 3, 2)], [3, 4]),
        (1, [("exp", 0), ("exp", 1), ("exp", 2)], [3]),
    ]:
        stepper = _stepper(graph)
        for position in range(stepper.steps + 2):
            cases.append((stepper.trace, position, stepper.state(position)))
    (tmp_path / "cases.json").write_text(json.dumps([[tr, p] for tr, p, _ in cases]))
    script = tmp_path / "run.mjs"
    script.write_text(
        f"import {{ stateAt }} from {json.dumps(str(module))};\n"
        "import { readFileSync } from 'node:fs';\n"
        f"const cases = JSON.parse(readFileSync({json.dumps(str(tmp_path / 'cases.json'))}));\n"
        "console.log(JSON.stringify(cases.map(([tr, p]) => stateAt(tr, p))));\n"
    )
    out = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    browser = json.loads(out.stdout)
    for (_, position, python), js in zip(cases, browser, strict=True):
        for key in ("running", "done", "made_ready", "dependencies", "buffers", "ready"):
            assert js[key] == python[key], (position, key)
