"""Views and in-place bookkeeping: which tensor is a view of which base, the checks PyTorch
makes before an in-place op on a view, and the view nodes regenerated after one (PyTorch's
``torch/csrc/autograd/variable.cpp``: ``ViewInfo``, ``CreationMeta``).
"""

from __future__ import annotations

from weakref import ref as _weakref

from nbgrad._graph.grad_state import _inference_tensors
from nbgrad._graph.grad_state import _state as _grad_state
from nbgrad._tensor.conversion import _set_inference

# the ways a view can be made outside grad mode: see NOTE [Views made in no-grad mode]
_NO_GRAD, _INFERENCE, _IN_CUSTOM_FUNCTION = 2, 4, 6

Tensor = None  # the Tensor class: see NOTE [The Tensor class, bound late]


def _mark_view(result, src, step):
    if _inference_tensors.made:
        if getattr(src, "_inference", False):
            # a view of an inference tensor is an inference tensor that autograd does not see:
            # no base, no history, never requiring grad (NOTE [Inference tensors])
            result._base = result._view_chain = None
            result._version_counter = src._counter()
            result._no_grad_view = 0
            _set_inference(result, True)
            return
        _set_inference(result, False)  # (a view of a normal tensor is normal)
    # the base is the root of the chain of views; but a leaf that requires grad is the base of
    # its views even when it is itself a view (``arange(6.).view(2, 3).requires_grad_()``), as
    # PyTorch's differentiable views: an in-place op on its views must see the leaf
    if src._base is None or (
        src._requires_grad and src.grad_fn is None and not getattr(src, "_no_grad_view", 0)
    ):
        base, chain = src, ()
    else:
        base, chain = src._base, src._view_chain
    result._base = base
    result._version_counter = src._counter()
    # (NOTE [Views made in no-grad mode]) how the view was made (_NO_GRAD, _INFERENCE, or
    # _IN_CUSTOM_FUNCTION, set by Function.apply), plus 1 when made from such a view; else 0
    if not _grad_state.enabled:
        result._no_grad_view = _INFERENCE if _grad_state.inference else _NO_GRAD
        if src._requires_grad:  # see NOTE [Views made in no-grad mode]
            result._requires_grad = True
            result._view_version = result._version_counter[0]
    elif base is not src and getattr(src, "_no_grad_view", 0):
        result._no_grad_view = src._no_grad_view | 1
    else:
        result._no_grad_view = 0
    if step is None or (base is not src and chain is None):
        result._view_chain = None  # several views from one op: no in-place on them
    else:
        result._view_chain = (chain or ()) + (step,)
        _track_view(base, result)


_NO_GRAD_VIEW_ADVICE = (
    "is being modified inplace with grad mode enabled. Given that this use case is ambiguous "
    "and error-prone, it is forbidden. You can clarify your code by moving both the view and "
    "the inplace either both inside the no_grad block (if you don't want the inplace to be "
    "tracked) or both outside (if you want the inplace to be tracked)."
)


_INFERENCE_VIEW_ADVICE = (
    "is being modified inplace in normal mode. Given that this use case is ambiguous and "
    "error-prone, it is forbidden. You can clarify your code by moving both the view and the "
    "inplace either both inside the inference_mode block (if you don't want the inplace to be "
    "tracked) or both outside (if you want the inplace to be tracked)."
)


_A_NO_GRAD_VIEW = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled."
)


_CUSTOM_FUNCTION_VIEW_ADVICE = (
    "This view was created inside a custom Function (or because an input was returned as-is) "
    "and the autograd logic to handle view+inplace would override the custom backward "
    "associated with the custom Function, leading to incorrect gradients. This behavior is "
    "forbidden. You can fix this by cloning the output of the custom Function."
)


def _view_on_rebase_message(view):
    """PyTorch's error for the history of a view made in no-grad or inference mode whose base,
    or another view of its base, was modified in place since (``handle_view_on_rebase``)."""
    if view._no_grad_view == _INFERENCE:
        made, advice = "inference mode", _INFERENCE_VIEW_ADVICE
    else:
        made, advice = "no_grad mode", _NO_GRAD_VIEW_ADVICE
    modified, _, rest = advice.partition(". ")  # ("is being modified inplace in normal mode")
    return (
        f"A view was created in {made} and its base or another view of its base has been "
        f"{modified.removeprefix('is being ')}. {rest}"
    )


_CHANGED_BASE_VIEW = []  # the class, made once Tensor is bound


def _made_without_grad(view):
    """Whether ``view`` was made in no-grad or inference mode of a tensor that requires grad
    (PyTorch's CreationMeta ``NO_GRAD_MODE``, ``INFERENCE_MODE``)."""
    return view._no_grad_view in (_NO_GRAD, _INFERENCE) and hasattr(view, "_view_version")


