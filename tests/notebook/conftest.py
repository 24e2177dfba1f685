"""Shared helpers for the notebook-layer tests."""

import json
import shutil
import subprocess

import pytest

import nbgrad as ng


@pytest.fixture(scope="module")
def graph_view_js(tmp_path_factory):
    """``graph_view_js(names, expr, **data)``: the JSON value of the JS expression ``expr``, run
    in Node over the graph view's module as anywidget loads it (common.js, then graph_view.js),
    with ``names`` imported from it and ``data`` as the object ``data``."""
    from nbgrad.notebook._widget import esm

    node = shutil.which("node")
    assert node, "Node.js is needed to run the widget's JS: apt-get install -y nodejs"
    folder = tmp_path_factory.mktemp("graph_view_js")
    module = folder / "graph_view.mjs"
    module.write_text(esm("graph_view.js"))

    def run(names, expr, **data):
        (folder / "data.json").write_text(json.dumps(data))
        script = folder / "run.mjs"
        script.write_text(
            f"import {{ {', '.join(names)} }} from {json.dumps(str(module))};\n"
            'import { readFileSync } from "node:fs";\n'
            f"const data = JSON.parse(readFileSync({json.dumps(str(folder / 'data.json'))}));\n"
            f"console.log(JSON.stringify({expr}));\n"
        )
        out = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    return run


@pytest.fixture(scope="module")
def ip():
    """IPython's test shell with ``%load_ext nbgrad`` and ``ng`` imported (started by the
    first module that asks for it)."""
    IPython = pytest.importorskip("IPython")
    from IPython.testing.globalipapp import get_ipython

    shell = get_ipython() or IPython.get_ipython()  # the first call starts it
    shell.run_line_magic("load_ext", "nbgrad")
    shell.run_cell("import nbgrad as ng")
    return shell


class FakeModule:
    """A module that reports its calls through the recorder stack (way 2 of NOTE [Module
    groups]), so the tests need nothing from nbgrad.nn."""

    def __init__(self, name, *children, scale=2.0):
        self.name = name
        self.children_ = children
        self.w = ng.full((3,), scale, requires_grad=True)

    def named_children(self):
        return [(c.name, c) for c in self.children_]

    def named_parameters(self, recurse=True):
        return [("w", self.w)]

    def __call__(self, x):
        from nbgrad.notebook import recorder

        token = recorder.module_enter(self)
        try:
            y = x * self.w
            for c in self.children_:
                y = c(y)
            return y.tanh()
        finally:
            recorder.module_exit(token)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing browser test saves the whole page (test_browser.py's ``nb`` fixture); nbval's
    items have no funcargs."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        book = getattr(item, "funcargs", {}).get("nb")
        if book is not None:
            try:
                book.shot(f"FAILED-{item.name}")
            except Exception:  # noqa: BLE001 - the test's own failure matters more
                pass


@pytest.fixture
def fake_model():
    return FakeModule("outer", FakeModule("inner", scale=0.5))
