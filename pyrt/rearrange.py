"""More ops that move elements, with PyTorch's names, arguments and errors: unbind and
narrow (slices), movedim and unflatten (dims), roll, repeat_interleave and tile, rot90, tril,
triu and diag, meshgrid and broadcast_tensors, and diff (differences of neighbours).

As in pyrt/shapes.py, each result is a contiguous array and each backward moves the gradient
back the inverse way: slices are placed back, rolls rolled back, repeated copies summed,
masked triangles masked again. Those built from other ops (movedim from permute, meshgrid
from expand, diff from narrow and subtraction) take their gradients from them.
"""

import math
import warnings

import numpy as np

from pyrt.functional import _contiguous, _integer, _make, _tensor, _xp, dim_index
from pyrt.functional import reshape as _reshape
from pyrt.functional import sub as _sub
from pyrt.pointwise import _input_array, broadcast_shape
from pyrt.shapes import _piece, _sizes, cat, expand, flip, permute, repeat, transpose

__all__ = ["broadcast_tensors", "diag", "diff", "meshgrid", "movedim", "narrow",
           "repeat_interleave", "roll", "rot90", "tile", "tril", "triu", "unbind", "unflatten"]

_F32 = np.dtype(np.float32)


def unbind(x, dim=0):
    """The slices of x along `dim`, that dim removed, as a tuple; each slice's gradient goes
    back to its place."""
    xd = _input_array(x, "unbind")
    if xd.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    at = dim_index(dim, xd.ndim)
    xp = _xp(xd)
    shape = x.shape

    def piece(i):
        index = (slice(None),) * at + (i,)

        def backward(g):
            dx = xp.zeros(shape, _F32)
            dx[index] = g
            return (dx,)

        return _make(_contiguous(xd[index]), (x,), backward, reads=False)

    return tuple(piece(i) for i in range(xd.shape[at]))


def narrow(x, dim, start, length):
    """The `length` elements of x from `start` along `dim` (start may count from the end)."""
    xd = _input_array(x, "narrow")
    if xd.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    for value, name in ((start, "start"), (length, "length")):
        if not _integer(value) and not (isinstance(value, _tensor()) and value._data.ndim == 0
                                        and value._data.dtype.kind in "iu"):
            raise TypeError(f"narrow(): argument '{name}' must be an int, got "
                            f"{type(value).__name__}")
    start, length = int(start), int(length)
    at = dim_index(dim, xd.ndim)
    n = xd.shape[at]
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got "
                         f"{start})")
    start %= n or 1
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return _piece(x, at, start, start + length)


def _dims(dims, name, argument):
    """`dims`, an int or a sequence of ints, as a tuple."""
    if _integer(dims):
        return (int(dims),)
    if isinstance(dims, (tuple, list)) and all(_integer(d) for d in dims):
        return tuple(int(d) for d in dims)
    raise TypeError(f"{name}(): argument '{argument}' must be an int or a tuple of ints, got "
                    f"{dims!r:.40}")


