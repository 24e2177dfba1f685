"""Misuse of tensors, ops, ``backward`` and ``grad``: nbgrad raises (or warns) as PyTorch does.

Each scenario runs in both frameworks; the exception types must be equal and both messages
must contain the key phrase of the misuse table in ``shared/reference/pytorch-behaviour.md``.
"""

import warnings

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")


def leaf(lib, *values):
    return lib.tensor(list(values) if len(values) > 1 else values[0], requires_grad=True)


class Anycase(str):
    """A key phrase whose capitals differ between PyTorch's own messages ("Only Tensors of
    floating point ..." from factories, "only Tensors of ..." from ``requires_grad_``)."""


def _contains(phrase, message):
    if isinstance(phrase, Anycase):
        return phrase.lower() in message.lower()
    return phrase in message


# -- scenarios: each takes the framework module and performs one misuse -------------------------
def backward_twice(lib):
    x = leaf(lib, 1.0, 2.0)
    y = (x.exp() * x).sum()
    y.backward()
    y.backward()


def saved_self_after_backward(lib):
    x = leaf(lib, 1.0, 2.0)
    y = x * x
    y.sum().backward()
    return y.grad_fn._saved_self


def grad_twice(lib):
    x = leaf(lib, 1.0, 2.0)
    y = x.sin().sum()
    lib.autograd.grad(y, x)
    lib.autograd.grad(y, x)


def nonscalar_backward(lib):
    x = leaf(lib, 1.0, 2.0)
    (x * 2).backward()


def nonscalar_grad(lib):
    x = leaf(lib, 1.0, 2.0)
    lib.autograd.grad(x * 2, x)


def wrong_gradient_shape(lib):
    x = leaf(lib, 1.0, 2.0, 3.0)
    (x * 2).backward(lib.ones(2))


def wrong_grad_outputs_shape(lib):
    x = leaf(lib, 1.0, 2.0, 3.0)
    lib.autograd.grad(x * 2, x, grad_outputs=lib.ones(3, 1))


def grad_count_mismatch(lib):
    x = leaf(lib, 1.0, 2.0)
    lib.autograd.grad([x * 2, x * 3], x, grad_outputs=[lib.ones(2)])


def backward_count_mismatch(lib):
    x = leaf(lib, 1.0, 2.0)
    lib.autograd.backward([(x * 2).sum(), (x * 3).sum()], grad_tensors=[lib.tensor(1.0)])


def backward_no_grad(lib):
    lib.tensor([1.0, 2.0]).sum().backward()


def backward_no_grad_under_no_grad(lib):
    x = leaf(lib, 1.0, 2.0)
    with lib.no_grad():
        y = (x * 2).sum()
    y.backward()


def grad_input_without_grad(lib):
    x = leaf(lib, 1.0, 2.0)
    w = lib.tensor([3.0, 4.0])
    lib.autograd.grad((x * w).sum(), w)


def grad_unused_input(lib):
    x = leaf(lib, 1.0, 2.0)
    unused = leaf(lib, 3.0, 4.0)
    lib.autograd.grad((x * x).sum(), [x, unused])


def grad_empty_inputs(lib):
    x = leaf(lib, 1.0, 2.0)
    lib.autograd.grad((x * x).sum(), [])


def backward_empty_inputs(lib):
    x = leaf(lib, 1.0, 2.0)
    (x * x).sum().backward(inputs=[])


def modified_by_inplace(lib):
    x = leaf(lib, 1.0, 2.0)
    y = x.sigmoid()  # SigmoidBackward0 saves its output
    y.mul_(3)
    y.sum().backward()


def modified_input_by_inplace(lib):
    x = leaf(lib, 1.0, 2.0)
    h = x * 1
    z = h.sin()  # SinBackward0 saves its input h
    h.add_(1)  # the message names h by its op now: AddBackward0
    z.sum().backward()


def inplace_on_leaf(lib):
    x = leaf(lib, 1.0, 2.0)
    x.add_(1)


# see NOTE [Views made in no-grad mode]
NO_GRAD_VIEW = "A view was created in no_grad mode and is being modified inplace with grad mode"


def inplace_on_no_grad_view(lib):
    b = leaf(lib, 1.0, 2.0, 3.0).clone()
    with lib.no_grad():
        v = b[:2]
    v.mul_(2)


