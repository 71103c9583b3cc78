"""Parametrizations, as torch.nn.utils.parametrize: a parameter or buffer of a module replaced by
a function of unconstrained tensors, recomputed on every read.

``register_parametrization(module, "weight", P)`` moves the weight into
``module.parametrizations.weight.original`` (a ParametrizationList, which also holds P) and
makes ``module.weight`` read ``P(original)``. As in PyTorch, the module's class becomes a
subclass of its own ("ParametrizedLinear") carrying a property for each parametrized name; so
that layers reading ``self._parameters["weight"]`` see the parametrized tensor too, the
module's dict becomes a ComputedTensors (computed_tensors.py), whose missing "weight" reads the
property. ``state_dict()`` keys are PyTorch's: "parametrizations.weight.original" (or
"original0", "original1", ... when P's right_inverse returns several tensors).
"""

import copy
import copyreg
from collections.abc import Sequence
from contextlib import contextmanager

from pyrt.autograd import no_grad
from pyrt.nn.layers import ModuleDict, ModuleList
from pyrt.nn.module import Module
from pyrt.nn.parameter import Parameter
from pyrt.nn.utils.computed_tensors import compute_on_read, stop_computing
from pyrt.tensor import Tensor

__all__ = ["ParametrizationList", "cached", "is_parametrized", "register_parametrization",
           "remove_parametrizations", "transfer_parametrizations_and_params",
           "type_before_parametrizations"]

_cache_enabled = 0
_cache = {}  # (id(module), name) -> the parametrized tensor, while cached() is active


@contextmanager
def cached():
    """Within the block, each parametrized tensor is computed on its first read and the same
    tensor returned by later reads (an RNN's recurrent weight read at every step, a weight
    shared by several layers); the cache is dropped when the outermost block ends."""
    global _cache_enabled, _cache
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module, name, X):
    if isinstance(X, Parameter):
        module.register_parameter(name, X)
    else:
        module.register_buffer(name, X)


