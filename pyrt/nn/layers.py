"""Layers: Linear, Conv2d, pooling, Flatten and Unflatten, activations, Dropout, Identity and
the containers Sequential, ModuleList and ModuleDict, as in torch.nn.

Weights are initialised as PyTorch does (``reset_parameters``), from pyrt's seeded generator.
"""

import math
import numbers
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Mapping

import numpy as np

from pyrt import functional as F
from pyrt.activations import inplace_flag
from pyrt.feature_dropout import dropout1d, dropout2d, dropout3d
from pyrt.nn import init
from pyrt.nn.linear_chain import LinearChain
from pyrt.nn.module import FORWARD_PATCHES, Module
from pyrt.nn.module_bases import _AvgPoolNd, _ConvNd, _DropoutNd, _MaxPoolNd
from pyrt.nn.parameter import Parameter
from pyrt.shapes import dim_index
from pyrt.spatial import PAD_MODES, conv_padding, max_pool2d_relu, same_padding
from pyrt.tensor import Tensor

__all__ = ["AvgPool2d", "Conv2d", "Dropout", "Flatten", "Identity", "Linear", "LogSoftmax",
           "MaxPool2d", "ModuleDict", "ModuleList", "ReLU", "Sequential", "Sigmoid", "Softmax",
           "Tanh", "Unflatten"]


def _positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _pair(value, name, minimum):
    """An int or a pair of ints, each at least `minimum`, as a tuple (a, b)."""
    pair = (value, value) if isinstance(value, numbers.Integral) else value
    try:
        a, b = pair
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an int or a pair of ints, got {value!r}") from None
    for v in (a, b):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < minimum:
            raise ValueError(f"{name} must be integers >= {minimum}, got {value!r}")
    return int(a), int(b)


def _init_weight_and_bias(weight, bias):
    """PyTorch's default for Linear and Conv: kaiming_uniform_(a=sqrt(5)), which is
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)), for the weight and the same bound for the bias."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in = init._calculate_fan_in_and_fan_out(weight)[0]
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)


def conv_parameters(module, weight_shape, out_channels, bias):
    """A convolution's weight (`weight_shape`) and bias [out_channels] (None without `bias`),
    then drawn by the module's reset_parameters, as PyTorch's constructor does (a subclass
    may override it)."""
    module.weight = Parameter(np.empty(weight_shape, np.float32))
    if bias:
        module.bias = Parameter(np.empty((out_channels,), np.float32))
    else:
        module.register_parameter("bias", None)
    module.reset_parameters()


# ---- weighted layers ---------------------------------------------------------------------


class Linear(Module):
    """y = x @ weight.T + bias, with weight [out_features, in_features] and bias
    [out_features]; x is [*, in_features]."""
    _tensor_input = True

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.in_features = _positive_int(in_features, "in_features")
        self.out_features = _positive_int(out_features, "out_features")
        self.weight = Parameter(np.empty((out_features, in_features), np.float32))
        if bias:
            self.bias = Parameter(np.empty((out_features,), np.float32))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        _init_weight_and_bias(self.weight, self.bias)

    def forward(self, x, act=None):
        """`act` ("relu", "sigmoid" or "tanh") fuses an activation into the bias pass."""
        params = self._parameters  # read directly: attribute access through __getattr__ is slow
        if x.ndim == 0:
            raise ValueError(f"{type(self).__name__}: input must have at least 1 dimension "
                             f"[*, {self.in_features}], got a 0-d tensor")
        # (F.linear takes the leading dimensions as one batch dimension)
        return F.linear(x, params["weight"], params["bias"], act)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Conv2d(_ConvNd):
    """2-D cross-correlation of x [n, in_channels, h, w] with weight [out_channels,
    in_channels / groups, kh, kw], plus bias [out_channels]; with groups > 1 each group of
    in_channels / groups channels has out_channels / groups filters of its own. `dilation`
    spaces the kernel's taps; `padding` is an int, a pair, "valid" or "same", and
    `padding_mode` what the padding holds: "zeros", or the input "reflect"ed, "replicate"d or
    wrapped around ("circular"), as F.pad makes it."""
    _tensor_input = True
    # (class defaults: modules pickled before these options existed load)
    groups = 1
    dilation = (1, 1)
    padding_mode = "zeros"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros"):
        super().__init__()
        self.in_channels = _positive_int(in_channels, "in_channels")
        self.out_channels = _positive_int(out_channels, "out_channels")
        self.kernel_size = _pair(kernel_size, "kernel_size", 1)
        self.stride = _pair(stride, "stride", 1)
        self.dilation = _pair(dilation, "dilation", 1)
        if isinstance(padding, str):
            conv_padding(padding, self.kernel_size, self.stride, self.dilation)  # checks it
            self.padding = padding
        else:
            self.padding = _pair(padding, "padding", 0)
        if padding_mode not in ("zeros",) + PAD_MODES[1:]:
            raise ValueError(f"padding_mode must be one of 'zeros', 'reflect', 'replicate' or "
                             f"'circular', but got padding_mode={padding_mode!r}")
        self.padding_mode = padding_mode
        self.groups = _positive_int(groups, "groups")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        conv_parameters(self, (out_channels, in_channels // groups) + self.kernel_size,
                        out_channels, bias)

    def reset_parameters(self):
        _init_weight_and_bias(self.weight, self.bias)

    def _mode_padding(self):
        """F.pad's amounts for padding_mode: (left, right, top, bottom)."""
        if self.padding == "same":
            (top, left), (bottom, right) = same_padding(self.kernel_size, self.dilation)
        elif self.padding == "valid":
            top = left = bottom = right = 0
        else:
            (top, left), (bottom, right) = self.padding, self.padding
        return (left, right, top, bottom)

    def forward(self, x):
        params = self._parameters
        padding = self.padding
        if self.padding_mode != "zeros":
            x, padding = F.pad(x, self._mode_padding(), mode=self.padding_mode), 0
        return F.conv2d(x, params["weight"], params["bias"], stride=self.stride,
                        padding=padding, dilation=self.dilation, groups=self.groups)

    def extra_repr(self):
        return conv_repr(self, 2)


