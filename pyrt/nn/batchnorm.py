"""BatchNorm1d, BatchNorm2d and BatchNorm3d, as torch.nn's: per-channel normalisation with a
learned scale and shift, and running statistics for evaluation.

``affine`` adds a learned per-channel weight (initially 1) and bias (0; ``bias=False`` leaves
it out). In training mode each batch is normalised by its own mean and variance, and the running
statistics (buffers ``running_mean``, ``running_var``, ``num_batches_tracked``) move towards
them by ``momentum`` (with momentum None, to the cumulative average of every batch so far); in
evaluation mode (``eval()``) the running statistics normalise. With
``track_running_stats=False`` there are none, and every batch uses its own.
"""

import numbers

import numpy as np

from pyrt.nn.module import Module
from pyrt.nn.module_bases import _NormBase
from pyrt.nn.parameter import Parameter
from pyrt.normalization import batch_norm
from pyrt.tensor import Tensor

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]


def affine_parameters(module, affine, channels, bias):
    """weight (ones) and bias (zeros) [channels] of an affine norm, else None for both."""
    if affine:
        module.weight = Parameter(np.ones(channels, np.float32))
        if bias:
            module.bias = Parameter(np.zeros(channels, np.float32))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def running_statistics(module, track, channels):
    """The buffers running_mean (zeros), running_var (ones) [channels] and
    num_batches_tracked (0) of a norm that tracks them, else None for each."""
    if track:
        module.register_buffer("running_mean", Tensor(np.zeros(channels, np.float32)))
        module.register_buffer("running_var", Tensor(np.ones(channels, np.float32)))
        module.register_buffer("num_batches_tracked", Tensor(np.array(0, np.int64)))
    else:
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            module.register_buffer(name, None)


class NormBase(Module):
    """The resets of the norms: parameters to (1, 0), running statistics to (0, 1, 0)."""
    _tensor_input = True
    track_running_stats = False

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean._data[...] = 0
            self.running_var._data[...] = 1
            self.num_batches_tracked._data[...] = 0

    def reset_parameters(self):
        self.reset_running_stats()
        if self.weight is not None:
            self.weight._data[...] = 1
        if self.bias is not None:
            self.bias._data[...] = 0


class _BatchNorm(NormBase, _NormBase):
    _dims = ()  # the input dimensions the layer takes

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, *, bias=True):
        super().__init__()
        if (isinstance(num_features, bool) or not isinstance(num_features, numbers.Integral)
                or num_features < 0):
            raise ValueError(f"num_features must be a non-negative integer, got "
                             f"{num_features!r}")
        for value, name in ((eps, "eps"), (momentum, "momentum")):
            if value is not None and (isinstance(value, bool)
                                      or not isinstance(value, numbers.Real)):
                raise TypeError(f"{name} must be a real number, got {value!r}")
        if eps is None or eps < 0:
            raise ValueError(f"eps must be a non-negative number, got {eps!r}")
        self.num_features = int(num_features)
        self.eps = eps
        self.momentum = momentum
        self.affine = bool(affine)
        self.track_running_stats = bool(track_running_stats)
        affine_parameters(self, self.affine, self.num_features, bias)
        running_statistics(self, self.track_running_stats, self.num_features)

    def forward(self, x):
        if x.ndim not in self._dims:
            dims = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"expected {dims} input (got {x.ndim}D input)")
        if x.ndim and x.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}: input has {x.shape[1]} channels (shape "
                             f"{x.shape}), the layer {self.num_features}")
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked._data[...] += 1
            if self.momentum is None:  # the cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked._data)
        # the batch's own statistics in training, or when there are no running ones
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return batch_norm(x, self.running_mean if keep else None,
                          self.running_var if keep else None, self.weight, self.bias,
                          use_batch, momentum, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Over [n, c] or [n, c, length] inputs: channel c's values across the batch (and the
    length)."""
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Over [n, c, h, w] inputs: channel c's values across the batch and the image."""
    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Over [n, c, d, h, w] inputs: channel c's values across the batch and the volume."""
    _dims = (5,)
