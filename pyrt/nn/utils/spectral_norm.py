"""Spectral normalization by forward pre-hooks, as torch.nn.utils.spectral_norm (superseded
there by parametrizations.spectral_norm).

The weight W is divided by its largest singular value sigma (Miyato et al. 2018), estimated
by power iteration: W viewed as a matrix (`dim` first, the other dimensions flattened), the
vectors u and v (buffers "weight_u" and "weight_v") are refined in place by
v = normalize(W^T u), u = normalize(W v), `n_power_iterations` times before each forward in
training mode, and sigma = u . W v. The trained parameter is "weight_orig"; ``module.weight``
is recomputed by a forward pre-hook.
"""

import numbers

from pyrt.autograd import no_grad
from pyrt.nn.parameter import Parameter
from pyrt.nn.utils.computed_tensors import compute_on_read, stop_computing
from pyrt.tensor import randn
from pyrt.vector_functions import normalize

__all__ = ["SpectralNorm", "remove_spectral_norm", "spectral_norm"]


def check_power_iterations(n_power_iterations):
    if (isinstance(n_power_iterations, bool)
            or not isinstance(n_power_iterations, numbers.Integral)):
        raise TypeError(f"n_power_iterations must be an int, got "
                        f"{type(n_power_iterations).__name__}")
    if n_power_iterations <= 0:
        raise ValueError(f"Expected n_power_iterations to be positive, but got "
                         f"n_power_iterations={n_power_iterations}")
    return int(n_power_iterations)


def weight_matrix(weight, dim):
    """weight as a matrix: dimension `dim` first (rows), the others flattened (columns)."""
    dim %= weight.ndim
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.ndim) if d != dim))
    return weight.reshape(weight.shape[0], -1)


class SpectralNorm:
    """The forward pre-hook of spectral_norm: sets ``module.<name>`` to
    ``<name>_orig / sigma``."""

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name = name
        self.dim = dim
        self.n_power_iterations = check_power_iterations(n_power_iterations)
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        return weight_matrix(weight, self.dim)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    # in place: the buffers carry the estimate from one forward to the next
                    v.copy_(normalize(weight_mat.mT.mv(u), dim=0, eps=self.eps))
                    u.copy_(normalize(weight_mat.mv(v), dim=0, eps=self.eps))
            # copies: a backward must not see the next forward's updates
            u, v = u.clone(), v.clone()
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        stop_computing(module, "_parameters", self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name,
                self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook, _ in module.__dict__.get("_forward_pre_hooks", {}).values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        if name not in module._parameters:
            raise ValueError(f"spectral_norm: module {type(module).__name__} has no parameter "
                             f"named {name!r}")
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if not -weight.ndim <= dim < max(weight.ndim, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-weight.ndim}, {weight.ndim - 1}], but got {dim})")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = normalize(randn(h), dim=0, eps=fn.eps)
            v = normalize(randn(w), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.detach())
        compute_on_read(module, "_parameters", fn.name)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def default_dim(module):
    """The dimension of the output channels: 1 for transposed convolutions, else 0."""
    from pyrt.nn.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

    return 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its spectral norm, estimated by power iteration before each
    forward (in training mode only); `dim` is the output dimension (None: 1 for transposed
    convolutions, else 0). Returns module."""
    if dim is None:
        dim = default_dim(module)
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undo spectral_norm: ``module.<name>`` becomes a plain parameter holding the current
    normalized weight (no power iteration). Returns module."""
    hooks = module.__dict__.get("_forward_pre_hooks", {})
    for key, (hook, _) in hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del hooks[key]
            module._hooks_changed()
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
