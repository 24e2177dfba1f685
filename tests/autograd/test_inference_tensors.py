"""Inference tensors against PyTorch: which tensors are inference tensors, that one cannot be
saved for backward, nor changed (or written as ``out=``) outside inference mode, and may change
inside it."""

from __future__ import annotations

import pytest

from tests.torch_oracle import same

torch = pytest.importorskip("torch")


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
