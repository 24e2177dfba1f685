"""Full backward hooks of Modules: ``BackwardHookFunction`` and ``BackwardHook``.

Mirrors ``torch/nn/modules/_functions.py`` (``BackwardHookFunction``) and
``torch/utils/hooks.py`` (``BackwardHook``).

NOTE [Module backward hooks]
As in PyTorch, a Module with full backward (pre-)hooks wraps the tensors of its inputs and of
its outputs in an identity custom Function, so the graph gets two ``BackwardHookFunctionBackward``
nodes around the module's own nodes:

- on the output node, a post hook stores the gradients of the outputs and calls the backward
  pre-hooks (which may replace them). It runs after the tensor hooks of the module's outputs
  and before any node inside the module.
- on the input node, a post hook calls the backward hooks with ``(module, grad_input,
  grad_output)``. That node has the lowest ``sequence_nr`` of the module's nodes, so it runs
  once every gradient inside the module is done (parameters' AccumulateGrad first), and before
  the hooks registered on the input tensors.

If no input requires grad there is no input node: the backward hooks run at output time with
a warning. The hooks are captured when forward runs (as in PyTorch, removing one later does not
take it out of a graph already built), but ``handle.enabled`` is read when backward reaches
them, so a hook disabled in the hook editor is skipped.
"""

from __future__ import annotations

import warnings

from nbgrad.autograd.function import Function
from nbgrad.autograd.grad_mode import is_grad_enabled
from nbgrad.tensor import Tensor

__all__ = ["BackwardHookFunction", "BackwardHook"]


class BackwardHookFunction(Function):
    """Identity on its tensors; its node (``BackwardHookFunctionBackward``) carries the hooks."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[arg for arg in args if not arg.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *args):
        return args


class BackwardHook:
    """Connects one forward call of a module to its backward hooks (PyTorch's ``BackwardHook``).

    ``user_hooks`` and ``user_pre_hooks`` are the modules' ``RemovableHandle`` objects.
    """

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    @staticmethod
    def _pack_with_none(indices, values, size):
        res = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    @staticmethod
    def _unpack_none(indices, values):
        return tuple(values[idx] for idx in indices)

    def _set_user_hook(self, grad_fn):
        def module_backward_hook(grad_input, _):
            if self.grad_outputs is None:
                # the gradient reached the inputs without passing through the outputs
                # (double backward, for instance)
                return None
            res = self._pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
            for handle in self.user_hooks:
                if not handle.enabled:
                    continue
                out = handle.fn(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError(
                        "Backward hook returned an invalid number of grad_input, got "
                        f"{len(out)}, but expected {len(res)}"
                    )
                res = out
            self.grad_outputs = None
            return self._unpack_none(self.input_tensors_index, res)

        grad_fn.register_hook(module_backward_hook)

    def _apply_on_tensors(self, fn, args):
        tensors_idx = []
        tensors = []
        requires_grad = False
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors_idx.append(i)
                tensors.append(arg)
                requires_grad |= arg.requires_grad
        if not (requires_grad and is_grad_enabled()):
            return args, None
        new_tensors = BackwardHookFunction.apply(*tensors)
        if len(new_tensors) == 0:
            raise RuntimeError(
                "Cannot set Module backward hook for a Module with no input Tensors."
            )
        grad_fns = [
            t.grad_fn
            for t in new_tensors
            if t.grad_fn is not None and t.grad_fn.name() == "BackwardHookFunctionBackward"
        ]
        if not grad_fns:
            raise RuntimeError("Error while setting up backward hooks: no hook node was created.")
        fn(grad_fns[0])
        arg_list = list(args)
        for idx, val in zip(tensors_idx, new_tensors):
            arg_list[idx] = val
        out = tuple(arg_list) if type(args) is tuple else type(args)(*arg_list)
        return out, tensors_idx

    def setup_input_hook(self, args):
        """Wrap the module's input tensors; their node will call the backward hooks."""
        res, input_idx = self._apply_on_tensors(self._set_user_hook, args)
        self.n_inputs = len(args)
        self.input_tensors_index = input_idx
        return res

    def setup_output_hook(self, args):
        """Wrap the module's output tensors; their node will call the backward pre-hooks."""

        def fn(grad_fn):
            def module_backward_pre_hook(_, grad_output):
                self.grad_outputs = self._pack_with_none(
                    self.output_tensors_index, grad_output, self.n_outputs
                )
                expected_len = len(self.grad_outputs)
                for handle in self.user_pre_hooks:
                    if not handle.enabled:
                        continue
                    hook_grad_outputs = handle.fn(self.module, self.grad_outputs)
                    if hook_grad_outputs is None:
                        continue
                    if len(hook_grad_outputs) != expected_len:
                        raise RuntimeError(
                            "Backward pre hook returned an invalid number of grad_output, got "
                            f"{len(hook_grad_outputs)}, but expected {expected_len}"
                        )
                    self.grad_outputs = hook_grad_outputs
                local_grad_outputs = self.grad_outputs
                if self.input_tensors_index is None:  # no input requires grad
                    if any(h.enabled for h in self.user_hooks):
                        warnings.warn(
                            "Full backward hook is firing when gradients are computed with "
                            "respect to module outputs since no inputs require gradients. See "
                            "the documentation of Module.register_full_backward_hook.",
                            stacklevel=2,
                        )
                    grad_inputs = self._pack_with_none([], [], self.n_inputs)
                    for handle in self.user_hooks:
                        if not handle.enabled:
                            continue
                        res = handle.fn(self.module, grad_inputs, self.grad_outputs)
                        if res is not None and not (
                            isinstance(res, tuple) and all(el is None for el in res)
                        ):
                            raise RuntimeError(
                                "Backward hook for Modules where no input requires gradient "
                                "should always return None or None for all gradients."
                            )
                    self.grad_outputs = None
                if local_grad_outputs is not None:
                    return tuple(local_grad_outputs[i] for i in self.output_tensors_index)
                return None

            grad_fn.register_hook(module_backward_pre_hook)

        is_tuple = isinstance(args, tuple)
        if not is_tuple:
            args = (args,)
        res, output_idx = self._apply_on_tensors(fn, args)
        self.n_outputs = len(args)
        self.output_tensors_index = output_idx
        return res if is_tuple else res[0]
