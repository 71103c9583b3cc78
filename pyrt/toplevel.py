"""The functions PyTorch keeps at its top level, ``torch.exp(x)``, ``torch.sum(x, 1)``,
``torch.max(x, dim=0)``: each is the Tensor method of the same name applied to its first
argument, which must be a Tensor (as torch's, they take no lists or arrays there), and is
exported as ``pyrt.exp``, ``pyrt.sum``, ... The binary ones (maximum, remainder, the bitwise
ops) are pyrt.functional's; a few that are not one method (``allclose``, ``equal``,
``is_tensor``, ``meshgrid``, ``broadcast_tensors``, ``randperm``) are written out below."""

import numbers

import numpy as np

from pyrt.binary_pointwise import xlogy
from pyrt.binning import bucketize, searchsorted
from pyrt.contractions import block_diag, cartesian_prod, cdist, einsum, tensordot
from pyrt.functional import (
    _xp,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    broadcast_shape,
    floor_divide,
    maximum,
    minimum,
    remainder,
)
from pyrt.joining import (
    argwhere,
    as_tensor,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    broadcast_to,
    column_stack,
    concat,
    concatenate,
    dstack,
    hstack,
    isin,
    row_stack,
    select,
    vstack,
)
from pyrt.rearrange import broadcast_tensors, meshgrid
from pyrt.reductions import std_mean, var_mean
from pyrt.sampling import bernoulli, multinomial, normal, poisson, randint_like
from pyrt.tensor import Tensor, _draw_source
from pyrt.tensor import tensor as _tensor
from pyrt.windows import diag_embed, dsplit, hsplit, split_with_sizes, tensor_split, vsplit

__all__ = [
    "abs",
    "add",
    "addcmul",
    "all",
    "allclose",
    "amax",
    "amin",
    "any",
    "argmax",
    "argmin",
    "argsort",
    "bincount",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "bmm",
    "broadcast_tensors",
    "ceil",
    "chunk",
    "clamp",
    "clamp_max",
    "clamp_min",
    "clip",
    "clone",
    "cos",
    "cumprod",
    "cumsum",
    "detach",
    "diag",
    "diff",
    "div",
    "dot",
    "equal",
    "erf",
    "exp",
    "exp2",
    "expm1",
    "flatten",
    "flip",
    "floor",
    "floor_divide",
    "fmod",
    "frac",
    "gather",
    "index_select",
    "is_tensor",
    "isclose",
    "isfinite",
    "isinf",
    "isnan",
    "lerp",
    "log",
    "log1p",
    "log2",
    "log10",
    "log_softmax",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logsumexp",
    "masked_fill",
    "masked_select",
    "matmul",
    "max",
    "maximum",
    "mean",
    "median",
    "meshgrid",
    "min",
    "minimum",
    "mm",
    "movedim",
    "mul",
    "nansum",
    "narrow",
    "neg",
    "nonzero",
    "norm",
    "numel",
    "outer",
    "permute",
    "pow",
    "prod",
    "randperm",
    "reciprocal",
    "relu",
    "remainder",
    "repeat_interleave",
    "reshape",
    "roll",
    "round",
    "rsqrt",
    "sgn",
    "sigmoid",
    "sign",
    "sin",
    "softmax",
    "sort",
    "split",
    "sqrt",
    "square",
    "squeeze",
    "std",
    "sub",
    "sum",
    "swapaxes",
    "t",
    "tan",
    "tanh",
    "topk",
    "transpose",
    "tril",
    "triu",
    "true_divide",
    "trunc",
    "unbind",
    "unflatten",
    "unique",
    "unsqueeze",
    "var",
]


def _method(name):
    """The function ``name(input, *args, **kwargs)``: ``input.name(*args, **kwargs)``."""
    def function(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be a Tensor, got "
                            f"{type(input).__name__}")
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``input.{name}(...)``: see ``pyrt.Tensor.{name}``."
    return function


