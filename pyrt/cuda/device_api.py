"""torch.cuda's device functions over pyrt's one CUDA device, cuda:0.

Without CuPy or a GPU they behave as torch's do on a machine without CUDA: device_count() is
0, is_bf16_supported() False, the memory statistics 0, empty_cache(), manual_seed() and
manual_seed_all() do nothing, and the functions that need a device (current_device,
get_device_name, get_device_properties, set_device, synchronize, entering ``device(0)``)
raise a RuntimeError saying what is missing.

The memory statistics are those of CuPy's memory pool, which pyrt's CUDA arrays come from:
memory_allocated() is the bytes of live arrays; max_memory_allocated() the bytes the pool holds
(live arrays and the freed blocks it keeps for reuse), which bounds the peak of
memory_allocated() since the pool last gave its free blocks back; reset_peak_memory_stats()
and empty_cache() give them back, so that the bound starts again from the live arrays.
"""

import numbers
from collections import namedtuple

from pyrt import cuda

# what get_device_properties returns: the fields of torch's that programs read most
DeviceProperties = namedtuple(
    "DeviceProperties", ("name", "total_memory", "major", "minor", "multi_processor_count"))


def device_index(device, name):
    """The index of CUDA device `device` (None, an int, "cuda", "cuda:0", a pyrt.device) as
    `name`'s argument: 0, the one device pyrt uses, or an error naming what was given."""
    if device is None:
        return 0
    if isinstance(device, numbers.Integral) and not isinstance(device, bool):
        index = int(device)
    elif isinstance(device, str):
        from pyrt.devices import device as parse

        parsed = parse(device)
        if parsed.type != "cuda":
            raise ValueError(f"{name}(): expected a cuda device, but got: {parsed}")
        index = 0 if parsed.index is None else parsed.index
    else:
        raise TypeError(f"{name}(): device must be None, an int or a cuda device, got "
                        f"{type(device).__name__}")
    if index != 0:
        raise RuntimeError(f"{name}(): pyrt uses one CUDA device, cuda:0; got index {index}")
    return index


def device_count():
    """The number of CUDA devices (0 without CuPy or a GPU). Never raises."""
    cupy, reason = cuda._probe()
    if reason is not None:
        return 0
    return int(cupy.cuda.runtime.getDeviceCount())


def current_device():
    """The index of the device CUDA tensors go to: 0."""
    cuda.require()
    return 0


def set_device(device):
    """Select the device CUDA tensors go to: only cuda:0 exists for pyrt."""
    device_index(device, "set_device")
    cuda.require()


def get_device_properties(device=None):
    """The name, total memory (bytes), compute capability (major, minor) and multiprocessor
    count of the device."""
    index = device_index(device, "get_device_properties")
    props = cuda.require().cuda.runtime.getDeviceProperties(index)
    name = props["name"]
    return DeviceProperties(name.decode() if isinstance(name, bytes) else name,
                            int(props["totalGlobalMem"]), int(props["major"]),
                            int(props["minor"]), int(props["multiProcessorCount"]))


def get_device_name(device=None):
    """The device's name, as the driver reports it."""
    return get_device_properties(device).name


def is_bf16_supported(including_emulation=True):
    """False: pyrt has no bfloat16 dtype."""
    return False


def _check_seed(seed):
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"manual_seed(): seed must be an int, got {type(seed).__name__}")


def manual_seed(seed):
    """Nothing but a check of `seed`: pyrt draws the numbers of CUDA tensors on the host from
    the generator pyrt.manual_seed seeds, so that seeds the CUDA draws too."""
    _check_seed(seed)


def manual_seed_all(seed):
    """As manual_seed: pyrt uses one device and one generator."""
    _check_seed(seed)


def _pool():
    """CuPy's memory pool, or None while the CUDA backend is not loaded (nothing allocated)."""
    if cuda._ready is None:
        return None
    return cuda._ready.get_default_memory_pool()


def empty_cache():
    """Give the freed blocks CuPy's memory pool keeps back to the driver."""
    pool = _pool()
    if pool is not None:
        pool.free_all_blocks()


def memory_allocated(device=None):
    """The bytes of the device's memory held by live arrays (0 before any CUDA tensor)."""
    device_index(device, "memory_allocated")
    pool = _pool()
    return 0 if pool is None else int(pool.used_bytes())


def max_memory_allocated(device=None):
    """An upper bound of the peak of memory_allocated() since the last
    reset_peak_memory_stats() or empty_cache(): the bytes CuPy's pool holds."""
    device_index(device, "max_memory_allocated")
    pool = _pool()
    return 0 if pool is None else int(pool.total_bytes())


def reset_peak_memory_stats(device=None):
    """Start max_memory_allocated() again from the live arrays (the pool's freed blocks go
    back to the driver)."""
    device_index(device, "reset_peak_memory_stats")
    empty_cache()


class device:
    """``with pyrt.cuda.device(0): ...``: run the block on device 0, the one pyrt uses (None
    or -1: change nothing, as torch)."""

    def __init__(self, device):
        self.index = -1 if device is None or device == -1 else device_index(device, "device")

    def __enter__(self):
        if self.index != -1:
            cuda.require()
        return self

    def __exit__(self, *exc):
        return False
