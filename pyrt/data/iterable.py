"""Iterable-style data sets under torch.utils.data's names: IterableDataset and ChainDataset.

An iterable-style data set is a stream of samples: its ``__iter__`` yields them in order, and it
may or may not know its length. DataLoader reads such a data set from one ``iter(dataset)`` per
epoch and groups consecutive samples into batches; there are no indices, so there is no
sampler and no shuffling.
"""

from pyrt.data.dataset import Dataset, _CheckFailed

__all__ = ["ChainDataset", "IterableDataset"]


class IterableDataset(Dataset):
    """A stream of samples: subclasses define ``__iter__``, and ``__len__`` if the stream
    knows its length (``len(DataLoader(dataset))`` needs it).

    ``a + b`` is the ChainDataset of a then b. pyrt reads the stream in the calling process,
    so ``get_worker_info()`` is None inside ``__iter__`` and one iterator sees every sample: the
    split across workers that torch's examples do is not needed.
    """

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


def _checked_iterable(dataset):
    if not isinstance(dataset, IterableDataset):
        raise _CheckFailed(f"ChainDataset only supports IterableDataset, got "
                           f"{type(dataset).__name__}")
    return dataset


class ChainDataset(IterableDataset):
    """IterableDatasets one after another: all samples of the first, then of the second, and
    so on, chained as they are read (nothing is copied or read ahead).

    `datasets` is kept as given and walked anew by each iteration, as in torch; a member that
    is not an IterableDataset raises when the iteration (or ``len``) reaches it.
    """

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for dataset in self.datasets:
            yield from _checked_iterable(dataset)

    def __len__(self):
        return sum(len(_checked_iterable(dataset)) for dataset in self.datasets)
