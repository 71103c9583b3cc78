"""IterableDataset, ChainDataset, StackDataset, DataLoader over streams, DistributedSampler,
default_convert and get_worker_info: batches and orders against torch.utils.data where
installed, and against orders written out by hand; torch's errors for bad arguments."""

import collections
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt.data.distributed import torch_randperm
from pyrt.utils.data import (
    ChainDataset,
    DataLoader,
    Dataset,
    DistributedSampler,
    IterableDataset,
    StackDataset,
    TensorDataset,
    default_convert,
    get_worker_info,
)

try:
    import torch
    import torch.utils.data as tud
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
small = settings(max_examples=20, deadline=None, derandomize=True)


def values(batch):
    """A batch as nested Python lists (tuples as lists, dicts by key), for comparisons."""
    if isinstance(batch, dict):
        return {key: values(value) for key, value in batch.items()}
    if isinstance(batch, (tuple, list)):
        return [values(b) for b in batch]
    if hasattr(batch, "numpy"):
        batch = batch.numpy()
    return np.asarray(batch).tolist()


def rows(n, seed=0):
    """n samples (features, label): float32 rows of 3 and int labels."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 3)).astype(np.float32), rng.integers(0, 5, n)


class Stream(IterableDataset):
    """The samples (x[i], y[i]) in order; with `length`, a __len__ reporting it."""

    def __init__(self, x, y, length=None):
        self.x, self.y, self.length = x, y, length

    def __iter__(self):
        return ((self.x[i], int(self.y[i])) for i in range(len(self.x)))

    def __len__(self):
        if self.length is None:
            raise TypeError(f"object of type '{type(self).__name__}' has no len()")
        return self.length


if torch is not None:
    class TorchStream(tud.IterableDataset):
        def __init__(self, x, y):
            self.x, self.y = torch.tensor(x), y

        def __iter__(self):
            return ((self.x[i], int(self.y[i])) for i in range(len(self.x)))

        def __len__(self):
            return len(self.x)


def chunked(x, y, batch_size, drop_last):
    """The batches of the stream written out: consecutive slices of batch_size rows."""
    out = []
    for lo in range(0, len(x), batch_size):
        hi = min(lo + batch_size, len(x))
        if drop_last and hi - lo < batch_size:
            break
        out.append([x[lo:hi].tolist(), y[lo:hi].tolist()])
    return out


# ---- DataLoader over an IterableDataset -------------------------------------------------------

@small
@given(n=st.integers(0, 23), batch_size=st.integers(1, 7), drop_last=st.booleans())
def test_stream_batches(n, batch_size, drop_last):
    x, y = rows(n, seed=n)
    loader = DataLoader(Stream(x, y, n), batch_size, drop_last=drop_last)
    ours = [values(b) for b in loader]
    assert ours == chunked(x, y, batch_size, drop_last)
    assert len(loader) == len(ours)
    batch = next(iter(loader), None)
    if batch is not None:
        assert batch[0].dtype == pyrt.float32 and batch[1].dtype == pyrt.int64
    if torch is not None:
        theirs = tud.DataLoader(TorchStream(x, y), batch_size, drop_last=drop_last)
        assert ours == [values(b) for b in theirs]
        assert len(loader) == len(theirs)


@needs_torch
def test_stream_unbatched_and_collate_fn():
    x, y = rows(5)
    ours = DataLoader(Stream(x, y, 5), batch_size=None)
    theirs = tud.DataLoader(TorchStream(x, y), batch_size=None)
    got = list(ours)
    assert [values(s) for s in got] == [values(s) for s in theirs]
    assert isinstance(got[0][0], pyrt.Tensor)  # default_convert made the array a Tensor
    assert len(ours) == len(theirs) == 5

    def firsts(batch):
        return [label for _, label in batch]
    assert list(DataLoader(Stream(x, y), 2, collate_fn=firsts)) == \
        list(tud.DataLoader(TorchStream(x, y), 2, collate_fn=firsts)) == \
        [y[:2].tolist(), y[2:4].tolist(), y[4:].tolist()]


def test_stream_unbatched_with_collate_fn_gets_each_sample():
    x, y = rows(3)
    seen = list(DataLoader(Stream(x, y), batch_size=None, collate_fn=lambda s: s[1]))
    assert seen == y.tolist()


def test_stream_dict_samples_and_epochs():
    class Dicts(IterableDataset):
        def __iter__(self):
            return iter([{"a": np.float32(i), "b": [i, 2 * i]} for i in range(5)])

    loader = DataLoader(Dicts(), 2)
    for _ in range(2):  # each iter() is a new epoch reading a new stream
        got = [values(b) for b in loader]
        assert got == [{"a": [0.0, 1.0], "b": [[0, 1], [0, 2]]},
                       {"a": [2.0, 3.0], "b": [[2, 3], [4, 6]]},
                       {"a": [4.0], "b": [[4], [8]]}]


def test_stream_len_and_warning():
    x, y = rows(7)
    with pytest.raises(TypeError, match="has no len"):
        len(DataLoader(Stream(x, y), 2))
    loader = DataLoader(Stream(x, y, length=2), 2)  # says 2 samples, yields 7
    assert len(loader) == 1
    with pytest.warns(UserWarning, match="Length of IterableDataset .* was reported to be 1"):
        assert len(list(loader)) == 4
    with warnings.catch_warnings():  # a truthful length, or none asked for, does not warn
        warnings.simplefilter("error")
        honest = DataLoader(Stream(x, y, length=7), 2)
        assert len(honest) == 4 and len(list(honest)) == 4
        assert len(list(DataLoader(Stream(x, y, length=2), 2))) == 4


def test_stream_errors_as_torch():
    x, y = rows(4)
    cases = [(dict(shuffle=True), "expected unspecified shuffle option"),
             (dict(sampler=[0, 1]), "expected unspecified sampler option"),
             (dict(batch_sampler=[[0, 1]]), "expected unspecified batch_sampler option")]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            DataLoader(Stream(x, y), **kwargs)
        if torch is not None:
            with pytest.raises(ValueError, match=message):
                tud.DataLoader(TorchStream(x, y), **kwargs)
    assert len(list(DataLoader(Stream(x, y), 2, shuffle=False))) == 2
    with pytest.raises(ValueError, match="mutually exclusive with drop_last"):
        DataLoader(Stream(x, y), batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        DataLoader(Stream(x, y), batch_size=0)
    with pytest.raises(NotImplementedError, match="should implement __iter__"):
        list(DataLoader(IterableDataset(), 2))


def test_stream_collate_error_names_the_sample():
    class Ragged(IterableDataset):
        def __iter__(self):
            return iter([np.zeros(2), np.zeros(2), np.zeros(2), np.zeros(3)])

    with pytest.raises(ValueError, match=r"dataset\[3\] has shape \(3,\)"):
        list(DataLoader(Ragged(), 2))


def test_get_worker_info_is_none_in_loading():
    seen = []

    class Watcher(IterableDataset):
        def __iter__(self):
            seen.append(get_worker_info())
            return iter(range(3))

    assert get_worker_info() is None
    assert values(list(DataLoader(Watcher(), 2, num_workers=2))) == [[0, 1], [2]]
    assert seen == [None]


# ---- ChainDataset ----------------------------------------------------------------------------

class Count(IterableDataset):
    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def __iter__(self):
        return iter(range(self.lo, self.hi))

    def __len__(self):
        return self.hi - self.lo


def test_chain_dataset():
    a, b, c = Count(0, 3), Count(10, 12), Count(20, 20)
    chained = a + b
    assert isinstance(chained, ChainDataset) and chained.datasets == [a, b]
    assert list(chained) == [0, 1, 2, 10, 11] and len(chained) == 5
    assert list(chained + c) == list(chained) and len(chained + c) == 5
    everything = ChainDataset([a, c, b])
    assert list(everything) == list(everything) == [0, 1, 2, 10, 11]  # each iter() anew
    assert values(list(DataLoader(everything, 2))) == [[0, 1], [2, 10], [11]]
    if torch is not None:
        class TorchCount(tud.IterableDataset):
            def __init__(self, counts):
                self.counts = counts

            def __iter__(self):
                return iter(self.counts)

        theirs = tud.ChainDataset([TorchCount(d) for d in (a, c, b)])
        assert values(list(tud.DataLoader(theirs, 2))) == [[0, 1], [2, 10], [11]]


def test_chain_dataset_errors():
    mixed = ChainDataset([Count(0, 2), [5, 6]])
    iterator = iter(mixed)
    assert [next(iterator), next(iterator)] == [0, 1]  # raises when it reaches the list
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        next(iterator)
    with pytest.raises(ValueError, match="only supports IterableDataset, got list"):
        len(mixed)
    with pytest.raises(TypeError):
        len(Count(0, 2) + IterableDataset())
    if torch is not None:
        with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
            list(tud.ChainDataset([Count(0, 2), [5, 6]]))


# ---- StackDataset ----------------------------------------------------------------------------

def test_stack_dataset():
    x, y = rows(5)
    features, labels = TensorDataset(x), list(y)
    pair = StackDataset(features, labels)
    assert len(pair) == 5 and pair.datasets == (features, labels)
    sample = pair[3]
    assert isinstance(sample, tuple) and len(sample) == 2
    assert values(sample[0]) == [x[3].tolist()] and sample[1] == y[3]
    named = StackDataset(image=features, label=labels)
    assert list(named[1]) == ["image", "label"] and named[1]["label"] == y[1]
    assert [s[1] for s in pair.__getitems__([4, 0])] == [y[4], y[0]]
    assert [s["label"] for s in named.__getitems__([2])] == [y[2]]


class Batched(Dataset):
    """A data set that reads several samples at once, and one that misreports them."""

    def __init__(self, short=False):
        self.short = short

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return 10 * i

    def __getitems__(self, indices):
        return [10 * i for i in indices][:len(indices) - self.short]


def test_stack_dataset_getitems_uses_members():
    stacked = StackDataset(Batched(), list("abcd"))
    assert stacked.__getitems__([3, 1]) == [(30, "d"), (10, "b")]
    assert StackDataset(n=Batched()).__getitems__([2]) == [{"n": 20}]
    with pytest.raises(ValueError, match="Nested dataset's output size mismatch. Expected 2"):
        StackDataset(Batched(short=True)).__getitems__([0, 1])


@small
@given(n=st.integers(1, 12), batch_size=st.integers(1, 5), named=st.booleans())
def test_stack_dataset_batches(n, batch_size, named):
    x, y = rows(n, seed=n)
    parts = [list(x), list(y)]
    stacked = StackDataset(x=parts[0], y=parts[1]) if named else StackDataset(*parts)
    ours = [values(b) for b in DataLoader(stacked, batch_size)]
    expected = [[r[0], r[1]] for r in chunked(x, y, batch_size, False)]
    if named:
        expected = [{"x": xs, "y": ys} for xs, ys in expected]
    assert ours == expected
    if torch is not None:
        tparts = [[torch.tensor(r) for r in x], [int(v) for v in y]]
        theirs = (tud.StackDataset(x=tparts[0], y=tparts[1]) if named
                  else tud.StackDataset(*tparts))
        assert ours == [values(b) for b in tud.DataLoader(theirs, batch_size)]


def test_stack_dataset_errors_as_torch():
    modules = [StackDataset] + ([tud.StackDataset] if torch is not None else [])
    for stack in modules:
        with pytest.raises(ValueError, match="both types are given"):
            stack([1, 2], b=[3, 4])
        with pytest.raises(ValueError, match="At least one dataset should be passed"):
            stack()
        with pytest.raises(ValueError, match="Size mismatch between datasets"):
            stack([1, 2], [3])
        with pytest.raises(ValueError, match="Size mismatch between datasets"):
            stack(a=[1, 2], b=[3])
    with pytest.raises(IndexError):
        StackDataset([1, 2])[2]


# ---- DistributedSampler ----------------------------------------------------------------------

def padded(order, total_size):
    """torch's padding written out: the order, then its start again until total_size."""
    out = list(order)
    while len(out) < total_size:
        out += order[:total_size - len(out)]
    return out[:total_size]


