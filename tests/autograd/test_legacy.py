"""The legacy spellings that old tutorials use: ``Variable``, ``volatile``, ``FloatTensor`` and
friends, ``Tensor(...)``, ``Tensor.new``, ``Tensor.type``, instantiated Functions,
``saved_variables``, ``InplaceFunction`` (``nbgrad/autograd/variable.py``,
``nbgrad/_tensor/legacy_types.py``, ``nbgrad/autograd/function.py``).

Each scenario runs with nbgrad and with PyTorch; what it records must be equal, and errors must
have the same type (and the key words of PyTorch's message).
"""

import gc
import warnings

import numpy as np
import pytest

import nbgrad as ng
from nbgrad.autograd import Variable
from nbgrad.autograd.function import Function, InplaceFunction

torch = pytest.importorskip("torch")

LIBS = pytest.mark.parametrize("lib", [ng, torch], ids=["nbgrad", "torch"])


def short(dtype):
    return str(dtype).rpartition(".")[2]


def describe(t):
    return (tuple(t.shape), short(t.dtype), t.requires_grad, t.is_leaf)


def error_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the type is what is compared)
        return type(e), str(e)
    return None


def same_errors(scenario, *keys):
    """The scenario raises the same exception type in both libraries, with ``keys`` in both
    messages."""
    mine, theirs = error_of(lambda: scenario(ng)), error_of(lambda: scenario(torch))
    assert mine is not None and theirs is not None
    assert mine[0] is theirs[0], (mine, theirs)
    for key in keys:
        assert key in mine[1] and key in theirs[1], (key, mine, theirs)


# -- Variable -------------------------------------------------------------------------------------
def variable_forms(lib):
    V = lib.autograd.Variable
    x = lib.arange(1.0, 7).view(2, 3)
    v = V(x, requires_grad=True)
    seen = [describe(v), type(v) is lib.Tensor, isinstance(v, V), isinstance(x, V)]
    seen += [issubclass(V, lib.Tensor), isinstance(1.0, V), describe(V()), describe(V(None))]
    y = V(x)
    y[0, 0] = 10.0  # shares memory and version counter with x
    seen += [x[0, 0].item(), x._version, describe(y)]
    v[[1, 0, 1]].sum().backward()
    seen.append(v.grad.tolist())
    z = V(v * 2)  # detached: a new leaf
    seen += [describe(z), z.grad_fn is None, describe(V(v * 2, True))]
    seen.append(describe(V(lib.ones(2, dtype=lib.long), requires_grad=False)))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        seen.append(describe(V(x, volatile=True)))
    seen.append([(c.category, "volatile" in str(c.message)) for c in w])
    seen.append(V._execution_engine is not None)
    return seen


def test_variable_matches_torch():
    assert variable_forms(ng) == variable_forms(torch)


def test_variable_is_the_default_engine_and_a_module():
    assert Variable._execution_engine is ng.autograd.engine.get_default_engine()
    assert Variable.__module__ == "nbgrad.autograd.variable"


