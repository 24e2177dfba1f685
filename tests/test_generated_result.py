"""The generated forward result of a row (``op.result``, NOTE [Generated forward result] in
``nbgrad/_tensor/dispatch.py``) does what ``_wrap`` then ``_record`` do (``_generic_result``),
field by field, and its source for ``neg`` is the one the NOTE shows."""

import inspect

import numpy as np
import pytest

import nbgrad as ng
from nbgrad._graph.saved_tensor import SavedTensor
from nbgrad._tensor import dispatch

_MISSING = object()


def _slots(cls):
    return [
        s
        for c in cls.__mro__
        for s in getattr(c, "__slots__", ())
        if s not in ("__weakref__", "__dict__")
    ]


def _fields(obj):
    return {s: getattr(obj, s, _MISSING) for s in _slots(type(obj))}


def _same_value(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return type(a) is type(b) and a.shape == b.shape and np.array_equal(a, b)
    if isinstance(a, SavedTensor) or isinstance(b, SavedTensor):
        return type(a) is type(b) and _fields(a).keys() == _fields(b).keys()
    if isinstance(a, (ng.Tensor, ng.autograd.graph.Node)):
        return a is b  # an input, or the next node: the same object both ways
    return a == b


def _assert_same(generated, generic):
    assert type(generated) is type(generic)
    ours, theirs = _fields(generated), _fields(generic)
    for name, value in theirs.items():
        if name in ("_data", "grad_fn", "_sequence_nr_"):
            continue
        assert _same_value(ours[name], value), name
    assert _same_value(generated._data, generic._data)
    if generic.grad_fn is None:
        assert generated.grad_fn is None
        return
    node, other = generated.grad_fn, generic.grad_fn
    assert type(node) is type(other)
    ours, theirs = _fields(node), _fields(other)
    assert ours.keys() == theirs.keys()
    for name, value in theirs.items():
        if name != "_sequence_nr_":
            assert _same_value(ours[name], value), f"{type(node).__name__}.{name}"


def _captured(make):
    """The arguments ``op.result`` got when ``make()`` ran one op (the row, and a call)."""
    make()  # (the row's result is generated on first use)
    calls = []
    originals = {}

    def watch(op):
        def result(args, attrs, out, requires_grad, t0):
            calls.append((op, args, attrs, out, requires_grad))
            return originals[op.name](args, attrs, out, requires_grad, t0)

        return result

    for name, op in dispatch.OPS.items():
        if "result" in op.__dict__ and callable(op.result):
            originals[name] = op.result
            op.result = watch(op)
    try:
        make()
    finally:
        for name, fn in originals.items():
            dispatch.OPS[name].result = fn
    assert calls, "the op took no op.result"
    return calls[-1]


def _x(requires_grad=True):
    return ng.tensor([0.5, -1.0, 2.0], requires_grad=requires_grad)


CASES = {
    "neg": lambda x, y: -x,  # one input, nothing saved
    "exp": lambda x, y: x.exp(),  # saves its result
    "mul by a number": lambda x, y: x * 3.0,  # saves the number
    "mul of two tensors": lambda x, y: x * y,  # saves both inputs
    "add of two tensors": lambda x, y: x + y,
    "sub of a non-leaf": lambda x, y: (x * 2.0) - y,
    "an input that is output 1 of its node": lambda x, y: x.max(0)[1].float() + x.sum(),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("requires_grad", [True, False])
def test_the_generated_result_is_wrap_then_record(case, requires_grad):
    x, y = _x(requires_grad), _x(False) * 2.0
    op, args, attrs, out, rg = _captured(lambda: CASES[case](x, y))
    assert op.result_source is not None  # the row is served by a generated result
    generated = op.result(args, attrs, out.copy(), rg, 0.0)
    generic = dispatch._generic_result(op, args, attrs, out.copy(), rg, 0.0)
    _assert_same(generated, generic)
    if requires_grad:  # and backward through either gives the same gradient
        (ga,) = ng.autograd.grad(generated.sum(), x, retain_graph=True, allow_unused=True)
        (gb,) = ng.autograd.grad(generic.sum(), x, retain_graph=True, allow_unused=True)
        assert (ga is None) == (gb is None)
        if ga is not None:
            np.testing.assert_array_equal(ga.numpy(), gb.numpy())


def _note_source():
    lines = inspect.getsource(dispatch).splitlines()
    start = lines.index("# --- generated source of neg ---") + 1
    end = lines.index("# --- end ---", start)
    return "".join(
        line[len("#     ") :] + "\n" if line != "#" else "\n" for line in lines[start:end]
    )


def test_the_note_shows_the_source_generated_for_neg():
    -_x()  # (the source is generated on first use)
    assert dispatch.OPS["neg"].result_source == _note_source()
