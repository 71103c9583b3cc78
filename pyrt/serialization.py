"""pyrt.save and pyrt.load, in a NumPy .npz file of two kinds:

- weights only: tensors, arrays, numbers, strings and the containers that hold them (a
  model's or an optimizer's state dict, a training checkpoint), loaded without pickle, so
  that loading such a file cannot run code;
- a whole object (a model, an optimizer, a class of the user's, or a container holding one):
  a pickle of it, whose tensors and arrays are not pickled but stored as the arrays of the
  archive, the pickle referring to them by name (pickle's persistent ids). pyrt.load, as
  torch.load since torch 2.6, unpickles it only with weights_only=False (for a file from a
  trusted source) or with an unpickler that rebuilds only allowed classes
  (pyrt.weights_unpickler: add_safe_globals, safe_globals).

A file holds:

- ``meta``: one JSON string, the object with every array replaced by a reference
  ``{"__array__": "a3"}`` (``__tensor__`` for a Tensor, with ``"requires_grad": true`` when
  it does; ``__scalar__`` for a NumPy scalar); an array met twice (one tensor under two
  names, a tensor and its detached copy) is stored once, referred to twice, and loads as
  one array (tensors that share data share it again; one tensor is one tensor again), as
  torch.save keeps shared storage; views of one another are stored apart; dicts are stored
  as lists of key/value pairs (``{"__dict__": [[k, v], ...]}``) so that integer keys, such
  as an optimizer's parameter indices, come back as integers, and tuples as
  ``{"__tuple__": [...]}``. The top level is a
  dict naming the format and its version: pyrt.save stores ``{"format": "pyrt", "version": 1,
  "value": obj}`` (weights only) or ``{"format": "pyrt", "version": 2, "pickle": "a7"}``
  (the pickle, as bytes, in array a7), and the training CLI's checkpoints
  (pyrt/cli/checkpoint.py) their state beside ``"format": "pyrt-checkpoint"``;
- ``a0``, ``a1``, ...: the arrays.

In a pickle, a tensor is the persistent id ``("tensor", key, array, requires_grad, class,
state)``: `key` numbers the tensor objects met, so that one tensor met twice loads as one
tensor and two tensors sharing data share it again; `class` and `state` (its ``__dict__``)
are None for a plain Tensor and keep a Parameter a Parameter. An array is ``("array", name)``,
a NumPy scalar ``("scalar", name)``. Tensors load as leaves (with their requires_grad), their
.grad not saved, as torch's.

A file is written to a temporary name and renamed, so an interrupted save never leaves a
half-written file behind.
"""

import io
import json
import os
import pickle
import zipfile
from pathlib import Path

import numpy as np

from pyrt.tensor import Tensor, _check_device, _move
from pyrt.weights_unpickler import (
    WeightsUnpickler,
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
)

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "load", "read",
           "safe_globals", "save", "write"]

FORMAT = "pyrt"
VERSION = 1  # a weights-only file
PICKLE_VERSION = 2  # a file holding a pickle: the newest version pyrt.load reads
CHECKPOINT_FORMAT = "pyrt-checkpoint"  # what pyrt.load also reads: the CLI's checkpoints
# The deepest nest of containers saved: far beyond any state dict, and shallow enough that
# the metadata of any file pyrt.save writes decodes within Python's recursion limit (a list
# that contains itself reaches it too, rather than recursing until RecursionError)
MAX_DEPTH = 100
PICKLE_PROTOCOL = 4  # sets, frozensets and bytes as opcodes: no global to allow for them


class _NotPlain(TypeError):
    """An object that the weights-only format cannot hold: pyrt.save pickles the value."""


