"""The steps of a training cell: what a recorder keeps of each repeat of a step (the first
ones and the last in full, the others counted), and how it knows which step is the last.

NOTE [Repeated steps counted]
A training cell repeats one step (the optimizer's update and the forward, then the backward
pass) tens of times. What its graph view shows is the last step, the earlier ones folded into
one series box (NOTE [Series] in fold.py), and recording every step in full, then drawing them
all, cost about as much again as running them (``tests/benchmarks/notebook_cells.py --only
training`` prints the figures, nbgrad's code and PyTorch's, through the magic and with
``record()`` alone). Exact detail of every pass cannot cost little, so a recorder made with
``keep_steps`` (the magic's) records in full the steps it may show, the last one always, and
only counts the others:

- A step is what was recorded between the ends of two backward passes that ran outside any
  other. Its signature is the op, file and line of each call, whether the call made a node,
  the module paths called and the number of passes. The first step, and any step unlike the
  one before it, is recorded in full.
- A step that repeats the one before may be the last one, which is shown; a step known not
  to be the last is only counted. The magic wraps each ``for`` loop of the cell's own code
  (not those inside a function; the name they call is in the namespace only while the cell
  runs) in a :class:`Loop`, which knows how many items its iterable has left
  (``operator.length_hint``: a range, a list, a DataLoader; of ``enumerate(X)``, X's; of
  ``zip``, its shortest argument's). When a step ends, the loop that yielded last during it
  says whether the next step is the last of that loop: if at least two items are left, the
  next step is counted, else it is recorded in full. A loop of unknown length (a generator,
  ``while``) never counts a step: every step is recorded.
- A counted step of nbgrad's costs what watching costs (the calls still pass through the
  observers) and little more: each call's op name (to check that it repeats the step
  recorded before it) and the one sum of its output that finds a NaN or an Inf (NOTE
  [Finite at a sum's cost] in answers_values.py; a dot for a float32 output of more than
  8,192 values, see ``_finite``); an op that only rearranges its first argument's values
  (``t``, ``view``, ``reshape``...) is not checked when that argument is a leaf checked
  finite earlier in the step and not changed since (the same tensor, the same version:
  nbgrad's ``w.t()`` of a weight the optimizer just updated reads it again otherwise); no
  record, no module group (the module hooks are taken out), no backward trace (the pass
  runs unwatched, ``GraphObserver.node_events``). A non-finite output ends the counting for
  the rest of the block: that call and everything after it are recorded, so the origin of a
  NaN is always shown; so does a failed backward pass. ``counted_unlike`` counts the counted
  steps whose calls differed from the step before.
- A torch step is watched through a TorchFunctionMode, and watching alone costs more than a
  counted step may: of the 784-256-10 MLP's 840 us step, a mode that only passes its calls
  on adds ~95 us, and a counted step with the mode on ~300 us (its calls' checks, the
  gradient flow's reads, the call chain). So a torch loop's counted iterations run
  unwatched: when the loop of a counted step gives its next item, the mode comes off torch's
  stack (``_ModeHandle.pause``: only when it is the only mode there; a user's mode, around
  the loop or inside it, keeps the path above, so that theirs sees what it saw) and the
  loop's ``__next__`` becomes where an iteration ends. Each leaf of the last pass recorded
  gets a post-accumulate-grad hook that notes the squared norm of each gradient it gets, as
  the gradient flow reads it at a pass's end (so before a clip after ``backward``), and
  whether it holds NaN/Inf. An iteration's end counts the passes its leaves saw, a step
  each, and tells the subscribers of each (``counted_squares``). An iteration whose leaves
  did not each get one gradient (a ``continue``, two passes), or that made another number of
  nodes than the one before it (torch's sequence number), counts as unlike, and the next
  iteration runs watched, as a counted step; its step's end lets the next ones run unwatched
  again. The mode is back on for the iteration before the loop's last (the step shown
  starts after that iteration's backward pass, with the optimizer's step, and must be
  recorded as it ran), when the loop ends, when a ``break`` or an exception leaves it
  (``Loop.__del__``), and when the recording stops.
- What an unwatched iteration hides is its calls. A NaN/Inf is looked for in the gradients
  the leaves got, at each iteration's end, and in the leaves' values when the run ends
  (reading them at each iteration's end as well cost ~40 us an iteration, as much again as
  the rest): found, it stops the counting (everything after is recorded), and the answer
  says where it was found, which iterations ran unrecorded, and that ``%%autograd
  --all-steps`` (``keep_steps`` None) records every step and shows the call that made it. A
  NaN that reaches neither is not found (a side computation's). An unwatched iteration
  costs ~60 us over the plain step there (the leaves' hooks ~35, mostly a dot of each
  gradient; the iteration's end ~20, half of it the gradient flow's), what the NaN checks
  and the flow's reads alone cost: ``tests/benchmarks/counted_steps.py`` prints the counted
  run over the plain one, 117 us a step against 326 with the mode kept on (load 2, 100
  steps, the four recorded in full included), and ``--cell`` the 60-step cell through the
  magic: 74.0 ms over the plain 53.9 (1.37x; 1.64x with the mode kept on), of which the
  final drawing is 8.9 and the run +11.1.
- Of the steps recorded in full, at most ``keep_steps`` repeats in a row are kept (a loop of
  unknown length); the oldest is dropped and counted, and ``step_norms`` keeps the norm of
  the gradient each leaf got in it.
- The snapshot says how many steps were kept and counted (``kept_steps``, ``counted_steps``);
  the layout opens the graph as the whole run would open (groups collapsed and series folded
  for that many steps) and the series box of the steps counts them all: "×59 more (56
  counted)" for the first step, the two repeats that show the step repeats, and the last.
- When the loop ends sooner than its length said (a ``break``, an exception), the last steps
  were counted, not recorded: ``counted_at_end`` says how many, and the summary says that
  the last step drawn is not the last one that ran.

What is shown is exact: every step drawn is recorded as it was before, with its backward
pass; what the counted steps would add is their number. The gradient flow over steps
(``answers_flow.py``) needs each module's gradient norm at every step: the subscribers are
told of a counted pass's end too, and read the parameters' ``.grad`` then (an unwatched
pass's norms come from its leaves' hooks); ``step_norms`` keeps each leaf's norm for the
steps dropped.
"""

