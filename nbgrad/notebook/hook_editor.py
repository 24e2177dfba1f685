"""``HookEditor``: list, add, edit, enable, disable and remove hooks, then run backward
(kernel side of ``widgets/hook_editor.js``).

The target is a tensor, a node or a module, given directly or followed from a ``GraphView``'s
selection. Its hooks come from ``hook_inventory`` (``nbgrad.autograd.graph``); each can be
switched off and on (``handle.enabled``) or removed. A new hook is typed as Python, a lambda
(``lambda grad: grad * 2``) or a ``def``; it is compiled under a readable filename such as
``<hook:MulBackward0#1>`` (registered with ``linecache``, so a traceback shows its line) and
registered through the public API (``Tensor.register_hook``, ``Node.register_prehook`` ...)
wrapped in a small callable that keeps its source and catches its errors for display.

NOTE [Hook code in widget state]
Hook sources travel to the browser inside the ``hooks`` trait, and so are saved with the
notebook's widget state. They are only ever compiled in response to an action: a message from
the browser (``add``, ``edit``) or a Python call (``add_hook``, ``edit_hook``). Nothing reads
sources back from the browser's state, so opening a notebook never runs hook code.

A syntax error leaves every hook as it was and shows the error; a hook that raises during
backward makes that backward fail, as in PyTorch, and the editor shows the error on that hook;
no other hook is lost. "Run backward" runs ``root.backward(retain_graph=..., create_graph=...)``
with a recorder listening to the engine and shows which hooks fired, with the gradient before
and after each; while it runs, ``running`` says which hook or node runs, and an interrupt says
where it landed (NOTE [A backward that runs long]). On a graph already freed, "Run backward" and
"Zero .grad" change nothing and say how to get a graph that runs (NOTE [A freed graph]).

Messages from the browser: ``add {kind, source}``, ``edit {id, source}``, ``enable {id,
enabled}``, ``remove {id}``, ``run_backward {retain_graph, create_graph}``, ``zero_grad``.
"""

from __future__ import annotations

import itertools
import linecache
import sys
import textwrap
import threading
import traceback
import types
import weakref

import traitlets as t

import nbgrad
from nbgrad.autograd.graph import GraphObserver

from ._widget import StillWidget, asset, esm
from .recorder import Recorder
from .snapshot import IdMap, _hook_call, hooks_of
from .sources import source_for
from .svg import hooks_svg

__all__ = ["HookEditor", "compile_hook"]

_hook_numbers = itertools.count(1)

# a hook of each kind that works as typed: the editor's placeholder, and the signature shown
# when a hook of that kind is called wrongly (NOTE [Hook signatures])
EXAMPLES = {
    "tensor_hook": "lambda grad: grad * 2",
    "post_accumulate_grad": "lambda tensor: print(tensor.grad.norm())",
    "node_prehook": "lambda grad_outputs: tuple(g * 2 for g in grad_outputs)",
    "node_hook": "lambda grad_inputs, grad_outputs: tuple(g * 2 for g in grad_inputs)",
    "forward_pre": "lambda module, args: None",
    "forward": "lambda module, args, output: None",
    "full_backward_pre": "lambda module, grad_output: None",
    "full_backward": "lambda module, grad_input, grad_output: None",
}

# kind -> (what it hangs on, the method that registers it, the arguments it is called with)
KINDS = {
    "tensor_hook": ("tensor", "register_hook", "grad"),
    "post_accumulate_grad": ("leaf", "register_post_accumulate_grad_hook", "tensor"),
    "node_prehook": ("node", "register_prehook", "grad_outputs"),
    "node_hook": ("node", "register_hook", "grad_inputs, grad_outputs"),
    "forward_pre": ("module", "register_forward_pre_hook", "module, args"),
    "forward": ("module", "register_forward_hook", "module, args, output"),
    "full_backward_pre": ("module", "register_full_backward_pre_hook", "module, grad_output"),
    "full_backward": ("module", "register_full_backward_hook", "module, grad_input, grad_output"),
}


