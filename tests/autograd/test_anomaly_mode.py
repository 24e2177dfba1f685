"""Anomaly mode against PyTorch: the warning that shows the forward traceback of the node whose
backward failed, pointing at the user's line."""

from __future__ import annotations

import warnings

import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")


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
