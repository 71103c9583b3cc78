"""PyTorch's joining and shaping shorthands, written with pyrt's differentiable ops (cat,
reshape, expand, indexing), so that their gradients are those ops': hstack, vstack (row_stack),
dstack, column_stack, concat and concatenate (cat's other names), atleast_1d, atleast_2d,
atleast_3d, broadcast_to and select; and as_tensor, isin and argwhere, which record nothing.
"""

import numpy as np

from pyrt.functional import _tensor, _xp, dim_index
from pyrt.functional import reshape as _reshape
from pyrt.shapes import cat, expand

__all__ = ["argwhere", "as_tensor", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_to",
           "column_stack", "concat", "concatenate", "dstack", "hstack", "isin", "row_stack",
           "select", "vstack"]

concat = concatenate = cat


def _tensors(tensors, name):
    """A sequence of tensors, checked: not empty, each a Tensor."""
    if isinstance(tensors, _tensor()) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' must be a tuple or list of Tensors, got "
                        f"{type(tensors).__name__}")
    if not tensors:
        raise RuntimeError(f"{name}(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, _tensor()):
            raise TypeError(f"{name}(): expected a Tensor at position {i}, got "
                            f"{type(t).__name__}")
    return list(tensors)


def _at_least(rank, name, tensors):
    """Each tensor with its dims filled out to `rank`, as torch.atleast_{rank}d: a 0-d tensor
    becomes [1, ...], a 1-d one [1, n] (rank 2) or [1, n, 1] (rank 3), a 2-d one [m, n, 1]
    (rank 3); one tensor in, one out, several in, a tuple out."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    out = []
    for t in tensors:
        if not isinstance(t, _tensor()):
            raise TypeError(f"{name}(): expected Tensors, got {type(t).__name__}")
        shape = t.shape
        if len(shape) < rank:
            shape = {0: (1,) * rank, 1: ((1,) + shape + (1,))[:rank] if rank > 1 else shape,
                     2: shape + (1,)}[len(shape)]
            t = _reshape(t, shape)
        out.append(t)
    return out[0] if len(out) == 1 else tuple(out)


def atleast_1d(*tensors):
    return _at_least(1, "atleast_1d", tensors)


def atleast_2d(*tensors):
    return _at_least(2, "atleast_2d", tensors)


def atleast_3d(*tensors):
    return _at_least(3, "atleast_3d", tensors)


def _as_list(value):
    return list(value) if isinstance(value, tuple) else [value]


def hstack(tensors):
    """The tensors joined column-wise: along dim 0 if they are 1-d (0-d ones count as 1-d),
    else along dim 1."""
    ts = _as_list(atleast_1d(*_tensors(tensors, "hstack")))
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors):
    """The tensors joined row-wise: each made at least 2-d ([n] -> [1, n]), then along dim 0."""
    return cat(_as_list(atleast_2d(*_tensors(tensors, "vstack"))), 0)


row_stack = vstack


def dstack(tensors):
    """The tensors joined depth-wise: each made at least 3-d, then along dim 2."""
    return cat(_as_list(atleast_3d(*_tensors(tensors, "dstack"))), 2)


def column_stack(tensors):
    """The tensors side by side as columns: 0-d and 1-d ones become columns [n, 1], the
    others are joined as they are, along dim 1."""
    ts = [_reshape(t, (t.numel(), 1)) if t.ndim <= 1 else t
          for t in _tensors(tensors, "column_stack")]
    return cat(ts, 1)


def broadcast_to(input, size):
    """input broadcast to `size` (torch.broadcast_to, expand's other name)."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"broadcast_to(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    return expand(input, tuple(size))


def select(input, dim, index):
    """The slice of input at `index` along `dim`, that dim removed (input[..., index, ...])."""
    d = dim_index(dim, input.ndim)
    n = input.shape[d]
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"select(): argument 'index' must be an int, got "
                        f"{type(index).__name__}")
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {d}")
    return input[(slice(None),) * d + (int(index),)]


def as_tensor(data, dtype=None, device=None):
    """data as a tensor, sharing its memory where it can, as torch.as_tensor: a Tensor of the
    dtype and device asked for is returned as it is, a NumPy array that needs no conversion
    is wrapped without a copy; anything else is converted as pyrt.tensor converts it."""
    from pyrt.tensor import Tensor, tensor

    if isinstance(data, Tensor):
        if (dtype is None or np.dtype(dtype) == data.dtype) and (
                device is None or str(device).split(":")[0] == data.device.split(":")[0]):
            return data
        return tensor(data.detach(), dtype=dtype, device=device or data.device)
    if (isinstance(data, np.ndarray) and device in (None, "cpu")
            and data.dtype in (np.float32, np.int64, np.bool_)
            and (dtype is None or np.dtype(dtype) == data.dtype)):
        return Tensor(data)
    return tensor(data, dtype=dtype, device=device or "cpu")


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of `elements` is among `test_elements` (tensors or numbers): a
    bool tensor of elements' shape (the opposite with invert)."""
    Tensor = _tensor()
    a = elements._data if isinstance(elements, Tensor) else np.asarray(elements)
    b = test_elements._data if isinstance(test_elements, Tensor) else np.asarray(test_elements)
    xp = _xp(a)
    return Tensor(xp.asarray(xp.isin(a, b, assume_unique=assume_unique, invert=invert)))


def argwhere(input):
    """The indices of input's nonzero elements, [count, input.ndim] int64, in row-major order."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"argwhere(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    xp = _xp(input._data)
    return _tensor()(xp.ascontiguousarray(xp.argwhere(input._data).astype(np.int64)))
