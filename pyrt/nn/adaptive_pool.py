"""AdaptiveAvgPool1d/2d and AdaptiveMaxPool1d/2d: pooling to a fixed output size whatever the
input's (pyrt.adaptive_pool), as in torch.nn."""

from pyrt.adaptive_pool import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    output_size_pair,
)
from pyrt.nn.module import Module
from pyrt.nn.module_bases import _AdaptiveAvgPoolNd, _AdaptiveMaxPoolNd

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d"]


def _flag(return_indices):
    if not isinstance(return_indices, bool):
        raise TypeError(f"return_indices must be a bool, got {return_indices!r}")
    return return_indices


class _AdaptivePool2d(Module):
    _function_name = None

    def __init__(self, output_size):
        super().__init__()
        output_size_pair(output_size, self._function_name)  # a bad size fails here, not later
        self.output_size = output_size

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(_AdaptivePool2d, _AdaptiveAvgPoolNd):
    """The mean over each of output_size bins of x [n, c, h, w] or [c, h, w]: an int, or a
    pair of which None keeps that dim's size. AdaptiveAvgPool2d(1) is global average
    pooling."""
    _function_name = "adaptive_avg_pool2d"

    def forward(self, input):
        return adaptive_avg_pool2d(input, self.output_size)


class AdaptiveMaxPool2d(_AdaptivePool2d, _AdaptiveMaxPoolNd):
    """The maximum over each of output_size bins of x [n, c, h, w] or [c, h, w]; with
    return_indices the layer returns (maxima, indices), the flat index of each maximum within
    its h * w plane."""
    _function_name = "adaptive_max_pool2d"

    def __init__(self, output_size, return_indices=False):
        super().__init__(output_size)
        self.return_indices = _flag(return_indices)

    def forward(self, input):
        return adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """The mean over each of output_size bins of x [n, c, l] or [c, l]."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return adaptive_avg_pool1d(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """The maximum over each of output_size bins of x [n, c, l] or [c, l]; with
    return_indices the layer returns (maxima, indices along l)."""

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = _flag(return_indices)

    def forward(self, input):
        return adaptive_max_pool1d(input, self.output_size, self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"