def compile_hook(source: str, filename: str, namespace=None):
    """Compile hook code: a lambda expression, or statements defining a function (the last one
    defined is the hook). Raises SyntaxError or TypeError with the hook's filename."""
    src = textwrap.dedent(source).strip("\n")
    if not src.strip():
        raise SyntaxError(f"empty hook code ({filename})")
    lines = [line + "\n" for line in src.splitlines()]
    linecache.cache[filename] = (len(src), None, lines, filename)
    glb = _HookGlobals(namespace if namespace is not None else _default_namespace())
    try:
        code = compile(src, filename, "eval")
    except SyntaxError:
        code = None
    if code is not None:
        fn = eval(code, glb)  # noqa: S307 - the user typed this hook and pressed "add"
    else:
        code = compile(src, filename, "exec")
        exec(code, glb)  # noqa: S102 - as above
        defined = [
            v
            for v in glb.values()
            if isinstance(v, types.FunctionType) and v.__code__.co_filename == filename
        ]
        if not defined:
            raise TypeError(f"{filename}: the code must be a lambda or define a function")
        fn = defined[-1]
    if not callable(fn):
        name = type(fn).__name__
        article = "an" if name[:1] in "aeiou" else "a"
        raise TypeError(f"{filename}: the code gives {article} {name}, not a function")
    return fn


class _HookGlobals(dict):
    """NOTE [Hook code runs like a small cell]
    a hook's code is run once, when it is added, in
    a namespace of its own, whose names (its imports, constants, helper functions) the hook
    then sees when it is called; a name it does not define is looked up in the notebook's
    namespace, as it is at call time. Nothing the hook's code defines lands in the user's
    namespace."""

    __slots__ = ("user",)

    def __init__(self, user):
        super().__init__()
        self.user = user

    def __missing__(self, key):
        return self.user[key]


def _default_namespace():
    import numpy

    return {"ng": nbgrad, "nbgrad": nbgrad, "np": numpy, "__name__": "__nbgrad_hook__"}


# NOTE [Hooks registered from Python]
# A hook may also be registered by the user's code (``t.register_hook(...)`` in a later cell)
# or removed there (``handle.remove()``). Neither nbgrad nor torch tells anyone when a hook is
# registered, and polling would work while nothing changes; a hook appears when the cell that
# registers it has run, which is when the user looks for it. So each open editor reads its
# target's hooks again after every cell (IPython's ``post_run_cell``; nothing when no IPython
# runs) and sends the list to the browser only when it changed (traitlets drops an equal
# value), the graph then redrawing its hook badges as after a click. A closed editor is read
# again when it is shown again; one that is garbage is forgotten.
_editors = weakref.WeakSet()


def _watch_cells(editor):
    """Keep ``editor`` up to date after each cell run by IPython."""
    _editors.add(editor)
    ipython = sys.modules.get("IPython")  # the notebook layer never imports IPython itself
    shell = ipython.get_ipython() if ipython is not None else None
    events = getattr(shell, "events", None)
    if events is not None and _after_cell not in events.callbacks.get("post_run_cell", []):
        events.register("post_run_cell", _after_cell)


def _after_cell(result=None):
    for editor in list(_editors):
        if editor.comm is not None:
            editor._resync()


# NOTE [A backward that runs long]
# "Run backward" runs in the kernel's main thread, inside the handler of the browser's message,
# so a hook that never returns holds the kernel until the user interrupts it. Meanwhile the
# ``running`` trait says what runs: the backward when it starts, then, every HEARTBEAT seconds
# from a small thread (the main thread is busy), the hook or node running now (``_Progress``
# follows node_start/node_end; an editor hook marks itself while it runs). ipykernel turns the
# stop button into a KeyboardInterrupt in the main thread during any message handler; it ends
# the pass as any failed pass ends, and the editor says where it landed ("interrupted in
# `<hook:MulBackward0#1>`": the innermost hook frame of the traceback, else the node that was
# running), marks that hook, and keeps every hook as it was: adding a hook is a message of its
# own, which had finished. The next backward runs as usual. From a message the interrupt ends
# there (it was meant for the backward); from Python (``run_backward()`` in a cell) it is
# raised again, so the cell stops too.
HEARTBEAT = 0.25


