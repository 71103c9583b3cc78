"""Tensor.share_memory_, is_shared and pin_memory: where a CPU tensor's data lies.

share_memory_ copies the data into an anonymous shared mapping (``mmap``), so that processes
forked afterwards (DataLoader workers, multiprocessing) read and write the same memory, as
torch's shared tensors. pyrt does not pin host memory: pin_memory returns the tensor itself
where torch would return a pinned copy, and refuses as torch does without a CUDA device.
"""

import mmap

import numpy as np

__all__ = ["is_shared", "pin_memory", "share_memory_"]


def _mapping(array):
    """The mmap under `array`, or None."""
    base = array
    while base is not None and not isinstance(base, mmap.mmap):
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    return base


def is_shared(tensor):
    """Whether the tensor's data is in shared memory: on the GPU, or share_memory_'s."""
    if not isinstance(tensor._data, np.ndarray):
        return True
    return _mapping(tensor._data) is not None


def share_memory_(tensor):
    """The tensor, its data moved into a shared mapping (once; a GPU tensor is left as it
    is). Views made before the move keep the old memory."""
    if is_shared(tensor):
        return tensor
    data = tensor._data
    shared = mmap.mmap(-1, max(data.nbytes, 1))  # anonymous: MAP_SHARED on POSIX
    array = np.frombuffer(shared, data.dtype, data.size).reshape(data.shape)
    array[...] = data
    tensor._data = array
    return tensor


def pin_memory(tensor):
    """The tensor itself, once a CUDA device is present and the tensor is on the CPU."""
    from pyrt import cuda

    if not isinstance(tensor._data, np.ndarray):
        raise RuntimeError(  # noqa: TRY004 (torch's)
            f"cannot pin '{tensor.device}' tensors: only dense CPU tensors "
            f"can be pinned")
    if not cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return tensor
