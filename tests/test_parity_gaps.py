"""Behaviours where nbgrad once differed from PyTorch, each run the same way in both libraries
(torch as the oracle): the bare ``@no_grad`` decorator, inference tensors, the overloads of the
creation functions, anomaly mode's forward traceback, ``transpose`` of a 0-d tensor, and
in-place ops on expanded tensors."""

from __future__ import annotations

import warnings

import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

LIBS = [pytest.param(ng, id="nbgrad"), pytest.param(torch, id="torch")]


def outcome(fn, lib):
    """``("ok", value)`` or ``(exception type name, message)``, comparable across libraries."""
    try:
        return "ok", fn(lib)
    except Exception as e:  # noqa: BLE001 - the outcome itself is what is compared
        return type(e).__name__, str(e).replace("nbgrad", "torch")


def same(fn):
    ours, theirs = outcome(fn, ng), outcome(fn, torch)
    # exactly: the programs here compute whole numbers and halves, exact in binary
    assert ours == theirs
    return ours


# ---- @no_grad without parentheses ----------------------------------------------------------
def test_bare_no_grad_decorator():
    def run(lib):
        @lib.no_grad
        def double(x):
            return x * 2

        @lib.enable_grad
        def triple(x):
            return x * 3

        x = lib.ones(2, requires_grad=True)
        with lib.no_grad():
            inner = triple(x)
        return double(x).requires_grad, inner.requires_grad, double.__name__

    assert same(run) == ("ok", (False, True, "double"))


# ---- inference tensors -------------------------------------------------------------------
def _made_in_inference_mode(lib):
    normal = lib.ones(2, 3)
    with lib.inference_mode():
        made = lib.ones(2, 3)
        view_of_made = made[0]
        view_of_normal = normal[0]
        result = normal * 2
        with lib.inference_mode(False):
            inner = lib.ones(2)
    return normal, made, view_of_made, view_of_normal, result, inner


def test_which_tensors_are_inference_tensors():
    def run(lib):
        normal, made, view_of_made, view_of_normal, result, inner = _made_in_inference_mode(lib)
        outside = [made.detach(), made.view(3, 2), made * 2, made.clone(), normal.detach()]
        return [t.is_inference() for t in (normal, made, view_of_made, view_of_normal, result)], [
            inner.is_inference(),
            *(t.is_inference() for t in outside),
        ]

    assert same(run)[0] == "ok"


@pytest.mark.parametrize(
    "use",
    [
        lambda lib, w, t: (w * t).sum(),  # MulBackward0 saves t for w's gradient
        lambda lib, w, t: (t * w).sum(),
        lambda lib, w, t: w.exp() * t,
        lambda lib, w, t: t.mm(w.t()),
        lambda lib, w, t: (w + t).sum(),  # AddBackward0 saves nothing: allowed
        lambda lib, w, t: lib.cat([w, t]).sum(),
    ],
)
def test_an_inference_tensor_cannot_be_saved_for_backward(use):
    def run(lib):
        with lib.inference_mode():
            t = lib.ones(2, 3)
        w = lib.ones(2, 3, requires_grad=True)
        out = use(lib, w, t)
        return out.grad_fn.name()

    same(run)


@pytest.mark.parametrize(
    "change",
    [
        lambda lib, t: t.add_(1),
        lambda lib, t: t.mul_(2),
        lambda lib, t: t.zero_(),
        lambda lib, t: t.copy_(lib.zeros(2, 3)),
        lambda lib, t: t[0].fill_(3.0),
        lambda lib, t: t.__setitem__(0, 1.0),
        lambda lib, t: t.requires_grad_(),
        lambda lib, t: t._version,
        lambda lib, t: lib.nn.Parameter(t),
    ],
)
def test_an_inference_tensor_outside_the_mode(change):
    def run(lib):
        with lib.inference_mode():
            t = lib.ones(2, 3)
        change(lib, t)
        return t.tolist()

    same(run)


@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize(
    "call",
    [
        lambda lib, s, c: lib.mul(s, s, out=c),
        lambda lib, s, c: lib.add(s, 1, out=c),
        lambda lib, s, c: lib.mul(s.detach(), 2, out=c),
    ],
)
def test_an_inference_tensor_as_out_outside_the_mode(call, requires_grad):
    """``out=`` an inference tensor outside inference mode: PyTorch's error for an in-place
    update of one (after the error for an input that requires grad), with what PyTorch leaves
    in ``out``."""

    def run(lib):
        s = lib.full((1, 2, 3), 2.0, requires_grad=requires_grad)
        with lib.inference_mode():
            c = lib.ones(1, 2, 3)
        with pytest.raises(RuntimeError) as info:
            call(lib, s, c)
        return str(info.value), c.tolist()

    assert same(run)[0] == "ok"


def test_inside_inference_mode_an_inference_tensor_may_change():
    def run(lib):
        with lib.inference_mode():
            t = lib.ones(2, 3)
            t.add_(1)
            t[0].mul_(3)
            t.requires_grad_()
        return t.tolist(), t.requires_grad

    assert same(run)[0] == "ok"


