"""Module: the base class of layers and models, with PyTorch's interface.

A Module keeps its Parameters, buffers and sub-Modules in three ordered dicts, filled by
attribute assignment (``self.weight = Parameter(...)``, ``self.fc = Linear(...)``) and
``register_buffer``, so they come out in registration order and carry dotted names such as
``"fc.weight"`` or ``"0.bias"``. A buffer is a tensor that belongs to the module's state
without being trained (a running statistic, a fixed mask): it moves with ``to()`` and, unless
registered with ``persistent=False``, is saved in ``state_dict()``.
"""

import functools
import itertools
import warnings
from collections import OrderedDict

import numpy as np

from pyrt import layouts
from pyrt.autograd import is_grad_enabled, reset_grads
from pyrt.nn import global_hooks, state_loading
from pyrt.nn.backward_hooks import BackwardHook, attach_legacy_hooks
from pyrt.nn.buffer import Buffer
from pyrt.nn.parameter import Parameter
from pyrt.nn.state_loading import EXTRA_STATE_KEY_SUFFIX
from pyrt.tensor import Tensor, _check_device, _checked_dtype, _move, to_arguments

__all__ = ["Module", "RemovableHandle"]


_MISSING = object()

# the hooks that Module.__call__ runs (its dicts of them, each set on first registration)
_CALL_HOOKS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")

# Counts the times an instance's `forward` was set or deleted (a wrapped layer): Sequential's
# fused steps call the kernels, not forward, so it plans its steps again when this changes.
FORWARD_PATCHES = [0]


def _check_tensor_input(module, args, kwargs):
    """The TypeError for a call of `module` whose input (first argument) is not a Tensor."""
    x = args[0] if args else kwargs.get("input", _MISSING)
    if not isinstance(x, Tensor) and x is not _MISSING:
        hint = (": wrap arrays with pyrt.tensor() or pyrt.from_numpy()"
                if isinstance(x, np.ndarray) else "")
        raise TypeError(f"{type(module).__name__}: input must be a pyrt Tensor, got "
                        f"{type(x).__name__}{hint}") from None


class RemovableHandle:
    """What the register_*_hook methods return: ``remove()`` takes the hook out (a second
    call does nothing); used as a context manager, the hook is removed when the block
    ends."""

    _ids = itertools.count()

    def __init__(self, module, hooks):
        self.id = next(RemovableHandle._ids)
        self._module = module
        self._hooks = hooks  # the module's dict of hooks of this kind, by handle id

    def remove(self):
        if self._hooks.pop(self.id, None) is not None:
            self._module._hooks_changed()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _addindent(text, spaces):
    """Indent every line of `text` but the first by `spaces` spaces."""
    first, *rest = text.split("\n")
    if not rest:
        return text
    pad = " " * spaces
    return first + "\n" + "\n".join(pad + line for line in rest)


def _to_arguments(args, device, dtype, memory_format):
    """Module.to's (device, dtype) from its positional arguments and keywords, checked as
    torch checks them; dtype None or float32, the only one pyrt's parameters hold."""
    if memory_format is not None:
        layouts.check_memory_format(memory_format, None, "to")
    device, dtype = to_arguments(args, device, dtype)
    if dtype is not None:
        dtype = np.dtype(_checked_dtype(dtype))
        if dtype.kind not in "fc":
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtype}")
        if dtype != np.float32:
            raise NotImplementedError(f"to(dtype={dtype}): pyrt's modules hold float32 "
                                      "parameters only")
    return device, dtype


