"""torch.nn.functional's deprecated resampling names and its native_channel_shuffle, as
pyrt.nn.functional holds them:

- upsample(input, size, scale_factor, mode, align_corners): interpolate, with PyTorch's
  deprecation warning.
- upsample_nearest(input, size, scale_factor): interpolate in "nearest" mode, warning.
- upsample_bilinear(input, size, scale_factor): interpolate in "bilinear" mode with
  align_corners=True (the corners of input and output aligned, as the old op did), warning.
- native_channel_shuffle(input, groups): channel_shuffle (PyTorch's kernel behind it).
"""

import warnings

from pyrt.channel_ops import channel_shuffle
from pyrt.interpolate import interpolate

__all__ = ["native_channel_shuffle", "upsample", "upsample_bilinear", "upsample_nearest"]


def _deprecated(name):
    warnings.warn(f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` "
                  f"instead.", stacklevel=3)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """interpolate(input, size, scale_factor, mode, align_corners), deprecated."""
    _deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """interpolate(input, size, scale_factor, mode="nearest"), deprecated."""
    _deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """interpolate(input, size, scale_factor, mode="bilinear", align_corners=True) of a
    [N, C, H, W] input, deprecated."""
    _deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def native_channel_shuffle(input, groups):
    """channel_shuffle(input, groups): the channels of [N, C, *] as a groups x (C / groups)
    grid read out by columns."""
    return channel_shuffle(input, groups)
