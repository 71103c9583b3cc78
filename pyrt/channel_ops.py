"""Ops across the channels of [N, C, *] inputs, as torch.nn.functional's:

- channel_shuffle(input, groups): the C channels, seen as a groups x (C / groups) grid, read
  out by columns (ShuffleNet's shuffle), so that the next grouped convolution mixes channels
  of every group: a reshape, a permutation and a reshape, whose gradient is the inverse
  shuffle.
- local_response_norm(input, size, alpha, beta, k): each element divided by
  (k + alpha * mean of the squares over `size` neighbouring channels) ** beta (AlexNet's
  normalisation). PyTorch's definition: the squares are zero-padded along the channels
  (size // 2 before, (size - 1) // 2 after) and averaged over windows of `size` channels, the
  padding counted, so that every window is divided by `size`. Composed from pyrt's
  differentiable ops (pad, avg_pool2d, pow, division), which give its gradient.
"""

import math

from pyrt.functional import _integer, _real_number, _tensor, reshape
from pyrt.spatial import avg_pool2d, pad

__all__ = ["channel_shuffle", "local_response_norm"]


def _tensor_argument(input, name):
    if not isinstance(input, _tensor()):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")


def channel_shuffle(input, groups):
    """input [N, C, *] (at least 3 dims) with its channels c = g * (C / groups) + i moved to
    i * groups + g: [N, groups, C / groups, *] transposed to [N, C / groups, groups, *]."""
    _tensor_argument(input, "channel_shuffle")
    if not _integer(groups):
        raise TypeError(f"channel_shuffle(): argument 'groups' (position 2) must be int, not "
                        f"{type(groups).__name__}")
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value "
                           f"of groups:{groups}")
    n, c = input.shape[:2]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    rest = math.prod(input.shape[2:])
    grid = reshape(input, (n, int(groups), c // groups, rest))
    return reshape(grid.permute((0, 2, 1, 3)), input.shape)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """input [N, C, *] (at least 3 dims) / (k + alpha * window mean of input^2) ** beta, the
    window `size` channels wide (see the module's doc). An integer input is taken as float32,
    as PyTorch's division promotes it."""
    _tensor_argument(input, "local_response_norm")
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} "
                         f"dimensions)")
    if not _integer(size):
        raise TypeError(f"local_response_norm(): size must be an int, not "
                        f"{type(size).__name__}")
    if size <= 0:
        raise RuntimeError(f"local_response_norm(): size must be greater than zero, but got "
                           f"{size}")
    alpha = _real_number(alpha, "local_response_norm(): alpha")
    beta = _real_number(beta, "local_response_norm(): beta")
    k = _real_number(k, "local_response_norm(): k")
    if input.numel() == 0:
        return input
    if input.dtype.kind != "f":
        input = input.float()
    n, c = input.shape[:2]
    # the squares as one image [N, 1, C, rest], the channels its rows: a window of `size` rows
    # and one column averages `size` neighbouring channels at each position
    squares = reshape(input * input, (n, 1, c, math.prod(input.shape[2:])))
    squares = pad(squares, (0, 0, size // 2, (size - 1) // 2))
    mean = reshape(avg_pool2d(squares, (int(size), 1), stride=1), input.shape)
    return input / (mean * alpha + k) ** beta