# (abs, all, any, max, min, pow, round and sum take the builtins' names, as torch's do)
abs = _method("abs")
add = _method("add")
addcmul = _method("addcmul")
all = _method("all")
amax = _method("amax")
amin = _method("amin")
any = _method("any")
bincount = _method("bincount")
bmm = _method("bmm")
clamp_max = _method("clamp_max")
clamp_min = _method("clamp_min")
clip = _method("clip")
cumprod = _method("cumprod")
absolute = _method("absolute")
diagonal = _method("diagonal")
divide = _method("divide")
fix = _method("fix")
fliplr = _method("fliplr")
fmax = _method("fmax")
fmin = _method("fmin")
ger = _method("ger")
greater = _method("greater")
greater_equal = _method("greater_equal")
inner = _method("inner")
isneginf = _method("isneginf")
isposinf = _method("isposinf")
less = _method("less")
less_equal = _method("less_equal")
logit = _method("logit")
msort = _method("msort")
multiply = _method("multiply")
negative = _method("negative")
not_equal = _method("not_equal")
positive = _method("positive")
ravel = _method("ravel")
subtract = _method("subtract")
flipud = _method("flipud")
mv = _method("mv")
diag = _method("diag")
diff = _method("diff")
div = _method("div")
dot = _method("dot")
erf = _method("erf")
exp2 = _method("exp2")
fmod = _method("fmod")
frac = _method("frac")
isclose = _method("isclose")
lerp = _method("lerp")
log10 = _method("log10")
log2 = _method("log2")
logical_and = _method("logical_and")
logical_not = _method("logical_not")
logical_or = _method("logical_or")
logical_xor = _method("logical_xor")
logsumexp = _method("logsumexp")
masked_select = _method("masked_select")
median = _method("median")
movedim = _method("movedim")
mul = _method("mul")
nansum = _method("nansum")
narrow = _method("narrow")
neg = _method("neg")
nonzero = _method("nonzero")
outer = _method("outer")
reciprocal = _method("reciprocal")
repeat_interleave = _method("repeat_interleave")
roll = _method("roll")
rsqrt = _method("rsqrt")
square = _method("square")
sub = _method("sub")
swapaxes = _method("swapaxes")
tan = _method("tan")
tril = _method("tril")
triu = _method("triu")
true_divide = _method("true_divide")
trunc = _method("trunc")
unbind = _method("unbind")
unflatten = _method("unflatten")
unique = _method("unique")
argmax = _method("argmax")
argmin = _method("argmin")
argsort = _method("argsort")
ceil = _method("ceil")
chunk = _method("chunk")
clamp = _method("clamp")
clone = _method("clone")
cos = _method("cos")
cumsum = _method("cumsum")
detach = _method("detach")
exp = _method("exp")
expm1 = _method("expm1")
flatten = _method("flatten")
flip = _method("flip")
floor = _method("floor")
gather = _method("gather")
index_select = _method("index_select")
isfinite = _method("isfinite")
isinf = _method("isinf")
isnan = _method("isnan")
log = _method("log")
log1p = _method("log1p")
log_softmax = _method("log_softmax")
masked_fill = _method("masked_fill")
matmul = _method("matmul")
max = _method("max")
mean = _method("mean")
min = _method("min")
mm = _method("mm")
norm = _method("norm")
numel = _method("numel")
permute = _method("permute")


def pow(input, *args, **kwargs):
    """input ** exponent: a tensor to a number or a tensor, or a number to a tensor, as
    torch.pow(input, exponent)."""
    exponent = args[0] if args else kwargs.get("exponent")
    if isinstance(exponent, Tensor) and isinstance(input, numbers.Real):
        return exponent.__rpow__(input)
    if not isinstance(input, Tensor):
        raise TypeError(f"pow(): argument 'input' must be a Tensor (or a Number with a "
                        f"Tensor exponent), got {type(input).__name__}")
    return input.pow(*args, **kwargs)


