"""Bags of embeddings (torch.nn.functional.embedding_bag): the rows of a weight table
[num_embeddings, embedding_dim] at the indices of each bag, reduced to one row per bag by
their sum, their mean or their elementwise maximum, without building the [bags, bag size,
embedding_dim] tensor of an embedding followed by a reduction.

The bags are either the rows of a 2-D input [B, N] (B bags of N indices each; offsets must be
None and include_last_offset does not apply), or runs of a 1-D input: bag b holds
input[offsets[b]:offsets[b + 1]], the last one running to the end of input (with
include_last_offset, offsets holds B + 1 boundaries and the last one ends the last bag; what
lies after it is no bag's). An empty bag gives a row of zeros. Entries equal
to padding_idx are left out of their bag, as if absent: they add nothing, do not count in a
mean's denominator, and get no gradient. In mode "sum", per_sample_weights scales each
index's row before the sum. With max_norm, the rows that input names (every entry, as
torch's, padding and entries after the last bag included) are first scaled down in place,
in the weight itself, to a norm of at most max_norm (pyrt.embedding_renorm), outside
autograd: the bags then read the scaled rows.

The method: the bags' bounds come from offsets (or the rows of a 2-D input); padding entries
are dropped and the bounds counted again on what is left; then one C call
(csrc/kernels/embedding_bag.c), a parallel loop over the bags, reads each bag's rows in order
straight into its output row, as a sum (each row scaled by its per_sample_weight), a mean or
an elementwise maximum. The maximum is PyTorch's: a running maximum starting from the bag's
first entry that a value replaces only if it is greater, so that among equal values the first
wins, a NaN first in its bag stays, and a later NaN never takes over; the kernel records the
entry of each output element's maximum.

The gradient of weight adds each output row's gradient back into the rows its bag read, times
the entry's weight for per_sample_weights or 1 / (bag size) for a mean (and, with
scale_grad_by_freq, 1 / the count of the entry's index in input: the row's sum is divided by
it); for "max" each output
element's gradient goes to the one element that gave the maximum. The kernel does it in
parallel blocks of columns, the entries in order, so the sums are the same at any thread
count. The gradient of per_sample_weights at an entry is the dot product of its bag's output
gradient with the row it read (0 at padding entries).

NumPy arrays only: the op runs on the CPU.
"""

import numpy as np

from pyrt._pyrt_cffi import ffi, lib
from pyrt.autograd import is_grad_enabled
from pyrt.embedding import check_supported, padding_index
from pyrt.embedding_renorm import renorm_rows
from pyrt.functional import _make, _xp
from pyrt.ops._checks import F32, as_f32, as_i64, check_rc, fptr, iptr
from pyrt.ops._memory import empty
from pyrt.spatial import _check_tensors

__all__ = ["embedding_bag"]

MODES = ("sum", "mean", "max")
_NULL = ffi.NULL
_I64 = np.dtype(np.int64)


def check_mode(mode):
    """ValueError unless `mode` is one of MODES."""
    if not (isinstance(mode, str) and mode in MODES):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")


