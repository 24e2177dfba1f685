"""How a :class:`~nbgrad.notebook.recorder.Recorder` takes a forward call while it runs (NOTE
[Recording cost] in records.py): the pairs its tensors are kept as, the user code line that
made it, and the flat list the calls are kept in (:class:`_Calls`), which
:class:`~nbgrad.notebook.records.RecordList` reads as Records."""

from __future__ import annotations

import weakref
from array import array
from itertools import repeat
from operator import is_

from nbgrad import Tensor as _Tensor
from nbgrad.autograd.graph import try_get_grad_accumulator

__all__ = ["CALL_FIELDS", "DEAD"]


# NOTE [Forward capture reads nbgrad's tensors]
# The functions below run inside every op of a recorded block, on the tensors of nbgrad's own
# forward listener, so they read the Tensor's public attributes directly rather than through
# the graph source (a call per read). Everything read later, when records, traces and
# snapshots are made, goes through ``Recorder.graph_source`` (see NOTE [One reader of the graph]).
def _leaf_pair(t):
    """The pair a record keeps for a tensor without grad_fn (see NOTE [Recording cost])."""
    if t.requires_grad:
        acc = try_get_grad_accumulator(t)
        if acc is not None:
            return (acc, 0)
    return (None, (t.shape, t.dtype, t.device, t.requires_grad))


def _input_pairs(args):
    """The flat pairs of the tensors among ``args`` (see NOTE [Recording cost])."""
    inputs = []
    for a in args:
        ta = type(a)
        if ta is _Tensor or (ta is not float and ta is not int and isinstance(a, _Tensor)):
            fn = a.grad_fn
            inputs += (fn, a.output_nr) if fn is not None else _leaf_pair(a)
        elif ta is list:
            for t in a:
                if isinstance(t, _Tensor):
                    fn = t.grad_fn
                    inputs += (fn, t.output_nr) if fn is not None else _leaf_pair(t)
    return inputs


def _foreign_pair(t):
    """The pair a record keeps for another framework's tensor (see NOTE [Recording cost])."""
    fn = t.grad_fn
    if fn is not None:
        return (fn, t.output_nr)
    return (None, (tuple(t.shape), t.dtype, t.device, t.requires_grad))


def _user_line(frame, cell, framework_dirs):
    """``(filename, line)`` of the user code that made a call: the first frame, from
    ``frame`` up, in ``cell`` (a cell's file), or with no cell outside ``framework_dirs``."""
    while frame is not None:
        name = frame.f_code.co_filename
        if name == cell or (cell is None and not name.startswith(framework_dirs)):
            return name, frame.f_lineno
        frame = frame.f_back
    return None, None


# NOTE [Calls kept flat]
# A recorder keeps each forward call as its nine fields (op, inputs, outputs, node, elapsed,
# filename, line, group, weak references to the outputs) in one flat list, eight entries a
# call (``_Calls``, ``CALL_FIELDS``), with the elapsed times apart in an array of floats, not
# a tuple a call: 72 bytes a call, not 112, its pointer and a float of 24, and no object for
# the garbage collector to count. When the recording stops, the weak reference of each
# output that has died is replaced by one shared dead reference (``DEAD``): a chain's
# intermediate results die as the cell runs, and their 100,000 references held 8 MB. Readers
# see the calls as tuples of nine (``_raw[k]``, ``_raw[a:b]``, made when read).
CALL_FIELDS = 8  # entries a call in the flat list (its elapsed time apart)
_REFS = 7  # the entry of the weak references
_FLAT_AT = (0, 1, 2, 3, None, 4, 5, 6, 7)  # a call's field -> its entry (None: the elapsed)


class _Gone:
    pass


DEAD = weakref.ref(_Gone())  # a weak reference whose object is gone (NOTE [Calls kept flat])
_DEAD_TUPLES: dict = {}  # n -> (DEAD,) * n


class _Calls:
    """A recorder's forward calls as one flat list, ``CALL_FIELDS`` entries a call, and their
    elapsed times (NOTE [Calls kept flat]); read as a sequence of tuples."""

    __slots__ = ("flat", "elapsed")

    def __init__(self):
        self.flat = []
        self.elapsed = array("d")

    def append(self, call):
        """Add a call given as its tuple of nine fields."""
        self.flat.extend(call[:4])
        self.flat.extend(call[5:])
        self.elapsed.append(call[4])

    def last_op(self):
        return self.flat[-CALL_FIELDS]

    def __len__(self):
        return len(self.elapsed)

    def __bool__(self):
        return bool(self.elapsed)

    def __getitem__(self, k):
        if type(k) is slice:
            start, stop, step = k.indices(len(self.elapsed))
            if step != 1 or stop <= start:
                return [self[i] for i in range(start, stop, step)]
            return self.fields(start, *range(9), stop=stop)
        n = len(self.elapsed)
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError("call index out of range")
        at = k * CALL_FIELDS
        call = self.flat[at : at + CALL_FIELDS]
        call.insert(4, self.elapsed[k])
        return tuple(call)

    def __delitem__(self, k):
        start, stop, step = k.indices(len(self.elapsed))
        if step != 1:
            raise ValueError("calls are dropped as one run")
        stop = max(start, stop)
        del self.flat[start * CALL_FIELDS : stop * CALL_FIELDS]
        del self.elapsed[start:stop]

    def __iter__(self):
        return iter(self[:])

    def fields(self, start, *which, stop=None) -> list:
        """The fields ``which`` (their indices in a call's tuple) of each call from ``start``
        on (to ``stop``), a tuple a call (made in C: no call's whole tuple made)."""
        stop = len(self.elapsed) if stop is None else stop
        flat, at, end = self.flat, start * CALL_FIELDS, stop * CALL_FIELDS
        columns = [
            self.elapsed[start:stop]
            if _FLAT_AT[j] is None
            else flat[at + _FLAT_AT[j] : end : CALL_FIELDS]
            for j in which
        ]
        return list(zip(*columns))

    def signature(self, start) -> list:
        """``(op, filename, line, node is None)`` of each call from ``start`` on (what steps.py
        compares a step by), equal ones one tuple: a loop's calls repeat a few, and a tuple a
        call held 8 MB for a 100,000-call chain's step."""
        flat, at, by = self.flat, start * CALL_FIELDS, CALL_FIELDS
        nodes = flat[at + 3 :: by]
        calls = zip(
            flat[at::by], flat[at + 4 :: by], flat[at + 5 :: by], map(is_, nodes, repeat(None))
        )
        shared: dict = {}
        return [shared.setdefault(call, call) for call in calls]

    def forget_dead(self, made, some):
        """Replace the weak reference of each output gone by ``DEAD`` (NOTE [Calls kept
        flat]), in the calls and in the Records made of them (``made`` in order, ``some`` by
        index)."""
        flat = self.flat
        flat[_REFS::CALL_FIELDS] = [
            (DEAD if refs() is None else refs) if type(refs) is not tuple else _gone(refs)
            for refs in flat[_REFS::CALL_FIELDS]
        ]
        for k, rec in [*enumerate(made), *some.items()]:
            rec._outputs_ref = flat[k * CALL_FIELDS + _REFS]


def _gone(refs: tuple) -> tuple:
    """``refs`` (the weak references to a call's outputs), or ``DEAD`` for each when all are
    gone (one tuple a length: NOTE [Calls kept flat])."""
    if not refs or any(r() is not None for r in refs):
        return refs
    dead = _DEAD_TUPLES.get(len(refs))
    if dead is None:
        dead = _DEAD_TUPLES[len(refs)] = (DEAD,) * len(refs)
    return dead
