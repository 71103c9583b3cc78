"""Upsample (and its fixed-mode forms UpsamplingNearest2d and UpsamplingBilinear2d),
PixelShuffle and PixelUnshuffle, as torch.nn's (pyrt.interpolate, pyrt.spatial_more)."""

from pyrt.interpolate import interpolate
from pyrt.nn.module import Module
from pyrt.spatial_more import _factor, pixel_shuffle, pixel_unshuffle

__all__ = ["PixelShuffle", "PixelUnshuffle", "Upsample", "UpsamplingBilinear2d",
           "UpsamplingNearest2d"]


class Upsample(Module):
    """F.interpolate with these settings: input [n, c, *spatial] resized to `size` or by
    `scale_factor`, in `mode` ("nearest", "nearest-exact", "linear", "bilinear",
    "trilinear" or "area")."""
    _tensor_input = True

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(factor) for factor in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                           recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Upsample of [n, c, h, w] inputs in "nearest" mode."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample of [n, c, h, w] inputs in "bilinear" mode with align_corners."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """[*, c * r * r, h, w] -> [*, c, h * r, w * r], r = upscale_factor."""
    _tensor_input = True

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = _factor(upscale_factor, "PixelShuffle", "upscale_factor")

    def forward(self, input):
        return pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """[*, c, h * r, w * r] -> [*, c * r * r, h, w], r = downscale_factor."""
    _tensor_input = True

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = _factor(downscale_factor, "PixelUnshuffle", "downscale_factor")

    def forward(self, input):
        return pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"
