"""StackDataset, as torch.utils.data's: data sets of one length side by side, sample i being
the tuple (or, with names, the dict) of each data set's sample i."""

from pyrt.data.dataset import Dataset

__all__ = ["StackDataset"]


class StackDataset(Dataset):
    """Data sets of the same length stacked sample by sample.

    ``StackDataset(images, texts)[i]`` is ``(images[i], texts[i])``;
    ``StackDataset(image=images, text=texts)[i]`` is ``{"image": images[i], "text": texts[i]}``.
    Either positional or keyword data sets, not both; ``datasets`` is the tuple or dict.
    """

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or ``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        members = args or tuple(kwargs.values())
        self._length = len(members[0])
        lengths = [len(dataset) for dataset in members]
        if any(length != self._length for length in lengths):
            raise ValueError(f"Size mismatch between datasets: their lengths are {lengths}")
        self.datasets = args or kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {key: dataset[index] for key, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __getitems__(self, indices):
        """The samples at `indices`, as a list; a member data set with ``__getitems__`` of its
        own reads them all in one call."""
        indices = list(indices)
        named = isinstance(self.datasets, dict)
        members = self.datasets.items() if named else enumerate(self.datasets)
        columns = {}
        for key, dataset in members:
            if callable(getattr(dataset, "__getitems__", None)):
                items = list(dataset.__getitems__(indices))
                if len(items) != len(indices):
                    raise ValueError(f"Nested dataset's output size mismatch. Expected "
                                     f"{len(indices)}, got {len(items)}")
            else:
                items = [dataset[i] for i in indices]
            columns[key] = items
        if named:
            return [{key: items[j] for key, items in columns.items()}
                    for j in range(len(indices))]
        return [tuple(items[j] for items in columns.values()) for j in range(len(indices))]

    def __len__(self):
        return self._length
