"""Random programs against PyTorch (issue "Reliability: random graphs against PyTorch").

Hypothesis draws programs of 1 to 30 ops from the whole op table: elementwise unary and binary
ops with broadcasting, reductions with ``dim``/``keepdim``, views (reshape, view, transpose,
permute, expand, unsqueeze, squeeze, narrow, select, basic and advanced indexing, split,
chunk, unbind), gather/scatter, matmul in all its forms, cat/stack, and in-place ops on
non-leaf clones (``add_``, ``mul_``, ``clamp_``, ``copy_``, ``t[k] = v``, in-place on a view
of the clone). Operands are drawn from every earlier value, so intermediates are reused.

A program is Python source in which ``lib`` stands for the library. It runs once with
``lib = torch`` and once with ``lib = nbgrad``, from the same float64 inputs (written into the
source), and the outputs and the gradients of every leaf must agree to 1e-6. The end of the
program is one of:

- ``sum``: several outputs, weighted and summed, then ``loss.backward()`` (sometimes twice,
  with ``retain_graph=True``, so gradients accumulate), and ``retain_grad`` on intermediates;
- ``roots``: ``lib.autograd.backward([o1, o2, ...], [g1, g2, ...])``, several roots;
- ``grad2``: ``lib.autograd.grad(..., create_graph=True)`` then the gradient of a weighted sum
  of those gradients (second order).

Domains are kept safe while the program is drawn: each op is tried on the concrete (torch)
values so far, and an op whose input is outside its domain (log of a non-positive value, abs
or relu near 0, ties for max/min/maximum, values near a clamp bound, ...) is replaced by a safe
variant or not used. A failing program shrinks to a small one, printed (its ``__repr__``) as the
Python source that reproduces it.

``NBGRAD_RANDOM_GRAPHS`` sets the total number of programs (default 2000), split over the three
tests; the seed is fixed (``SEED``), so a run is reproducible.
"""

from __future__ import annotations

import math
import os
import random
import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, Phase, event, given, seed, settings
from hypothesis import strategies as st

import nbgrad as ng
from nbgrad.autograd.graph import GraphObserver, observe
from nbgrad.derivatives import OPS

SEED = 20251121
TOTAL = int(os.environ.get("NBGRAD_RANDOM_GRAPHS", "2000"))
# the share of the programs each test gets: plain backward, several roots, second order
SHARES = {"sum": 0.4, "roots": 0.3, "grad2": 0.3}
RTOL = ATOL = 1e-6
MAX_OPS = 30
MAX_NUMEL = 48  # keeps each op small: the point is the graph, not the arithmetic
MAX_ABS = 1e4


def _settings(mode):
    return settings(
        max_examples=max(1, round(TOTAL * SHARES[mode])),
        deadline=None,
        database=None,
        derandomize=False,  # the seed is fixed with @seed
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
            HealthCheck.large_base_example,
        ],
    )


# ---- the program --------------------------------------------------------------------------
class Program:
    """A generated program: Python source with ``lib`` for the library.

    Running it leaves ``outs`` (the outputs), ``grads`` (one per leaf, None where the leaf is
    not used), ``retained`` (``.grad`` of intermediates with ``retain_grad``) and ``grads2``
    (second order) in its namespace.
    """

    def __init__(self, body, tail, n_ops):
        self.body = body
        self.tail = tail
        self.n_ops = n_ops
        self._code = None

    @property
    def source(self):
        return "\n".join(self.body + self.tail)

    def __repr__(self):
        return (
            f"# a program of {self.n_ops} ops, as the test runs it with torch and with nbgrad\n"
            "import nbgrad as lib  # or: import torch as lib\n" + self.source
        )

    def run(self, lib):
        if self._code is None:
            self._code = compile(self.source, "<random program>", "exec")
        env = {"lib": lib}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(self._code, env)
        return {k: env.get(k, []) for k in ("outs", "grads", "retained", "grads2")}


def _fmt(values):
    """Python source for an array: nested lists of short decimals (or a scalar)."""
    return repr(np.asarray(values).tolist())


def _shape_src(shape):
    return repr(tuple(int(s) for s in shape))


# ---- what may be drawn, and where -----------------------------------------------------------
def _away(v, eps=1e-4):
    return bool(np.all(np.abs(v) > eps))


def _gap(v, axis, largest):
    """Whether the extreme along ``axis`` (None: everywhere) is unique by a clear margin."""
    v = np.asarray(v, dtype=np.float64)
    if axis is None:
        v = v.reshape(1, -1)
        axis = 1
    if v.ndim == 0 or v.shape[axis] < 2:
        return True
    s = np.sort(v, axis=axis)
    if largest:
        top, second = np.take(s, -1, axis), np.take(s, -2, axis)
    else:
        top, second = np.take(s, 0, axis), np.take(s, 1, axis)
    return bool(np.all(np.abs(top - second) > 1e-6 * (1 + np.abs(top))))


