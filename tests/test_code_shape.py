"""The code's shape, as a reader meets it: files named by their job, functions a reader can hold,
and one format for the design notes, each defined once and every mention resolved."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PY_LIMIT, JS_LIMIT = 120, 200


def _sources(*folders, suffixes=(".py", ".js")):
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in suffixes and "vendor" not in path.parts:
                yield path


# -- names by job -------------------------------------------------------------------------------

HISTORY = re.compile(r"(^|_)(wider|more|gaps|extra|misc|new|old|other|fixes|rest)(_|$)")


def test_no_file_is_named_after_the_history_of_the_work():
    named = [
        str(p.relative_to(ROOT))
        for p in _sources("nbgrad", "tests", "widgets", suffixes=(".py", ".js", ".css"))
        if HISTORY.search(p.stem) or any(HISTORY.search(part) for part in p.parent.parts)
    ]
    assert not named, f"files named after when they were written, not what they hold: {named}"


# -- functions a reader can hold ---------------------------------------------------------------


def python_functions(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            yield node.name, first, node.end_lineno


_JS_TOKEN = re.compile(
    r"""(?P<comment>//[^\n]*|/\*.*?\*/)|(?P<string>'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")"""
    r"""|(?P<tick>`)|(?P<word>[A-Za-z_$][\w$]*)|(?P<arrow>=>)|(?P<punct>[{}()\[\];,=:?!&|+\-*/<>%.~^])"""
    r"""|(?P<num>\d[\w.]*)|(?P<space>\s+)""",
    re.S,
)
_REGEX = re.compile(r"/(?:\\.|\[(?:\\.|[^\]\\])*\]|[^/\\\n\[])+/[a-z]*")
_NOT_CALLEE = {"if", "for", "while", "switch", "catch", "with", "return", "typeof", "new"}


def _js_tokens(text):
    """(kind, value, line) of JavaScript source: comments and strings skipped, template literals
    skipped with their ``${...}`` parts tokenised, regex literals told from division."""
    out, i, line, stack = [], 0, 1, []  # stack: open braces, "tpl" where a template resumes
    while i < len(text):
        if stack and stack[-1] == "tpl-body":
            j = i
            while j < len(text) and text[j] != "`" and text[j : j + 2] != "${":
                j += 2 if text[j] == "\\" else 1
            line += text.count("\n", i, j)
            if text[j] == "`":
                stack.pop()
                out.append(("string", "`", line))
                i = j + 1
            else:
                stack.append("tpl-expr")
                i = j + 2
            continue
        prev = next((t for t in reversed(out)), None)
        if text[i] == "/" and (
            prev is None
            or (prev[0] == "punct" and prev[1] not in ")]}")
            or (prev[0] == "word" and prev[1] in ("return", "typeof", "case"))
            or prev[0] == "arrow"
        ):
            m = _REGEX.match(text, i)
            if m and not text.startswith(("//", "/*"), i):
                out.append(("regex", m.group(), line))
                i = m.end()
                continue
        m = _JS_TOKEN.match(text, i)
        if m is None:
            raise ValueError(f"cannot read JavaScript at line {line}: {text[i : i + 20]!r}")
        kind, value = m.lastgroup, m.group()
        i = m.end()
        if kind == "tick":
            stack.append("tpl-body")
            continue
        if kind == "punct" and value == "{":
            stack.append("{")
        elif kind == "punct" and value == "}":
            if stack and stack[-1] == "tpl-expr":
                stack.pop()
                line += value.count("\n")
                continue
            if stack:
                stack.pop()
        if kind not in ("space", "comment"):
            out.append((kind, value, line))
        line += value.count("\n")
    return out


def js_functions(path):
    """(name, first line, last line) of each function body in a widget's JavaScript."""
    tokens = _js_tokens(path.read_text())
    opens, found = [], []
    for k, (kind, value, line) in enumerate(tokens):
        if value == "{" and kind == "punct":
            name, start = None, line
            before = tokens[k - 1] if k else ("", "", line)
            if before[0] == "arrow":
                j = k - 2
                if tokens[j][1] == ")":
                    depth = 0
                    while j >= 0:
                        depth += {")": 1, "(": -1}.get(tokens[j][1], 0)
                        if depth == 0:
                            break
                        j -= 1
                    j -= 1
                else:
                    j -= 1
                name = tokens[j - 1][1] if j >= 1 and tokens[j][1] in ("=", ":") else "=>"
                start = tokens[max(j, 0)][2]
            elif before[1] == ")":
                j, depth = k - 1, 0
                while j >= 0:
                    depth += {")": 1, "(": -1}.get(tokens[j][1], 0)
                    if depth == 0:
                        break
                    j -= 1
                callee = tokens[j - 1] if j >= 1 else ("", "", line)
                if callee[1] == "function" or (
                    callee[0] == "word" and callee[1] not in _NOT_CALLEE
                ):
                    name, start = callee[1], callee[2]
            opens.append((name, start))
        elif value == "}" and kind == "punct" and opens:
            name, start = opens.pop()
            if name is not None:
                found.append((name, start, line))
    return found


