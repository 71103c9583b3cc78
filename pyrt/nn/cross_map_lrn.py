"""CrossMapLRN2d: the local response normalisation of Lua Torch's SpatialCrossMapLRN, as
PyTorch's layer of that name computes it.

Each element of a [N, C, H, W] input is multiplied by (k + alpha / size * S) ** -beta, where S
sums the squares over a window of channels centred on its own: it reaches pre_pad - 1 =
(size - 1) // 2 channels to each side, channels past either end counting as zero, so it is
`size` channels wide for an odd size and one less for an even one, while S is always divided
by `size`. Up to here this is LocalResponseNorm's computation (a window mean times alpha) with
that window and alpha scaled by window / size.

PyTorch's port of the Lua loop, which slides the window one channel at a time, starts taking
squares out of it one step late (``c > pre_pad`` where the 0-based loop needs ``c >=
pre_pad``): the square of channel 0 is never taken out, so for every channel c >= pre_pad, S
also holds channel 0's square. This layer computes that same S, so that its outputs equal
PyTorch's; its gradient is the exact gradient of those outputs (PyTorch's hand-written
backward assumes the window without channel 0 and so differs from it where c >= pre_pad).
"""

import math

import numpy as np

from pyrt.functional import _integer, _real_number, _tensor, _xp, reshape
from pyrt.nn.module import Module
from pyrt.spatial import avg_pool2d, pad

__all__ = ["CrossMapLRN2d"]


class CrossMapLRN2d(Module):
    """Cross-channel response normalisation of [N, C, H, W] inputs (see the module's doc)."""
    _tensor_input = True

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        if not _integer(size) or size <= 0:
            raise ValueError(f"CrossMapLRN2d: size must be a positive int, got {size!r}")
        for value, name in ((alpha, "alpha"), (beta, "beta"), (k, "k")):
            _real_number(value, f"CrossMapLRN2d: {name}")
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        if not isinstance(input, _tensor()):
            raise TypeError(f"CrossMapLRN2d: input must be a pyrt Tensor, got "
                            f"{type(input).__name__}")
        if input.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D "
                             f"instead.")
        if input.dtype != np.float32:
            raise TypeError(f"CrossMapLRN2d: expected a float32 input, got {input.dtype}")
        if input.numel() == 0:
            return input * 1.0
        n, c = input.shape[:2]
        reach = (self.size - 1) // 2  # pre_pad - 1 channels on each side
        window = 2 * reach + 1
        squares = input * input
        # the channels as the rows of one image [N, 1, C, H * W]: a window of rows sums them
        rows = pad(reshape(squares, (n, 1, c, math.prod(input.shape[2:]))),
                   (0, 0, reach, reach))
        total = reshape(avg_pool2d(rows, (window, 1), stride=1), input.shape) * float(window)
        # channel 0's square, left in the sums of channels c >= pre_pad (see the module's doc)
        xp = _xp(input._data)
        late = _tensor()((xp.arange(c) >= reach + 1).astype(np.float32).reshape(1, c, 1, 1))
        total = total + squares[:, :1] * late
        return input * (total * (self.alpha / self.size) + self.k) ** (-self.beta)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
