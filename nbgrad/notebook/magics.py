"""``%%autograd``: run a cell as usual while recording it, and show its graph.

Model: anywidget's ``_cellmagic.py`` (a small ``Magics`` class). ``%load_ext nbgrad`` registers
it. The cell body runs in the user's namespace like an ordinary cell: its prints, its last
expression's value (shown as ``Out``), its variables, and its exception, whose traceback shows
only the cell's own frames. Meanwhile a :class:`~nbgrad.notebook.recorder.Recorder` sees every
forward call and a :class:`~nbgrad.notebook.graph_view.GraphView` grows live.

NOTE [Live display and saved outputs]
nbval compares the ``text/plain`` and ``image/svg+xml`` of saved outputs with a fresh run, and
does not apply ``update_display_data``. So the live view is displayed with the widget mime type
only (nothing nbval compares), and when the cell ends that output is emptied (an update with no
data) and the final view is displayed anew with its text and its still SVG. A notebook saved by
JupyterLab or nbconvert then holds an empty output and the final one, and a fresh nbval run
sees the live display (nothing to compare) and the same final one.
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib
import importlib.util
import json
import keyword
import re
import shlex
import sys
import traceback

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.display import display

from nbgrad.tensor import Tensor

from .answers_memory import saved_bytes
from .answers_values import find_nonfinite
from .answers_versions import explain, is_version_error
from .answers_why import unused_parameters, why_no_grad
from .graph_view import GraphView
from .hook_editor import HookEditor
from .overlays import KINDS, still_svg
from .png import png_b64
from .recorder import Recorder
from .sessions import SESSIONS, current_cell
from .snapshot import MAX_NODES, build_snapshot, cut_note, no_collection
from .stepper import BackwardStepper
from .svg import STILL_METADATA, trace_svg
from .trace import trace_snapshot

__all__ = ["AutogradMagics", "Session", "parse_options", "USAGE", "empty_body_to_line_magic"]

# the repeats of a training step a cell keeps in full, the last ones; the earlier ones are
# counted (see NOTE [Repeated steps counted]): the first step and these three still fold
KEEP_STEPS = 3
LOOP = "__nbgrad_loop__"  # what the cell's own loops are wrapped in (steps.Loop), while it runs

USAGE = f"""\
%%autograd [--backward EXPR] [--step] [--retain-graph] [--create-graph] [--static] \
[--max-nodes N] [--color KIND] [--all-steps] [-o NAME]

Run the cell as usual, record every forward call, and show the grad_fn graph it built.

  --backward EXPR   after the cell, run EXPR.backward() (gradients then show on the edges);
                    the graph is kept for the hook editor's Run backward (with --static it
                    is freed, as by EXPR.backward(), unless --retain-graph)
  --step            open the backward stepper on the (last) backward pass
  --retain-graph    pass retain_graph=True to that backward (the live editor implies it)
  --create-graph    pass create_graph=True to that backward
  --static          show still pictures (SVG) only, no live widgets
  --max-nodes N     draw at most N nodes (default {MAX_NODES:,}): the end of the cell, walked back
                    from its last calls; every output says what was left out
  --color KIND      colour the still pictures' nodes by norm (gradient norm, log scale),
                    saved (bytes saved for backward), nonfinite (NaN/Inf), order
                    (execution order in backward) or time (time spent in backward, log
                    scale), with a legend (with --static)
  --all-steps       record every step of a training loop in full (slower; by default the
                    repeats between the first steps and the last are only counted, and a
                    NaN made in one is told where it was found, not the call that made it)
  -o NAME           store the session (record, graph, hooks, stepper) in NAME
  --help            show this message

