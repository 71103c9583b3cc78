"""Embedding lookup (torch.nn.functional.embedding): for each integer index of `input`, of any
shape, the row of that index of a weight table [num_embeddings, embedding_dim], so that the
result has shape input.shape + (embedding_dim,).

The gradient of the table adds the gradient of each looked-up row back into the row it came
from (a scatter-add: an index that occurs several times collects the sum of its rows'
gradients). The row `padding_idx`, if given, gets no gradient, so that it stays as it is
(nn.Embedding initialises it to zeros: a padding token then embeds to a zero vector). With
scale_grad_by_freq, each row's gradient is divided by the number of times its index occurs in
input (the frequency of a word in the mini-batch), so that frequent words do not take
larger steps than rare ones.

With max_norm, the rows that input names are first scaled down in place, in the weight
itself, to a norm of at most max_norm (embedding_renorm_), outside autograd, as torch does:
the lookup then reads the scaled rows, and the gradient is that of the lookup alone.
"""

import numbers

import numpy as np

from pyrt.embedding_renorm import check_norm_options, renorm_rows
from pyrt.functional import _backend_checks, _make, _xp
from pyrt.spatial import _check_tensors

__all__ = ["embedding"]

# PyTorch's options that pyrt does not implement, with the values that turn them off
UNSUPPORTED = (("sparse", False),)


def check_supported(op, max_norm=None, norm_type=2.0, **options):
    """ValueError for an option of UNSUPPORTED set to other than its default; TypeError for
    a max_norm (None: no renormalisation) or norm_type that is not a real number."""
    for name, default in UNSUPPORTED:
        value = options[name]
        if value != default:
            raise ValueError(f"{op}: {name}={value!r} is not supported (only "
                             f"{name}={default!r})")
    if max_norm is not None:
        check_norm_options(op, max_norm, norm_type)


def padding_index(padding_idx, num_embeddings):
    """`padding_idx` counted from 0 (a negative one counts from the end, as in PyTorch), or
    None; ValueError unless it names a row of the table."""
    if padding_idx is None:
        return None
    if isinstance(padding_idx, bool) or not isinstance(padding_idx, numbers.Integral):
        raise TypeError(f"padding_idx must be an int or None, got {type(padding_idx).__name__}")
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(f"Padding_idx must be within num_embeddings: got {padding_idx} for "
                         f"{num_embeddings} embeddings")
    return int(padding_idx) % num_embeddings


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """The rows of `weight` [num_embeddings, embedding_dim] at the indices `input` (an integer
    tensor of any shape): shape input.shape + (embedding_dim,). An index outside
    [0, num_embeddings) is an IndexError on the CPU and gives a row of nan on the GPU (which
    would otherwise wait for the device to check it), as cross_entropy's labels do; such a
    row passes no gradient. With `max_norm`, the rows looked up are first scaled down in
    place in `weight` to a `norm_type`-norm of at most max_norm; with `scale_grad_by_freq`,
    each row's gradient is divided by the count of its index in input (see the module's
    text)."""
    check_supported("embedding", max_norm, norm_type, sparse=sparse)
    _check_tensors("embedding", input=input, weight=weight)
    as_f32, as_i64 = _backend_checks(weight._data)
    if weight._data.ndim != 2:
        raise RuntimeError(f"embedding: 'weight' must be 2-D [num_embeddings, embedding_dim], "
                           f"got shape {weight.shape}")
    table = as_f32(weight._data, "weight")
    index = as_i64(input._data, "input")
    rows, dim = table.shape
    padding_idx = padding_index(padding_idx, rows)
    xp = _xp(table)
    inside = (index >= 0) & (index < rows)
    if xp is np:
        if not inside.all():
            raise IndexError(f"index out of range in self: input holds "
                             f"{int(index[~inside][0])}, and weight has {rows} rows")
        picked = index.copy()  # a later write to the input must not move the gradient
    else:
        picked = xp.where(inside, index, 0)
    if max_norm is not None:
        renorm_rows(weight, xp.unique(picked if xp is np else index[inside]), max_norm,
                    norm_type)
        table = as_f32(weight._data, "weight")  # the scaled rows (copied if weight is strided)
    if xp is np:
        out = np.take(table, picked, axis=0)
    else:
        out = xp.where(inside[..., None], xp.take(table, picked, axis=0), np.float32(np.nan))

    def backward(g):
        grad = xp.zeros((rows, dim), np.float32)
        flat, rows_g = picked.reshape(-1), g.reshape(picked.size, dim)
        if xp is np:
            np.add.at(grad, flat, rows_g)
        else:
            import cupyx

            cupyx.scatter_add(grad, flat, rows_g * inside.reshape(-1, 1))
        if scale_grad_by_freq:
            # every occurrence of a row added its gradient: dividing the sum by their count
            # scales each by 1 / count (an index outside the table counts for nothing)
            counts = (np.bincount(flat, minlength=rows) if xp is np else
                      xp.bincount(flat, weights=inside.reshape(-1), minlength=rows))
            grad /= xp.maximum(counts, 1).astype(np.float32)[:, None]
        if padding_idx is not None:
            grad[padding_idx] = 0
        return (grad,)

    return _make(xp.ascontiguousarray(out), (weight,), backward, reads=False)
