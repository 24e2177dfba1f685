"""Tangents through every row of the op table (NOTE [Forward-mode AD] in
nbgrad/_tensor/tangents.py), on the cases of tests/test_derivatives.py: against central finite
differences in float64, against PyTorch's forward AD where torch has a formula for the op, and
each explicit rule against the generic double-vjp one.
"""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng
import nbgrad.autograd.forward_ad as fwAD
from nbgrad._tensor import tangents
from tests import test_derivatives as _derivatives

_sample_values = _derivatives._sample_values
_requires_grad = _derivatives._requires_grad
_as_tuple = _derivatives._as_tuple

# NumPy's RuntimeWarnings are errors in test_derivatives; here finite differences step over
# kinks the forward values do not, so only the ops' own values are compared
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _directions(sample, values, seed):
    rng = np.random.default_rng(seed + 7)
    return [
        rng.standard_normal(np.shape(v)) if _requires_grad(s) else None
        for s, v in zip(sample, values)
    ]


def _ng_tangents(case, sample, values, directions):
    """The tangents of ``case.fn``'s outputs, by nbgrad's forward AD (None: no tangent)."""
    inputs = _derivatives._ng_inputs(sample, values)
    with fwAD.dual_level():
        duals = [
            x if d is None else fwAD.make_dual(x, ng.tensor(d)) for x, d in zip(inputs, directions)
        ]
        outs = _as_tuple(case.fn(*duals))
        return [
            fwAD.unpack_dual(o).tangent if isinstance(o, ng.Tensor) else None for o in outs
        ], outs


def _finite_differences(case, sample, values, directions, eps=1e-6):
    """(f(x + eps v) - f(x - eps v)) / 2 eps for each floating output (computed in float64;
    an output in float32 takes a step of 1e-3, for its rounding)."""

    def run(sign):
        shifted = [
            v if d is None else np.asarray(v + sign * eps * d) for v, d in zip(values, directions)
        ]
        outs = _as_tuple(case.fn(*_derivatives._ng_inputs(sample, shifted)))
        return [np.asarray(o.detach().numpy(), dtype=np.float64) for o in outs]

    ng.manual_seed(0)
    plus = run(1.0)
    ng.manual_seed(0)
    minus = run(-1.0)
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus)]


def _np(t, like):
    if t is None:
        return np.zeros(tuple(like.shape))
    return np.asarray(t.detach().numpy(), dtype=np.float64)


# rows whose forward draws random numbers: finite differences need the same draws on both
# sides (``manual_seed`` above), and a rule must not draw again (none does: NOTE [Forward-mode
# AD])
FD_PARAMS = [
    p
    for p in _derivatives.DIFF_PARAMS
    if _derivatives.OPS[p.values[0].op].differentiable and p.values[0].gradgrad
]


@pytest.mark.parametrize("case, sample, seed", FD_PARAMS)
def test_tangent_matches_finite_differences(case, sample, seed):
    values = _sample_values(case, sample, seed)
    directions = _directions(sample, values, seed)
    ng.manual_seed(0)
    ts, outs = _ng_tangents(case, sample, values, directions)
    single = any(isinstance(o, ng.Tensor) and o.dtype == ng.float32 for o in outs)
    expected = _finite_differences(case, sample, values, directions, 1e-3 if single else 1e-6)
    kw = case.gradcheck_kw
    atol, rtol = kw.get("atol", 1e-5), kw.get("rtol", 1e-3)
    for k, (t, o, e) in enumerate(zip(ts, outs, expected)):
        if not o.is_floating_point():
            assert t is None
            continue
        got = _np(t, o)
        assert got.shape == e.shape, f"output {k}"
        np.testing.assert_allclose(got, e, atol=atol * 10, rtol=rtol * 10, err_msg=f"output {k}")


@pytest.mark.parametrize("case, sample, seed", FD_PARAMS)
def test_tangent_matches_torch(case, sample, seed):
    torch = pytest.importorskip("torch")
    values = _sample_values(case, sample, seed)
    directions = _directions(sample, values, seed)
    ng.manual_seed(0)
    ts, outs = _ng_tangents(case, sample, values, directions)
    th_in = [
        torch.tensor(v, requires_grad=_requires_grad(s) and v.dtype.kind == "f")
        for s, v in zip(sample, values)
    ]
    try:
        with torch.autograd.forward_ad.dual_level():
            duals = [
                x if d is None else torch.autograd.forward_ad.make_dual(x, torch.tensor(d))
                for x, d in zip(th_in, directions)
            ]
            th_outs = _as_tuple(case.fn(*duals))
            th_ts = [torch.autograd.forward_ad.unpack_dual(o).tangent for o in th_outs]
    except (NotImplementedError, RuntimeError) as e:
        # torch has no forward formula for this op, or one that fails on broadcast inputs
        # (``normal(mean, std)``): finite differences judge it
        if not any(w in str(e) for w in ("forward AD", "forward-mode AD", "forward gradient")):
            raise
        return
    random = any(w in case.op for w in ("bernoulli", "normal", "dropout", "rrelu", "uniform"))
    for k, (t, o, tt) in enumerate(zip(ts, outs, th_ts)):
        if tt is None or not o.is_floating_point() or random:
            continue
        np.testing.assert_allclose(
            _np(t, o), tt.detach().numpy(), atol=1e-6, rtol=1e-5, err_msg=f"output {k}"
        )


# (not on empty inputs, where a mean's tangent is PyTorch's nan by the linear rule and 0 by the
# double vjp, whose gradient of an empty input is empty)
RULE_PARAMS = [
    p
    for p in FD_PARAMS
    if (p.values[0].op in tangents._RULES or p.values[0].op in tangents._LINEAR)
    and not any(isinstance(s, tuple) and 0 in s for s in p.values[1])
]


@pytest.mark.parametrize("case, sample, seed", RULE_PARAMS)
def test_explicit_rules_match_the_double_vjp(case, sample, seed, monkeypatch):
    values = _sample_values(case, sample, seed)
    directions = _directions(sample, values, seed)
    fast, _ = _ng_tangents(case, sample, values, directions)
    monkeypatch.setattr(tangents, "_RULES", {})
    monkeypatch.setattr(tangents, "_LINEAR", frozenset())
    generic, outs = _ng_tangents(case, sample, values, directions)
    for f, g, o in zip(fast, generic, outs):
        if o.is_floating_point():
            np.testing.assert_allclose(_np(f, o), _np(g, o), atol=1e-12, rtol=1e-10)


def test_every_row_with_a_rule_has_a_case():
    rows = set(_derivatives.OPS)
    assert set(tangents._RULES) <= rows
    assert tangents._LINEAR <= rows
    assert {p.values[0].op for p in RULE_PARAMS} == (set(tangents._RULES) | tangents._LINEAR) & {
        p.values[0].op for p in FD_PARAMS
    }