from __future__ import annotations

import math
import weakref
from operator import length_hint

import numpy as np

from .answers_values import nonfinite_kinds

__all__ = ["Loop", "RepeatedSteps"]

_sum = np.add.reduce
_isfinite = math.isfinite


def _hint(iterable) -> int:
    """How many items ``iterable`` has (``operator.length_hint``), -1 when it cannot say."""
    try:
        return length_hint(iterable, -1)
    except Exception:  # noqa: BLE001 - a length that fails to say: unknown
        return -1


class Loop:
    """The iterator of a ``for`` loop of a recorded cell: the items of ``iterator`` (made from
    ``iterable``), counting how many are left (``left``: -1 when unknown) and how many were
    given (``done``) for ``recorder`` (NOTE [Repeated steps counted])."""

    __slots__ = ("_next", "left", "done", "seq", "advance", "unwatched", "_recorder", "__weakref__")

    def __init__(self, iterable, iterator, recorder):
        self._next = iterator.__next__
        self.left = _hint(iterable)
        self.done = 0
        self.seq = self.advance = None  # the graph's sequence number at the last item, and
        # how far it went in the iteration before (the nodes it made)
        self.unwatched = False  # its iterations run with the watch mode off
        self._recorder = recorder

    def __iter__(self):
        return self

    def __next__(self):
        try:
            item = self._next()
        except StopIteration:
            if self.unwatched:  # (its length said more)
                self._recorder._unwatched_end(self, self.done - 1, True)
            raise
        self.left -= 1
        self.done += 1
        self._recorder._yielded(self)
        return item

    def __del__(self):
        if self.unwatched:  # a ``break`` or an exception left the loop in an unwatched step
            try:
                self._recorder._unwatched_end(self, self.done - 1, True)
            except Exception:  # noqa: BLE001 - (the recorder's stop ends it too)
                pass


