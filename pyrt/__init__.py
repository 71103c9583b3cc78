"""pyrt: a work-stealing parallel runtime for tensor work in Python."""

__version__ = "0.1.0"

import math as _math
import sys

import numpy as _np

from pyrt import _threadpool  # noqa: F401  (registers pyrt's pool with threadpoolctl)

try:
    from pyrt.runtime import (
        cpu_count,
        get_num_threads,
        max_concurrency,
        num_threads,
        parallel_for,
        parallel_reduce,
        set_num_threads,
    )
except ValueError as _exc:  # an invalid PYRT_NUM_THREADS or PYRT_CPUS
    # `python -m pyrt` imports this package before its command line can catch anything
    # (sys.argv[0] is "-m" meanwhile): say it in one line, as the command line says errors
    if sys.argv[:1] == ["-m"]:
        print(f"pyrt: {_exc}", file=sys.stderr)
        raise SystemExit(2) from None
    raise

from pyrt import (
    amp,
    backends,
    cpu,
    distributed,
    distributions,
    func,
    functional,
    linalg,
    multiprocessing,
    nn,
    optim,
    profiler,
    special,
    testing,
    types,
)
from pyrt.amp import autocast
from pyrt.amp.autocast_mode import (
    get_autocast_dtype,
    is_autocast_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from pyrt.autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from pyrt.legacy_types import (
    BFloat16Tensor,
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
)
from pyrt.ops._memory import empty_cache
from pyrt.serialization import load, save
from pyrt.shapes import cat, stack
from pyrt.storage import TypedStorage, UntypedStorage, is_storage
from pyrt.tensor import (
    Tensor,
    arange,
    bool_,
    empty,
    empty_like,
    eye,
    float32,
    from_numpy,
    full,
    full_like,
    int64,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    tensor,
    where,
    zeros,
    zeros_like,
)

__all__ = [
    "BFloat16Tensor",
    "BoolTensor",
    "ByteTensor",
    "CharTensor",
    "DoubleTensor",
    "FloatTensor",
    "HalfTensor",
    "IntTensor",
    "LongTensor",
    "ShortTensor",
    "Tensor",
    "TypedStorage",
    "UntypedStorage",
    "amp",
    "arange",
    "autocast",
    "backends",
    "bool_",
    "cat",
    "cpu",
    "cpu_count",
    "distributed",
    "distributions",
    "empty",
    "empty_cache",
    "empty_like",
    "enable_grad",
    "eye",
    "float32",
    "from_numpy",
    "full",
    "full_like",
    "func",
    "functional",
    "get_autocast_dtype",
    "get_num_threads",
    "inference_mode",
    "int64",
    "is_autocast_enabled",
    "is_grad_enabled",
    "is_storage",
    "linalg",
    "linspace",
    "load",
    "manual_seed",
    "max_concurrency",
    "multiprocessing",
    "nn",
    "no_grad",
    "num_threads",
    "ones",
    "ones_like",
    "optim",
    "parallel_for",
    "parallel_reduce",
    "profiler",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "randn_like",
    "save",
    "set_autocast_dtype",
    "set_autocast_enabled",
    "set_grad_enabled",
    "set_num_threads",
    "special",
    "stack",
    "tensor",
    "testing",
    "types",
    "where",
    "zeros",
    "zeros_like",
]

# the functions torch keeps at its top level (pyrt.exp(x), pyrt.sum(x, 1), ...), and the data
# sets and loader; last but for the dtype names below, as some take builtins' names (abs,
# max, min, pow, sum)
from pyrt import data, utils
from pyrt.toplevel import *  # noqa: F403
from pyrt.toplevel import __all__ as _toplevel_all

__all__ += ["data", "utils", *_toplevel_all]

# PyTorch's other names of the dtypes (torch.float, torch.long, torch.bool): last, and not in
# __all__, as they shadow builtins
float = float32
long = int64
bool = bool_

# the dtypes pyrt stores but does not compute in (x.double(), x.int(): arithmetic refuses
# them, naming .float()), and torch's constants
float64 = double = _np.dtype(_np.float64)
int32 = int = _np.dtype(_np.int32)
e, inf, nan, pi = _math.e, _math.inf, _math.nan, _math.pi
# the dtypes torch's autocast takes (pyrt.autocast accepts them; pyrt computes in neither):
# NumPy has no bfloat16, so its name stands for it, as in pyrt.amp and pyrt.BFloat16Tensor
float16 = half = _np.dtype(_np.float16)
bfloat16 = "bfloat16"
newaxis = None