%autograd show [NAME]  draw again the graph of session NAME (-o NAME), or of the last cell
                       whose drawing was interrupted"""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(
            f"%%autograd: {message}\nusage: {USAGE.splitlines()[0]}\n"
            "(%%autograd --help for the options)"
        )


@functools.cache  # made once: a parser keeps nothing of what it parsed (twice a cell, ~0.3 ms)
def _parser():
    p = _Parser(prog="%%autograd", add_help=False)
    p.add_argument("--backward", metavar="EXPR")
    p.add_argument("--step", action="store_true")
    p.add_argument("--retain-graph", action="store_true")
    p.add_argument("--create-graph", action="store_true")
    p.add_argument("--static", action="store_true")
    p.add_argument("--max-nodes", type=_node_count, default=MAX_NODES, metavar="N")
    p.add_argument("--color", choices=KINDS, metavar="KIND")
    p.add_argument("--all-steps", action="store_true")
    p.add_argument("-o", dest="output", metavar="NAME")
    p.add_argument("--help", action="store_true")
    return p


def _node_count(text):
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"needs a whole number of nodes, 1 or more, got {text!r}")
    return n


def parse_options(line: str):
    """The options of a ``%%autograd`` line; a bad one raises IPython's UsageError (shown as
    a short message, not a traceback)."""
    try:
        words = shlex.split(line)
    except ValueError as e:
        _Parser().error(str(e))
    opts = _parser().parse_args(words)
    for option in ("--backward", "-o"):  # a value given twice is a mistake, not "last wins"
        given = [w for w in words if w == option or w.startswith(option + "=")]
        if len(given) > 1:
            _Parser().error(f"{option} is given {len(given)} times: give it once")
    if opts.output is not None and (
        not opts.output.isidentifier() or keyword.iskeyword(opts.output)
    ):
        _Parser().error(f"-o needs a Python name, got {opts.output!r}")
    return opts


class Session:
    """What one ``%%autograd`` cell made (``-o NAME`` stores it): ``record`` (the Recorder),
    ``graph`` (GraphView, None with ``--static``), ``hooks`` (HookEditor), ``stepper``
    (BackwardStepper or None), ``value`` (the cell's value). It answers ``nonfinite()``
    (where NaN and Inf start), ``why_no_grad(t)`` and ``unused_parameters(module)``."""

    def __init__(self, record, graph=None, hooks=None, stepper=None, names=None, weak_names=None):
        self.record = record
        self.graph = graph
        self.hooks = hooks
        self.stepper = stepper
        self.names = names or {}
        self.weak_names = weak_names or {}
        self.value = None
        # the text of the cell's version error, if its backward raised one (marked in the
        # pictures); the text only: the exception's traceback would hold the magic's frames
        self.version_error = None
        self.root = None  # the tensor of --backward
        self.options = parse_options("")  # the cell's options, which say how it is drawn

    def snapshot(self, **kwargs):
        kwargs.setdefault("names", self.names)
        kwargs.setdefault("weak_names", self.weak_names)
        return build_snapshot(self.record, **kwargs)

    def to_svg(self, color=None):
        """The still picture; ``color``: an overlay (``norm``, ``saved``, ``nonfinite``,
        ``order``, ``time``)."""
        snap = self.snapshot(timings=color == "time")  # (a wall time: only when it is shown)
        return still_svg(self.record, snap, color, self.version_error)

    def explain(self, err=None):
        """The version error ``err`` (default: the cell's) explained
        (``answers_versions.explain``)."""
        return explain(self.record, err)

    def saved_bytes(self):
        """The bytes the graph's saved tensors hold (``answers_memory.saved_bytes``), module
        groups named as the graph names them (``model.0``)."""
        objects = {}
        snap = self.snapshot(timings=False, objects=objects, max_nodes=sys.maxsize)
        return saved_bytes(self.record, snapshot=snap, objects=objects)

    def nonfinite(self):
        """The NaN/Inf findings, in execution order, the origin marked (answers_values.py)."""
        return find_nonfinite(self.record, {**self.weak_names, **self.names})

    def why_no_grad(self, t):
        """Why ``t.grad`` is None: ``cause``, ``source``, the sentence (answers_why.py)."""
        return why_no_grad(self.record, t, names=self.names, namespace=self._namespace())

    def unused_parameters(self, module):
        """``[(name, WhyNoGrad)]`` for ``module``'s parameters without a gradient."""
        return unused_parameters(self.record, module, namespace=self._namespace())

    def _namespace(self):
        return getattr(self.hooks, "namespace", None) or sys._getframe(2).f_globals

    def __repr__(self):
        return f"<autograd session: {self.record.summary()}>"


def _names(ns, assigned=()):
    """Labels for the tensors and modules bound to names in ``ns``: ``(names, weak_names)``,
    each ``{id(obj): name}``. ``names`` are those the cell itself assigned (``assigned``, in
    the cell's order); ``weak_names`` every other one, used only where no better name exists
    (see ``build_snapshot``): a name left bound by an earlier cell (a loop variable such as
    ``param``) must not rename a module's parameter, which is labelled by its module path."""

    torch = sys.modules.get("torch")  # a torch cell's tensors are named as nbgrad's are
    tensors = (Tensor, torch.Tensor) if torch is not None else Tensor

    def labelled(v):
        return isinstance(v, tensors) or hasattr(v, "named_parameters")

    names = {}
    for k in assigned:
        v = ns.get(k)
        if not k.startswith("_") and labelled(v) and id(v) not in names:
            names[id(v)] = k
    weak = {}
    for k, v in list(ns.items()):
        if k.startswith("_") or id(v) in names or id(v) in weak:
            continue
        if labelled(v):
            weak[id(v)] = k
    return names, weak


def _assigned_names(tree):
    """The names a cell binds by assignment (``=``, ``+=``, ``:=``, annotated): those at the
    cell's top level first, then those nested in blocks (``ast.walk`` order); not ``for`` or
    ``with`` targets, comprehension variables, imports or definitions."""
    out = []

    def targets(node):
        if isinstance(node, ast.Name):
            out.append(node.id)
        elif isinstance(node, (ast.Tuple, ast.List)):
            for elt in node.elts:
                targets(elt)
        elif isinstance(node, ast.Starred):
            targets(node.value)

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Assign):
            for t in node.targets:
                targets(t)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets(node.target)
        elif isinstance(node, ast.NamedExpr):
            targets(node.target)
    return list(dict.fromkeys(out))


@magics_class
class AutogradMagics(Magics):
    """The ``%%autograd`` cell magic (and ``%autograd``: its usage, and ``show``)."""

    @line_cell_magic
    def autograd(self, line, cell=None):
        if cell is None and line.split()[:1] == ["show"]:
            return self._show_again(line.split()[1:])
        opts = parse_options(line)
        if opts.help or cell is None:
            # NOTE [Line magic]
            # a line has no code to record, so ``%autograd`` (and
            # ``%%autograd`` with nothing under it) prints the usage; any other option there
            # says where the code goes (``%autograd show`` draws a recorded graph again)
            if cell is None and not opts.help and line.strip():
                _Parser().error("the code to record goes under %%autograd, in a cell")
            print(USAGE)
            return None
        shell = self.shell
        ns = shell.user_ns
        # the widgets this cell showed before are closed now (sessions.py)
        show_widget = SESSIONS.start(*current_cell(shell))
        # the code is compiled one line down, so that line numbers (in tracebacks and in the
        # records) count the cell's lines as the notebook shows them, %%autograd being line 1
        transformed = shell.transform_cell(cell)
        shown = f"%%autograd {line}".rstrip() + "\n" + transformed
        filename = shell.compile.cache(shown, shell.execution_count, raw_code=cell)
        # compile first: a syntax error is reported like any cell's, before anything is shown
        body, last, assigned = _compile(shell, "\n" + transformed, filename)

        _import_frameworks(cell)
        rec = Recorder(cell_filename=filename, keep_steps=None if opts.all_steps else KEEP_STEPS)
        view = handle = None
        if not opts.static:
            view = GraphView(recorder=rec, live=True, max_nodes=opts.max_nodes)
            show_widget(view)
            handle = display(view._widget_view_bundle(), raw=True, display_id=True)
        value = target = error = tb = None
        ns[LOOP] = rec.loop  # see _compile
        with rec:
            try:
                exec(body, ns)  # noqa: S102 - the user's own cell
                if last is not None:
                    value = eval(last, ns)  # noqa: S307 - as above
                if opts.backward:
                    where = f"%%autograd --backward {opts.backward}"
                    try:
                        found = eval(opts.backward, ns)  # noqa: S307 - the user's expression
                    except Exception as e:  # noqa: BLE001 - shown as one line naming the option
                        raise _option_error(e, where) from None
                    if not hasattr(found, "backward"):
                        name = type(found).__name__
                        article = "an" if name[:1] in "aeiou" else "a"
                        raise _option_error(
                            TypeError(f"{where}: that is {article} {name}, not a tensor")
                        )
                    target = found
                    # the live hook editor runs backward on this graph again: See NOTE [The
                    # editor keeps the cell's graph]
                    keep = opts.retain_graph or not opts.static
                    target.backward(
                        retain_graph=True if keep else None,
                        create_graph=opts.create_graph,
                    )
            except BaseException as e:  # noqa: BLE001 - re-raised below, after the displays
                error = e
                tb = sys.exc_info()[2]
                if target is None:  # the forward raised (NOTE [Failed forward])
                    rec.failure = _failure(e, tb, filename, cell)
            finally:
                ns.pop(LOOP, None)
                if view is not None:
                    view.stop_live()  # the final refresh comes below, with the leaves' names
        if rec.mixed:  # see NOTE [One framework a block]
            others = " and ".join(sorted(rec.mixed))
            print(
                f"%%autograd: this cell used {rec.graph_source.name} and {others} tensors; the "
                f"graph shows {rec.graph_source.name}'s (used first), without the {others} calls. "
                "Give each framework's code its own %%autograd cell."
            )
        names = _names(ns, assigned)
        session = Session(rec, graph=view, names=names[0], weak_names=names[1])
        session.value, session.root, session.options = value, target, opts
        if opts.output:
            ns[opts.output] = session
        if is_version_error(error):  # marked in the graph (answers.js) and the pictures
            session.version_error = str(error)
            if view is not None:
                view._answer_json = json.dumps(explain(rec, error).to_widget())
        try:
            self._show(session, handle, show_widget)
        except KeyboardInterrupt:  # NOTE [Interrupted drawing]
            SESSIONS.keep_interrupted(session)
            if handle is not None:
                handle.update({}, raw=True)  # the live view, half drawn
            display({"text/plain": f"<autograd graph: {rec.summary()}>"}, raw=True)
            note = _drawing_interrupted(opts.output)
            if error is None:
                error, tb = note, None
            else:
                print(note._render_traceback_()[0])
        except Exception:  # noqa: BLE001 - the cell's own error matters more
            if error is None:
                raise
        if error is not None:
            _reraise(shell, error, tb)
        if cell.rstrip().endswith(";"):  # a trailing ; hides the value, as in a plain cell
            return None
        return value

    def _show_again(self, args):
        """``%autograd show [NAME]``: draw a session again (NOTE [Interrupted drawing])."""
        if len(args) > 1:
            _Parser().error("usage: %autograd show [NAME]")
        if args:
            session = self.shell.user_ns.get(args[0])
            if not isinstance(session, Session):
                _Parser().error(
                    f"show: {args[0]!r} is not a session of %%autograd -o NAME "
                    f"(it is {type(session).__name__})"
                )
        else:
            session = SESSIONS.interrupted
            if session is None:
                _Parser().error(
                    "show: no cell's drawing was interrupted; name a session kept with "
                    "%%autograd -o NAME: %autograd show NAME"
                )
        self._show(session, None, SESSIONS.start(*current_cell(self.shell)))

    @no_collection()  # NOTE [No collection while drawing] in snapshot.py
    def _show(self, session, handle, show_widget):
        """Draw a session: the still pictures (``--static``), or its graph view (with the
        stepper for ``--step``) and hook editor, registered with ``show_widget``; ``handle``:
        the cell's live display, emptied once the final one is ready."""
        opts, rec, root = session.options, session.record, session.root
        names, weak_names = session.names, session.weak_names
        trace = rec.passes[-1] if rec.passes else None
        if opts.step and trace is None:
            print("%%autograd --step: no backward pass ran in this cell (use --backward EXPR)")
        if opts.static or session.graph is None:
            snap = build_snapshot(
                rec,
                names=names,
                weak_names=weak_names,
                timings=opts.color == "time",
                max_nodes=opts.max_nodes,
            )
            svg = still_svg(rec, snap, opts.color, session.version_error)
            cut = f"; {cut_note(snap)}" if snap["truncated"] else ""
            display(
                {
                    "image/svg+xml": svg,
                    "image/png": png_b64(svg),  # an untrusted notebook's picture (png.py)
                    "text/plain": f"<autograd graph: {rec.summary()}{cut}>",
                },
                metadata=STILL_METADATA,  # NOTE [Still pictures keep a readable size]
                raw=True,
            )
            if opts.step and trace is not None:
                tr = trace_snapshot(
                    trace,
                    names=names,
                    weak_names=weak_names,
                    recorder=rec,
                    max_nodes=opts.max_nodes,
                )
                svg = trace_svg(tr)
                display(
                    {
                        "image/svg+xml": svg,
                        "image/png": png_b64(svg),
                        "text/plain": f"<backward pass: {len(tr['steps'])} steps>",
                    },
                    metadata=STILL_METADATA,
                    raw=True,
                )
            return

        # a widget is registered with the run that shows it first, or again once closed: a
        # session drawn again leaves the widgets still open to the cell that made them
        widgets = {k: getattr(session, k) for k in ("graph", "hooks", "stepper")}
        register = [k for k, w in widgets.items() if w is None or w.comm is None]
        view = session.graph
        view.names = names
        view.weak_names = weak_names
        view.namespace = self.shell.user_ns  # for the why sentences (answers_view.py)
        view.refresh()
        if session.hooks is None:
            session.hooks = HookEditor(graph=view, root=root, namespace=self.shell.user_ns)
        if opts.step and trace is not None and session.stepper is None:
            # one drawing of the graph: the stepper's (a click on a node there selects it for
            # the hook editor below); the graph view stays available as ``session.graph``
            session.stepper = BackwardStepper(
                trace,
                names=names,
                weak_names=weak_names,
                ids=getattr(rec, "_ids", None),
                recorder=rec,
                graph=view,
                max_nodes=opts.max_nodes,
            )
        for k in register:
            if getattr(session, k) is not None:
                show_widget(getattr(session, k))
        if handle is not None:
            handle.update({}, raw=True)  # see NOTE [Live display and saved outputs]
        display(session.stepper if session.stepper is not None else view)
        display(session.hooks)


AutogradMagics.autograd.__doc__ = f"""Run a cell as usual, record its forward calls, show its graph.

{USAGE}

``%autograd`` (a line) and ``%%autograd`` with nothing under it print this usage. Each run of a
cell closes the widgets that the cell's earlier run showed (see ``nbgrad.notebook.sessions``);
a session kept with ``-o NAME`` stays usable from Python.
"""


_EMPTY_BODY = re.compile(r"%%autograd(\s|$)")


def empty_body_to_line_magic(lines):
    """An IPython input transformer: ``%%autograd ...`` with an empty body becomes the line
    magic ``%autograd ...`` (IPython refuses a cell magic with an empty body, so ``%%autograd
    --help`` alone in a cell would fail with "the cell body is empty")."""
    if lines and _EMPTY_BODY.match(lines[0]) and not "".join(lines[1:]).strip():
        return [lines[0][1:]]
    return lines


# NOTE [A cell that imports torch]
# A recorder watches the frameworks imported when it starts (``observable_sources``). A cell
# that imports torch itself would run its torch code unwatched the first time, so a cell that
# names torch has it imported first, when it is installed: the cell was going to import it.
# nbgrad's own modules still never import torch (NOTE [torch stays optional]).
#
# That import is nearly all of the first torch cell's time (2 to 4 s here, where the same cell
# runs in 0.3 s once torch is in; nbgrad's own torch adapter takes under 0.05 s), and it
# happens before the cell shows anything, so the cell first says what it is doing: one line on
# stdout, the same on every run (nbval compares it). Importing torch sooner, when the
# extension loads, would cost every kernel that never uses torch its seconds and memory, and
# would have every nbgrad cell watch torch too.
IMPORTING_TORCH = (
    "%%autograd: importing torch for this cell (its first use in this kernel takes a few seconds)"
)


def _import_frameworks(cell):
    if "torch" in cell and "torch" not in sys.modules and importlib.util.find_spec("torch"):
        print(IMPORTING_TORCH, flush=True)
        importlib.import_module("torch")


class CellSyntaxError(Exception):
    """A syntax error in an ``%%autograd`` cell, shown as IPython shows one in any cell (and
    named ``SyntaxError`` in the error output), without this magic's frames."""

    def __init__(self, error, stb):
        super().__init__(str(error))
        self.error = error
        self._stb = stb

    def _render_traceback_(self):
        return self._stb


CellSyntaxError.__name__ = "SyntaxError"


class _Loops(ast.NodeTransformer):
    """Each ``for`` loop the cell runs itself, not those of the functions, lambdas and classes
    it defines (which may run after it), iterates through ``LOOP(iterable)``: a
    :class:`~nbgrad.notebook.steps.Loop`, which tells the recorder how many steps are left
    (NOTE [Repeated steps counted])."""

    def visit_For(self, node):
        self.generic_visit(node)
        it = node.iter
        if (
            isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name)
            and it.func.id in ("enumerate", "zip")
            and it.args
            and not any(isinstance(a, ast.Starred) for a in it.args)
        ):
            # enumerate(X, ...) as LOOP(X, ..., outer=enumerate), zip(X, Y) as LOOP(X, Y,
            # outer=zip): X's length counts the steps, or the shortest's (an enumerate and a
            # zip have none); the name is still looked up, as the cell would
            outer = ast.keyword("outer", it.func)
            call = ast.Call(ast.Name(LOOP, ast.Load()), it.args, [*it.keywords, outer])
        else:
            call = ast.Call(ast.Name(LOOP, ast.Load()), [it], [])
        node.iter = ast.copy_location(call, it)
        return node

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef


