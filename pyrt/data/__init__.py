"""Data sets and batching: the XOR task, MNIST-format IDX files, torch's map-style data sets
(Dataset, TensorDataset, Subset, ConcatDataset, random_split), samplers, and a DataLoader."""

from pyrt.data.dataset import ConcatDataset, Dataset, Subset, TensorDataset, random_split
from pyrt.data.idx import read_idx, write_idx
from pyrt.data.loader import DataLoader, default_collate
from pyrt.data.mnist import MNIST, DatasetNotFoundError, find_mnist, load_mnist
from pyrt.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from pyrt.data.xor import make_xor

__all__ = ["MNIST", "BatchSampler", "ConcatDataset", "DataLoader", "Dataset",
           "DatasetNotFoundError", "RandomSampler", "Sampler", "SequentialSampler", "Subset",
           "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "default_collate",
           "find_mnist", "load_mnist", "make_xor", "random_split", "read_idx", "write_idx"]
