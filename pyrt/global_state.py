"""PyTorch's process-wide settings, under torch's names: the default dtype, the flags for
deterministic algorithms, the float32 matmul precision, flushing denormals, the inter-op
thread count, and whether inference mode is on.

pyrt honours what it can and records the rest, saying which in each docstring: its kernels
are deterministic at any thread count, and its matmuls compute in full float32.
"""

import numbers

import numpy as np

from pyrt.autograd import _state as _grad_mode
from pyrt.runtime import get_num_threads

__all__ = [
    "are_deterministic_algorithms_enabled",
    "get_default_dtype",
    "get_deterministic_debug_mode",
    "get_float32_matmul_precision",
    "get_num_interop_threads",
    "is_deterministic_algorithms_warn_only_enabled",
    "is_inference_mode_enabled",
    "set_default_dtype",
    "set_deterministic_debug_mode",
    "set_float32_matmul_precision",
    "set_flush_denormal",
    "set_num_interop_threads",
    "use_deterministic_algorithms",
]

_FLOAT32 = np.dtype(np.float32)


class _Settings:
    deterministic = False
    warn_only = False
    matmul_precision = "highest"
    interop_threads = None  # None: as many as pyrt's pool has threads


_settings = _Settings()


def get_default_dtype():
    """The dtype of floating point tensors made from Python floats: pyrt.float32."""
    return _FLOAT32


def set_default_dtype(d):
    """Set the default floating point dtype: pyrt computes in float32 only, so float32 is
    the only one it takes (anything else is a TypeError)."""
    try:
        dtype = np.dtype(d)
    except TypeError:
        raise TypeError(f"set_default_dtype(): d must be a dtype such as pyrt.float32, got "
                        f"{d!r}") from None
    if dtype.kind != "f":
        raise TypeError(f"only floating-point types are supported as the default type, got "
                        f"{dtype}")
    if dtype != _FLOAT32:
        raise TypeError(f"set_default_dtype(): pyrt computes in float32 only, so float32 is "
                        f"its only default dtype, got {dtype}")


# ---- determinism -----------------------------------------------------------------------------


def _checked_bool(value, name, argument):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}(): argument '{argument}' must be bool, not "
                        f"{type(value).__name__}")
    return bool(value)


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Record whether deterministic algorithms are asked for (and whether a nondeterministic
    one should only warn). pyrt's kernels are deterministic at any thread count, so the
    flags change no result: they are kept for are_deterministic_algorithms_enabled and the
    debug mode."""
    mode = _checked_bool(mode, "use_deterministic_algorithms", "mode")
    _settings.warn_only = _checked_bool(warn_only, "use_deterministic_algorithms",
                                        "warn_only")
    _settings.deterministic = mode


def are_deterministic_algorithms_enabled():
    """Whether use_deterministic_algorithms(True) is in force (pyrt's kernels are
    deterministic either way)."""
    return _settings.deterministic


def is_deterministic_algorithms_warn_only_enabled():
    """Whether use_deterministic_algorithms was last given warn_only=True."""
    return _settings.warn_only


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode):
    """use_deterministic_algorithms by level: "default" (0) off, "warn" (1) on with
    warn_only, "error" (2) on. Recorded only: pyrt's kernels are deterministic."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif isinstance(debug_mode, bool) or not isinstance(debug_mode, numbers.Integral):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode).__name__}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    """0, 1 or 2, as set_deterministic_debug_mode takes them."""
    if not _settings.deterministic:
        return 0
    return 1 if _settings.warn_only else 2


# ---- precision and threads ---------------------------------------------------------------------

_PRECISIONS = ("highest", "high", "medium")


def set_float32_matmul_precision(precision):
    """Record the float32 matmul precision torch may lower ("highest", "high" or "medium";
    anything else is a ValueError). pyrt's matmuls compute in full float32 whatever it is,
    which is "highest"."""
    if precision not in _PRECISIONS:
        raise ValueError(f"set_float32_matmul_precision(): precision must be one of "
                         f"'highest', 'high' or 'medium', got {precision!r}")
    _settings.matmul_precision = precision


def get_float32_matmul_precision():
    """The precision set_float32_matmul_precision last recorded ("highest" at first)."""
    return _settings.matmul_precision


def set_flush_denormal(mode):
    """Whether denormal floats could be flushed to zero: pyrt leaves the CPU's floating
    point modes alone, so it returns False and changes nothing, as torch does where it
    cannot."""
    _checked_bool(mode, "set_flush_denormal", "mode")
    return False


def get_num_interop_threads():
    """The inter-op thread count torch would run independent ops on. pyrt runs all its
    parallel work on one work-stealing pool, so this is the count last set, or that pool's
    size (pyrt.get_num_threads())."""
    if _settings.interop_threads is None:
        return get_num_threads()
    return _settings.interop_threads


def set_num_interop_threads(num):
    """Record the inter-op thread count (a positive int). pyrt has no separate inter-op
    pool: the count is only what get_num_interop_threads returns; pyrt.set_num_threads
    sizes the pool that runs its work."""
    if isinstance(num, bool) or not isinstance(num, numbers.Integral):
        raise TypeError(f"set_num_interop_threads(): argument 'num' must be int, not "
                        f"{type(num).__name__}")
    if num <= 0:
        raise RuntimeError(f"Expected positive number of threads, got {num}")
    _settings.interop_threads = int(num)


def is_inference_mode_enabled():
    """Whether this thread is inside ``pyrt.inference_mode()`` (not inference_mode(False))."""
    return _grad_mode.inference
