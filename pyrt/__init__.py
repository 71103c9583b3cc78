"""pyrt: a work-stealing parallel runtime for tensor work in Python."""

__version__ = "0.1.0"

from pyrt import _threadpool  # noqa: E402,F401  (registers pyrt's pool with threadpoolctl)
from pyrt.runtime import (  # noqa: E402
    cpu_count,
    get_num_threads,
    num_threads,
    parallel_for,
    parallel_reduce,
    set_num_threads,
)

__all__ = [
    "cpu_count",
    "get_num_threads",
    "num_threads",
    "parallel_for",
    "parallel_reduce",
    "set_num_threads",
]