def movedim(x, source, destination):
    """x with the dims at `source` moved to `destination` (ints or sequences of one length),
    the others in their order, as torch.movedim."""
    _input_array(x, "movedim")
    src = _dims(source, "movedim", "source")
    dst = _dims(destination, "movedim", "destination")
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({list(dst)} dims)")
    src = tuple(dim_index(d, x.ndim) for d in src)
    dst = tuple(dim_index(d, x.ndim) for d in dst)
    for dims, name in ((src, "source"), (dst, "destination")):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({list(dims)})")
    if x.ndim == 0:
        return permute(x, ())
    # the dims that stay, in order, then each moved dim inserted at its place
    order = [d for d in range(x.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(x, order)


def unflatten(x, dim, sizes):
    """x with dim `dim` split into dims of `sizes` (one may be -1: the one that fits)."""
    xd = _input_array(x, "unflatten")
    if xd.ndim == 0:
        raise RuntimeError("unflatten: Dimension specified as 0 but tensor has no dimensions")
    sizes = _sizes((sizes,), "unflatten") if isinstance(sizes, (tuple, list)) else None
    if sizes is None:
        raise TypeError("unflatten(): argument 'sizes' must be a tuple of ints")
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    at = dim_index(dim, xd.ndim)
    n = xd.shape[at]
    if sizes.count(-1) > 1:
        raise RuntimeError("unflatten: only one dimension can be inferred")
    known = math.prod(s for s in sizes if s != -1)
    if any(s < -1 for s in sizes) or (-1 not in sizes and known != n) or (
            -1 in sizes and (known == 0 or n % known)):
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {at} ({n}) in the input tensor")
    sizes = tuple(n // known if s == -1 else s for s in sizes)
    return _reshape(x, xd.shape[:at] + sizes + xd.shape[at + 1:])


def roll(x, shifts, dims=None):
    """x's elements shifted along `dims` by `shifts` (one each), those that fall off one end
    coming back at the other, as torch.roll; without dims, of the flattened tensor, its
    shape kept. The gradient rolls back."""
    xd = _input_array(x, "roll")
    shifts = _dims(shifts, "roll", "shifts")
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                               f"dims:0")
        axes = None
    else:
        axes = tuple(dim_index(d, xd.ndim) for d in _dims(dims, "roll", "dims"))
        if len(shifts) != len(axes):
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                               f"dims:{len(axes)}")
        if xd.ndim == 0:
            axes = None
    xp = _xp(xd)

    def rolled(a, sign):
        if axes is None:
            return xp.roll(a.reshape(-1), sign * shifts[0]).reshape(a.shape)
        return _contiguous(xp.roll(a, tuple(sign * s for s in shifts), axis=axes))

    return _make(rolled(xd, 1), (x,), lambda g: (rolled(g, -1),), reads=False)


def repeat_interleave(x, repeats, dim=None):
    """Each element (each slice along `dim`; of the flattened tensor without dim) repeated
    `repeats` times in place, as torch.repeat_interleave: repeats an int, or a 1-D integer
    tensor of one count per slice. The gradient sums each slice's copies."""
    xd = _input_array(x, "repeat_interleave")
    xp = _xp(xd)
    if isinstance(repeats, _tensor()):
        counts = repeats._data
        if counts.dtype.kind not in "iu" or counts.ndim > 1:
            raise RuntimeError("repeat_interleave: repeats must be an int or a 0-d or 1-d "
                               "integer tensor")
        counts = counts.astype(np.int64).reshape(-1)
        if counts.size and bool((counts < 0).any()):
            raise RuntimeError("repeats can not be negative")
    elif _integer(repeats):
        if repeats < 0:
            raise RuntimeError("Repeats must be non-negative")
        counts = int(repeats)
    else:
        raise TypeError(f"repeat_interleave(): argument 'repeats' must be an int or a Tensor, "
                        f"got {type(repeats).__name__}")
    line = xd.reshape(-1) if dim is None else xd.reshape(xd.shape or (1,))
    at = 0 if dim is None else dim_index(dim, xd.ndim)
    n = line.shape[at]
    if not isinstance(counts, int) and counts.size not in (1, n):
        raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {counts.size} and input.size({at}) = {n}")
    # where each slice of the result came from, for the gradient
    source = xp.repeat(xp.arange(n), counts)
    out = _contiguous(xp.take(line, source, axis=at))
    shape = x.shape

    def backward(g):
        dx = xp.zeros(line.shape, _F32)
        xp.add.at(xp.moveaxis(dx, at, 0), source, xp.moveaxis(g, at, 0))
        return (dx.reshape(shape),)

    return _make(out, (x,), backward, reads=False)


def tile(x, dims):
    """x repeated dims[i] times along each dim, as torch.tile: repeat, with dims padded with
    leading 1s when it has fewer entries than x has dims."""
    _input_array(x, "tile")
    dims = _dims(dims, "tile", "dims")
    return repeat(x, (1,) * (x.ndim - len(dims)) + dims)


def rot90(x, k=1, dims=(0, 1)):
    """x rotated by 90 degrees k times in the plane of `dims`, from the first dim toward the
    second, as torch.rot90: flips and a transpose (with their gradients)."""
    _input_array(x, "rot90")
    if not _integer(k):
        raise TypeError(f"rot90(): argument 'k' must be an int, got {type(k).__name__}")
    dims = _dims(dims, "rot90", "dims")
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if x.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {x.ndim}")
    first, second = (dim_index(d, x.ndim) for d in dims)
    if first == second:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} "
                           f"and dim1 = {dims[1]}")
    turns = int(k) % 4
    if turns == 1:
        return transpose(flip(x, (second,)), first, second)
    if turns == 2:
        return flip(x, (first, second))
    if turns == 3:
        return transpose(flip(x, (first,)), first, second)
    return _make(_contiguous(x._data.copy()), (x,), lambda g: (g,), reads=False)


# ---- triangles and diagonals -----------------------------------------------------------------


def _triangle(x, diagonal, name, lower):
    xd = _input_array(x, name)
    if xd.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    if not _integer(diagonal):
        raise TypeError(f"{name}(): argument 'diagonal' must be an int, got "
                        f"{type(diagonal).__name__}")
    xp = _xp(xd)
    n, m = xd.shape[-2:]
    # the lower triangle from the k-th diagonal down; the upper one is what lies outside the
    # lower triangle that ends just below its k-th diagonal
    keep = xp.tri(n, m, int(diagonal), dtype=bool) if lower else \
        ~xp.tri(n, m, int(diagonal) - 1, dtype=bool)
    zero = xd.dtype.type(0)
    out = _contiguous(xp.where(keep, xd, zero))
    return _make(out, (x,), lambda g: (xp.where(keep, g, _F32.type(0)),), reads=False)