# (name, template, domain check or None, safe variant or None): a template names its
# operand ``{a}``; the safe variant is used where the check fails
UNARY = [
    ("neg", "-{a}", None, None),
    ("exp", "{a}.exp()", lambda v: v.max() < 4, "{a}.tanh().exp()"),
    ("log", "{a}.log()", lambda v: v.min() > 0.05, "({a} * {a} + 0.5).log()"),
    ("log1p", "{a}.log1p()", lambda v: v.min() > -0.9, "({a} * {a}).log1p()"),
    ("sqrt", "{a}.sqrt()", lambda v: v.min() > 0.05, "({a} * {a} + 0.1).sqrt()"),
    ("rsqrt", "{a}.rsqrt()", lambda v: v.min() > 0.1, "({a} * {a} + 0.25).rsqrt()"),
    ("reciprocal", "{a}.reciprocal()", lambda v: _away(v, 0.1), "({a} * {a} + 0.5).reciprocal()"),
    ("abs", "{a}.abs()", _away, None),
    ("sign", "{a}.sign() * {a}", _away, None),
    ("sin", "{a}.sin()", None, None),
    ("cos", "{a}.cos()", None, None),
    ("tanh", "{a}.tanh()", None, None),
    ("sigmoid", "{a}.sigmoid()", None, None),
    ("relu", "{a}.relu()", _away, None),
    ("leaky_relu", "lib.nn.functional.leaky_relu({a}, 0.1)", _away, None),
    ("silu", "lib.nn.functional.silu({a})", None, None),
    ("expm1", "{a}.expm1()", lambda v: v.max() < 4, "{a}.tanh().expm1()"),
    ("exp2", "{a}.exp2()", lambda v: v.max() < 6, "{a}.tanh().exp2()"),
    ("log2", "{a}.log2()", lambda v: v.min() > 0.05, "({a} * {a} + 0.5).log2()"),
    ("log10", "lib.log10({a})", lambda v: v.min() > 0.05, "lib.log10({a} * {a} + 0.5)"),
    ("tan", "{a}.tan()", lambda v: np.abs(v).max() < 1.2, "({a}.tanh() * 1.2).tan()"),
    ("asin", "{a}.asin()", lambda v: np.abs(v).max() < 0.9, "({a}.tanh() * 0.9).asin()"),
    ("acos", "{a}.acos()", lambda v: np.abs(v).max() < 0.9, "({a}.tanh() * 0.9).acos()"),
    ("atan", "{a}.atan()", None, None),
    ("sinh", "{a}.sinh()", lambda v: np.abs(v).max() < 6, "{a}.tanh().sinh()"),
    ("cosh", "lib.cosh({a})", lambda v: np.abs(v).max() < 6, "lib.cosh({a}.tanh())"),
    ("elu", "lib.nn.functional.elu({a}, 0.5)", _away, None),
    ("softplus", "lib.nn.functional.softplus({a}, 2.0, 3.0)", lambda v: _away(2 * v - 3), None),
    ("hardtanh", "lib.nn.functional.hardtanh({a})", lambda v: _away(v - 1) and _away(v + 1), None),
    ("log_sigmoid", "lib.nn.functional.logsigmoid({a})", None, None),
    ("erf", "lib.erf({a})", None, None),
    ("gelu", "lib.nn.functional.gelu({a})", None, None),
    ("gelu_tanh", "lib.nn.functional.gelu({a}, approximate='tanh')", None, None),
    ("square", "{a} ** 2", None, None),
    ("cube", "{a}.pow(3)", lambda v: np.abs(v).max() < 20, None),
    ("pow_half", "{a} ** 0.5", lambda v: v.min() > 0.05, "({a} * {a} + 0.1) ** 0.5"),
    ("pow_neg", "{a} ** -1.5", lambda v: v.min() > 0.1, "({a} * {a} + 0.5) ** -1.5"),
    ("rpow", "2.0 ** {a}", lambda v: v.max() < 8, "2.0 ** {a}.sin()"),
    ("scale", "{a} * 1.5", None, None),
    ("radd", "0.5 + {a}", None, None),
    ("rsub", "1.5 - {a}", None, None),
    ("div_scalar", "{a} / 4.0", None, None),
    ("rdiv", "2.0 / {a}", lambda v: _away(v, 0.1), "2.0 / ({a} * {a} + 0.5)"),
    ("clone", "{a}.clone()", None, None),
    ("contiguous", "{a}.contiguous()", None, None),
]
CLAMP_BOUNDS = [(-0.5, 0.5), (None, 0.3), (-0.2, None), (0.0, 1.0), (-1.0, 0.0)]


