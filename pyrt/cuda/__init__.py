"""pyrt's CUDA backend: the ops of ``pyrt.ops`` on float32 CuPy arrays (optional extra:
``pip install 'pyrt[cuda]'``).

Nothing here imports CuPy until it is used (``import pyrt`` makes this package
``pyrt.cuda`` without loading CuPy): a Tensor moved to ``"cuda"`` (or a ``device="cuda"``
argument) loads it. ``is_available()`` says whether the backend can run; ``require()`` raises a
RuntimeError saying what is missing. The rest is torch.cuda's interface over the one device
pyrt uses (see pyrt/cuda/device_api.py).
"""

__all__ = [
    "DEVICE",
    "amp",
    "current_device",
    "device",
    "device_count",
    "empty_cache",
    "get_device_name",
    "get_device_properties",
    "is_available",
    "is_bf16_supported",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "memory_allocated",
    "require",
    "reset_peak_memory_stats",
    "set_device",
    "synchronize",
    "to_device",
    "to_host",
]

DEVICE = "cuda:0"  # the one device pyrt uses, named as PyTorch names it


def _probe():
    """(cupy module or None, reason it cannot run or None), without raising."""
    try:
        import cupy
    except ImportError:
        return None, ("pyrt's CUDA backend needs CuPy, which is not installed: "
                      "pip install 'pyrt[cuda]'")
    except Exception as exc:  # noqa: BLE001 (a broken CuPy install: say how it broke)
        return None, f"CuPy failed to import ({type(exc).__name__}: {exc})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 (no driver, no device: CUDA says which)
        return cupy, f"CuPy is installed but found no usable NVIDIA GPU or driver ({exc})"
    if count < 1:
        return cupy, "CuPy is installed but found no NVIDIA GPU"
    return cupy, None


def is_available():
    """Whether CuPy imports and a CUDA device is present. Never raises."""
    return _probe()[1] is None


_ready = None


def require():
    """The cupy module, once CuPy imports and a device is present; else a RuntimeError that
    names what is missing. Loading the backend also routes ``pyrt.ops`` calls on CuPy
    arrays to it (pyrt/ops/_routing.py)."""
    global _ready
    if _ready is None:
        cupy, reason = _probe()
        if reason is not None:
            raise RuntimeError(f"device 'cuda' is not available: {reason}")
        from pyrt.ops._routing import route_device_arrays

        route_device_arrays()
        _ready = cupy
    return _ready


def to_device(array):
    """A NumPy array copied to the GPU (a CuPy array is returned as it is)."""
    cupy = require()
    if isinstance(array, cupy.ndarray):
        return array
    return cupy.asarray(array)


def to_host(array):
    """A CuPy array copied to a NumPy array (a NumPy array is returned as it is)."""
    if type(array).__module__.startswith("cupy"):
        return array.get()
    return array


def synchronize(device=None):
    """Wait until the work queued on the current stream has run: for timing a loop whose
    launches return before the GPU is done. `device` may name cuda:0 (or be None)."""
    from pyrt.cuda.device_api import device_index

    device_index(device, "synchronize")
    require().cuda.get_current_stream().synchronize()


from pyrt.cuda.device_api import (  # noqa: E402  (they use require() above)
    current_device,
    device,
    device_count,
    empty_cache,
    get_device_name,
    get_device_properties,
    is_bf16_supported,
    manual_seed,
    manual_seed_all,
    max_memory_allocated,
    memory_allocated,
    reset_peak_memory_stats,
    set_device,
)
from pyrt.legacy_types import CUDA_TYPES as _CUDA_TYPES  # noqa: E402

# torch.cuda's legacy tensor types (isinstance tests and constructors on the GPU)
BFloat16Tensor = _CUDA_TYPES["BFloat16Tensor"]
BoolTensor = _CUDA_TYPES["BoolTensor"]
ByteTensor = _CUDA_TYPES["ByteTensor"]
CharTensor = _CUDA_TYPES["CharTensor"]
DoubleTensor = _CUDA_TYPES["DoubleTensor"]
FloatTensor = _CUDA_TYPES["FloatTensor"]
HalfTensor = _CUDA_TYPES["HalfTensor"]
IntTensor = _CUDA_TYPES["IntTensor"]
LongTensor = _CUDA_TYPES["LongTensor"]
ShortTensor = _CUDA_TYPES["ShortTensor"]

from pyrt.cuda import amp  # noqa: E402  (torch.cuda.amp's names; imports no CuPy)
