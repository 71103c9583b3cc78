"""Optimizer: the base class of SGD and Adam, with torch.optim's interface.

Parameters are organised in ``param_groups``: a list of dicts, each holding ``"params"`` (a
list of tensors) and that group's hyper-parameters (defaults fill in what a group leaves out).
``state`` maps a parameter to its own dict (momentum buffers, step counts), created on its
first update.
"""

import copy
from collections import OrderedDict, defaultdict
from typing import ClassVar

import numpy as np

from pyrt.autograd import enable_grad, mark_modified_all, reset_grads
from pyrt.optim import optimizer_hooks
from pyrt.optim.optimizer_hooks import (
    OptimizerPostHook,
    OptimizerPreHook,
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)
from pyrt.tensor import Tensor

__all__ = ["Optimizer", "OptimizerPostHook", "OptimizerPreHook",
           "register_optimizer_step_post_hook", "register_optimizer_step_pre_hook"]

# the hooks of one optimizer, each an OrderedDict by handle id (pyrt/optim/optimizer_hooks.py)
_HOOKS = ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
          "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
          "_optimizer_load_state_dict_pre_hooks", "_optimizer_load_state_dict_post_hooks")


# the keys a learning-rate schedule keeps in a group (pyrt.optim.lr_scheduler): its starting
# lr, and OneCycleLR's bounds; a saved group's load whatever the optimizer
_SCHEDULE_KEYS = ("initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum")


def _host_copy(array):
    """A NumPy copy of a state array, wherever it lives."""
    return array.copy() if isinstance(array, np.ndarray) else array.get()


