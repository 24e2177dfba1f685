"""Grad modes in every combination, against PyTorch: ``no_grad``, ``enable_grad``,
``set_grad_enabled``, ``inference_mode`` as context managers and as decorators (with
parentheses), nested in every pair, with an exception raised inside, and in a thread. What is
compared is the mode (``is_grad_enabled``, ``is_inference_mode_enabled``, and whether an op
records) inside each block and after it."""

from __future__ import annotations

import itertools
import threading

import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

MODES = {
    "no_grad": lambda lib: lib.no_grad(),
    "enable_grad": lambda lib: lib.enable_grad(),
    "set_grad_enabled(False)": lambda lib: lib.set_grad_enabled(False),
    "set_grad_enabled(True)": lambda lib: lib.set_grad_enabled(True),
    "inference_mode": lambda lib: lib.inference_mode(),
    "inference_mode(False)": lambda lib: lib.inference_mode(False),
}
PAIRS = list(itertools.product(MODES, repeat=2))


def state(lib):
    x = lib.ones(2, requires_grad=True)
    return (lib.is_grad_enabled(), lib.is_inference_mode_enabled(), (x * 2).requires_grad)


def _in_mode(lib, start, body):
    """Run ``body(log)`` with grad mode ``start`` set, and restore the default after."""
    log = []
    prev = lib.is_grad_enabled()
    lib.set_grad_enabled(start)
    try:
        body(log)
    finally:
        lib.set_grad_enabled(prev)
    return log


def nested(lib, outer, inner, start):
    def body(log):
        log.append(state(lib))
        with MODES[outer](lib):
            log.append(state(lib))
            with MODES[inner](lib):
                log.append(state(lib))
            log.append(state(lib))
        log.append(state(lib))

    return _in_mode(lib, start, body)


def nested_raising(lib, outer, inner, start):
    def body(log):
        try:
            with MODES[outer](lib):
                try:
                    with MODES[inner](lib):
                        log.append(state(lib))
                        raise ValueError("inside")
                except ValueError:
                    log.append(state(lib))
                raise KeyError("outside")
        except KeyError:
            log.append(state(lib))

    return _in_mode(lib, start, body)


def decorated(lib, outer, inner, start):
    """``inner`` as a decorator (with parentheses) on a function called inside ``outer``; the
    decoration itself happens inside ``outer`` too, where it must not change the mode."""

    def body(log):
        with MODES[outer](lib):
            decorate = MODES[inner](lib)
            log.append(state(lib))  # after building the decorator, before decorating
            f = decorate(lambda: state(lib))
            log.append(state(lib))  # decorating does not change the mode
            log.append(f())
            log.append(state(lib))
            log.append(f())
        log.append(state(lib))
        log.append(f())

    return _in_mode(lib, start, body)


@pytest.mark.parametrize("start", [True, False])
@pytest.mark.parametrize("outer, inner", PAIRS)
def test_nested_modes_match_torch(outer, inner, start):
    assert nested(ng, outer, inner, start) == nested(torch, outer, inner, start)


@pytest.mark.parametrize("start", [True, False])
@pytest.mark.parametrize("outer, inner", PAIRS)
def test_an_exception_restores_each_mode(outer, inner, start):
    assert nested_raising(ng, outer, inner, start) == nested_raising(torch, outer, inner, start)


@pytest.mark.parametrize("start", [True, False])
@pytest.mark.parametrize("outer, inner", PAIRS)
def test_decorators_match_torch(outer, inner, start):
    assert decorated(ng, outer, inner, start) == decorated(torch, outer, inner, start)


@pytest.mark.parametrize("mode", MODES)
def test_a_recursive_decorated_function_restores_the_mode(mode):
    """Each call enters a context of its own: a recursive call does not overwrite the mode
    that the outer call restores."""

    def run(lib):
        log = []

        @MODES[mode](lib)
        def f(n):
            log.append(state(lib))
            if n:
                f(n - 1)
            log.append(state(lib))

        for start in (True, False):
            with lib.set_grad_enabled(start):
                f(2)
                log.append(state(lib))
        return log

    assert run(ng) == run(torch)


@pytest.mark.parametrize("mode", MODES)
def test_a_decorated_function_that_raises_restores_the_mode(mode):
    def run(lib):
        @MODES[mode](lib)
        def f():
            raise ValueError(str(state(lib)))

        log = []
        for start in (True, False):
            with lib.set_grad_enabled(start):
                with pytest.raises(ValueError) as info:
                    f()
                log += [str(info.value), state(lib)]
        return log

    assert run(ng) == run(torch)


@pytest.mark.parametrize("mode", MODES)
def test_the_mode_is_per_thread(mode):
    """A mode set on one thread is not seen on another, in either direction."""

    def run(lib):
        log = []

        def other():
            log.append(("thread, start", state(lib)))
            with MODES[mode](lib):
                log.append(("thread, inside", state(lib)))
                barrier.wait()  # the main thread reads its mode while this one is inside
                barrier.wait()
            log.append(("thread, after", state(lib)))

        barrier = threading.Barrier(2)
        with lib.no_grad():
            t = threading.Thread(target=other)
            t.start()
            barrier.wait()
            log.append(("main, thread inside", state(lib)))
            barrier.wait()
            t.join()
            log.append(("main, after", state(lib)))
        log.append(("main, outside", state(lib)))
        return log

    assert run(ng) == run(torch)


def test_set_grad_enabled_takes_effect_at_once_as_a_call():
    def run(lib):
        log = [state(lib)]
        lib.set_grad_enabled(False)
        log.append(state(lib))
        lib.set_grad_enabled(True)
        log.append(state(lib))
        return log

    assert run(ng) == run(torch)
