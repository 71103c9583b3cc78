"""Batches of sequences of different lengths, as torch.nn.utils.rnn: padded to one length
(``pad_sequence``), or packed step by step (``PackedSequence``), which the recurrent layers
take so that each sequence runs only its own steps.

A PackedSequence holds the sequences sorted by length, longest first, as ``data``: step 0 of
every sequence, then step 1 of those that have one, and so on; ``batch_sizes[t]`` is how
many sequences have a step t. ``sorted_indices`` is the order they were sorted in (None when
they came sorted) and ``unsorted_indices`` its inverse. Every function here is made of
Tensor ops, so gradients flow through packing and unpacking.
"""

from collections import namedtuple

import numpy as np

from pyrt.functional import _tensor
from pyrt.shapes import cat, index_select, stack, transpose

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pack_sequence", "pad_packed_sequence", "pad_sequence", "unpack_sequence",
           "unpad_sequence"]


class PackedSequence(namedtuple("PackedSequence",
                                ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """(data, batch_sizes, sorted_indices, unsorted_indices): see the module's docstring.
    batch_sizes and the indices are int64 tensors on the CPU."""

    __slots__ = ()

    def to(self, *args, **kwargs):
        """The same packing with data moved or converted (Tensor.to's arguments)."""
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else self._replace(data=data)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def lengths(self):
        """Each sequence's length, in the packed (sorted) order, as NumPy ints."""
        return _lengths_of(self.batch_sizes)


def _lengths_of(batch_sizes):
    sizes = np.asarray(batch_sizes.numpy(), dtype=np.int64)
    return (sizes[None, :] > np.arange(int(sizes[0]) if sizes.size else 0)[:, None]).sum(1)


def invert_permutation(permutation):
    """The inverse of a permutation (an int64 tensor), or None for None."""
    if permutation is None:
        return None
    order = np.asarray(permutation.numpy(), dtype=np.int64)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size, dtype=np.int64)
    return _tensor()(inverse)


def _as_lengths(lengths, batch):
    """`lengths` (a list or a 1-D tensor or array of ints) as an int64 array of one per
    sequence, each at least 1."""
    if isinstance(lengths, _tensor()):
        lengths = lengths.to("cpu").numpy()
    values = np.asarray(lengths)
    if values.ndim != 1 or values.dtype.kind not in "iu":
        raise TypeError(f"lengths must be a 1-D sequence of ints, got {lengths!r}")
    if values.size != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                         f"{values.size} (batch_size={batch})")
    if values.size and values.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    return values.astype(np.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack `input` [T, B, *] ([B, T, *] with batch_first), whose sequence b has its first
    lengths[b] steps. With enforce_sorted the lengths must come longest first; otherwise the
    sequences are sorted here (stably) and the order kept in the result."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"pack_padded_sequence: input must be a Tensor, got "
                        f"{type(input).__name__}")
    if input.ndim < 2:
        raise ValueError(f"pack_padded_sequence: input must have a time and a batch dim, got "
                         f"shape {tuple(input.shape)}")
    if batch_first:
        input = transpose(input, 0, 1)
    steps, batch = input.shape[0], input.shape[1]
    lengths = _as_lengths(lengths, batch)
    if batch and lengths.max() > steps:
        raise ValueError(f"pack_padded_sequence: a length of {int(lengths.max())} is longer "
                         f"than the input's {steps} steps")
    if enforce_sorted:
        if np.any(np.diff(lengths) > 0):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = np.argsort(-lengths, kind="stable")
        sorted_indices = _tensor()(order.astype(np.int64))
        input = index_select(input, 1, sorted_indices)
        lengths = lengths[order]
    sizes = (lengths[None, :] > np.arange(int(lengths[0]) if batch else 0)[:, None]).sum(1)
    data = cat([input[t, :int(size)] for t, size in enumerate(sizes)], 0)
    return PackedSequence(data, _tensor()(sizes.astype(np.int64)), sorted_indices,
                          invert_permutation(sorted_indices))


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """(padded [T, B, *] ([B, T, *] with batch_first), lengths): the inverse of
    pack_padded_sequence, the sequences in their original order, steps past a sequence's
    length filled with padding_value, T the longest length or total_length."""
    data, batch_sizes = sequence.data, sequence.batch_sizes
    sizes = np.asarray(batch_sizes.numpy(), dtype=np.int64)
    steps = sizes.size
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {steps}")
    batch = int(sizes[0]) if steps else 0
    tail = tuple(data.shape[1:])
    filler = data.new_full((batch,) + tail, padding_value)
    rows, start = [], 0
    for size in sizes:
        size = int(size)
        step = data[start:start + size]
        rows.append(step if size == batch else cat([step, filler[size:]], 0))
        start += size
    rows += [filler] * ((total_length or steps) - steps)
    padded = stack(rows, 0) if rows else data.new_zeros((0, batch) + tail)
    lengths = _lengths_of(batch_sizes)
    if sequence.unsorted_indices is not None:
        padded = index_select(padded, 1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices.numpy()]
    if batch_first:
        padded = transpose(padded, 0, 1)
    return padded, _tensor()(lengths.astype(np.int64))


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """The tensors of `sequences` ([L_i, *] each) stacked into [T, B, *] ([B, T, *] with
    batch_first), each padded with padding_value on its right (or left) to the longest."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        short = longest - s.shape[0]
        if short:
            fill = s.new_full((short,) + tuple(s.shape[1:]), padding_value)
            s = cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The sequences of a padded batch, each cut to its length: a list of [L_i, *]."""
    if not batch_first:
        padded_sequences = transpose(padded_sequences, 0, 1)
    lengths = _as_lengths(lengths, padded_sequences.shape[0])
    return [padded_sequences[b, :int(n)] for b, n in enumerate(lengths)]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of tensors [L_i, *] (longest first, unless not enforce_sorted)."""
    sequences = list(sequences)
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The tensors [L_i, *] a PackedSequence holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
