"""``nbgrad.optim.Muon`` against PyTorch's: 20-step trajectories of the 2-d weights of a small
MLP in float64 in each main configuration (the bfloat16 Newton-Schulz iteration emulated, NOTE
[Muon's bfloat16]), the final state, state-dict resume, defaults and argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng
from nbgrad.optim.muon import _zeropower_via_newtonschulz

from .optim_helpers import check_resume, check_trajectory

torch = pytest.importorskip("torch")

CONFIGS = {
    "default": dict(),
    "lr-wd-momentum": dict(lr=0.02, weight_decay=0.05, momentum=0.9),
    "no-nesterov-adamw-rms": dict(lr=0.01, nesterov=False, adjust_lr_fn="match_rms_adamw"),
    "coefficients-steps-eps": dict(lr=0.01, ns_coefficients=(3.0, -3.2, 1.2), ns_steps=3, eps=1e-5),
}


def maker(kwargs):
    def make(lib, model, extra):
        return lib.optim.Muon([model[0].weight, model[2].weight], **kwargs)

    return make


@pytest.mark.parametrize("name", CONFIGS)
def test_trajectory_and_state_match_torch(name):
    check_trajectory(torch, maker(CONFIGS[name]))


def test_state_dict_resumes_torch_trajectory():
    check_resume(torch, maker(CONFIGS["lr-wd-momentum"]))


@pytest.mark.parametrize("shape", [(8, 4), (3, 8), (5, 5), (1, 6)])
def test_newton_schulz_is_pytorchs_bit_for_bit(shape):
    theirs = torch.optim._muon._zeropower_via_newtonschulz
    rng = np.random.default_rng(sum(shape))
    for _ in range(5):
        g = rng.standard_normal(shape)
        # bits: products of bfloat16 values are exact in float32, and both sides sum them in
        # float32 and round each result once to bfloat16 (NOTE [Muon's bfloat16]): a few-term sum
        # rounds alike in any order but at a rare bfloat16 tie; held with PyTorch's kernels for
        # every CPU (ATEN_CPU_CAPABILITY=default) and OpenBLAS's for older ones
        # (OPENBLAS_CORETYPE=Haswell, Nehalem, Prescott)
        expected = theirs(torch.tensor(g), (3.4445, -4.7750, 2.0315), 5, 1e-7).float().numpy()
        np.testing.assert_array_equal(
            _zeropower_via_newtonschulz(g, (3.4445, -4.7750, 2.0315), 5, 1e-7), expected
        )


def test_defaults_and_errors_match_torch():
    ours = ng.optim.Muon([ng.nn.Parameter(ng.ones(2, 2))])
    theirs = torch.optim.Muon([torch.nn.Parameter(torch.ones(2, 2))])
    assert ours.defaults == theirs.defaults and list(ours.defaults) == list(theirs.defaults)
    for lib in (ng, torch):
        with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
            lib.optim.Muon([lib.nn.Parameter(lib.ones(3))])
        with pytest.raises(ValueError, match="Adjust learning rate function"):
            lib.optim.Muon([lib.nn.Parameter(lib.ones(2, 2))], adjust_lr_fn="other")
