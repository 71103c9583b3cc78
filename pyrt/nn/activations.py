"""Activation layers over pyrt.activations, with torch.nn's names, arguments and reprs:
LeakyReLU, ELU, GELU, SiLU, Softplus and Hardtanh. (ReLU, Sigmoid, Tanh, Softmax and
LogSoftmax are in pyrt.nn.layers.)

The arguments are checked when the layer is made: a value of the wrong type is a TypeError, a
value out of range a ValueError. inplace=True is refused, as Dropout refuses it: pyrt's ops
write their results to new tensors.
"""

from pyrt import activations as A
from pyrt.functional import _real_number
from pyrt.nn.module import Module

__all__ = ["ELU", "GELU", "Hardtanh", "LeakyReLU", "SiLU", "Softplus"]


class _Activation(Module):
    _tensor_input = True
    inplace = False  # torch's attribute; inplace=True is refused


class LeakyReLU(_Activation):
    """x where x > 0, else negative_slope * x."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        _real_number(negative_slope, "negative_slope")
        A.refuse_inplace("LeakyReLU", inplace)
        self.negative_slope = negative_slope

    def forward(self, input):
        return A.leaky_relu(input, self.negative_slope)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}"


class ELU(_Activation):
    """x where x > 0, else alpha (exp(x) - 1)."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        _real_number(alpha, "alpha")
        A.refuse_inplace("ELU", inplace)
        self.alpha = alpha

    def forward(self, input):
        return A.elu(input, self.alpha)

    def extra_repr(self):
        return f"alpha={self.alpha}"


class GELU(_Activation):
    """x Phi(x), Phi the standard normal CDF; approximate="tanh" takes PyTorch's tanh
    approximation of it."""

    def __init__(self, approximate="none"):
        super().__init__()
        if not (isinstance(approximate, str) and approximate in A.GELU_APPROXIMATIONS):
            raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input):
        return A.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(_Activation):
    """x sigmoid(x)."""

    def __init__(self, inplace=False):
        super().__init__()
        A.refuse_inplace("SiLU", inplace)

    def forward(self, input):
        return A.silu(input)


class Softplus(_Activation):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        if _real_number(beta, "beta") == 0:
            raise ValueError("Softplus: beta must not be 0")
        _real_number(threshold, "threshold")
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return A.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(_Activation):
    """x clamped to [min_val, max_val], which must satisfy min_val < max_val."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        _real_number(min_val, "min_val")
        _real_number(max_val, "max_val")
        if not max_val > min_val:
            raise ValueError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        A.refuse_inplace("Hardtanh", inplace)
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, input):
        return A.hardtanh(input, self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"
