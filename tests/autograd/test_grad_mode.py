"""Grad modes as decorators and context managers (``nbgrad/_graph/grad_state.py``).

Each scenario runs with nbgrad and with PyTorch and records what it sees (the grad mode at each
point, results, warnings, errors); the two records must be equal.
"""

import asyncio
import warnings

import pytest

import nbgrad as ng
from tests.torch_oracle import same

torch = pytest.importorskip("torch")

LIBS = pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])


def both(scenario):
    """The scenario's record under nbgrad and under PyTorch."""
    return scenario(ng), scenario(torch)


def check(scenario):
    mine, theirs = both(scenario)
    assert mine == theirs


# -- plain functions ------------------------------------------------------------------------------
def decorator_spellings(lib):
    x = lib.ones(2, requires_grad=True)

    def double(x):
        return x * 2

    seen = []
    for dec in (lib.no_grad(), lib.no_grad, lib.inference_mode(), lib.inference_mode,
                lib.set_grad_enabled(False)):  # fmt: skip
        f = dec(double)
        seen.append((f.__name__, f(x).requires_grad, lib.is_grad_enabled()))
    with lib.no_grad():
        for dec in (lib.enable_grad(), lib.enable_grad, lib.set_grad_enabled(True),
                    lib.inference_mode(False)):  # fmt: skip
            seen.append((dec(double)(x).requires_grad, lib.is_grad_enabled()))
    return seen


def bare_decorators(lib):
    x = lib.ones(1, requires_grad=True)

    @lib.enable_grad
    def up(x):
        return x * 2, lib.is_grad_enabled()

    @lib.no_grad
    def down(x):
        return x * 2, lib.is_grad_enabled()

    with lib.no_grad():
        a, ga = up(x)
    b, gb = down(x)
    return a.requires_grad, ga, b.requires_grad, gb, up.__name__, down.__name__


def set_grad_enabled_forms(lib):
    seen = [repr(lib.set_grad_enabled(False)).split(".")[-1], lib.is_grad_enabled()]
    lib.set_grad_enabled(True)
    seen.append(lib.is_grad_enabled())
    with lib.set_grad_enabled(False):
        seen.append(lib.is_grad_enabled())
    seen.append(lib.is_grad_enabled())

    @lib.set_grad_enabled(False)
    def f():
        return lib.is_grad_enabled()

    seen += [lib.is_grad_enabled(), f(), lib.is_grad_enabled()]
    return seen


def inference_mode_states(lib):
    seen = []
    with lib.no_grad():
        with lib.inference_mode(False):
            seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
    with lib.inference_mode():
        seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
        with lib.inference_mode(False):
            seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
        seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))

    @lib.inference_mode
    def f():
        return lib.is_grad_enabled(), lib.is_inference_mode_enabled()

    seen += [f(), (lib.is_grad_enabled(), lib.is_inference_mode_enabled())]
    return seen


def exception_restores(lib):
    @lib.no_grad()
    def boom():
        raise ValueError("boom")

    with pytest.raises(ValueError):
        boom()
    return lib.is_grad_enabled()


@pytest.mark.parametrize(
    "scenario",
    [
        decorator_spellings,
        bare_decorators,
        set_grad_enabled_forms,
        inference_mode_states,
        exception_restores,
    ],
)
def test_matches_torch(scenario):
    check(scenario)


def test_set_grad_enabled_rejects_non_bool():
    for lib in (ng, torch):
        with pytest.raises(TypeError, match=r"must be bool, not int"):
            lib.set_grad_enabled(1)
        assert lib.is_grad_enabled()


@LIBS
def test_no_grad_takes_one_function_at_most(lib):
    with pytest.raises(TypeError):
        lib.no_grad(lambda: 1, 2)


# -- generators and coroutines --------------------------------------------------------------------
def generator_modes(lib):
    """The mode inside a decorated generator, and the caller's between its steps."""
    seen = []

    @lib.no_grad()
    def gen(n):
        for i in range(n):
            seen.append(("in", lib.is_grad_enabled()))
            yield i
        return "done"

    @lib.enable_grad
    def gen_up(n):
        for i in range(n):
            seen.append(("up", lib.is_grad_enabled()))
            yield i

    with lib.enable_grad():
        for _ in gen(3):
            seen.append(("out", lib.is_grad_enabled()))
    with lib.no_grad():
        for _ in gen_up(3):
            seen.append(("out", lib.is_grad_enabled()))

    def delegate():
        result = yield from gen(2)
        seen.append(("result", result))

    list(delegate())
    seen.append(gen.__name__)
    return seen


def coroutine_send_throw_close(lib):
    class Recoverable(Exception):
        pass

    class Fatal(Exception):
        pass

    seen = []

    @lib.no_grad()
    def coro():
        i = 0
        while True:
            try:
                r = yield i
                seen.append(("sent", r, lib.is_grad_enabled()))
            except Recoverable:
                seen.append(("recovered", lib.is_grad_enabled()))
                i = -1
            except Fatal:
                seen.append(("fatal", lib.is_grad_enabled()))
                raise KeyError("secondary") from None
            except GeneratorExit:
                seen.append(("exit", lib.is_grad_enabled()))
                raise
            i += 1

    c = coro()
    seen.append(("first", next(c), lib.is_grad_enabled()))
    seen.append(("send", c.send("a"), lib.is_grad_enabled()))
    seen.append(("throw", c.throw(Recoverable), lib.is_grad_enabled()))
    c.close()
    seen.append(("closed", lib.is_grad_enabled()))

    c = coro()
    next(c)
    try:
        c.throw(Fatal)
    except KeyError as e:
        seen.append(("raised", str(e), lib.is_grad_enabled()))
    return seen


def async_coroutine(lib):
    # Neither library holds the mode inside an ``async def`` body: only its creation is wrapped.
    @lib.no_grad()
    async def f():
        return lib.is_grad_enabled()

    return asyncio.run(f())


@pytest.mark.parametrize("scenario", [generator_modes, coroutine_send_throw_close, async_coroutine])
def test_generators_match_torch(scenario):
    check(scenario)


def test_generator_mode_held_at_each_step():
    @ng.no_grad()
    def gen():
        for i in range(3):
            assert not ng.is_grad_enabled()
            yield i

    g = gen()
    assert next(g) == 0
    assert ng.is_grad_enabled()
    with ng.no_grad():
        assert next(g) == 1
    assert ng.is_grad_enabled()
    assert list(g) == [2]


# -- classes --------------------------------------------------------------------------------------
def class_decoration(lib):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")

        @lib.no_grad()
        class Foo:
            def __init__(self):
                self.init_mode = lib.is_grad_enabled()

            def method(self):
                return lib.is_grad_enabled()

    foo = Foo()
    return [(x.category, str(x.message)) for x in w], foo.init_mode, foo.method()


def test_class_decoration_warns_as_torch():
    mine, theirs = both(class_decoration)
    assert mine == theirs
    assert mine[0][0][0] is FutureWarning
    assert "Decorating classes is deprecated" in mine[0][0][1]


def test_function_decoration_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @ng.no_grad()
        def f():
            return ng.is_grad_enabled()

        assert f() is False


# ---- @no_grad and @enable_grad without parentheses -----------------------------------------------
def test_bare_no_grad_decorator():
    def run(lib):
        @lib.no_grad
        def double(x):
            return x * 2

        @lib.enable_grad
        def triple(x):
            return x * 3

        x = lib.ones(2, requires_grad=True)
        with lib.no_grad():
            inner = triple(x)
        return double(x).requires_grad, inner.requires_grad, double.__name__

    assert same(run) == ("ok", (False, True, "double"))