def inplace_with_grad_on_no_grad_view_of_plain_tensor(lib):
    b = lib.zeros(3)
    with lib.no_grad():
        v = b[:2]
    v.add_(leaf(lib, 1.0, 2.0))


def inplace_on_no_grad_view_of_leaf(lib):  # before the leaf check, as PyTorch
    a = leaf(lib, 1.0, 2.0, 3.0)
    with lib.no_grad():
        v = a[:2]
    v.mul_(2)


def inplace_on_no_grad_unbind_output(lib):  # before the several-views check, as PyTorch
    b = leaf(lib, 1.0, 2.0, 3.0).clone()
    with lib.no_grad():
        parts = b.unbind(0)
    parts[0].mul_(2)


def inplace_on_view_of_no_grad_view(lib):
    b = leaf(lib, 1.0, 2.0, 3.0).clone()
    with lib.no_grad():
        v = b[:2]
    w = v[:1]  # made in grad mode, from a view made in no_grad
    w.mul_(2)


def setitem_on_no_grad_view(lib):
    b = leaf(lib, 1.0, 2.0, 3.0).clone()
    with lib.no_grad():
        v = b[:2]
    v[0] = 5.0


def inplace_on_view_of_leaf(lib):
    x = leaf(lib, 1.0, 2.0)
    x[0].mul_(2)


def setitem_on_leaf(lib):
    x = leaf(lib, 1.0, 2.0)
    x[0] = 5.0


def hook_changes_size(lib):
    x = leaf(lib, 1.0, 2.0)
    y = x * 2

    def size_hook(grad):
        return grad[:1]

    y.register_hook(size_hook)
    y.sum().backward()


def hook_changes_type(lib):
    x = leaf(lib, 1.0, 2.0)
    y = x * 2

    def type_hook(grad):
        return grad.double()

    y.register_hook(type_hook)
    y.sum().backward()


def prehook_changes_count(lib):
    x = leaf(lib, 1.0, 2.0)
    y = (x * 2).sum()

    def count_hook(grads):
        return (grads[0], grads[0])

    y.grad_fn.register_prehook(count_hook)
    y.backward()


def posthook_changes_size(lib):
    x = leaf(lib, 1.0, 2.0)
    y = (x * 2).sum()

    def post_size_hook(grad_inputs, grad_outputs):
        return (grad_inputs[0][:1], None)

    y.grad_fn.next_functions[0][0].register_hook(post_size_hook)
    y.backward()


