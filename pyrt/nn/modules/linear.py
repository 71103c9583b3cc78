"""torch.nn.modules.linear's names in pyrt: the linear layers."""

from pyrt.nn import Bilinear, Identity, LazyLinear, Linear

__all__ = ["Bilinear", "Identity", "LazyLinear", "Linear"]
