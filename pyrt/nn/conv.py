"""Conv1d, Conv3d and the transposed ConvTranspose1d/2d/3d, as torch.nn's: weights
initialised as PyTorch does (kaiming_uniform_(a=sqrt(5)), the bias from U(-1/sqrt(fan_in),
1/sqrt(fan_in))), the settings kept as tuples, one per spatial dim.

Conv1d runs F.conv1d (pyrt.spatial_more: conv2d of images one row tall) and Conv3d F.conv3d
(pyrt.volumes: one conv2d over the slices each depth tap reads); their padding_mode pads with
F.pad first, as Conv2d's does. The transposed layers run pyrt.conv_transpose (and
pyrt.volumes for 3-d), with the weight [in_channels, out_channels / groups, *kernel_size];
their forward takes `output_size`, which picks the output_padding that gives that size.
"""


from pyrt.conv_transpose import conv_transpose1d, conv_transpose2d
from pyrt.nn import module_bases
from pyrt.nn.layers import _init_weight_and_bias, _pair, _positive_int, conv_parameters, conv_repr
from pyrt.spatial import PAD_MODES, conv_padding, pad, same_padding
from pyrt.spatial_more import conv1d
from pyrt.volumes import conv3d, conv_transpose3d, triple

__all__ = ["Conv1d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


def _single(value, name, minimum):
    """An int or a one-int sequence as a 1-tuple, each at least `minimum`."""
    if isinstance(value, (tuple, list)):
        if len(value) != 1:
            raise ValueError(f"{name} must be an int or a tuple of one int, got {value!r}")
        value = value[0]
    return (_pair(value, name, minimum)[0],)


class _ConvNd(module_bases._ConvNd):
    """What the convolutions share: channels, groups, the weight and bias and the repr."""
    _tensor_input = True
    _dims = 2  # spatial dims
    transposed = False

    def _setup(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
               bias, padding_mode, output_padding=0):
        tuple_of = {1: _single, 2: _pair, 3: triple}[self._dims]
        self.in_channels = _positive_int(in_channels, "in_channels")
        self.out_channels = _positive_int(out_channels, "out_channels")
        self.kernel_size = tuple_of(kernel_size, "kernel_size", 1)
        self.stride = tuple_of(stride, "stride", 1)
        self.dilation = tuple_of(dilation, "dilation", 1)
        if isinstance(padding, str) and not self.transposed:
            if self._dims == 3:
                same_padding_3d(padding, self.stride)
            else:
                lead = (1,) * (2 - self._dims)  # (a 1-d layer is conv2d's one row tall)
                conv_padding(padding, lead + self.kernel_size, lead + self.stride,
                             lead + self.dilation)  # checks it
            self.padding = padding
        else:
            self.padding = tuple_of(padding, "padding", 0)
        self.output_padding = tuple_of(output_padding, "output_padding", 0)
        if padding_mode not in ("zeros",) + PAD_MODES[1:]:
            raise ValueError(f"padding_mode must be one of 'zeros', 'reflect', 'replicate' or "
                             f"'circular', but got padding_mode={padding_mode!r}")
        if self.transposed and padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{type(self).__name__}")
        self.padding_mode = padding_mode
        self.groups = _positive_int(groups, "groups")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if self.transposed:
            shape = (in_channels, out_channels // groups)
        else:
            shape = (out_channels, in_channels // groups)
        conv_parameters(self, shape + self.kernel_size, out_channels, bias)

    def reset_parameters(self):
        _init_weight_and_bias(self.weight, self.bias)

    def _mode_padded(self, input):
        """input padded as padding_mode says, ahead of the convolution, and the padding left
        to the convolution itself (none then)."""
        padding = self.padding
        if self.padding_mode == "zeros":
            return input, padding
        if padding == "valid":
            return input, 0
        if padding == "same":
            before, after = same_padding(self.kernel_size, self.dilation)
        else:
            before = after = padding
        # F.pad's amounts: (before, after) of the last dim first
        amounts = tuple(v for b, a in zip(reversed(before), reversed(after)) for v in (b, a))
        return pad(input, amounts, mode=self.padding_mode), 0

    def extra_repr(self):
        return conv_repr(self, self._dims)


class _ForwardConvNd(_ConvNd):
    """A convolution run by `_function` (F.conv1d, F.conv3d) after padding_mode's padding."""
    _function = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros"):
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                    bias, padding_mode)

    def forward(self, input):
        params = self._parameters
        input, padding = self._mode_padded(input)
        return self._function(input, params["weight"], params["bias"], self.stride, padding,
                              self.dilation, self.groups)


class Conv1d(_ForwardConvNd):
    """1-d cross-correlation of x [n, in_channels, length] (or [in_channels, length]) with
    weight [out_channels, in_channels / groups, kernel_size], plus bias [out_channels];
    `padding` is an int, "valid" or "same", and `padding_mode` what the padding holds
    ("zeros", "reflect", "replicate" or "circular")."""
    _dims = 1
    _function = staticmethod(conv1d)


def same_padding_3d(padding, stride):
    """ValueError unless `padding` is "valid", or "same" without a stride, as torch's
    layers check them."""
    if padding not in ("valid", "same"):
        raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                         f"{{'valid', 'same'}}")
    if padding == "same" and any(s != 1 for s in stride):
        raise ValueError("padding='same' is not supported for strided convolutions")


class Conv3d(_ForwardConvNd):
    """3-d cross-correlation of x [n, in_channels, d, h, w] (or [in_channels, d, h, w]) with
    weight [out_channels, in_channels / groups, kd, kh, kw], plus bias [out_channels]
    (pyrt.volumes: one conv2d over the depth taps' slices); `padding` is an int, a triple,
    "valid" or "same", and `padding_mode` what the padding holds."""
    _dims = 3
    _function = staticmethod(conv3d)


class _ConvTransposeNd(_ConvNd):
    transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros"):
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                    bias, padding_mode, output_padding)

    def _output_padding(self, input, output_size):
        """The output_padding that makes the output `output_size` (its spatial sizes, or the
        input's leading sizes too), as PyTorch's layers pick it."""
        if output_size is None:
            return self.output_padding
        dims = self._dims
        leading = 2 if input.ndim == dims + 2 else 1
        output_size = list(output_size)
        if len(output_size) == leading + dims:
            output_size = output_size[leading:]
        if len(output_size) != dims:
            raise ValueError(f"ConvTranspose{dims}D: for {input.ndim}D input, output_size must "
                             f"have {dims} or {leading + dims} elements (got "
                             f"{len(output_size)})")
        smallest = [(input.shape[d + leading] - 1) * self.stride[d] - 2 * self.padding[d]
                    + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(dims)]
        largest = [s + step - 1 for s, step in zip(smallest, self.stride)]
        for size, lo, hi in zip(output_size, smallest, largest):
            if not lo <= size <= hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {smallest} to {largest} (for an input of "
                                 f"{list(input.shape[leading:])})")
        return tuple(size - lo for size, lo in zip(output_size, smallest))

    def forward(self, input, output_size=None):
        params = self._parameters
        return self._function(input, params["weight"], params["bias"], self.stride,
                              self.padding, self._output_padding(input, output_size),
                              self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-d convolution of x [n, in_channels, length] (or [in_channels, length])
    with weight [in_channels, out_channels / groups, kernel_size], plus bias
    [out_channels]: the gradient of Conv1d with respect to its input."""
    _dims = 1
    _function = staticmethod(conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-d convolution of x [n, in_channels, h, w] (or [in_channels, h, w]) with
    weight [in_channels, out_channels / groups, kh, kw], plus bias [out_channels]: the
    gradient of Conv2d with respect to its input."""
    _function = staticmethod(conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-d convolution of x [n, in_channels, d, h, w] (or [in_channels, d, h, w])
    with weight [in_channels, out_channels / groups, kd, kh, kw], plus bias [out_channels]:
    the gradient of Conv3d with respect to its input (pyrt.volumes)."""
    _dims = 3
    _function = staticmethod(conv_transpose3d)
