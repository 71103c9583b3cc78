"""torch.utils.hooks's RemovableHandle: what register_*_hook returns, ``remove()`` taking the
hook out of its dict. Every handle pyrt returns (Module's, Tensor's, Optimizer's) is an
instance of it, so ``isinstance(h, RemovableHandle)`` answers as in torch; and ported code
may build its own for its own dict of hooks, as torch's allows:
``handle = RemovableHandle(hooks); hooks[handle.id] = hook``."""

import abc
import itertools

from pyrt import autograd
from pyrt.nn import module
from pyrt.optim import optimizer_hooks

__all__ = ["RemovableHandle"]


class RemovableHandle(metaclass=abc.ABCMeta):  # noqa: B024  (ABCMeta: for register())
    """A handle to the hook at key ``id`` of `hooks_dict` (and of each of `extra_dict`, a
    dict or a list of dicts): ``remove()`` deletes those entries (again: nothing happens); as
    a context manager, the block's end removes them. (torch holds the dicts by weak
    reference; this holds them, so that plain dicts may be used.)"""

    _ids = itertools.count()

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.id = next(RemovableHandle._ids)
        self._hooks_dict = hooks_dict
        if isinstance(extra_dict, dict):
            extra_dict = [extra_dict]
        self._extra_dicts = tuple(extra_dict or ())

    def remove(self):
        for hooks in (self._hooks_dict, *self._extra_dicts):
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


# the handles pyrt's own register_*_hook methods return (each keeps its own bookkeeping)
for _handle_class in (autograd._HookHandle, module.RemovableHandle,
                      optimizer_hooks.RemovableHandle):
    RemovableHandle.register(_handle_class)