prod = _method("prod")
relu = _method("relu")
reshape = _method("reshape")
round = _method("round")
sgn = _method("sgn")
sigmoid = _method("sigmoid")
sign = _method("sign")
sin = _method("sin")
softmax = _method("softmax")
sort = _method("sort")
split = _method("split")
sqrt = _method("sqrt")
squeeze = _method("squeeze")
std = _method("std")
sum = _method("sum")
t = _method("t")
tanh = _method("tanh")
topk = _method("topk")
transpose = _method("transpose")
unsqueeze = _method("unsqueeze")
var = _method("var")


def is_tensor(obj):
    """Whether `obj` is a pyrt Tensor."""
    return isinstance(obj, Tensor)


def _checked_pair(name, input, other):
    for value, arg in ((input, "input"), (other, "other")):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' must be a Tensor, got "
                            f"{type(value).__name__}")
    if input.device != other.device:
        raise RuntimeError(f"{name}(): expected both tensors on the same device, got "
                           f"{input.device} and {other.device}")


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether |input - other| <= atol + rtol * |other| everywhere (broadcast together)."""
    _checked_pair("allclose", input, other)
    for value, arg in ((rtol, "rtol"), (atol, "atol")):
        # NumPy would take None or a string as far as a TypeError about isfinite, and a
        # negative tolerance as a test no pair can pass
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"allclose(): argument '{arg}' must be a float, got "
                            f"{type(value).__name__}")
        if not value >= 0:  # (nan included)
            raise RuntimeError(f"allclose(): {arg} must be greater than or equal to zero, but "
                               f"got {value}")
    if not isinstance(equal_nan, (bool, np.bool_)):
        raise TypeError(f"allclose(): argument 'equal_nan' must be a bool, got "
                        f"{type(equal_nan).__name__}")
    broadcast_shape(input.shape, other.shape)
    xp = _xp(input._data)
    return bool(xp.allclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


def equal(input, other):
    """Whether the two tensors have the same shape and the same values."""
    _checked_pair("equal", input, other)
    return input.shape == other.shape and bool(_xp(input._data).array_equal(input._data,
                                                                           other._data))


def randperm(n, *, generator=None, dtype=None, device="cpu", requires_grad=False):
    """A random permutation of 0, ..., n - 1, int64 unless `dtype` says otherwise, drawn from
    the generator pyrt.manual_seed seeds."""
    if not isinstance(n, numbers.Integral) or isinstance(n, (bool, np.bool_)):
        raise TypeError(f"randperm(): argument 'n' must be an int, got {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    data = _draw_source(generator, "randperm").permutation(int(n))
    return _tensor(data, dtype=np.int64 if dtype is None else dtype, device=device,
                   requires_grad=requires_grad)


# ---- more of torch's functions: trigonometric and two-operand pointwise ones, the scatter and
# index ops, scans and order statistics, products; methods as above, and those torch keeps at
# its top level only (xlogy takes a number first) from their modules

__all__ += [
    "absolute", "acos", "acosh", "addbmm", "addmm", "addmv", "aminmax", "arccos", "arccosh",
    "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "argwhere", "as_tensor", "asin",
    "asinh", "atan", "atan2", "atanh", "atleast_1d", "atleast_2d", "atleast_3d", "baddbmm",
    "bernoulli", "block_diag", "broadcast_to", "bucketize", "cartesian_prod", "cdist",
    "column_stack", "concat", "concatenate", "copysign", "cosh", "count_nonzero", "cross",
    "cummax", "cummin", "deg2rad", "diag_embed", "diagonal", "divide", "dsplit", "dstack",
    "einsum", "fix", "fliplr", "flipud", "fmax", "fmin", "ger", "greater", "greater_equal",
    "heaviside", "histc", "hsplit", "hstack", "hypot", "index_add", "index_copy", "index_fill",
    "index_put", "inner", "isin", "isneginf", "isposinf", "kron", "kthvalue", "less",
    "less_equal", "logaddexp", "logaddexp2", "logcumsumexp", "logit", "mode", "msort",
    "multinomial", "multiply", "mv", "nan_to_num", "nanmean", "nanmedian", "nanquantile",
    "negative", "normal", "not_equal", "poisson", "positive", "quantile", "rad2deg",
    "randint_like", "ravel", "rot90", "row_stack", "scatter", "scatter_add", "scatter_reduce",
    "searchsorted", "select", "signbit", "sinc", "sinh", "split_with_sizes", "std_mean",
    "subtract", "take", "take_along_dim", "tensor_split", "tensordot", "tile", "trace",
    "var_mean", "vsplit", "vstack", "xlogy",
]

acos = _method("acos")
acosh = _method("acosh")
addbmm = _method("addbmm")
addmm = _method("addmm")
addmv = _method("addmv")
aminmax = _method("aminmax")
arccos = _method("arccos")
arccosh = _method("arccosh")
arcsin = _method("arcsin")
arcsinh = _method("arcsinh")
arctan = _method("arctan")
arctan2 = _method("arctan2")
arctanh = _method("arctanh")
asin = _method("asin")
asinh = _method("asinh")
atan = _method("atan")
atan2 = _method("atan2")
atanh = _method("atanh")
baddbmm = _method("baddbmm")
copysign = _method("copysign")
cosh = _method("cosh")
count_nonzero = _method("count_nonzero")
cross = _method("cross")
cummax = _method("cummax")
cummin = _method("cummin")
deg2rad = _method("deg2rad")
heaviside = _method("heaviside")
histc = _method("histc")
hypot = _method("hypot")
index_add = _method("index_add")
index_copy = _method("index_copy")
index_fill = _method("index_fill")
index_put = _method("index_put")
kron = _method("kron")
kthvalue = _method("kthvalue")
logaddexp = _method("logaddexp")
logaddexp2 = _method("logaddexp2")
logcumsumexp = _method("logcumsumexp")
mode = _method("mode")
nan_to_num = _method("nan_to_num")
nanmean = _method("nanmean")
nanmedian = _method("nanmedian")
nanquantile = _method("nanquantile")
quantile = _method("quantile")
rad2deg = _method("rad2deg")
rot90 = _method("rot90")
scatter = _method("scatter")
scatter_add = _method("scatter_add")
scatter_reduce = _method("scatter_reduce")
signbit = _method("signbit")
sinc = _method("sinc")
sinh = _method("sinh")
take = _method("take")
take_along_dim = _method("take_along_dim")
tile = _method("tile")
trace = _method("trace")


# ---- in-place forms ---------------------------------------------------------------------------
# torch.sin_(x) and the others: x.sin_(); the activations and dropouts in place, as torch's
# top-level ones, are nn.functional's with inplace=True.

_IN_PLACE_METHODS = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_",
    "arcsinh_", "arctan_", "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_",
    "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_", "detach_", "erf_",
    "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_", "floor_", "frac_", "index_put_",
    "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_",
    "rad2deg_", "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_",
    "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_",
)
globals().update({name: _method(name) for name in _IN_PLACE_METHODS})
masked_scatter = _method("masked_scatter")
put = _method("put")
index_reduce = _method("index_reduce")


def _functional_in_place(name, function, *args, **kwargs):
    """nn.functional's `function`(input, *args, inplace=True), for torch.`name`."""
    input = args[0] if args else None
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    return function(*args, **kwargs, inplace=True)


