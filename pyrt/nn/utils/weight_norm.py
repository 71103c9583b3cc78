"""Weight normalization by forward pre-hooks, as torch.nn.utils.weight_norm (deprecated there in
favour of parametrizations.weight_norm, which computes the same weight).

The weight w is replaced by a magnitude g and a direction v, w = g * v / ||v||, the norm taken
over every dimension but `dim` (Salimans and Kingma 2016): g and v are the parameters
"weight_g" and "weight_v", and a forward pre-hook recomputes w before each forward.
"""

import warnings

from pyrt.nn.parameter import Parameter
from pyrt.nn.utils.computed_tensors import compute_on_read, stop_computing

__all__ = ["WeightNorm", "norm_except_dim", "remove_weight_norm", "weight_norm"]


def norm_except_dim(v, pow=2, dim=0):
    """The `pow`-norm of v over every dimension but `dim`, with v's number of dimensions (size
    1 but at `dim`); dim=-1 means the norm of the whole tensor, a 0-d tensor (PyTorch's
    convention, which weight_norm's dim=None uses)."""
    if dim == -1:
        return v.norm(pow)
    if not -v.ndim <= dim < v.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-v.ndim}, {v.ndim - 1}], but got {dim})")
    dim %= v.ndim
    others = tuple(d for d in range(v.ndim) if d != dim)
    if pow == 2:
        return (v * v).sum(dim=others, keepdim=True).sqrt()
    return (v.abs() ** pow).sum(dim=others, keepdim=True) ** (1.0 / pow)


def _weight_norm(v, g, dim=0):
    """g * v / norm_except_dim(v, 2, dim)."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook of weight_norm: sets ``module.<name>`` from ``<name>_g`` and
    ``<name>_v``."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module, name, dim):
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning,
                      stacklevel=3)
        for hook, _ in module.__dict__.get("_forward_pre_hooks", {}).values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        fn = WeightNorm(name, dim)
        weight = module._parameters.get(name) if isinstance(name, str) else None
        if weight is None:
            raise ValueError(f"weight_norm: module {type(module).__name__} has no parameter "
                             f"named {name!r}")
        del module._parameters[name]
        module.register_parameter(name + "_g",
                                  Parameter(norm_except_dim(weight, 2, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight._data))
        setattr(module, name, fn.compute_weight(module))
        compute_on_read(module, "_parameters", name)
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        stop_computing(module, "_parameters", self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Replace ``module.<name>`` by ``<name>_g * <name>_v / ||<name>_v||``, the norm over every
    dimension but `dim` (all of them with dim=None), recomputed before each forward; g and v
    become the parameters "<name>_g" and "<name>_v", initialised so that the weight is
    unchanged. Returns module."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Undo weight_norm: ``module.<name>`` becomes a plain parameter holding the current
    weight. Returns module."""
    hooks = module.__dict__.get("_forward_pre_hooks", {})
    for key, (hook, _) in hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del hooks[key]
            module._hooks_changed()
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
