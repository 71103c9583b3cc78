"""torch.testing.assert_close for pyrt: the same pairing of inputs, default tolerances and
error messages as torch's, so that a test ported from torch fails where it failed there and
says the same thing.

The inputs are walked as torch walks them: sequences (not strings) element by element,
mappings key by key; each leaf pair is compared by the first kind that takes it: None,
bools, numbers, then tensor-likes (pyrt tensors, or two objects NumPy turns into numeric
arrays, such as two ndarrays). Values are compared as NumPy arrays in their own dtype, as
torch.isclose compares them: close when equal, or when |actual - expected| <= atol + rtol *
|expected| computed in that dtype.
"""

import cmath
import collections.abc

import numpy as np

__all__ = ["assert_close", "default_tolerances"]

# {dtype: (rtol, atol)}, torch's defaults; every other dtype (integers, bool) is compared
# exactly
_DTYPE_PRECISIONS = {
    np.dtype(np.float16): (0.001, 1e-5),
    "bfloat16": (0.016, 1e-5),
    np.dtype(np.float32): (1.3e-6, 1e-5),
    np.dtype(np.float64): (1e-7, 1e-7),
    np.dtype(np.complex64): (1.3e-6, 1e-5),
    np.dtype(np.complex128): (1e-7, 1e-7),
}
# the dtype torch gives each Python number type
_NUMBER_DTYPES = {int: np.dtype(np.int64), float: np.dtype(np.float64),
                  complex: np.dtype(np.complex128)}


class _Mismatch(Exception):
    """A failed comparison: the exception type to raise, its message and the path of the
    pair in the nested inputs."""

    def __init__(self, type_, msg, id_=()):
        super().__init__(msg)
        self.type = type_
        self.msg = msg
        self.id = id_

    def to_error(self, msg=None):
        if isinstance(msg, str):
            return self.type(msg)
        generated = self.msg
        if self.id:
            generated += ("\n\nThe failure occurred for item "
                          f"{''.join(str([item]) for item in self.id)}")
        return self.type(msg(generated) if callable(msg) else generated)


class _Unsupported(Exception):
    """This kind of pair does not take these inputs: try the next."""


def default_tolerances(*dtypes):
    """The loosest (rtol, atol) of `dtypes` by torch's table (0, 0 for exact dtypes)."""
    rtols, atols = zip(*[_DTYPE_PRECISIONS.get(dtype, (0.0, 0.0)) for dtype in dtypes])
    return max(rtols), max(atols)


def _tolerances(dtypes, rtol, atol, id_):
    if (rtol is None) ^ (atol is None):
        raise _Mismatch(ValueError, f"Both 'rtol' and 'atol' must be either specified or "
                                    f"omitted, but got no {'rtol' if rtol is None else 'atol'}.",
                        id_)
    if rtol is not None:
        return rtol, atol
    return default_tolerances(*dtypes)


def _mismatch_msg(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol):
    """torch's message: header, extra lines, then the greatest absolute and relative
    differences with the tolerance each was held to (none when comparing for equality)."""
    equality = rtol == 0 and atol == 0

    def diff_line(kind, diff, idx, tol):
        line = (f"{kind.title()} difference: {diff}" if idx is None
                else f"Greatest {kind} difference: {diff} at index {idx}")
        return line + ("" if equality else f" (up to {tol} allowed)") + "\n"

    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_line("absolute", abs_diff, abs_idx, atol)
    msg += diff_line("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_mismatch_msg(actual, expected, rtol, atol):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None,
                         atol, rel_diff, None, rtol)


# Each kind of pair below takes the inputs (or raises _Unsupported, or a _Mismatch about the
# options) and returns the comparison to run once every pair of the nested inputs is taken.


def _none_pair(actual, expected, id_, options):
    if not (actual is None or expected is None):
        raise _Unsupported

    def compare():
        if not (actual is None and expected is None):
            raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}", id_)

    return compare


def _bool_pair(actual, expected, id_, options):
    if not all(isinstance(v, (bool, np.bool_)) for v in (actual, expected)):
        raise _Unsupported
    actual, expected = bool(actual), bool(expected)

    def compare():
        if actual is not expected:
            raise _Mismatch(AssertionError, f"Booleans mismatch: {actual} is not {expected}",
                            id_)

    return compare


