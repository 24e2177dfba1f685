"""Where non-finite values start, through ``%%autograd -o s`` and ``s.nonfinite()``
(nbgrad/notebook/answers_values.py), for nbgrad's code and PyTorch's alike."""

import math

import numpy as np
import pytest
from IPython.utils.capture import capture_output

from nbgrad.notebook import record
from nbgrad.notebook.answers_values import find_nonfinite, nonfinite_kinds

torch = pytest.importorskip("torch")

FRAMEWORKS = ["ng", "torch"]


def findings(ip, fw, body, backward="loss"):
    """``s.nonfinite()`` of a cell of ``body`` (``{fw}``: the framework's module)."""
    cell = f"%%autograd --backward {backward} -o s\n" + body.format(fw=fw)
    with capture_output():
        result = ip.run_cell("import torch")
        result = ip.run_cell(cell)
    assert result.success, result.error_in_exec
    with capture_output():
        assert ip.run_cell("_found = s.nonfinite()").success
    return ip.user_ns["_found"]


def origin(found):
    [first] = [f for f in found if f.origin]
    return first


def node(name, fw):
    """A node's name as the framework shows it."""
    return "torch::autograd::AccumulateGrad" if fw == "torch" and name == "AccumulateGrad" else name


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_all_finite_finds_nothing(ip, fw):
    body = "x = {fw}.tensor([1.0, 2.0], requires_grad=True)\nloss = (x * x).sqrt().sum()\n"
    assert findings(ip, fw, body) == []


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_sqrt_at_zero_in_backward(ip, fw):
    body = "x = {fw}.tensor([0.0, 4.0], requires_grad=True)\nloss = x.sqrt().sum()\n"
    found = findings(ip, fw, body)
    first = origin(found)
    assert (first.node, first.phase, first.source) == (
        "SqrtBackward0",
        "backward",
        "loss = x.sqrt().sum()",
    )
    assert first.where == ("sent",) and first.kinds == ("+inf",)
    # what made it: the gradient received (1) and the saved result (sqrt(0) = 0)
    assert first.values["received"] == [1.0] and first.values["saved"] == {"result": 0.0}
    assert [(f.node, f.phase, f.where) for f in found] == [
        ("SqrtBackward0", "backward", ("sent",)),
        (node("AccumulateGrad", fw), "backward", ("received",)),
    ]
    assert str(first).startswith("origin: backward: SqrtBackward0 sent +inf")


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_log_of_zero_in_forward(ip, fw):
    body = "x = {fw}.tensor([0.0, 1.0], requires_grad=True)\ny = x.log()\nloss = (y * 2).sum()\n"
    found = findings(ip, fw, body)
    first = origin(found)
    assert (first.node, first.phase, first.source, first.line) == (
        "LogBackward0",
        "forward",
        "y = x.log()",
        3,
    )
    assert first.kinds == ("-inf",) and first.values["inputs"] == [0.0]
    assert first.values["output"] == -math.inf and first.values["index"] == (0,)
    # the loss is -inf too (a NaN or Inf loss never passes silently), but not the origin
    assert [(f.node, f.phase) for f in found if f.phase == "forward"] == [
        ("LogBackward0", "forward"),
        ("MulBackward0", "forward"),
        ("SumBackward0", "forward"),
    ]
    assert found.index(first) == 0
    assert "LogBackward0 made -inf from 0 at line 3: y = x.log()" in str(first)


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_zero_times_inf(ip, fw):
    body = (
        "x = {fw}.tensor([0.0, 1.0], requires_grad=True)\n"
        "big = {fw}.tensor([1e308, 1.0], dtype={fw}.float64) * 10\n"
        "y = x * big\n"
        "loss = y.sum()\n"
    )
    found = findings(ip, fw, body)
    first = origin(found)
    assert (first.node, first.phase, first.source) == (
        "mul",
        "forward",
        f"big = {fw}.tensor([1e308, 1.0], dtype={fw}.float64) * 10",
    )
    assert first.kinds == ("+inf",) and first.values["inputs"] == [1e308, 10.0]
    zero_inf = next(f for f in found if f.source == "y = x * big")
    assert zero_inf.kinds == ("nan",) and zero_inf.values["inputs"] == [0.0, math.inf]
    assert not zero_inf.origin and not zero_inf.inputs_finite


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_divide_by_zero(ip, fw):
    body = (
        "x = {fw}.tensor([1.0, 2.0], requires_grad=True)\n"
        "d = {fw}.tensor([0.0, 1.0])\n"
        "q = x / d\n"
        "loss = q.sum()\n"
    )
    first = origin(findings(ip, fw, body))
    assert (first.node, first.phase, first.source) == ("DivBackward0", "forward", "q = x / d")
    assert first.kinds == ("+inf",) and first.values["inputs"] == [1.0, 0.0]


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_where_hides_in_forward_the_nan_its_backward_shows(ip, fw):
    body = (
        "x = {fw}.tensor([0.0, 4.0], requires_grad=True)\n"
        "y = {fw}.where(x > 0, x.sqrt(), {fw}.zeros(2))\n"
        "loss = y.sum()\n"
    )
    found = findings(ip, fw, body)
    assert [f for f in found if f.phase == "forward"] == []  # the forward is all finite
    first = origin(found)
    assert (first.node, first.phase, first.source) == (
        "SqrtBackward0",
        "backward",
        f"y = {fw}.where(x > 0, x.sqrt(), {fw}.zeros(2))",
    )
    # where sent 0 to sqrt at x = 0: 0 / (2 * sqrt(0)) is NaN
    assert first.kinds == ("nan",) and first.values["received"] == [0.0]


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_where_at_a_negative_input_starts_in_forward(ip, fw):
    body = (
        "x = {fw}.tensor([-1.0, 4.0], requires_grad=True)\n"
        "y = {fw}.where(x > 0, x.sqrt(), {fw}.zeros(2))\n"
        "loss = y.sum()\n"
    )
    first = origin(findings(ip, fw, body))
    assert (first.node, first.phase, first.kinds) == ("SqrtBackward0", "forward", ("nan",))
    assert first.values["inputs"] == [-1.0]


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_an_inf_typed_in_is_the_first_finding(ip, fw):
    # no value of the cell was made from finite inputs: the first finding is the origin (torch
    # records the tensor's creation, nbgrad the first op that reads it)
    body = "x = {fw}.tensor([-float('inf'), 1.0], requires_grad=True)\nloss = (x * 2).sum()\n"
    found = findings(ip, fw, body)
    assert found[0].origin and found[0].kinds == ("-inf",)
    if fw == "ng":
        assert found[0].node == "MulBackward0" and not found[0].inputs_finite
        assert found[0].values["inputs"] == [-math.inf, 2.0]
    else:
        assert found[0].node == "tensor" and found[0].line == 2


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_the_origin_is_the_first_made_from_finite_inputs_not_the_first_found(ip, fw):
    # an Inf typed in reaches the forward first; the first value made from finite inputs is
    # sqrt's gradient at 0, in the backward
    body = (
        "inf = {fw}.tensor([float('inf')])\n"
        "w = {fw}.tensor([0.0], requires_grad=True)\n"
        "loss = w.sqrt().sum() + (inf * 2).sum() * 0\n"
    )
    found = findings(ip, fw, body)
    assert found[0].phase == "forward" and not found[0].origin and not found[0].inputs_finite
    first = origin(found)
    assert (first.node, first.phase, first.kinds) == ("SqrtBackward0", "backward", ("+inf",))


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_a_module_output_that_overflows_in_exp(ip, fw):
    body = (
        "lin = {fw}.nn.Linear(3, 1)\n"
        "with {fw}.no_grad():\n"
        "    lin.weight.fill_(1.0)\n"
        "    lin.bias.fill_(0.0)\n"
        "x = {fw}.full((2, 3), 400.0)\n"
        "loss = lin(x).exp().sum() * 0\n"
    )
    found = findings(ip, fw, body)
    first = origin(found)
    assert (first.node, first.phase, first.line) == ("ExpBackward0", "forward", 7)
    assert first.values["inputs"] == [1200.0] and first.kinds == ("+inf",)
    # the loss: inf * 0 is NaN
    loss = [f for f in found if f.phase == "forward"][-1]
    assert loss.node == "MulBackward0" and loss.kinds == ("nan",)


