"""``nbgrad.nn.utils`` (gradient clipping) against ``torch.nn.utils``, on the same gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")


def _model_with_grads(lib, scale):
    """A 3-4-2 MLP (float32) with fixed weights and the gradients of a fixed loss."""
    rng = np.random.default_rng(11)
    w1, b1 = rng.standard_normal((4, 3)), rng.standard_normal(4)
    w2, b2 = rng.standard_normal((2, 4)), rng.standard_normal(2)
    params = [lib.tensor(a.astype(np.float32), requires_grad=True) for a in (w1, b1, w2, b2)]
    x = lib.tensor(rng.standard_normal((5, 3)).astype(np.float32))
    h = (x @ params[0].t() + params[1]).tanh()
    ((h @ params[2].t() + params[3]) ** 2 * scale).sum().backward()
    return params


@pytest.mark.parametrize("norm_type", [2.0, 1.0, "inf", 0.5])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])  # clipping, and not
def test_clip_grad_norm_matches_pytorch(norm_type, max_norm):
    out = {}
    for lib in (torch, ng):
        params = _model_with_grads(lib, 3.0)
        total = lib.nn.utils.clip_grad_norm_(params, max_norm, norm_type=norm_type)
        out[lib.__name__] = (
            total.item(),
            str(total.dtype).split(".")[-1],
            [p.grad.numpy().copy() for p in params],
            [p.grad._version for p in params],
        )
    ours, theirs = out["nbgrad"], out["torch"]
    assert ours[0] == pytest.approx(theirs[0], rel=1e-5) and ours[1] == theirs[1]
    for a, b in zip(ours[2], theirs[2]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert ours[3] == theirs[3]  # scaled in place, even when the scale is 1
    if max_norm < ours[0]:
        grads = np.concatenate([g.ravel() for g in ours[2]]).astype(np.float64)
        order = math.inf if norm_type == "inf" else norm_type
        assert np.linalg.norm(grads, order) == pytest.approx(max_norm, rel=1e-4)


def test_clip_grad_norm_edge_cases_match_pytorch():
    for lib in (torch, ng):
        w = lib.tensor([3.0, 4.0], requires_grad=True)
        assert lib.nn.utils.clip_grad_norm_([w], 1.0).item() == 0.0  # no gradient yet
        (w * w).sum().backward()
        assert lib.nn.utils.clip_grad_norm_(w, 5.0).item() == pytest.approx(10.0)  # one tensor
        w.grad[0] = math.nan
        with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
            lib.nn.utils.clip_grad_norm_([w], 1.0, error_if_nonfinite=True)
        assert math.isnan(lib.nn.utils.clip_grad_norm_([w], 1.0).item())  # scaled by nan


def test_clip_grad_value_matches_pytorch():
    out = {}
    for lib in (torch, ng):
        params = _model_with_grads(lib, 1.0)
        assert lib.nn.utils.clip_grad_value_(params, 0.25) is None
        out[lib.__name__] = [p.grad.numpy().copy() for p in params]
    for a, b in zip(out["nbgrad"], out["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
        assert np.abs(a).max() <= 0.25