def _number_pair(actual, expected, id_, options):
    kinds = (int, float, complex, np.number)
    if not all(isinstance(v, kinds) for v in (actual, expected)):
        raise _Unsupported
    actual, expected = (v.item() if isinstance(v, np.number) else v
                        for v in (actual, expected))
    rtol, atol = _tolerances([_NUMBER_DTYPES[type(v)] for v in (actual, expected)],
                             options["rtol"], options["atol"], id_)
    return lambda: _compare_numbers(actual, expected, rtol, atol, options, id_)


def _compare_numbers(actual, expected, rtol, atol, options, id_):
    if options["check_dtype"] and type(actual) is not type(expected):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != "
                                        f"{type(expected)}.", id_)
    if actual == expected:
        return
    if options["equal_nan"] and cmath.isnan(actual) and cmath.isnan(expected):
        return
    abs_diff = abs(actual - expected)
    if cmath.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_mismatch_msg(actual, expected, rtol, atol), id_)


class _TensorLike:
    """What the comparison reads of a tensor-like: its values as a NumPy array, its dtype,
    device, layout and strides (in elements)."""

    def __init__(self, value):
        from pyrt.tensor import Tensor

        if isinstance(value, Tensor):
            from pyrt.cuda import to_host

            self.values = to_host(value.detach()._data)
            self.device = value.device
            self.layout = value.layout
            self.strides = value.stride()
            self.shape = value.shape
        else:
            try:
                values = np.asarray(value)
            except Exception:  # noqa: BLE001 (NumPy cannot take it: not a tensor-like)
                raise _Unsupported from None
            if values.dtype.kind not in "biufc":
                raise _Unsupported
            from pyrt.layouts import strided

            self.values = values
            self.device = "cpu"
            self.layout = strided
            self.strides = tuple(s // values.itemsize for s in values.strides)
            self.shape = values.shape
        self.dtype = self.values.dtype


def _tensor_pair(actual, expected, id_, options):
    if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
        raise _Unsupported
    if not options["allow_subclasses"] and type(actual) is not type(expected):
        raise _Unsupported
    a, e = _TensorLike(actual), _TensorLike(expected)
    rtol, atol = _tolerances([a.dtype, e.dtype], options["rtol"], options["atol"], id_)
    return lambda: _compare_tensors(a, e, rtol, atol, options, id_)


def _compare_tensors(a, e, rtol, atol, options, id_):
    def check(name, got, want):
        if got != want:
            raise _Mismatch(AssertionError, f"The values for attribute '{name}' do not "
                                            f"match: {got} != {want}.", id_)

    check("shape", a.shape, e.shape)
    if options["check_layout"]:
        check("layout", a.layout, e.layout)
    if options["check_stride"]:
        check("stride()", a.strides, e.strides)
    if options["check_device"]:
        check("device", a.device, e.device)
    if options["check_dtype"]:
        check("dtype", a.dtype, e.dtype)
    _compare_values(*_promoted(a.values, e.values), rtol, atol, options["equal_nan"], id_)


def _promoted(actual, expected):
    """Both arrays in one dtype, as torch.promote_types picks it (a float dtype wins over any
    integer one, where NumPy would widen int64 with float32 to float64)."""
    if actual.dtype == expected.dtype:
        return actual, expected
    kinds = {actual.dtype.kind, expected.dtype.kind}
    if kinds & {"f", "c"} and kinds & {"b", "i", "u"}:
        dtype = actual.dtype if actual.dtype.kind in "fc" else expected.dtype
    else:
        dtype = np.result_type(actual.dtype, expected.dtype)
    return actual.astype(dtype), expected.astype(dtype)


def _isclose(actual, expected, rtol, atol, equal_nan):
    """torch.isclose, in the arrays' dtype."""
    close = actual == expected
    if equal_nan and actual.dtype.kind in "fc":
        close |= np.isnan(actual) & np.isnan(expected)
    if actual.dtype.kind in "fc" and (rtol != 0 or atol != 0):
        with np.errstate(invalid="ignore", over="ignore"):
            error = np.abs(actual - expected)
            allowed = atol + np.abs(rtol * expected)
            close |= np.isfinite(error) & (error <= allowed)
    return close


def _compare_values(actual, expected, rtol, atol, equal_nan, id_):
    matches = _isclose(actual, expected, rtol, atol, equal_nan)
    if matches.all():
        return
    if actual.shape == ():
        msg = _scalar_mismatch_msg(actual.item(), expected.item(), rtol, atol)
    else:
        msg = _tensor_mismatch_msg(actual, expected, matches, rtol, atol)
    raise _Mismatch(AssertionError, msg, id_)


def _tensor_mismatch_msg(actual, expected, matches, rtol, atol):
    """The count of mismatches and where the greatest differences are, computed as torch
    computes them: integers in int64, the relative difference of integers in float32."""
    total = matches.size
    mismatches = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatches} / {total} ({mismatches / total:.1%})"
    a, e, m = actual.ravel(), expected.ravel(), matches.ravel()
    if a.dtype.kind not in "fc":
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        abs_diff = np.abs(a - e)
        abs_diff[m] = 0
        if a.dtype.kind in "fc":
            rel_diff = abs_diff / np.abs(e)
        else:  # torch divides integer tensors in its default dtype, float32
            rel_diff = abs_diff.astype(np.float32) / np.abs(e).astype(np.float32)
    rel_diff[m] = 0
    abs_idx, rel_idx = _argmax(abs_diff), _argmax(rel_diff)
    return _mismatch_msg("Tensor-likes", extra, abs_diff[abs_idx].item(),
                         _unravel(abs_idx, matches.shape), atol, rel_diff[rel_idx].item(),
                         _unravel(rel_idx, matches.shape), rtol)


