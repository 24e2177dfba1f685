"""The mutation catalogue (tests/mutation.py) stays applicable: every mutant's fragment is found
in its file exactly as it says, and every mutated file has tests to run. Code that moves
between files must take its mutants along, or the catalogue would silently test nothing."""

import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _catalogue():
    spec = importlib.util.spec_from_file_location(
        "mutation", os.path.join(ROOT, "tests", "mutation.py")
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules["mutation"] = mod
    spec.loader.exec_module(mod)
    return mod


MUT = _catalogue()


@pytest.mark.parametrize("mutant", MUT.MUTANTS, ids=lambda mu: mu.name)
def test_mutant_applies(mutant):
    with open(os.path.join(ROOT, mutant.file)) as f:
        text = f.read()
    assert MUT.apply(text, mutant) != text
    assert mutant.file in MUT.TESTS
