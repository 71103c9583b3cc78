"""pyrt.save and pyrt.load: tensors, arrays, numbers, strings and the containers that hold
them (a model's or an optimizer's state dict, a training checkpoint) in a NumPy .npz file,
loaded without pickle, so that loading a file cannot run code.

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
  "value": obj}``, and the training CLI's checkpoints (pyrt/cli/checkpoint.py) their state
  beside ``"format": "pyrt-checkpoint"``;
- ``a0``, ``a1``, ...: the arrays.

A file is written to a temporary name and renamed, so an interrupted save never leaves a
half-written file behind.
"""

import io
import json
import os
import zipfile
from pathlib import Path

import numpy as np

from pyrt.tensor import Tensor, _check_device, _move

__all__ = ["load", "read", "save", "write"]

FORMAT = "pyrt"
VERSION = 1
CHECKPOINT_FORMAT = "pyrt-checkpoint"  # what pyrt.load also reads: the CLI's checkpoints
# The deepest nest of containers saved: far beyond any state dict, and shallow enough that
# the metadata of any file pyrt.save writes decodes within Python's recursion limit (a list
# that contains itself reaches it too, rather than recursing until RecursionError)
MAX_DEPTH = 100


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
            raise TypeError("cannot store an array of Python objects (dtype object)")
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
    raise TypeError(f"cannot store a {type(obj).__name__}: pyrt.save takes tensors, NumPy "
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


def _decode(obj, arrays, device, made=None):
    """The object `obj` of the metadata describes, its arrays from `arrays`, tensors on
    `device`; `made`: the tensors' arrays and the tensors made so far, by name, so that what
    was one array or one tensor when saved is one again."""
    made = {} if made is None else made
    if isinstance(obj, list):
        return [_decode(v, arrays, device, made) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "__dict__" in obj:
        return {_decode(k, arrays, device, made): _decode(v, arrays, device, made)
                for k, v in obj["__dict__"]}
    if "__tuple__" in obj:
        return tuple(_decode(v, arrays, device, made) for v in obj["__tuple__"])
    if "__array__" in obj:
        return arrays[obj["__array__"]]
    if "__tensor__" in obj:
        name = obj["__tensor__"]
        requires_grad = obj.get("requires_grad") is True
        tensor = made.get((name, requires_grad))
        if tensor is not None:  # the same tensor again (a tied weight saved under two names)
            return tensor
        data = made.get(name)
        if data is None:
            data = np.require(arrays[name], requirements="C")  # 0-d stays 0-d
            # what pyrt.save writes, checked: Tensor() takes any array as it is
            if data.dtype.kind not in "fiub":
                raise ValueError(f"a tensor of dtype {data.dtype}")
            data = made[name] = _move(data, device)
        if requires_grad and data.dtype != np.float32:
            raise ValueError(f"a tensor of dtype {data.dtype} that requires grad")
        tensor = made[(name, requires_grad)] = Tensor(data, requires_grad=requires_grad)
        return tensor
    if "__scalar__" in obj:
        return arrays[obj["__scalar__"]][()]
    raise ValueError(f"unknown entry {sorted(obj)}")


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
    meta = _encode(top, arrays)
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
    try:
        top = _decode(json.loads(str(arrays["meta"])), arrays, device)
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{name}: corrupt metadata ({exc})") from None
    except RecursionError:  # never written by pyrt.save (MAX_DEPTH)
        raise ValueError(f"{name}: corrupt metadata (nested too deeply)") from None
    if not isinstance(top, dict) or not isinstance(top.get("format"), str):
        raise ValueError(f"{name}: not a {what}")  # noqa: TRY004 (a file, not an argument)
    return top


def save(obj, f):
    """Save `obj` (a tensor, an array, a state dict, ...; see the module's text) to `f`, a
    path or a binary file object, as torch.save does, in a file pyrt.load reads without
    pickle."""
    write(f, {"format": FORMAT, "version": VERSION, "value": obj})


def load(f, map_location=None, weights_only=None):
    """The object pyrt.save stored in `f` (a path or a binary file object), its tensors on
    `map_location` ("cpu", the default, or "cuda"). A checkpoint of ``python -m pyrt train``
    loads as its dict of state ("model", "optimizer", ...). `weights_only` (None or a bool)
    is taken as torch.load takes it and changes nothing: loading never unpickles, so it is
    always weights only."""
    if weights_only is not None and not isinstance(weights_only, bool):
        raise TypeError(f"weights_only must be None or a bool, got "
                        f"{type(weights_only).__name__}")
    device = "cpu" if map_location is None else _check_device(map_location)
    top = read(f, "file written by pyrt.save", device)
    if top["format"] == FORMAT:
        newest = VERSION
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
    if "value" not in top:
        raise ValueError(f"{_name(f)}: corrupt metadata (no 'value')")
    return top["value"]
