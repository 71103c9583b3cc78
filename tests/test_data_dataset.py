"""pyrt.data's map-style data sets and the DataLoader over them, against torch.utils.data."""

import collections
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt.data import ConcatDataset, DataLoader, Dataset, Subset, TensorDataset, random_split

SETTINGS = settings(max_examples=30, deadline=None, derandomize=True)


def _torch():
    return pytest.importorskip("torch")


def _columns(n, seed=0):
    """(features, labels) as float32 and int64 arrays of n rows: labels are the row numbers,
    so a batch's labels say which rows it holds."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 3)).astype(np.float32), np.arange(n, dtype=np.int64)


def _torch_dtype_as_pyrt(dtype):
    """The dtype pyrt gives where torch gives `dtype`: the same, except that pyrt batches
    floats as float32 (its kernels' dtype) where torch makes Python floats float64."""
    torch = _torch()
    return {torch.float32: pyrt.float32, torch.float64: pyrt.float32,
            torch.int64: pyrt.int64, torch.bool: pyrt.bool_}[dtype]


def assert_same(ours, theirs):
    """`ours`, a pyrt batch or sample, holds what `theirs`, torch's, holds: tensors of the
    same shapes, dtypes and values, in the same structure (a tuple of ours may be a list of
    torch's: torch's default_collate turns tuples into lists)."""
    torch = _torch()
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, pyrt.Tensor), type(ours)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert ours.dtype == _torch_dtype_as_pyrt(theirs.dtype)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs)
        for key in theirs:
            assert_same(ours[key], theirs[key])
    elif isinstance(theirs, (tuple, list)) and not all(isinstance(t, str) for t in theirs):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs)
        if isinstance(theirs, tuple) and hasattr(theirs, "_fields"):
            assert type(ours) is type(theirs)
        for o, t in zip(ours, theirs):
            assert_same(o, t)
    else:
        assert ours == theirs


def assert_same_batches(ours, theirs):
    ours, theirs = list(ours), list(theirs)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert_same(o, t)


Pair = collections.namedtuple("Pair", "label weight")


class Rows(Dataset):
    """A Dataset of one's own: sample i is (features[i], {"pair": (label, weight), "name":
    str}), in NumPy arrays, NumPy scalars and Python numbers, as user data sets return them."""

    def __init__(self, n, seed=0):
        self.features, _ = _columns(n, seed)
        self.labels = np.random.default_rng(seed + 1).integers(0, 10, n)
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.features[i], {"pair": Pair(int(self.labels[i]), i / 4),
                                  "id": np.int64(i), "name": f"row{i}"}


# ---- the data sets ---------------------------------------------------------------------------


@SETTINGS
@given(n=st.integers(1, 20), width=st.integers(1, 3))
def test_tensor_dataset_items_as_torch(n, width):
    torch = _torch()
    x, y = _columns(n)
    z = np.arange(n * width, dtype=np.float32).reshape(n, width) > n  # bools become int64
    ours = TensorDataset(x, pyrt.tensor(y), z)
    theirs = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y),
                                            torch.from_numpy(z.astype(np.int64)))
    assert len(ours) == len(theirs) == n
    for i in [*range(n), -1, -n]:
        assert_same(ours[i], theirs[i])
    assert_same(ours[[0, n - 1]], theirs[[0, n - 1]])
    assert all(isinstance(t, pyrt.Tensor) for t in ours.tensors)
    assert [t.dtype for t in ours.tensors] == [pyrt.float32, pyrt.int64, pyrt.int64]


def test_tensor_dataset_keeps_tensors_and_converts_arrays():
    t = pyrt.randn(4, 2)
    ds = TensorDataset(t, np.ones(4, np.float64), [1, 2, 3, 4])
    assert ds.tensors[0] is t
    assert ds.tensors[1].dtype == pyrt.float32 and ds.tensors[2].dtype == pyrt.int64
    assert isinstance(ds, Dataset)


