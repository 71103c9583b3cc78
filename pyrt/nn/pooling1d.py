"""MaxPool1d and AvgPool1d (the 2-d pools over images one row tall), and Fold and Unfold
(col2im and im2col), as torch.nn's (pyrt.spatial_more)."""

from pyrt.nn.module import Module
from pyrt.nn.module_bases import _AvgPoolNd, _MaxPoolNd
from pyrt.spatial_more import _pool_window, avg_pool1d, fold, max_pool1d, single, unfold

__all__ = ["AvgPool1d", "Fold", "MaxPool1d", "Unfold"]


class MaxPool1d(_MaxPoolNd):
    """Maximum over kernel_size windows of x [n, c, length] (or [c, length]), their taps
    `dilation` apart; stride defaults to kernel_size. With return_indices the layer returns
    (maxima, indices along the length)."""
    _tensor_input = True

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        _pool_window(kernel_size, stride, padding)  # a bad setting fails here, not later
        single(dilation, "dilation", 1)
        for value, name in ((return_indices, "return_indices"), (ceil_mode, "ceil_mode")):
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be a bool, got {value!r}")
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input):
        return max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                          self.ceil_mode, self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool1d(_AvgPoolNd):
    """Mean over kernel_size windows of x [n, c, length] (or [c, length]), zero padding
    counted in the mean unless count_include_pad=False; settings kept as 1-tuples."""
    _tensor_input = True

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__()
        kernel, step, pad = _pool_window(kernel_size, stride, padding)
        for value, name in ((ceil_mode, "ceil_mode"), (count_include_pad, "count_include_pad")):
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be a bool, got {value!r}")
        self.kernel_size, self.stride, self.padding = kernel[1:], step[1:], pad[1:]
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                          self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class Fold(Module):
    """Columns [n, c * kh * kw, blocks] summed into images [n, c, *output_size] (F.fold)."""
    _tensor_input = True

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                    self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """The sliding blocks of images [n, c, h, w] as columns [n, c * kh * kw, blocks]
    (F.unfold)."""
    _tensor_input = True

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
