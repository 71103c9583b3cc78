"""MaxPool3d, AvgPool3d, AdaptiveAvgPool3d and AdaptiveMaxPool3d, as torch.nn's: the pools of
pyrt.volumes over inputs [n, c, d, h, w] or [c, d, h, w], their settings kept as given."""

from pyrt.nn.module import Module
from pyrt.nn.module_bases import (
    _AdaptiveAvgPoolNd,
    _AdaptiveMaxPoolNd,
    _AvgPoolNd,
    _MaxPoolNd,
)
from pyrt.volumes import (
    adaptive_avg_pool3d,
    adaptive_max_pool3d,
    avg_pool3d,
    max_pool3d,
    triple,
)

__all__ = ["AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "AvgPool3d", "MaxPool3d"]


def _flag(value, name):
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {value!r}")
    return value


class _Pool3d(Module):
    def __init__(self, kernel_size, stride, padding, ceil_mode, name):
        super().__init__()
        # bad sizes fail here rather than at the first call
        triple(kernel_size, "kernel_size", 1, name)
        if stride is not None:
            triple(stride, "stride", 1, name)
        triple(padding, "padding", 0, name)
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = _flag(ceil_mode, "ceil_mode")

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool3d(_Pool3d, _MaxPoolNd):
    """The maximum of each kernel_size window, its taps `dilation` apart; stride defaults to
    kernel_size; with return_indices the layer returns (maxima, indices), the flat index of
    each maximum within its d * h * w volume."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__(kernel_size, stride, padding, ceil_mode, "max_pool3d")
        triple(dilation, "dilation", 1, "max_pool3d")
        self.dilation = dilation
        self.return_indices = _flag(return_indices, "return_indices")

    def forward(self, input):
        return max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                          self.ceil_mode, self.return_indices)

    def extra_repr(self):
        return super().extra_repr() + f", dilation={self.dilation}, ceil_mode={self.ceil_mode}"


class AvgPool3d(_Pool3d, _AvgPoolNd):
    """The mean of each kernel_size window, the zero padding counted in it unless
    count_include_pad=False, or the window's sum over divisor_override when given."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__(kernel_size, stride, padding, ceil_mode, "avg_pool3d")
        self.count_include_pad = _flag(count_include_pad, "count_include_pad")
        self.divisor_override = divisor_override

    def forward(self, input):
        return avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                          self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """The mean over each of output_size bins: an int, or a triple of which None keeps that
    dim's size. AdaptiveAvgPool3d(1) is global average pooling."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return adaptive_avg_pool3d(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """The maximum over each of output_size bins; with return_indices the layer returns
    (maxima, indices), the flat index of each maximum within its d * h * w volume."""

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = _flag(return_indices, "return_indices")

    def forward(self, input):
        return adaptive_max_pool3d(input, self.output_size, self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"
