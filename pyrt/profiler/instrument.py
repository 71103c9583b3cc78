"""What the profiler times besides record_function, and how it costs nothing otherwise.

While a profile records, pyrt's classes carry timed versions of a few methods, and get their
own back when it stops; no plain call ever tests whether a profiler is on:

- ``Module.__call__``: a range per module call, "nn.Module: Linear_0" as torch's Python
  tracer names it (the class and the module's rank among those of its class).
- ``Sequential``'s planner: a Sequential runs its layers one by one, each called (and so
  timed) as a module, instead of as fused kernels; the numbers are the same.
- ``step`` and ``zero_grad`` of Optimizer and of each subclass that defines them:
  "Optimizer.step#SGD.step" and "Optimizer.zero_grad#SGD.zero_grad", as torch records them.
- ``Tensor.backward``: one range, "autograd::backward", for the whole backward pass (torch
  records each node's backward; pyrt's backward loop stays untouched).

An Optimizer subclass defined while a profile records is timed from the next profile on.
"""

import functools
import types

from pyrt.nn import layers
from pyrt.nn.module import FORWARD_PATCHES, Module
from pyrt.optim.optimizer import Optimizer
from pyrt.profiler import recorder
from pyrt.tensor import Tensor

__all__ = ["install", "uninstall"]

BACKWARD_NAME = "autograd::backward"

# (class, attribute name, the class's own value) of each method replaced, to put back
_replaced = []


def _module_call(call):
    @functools.wraps(call)
    def timed(self, *args, **kwargs):
        recording = recorder._recording
        if recording is None:  # (a call on another thread after stop, before uninstall)
            return call(self, *args, **kwargs)
        event = recorder.open_range(recording, recording.module_name(self), args,
                                    kind="python_function")
        try:
            return call(self, *args, **kwargs)
        finally:
            recorder.close_range(event)

    return timed


def _unfused(modules):
    """Sequential's plan while profiling: every module called as it is."""
    return tuple((module, False) for module in modules)


def _optimizer_method(method, name):
    @functools.wraps(method)
    def timed(self, *args, **kwargs):
        recording = recorder._recording
        label = f"Optimizer.{name}#{type(self).__name__}.{name}"
        # a subclass's step calling its parent's: one range, as torch's
        if recording is None or recorder.innermost_name() == label:
            return method(self, *args, **kwargs)
        event = recorder.open_range(recording, label, kind="cpu_op")
        try:
            return method(self, *args, **kwargs)
        finally:
            recorder.close_range(event)

    return timed


def _backward(backward):
    @functools.wraps(backward)
    def timed(self, *args, **kwargs):
        recording = recorder._recording
        if recording is None:
            return backward(self, *args, **kwargs)
        event = recorder.open_range(recording, BACKWARD_NAME, (self,), kind="cpu_op")
        try:
            return backward(self, *args, **kwargs)
        finally:
            recorder.close_range(event)

    return timed


def _subclasses(cls):
    """`cls` and every class derived from it, each once."""
    seen, todo = [], [cls]
    while todo:
        c = todo.pop()
        if c not in seen:
            seen.append(c)
            todo.extend(c.__subclasses__())
    return seen


def _replace(cls, name, value):
    _replaced.append((cls, name, cls.__dict__[name]))
    setattr(cls, name, value)


def install():
    """Put the timed methods in place (once; a second call does nothing)."""
    if _replaced:
        return
    _replace(Module, "__call__", _module_call(Module.__call__))
    _replace(layers.Sequential, "_fuse", staticmethod(_unfused))
    for cls in _subclasses(Optimizer):
        for name in ("step", "zero_grad"):
            if isinstance(cls.__dict__.get(name), types.FunctionType):
                _replace(cls, name, _optimizer_method(cls.__dict__[name], name))
    _replace(Tensor, "backward", _backward(Tensor.backward))
    FORWARD_PATCHES[0] += 1  # each Sequential plans its steps again


def uninstall():
    """Give every class its own methods back."""
    if not _replaced:
        return
    while _replaced:
        cls, name, value = _replaced.pop()
        setattr(cls, name, value)
    FORWARD_PATCHES[0] += 1  # fused again
