"""torch.nn.modules.conv's names in pyrt: the convolutions and their bases."""

from pyrt.nn import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
)
from pyrt.nn.conv import _ConvTransposeNd
from pyrt.nn.module_bases import _ConvNd

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
           "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
           "LazyConvTranspose3d", "_ConvNd", "_ConvTransposeNd"]
