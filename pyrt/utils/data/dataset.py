"""torch.utils.data.dataset's names: the map-style and iterable data sets and random_split."""

from pyrt.data.dataset import ConcatDataset, Dataset, Subset, TensorDataset, random_split
from pyrt.data.iterable import ChainDataset, IterableDataset
from pyrt.data.stack import StackDataset

__all__ = ["ChainDataset", "ConcatDataset", "Dataset", "IterableDataset", "StackDataset",
           "Subset", "TensorDataset", "random_split"]