def tril(x, diagonal=0):
    """The lower triangle of the last two dims, on and below diagonal `diagonal`; zeros
    above."""
    return _triangle(x, diagonal, "tril", lower=True)


def triu(x, diagonal=0):
    """The upper triangle of the last two dims, on and above diagonal `diagonal`; zeros
    below."""
    return _triangle(x, diagonal, "triu", lower=False)


def diag(x, diagonal=0):
    """A 1-D tensor as the `diagonal`-th diagonal of a square matrix of zeros, or a 2-D
    tensor's `diagonal`-th diagonal as a 1-D one, as torch.diag; the gradient takes the
    diagonal back, or puts it back into zeros."""
    xd = _input_array(x, "diag")
    if xd.ndim not in (1, 2):
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {xd.ndim}D")
    if not _integer(diagonal):
        raise TypeError(f"diag(): argument 'diagonal' must be an int, got "
                        f"{type(diagonal).__name__}")
    k = int(diagonal)
    xp = _xp(xd)
    if xd.ndim == 1:
        return _make(_contiguous(xp.diag(xd, k)), (x,),
                     lambda g: (_contiguous(xp.diagonal(g, k)),), reads=False)
    shape = xd.shape

    def backward(g):
        dx = xp.zeros(shape, _F32)
        rows = xp.arange(g.shape[0]) + max(-k, 0)
        dx[rows, rows + k] = g
        return (dx,)

    return _make(_contiguous(xp.diagonal(xd, k)), (x,), backward, reads=False)


# ---- meshgrid and broadcast_tensors: expanded copies -----------------------------------------


def _tensor_list(tensors, name):
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    for t in tensors:
        if not isinstance(t, _tensor()):
            raise TypeError(f"{name}(): expected Tensors, got {type(t).__name__}")
    if len({t.device for t in tensors}) > 1:
        raise RuntimeError(f"{name}(): expected all tensors on the same device")
    return tensors


def meshgrid(*tensors, indexing=None):
    """Coordinate grids of 0-D or 1-D tensors of one dtype: with indexing "ij" output i varies
    along dim i; with "xy" the first two dims are swapped (x along columns). Without
    indexing, "ij" and PyTorch's warning that it will be required."""
    tensors = _tensor_list(tensors, "meshgrid")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but '
                           f'received: {indexing}')
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                               f"but got a tensor of shape {list(t.shape)}")
        if t.dtype != tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    # the dim each tensor runs along
    along = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) > 1:
        along[0], along[1] = 1, 0
    shape = [0] * len(tensors)
    for t, d in zip(tensors, along):
        shape[d] = t._data.size
    grids = []
    for t, d in zip(tensors, along):
        line = [1] * len(tensors)
        line[d] = t._data.size
        grids.append(expand(_reshape(t, tuple(line)), shape))
    return tuple(grids)


def broadcast_tensors(*tensors):
    """The tensors expanded to their common broadcast shape (copies, with gradients summed
    back)."""
    tensors = _tensor_list(tensors, "broadcast_tensors")
    shape = ()
    for t in tensors:
        shape = broadcast_shape(shape, t.shape)
    return tuple(expand(t, shape) for t in tensors)


# ---- diff ------------------------------------------------------------------------------------


def diff(x, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along `dim`, out[i] = x[i + 1] - x[i] applied n times, of
    x with `prepend` and `append` joined at its ends along dim, as torch.diff; a bool tensor
    gives where neighbours differ. Built from narrow and subtraction, with their gradients."""
    xd = _input_array(x, "diff")
    if xd.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if not _integer(n):
        raise TypeError(f"diff(): argument 'n' must be an int, got {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    at = dim_index(dim, xd.ndim)
    pieces = [t for t in (prepend, x, append) if t is not None]
    for t in pieces:
        if not isinstance(t, _tensor()):
            raise TypeError(f"diff(): prepend and append must be Tensors, got "
                            f"{type(t).__name__}")
    out = cat(pieces, at) if len(pieces) > 1 else x
    for _ in range(n):
        size = max(out.shape[at] - 1, 0)
        later, earlier = narrow(out, at, min(1, out.shape[at]), size), narrow(out, at, 0, size)
        if out.dtype == np.bool_:
            out = (_tensor())(_xp(out._data).logical_xor(later._data, earlier._data))
        else:
            out = _sub(later, earlier)
    return out