class _Progress(GraphObserver):
    """What a backward started by an editor is running now, sent to ``editor.running``."""

    current = None  # the innermost one running (an editor hook marks itself there)

    def __init__(self, editor, source, what):
        self.editor = editor
        self.source = source
        self.what = what
        self.node = None
        self.in_hook = None  # the label of the editor hook running now
        self._done = threading.Event()
        self._thread = self._outer = self._handle = None

    def node_start(self, graph_task, node, inputs):
        self.node = node

    def node_end(self, graph_task, node, outputs):
        self.node = None

    def where(self):
        """The hook or node running now (a label), or None between nodes."""
        if self.in_hook is not None:
            return self.in_hook
        node = self.node
        return self.editor._node_label(node) if node is not None else None

    def __enter__(self):
        self._outer, _Progress.current = _Progress.current, self
        self.editor.running = self.what
        self._handle = self.source.observe(self, forward=False, backward=True)
        self._thread = threading.Thread(target=self._beat, name="nbgrad-editor-progress")
        self._thread.daemon = True
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._handle.remove()
        self._thread.join()
        _Progress.current = self._outer
        self.editor.running = ""
        return False

    def _beat(self):
        shown = None
        while not self._done.wait(HEARTBEAT):
            where = self.where()
            if where != shown:
                shown = where
                self.editor.running = f"{self.what}: in {where}" if where else self.what


def _hook_in(tb):
    """The label of the innermost editor hook in a traceback, or None."""
    label = None
    for frame, _ in traceback.walk_tb(tb):
        filename = frame.f_code.co_filename
        if filename.startswith("<hook:"):
            label = filename
    return label


class _Running(threading.local):
    failed = None  # the editor hook that raised in the backward running on this thread


_running = _Running()


class _EditorHook:
    """The callable registered for a hook typed in the editor: calls the compiled function,
    keeps its source (``_nbgrad_source``, which the snapshot reports) and reports errors."""

    def __init__(self, editor, label, fn, source, kind):
        self._editor = weakref.ref(editor)
        self.fn = fn
        self._nbgrad_source = source
        self.kind = kind
        self.__name__ = self.__qualname__ = label
        self.error = None

    def __call__(self, *args):
        progress = _Progress.current  # NOTE [A backward that runs long]
        if progress is not None:
            outer, progress.in_hook = progress.in_hook, self.__name__
        try:
            result = self.fn(*args)
        except Exception as e:
            self.error = _format_hook_error(e, self.__name__)
            editor = self._editor()
            if editor is not None:
                editor._hook_failed(self)
            _running.failed = self  # for the editor that runs this backward, whichever it is
            raise
        finally:
            if progress is not None:
                progress.in_hook = outer
        self.error = None
        return result

    def __repr__(self):
        return f"<hook {self.__name__}>"


# NOTE [Hook signatures]
# ``lambda g: g * 2`` on a node pre-hook gets a tuple of gradients and returns a doubled tuple,
# which PyTorch (and nbgrad) report as "returned an incorrect number of values"; a hook with
# the wrong number of parameters fails with Python's own TypeError. Both say what broke, not
# what to write: the editor adds the kind's signature and an example that works.
def _signature_hint(kind, error):
    """The right signature of ``kind``, when ``error`` looks like a wrongly shaped hook."""
    if kind not in KINDS or not error:
        return ""
    last = error.strip().splitlines()[-1] if error.strip() else ""
    shaped = "incorrect number of values" in error or (
        last.startswith("TypeError") and ("positional argument" in last or "given" in last)
    )
    if not shaped:
        return ""
    args = KINDS[kind][2]
    returns = {
        "tensor_hook": "a gradient of the same shape, or None",
        "post_accumulate_grad": "None",
        "node_prehook": "a tuple with one gradient per output, or None",
        "node_hook": "a tuple with one gradient per input, or None",
    }.get(kind, "None")
    return f"A {kind} hook is called as hook({args}) and returns {returns}: {EXAMPLES[kind]}"


def _format_hook_error(e, filename):
    """The exception, with only the traceback lines inside the hook's own code."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == filename]
    lines = traceback.format_list(frames) if frames else []
    return ("".join(lines) + "".join(traceback.format_exception_only(type(e), e))).strip()


# NOTE [A freed graph]
# A backward without retain_graph frees the saved tensors of the graph it ran (PyTorch's
# ``release_variables``); running it again fails at the first node that needs one, after the
# nodes before it ran: their hooks fired, leaves reached by then accumulated. An editor whose
# graph was freed (the user's own ``loss.backward()`` in a later cell, or a run here with
# retain_graph unticked) therefore looks before it acts: "Run backward" and "Zero .grad" walk
# the root's graph first and, finding a freed node, change nothing (no hook fires, no .grad is
# wiped) and say what to do. An ``%%autograd`` cell's editor keeps its graph (See NOTE [The
# editor keeps the cell's graph] in magics.py), so running the cell again is a hint that works.
_FREED_HINT = (
    "Run the cell that built the graph again: an %%autograd cell's editor keeps its graph (keep "
    "retain_graph ticked here to run it as often as you like). From Python, build the graph "
    "again and pass retain_graph=True to its backward."
)


def _graph_nodes(source, root):
    """The nodes of ``root``'s graph (its grad_fn and every node behind it), each once."""
    start = source.tensor_facts(root).grad_fn
    seen, stack = set(), [start] if start is not None else []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        stack.extend(fn for fn, _ in source.next_edges(node))


