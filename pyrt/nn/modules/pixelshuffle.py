"""torch.nn.modules.pixelshuffle's names in pyrt: PixelShuffle and PixelUnshuffle."""

from pyrt.nn import PixelShuffle, PixelUnshuffle

__all__ = ["PixelShuffle", "PixelUnshuffle"]