def conv_repr(conv, dims):
    """A convolution's extra_repr as torch's: what differs from the defaults, in its order."""
    zeros, ones = (0,) * dims, (1,) * dims
    s = (f"{conv.in_channels}, {conv.out_channels}, kernel_size={conv.kernel_size}, "
         f"stride={conv.stride}")
    if conv.padding != zeros:
        s += f", padding={conv.padding}"
    if conv.dilation != ones:
        s += f", dilation={conv.dilation}"
    if getattr(conv, "output_padding", zeros) != zeros:
        s += f", output_padding={conv.output_padding}"
    if conv.groups != 1:
        s += f", groups={conv.groups}"
    if conv.bias is None:
        s += ", bias=False"
    if conv.padding_mode != "zeros":
        s += f", padding_mode={conv.padding_mode}"
    return s


# ---- pooling and reshaping ---------------------------------------------------------------


class _Pool2d(Module):
    _tensor_input = True
    ceil_mode = False  # (class defaults: modules pickled before these options load)
    count_include_pad = True

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False):
        super().__init__()
        _pair(kernel_size, "kernel_size", 1)
        if stride is not None:
            _pair(stride, "stride", 1)
        _pair(padding, "padding", 0)
        if not isinstance(ceil_mode, bool):
            raise TypeError(f"ceil_mode must be a bool, got {ceil_mode!r}")
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


def _only(value, default, name):
    """Refuse a PyTorch pooling option other than its default, which pyrt does not
    implement."""
    if value != default:
        raise ValueError(f"{name}={value!r} is not supported (only {name}={default!r})")


