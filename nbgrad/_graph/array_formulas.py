"""Which formulas of the op table run on NumPy arrays as well as on Tensors, found by tracing.

A row declares ``on_arrays=True`` when its formulas compute on arrays what they compute on
Tensors (NOTE [Backward on arrays] in nbgrad/_graph/table_node.py); :func:`check_on_arrays`
holds it to that at import, by calling each formula on probes, never by reading its bytecode.
"""

from __future__ import annotations

import types

# NOTE [Formulas traced on probes]
# Whether a formula runs on arrays is decided from what it does to its parameters, which
# Python lets us watch without reading its bytecode (whose opcodes change between versions):
# the formula is called again with a fresh globals dict and a ``_Probe`` for each parameter.
# - A probe supports ``+ - * /`` (either side), unary ``-`` and comparisons, with another
#   probe or a Python int or float; each gives a new probe. Anything else (``**``, ``@``, a
#   method or attribute, indexing, ``abs``, an operand of another type) raises ``_NotOnArrays``.
# - A global the formula names is, in the fresh globals, a stand-in that gives a probe when the
#   original is marked ``on_arrays`` (a row function of ``nbgrad.derivatives.opinfo``, which
#   calls the row's kernel on arrays, or ``zeros_like``) and its arguments are probes or
#   numbers; any other global, and every builtin, raises. A closure (its cells could hold
#   anything, a Tensor) does not qualify.
# - ``bool`` of a probe (a condition, ``a if alpha == 1 else b``) picks a branch: the formula
#   is called once per path through its conditions, and qualifies when every path does.
# What a probe cannot see is ``is`` (``dim is None``), which takes one branch only: a formula
# that tests a parameter with ``is`` qualifies when the branch a probe takes does.
_MAX_PATHS = 64


class _NotOnArrays(Exception):
    """What the formula did that arrays do not do as Tensors do."""


class _Probe:
    __slots__ = ("_trace",)

    def __init__(self, trace):
        self._trace = trace

    def _op(self, other, what):
        if type(other) is _Refused:
            raise _NotOnArrays(other.reason)
        if not (type(other) is _Probe or type(other) in (int, float)):
            raise _NotOnArrays(f"{what} with an operand of type {type(other).__name__}")
        return _Probe(self._trace)

    def __neg__(self):
        return _Probe(self._trace)

    def __bool__(self):
        return self._trace.choose()

    def __getattr__(self, name):
        raise _NotOnArrays(f"the attribute or method '{name}'")

    def __array__(self, *args, **kwargs):
        raise _NotOnArrays("a NumPy function")

    __hash__ = None


def _operator(symbol, allowed):
    def method(self, other=None):
        if not allowed:
            raise _NotOnArrays(f"'{symbol}'")
        return self._op(other, f"'{symbol}'")

    return method


# (method names, the operator, whether a formula on arrays may use it)
_OPERATORS = [
    *[(f"__{n}__ __r{n}__", s, True) for n, s in [("add", "+"), ("sub", "-"), ("mul", "*")]],
    ("__truediv__ __rtruediv__", "/", True),
    *[(f"__{n}__", n, True) for n in ("eq", "ne", "lt", "le", "gt", "ge")],
    *[(f"__{n}__ __r{n}__", s, False) for n, s in [("pow", "**"), ("matmul", "@"), ("mod", "%")]],
    *[(f"__{n}__ __r{n}__", s, False) for n, s in [("and", "&"), ("or", "|"), ("xor", "^")]],
    ("__floordiv__ __rfloordiv__", "//", False),
    ("__pos__", "unary +", False),
    ("__invert__", "~", False),
    ("__abs__", "abs", False),
]
for _names, _symbol, _allowed in _OPERATORS:
    for _name in _names.split():
        setattr(_Probe, _name, _operator(_symbol, _allowed))


class _Trace:
    """The branches one call takes (``path``), and where the next call goes."""

    def __init__(self):
        self.path = []
        self.depth = 0

    def choose(self):
        if self.depth == len(self.path):
            self.path.append(False)
        taken = self.path[self.depth]
        self.depth += 1
        return taken

    def next_path(self):
        """Depth first: flip the last False to True and forget what came after it."""
        while self.path and self.path[-1]:
            self.path.pop()
        if not self.path:
            return False
        self.path[-1] = True
        self.depth = 0
        return True


class _Refused:
    """A global of the formula that is no function marked ``on_arrays``."""

    __slots__ = ("reason",)

    def __init__(self, name):
        self.reason = f"'{name}', which is no function marked on_arrays"

    def __call__(self, *args, **kwargs):
        raise _NotOnArrays(self.reason)

    def __getattr__(self, attr):
        raise _NotOnArrays(self.reason)


def _stand_in(name, value, trace):
    if not getattr(value, "on_arrays", False):
        return _Refused(name)

    def call(*args, **kwargs):
        for a in (*args, *kwargs.values()):
            if not (type(a) is _Probe or type(a) in (int, float)):
                raise _NotOnArrays(f"'{name}' with an argument of type {type(a).__name__}")
        return _Probe(trace)

    return call


def _trace(formula):
    """``(reason, gives_grad)``: why ``formula`` does not run on arrays (None when it does), and
    whether every path gives its ``grad`` parameter back unchanged."""
    code = getattr(formula, "__code__", None)
    if code is None:
        return "it is no Python function", False
    if code.co_freevars:
        return f"it reads the closure variables {code.co_freevars}", False
    trace = _Trace()
    env = {"__builtins__": {}}
    for name in code.co_names:
        if name in formula.__globals__:
            env[name] = _stand_in(name, formula.__globals__[name], trace)
    traced = types.FunctionType(code, env, code.co_name, formula.__defaults__)
    params = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    gives_grad = True
    for _ in range(_MAX_PATHS):
        probes = {p: _Probe(trace) for p in params}
        try:
            result = traced(**probes)
        except _NotOnArrays as e:
            return f"it uses {e}", False
        except Exception as e:  # (a builtin, ``**``, ``@``: Python's own TypeError or NameError)
            return f"it raises {type(e).__name__}: {e}", False
        if type(result) is not _Probe:
            return f"it returns a {type(result).__name__}", False
        gives_grad = gives_grad and result is probes.get("grad")
        if not trace.next_path():
            return None, gives_grad
    return f"it has more than {_MAX_PATHS} paths through its conditions", False


def runs_on_arrays(formula) -> bool:
    """Whether ``formula`` computes the same on NumPy arrays as on Tensors: only its parameters,
    numbers, row functions, ``+ - * /``, negation and comparisons (NOTE [Formulas traced on
    probes])."""
    return _trace(formula)[0] is None


def returns_grad(formula) -> bool:
    """Whether ``formula`` gives ``grad`` back unchanged (``lambda grad: grad``, or naming more
    parameters): no op to run on either path."""
    reason, gives_grad = _trace(formula)
    return reason is None and gives_grad


def check_on_arrays(info):
    """Raise TypeError when row ``info`` declares ``on_arrays=True`` and one of its formulas does
    not run on arrays (called when the table is complete: a row function may name a later row).
    """
    if not info.on_arrays:
        return
    for inp, formula in info.formulas.items():
        reason = _trace(formula)[0]
        if reason is not None:
            raise TypeError(
                f"op table row '{info.name}' declares on_arrays=True, but its formula for "
                f"'{inp}' does not run on NumPy arrays as on Tensors: {reason}. Remove "
                "on_arrays=True, or write the formula with +, -, *, /, comparisons and row "
                "functions only (NOTE [Backward on arrays] in nbgrad/_graph/table_node.py)"
            )
