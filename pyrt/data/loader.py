"""Mini-batches over in-memory arrays, map-style data sets and iterable (stream) data sets.

DataLoader tells four kinds of data set apart when it is built:

- a tuple of arrays, the columns of the data such as ``(images, labels)``: a batch takes the
  same rows of every column;
- a TensorDataset, or a Subset of one: the same, its tensors being the columns, so a batch is
  one indexing of each column with the batch's rows, with no loop over samples;
- any other map-style data set (a Dataset, a list of samples, anything with ``__len__`` and
  ``__getitem__``): a batch reads its samples one by one and collates them as torch's
  default_collate does;
- an IterableDataset: a batch is the next batch_size samples of its stream, collated the same
  way (no sampler, no shuffle).

The shuffle order of an epoch is a function of ``(seed, epoch)`` alone, drawn with NumPy on the
calling thread: it does not depend on the number of threads, on earlier epochs having run, or
on the machine. A run resumed from a checkpoint at epoch e therefore sees exactly the batches
an uninterrupted run would have seen.
"""

import numbers
import warnings
from collections.abc import Mapping

import numpy as np

from pyrt import functional as F
from pyrt.data.convert import default_convert
from pyrt.data.dataset import Dataset, Subset, TensorDataset, as_batchable, batch_dtype
from pyrt.data.iterable import IterableDataset
from pyrt.data.sampler import BatchSampler
from pyrt.tensor import Tensor, _draw_source, checked_seed
from pyrt.tensor import generator as generator_of_pyrt

__all__ = ["DataLoader", "default_collate"]

_EXPECTED = ("dataset must be a map-style data set (a Dataset such as TensorDataset(x, y), or "
             "any object with __len__ and __getitem__) or a non-empty tuple of arrays, such as "
             "(images, labels)")

# the hint for a list whose samples fail to collate: a list of whole arrays, such as
# [images, labels], is a data set of two samples, where the tuple (images, labels) is columns
_LIST_HINT = ("; a list is a data set of samples, as in torch: pass a tuple to batch arrays "
              "as columns, such as (images, labels)")


def _positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _columns_of(dataset):
    """How DataLoader reads `dataset`: the column arrays and the rows of them that are its
    samples (None for all rows in order, else an int64 array), or (None, None) for a data set
    read one sample at a time. Anything that is neither is refused here, before any epoch."""
    if isinstance(dataset, tuple):
        if not dataset:
            raise TypeError(_EXPECTED)
        columns = tuple(as_batchable(a, f"dataset[{i}]") for i, a in enumerate(dataset))
        n = len(columns[0])
        for i, a in enumerate(columns[1:], start=1):
            if len(a) != n:
                raise ValueError(f"dataset arrays differ in length: dataset[0] has {n} rows, "
                                 f"dataset[{i}] has {len(a)}")
        return columns, None
    if isinstance(dataset, (np.ndarray, Tensor)):
        raise TypeError(f"{_EXPECTED}; got a bare {type(dataset).__name__}: pass (x,) or "
                        "TensorDataset(x)")
    if _is_column_dataset(dataset):
        return _columns_and_rows(dataset)
    if isinstance(dataset, Dataset) and (type(dataset).__getitem__ is Dataset.__getitem__
                                         or not hasattr(type(dataset), "__len__")):
        raise TypeError(f"dataset: {type(dataset).__name__} must define __len__ and "
                        "__getitem__ to be batched")
    if isinstance(dataset, (str, bytes)) or not (
            hasattr(type(dataset), "__len__") and hasattr(type(dataset), "__getitem__")):
        raise TypeError(f"{_EXPECTED}; got {type(dataset).__name__}")
    len(dataset)  # a __len__ that fails, fails now rather than at the first epoch
    return None, None


def _is_column_dataset(dataset):
    """Whether `dataset` is a TensorDataset, or a Subset of one, that can be batched by its
    columns: not a subclass that overrides __getitem__, which must then run for each sample,
    as torch runs it."""
    if isinstance(dataset, TensorDataset):
        return type(dataset).__getitem__ is TensorDataset.__getitem__
    if isinstance(dataset, Subset) and type(dataset).__getitem__ is Subset.__getitem__:
        return _is_column_dataset(dataset.dataset)
    return False


