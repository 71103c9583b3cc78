"""Padding layers, as torch.nn's: ZeroPad1d/2d/3d, ConstantPad1d/2d/3d, ReflectionPad1d/2d/3d,
ReplicationPad1d/2d/3d and CircularPad1d/2d/3d, each F.pad (pyrt.spatial) with its mode.

`padding` is an int (every side alike) or a tuple: (left, right) for the 1-d layers,
(left, right, top, bottom) for the 2-d ones, (left, right, top, bottom, front, back) for the
3-d ones; the layers keep it as that tuple.
"""

import numbers

from pyrt.nn.module import Module
from pyrt.nn.module_bases import _CircularPadNd, _ReflectionPadNd, _ReplicationPadNd
from pyrt.spatial import pad

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d"]


class _PadNd(Module):
    _tensor_input = True
    _sides = 2  # the amounts of `padding`: two per padded dim
    mode = "constant"

    def __init__(self, padding):
        super().__init__()
        if isinstance(padding, numbers.Integral) and not isinstance(padding, bool):
            padding = (int(padding),) * self._sides
        elif not isinstance(padding, (tuple, list)) or len(padding) != self._sides:
            raise ValueError(f"padding must be an int or a tuple of {self._sides} ints, got "
                             f"{padding!r}")
        self.padding = tuple(padding)

    def forward(self, input):
        return pad(input, self.padding, self.mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with `value`."""


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dims with `value`."""
    _sides = 4


class ZeroPad1d(ConstantPad1d):
    """Pads the last dim with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads the last two dims with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_PadNd, _ReflectionPadNd):
    """Pads the last dim with its reflection about the edge (the edge not repeated)."""
    mode = "reflect"


class ReflectionPad2d(ReflectionPad1d):
    """Pads the last two dims with their reflection about the edges."""
    _sides = 4


class ReplicationPad1d(_PadNd, _ReplicationPadNd):
    """Pads the last dim with copies of its edge value."""
    mode = "replicate"


class ReplicationPad2d(ReplicationPad1d):
    """Pads the last two dims with copies of their edge values."""
    _sides = 4


class CircularPad1d(_PadNd, _CircularPadNd):
    """Pads the last dim with the values of its other end (wrapped around)."""
    mode = "circular"


class CircularPad2d(CircularPad1d):
    """Pads the last two dims with the values of their other ends."""
    _sides = 4


class ConstantPad3d(_ConstantPadNd):
    """Pads the last three dims with `value`."""
    _sides = 6


class ZeroPad3d(ConstantPad3d):
    """Pads the last three dims with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad3d(ReflectionPad1d):
    """Pads the last three dims with their reflection about the edges."""
    _sides = 6


class ReplicationPad3d(ReplicationPad1d):
    """Pads the last three dims with copies of their edge values."""
    _sides = 6


class CircularPad3d(CircularPad1d):
    """Pads the last three dims with the values of their other ends."""
    _sides = 6
