"""Activation layers over pyrt.activations, with torch.nn's names, arguments and reprs:
LeakyReLU, ELU, SELU, CELU, GELU, SiLU, Mish, Softplus, LogSigmoid, Hardtanh, ReLU6,
Hardsigmoid, Hardswish, PReLU (with its learned slopes), RReLU (random slopes while training),
Threshold, Softsign, Tanhshrink, Softshrink, Hardshrink, GLU, Softmin and Softmax2d. (ReLU,
Sigmoid, Tanh, Softmax and LogSoftmax are in pyrt.nn.layers.)

The arguments are checked when the layer is made: a value of the wrong type is a TypeError, a
value out of range a ValueError. With inplace=True a layer writes its result into its input
where autograd records nothing of the input, as PyTorch does, and otherwise returns a new
tensor (functional._inplace).
"""

import numbers

import numpy as np

from pyrt import activations as A
from pyrt import functional as F
from pyrt.functional import _real_number
from pyrt.nn.module import Module
from pyrt.nn.parameter import Parameter

__all__ = [
    "CELU",
    "ELU",
    "GELU",
    "GLU",
    "SELU",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "LeakyReLU",
    "LogSigmoid",
    "Mish",
    "PReLU",
    "RReLU",
    "ReLU6",
    "SiLU",
    "Softmax2d",
    "Softmin",
    "Softplus",
    "Softshrink",
    "Softsign",
    "Tanhshrink",
    "Threshold",
]


class _Activation(Module):
    _tensor_input = True
    inplace = False  # torch's attribute: write the result into the input where allowed

    def _settings(self):
        """The layer's own settings, as extra_repr shows them before inplace."""
        return ""

    def extra_repr(self):
        settings = self._settings()
        if not self.inplace:
            return settings
        return f"{settings}, inplace=True" if settings else "inplace=True"



