"""LayerNorm and RMSNorm, as torch.nn's: each input is normalised over its trailing
``normalized_shape`` dimensions by its own mean and variance (by its root mean square), then
scaled and shifted (scaled) elementwise.

``elementwise_affine`` adds a learned weight (initially 1) and bias (0; ``bias=False`` leaves
it out), both of normalized_shape. Training and evaluation behave alike: there are no running
statistics.
"""

import numbers

import numpy as np

from pyrt.layer_norm import layer_norm
from pyrt.nn.module import Module
from pyrt.nn.parameter import Parameter
from pyrt.ops.layer_norm import normalized_dims
from pyrt.rms_norm import rms_norm

__all__ = ["LayerNorm", "RMSNorm"]


def _parameter_dims(normalized_shape):
    """normalized_shape as a tuple, checked as the shape of a parameter."""
    dims = normalized_dims(normalized_shape)
    if any(d < 0 for d in dims):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(dims)}: "
                           f"{list(dims)}")
    return dims


class LayerNorm(Module):
    """Over inputs [*, *normalized_shape]; `normalized_shape` is an int or a sequence of
    ints."""
    _tensor_input = True

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True):
        super().__init__()
        dims = _parameter_dims(normalized_shape)
        if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
            raise TypeError(f"eps must be a real number, got {eps!r}")
        self.normalized_shape = dims
        self.eps = eps
        self.elementwise_affine = bool(elementwise_affine)
        if self.elementwise_affine:
            self.weight = Parameter(np.ones(dims, np.float32))
            if bias:
                self.bias = Parameter(np.zeros(dims, np.float32))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self):
        if self.weight is not None:
            self.weight._data[...] = 1
        if self.bias is not None:
            self.bias._data[...] = 0

    def forward(self, x):
        return layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """Root-mean-square normalisation over inputs [*, *normalized_shape] (F.rms_norm), scaled
    by a weight of ones unless elementwise_affine is False; eps None: float32's machine
    epsilon."""
    _tensor_input = True

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True):
        super().__init__()
        dims = _parameter_dims(normalized_shape)
        if eps is not None and (isinstance(eps, bool) or not isinstance(eps, numbers.Real)):
            raise TypeError(f"eps must be a real number or None, got {eps!r}")
        self.normalized_shape = dims
        self.eps = eps
        self.elementwise_affine = bool(elementwise_affine)
        if self.elementwise_affine:
            self.weight = Parameter(np.ones(dims, np.float32))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self):
        if self.weight is not None:
            self.weight._data[...] = 1

    def forward(self, x):
        return rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")