@small
@given(n=st.integers(0, 30), replicas=st.integers(1, 7), shuffle=st.booleans(),
       drop_last=st.booleans(), seed=st.integers(0, 2**40), epoch=st.integers(0, 5))
def test_distributed_sampler_partition(n, replicas, shuffle, drop_last, seed, epoch):
    data = list(range(n))
    shares = []
    for rank in range(replicas):
        sampler = DistributedSampler(data, replicas, rank, shuffle=shuffle, seed=seed,
                                     drop_last=drop_last)
        sampler.set_epoch(epoch)
        shares.append(list(sampler))
        assert len(shares[-1]) == len(sampler) == sampler.num_samples
    per_rank = (n // replicas if drop_last else math.ceil(n / replicas))
    assert sampler.num_samples == per_rank and sampler.total_size == per_rank * replicas
    # the ranks' shares, interleaved, are the padded order: together they partition it
    merged = [shares[r][i] for i in range(per_rank) for r in range(replicas)]
    order = torch_randperm(n, seed + epoch) if shuffle else list(range(n))
    assert sorted(order) == list(range(n))
    if drop_last:
        assert merged == order[:per_rank * replicas]
        assert len(set(merged)) == len(merged)  # no sample twice
    else:
        assert merged == padded(order, per_rank * replicas)
        assert set(merged) == set(range(n))  # every sample at least once
    if torch is not None:
        for rank in range(replicas):
            theirs = tud.DistributedSampler(data, replicas, rank, shuffle=shuffle, seed=seed,
                                            drop_last=drop_last)
            theirs.set_epoch(epoch)
            assert list(theirs) == shares[rank]


def test_distributed_sampler_unshuffled_order_written_out():
    assert list(DistributedSampler(range(10), 3, 0, shuffle=False)) == [0, 3, 6, 9]
    assert list(DistributedSampler(range(10), 3, 1, shuffle=False)) == [1, 4, 7, 0]
    assert list(DistributedSampler(range(10), 3, 2, shuffle=False)) == [2, 5, 8, 1]
    assert list(DistributedSampler(range(10), 3, 2, shuffle=False, drop_last=True)) == [2, 5, 8]
    assert list(DistributedSampler(range(2), 5, 4, shuffle=False)) == [0]  # padded twice over
    assert list(DistributedSampler(range(2), 5, 4, shuffle=False, drop_last=True)) == []


def test_distributed_sampler_epochs():
    sampler = DistributedSampler(range(50), 2, 1, seed=3)
    first = list(sampler)
    assert list(sampler) == first  # the same epoch, the same order
    sampler.set_epoch(1)
    second = list(sampler)
    assert second != first
    assert list(DistributedSampler(range(50), 2, 1, seed=4)) == second  # seed + epoch
    default = DistributedSampler(range(6))  # one process: rank 0 of 1, everything
    assert default.num_replicas == 1 and default.rank == 0
    assert sorted(default) == list(range(6))
    assert list(DistributedSampler(range(6), shuffle=False)) == list(range(6))


@small
@given(n=st.integers(0, 300), seed=st.integers(-2**63, 2**64 - 1))
def test_torch_randperm(n, seed):
    order = torch_randperm(n, seed)
    assert sorted(order) == list(range(n))
    if torch is not None:
        generator = torch.Generator().manual_seed(seed)
        assert order == torch.randperm(n, generator=generator).tolist()


def test_torch_randperm_written_out():
    # MT19937's first outputs for seed 5489 (the reference seed) are 3499211612, 581869302,
    # 3890346734, 3586334585: position i swaps with i + output_i mod (n - i)
    order = list(range(5))
    for i, draw in enumerate([3499211612, 581869302, 3890346734, 3586334585]):
        j = i + draw % (5 - i)
        order[i], order[j] = order[j], order[i]
    assert torch_randperm(5, 5489) == order


def test_distributed_sampler_in_a_loader():
    x, y = rows(9)
    sampler = DistributedSampler(range(9), 2, 1, shuffle=False)
    got = [values(b) for b in DataLoader(TensorDataset(x, y), 2, sampler=sampler)]
    assert got == [[x[[1, 3]].tolist(), y[[1, 3]].tolist()],
                   [x[[5, 7]].tolist(), y[[5, 7]].tolist()], [[x[0].tolist()], [y[0]]]]


def test_distributed_sampler_errors():
    for sampler in [DistributedSampler] + ([tud.DistributedSampler] if torch else []):
        with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the "
                                             r"interval \[0, 2\]"):
            sampler(range(4), num_replicas=3, rank=3)
        with pytest.raises(ValueError, match="Invalid rank -1"):
            sampler(range(4), num_replicas=3, rank=-1)
    with pytest.raises(ValueError, match="num_replicas should be a positive integer"):
        DistributedSampler(range(4), num_replicas=0, rank=0)
    with pytest.raises(TypeError, match="num_replicas must be an integer"):
        DistributedSampler(range(4), num_replicas=2.0, rank=0)
    with pytest.raises(TypeError, match="seed must be an integer"):
        DistributedSampler(range(4), 2, 0, seed="7")
    with pytest.raises(TypeError, match="epoch must be an integer"):
        DistributedSampler(range(4), 2, 0).set_epoch(1.5)
    with pytest.raises(TypeError):
        DistributedSampler(Count(0, 3).__iter__(), 2, 0)  # no len()


