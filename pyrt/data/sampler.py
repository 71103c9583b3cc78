"""Samplers, as torch.utils.data's: the order in which a DataLoader visits a data set's
indices (SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler) and
their grouping into batches (BatchSampler). The random ones draw from a NumPy generator seeded
from pyrt's (pyrt.manual_seed) when they are made, or from `seed`; each iteration draws anew.
"""

import numbers

import numpy as np

from pyrt.tensor import Tensor, checked_seed, generator

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler",
           "SubsetRandomSampler", "WeightedRandomSampler"]


def _count(value, name, minimum=0):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} should be an integer of at least {minimum}, got {value!r}")
    return int(value)


def _rng(seed):
    seed = checked_seed(seed, none_allowed=True)
    return np.random.default_rng(int(generator().integers(0, 2**63 - 1)) if seed is None
                                 else seed)


class Sampler:
    """The base class: an iterable of data set indices (its __iter__), with a __len__."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """The indices in a random order (a new one each iteration), or with `replacement`
    num_samples indices drawn uniformly."""

    def __init__(self, data_source, replacement=False, num_samples=None, seed=None):
        self.data_source = data_source
        self.replacement = bool(replacement)
        self._num_samples = None if num_samples is None else _count(num_samples,
                                                                    "num_samples", 1)
        self._rng = _rng(seed)

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        if self.replacement:
            return iter(self._rng.integers(0, n, self.num_samples).tolist())
        order = []
        while len(order) < self.num_samples:  # more samples than the data: whole rounds
            order.extend(self._rng.permutation(n).tolist())
        return iter(order[:self.num_samples])

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a random order each iteration."""

    def __init__(self, indices, seed=None):
        self.indices = list(indices)
        self._rng = _rng(seed)

    def __iter__(self):
        return iter([self.indices[i] for i in self._rng.permutation(len(self.indices))])

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices 0..len(weights) - 1 drawn with probabilities proportional to
    `weights` (with replacement, or each at most once)."""

    def __init__(self, weights, num_samples, replacement=True, seed=None):
        w = np.asarray(weights.numpy() if isinstance(weights, Tensor) else weights, np.float64)
        if w.ndim != 1 or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
            raise ValueError("weights should be a 1-d sequence of non-negative, finite numbers "
                             "with a positive sum")
        self.weights = w
        self.num_samples = _count(num_samples, "num_samples", 1)
        self.replacement = bool(replacement)
        if not self.replacement and self.num_samples > (w > 0).sum():
            raise ValueError("num_samples exceeds the indices of nonzero weight, drawn "
                             "without replacement")
        self._rng = _rng(seed)

    def __iter__(self):
        p = self.weights / self.weights.sum()
        return iter(self._rng.choice(len(p), self.num_samples, self.replacement, p).tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """The indices of `sampler` in lists of batch_size (the last one shorter, unless
    drop_last)."""

    def __init__(self, sampler, batch_size, drop_last):
        self.sampler = sampler
        self.batch_size = _count(batch_size, "batch_size", 1)
        self.drop_last = bool(drop_last)

    def __iter__(self):
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
