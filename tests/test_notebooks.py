"""The tutorial notebooks (notebooks/): what ``pytest --nbval`` cannot check by itself.

nbval compares each stored output with a fresh run (the acceptance command is in the README).
It passes trivially on a notebook that was never executed, does not look for memory addresses
that happen to match, and has no time limit per notebook. These tests add: every notebook is
stored executed, top to bottom, in one kernel; each cell that raises is marked (and only
those); the outputs nbval compares hold no memory address; the graphs are there as SVG; the
sanitizer only touches what it must; each notebook runs in under 60 seconds.

After changing nbgrad in a way that changes what a notebook prints or draws, re-execute it:
``jupyter nbconvert --to notebook --execute --inplace notebooks/NN_name.ipynb``.
"""

from __future__ import annotations

import configparser
import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

NOTEBOOKS_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
SANITIZER = NOTEBOOKS_DIR / "nbval_sanitize.cfg"
IDS = [p.stem for p in NOTEBOOKS]

RAISES = "# NBVAL_RAISES_EXCEPTION"
IGNORE = "# NBVAL_IGNORE_OUTPUT"
# the notebooks that draw a graph, a stepper or a hook editor (02 and 09 print only)
WITH_PICTURES = {"00", "01", "03", "04", "05", "06", "07", "08", "10", "12"}
ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")
# what nbval skips when it compares (and so may vary freely)
NOT_COMPARED = {"application/vnd.jupyter.widget-view+json", "image/png", "image/jpeg"}
TIME_LIMIT_S = 60


def _read(path):
    return nbformat.read(path, as_version=4)


def _code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def _compared_texts(cell):
    """The output texts nbval compares for one cell."""
    for out in cell.outputs:
        if out.output_type == "stream":
            yield out.text
        elif out.output_type == "error":
            yield f"{out.ename}: {out.evalue}"
        else:
            for mime, value in out.get("data", {}).items():
                if mime not in NOT_COMPARED:
                    yield value if isinstance(value, str) else str(value)


def test_the_tutorials_are_there():
    assert [p.name[:2] for p in NOTEBOOKS] == [f"{k:02d}" for k in range(13)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_stored_executed_top_to_bottom_in_one_kernel(path):
    nb = _read(path)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    counts = [c.execution_count for c in _code_cells(nb)]
    assert counts == list(range(1, len(counts) + 1)), f"{path.name}: re-execute it in full"
    assert any(c.outputs for c in _code_cells(nb))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_exactly_the_marked_cells_raise(path):
    for k, cell in enumerate(_code_cells(_read(path))):
        tags = cell.metadata.get("tags", [])
        # a cell magic must come first, so such a cell is marked by its tag alone
        marked = cell.source.startswith(RAISES) or (
            cell.source.startswith("%%") and "raises-exception" in tags
        )
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert marked == bool(errors), f"{path.name} code cell {k}: {cell.source[:60]!r}"
        if marked:
            # nbconvert and JupyterLab's Run All go on past a cell only with the tag
            assert "raises-exception" in cell.metadata.get("tags", []), path.name
            assert len(errors) == 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_compared_outputs_hold_no_memory_address(path):
    for k, cell in enumerate(_code_cells(_read(path))):
        if cell.source.startswith(IGNORE):
            continue
        for text in _compared_texts(cell):
            assert not ADDRESS.search(text), f"{path.name} code cell {k}: {text[:200]!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_graphs_are_stored_as_svg(path):
    svgs = [
        o.data["image/svg+xml"]
        for c in _code_cells(_read(path))
        for o in c.outputs
        if "image/svg+xml" in o.get("data", {})
    ]
    if path.name[:2] in WITH_PICTURES:
        assert svgs, f"{path.name} should show its graphs as still SVG"
    for svg in svgs:
        ET.fromstring(svg)


def test_the_sanitizer_only_replaces_what_varies():
    config = configparser.ConfigParser()
    config.read(SANITIZER)
    assert config.sections(), "no patterns in nbval_sanitize.cfg"
    texts = [
        text
        for path in NOTEBOOKS
        for cell in _code_cells(_read(path))
        for text in _compared_texts(cell)
    ]
    for name in config.sections():
        pattern = re.compile(config[name]["regex"])
        assert "replace" in config[name]
        hits = [t for t in texts if pattern.search(t)]
        # each pattern is there for one line of one notebook, not for whole outputs
        assert 1 <= len(hits) <= 2, (name, len(hits))
        for t in hits:
            assert len(pattern.search(t).group(0)) < 120


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_each_notebook_runs_in_under_a_minute(path):
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = _read(path)
    start = time.perf_counter()
    nbclient.NotebookClient(
        nb,
        timeout=TIME_LIMIT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS_DIR)}},
    ).execute()
    elapsed = time.perf_counter() - start
    assert elapsed < TIME_LIMIT_S, f"{path.name} took {elapsed:.1f} s"