def check_freq_mode(scale_grad_by_freq, mode):
    """PyTorch's ValueError for scale_grad_by_freq in mode "max"."""
    if scale_grad_by_freq and mode == "max":
        raise ValueError("max mode does not support scaling the gradient by the frequency")


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """One row per bag, [B, embedding_dim]: the sum, mean or maximum (`mode`) of the rows of
    `weight` [num_embeddings, embedding_dim] at the indices of each bag of `input` (see the
    module's docstring for the bags). `per_sample_weights`, of input's shape, scales each
    index's row (mode "sum" only). With `scale_grad_by_freq` (modes "sum" and "mean"),
    each row's gradient is divided by the count of its index among all of input's entries
    (padding and entries after the last bag included, as torch counts them). A 2-D input
    with no columns gives B empty bags (zeros), where PyTorch fails. With `max_norm`, the
    rows input names are first scaled down in place in `weight` to a `norm_type`-norm of at
    most max_norm (see the module's text)."""
    check_supported("embedding_bag", max_norm, norm_type, sparse=sparse)
    _check_tensors("embedding_bag", input=input, weight=weight, offsets=offsets,
                   per_sample_weights=per_sample_weights)
    _check_on_cpu(input=input, weight=weight, offsets=offsets,
                  per_sample_weights=per_sample_weights)
    if per_sample_weights is not None and per_sample_weights.shape != input.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) "
                         f"is not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight._data.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight._data.ndim}")
    _check_bag_layout(input, offsets)
    check_mode(mode)
    check_freq_mode(scale_grad_by_freq, mode)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' "
                                  f"(got mode='{mode}')")
    table = as_f32(weight._data, "weight")
    rows, dim = table.shape
    padding_idx = padding_index(padding_idx, rows)
    if max_norm is not None:
        named = as_i64(input._data, "input").reshape(-1)
        _check_indices(named, rows)
        renorm_rows(weight, np.unique(named), max_norm, norm_type)
        table = as_f32(weight._data, "weight")  # the scaled rows (copied if weight is strided)
    index, bounds, num_bags = _bags(as_i64(input._data, "input"), offsets, include_last_offset)
    counts = None
    if scale_grad_by_freq:
        every = as_i64(input._data, "input").reshape(-1)  # every entry, in a bag or not
        _check_indices(every, rows)
        counts = np.bincount(every, minlength=rows)

    # the entries that count, and the bags' bounds among them; where a gradient is recorded,
    # a copy, so that a later write to the input cannot move it (the kernel checks the
    # indices: the error below names the first one outside the table)
    records = is_grad_enabled() and (weight.requires_grad or (
        per_sample_weights is not None and per_sample_weights.requires_grad))
    kept = None
    if padding_idx is not None:
        keep = index != padding_idx
        kept = np.flatnonzero(keep)
        counted = np.zeros(index.size + 1, np.int64)
        np.cumsum(keep, out=counted[1:])
        index, bounds = index[kept], counted[bounds]
    index = np.array(index, np.int64) if records else np.ascontiguousarray(index, np.int64)
    bounds = np.ascontiguousarray(bounds, np.int64)
    table = np.ascontiguousarray(table)
    scale = None
    if per_sample_weights is not None:
        scale = as_f32(per_sample_weights._data, "per_sample_weights").reshape(-1)
        scale = np.ascontiguousarray(scale[:index.size] if kept is None else scale[kept])
    code = {"sum": lib.PYRT_BAG_SUM, "mean": lib.PYRT_BAG_MEAN, "max": lib.PYRT_BAG_MAX}[mode]
    out = empty((num_bags, dim), F32)
    top = empty((num_bags, dim), _I64) if mode == "max" else None
    rc = lib.pyrt_embedding_bag(fptr(table), rows, dim, iptr(index), iptr(bounds), num_bags,
                                _NULL if scale is None else fptr(scale), code, fptr(out),
                                _NULL if top is None else iptr(top))
    if rc == lib.PYRT_EINVAL:
        _check_indices(index, rows)
    check_rc(rc, "embedding_bag")

    def backward(g):
        grad_weight = grad_scale = None
        g = np.ascontiguousarray(g, F32)
        sizes = np.diff(bounds)
        bag = np.repeat(np.arange(num_bags), sizes)  # the bag of each entry
        if weight._requires_grad:
            share = scale
            if mode == "mean":
                share = (1 / sizes[bag]).astype(F32)
            grad_weight = np.empty((rows, dim), F32)
            check_rc(lib.pyrt_embedding_bag_backward(
                fptr(g), rows, dim, iptr(index), iptr(bounds), num_bags,
                _NULL if share is None else fptr(share), _NULL if top is None else iptr(top),
                fptr(grad_weight)), "embedding_bag backward")
            if scale_grad_by_freq:
                # each row got the sum of its entries' gradients: divided by their count
                grad_weight /= np.maximum(counts, 1).astype(F32)[:, None]
        if per_sample_weights is not None and per_sample_weights._requires_grad:
            grad_scale = np.zeros(per_sample_weights.shape, F32)
            entries = np.einsum("ij,ij->i", g[bag], table[index])
            if kept is None:
                grad_scale.reshape(-1)[:index.size] = entries
            else:
                grad_scale.reshape(-1)[kept] = entries
        if per_sample_weights is None:
            return (grad_weight,)
        return grad_weight, grad_scale

    parents = (weight,) if per_sample_weights is None else (weight, per_sample_weights)
    # each of the two gradients is made from the other input's values
    return _make(out, parents, backward, reads=per_sample_weights is not None)


def _check_indices(index, rows):
    """PyTorch's RuntimeError for the first entry of `index` outside a table of `rows`."""
    outside = (index < 0) | (index >= rows)
    if outside.any():
        raise RuntimeError(f"embedding_bag: Expected idx >= 0 && idx < num_embeddings "
                           f"({rows}) but found idx to be {int(index[outside][0])}")


def _check_on_cpu(**tensors):
    """RuntimeError for a tensor (None: an absent one) on the GPU."""
    for name, t in tensors.items():
        if t is not None and _xp(t._data) is not np:
            raise RuntimeError(f"embedding_bag runs on the CPU only, but {name} is on the GPU: "
                               f"move the tensors with .cpu()")


def _check_bag_layout(input, offsets):
    """PyTorch's errors for an input that is neither 1-D nor 2-D, and for offsets given with a
    2-D input or missing or not 1-D with a 1-D one."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is "
                             f"treated is a mini-batch of fixed length sequences. However, "
                             f"found offsets of type {type(offsets)}")
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError(f"offsets has to be a 1D Tensor, got shape {offsets.shape}")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")


def _bags(index, offsets, include_last_offset):
    """(the indices that lie in some bag, flattened, in input order; the bags' bounds, bag b
    holding entries [bounds[b], bounds[b + 1]); the number of bags), from the input's indices
    `index` (2-D: one bag per row) or its `offsets` (1-D), which are checked as PyTorch checks
    them."""
    if index.ndim == 2:
        num_bags, size = index.shape
        return index.reshape(-1), np.arange(num_bags + 1, dtype=np.int64) * size, num_bags
    bounds = as_i64(offsets._data, "offsets")
    if include_last_offset and bounds.size == 0:
        raise RuntimeError("include_last_offset: number of offset should be at least 1")
    if bounds.size and bounds[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the "
                           f"mini-batch has to start from position 0. However, got "
                           f"{int(bounds[0])}")
    falls = np.flatnonzero(np.diff(bounds) < 0)
    if falls.size:
        i = int(falls[0]) + 1
        raise RuntimeError(f"offsets has to be non-decreasing, but got offsets[{i}] = "
                           f"{int(bounds[i])} after offsets[{i - 1}] = {int(bounds[i - 1])}")
    if bounds.size and bounds[-1] > index.size:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length "
                           f"{index.size} but got offsets[-1] of {int(bounds[-1])}")
    if include_last_offset:
        return index[:int(bounds[-1])], bounds, bounds.size - 1
    end = index.size if bounds.size else 0
    return index[:end], np.append(bounds, end).astype(np.int64), bounds.size