def _set(dest, src):
    """dest takes src's values (and shape) in place, as Tensor.set_: the same object, so that
    an optimizer holding it keeps working."""
    dest._data = src._data


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor of a module, applied in order, and the original
    tensor(s) they take: ``original``, or ``original0``, ``original1``, ... when the first
    parametrization's right_inverse returns a sequence. Made by register_parametrization."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        # the original's initial value: the right inverses, last parametrization first
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError(  # noqa: TRY004 (PyTorch's)
                "'right_inverse' must return a Tensor or a Sequence of tensors "
                f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change "
                                 f"the dtype.\noriginal.dtype: {original.dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            if original.device != new.device:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change "
                                 f"the device.\noriginal.device: {original.device}\n"
                                 f"right_inverse(original).device: {new.device}")
            with no_grad():
                _set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError(  # noqa: TRY004 (PyTorch's)
                        "'right_inverse' must return a Tensor or a Sequence of "
                        "tensors (list, tuple...). Got element "
                        f"{i} of the sequence with type {type(originali).__name__}.")
                if isinstance(original, Parameter):
                    originali = Parameter(originali, original.requires_grad)
                originali.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            # the parametrization must keep the tensor's dtype and shape
            Z = self()
            if not isinstance(Z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(Z).__name__}.")
            if Z.dtype != original_dtype:
                raise ValueError("Registering a parametrization may not change the dtype of "
                                 "the tensor, unless `unsafe` flag is enabled.\n"
                                 f"unparametrized dtype: {original_dtype}\n"
                                 f"parametrized dtype: {Z.dtype}")
            if Z.shape != original_shape:
                raise ValueError("Registering a parametrization may not change the shape of "
                                 "the tensor, unless `unsafe` flag is enabled.\n"
                                 f"unparametrized shape: {original_shape}\n"
                                 f"parametrized shape: {Z.shape}")

    def right_inverse(self, value):
        """Set the original tensor(s) so that the parametrizations give `value`: their
        right_inverse methods, last first, then the result written into ``original`` (or
        ``original0``, ``original1``, ...) in place."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                _set(self.original, value)
                return
            if not isinstance(value, Sequence):
                raise ValueError(  # noqa: TRY004 (PyTorch's)
                    f"'right_inverse' must return a sequence of tensors. Got "
                    f"{type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of tensors of length "
                                 f"{self.ntensors}. Got a sequence of length {len(value)}.")
            for i, tensor in enumerate(value):
                original_i = getattr(self, f"original{i}")
                if not isinstance(tensor, Tensor):
                    raise ValueError(  # noqa: TRY004 (PyTorch's)
                        f"'right_inverse' must return a sequence of tensors. Got "
                        f"element {i} of type {type(tensor).__name__}.")
                if original_i.dtype != tensor.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                     f"{tensor.dtype} while `original{i}` has dtype "
                                     f"{original_i.dtype}")
                _set(original_i, tensor)

    def forward(self):
        """The parametrized tensor: the first parametrization applied to the original(s),
        then each later one to the result."""
        parametrizations = list(self)
        if self.is_tensor:
            x = parametrizations[0](self.original)
        else:
            x = parametrizations[0](*(getattr(self, f"original{i}")
                                      for i in range(self.ntensors)))
        for parametrization in parametrizations[1:]:
            x = parametrization(x)
        return x


def _default_deepcopy(self, memo):
    replica = memo.get(id(self))
    if replica is not None:
        return replica
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    object.__setattr__(replica, "__dict__", copy.deepcopy(self.__dict__, memo))
    for slot in copyreg._slotnames(self.__class__):
        if hasattr(self, slot):
            setattr(replica, slot, copy.deepcopy(getattr(self, slot), memo))
    return replica


def _refuse_pickling(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through "
                       "state_dict(). See:\nhttps://pytorch.org/tutorials/beginner/"
                       "saving_loading_models.html#saving-loading-a-general-checkpoint-for-"
                       "inference-and-or-resuming-training")


def _inject_new_class(module):
    """Give `module` a class of its own, "Parametrized<its class>", to carry the properties of
    its parametrized tensors."""
    cls = module.__class__
    members = {"__getstate__": _refuse_pickling}
    if not hasattr(cls, "__deepcopy__"):
        members["__deepcopy__"] = _default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), members)


def _inject_property(module, tensor_name):
    """A property `tensor_name` on module's own class: reading it computes the parametrized
    tensor (once per cached() block), assigning to it calls the right inverse."""
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            tensor = _cache.get(key)
            if tensor is None:
                tensor = _cache[key] = parametrization()
            return tensor
        return parametrization()

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def _check_result(X, Y, tensor_name, what):
    """ValueError unless X (`what` of module.<tensor_name>) has Y's dtype and shape."""
    if not isinstance(X, Tensor):
        raise ValueError(  # noqa: TRY004 (PyTorch's)
            f"{what} must return a tensor. Got {type(X).__name__}.")
    if X.dtype != Y.dtype:
        raise ValueError(f"Registering a parametrization may not change the dtype of the "
                         f"tensor, unless the `unsafe` flag is enabled.\n"
                         f"module.{tensor_name}.dtype: {Y.dtype}\n{what}.dtype: {X.dtype}")
    if X.shape != Y.shape:
        raise ValueError(f"Registering a parametrization may not change the shape of the "
                         f"tensor, unless the `unsafe` flag is enabled.\n"
                         f"module.{tensor_name}.shape: {Y.shape}\n{what}.shape: {X.shape}")


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Parametrize ``module.<tensor_name>`` (a parameter or buffer, or a tensor parametrized
    already, whose parametrizations this one then follows) by the Module `parametrization`:
    reading it gives ``parametrization(original)``, gradients flow to the original, which
    the parametrization's optional ``right_inverse`` initialises from the current value.
    unsafe: skip the checks that the dtype and shape are kept. Returns module."""
    if not isinstance(module, Module):
        raise TypeError(f"register_parametrization: module must be a pyrt.nn.Module, got "
                        f"{type(module).__name__}")
    if not isinstance(parametrization, Module):
        raise TypeError(f"register_parametrization: parametrization must be a pyrt.nn.Module, "
                        f"got {type(parametrization).__name__}")
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            Y = getattr(module, tensor_name)
            X = parametrization(Y)
            _check_result(X, Y, tensor_name, f"parametrization(module.{tensor_name})")
            if hasattr(parametrization, "right_inverse"):
                try:
                    Z = parametrization.right_inverse(X)
                except NotImplementedError:
                    pass
                else:
                    _check_result(Z, Y, tensor_name, "parametrization.right_inverse")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
        return module
    if tensor_name in module._parameters:
        store = "_parameters"
    elif tensor_name in module._buffers:
        store = "_buffers"
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    original = getattr(module, tensor_name)
    if original is None:
        raise ValueError(f"register_parametrization: module.{tensor_name} is None, there is "
                         "no tensor to parametrize")
    parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        _inject_new_class(module)
        module.parametrizations = ModuleDict()
    _inject_property(module, tensor_name)
    module.parametrizations[tensor_name] = parametrizations
    compute_on_read(module, store, tensor_name)
    return module


def is_parametrized(module, tensor_name=None):
    """Whether ``module.<tensor_name>`` is parametrized (any tensor of module, if None)."""
    parametrizations = getattr(module, "parametrizations", None)
    if not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Make ``module.<tensor_name>`` a plain parameter (or buffer) again: holding its current
    parametrized value (leave_parametrized=True) or the original tensor (False: possible only
    when the parametrization takes one tensor). Returns module."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                _set(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        t = getattr(module, tensor_name)
        original = Parameter(t) if t.requires_grad else t
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    for store in ("_parameters", "_buffers"):
        stop_computing(module, store, tensor_name)
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The class of `module` before it was parametrized (its class, if it is not)."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Register on `to_module` the parametrizations of `from_module` (those of `tensor_name`
    only, if given), sharing their original tensors; a tensor to_module lacks is created
    first. Nothing happens if from_module is not parametrized. Returns to_module."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        source = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        if hasattr(source, "original"):
            target.original = source.original
        else:
            i = 0
            while hasattr(source, f"original{i}"):
                setattr(target, f"original{i}", getattr(source, f"original{i}"))
                i += 1
    return to_module
