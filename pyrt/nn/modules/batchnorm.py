"""torch.nn.modules.batchnorm's names in pyrt: the batch norms and their bases."""

from pyrt.nn import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    SyncBatchNorm,
)
from pyrt.nn.batchnorm import _BatchNorm
from pyrt.nn.module_bases import _LazyNormBase, _NormBase

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "SyncBatchNorm", "_BatchNorm", "_LazyNormBase", "_NormBase"]
