"""Group and instance normalisation on Tensors (torch.nn.functional.group_norm and
instance_norm), on pyrt's normalisation kernels.

group_norm splits the c channels of input [n, c, *] into num_groups groups and normalises
each group of each sample by its own mean and biased variance: viewed as rows [n * groups,
(c / groups) * spatial], that is layer_norm over each row (the C kernel, or the CUDA one),
after which a per-channel weight and bias scale and shift the result. instance_norm
normalises each channel of each sample over its spatial positions: viewed as [1, n * c,
spatial], that is batch_norm of one sample with n * c channels, whose running statistics
(when given) are the running ones repeated for every sample; their per-sample updates are
averaged back over the batch, as PyTorch does. The gradients flow through these ops and the
affine Tensor ops.
"""

import math
import numbers

from pyrt.autograd import mark_modified
from pyrt.functional import _tensor, _xp
from pyrt.layer_norm import layer_norm
from pyrt.normalization import batch_norm
from pyrt.spatial import _check_tensors

__all__ = ["group_norm", "instance_norm"]


def _check_affine(input, weight, bias):
    c = input.shape[1]
    for t, name in ((weight, "weight"), (bias, "bias")):
        if t is not None and tuple(t.shape) != (c,):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(t.shape)} and "
                               f"input of shape {list(input.shape)}")


def _affine(y, weight, bias):
    """y [n, c, *] * weight [c] + bias [c], either optional."""
    per_channel = (-1,) + (1,) * (y.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(per_channel)
    if bias is not None:
        y = y + bias.reshape(per_channel)
    return y


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """``(input - mean) / sqrt(var + eps) * weight + bias`` with the statistics of each group
    of c / num_groups channels of each sample of input [n, c, *]; weight and bias [c]."""
    _check_tensors("group_norm", input=input, weight=weight, bias=bias)
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    if isinstance(num_groups, bool) or not isinstance(num_groups, numbers.Integral):
        raise TypeError(f"group_norm(): argument 'num_groups' (position 2) must be int, not "
                        f"{type(num_groups).__name__}")
    n, c, *spatial = input.shape
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    groups = int(num_groups)
    if n * c // groups * math.prod(spatial) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {[n * c // groups, groups, *spatial]}")
    _check_affine(input, weight, bias)
    m = c // groups * math.prod(spatial)
    y = layer_norm(input.reshape(n * groups, m), (m,), None, None, eps)
    return _affine(y.reshape(input.shape), weight, bias)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """``(input - mean) / sqrt(var + eps) * weight + bias`` per channel of each sample of
    input [n, c, *]: with use_input_stats the sample's own statistics over its spatial
    positions (moving running_mean and running_var, when given, towards their batch means
    in place), else the running ones."""
    _check_tensors("instance_norm", input=input, running_mean=running_mean,
                   running_var=running_var, weight=weight, bias=bias)
    shape = input.shape
    if input.ndim < 2:
        raise RuntimeError(f"instance_norm: input must have at least 2 dimensions [n, c, *], "
                           f"got shape {list(shape)}")
    if use_input_stats and math.prod(shape[2:]) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{list(shape)}")
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")
    _check_affine(input, weight, bias)
    n, c = shape[:2]
    Tensor = _tensor()
    # the running statistics of every (sample, channel) pair: each sample's copy
    repeated = []
    for t, name in ((running_mean, "running_mean"), (running_var, "running_var")):
        if t is not None and tuple(t.shape) != (c,):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input ({c}), but got {name} of shape "
                               f"{list(t.shape)}")
        repeated.append(None if t is None else Tensor(_xp(t._data).tile(t._data, n)))
    y = batch_norm(input.reshape(1, n * c, -1), *repeated, None, None, bool(use_input_stats),
                   momentum, eps)
    if use_input_stats:
        for t, copies in zip((running_mean, running_var), repeated):
            if t is not None:
                t._data[...] = copies._data.reshape(n, c).mean(axis=0)
                mark_modified(t._data)
    return _affine(y.reshape(shape), weight, bias)