class Optimizer:
    """Base class: subclasses pass their `defaults` and implement ``step()``."""

    OptimizerPreHook = OptimizerPreHook
    OptimizerPostHook = OptimizerPostHook

    def __init__(self, params, defaults):
        self._init_hooks()
        self.defaults = defaults
        self._checked = {}  # id(group) -> (group, hyper-parameters, checked values)
        self._state_device = "cpu"  # where the state arrays live: they follow the parameters
        # on the GPU, the fused step's device tables of parameter and state addresses, built
        # on the first step and reused (pyrt/cuda/ops/optim.py); they go with the optimizer
        self._device_tables = {}
        self.state = defaultdict(dict)
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {type(params).__name__}")
        param_groups = list(params)
        if not param_groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def add_param_group(self, param_group):
        """Add a group of parameters (a dict with "params" and optional hyper-parameters),
        for example layers that should train with their own learning rate."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            params = list(params)
        for param in params:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                f"{type(param).__name__}")
            if not param.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
            if param._data.dtype != np.float32:
                raise TypeError(f"optimizer can only optimize float32 tensors, got "
                                f"{param._data.dtype}")
        if len({id(p) for p in params}) != len(params):
            raise ValueError("optimizer contains a parameter group with duplicate parameters")
        taken = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in taken for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        group = {**self.defaults, **param_group, "params": params}
        self.param_groups.append(group)

    def __getstate__(self):
        # the caches (kernel pointers per parameter, checked hyper-parameters per group, device
        # tables holding addresses) hold cffi objects, which neither copy nor pickle, or
        # addresses of this optimizer's arrays: a copy starts them empty. Hooks are not
        # saved, as in PyTorch, nor the hooked step that calls them
        state = self.__dict__.copy()
        for name in ("_cache", "_checked", "_device_tables"):
            if name in state:
                state[name] = {}
        for name in (*_HOOKS, "step"):
            state.pop(name, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._init_hooks()

    def _init_hooks(self):
        for name in _HOOKS:
            setattr(self, name, OrderedDict())
        optimizer_hooks._optimizers.add(self)
        optimizer_hooks.refresh(self)  # a global step hook concerns it too

    # ---- hooks (pyrt/optim/optimizer_hooks.py) -----------------------------------------------

    def register_step_pre_hook(self, hook):
        """Call ``hook(optimizer, args, kwargs)`` before each step(), after the global
        pre-hooks; args starts with the optimizer. A pair (new_args, new_kwargs) returned
        replaces the arguments. Returns a RemovableHandle."""
        return optimizer_hooks.add_hook(self._optimizer_step_pre_hooks, hook,
                                        on_change=lambda: optimizer_hooks.refresh(self))

    def register_step_post_hook(self, hook):
        """Call ``hook(optimizer, args, kwargs)`` after each step(), before the global
        post-hooks. Returns a RemovableHandle."""
        return optimizer_hooks.add_hook(self._optimizer_step_post_hooks, hook,
                                        on_change=lambda: optimizer_hooks.refresh(self))

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """Call ``hook(optimizer)`` before state_dict() builds the state. Returns a
        RemovableHandle."""
        return optimizer_hooks.add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """Call ``hook(optimizer, state_dict)`` on what state_dict() built; a dict returned
        replaces it. Returns a RemovableHandle."""
        return optimizer_hooks.add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """Call ``hook(optimizer, state_dict)`` before load_state_dict() reads a (shallow)
        copy of the state; a dict returned is loaded instead. Returns a RemovableHandle."""
        return optimizer_hooks.add_hook(self._optimizer_load_state_dict_pre_hooks, hook,
                                        prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """Call ``hook(optimizer)`` once load_state_dict() has loaded the state. Returns a
        RemovableHandle."""
        return optimizer_hooks.add_hook(self._optimizer_load_state_dict_post_hooks, hook,
                                        prepend)

    def _stepped(self):
        """Record that step() updated, in place, every parameter that has a gradient: a graph
        made before the step, whose backward would read the old values, then refuses to run
        (as PyTorch's version counters make it)."""
        mark_modified_all(p._data for group in self.param_groups for p in group["params"]
                          if p._grad is not None)

    def zero_grad(self, set_to_none=True):
        """Reset the gradient of every parameter: drop it (set_to_none=True) or fill it with
        zeros."""
        for group in self.param_groups:
            reset_grads(group["params"], set_to_none)

    def _closure_loss(self, closure):
        """The loss from `closure` (which recomputes it and calls backward), if given."""
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def step(self, closure=None):
        raise NotImplementedError(f"{type(self).__name__} does not implement step()")

    def _on_device(self):
        """Whether the parameters live on the GPU. After Module.to() moved them, the state
        arrays (momentum buffers, moments) are moved to follow them first."""
        first = self.param_groups[0]["params"][0]
        if self._state_device == "cpu" and type(first._data) is np.ndarray:
            return False  # where the parameters stay: no property call, no move
        device = first.device
        if device != self._state_device:
            from pyrt.tensor import _move

            for values in self.state.values():
                for name, value in values.items():
                    if hasattr(value, "shape"):
                        values[name] = _move(value, device)
            getattr(self, "_cache", {}).clear()
            self._device_tables.clear()
            self._state_device = device
        return device != "cpu"

    # ---- saving and loading ------------------------------------------------------------------

    def state_dict(self):
        """The optimizer's state as plain Python and NumPy objects (copies):
        ``{"state": {index: {name: value}}, "param_groups": [{..., "params": [index]}]}``,
        parameters numbered in the order of param_groups. The state_dict pre-hooks run
        first, the post-hooks on the result (one they return replaces it)."""
        for hook in list(self._optimizer_state_dict_pre_hooks.values()):
            hook(self)
        index, groups = {}, []
        for group in self.param_groups:
            saved = {k: copy.deepcopy(v) for k, v in group.items() if k != "params"}
            saved["params"] = []
            for param in group["params"]:
                index.setdefault(id(param), len(index))
                saved["params"].append(index[id(param)])
            groups.append(saved)
        state = {}
        for group in self.param_groups:
            for param in group["params"]:
                if param in self.state:
                    state[index[id(param)]] = {
                        k: _host_copy(v) if hasattr(v, "shape") else copy.deepcopy(v)
                        for k, v in self.state[param].items()}
        state_dict = {"state": state, "param_groups": groups}
        for hook in list(self._optimizer_state_dict_post_hooks.values()):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict):
        """Restore a state saved by ``state_dict()`` from an optimizer over parameters of the
        same shapes in the same groups; hyper-parameters are taken from the saved groups.
        The load_state_dict pre-hooks see a shallow copy first (one they return is loaded
        instead), the post-hooks run after."""
        state_dict = state_dict.copy()
        for hook in list(self._optimizer_load_state_dict_pre_hooks.values()):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        self._load_state(state_dict)
        for hook in list(self._optimizer_load_state_dict_post_hooks.values()):
            hook(self)

    def _load_state(self, state_dict):
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        params_of = {}
        for group, saved in zip(self.param_groups, saved_groups):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 "match the size of optimizer's group")
            params_of.update(zip(saved["params"], group["params"]))
        new_state = defaultdict(dict)
        for key, values in state_dict["state"].items():
            if key not in params_of:
                raise ValueError(f"loaded state dict has state for parameter {key!r}, which "
                                 "is in none of its param_groups")
            param = params_of[key]
            restored = {}
            for name, value in values.items():
                if isinstance(value, Tensor):
                    value = value._data
                elif not isinstance(value, np.ndarray) and hasattr(value, "__array__"):
                    value = np.asarray(value)  # another library's tensor (torch's state)
                if isinstance(value, np.ndarray) and value.ndim == 0 and (
                        name == "step" or param._data.ndim):
                    # a count such as Adam's step, kept as a number; the state arrays of a
                    # 0-d parameter (its moments, its momentum buffer) stay arrays
                    value = value.item()
                if name == "step" and isinstance(value, float) and value.is_integer():
                    value = int(value)
                if isinstance(value, np.ndarray):
                    array = value
                    if array.shape != param.shape:
                        raise ValueError(f"loaded state {name!r} of parameter {key} has shape "
                                         f"{array.shape}, expected {param.shape}")
                    if array.dtype.kind not in "biuf":  # (complex would lose its imaginary part)
                        raise ValueError(f"loaded state {name!r} of parameter {key} must hold "
                                         f"real numbers, got dtype {array.dtype}")
                    value = np.array(array, dtype=np.float32, order="C")  # always a copy
                else:
                    value = copy.deepcopy(value)
                restored[name] = value
            self._check_state(restored, key, param)
            new_state[param] = restored
        updates = [self._loaded_group(group, saved)
                   for group, saved in zip(self.param_groups, saved_groups)]
        for group, update in zip(self.param_groups, updates):  # as the constructor checks them
            self._check_hyperparameters({**group, **update})
        self.state = new_state
        self._state_device = "cpu"  # the loaded arrays: moved on the next step if need be
        self._device_tables.clear()  # they held the replaced state arrays
        for group, update in zip(self.param_groups, updates):
            group.update(update)

    # the state of a parameter once it has taken a step: names that must hold float32 arrays
    # of the parameter's shape, and names that must all be there (set by the subclasses)
    _STATE_ARRAYS = ()
    _STATE_NEEDED = ()

    def _check_state(self, restored, key, param):
        """A loaded parameter state that step() could not use is refused by load_state_dict,
        naming what is wrong, rather than by the first step() after it."""
        missing = [name for name in self._STATE_NEEDED if restored and name not in restored]
        if missing:
            raise ValueError(f"loaded state of parameter {key} lacks {', '.join(missing)}")
        for name in self._STATE_ARRAYS:
            value = restored.get(name)
            if value is not None and not isinstance(value, np.ndarray):
                raise ValueError(f"loaded state {name!r} of parameter {key} must be an array "
                                 f"of shape {param.shape}, got {type(value).__name__}")

    # the names of a group's hyper-parameters, and the function that checks their values in
    # that order and returns them as step() uses them (set by the subclasses)
    _HYPERPARAMETERS = ()
    _checked_hyperparameters = staticmethod(lambda *values: values)

    def _check_hyperparameters(self, group):
        """Raise as the constructor would for the hyper-parameters of `group` (a dict)."""
        self._checked_hyperparameters(*map(group.__getitem__, self._HYPERPARAMETERS))

    def _hyperparameters(self, group):
        """The group's hyper-parameters, checked when they differ from the last checked
        ones (a scheduler may change lr between steps)."""
        values = tuple(map(group.__getitem__, self._HYPERPARAMETERS))
        cached = self._checked.get(id(group))
        if cached is None or cached[0] is not group or cached[1] != values:
            cached = (group, values, self._checked_hyperparameters(*values))
            self._checked[id(group)] = cached
        return cached[2]

    # options of torch.optim that this optimizer does not implement, with the values that
    # mean "off": a state saved with them off loads (they are dropped), with one on it fails
    _OFF: ClassVar[dict] = {"maximize": (False,), "foreach": (None, False), "fused": (None, False),
            "differentiable": (False,), "capturable": (False,), "amsgrad": (False,),
            "decoupled_weight_decay": (False,)}

    def _loaded_group(self, group, saved):
        """The hyper-parameters of `saved` for `group`: ValueError for one this optimizer
        does not take, unless it is one of torch's options and off."""
        update = {}
        for k, v in saved.items():
            if k == "params":
                continue
            if k in group or k in _SCHEDULE_KEYS:
                update[k] = copy.deepcopy(v)
            elif not (k in self._OFF and any(v is off or v == off for off in self._OFF[k])):
                raise ValueError(f"loaded state dict sets {k}={v!r}, which "
                                 f"{type(self).__name__} does not implement")
        return update

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {group[k]}" for k in sorted(group) if k != "params"]
        lines.append(")")
        return "\n".join(lines)
