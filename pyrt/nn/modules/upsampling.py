"""torch.nn.modules.upsampling's names in pyrt: the upsampling layers."""

from pyrt.nn import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = ["Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d"]