def test_nonfinite_kinds():
    a = np.array([1.0, np.nan, np.inf, -np.inf])
    assert nonfinite_kinds(a) == ("nan", "+inf", "-inf")
    assert nonfinite_kinds(np.ones(3)) == () and nonfinite_kinds(np.arange(3)) == ()


def test_large_finite_values_are_not_a_finding():
    # the check's sum overflows on these, the values do not (NOTE [Finite at a sum's cost]):
    # the exact check decides
    import nbgrad as ng

    x = ng.tensor([1e308, 1e308], dtype=ng.float64, requires_grad=True)
    with np.errstate(over="ignore"), record() as rec:
        x * 1.0
    assert find_nonfinite(rec) == []


def test_a_plain_record_block_finds_them_too():
    import nbgrad as ng

    x = ng.tensor([0.0, 1.0], requires_grad=True)
    with record() as rec:
        y = x.log()
        y.sum().backward()
    found = find_nonfinite(rec)
    assert found[0].origin and found[0].node == "LogBackward0" and found[0].phase == "forward"
    assert found[0].source == "y = x.log()"


@pytest.mark.parametrize("n", [2, 16, 17, 5000])
def test_both_infinities_in_one_output_are_found_at_any_size(n):
    # +inf and -inf side by side sum to NaN, a NaN alone to NaN: outputs of up to 16 values
    # are summed as Python floats, larger ones by NumPy (NOTE [Finite at a sum's cost])
    import nbgrad as ng

    x = ng.ones(n, requires_grad=True)
    z = ng.tensor([0.0, -0.0] + [1.0] * (n - 2))
    with np.errstate(divide="ignore", invalid="ignore"), record() as rec:
        y = x / z
        w = y * 0.0  # inf * 0: NaN, from an input already not finite
        (w + 1.0).sum()
    found = find_nonfinite(rec)
    assert found and found[0].origin and found[0].phase == "forward", found
    assert found[0].node == "DivBackward0" and found[0].source == "y = x / z"
    assert set(found[0].kinds) == {"+inf", "-inf"}
    assert [f.node for f in found if f.phase == "forward"][:2] == ["DivBackward0", "MulBackward0"]
