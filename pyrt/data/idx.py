"""The IDX file format of MNIST and Fashion-MNIST: read and write, gzipped or not.

An IDX file is a big-endian header followed by the raw array in C order::

    bytes 0-1   zero
    byte  2     element type (0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32,
                0x0E float64)
    byte  3     number of dimensions d
    4 * d       the size of each dimension, a big-endian uint32
    ...         prod(sizes) elements, big-endian

So MNIST's images start with the magic number 0x00000803 (uint8, 3-D: [N, 28, 28]) and its
labels with 0x00000801 (uint8, 1-D: [N]). The reader checks that the file holds exactly the
bytes the header announces: a truncated download or a file of the wrong kind raises a
ValueError that names the file and what is wrong, instead of a silently misshapen array.
"""

import gzip
import math
import struct
import zlib
from pathlib import Path

import numpy as np

__all__ = ["IMAGES_MAGIC", "LABELS_MAGIC", "read_idx", "write_idx"]

IMAGES_MAGIC = 0x00000803
LABELS_MAGIC = 0x00000801

_GZIP_SIGNATURE = b"\x1f\x8b"

# element type code -> big-endian NumPy dtype
_DTYPES = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_CODES = {dt.newbyteorder("=").kind + str(dt.itemsize): code for code, dt in _DTYPES.items()}


def _read_bytes(path):
    """The file's contents, decompressed when it starts with the gzip signature (whatever its
    name says)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:  # permissions, I/O: an error naming the file, as for bad contents
        raise ValueError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not raw.startswith(_GZIP_SIGNATURE):
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise ValueError(f"{path}: corrupt gzip data ({exc}); delete the file and fetch it "
                         "again") from None


def read_idx(path, *, magic=None):
    """Read an IDX file (gzipped or not) into a native-endian NumPy array.

    `magic`, when given, is the magic number the file must start with (``IMAGES_MAGIC`` or
    ``LABELS_MAGIC`` for MNIST). Raises ValueError naming the file when the header is invalid
    or the size of the data does not match the header exactly.
    """
    path = Path(path)
    data = _read_bytes(path)
    if len(data) < 4:
        raise ValueError(f"{path}: not an IDX file: {len(data)} bytes, shorter than the 4-byte "
                         "magic number")
    (file_magic,) = struct.unpack(">I", data[:4])
    zero, code, ndim = file_magic >> 16, (file_magic >> 8) & 0xFF, file_magic & 0xFF
    if zero != 0 or code not in _DTYPES:
        raise ValueError(f"{path}: not an IDX file: bad magic number 0x{file_magic:08X}")
    if magic is not None and file_magic != magic:
        raise ValueError(f"{path}: wrong magic number 0x{file_magic:08X}, expected "
                         f"0x{magic:08X} ({_describe(magic)})")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"{path}: truncated header: {ndim} dimensions need {header} bytes, "
                         f"the file has {len(data)}")
    shape = struct.unpack(f">{ndim}I", data[4:header])
    dtype = _DTYPES[code]
    expected = header + math.prod(shape) * dtype.itemsize  # Python ints: no overflow
    if len(data) != expected:
        what = "truncated" if len(data) < expected else "has trailing bytes"
        raise ValueError(f"{path}: {what}: the header announces shape {shape} of {dtype.name} "
                         f"({expected} bytes in all), the data has {len(data)} bytes")
    array = np.frombuffer(data, dtype=dtype, offset=header).reshape(shape)
    return array.astype(dtype.newbyteorder("="))


def _describe(magic):
    code, ndim = (magic >> 8) & 0xFF, magic & 0xFF
    return f"{ndim}-D {_DTYPES[code].newbyteorder('=').name}" if code in _DTYPES else "unknown"


def write_idx(path, array):
    """Write `array` as an IDX file; gzipped when `path` ends in ``.gz``."""
    array = np.asarray(array)
    code = _CODES.get(array.dtype.kind + str(array.dtype.itemsize))
    if code is None:
        raise TypeError(f"array: IDX cannot store dtype {array.dtype}; use uint8, int8, int16, "
                        "int32, float32 or float64")
    if array.ndim > 255:
        raise ValueError(f"array: IDX stores at most 255 dimensions, got {array.ndim}")
    header = struct.pack(f">I{array.ndim}I", (code << 8) | array.ndim, *array.shape)
    payload = header + np.ascontiguousarray(array, dtype=_DTYPES[code]).tobytes()
    path = Path(path)
    if path.suffix == ".gz":
        payload = gzip.compress(payload, compresslevel=6, mtime=0)
    path.write_bytes(payload)
