"""conv_tbc: the 1d convolution of sequences laid out time-major, as torch.conv_tbc.

input [T, B, C_in] (time, batch, channels), weight [K, C_in, C_out], bias [C_out] and `pad`
zero time steps on each side give output [T + 2 * pad - K + 1, B, C_out], where

    output[t, b, o] = bias[o] + sum over k, i of padded[t + k, b, i] * weight[k, i, o]

which is conv1d of the batch-major [B, C_in, T] input with the [C_out, C_in, K] weight, its
result read back time-major: two permutations around pyrt's conv1d, which gives the
gradients of all three tensors.
"""

import numbers

import numpy as np

from pyrt.functional import _tensor, _xp
from pyrt.spatial_more import conv1d

__all__ = ["conv_tbc"]


def conv_tbc(input, weight, bias, pad=0):
    """The time-major 1d convolution of input [T, B, C_in] with weight [K, C_in, C_out] plus
    bias [C_out], `pad` zero steps on each side of time (see the module's doc)."""
    Tensor = _tensor()
    for value, name in ((input, "input"), (weight, "weight"), (bias, "bias")):
        if not isinstance(value, Tensor):
            raise TypeError(f"conv_tbc(): argument '{name}' must be Tensor, not "
                            f"{type(value).__name__}")
    if isinstance(pad, bool) or not isinstance(pad, numbers.Integral):
        raise TypeError(f"conv_tbc(): argument 'pad' must be int, not {type(pad).__name__}")
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    if pad < 0:
        raise ValueError(f"conv_tbc(): pad must be non-negative, got {pad}")
    steps = input.shape[0] + 2 * pad - weight.shape[0] + 1
    if steps <= 0:
        xp = _xp(input._data)
        return Tensor(xp.zeros((0, input.shape[1], weight.shape[2]), np.float32))
    out = conv1d(input.permute((1, 2, 0)), weight.permute((2, 1, 0)), bias, padding=int(pad))
    return out.permute((2, 0, 1)).contiguous()
