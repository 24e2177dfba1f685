"""Why a gradient is None, and a module's unused parameters, through ``%%autograd -o s``
(nbgrad/notebook/answers_why.py), for nbgrad's code and PyTorch's alike."""

import pytest
from IPython.utils.capture import capture_output

torch = pytest.importorskip("torch")

FRAMEWORKS = ["ng", "torch"]

# one cell per framework with every cause the issue names; {fw} is the framework's module
CELL = """%%autograd --static -o s
x = {fw}.tensor([1.0, -2.0], requires_grad=True)
w = {fw}.tensor([0.5, 0.5], requires_grad=True)
c = {fw}.tensor([3.0, 4.0])
d = x.detach()
dd = d * 2
dat = x.data
it = {fw}.tensor(x.sum().item())
rt = {fw}.tensor(x.detach().numpy())
with {fw}.no_grad():
    made_no_grad = x * 2
with {fw}.inference_mode():
    made_inference = x * 2
cmp = x > 0
am = x.argmax()
h = x * 3
u = {fw}.tensor([1.0], requires_grad=True)
wc = w.detach() * 2
r = {fw}.tensor([2.0], requires_grad=True)
loss = (h * 2).sum() + (wc * x).sum() + (r * 2).sum()
loss.backward()
r.grad = None
"""

# name -> (cause, the text of the line it names, or None)
EXPECTED = {
    "x": (None, None),
    "c": ("not_requires_grad", "c = {fw}.tensor([3.0, 4.0])"),
    "d": ("detached", "d = x.detach()"),
    "dd": ("detached", "d = x.detach()"),
    "dat": ("detached", "dat = x.data"),
    "it": ("detached", "it = {fw}.tensor(x.sum().item())"),
    "rt": ("detached", "rt = {fw}.tensor(x.detach().numpy())"),
    "made_no_grad": ("no_grad", "made_no_grad = x * 2"),
    "made_inference": ("inference_mode", "made_inference = x * 2"),
    "cmp": ("non_differentiable", "cmp = x > 0"),
    "am": ("non_differentiable", "am = x.argmax()"),
    "h": ("non_leaf", "h = x * 3"),
    "u": ("unreachable", None),
    "w": ("detached", "wc = w.detach() * 2"),
    "r": ("cleared", None),
}


def run(ip, source):
    with capture_output():
        result = ip.run_cell(source)
    assert result.success, result.error_in_exec
    return result


@pytest.fixture(scope="module", params=FRAMEWORKS)
def cell(request, ip):
    fw = request.param
    run(ip, "import torch")
    run(ip, CELL.format(fw=fw))
    return ip, fw


@pytest.mark.parametrize("name", list(EXPECTED))
def test_why_no_grad_names_the_cause_and_the_line(cell, name):
    ip, fw = cell
    run(ip, f"_why = s.why_no_grad({name})")  # as a user asks it, from a cell
    why = ip.user_ns["_why"]
    cause, source = EXPECTED[name]
    assert why.cause == cause, str(why)
    assert why.source == (source.format(fw=fw) if source else None), str(why)
    sentence = str(why)
    assert sentence.startswith(name)
    if source is not None:
        assert sentence.endswith(source.format(fw=fw))


def test_the_sentence_says_the_cause_in_words(cell):
    ip, fw = cell
    run(ip, "_whys = [str(s.why_no_grad(t)) for t in (d, made_no_grad, cmp, it)]")
    detach, no_grad, comparison, item = ip.user_ns["_whys"]
    assert "cut by .detach() at line 5: d = x.detach()" in detach
    assert "under no_grad" in no_grad
    assert "non-differentiable op (gt, with bool values)" in comparison
    assert ".item()" in item


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_an_integer_cast_is_non_differentiable(ip, fw):
    run(ip, f"%%autograd --static -o s\nx = {fw}.ones(2, requires_grad=True)\nk = x.long()\n")
    run(ip, "_why = s.why_no_grad(k)")
    why = ip.user_ns["_why"]
    assert (why.cause, why.source) == ("non_differentiable", "k = x.long()")


MODULE_CELL = """%%autograd --static -o s
{fw}.manual_seed(0)
nn = {fw}.nn
enc, head, spare = nn.Linear(3, 4), nn.Linear(4, 2), nn.Linear(4, 2)
model = nn.ModuleDict({{"enc": enc, "head": head, "spare": spare}})
x = {fw}.randn(5, 3)
with {fw}.no_grad():
    z = enc(x)
loss = head(z).sum()
loss.backward()
"""


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_unused_parameters_of_a_module(ip, fw):
    run(ip, "import torch")
    run(ip, MODULE_CELL.format(fw=fw))
    run(ip, "_unused = s.unused_parameters(model)")
    unused = ip.user_ns["_unused"]
    # the parameters DDP's find_unused_parameters would name: those that got no gradient
    names = [n for n, p in ip.user_ns["model"].named_parameters() if p.grad is None]
    assert (
        [n for n, _ in unused]
        == names
        == [
            "enc.weight",
            "enc.bias",
            "spare.weight",
            "spare.bias",
        ]
    )
    causes = {n: (why.cause, why.source) for n, why in unused}
    assert causes["enc.weight"] == ("no_grad", "z = enc(x)")
    assert causes["spare.bias"] == ("unreachable", None)
