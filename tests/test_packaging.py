"""The extras in pyproject.toml install what the README and the error messages promise."""

import re
from pathlib import Path

import pytest
import tomllib

import nbgrad as ng
from nbgrad import backend

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


@pytest.mark.parametrize(
    "extra, wheel, first",
    # CuPy publishes one wheel per CUDA major version; 14.0 is the first with CUDA 13 wheels
    [("cuda12", "cupy-cuda12x", 13), ("cuda13", "cupy-cuda13x", 14), ("cuda", "cupy-cuda12x", 13)],
)
def test_cuda_extras_name_the_cupy_wheel_of_their_cuda_version(extra, wheel, first):
    (req,) = EXTRAS[extra]
    m = re.fullmatch(r"([a-z0-9-]+)>=(\d+)", req)
    assert m, f"{extra}: {req!r} is not NAME>=MAJOR"
    assert m.group(1) == wheel
    assert int(m.group(2)) >= first


def test_the_missing_cuda_error_names_both_extras():
    if ng.cuda.is_available():
        pytest.skip("a GPU and CuPy are present here: the missing-CUDA error cannot be raised")
    with pytest.raises(RuntimeError, match="CUDA is not available") as info:
        backend._check_available(ng.device("cuda:0"))
    for extra in ("cuda12", "cuda13"):
        assert f"nbgrad[{extra}]" in str(info.value)
        assert extra in EXTRAS


def test_the_readme_says_which_cuda_extra_to_install():
    readme = (ROOT / "README.md").read_text()
    for extra in ("cuda12", "cuda13"):
        assert f".[{extra}]" in readme
