"""Gradient clipping, as torch.nn.utils: ``clip_grad_norm_`` and ``clip_grad_value_`` scale or
clamp the ``.grad`` of parameters in place, between ``backward()`` and the optimizer's step.
On the GPU nothing is read back to the host: the scale is computed and applied on the
device."""

import numbers

import numpy as np

from pyrt import functional as F
from pyrt.autograd import mark_modified_all
from pyrt.tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]

_F32 = np.float32


def _grads(parameters):
    """The gradient arrays of `parameters` (a Tensor or an iterable of them) that have one."""
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    for p in params:
        if not isinstance(p, Tensor):
            raise TypeError(f"parameters must be Tensors, got {type(p).__name__}")
    return [p.grad.data for p in params if p.grad is not None]


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
