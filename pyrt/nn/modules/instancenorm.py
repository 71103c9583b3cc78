"""torch.nn.modules.instancenorm's names in pyrt: the instance norms and their base."""

from pyrt.nn import (
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
)
from pyrt.nn.norms import _InstanceNorm

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d", "_InstanceNorm"]
