"""The two halves of clip_grad_norm_, as torch.nn.utils has them since PyTorch 2.6:
``get_total_norm(tensors)`` and ``clip_grads_with_norm_(parameters, max_norm, total_norm)``,
so that the total norm can be computed once (or gathered from elsewhere) and applied apart;
and ``clip_grad_norm``, the deprecated name of clip_grad_norm_."""

import numbers
import warnings

import numpy as np

from pyrt.autograd import mark_modified_all
from pyrt.functional import _xp
from pyrt.tensor import Tensor

__all__ = ["clip_grad_norm", "clip_grads_with_norm_", "get_total_norm"]

_F32 = np.float32


def _tensors(tensors, name):
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be Tensors, got {type(t).__name__}")
    return tensors


def _real(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    return float(value)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm_type norm of the tensors' own norm_type norms (inf: the largest magnitude):
    the norm of all their elements as one vector. A 0-d float32 tensor, 0 for no tensors; with
    error_if_nonfinite, a nan or inf total is a RuntimeError."""
    norm_type = _real(norm_type, "norm_type")
    arrays = [t._data for t in _tensors(tensors, "tensors") if t._data.size]
    if not arrays:
        return Tensor(np.zeros((), _F32))
    xp = _xp(arrays[0])
    norms = xp.stack([xp.linalg.norm(a.reshape(-1).astype(_F32), ord=norm_type).astype(_F32)
                      for a in arrays])
    total = xp.asarray(xp.linalg.norm(norms, ord=norm_type), dtype=_F32)
    if error_if_nonfinite and not bool(xp.isfinite(total)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To disable "
                           "this error and scale the gradients by the non-finite norm anyway, "
                           "set `error_if_nonfinite=False`")
    return Tensor(total)


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Multiply every parameter's gradient, in place, by min(1, max_norm / (total_norm +
    1e-6)): clip_grad_norm_ given the total norm (a Tensor or a number)."""
    max_norm = _real(max_norm, "max_norm")
    grads = [p.grad._data for p in _tensors(parameters, "parameters") if p.grad is not None]
    if not grads:
        return
    xp = _xp(grads[0])
    total = total_norm._data if isinstance(total_norm, Tensor) else _real(total_norm,
                                                                          "total_norm")
    scale = xp.minimum(_F32(max_norm) / (xp.asarray(total, dtype=_F32) + _F32(1e-6)),
                       _F32(1.0))
    for g in grads:
        g *= scale
    mark_modified_all(grads)


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                   foreach=None):
    """clip_grad_norm_, under its deprecated name (with PyTorch's FutureWarning)."""
    from pyrt.nn.utils import clip_grad_norm_

    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite)
