"""Loading the CUDA kernel sources (pyrt/cuda/kernels/*.cu) and launching their kernels.

Each .cu file becomes one ``cupy.RawModule``, compiled by NVRTC on first use (CuPy caches the
binary on disk) and kept for the life of the process. The compile options below are the
only place the launch constants live; tests/test_cuda_kernels.py compiles every file with
nvcc using the same ones.
"""

import functools
from pathlib import Path

__all__ = ["BLOCK", "CHUNK", "COMPILE_DEFINES", "MAX_TENSORS", "OP", "grid_for", "kernel",
           "kernel_source"]

KERNEL_DIR = Path(__file__).with_name("kernels")
BLOCK = 256  # threads per block of every kernel
CHUNK = 2048  # elements a block updates in the multi-tensor optimizer kernels
MAX_TENSORS = 16  # gradients one optimizer launch takes by value
MAX_BLOCKS = 65535 * 8  # grid-stride loops cover the rest
COMPILE_DEFINES = {"PYRT_BLOCK": BLOCK, "PYRT_CHUNK": CHUNK, "PYRT_MAX_TENSORS": MAX_TENSORS}

# unary op and activation codes, as kernels/common.cuh numbers them
OP = {"identity": 0, "relu": 1, "sigmoid": 2, "tanh": 3, "exp": 4, "log": 5, "sqrt": 6,
      "neg": 7}

_INCLUDE = '#include "common.cuh"'


def kernel_source(name):
    """The source of kernels/<name>.cu with common.cuh pasted in place of its #include, so
    that NVRTC needs no include path and CuPy's cache key covers the header too."""
    text = (KERNEL_DIR / f"{name}.cu").read_text()
    common = (KERNEL_DIR / "common.cuh").read_text().replace("#pragma once\n", "")
    return text.replace(_INCLUDE, common, 1)


@functools.cache
def _module(name):
    import cupy

    options = tuple(f"-D{k}={v}" for k, v in COMPILE_DEFINES.items())
    return cupy.RawModule(code=kernel_source(name), options=options)


@functools.cache
def kernel(file, function):
    """The RawKernel `function` of kernels/<file>.cu (compiled once, then cached)."""
    return _module(file).get_function(function)


def grid_for(n):
    """Blocks for a grid-stride loop over n elements."""
    return (max(1, min((n + BLOCK - 1) // BLOCK, MAX_BLOCKS)),)
