"""Parameter initialisation in place, with PyTorch's names and formulas (torch/nn/init.py).

Random values come from pyrt's generator, so ``pyrt.manual_seed(s)`` makes every model built
afterwards the same. They are drawn in float64 and rounded to float32.
"""

import math
import warnings

import numpy as np

from pyrt.tensor import generator

__all__ = [
    "calculate_gain",
    "constant",
    "constant_",
    "dirac",
    "dirac_",
    "eye",
    "eye_",
    "kaiming_normal",
    "kaiming_normal_",
    "kaiming_uniform",
    "kaiming_uniform_",
    "normal",
    "normal_",
    "ones_",
    "orthogonal",
    "orthogonal_",
    "sparse",
    "sparse_",
    "trunc_normal_",
    "uniform",
    "uniform_",
    "xavier_normal",
    "xavier_normal_",
    "xavier_uniform",
    "xavier_uniform_",
    "zeros_",
]


def calculate_gain(nonlinearity, param=None):
    """The gain PyTorch recommends for an activation: the factor by which to scale the
    standard deviation of the weights so the activations keep their size."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    """fan_in and fan_out of a weight [out, in, *kernel]: in and out times the kernel size."""
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive_field = 1
    for n in tensor.shape[2:]:
        receptive_field *= n
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _fan(tensor, mode):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _fill(tensor, values):
    tensor._data[...] = values
    return tensor


def uniform_(tensor, a=0.0, b=1.0):
    """Fill `tensor` with values drawn from U(a, b)."""
    if not a <= b:
        raise ValueError(f"uniform_ expects a <= b, got a={a}, b={b}")
    return _fill(tensor, generator().uniform(a, b, tensor.shape))


def normal_(tensor, mean=0.0, std=1.0):
    """Fill `tensor` with values drawn from N(mean, std^2)."""
    if std < 0:
        raise ValueError(f"normal_ expects std >= 0, got std={std}")
    return _fill(tensor, generator().normal(mean, std, tensor.shape))


def constant_(tensor, val):
    return _fill(tensor, val)


def zeros_(tensor):
    return _fill(tensor, 0.0)


def ones_(tensor):
    return _fill(tensor, 1.0)


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    """He initialisation: U(-bound, bound) with bound = gain * sqrt(3 / fan). PyTorch's Linear
    and Conv2d use a=sqrt(5), which gives bound = 1 / sqrt(fan_in)."""
    if 0 in tensor.shape:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    """He initialisation: N(0, std^2) with std = gain / sqrt(fan)."""
    if 0 in tensor.shape:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std)


def xavier_uniform_(tensor, gain=1.0):
    """Glorot initialisation: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor, gain=1.0):
    """Glorot initialisation: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
    """Fill `tensor` with values drawn from N(mean, std^2) truncated to [a, b]: draws outside
    are drawn again (exactly the truncated distribution; the interval must hold a fair share
    of the normal's mass, as it does for the usual a = -2 std, b = 2 std)."""
    if std < 0:
        raise ValueError(f"trunc_normal_ expects std >= 0, got std={std}")
    if not a < b:
        raise ValueError(f"trunc_normal_ expects a < b, got a={a}, b={b}")
    if std == 0:
        return _fill(tensor, min(max(mean, a), b))
    mass = (math.erf((b - mean) / (std * math.sqrt(2.0)))
            - math.erf((a - mean) / (std * math.sqrt(2.0)))) / 2
    if mass < 1e-4:
        raise ValueError(f"trunc_normal_: [{a}, {b}] holds too little of N({mean}, {std}^2) "
                         f"(probability {mass:.2g}) to draw from")
    shape = tuple(tensor.shape)
    values = np.empty(int(np.prod(shape)))
    todo = np.arange(values.size)
    while todo.size:
        draws = generator().normal(mean, std, todo.size)
        inside = (draws >= a) & (draws <= b)
        values[todo[inside]] = draws[inside]
        todo = todo[~inside]
    return _fill(tensor, values.reshape(shape))


def orthogonal_(tensor, gain=1.0):
    """Fill `tensor` (at least 2-D: its first dim against the rest flattened) with a (semi-)
    orthogonal matrix times gain: the Q of a normal matrix's QR factorisation, its columns'
    signs fixed by R's diagonal so that it is uniformly distributed (Saxe et al., 2013)."""
    if len(tensor.shape) < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if 0 in tensor.shape:
        return tensor
    rows = tensor.shape[0]
    cols = int(np.prod(tensor.shape[1:]))
    flat = generator().normal(0.0, 1.0, (rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, (gain * q).reshape(tensor.shape))


def eye_(tensor):
    """Fill the 2-D `tensor` with the identity matrix (ones on the diagonal)."""
    if len(tensor.shape) != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, np.eye(*tensor.shape))


def dirac_(tensor, groups=1):
    """Fill the 3-, 4- or 5-D `tensor` (a convolution's weight) with the Dirac delta: each of
    the first min(out, in) filters of every group passes its input channel through (a one at
    the kernel's centre), so that the convolution keeps as many of its input channels."""
    dims = len(tensor.shape)
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1 or (
            tensor.shape[0] % groups):
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = tensor.shape[0] // groups
    values = np.zeros(tensor.shape)
    centre = tuple(k // 2 for k in tensor.shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, tensor.shape[1])):
            values[(g * out_per_group + d, d) + centre] = 1.0
    return _fill(tensor, values)


def sparse_(tensor, sparsity, std=0.01):
    """Fill the 2-D `tensor` with N(0, std^2) values, then zero ceil(sparsity * rows) of each
    column's entries, chosen at random (Martens, 2010)."""
    if len(tensor.shape) != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    if not 0 <= sparsity <= 1:
        raise ValueError(f"sparsity must be in [0, 1], got {sparsity}")
    rows, cols = tensor.shape
    values = generator().normal(0.0, std, (rows, cols))
    zeros = math.ceil(sparsity * rows)
    for c in range(cols):
        values[generator().permutation(rows)[:zeros], c] = 0.0
    return _fill(tensor, values)


def _deprecated(method):
    """`method` (an in-place initialiser such as normal_) under its old name without the
    trailing underscore, warning as PyTorch does."""
    new_name = method.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of "
                      f"`nn.init.{new_name}`.", FutureWarning, stacklevel=2)
        return method(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    deprecated_init.__doc__ = f"{new_name}, under its deprecated name {old_name}."
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
