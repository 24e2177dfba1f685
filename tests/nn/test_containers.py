"""``ModuleDict``, ``ParameterList`` and ``ParameterDict`` against PyTorch's."""

from __future__ import annotations

import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")


def _norm(text):
    return text.replace("torch.", "lib.").replace("nbgrad.", "lib.")


def _containers(lib):
    d = lib.nn.ModuleDict({"a": lib.nn.Linear(2, 2), "b": lib.nn.ReLU()})
    d["c"] = lib.nn.Tanh()
    d.update([("e", lib.nn.Identity())])
    popped = type(d.pop("b")).__name__
    pl = lib.nn.ParameterList([lib.nn.Parameter(lib.ones(2)), lib.zeros(3)])
    pl.append(lib.ones(1, 2))
    pl += [lib.ones(4)]
    pd = lib.nn.ParameterDict({"w": lib.ones(2, 3)})
    pd["b"] = lib.zeros(3)
    m = lib.nn.Module()
    m.layers, m.plist, m.pdict = d, pl, pd
    return {
        "dict": (list(d.keys()), len(d), "a" in d, "b" in d, popped),
        "plist": (len(pl), type(pl[1]).__name__, tuple(pl[-1].shape), len(pl[1:])),
        "pdict": (list(pd.keys()), len(pd), "w" in pd, type(pd["b"]).__name__),
        "names": [n for n, _ in m.named_parameters()],
        "state": list(m.state_dict()),
        "repr": _norm(repr(m)),
    }


def test_containers_like_pytorch():
    assert _containers(ng) == _containers(torch)


def test_parameters_in_containers_train():
    pl = ng.nn.ParameterList([ng.ones(2), ng.ones(2)])
    opt = ng.optim.SGD(pl.parameters(), lr=0.5)
    (pl[0] * pl[1] * 3).sum().backward()
    opt.step()
    # exact: 1 - 0.5 * 3
    assert pl[0].tolist() == [-0.5, -0.5] and pl[1].tolist() == [-0.5, -0.5]


def test_bad_updates_raise_like_pytorch():
    for lib in (ng, torch):
        with pytest.raises(TypeError):
            lib.nn.ModuleDict(3)
        with pytest.raises(ValueError):
            lib.nn.ModuleDict([("a", lib.nn.ReLU(), 1)])
        with pytest.raises(IndexError):
            lib.nn.ParameterList([lib.ones(1)])[3]
