"""Training checkpoints as NumPy .npz files, loaded without pickle.

A checkpoint is a nested structure of dicts, lists, tuples, strings, numbers, NumPy arrays and
Tensors (model and optimizer state dicts, epoch, step, seed, arguments). It is stored as:

- ``meta``: one JSON string, the structure with every array replaced by a reference
  ``{"__array__": "a3"}`` (``__tensor__`` for a Tensor, ``__scalar__`` for a NumPy scalar);
  dicts are stored as lists of key/value pairs (``{"__dict__": [[k, v], ...]}``) so that
  integer keys, such as an optimizer's parameter indices, come back as integers, and tuples
  as ``{"__tuple__": [...]}``;
- ``a0``, ``a1``, ...: the arrays.

Loading uses ``allow_pickle=False``: a checkpoint cannot run code. The file is written to a
temporary name and renamed, so an interrupted save never leaves a half-written checkpoint.
"""

import json
import os
import zipfile
from pathlib import Path

import numpy as np

from pyrt.tensor import Tensor

__all__ = ["FORMAT", "VERSION", "load_checkpoint", "save_checkpoint"]

FORMAT = "pyrt-checkpoint"
VERSION = 1


def _encode(obj, arrays):
    if isinstance(obj, Tensor):
        arrays.append(np.asarray(obj.detach().numpy()))
        return {"__tensor__": f"a{len(arrays) - 1}"}
    if isinstance(obj, np.ndarray):
        arrays.append(obj)
        return {"__array__": f"a{len(arrays) - 1}"}
    if isinstance(obj, np.generic):
        arrays.append(np.asarray(obj))
        return {"__scalar__": f"a{len(arrays) - 1}"}
    if isinstance(obj, dict):
        return {"__dict__": [[_encode(k, arrays), _encode(v, arrays)] for k, v in obj.items()]}
    if isinstance(obj, tuple):
        return {"__tuple__": [_encode(v, arrays) for v in obj]}
    if isinstance(obj, list):
        return [_encode(v, arrays) for v in obj]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"cannot store a {type(obj).__name__} in a checkpoint")


def _decode(obj, arrays):
    if isinstance(obj, list):
        return [_decode(v, arrays) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "__dict__" in obj:
        return {_decode(k, arrays): _decode(v, arrays) for k, v in obj["__dict__"]}
    if "__tuple__" in obj:
        return tuple(_decode(v, arrays) for v in obj["__tuple__"])
    if "__array__" in obj:
        return arrays[obj["__array__"]]
    if "__tensor__" in obj:
        return Tensor(np.require(arrays[obj["__tensor__"]], requirements="C"))  # 0-d stays 0-d
    if "__scalar__" in obj:
        return arrays[obj["__scalar__"]][()]
    raise ValueError(f"unknown entry {sorted(obj)}")


def save_checkpoint(path, state):
    """Write `state` (a dict) to `path` atomically, adding the format name and version."""
    path = Path(path)
    arrays = []
    meta = _encode({"format": FORMAT, "version": VERSION, **state}, arrays)
    payload = {f"a{i}": a for i, a in enumerate(arrays)}
    payload["meta"] = np.array(json.dumps(meta))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:  # a file object: np.savez adds no ".npz" suffix
            np.savez(f, **payload)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def load_checkpoint(path):
    """Read a checkpoint written by ``save_checkpoint``; ValueError naming the file if it is
    not one (or of a newer version)."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except FileNotFoundError:
        raise
    except IsADirectoryError:
        raise ValueError(f"{path}: is a folder, not a checkpoint file") from None
    except PermissionError as exc:
        raise ValueError(f"{path}: cannot be read ({exc.strerror})") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        # NumPy takes a file that is neither .npz nor .npy for a pickle, which it refuses to
        # load: say what the file is not, rather than how to unpickle it
        why = "not a NumPy .npz archive" if "pickle" in str(exc) else str(exc)
        raise ValueError(f"{path}: not a pyrt checkpoint ({why})") from None
    if "meta" not in arrays:
        raise ValueError(f"{path}: not a pyrt checkpoint (no 'meta' entry)")
    try:
        state = _decode(json.loads(str(arrays["meta"])), arrays)
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: corrupt checkpoint metadata ({exc})") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"{path}: not a pyrt checkpoint")
    if not isinstance(state.get("version"), int) or state["version"] > VERSION:
        raise ValueError(f"{path}: checkpoint version {state.get('version')!r} is newer than "
                         f"this pyrt reads ({VERSION}); upgrade pyrt")
    return state