def _freed_node(source, root):
    """A node of ``root``'s graph whose saved tensors were freed, or None."""
    for node in _graph_nodes(source, root):
        if any(saved.kind == "freed" for saved in source.saved(node)):
            return node
    return None


class HookEditor(StillWidget):
    """Hooks of a tensor, node or module: list, add (typed Python), edit, enable, disable,
    remove; run backward and see which hooks fired.

    Example:
        >>> import nbgrad as ng
        >>> from nbgrad.notebook import HookEditor
        >>> x = ng.ones(2, requires_grad=True)
        >>> y = x * 3
        >>> ed = HookEditor(y, root=y.sum())
        >>> h = ed.add_hook("tensor_hook", "lambda grad: grad * 2")
        >>> ed.run_backward()
        >>> x.grad
        tensor([6., 6.])
    """

    _esm = esm("hook_editor.js")
    _css = asset("hook_editor.css")

    target = t.Dict().tag(sync=True)
    hooks = t.List().tag(sync=True)
    fired = t.List().tag(sync=True)
    status = t.Unicode("").tag(sync=True)
    running = t.Unicode("").tag(sync=True)  # NOTE [A backward that runs long]
    _messages = {  # NOTE [Checked messages]
        "add": {"kind": "str", "source": "str"},
        "edit": {"id": "str", "source": "str"},
        "enable": {"id": "str", "enabled": "bool"},
        "remove": {"id": "str"},
        "zero_grad": {},
        "run_backward": {"retain_graph": "bool=", "create_graph": "bool="},
        "target": {"id": "str?"},
    }

    def __init__(self, target=None, *, root=None, graph=None, namespace=None):
        super().__init__()
        self.graph = graph
        self.root = root
        self.namespace = namespace
        self._node = self._tensor = self._module = None
        self._graph_source = source_for(target)
        self._label = "nothing"
        self._node_id = None
        self._editor_hooks = {}  # hook id -> _EditorHook
        self._running = False
        self._failed = None
        if graph is not None:
            graph.observe(self._follow, names="selected")
            if target is None and graph.selected:
                target = graph.selected
        self.set_target(target)
        _watch_cells(self)

    # -- the target --------------------------------------------------------------------------
    def set_target(self, target):
        """A Tensor, a Node, a module, a GraphView node or group id, or None."""
        source = self._source(target)
        node = tensor = module = None
        node_id = None
        label = "nothing"
        if isinstance(target, str) and target:
            if self.graph is None:
                raise ValueError("a node id needs a graph: HookEditor(graph=view)")
            node_id = target
            obj = self.graph.node(target)
            if source.is_node(obj):
                node = obj
                tensor = self.graph.tensor(target)
            else:  # a module group
                module = obj.module
                if module is None:
                    raise ValueError(f"the module of group {target!r} no longer exists")
        elif source.is_tensor(target):
            tensor = target
            node = source.gradient_node(target)
        elif source.is_node(target):
            node = target
            tensor = source.variable(target)
        elif target is not None:
            module = target
        if node is not None:
            label = source.node_name(node)
            if source.variable(node) is not None and self.graph is not None:
                drawn = node_id or self.graph.id_of(node)
                if drawn is not None:
                    label = self.graph.label(drawn) or label  # the leaf's name, as drawn
        elif module is not None:
            label = type(module).__name__
        self._graph_source = source
        self._node, self._tensor, self._module = node, tensor, module
        self._node_id = node_id
        self._label = label
        self._update()

    def _source(self, target):
        """The graph source of a target (a view's id: the view's recorder's or roots')."""
        if isinstance(target, str) and self.graph is not None:
            view = self.graph
            if view.recorder is not None:
                return view.recorder.graph_source
            return source_for(view.roots)
        return source_for(target)

    def _follow(self, change):
        try:
            self.set_target(change["new"] or None)
        except Exception as e:  # noqa: BLE001 - shown in the editor
            self.error = str(e)

    def kinds(self):
        """The hook kinds that can be added to the current target (the first is the one whose
        natural lambda, ``lambda grad: grad * 2``, works)."""
        out = []
        if self._tensor is not None:
            facts = self._graph_source.tensor_facts(self._tensor)
            if facts.requires_grad:
                out.append("tensor_hook")
                if facts.is_leaf:
                    out.append("post_accumulate_grad")
        if self._node is not None:
            out += ["node_hook", "node_prehook"]
        if self._module is not None:
            out += [
                k
                for k, (on, method, _) in KINDS.items()
                if on == "module" and hasattr(self._module, method)
            ]
        return out

    def missing(self):
        """``{kind: why it cannot be added here}`` for the tensor kinds a node target lacks."""
        if self._node is None or self._tensor is not None:
            return {}
        why = (
            "the tensor this node made is no longer alive (only the node is): hook the node, "
            "or keep a reference to the tensor and select it again"
        )
        out = {"tensor_hook": why}
        if self._graph_source.is_accumulator(self._node):
            out["post_accumulate_grad"] = "the leaf tensor is no longer alive"
        return out

    def _infos(self):
        if self._node is not None:
            return hooks_of(self._node, self._graph_source)
        if self._module is not None:
            return self._graph_source.module_hooks(self._module)
        return []

    def _update(self):
        entries = []
        for info in self._infos():
            hid = f"h{info.handle.id}"
            fn = info.handle.fn
            entries.append(
                {
                    "id": hid,
                    "kind": info.kind,
                    "name": info.name,
                    "enabled": bool(info.enabled),
                    "source": getattr(fn, "_nbgrad_source", None),
                    "error": getattr(fn, "error", None) if isinstance(fn, _EditorHook) else None,
                }
            )
        root = self._root()
        with self.hold_sync():
            self.target = {
                "kind": (
                    "module"
                    if self._module is not None
                    else "node"
                    if self._node is not None
                    else "none"
                ),
                "id": self._node_id,
                "label": self._label,
                "kinds": self.kinds(),
                "signatures": {k: KINDS[k][2] for k in self.kinds()},
                "examples": {k: EXAMPLES[k] for k in self.kinds()},
                "missing": self.missing(),
                "root": self._root_name(root),
            }
            self.hooks = entries

    def _resync(self):
        """Read the target's hooks again (NOTE [Hooks registered from Python]); the browser
        gets the list only when it changed, and the graph redraws its hook badges then."""
        before = self.hooks
        try:
            self._update()
        except Exception as e:  # noqa: BLE001 - e.g. a module gone: shown in the editor
            self.error = "".join(traceback.format_exception_only(type(e), e)).strip()
            return
        if self.hooks != before:
            self._redraw_graph()

    def _reopen(self):
        if self.comm is None:
            self._resync()
        super()._reopen()

    def _root_name(self, root):
        if root is None:
            return None
        source = source_for(root)
        fn = source.tensor_facts(root).grad_fn if source.is_tensor(root) else None
        return source.node_name(fn) if fn is not None else None

    def _root(self):
        if self.root is not None:
            return self.root
        if self.graph is not None:
            return self.graph.default_root()
        return None

    def _handle(self, hook_id):
        for info in self._infos():
            if f"h{info.handle.id}" == hook_id:
                return info.handle
        raise KeyError(f"no hook {hook_id!r} on {self._label}")

    # -- actions -----------------------------------------------------------------------------
    def add_hook(self, kind, source):
        """Compile ``source`` and register it as a ``kind`` hook on the target; returns the
        hook id (``"h<k>"``)."""
        if kind not in self.kinds():
            raise ValueError(
                f"cannot add a {kind!r} hook to {self._label}; "
                f"possible: {', '.join(self.kinds()) or 'none'}"
            )
        label = f"<hook:{self._label}#{next(_hook_numbers)}>"
        try:
            fn = compile_hook(source, label, self.namespace)
        except (SyntaxError, TypeError) as e:
            self.error = "".join(traceback.format_exception_only(type(e), e)).strip()
            self.status = "the hook was not added"
            raise
        wrapper = _EditorHook(self, label, fn, source, kind)
        on, method, _ = KINDS[kind]
        owner = self._module if on == "module" else self._node if on == "node" else self._tensor
        handle = self._graph_source.register_hook(owner, method, wrapper, kind)
        hid = f"h{handle.id}"
        self._editor_hooks[hid] = wrapper
        self.error = ""
        self.status = f"added {label}"
        if on == "module":  # as in PyTorch: module hooks act on the module's next call
            self.status += (
                "; a module hook acts from the module's next call on (run the cell again to see "
                "it in this graph)"
            )
        self._update()
        self._redraw_graph()
        return hid

    def _redraw_graph(self):
        """Show a hook change in the graph at once (its badges and hook lists)."""
        if self.graph is not None and not self._running:
            self.graph.refresh()

    def edit_hook(self, hook_id, source):
        """Replace the code of a hook added here; it keeps its place in the hook order."""
        handle = self._handle(hook_id)
        wrapper = handle.fn
        if not isinstance(wrapper, _EditorHook):
            raise ValueError(f"hook {hook_id} was not typed in the editor; remove it and add one")
        try:
            fn = compile_hook(source, wrapper.__name__, self.namespace)
        except (SyntaxError, TypeError) as e:
            self.error = "".join(traceback.format_exception_only(type(e), e)).strip()
            raise
        wrapper.fn = fn
        wrapper._nbgrad_source = source
        wrapper.error = None
        self.error = ""
        self.status = f"edited {wrapper.__name__}"
        self._update()

    def set_enabled(self, hook_id, enabled):
        handle = self._handle(hook_id)
        if enabled:
            handle.enable()
        else:
            handle.disable()
        self.status = f"{'enabled' if enabled else 'disabled'} {handle.name}"
        self._update()
        self._redraw_graph()

    def remove_hook(self, hook_id):
        handle = self._handle(hook_id)
        handle.remove()
        wrapper = self._editor_hooks.pop(hook_id, None)
        if wrapper is not None and (self._failed is wrapper or wrapper.__name__ in self.error):
            self._failed = None  # its error goes with it
            self.error = ""
        self.status = f"removed {handle.name}"
        self._update()
        self._redraw_graph()

    def run_backward(self, retain_graph=True, create_graph=False):
        """``root.backward(retain_graph=..., create_graph=...)``, recording which hooks fired.

        The graph is retained by default, so that the editor's graph can be run again after
        each change of a hook (as many times as the user likes). A freed graph is reported and
        nothing runs (NOTE [A freed graph])."""
        root = self._root()
        if root is None:
            self.error = "no tensor to run backward from: give HookEditor(root=...)"
            return
        if self._refuse_freed(root, "backward not run"):
            return
        view = self.graph
        recorder = view.recorder if view is not None and view.recorder is not None else None
        if recorder is None:
            recorder = Recorder(forward=False)
        before = len(recorder.passes)
        self._failed = None
        self._running = True
        _running.failed = None
        error = interrupted = None
        what = f"running backward from {self._root_name(root) or 'the root'}"
        progress = _Progress(self, source_for(root), what)
        try:
            with recorder.resume_backward(), progress:
                root.backward(retain_graph=retain_graph or None, create_graph=create_graph)
        except KeyboardInterrupt as e:  # NOTE [A backward that runs long]
            interrupted = e
            where = _hook_in(e.__traceback__) or progress.where()
        except Exception as e:  # noqa: BLE001 - shown in the editor
            error = e
            if self._failed is None:  # a hook another editor added raised: its error here too
                self._failed = _running.failed
        finally:
            self._running = False
        passes = recorder.passes[before:]

        ids = getattr(recorder, "_ids", None) or IdMap(recorder.graph_source)
        fired = [_hook_call(c, ids) for p in passes for c in p.hook_calls]
        for call in fired:  # a leaf by its name, as the graph draws it
            if view is not None and call["node"]:
                call["node_name"] = view.label(call["node"]) or call["node_name"]
        with self.hold_sync():
            self.fired = fired
            if interrupted is not None:
                self.error = f"interrupted in `{where}`" if where else "interrupted"
                ran = sum(len(p.steps) for p in passes)
                self.status = f"backward interrupted ({ran} nodes ran)"
                for wrapper in self._editor_hooks.values():
                    if wrapper.__name__ == where:
                        wrapper.error = "KeyboardInterrupt: the backward was interrupted here"
            elif error is not None:
                if self._failed is not None:  # the user's own error first
                    self.error = f"{self._failed.__name__} failed:\n{self._failed.error}"
                    hint = _signature_hint(self._failed.kind, self._failed.error)
                else:
                    self.error = "".join(
                        traceback.format_exception_only(type(error), error)
                    ).strip()
                    hint = self._hint_for(error)
                if hint:
                    self.error += "\n\n" + hint
                self.status = "backward failed"
            else:
                self.error = ""
                ran = sum(len(p.steps) for p in passes)
                self.status = (
                    f"backward ran {_count(ran, 'node')}; {_count(len(fired), 'hook')} fired"
                )
        self._update()
        if view is not None:
            view.refresh()
        if interrupted is not None:
            raise interrupted

    def _node_label(self, node):
        """A node's name, or a leaf's name as the graph draws it."""
        source = source_for(node)
        view = self.graph
        if view is not None and source.variable(node) is not None:
            drawn = view.id_of(node)
            if drawn is not None and view.label(drawn):
                return view.label(drawn)
        return source.node_name(node)

    def zero_grad(self):
        """Set ``.grad`` to None on every leaf of the root's graph, as ``optimizer.zero_grad()``
        does (gradients otherwise pile up across the editor's runs)."""
        root = self._root()
        if root is None:
            self.error = "no tensor to run backward from: give HookEditor(root=...)"
            return
        if self._refuse_freed(root, ".grad not zeroed"):
            return
        source = source_for(root)
        leaves = 0
        for node in _graph_nodes(source, root):
            var = source.variable(node)
            if var is not None:
                var.grad = None
                leaves += 1
        self.status = f"zeroed the .grad of {leaves} leaves"
        self._update()
        if self.graph is not None:
            self.graph.refresh()

    def _hint_for(self, error):
        """What to do about an error that came from the engine, not from a hook's own code."""
        text = str(error)
        if "returned an incorrect number of values" in text:
            for wrapper in self._editor_hooks.values():
                if wrapper.kind in ("node_prehook", "node_hook"):
                    return _signature_hint(wrapper.kind, text)
        if "backward through the graph a second time" in text:
            return _FREED_HINT
        return ""

    def _refuse_freed(self, root, what):
        """Say so and return True when ``root``'s graph was freed (NOTE [A freed graph])."""
        source = source_for(root)
        freed = _freed_node(source, root)
        if freed is None:
            return False
        with self.hold_sync():
            self.error = (
                f"The graph of {self._root_name(root) or 'the root'} was freed by a backward "
                f"without retain_graph ({self._node_label(freed)} has no saved tensors left), "
                "so backward cannot run through it again. Nothing was run or changed.\n\n"
                + _FREED_HINT
            )
            self.status = f"{what}: the graph was freed"
        return True

    def _hook_failed(self, wrapper):
        self._failed = wrapper
        self.error = f"{wrapper.__name__} failed:\n{wrapper.error}"
        self._update()

    def to_svg(self) -> str:
        has_target = self._node is not None or self._module is not None
        return hooks_svg(self._label if has_target else None, self.hooks, self.fired)

    def __repr__(self):
        if self._node is None and self._module is None:
            return "HookEditor(no target: select a node in the graph)"
        return f"HookEditor({self._label}: {len(self.hooks)} hooks)"

    # -- messages ----------------------------------------------------------------------------
    def _msg_add(self, content):
        self.add_hook(content["kind"], content["source"])

    def _msg_edit(self, content):
        self.edit_hook(content["id"], content["source"])

    def _msg_enable(self, content):
        self.set_enabled(content["id"], content["enabled"])

    def _msg_remove(self, content):
        self.remove_hook(content["id"])

    def _msg_zero_grad(self, content):
        self.zero_grad()

    def _msg_run_backward(self, content):
        try:
            self.run_backward(content.get("retain_graph", True), content.get("create_graph", False))
        except KeyboardInterrupt:  # shown in the editor; it was meant for this backward
            if not self.status.startswith("backward interrupted"):
                self.error = "interrupted"  # after the backward, while showing its result

    def _msg_target(self, content):
        self.set_target(content.get("id") or None)


def _count(n: int, noun: str) -> str:
    """``1 hook``, ``2 hooks``: a count with its noun in the right number."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