class Builder:
    """Draws a program op by op, running each on torch to keep the values in their domains.

    ``draw_int(lo, hi)`` is the only source of choices (hypothesis or a seeded ``random``), so
    a smaller choice is a simpler program: the most recent value, the first op of a list.
    """

    def __init__(self, draw_int):
        self.draw_int = draw_int
        self.body = []
        self.env = {"lib": torch}
        self.vars = []  # float tensor values, in order of creation
        self.leaves = []
        self.retained = []  # values with retain_grad()
        self.no_retain = set()  # values on which retain_grad() differs (see stale_view)
        self.n_consts = 0
        self.n_vals = 0
        self.n_ops = 0

    # -- choices ----------------------------------------------------------------------------
    def int(self, lo, hi):
        return self.draw_int(lo, hi)

    def choice(self, seq):
        return seq[self.int(0, len(seq) - 1)]

    def coin(self):
        return self.int(0, 1) == 1

    def pick(self):
        """An earlier value, most recent first (reuse of intermediates)."""
        return self.vars[-1 - self.int(0, len(self.vars) - 1)]

    def dim(self, ndim, extra=0):
        n = max(ndim + extra, 1)
        return self.int(-n, n - 1)

    # -- values -----------------------------------------------------------------------------
    def val(self, name):
        return self.env[name].detach().numpy()

    def shape(self, name):
        return tuple(self.env[name].shape)

    def _values(self, shape):
        rng = np.random.default_rng(self.int(0, 2**16))
        mag = rng.uniform(0.1, 2.0, shape)
        sign = rng.choice([-1.0, 1.0], shape)
        return np.round(mag * sign, 3)

    def fresh(self, shape, leaf=None):
        """A new input of ``shape``: a leaf that requires grad, or a constant."""
        if leaf is None:
            leaf = self.int(0, 2) != 2
        values = self._values(shape)
        if leaf:
            name = f"x{len(self.leaves)}"
            self.leaves.append(name)
            src = f"{name} = lib.tensor({_fmt(values)}, dtype=lib.float64, requires_grad=True)"
        else:
            name = f"c{self.n_consts}"
            self.n_consts += 1
            src = f"{name} = lib.tensor({_fmt(values)}, dtype=lib.float64)"
        exec(src, self.env)
        self.body.append(src)
        self.vars.append(name)
        return name

    def const_src(self, shape, kind="float"):
        """Inline source for a constant that needs no name (weights, masks, indices)."""
        if kind == "bool":
            rng = np.random.default_rng(self.int(0, 2**16))
            return f"lib.tensor({_fmt(rng.random(shape) < 0.5)})"
        return f"lib.tensor({_fmt(self._values(shape))}, dtype=lib.float64)"

    def operand(self, shape, fit="broadcast"):
        """A value for a second operand: an earlier value or a fresh one, whose shape
        broadcasts with ``shape`` (``fit="broadcast"``), broadcasts to it (``"into"``, for
        in-place ops) or equals it (``"exact"``)."""
        shape = tuple(shape)
        how = self.int(0, 3)
        if how == 0:
            fits = [v for v in reversed(self.vars) if _fits(self.shape(v), shape, fit)]
            if fits:
                return fits[self.int(0, len(fits) - 1)]
        if how == 1 or fit == "exact":
            return self.fresh(shape)
        return self.fresh(self._broadcastable(shape, grow=fit == "broadcast"))

    def _broadcastable(self, shape, grow=True):
        out = []
        for s in shape:
            if s == 1 and grow:
                out.append(self.choice([1, 2, 3]))
            else:
                out.append(self.choice([s, 1]))
        drop = self.int(0, len(out))
        out = out[drop:]
        if grow and not drop and self.int(0, 3) == 3 and len(out) < 4:
            out = [2] + out
        if math.prod(np.broadcast_shapes(tuple(out), tuple(shape))) > MAX_NUMEL:
            return tuple(shape)
        return tuple(out)

    # -- emitting ---------------------------------------------------------------------------
    def emit(self, lines, n_out=1, no_retain=()):
        """Run ``lines`` (with ``{out}`` or ``{out0}``... for the new names) on torch; keep
        them if every new value is finite, small and float64."""
        names = [f"v{self.n_vals + k}" for k in range(n_out)]
        fill = {"out": names[0], **{f"out{k}": n for k, n in enumerate(names)}}
        lines = [line.format(**fill) for line in lines]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                exec("\n".join(lines), self.env)
        except Exception:  # not a valid program in torch: draw something else
            return False
        for n in names:
            t = self.env[n]
            if not isinstance(t, torch.Tensor) or t.dtype != torch.float64:
                return False
            v = t.detach().numpy()
            if not 1 <= v.size <= MAX_NUMEL or v.ndim > 4:
                return False
            if not np.all(np.isfinite(v)) or np.abs(v).max() > MAX_ABS:
                return False
        self.body.extend(lines)
        self.vars.extend(names)
        self.retained += [n for n in names if f"{n}.retain_grad()" in lines]
        self.no_retain.update(names[k] for k in no_retain)
        self.n_vals += n_out
        self.n_ops += 1
        return True

    # -- the ops ----------------------------------------------------------------------------
    def op_unary(self, a):
        _, tmpl, ok, safe = self.choice(UNARY)
        if ok is not None and not ok(self.val(a)):
            if safe is None:
                return None
            tmpl = safe
        return ["{out} = " + tmpl.format(a=a)]

    def op_clamp(self, a):
        lo, hi = self.choice(CLAMP_BOUNDS)
        v = self.val(a)
        if any(b is not None and not _away(v - b) for b in (lo, hi)):
            return None
        args = ", ".join(f"{k}={b}" for k, b in (("min", lo), ("max", hi)) if b is not None)
        return [f"{{out}} = {a}.clamp({args})"]

    def op_binary(self, a):
        kind = self.int(0, 11)
        if kind == 11:  # the same value on both sides
            b = a
        else:
            b = self.operand(self.shape(a))
        va, vb = np.broadcast_arrays(self.val(a), self.val(b))
        tmpl = [
            "{a} + {b}",
            "{a} * {b}",
            "{a} - {b}",
            "{a} / {b}",
            "{a}.add({b}, alpha=0.5)",
            "{a}.sub({b}, alpha=2)",
            "lib.maximum({a}, {b})",
            "lib.minimum({a}, {b})",
            "lib.where({a} > {b}, {a}, {b})",
            "{a} ** {b}",
            "lib.where({mask}, {a}, {b})",
            "{a} * {b}",
        ][kind]
        if kind == 3 and not _away(vb, 0.1):
            tmpl = "{a} / ({b} * {b} + 0.5)"
        if kind in (6, 7, 8) and not _away(va - vb):
            return None
        if kind == 9 and not (va.min() > 0.1 and np.abs(vb).max() < 3):
            tmpl = "({a} * {a} + 0.5) ** {b}.tanh()"
        mask = self.const_src(np.broadcast_shapes(va.shape), "bool") if kind == 10 else ""
        return ["{out} = " + tmpl.format(a=a, b=b, mask=mask)]

    def op_masked_fill(self, a):
        shape = self._broadcastable(self.shape(a), grow=False)
        return [f"{{out}} = {a}.masked_fill({self.const_src(shape, 'bool')}, 0.25)"]

    def op_reduce(self, a):
        shape = self.shape(a)
        n = len(shape)
        v = self.val(a)
        d = self.dim(n)
        k = self.coin()
        ax = (d % n) if n else None
        kind = self.int(0, 17)
        if kind == 0:
            return [f"{{out}} = {a}.sum()"]
        if kind == 1:
            return [f"{{out}} = {a}.sum(dim={d}, keepdim={k})"]
        if kind == 2:
            if n < 2:
                return None
            d2 = (d + self.int(1, n - 1)) % n
            return [f"{{out}} = {a}.sum(dim=({d}, {d2}), keepdim={k})"]
        if kind == 3:
            return [f"{{out}} = {a}.mean()"]
        if kind == 4:
            return [f"{{out}} = {a}.mean(dim={d}, keepdim={k})"]
        if kind == 5:
            return [f"{{out}} = {a}.prod()"] if v.size <= 8 else None
        if kind == 6:
            return [f"{{out}} = {a}.prod(dim={d}, keepdim={k})"]
        if kind in (7, 8):
            fn = "max" if kind == 7 else "min"
            if self.coin():
                return [f"{{out}} = {a}.{fn}()"] if _gap(v, None, kind == 7) else None
            if not _gap(v, ax, kind == 7):
                return None
            return [f"{{out}} = {a}.{fn}(dim={d}, keepdim={k}).values"]
        if kind in (9, 10):
            fn = "amax" if kind == 9 else "amin"
            return [f"{{out}} = {a}.{fn}(dim={d}, keepdim={k})"] if _gap(v, ax, kind == 9) else None
        if kind in (11, 12):
            fn = "var" if kind == 11 else "std"
            c = self.int(0, 1)
            count = v.size if n == 0 else shape[ax]
            if count - c < 1:
                return None
            if self.coin():
                src = f"{a}.{fn}(dim={d}, correction={c}, keepdim={k})"
            else:
                src = f"{a}.{fn}()" if v.size >= 2 else None
            if src is None:
                return None
            if fn == "std" and not _away(eval(src, self.env).detach().numpy(), 1e-3):
                return None
            return ["{out} = " + src]
        if kind == 13:
            p = self.choice(["2", "1", "3", "float('inf')"])
            src = f"{a}.norm(p={p}, dim={d}, keepdim={k})" if self.coin() else f"{a}.norm(p={p})"
            if p != "2" and not _away(v):
                return None
            if p == "float('inf')" and not _gap(np.abs(v), ax if "dim" in src else None, True):
                return None
            if not _away(eval(src, self.env).detach().numpy(), 1e-3):
                return None
            return ["{out} = " + src]
        if kind == 14:
            return [f"{{out}} = {a}.logsumexp(dim={d}, keepdim={k})"]
        if kind == 15:
            return [f"{{out}} = {a}.softmax(dim={d})"]
        if kind == 16:
            return [f"{{out}} = {a}.log_softmax(dim={d})"]
        return [f"{{out}} = {a}.mean(dim=({d},))"]

    def op_view(self, a):
        shape = self.shape(a)
        n = len(shape)
        kind = self.int(0, 13)
        if kind == 12:  # sliding windows along a dim (a view that overlaps itself)
            if not n:
                return None
            d = self.dim(n)
            size = self.int(1, shape[d]) if shape[d] else 0
            return [f"{{out}} = {a}.unfold({d}, {size}, {self.int(1, 3)})"]
        if kind == 13:  # an in-place view op on a copy (the copy takes the view's layout)
            op = self.choice(
                ["t_()" if n <= 2 else "transpose_(0, -1)", f"unsqueeze_({self.dim(n, extra=1)})"]
                + (
                    [f"squeeze_({self.dim(n)})", "squeeze_()", f"swapdims_(0, {n - 1})"]
                    if n
                    else []
                )
            )
            return [f"{{out}} = {a} * 1", f"{{out}}.{op}"]
        if kind in (0, 1):  # reshape / view to a random factorisation
            target = _factorise(math.prod(shape), self)
            if self.coin() and target:
                target = list(target)
                target[self.int(0, len(target) - 1)] = -1
            fn = "reshape" if kind == 0 else "view"
            return [f"{{out}} = {a}.{fn}({_shape_src(target)})"]
        if kind == 2:
            if n < 2:
                return None
            return [f"{{out}} = {a}.transpose({self.dim(n)}, {self.dim(n)})"]
        if kind == 3:
            return [f"{{out}} = {a}.t()"] if n <= 2 else [f"{{out}} = {a}.mT"]
        if kind == 4:
            perm = list(range(n))
            random.Random(self.int(0, 1000)).shuffle(perm)
            return [f"{{out}} = {a}.permute({_shape_src(perm)})"]
        if kind == 5:  # expand size-1 dims, maybe add a leading one
            target = [self.choice([2, 3]) if s == 1 else s for s in shape]
            target = [(-1 if s > 1 and self.coin() else s) for s in target]
            if self.coin() or not target:
                target = [2] + target
            return [f"{{out}} = {a}.expand({_shape_src(target)})"]
        if kind == 6:
            return [f"{{out}} = {a}.unsqueeze({self.dim(n, extra=1)})"]
        if kind == 7:
            if not n:
                return None
            return [
                f"{{out}} = {a}.squeeze({self.dim(n)})"
                if self.coin()
                else f"{{out}} = {a}.squeeze()"
            ]
        if kind == 8:
            if not n:
                return None
            d = self.dim(n)
            size = shape[d]
            start = self.int(0, size - 1)
            length = self.int(1, size - start)
            return [f"{{out}} = {a}.narrow({d}, {start}, {length})"]
        if kind == 9:
            if not n:
                return None
            d = self.dim(n)
            return [f"{{out}} = {a}.select({d}, {self.int(-shape[d], shape[d] - 1)})"]
        if kind == 10:
            if not n:
                return None
            s = self.int(0, n - 1)
            e = self.int(s, n - 1)
            return [f"{{out}} = {a}.flatten({s}, {e})"]
        return [f"{{out}} = {a}[{self.basic_key(shape)}]"]

    def basic_key(self, shape):
        parts = []
        for size in shape:
            kind = self.int(0, 4)
            if kind == 0:
                parts.append(":")
            elif kind == 1:
                parts.append(str(self.int(-size, size - 1)))
            elif kind == 2:
                start = self.int(0, size - 1)
                parts.append(f"{start}:{self.int(start + 1, size + 1)}")
            elif kind == 3:
                parts.append(f"::{self.int(1, 2)}")
            else:
                parts.append(f"{self.int(-size, 0) or ''}:")
        if parts and self.int(0, 3) == 3:
            parts.insert(self.int(0, len(parts)), "None")
        if len(parts) > 1 and self.int(0, 3) == 3:
            parts = ["..."] + parts[self.int(1, len(parts) - 1) :]
        while len(parts) > 1 and parts[-1] == ":" and self.coin():
            parts.pop()
        return ", ".join(parts) if parts else "..."

    def op_advanced_index(self, a):
        shape = self.shape(a)
        n = len(shape)
        if not n:
            return None
        kind = self.int(0, 4)
        d = self.int(0, n - 1)
        idx = [self.int(-shape[d], shape[d] - 1) for _ in range(self.int(1, 4))]
        lead = ":, " * d
        if kind == 0:
            return [f"{{out}} = {a}[{lead}lib.tensor({idx})]"]
        if kind == 4:  # a 0-d index tensor (the dimension goes, as with an int)
            return [f"{{out}} = {a}[{lead}lib.tensor({idx[0]})]"]
        if kind == 1:
            return [f"{{out}} = {a}[{lead}{idx}]"]
        if kind == 2:  # boolean mask from the values
            v = self.val(a)
            if not _away(v) or not (v > 0).any():
                return None
            return [f"{{out}} = {a}[{a} > 0]"]
        if n < 2:
            return None
        idx2 = [self.int(0, shape[1] - 1) for _ in idx]
        return [f"{{out}} = {a}[lib.tensor({idx}), lib.tensor({idx2})]"]

    def op_gather(self, a):
        shape = self.shape(a)
        n = len(shape)
        if not n:
            return None
        d = self.int(0, n - 1)
        kind = self.int(0, 3)
        rng = np.random.default_rng(self.int(0, 2**16))
        if kind == 0:
            ishape = [self.int(1, s) if k != d else self.int(1, 3) for k, s in enumerate(shape)]
            idx = rng.integers(0, shape[d], ishape)
            return [f"{{out}} = {a}.gather({d}, lib.tensor({_fmt(idx)}))"]
        if kind == 1:
            idx = rng.integers(0, shape[d], self.int(1, 4))
            return [f"{{out}} = {a}.index_select({d}, lib.tensor({_fmt(idx)}))"]
        if kind == 2:
            ishape = [self.int(1, s) for s in shape]
            idx = rng.integers(0, shape[d], ishape)
            src = self.operand(tuple(ishape), fit="exact")
            return [f"{{out}} = {a}.scatter_add({d}, lib.tensor({_fmt(idx)}), {src})"]
        idx = rng.integers(0, shape[d], self.int(1, 3))
        sshape = list(shape)
        sshape[d] = len(idx)
        src = self.operand(tuple(sshape), fit="exact")
        return [f"{{out}} = {a}.index_add({d}, lib.tensor({_fmt(idx)}), {src})"]

    def op_split(self, a):
        shape = self.shape(a)
        n = len(shape)
        if not n:
            return None
        d = self.dim(n)
        size = shape[d]
        kind = self.int(0, 3)
        if kind == 0:
            k = self.int(1, max(size, 1))
            parts = -(-size // k)
            return [f"{{out}} = {a}.split({k}, dim={d})[{self.int(0, parts - 1)}]"]
        if kind == 1:
            chunks = self.int(1, 3)
            parts = len(torch.empty(size).chunk(chunks))
            return [f"{{out}} = {a}.chunk({chunks}, dim={d})[{self.int(-parts, parts - 1)}]"]
        if kind == 2 and size >= 2:  # two outputs of one multi-output node, both used later
            first = self.int(1, size - 1)
            return [f"{{out0}}, {{out1}} = {a}.split([{first}, {size - first}], dim={d})"], 2
        if size > 3:
            return None
        outs = ", ".join(f"{{out{k}}}" for k in range(size))
        return [f"{outs}{',' if size == 1 else ''} = {a}.unbind({d})"], size

    def op_matmul(self, a):
        shape = self.shape(a)
        n = len(shape)
        if not n:
            return None
        k = shape[-1]
        m = self.int(1, 3)
        kind = self.int(0, 3)
        if n == 1:
            other = [(k,), (k, m), (self.int(1, 2), k, m), (k,)][kind]
        elif n == 2:
            other = [(k,), (k, m), (self.int(1, 2), k, m), (2, 1, k, m)][kind]
        else:
            batch = shape[:-2]
            other = [(k,), (k, m), batch + (k, m), (1,) * (n - 2) + (k, m)][kind]
        b = self.operand(other, fit="exact")
        fn = self.int(0, 1)
        if fn and n == 2 and len(other) == 2:
            return [f"{{out}} = {a}.mm({b})"]
        if fn and n == 2 and len(other) == 1:
            return [f"{{out}} = {a}.mv({b})"]
        if fn and n == 1 and len(other) == 1:
            return [f"{{out}} = {a}.dot({b})"]
        if fn and n == 3 and len(other) == 3:
            return [f"{{out}} = {a}.bmm({b})"]
        if n == 1 and len(other) >= 2 and self.coin():
            return [f"{{out}} = {b}.mT @ {a}"]
        return [f"{{out}} = {a} @ {b}"] if self.coin() else [f"{{out}} = lib.matmul({a}, {b})"]

    def op_join(self, a):
        shape = self.shape(a)
        n = len(shape)
        kind = self.int(0, 3)
        if kind == 0 or kind == 1:
            if not n:
                return None
            d = self.dim(n)
            other = list(shape)
            other[d] = self.int(1, 3)
            b = self.operand(tuple(other), fit="exact") if kind == 0 else a
            parts = [a, b] if self.coin() else [b, a, b]
            return [f"{{out}} = lib.cat([{', '.join(parts)}], dim={d})"]
        d = self.dim(n, extra=1)
        b = self.operand(shape, fit="exact") if kind == 2 else a
        return [f"{{out}} = lib.stack([{a}, {b}], dim={d})"]

    def op_inplace(self, a):
        """An in-place op on a fresh clone (legal: nothing saved the clone yet)."""
        shape = self.shape(a)
        n = len(shape)
        kind = self.int(0, 11)
        clone = "{out} = " + f"{a}.clone()"
        if kind >= 10:
            return self.stale_view(a, shape, kind == 11)
        if kind <= 4:
            b = self.operand(shape, fit="into")
            vb = self.val(b)
            method = ["add_", "mul_", "sub_", "div_", "copy_"][kind]
            if method == "div_" and not _away(vb, 0.1):
                method = "mul_"
            return [clone, f"{{out}}.{method}({b})"]
        if kind == 5:
            lo, hi = self.choice(CLAMP_BOUNDS)
            v = self.val(a)
            if any(b is not None and not _away(v - b) for b in (lo, hi)):
                return None
            args = ", ".join(f"{k}={b}" for k, b in (("min", lo), ("max", hi)) if b is not None)
            return [clone, f"{{out}}.clamp_({args})"]
        if kind == 6:
            if self.coin() and _away(self.val(a)):
                return [clone, "lib.nn.functional.leaky_relu({out}, 0.1, inplace=True)"]
            b = self.operand(shape, fit="exact")
            return [clone, f"{{out}}.add_({b}, alpha=-0.5)"]
        if not n:
            return [clone, "{out}.fill_(0.5)"] if kind == 7 else [clone, "{out}.mul_(3.0)"]
        key = self.basic_key(shape)
        try:
            region = tuple(self.env[a][eval(f"np.s_[{key}]", {"np": np})].shape)
        except Exception:
            return None
        if kind == 7:  # t[key] = value (CopySlices)
            b = self.operand(region, fit="into")
            return [clone, f"{{out}}[{key}] = {b}"]
        if kind == 8:  # in-place on a view of the clone (CopySlices)
            if self.int(0, 3) == 3:
                return [clone, f"{{out}}[{key}].zero_()"]
            b = self.operand(region, fit="into")
            return [clone, f"{{out}}[{key}].mul_({b})"]
        # advanced-index assignment (IndexPutBackward0), unique indices
        rng = np.random.default_rng(self.int(0, 2**16))
        idx = sorted(rng.choice(shape[0], self.int(1, shape[0]), replace=False).tolist())
        b = self.operand((len(idx),) + shape[1:], fit="into")
        return [clone, f"{{out}}[lib.tensor({idx})] = {b}"]

    def stale_view(self, a, shape, through_view):
        """A view of a clone made before an in-place op on the clone (or on another view of
        it): both the clone and the view are values of the program, so the view's gradient
        must go through the in-place op (NOTE [Views of a modified base])."""
        n = len(shape)
        view = self.choice(["[{key}]", ".unsqueeze(0)", ".t()", ".reshape(-1)", ".expand({big})"])
        if view == ".t()" and n > 2:
            view = ".mT"
        big = _shape_src((2,) + shape)
        view = view.format(key=self.basic_key(shape) if n else "...", big=big)
        lines = ["{out0} = " + f"{a}.clone()", "{out1} = {out0}" + view]
        if self.int(0, 2) == 2:  # the retain_grad hook must move to the regenerated grad_fn
            lines.append("{out1}.retain_grad()")
        if through_view and n:
            key = self.basic_key(shape)
            try:
                region = tuple(self.env[a][eval(f"np.s_[{key}]", {"np": np})].shape)
            except Exception:
                return None
            lines.append("{out0}" + f"[{key}] = {self.operand(region, fit='into')}")
        else:
            lines.append("{out0}" + f".mul_({self.operand(shape, fit='into')})")
        if not self.env[a].requires_grad:
            # the view got its history from the in-place op: PyTorch's retain_grad() on it is
            # a silent no-op (its is_leaf reads the grad_fn not yet regenerated), nbgrad's
            # retains, so the program's end must not retain it
            return lines, 2, (1,)
        return lines, 2

    OP_KINDS = (
        "op_unary",
        "op_binary",
        "op_reduce",
        "op_view",
        "op_matmul",
        "op_join",
        "op_inplace",
        "op_advanced_index",
        "op_gather",
        "op_split",
        "op_clamp",
        "op_masked_fill",
    )

    def step(self):
        for _ in range(4):  # a few tries: an op may not apply to the value drawn
            a = self.pick()
            if self.int(0, 9) == 9:
                # a new input now and then, so graphs have several leaves
                a = self.fresh(self._broadcastable(self.shape(a)))
            made = getattr(self, self.choice(self.OP_KINDS))(a)
            if made is None:
                continue
            lines, n_out, *no_retain = made if isinstance(made, tuple) else (made, 1)
            if self.emit(lines, n_out, no_retain[0] if no_retain else ()):
                return

    # -- the end of the program ---------------------------------------------------------------
    def outputs(self):
        tracked = [v for v in self.vars if self.env[v].requires_grad]
        if not tracked:
            self.emit([f"{{out}} = {self.leaves[0]} * 2.0"])
            tracked = [self.vars[-1]]
        outs = [tracked[-1]]
        for _ in range(self.int(0, 2)):
            o = tracked[-1 - self.int(0, len(tracked) - 1)]
            if o not in outs:
                outs.append(o)
        return outs

    def tail(self, mode):
        outs = self.outputs()
        leaves = ", ".join(self.leaves)
        lines = [f"outs = [{', '.join(outs)}]"]
        keep = list(self.retained)
        if mode == "sum":
            candidates = [
                v for v in self.vars if self.env[v].grad_fn is not None and v not in self.no_retain
            ]
            if candidates and self.coin():
                v = candidates[-1 - self.int(0, len(candidates) - 1)]
                if v not in keep:
                    lines.append(f"{v}.retain_grad()")
                    keep.append(v)
            terms = [f"({o} * {self.const_src(self.shape(o))}).sum()" for o in outs]
            lines.append("loss = " + " + ".join(terms))
            if self.int(0, 3) == 3:
                lines.append("loss.backward(retain_graph=True)")
            lines.append("loss.backward()")
            lines.append(f"grads = [{', '.join(f'{x}.grad' for x in self.leaves)}]")
        elif mode == "roots":
            seeds = []
            for o in outs:
                shape = self.shape(o)
                seeds.append("None" if not shape and self.coin() else self.const_src(shape))
            lines.append(f"lib.autograd.backward(outs, [{', '.join(seeds)}])")
            lines.append(f"grads = [{', '.join(f'{x}.grad' for x in self.leaves)}]")
        else:
            terms = [f"({o} * {self.const_src(self.shape(o))}).sum()" for o in outs]
            lines.append("loss = " + " + ".join(terms))
            lines.append(
                f"grads = lib.autograd.grad(loss, [{leaves}], create_graph=True, allow_unused=True)"
            )
            weights = [self.const_src(self.shape(x)) for x in self.leaves]
            lines.append(
                "terms = [(g * w).sum() for g, w in zip(grads, ["
                + ", ".join(weights)
                + "]) if g is not None and g.requires_grad]"
            )
            lines.append(
                f"grads2 = lib.autograd.grad(sum(terms), [{leaves}], allow_unused=True) "
                f"if terms else [None] * {len(self.leaves)}"
            )
        if keep:
            lines.append(f"retained = [{', '.join(f'{v}.grad' for v in keep)}]")
        return lines


def _fits(a, b, fit):
    if fit == "exact":
        return a == b
    try:
        out = np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return out == b if fit == "into" else math.prod(out) <= MAX_NUMEL


def _factorise(n, b):
    """A random shape with ``n`` elements, of 0 to 4 dims."""
    dims = []
    rest = n
    for _ in range(b.int(0, 3)):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0]
        d = divisors[b.int(0, len(divisors) - 1)]
        dims.append(d)
        rest //= d
    if rest != 1 or not dims and n != 1:
        dims.append(rest)
    if b.coin():
        dims.insert(b.int(0, len(dims)), 1)
    return tuple(dims)


