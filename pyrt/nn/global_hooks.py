"""Hooks common to all modules, as torch.nn.modules.module's ``register_module_*_hook``.

Forward and backward hooks registered here run on every module call, before the module's own
hooks of the same kind (PyTorch's order in ``Module._call_impl``): global forward pre-hooks,
then the module's; the module's input node of the backward hooks; forward; global forward
hooks, then the module's; the output node. Registration hooks run whenever a module
registers a parameter, a buffer or a child (``register_parameter``, ``register_buffer``,
``add_module`` or attribute assignment); what one returns, if not None, is registered instead.

The cost of a plain call stays one attribute read: ``Module.__call__`` takes its hooked path
only when ``self._hooked`` is true, which a module's own hooks set on the instance. While any
global call hook exists, the class attribute ``Module._hooked`` is True (an instance without
hooks of its own has no ``_hooked`` of its own to hide it), and Sequential plans its steps
again without fusing, so that every layer is called through its hooks.
"""

from collections import OrderedDict

__all__ = [
    "register_module_backward_hook",
    "register_module_buffer_registration_hook",
    "register_module_forward_hook",
    "register_module_forward_pre_hook",
    "register_module_full_backward_hook",
    "register_module_full_backward_pre_hook",
    "register_module_module_registration_hook",
    "register_module_parameter_registration_hook",
]

# the call hooks, by handle id: forward hooks as (hook, with_kwargs), as a module keeps its own
FORWARD_PRE_HOOKS = OrderedDict()
FORWARD_HOOKS = OrderedDict()
ALWAYS_CALLED = set()  # ids of the forward hooks that run when the call raises
BACKWARD_PRE_HOOKS = OrderedDict()
BACKWARD_HOOKS = OrderedDict()
# True: BACKWARD_HOOKS are full backward hooks; False: deprecated ones; None: there are none
IS_FULL_BACKWARD_HOOK = [None]

# the registration hooks, by handle id
PARAMETER_REGISTRATION_HOOKS = OrderedDict()
BUFFER_REGISTRATION_HOOKS = OrderedDict()
MODULE_REGISTRATION_HOOKS = OrderedDict()


class _Owner:
    """What a global hook's RemovableHandle tells when the hook is removed, in place of the
    module it tells for a module's own hook."""

    def _hooks_changed(self):
        # (imported here: pyrt.nn.module reads this module's dicts, so it imports it first)
        from pyrt.nn.module import FORWARD_PATCHES, Module

        ALWAYS_CALLED.intersection_update(FORWARD_HOOKS)
        if not BACKWARD_HOOKS:
            # (torch keeps the kind for good: pyrt lets go of it with the last hook)
            IS_FULL_BACKWARD_HOOK[0] = None
        hooked = bool(FORWARD_PRE_HOOKS or FORWARD_HOOKS or BACKWARD_PRE_HOOKS
                      or BACKWARD_HOOKS)
        if hooked != Module._hooked:
            Module._hooked = hooked
            FORWARD_PATCHES[0] += 1  # each Sequential plans (and fuses) its steps again


_OWNER = _Owner()


def _add(hooks, hook, value=None):
    from pyrt.nn.module import RemovableHandle

    if not callable(hook):
        raise TypeError(f"hook must be callable, got {type(hook).__name__}")
    handle = RemovableHandle(_OWNER, hooks)
    hooks[handle.id] = hook if value is None else value
    _OWNER._hooks_changed()
    return handle


def register_module_forward_pre_hook(hook):
    """Call ``hook(module, args)`` before the forward of every module, before the module's
    own forward pre-hooks; a result other than None replaces the positional arguments (a
    tuple, or one value). Meant for debugging and profiling. Returns a RemovableHandle."""
    return _add(FORWARD_PRE_HOOKS, hook, (hook, False))


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """Call ``hook(module, args, output)`` (``hook(module, args, kwargs, output)``
    with_kwargs) after the forward of every module, before the module's own forward hooks;
    a result other than None replaces the output. With always_call, the hook also runs when
    the call raises (its output then None, or what forward returned), and the error goes on.
    Returns a RemovableHandle."""
    handle = _add(FORWARD_HOOKS, hook, (hook, bool(with_kwargs)))
    if always_call:
        ALWAYS_CALLED.add(handle.id)
    return handle


def register_module_full_backward_pre_hook(hook):
    """Call ``hook(module, grad_output)`` for every module, as
    Module.register_full_backward_pre_hook does, before the module's own backward pre-hooks.
    Returns a RemovableHandle."""
    return _add(BACKWARD_PRE_HOOKS, hook)


def register_module_full_backward_hook(hook):
    """Call ``hook(module, grad_input, grad_output)`` for every module, as
    Module.register_full_backward_hook does, before the module's own backward hooks.
    Returns a RemovableHandle."""
    _backward_kind(True)
    return _add(BACKWARD_HOOKS, hook)


def register_module_backward_hook(hook):
    """The deprecated form of register_module_full_backward_hook: ``hook(module, grad_input,
    grad_output)`` sees the gradients of the op that made each module's first output, as
    Module.register_backward_hook. Returns a RemovableHandle."""
    _backward_kind(False)
    return _add(BACKWARD_HOOKS, hook)


def _backward_kind(full):
    if IS_FULL_BACKWARD_HOOK[0] is (not full):
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a "
                           "global Module hook. Please use only one of them.")
    IS_FULL_BACKWARD_HOOK[0] = full


def register_module_parameter_registration_hook(hook):
    """Call ``hook(module, name, param)`` whenever a module registers a Parameter; a result
    other than None is registered in its place. Returns a RemovableHandle."""
    return _add(PARAMETER_REGISTRATION_HOOKS, hook)


def register_module_buffer_registration_hook(hook):
    """Call ``hook(module, name, buffer)`` whenever a module registers a buffer (a Tensor or
    None); a result other than None is registered in its place. Returns a RemovableHandle."""
    return _add(BUFFER_REGISTRATION_HOOKS, hook)


def register_module_module_registration_hook(hook):
    """Call ``hook(module, name, submodule)`` whenever a module registers a child (a Module
    or None); a result other than None is registered in its place. Returns a
    RemovableHandle."""
    return _add(MODULE_REGISTRATION_HOOKS, hook)


def registered(hooks, module, name, value):
    """What `module` registers under `name` in place of `value`, once the registration
    `hooks` have run in turn, each given the value the one before returned (None: the same)."""
    for hook in list(hooks.values()):
        result = hook(module, name, value)
        if result is not None:
            value = result
    return value
