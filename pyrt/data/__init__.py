"""Data sets and batching: the XOR task, MNIST-format IDX files, torch's map-style data sets
(Dataset, TensorDataset, Subset, ConcatDataset, StackDataset, random_split), iterable ones
(IterableDataset, ChainDataset), samplers (DistributedSampler among them), and a DataLoader."""

from pyrt.data.convert import default_convert
from pyrt.data.dataset import ConcatDataset, Dataset, Subset, TensorDataset, random_split
from pyrt.data.distributed import DistributedSampler
from pyrt.data.idx import read_idx, write_idx
from pyrt.data.iterable import ChainDataset, IterableDataset
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
from pyrt.data.stack import StackDataset
from pyrt.data.worker import get_worker_info
from pyrt.data.xor import make_xor

__all__ = ["MNIST", "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "DatasetNotFoundError", "DistributedSampler", "IterableDataset", "RandomSampler",
           "Sampler", "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler",
           "TensorDataset", "WeightedRandomSampler", "default_collate", "default_convert",
           "find_mnist", "get_worker_info", "load_mnist", "make_xor", "random_split",
           "read_idx", "write_idx"]
