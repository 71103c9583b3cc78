"""torch.utils's place for pyrt's data sets and loaders: ``pyrt.utils.data`` is
``pyrt.data`` under torch's path (with torch's submodules, ``pyrt.utils.data.sampler`` and
the like), so that ``from torch.utils.data import DataLoader`` ports as
``from pyrt.utils.data import DataLoader``; ``pyrt.utils.hooks`` holds RemovableHandle."""

from pyrt.utils import checkpoint, data, hooks

__all__ = ["checkpoint", "data", "hooks"]