def build(draw_int, mode):
    b = Builder(draw_int)
    for _ in range(draw_int(1, 3)):
        ndim = draw_int(0, 3)
        b.fresh(tuple(draw_int(1, 4) for _ in range(ndim)), leaf=True)
    n_ops = draw_int(1, MAX_OPS)
    for _ in range(n_ops):
        b.step()
    tail = b.tail(mode)
    return Program(b.body, tail, b.n_ops)


@st.composite
def programs(draw, mode):
    return build(lambda lo, hi: draw(st.integers(lo, hi)), mode)


# ---- running and comparing ------------------------------------------------------------------
def _np(t):
    if t is None:
        return None
    if isinstance(t, torch.Tensor) and t._is_zerotensor():  # a second-order zero from torch
        return np.zeros(tuple(t.shape))
    return t.detach().numpy()


def _compare(kind, ours, ref, none_is_zero=False):
    assert len(ours) == len(ref), f"{kind}: {len(ours)} values, torch has {len(ref)}"
    for i, (o, r) in enumerate(zip(ours, ref)):
        o, r = _np(o), _np(r)
        if none_is_zero:
            o = np.zeros_like(r) if o is None and r is not None else o
            r = np.zeros_like(o) if r is None and o is not None else r
        if r is None or o is None:
            assert o is None and r is None, f"{kind}[{i}]: nbgrad {o}, torch {r}"
            continue
        assert o.shape == r.shape, f"{kind}[{i}]: shape {o.shape}, torch {r.shape}"
        np.testing.assert_allclose(o, r, rtol=RTOL, atol=ATOL, err_msg=f"{kind}[{i}]")