def celu_(input, alpha=1.0):
    """celu(input, alpha) written into input."""
    from pyrt.nn import functional

    return _functional_in_place("celu_", functional.celu, input, alpha)


def selu_(input):
    """selu(input) written into input."""
    from pyrt.nn import functional

    return _functional_in_place("selu_", functional.selu, input)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """rrelu(input, lower, upper, training) written into input."""
    from pyrt.nn import functional

    return _functional_in_place("rrelu_", functional.rrelu, input, lower, upper, training)


def threshold_(input, threshold, value):
    """threshold(input, threshold, value) written into input."""
    from pyrt.nn import functional

    return _functional_in_place("threshold_", functional.threshold, input, threshold, value)


def dropout_(input, p, train):
    """dropout(input, p, train) written into input."""
    from pyrt import functional

    return _functional_in_place("dropout_", functional.dropout, input, p, train)


def alpha_dropout_(input, p, train):
    """alpha_dropout(input, p, train) written into input."""
    from pyrt.nn import functional

    return _functional_in_place("alpha_dropout_", functional.alpha_dropout, input, p, train)


def feature_alpha_dropout_(input, p, train):
    """feature_alpha_dropout(input, p, train) written into input."""
    from pyrt.nn import functional

    return _functional_in_place("feature_alpha_dropout_", functional.feature_alpha_dropout,
                                input, p, train)


