"""torch.backends.cuda: ``is_built()`` and the cuBLAS switches of ``matmul``.

``matmul.allow_tf32`` is pyrt.set_float32_matmul_precision's record seen as a bool, as in
torch: True sets "high", False "highest", and it reads True unless the precision is
"highest". pyrt's matmuls compute in full float32 either way. The reduced-precision
reduction switches are remembered and change nothing (pyrt has no half-precision matmul).
"""

import importlib.util

import numpy as np

from pyrt import global_state

__all__ = ["is_built", "matmul"]


def is_built():
    """Whether pyrt's CUDA backend can be loaded: CuPy is installed (a GPU may still be
    missing; pyrt.cuda.is_available() says)."""
    return importlib.util.find_spec("cupy") is not None


def _is_bool(value):
    return isinstance(value, (bool, np.bool_))


def _is_bools(value):
    if _is_bool(value):
        return True
    return (isinstance(value, (tuple, list)) and len(value) > 0
            and all(_is_bool(v) for v in value))


class cuBLASModule:
    """torch.backends.cuda.matmul: the switches cuBLAS matmuls read. Unknown names are an
    AttributeError, as torch's are."""

    _REDUCTIONS = ("allow_fp16_reduced_precision_reduction",
                   "allow_bf16_reduced_precision_reduction")

    def __init__(self):
        # set through object.__setattr__: the checked __setattr__ below refuses other names
        for name in self._REDUCTIONS:
            object.__setattr__(self, name, True)

    def __getattr__(self, name):
        if name == "allow_tf32":
            return global_state.get_float32_matmul_precision() != "highest"
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            if not _is_bool(value):
                raise RuntimeError(f"set_allow_tf32_cublas expects a bool, but got "
                                   f"{type(value).__name__}")
            global_state.set_float32_matmul_precision("high" if value else "highest")
            return
        if name in self._REDUCTIONS:
            if not _is_bools(value):
                raise TypeError(f"{name} expects a bool or a tuple/list of bools, but got "
                                f"{type(value)}")
            # a tuple also sets the split-K variant, which pyrt lacks: the first one is kept
            object.__setattr__(self, name, bool(value if _is_bool(value) else value[0]))
            return
        raise AttributeError(f"Unknown attribute {name}")


matmul = cuBLASModule()
