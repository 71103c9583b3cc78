"""torch.utils.dlpack: from_dlpack and to_dlpack (see pyrt/foreign_memory.py)."""

from pyrt.foreign_memory import from_dlpack, to_dlpack

__all__ = ["from_dlpack", "to_dlpack"]
