"""torch.backends.cudnn: pyrt has no cuDNN, so is_available() is False and version() None;
``enabled``, ``benchmark``, ``deterministic``, ``allow_tf32`` and ``benchmark_limit`` are
remembered with torch's defaults and type checks and change nothing (pyrt's kernels are
deterministic at any thread count; its CUDA backend runs CuPy kernels, not cuDNN's)."""

import contextlib
import sys

from pyrt.backends._flags import bool_switch, install

__all__ = ["flags", "is_acceptable", "is_available", "version"]

benchmark_limit = 10  # how many cuDNN algorithms benchmark mode would try


def is_available():
    """False: pyrt uses no cuDNN."""
    return False


def version():
    """None: there is no cuDNN, as torch says where it has none."""
    return None


def is_acceptable(tensor):
    """False: no tensor can run through cuDNN in pyrt."""
    return False


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True):
    """Set the switches for the body of a ``with`` block, and restore them after."""
    module = sys.modules[__name__]
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    saved = {name: getattr(module, name) for name in names}
    try:
        for name, value in zip(names, (enabled, benchmark, benchmark_limit, deterministic,
                                       allow_tf32)):
            setattr(module, name, value)
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


install(__name__,
        enabled=bool_switch("enabled", "set_enabled_cudnn", True),
        benchmark=bool_switch("benchmark", "set_benchmark_cudnn", False),
        deterministic=bool_switch("deterministic", "set_deterministic_cudnn", False),
        allow_tf32=bool_switch("allow_tf32", "set_allow_tf32_cublas", True))