def _compile(shell, source, filename):
    """The cell as (statements, last expression or None, the names it assigns), compiled with
    IPython's flags."""
    try:
        tree = shell.compile.ast_parse(source, filename=filename)
    except SyntaxError as e:
        stb = shell.SyntaxTB.structured_traceback(type(e), e, [])
        raise CellSyntaxError(e, stb) from None
    assigned = _assigned_names(tree)
    tree = ast.fix_missing_locations(_Loops().visit(tree))
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    flags = shell.compile.flags
    body = compile(tree, filename, "exec", flags, True)
    expr = compile(last, filename, "eval", flags, True) if last is not None else None
    return body, expr, assigned


# NOTE [The editor keeps the cell's graph]
# A cell's hook editor is there to change hooks and run backward again on the cell's graph, as
# many times as the user likes. ``EXPR.backward()`` alone frees the graph's saved tensors, so
# the editor's first Run backward would fail ("Trying to backward through the graph a second
# time"), and so would re-running the cell the same way. So ``--backward`` retains the graph
# whenever the cell shows the live editor (it holds the graph's nodes anyway, until the cell
# runs again and closes it); ``--static`` shows no editor and frees the graph as
# ``EXPR.backward()`` does, unless ``--retain-graph``. A graph freed otherwise (the user's own
# ``loss.backward()`` in a later cell, or the editor's run with retain_graph unticked) is
# found by the editor before it changes anything (See NOTE [A freed graph] in hook_editor.py).