def feature_dropout_(input, p, train):
    """Whole channels of input [N, C, *] dropped (feature_dropout) in input."""
    from pyrt.feature_dropout import feature_dropout

    return _functional_in_place("feature_dropout_", feature_dropout, input, p, train)


__all__ += [
    *_IN_PLACE_METHODS, "alpha_dropout_", "celu_", "dropout_", "feature_alpha_dropout_",
    "feature_dropout_", "index_reduce", "masked_scatter", "put", "rrelu_", "selu_",
    "threshold_",
]

# ---- special functions -------------------------------------------------------------------------
# (torch.polygamma takes n first; torch.float_power takes a number as input too)

from pyrt.number_functions import float_power  # noqa: E402
from pyrt.special_functions import polygamma  # noqa: E402

__all__ += ["digamma", "erfinv", "float_power", "frexp", "gcd", "i0", "igamma", "igammac",
            "lcm", "ldexp", "lgamma", "mvlgamma", "nextafter", "polygamma"]

digamma = _method("digamma")
erfinv = _method("erfinv")
frexp = _method("frexp")
gcd = _method("gcd")
i0 = _method("i0")
igamma = _method("igamma")
igammac = _method("igammac")
lcm = _method("lcm")
ldexp = _method("ldexp")
lgamma = _method("lgamma")
mvlgamma = _method("mvlgamma")
nextafter = _method("nextafter")

# ---- linear algebra, torch's older names ---------------------------------------------------------
# (the Tensor methods of pyrt.linalg.legacy, and lu_unpack, which torch has at its top level
# only)

__all__ += [
    "cholesky", "cholesky_inverse", "cholesky_solve", "det", "inverse", "logdet", "lu",
    "lu_solve", "lu_unpack", "matrix_exp", "matrix_power", "orgqr", "pinverse", "qr",
    "slogdet", "svd", "triangular_solve",
]

cholesky = _method("cholesky")
cholesky_inverse = _method("cholesky_inverse")
cholesky_solve = _method("cholesky_solve")
det = _method("det")
inverse = _method("inverse")
logdet = _method("logdet")
lu = _method("lu")
lu_solve = _method("lu_solve")
matrix_exp = _method("matrix_exp")
matrix_power = _method("matrix_power")
orgqr = _method("orgqr")
pinverse = _method("pinverse")
qr = _method("qr")
slogdet = _method("slogdet")
svd = _method("svd")
triangular_solve = _method("triangular_solve")


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """(P, L, U) with A = P L U from lu_factor's packed factors: see pyrt.linalg.legacy."""
    from pyrt.linalg.legacy import lu_unpack as unpack

    return unpack(LU_data, LU_pivots, unpack_data, unpack_pivots)