def _encode(obj, arrays, depth=0, stored=None):
    """`obj` as JSON, its arrays appended to `arrays`; `depth`: the containers around it
    (the top-level dict of the file is the first); `stored`: the name under which each array
    already in `arrays` went, by id, so that an array (or a tensor's data) met twice is
    stored once and loads as one array again, as torch.save keeps shared storage."""
    stored = {} if stored is None else stored
    if isinstance(obj, Tensor):
        ref = {"__tensor__": _store(obj._data, arrays, stored, cpu=True)}
        if obj.requires_grad:
            ref["requires_grad"] = True
        return ref
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise _NotPlain("cannot store an array of Python objects (dtype object)")
        return {"__array__": _store(obj, arrays, stored)}
    if isinstance(obj, np.generic):
        arrays.append(np.asarray(obj))
        return {"__scalar__": f"a{len(arrays) - 1}"}
    if isinstance(obj, (dict, tuple, list)) and depth > MAX_DEPTH:
        raise ValueError(f"cannot store containers nested more than {MAX_DEPTH} deep (or a "
                         f"container that contains itself)")
    depth += 1
    if isinstance(obj, dict):
        return {"__dict__": [[_encode(k, arrays, depth, stored),
                              _encode(v, arrays, depth, stored)] for k, v in obj.items()]}
    if isinstance(obj, tuple):
        return {"__tuple__": [_encode(v, arrays, depth, stored) for v in obj]}
    if isinstance(obj, list):
        return [_encode(v, arrays, depth, stored) for v in obj]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise _NotPlain(f"cannot store a {type(obj).__name__}: the format takes tensors, NumPy "
                    f"arrays and scalars, numbers, strings, None, and dicts, lists and tuples "
                    f"of them")


def _store(array, arrays, stored, cpu=False):
    """The name of `array` in the file: appended to `arrays` (a copy on the CPU if `cpu`)
    the first time it is met. `stored` holds (name, array) by id: the array kept alive, so
    that its id cannot pass to another array while the file is written."""
    seen = stored.get(id(array))
    if seen is not None:
        return seen[0]
    name = f"a{len(arrays)}"
    arrays.append(np.asarray(_move(array, "cpu")) if cpu else array)
    stored[id(array)] = (name, array)
    return name


class _Pickler(pickle.Pickler):
    """A pickler that stores tensors, arrays and NumPy scalars as arrays of the file (see
    the module's text for their persistent ids)."""

    def __init__(self, file, arrays):
        super().__init__(file, protocol=PICKLE_PROTOCOL)
        self.arrays = arrays
        self.stored = {}  # the arrays stored, by id (as _encode's)
        self.tensors = {}  # (key, tensor) by id: the tensor kept alive while pickling

    def persistent_id(self, obj):
        if isinstance(obj, Tensor):
            key = self.tensors.setdefault(id(obj), (len(self.tensors), obj))[0]
            cls = type(obj)
            state = getattr(obj, "__dict__", None) or None
            return ("tensor", key, _store(obj._data, self.arrays, self.stored, cpu=True),
                    obj._requires_grad, None if cls is Tensor else cls, state)
        if type(obj) is np.ndarray and not obj.dtype.hasobject:
            return ("array", _store(obj, self.arrays, self.stored))
        if isinstance(obj, np.generic) and not obj.dtype.hasobject:
            self.arrays.append(np.asarray(obj))
            return ("scalar", f"a{len(self.arrays) - 1}")
        return None


