"""Data sets and batching: the XOR task, MNIST-format IDX files, torch's map-style data sets
(Dataset, TensorDataset, Subset, ConcatDataset, random_split), and a DataLoader."""

from pyrt.data.dataset import ConcatDataset, Dataset, Subset, TensorDataset, random_split
from pyrt.data.idx import read_idx, write_idx
from pyrt.data.loader import DataLoader
from pyrt.data.mnist import MNIST, DatasetNotFoundError, find_mnist, load_mnist
from pyrt.data.xor import make_xor

__all__ = ["MNIST", "ConcatDataset", "DataLoader", "Dataset", "DatasetNotFoundError",
           "Subset", "TensorDataset", "find_mnist", "load_mnist", "make_xor", "random_split",
           "read_idx", "write_idx"]
