"""DataLoader's torch arguments (sampler, batch_sampler, batch_size=None, collate_fn, and the
worker options it takes without effect), the samplers, default_collate and pyrt.utils.data:
the batches against torch's DataLoader where the order is deterministic, the random samplers
against their distributions, and torch's errors for arguments that exclude each other."""

import numpy as np
import pytest

import pyrt
from pyrt.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
)

try:
    import torch
    import torch.utils.data as tud
except ImportError:
    torch = None


class Ragged(Dataset):
    """Samples of different lengths, which only a collate_fn can batch."""

    def __len__(self):
        return 7

    def __getitem__(self, i):
        return np.arange(i % 4 + 1, dtype=np.float32), i


def pad(batch):
    longest = max(len(x) for x, _ in batch)
    xs = np.stack([np.pad(x, (0, longest - len(x))) for x, _ in batch])
    return pyrt.tensor(xs), pyrt.tensor([y for _, y in batch])


def values(batch):
    if isinstance(batch, (tuple, list)):
        return [values(b) for b in batch]
    return np.asarray(batch.numpy() if hasattr(batch, "numpy") else batch).tolist()


@pytest.mark.parametrize("kind", ["columns", "tensors", "samples"])
def test_orders_and_batches_as_torch(kind):
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10)
    ours = {"columns": (x, y), "tensors": TensorDataset(pyrt.tensor(x), pyrt.tensor(y)),
            "samples": [(x[i], int(y[i])) for i in range(10)]}[kind]
    index_lists = [[3, 1], [0, 9, 8], [5]]
    loaders = [
        (DataLoader(ours, 3, sampler=[9, 2, 4, 4, 0]), dict(batch_size=3,
                                                           sampler=[9, 2, 4, 4, 0])),
        (DataLoader(ours, 2, sampler=SequentialSampler(range(10)), drop_last=True),
         dict(batch_size=2, drop_last=True)),
        (DataLoader(ours, batch_sampler=index_lists), dict(batch_sampler=index_lists)),
        (DataLoader(ours, batch_size=None), dict(batch_size=None)),
        (DataLoader(ours, 4, num_workers=2, pin_memory=True, timeout=5, prefetch_factor=2,
                    persistent_workers=True), dict(batch_size=4)),
    ]
    for loader, _ in loaders:
        assert len(list(loader)) == len(loader)
    if torch is None:
        return
    theirs = tud.TensorDataset(torch.tensor(x), torch.tensor(y)) if kind != "samples" else [
        (torch.tensor(x[i]), int(y[i])) for i in range(10)]
    for loader, kwargs in loaders:
        a = [values(b) for b in loader]
        b = [values(b) for b in tud.DataLoader(theirs, **kwargs)]
        assert a == b, kwargs


def test_collate_fn():
    batches = list(DataLoader(Ragged(), 3, collate_fn=pad))
    assert [tuple(b[0].shape) for b in batches] == [(3, 3), (3, 4), (1, 3)]
    assert values(batches[1][1]) == [3, 4, 5]
    seen = []
    list(DataLoader(TensorDataset(pyrt.arange(5)), 2, collate_fn=seen.append))
    assert [len(s) for s in seen] == [2, 2, 1]
    assert all(isinstance(sample, tuple) and sample[0].shape == () for s in seen for sample in s)
    if torch is not None:
        theirs = [values(b) for b in tud.DataLoader(Ragged(), 3, collate_fn=pad)]
        assert [values(b) for b in batches] == theirs


def test_random_samplers():
    pyrt.manual_seed(0)
    order = list(RandomSampler(range(50)))
    assert sorted(order) == list(range(50)) and order != list(range(50))
    pyrt.manual_seed(0)
    assert list(RandomSampler(range(50))) == order  # seeded from pyrt's generator
    drawn = list(RandomSampler(range(5), replacement=True, num_samples=4000, seed=1))
    counts = np.bincount(drawn, minlength=5) / 4000
    assert np.abs(counts - 0.2).max() < 0.03
    assert len(list(RandomSampler(range(3), num_samples=7, seed=2))) == 7
    subset = list(SubsetRandomSampler([2, 4, 6], seed=3))
    assert sorted(subset) == [2, 4, 6]
    weighted = list(WeightedRandomSampler([1.0, 0.0, 3.0], 8000, seed=4))
    counts = np.bincount(weighted, minlength=3) / 8000
    assert counts[1] == 0 and abs(counts[2] - 0.75) < 0.03
    once = list(WeightedRandomSampler([1.0, 2.0, 0.0, 4.0], 3, replacement=False, seed=5))
    assert sorted(once) == [0, 1, 3]
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(BatchSampler(range(7), 3, True)) == 2
    loader = DataLoader(TensorDataset(pyrt.arange(10)), 4,
                        sampler=WeightedRandomSampler(np.ones(10), 12, seed=6))
    assert len(loader) == 3 and sum(len(b[0]) for b in loader) == 12


def test_default_collate_and_errors():
    batch = default_collate([(1, 2.0, "a"), (3, 4.0, "b")])
    assert values(batch[:2]) == [[1, 3], [2.0, 4.0]] and batch[2] == ["a", "b"]
    ds = TensorDataset(pyrt.arange(4))
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(ds, 2, shuffle=True, sampler=[0, 1])
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(ds, 2, batch_sampler=[[0]])
    with pytest.raises(ValueError, match="mutually exclusive with drop_last"):
        DataLoader(ds, batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, 2, num_workers=-1)
    with pytest.raises(TypeError, match="collate_fn must be callable"):
        DataLoader(ds, 2, collate_fn=3)
    with pytest.raises(TypeError, match="'generator' must be a pyrt.Generator"):
        DataLoader(ds, 2, generator=object())
    with pytest.raises(ValueError, match="weights should be a 1-d sequence"):
        WeightedRandomSampler([1.0, -1.0], 3)
    with pytest.raises(ValueError, match="num_samples exceeds"):
        WeightedRandomSampler([1.0, 0.0], 2, replacement=False)
    with pytest.raises(TypeError, match="non-empty list of samples"):
        default_collate([])
    assert pyrt.utils.data.DataLoader is pyrt.data.DataLoader
