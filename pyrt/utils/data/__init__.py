"""pyrt.data under torch.utils.data's name: Dataset, TensorDataset, Subset, ConcatDataset,
StackDataset, IterableDataset, ChainDataset, random_split, the samplers (DistributedSampler
too), DataLoader, default_collate, default_convert and get_worker_info (and pyrt's own data
sets); and torch's submodules (``sampler``, ``dataset``, ``dataloader``, ``distributed``,
``_utils.collate``, ``_utils.worker``), so that their imports port too."""

from pyrt.data import *  # noqa: F403
from pyrt.data import __all__  # noqa: F401
from pyrt.utils.data import _utils, dataloader, dataset, distributed, sampler  # noqa: F401