class Module:
    """Base class for all neural-network modules; subclasses define ``forward``."""

    # torch's: with call_super_init, __init__ passes its arguments on to the next class in the
    # method resolution order (a mixin); dump_patches is a flag that no longer does anything
    call_super_init = False
    dump_patches = False

    def __init__(self, *args, **kwargs):
        if not self.call_super_init and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword "
                            f"argument '{next(iter(kwargs))}'")
        if not self.call_super_init and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    def __setstate__(self, state):
        # a module pickled by an older pyrt has no buffers
        state.setdefault("_buffers", OrderedDict())
        state.setdefault("_non_persistent_buffers_set", set())
        if state.get("_hooked") is False:
            del state["_hooked"]  # (older pyrt kept it): it would hide a global hook's flag
        self.__dict__.update(state)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function')

    # pyrt's own modules take a Tensor as their first argument: when one of them fails on an
    # attribute of something else (None, a number, an array), the error says so instead
    _tensor_input = False

    # whether forward or backward hooks are registered on this module (True on the instance
    # then) or on every module (True on the class: pyrt/nn/global_hooks.py): the one attribute
    # a plain call reads beyond forward
    _hooked = False

    def __call__(self, *args, **kwargs):
        if self._hooked:
            return self._call_with_hooks(args, kwargs)
        try:
            return self.forward(*args, **kwargs)
        except AttributeError:
            if self._tensor_input:
                _check_tensor_input(self, args, kwargs)
            raise

    # ---- forward hooks -----------------------------------------------------------------------

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Call ``hook(module, args)`` before each forward (``hook(module, args, kwargs)``
        with_kwargs); a result other than None replaces the arguments: a tuple, or one value
        (with_kwargs: a pair (args, kwargs)). Hooks run in registration order, a prepended
        one first. Returns a RemovableHandle."""
        return self._add_hook("_forward_pre_hooks", hook, prepend, bool(with_kwargs))

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Call ``hook(module, args, output)`` after each forward (``hook(module, args,
        kwargs, output)`` with_kwargs); a result other than None replaces the output.
        Returns a RemovableHandle."""
        return self._add_hook("_forward_hooks", hook, prepend, bool(with_kwargs))

    def _add_hook(self, kind, hook, prepend, with_kwargs):
        if not callable(hook):
            raise TypeError(f"hook must be callable, got {type(hook).__name__}")
        hooks = self.__dict__.get(kind)
        if hooks is None:
            hooks = OrderedDict()
            object.__setattr__(self, kind, hooks)
        handle = RemovableHandle(self, hooks)
        # forward hooks are kept with their with_kwargs flag; the others (None) as they are
        hooks[handle.id] = hook if with_kwargs is None else (hook, with_kwargs)
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        self._hooks_changed()
        return handle

    def _hooks_changed(self):
        d = self.__dict__
        if any(d.get(kind) for kind in _CALL_HOOKS):
            object.__setattr__(self, "_hooked", True)
        else:
            d.pop("_hooked", None)  # the class's flag again, True while a global hook exists
        # Sequential calls the kernels of its fused steps, not their modules: a hooked module
        # must be called, so Sequential plans its steps again
        FORWARD_PATCHES[0] += 1

    def _call_with_hooks(self, args, kwargs):
        """A call with hooks, in PyTorch's order: forward pre-hooks (the global ones first);
        the input node of the backward hooks; forward; forward hooks (the global ones
        first); the output node of the backward hooks; the deprecated backward hooks on the
        op that made the output. When the call raises, the global forward hooks registered
        with always_call that have not run yet run before the error goes on."""
        d = self.__dict__
        own_full = d.get("_is_full_backward_hook")
        own_backward = list(d.get("_backward_hooks", {}).values())
        every_backward = list(global_hooks.BACKWARD_HOOKS.values())
        every_full = global_hooks.IS_FULL_BACKWARD_HOOK[0]
        full = (every_backward if every_full else []) + (own_backward if own_full else [])
        legacy = ((every_backward if every_full is False else [])
                  + (own_backward if own_full is False else []))
        backward_pre_hooks = (list(global_hooks.BACKWARD_PRE_HOOKS.values())
                              + list(d.get("_backward_pre_hooks", {}).values()))
        output = None
        ran = set()  # ids of the global forward hooks that have run (always_call)
        try:
            for hook, with_kwargs in (*global_hooks.FORWARD_PRE_HOOKS.values(),
                                      *d.get("_forward_pre_hooks", {}).values()):
                if with_kwargs:
                    result = hook(self, args, kwargs)
                    if result is not None:
                        if not (isinstance(result, tuple) and len(result) == 2):
                            raise RuntimeError(f"forward pre-hook must return None or a tuple "
                                               f"of (new_args, new_kwargs), but got "
                                               f"{result!r}.")
                        args, kwargs = result
                else:
                    result = hook(self, args)
                    if result is not None:
                        args = result if isinstance(result, tuple) else (result,)
            backward_hook = None
            if full or backward_pre_hooks:
                backward_hook = BackwardHook(self, full, backward_pre_hooks)
                args = backward_hook.setup_input_hook(args)
            try:
                output = self.forward(*args, **kwargs)
            except AttributeError:
                if self._tensor_input:
                    _check_tensor_input(self, args, kwargs)
                raise
            for hook_id, (hook, with_kwargs) in (*global_hooks.FORWARD_HOOKS.items(),
                                                 *d.get("_forward_hooks", {}).items()):
                ran.add(hook_id)
                result = (hook(self, args, kwargs, output) if with_kwargs
                          else hook(self, args, output))
                if result is not None:
                    output = result
            if backward_hook is not None:
                output = backward_hook.setup_output_hook(output)
            if legacy and is_grad_enabled():
                attach_legacy_hooks(self, legacy, output)
        except Exception:
            if global_hooks.ALWAYS_CALLED:
                self._always_called_hooks(args, kwargs, output, ran)
            raise
        return output

    def _always_called_hooks(self, args, kwargs, output, ran):
        """The global forward hooks with always_call that a failed call did not reach, each
        error of theirs a warning, as the call's error is the one that goes on."""
        for hook_id, (hook, with_kwargs) in list(global_hooks.FORWARD_HOOKS.items()):
            if hook_id not in global_hooks.ALWAYS_CALLED or hook_id in ran:
                continue
            try:
                result = (hook(self, args, kwargs, output) if with_kwargs
                          else hook(self, args, output))
            except Exception as e:  # noqa: BLE001 (the call's own error is raised after)
                warnings.warn("global module forward hook with ``always_call=True`` raised an "
                              f"exception that was silenced as another error was raised in "
                              f"forward: {e}", stacklevel=3)
                continue
            if result is not None:
                output = result

    # ---- backward hooks (pyrt/nn/backward_hooks.py) ------------------------------------------

    def register_full_backward_hook(self, hook, prepend=False):
        """Call ``hook(module, grad_input, grad_output)`` when the gradients with respect to
        the module's positional tensor inputs have been computed (when no input requires
        grad: those with respect to its outputs, grad_input all None); the entries are None
        for non-Tensor arguments and outputs. A tuple returned replaces grad_input. The
        forward sees views of the inputs, the caller views of the outputs. Returns a
        RemovableHandle."""
        if self.__dict__.get("_is_full_backward_hook") is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        object.__setattr__(self, "_is_full_backward_hook", True)
        return self._add_hook("_backward_hooks", hook, prepend, None)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """Call ``hook(module, grad_output)`` when the gradients with respect to the module's
        outputs have been computed, before they go further back; a tuple returned replaces
        grad_output. Returns a RemovableHandle."""
        return self._add_hook("_backward_pre_hooks", hook, prepend, None)

    def register_backward_hook(self, hook):
        """Deprecated form of register_full_backward_hook: ``hook(module, grad_input,
        grad_output)`` runs on the gradients of the last op of forward (the one that made the
        first output tensor), not of the module's inputs. Returns a RemovableHandle."""
        if self.__dict__.get("_is_full_backward_hook") is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        object.__setattr__(self, "_is_full_backward_hook", False)
        return self._add_hook("_backward_hooks", hook, False, None)

    # ---- registration ------------------------------------------------------------------------

    def register_parameter(self, name, param):
        """Add `param` (a Parameter, or None for an absent one such as ``bias=False``) under
        `name`."""
        self._register("_parameters", "parameter", name, param, Parameter, "pyrt.nn.Parameter")

    def register_buffer(self, name, tensor, persistent=True):
        """Add `tensor` (a Tensor, or None for an absent one) as a buffer under `name`: part
        of the module's state, moved by ``to()`` and, if `persistent`, saved by
        ``state_dict()``, but not a parameter (no optimizer updates it)."""
        if isinstance(tensor, Parameter):
            raise TypeError(f"cannot register the Parameter {name!r} as a buffer: use "
                            "register_parameter")
        self._register("_buffers", "buffer", name, tensor, Tensor, "pyrt.Tensor")
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def _register(self, store, kind, name, value, cls, expected):
        """Put `value` (a `cls` or None) under `name` in the dict `store` of this module, in
        place of whatever else held the name."""
        if store not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        own = self.__dict__[store]
        self._check_name(name, kind, own)
        if value is not None and not isinstance(value, cls):
            raise TypeError(f"cannot assign {type(value).__name__!r} object to {kind} "
                            f"{name!r} ({expected} or None required)")
        # the global registration hooks see every buffer, and every parameter but None
        hooks = (global_hooks.BUFFER_REGISTRATION_HOOKS if store == "_buffers"
                 else global_hooks.PARAMETER_REGISTRATION_HOOKS if value is not None else None)
        if hooks:
            value = global_hooks.registered(hooks, self, name, value)
        self._forget(name, keep=own)
        own[name] = value

    def add_module(self, name, module):
        """Add `module` (or None) as a child under `name`."""
        if "_modules" not in self.__dict__:
            raise AttributeError("cannot assign module before Module.__init__() call")
        self._check_name(name, "module", self._modules)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if global_hooks.MODULE_REGISTRATION_HOOKS:
            module = global_hooks.registered(global_hooks.MODULE_REGISTRATION_HOOKS, self, name,
                                             module)
        self._forget(name, keep=self._modules)
        self._modules[name] = module

    register_module = add_module

    def _check_name(self, name, kind, own):
        """KeyError unless `name` may hold a new entry of `own` (the parameters or the
        children): a name already taken by anything else is refused, as in PyTorch."""
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
        if not name or "." in name:
            raise KeyError(f'{kind} name can\'t be empty or contain ".", got {name!r}')
        if hasattr(type(self), name) or (name not in own and (
                name in self.__dict__ or name in self._parameters or name in self._modules
                or name in self._buffers)):
            raise KeyError(f"attribute {name!r} already exists")

    def _forget(self, name, keep):
        """Remove `name` from every place but `keep`, where a new value replaces the old one
        in its position."""
        self.__dict__.pop(name, None)
        for container in (self._parameters, self._buffers, self._modules):
            if container is not keep:
                container.pop(name, None)
        if keep is not self._buffers:
            self._non_persistent_buffers_set.discard(name)

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        modules = self.__dict__.get("_modules")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            if global_hooks.PARAMETER_REGISTRATION_HOOKS:
                value = global_hooks.registered(global_hooks.PARAMETER_REGISTRATION_HOOKS, self,
                                                name, value)
            self._forget(name, keep=params)
            params[name] = value
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__!r} as parameter {name!r} "
                                "(pyrt.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep=modules)
            if global_hooks.MODULE_REGISTRATION_HOOKS:
                value = global_hooks.registered(global_hooks.MODULE_REGISTRATION_HOOKS, self,
                                                name, value)
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__!r} as child module "
                                f"{name!r} (pyrt.nn.Module or None expected)")
            if global_hooks.MODULE_REGISTRATION_HOOKS:
                value = global_hooks.registered(global_hooks.MODULE_REGISTRATION_HOOKS, self,
                                                name, value)
            modules[name] = value
        elif isinstance(value, Buffer):
            # an nn.Buffer registers itself, persistent or not as it says
            self.__dict__.pop(name, None)
            self.register_buffer(name, value, persistent=value.persistent)
        elif name in self.__dict__.get("_buffers", ()):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign {type(value).__name__!r} as buffer {name!r} "
                                "(pyrt.Tensor or None expected)")
            if global_hooks.BUFFER_REGISTRATION_HOOKS:
                value = global_hooks.registered(global_hooks.BUFFER_REGISTRATION_HOOKS, self,
                                                name, value)
            self._buffers[name] = value
        else:
            if name == "forward":
                FORWARD_PATCHES[0] += 1
            object.__setattr__(self, name, value)

    def __dir__(self):
        # parameters and children too, as attribute completion expects
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))

    def __getattr__(self, name):
        # only called when normal lookup fails: parameters and children live in their dicts
        d = self.__dict__
        if "_parameters" in d and name in d["_parameters"]:
            return d["_parameters"][name]
        if "_buffers" in d and name in d["_buffers"]:
            return d["_buffers"][name]
        if "_modules" in d and name in d["_modules"]:
            return d["_modules"][name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            if name == "forward":
                FORWARD_PATCHES[0] += 1
            object.__delattr__(self, name)

    # ---- traversal ---------------------------------------------------------------------------

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(name, module) for this module and every descendant, depth first, each module once
        (unless remove_duplicate=False); this module's name is `prefix`."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            child_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, child_prefix, remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def _named_members(self, kind, prefix, recurse, remove_duplicate):
        """(dotted name, tensor) of the dicts `kind` ("_parameters" or "_buffers") of this
        module and, with recurse, its descendants, depth first, in registration order,
        skipping None; a tensor shared by several modules comes once unless remove_duplicate
        is False."""
        if recurse:
            owners = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
        else:
            owners = [(prefix, self)]
        seen = set()
        for owner_name, owner in owners:
            for name, tensor in getattr(owner, kind).items():
                if tensor is None:
                    continue
                if remove_duplicate:
                    if id(tensor) in seen:
                        continue
                    seen.add(id(tensor))
                yield owner_name + ("." if owner_name else "") + name, tensor

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(name, parameter) in registration order, depth first; a parameter shared by several
        modules comes once (unless remove_duplicate=False)."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """(name, buffer) in registration order, depth first, as named_parameters."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def get_submodule(self, target):
        """The descendant at dotted path `target` ("" is this module)."""
        if not isinstance(target, str):
            raise TypeError(f"target must be a str, got {type(target).__name__}")
        module = self
        if target == "":
            return module
        for item in target.split("."):
            if not hasattr(module, item):
                raise AttributeError(f"{type(module).__name__} has no attribute `{item}`")
            child = getattr(module, item)
            if not isinstance(child, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")  # noqa: TRY004 (torch's)
            module = child
        return module

    def set_submodule(self, target, module, strict=False):
        """Put `module` at dotted path `target`, in place of the module there or, unless
        strict, as a new child of the module its parent path leads to."""
        if not isinstance(target, str):
            raise TypeError(f"target must be a str, got {type(target).__name__}")
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(  # noqa: TRY004 (torch's ValueError)
                f"`module` is not an nn.Module, found {type(module)}")
        path, _, name = target.rpartition(".")
        parent = self.get_submodule(path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{type(parent).__name__} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target):
        """The parameter at dotted path `target` ("layer.weight")."""
        return self._member(target, "_parameters", "an nn.Parameter")

    def get_buffer(self, target):
        """The buffer at dotted path `target` ("bn.running_mean")."""
        return self._member(target, "_buffers", "a buffer")

    def _member(self, target, store, what):
        """The entry of the dict `store` of the module that dotted path `target` leads to,
        with PyTorch's AttributeErrors where there is none."""
        if not isinstance(target, str):
            raise TypeError(f"target must be a str, got {type(target).__name__}")
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        member = getattr(module, store).get(name)
        if member is None:
            if not hasattr(module, name):
                raise AttributeError(f"{type(module).__name__} has no attribute `{name}`")
            raise AttributeError(f"`{name}` is not {what}")
        return member

    def apply(self, fn):
        """Call fn(module) on every child (recursively), then on self; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ---- modes and gradients -----------------------------------------------------------------

    def train(self, mode=True):
        """Set training mode (True) or evaluation mode (False) here and in every descendant."""
        if not isinstance(mode, bool):
            raise ValueError(  # noqa: TRY004 (PyTorch's ValueError)
                f"training mode is expected to be boolean, got {mode!r}")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset the gradient of every parameter: drop it (set_to_none=True) or fill it with
        zeros."""
        reset_grads(self.parameters(), set_to_none)

    def to(self, *args, device=None, dtype=None, non_blocking=False, memory_format=None):
        """Move the parameters (and their gradients) to `device`, "cpu" or "cuda", in place:
        each Parameter stays the same object, as in PyTorch, so an optimizer built on them
        keeps working (its state follows on its next step). Takes torch's forms: to(device),
        to(dtype), to(device, dtype), to(tensor) (its device and dtype) and the keywords.
        The parameters are float32 and stay so: dtype may only be float32; non_blocking
        changes nothing; memory_format is checked (channels_last as a 4-D one) and the
        arrays stay C-contiguous."""
        device, dtype = _to_arguments(args, device, dtype, memory_format)
        if device is None:
            return self
        name = _check_device(device)
        for param in self.parameters():
            if param.device != name:
                param._data = _move(param._data, name)
                if param.grad is not None:
                    param.grad = Tensor(_move(param.grad._data, name))
        for buf in self.buffers():
            if buf.device != name:
                buf._data = _move(buf._data, name)
        return self

    def cpu(self):
        return self.to("cpu")

    def cuda(self):
        return self.to("cuda")

    def float(self):
        """The parameters are float32 already: this module, unchanged."""
        return self

    def double(self):
        raise NotImplementedError("double(): pyrt's modules hold float32 parameters only")

    def half(self):
        raise NotImplementedError("half(): pyrt's modules hold float32 parameters only")

    def bfloat16(self):
        raise NotImplementedError("bfloat16(): pyrt's modules hold float32 parameters only")

    def type(self, dst_type):
        """Cast the parameters and buffers to `dst_type` (a dtype or a name such as
        "torch.FloatTensor"): float32 is the one they may have, so this module, unchanged."""
        target = Tensor(np.zeros(0, np.float32)).type(dst_type)
        if target.dtype != np.float32:
            raise NotImplementedError(f"type({dst_type!r}): pyrt's modules hold float32 "
                                      "parameters only")
        return self

    def to_empty(self, *, device, recurse=True):
        """Give the parameters and buffers (this module's only, unless recurse) new,
        uninitialized memory on `device`, in place, as after building a model whose weights
        will be loaded or initialized next."""
        from pyrt.functional import _xp

        name = _check_device(device)
        for tensor in itertools.chain(self.parameters(recurse), self.buffers(recurse)):
            data = _move(tensor._data.reshape(-1)[:0], name)  # an empty copy: moves nothing
            tensor._data = _xp(data).empty(tensor.shape, data.dtype)
        return self

    def share_memory(self):
        """Move the parameters and buffers into shared memory (Tensor.share_memory_), so that
        processes forked after this see and train the same weights."""
        for tensor in itertools.chain(self.parameters(), self.buffers()):
            tensor.share_memory_()
        return self

    def compile(self, *args, **kwargs):
        """torch's in-place compile: pyrt.compile's arguments, checked; pyrt runs each op as
        it is called, so the module runs as before (pyrt/compiler.py)."""
        from pyrt.compiler import compile

        compile(self, *args, **kwargs)

    # ---- saving and loading ------------------------------------------------------------------

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """Put this module's own state (not its children's) in `destination`: its parameters,
        its persistent buffers, and ``_extra_state`` where the class defines
        get_extra_state."""
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """An OrderedDict (or `destination`, filled in and returned) from `prefix` plus the
        dotted name of each parameter and persistent buffer to a tensor that shares its
        memory and device but not its graph (detached: a write through it changes the
        module), or with keep_vars=True the parameter or buffer itself; one shared by several
        modules appears under each name. Its ``_metadata`` holds each module's
        ``{"version": ...}`` (its ``_version``, else 1) by dotted name, as PyTorch's. Each
        module runs its state_dict pre-hooks before saving its state, and its post-hooks
        after its children's."""
        if not isinstance(prefix, str):
            raise TypeError(f"state_dict(): prefix must be a str, got {type(prefix).__name__}")
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": getattr(self, "_version", 1)}
        metadata = getattr(destination, "_metadata", None)
        if metadata is not None:
            metadata[prefix[:-1]] = local_metadata
        d = self.__dict__
        for hook in list(d.get("_state_dict_pre_hooks", {}).values()):
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook, public in list(d.get("_state_dict_hooks", {}).values()):
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                if public:
                    raise RuntimeError("state_dict post-hook must return None")
                destination = result
        return destination

    def load_state_dict(self, state_dict, strict=True):
        """Copy the arrays of `state_dict` (name -> array or Tensor) into the parameters and
        persistent buffers of the same names, in place, and give each module that defines
        set_extra_state its ``_extra_state``. With strict=True, missing and unexpected names
        are errors; a shape mismatch always is. Nothing is copied if there is an error
        (unless load_state_dict post-hooks, which see the loaded module, could clear it).
        Returns ``(missing_keys, unexpected_keys)``. See pyrt/nn/state_loading.py."""
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        return state_loading.load_state_dict(self, state_dict, strict)

    def get_extra_state(self):
        """The state beyond parameters and buffers to save in state_dict() under
        ``_extra_state``: a module that has some overrides this and set_extra_state."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called: a module with extra state overrides get_extra_state")

    def set_extra_state(self, state):
        """Restore what get_extra_state returned, from load_state_dict()."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called: a module with extra state overrides set_extra_state")

    # ---- state_dict hooks ----------------------------------------------------------------------

    def register_state_dict_pre_hook(self, hook):
        """Call ``hook(module, prefix, keep_vars)`` before state_dict() saves this module's
        state. Returns a RemovableHandle."""
        return self._add_hook("_state_dict_pre_hooks", hook, False, None)

    def register_state_dict_post_hook(self, hook):
        """Call ``hook(module, state_dict, prefix, local_metadata)`` once state_dict() has
        saved this module's state and its children's; it may edit state_dict in place and
        must return None. Returns a RemovableHandle."""
        return self._add_hook("_state_dict_hooks", hook, False, True)

    def _register_state_dict_hook(self, hook):
        """The older form of register_state_dict_post_hook: a state dict the hook returns
        replaces the one being built."""
        return self._add_hook("_state_dict_hooks", hook, False, False)

    def register_load_state_dict_pre_hook(self, hook):
        """Call ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before load_state_dict() reads this module's entries;
        it may edit state_dict and the lists in place. Returns a RemovableHandle."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """register_load_state_dict_pre_hook, the hook taking the module first only
        with_module."""
        if not callable(hook):
            raise TypeError(f"hook must be callable, got {type(hook).__name__}")
        return self._add_hook("_load_state_dict_pre_hooks",
                              functools.partial(hook, self) if with_module else hook,
                              False, None)

    def register_load_state_dict_post_hook(self, hook):
        """Call ``hook(module, incompatible_keys)`` once load_state_dict() has loaded this
        module and its children; it may edit ``incompatible_keys.missing_keys`` and
        ``.unexpected_keys`` in place (the strict check reads them after) and must return
        None. Returns a RemovableHandle."""
        return self._add_hook("_load_state_dict_post_hooks", hook, False, None)

    # ---- printing ----------------------------------------------------------------------------

    def extra_repr(self):
        """The module's own settings, shown inside its repr; subclasses override this."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + _addindent(repr(module), 2)
                       for name, module in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if len(extra_lines) == 1 and not child_lines:
            body = extra_lines[0]
        elif lines:
            body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{type(self).__name__}({body})"
