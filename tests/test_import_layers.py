"""The layers of nbgrad, as the package docstring draws them, hold in the imports: each module
imports, at module level, only from its own layer or the layers below it (a call that must go
up goes through the root package at call time, ``nbgrad.autograd.backward``)."""

import ast
import os

import pytest

import nbgrad

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "nbgrad")

# bottom up; a module belongs to the first entry that is its name or a package above it
LAYERS = [
    ("nbgrad.backend", "nbgrad.dtypes", "nbgrad.return_types", "nbgrad._testing"),
    ("nbgrad._graph",),
    (
        "nbgrad._tensor",
        "nbgrad.tensor",
        "nbgrad.cuda",
        "nbgrad._functions",
        "nbgrad.functional",
    ),
    ("nbgrad.kernels", "nbgrad.derivatives"),
    ("nbgrad.autograd",),
    ("nbgrad.nn", "nbgrad.optim", "nbgrad.serialization", "nbgrad.utils", "nbgrad.profiler"),
    ("nbgrad.notebook",),
]


def layer_of(module):
    for i, names in enumerate(LAYERS):
        if any(module == n or module.startswith(n + ".") for n in names):
            return i
    return None


def modules():
    for dirpath, _, files in os.walk(PKG):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                yield (rel[: -len(".__init__")] if rel.endswith(".__init__") else rel), path


def module_level_imports(module, path):
    """(line, imported module) for each import of an nbgrad module outside functions."""
    tree = ast.parse(open(path).read())
    is_pkg = path.endswith("__init__.py")
    stack = list(tree.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(n, ast.Import):
            for a in n.names:
                yield n.lineno, a.name
        elif isinstance(n, ast.ImportFrom):
            if n.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[: len(base) - (n.level - 1)]
                target = ".".join(base + ([n.module] if n.module else []))
            else:
                target = n.module or ""
            for a in n.names:  # ``from pkg import sub`` imports the submodule
                sub = f"{target}.{a.name}"
                yield n.lineno, sub if layer_of(sub) is not None else target
        stack.extend(ast.iter_child_nodes(n))


ALL = sorted(modules())


def test_every_module_has_a_layer():
    assert [m for m, _ in ALL if m != "nbgrad" and layer_of(m) is None] == []


@pytest.mark.parametrize("module, path", ALL, ids=[m for m, _ in ALL])
def test_imports_go_down(module, path):
    if module == "nbgrad":  # the root package is the facade over every layer
        return
    mine = layer_of(module)
    upward = [
        f"line {line}: {target} (layer {layer_of(target)})"
        for line, target in module_level_imports(module, path)
        if target.startswith("nbgrad.") and layer_of(target) is not None and layer_of(target) > mine
    ]
    assert upward == [], f"{module} (layer {mine}) imports upward"


def test_the_docstring_draws_the_same_layers():
    doc = nbgrad.__doc__
    for names in LAYERS:
        for name in names:
            short = name.removeprefix("nbgrad.")
            assert short in doc, f"{short} is missing from nbgrad's layer picture"


def test_the_graph_layer_names_no_module_as_the_public_autograd_does():
    """A private graph module named as a public one (``_graph/graph.py`` beside
    ``autograd/graph.py``) leaves a reader asking which one holds what: each is named by its
    job."""

    def stems(folder):
        return {f[:-3] for f in os.listdir(os.path.join(PKG, folder)) if f.endswith(".py")}

    assert stems("_graph") & stems("autograd") == {"__init__"}
