"""pyrt.data under torch.utils.data's name: Dataset, TensorDataset, Subset, ConcatDataset,
random_split, the samplers, DataLoader and default_collate (and pyrt's own data sets)."""

from pyrt.data import *  # noqa: F403
from pyrt.data import __all__  # noqa: F401
