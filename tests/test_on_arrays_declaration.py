"""A row's ``on_arrays=True`` (NOTE [Backward on arrays] in nbgrad/_graph/table_node.py) says
its formulas run on NumPy arrays as on Tensors: the declaration is checked when the node classes
are built at import, and it says what tracing the formulas finds (NOTE [Formulas traced on
probes] in nbgrad/_graph/array_formulas.py)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

import nbgrad  # noqa: F401
from nbgrad._graph.array_formulas import runs_on_arrays
from nbgrad._graph.table_node import _build_node_class
from nbgrad.derivatives import OPS
from nbgrad.derivatives.opinfo import OpInfo
from nbgrad.derivatives.pointwise import tanh_backward


def _row(on_arrays, **formulas):
    return OpInfo("probe_row", "ProbeRowBackward0", "self", lambda xp, self: self,
                  on_arrays=on_arrays, **formulas)  # fmt: skip


@pytest.mark.parametrize(
    "formula, what",
    [
        (lambda grad, result: -0.5 * grad * result**3, "'\\*\\*'"),
        (lambda grad, self: grad * self.cos(), "'cos'"),
        (lambda grad, self: grad @ self, "@"),
        (lambda grad, self: grad * abs(self), "abs"),
        (lambda grad, self: grad * OPS, "'OPS'"),
        (lambda grad, self: grad if self == 0 else grad.sum(), "'sum'"),  # the second branch
    ],
)
def test_a_false_declaration_fails_with_a_clear_message(formula, what):
    with pytest.raises(TypeError, match=f"row 'probe_row' declares on_arrays=True.*{what}"):
        _build_node_class(_row(True, self=formula))


def test_a_true_declaration_builds_the_array_path():
    formula = lambda grad, self: grad * tanh_backward(grad, self) if self > 0 else -grad  # noqa: E731
    node_class = _build_node_class(_row(True, self=formula))
    assert "NOTE [Backward on arrays]" in node_class._apply_source
    undeclared = _build_node_class(_row(False, self=formula))
    assert "NOTE [Backward on arrays]" not in undeclared._apply_source


def test_the_declarations_say_what_tracing_finds():
    traced = {
        name
        for name, row in OPS.items()
        if row.differentiable and all(runs_on_arrays(f) for f in row.formulas.values())
    }
    declared = {name for name, row in OPS.items() if row.on_arrays}
    assert declared == traced


# run before nbgrad is imported: the row is added to a family's ``op`` calls, as if written there
_PLANTED = """
import importlib.abc, importlib.util, sys

class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "nbgrad.derivatives.opinfo":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            module.op("probe_row", "ProbeRowBackward0", "self", lambda xp, self: self,
                      on_arrays=True, self=lambda grad, self: grad ** 2)

        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, Finder())
"""


def test_a_false_declaration_fails_the_import(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(_PLANTED)
    root = pathlib.Path(__file__).parents[1]
    env = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{root}"}
    run = subprocess.run(
        [sys.executable, "-c", "import nbgrad"], env=env, capture_output=True, text=True, cwd=root
    )
    assert run.returncode != 0
    assert "TypeError: op table row 'probe_row' declares on_arrays=True" in run.stderr
