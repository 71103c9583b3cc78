"""torch.utils's place for pyrt's data sets and loaders: ``pyrt.utils.data`` is
``pyrt.data``, so that ``from torch.utils.data import DataLoader`` ports as
``from pyrt.utils.data import DataLoader``."""

from pyrt.utils import checkpoint, data

__all__ = ["checkpoint", "data"]