def _unravel(flat_index, shape):
    return tuple(int(i) for i in np.unravel_index(flat_index, shape))


def _argmax(values):
    """The flat index of the greatest value, a nan counting as the greatest (torch.max)."""
    nan = np.isnan(values) if values.dtype.kind in "fc" else None
    if nan is not None and nan.any():
        return int(np.argmax(nan))
    return int(np.argmax(values))


_PAIRS = (_none_pair, _bool_pair, _number_pair, _tensor_pair)


def _originate(actual, expected, id_, options):
    """The comparisons of the leaf pairs of nested inputs, in order; a _Mismatch if their
    structures differ or a leaf pair has no kind that takes it."""
    sequence = collections.abc.Sequence
    if (isinstance(actual, sequence) and not isinstance(actual, str)
            and isinstance(expected, sequence) and not isinstance(expected, str)):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: "
                                            f"{len(actual)} != {len(expected)}", id_)
        return [compare for i in range(len(actual))
                for compare in _originate(actual[i], expected[i], (*id_, i), options)]
    mapping = collections.abc.Mapping
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            raise _Mismatch(AssertionError, (
                f"The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {sorted(expected_keys - actual_keys)}\n"
                f"Additional keys in the actual mapping: "
                f"{sorted(actual_keys - expected_keys)}"), id_)
        try:
            keys = sorted(actual_keys)
        except TypeError:  # keys that do not order: torch keeps them unordered too
            keys = list(actual_keys)
        return [compare for key in keys
                for compare in _originate(actual[key], expected[key], (*id_, key), options)]
    for pair in _PAIRS:
        try:
            return [pair(actual, expected, id_, options)]
        except _Unsupported:
            continue
    raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type "
                               f"{type(actual)} and {type(expected)}.", id_)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Raise an AssertionError unless `actual` and `expected` are close, as
    torch.testing.assert_close: tensors (and NumPy arrays) of the same shape, device and
    dtype whose values are within ``atol + rtol * |expected|`` (by default torch's
    tolerances of the dtype: float32 rtol 1.3e-6, atol 1e-5; float64 1e-7, 1e-7; integers
    and bools exactly), numbers, bools and None, or sequences and mappings of them compared
    item by item. `msg` replaces the message (a str) or edits it (a callable)."""
    options = {"allow_subclasses": allow_subclasses, "rtol": rtol, "atol": atol,
               "equal_nan": equal_nan, "check_device": check_device,
               "check_dtype": check_dtype, "check_layout": check_layout,
               "check_stride": check_stride}
    __tracebackhide__ = True
    # every pair is taken before any is compared, as torch does: a structure or type error
    # anywhere is reported (with its own message, not `msg`) before a difference in values
    try:
        comparisons = _originate(actual, expected, (), options)
    except _Mismatch as mismatch:
        raise mismatch.to_error() from None
    for compare in comparisons:
        try:
            compare()
        except _Mismatch as mismatch:
            raise mismatch.to_error(msg) from None
