"""torch.utils.data._utils.collate's names: default_collate and default_convert."""

from pyrt.data.convert import default_convert
from pyrt.data.loader import default_collate

__all__ = ["default_collate", "default_convert"]
