"""Saved outputs are deterministic: a notebook of ``%%autograd`` cells executed by nbclient in
one kernel passes ``pytest --nbval`` (strict: text/plain and image/svg+xml compared exactly)
in another. This also checks NOTE [Live display and saved outputs] in magics.py."""

import os
import subprocess
import sys
from pathlib import Path

import ipykernel  # noqa: F401
import nbclient
import nbformat
import nbval  # noqa: F401

REPO = Path(__file__).resolve().parents[2]

CELLS = [
    "%load_ext nbgrad\nimport nbgrad as ng",
    "%%autograd --backward loss --retain-graph -o s\n"
    "x = ng.tensor([1.0, 2.0], requires_grad=True)\n"
    "w = ng.tensor([0.5, -1.0], requires_grad=True)\n"
    "y = (x * w).tanh()\n"
    "print('inside the cell')\n"
    "loss = y.sum()\n"
    "loss",
    "%%autograd --step --backward out\nout = (x * x).exp().sum()",
    "%%autograd --static\nz = (x + w).sum()",
    "s.hooks",
]


def test_executed_notebook_passes_nbval(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    )
    old = dict(os.environ)
    os.environ.update(env)
    try:
        nbclient.NotebookClient(
            nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
        ).execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    path = tmp_path / "autograd.ipynb"
    nbformat.write(nb, path)
    outputs = [[sorted(o.get("data", {})) for o in c.outputs] for c in nb.cells]
    # the live display was emptied; the final graph and the hook editor carry text and SVG
    assert outputs[1][0] == [] and "image/svg+xml" in outputs[1][2]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "--nbval",
            "--nbval-current-env",
            "-p",
            "no:cacheprovider",
            str(path),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "5 passed" in result.stdout
