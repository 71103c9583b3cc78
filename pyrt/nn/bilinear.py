"""Bilinear, as torch.nn.Bilinear: y = x1^T A x2 + b over any leading dims (F.bilinear), with
weight A [out_features, in1_features, in2_features] and bias b [out_features].

Both are initialised as PyTorch does, uniform in (-1/sqrt(in1_features), 1/sqrt(in1_features)),
from pyrt's seeded generator (``reset_parameters``)."""

import math
import numbers

import numpy as np

from pyrt.bilinear import bilinear
from pyrt.nn import init
from pyrt.nn.module import Module
from pyrt.nn.parameter import Parameter

__all__ = ["Bilinear"]


def _features(value, name):
    """A positive number of features, or PyTorch's ValueError naming the argument."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{name} must be > 0, but got ({name}={value!r})")
    return int(value)


class Bilinear(Module):
    """y = x1^T weight[o] x2 + bias[o] for each output feature o: x1 [*, in1_features] and
    x2 [*, in2_features] (the same leading dims) give [*, out_features]."""
    _tensor_input = True

    def __init__(self, in1_features, in2_features, out_features, bias=True):
        super().__init__()
        self.in1_features = _features(in1_features, "in1_features")
        self.in2_features = _features(in2_features, "in2_features")
        self.out_features = _features(out_features, "out_features")
        self.weight = Parameter(np.empty((self.out_features, self.in1_features,
                                          self.in2_features), np.float32))
        if bias:
            self.bias = Parameter(np.empty((self.out_features,), np.float32))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