class LeakyReLU(_Activation):
    """x where x > 0, else negative_slope * x."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        _real_number(negative_slope, "negative_slope")
        self.inplace = A.inplace_flag(inplace)
        self.negative_slope = negative_slope

    def forward(self, input):
        return A.leaky_relu(input, self.negative_slope, inplace=self.inplace)

    def _settings(self):
        return f"negative_slope={self.negative_slope}"


class ELU(_Activation):
    """x where x > 0, else alpha (exp(x) - 1)."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        _real_number(alpha, "alpha")
        self.inplace = A.inplace_flag(inplace)
        self.alpha = alpha

    def forward(self, input):
        return A.elu(input, self.alpha, inplace=self.inplace)

    def _settings(self):
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
        self.inplace = A.inplace_flag(inplace)

    def forward(self, input):
        return A.silu(input, inplace=self.inplace)


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
        self.inplace = A.inplace_flag(inplace)
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, input):
        return A.hardtanh(input, self.min_val, self.max_val, inplace=self.inplace)

    def _settings(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"


class ReLU6(_Activation):
    """min(max(x, 0), 6)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = A.inplace_flag(inplace)

    def forward(self, input):
        return A.relu6(input, inplace=self.inplace)


class Hardsigmoid(_Activation):
    """min(max(x + 3, 0), 6) / 6."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = A.inplace_flag(inplace)

    def forward(self, input):
        return A.hardsigmoid(input, inplace=self.inplace)

    def extra_repr(self):  # PyTorch's shows no inplace for this one
        return ""


class Hardswish(_Activation):
    """x min(max(x + 3, 0), 6) / 6."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = A.inplace_flag(inplace)

    def forward(self, input):
        return A.hardswish(input, inplace=self.inplace)

    def extra_repr(self):  # PyTorch's shows no inplace for this one
        return ""


class Mish(_Activation):
    """x tanh(softplus(x))."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = A.inplace_flag(inplace)

    def forward(self, input):
        return A.mish(input, inplace=self.inplace)


class SELU(_Activation):
    """scale (x where x > 0, else alpha (exp(x) - 1)), alpha and scale SELU's constants."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = A.inplace_flag(inplace)

    def forward(self, input):
        return A.selu(input, inplace=self.inplace)


class CELU(_Activation):
    """x where x > 0, else alpha (exp(x / alpha) - 1). (alpha=0 is refused when called, as in
    PyTorch.)"""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        _real_number(alpha, "alpha")
        self.inplace = A.inplace_flag(inplace)
        self.alpha = alpha

    def forward(self, input):
        return A.celu(input, self.alpha, inplace=self.inplace)

    def _settings(self):
        return f"alpha={self.alpha}"


class PReLU(_Activation):
    """x where x > 0, else a x, with learned slopes a: `num_parameters` of them, 1 (shared by
    every element) or the number of channels (dim 1 of the input), each starting at `init`.
    They are the Parameter ``weight``."""

    def __init__(self, num_parameters=1, init=0.25):
        super().__init__()
        if (isinstance(num_parameters, bool) or not isinstance(num_parameters, numbers.Integral)
                or num_parameters < 1):
            raise ValueError(f"PReLU: num_parameters must be a positive int, got "
                             f"{num_parameters!r}")
        self.num_parameters = int(num_parameters)
        self.init = _real_number(init, "init")
        self.weight = Parameter(np.empty(self.num_parameters, np.float32))
        self.reset_parameters()

    def reset_parameters(self):
        self.weight._data[...] = np.float32(self.init)

    def forward(self, input):
        return A.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class RReLU(_Activation):
    """x where x > 0, else a x: while training a slope drawn uniformly from [lower, upper] for
    each element (pyrt.manual_seed seeds the draws), in evaluation mode their mean
    (lower + upper) / 2."""

    def __init__(self, lower=A.RRELU_LOWER, upper=A.RRELU_UPPER, inplace=False):
        super().__init__()
        _real_number(lower, "lower")
        _real_number(upper, "upper")
        self.inplace = A.inplace_flag(inplace)
        self.lower = lower
        self.upper = upper

    def forward(self, input):
        return A.rrelu(input, self.lower, self.upper, self.training, inplace=self.inplace)

    def _settings(self):
        return f"lower={self.lower}, upper={self.upper}"


class Threshold(_Activation):
    """`value` where x <= threshold, else x."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        _real_number(threshold, "threshold")
        _real_number(value, "value")
        self.inplace = A.inplace_flag(inplace)
        self.threshold = threshold
        self.value = value

    def forward(self, input):
        return A.threshold(input, self.threshold, self.value, inplace=self.inplace)

    def _settings(self):
        return f"threshold={self.threshold}, value={self.value}"


class Softsign(_Activation):
    """x / (1 + |x|)."""

    def forward(self, input):
        return A.softsign(input)


class Tanhshrink(_Activation):
    """x - tanh(x)."""

    def forward(self, input):
        return A.tanhshrink(input)


class Softshrink(_Activation):
    """x - lambd above lambd, x + lambd below -lambd, 0 between. (A negative lambd is refused
    when called, as in PyTorch.)"""

    def __init__(self, lambd=0.5):
        super().__init__()
        _real_number(lambd, "lambd")
        self.lambd = lambd

    def forward(self, input):
        return A.softshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Hardshrink(_Activation):
    """x outside [-lambd, lambd], 0 inside."""

    def __init__(self, lambd=0.5):
        super().__init__()
        _real_number(lambd, "lambd")
        self.lambd = lambd

    def forward(self, input):
        return A.hardshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class LogSigmoid(_Activation):
    """log(sigmoid(x)), computed stably."""

    def forward(self, input):
        return A.logsigmoid(input)


class GLU(_Activation):
    """a sigmoid(b), a and b the halves of the input along `dim`."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return A.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmin(_Activation):
    """softmax(-x) along `dim` (None: PyTorch's legacy choice, with its warning)."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return A.softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax2d(_Activation):
    """Softmax over the channels (dim -3) at each position of a 3-D (C, H, W) or 4-D
    (N, C, H, W) input."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D "
                             "instead")
        return F.softmax(input, -3)