def _columns_and_rows(dataset):
    """_columns_of for a TensorDataset or a Subset of one: a Subset's negative indices count
    from the end, as in torch, and a Subset of a Subset maps its indices through the inner
    one's."""
    if isinstance(dataset, TensorDataset):
        return tuple(t._data for t in dataset.tensors), None
    columns, rows = _columns_and_rows(dataset.dataset)
    n = len(columns[0]) if rows is None else len(rows)
    indices = np.asarray(dataset.indices)
    if indices.size == 0:
        indices = indices.astype(np.int64)
    if indices.ndim != 1 or indices.dtype.kind not in "iu":
        raise TypeError(f"Subset indices must be a sequence of integers, got "
                        f"{indices.ndim}-d {indices.dtype} values")
    if indices.size and (indices.min() < -n or indices.max() >= n):
        bad = indices[(indices < -n) | (indices >= n)][0]
        raise IndexError(f"Subset index {bad} is out of range for a data set of {n} samples")
    indices = np.where(indices < 0, indices + n, indices).astype(np.int64)
    return columns, (indices if rows is None else rows[indices])


def _take(column, rows):
    """``column[rows]``: a view for a slice; a copy, on the column's device, for an array of
    rows (take, which NumPy runs faster than fancy indexing)."""
    if isinstance(rows, slice):
        return column[rows]
    xp = F._xp(column)
    return xp.take(column, xp.asarray(rows), axis=0)


# ---- collating samples into a batch ----------------------------------------------------------

def _kind(value):
    """How a sample, or a part of one, is collated."""
    if isinstance(value, Tensor):
        return "tensor"
    if isinstance(value, (str, bytes)):
        return "string"
    if isinstance(value, (np.ndarray, np.generic, numbers.Number)):
        return "array"
    if isinstance(value, Mapping):
        return "dict"
    if isinstance(value, (tuple, list)):
        return "sequence"
    return None


def _stacked(arrays, rows, where):
    """The arrays, all of one shape, stacked on a new first axis."""
    shape = arrays[0].shape
    for array, row in zip(arrays, rows):
        if array.shape != shape:
            raise ValueError(f"cannot batch samples of different shapes: dataset[{rows[0]}]"
                             f"{where} has shape {shape}, dataset[{row}]{where} has shape "
                             f"{array.shape}")
    return F._xp(arrays[0]).stack(arrays)


def _collate(samples, rows, where=""):
    """One batch of `samples`, the data set's samples at `rows`, as torch's default_collate
    builds it: Tensors and arrays stacked on a new first axis (Tensors keep their dtype, arrays
    and numbers become float32 or int64 as columns do), numbers made a 1-d tensor, tuples,
    lists and dicts collated element by element, strings kept as a list. A tuple stays a
    tuple, as DataLoader's column batches are (torch makes it a list). `where` is the path to
    the part being collated, for errors."""
    first = samples[0]
    kind = _kind(first)
    if kind is None:
        raise TypeError(f"cannot batch dataset[{rows[0]}]{where}: a sample must be made of "
                        f"tensors, arrays, numbers, strings, tuples, lists and dicts, found "
                        f"{type(first).__name__}")
    for sample, row in zip(samples, rows):
        if _kind(sample) != kind:
            raise TypeError(f"cannot batch dataset[{row}]{where}, a {type(sample).__name__}, "
                            f"with dataset[{rows[0]}]{where}, a {type(first).__name__}")
    if kind == "tensor":
        return Tensor(_stacked([s._data for s in samples], rows, where))
    if kind == "array":
        batch = _stacked([np.asarray(s) for s in samples], rows, where)
        dtype = batch_dtype(batch.dtype)
        if dtype is None:
            raise TypeError(f"cannot batch dataset[{rows[0]}]{where}: it must hold numbers, "
                            f"got dtype {batch.dtype}")
        return Tensor(batch.astype(dtype, copy=False))
    if kind == "string":
        return list(samples)
    if kind == "dict":
        for sample, row in zip(samples, rows):
            if sample.keys() != first.keys():
                raise ValueError(f"cannot batch dicts with different keys: dataset[{rows[0]}]"
                                 f"{where} has {list(first)}, dataset[{row}]{where} has "
                                 f"{list(sample)}")
        return {key: _collate([s[key] for s in samples], rows, f"{where}[{key!r}]")
                for key in first}
    for sample, row in zip(samples, rows):
        if len(sample) != len(first):
            raise ValueError(f"cannot batch sequences of different lengths: dataset[{rows[0]}]"
                             f"{where} has {len(first)} elements, dataset[{row}]{where} has "
                             f"{len(sample)}")
    parts = [_collate([s[i] for s in samples], rows, f"{where}[{i}]")
             for i in range(len(first))]
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # a namedtuple
        return type(first)(*parts)
    return tuple(parts) if isinstance(first, tuple) else parts


def default_collate(batch):
    """A list of samples collated into one batch, as DataLoader does without a collate_fn
    (and as torch's default_collate, but for tuples, which stay tuples)."""
    if not isinstance(batch, (list, tuple)) or not batch:
        raise TypeError(f"default_collate: batch must be a non-empty list of samples, got "
                        f"{type(batch).__name__}")
    return _collate(list(batch), list(range(len(batch))))