def check(program):
    event(f"ops: {program.n_ops // 10 * 10}-{program.n_ops // 10 * 10 + 9}")
    try:
        ref = program.run(torch)
    except Exception as e:  # then nbgrad must fail the same way
        with pytest.raises(type(e)):
            program.run(ng)
        return
    ours = program.run(ng)
    _compare("outs", ours["outs"], ref["outs"])
    _compare("grads", ours["grads"], ref["grads"])
    _compare("retained", ours["retained"], ref["retained"])
    # second order: a first-order gradient that is constant may or may not be recorded
    # (PyTorch keeps zero-derivative edges that nbgrad's formulas drop), so None means zero
    _compare("grads2", ours["grads2"], ref["grads2"], none_is_zero=True)


@seed(SEED)
@_settings("sum")
@given(programs("sum"))
def test_random_programs_backward_of_a_sum(program):
    check(program)


@seed(SEED + 1)
@_settings("roots")
@given(programs("roots"))
def test_random_programs_several_roots(program):
    check(program)


@seed(SEED + 2)
@_settings("grad2")
@given(programs("grad2"))
def test_random_programs_second_order(program):
    check(program)


# ---- the generator itself -------------------------------------------------------------------
# rows that programs of Tensor ops do not reach: nn rows (tested with nbgrad.nn), dtype
# conversion (float64 only here), comparisons' siblings and arg-reductions (not
# differentiable, no Tensor method used here)
NOT_DRAWN = {
    # the rows of PyTorch's wider surface: the op table test checks each of them against
    # torch; the program generator does not draw them yet
    *"atan2 baddbmm count_nonzero cross cumprod diag_embed diagonal_copy erfinv fmod".split(),
    *"fmod_scalar hypot isclose lerp lerp_tensor logaddexp masked_select median".split(),
    *"median_dim multinomial nan_to_num nonzero normal_float_tensor normal_tensor_float".split(),
    *"normal_tensor_tensor scatter scatter_value take trace transpose_ unique".split(),
    *"unique_dim unsqueeze_".split(),
    "addmm",
    # the rows of PyTorch's wider surface, second part (nbgrad/derivatives/): the op
    # table test checks each against torch; the program generator does not draw them yet
    *"acosh addbmm addcdiv addcmul addmv addr aminmax asinh atanh bincount bitwise_and".split(),
    *"bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor block_diag".split(),
    *"copysign copysign_scalar cummax cummin deg2rad dist div_rounding div_scalar erfc".split(),
    *"fill_new fmax fmin frexp gcd heaviside histc histogram index_copy index_fill".split(),
    *"index_put_accumulate isin isneginf isposinf kthvalue lcm ldexp logaddexp2".split(),
    *"logcumsumexp logit masked_scatter mode mul_scalar nanmedian nanmedian_dim nansum".split(),
    *"nextafter put rad2deg renorm rot90 rsub_tensor scatter_reduce searchsorted signbit".split(),
    *"sinc unique_consecutive unsafe_split unsafe_split_with_sizes vdot xlogy".split(),
    *"xlogy_other_scalar xlogy_self_scalar index_reduce".split(),
    "histogramdd",
    # Tensor's in-place comparisons and random fills, squeeze of several dims (the op table
    # test checks each against torch; the generator does not draw them yet)
    *"eq_ eq_scalar_ ne_ ne_scalar_ lt_ lt_scalar_ le_ le_scalar_ gt_ gt_scalar_ ge_".split(),
    *"ge_scalar_ uniform_ normal_ exponential_ cauchy_ log_normal_ geometric_ random_0".split(),
    *"random_1 random_2 squeeze_dims squeeze_dims_".split(),
    "poisson",  # draws: the op table test checks them where they are certain
    "binomial",
    # the activations and losses of nbgrad/derivatives/activation.py and losses.py
    *"mish hardswish hardsigmoid selu selu_ celu celu_ softshrink hardshrink glu prelu".split(),
    *"soft_margin_loss multi_margin_loss norm_scalar_dim ctc_loss ctc_loss_backward".split(),
    "convolution",
    "convolution_input_grad",
    "convolution_weight_grad",
    "mse_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "nll_loss",
    "nll_loss2d",
    "layer_norm",
    "batch_norm",
    "max_pool2d",
    "max_pool2d_backward",
    "avg_pool2d",
    "avg_pool2d_backward",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool2d_backward",
    "adaptive_max_pool2d",
    *"max_pool3d max_pool3d_backward avg_pool3d avg_pool3d_backward adaptive_avg_pool3d".split(),
    *"adaptive_avg_pool3d_backward adaptive_max_pool3d max_unpool2d max_unpool3d".split(),
    "affine_grid_generator",
    "grid_sampler_2d",
    "grid_sampler_3d",
    "convolution_transpose",
    "constant_pad_nd",
    # the index-map rows of nbgrad/derivatives/index_maps.py (the paddings, upsampling, pixel
    # shuffles, unfold and fold): nn rows, checked by the op table test and tests/nn
    *[
        f"{kind}_pad{n}d{end}"
        for kind in ("reflection", "replication")
        for n in (1, 2, 3)
        for end in ("", "_backward")
    ],  # fmt: skip
    *[
        f"{aten}{n}d{end}"
        for aten in ("upsample_nearest", "_upsample_nearest_exact")
        for n in (1, 2, 3)
        for end in ("", "_backward")
    ],  # fmt: skip
    *[
        f"upsample_{mode}{end}"
        for mode in ("linear1d", "bilinear2d", "bicubic2d", "trilinear3d")
        for end in ("", "_backward")
    ],  # fmt: skip
    *"pixel_shuffle pixel_shuffle_backward pixel_unshuffle pixel_unshuffle_backward".split(),
    *"im2col col2im native_group_norm _pdist_forward _cdist_forward _embedding_bag".split(),
    *"fractional_max_pool2d fractional_max_pool2d_backward fractional_max_pool3d".split(),
    "fractional_max_pool3d_backward",
    "elu_",  # (elu, out of place, is drawn)
    "threshold",  # (relu, its special case, is drawn)
    "threshold_",
    "threshold_backward",
    "var_mean",  # (functions of two outputs; the op table test checks them)
    "std_mean",  # relu's backward: only under create_graph; the op table test runs it
    # zero derivatives and jumps (the rounding functions); shape ops the op table test checks
    "floor",
    "ceil",
    "round",
    "trunc",
    "frac",
    "flip",
    "roll",
    "cumsum",
    "tril",
    "triu",
    "repeat",
    "diagonal",
    "diagonal_backward",
    "as_strided",  # (its storage places: the op table test and tests/test_tensor.py)
    "as_strided_",
    "sort",
    "topk",
    "clamp_min",
    "clamp_max",
    "isnan",
    "isinf",
    "isfinite",
    "embedding",
    "to_dtype",
    "eq",
    "ne",
    "lt",
    "le",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
    "logical_not",
    "argmax",
    "argmin",
    # // and % jump at every multiple of the divisor, where NumPy's and PyTorch's roundings may
    # land on either side: the op table test checks them at points away from the jumps
    "floor_divide",
    "remainder",
    "remainder_scalar",
    "rremainder",
    # random draws (no two libraries draw the same), and the legacy constructor's alias: the op
    # table test and tests/autograd/test_legacy.py check them
    "bernoulli",
    "bernoulli_p",
    "bernoulli_float",
    "bernoulli_tensor",
    "alias",
}


