"""torch.autocast under pyrt: the context manager and decorator that mixed-precision training
scripts wrap their forward pass in, with torch's arguments, checks and warnings.

pyrt computes in float32 only, so ops run in float32 and autocast changes no dtype: a region
records that it is on (``is_autocast_enabled``) and which dtype was asked for
(``get_autocast_dtype``), and nothing else. No op reads that record, so autocast costs
nothing per op. The half-precision dtypes are named as pyrt names them where it lacks the
dtype: float16 is ``numpy.float16`` and bfloat16 the string ``"bfloat16"`` (as
pyrt.HalfTensor and pyrt.BFloat16Tensor name theirs).

The record is per thread, as torch's is: a region opened in one thread is not on in another.
"""

import functools
import threading
import warnings

import numpy as np

__all__ = [
    "autocast",
    "custom_bwd",
    "custom_fwd",
    "get_autocast_dtype",
    "is_autocast_available",
    "is_autocast_enabled",
    "set_autocast_dtype",
    "set_autocast_enabled",
]

FLOAT16 = np.dtype(np.float16)
BFLOAT16 = "bfloat16"  # NumPy has no bfloat16: the name stands for it
_SUPPORTED_DTYPES = (BFLOAT16, FLOAT16)

# the device types torch parses at the start of a device string, in the order its error names
# them; "meta" parses but holds no autocast dtype
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                 "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                 "privateuseone")
# the dtype each device type's autocast uses when none is given, as torch's defaults
_DEFAULT_DTYPES = {"cpu": BFLOAT16, "hpu": BFLOAT16, "maia": BFLOAT16, "xla": BFLOAT16}
_AUTOCAST_DEVICE_TYPES = {"cpu", "cuda", "ipu", "xpu", "maia", "xla", "mps", "hpu", "mtia",
                          "privateuseone"}


class _ThreadState(threading.local):
    """This thread's autocast record: which device types are on, the dtype of each, the
    nesting depth of regions and whether the weight cache is on (torch's flags)."""

    def __init__(self):
        self.enabled = {}
        self.dtypes = {}
        self.nesting = 0
        self.cache_enabled = True


_state = _ThreadState()


def _device_type(device_type):
    """The device type a device string starts with ('cuda:0' -> 'cuda'), or torch's error."""
    name = device_type.split(":", 1)[0]
    if name not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start "
                           f"of device string: {device_type}")
    return name


def is_autocast_available(device_type):
    """Whether autocast can be entered for `device_type` ('cuda', 'cpu', ...)."""
    return _device_type(device_type) in _AUTOCAST_DEVICE_TYPES


def is_autocast_enabled(device_type="cuda"):
    """Whether this thread is in an enabled autocast region of `device_type` (torch's
    default, with no argument, asks about 'cuda')."""
    return _state.enabled.get(_device_type(device_type), False)


def set_autocast_enabled(device_type, enabled):
    """Turn this thread's autocast flag of `device_type` on or off (autocast does it)."""
    if not isinstance(enabled, (bool, np.bool_)):
        raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position 2) must be "
                        f"bool, not {type(enabled).__name__}")
    _state.enabled[_device_type(device_type)] = bool(enabled)


def get_autocast_dtype(device_type):
    """The dtype autocast regions of `device_type` ask for: bfloat16 on the CPU (and hpu,
    maia, xla), float16 elsewhere, unless a region set another. pyrt computes in float32
    whatever it is."""
    name = _device_type(device_type)
    if name == "meta":
        raise RuntimeError("unsupported scalarType")
    return _state.dtypes.get(name, _DEFAULT_DTYPES.get(name, FLOAT16))


def set_autocast_dtype(device_type, dtype):
    """Set the dtype autocast regions of `device_type` ask for (autocast does it)."""
    _state.dtypes[_device_type(device_type)] = dtype


def _cuda_available():
    from pyrt import cuda

    return cuda.is_available()


class autocast:
    """A region of mixed precision, as a context manager or a decorator::

        with pyrt.autocast(device_type="cuda"):
            loss = loss_fn(model(x), y)

    `device_type` names a device type ('cuda', 'cpu', ...); `dtype` the precision asked for
    (None: the device type's default); `enabled` turns the region off; `cache_enabled` is
    torch's weight-cache flag (None: the current one). Ops run in float32; autocast changes
    no dtype. As torch does, a 'cuda' region warns and is disabled when CUDA is not
    available, and a dtype other than float16 or bfloat16 warns and disables the region.
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(  # noqa: TRY004 (a ValueError, as torch's)
                f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(self.device):
            raise RuntimeError(
                f"User specified an unsupported autocast device_type '{self.device}'")
        self._cache_enabled = _state.cache_enabled if cache_enabled is None else cache_enabled
        if enabled:
            if self.device == "cuda":
                if not _cuda_available():
                    warnings.warn("CUDA is not available. Disabling autocast.", stacklevel=2)
                    enabled = False
            elif not _is_supported(self.fast_dtype):
                name = self.device.upper()
                warnings.warn(
                    f"In {name} autocast, but the target dtype is not supported. Disabling "
                    f"autocast.\n{name} Autocast only supports dtypes of bfloat16, float16 "
                    f"currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = _state.cache_enabled
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        _state.nesting += 1
        _state.cache_enabled = self._cache_enabled
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _state.nesting -= 1
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        _state.cache_enabled = self.prev_cache_enabled
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                f"Did you mean to use autocast as a context manager? For example:\n"
                f"    with pyrt.autocast(device_type=...):\n"
                f"        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_autocast


def _is_supported(dtype):
    """Whether `dtype` is float16 or bfloat16 (the dtypes torch's autocast takes)."""
    if isinstance(dtype, str):
        return dtype == BFLOAT16
    try:
        return np.dtype(dtype) == FLOAT16
    except TypeError:
        return False


def _checked_device_type(device_type):
    if not isinstance(device_type, str):
        raise ValueError(  # noqa: TRY004 (a ValueError, as torch's)
            f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorate the ``forward`` of a pyrt.autograd.Function for autocast: it records on
    ``ctx`` whether autocast was on, for custom_bwd; with `cast_inputs`, forward runs with
    autocast off (its floating inputs would be cast to `cast_inputs`, which in pyrt, all
    float32, leaves them as they are)."""
    _checked_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        args[0]._fwd_used_autocast = False
        if is_autocast_enabled(device_type):
            with autocast(device_type=device_type, enabled=False):
                return fwd(*args, **kwargs)
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorate the ``backward`` of a pyrt.autograd.Function so that it runs in the autocast
    state its forward (decorated with custom_fwd) ran in."""
    _checked_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast,
                      dtype=args[0]._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
