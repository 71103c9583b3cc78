"""FractionalMaxPool2d and FractionalMaxPool3d: the layers of pyrt.fractional_pool's ops."""

from pyrt.fractional_pool import fractional_max_pool2d, fractional_max_pool3d
from pyrt.nn.module import Module

__all__ = ["FractionalMaxPool2d", "FractionalMaxPool3d"]


def _tuple(value, dims):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * dims


class _FractionalMaxPool(Module):
    _dims = 2
    _tensor_input = True

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        name = type(self).__name__
        dims = self._dims
        kernels = _tuple(kernel_size, dims)
        if dims == 3 and not all(isinstance(k, int) and k > 0 for k in kernels):
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = kernels
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _tuple(output_size, dims) if output_size is not None else None
        self.output_ratio = _tuple(output_ratio, dims) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             f"ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")


class FractionalMaxPool2d(_FractionalMaxPool):
    """2d fractional max pooling of [N, C, H, W] or [C, H, W] inputs (F.fractional_max_pool2d);
    `_random_samples` [N, C, 2], registered as a buffer, fixes the windows."""
    _dims = 2

    def forward(self, input):
        return fractional_max_pool2d(input, self.kernel_size, self.output_size,
                                     self.output_ratio, self.return_indices,
                                     _random_samples=self._random_samples)


class FractionalMaxPool3d(_FractionalMaxPool):
    """3d fractional max pooling of [N, C, T, H, W] or [C, T, H, W] inputs
    (F.fractional_max_pool3d); `_random_samples` [N, C, 3] fixes the windows."""
    _dims = 3

    def forward(self, input):
        return fractional_max_pool3d(input, self.kernel_size, self.output_size,
                                     self.output_ratio, self.return_indices,
                                     _random_samples=self._random_samples)