def test_the_javascript_reader_finds_functions():
    sample = ROOT / "widgets" / "graph_view.js"
    names = {name for name, _, _ in js_functions(sample)}
    assert "render" in names and len(names) > 20


@pytest.mark.parametrize(
    "path", list(_sources("nbgrad", suffixes=(".py",))), ids=lambda p: str(p.relative_to(ROOT))
)
def test_no_python_function_is_longer_than_a_reader_can_hold(path):
    long = [
        f"{name} ({end - start + 1} lines, from line {start})"
        for name, start, end in python_functions(path)
        if end - start + 1 > PY_LIMIT
    ]
    assert not long, f"{path.relative_to(ROOT)}: functions over {PY_LIMIT} lines: {long}"


@pytest.mark.parametrize(
    "path", list(_sources("widgets", suffixes=(".js",))), ids=lambda p: str(p.relative_to(ROOT))
)
def test_no_javascript_function_is_longer_than_a_reader_can_hold(path):
    long = [
        f"{name} ({end - start + 1} lines, from line {start})"
        for name, start, end in js_functions(path)
        if end - start + 1 > JS_LIMIT
    ]
    assert not long, f"{path.relative_to(ROOT)}: functions over {JS_LIMIT} lines: {long}"


# -- design notes: one format, defined once, every mention resolved ----------------------------

# A definition is the title alone on its line, as the first line of a comment block or of a
# docstring paragraph; its text follows on the lines below. Anything else naming a note is a
# mention ("see NOTE [Title]").
NOTE = re.compile(r"NOTE \[([^\]]+)\]")
DEFINITION = re.compile(r"""^\s*(?:#|//|/?\*)?\s*(?:r?\"\"\")?NOTE \[([^\]]+)\]\s*$""")
INLINE_DEFINITION = re.compile(r"""^\s*(?:#|//|/?\*)?\s*(?:r?\"\"\")?NOTE \[([^\]]+)\]\s*[:.-]""")
DEFINED_IN = ("nbgrad", "widgets", "tests")


def _note_lines():
    files = list(_sources("nbgrad", "widgets", "tests", suffixes=(".py", ".js", ".css")))
    files.append(ROOT / "README.md")  # (a notebook's widget state holds copies of widgets/*.js)
    for path in files:
        if path == Path(__file__):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "NOTE [" in line:
                yield path.relative_to(ROOT), number, line


def _notes():
    definitions, mentions, other_formats = {}, [], []
    for path, number, line in _note_lines():
        where = f"{path}:{number}"
        m = DEFINITION.match(line)
        if m and path.parts[0] in DEFINED_IN:
            definitions.setdefault(m.group(1), []).append(where)
            continue
        if INLINE_DEFINITION.match(line) and path.parts[0] in DEFINED_IN:
            other_formats.append(where)
        mentions.extend((title, where) for title in NOTE.findall(line))
    return definitions, mentions, other_formats


def test_every_note_is_written_one_way():
    _, _, other_formats = _notes()
    assert not other_formats, (
        "NOTEs are defined as '# NOTE [Title]' alone on a line, the text below it; these put "
        f"text on the title's line: {other_formats}"
    )


def test_every_note_is_defined_once():
    definitions, _, _ = _notes()
    assert len(definitions) > 50  # the reader sees them
    twice = {title: places for title, places in definitions.items() if len(places) > 1}
    assert not twice, f"NOTEs defined more than once: {twice}"


def test_every_note_mentioned_is_defined():
    definitions, mentions, _ = _notes()
    assert mentions
    missing = sorted(
        {f"NOTE [{title}] at {where}" for title, where in mentions if title not in definitions}
    )
    assert not missing, f"NOTEs mentioned but defined nowhere: {missing}"
