"""The README is true to the repository: what it names exists, nothing it links to lies outside
the repository, and its tutorials command installs what the tutorials import."""

from __future__ import annotations

import ast
import glob
import importlib.metadata
import json
import re
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pip's own copy of the same parser
    from pip._vendor import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
PROSE = FENCE.sub("", README)
LINK = re.compile(r"\]\(([^)\s]+)\)")
# a repository path in backticks: at least one slash (nbgrad/tensor.py, tests/benchmarks/) or a
# file name with an extension of the repository's own files (README.md, pyproject.toml)
PATH = re.compile(r"^\.?[\w*-]+(/[\w.*-]+)+/?$|^[\w-]+\.(py|ipynb|toml|md|cfg|js|css)$")


def _code_words(text):
    for span in re.findall(r"`([^`]+)`", text):
        for word in span.split():
            yield word.strip("'\",;:()")


def _anchor(heading):
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def named_paths(text):
    return sorted({w for w in _code_words(text) if PATH.match(w)})


def test_every_path_the_readme_names_exists():
    paths = named_paths(PROSE)
    assert "nbgrad/backend.py" in paths and "tests/benchmarks/" in paths  # the check sees them
    # a bare file name (``engine.py``, next to its folder) exists somewhere in the repository
    missing = [
        p for p in paths if not glob.glob(str(ROOT / p)) and ("/" in p or not list(ROOT.rglob(p)))
    ]
    assert not missing, f"the README names paths that do not exist: {missing}"


def test_every_link_stays_in_the_repository_and_leads_somewhere():
    anchors = {_anchor(h) for h in re.findall(r"^#+ (.+)$", PROSE, re.M)}
    links = LINK.findall(README)
    assert links
    for link in links:
        assert "://" not in link and not link.startswith(("/", "..")), link
        path, _, anchor = link.partition("#")
        if path:
            target = (ROOT / path).resolve()
            assert target.is_relative_to(ROOT) and target.exists(), link
        else:
            assert anchor in anchors, f"no heading for {link}"


def test_nothing_points_outside_the_repository():
    for word in _code_words(PROSE):
        assert not word.startswith(("../", "/", "~")), word
    assert "../" not in README and "shared/" not in README and "://" not in README


def test_the_readme_holds_the_public_contract():
    for heading in ("## What nbgrad covers of PyTorch", "### What it does not cover"):
        assert heading in README
    assert "## The notebook layer" in README and "--backward EXPR" in PROSE


# -- the tutorials command installs what the tutorials import ----------------------------------


def _tutorials_command():
    block = README.split("<!-- tutorials-command -->", 1)[1]
    return re.search(r"```bash\n(.*?)```", block, re.S).group(1)


def _requirement_names(reqs):
    return {re.split(r"[\s<>=!~\[;]", r, maxsplit=1)[0].lower().replace("_", "-") for r in reqs}


def _imports(source):
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    tree = ast.parse("\n".join(lines))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module.split(".")[0]


def test_the_tutorials_command_installs_what_the_tutorials_import():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    chosen = re.search(r"pip install -q -e '\.\[([\w,]+)\]'", _tutorials_command()).group(1)
    installed = _requirement_names(project["dependencies"])
    for extra in chosen.split(","):
        assert extra in extras, (
            f"the tutorials command installs an extra that does not exist: {extra}"
        )
        installed |= _requirement_names(extras[extra])
    distributions = importlib.metadata.packages_distributions()
    needed = {}
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            if cell["cell_type"] == "code":
                for module in _imports("".join(cell["source"])):
                    if module not in sys.stdlib_module_names and module != "nbgrad":
                        needed.setdefault(module, nb.name)
    assert "torch" in needed  # notebook 10's
    for module, where in needed.items():
        dists = {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
        assert dists & installed, f"{where} imports {module}, which the tutorials command omits"


def test_the_extras_the_notebooks_name_exist():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = extras["optional-dependencies"]
    named = []
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            text = "".join(cell["source"])
            for group in re.findall(r"pip install[^`\n]*?\[([\w,]+)\]", text):
                named += [(nb.name, e) for e in group.split(",")]
    assert named
    assert [(where, e) for where, e in named if e not in extras] == []


# -- the Layout section is the tree ------------------------------------------------------------


def _layout_section():
    return PROSE.split("## Layout", 1)[1].split("\n## ", 1)[0]


def test_the_layout_names_every_package_and_top_level_module():
    """Every package of nbgrad (a folder with ``__init__.py``) and every module at the top of the
    package is named in the README's Layout section, by its path; so a reader who looks for a
    file's job finds it there."""
    layout = _layout_section()
    named = set(named_paths(layout))
    package = ROOT / "nbgrad"
    wanted = {
        f"{p.parent.relative_to(ROOT)}/"
        for p in package.rglob("__init__.py")
        if p.parent != package
    }
    wanted |= {f"nbgrad/{p.name}" for p in package.glob("*.py") if p.name != "__init__.py"}
    missing = sorted(
        w for w in wanted if w not in named and w.rstrip("/") not in named and w + "*" not in named
    )
    assert not missing, f"the README's Layout section does not say what these hold: {missing}"
    for top in ("widgets/", "notebooks/", "tests/", "tests/benchmarks/"):
        assert f"`{top}`" in layout, top