class MaxPool2d(_Pool2d, _MaxPoolNd):
    """Maximum over kernel_size windows of x [n, c, h, w], their taps `dilation` apart; stride
    defaults to kernel_size. With ceil_mode the output size is rounded up (a last window may
    hang past the input); with return_indices the layer returns (maxima, indices), the flat
    index of each maximum within its h * w plane."""
    dilation = 1  # (class defaults: modules pickled before these options load)
    return_indices = False

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        _pair(dilation, "dilation", 1)
        if not isinstance(return_indices, bool):
            raise TypeError(f"return_indices must be a bool, got {return_indices!r}")
        super().__init__(kernel_size, stride, padding, ceil_mode)
        self.dilation = dilation
        self.return_indices = return_indices

    def extra_repr(self):
        return super().extra_repr() + f", dilation={self.dilation}, ceil_mode={self.ceil_mode}"

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool2d(_Pool2d, _AvgPoolNd):
    """Mean over kernel_size windows of x [n, c, h, w], zero padding counted in the mean
    unless count_include_pad=False; ceil_mode as MaxPool2d's."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        _only(divisor_override, None, "divisor_override")
        if not isinstance(count_include_pad, bool):
            raise TypeError(f"count_include_pad must be a bool, got {count_include_pad!r}")
        super().__init__(kernel_size, stride, padding, ceil_mode)
        self.count_include_pad = count_include_pad

    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class Flatten(Module):
    """Merge dimensions start_dim..end_dim into one: [n, c, h, w] -> [n, c*h*w] by default."""
    _tensor_input = True

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, x):
        start, end = dim_index(self.start_dim, x.ndim), dim_index(self.end_dim, x.ndim)
        if start > end:
            raise ValueError(f"flatten: start_dim {self.start_dim} comes after end_dim "
                             f"{self.end_dim} for a {x.ndim}-D input")
        # the merged size as a product: -1 cannot be inferred when another size is 0
        shape = x.shape[:start] + (math.prod(x.shape[start:end + 1]),) + x.shape[end + 1:]
        return F.reshape(x, shape)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


def _unflatten_sizes(sizes):
    """Unflatten's `unflattened_size`: a non-empty tuple or list of ints >= 0, one of which may
    be -1 (the size that fits); TypeError or ValueError naming what is wrong."""
    if not isinstance(sizes, (tuple, list)):
        raise TypeError(f"unflattened_size must be a tuple of ints, but found type "
                        f"{type(sizes).__name__}")
    for i, n in enumerate(sizes):
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise TypeError(f"unflattened_size must be tuple of ints, but found element of type "
                            f"{type(n).__name__} at pos {i}")
        if n < -1:
            raise ValueError(f"unflattened_size must hold sizes >= 0 or -1, got {n} at pos {i}")
    if not sizes:
        raise ValueError("unflattened_size must be non-empty")
    if list(sizes).count(-1) > 1:
        raise ValueError(f"unflattened_size may hold one -1 (the size that fits), got {sizes}")
    return sizes


class Unflatten(Module):
    """Split dimension `dim` into `unflattened_size` (one size may be -1: the one that fits):
    [n, 12] -> [n, 3, 4] with Unflatten(1, (3, 4)), the inverse of Flatten."""
    _tensor_input = True

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
            raise TypeError(f"dim must be an int, got {type(dim).__name__}")
        self.dim = dim
        self.unflattened_size = _unflatten_sizes(unflattened_size)

    def forward(self, input):
        if input.ndim == 0:
            raise RuntimeError(f"Dimension specified as {self.dim} but tensor has no dimensions")
        at = dim_index(self.dim, input.ndim)
        size, sizes = input.shape[at], tuple(self.unflattened_size)
        known = math.prod(n for n in sizes if n != -1)
        if -1 in sizes:
            if known == 0:
                raise RuntimeError(f"unflatten: the size -1 in {list(sizes)} is ambiguous: the "
                                   "other sizes multiply up to 0")
            if size % known == 0:
                sizes = tuple(size // known if n == -1 else n for n in sizes)
        if math.prod(sizes) != size:
            raise RuntimeError(f"unflatten: Provided sizes {list(self.unflattened_size)} don't "
                               f"multiply up to the size of dim {at} ({size}) in the input "
                               "tensor")
        return F.reshape(input, input.shape[:at] + sizes + input.shape[at + 1:])

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


# ---- activations -------------------------------------------------------------------------


class ReLU(Module):
    _tensor_input = True

    def __init__(self, inplace=False):
        super().__init__()
        # (with inplace=True the result goes into the input where that is allowed:
        # functional._inplace)
        self.inplace = inplace_flag(inplace)

    def forward(self, x):
        return F.relu(x, True) if self.inplace else F.relu(x)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Sigmoid(Module):
    _tensor_input = True

    def forward(self, x):
        return F.sigmoid(x)


class Tanh(Module):
    _tensor_input = True

    def forward(self, x):
        return F.tanh(x)


def _softmax_dim(dim, ndim):
    """nn.Softmax's dim; None picks PyTorch's legacy choice (0 for 0-, 1- and 3-D input, else
    1), with its warning."""
    if dim is not None:
        return dim
    warnings.warn("Implicit dimension choice for softmax has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


class Softmax(Module):
    _tensor_input = True

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmax(x, _softmax_dim(self.dim, x.ndim))

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    def forward(self, x):
        return F.log_softmax(x, _softmax_dim(self.dim, x.ndim))


# ---- other layers ------------------------------------------------------------------------


class Dropout(_DropoutNd):
    """In training mode, zeroes each element with probability p and scales the others by
    1 / (1 - p) (F.dropout); in evaluation mode (``eval()``), passes its input through."""
    _tensor_input = True

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        F.dropout_probability(p)
        self.inplace = inplace_flag(inplace)
        self.p = p

    def forward(self, x):
        return F.dropout(x, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(Dropout):
    """In training mode, zeroes whole channels of [N, C, L] (or [C, L]) with probability p
    and scales the others by 1 / (1 - p) (F.dropout1d)."""

    def forward(self, x):
        return dropout1d(x, self.p, self.training, self.inplace)


class Dropout2d(Dropout):
    """Whole channels of [N, C, H, W] (F.dropout2d)."""

    def forward(self, x):
        return dropout2d(x, self.p, self.training, self.inplace)


class Dropout3d(Dropout):
    """Whole channels of [N, C, D, H, W] (or [C, D, H, W]) (F.dropout3d)."""

    def forward(self, x):
        return dropout3d(x, self.p, self.training, self.inplace)


class Identity(Module):
    """Returns its input; any constructor arguments are ignored, as in PyTorch."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


