"""torch's ``*_copy`` functions: each view op (view, permute, transpose, expand, diagonal,
select, slice, split, unbind, unfold, ...) followed by a copy into fresh C-contiguous memory,
so that the result shares nothing with its input. The gradient is the view op's."""

from pyrt.functional import _make, _xp

__all__ = ["alias_copy", "as_strided_copy", "detach_copy", "diagonal_copy", "expand_copy",
           "permute_copy", "select_copy", "slice_copy", "split_copy", "split_with_sizes_copy",
           "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy", "unfold_copy",
           "unsqueeze_copy", "view_copy"]


def _input(input, name):
    from pyrt.tensor import Tensor

    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    return input


def _copied(view):
    """`view`'s values in memory of their own, C order; the gradient passes straight back."""
    data = _xp(view._data).array(view._data, order="C", copy=True)
    return _make(data, (view,), lambda g: (g,), reads=False)


def view_copy(input, size):
    """input.view(size) (a shape, or a dtype to reinterpret the bytes as), copied."""
    from pyrt.tensor import Tensor, _checked_dtype

    _input(input, "view_copy")
    if isinstance(size, (tuple, list)):
        return _copied(input.view(*size))
    if isinstance(size, int):
        return _copied(input.view(size))
    dtype = _checked_dtype(size)  # the bytes read as another dtype: no gradient crosses
    data = _xp(input._data).array(input._data, order="C", copy=True)
    if input.ndim == 0 and dtype.itemsize != data.itemsize:
        raise RuntimeError(f"self.dim() cannot be 0 to view {input.dtype} as {dtype} "
                           f"(different element sizes)")
    return Tensor(data.view(dtype))


def permute_copy(input, dims):
    return _copied(_input(input, "permute_copy").permute(*dims))


def transpose_copy(input, dim0, dim1):
    return _copied(_input(input, "transpose_copy").transpose(dim0, dim1))


def t_copy(input):
    return _copied(_input(input, "t_copy").t())


def squeeze_copy(input, dim=None):
    return _copied(_input(input, "squeeze_copy").squeeze(dim))


def unsqueeze_copy(input, dim):
    return _copied(_input(input, "unsqueeze_copy").unsqueeze(dim))


def expand_copy(input, size, *, implicit=False):
    return _copied(_input(input, "expand_copy").expand(*size))


def diagonal_copy(input, offset=0, dim1=0, dim2=1):
    return _copied(_input(input, "diagonal_copy").diagonal(offset, dim1, dim2))


def select_copy(input, dim, index):
    return _copied(_input(input, "select_copy").select(dim, index))


def slice_copy(input, dim=0, start=None, end=None, step=1):
    """input[start:end:step] along `dim`, copied (torch.ops.aten.slice's arguments)."""
    _input(input, "slice_copy")
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    from pyrt import shapes

    index = [slice(None)] * input.ndim
    index[shapes.dim_index(dim, input.ndim)] = slice(start, end, step)
    return _copied(input[tuple(index)])


def split_copy(input, split_size, dim=0):
    return tuple(_copied(p) for p in _input(input, "split_copy").split(split_size, dim))


def split_with_sizes_copy(input, split_sizes, dim=0):
    parts = _input(input, "split_with_sizes_copy").split_with_sizes(split_sizes, dim)
    return tuple(_copied(p) for p in parts)


def unbind_copy(input, dim=0):
    return tuple(_copied(p) for p in _input(input, "unbind_copy").unbind(dim))


def unfold_copy(input, dimension, size, step):
    return _copied(_input(input, "unfold_copy").unfold(dimension, size, step))


def detach_copy(input):
    """A copy outside the graph."""
    data = _input(input, "detach_copy")._data
    from pyrt.tensor import Tensor

    return Tensor(_xp(data).array(data, order="C", copy=True))


def alias_copy(input):
    """A copy in the graph (torch.alias's view, copied)."""
    return _copied(_input(input, "alias_copy"))


def as_strided_copy(input, size, stride, storage_offset=None):
    return _copied(_input(input, "as_strided_copy").as_strided(size, stride, storage_offset))