def test_tensor_dataset_errors_as_torch():
    torch = _torch()
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        torch.utils.data.TensorDataset(torch.zeros(4, 2), torch.zeros(3))
    # pyrt's is an AssertionError as torch's is, and a ValueError as pyrt's input checks are
    for error in (AssertionError, ValueError):
        with pytest.raises(error, match=r"Size mismatch between tensors: .* \[4, 3\]"):
            TensorDataset(np.zeros((4, 2)), pyrt.zeros(3))
    with pytest.raises(TypeError, match="at least one tensor"):
        TensorDataset()
    with pytest.raises(ValueError, match=r"tensors\[1\] must have a first \(sample\) axis"):
        TensorDataset(np.zeros(3), pyrt.tensor(1.0))
    with pytest.raises(TypeError, match=r"tensors\[0\] must hold numbers, got NoneType"):
        TensorDataset(None)


def test_dataset_base_as_torch():
    torch = _torch()
    with pytest.raises(NotImplementedError) as theirs:
        torch.utils.data.Dataset()[0]
    with pytest.raises(NotImplementedError) as ours:
        Dataset()[0]
    assert str(ours.value) == str(theirs.value)


@SETTINGS
@given(n=st.integers(1, 15), data=st.data())
def test_subset_and_concat_items_as_torch(n, data):
    torch = _torch()
    x, y = _columns(n)
    indices = data.draw(st.lists(st.integers(-n, n - 1), max_size=2 * n))
    ours = TensorDataset(x, y)
    theirs = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    sub, tsub = Subset(ours, indices), torch.utils.data.Subset(theirs, indices)
    assert len(sub) == len(tsub) == len(indices)
    for i in range(len(indices)):
        assert_same(sub[i], tsub[i])
    if indices:
        assert_same(sub[[0, len(indices) - 1]], tsub[[0, len(indices) - 1]])
    cat = ConcatDataset([ours, sub, ours])
    tcat = torch.utils.data.ConcatDataset([theirs, tsub, theirs])
    assert len(cat) == len(tcat) and cat.cumulative_sizes == tcat.cumulative_sizes
    for i in range(-len(cat), len(cat)):
        assert_same(cat[i], tcat[i])
    both = ours + sub
    assert isinstance(both, ConcatDataset) and both.datasets == [ours, sub]


def test_concat_errors_as_torch():
    torch = _torch()
    for concat in (torch.utils.data.ConcatDataset, ConcatDataset):
        with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
            concat([])
        with pytest.raises(ValueError, match="absolute value of index should not exceed"):
            concat([range(3), range(2)])[-6]
    cat = ConcatDataset([range(3), range(2)])
    with pytest.raises(ValueError, match="datasets should not be an empty iterable"):
        ConcatDataset(iter(()))
    with pytest.raises(IndexError, match="index 5 is out of range for a ConcatDataset of 5"):
        cat[5]
    with pytest.raises(TypeError, match="indices must be integers, got float"):
        cat[1.0]
    assert [cat[i] for i in range(-5, 5)] == [0, 1, 2, 0, 1] * 2


# ---- random_split ----------------------------------------------------------------------------