# the activation a Linear can fuse into its bias pass (F.linear's `act`)
_FUSABLE = {ReLU: "relu", Sigmoid: "sigmoid", Tanh: "tanh"}
_CHAIN = object()  # the act of a Sequential step that is a LinearChain
# the act of a Sequential step that is a ReLU and the MaxPool2d after it, run as one pooling
# that applies the ReLU to its maxima
_POOL_RELU = object()


def _pool_then_relu(relu, pool, y):
    """ReLU then max pooling, computed as max pooling then ReLU, in one pass over the input
    (max_pool2d_relu): the same values and the same gradients, bitwise. ReLU is monotone, so
    the maximum of a window's ReLUs is the ReLU of its maximum; where that maximum is positive
    both orders pick the same first pixel, and where it is not both give 0 and pass a gradient
    of 0 (ReLU's at x <= 0) to every pixel of the window; a NaN wins both ways and passes its
    gradient both ways. Kept to windows that always hold a pixel (dilation 1: a window of
    padding alone has -inf, which ReLU would turn into 0) and to pools that do not return
    their indices (in a window of zeros and negatives ReLU first picks the first pixel, the
    pool alone the largest). CPU arrays only: the CUDA kernels are not checked against this."""
    if (type(y._data) is np.ndarray and not pool.return_indices
            and pool.dilation in (1, (1, 1))):
        return max_pool2d_relu(y, pool.kernel_size, pool.stride, pool.padding, pool.ceil_mode)
    return pool(relu(y))


