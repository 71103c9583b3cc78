"""GroupNorm, InstanceNorm1d, InstanceNorm2d and InstanceNorm3d, as torch.nn's (pyrt.group_norm).

GroupNorm normalises each group of num_channels / num_groups channels of each sample by its
own statistics; ``affine`` adds a learned per-channel weight (initially 1) and bias (0;
``bias=False`` leaves it out). Training and evaluation behave alike.

The instance norms normalise each channel of each sample over its spatial positions.
``affine`` is off by default, and so is ``track_running_stats``; with it the running
statistics (buffers ``running_mean``, ``running_var``) move towards the batch's by
``momentum`` in training and normalise in evaluation mode (``eval()``).
"""

import numbers
import warnings

from pyrt.group_norm import group_norm, instance_norm
from pyrt.nn.batchnorm import NormBase, affine_parameters, running_statistics
from pyrt.nn.module_bases import _NormBase

__all__ = ["GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


def _count(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def _real(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    return value


class GroupNorm(NormBase):
    """Over inputs [n, num_channels, *]."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, *, bias=True):
        super().__init__()
        self.num_groups = _count(num_groups, "num_groups")
        self.num_channels = _count(num_channels, "num_channels")
        if self.num_groups == 0 or self.num_channels % self.num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.eps = _real(eps, "eps")
        self.affine = bool(affine)
        affine_parameters(self, self.affine, self.num_channels, bias)

    def forward(self, input):
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={self.bias is not None}")


class _InstanceNorm(NormBase, _NormBase):
    _no_batch_dims = 2  # the input dims of one sample without a batch dim

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, *, bias=True):
        super().__init__()
        self.num_features = _count(num_features, "num_features")
        self.eps = _real(eps, "eps")
        self.momentum = momentum if momentum is None else _real(momentum, "momentum")
        self.affine = bool(affine)
        self.track_running_stats = bool(track_running_stats)
        affine_parameters(self, self.affine, self.num_features, bias)
        running_statistics(self, self.track_running_stats, self.num_features)

    def forward(self, input):
        dims = (self._no_batch_dims, self._no_batch_dims + 1)
        if input.ndim not in dims:
            raise ValueError(f"expected {dims[0]}D or {dims[1]}D input (got {input.ndim}D "
                             f"input)")
        feature_dim = input.ndim - self._no_batch_dims
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You "
                          f"can silence this warning by not passing in num_features, which is "
                          f"not used because affine=False", stacklevel=2)
        x = input if feature_dim == 1 else input.reshape(1, *input.shape)
        y = instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                          self.training or not self.track_running_stats,
                          0.0 if self.momentum is None else self.momentum, self.eps)
        return y if feature_dim == 1 else y.reshape(input.shape)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """Over inputs [n, c, length] or [c, length]."""


class InstanceNorm2d(_InstanceNorm):
    """Over inputs [n, c, h, w] or [c, h, w]."""
    _no_batch_dims = 3


class InstanceNorm3d(_InstanceNorm):
    """Over inputs [n, c, d, h, w] or [c, d, h, w]."""
    _no_batch_dims = 4
