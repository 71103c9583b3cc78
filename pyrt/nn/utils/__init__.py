"""Gradient clipping, as torch.nn.utils: ``clip_grad_norm_`` and ``clip_grad_value_`` scale or
clamp the ``.grad`` of parameters in place, between ``backward()`` and the optimizer's step.
``rnn`` packs and pads batches of sequences of different lengths.
On the GPU nothing is read back to the host: the scale is computed and applied on the
device. ``parameters_to_vector`` and ``vector_to_parameters`` flatten parameters into one
vector and back. ``get_total_norm`` and ``clip_grads_with_norm_`` are clip_grad_norm_'s two
halves; ``fusion`` folds an eval-mode batch norm into the layer before it
(``fuse_conv_bn_eval`` and its kin); ``stateless.functional_call`` runs a module with other
tensors in place of its parameters and buffers. ``parametrize`` and ``parametrizations``
(orthogonal, weight_norm, spectral_norm) compute a parameter from unconstrained ones on every
read; ``weight_norm`` and ``spectral_norm`` are the older forms of the last two, by forward
pre-hooks; ``skip_init`` makes a module without drawing its initial weights."""

import numbers

import numpy as np

from pyrt import functional as F
from pyrt.autograd import mark_modified_all
from pyrt.nn.utils import fusion, parametrizations, parametrize, rnn, stateless
from pyrt.nn.utils.clip_norms import clip_grad_norm, clip_grads_with_norm_, get_total_norm
from pyrt.nn.utils.fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from pyrt.nn.utils.init import skip_init
from pyrt.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm
from pyrt.nn.utils.weight_norm import remove_weight_norm, weight_norm
from pyrt.shapes import cat
from pyrt.tensor import Tensor

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights", "fusion", "get_total_norm", "parameters_to_vector",
           "parametrizations", "parametrize", "remove_spectral_norm", "remove_weight_norm", "rnn",
           "skip_init", "spectral_norm", "stateless", "vector_to_parameters", "weight_norm"]

_F32 = np.float32


def _grads(parameters):
    """The gradient arrays of `parameters` (a Tensor or an iterable of them) that have one."""
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    for p in params:
        if not isinstance(p, Tensor):
            raise TypeError(f"parameters must be Tensors, got {type(p).__name__}")
    return [p.grad._data for p in params if p.grad is not None]


def _number(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    return float(value)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scale the gradients together so that their total norm (the norm_type norm of the
    gradients' norms, inf for the largest magnitude) is at most max_norm: each is multiplied
    by min(1, max_norm / (total + 1e-6)), PyTorch's factor. Returns the total norm before
    clipping, a 0-d float32 tensor; with error_if_nonfinite, a nan or inf total is a
    RuntimeError and nothing is scaled."""
    max_norm = _number(max_norm, "max_norm")
    # "inf": the spelling PyTorch documents for the largest magnitude
    if isinstance(norm_type, str) and norm_type == "inf":
        norm_type = float("inf")
    norm_type = _number(norm_type, "norm_type")
    grads = _grads(parameters)
    # an empty gradient adds nothing to any norm (PyTorch refuses it for the inf norm)
    sized = [g for g in grads if g.size]
    if not sized:
        return Tensor(np.zeros((), _F32))
    xp = F._xp(sized[0])
    norms = xp.stack([xp.linalg.norm(g.reshape(-1), ord=norm_type).astype(_F32)
                      for g in sized])
    total = xp.linalg.norm(norms, ord=norm_type).astype(_F32)
    if error_if_nonfinite and not bool(xp.isfinite(total)):  # (a read back, asked for)
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To disable "
                           "this error and scale the gradients by the non-finite norm anyway, "
                           "set `error_if_nonfinite=False`")
    scale = xp.minimum(_F32(max_norm) / (total + _F32(1e-6)), _F32(1.0))
    for g in grads:
        g *= scale
    mark_modified_all(grads)
    return Tensor(xp.asarray(total, dtype=_F32))


def clip_grad_value_(parameters, clip_value):
    """Clamp every gradient element into [-clip_value, clip_value], in place."""
    clip_value = _number(clip_value, "clip_value")
    grads = _grads(parameters)
    for g in grads:
        F._xp(g).clip(g, -clip_value, clip_value, out=g)
    mark_modified_all(grads)


def _one_device(params):
    """`params` (an iterable of Tensors) as a list, or PyTorch's TypeError when they lie on
    different devices."""
    params = [params] if isinstance(params, Tensor) else list(params)
    for p in params:
        if not isinstance(p, Tensor):
            raise TypeError(f"parameters must be Tensors, got {type(p).__name__}")
        if p.device != params[0].device:
            raise TypeError("Found two parameters on different devices, this is currently not "
                            "supported.")
    return params


def parameters_to_vector(parameters):
    """The parameters' values, each flattened, one after another in a 1-D tensor; a
    differentiable concatenation, so that gradients flow back to the parameters."""
    params = _one_device(parameters)
    if not params:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec, parameters):
    """Make the parameters views of consecutive slices of the 1-D tensor `vec`, in order: each
    parameter's data is then `vec`'s memory (writing one writes the other), as in PyTorch.
    A vector too short for them is a RuntimeError, and then no parameter is changed."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    params = _one_device(parameters)
    if vec.ndim != 1 or vec._data.dtype != _F32:
        raise TypeError(f"vector_to_parameters: vec must be a 1-D float32 tensor, got shape "
                        f"{vec.shape} and dtype {vec._data.dtype}")
    if params and vec.device != params[0].device:
        raise RuntimeError(f"vector_to_parameters: vec is on {vec.device} and the parameters on "
                           f"{params[0].device}")
    views, start = [], 0
    for p in params:
        n = p.numel()
        if start + n > vec.numel():
            raise RuntimeError(f"shape '{list(p.shape)}' is invalid for input of size "
                               f"{max(vec.numel() - start, 0)}")
        views.append(vec._data[start:start + n].reshape(p.shape))
        start += n
    for p, view in zip(params, views):
        p._data = view