# ---- numeric utilities ---------------------------------------------------------------------------
# index helpers, statistics, calculus on samples, window functions, the *_scatter ops and
# more creation functions, from their modules; `range` is torch.range (this module uses no
# builtin range, as it uses no builtin sum or max)
from pyrt.calculus import cumulative_trapezoid, gradient, trapezoid, trapz  # noqa: E402
from pyrt.creation_functions import asarray, logspace, range, scalar_tensor  # noqa: E402
from pyrt.index_helpers import (  # noqa: E402
    combinations,
    tril_indices,
    triu_indices,
    unravel_index,
)
from pyrt.linear_combinations import chain_matmul, rsub  # noqa: E402
from pyrt.matrix_builders import vander  # noqa: E402
from pyrt.statistics import histogramdd  # noqa: E402
from pyrt.window_functions import (  # noqa: E402
    bartlett_window,
    blackman_window,
    hamming_window,
    hann_window,
    kaiser_window,
)

__all__ += [
    "addr", "asarray", "bartlett_window", "blackman_window", "chain_matmul", "combinations",
    "corrcoef", "cov", "cumulative_trapezoid", "diagflat", "diagonal_scatter", "dist",
    "gradient", "hamming_window", "hann_window", "histogram", "histogramdd", "kaiser_window",
    "logspace", "range", "renorm", "rsub", "scalar_tensor", "select_scatter", "slice_scatter",
    "trapezoid", "trapz", "tril_indices", "triu_indices", "unique_consecutive",
    "unravel_index", "vander", "vdot",
]

addr = _method("addr")
corrcoef = _method("corrcoef")
cov = _method("cov")
diagflat = _method("diagflat")
diagonal_scatter = _method("diagonal_scatter")
dist = _method("dist")
histogram = _method("histogram")
renorm = _method("renorm")
select_scatter = _method("select_scatter")
slice_scatter = _method("slice_scatter")
unique_consecutive = _method("unique_consecutive")
vdot = _method("vdot")

# ---- state, predicates and aliases ---------------------------------------------------------------
# the random state (pyrt.random, as torch.random), the process-wide settings, the dtype
# helpers and predicates, the comparisons and other methods torch also keeps at its top level,
# and the functions torch keeps beside torch.nn.functional, with its top-level signatures

from pyrt import random  # noqa: E402
from pyrt import toplevel_nn as _toplevel_nn  # noqa: E402
from pyrt.anomaly_mode import (  # noqa: E402
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
)
from pyrt.anomaly_mode import set_detect_anomaly as set_anomaly_enabled  # noqa: E402
from pyrt.dtype_info import (  # noqa: E402
    broadcast_shapes,
    can_cast,
    finfo,
    iinfo,
    is_complex,
    is_floating_point,
    is_nonzero,
    is_same_size,
    is_signed,
    promote_types,
    result_type,
    typename,
)
from pyrt.global_state import (  # noqa: E402
    are_deterministic_algorithms_enabled,
    get_default_dtype,
    get_deterministic_debug_mode,
    get_float32_matmul_precision,
    get_num_interop_threads,
    is_deterministic_algorithms_warn_only_enabled,
    is_inference_mode_enabled,
    set_default_dtype,
    set_deterministic_debug_mode,
    set_float32_matmul_precision,
    set_flush_denormal,
    set_num_interop_threads,
    use_deterministic_algorithms,
)
from pyrt.printing import set_printoptions  # noqa: E402
from pyrt.random import get_rng_state, initial_seed, seed, set_rng_state  # noqa: E402
from pyrt.toplevel_nn import *  # noqa: E402, F403