# ---- containers --------------------------------------------------------------------------


class _Indexed(Module):
    """What Sequential and ModuleList share: their children, named "0", "1", ..., as a list
    (len, iteration, indexing from either end, assignment, deletion, append)."""

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def _key(self, index):
        n = len(self._modules)
        kind = type(self).__name__
        if isinstance(index, bool) or not isinstance(index, numbers.Integral):
            raise TypeError(f"{kind} indices must be integers or slices, got "
                            f"{type(index).__name__}")
        if not -n <= index < n:
            raise IndexError(f"index {index} is out of range for a {kind} of length {n}")
        return list(self._modules)[index % n]

    def __setitem__(self, index, module):
        if isinstance(index, slice):
            raise TypeError(f"{type(self).__name__} item assignment takes an integer index, "
                            "not a slice")
        self.add_module(self._key(index), module)

    def __delitem__(self, index):
        keys = list(self._modules)
        for key in (keys[index] if isinstance(index, slice) else [self._key(index)]):
            del self._modules[key]
        self._renumber(list(self._modules.values()))

    def _renumber(self, modules):
        """Name `modules` "0", "1", ... in order, as PyTorch keeps them after a change."""
        self._modules.clear()
        for i, module in enumerate(modules):
            self.add_module(str(i), module)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        if isinstance(modules, str) or not hasattr(modules, "__iter__"):
            raise TypeError(f"{type(self).__name__}.extend should be called with an iterable "
                            f"of modules, got {type(modules).__name__}")
        for module in list(modules):
            self.append(module)
        return self

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        """A new container of this one's modules, then `other`'s (the same objects)."""
        if not isinstance(other, type(self)):
            return NotImplemented
        return type(self)().extend([*self, *other])

    def insert(self, index, module):
        """Insert `module` before position `index` (as list.insert)."""
        if isinstance(index, bool) or not isinstance(index, numbers.Integral):
            raise TypeError(f"{type(self).__name__} indices must be integers, got "
                            f"{type(index).__name__}")
        if not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._renumber(modules)
        return self

    def pop(self, index=-1):
        """Remove the module at `index` (the last by default) and return it."""
        module = self._modules[self._key(index)]
        del self[index]
        return module