# ---- default_convert -------------------------------------------------------------------------

Point = collections.namedtuple("Point", ["x", "y"])


def test_default_convert():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = default_convert(a)
    assert isinstance(t, pyrt.Tensor) and t.dtype == pyrt.float32 and values(t) == a.tolist()
    assert default_convert(np.int32(4)).dtype == pyrt.int64
    assert default_convert(3) == 3 and default_convert("ab") == "ab"
    assert default_convert(t) is t
    strings = np.array(["a", "b"])
    assert default_convert(strings) is strings
    assert default_convert(np.str_("s")) == "s"
    nested = default_convert({"p": Point(np.float32(1), 2), "q": [np.zeros(2), (np.ones(1),)]})
    assert isinstance(nested["p"], Point) and isinstance(nested["p"].x, pyrt.Tensor)
    assert nested["p"].y == 2
    assert isinstance(nested["q"], list) and isinstance(nested["q"][1], tuple)
    assert values(nested) == {"p": [1.0, 2], "q": [[0.0, 0.0], [[1.0]]]}
    assert default_convert(range(2)) == [0, 1]  # rebuilding a range fails: a list
    ordered = collections.OrderedDict(b=np.ones(1), a=1)
    assert type(default_convert(ordered)) is collections.OrderedDict
    with pytest.raises(TypeError, match="dtype complex128 cannot be made one"):
        default_convert(np.ones(2, dtype=complex))