def _split(split, dataset, lengths, **kwargs):
    """The sizes of `split`'s result, the warnings it gave, or the error it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            parts = split(dataset, lengths, **kwargs)
        except ValueError as exc:
            return "error", str(exc)
    return [len(p) for p in parts], [str(w.message) for w in caught]


@SETTINGS
@given(n=st.integers(0, 60), weights=st.lists(st.integers(0, 10), min_size=1, max_size=5),
       as_fractions=st.booleans())
def test_random_split_sizes_as_torch(n, weights, as_fractions):
    torch = _torch()
    if as_fractions:
        lengths = [w / sum(weights) for w in weights] if sum(weights) else weights
    else:  # counts summing to n, or (weights past n) not
        lengths = [n * w // max(sum(weights), 1) for w in weights]
        lengths[0] += n - sum(lengths) if weights[0] % 2 else 0
    ours = _split(random_split, range(n), lengths)
    theirs = _split(torch.utils.data.random_split, range(n), lengths,
                    generator=torch.Generator().manual_seed(0))
    assert ours == theirs
    if ours[0] != "error":  # the splits cover the data set, each sample once
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a split left empty, checked above
            parts = random_split(range(n), lengths)
        assert sorted(i for p in parts for i in p) == list(range(n))


def test_random_split_is_reproducible():
    dataset = TensorDataset(*_columns(50))

    def indices(parts):
        return [list(p.indices) for p in parts]

    pyrt.manual_seed(3)
    first, second = indices(random_split(dataset, [0.8, 0.2])), \
        indices(random_split(dataset, [0.8, 0.2]))
    pyrt.manual_seed(3)
    assert indices(random_split(dataset, [40, 10])) == first
    assert first != second  # the draw advances pyrt's generator
    assert [len(p) for p in first] == [40, 10]
    assert indices(random_split(dataset, [25, 25], generator=7)) == \
        indices(random_split(dataset, [25, 25], generator=np.random.default_rng(7)))
    parts = random_split(dataset, [0.5, 0.5], generator=1)
    assert all(isinstance(p, Subset) and p.dataset is dataset for p in parts)


@pytest.mark.parametrize("lengths, kwargs, error, match", [
    ([1.5, -0.5], {}, ValueError, "Fraction at index 0 is not between 0 and 1"),
    ([3, 3], {}, ValueError, "Sum of input lengths does not equal the length"),
    ([0.5, 0.4], {}, ValueError, "Sum of input lengths does not equal the length"),
    ([11, -1], {}, ValueError, r"non-negative counts.*lengths\[1\] = -1"),
    ([5.0, 5.0], {}, ValueError, r"non-negative counts.*lengths\[0\] = 5.0"),
    (["5", 5], {}, TypeError, r"lengths\[0\] must be a count or a fraction, got str"),
    ([5, 5], {"generator": "seed"}, TypeError, "generator must be None"),
    ([5, 5], {"generator": -1}, ValueError, "seed must be a non-negative integer"),
])
def test_random_split_errors(lengths, kwargs, error, match):
    with pytest.raises(error, match=match):
        random_split(range(10), lengths, **kwargs)


# ---- DataLoader: the same batches as torch's -------------------------------------------------


def _loaders(make, n, batch_size, drop_last):
    """A pyrt DataLoader and torch's over the data sets make(n) builds with pyrt and torch."""
    torch = _torch()
    ours, theirs = make(n)
    return (DataLoader(ours, batch_size, drop_last=drop_last),
            torch.utils.data.DataLoader(theirs, batch_size, drop_last=drop_last))


def _tensor_datasets(n):
    torch = _torch()
    x, y = _columns(n)
    return (TensorDataset(x, y),
            torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)))


def _subsets(n):
    torch = _torch()
    ours, theirs = _tensor_datasets(2 * n + 1)
    outer = list(range(2 * n, 0, -2))  # every other row, backwards, then a subset of that
    inner = [i for i in range(n) if i % 3] + [-1]
    return (Subset(Subset(ours, outer), inner),
            torch.utils.data.Subset(torch.utils.data.Subset(theirs, outer), inner))


def _own_datasets(n):
    rows = Rows(n)
    return rows, rows  # torch's DataLoader takes the same object