# ---- the loader ------------------------------------------------------------------------------

class DataLoader:
    """Iterate over `dataset` in batches of ``batch_size`` samples.

    `dataset` is a tuple of arrays with the same first dimension, such as ``(images,
    labels)``, or a map-style data set: a TensorDataset, a Subset or ConcatDataset, a Dataset
    of your own, a list of samples. A tuple of arrays or a TensorDataset (or a Subset of one)
    yields a tuple of Tensors per batch, floats as float32 and integers as int64 for arrays.
    Another data set yields its samples collated as torch's default_collate does: Tensors and
    arrays stacked on a new first axis, numbers made a 1-d tensor (floats float32, integers
    int64), tuples, lists and dicts collated element by element. A bare array or Tensor is
    refused: wrap it, as ``(x,)`` or ``TensorDataset(x)``.

    ``shuffle=True`` visits the samples in a new random order each epoch; the order of epoch e
    is fixed by ``(seed, e)``. Each ``iter(loader)`` runs the next epoch; ``set_epoch(e)``
    picks the epoch the next iteration runs (to resume). ``drop_last=True`` skips a final
    batch smaller than ``batch_size``. With ``seed=None`` the seed is drawn from pyrt's
    generator, so ``pyrt.manual_seed`` fixes it. Without shuffling a batch of a tuple of arrays
    or of a TensorDataset is a view of the data's rows, as slicing a Tensor is (no copy per
    step): copy it before writing into it. A TensorDataset's tensors and a Subset's indices
    are read once, when the loader is built.

    torch's other arguments: ``sampler`` (the indices' order: a Sampler, or any iterable of
    indices with a length; not with shuffle), ``batch_sampler`` (lists of indices, each a
    batch; alone), ``batch_size=None`` (samples one by one, unbatched, each passed through
    collate_fn or default_convert), and ``collate_fn`` (called on each batch's list of
    samples, as dataset[i] gives them). ``num_workers``, ``pin_memory``, ``timeout``,
    ``worker_init_fn``, ``prefetch_factor`` and the like are taken and change nothing: samples
    are read in the calling process, whose kernels already use every core
    (``get_worker_info()`` is None). The shuffle is seeded with ``seed``, else with a draw
    from ``generator`` (a pyrt.Generator), else from pyrt.manual_seed.

    An IterableDataset is read as a stream, one ``iter(dataset)`` per epoch: each batch is the
    next ``batch_size`` samples, collated (a last, shorter batch dropped with ``drop_last``).
    It takes no shuffle, sampler or batch_sampler, as in torch; ``len(loader)`` needs the data
    set's ``__len__``, and a stream that yields more batches than ``len(loader)`` said warns.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True, seed=None):
        self.dataset = dataset
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            # a stream has no indices to sample or shuffle
            options = {"shuffle": None if shuffle in (None, False) else shuffle,
                       "sampler": sampler, "batch_sampler": batch_sampler}
            for name, value in options.items():
                if value is not None:
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                     f"{name} option, but got {name}={value!r}")
            self._columns, self._rows = None, None
        else:
            self._columns, self._rows = _columns_of(dataset)
        self._len_reported = None  # what len() said of a stream, for the warning in __iter__
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None:
            if drop_last:
                raise ValueError("batch_size=None option disables auto-batching and is "
                                 "mutually exclusive with drop_last")
        else:
            batch_size = _positive_int(batch_size, "batch_size")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        for value, name in ((num_workers, "num_workers"), (timeout, "timeout")):
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or value < 0:
                raise ValueError(f"{name} option should be non-negative, got {value!r}")
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError(f"collate_fn must be callable, got {type(collate_fn).__name__}")
        if generator is not None and seed is None:  # a pyrt.Generator seeds the shuffles
            seed = int(_draw_source(generator, "DataLoader").integers(0, 2**63 - 1))
        self.batch_size = batch_size
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.sampler, self.batch_sampler, self.collate_fn = sampler, batch_sampler, collate_fn
        # samples are read in the calling process: pyrt's kernels already use every core, and
        # the worker and memory-pinning options of torch's loader change nothing here
        self.num_workers = int(num_workers)
        seed = checked_seed(seed, none_allowed=True)
        if seed is None:
            seed = int(generator_of_pyrt().integers(0, 2**63 - 1))
        self.seed = seed
        self.epoch = 0

    @property
    def num_samples(self):
        if self._columns is None:
            return len(self.dataset)
        return len(self._columns[0]) if self._rows is None else len(self._rows)

    def __len__(self):
        """The number of batches in an epoch (for an IterableDataset, from its __len__)."""
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            self._len_reported = n
            return n
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        n = self.num_samples if self.sampler is None else len(self.sampler)
        if self.batch_size is None:
            return n
        if self.drop_last:
            return n // self.batch_size
        return (n + self.batch_size - 1) // self.batch_size

    def set_epoch(self, epoch):
        """Make the next iteration run epoch `epoch` (its shuffle order included)."""
        if isinstance(epoch, bool) or not isinstance(epoch, numbers.Integral) or epoch < 0:
            raise ValueError(f"epoch must be a non-negative integer, got {epoch!r}")
        self.epoch = int(epoch)

    def order(self, epoch):
        """The sample order of `epoch`: a permutation when shuffling, else ``None`` (in
        order)."""
        if not self.shuffle:
            return None
        return np.random.default_rng((self.seed, epoch)).permutation(self.num_samples)

    def __iter__(self):
        # the epoch is taken here, at iter(), not at the first batch
        order = self.order(self.epoch)
        self.epoch += 1
        if self._iterable:
            return self._stream_batches(iter(self.dataset), self._len_reported)
        batches = self._index_batches(order)
        if self.batch_size is None and self.batch_sampler is None:
            convert = self.collate_fn or default_convert
            return (convert(self._sample(i)) for i in batches)
        if self.collate_fn is not None:
            return (self.collate_fn([self._sample(i) for i in _listed(rows)])
                    for rows in batches)
        if self._columns is None:
            return self._sample_batches(batches)
        return self._column_batches(batches)

    def _index_batches(self, order):
        """The positions of each batch: [lo, hi) slices of the epoch's order (lists of
        indices with a sampler or batch sampler; single indices with batch_size=None)."""
        if self.batch_sampler is not None:
            return (list(b) for b in self.batch_sampler)
        if self.sampler is not None:
            if self.batch_size is None:
                return iter(self.sampler)
            return (list(b) for b in BatchSampler(self.sampler, self.batch_size,
                                                  self.drop_last))
        bs, n = self.batch_size, self.num_samples
        if bs is None:
            return iter(range(n) if order is None else order.tolist())
        spans = ((b * bs, min((b + 1) * bs, n)) for b in range(len(self)))
        return (slice(lo, hi) if order is None else order[lo:hi].tolist() for lo, hi in spans)

    def _stream_batches(self, samples, reported):
        """The batches of an IterableDataset: each batch_size consecutive samples of the
        stream, collated (the last, shorter one dropped with drop_last), or with
        batch_size=None each sample converted. A batch past the length that len() reported
        warns, as in torch: the data set's __len__ does not match its stream."""
        fetched = 0
        while True:
            if self.batch_size is None:
                sample = next(samples, _END)
                if sample is _END:
                    return
                batch = (self.collate_fn or default_convert)(sample)
            else:
                chunk = [s for _, s in zip(range(self.batch_size), samples)]
                if not chunk or (self.drop_last and len(chunk) < self.batch_size):
                    return
                if self.collate_fn is not None:
                    batch = self.collate_fn(chunk)
                else:  # rows name the samples' positions in the stream, in errors
                    batch = _collate(chunk, list(range(fetched * self.batch_size,
                                                       fetched * self.batch_size + len(chunk))))
            fetched += 1
            if reported is not None and fetched > reported:
                warnings.warn(f"Length of IterableDataset {self.dataset} was reported to be "
                              f"{reported} batches (when accessing len(dataloader)), but "
                              f"{fetched} batches have been fetched.", stacklevel=2)
            yield batch

    def _sample(self, i):
        """Sample i of the data set, as dataset[i] gives it (a tuple of Tensors for columns)."""
        if self._columns is None:
            return self.dataset[i]
        row = i if self._rows is None else self._rows[i]
        return tuple(Tensor(F._xp(c).asarray(c[row])) for c in self._columns)

    def _column_batches(self, batches):
        for positions in batches:
            rows = positions if self._rows is None else self._rows[positions]
            yield tuple(Tensor(_take(c, rows)) for c in self._columns)

    def _sample_batches(self, batches):
        for positions in batches:
            rows = _listed(positions)
            samples = [self.dataset[i] for i in rows]
            try:
                batch = _collate(samples, rows)
            except ValueError as exc:
                if not isinstance(self.dataset, list):
                    raise
                raise ValueError(f"{exc}{_LIST_HINT}") from None
            yield batch


_END = object()  # the end of a stream, for next()


def _listed(positions):
    """A batch's positions as a list (a slice spelled out)."""
    if isinstance(positions, slice):
        return list(range(positions.start, positions.stop))
    return list(positions)
