"""torch.layout and torch.memory_format: the names, and the checks of a memory_format argument.

pyrt keeps every tensor it makes C-contiguous (rows last). A tensor made with
``memory_format=pyrt.channels_last`` holds the same values as torch's, in the same shape, but
its data stays C-contiguous: ``is_contiguous(memory_format=pyrt.channels_last)`` reads the
data's real strides, as torch reads its own.
"""

__all__ = [
    "channels_last",
    "channels_last_3d",
    "contiguous_format",
    "layout",
    "memory_format",
    "preserve_format",
    "strided",
]


class _NamedConstant:
    """A constant of pyrt's namespace, printed and pickled by its name there."""

    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"pyrt.{self._name}"

    def __reduce__(self):
        return self._name


class layout(_NamedConstant):
    """How a tensor's elements lie in memory: pyrt has one, ``pyrt.strided``."""

    __slots__ = ()


class memory_format(_NamedConstant):
    """The order of a tensor's dims in memory: ``contiguous_format`` (rows last),
    ``channels_last`` (N, H, W, C for a 4-D N, C, H, W tensor), ``channels_last_3d``
    (N, D, H, W, C for 5-D), or ``preserve_format`` (as the input's)."""

    __slots__ = ()


strided = layout("strided")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

# the rank each channels-last format needs, and the dims from the fastest-moving to the slowest
_CHANNELS_LAST = {channels_last: (4, (1, 3, 2, 0)), channels_last_3d: (5, (1, 4, 3, 2, 0))}


def check_memory_format(fmt, ndim, name, preserve=True):
    """`fmt` checked as the memory_format argument of `name` for a tensor of `ndim` dims: a
    pyrt.memory_format (preserve_format only where `preserve`), a channels-last one only for
    the rank it is made for (any rank where `ndim` is None), as torch refuses the others."""
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{name}(): argument 'memory_format' must be pyrt.memory_format, not "
                        f"{type(fmt).__name__}")
    if fmt is preserve_format and not preserve:
        raise RuntimeError("unsupported memory format Preserve")
    if fmt in _CHANNELS_LAST and ndim is not None and ndim != _CHANNELS_LAST[fmt][0]:
        rank = _CHANNELS_LAST[fmt][0]
        raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")
    return fmt


def is_contiguous_as(data, fmt):
    """Whether array `data` lies in memory as `fmt` lays it out (preserve_format and
    contiguous_format: C order), by its strides, skipping dims of size 1, as torch does; a
    channels-last format never holds for another rank than its own."""
    check_memory_format(fmt, None, "is_contiguous")
    if fmt not in _CHANNELS_LAST:
        return bool(data.flags.c_contiguous)
    if data.ndim != _CHANNELS_LAST[fmt][0]:
        return False
    expected = data.itemsize
    for d in _CHANNELS_LAST[fmt][1]:
        size = data.shape[d]
        if size != 1:
            if data.strides[d] != expected:
                return False
            expected *= size
    return True