@needs_torch
def test_default_convert_as_torch():
    samples = [np.arange(4, dtype=np.float32), {"a": np.int64(3), "b": [np.ones(2), 5, "s"]},
               Point(np.zeros(1, np.float32), 1.5), 7, "text", [np.int64(1), 2.0]]
    for sample in samples:
        assert values(default_convert(sample)) == values(tud.default_convert(sample))


def test_map_style_unbatched_samples_are_converted():
    class Arrays(Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return np.full(2, i, np.float32), i

    got = list(DataLoader(Arrays(), batch_size=None))
    assert isinstance(got[0][0], pyrt.Tensor) and values(got) == [
        [[i, i], i] for i in range(3)]
    if torch is not None:
        assert values(got) == values(list(tud.DataLoader(Arrays(), batch_size=None)))


def test_names_as_torch_utils_data():
    import pyrt.data
    import pyrt.utils.data as ours
    names = ["IterableDataset", "ChainDataset", "StackDataset", "DistributedSampler",
             "get_worker_info", "default_convert", "WeightedRandomSampler", "BatchSampler",
             "SubsetRandomSampler"]
    for name in names:
        assert getattr(ours, name) is getattr(pyrt.data, name)
        assert name in ours.__all__
        if torch is not None:
            assert hasattr(tud, name)


def test_concat_dataset_refuses_an_iterable_dataset_as_torch_does():
    class Stream(pyrt.data.IterableDataset):
        def __iter__(self):
            return iter(range(3))

    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        pyrt.data.ConcatDataset([pyrt.data.TensorDataset(pyrt.zeros(2)), Stream()])
