"""``Optimizer``: parameter groups, per-parameter state, ``zero_grad`` and state dicts.

Mirrors ``torch/optim/optimizer.py``. Subclasses implement ``step``; the update runs under
``no_grad`` with in-place Tensor ops on the parameters, as PyTorch's single-tensor code path.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from copy import deepcopy
from itertools import chain

from nbgrad.autograd.grad_mode import enable_grad, no_grad
from nbgrad.tensor import Tensor, _zero_grads

__all__ = ["Optimizer", "required"]


def _lerp_(start, end, weight):
    """``start.lerp_(end, weight)`` in PyTorch's two-branch form (exact at ``weight`` 1)."""
    if weight < 0.5:
        return start.add_((end - start) * weight)
    return start.copy_(end - (end - start) * (1 - weight))


def _check_plain_only(optimizer, **flags) -> None:
    """Refuse PyTorch's ``capturable``/``differentiable``/``fused`` implementations.

    NOTE [Plain optimizers only]
    nbgrad's optimizers accept PyTorch's keywords for the
    alternative implementations but run the plain single-tensor update only (``foreach`` is
    accepted and ignored: it changes speed, not results); asking for one that changes what
    ``step`` does (a graph through the update, CUDA-graph capture, a fused kernel) raises.
    """
    asked = [name for name, value in flags.items() if value]
    if asked:
        raise NotImplementedError(
            f"{type(optimizer).__name__}: {', '.join(f'{name}=True' for name in asked)} is not "
            "supported by nbgrad (only the plain implementation is)"
        )


class _RequiredParameter:
    """Singleton marking an optimizer default that each parameter group must give."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    """Base class of optimizers (``torch.optim.Optimizer``).

    ``params`` is an iterable of Tensors, or of dicts (parameter groups) each with a
    ``"params"`` entry and any options that override ``defaults`` for that group.
    """

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {type(params).__name__}"
            )
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []
        param_groups = list(params)
        if not param_groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __repr__(self):
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        return format_string + ")"

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters, with options that default to the optimizer's."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list instead."
            )
        else:
            param_group["params"] = list(params)
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors, but one of the params is "
                    f"{type(param).__name__}"
                )
            if not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    "parameter group didn't specify a value of required optimization parameter "
                    f"{name}"
                )
            param_group.setdefault(name, default)
        ids = [id(p) for p in param_group["params"]]
        if len(ids) != len(set(ids)):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, "
                "this will cause an error",
                stacklevel=3,
            )
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if not seen.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors: to None (the default) or to zeros."""
        _zero_grads((p for group in self.param_groups for p in group["params"]), set_to_none)

    def step(self, closure=None):
        """Perform one update; ``closure`` re-evaluates the model and returns the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                self._update_group(group)
        return loss

    def _update_group(self, group):
        """Update the parameters of one parameter group (each optimizer's own rule)."""
        raise NotImplementedError

    def _params_with_grad(self, group):
        return [p for p in group["params"] if p.grad is not None]

    # -- state dicts ----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """``{"state": {index: state}, "param_groups": [options with "params": [index]]}``.

        Parameters are replaced by their index in the order of the groups, as in PyTorch; the
        state tensors are the optimizer's own (not copies).
        """
        param_mappings: dict[int, int] = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start_index):
                param_mappings.setdefault(id(p), i)
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {
            (param_mappings[id(k)] if isinstance(k, Tensor) else k): v
            for k, v in self.state.items()
        }
        return {"state": packed_state, "param_groups": param_groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a ``state_dict()``: group options, and per-parameter state (copied, and cast
        to each parameter's dtype and device except ``step``)."""
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group"
            )
        id_map = dict(
            zip(
                chain.from_iterable(g["params"] for g in saved_groups),
                chain.from_iterable(g["params"] for g in groups),
            )
        )

        def cast(param, value, key=None):
            if isinstance(value, Tensor):
                with no_grad():
                    if key == "step":
                        return value.clone()
                    if param.is_floating_point():
                        return value.to(dtype=param.dtype, device=param.device, copy=True)
                    return value.to(device=param.device, copy=True)
            if isinstance(value, dict):
                return {k: cast(param, v, key=k) for k, v in value.items()}
            return deepcopy(value)

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v)
            else:
                state[k] = v
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            new_groups.append(saved)
        self.state = state
        self.param_groups = new_groups
