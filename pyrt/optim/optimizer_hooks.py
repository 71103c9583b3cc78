"""Hooks around Optimizer.step, as torch.optim's: ``hook(optimizer, args, kwargs)`` before
each step (a pair (new_args, new_kwargs) returned replaces the arguments; args starts with
the optimizer itself, as PyTorch passes it) and after it. Global hooks
(register_optimizer_step_pre_hook/post_hook) run for every optimizer: pre-hooks before the
optimizer's own, post-hooks after them.

A plain step costs nothing more: only an optimizer with step hooks, or every optimizer while a
global one exists, gets an instance attribute ``step`` (a _HookedStep) in front of its class's
step; it is taken away when the last hook goes.
"""

import itertools
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeAlias

__all__ = ["OptimizerPostHook", "OptimizerPreHook", "RemovableHandle",
           "register_optimizer_step_post_hook", "register_optimizer_step_pre_hook"]

Args: TypeAlias = tuple[Any, ...]
Kwargs: TypeAlias = dict[str, Any]
OptimizerPreHook: TypeAlias = Callable[[Any, Args, Kwargs], tuple[Args, Kwargs] | None]
OptimizerPostHook: TypeAlias = Callable[[Any, Args, Kwargs], None]

_global_pre_hooks = OrderedDict()
_global_post_hooks = OrderedDict()

# every live optimizer, so that a global hook reaches those made before it
_optimizers = weakref.WeakSet()


class RemovableHandle:
    """What the register_*_hook functions and methods return: ``remove()`` takes the hook
    out (a second call does nothing), then calls `on_remove`; a context manager removes it
    when the block ends."""

    _ids = itertools.count()

    def __init__(self, hooks, on_remove=None):
        self.id = next(RemovableHandle._ids)
        self._hooks, self._on_remove = hooks, on_remove

    def remove(self):
        if self._hooks.pop(self.id, None) is not None and self._on_remove is not None:
            self._on_remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def add_hook(hooks, hook, prepend=False, on_change=None):
    """Put `hook` in the OrderedDict `hooks` (first, with prepend); its handle."""
    if not callable(hook):
        raise TypeError(f"hook must be callable, got {type(hook).__name__}")
    handle = RemovableHandle(hooks, on_change)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    if on_change is not None:
        on_change()
    return handle


class _HookedStep:
    """An optimizer's step with its hooks around it."""

    __slots__ = ("optimizer",)

    def __init__(self, optimizer):
        self.optimizer = weakref.ref(optimizer)  # no cycle through the instance's own dict

    def __call__(self, *args, **kwargs):
        optimizer = self.optimizer()
        args = (optimizer, *args)
        step = type(optimizer).step
        for hook in [*_global_pre_hooks.values(),
                     *optimizer.__dict__["_optimizer_step_pre_hooks"].values()]:
            result = hook(optimizer, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{step} must return None or a tuple of (new_args, "
                                       f"new_kwargs), but got {result}.")
                args, kwargs = result
        out = step(*args, **kwargs)
        for hook in [*optimizer.__dict__["_optimizer_step_post_hooks"].values(),
                     *_global_post_hooks.values()]:
            hook(optimizer, args, kwargs)
        return out


def refresh(optimizer):
    """Put the hooked step in front of the class's step while a hook concerns `optimizer`,
    and take it away when none does."""
    d = optimizer.__dict__
    hooked = bool(_global_pre_hooks or _global_post_hooks or d["_optimizer_step_pre_hooks"]
                  or d["_optimizer_step_post_hooks"])
    if hooked and not isinstance(d.get("step"), _HookedStep):
        d["step"] = _HookedStep(optimizer)
    elif not hooked:
        d.pop("step", None)


def _refresh_all():
    for optimizer in list(_optimizers):
        refresh(optimizer)


def register_optimizer_step_pre_hook(hook):
    """Call ``hook(optimizer, args, kwargs)`` before every optimizer's step; a pair
    (new_args, new_kwargs) returned replaces the arguments. Returns a RemovableHandle."""
    return add_hook(_global_pre_hooks, hook, on_change=_refresh_all)


def register_optimizer_step_post_hook(hook):
    """Call ``hook(optimizer, args, kwargs)`` after every optimizer's step. Returns a
    RemovableHandle."""
    return add_hook(_global_post_hooks, hook, on_change=_refresh_all)