def _concats(n):
    torch = _torch()
    ours, theirs = _tensor_datasets(n)
    return (ours + Subset(ours, range(n // 2)) + ours,
            torch.utils.data.ConcatDataset(
                [theirs, torch.utils.data.Subset(theirs, range(n // 2)), theirs]))


def _concat_own(n):
    return Rows(n) + Rows(n // 2 + 1, seed=5), Rows(n) + Rows(n // 2 + 1, seed=5)


def _lists(n):
    x, y = _columns(n)
    samples = [(x[i], int(y[i])) for i in range(n)]
    return samples, samples


MAKERS = {"TensorDataset": _tensor_datasets, "Subset": _subsets, "own Dataset": _own_datasets,
          "ConcatDataset": _concats, "own ConcatDataset": _concat_own, "list": _lists}


@pytest.mark.parametrize("kind", MAKERS)
@SETTINGS
@given(n=st.integers(1, 40), batch_size=st.integers(1, 16), drop_last=st.booleans())
def test_loader_batches_as_torch(kind, n, batch_size, drop_last):
    ours, theirs = _loaders(MAKERS[kind], n, batch_size, drop_last)
    assert len(ours) == len(theirs)
    assert_same_batches(ours, theirs)
    assert_same_batches(ours, theirs)  # and again, the next epoch


def _ids(batch):
    """The sample ids of a batch of (features, labels) or of Rows."""
    return batch[1].numpy() if isinstance(batch[1], pyrt.Tensor) else batch[1]["id"].numpy()


@pytest.mark.parametrize("kind", MAKERS)
@SETTINGS
@given(n=st.integers(1, 40), batch_size=st.integers(1, 16), drop_last=st.booleans(),
       seed=st.integers(0, 2**32))
def test_loader_shuffles_deterministically(kind, n, batch_size, drop_last, seed):
    dataset, _ = MAKERS[kind](n)
    plain = [_ids(b) for b in DataLoader(dataset, len(dataset))]
    every_id = np.concatenate(plain) if plain else np.array([], np.int64)
    loader = DataLoader(dataset, batch_size, shuffle=True, drop_last=drop_last, seed=seed)
    epochs = []
    for epoch in range(2):
        batches = list(loader)
        assert len(batches) == len(loader)
        full, rest = divmod(len(dataset), batch_size)
        assert len(loader) == full + (0 if drop_last or rest == 0 else 1)
        assert all(len(b[0]) == batch_size for b in batches[:full])
        ids = np.concatenate([_ids(b) for b in batches]) if batches else every_id[:0]
        # a permutation of the data set's samples (ids repeat in a Subset or ConcatDataset)
        np.testing.assert_array_equal(ids, every_id[loader.order(epoch)[:len(ids)]])
        if not drop_last:
            np.testing.assert_array_equal(np.sort(ids), np.sort(every_id))
        epochs.append(ids)
    again = DataLoader(dataset, batch_size, shuffle=True, drop_last=drop_last, seed=seed)
    again.set_epoch(1)
    np.testing.assert_array_equal(np.concatenate([_ids(b) for b in again] or [ids[:0]]),
                                  epochs[1])


def test_loader_rows_stay_paired_and_orders_differ():
    x, y = _columns(100)
    dataset = Subset(TensorDataset(x, y), range(99, -1, -1))
    loader = DataLoader(dataset, 16, shuffle=True, seed=4)
    first, second = (np.concatenate([b[1].numpy() for b in loader]) for _ in range(2))
    assert not np.array_equal(first, second)
    assert not np.array_equal(first, np.arange(99, -1, -1))
    for bx, by in DataLoader(dataset, 16, shuffle=True, seed=4):
        np.testing.assert_array_equal(bx.numpy(), x[by.numpy()])
    other = DataLoader(dataset, 16, shuffle=True, seed=5)
    assert not np.array_equal(np.concatenate([b[1].numpy() for b in other]), first)


def test_loader_order_independent_of_threads():
    orders = []
    for k in (1, 2, 4):
        with pyrt.num_threads(k):
            loader = DataLoader(Rows(50), 8, shuffle=True, seed=11)
            orders.append(np.concatenate([_ids(b) for b in loader]))
    for order in orders[1:]:
        np.testing.assert_array_equal(order, orders[0])


def test_loader_default_seed_follows_manual_seed():
    dataset = TensorDataset(*_columns(64))
    pyrt.manual_seed(5)
    first = next(iter(DataLoader(dataset, 64, shuffle=True)))[1].numpy()
    pyrt.manual_seed(5)
    np.testing.assert_array_equal(next(iter(DataLoader(dataset, 64, shuffle=True)))[1].numpy(),
                                  first)


def test_tensor_dataset_batches_index_the_columns_at_once():
    # a subclass that changes how a sample is read is read sample by sample, through it; the
    # column batches equal those, and are views of the data when in order
    calls = []

    class Counted(TensorDataset):
        def __getitem__(self, index):
            calls.append(index)
            return super().__getitem__(index)

    x, y = _columns(30)
    fast, slow = TensorDataset(x, y), Counted(x, y)
    for a, b in zip(DataLoader(fast, 7, shuffle=True, seed=2),
                    DataLoader(slow, 7, shuffle=True, seed=2), strict=True):
        assert_same_as_pyrt(a, b)
    assert sorted(calls) == list(range(30))
    batch = next(iter(DataLoader(fast, 7)))
    assert np.shares_memory(batch[0].numpy(), fast.tensors[0].numpy())


def assert_same_as_pyrt(a, b):
    assert type(a) is type(b) and len(a) == len(b)
    for ta, tb in zip(a, b):
        assert ta.dtype == tb.dtype and ta.shape == tb.shape
        np.testing.assert_array_equal(ta.numpy(), tb.numpy())


def test_collate_keeps_tensor_dtypes_and_structure():
    samples = [{"x": pyrt.tensor([i, i + 1]), "ok": i % 2 == 0, "t": (1.5 * i, [i])}
               for i in range(3)]
    batch = next(iter(DataLoader(samples, 3)))
    assert batch["x"].dtype == pyrt.int64 and batch["x"].shape == (3, 2)
    assert batch["ok"].dtype == pyrt.int64 and batch["ok"].numpy().tolist() == [1, 0, 1]
    assert isinstance(batch["t"], tuple) and isinstance(batch["t"][1], list)
    assert batch["t"][0].dtype == pyrt.float32
    np.testing.assert_array_equal(batch["t"][0].numpy(), [0, 1.5, 3])
    assert next(iter(DataLoader([], 2, shuffle=True)), None) is None


# ---- DataLoader: errors ----------------------------------------------------------------------


class NoLen(Dataset):
    def __getitem__(self, index):
        return index


class NoItems(Dataset):
    def __len__(self):
        return 3


@pytest.mark.parametrize("dataset, error, match", [
    (5, TypeError, "map-style data set .* got int"),
    ("abc", TypeError, "map-style data set .* got str"),
    ((i for i in range(3)), TypeError, "map-style data set .* got generator"),
    (NoLen(), TypeError, "NoLen must define __len__ and __getitem__"),
    (NoItems(), TypeError, "NoItems must define __len__ and __getitem__"),
    (np.zeros((4, 2)), TypeError, r"tuple of arrays.*got a bare ndarray: pass \(x,\)"),
    (pyrt.zeros(4, 2), TypeError, r"got a bare Tensor: pass \(x,\) or TensorDataset\(x\)"),
    (Subset(TensorDataset(np.zeros(4)), [0, 4]), IndexError,
     "Subset index 4 is out of range for a data set of 4 samples"),
    (Subset(Subset(TensorDataset(np.zeros(4)), [1, 2]), [-3]), IndexError,
     "Subset index -3 is out of range for a data set of 2 samples"),
    (Subset(TensorDataset(np.zeros(4)), [0.5]), TypeError, "Subset indices must be a sequence "
                                                           "of integers"),
])
def test_loader_refuses_what_is_not_a_dataset(dataset, error, match):
    with pytest.raises(error, match=match):
        DataLoader(dataset, 2)


@pytest.mark.parametrize("samples, error, match", [
    ([None, None], TypeError, r"cannot batch dataset\[0\]: .* found NoneType"),
    ([(1, object())] * 2, TypeError, r"cannot batch dataset\[0\]\[1\]: .* found object"),
    ([np.ones(2), np.ones(3)], ValueError,
     r"different shapes: dataset\[0\] has shape \(2,\), dataset\[1\] has shape \(3,\)"),
    ([{"a": 1}, {"b": 1}], ValueError, "dicts with different keys"),
    ([(1, 2), (1,)], ValueError, r"sequences of different lengths: dataset\[0\] has 2"),
    ([pyrt.ones(2), np.ones(2)], TypeError, r"dataset\[1\], a ndarray, with dataset\[0\], a "
                                            "Tensor"),
    ([np.array(["a"]), np.array(["b"])], TypeError, "must hold numbers, got dtype <U1"),
    ([1 + 2j, 3j], TypeError, "must hold numbers, got dtype complex"),
])
def test_loader_names_a_sample_it_cannot_batch(samples, error, match):
    torch = _torch()
    with pytest.raises(error, match=match):
        next(iter(DataLoader(samples, 2)))
    with pytest.raises((TypeError, ValueError, RuntimeError, KeyError)):  # torch refuses too
        next(iter(torch.utils.data.DataLoader(samples, 2)))
