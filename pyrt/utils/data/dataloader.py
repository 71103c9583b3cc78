"""torch.utils.data.dataloader's names: DataLoader, default_collate, default_convert and
get_worker_info."""

from pyrt.data.convert import default_convert
from pyrt.data.loader import DataLoader, default_collate
from pyrt.data.worker import get_worker_info

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]
