"""Gradient flow over steps: for a training loop in one cell, each module's gradient norm after
every backward pass, which the graph view draws as a small line in the module's box and as a
plot when the module is clicked (``widgets/answers.js``).

NOTE [Gradient flow at a dot a parameter]
The recorder tells its subscribers of every change (a forward call, a backward pass's end);
:meth:`GradientFlow.on_record` compares the count of passes with the last it saw, so a
forward call costs it one ``len``. After a pass it reads each parameter's ``.grad`` once (one
dot product of the host array with itself, no copy for nbgrad's or PyTorch's CPU tensors) and
sums the squares up the module tree: a module's norm is that of all its parameters' gradients
together, as ``clip_grad_norm_`` counts them. The modules are those the recorder saw called,
taken from its module calls as they come (a loop's sixty calls of one module are one module),
so a pass costs one dot a parameter and one addition a parameter and module holding it.
"""

from __future__ import annotations

import math

import numpy as np

from .answers_values import _array

__all__ = ["GradientFlow"]


class GradientFlow:
    """Per module, the gradient norm after each backward pass of a recorder: ``norms``,
    ``{id(module): [norm or None, ...]}``, one entry a pass since the module was first called
    (None when none of its parameters had a gradient). Subscribe :meth:`on_record` to the
    recorder (``recorder.subscribe``); :meth:`of` reads a module's line."""

    def __init__(self, recorder):
        self.recorder = recorder
        self.norms: dict = {}
        self.steps = 0
        self._seen_passes = 0
        self._seen_modules = 0
        self._modules: dict = {}  # id(module) -> [its parameters, at any depth]
        self._params: dict = {}  # id(parameter) -> the parameter

    def on_record(self, recorder, final):
        """The recorder's subscriber: after a backward pass, one norm a module."""
        if recorder._pass_count == self._seen_passes:  # counted passes too (steps.py)
            return
        self._seen_passes = recorder._pass_count
        self._take_modules(recorder.modules)
        source = recorder.graph_source
        squares = {}
        # a pass that ran unwatched: its leaves noted their gradients' norms as it ran
        counted = getattr(recorder, "counted_squares", None)
        given = counted() if counted is not None else None
        for key, p in self._params.items():
            if given is not None and key in given:
                if given[key] is not None:
                    squares[key] = given[key]
                continue
            g = p.grad
            a = None if g is None else _array(source, g)
            if a is not None and a.dtype.kind == "f":
                a = a.reshape(-1)
                squares[key] = float(np.dot(a, a))
        for key, params in self._modules.items():
            got = [squares[k] for k in params if k in squares]
            series = self.norms.setdefault(key, [None] * self.steps)
            series.append(math.sqrt(sum(got)) if got else None)
        self.steps += 1

    def _take_modules(self, calls):
        """The parameters of the modules called since the last pass."""
        for call in calls[self._seen_modules :]:
            module = call.module
            if module is None or id(module) in self._modules:
                continue
            try:
                params = list(module.parameters())
            except Exception:  # noqa: BLE001 - not a module with parameters: no line
                continue
            self._modules[id(module)] = [id(p) for p in params]
            for p in params:
                self._params.setdefault(id(p), p)
        self._seen_modules = len(calls)

    def of(self, module) -> list | None:
        """The module's norms, one a pass (None when it never had a gradient)."""
        series = self.norms.get(id(module))
        if series is None or all(v is None for v in series):
            return None
        return [None if v is None or not math.isfinite(v) else round(v, 6) for v in series]
