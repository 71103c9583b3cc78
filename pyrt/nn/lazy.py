"""Lazy layers, as torch.nn's: LazyLinear, LazyConv1d/2d/3d, LazyConvTranspose1d/2d/3d,
LazyBatchNorm1d/2d/3d and LazyInstanceNorm1d/2d/3d take every argument of their layer but the
input size (in_features, in_channels, num_features), which the first input gives.

Until then their parameters and buffers are placeholders of no elements and no shape
(UninitializedParameter, UninitializedBuffer), so that an optimizer made beforehand holds
them. The first call builds the real layer for the input's size (its initialisation drawn from
pyrt's generator then, as the layer's own would be), moves its arrays into the placeholders,
the same Parameter objects, now of class Parameter, and turns the module into that layer (its
class included, as PyTorch's cls_to_become does).
"""

from pyrt.nn.batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from pyrt.nn.buffer import UninitializedBuffer, UninitializedParameter
from pyrt.nn.conv import Conv1d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from pyrt.nn.layers import Conv2d, Linear
from pyrt.nn.module import Module
from pyrt.nn.norms import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from pyrt.nn.parameter import Parameter
from pyrt.tensor import Tensor, generator

__all__ = ["LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
           "LazyConvTranspose3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d", "LazyLinear"]


class _LazyModule(Module):
    """A layer of class `cls_to_become` whose first argument comes from its first input."""

    cls_to_become = None
    _spatial = 0  # the input's spatial dims (0: features last, as Linear's)
    _batched = False  # takes batched input only (batch norm: [N, C] or [N, C, L] in 1-d)

    def __init__(self, *args, **kwargs):
        super().__init__()
        self._lazy_args = (args, kwargs)
        # the layer's parameters and buffers, learnt from a layer built for a size that any
        # arguments take (its draws undone: the generator's stream stays as it was)
        state = generator().bit_generator.state
        try:
            template = self.cls_to_become(self._template_size(kwargs, args), *args, **kwargs)
        finally:
            generator().bit_generator.state = state
        for name, p in template._parameters.items():
            self.register_parameter(name, None if p is None else UninitializedParameter())
        for name, b in template._buffers.items():
            self.register_buffer(name, None if b is None else UninitializedBuffer(dtype=b.dtype),
                                 name not in template._non_persistent_buffers_set)

    @staticmethod
    def _template_size(kwargs, args):
        return 1

    def has_uninitialized_params(self):
        """True until the first input has given the layer its size."""
        return True

    def _input_size(self, input):
        """The size the layer takes from `input`: its channels (dim 1, or dim 0 for an
        unbatched input) or, for a linear layer, its last dim."""
        if not isinstance(input, Tensor):
            raise TypeError(f"{type(self).__name__}: input must be a pyrt Tensor, got "
                            f"{type(input).__name__}")
        if self._spatial == 0:
            if input.ndim == 0:
                raise ValueError(f"{type(self).__name__}: input must have at least 1 "
                                 f"dimension, got a 0-d tensor")
            return input.shape[-1]
        if self._batched:
            if input.ndim < 2:
                raise ValueError(f"{type(self).__name__}: expected a batched input [N, C, "
                                 f"...], got shape {list(input.shape)}")
            return input.shape[1]
        unbatched = input.ndim == self._spatial + 1
        if input.ndim not in (self._spatial + 1, self._spatial + 2):
            raise ValueError(f"{type(self).__name__}: expected a {self._spatial + 1}-D "
                             f"(unbatched) or {self._spatial + 2}-D input, got shape "
                             f"{list(input.shape)}")
        return input.shape[0 if unbatched else 1]

    def initialize_parameters(self, input):
        """Build the layer for `input`'s size and become it."""
        args, kwargs = self._lazy_args
        real = self.cls_to_become(self._input_size(input), *args, **kwargs)
        for name, p in self._parameters.items():
            if p is not None:
                p._data = real._parameters[name]._data
                p.__class__ = Parameter
        for name, b in self._buffers.items():
            if b is not None:
                self._buffers[name] = real._buffers[name]
        for key, value in real.__dict__.items():
            if key not in ("_parameters", "_buffers", "_modules",
                           "_non_persistent_buffers_set") and key not in self.__dict__:
                self.__dict__[key] = value
        for key in ("_lazy_args",):
            self.__dict__.pop(key, None)
        self.__class__ = self.cls_to_become

    def forward(self, input, *args, **kwargs):
        self.initialize_parameters(input)
        return self.forward(input, *args, **kwargs)

    def load_state_dict(self, state_dict, strict=True):
        raise RuntimeError(f"{type(self).__name__}: its parameters are not initialized yet: "
                           f"call it on an input first, then load the state dict")

    def extra_repr(self):
        args, kwargs = self._lazy_args
        shown = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
        return ", ".join(["uninitialized"] + shown)


class _LazyConv(_LazyModule):
    @staticmethod
    def _template_size(kwargs, args):
        # the groups must divide the channels (groups is the 7th argument of a convolution,
        # the 6th of a transposed one, after the channels; passed by keyword, mostly)
        return kwargs.get("groups", 1)


def _lazy(name, base, real, spatial):
    size = "in_features" if real is Linear else ("num_features" if "Norm" in real.__name__
                                                 else "in_channels")
    doc = (f"{real.__name__} with {size} taken from the first input: {name}(the other "
           f"arguments of {real.__name__}).")
    return type(name, (base,), {"cls_to_become": real, "_spatial": spatial, "__doc__": doc,
                                "__module__": __name__,
                                "_batched": real.__name__.startswith("BatchNorm")})


LazyLinear = _lazy("LazyLinear", _LazyModule, Linear, 0)
LazyConv1d = _lazy("LazyConv1d", _LazyConv, Conv1d, 1)
LazyConv2d = _lazy("LazyConv2d", _LazyConv, Conv2d, 2)
LazyConv3d = _lazy("LazyConv3d", _LazyConv, Conv3d, 3)
LazyConvTranspose1d = _lazy("LazyConvTranspose1d", _LazyConv, ConvTranspose1d, 1)
LazyConvTranspose2d = _lazy("LazyConvTranspose2d", _LazyConv, ConvTranspose2d, 2)
LazyConvTranspose3d = _lazy("LazyConvTranspose3d", _LazyConv, ConvTranspose3d, 3)
LazyBatchNorm1d = _lazy("LazyBatchNorm1d", _LazyModule, BatchNorm1d, 1)
LazyBatchNorm2d = _lazy("LazyBatchNorm2d", _LazyModule, BatchNorm2d, 2)
LazyBatchNorm3d = _lazy("LazyBatchNorm3d", _LazyModule, BatchNorm3d, 3)
LazyInstanceNorm1d = _lazy("LazyInstanceNorm1d", _LazyModule, InstanceNorm1d, 1)
LazyInstanceNorm2d = _lazy("LazyInstanceNorm2d", _LazyModule, InstanceNorm2d, 2)
LazyInstanceNorm3d = _lazy("LazyInstanceNorm3d", _LazyModule, InstanceNorm3d, 3)