class _Reader:
    """The objects of one file: its `arrays` by name, tensors made on `device`; what was one
    array or one tensor when saved is one again."""

    def __init__(self, arrays, device):
        self.arrays = arrays
        self.device = device
        self.moved = {}  # a tensor's array on the device, by name
        self.tensors = {}  # by (name, requires_grad) from the metadata, by key from a pickle

    def decode(self, obj):
        """The object `obj` of the metadata describes."""
        if isinstance(obj, list):
            return [self.decode(v) for v in obj]
        if not isinstance(obj, dict):
            return obj
        if "__dict__" in obj:
            return {self.decode(k): self.decode(v) for k, v in obj["__dict__"]}
        if "__tuple__" in obj:
            return tuple(self.decode(v) for v in obj["__tuple__"])
        if "__array__" in obj:
            return self.arrays[obj["__array__"]]
        if "__tensor__" in obj:
            name = obj["__tensor__"]
            requires_grad = obj.get("requires_grad") is True
            tensor = self.tensors.get((name, requires_grad))
            if tensor is None:  # (else the same tensor again: a tied weight under two names)
                tensor = self.tensors[(name, requires_grad)] = self.tensor(name, requires_grad)
            return tensor
        if "__scalar__" in obj:
            return self.arrays[obj["__scalar__"]][()]
        raise ValueError(f"unknown entry {sorted(obj)}")

    def tensor(self, name, requires_grad, cls=Tensor):
        """A new tensor of class `cls` on the array `name` (moved to the device once)."""
        data = self.moved.get(name)
        if data is None:
            data = np.require(self.arrays[name], requirements="C")  # 0-d stays 0-d
            # what pyrt.save writes, checked: Tensor() takes any array as it is
            if data.dtype.kind not in "fiub":
                raise ValueError(f"a tensor of dtype {data.dtype}")
            data = self.moved[name] = _move(data, self.device)
        if requires_grad and data.dtype != np.float32:
            raise ValueError(f"a tensor of dtype {data.dtype} that requires grad")
        tensor = cls.__new__(cls)  # a subclass's __init__ may copy: its state comes after
        Tensor.__init__(tensor, data, requires_grad=requires_grad)
        return tensor

    def unpickle(self, name, weights_only):
        """The object pickled in the array `name`, unpickled by the weights-only unpickler
        if `weights_only`."""
        blob = self.arrays.get(name) if isinstance(name, str) else None
        if not isinstance(blob, np.ndarray) or blob.dtype != np.uint8 or blob.ndim != 1:
            raise pickle.UnpicklingError(f"no pickle in array {name!r:.40}")
        unpickler = (WeightsUnpickler if weights_only else pickle.Unpickler)(
            io.BytesIO(blob.tobytes()))
        unpickler.persistent_load = self.persistent_load
        return unpickler.load()

    def persistent_load(self, pid):
        """The tensor, array or scalar of a persistent id that _Pickler wrote."""
        kind = pid[0] if isinstance(pid, tuple) and pid else None
        if kind in ("array", "scalar") and len(pid) == 2 and isinstance(pid[1], str) \
                and pid[1] in self.arrays:
            array = self.arrays[pid[1]]
            return array if kind == "array" else array[()]
        if kind == "tensor" and len(pid) == 6 and isinstance(pid[1], int):
            _, key, name, requires_grad, cls, state = pid
            tensor = self.tensors.get(("object", key))
            if tensor is not None:
                return tensor
            if (isinstance(name, str) and name in self.arrays and isinstance(requires_grad, bool)
                    and (cls is None or (isinstance(cls, type) and issubclass(cls, Tensor)))
                    and (state is None or isinstance(state, dict))):
                try:
                    tensor = self.tensor(name, requires_grad, cls or Tensor)
                except ValueError as exc:
                    raise pickle.UnpicklingError(f"corrupt tensor ({exc})") from None
                if state:
                    vars(tensor).update(state)
                self.tensors[("object", key)] = tensor
                return tensor
        raise pickle.UnpicklingError(f"unknown persistent id {pid!r:.80}")


def _name(f):
    return str(f) if isinstance(f, (str, os.PathLike)) else getattr(f, "name", "<file>")


def _check_file(f, name, method):
    """`f` of save or load: a path, or a binary file object with `method` (write or read)."""
    if isinstance(f, (str, os.PathLike)):
        return
    if isinstance(f, io.TextIOBase):
        raise TypeError(f"{name}(): f is a file opened in text mode: open it in binary mode "
                        f"('{'wb' if method == 'write' else 'rb'}')")
    if not callable(getattr(f, method, None)) or isinstance(f, (bytes, bytearray)):
        raise TypeError(f"{name}(): f must be a path (str or os.PathLike) or a binary file "
                        f"object, got {type(f).__name__}")


def write(f, top):
    """Write the dict `top` (with its "format" and "version") to `f`, a path (atomically) or
    a binary file object. Returns `f`, as a Path if it was a path."""
    _check_file(f, "save", "write")
    arrays = []
    return _write_archive(f, _encode(top, arrays), arrays)


def _write_archive(f, meta, arrays):
    """Write the metadata `meta` (JSON) and `arrays` as a .npz archive to `f`."""
    payload = {f"a{i}": a for i, a in enumerate(arrays)}
    payload["meta"] = np.array(json.dumps(meta))
    if not isinstance(f, (str, os.PathLike)):
        np.savez(f, **payload)
        return f
    path = Path(f)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as out:  # a file object: np.savez adds no ".npz" suffix
            np.savez(out, **payload)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def read(f, what="pyrt file", device="cpu"):
    """The top-level dict of a file written by `write`, tensors on `device`. A file that is
    not one is a ValueError naming it, which calls it "not a {what}"; a missing file is
    FileNotFoundError."""
    return _read(f, what, device)[0]


