"""torch.nn.modules.flatten's names in pyrt: Flatten and Unflatten."""

from pyrt.nn import Flatten, Unflatten

__all__ = ["Flatten", "Unflatten"]