def _finite(result) -> bool:
    """Whether each floating output of a call holds only finite values: False also when the
    check overflowed, and the call is then checked again on the full path (NOTE [Finite at a
    sum's cost] in answers_values.py)."""
    for t in result if type(result) is tuple or type(result) is list else (result,):
        try:
            a = t.numpy(force=True)
        except Exception:  # noqa: BLE001 - not a tensor: nothing to check
            continue
        if a.dtype.kind != "f" or not a.size:
            continue
        if a.size > _LARGE and a.dtype.char == "f":  # (float32: ``==`` costs 2.5 us)
            # a float32 output of more than 8,192 values (an activation, a weight the
            # optimizer updated): BLAS's dot of it with itself, errstate included, is faster
            # than the sum from about that size (5.6 against 7.1 us for 16,384 values, 30
            # against 76 us for 200,704), and overflows sooner (from about 1e19), which only
            # sends the call to the full path
            mem = a.T if a.flags.f_contiguous and not a.flags.c_contiguous else a
            if mem.flags.c_contiguous:
                flat = mem.reshape(-1)
                with np.errstate(over="ignore", invalid="ignore"):
                    if not _isfinite(float(np.dot(flat, flat))):
                        return False
                continue
        if not _isfinite(_sum(a, axis=None)):
            return False
    return True


_LARGE = 8192  # elements; see _finite

# ops whose output holds only values of their first argument (NOTE [Repeated steps counted])
_REARRANGING = frozenset(
    ("t", "transpose", "permute", "reshape", "view", "flatten", "squeeze", "unsqueeze")
    + ("expand", "contiguous", "clone", "detach")
)


def _pauses(handle, source) -> bool:
    """Whether ``handle`` watches ``source`` through a mode it can pause (torch's)."""
    return hasattr(handle, "pause") and getattr(handle.mode, "source", None) is source


def _noting(squares, kinds):
    """A post-accumulate-grad hook that notes the squared norm of its leaf's new gradient, as
    the gradient flow reads it (``answers_flow.py``), and the kinds of NaN/Inf it holds."""

    def hook(leaf):
        try:  # (inside the user's backward pass: never raises)
            a = leaf.grad.numpy(force=True).reshape(-1)
        except Exception:  # noqa: BLE001 - values NumPy cannot hold (bfloat16...): no norm
            a = None
        if a is None or a.dtype.kind != "f":
            squares.append(None)
            return
        square = float(np.dot(a, a))
        squares.append(square)
        if not _isfinite(square):  # (or an overflow of finite values: then no kinds)
            kinds.append((len(squares) - 1, nonfinite_kinds(a)))

    return hook


class _Unwatched:
    """The counted iterations of a loop running with the watch mode off: the paused mode's
    ``handle``, the ``leaves`` of the last pass recorded (``{id: (leaf, its accumulator)}``),
    what their hooks note (``noted``: ``{id: (squared norms, [(pass, NaN/Inf kinds)])}``), the
    hooks' handles, the nodes an iteration made before it (``advance``), the ``loop`` (a weak
    reference) and its ``first`` iteration."""

    __slots__ = ("handle", "leaves", "noted", "hooks", "advance", "loop", "first")

    def __init__(self, handle, leaves, loop):
        self.handle, self.leaves = handle, leaves
        self.noted = {key: ([], []) for key in leaves}
        self.hooks: list = []
        self.advance, self.loop, self.first = loop.advance, weakref.ref(loop), loop.done - 1

    def remove_hooks(self):
        for h in self.hooks:
            h.remove()
        self.hooks = []

    def nonfinite(self, iteration, values):
        """The first NaN/Inf found at the end of ``iteration``, in a gradient a leaf got (its
        hook's note) or, with ``values``, in a leaf's values now: ``(accumulator, leaf, where,
        kinds, first iteration unwatched, iteration)``, or None."""
        for key, (_, found) in self.noted.items():
            for _, kinds in found:
                if kinds:
                    leaf, node = self.leaves[key]
                    return (node, leaf, "gradient", kinds, self.first, iteration)
        for leaf, node in self.leaves.values() if values else ():
            if not _finite(leaf):
                kinds = nonfinite_kinds(leaf.numpy(force=True))
                if kinds:
                    return (node, leaf, "value", kinds, self.first, iteration)
        return None


