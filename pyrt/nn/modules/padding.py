"""torch.nn.modules.padding's names in pyrt: the padding layers and their bases."""

from pyrt.nn import (
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from pyrt.nn.module_bases import _CircularPadNd, _ReflectionPadNd, _ReplicationPadNd
from pyrt.nn.padding import _ConstantPadNd

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d", "_CircularPadNd", "_ConstantPadNd", "_ReflectionPadNd", "_ReplicationPadNd"]