__all__ += [
    "addcdiv", "are_deterministic_algorithms_enabled", "broadcast_shapes", "can_cast", "eq",
    "erfc", "finfo", "ge", "get_default_dtype", "get_deterministic_debug_mode",
    "get_float32_matmul_precision", "get_num_interop_threads", "get_rng_state", "gt",
    "iinfo", "initial_seed", "is_anomaly_check_nan_enabled", "is_anomaly_enabled",
    "is_complex", "set_anomaly_enabled", "is_deterministic_algorithms_warn_only_enabled",
    "is_floating_point", "is_inference_mode_enabled", "is_nonzero", "is_same_size",
    "is_signed", "le", "lt", "moveaxis", "ne", "promote_types", "random", "result_type",
    "seed", "set_default_dtype", "set_deterministic_debug_mode",
    "set_float32_matmul_precision", "set_flush_denormal", "set_num_interop_threads",
    "set_printoptions", "set_rng_state", "swapdims", "typename",
    "use_deterministic_algorithms", *_toplevel_nn.__all__,
]

addcdiv = _method("addcdiv")
eq = _method("eq")
erfc = _method("erfc")
ge = _method("ge")
gt = _method("gt")
le = _method("le")
lt = _method("lt")
moveaxis = _method("moveaxis")
ne = _method("ne")
swapdims = _method("swapdims")

# ---- devices, layouts, compilation and PyTorch's odds ----------------------------------------

# pyrt.cuda and pyrt.jit as torch.cuda and torch.jit (neither imports CuPy), and
# pyrt.utils.dlpack as torch.utils.dlpack
from pyrt import cuda, jit  # noqa: E402
from pyrt.binomial_sampling import binomial  # noqa: E402
from pyrt.bit_shifts import bitwise_left_shift, bitwise_right_shift  # noqa: E402
from pyrt.compiler import compile  # noqa: E402
from pyrt.control_flow import cond, while_loop  # noqa: E402
from pyrt.devices import device, get_default_device, set_default_device  # noqa: E402
from pyrt.embedding_renorm import embedding_renorm_  # noqa: E402
from pyrt.foreign_memory import from_dlpack, frombuffer, to_dlpack  # noqa: E402
from pyrt.generator import Generator, default_generator  # noqa: E402
from pyrt.layouts import (  # noqa: E402
    channels_last,
    channels_last_3d,
    contiguous_format,
    layout,
    memory_format,
    preserve_format,
    strided,
)
from pyrt.utils import dlpack as _dlpack  # noqa: E402, F401
from pyrt.warn_always import is_warn_always_enabled, set_warn_always  # noqa: E402

__all__ += ["Generator", "default_generator"]
__all__ += [
    "adjoint", "binomial", "bitwise_left_shift", "bitwise_right_shift", "channels_last",
    "channels_last_3d", "compile", "cond", "conj", "contiguous_format", "cuda", "device",
    "dtype", "embedding_renorm_", "empty_strided", "fill", "from_dlpack", "frombuffer",
    "gcd_", "get_default_device", "i0_", "imag", "is_conj", "is_neg", "is_warn_always_enabled",
    "isreal", "jit", "layout", "lcm_", "ldexp_", "memory_format", "narrow_copy",
    "preserve_format", "real", "resolve_conj", "resolve_neg", "set_default_device",
    "set_warn_always", "strided", "to_dlpack", "unsafe_chunk", "unsafe_split",
    "unsafe_split_with_sizes", "while_loop",
]

# the type of pyrt.float32, pyrt.int64 and pyrt.bool (NumPy's dtype objects), as torch.dtype
dtype = np.dtype

adjoint = _method("adjoint")
conj = _method("conj")
gcd_ = _method("gcd_")
i0_ = _method("i0_")
is_conj = _method("is_conj")
is_neg = _method("is_neg")
isreal = _method("isreal")
lcm_ = _method("lcm_")
ldexp_ = _method("ldexp_")
narrow_copy = _method("narrow_copy")
resolve_conj = _method("resolve_conj")
resolve_neg = _method("resolve_neg")
unsafe_chunk = _method("unsafe_chunk")
unsafe_split = _method("unsafe_split")
unsafe_split_with_sizes = _method("unsafe_split_with_sizes")


