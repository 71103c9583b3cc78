"""torch.nn.modules.normalization's names in pyrt: the norms over features."""

from pyrt.nn import CrossMapLRN2d, GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm

__all__ = ["CrossMapLRN2d", "GroupNorm", "LayerNorm", "LocalResponseNorm", "RMSNorm"]