# ---- creation functions: their overloads -------------------------------------------------
CREATION = [
    "L.zeros(2, 3)",
    "L.zeros((2, 3))",
    "L.zeros([2, 3])",
    "L.zeros(size=(2, 3))",
    "L.zeros(L.Size([2, 3]))",
    "L.zeros(())",
    "L.ones(size=[2])",
    "L.empty(size=(2,)).shape",
    "L.empty(2, 3).shape",
    "L.rand(size=(2,)).shape",
    "L.randn(size=(2, 1)).shape",
    "L.rand(2, dtype=L.float64).dtype",
    "L.randint(5, (3,)).shape",
    "L.randint(1, 5, (3,)).shape",
    "L.randint(5, size=(3,)).shape",
    "L.randint(1, 5, size=(3,)).shape",
    "L.randint(low=1, high=5, size=(3,)).shape",
    "L.randint(high=5, size=(3,)).shape",
    "L.randint(5, [2, 2]).dtype",
    "L.randint(2, 5, L.Size([2]), dtype=L.float32).dtype",
    "L.randint(3, (2,)).min() >= 0",
    "L.randint(5, 3, (2,))",
    "L.arange(5)",
    "L.arange(5.0)",
    "L.arange(1, 5)",
    "L.arange(1, 5, 2)",
    "L.arange(end=5)",
    "L.arange(start=1, end=5)",
    "L.arange(0, 1, 0.25)",
    "L.linspace(0, 1, steps=5)",
    "L.linspace(start=0, end=1, steps=3)",
    "L.full((2,), True)",
    "L.full((2,), 3)",
    "L.full(size=(2,), fill_value=2.5)",
    "L.eye(n=2, m=3)",
    "L.full_like(L.ones(2), 7)",
    "L.zeros_like(L.ones(2, dtype=L.int64))",
    "L.rand_like(L.ones(2, dtype=L.float64)).dtype",
    "L.randn_like(L.ones(2, 3)).shape",
    "L.zeros(2, sizes=3)",
]


def _plain(value):
    if hasattr(value, "tolist") and hasattr(value, "dtype"):
        return value.tolist(), str(value.dtype).rsplit(".", 1)[-1]
    if isinstance(value, tuple):  # a Size
        return tuple(value)
    return str(value).rsplit(".", 1)[-1]


@pytest.mark.parametrize("expr", CREATION)
def test_creation_overloads(expr):
    same(lambda L: _plain(eval(expr)))


# ---- anomaly mode: the forward traceback of the node whose backward failed ----------------
def _failing_backward(lib):
    class Fails(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            raise ValueError("this backward fails")

    x = lib.ones(2, requires_grad=True)
    return Fails.apply(x)  # the user's line


def _modified_in_place(lib):
    x = lib.ones(2, requires_grad=True)
    y = x.exp()  # the user's line
    y.add_(1)
    return y


@pytest.mark.parametrize("make", [_failing_backward, _modified_in_place])
def test_anomaly_mode_shows_the_forward_traceback(make):
    reports = {}
    for lib in (ng, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with lib.autograd.detect_anomaly():
                out = make(lib)
                with pytest.raises(Exception) as info:
                    out.sum().backward()
        messages = [str(w.message) for w in caught if "Error detected in" in str(w.message)]
        assert len(messages) == 1
        reports[lib.__name__] = (type(info.value), str(info.value), messages[0])
    (ours_type, ours_error, ours), (their_type, their_error, theirs) = reports.values()
    assert ours_type is their_type
    if "Hint:" in their_error:  # the hint of anomaly mode, which points at the traceback
        assert ours_error.split("Hint:")[1] == their_error.split("Hint:")[1]
    # the node's name, then the traceback, with the user's line that made the node
    assert ours.split(".")[0] == theirs.split(".")[0]
    user_line = "# the user's line"
    assert user_line in theirs and user_line in ours
    assert f'File "{__file__}"' in ours


# ---- transpose and swapaxes of a 0-d tensor ------------------------------------------------
@pytest.mark.parametrize("dims", [(0, 0), (0, -1), (-1, -1), (0, 1), (1, 0)])
@pytest.mark.parametrize("name", ["transpose", "swapaxes", "swapdims"])
def test_transpose_of_a_0d_tensor(name, dims):
    def run(lib):
        x = lib.tensor(2.5, requires_grad=True)
        y = getattr(x, name)(*dims)
        (g,) = lib.autograd.grad(y * 3, x)
        return y.item(), y.shape == (), y.grad_fn.name(), g.item(), y._base is x

    same(run)
    same(lambda lib: getattr(lib, name)(lib.tensor(1.0), *dims).item())


# ---- in-place ops on expanded tensors -----------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.ones(3, 4).expand(3, 4),  # no stride 0: allowed
        lambda lib: lib.ones(3, 4).expand(-1, 4),
        lambda lib: lib.ones(2, 1, 4).expand(2, 1, 4),
        lambda lib: lib.ones(1, 4).expand(3, 4),  # a real overlap: PyTorch's error
        lambda lib: lib.ones(4).expand(3, 4),
        lambda lib: lib.ones(3, 1).expand(3, 4),
        lambda lib: lib.ones(1, 4).expand(1, 4),
        lambda lib: lib.ones(1).expand(1),
        lambda lib: lib.ones(()).expand(2),
    ],
)
@pytest.mark.parametrize(
    "change", [lambda t: t.add_(1), lambda t: t.mul_(2), lambda t: t.zero_(), lambda t: t.fill_(3)]
)
def test_in_place_on_an_expanded_tensor(make, change):
    def run(lib):
        t = make(lib)
        change(t)
        return t.tolist()

    same(run)