def _function_class(lib, backward):
    class Twice(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    Twice.backward = staticmethod(backward)
    return Twice


def function_wrong_grad_shape(lib):
    f = _function_class(lib, lambda ctx, g: lib.ones(4))
    x = leaf(lib, 1.0, 2.0, 3.0)
    f.apply(x).sum().backward()


def function_wrong_grad_count(lib):
    f = _function_class(lib, lambda ctx, g: (g, g))
    x = leaf(lib, 1.0, 2.0, 3.0)
    f.apply(x).sum().backward()


def numpy_on_requires_grad(lib):
    leaf(lib, 1.0, 2.0).numpy()


def numpy_on_non_leaf(lib):
    (leaf(lib, 1.0, 2.0) * 2).numpy()


def int_requires_grad(lib):
    lib.tensor([1, 2], requires_grad=True)


def int_requires_grad_(lib):
    lib.tensor([1, 2]).requires_grad_()


def int_ones_requires_grad(lib):
    lib.ones(2, dtype=lib.int64, requires_grad=True)


def requires_grad_false_on_non_leaf(lib):
    y = leaf(lib, 1.0, 2.0) * 2
    y.requires_grad = False


def requires_grad_true_on_non_leaf(lib):
    y = leaf(lib, 1.0, 2.0) * 2
    y.requires_grad = True


def requires_grad_method_false_on_non_leaf(lib):
    y = leaf(lib, 1.0, 2.0) * 2
    y.requires_grad_(False)


def retain_grad_without_grad(lib):
    lib.tensor([1.0, 2.0]).retain_grad()


def hook_without_grad(lib):
    lib.tensor([1.0, 2.0]).register_hook(lambda g: g)


def post_accumulate_hook_on_non_leaf(lib):
    y = leaf(lib, 1.0, 2.0) * 2
    y.register_post_accumulate_grad_hook(lambda t: None)


def queue_callback_outside_backward(lib):
    lib.autograd.Variable._execution_engine.queue_callback(lambda: None)


def once_differentiable_twice(lib):
    from_module = lib.autograd.function.once_differentiable

    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @from_module
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = leaf(lib, 1.0, 2.0)
    # the gradient reaching Square's backward requires grad (it depends on x), so the result
    # of the once-differentiable backward carries an error node
    (g,) = lib.autograd.grad((Square.apply(x) ** 2).sum(), x, create_graph=True)
    g.sum().backward()


def nan_sqrt_backward(lib):
    # sqrt(0) has an infinite derivative: 0 * inf -> nan in SqrtBackward0 under anomaly mode
    x = leaf(lib, 0.0, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.autograd.detect_anomaly():
            (x.sqrt() * 0.0).sum().backward()


CASES = [
    # (scenario, key phrases that both messages contain)
    (backward_twice, ["backward through the graph a second time", "retain_graph=True"]),
    (saved_self_after_backward, ["backward through the graph a second time", "retain_graph=True"]),
    (grad_twice, ["backward through the graph a second time"]),
    (nonscalar_backward, ["grad can be implicitly created only for scalar outputs"]),
    (nonscalar_grad, ["grad can be implicitly created only for scalar outputs"]),
    (
        wrong_gradient_shape,
        ["Mismatch in shape: grad_output[0] has a shape of", "and output[0] has a shape of"],
    ),
    (wrong_grad_outputs_shape, ["Mismatch in shape: grad_output[0] has a shape of"]),
    (grad_count_mismatch, ["got 2 tensors and 1 gradients"]),
    (backward_count_mismatch, ["got 2 tensors and 1 gradients"]),
    (
        backward_no_grad,
        ["element 0 of tensors does not require grad and does not have a grad_fn"],
    ),
    (
        backward_no_grad_under_no_grad,
        ["element 0 of tensors does not require grad and does not have a grad_fn"],
    ),
    (grad_input_without_grad, ["One of the differentiated Tensors does not require grad"]),
    (
        grad_unused_input,
        [
            "The differentiated Tensor at index 1 appears to not have been used in the graph. "
            "Set allow_unused=True"
        ],
    ),
    (grad_empty_inputs, ["`inputs` argument to `grad()` cannot be empty"]),
    (backward_empty_inputs, ["`inputs` argument to `backward()` cannot be empty"]),
    (
        modified_by_inplace,
        [
            "modified by an inplace operation",
            "output 0 of Sigmoid",
            "is at version 1; expected version 0 instead",
            "anomaly detection",
        ],
    ),
    (
        modified_input_by_inplace,
        [
            "modified by an inplace operation",
            "output 0 of Add",
            "is at version 1; expected version 0 instead",
        ],
    ),
    (
        inplace_on_leaf,
        ["a leaf Variable that requires grad is being used in an in-place operation."],
    ),
    (inplace_on_view_of_leaf, ["a view of a leaf Variable that requires grad"]),
    (
        inplace_on_no_grad_view,
        [
            NO_GRAD_VIEW,
            "either both inside the no_grad block",
        ],
    ),
    (
        inplace_with_grad_on_no_grad_view_of_plain_tensor,
        [NO_GRAD_VIEW],
    ),
    (
        inplace_on_no_grad_view_of_leaf,
        [NO_GRAD_VIEW],
    ),
    (
        inplace_on_no_grad_unbind_output,
        [NO_GRAD_VIEW],
    ),
    (
        inplace_on_view_of_no_grad_view,
        ["Output 0 of Slice is a view of a view which was created in no_grad mode"],
    ),
    (
        setitem_on_no_grad_view,
        ["Output 0 of Select is a view of a view which was created in no_grad mode"],
    ),
    (setitem_on_leaf, ["a view of a leaf Variable that requires grad"]),
    (hook_changes_size, ["hook 'size_hook' has changed the size of value"]),
    (hook_changes_type, ["hook 'type_hook' has changed the type of value"]),
    (prehook_changes_count, ["hook 'count_hook' has returned an incorrect number of values"]),
    (posthook_changes_size, ["hook 'post_size_hook' has changed the size of value"]),
    (
        function_wrong_grad_shape,
        [
            "returned an invalid gradient at index 0 - got [4] but expected shape compatible "
            "with [3]"
        ],
    ),
    (function_wrong_grad_count, ["returned an incorrect number of gradients (expected 1, got 2)"]),
    (
        numpy_on_requires_grad,
        ["Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."],
    ),
    (numpy_on_non_leaf, ["Can't call numpy() on Tensor that requires grad"]),
    (int_requires_grad, [Anycase("Only Tensors of floating point"), "dtype can require gradients"]),
    (
        int_requires_grad_,
        [Anycase("Only Tensors of floating point"), "dtype can require gradients"],
    ),
    (
        int_ones_requires_grad,
        [Anycase("Only Tensors of floating point"), "dtype can require gradients"],
    ),
    (
        requires_grad_false_on_non_leaf,
        ["you can only change requires_grad flags of leaf variables", "detach()"],
    ),
    (
        requires_grad_true_on_non_leaf,
        ["you can only change requires_grad flags of leaf variables"],
    ),
    (
        requires_grad_method_false_on_non_leaf,
        ["you can only change requires_grad flags of leaf variables"],
    ),
    (retain_grad_without_grad, ["can't retain_grad on Tensor that has requires_grad=False"]),
    (hook_without_grad, ["cannot register a hook on a tensor that doesn't require gradient"]),
    (
        post_accumulate_hook_on_non_leaf,
        ["post accumulate grad hooks cannot be registered on non-leaf tensors"],
    ),
    (
        queue_callback_outside_backward,
        ["Final callbacks can only be installed during backward pass."],
    ),
    (
        once_differentiable_twice,
        ["trying to differentiate twice a function that was marked with @once_differentiable"],
    ),
    (nan_sqrt_backward, ["Function 'SqrtBackward0' returned nan values in its 0th output."]),
]


def _raise(scenario, lib):
    with pytest.raises(Exception) as info:
        scenario(lib)
    return info.value


@pytest.mark.parametrize("scenario, phrases", CASES, ids=[c[0].__name__ for c in CASES])
def test_misuse_raises_like_pytorch(scenario, phrases):
    t_err = _raise(scenario, torch)
    n_err = _raise(scenario, ng)
    assert type(n_err) is type(t_err), f"torch raised {t_err!r}, nbgrad raised {n_err!r}"
    for phrase in phrases:
        assert _contains(phrase, str(t_err)), f"the phrase is not PyTorch's: {phrase!r} vs {t_err}"
        assert _contains(phrase, str(n_err)), f"{phrase!r} not in {n_err}"


def test_grad_assignment_checks_as_pytorch():
    """``t.grad = v``: PyTorch's checks in its order (type, the tensor itself, dtype, size),
    each with its exception type and message; an alias of ``t`` is accepted."""

    def run(lib):
        x = lib.randn(5, 5, requires_grad=True)
        seen = []
        wrong = [0, "a", lib.randn(2, 2), lib.ones(5, 5, dtype=lib.long), x]
        wrong.append(lib.ones(2, 2, dtype=lib.double))  # (the dtype is checked first)
        for v in wrong:
            with pytest.raises((TypeError, RuntimeError)) as info:
                x.grad = v
            seen.append((info.type.__name__, str(info.value)))
        for v in [x.detach(), x.detach().view(5, 5), None]:
            x.grad = v
            seen.append(x.grad is v)
        return seen

    assert run(ng) == run(torch)


def test_views_made_in_no_grad_mode_allow_what_pytorch_allows():
    """In place inside no_grad, on the base, or with nothing that requires grad: allowed; and
    a refused in-place op changes nothing."""
    for lib in (torch, ng):
        a = leaf(lib, 1.0, 2.0, 3.0)
        with lib.no_grad():
            a[:2].mul_(2)  # initialising a parameter through a view
        assert a.detach().numpy().tolist() == [2.0, 4.0, 3.0]
        b = lib.zeros(3)
        with lib.no_grad():
            v = b[:2]
        v.mul_(2)  # nothing requires grad
        c = leaf(lib, 1.0, 2.0, 3.0).clone()
        with lib.no_grad():
            v = c[:2]
            v.mul_(2)
        c.mul_(2)  # the base itself
        assert c.detach().numpy().tolist() == [4.0, 8.0, 6.0]
        with pytest.raises(RuntimeError):
            v.add_(1)
        assert c.detach().numpy().tolist() == [4.0, 8.0, 6.0] and v._version == c._version


def test_modified_by_inplace_names_the_tensor_and_versions():
    x = leaf(ng, 1.0, 2.0)
    y = x.sigmoid()
    y.mul_(3)
    y.add_(1)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    msg = str(info.value)
    assert "[nbgrad.FloatTensor [2]]" in msg
    assert "output 0 of SigmoidBackward0" in msg
    assert "is at version 2; expected version 0 instead" in msg


def test_wrong_gradient_dtype_is_accepted_like_pytorch():
    grads = {}
    for lib in (torch, ng):
        x = leaf(lib, 1.0, 2.0, 3.0)
        (x * 2).backward(lib.ones(3, dtype=lib.float64))
        grads[lib.__name__] = x.grad
    assert grads["nbgrad"].dtype is ng.float32
    assert grads["torch"].dtype is torch.float32
    # exact: 1 * 2
    np.testing.assert_array_equal(grads["nbgrad"].numpy(), grads["torch"].numpy())


def test_requires_grad_method_true_on_non_leaf_is_allowed_like_pytorch():
    for lib in (torch, ng):
        y = leaf(lib, 1.0, 2.0) * 2
        assert y.requires_grad_(True) is y
        assert y.requires_grad and y.grad_fn is not None


def test_int_requires_grad_message_from_creation_is_capitalised():
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point"):
        ng.tensor([1, 2], requires_grad=True)


def test_modified_by_inplace_names_the_node_of_a_saved_output():
    x = leaf(ng, 1.0, 2.0)
    y = x.sigmoid()
    y.add_(1)  # y's grad_fn is now AddBackward0, but the saved value is Sigmoid's output
    with pytest.raises(RuntimeError, match="output 0 of SigmoidBackward0"):
        y.sum().backward()


# -- warnings -------------------------------------------------------------------------------------
def test_grad_of_non_leaf_warns_and_is_none_like_pytorch():
    phrase = "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed"
    for lib in (torch, ng):
        y = leaf(lib, 1.0, 2.0) * 2
        y.sum().backward()
        with pytest.warns(UserWarning, match=phrase):
            assert y.grad is None


def test_grad_of_non_leaf_with_retain_grad_does_not_warn():
    for lib in (torch, ng):
        y = leaf(lib, 1.0, 2.0) * 2
        y.retain_grad()
        y.sum().backward()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert y.grad is not None


def test_grad_of_leaf_does_not_warn():
    x = leaf(ng, 1.0, 2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.grad is None


def test_backward_create_graph_warns_about_a_reference_cycle_like_pytorch():
    # PyTorch warns once a process (TORCH_WARN_ONCE): without warn_always, any earlier test
    # that calls its backward(create_graph=True) would leave it nothing to warn here
    warn_always = torch.is_warn_always_enabled()
    torch.set_warn_always(True)
    try:
        for lib in (torch, ng):
            x = leaf(lib, 1.0, 2.0)
            with pytest.warns(UserWarning, match="reference cycle"):
                (x * x).sum().backward(create_graph=True)
            assert x.grad.requires_grad
    finally:
        torch.set_warn_always(warn_always)


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
def test_anomaly_nan_warns_with_forward_traceback():
    x = leaf(ng, 0.0, 1.0)
    with ng.autograd.detect_anomaly():
        y = (x.sqrt() * 0.0).sum()
        with pytest.warns(UserWarning, match="SqrtBackward0") as record:
            with pytest.raises(RuntimeError, match="returned nan values in its 0th output"):
                y.backward()
    assert any("Traceback of forward call" in str(w.message) for w in record)


def test_backward_with_unused_inputs_is_no_error_like_pytorch():
    for lib in (torch, ng):
        x = leaf(lib, 1.0, 2.0)
        unused = leaf(lib, 3.0)
        (x * x).sum().backward(inputs=[unused])
        assert unused.grad is None
        assert x.grad is None


def test_engine_usable_after_every_misuse():
    for scenario, _ in CASES:
        t_err = _raise(scenario, torch)
        with pytest.raises(type(t_err)):
            scenario(ng)
    x = leaf(ng, 1.0, 2.0)
    (x * x).sum().backward()
    # exact: 2 * x of whole numbers
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])
    assert ng.is_grad_enabled()
    assert not ng.autograd.is_anomaly_enabled()