def _read(f, what, device):
    """(the top-level dict, the _Reader of the file's arrays) of `read`."""
    _check_file(f, "load", "read")
    name = _name(f)
    try:
        loaded = np.load(f, allow_pickle=False)
        if not hasattr(loaded, "files"):  # a .npy file is one array, not an archive
            raise ValueError("a NumPy .npy array, not an .npz archive")
        with loaded as npz:
            arrays = {key: npz[key] for key in npz.files}
    except FileNotFoundError:
        raise
    except IsADirectoryError:
        raise ValueError(f"{name}: is a folder, not a {what}") from None
    except PermissionError as exc:
        raise ValueError(f"{name}: cannot be read ({exc.strerror})") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, RuntimeError,
            NotImplementedError) as exc:
        # (zipfile's RuntimeError and NotImplementedError: bytes read as an encrypted or
        # compressed member)
        # NumPy takes a file that is neither .npz nor .npy for a pickle, which it refuses to
        # load: say what the file is not, rather than how to unpickle it
        why = "not a NumPy .npz archive" if "pickle" in str(exc) else str(exc)
        raise ValueError(f"{name}: not a {what} ({why})") from None
    if "meta" not in arrays:
        raise ValueError(f"{name}: not a {what} (no 'meta' entry)")
    reader = _Reader(arrays, device)
    try:
        top = reader.decode(json.loads(str(arrays["meta"])))
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{name}: corrupt metadata ({exc})") from None
    except RecursionError:  # never written by pyrt.save (MAX_DEPTH)
        raise ValueError(f"{name}: corrupt metadata (nested too deeply)") from None
    if not isinstance(top, dict) or not isinstance(top.get("format"), str):
        raise ValueError(f"{name}: not a {what}")  # noqa: TRY004 (a file, not an argument)
    return top, reader


def save(obj, f):
    """Save `obj` to `f`, a path or a binary file object, as torch.save does: tensors, arrays,
    state dicts and other containers of them in a file pyrt.load reads without pickle, and
    any other picklable object (a model, an optimizer) pickled, its tensors beside the
    pickle (see the module's text)."""
    try:
        write(f, {"format": FORMAT, "version": VERSION, "value": obj})
    except _NotPlain:
        arrays = []
        pickled = io.BytesIO()
        _Pickler(pickled, arrays).dump(obj)
        arrays.append(np.frombuffer(pickled.getbuffer(), np.uint8))
        top = {"format": FORMAT, "version": PICKLE_VERSION, "pickle": f"a{len(arrays) - 1}"}
        _write_archive(f, _encode(top, arrays), arrays)


def load(f, map_location=None, weights_only=None):
    """The object pyrt.save stored in `f` (a path or a binary file object), its tensors on
    `map_location` ("cpu", the default, or "cuda"). A checkpoint of ``python -m pyrt train``
    loads as its dict of state ("model", "optimizer", ...). As torch.load since torch 2.6,
    `weights_only` (None: True) refuses, with pickle.UnpicklingError, a pickled object of
    a class not allowed by add_safe_globals or safe_globals (files of tensors and containers
    hold no pickle and load either way); weights_only=False unpickles anything, which can
    run any code: only for files from a trusted source."""
    if weights_only is not None and not isinstance(weights_only, bool):
        raise TypeError(f"weights_only must be None or a bool, got "
                        f"{type(weights_only).__name__}")
    device = "cpu" if map_location is None else _check_device(map_location)
    top, reader = _read(f, "file written by pyrt.save", device)
    if top["format"] == FORMAT:
        newest = PICKLE_VERSION
    elif top["format"] == CHECKPOINT_FORMAT:
        from pyrt.cli.checkpoint import VERSION as newest
    else:
        raise ValueError(f"{_name(f)}: not a file written by pyrt.save (format "
                         f"{top['format']!r})")
    version = top.get("version")
    if not isinstance(version, int) or version > newest:
        raise ValueError(f"{_name(f)}: format version {version!r} is newer than this pyrt "
                         f"reads ({newest}); upgrade pyrt")
    if top["format"] == CHECKPOINT_FORMAT:
        return top
    if "pickle" in top:
        return reader.unpickle(top["pickle"], weights_only is not False)
    if "value" not in top:
        raise ValueError(f"{_name(f)}: corrupt metadata (no 'value')")
    return top["value"]
