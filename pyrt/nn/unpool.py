"""MaxUnpool1d/2d/3d, max pooling's partial inverse, and LPPool1d/2d/3d, power-average
pooling (pyrt.unpool), as in torch.nn."""

from pyrt.nn.module import Module
from pyrt.ops.conv import _pair
from pyrt.spatial_more import single
from pyrt.unpool import (
    _norm_type,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)
from pyrt.volumes import triple

__all__ = ["LPPool1d", "LPPool2d", "LPPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]


class _MaxUnpoolNd(Module):
    _tensor_input = True

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Max pooling undone: forward(input, indices, output_size=None) writes input [n, c, l]
    (or [c, l]) to positions `indices` of a zero [n, c, out_l], the indices a MaxPool1d of
    the same settings returned. Settings are kept as 1-tuples; stride defaults to
    kernel_size."""

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = (single(kernel_size, "kernel_size", 1),)
        self.stride = (self.kernel_size if stride is None
                       else (single(stride, "stride", 1),))
        self.padding = (single(padding, "padding", 0),)

    def forward(self, input, indices, output_size=None):
        return max_unpool1d(input, indices, self.kernel_size, self.stride, self.padding,
                            output_size)


class MaxUnpool2d(_MaxUnpoolNd):
    """Max pooling undone: forward(input, indices, output_size=None) writes input
    [n, c, h, w] (or [c, h, w]) to positions `indices` of a zero [n, c, out_h, out_w], the
    indices a MaxPool2d of the same settings returned. Settings are kept as pairs; stride
    defaults to kernel_size."""

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = _pair(kernel_size, "kernel_size", 1)
        self.stride = self.kernel_size if stride is None else _pair(stride, "stride", 1)
        self.padding = _pair(padding, "padding", 0)

    def forward(self, input, indices, output_size=None):
        return max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding,
                            output_size)


class MaxUnpool3d(_MaxUnpoolNd):
    """Max pooling undone: forward(input, indices, output_size=None) writes input
    [n, c, d, h, w] (or [c, d, h, w]) to positions `indices` of a zero output, the indices a
    MaxPool3d of the same settings returned. Settings are kept as triples; stride defaults to
    kernel_size."""

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = triple(kernel_size, "kernel_size", 1, "MaxUnpool3d")
        self.stride = (self.kernel_size if stride is None
                       else triple(stride, "stride", 1, "MaxUnpool3d"))
        self.padding = triple(padding, "padding", 0, "MaxUnpool3d")

    def forward(self, input, indices, output_size=None):
        return max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding,
                            output_size)


class _LPPoolNd(Module):
    _tensor_input = True
    _function_name = None

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        _norm_type(norm_type, self._function_name)  # a bad setting fails here, not later
        self._check_window(kernel_size, stride)
        if not isinstance(ceil_mode, bool):
            raise TypeError(f"ceil_mode must be a bool, got {ceil_mode!r}")
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """The p-norm, (sum of x ** p) ** (1 / p) with p = norm_type, of each kernel_size window
    of x [n, c, l] (or [c, l]); stride None means kernel_size. p = inf is max pooling of
    |x|."""
    _function_name = "lp_pool1d"

    @staticmethod
    def _check_window(kernel_size, stride):
        single(kernel_size, "kernel_size", 1)
        if stride is not None:
            single(stride, "stride", 1)

    def forward(self, input):
        return lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride,
                         self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """The p-norm, (sum of x ** p) ** (1 / p) with p = norm_type, of each kernel_size window
    of x [n, c, h, w] (or [c, h, w]); stride None means kernel_size. p = inf is max pooling
    of |x|."""
    _function_name = "lp_pool2d"

    @staticmethod
    def _check_window(kernel_size, stride):
        _pair(kernel_size, "kernel_size", 1)
        if stride is not None:
            _pair(stride, "stride", 1)

    def forward(self, input):
        return lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride,
                         self.ceil_mode)


class LPPool3d(_LPPoolNd):
    """The p-norm, (sum of x ** p) ** (1 / p) with p = norm_type, of each kernel_size window
    of x [n, c, d, h, w] (or [c, d, h, w]); stride None means kernel_size. p = inf is max
    pooling of |x|."""
    _function_name = "lp_pool3d"

    @staticmethod
    def _check_window(kernel_size, stride):
        triple(kernel_size, "kernel_size", 1, "lp_pool3d")
        if stride is not None:
            triple(stride, "stride", 1, "lp_pool3d")

    def forward(self, input):
        return lp_pool3d(input, float(self.norm_type), self.kernel_size, self.stride,
                         self.ceil_mode)