# NOTE [Failed forward]
# When a cell's forward raises, the graph shown is what it built so far, and the call that
# raised made no node. The snapshot's ``failure`` names the cell line of that call (the last
# frame of the traceback in the cell), its code and the error; the widget and the still
# picture show it above the graph, mark the nodes made on that line, and draw no node as the
# root (the last node made is not the output of anything the user asked for).
def _failure(error, tb, filename, cell):
    """The snapshot's ``failure`` for an exception raised by the cell's forward."""
    line = None
    for frame, lineno in traceback.walk_tb(tb):
        if frame.f_code.co_filename == filename:
            line = lineno
    lines = ("%%autograd\n" + cell).splitlines()  # line 1 is the magic's, as in the records
    source = lines[line - 1].strip() if line is not None and 0 < line <= len(lines) else ""
    text = "".join(traceback.format_exception_only(type(error), error)).strip()
    return {"line": line, "source": source, "error": text}


# NOTE [Interrupted drawing]
# A big cell's drawing (snapshot, layout, SVG, picture) can take several times as long as the
# cell's code, so that is where the stop button often lands. The code has finished by then:
# its variables, its recorded graph and its session are kept (``-o NAME`` is bound before the
# drawing starts, and ``SESSIONS`` keeps the session of the last interrupted drawing until the
# same cell runs again or another drawing is interrupted). The cell shows the text summary and
# fails with a one-line KeyboardInterrupt naming ``%autograd show``, which draws it again: it
# still fails, so that "Run all" stops there as after any interrupt.
def _drawing_interrupted(name):
    """The KeyboardInterrupt an interrupted drawing ends the cell with."""
    again = f"%autograd show {name}" if name else "%autograd show"
    line = (
        "KeyboardInterrupt: the drawing of the graph was interrupted; the cell ran and its "
        f"graph is kept: {again} draws it"
    )
    error = KeyboardInterrupt(line.removeprefix("KeyboardInterrupt: "))
    error._render_traceback_ = lambda: [line]
    return error


def _option_error(error, where=None):
    """An error of an option's expression, shown as one line that names the option and the
    expression (it happened in no frame of the user's)."""
    if where is not None:
        try:
            error = type(error)(f"{where}: {error}")
        except Exception:  # noqa: BLE001 - an exception type with another signature: as it is
            pass
    line = "".join(traceback.format_exception_only(type(error), error)).strip()
    error._render_traceback_ = lambda: [line]
    error.nbgrad_option_error = True
    return error


def _reraise(shell, error, tb):
    """Re-raise the cell's exception so the cell fails as usual, with a traceback of the cell's
    own frames only (not this magic's)."""
    if getattr(error, "nbgrad_option_error", False):
        raise error
    if isinstance(error, SystemExit) or tb is None:
        raise error
    inner = tb.tb_next or tb
    try:
        stb = shell.InteractiveTB.structured_traceback(type(error), error, inner, tb_offset=0)
        error._render_traceback_ = lambda: stb
    except Exception:  # noqa: BLE001 - fall back to IPython's own traceback
        pass
    raise error.with_traceback(inner)
