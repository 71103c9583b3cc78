"""The unpickler of pyrt.load(weights_only=True) and its allowlist of globals, as torch's
(torch.serialization.add_safe_globals, safe_globals, get_safe_globals, clear_safe_globals).

A file that pyrt.save wrote of a whole object (a model, an optimizer, a class of the user's)
holds a pickle. Unpickling runs code: a pickle names functions and classes ("globals") that
it calls to rebuild its objects. The weights-only unpickler looks up only the globals of an
allowlist: the few that plain containers need (OrderedDict, defaultdict, set, ...), pyrt's
tensor classes and NumPy's dtype, and those the user marks as safe. Any other global makes
the load fail with pickle.UnpicklingError, naming the global and how to allow it, before
anything of it runs. The tensors and arrays of such a file are not pickled at all: they are
arrays of the .npz archive, which the pickle refers to (see pyrt.serialization).
"""

import collections
import functools
import pickle

import numpy as np

__all__ = ["WeightsUnpickler", "add_safe_globals", "clear_safe_globals", "get_safe_globals",
           "safe_globals"]

# the globals the user marked as safe, by their full name "module.qualname"
_user_globals = {}


@functools.cache
def _default_globals():
    """The globals allowed without asking: those that containers, pyrt's tensor classes and
    dtypes need to be rebuilt (imported here, as pyrt.nn imports this module's users)."""
    from pyrt.nn.buffer import Buffer
    from pyrt.nn.parameter import Parameter
    from pyrt.tensor import Tensor

    # (a defaultdict calls its factory, itself a global that must be allowed: an optimizer's
    # state is a defaultdict(dict))
    allowed = (collections.OrderedDict, collections.Counter, collections.defaultdict, dict,
               set, frozenset, bytearray, complex, slice, np.dtype, Tensor, Parameter, Buffer)
    return {_full_name(g): g for g in allowed}


def _full_name(obj):
    return f"{obj.__module__}.{obj.__qualname__}"


def _entries(globals_, name):
    """{full name: global} of the argument of add_safe_globals or safe_globals: a list of
    classes or functions, or of (class or function, full name) pairs."""
    if not isinstance(globals_, (list, tuple)):
        raise TypeError(f"{name}(): safe_globals must be a list of classes or functions, got "
                        f"{type(globals_).__name__}")
    entries = {}
    for item in globals_:
        if isinstance(item, tuple):
            if len(item) != 2 or not callable(item[0]) or not isinstance(item[1], str):
                raise TypeError(f"{name}(): expected (class or function, str) pairs, got "
                                f"{item!r:.80}")
            entries[item[1]] = item[0]
        elif callable(item):
            entries[_full_name(item)] = item
        else:
            raise TypeError(f"{name}(): expected a class or a function, got "
                            f"{type(item).__name__}")
    return entries


def add_safe_globals(safe_globals):
    """Allow the classes and functions of the list `safe_globals` in pyrt.load(weights_only=
    True); an item is a global or a (global, "module.qualname") pair, the name under which
    the file refers to it."""
    _user_globals.update(_entries(safe_globals, "add_safe_globals"))


def get_safe_globals():
    """The globals add_safe_globals allowed, as it took them: a global, or a (global, name)
    pair where the name is not the global's own."""
    return [g if _full_name(g) == name else (g, name) for name, g in _user_globals.items()]


def clear_safe_globals():
    """Forget every global add_safe_globals allowed."""
    _user_globals.clear()


class safe_globals:
    """Context manager: the globals of the list `safe_globals` allowed inside the `with`
    block only (as add_safe_globals takes them)."""

    def __init__(self, safe_globals):
        self.safe_globals = _entries(safe_globals, "safe_globals")
        self._before = None

    def __enter__(self):
        self._before = dict(_user_globals)
        _user_globals.update(self.safe_globals)
        return self

    def __exit__(self, *exc):
        _user_globals.clear()
        _user_globals.update(self._before)


def failure(why):
    """The UnpicklingError of a weights-only load that met what it may not rebuild."""
    return pickle.UnpicklingError(
        f"Weights only load failed. This file can still be loaded, to do so you have two "
        f"options, do those steps only if you trust the source of the checkpoint.\n"
        f"\t(1) Re-running `pyrt.load` with `weights_only` set to `False` will likely "
        f"succeed, but it can result in arbitrary code execution. Do it only if you got the "
        f"file from a trusted source.\n"
        f"\t(2) Alternatively, to load with `weights_only=True` please check the recommended "
        f"steps in the following error message.\n"
        f"\tWeightsUnpickler error: {why}")


class WeightsUnpickler(pickle.Unpickler):
    """An unpickler that looks up only allowed globals (pickle's find_class is where every
    global of a pickle is looked up: GLOBAL, STACK_GLOBAL, INST, OBJ and the extension
    registry's codes all pass through it)."""

    def find_class(self, module, name):
        full = f"{module}.{name}"
        found = _user_globals.get(full) or _default_globals().get(full)
        if found is None:
            raise failure(
                f"Unsupported global: GLOBAL {full} was not an allowed global by default. "
                f"Please use `pyrt.serialization.add_safe_globals([{full}])` or the "
                f"`pyrt.serialization.safe_globals([{full}])` context manager to allowlist "
                f"this global if you trust this class/function.")
        return found