def _unchanged(known, t, version) -> bool:
    """Whether ``t`` is a leaf in ``known`` (checked finite) at the version it was checked at
    (``version``: the graph source's reader)."""
    entry = known.get(id(t))
    if entry is None or entry[0] is not t:
        return False
    try:
        return version(t) == entry[1]
    except Exception:  # noqa: BLE001 - no version to compare: checked again
        return False


class RepeatedSteps:
    """What a :class:`~nbgrad.notebook.recorder.Recorder` does at the end of each step
    (NOTE [Repeated steps counted])."""

    def _init_steps(self, keep_steps):
        self.keep_steps = keep_steps  # the most repeats in a row kept in full (None: all)
        self.counted_steps = 0  # the steps counted, not recorded (or dropped)
        self.counted_unlike = 0  # counted steps whose calls differed from the step before
        self.counted_at_end = 0  # the steps counted since the last one recorded
        self.step_norms: list = []  # per dropped step: {leaf's AccumulateGrad: gradient norm}
        self._steps: list = []  # the kept steps: (record, group, pass, signature) at the start
        self._step_start = (0, 0, 0)
        self._counting = False  # the step running now is counted
        self._may_count = True  # False once something must be recorded to the end
        self._counted_ops: list = []  # the op names of the step counted now
        self._finite_leaves: dict = {}  # id -> (leaf, version) checked finite in this step
        self._counted_passes: set = set()  # the ids of its graph tasks
        self._reference = None  # the op names of the last step recorded
        self._loop = None  # the Loop that yielded last in this step
        self._counted_loop = None  # the loop whose counted step runs now (until it yields)
        self._unwatched = None  # the _Unwatched run of a loop's counted iterations
        self._partly_seen = False  # the counted step running began unwatched (not compared)
        self._squares = None  # (pass count, {id(leaf): squared norm of its gradient then})
        self.nonfinite_counted = None  # a NaN or Inf found at an unwatched iteration's end

    def loop(self, iterable, *args, outer=None, **kwargs):
        """``iterable`` as the magic runs a loop of its cell (NOTE [Repeated steps counted]);
        ``outer(iterable, *args, **kwargs)`` for a loop over ``enumerate(iterable, ...)`` or
        ``zip(iterable, *args)`` (``outer``: what the cell's name is), counted by
        ``iterable``'s length, or the shortest argument's, when ``outer`` is the builtin."""
        if outer is enumerate:
            return enumerate(self.loop(iterable), *args, **kwargs)
        if outer is zip:
            parts = (iterable, *args)
            hints = [_hint(p) for p in parts]  # (before the zip takes anything)
            loop = self.loop(zip(*parts, **kwargs))
            if type(loop) is Loop and min(hints) >= 0 and len(set(map(id, parts))) == len(parts):
                loop.left = min(hints)  # (one iterator given twice: its length does not say)
            return loop
        if outer is not None:
            return self.loop(outer(iterable, *args, **kwargs))
        if self.keep_steps is None:
            return iterable
        try:
            iterator = iter(iterable)
        except Exception:  # noqa: BLE001 - the for statement raises it, in the cell's frame
            return iterable
        return Loop(iterable, iterator, self)

    def _yielded(self, loop):
        """``loop`` gave its next item: the unwatched iteration before it ended, or the counted
        iterations run unwatched from this one on (NOTE [Repeated steps counted])."""
        if self.graph_source.name == "torch":  # (nbgrad's steps are counted watched)
            seq = self.graph_source.next_sequence_nr()
            if loop.seq is not None:
                loop.advance = seq - loop.seq
            loop.seq = seq
            if loop.unwatched:
                self._unwatched_end(loop, loop.done - 2, loop.left < 2)
            elif self._counting and loop is self._counted_loop and loop.left >= 2:
                self._unwatch(loop)
        if not loop.unwatched:
            self._loop = loop

    def _unwatch(self, loop):
        """Run the iterations of ``loop`` from this one on with the watch mode off, the leaves
        of the last pass recorded noting their gradients, if the mode is torch's only one."""
        handle = next((h for h in self._watching if _pauses(h, self.graph_source)), None)
        if handle is None or loop.advance is None or self._open_groups or not handle.pause():
            return
        leaves = {}
        for acc in self.passes[-1].accumulations if self.passes else ():
            leaf = acc.variable()
            if leaf is not None:
                leaves[id(leaf)] = (leaf, acc.node)
        if not leaves:
            handle.resume()
            return
        run = _Unwatched(handle, leaves, loop)
        try:
            for key, (leaf, _) in leaves.items():
                hook = _noting(*run.noted[key])
                run.hooks.append(leaf.register_post_accumulate_grad_hook(hook))
        except Exception:  # noqa: BLE001 - a leaf that takes no hook: the mode stays on
            run.remove_hooks()
            handle.resume()
            return
        self._unwatched = run
        self._counted_loop = None
        loop.unwatched = True

    def _unwatched_end(self, loop, iteration, last):
        """An unwatched iteration of ``loop`` ended (``iteration``, from 0; ``last``: the loop
        ends, or the next iteration is the one before the last): count the passes its leaves
        saw, tell the subscribers of each, check the gradients for NaN/Inf (and the leaves'
        values when the run ends), and put the mode back on where the run ends."""
        run, self._unwatched = self._unwatched, None
        loop = loop or run.loop()
        if iteration is None:
            iteration = loop.done - 1 if loop is not None else run.first
        seen = {len(squares) for squares, _ in run.noted.values()}
        passes = max(seen)
        regular = seen == {1} and (last or loop is None or loop.advance == run.advance)
        for j in range(passes):
            self._pass_count += 1
            self.counted_steps += 1
            self.counted_at_end += 1
            self._squares = (
                self._pass_count,
                {key: squares[j] for key, (squares, _) in run.noted.items() if j < len(squares)},
            )
            self._notify()
        if not regular and (passes or not last):
            self.counted_unlike += 1
        found = run.nonfinite(iteration, values=False)
        if not last and regular and found is None:
            for squares, _ in run.noted.values():
                squares.clear()
            self._unwatched = run
            return
        found = found or run.nonfinite(iteration, values=True)
        run.remove_hooks()
        run.handle.resume()
        if loop is not None:
            loop.unwatched = False
        self._partly_seen = True  # (its first calls ran unwatched)
        self._counted_ops = []
        if found is not None:
            self.nonfinite_counted = found
            self._stop_counting()

    def counted_squares(self):
        """``{id(leaf): squared norm of its gradient}`` for the pass that just ended, when it
        ran unwatched (the gradient flow's); else None."""
        got = self._squares
        return got[1] if got is not None and got[0] == self._pass_count else None

    def _stop_counting(self):
        """Counting would hide something (a NaN, a failed pass): every step is recorded from
        now on."""
        self._may_count = False
        self._set_counting(False)
        self._finite_leaves = {}

    def _set_counting(self, on):
        """Count the steps from now on, or record them; the module hooks are taken out while
        counting (a module call makes no group then) and put back after."""
        if not on and self._unwatched is not None:  # (the recording stops in one)
            self._unwatched_end(None, None, True)
        if on and not self._counting:
            for h in self._module_handles:
                h.remove()
            self._module_handles = []
        elif not on and self._counting and self.running and self.forward:
            self._install_module_hooks([self.graph_source])
        self._counting = on

    def _counted_call(self, name, args, result) -> bool:
        """A forward call of a counted step: True when it is only counted (its output is
        finite), False when it must be recorded (and the counting stops)."""
        known = self._finite_leaves
        version = self.graph_source.version
        if name in _REARRANGING and args and _unchanged(known, args[0], version):
            self._counted_ops.append(name)  # its values are a leaf's, finite: no check
            return True
        if _finite(result):
            self._counted_ops.append(name)
            if getattr(result, "grad_fn", True) is None:  # a leaf (a parameter updated)
                try:
                    known[id(result)] = (result, version(result))
                except Exception:  # noqa: BLE001 - no version (an inference tensor): not kept
                    pass
            return True
        self._stop_counting()
        return False

    def _next_counted(self, repeats) -> bool:
        """Whether the step after the one that just ended is counted: it repeats, and the
        loop that yielded in it has at least two items left."""
        loop, self._loop = self._loop, None
        counted = (
            repeats
            and self._may_count
            and loop is not None
            and loop.left >= 2
            and not self.nonfinite_found
            and not self._open_groups
        )
        self._counted_loop = loop if counted else None
        return counted

    def _step_ended(self):
        """A backward pass ran outside any other: what was recorded since the last one ended
        is a step."""
        if self._counting:
            self._count_step()
            return
        r0, g0, p0 = self._step_start
        raw, modules = self._raw, self.modules
        signature = (
            raw.signature(r0),  # [(op, filename, line, node is None), ...]
            [g.path for g in modules[g0:]],
            len(self.passes) - p0,
        )
        steps = self._steps
        steps.append((r0, g0, p0, signature))
        self._step_start = (len(raw), len(modules), len(self.passes))
        self.counted_at_end = 0
        failed = any(t.error is not None for t in self.passes[p0:])
        run = 0
        for step in reversed(steps):
            if step[3] != signature or run > self.keep_steps:
                break
            run += 1
        if run > self.keep_steps and not self.nonfinite_found and not self._open_groups:
            first = len(steps) - run
            if all(t.error is None for t in self.passes[steps[first][2] : steps[first + 1][2]]):
                self._drop_step(first)
        self._reference = [x[0] for x in signature[0]]
        self._set_counting(not failed and self._next_counted(run > 1))

    def _count_step(self):
        """A counted step ended."""
        self.counted_steps += 1
        self.counted_at_end += 1
        if self._partly_seen:
            self._partly_seen = False
        elif self._counted_ops != self._reference:
            self.counted_unlike += 1
        self._counted_ops = []
        self._finite_leaves = {}
        self._set_counting(self._next_counted(True))

    def _drop_step(self, i):
        """Drop kept step ``i``, counting it."""
        steps = self._steps
        r0, g0, p0, _ = steps[i]
        r1, g1, p1, _ = steps[i + 1]
        nr, ng, np_ = r1 - r0, g1 - g0, p1 - p0
        norms = {}
        for trace in self.passes[p0:p1]:
            for acc in trace.accumulations:
                norms[acc.node] = getattr(acc.grad, "norm", None)
        with self._lock:
            del self._raw[r0:r1]
            del self.records._made[r0:]
            for g in self.modules[g1:]:
                g.start -= nr
                if g.end is not None:
                    g.end -= nr
            del self.modules[g0:g1]
            del self.passes[p0:p1]
            del steps[i]
            for k in range(i, len(steps)):
                r, g, p, signature = steps[k]
                steps[k] = (r - nr, g - ng, p - np_, signature)
            r, g, p = self._step_start
            self._step_start = (r - nr, g - ng, p - np_)
            self.counted_steps += 1
            self.step_norms.append(norms)

    def _steps_note(self) -> str:
        """What the summary says of the steps counted ("" when none was)."""
        if not self.counted_steps:
            return ""
        note = f"; {self.counted_steps} repeats of a step counted, not recorded"
        if self.counted_at_end:
            note += (
                f" (the last {self.counted_at_end} of them ran after the last step drawn: "
                "the loop ended before its length said)"
            )
        return note
