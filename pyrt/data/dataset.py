"""Map-style data sets under torch.utils.data's names: Dataset, TensorDataset, Subset,
ConcatDataset and random_split.

A map-style data set is anything with ``__len__`` and a ``__getitem__`` taking the indices
0..len-1. These classes wrap, select and chain such data sets without copying samples.
DataLoader batches a TensorDataset, or a Subset of one, by indexing its tensors once per batch;
any other data set it reads one sample at a time.
"""

import itertools
import math
import numbers
import warnings
from bisect import bisect_right

import numpy as np

from pyrt.tensor import Tensor, checked_seed
from pyrt.tensor import generator as pyrt_generator

__all__ = ["ConcatDataset", "Dataset", "Subset", "TensorDataset", "random_split"]


class _CheckFailed(ValueError, AssertionError):
    """A bad argument where torch.utils.data raises AssertionError: a ValueError, as pyrt's
    input checks raise, and an AssertionError, so that code written against torch catches it
    too."""


def batch_dtype(dtype):
    """The dtype pyrt batches values of `dtype` as: float32 for floats, int64 for integers and
    bools (the dtypes pyrt's kernels and losses take), None for anything else."""
    if dtype.kind in "iub":
        return np.dtype(np.int64)
    if dtype.kind == "f":
        return np.dtype(np.float32)
    return None


def as_batchable(values, name):
    """`values` as a C-contiguous array of pyrt's dtypes (see batch_dtype), so that a slice of
    rows is a contiguous block; `name` names it in errors."""
    try:
        array = np.asarray(values)
    except ValueError:  # NumPy's words ("setting an array element with a sequence") name no
        # argument; the usual cause is a nested tuple, such as ((images, labels),)
        raise ValueError(f"{name} must be an array, got rows of different shapes") from None
    dtype = batch_dtype(array.dtype)
    if dtype is None:  # a lone None or dict is a 0-d object array: its type says more
        what = type(values).__name__ if array.ndim == 0 else f"dtype {array.dtype}"
        raise TypeError(f"{name} must hold numbers, got {what}")
    if array.ndim == 0:
        raise ValueError(f"{name} must have a first (sample) axis, got a scalar")
    return np.ascontiguousarray(array, dtype=dtype)


class Dataset:
    """A map-style data set: ``dataset[i]`` is sample i, for i in ``range(len(dataset))``.

    Subclasses define ``__getitem__`` and ``__len__`` (DataLoader needs both); ``a + b`` is
    the ConcatDataset of a then b.
    """

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class TensorDataset(Dataset):
    """Samples as rows of tensors: ``dataset[i]`` is ``(tensors[0][i], tensors[1][i], ...)``.

    Each tensor is a pyrt Tensor, kept as it is, or an array (anything NumPy takes), converted
    as DataLoader converts columns: floats to float32, integers and bools to int64. All must
    have the same first dimension, the number of samples.
    """

    def __init__(self, *tensors):
        if not tensors:
            raise TypeError("TensorDataset needs at least one tensor, such as "
                            "TensorDataset(images, labels)")
        self.tensors = tuple(
            t if isinstance(t, Tensor) else Tensor(as_batchable(t, f"tensors[{i}]"))
            for i, t in enumerate(tensors))
        for i, t in enumerate(self.tensors):
            if t.ndim == 0:
                raise ValueError(f"tensors[{i}] must have a first (sample) axis, got a scalar")
        sizes = [len(t) for t in self.tensors]
        if any(size != sizes[0] for size in sizes):
            raise _CheckFailed(f"Size mismatch between tensors: their first dimensions are "
                               f"{sizes}")

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self):
        return len(self.tensors[0])


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order: ``subset[i]`` is
    ``dataset[indices[i]]``. A list of positions selects several samples at once, as in
    torch."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """Data sets one after another: the first ``len(datasets[0])`` samples come from the first
    data set, the next ``len(datasets[1])`` from the second, and so on.
    ``cumulative_sizes[k]`` is the number of samples in datasets 0..k, which a lookup bisects
    to find the data set holding sample i."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise _CheckFailed("datasets should not be an empty iterable")
        from pyrt.data.iterable import IterableDataset  # (it builds on this module)

        if any(isinstance(d, IterableDataset) for d in self.datasets):
            raise _CheckFailed("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if isinstance(idx, bool) or not isinstance(idx, numbers.Integral):
            raise TypeError(f"ConcatDataset indices must be integers, got "
                            f"{type(idx).__name__}")
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        if idx >= len(self):
            raise IndexError(f"index {idx} is out of range for a ConcatDataset of "
                             f"{len(self)} samples")
        k = bisect_right(self.cumulative_sizes, idx)
        return self.datasets[k][idx - (self.cumulative_sizes[k - 1] if k else 0)]


def _split_lengths(lengths, n):
    """`lengths` as counts: fractions summing to 1 become floor(fraction * n) each, and the
    samples that flooring leaves over go one each to the splits in turn (torch 2.x's rule)."""
    lengths = list(lengths)
    for i, length in enumerate(lengths):
        if isinstance(length, bool) or not isinstance(length, numbers.Real):
            raise TypeError(f"lengths[{i}] must be a count or a fraction, got "
                            f"{type(length).__name__}")
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        for i, fraction in enumerate(lengths):
            if fraction < 0 or fraction > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        counts = [math.floor(n * fraction) for fraction in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, count in enumerate(counts):
            if count == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an "
                              f"empty dataset.", stacklevel=3)
        return counts
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input "
                         "dataset!")
    for i, length in enumerate(lengths):
        if not isinstance(length, numbers.Integral) or length < 0:
            raise ValueError(f"lengths must be non-negative counts, or fractions summing to "
                             f"1, got lengths[{i}] = {length!r}")
    return [int(length) for length in lengths]


def _permutation_source(generator):
    if generator is None:  # looked up now: manual_seed replaces pyrt's generator
        return pyrt_generator()
    if isinstance(generator, np.random.Generator):
        return generator
    if isinstance(generator, numbers.Integral) and not isinstance(generator, bool):
        return np.random.default_rng(checked_seed(generator))
    raise TypeError(f"generator must be None (pyrt's generator), a seed or a "
                    f"numpy.random.Generator, got {type(generator).__name__}")


def random_split(dataset, lengths, generator=None):
    """Split `dataset` at random into non-overlapping Subsets of the given `lengths`: counts
    summing to ``len(dataset)``, or fractions summing to 1 (shared out as torch 2.x does; a
    split left empty warns).

    The permutation is drawn from `generator`: None for pyrt's generator, which the draw
    advances (so ``pyrt.manual_seed`` makes a script's splits reproducible), a seed, or a
    ``numpy.random.Generator``.
    """
    counts = _split_lengths(lengths, len(dataset))
    indices = _permutation_source(generator).permutation(len(dataset)).tolist()
    ends = itertools.accumulate(counts)
    return [Subset(dataset, indices[end - count:end]) for end, count in zip(ends, counts)]
