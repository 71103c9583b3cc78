"""Data sets and batching: the XOR task, MNIST-format IDX files, and a DataLoader."""

from pyrt.data.idx import read_idx, write_idx
from pyrt.data.loader import DataLoader
from pyrt.data.mnist import MNIST, DatasetNotFoundError, find_mnist, load_mnist
from pyrt.data.xor import make_xor

__all__ = ["MNIST", "DataLoader", "DatasetNotFoundError", "find_mnist", "load_mnist",
           "make_xor", "read_idx", "write_idx"]