def _mark_base_changed(base, modified):
    """After an in-place op recorded on ``base`` or on its view ``modified``: each other live
    view of ``base`` made without grad has no history any more, only PyTorch's error, raised
    where its ``grad_fn`` is read (and so ``is_leaf``, and any op recorded on it). See NOTE
    [Views made in no-grad mode]."""
    views = getattr(base, "_views", None)
    if not views:
        return
    if not _CHANGED_BASE_VIEW:
        slot = Tensor.__dict__["grad_fn"]

        def raise_error(self):
            raise RuntimeError(_view_on_rebase_message(self))

        class TensorOfChangedBase(Tensor):
            """A Tensor whose ``grad_fn`` is an error (its class: a Tensor of the same slots)."""

            __slots__ = ()
            grad_fn = property(raise_error, slot.__set__)

        _CHANGED_BASE_VIEW.append(TensorOfChangedBase)
    for ref in tuple(views):
        view = ref()
        # (a subclass's view keeps its class, and its old history)
        if view is not None and view is not modified and type(view) is Tensor:
            if _made_without_grad(view):
                view.__class__ = _CHANGED_BASE_VIEW[0]


def _view_node_name(node):
    """A view's node as PyTorch's view errors name it: ``UnbindBackward0`` -> ``Unbind``."""
    return node.name().removesuffix("0").removesuffix("Backward")


def _check_no_internal_overlap(data):
    """As PyTorch: an in-place op may not write a tensor whose elements share memory (an
    expanded tensor); one element of it (``t[0] = v``) may be written."""
    if data.size and any(s == 0 and n > 1 for s, n in zip(data.strides, data.shape)):
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation."
        )


def _multiple_views_message(view):
    """PyTorch's error for an in-place op on one of several views that one op returned."""
    if view.grad_fn is not None:
        made = (
            f"Output {view._output_nr} of {_view_node_name(view.grad_fn)} is a view and is being "
            "modified inplace."
        )
    else:
        made = _A_NO_GRAD_VIEW
    return (
        made + " This view is the output of a function that returns multiple views. Such "
        "functions do not allow the output views to be modified inplace. You should replace the "
        "inplace operation by an out-of-place one."
    )


def _no_grad_view_message(view):
    """PyTorch's error for an in-place op on a view of one of the kinds above; it names the
    view's node when it has one (a view made in grad mode from such a view)."""
    kind = view._no_grad_view & ~1
    node = view.grad_fn
    name = _view_node_name(node) if node is not None else None
    if kind == _IN_CUSTOM_FUNCTION:
        if node is None:
            return f"{_A_NO_GRAD_VIEW} {_CUSTOM_FUNCTION_VIEW_ADVICE}"
        return (
            f"Output {view._output_nr} of {name} is a view and is being modified inplace. "
            + _CUSTOM_FUNCTION_VIEW_ADVICE
        )
    made = "created in inference mode and" if kind == _INFERENCE else "created in no_grad mode and"
    advice = _INFERENCE_VIEW_ADVICE if kind == _INFERENCE else _NO_GRAD_VIEW_ADVICE
    if node is None:
        return f"A view was {made} {advice}"
    return f"Output {view._output_nr} of {name} is a view of a view which was {made} {advice}"


# NOTE [Views of a modified base]
# An in-place op on a base (or on one of its views) gives the base a new history; every other
# live view of that base must then take its gradient through that new history, or a later use
# of the view would silently skip the in-place op. PyTorch regenerates a view's grad_fn lazily
# when it sees that the version counter moved (``AsStridedBackward0``); nbgrad does it eagerly,
# in ``Tensor._inplace``, by replaying each live view's chain of view ops on the base (so the
# regenerated node has the view op's own name, e.g. ``SelectBackward0``). The base keeps
# weakrefs to its views, pruned as they grow, so tracking costs one weakref per view.
#
# NOTE [Regenerated view nodes]
# One visible difference follows: PyTorch's regenerated node is made when the view is next
# used, nbgrad's at the in-place op, so its sequence number (and with it the engine's order
# among nodes ready at the same time) can differ when other ops come in between. Gradients are
# the same; a hook log on such a view's node may show it at another place.
def _track_view(base, view):
    views = getattr(base, "_views", None)
    if views is None:
        base._views = views = []
    elif len(views) >= 8 and not len(views) & (len(views) - 1):  # prune at powers of two
        views[:] = [ref for ref in views if ref() is not None]
    views.append(_weakref(view))


class _NoGrad:
    def __enter__(self):
        self.prev = _grad_state.enabled
        _grad_state.enabled = False

    def __exit__(self, *exc):
        _grad_state.enabled = self.prev


class _EnableGrad(_NoGrad):
    def __enter__(self):
        self.prev = _grad_state.enabled
        _grad_state.enabled = True
