"""Mini-batches over in-memory arrays.

The shuffle order of an epoch is a function of ``(seed, epoch)`` alone, drawn with NumPy on the
calling thread: it does not depend on the number of threads, on earlier epochs having run, or
on the machine. A run resumed from a checkpoint at epoch e therefore sees exactly the batches
an uninterrupted run would have seen.
"""

import numbers

import numpy as np

from pyrt.tensor import checked_seed, generator

__all__ = ["DataLoader"]


def _as_batchable(array, position):
    """Floats become float32 and integers int64 (the dtypes pyrt's tensors hold), C-contiguous
    so that a slice of rows is a contiguous block."""
    try:
        values = np.asarray(array)
    except ValueError:  # NumPy's words ("setting an array element with a sequence") name no
        # argument; the usual cause is a nested tuple, such as ((images, labels),)
        raise ValueError(f"dataset[{position}] must be an array, got rows of different "
                         "shapes") from None
    if values.dtype.kind in "iub":
        dtype = np.int64
    elif values.dtype.kind == "f":
        dtype = np.float32
    else:  # a lone None or dict is a 0-d object array: its type says more than the dtype
        what = type(array).__name__ if values.ndim == 0 else f"dtype {values.dtype}"
        raise TypeError(f"dataset[{position}] must hold numbers, got {what}")
    if values.ndim == 0:
        raise ValueError(f"dataset[{position}] must have a first (sample) axis, got a scalar")
    return np.ascontiguousarray(values, dtype=dtype)


def _positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


class DataLoader:
    """Iterate over ``dataset`` (a tuple of arrays with the same first dimension, such as
    ``(images, labels)``) in batches of ``batch_size`` rows, yielding a tuple of Tensors.

    ``shuffle=True`` visits the rows in a new random order each epoch; the order of epoch e
    is fixed by ``(seed, e)``. Each ``iter(loader)`` runs the next epoch; ``set_epoch(e)``
    picks the epoch the next iteration runs (to resume). ``drop_last=True`` skips a final
    batch smaller than ``batch_size``. With ``seed=None`` the seed is drawn from pyrt's
    generator, so ``pyrt.manual_seed`` fixes it. Without shuffling a batch is a view of the
    dataset's rows, as slicing a Tensor is (no copy per step): copy it before writing into it.
    """

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, seed=None):
        if isinstance(dataset, np.ndarray) or not isinstance(dataset, (tuple, list)) \
                or not dataset:
            raise TypeError("dataset must be a non-empty tuple of arrays, such as "
                            "(images, labels)")
        if isinstance(dataset, list) and len(dataset) > 2 and all(
                isinstance(s, (tuple, list)) for s in dataset):
            # PyTorch's map-style data set, a list of (input, target) samples: taken as
            # columns it would batch the wrong way, silently
            raise TypeError("dataset looks like a list of (input, target) samples; pass the "
                            "columns instead, such as (images, labels) arrays")
        self.arrays = tuple(_as_batchable(a, i) for i, a in enumerate(dataset))
        n = len(self.arrays[0])
        for i, a in enumerate(self.arrays[1:], start=1):
            if len(a) != n:
                raise ValueError(f"dataset arrays differ in length: dataset[0] has {n} rows, "
                                 f"dataset[{i}] has {len(a)}")
        self.batch_size = _positive_int(batch_size, "batch_size")
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        seed = checked_seed(seed, none_allowed=True)
        if seed is None:
            seed = int(generator().integers(0, 2**63 - 1))
        self.seed = seed
        self.epoch = 0

    @property
    def num_samples(self):
        return len(self.arrays[0])

    def __len__(self):
        """The number of batches in an epoch."""
        if self.drop_last:
            return self.num_samples // self.batch_size
        return (self.num_samples + self.batch_size - 1) // self.batch_size

    def set_epoch(self, epoch):
        """Make the next iteration run epoch `epoch` (its shuffle order included)."""
        if isinstance(epoch, bool) or not isinstance(epoch, numbers.Integral) or epoch < 0:
            raise ValueError(f"epoch must be a non-negative integer, got {epoch!r}")
        self.epoch = int(epoch)

    def order(self, epoch):
        """The row order of `epoch`: a permutation when shuffling, else ``None`` (in order)."""
        if not self.shuffle:
            return None
        return np.random.default_rng((self.seed, epoch)).permutation(self.num_samples)

    def __iter__(self):
        # the epoch is taken here, at iter(), not at the first batch
        order = self.order(self.epoch)
        self.epoch += 1
        return self._batches(order)

    def _batches(self, order):
        from pyrt.tensor import Tensor

        bs = self.batch_size
        for b in range(len(self)):
            lo, hi = b * bs, min((b + 1) * bs, self.num_samples)
            if order is None:
                yield tuple(Tensor(a[lo:hi]) for a in self.arrays)  # views: no copy
            else:
                rows = order[lo:hi]
                yield tuple(Tensor(a.take(rows, axis=0)) for a in self.arrays)