def real(input):
    """The real part of `input`: itself, for pyrt's real dtypes."""
    if not isinstance(input, Tensor):
        raise TypeError(f"real(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    return input.real


def imag(input):
    """The imaginary part of `input`: torch's RuntimeError, for pyrt's real dtypes."""
    if not isinstance(input, Tensor):
        raise TypeError(f"imag(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    return input.imag


def empty_strided(size, stride, *, dtype=None, layout=None, device=None,
                  requires_grad=False, pin_memory=False):
    """An uninitialised tensor of `size`, as torch.empty_strided; `stride` is checked as
    torch checks it, and the data is C-contiguous (see pyrt/resizing.py)."""
    from pyrt import resizing
    from pyrt.tensor import empty

    shape = resizing.check_strides(size, stride, "empty_strided")
    if layout is not None and layout is not strided:
        raise RuntimeError(f"empty_strided(): pyrt has one layout, pyrt.strided; got {layout}")
    return empty(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def fill(input, value):
    """A tensor of input's shape, dtype and device holding `value` (a number or a 0-d
    tensor) everywhere: fill_ out of place (a gradient reaches `value`, none `input`)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"fill(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    return input.clone().fill_(value)

# ---- function transforms, strided views, low rank -------------------------------------------

from pyrt.low_rank import (  # noqa: E402
    frobenius_norm,
    norm_except_dim,
    nuclear_norm,
    pca_lowrank,
    svd_lowrank,
)

__all__ += ["as_strided", "as_strided_", "as_strided_scatter", "frobenius_norm",
            "norm_except_dim", "nuclear_norm", "pca_lowrank", "svd_lowrank", "vmap"]

as_strided = _method("as_strided")
as_strided_ = _method("as_strided_")
as_strided_scatter = _method("as_strided_scatter")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """torch.vmap: pyrt.func.vmap."""
    from pyrt.func import vmap as func_vmap

    return func_vmap(func, in_dims, out_dims, randomness, chunk_size=chunk_size)

# ---- copies of views, native_* forms, segment reductions, storage odds ---------------------

from pyrt.copy_ops import (  # noqa: E402
    alias_copy,
    as_strided_copy,
    detach_copy,
    diagonal_copy,
    expand_copy,
    permute_copy,
    select_copy,
    slice_copy,
    split_copy,
    split_with_sizes_copy,
    squeeze_copy,
    t_copy,
    transpose_copy,
    unbind_copy,
    unfold_copy,
    unsqueeze_copy,
    view_copy,
)
from pyrt.native_ops import (  # noqa: E402
    constant_pad_nd,
    native_batch_norm,
    native_channel_shuffle,
    native_dropout,
    native_group_norm,
    native_layer_norm,
    native_norm,
)
from pyrt.real_parts import angle, conj_physical, conj_physical_, nonzero_static  # noqa: E402
from pyrt.segment_reduce import segment_reduce  # noqa: E402
from pyrt.tensor_memory import empty_permuted, from_file  # noqa: E402

__all__ += [
    "alias_copy", "angle", "as_strided_copy", "conj_physical", "conj_physical_",
    "constant_pad_nd", "detach_copy", "diagonal_copy", "empty_permuted", "expand_copy",
    "from_file", "get_device", "is_inference", "native_batch_norm", "native_channel_shuffle",
    "native_dropout", "native_group_norm", "native_layer_norm", "native_norm",
    "nonzero_static", "permute_copy", "segment_reduce", "select_copy", "slice_copy",
    "split_copy", "split_with_sizes_copy", "squeeze_copy", "t_copy", "transpose_copy",
    "unbind_copy", "unfold_copy", "unsqueeze_copy", "view_copy",
]

get_device = _method("get_device")
is_inference = _method("is_inference")

from pyrt.lobpcg import lobpcg  # noqa: E402

__all__ += ["lobpcg"]