def test_programs_draw_from_the_whole_op_table():
    """The generator reaches every row of the op table but NOT_DRAWN (and only real rows)."""
    assert NOT_DRAWN <= set(OPS)
    seen = set()

    class Ops(GraphObserver):
        def forward(self, op, args, attrs, result, elapsed):
            seen.add(op.name)

    rng = random.Random(SEED)
    with observe(Ops(), backward=False):
        for i in range(300):
            program = build(rng.randint, ("sum", "roots", "grad2")[i % 3])
            program.run(ng)
    # without create_graph a formula runs the rows it calls (``sigmoid``'s
    # ``sigmoid_backward(grad, result)``) on arrays, past the observer (NOTE [Backward on
    # arrays]): every program runs a backward, so the rows its formulas call are reached too
    for name in list(seen):
        for formula in OPS[name].formulas.values():
            called = (formula.__globals__.get(n) for n in formula.__code__.co_names)
            seen.update(f.__name__ for f in called if getattr(f, "on_arrays", False))
    missing = set(OPS) - NOT_DRAWN - seen
    assert not missing, f"rows never drawn: {sorted(missing)}"


def test_a_program_prints_as_the_python_that_it_runs():
    rng = random.Random(1)
    program = build(rng.randint, "grad2")
    text = repr(program)
    assert text.startswith("# a program of")
    assert "x0 = lib.tensor(" in text and "grads2 = lib.autograd.grad(" in text
    env = {}
    exec(compile(text, "<repr>", "exec"), env)  # runs with nbgrad, as printed
    assert env["lib"] is ng
    _compare("grads", env["grads"], program.run(torch)["grads"])
    _compare("grads2", env["grads2"], program.run(torch)["grads2"], none_is_zero=True)


