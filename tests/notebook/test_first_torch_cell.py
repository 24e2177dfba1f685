"""The first ``%%autograd`` cell that uses torch imports it (NOTE [A cell that imports torch] in
magics.py), nearly all of that cell's time: it says so first, in a fresh process."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import sys
    from IPython.testing.globalipapp import get_ipython
    from IPython.utils.capture import capture_output

    ip = get_ipython()
    ip.run_line_magic("load_ext", "nbgrad")
    assert "torch" not in sys.modules
    cell = (
        "%%autograd --backward loss\\n"
        "import torch\\n"
        "print('the cell runs')\\n"
        "loss = (torch.ones(2, requires_grad=True) * 2).sum()\\n"
    )
    for _ in range(2):
        with capture_output() as cap:
            assert ip.run_cell(cell).success
        print(repr(cap.stdout))
    """
)


def test_the_first_torch_cell_says_it_imports_torch():
    pytest.importorskip("torch")
    from nbgrad.notebook.magics import IMPORTING_TORCH

    out = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.strip().splitlines()
    # the line comes before anything the cell prints, and only the first time
    assert first == repr(IMPORTING_TORCH + "\n" + "the cell runs\n")
    assert second == repr("the cell runs\n")