class Sequential(_Indexed):
    """Modules applied one after another, named "0", "1", ... (or by an OrderedDict)."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(modules):
                self.add_module(str(i), module)

    def __getstate__(self):
        # the plan holds C tables (cffi objects, which neither copy nor pickle): a copy makes
        # its own on its first call
        state = self.__dict__.copy()
        state.pop("_plan", None)
        return state

    def forward(self, x):
        modules = tuple(self._modules.values())
        plan = self.__dict__.get("_plan")
        # first call, or the modules changed, or a module's forward was replaced
        if plan is None or plan[0] != modules or plan[2] != FORWARD_PATCHES[0]:
            plan = self.__dict__["_plan"] = (modules, self._fuse(modules), FORWARD_PATCHES[0])
        y = x
        try:  # (a try costs nothing until something raises)
            for module, act in plan[1]:
                if act is False:
                    y = module(y)
                elif act is _POOL_RELU:
                    y = _pool_then_relu(*module, y)
                elif act is _CHAIN:
                    z = module(y)  # a LinearChain; None: its layers must run one by one
                    if z is None:
                        for layer, layer_act in module.steps:
                            z = layer.forward(y if z is None else z, act=layer_act)
                    y = z
                elif y._data.ndim == 2:  # an exact Linear on rows: straight to F.linear
                    params = module._parameters
                    y = F.linear(y, params["weight"], params["bias"], act)
                else:
                    y = module.forward(y, act=act)
        except AttributeError:
            # a fused first step read ._data: say what was wrong with the input, if it was
            # (a module simply called keeps its own errors)
            if not isinstance(x, Tensor) and plan[1][0][1] is not False:
                raise TypeError(f"Sequential: input must be a pyrt Tensor, got "
                                f"{type(x).__name__}") from None
            raise
        return y

    @staticmethod
    def _fuse(modules):
        """The modules as (module, act) steps, act False for a module simply called. Linear
        then ReLU/Sigmoid/Tanh becomes one step, the Linear with its activation fused (one
        GEMM and one fused bias+activation pass, the same numbers as the two modules in turn
        with one pass less over the output). ReLU then MaxPool2d becomes one pooling that applies
        the ReLU to its maxima (_pool_then_relu)."""
        def plain(module, kinds):
            # of one of these exact types, with the class's forward (not one set on it) and
            # no hooks (a fused step calls kernels, not the module)
            return (type(module) in kinds and "forward" not in module.__dict__
                    and not module._hooked)

        steps = []
        i, n = 0, len(modules)
        while i < n:
            module = modules[i]
            if plain(module, (Linear,)) and i + 1 < n and plain(modules[i + 1], _FUSABLE):
                steps.append((module, _FUSABLE[type(modules[i + 1])]))
                i += 2
            elif plain(module, (ReLU,)) and i + 1 < n and plain(modules[i + 1], (MaxPool2d,)):
                steps.append(((module, modules[i + 1]), _POOL_RELU))
                i += 2
            else:
                # act None: an exact Linear without activation; False: call the module
                steps.append((module, None if plain(module, (Linear,)) else False))
                i += 1
        return tuple(Sequential._chain(steps))

    @staticmethod
    def _chain(steps):
        """Runs of two or more Linear steps become one LinearChain step: one C call forward
        and one backward for the whole run."""
        run = []
        for step in steps + [(None, False)]:
            if step[1] is not False and step[1] is not _POOL_RELU:
                run.append(step)
                continue
            if len(run) >= 2:
                yield LinearChain([m for m, _ in run], [a for _, a in run]), _CHAIN
            else:
                yield from run
            run = []
            if step[0] is not None:
                yield step

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(self._modules.items())[index]))
        return self._modules[self._key(index)]


class ModuleList(_Indexed):
    """A list of modules whose parameters belong to the owner (a plain list would hide them
    from parameters(), to() and state_dict()); it has no forward of its own."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ModuleList(list(self._modules.values())[index])
        return self._modules[self._key(index)]



class ModuleDict(Module):
    """Modules under string keys, in the order they were put in, registered as children (so
    that their parameters belong to the owner, under "key.name"); a dict's interface: indexing,
    ``in``, len, iteration over the keys, keys(), values(), items(), update(), pop() and
    clear(). Like ModuleList, it has no forward of its own."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def pop(self, key):
        """Remove the module under `key` and return it (KeyError if there is none)."""
        module = self._modules[key]
        del self._modules[key]
        return module

    def clear(self):
        self._modules.clear()

    def update(self, modules):
        """Add or replace modules from a mapping (a dict, an OrderedDict, a ModuleDict: in its
        order) or from an iterable of (key, module) pairs."""
        if isinstance(modules, (Mapping, ModuleDict)):
            pairs = modules.items()
        elif isinstance(modules, Iterable) and not isinstance(modules, (str, bytes)):
            pairs = []
            for i, pair in enumerate(modules):
                if not isinstance(pair, Iterable):
                    raise TypeError(f"ModuleDict update sequence element #{i} should be "
                                    f"Iterable; is {type(pair).__name__}")
                pair = tuple(pair)
                if len(pair) != 2:
                    raise ValueError(f"ModuleDict update sequence element #{i} has length "
                                     f"{len(pair)}; 2 is required")
                pairs.append(pair)
        else:
            raise TypeError(f"ModuleDict.update should be called with an iterable of key/module "
                            f"pairs, but got {type(modules).__name__}")
        # a refused key or module leaves the dict as it was, not half updated
        saved = self._modules.copy()
        try:
            for key, module in pairs:
                self[key] = module
        except BaseException:
            self._modules.clear()
            self._modules.update(saved)
            raise
