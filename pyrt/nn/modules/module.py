"""torch.nn.modules.module's names in pyrt: Module, the base of every layer."""

from pyrt.nn import Module

__all__ = ["Module"]