# ---- the engine's order, hook by hook --------------------------------------------------------
def _hook_log(program, lib):
    """Run ``program`` with a logging hook on every tensor that requires grad (tensor hooks),
    on every node (pre and post hooks) and on every leaf (post-accumulate-grad hooks); return
    the log of the backward pass(es), each entry named by the program's variable."""
    env = {"lib": lib}
    log = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile("\n".join(program.body), "<random program>", "exec"), env)
        seen_nodes = set()
        for name in sorted(env, key=lambda n: (n[0], int(n[1:]) if n[1:].isdigit() else -1)):
            t = env[name]
            if not isinstance(t, lib.Tensor) or not t.requires_grad or t._base is not None:
                # views are left out: see NOTE [Regenerated view nodes] in nbgrad/tensor.py
                # (and PyTorch 2.13 crashes on a tensor hook on a view whose base was modified
                # in place since)
                continue
            t.register_hook(lambda g, name=name: log.append(("tensor", name)))
            if t.grad_fn is None:
                t.register_post_accumulate_grad_hook(lambda _, name=name: log.append(("acc", name)))
            elif id(t.grad_fn) not in seen_nodes:
                seen_nodes.add(id(t.grad_fn))
                t.grad_fn.register_prehook(lambda g, name=name: log.append(("pre", name)))
                t.grad_fn.register_hook(lambda gi, go, name=name: log.append(("post", name)))
        exec(compile("\n".join(program.tail), "<random program tail>", "exec"), env)
    return log


@pytest.mark.parametrize("mode", ["sum", "roots", "grad2"])
def test_random_programs_hook_order(mode):
    """The full hook log of random graphs equals PyTorch's: the order among nodes with equal
    keys (leaves' AccumulateGrad), nodes ready at once, and the chain shortcut included."""
    rng = random.Random(SEED + 10 + ["sum", "roots", "grad2"].index(mode))
    compared = 0
    for _ in range(60):
        program = build(rng.randint, mode)
        try:
            want = _hook_log(program, torch)
        except Exception as e:  # then nbgrad must fail the same way
            with pytest.raises(type(e)):
                _hook_log(program, ng)
            continue
        got = _hook_log(program, ng)
        assert got == want, repr(program)
        compared += len(want)
    assert compared > 500  # the programs do backward through many hooked nodes