@pytest.mark.parametrize(
    "call, keys",
    [
        (lambda L: L.autograd.Variable(1.0), ["Variable data has to be a tensor"]),
        (lambda L: L.autograd.Variable([1.0]), ["Variable data has to be a tensor"]),
        (
            lambda L: L.autograd.Variable(L.ones(2, dtype=L.long), requires_grad=True),
            ["floating point"],
        ),
        (
            lambda L: L.autograd.Variable(L.ones(2), volatile=True, requires_grad=True),
            ["Variable can't be volatile and require_grad at the same time!"],
        ),
        (lambda L: L.autograd.Variable(L.ones(2), _grad_fn=1), ["_grad_fn has to be a Function"]),
        (lambda L: L.autograd.Variable(L.ones(2), foo=1), []),
    ],
)
def test_variable_errors(call, keys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_errors(call, *keys)


def test_variable_with_a_grad_fn_is_refused():
    def built_in_node(lib):
        y = lib.ones(1, requires_grad=True) * 2
        lib.autograd.Variable(lib.ones(1), _grad_fn=y.grad_fn)

    same_errors(built_in_node, "_grad_fn has to be a Function object or None, but got MulBackward0")

    def custom_node(lib):
        class Id(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                return g

        y = Id.apply(lib.ones(1, requires_grad=True))
        lib.autograd.Variable(lib.ones(1), _grad_fn=y.grad_fn)

    same_errors(custom_node, "_grad_fn argument to legacy Variable constructor is no longer")


@LIBS
def test_volatile_is_always_false_and_warns(lib):
    v = lib.autograd.torch.randn(3, 3)  # torch.autograd.torch is the package itself
    assert lib.autograd.torch is lib
    with pytest.warns(UserWarning, match=r"volatile was removed \(Variable.volatile is always"):
        assert v.volatile is False
    with pytest.warns(UserWarning, match="volatile was removed and now has no effect"):
        v.volatile = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert v.volatile is False


# -- Functions ------------------------------------------------------------------------------------
def legacy_function(lib):
    class MyFunction(lib.autograd.Function):
        def forward(self, x):
            return x

        def backward(self, grad_output):
            return grad_output

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        f = MyFunction()
    seen = [(c.category, "should not be instantiated" in str(c.message)) for c in w]
    x = lib.ones(2, requires_grad=True)
    seen.append(f.forward(x) is x)  # an instance's methods are plain methods
    try:
        f(x)
    except RuntimeError as e:
        seen.append(str(e))
    return seen


def test_instantiated_function_warns_and_calling_it_raises_as_torch():
    mine = legacy_function(ng)
    assert mine == legacy_function(torch)
    assert mine[0] == (DeprecationWarning, True)
    assert mine[-1].startswith(
        "Legacy autograd function with non-static forward method is deprecated"
    )


def test_destructor_that_collects_garbage():
    class CollectOnDelete(Function):
        def forward(self, x):
            return x

        def backward(self, grad_output):
            return grad_output

        def __del__(self):
            gc.collect()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for _ in range(10):
            CollectOnDelete().forward(ng.randn(1, requires_grad=True)).backward()


def saved_variables(lib):
    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_variables
            return grad * b, grad * a

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = lib.tensor([3.0, 4.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        MyFunction.apply(x, y).sum().backward()
    return [(c.category, str(c.message)) for c in w], x.grad.tolist(), y.grad.tolist()


def test_saved_variables_is_deprecated_as_torch():
    mine = saved_variables(ng)
    assert mine == saved_variables(torch)
    assert mine[0] == [(DeprecationWarning, "'saved_variables' is deprecated; use 'saved_tensors'")]


def inplace_function(lib):
    from importlib import import_module

    IF = import_module(lib.__name__ + ".autograd.function").InplaceFunction

    class Inplace(IF):
        @staticmethod
        def forward(ctx, a, b):
            ctx.mark_dirty(a)
            return a.add_(b), b + 2

        @staticmethod
        def backward(ctx, grad_a, grad_b):
            return grad_a, grad_a + grad_b

    x = lib.zeros(2, 2)
    y = lib.ones(2, 2, requires_grad=True)
    q, p = Inplace.apply(x, y)
    seen = [q is x, type(q.grad_fn) is Inplace._backward_cls, q.requires_grad, x.tolist()]
    q.sum().backward()
    seen.append(y.grad.tolist())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        seen += [IF().inplace, IF(True).inplace]
    seen.append(error_of(lambda: IF.apply(y))[0])  # forward not implemented
    return seen


def test_inplace_function_matches_torch():
    assert inplace_function(ng) == inplace_function(torch)
    assert issubclass(InplaceFunction, Function)


# -- legacy tensor types --------------------------------------------------------------------------
TYPE_NAMES = [
    "FloatTensor",
    "DoubleTensor",
    "HalfTensor",
    "ByteTensor",
    "CharTensor",
    "ShortTensor",
    "IntTensor",
    "LongTensor",
    "BoolTensor",
]


@pytest.mark.parametrize("name", TYPE_NAMES)
def test_tensor_types_match_torch(name):
    def record(lib):
        T = getattr(lib, name)
        seen = [short(T.dtype), T.is_cuda, T.is_sparse, T.__name__, issubclass(T, lib.Tensor)]
        seen += [T.__module__ == lib.__name__, repr(T) == f"<class '{lib.__name__}.{name}'>"]
        seen += [short(T().dtype), tuple(T().shape), tuple(T(2, 3).shape)]
        seen += [tuple(T(lib.Size([2, 3])).shape), tuple(T(np.int64(3)).shape)]
        seen += [T([1, 0, 1]).tolist(), T((1, 0)).tolist(), T([[1, 0], [0, 1]]).tolist()]
        seen += [T(np.array([1.0, 0.0])).tolist(), tuple(T(2, device="cpu").shape)]
        for d in (lib.float32, lib.float64, lib.int64, lib.bool, lib.uint8):
            t = lib.zeros(2, dtype=d)
            seen.append(isinstance(t, T))
            seen.append(isinstance(t.type(T), T))
            seen.append(t.type(T) is t if t.dtype is T.dtype else short(t.type(T).dtype))
        seen.append(isinstance(1, T))
        seen.append(getattr(lib.cuda, name).is_cuda)
        return seen

    assert record(ng) == record(torch)


def test_tensor_types_alias_and_share():
    a = np.ones(2, dtype=np.float32)
    t = ng.FloatTensor(a)  # an array of the type itself is shared, as in PyTorch
    a[0] = 5
    assert t.tolist() == [5.0, 1.0]
    for lib in (ng, torch):
        x = lib.ones(2, 3, requires_grad=True)
        y = lib.FloatTensor(x)
        assert y is not x and y._base is x and y.requires_grad
        assert type(y.grad_fn).__name__ == "AliasBackward0"
        y.sum().backward()
        assert x.grad.tolist() == [[1.0] * 3] * 2
        z = lib.ones(2)
        lib.Tensor(z).add_(1)
        assert z.tolist() == [2.0, 2.0] and z._version == 1


def test_tensor_type_isinstance_follows_the_device():
    x = ng.ones(2)
    assert isinstance(x, ng.FloatTensor) and not isinstance(x, ng.cuda.FloatTensor)
    assert isinstance(ng.nn.Parameter(x), ng.FloatTensor)


@pytest.mark.parametrize(
    "call, keys",
    [
        (lambda L: L.FloatTensor(L.ones(2, dtype=L.float64)), ["expected TensorOptions(dtype="]),
        (lambda L: L.FloatTensor(L.tensor(3)), ["expected TensorOptions"]),
        (lambda L: L.FloatTensor(2.5), ["new(): data must be a sequence (got float)"]),
        (lambda L: L.FloatTensor(True), ["new(): data must be a sequence (got bool)"]),
        (lambda L: L.FloatTensor(None), ["data must be a sequence (got NoneType)"]),
        (lambda L: L.FloatTensor("ab"), ["new(): invalid data type 'str'"]),
        (lambda L: L.FloatTensor(-1), ["Trying to create tensor with negative dimension -1"]),
        (lambda L: L.FloatTensor([1, 2], 3), ["new() received an invalid combination"]),
        (lambda L: L.FloatTensor(2, dtype=L.float64), ["invalid combination of arguments"]),
        (lambda L: L.FloatTensor(2, requires_grad=True), ["invalid combination of arguments"]),
        (lambda L: L.FloatTensor(2, 3.0), ["failed to unpack the object at pos 2"]),
        (
            lambda L: L.FloatTensor(2, device="cuda"),
            ["legacy constructor expects device type: cpu but device type: cuda was passed"],
        ),
        (lambda L: L.ones(2).double().new(L.ones(2)), ["expected TensorOptions"]),
        (lambda L: L.ones(2).new(2, device="cuda"), ["legacy constructor expects device type"]),
    ],
)
def test_legacy_constructor_errors(call, keys):
    same_errors(call, *keys)


# -- Tensor(...), Tensor.new, Tensor.type -------------------------------------------------------
def constructors(lib):
    seen = []
    for args in [(2, 3), ([1, 2],), ([True],), (), (lib.Size([2]),), (np.array([1, 2]),)]:
        t = lib.Tensor(*args)
        seen.append((tuple(t.shape), short(t.dtype), t.requires_grad, type(t) is lib.Tensor))
    seen.append(lib.Tensor([[1, 2], [3, 4]]).tolist())
    lib.set_default_dtype(lib.float64)
    try:
        seen += [short(lib.Tensor(2).dtype), short(lib.Tensor([1]).dtype)]
    finally:
        lib.set_default_dtype(lib.float32)

    class Sub(lib.Tensor):
        pass

    s = Sub([1.0, 2.0])
    seen += [type(s).__name__, s.tolist(), isinstance(s, lib.Tensor)]
    d = lib.ones(2, dtype=lib.float64)
    for args in [(2, 3), ([1, 2],), (), (lib.Size([1, 2]),)]:
        t = d.new(*args)
        seen.append((tuple(t.shape), short(t.dtype), t.requires_grad))
    seen.append(d.new([1, 2]).tolist())
    seen.append(d.new(d) is d)
    x = lib.ones(2, 2, requires_grad=True)
    v = x.new(x[0].size()).fill_(7)
    seen.append((v.tolist(), v.requires_grad))
    return seen


def test_constructors_match_torch():
    assert constructors(ng) == constructors(torch)


def types(lib):
    x = lib.ones(2, requires_grad=True)
    seen = [x.type().rpartition(".")[2], x.double().type().rpartition(".")[2]]
    seen.append(short(x.type("torch.DoubleTensor").dtype))
    seen.append(x.type(lib.float32) is x)
    seen.append(x.type(lib.FloatTensor) is x)
    y = x.type(lib.float64)
    seen += [short(y.dtype), type(y.grad_fn).__name__]
    seen.append(short(x.type(dtype=lib.LongTensor).dtype))
    seen.append(short(x.type(lib.float16, non_blocking=True).dtype))
    y.sum().backward()
    seen.append(x.grad.tolist())
    return seen


def test_type_matches_torch():
    assert types(ng) == types(torch)
    x = ng.ones(2)
    assert x.type() == "nbgrad.FloatTensor"
    assert x.type("nbgrad.LongTensor").dtype is ng.int64


@pytest.mark.parametrize(
    "arg, keys",
    [
        ("foo", ["invalid type: 'foo'"]),
        ("DoubleTensor", ["invalid type: 'DoubleTensor'"]),
        ("torch.NoSuchTensor", ["invalid type"]),
        (5, ["dtype must be a type, str, or dtype object"]),
    ],
)
def test_type_errors(arg, keys):
    same_errors(lambda L: L.ones(2).type(arg), *keys)


# -- small ops that the legacy tests use ----------------------------------------------------------
def exp_inplace(lib):
    x = lib.tensor([0.5, 1.0, 2.0], requires_grad=True)
    z = x * 2
    v = z._version
    w = z.exp_()
    seen = [w is z, type(z.grad_fn).__name__, z._version - v]
    (z * z).sum().backward()
    seen.append(np.round(x.grad.numpy(), 3).tolist())
    y = x * 1
    q = y * y
    y.exp_()
    seen.append(error_of(lambda: q.sum().backward())[0])
    seen.append(error_of(lambda: lib.tensor([1, 2]).exp_()))
    return seen


def test_exp_inplace_matches_torch():
    assert exp_inplace(ng) == exp_inplace(torch)


def bernoulli(lib):
    x = lib.rand(3, requires_grad=True)
    seen = []
    for r in (lib.bernoulli(x), x.bernoulli(), lib.bernoulli(x, 0.3)):
        seen.append((short(r.dtype), type(r.grad_fn).__name__, r.requires_grad))
    for r in ((x * 1).bernoulli_(), (x * 1).bernoulli_(0.2), (x * 1).bernoulli_(x)):
        seen.append((short(r.dtype), type(r.grad_fn).__name__))
    seen.append(short(lib.BoolTensor(5, 5).bernoulli_().dtype))
    seen.append(short(lib.ones(3, dtype=lib.long).bernoulli_(lib.rand(3)).dtype))
    seen.append(lib.autograd.grad(lib.bernoulli(x).sum(), x)[0].tolist())
    y = x * 1
    y.bernoulli_(x)
    seen.append(lib.autograd.grad(y.sum(), x)[0].tolist())
    seen.append(lib.zeros(100).bernoulli_(1.0).sum().item())
    seen.append(lib.ones(100).bernoulli_(lib.zeros(1)).sum().item())
    seen.append(lib.full((100,), 1.0).bernoulli().sum().item())
    for bad in (
        lambda: lib.bernoulli(lib.tensor([2.0])),
        lambda: lib.ones(2).bernoulli_(1.5),
        lambda: lib.ones(2).bernoulli_(lib.tensor([2.0, 0.0])),
        lambda: lib.bernoulli(lib.ones(2, dtype=lib.long)),
        lambda: lib.ones(2).bernoulli_(lib.ones(3)),
        lambda: lib.autograd.grad(lib.bernoulli(x, 0.3).sum(), x),
    ):
        seen.append(error_of(bad)[0])
    return seen


def test_bernoulli_matches_torch():
    assert bernoulli(ng) == bernoulli(torch)


def test_bernoulli_follows_manual_seed_and_p():
    ng.manual_seed(3)
    a = ng.full((1000,), 0.25).bernoulli()
    ng.manual_seed(3)
    b = ng.full((1000,), 0.25).bernoulli()
    # the same seed: the same draws by the same code (zeros and ones)
    assert a.tolist() == b.tolist()
    assert 150 < a.sum().item() < 350
    mask = ng.BoolTensor(5, 5).bernoulli_()
    assert mask.dtype is ng.bool and set(mask.flatten().tolist()) <= {True, False}


# -- gradcheck's deprecated Jacobian helpers ------------------------------------------------------
def jacobians(lib):
    from importlib import import_module

    gc_mod = import_module(lib.__name__ + ".autograd.gradcheck")

    def fn(inputs):
        x, y = inputs
        return x * x + y, x + 2 * y

    a = lib.tensor([[0.5, 1.0], [1.5, 2.0]], dtype=lib.float64, requires_grad=True)
    b = lib.tensor([0.25, -1.0], dtype=lib.float64, requires_grad=True)
    seen = []
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for kw in ({}, {"target": a}, {"target": (b,)}):
            num = gc_mod.get_numerical_jacobian(fn, (a, b), eps=1e-6, **kw)
            seen.append([np.round(j.numpy(), 5).tolist() for j in num])
            seen.append([short(j.dtype) for j in num])
        out = fn((a, b))[0]
        jac, reentrant, sizes_ok, types_ok = gc_mod.get_analytical_jacobian((a, b), out)
        seen += [[np.round(j.numpy(), 5).tolist() for j in jac], reentrant, sizes_ok, types_ok]
        seen.append([short(j.dtype) for j in jac])
    seen.append(sorted({(c.category, str(c.message)[:60]) for c in w}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in (
            lambda: gc_mod.get_numerical_jacobian(fn, (a, b), grad_out=2.0),
            lambda: gc_mod.get_analytical_jacobian((a, b), out, grad_out=2.0),
        ):
            seen.append(error_of(call))
    return seen


def test_deprecated_jacobian_helpers_match_torch():
    mine = jacobians(ng)
    assert mine == jacobians(torch)
    assert mine[-3][0][0] is FutureWarning


def test_analytical_jacobian_sees_a_nondeterministic_backward():
    from nbgrad.autograd.gradcheck import get_analytical_jacobian

    class Jitter(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g * (1 + ng.rand(*g.shape, dtype=g.dtype) * 1e-6)

    a = ng.rand(2, 2, dtype=ng.float64, requires_grad=True)
    out = Jitter.apply(a)
    with pytest.warns(FutureWarning, match="`get_analytical_jacobian` was part of PyTorch's"):
        jac, reentrant, _, _ = get_analytical_jacobian((a,), out)
    assert not reentrant
    with pytest.warns(FutureWarning):
        _, reentrant, _, _ = get_analytical_jacobian((a,), out, nondet_tol=1e-3)
    assert reentrant
    np.testing.assert_allclose(jac[0].numpy(), np.eye(4), atol=1e-5)
