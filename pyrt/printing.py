"""How a tensor prints, as torch prints it, and set_printoptions, which changes that.

``repr(x)`` (and ``str(x)``) lays the values out as torch's ``_tensor_str`` does: every
element formatted to one width; floats with `precision` decimals, or as integers with a
trailing point when all are whole, or in scientific notation when their magnitudes span
more than 1000 or leave 1e-4..1e8 (`sci_mode` forces it on or off); rows wrapped at
`linewidth`; and a tensor of more than `threshold` elements summarized by the first and
last `edgeitems` of each dimension around "...". Then come the suffixes torch adds: the
device when it is not the CPU, the dtype when it is not float32, int64 or bool, and
requires_grad.
"""

import dataclasses
import math
import numbers

import numpy as np

__all__ = ["get_printoptions", "set_printoptions", "tensor_repr"]


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool = None


_options = _PrintOptions()

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}


def _count(value, name, smallest):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"set_printoptions(): {name} must be an int, got "
                        f"{type(value).__name__}")
    if value < smallest:
        raise ValueError(f"set_printoptions(): {name} must be at least {smallest}, got {value}")
    return int(value)


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set how tensors print, as torch.set_printoptions: `precision` (decimals of floats,
    4), `threshold` (more elements than this are summarized, 1000), `edgeitems` (values
    kept at each end of a summarized dimension, 3), `linewidth` (characters per line, 80),
    `profile` ("default", "short" or "full": those four at once, then overridden by any
    given) and `sci_mode` (True or False forces scientific notation on or off; None, the
    default, and what every call leaves unless it says otherwise, chooses by the values)."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions(): profile must be 'default', 'short' or "
                             f"'full', got {profile!r}")
        for name, value in _PROFILES[profile].items():
            setattr(_options, name, value)
    if precision is not None:
        _options.precision = _count(precision, "precision", 0)
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
            raise TypeError(f"set_printoptions(): threshold must be a number, got "
                            f"{type(threshold).__name__}")
        _options.threshold = threshold
    if edgeitems is not None:
        _options.edgeitems = _count(edgeitems, "edgeitems", 0)
    if linewidth is not None:
        _options.linewidth = _count(linewidth, "linewidth", 1)
    if sci_mode is not None and not isinstance(sci_mode, bool):
        raise TypeError(f"set_printoptions(): sci_mode must be True, False or None, got "
                        f"{sci_mode!r}")
    _options.sci_mode = sci_mode


def get_printoptions():
    """The print options as a dict that set_printoptions(**it) restores."""
    return dataclasses.asdict(_options)


class _Formatter:
    """One width and notation for all the values of `values` (a NumPy array: those that
    will be shown), as torch's _Formatter chooses them."""

    def __init__(self, values):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        precision = _options.precision
        if not self.floating:
            for value in flat.tolist():
                self.max_width = max(self.max_width, len(f"{value}"))
            return
        shown = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if shown.size == 0:
            return
        magnitudes = np.abs(shown)
        smallest, largest = magnitudes.min(), magnitudes.max()
        self.int_mode = bool(np.all(shown == np.ceil(shown)))
        if _options.sci_mode is None:
            self.sci_mode = bool(largest / smallest > 1000.0 or largest > 1.0e8
                                 or smallest < 1.0e-4)
        else:
            self.sci_mode = _options.sci_mode
        for value in shown.tolist():
            if self.sci_mode:
                width = len(f"{value:.{precision}e}")
            elif self.int_mode:
                width = len(f"{value:.0f}") + 1  # and the point after it
            else:
                width = len(f"{value:.{precision}f}")
            self.max_width = max(self.max_width, width)

    def format(self, value):
        precision = _options.precision
        if not self.floating:
            text = f"{value}"
        elif self.sci_mode:
            text = f"{value:{self.max_width}.{precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if not (math.isinf(value) or math.isnan(value)):
                text += "."
        else:
            text = f"{value:.{precision}f}"
        return (self.max_width - len(text)) * " " + text


def _summarized(values):
    """The values a summarized print shows: the first and last `edgeitems` along every
    dimension."""
    edge = _options.edgeitems
    if values.ndim == 0:
        return values
    if values.ndim > 1 and not edge:
        return values[(slice(0, 0),) * values.ndim]
    if values.shape[0] > 2 * edge:
        values = np.concatenate((values[:edge], values[values.shape[0] - edge:]))
    if values.ndim == 1:
        return values
    return np.stack([_summarized(row) for row in values])


def _vector(values, indent, summarize, formatter):
    edge = _options.edgeitems
    element_length = formatter.max_width + 2  # with the comma and space after it
    per_line = max(1, math.floor((_options.linewidth - indent) / element_length))
    if summarize and not edge:
        data = ["..."]
    elif summarize and values.shape[0] > 2 * edge:
        data = ([formatter.format(v) for v in values[:edge].tolist()] + [" ..."]
                + [formatter.format(v) for v in values[values.shape[0] - edge:].tolist()])
    else:
        data = [formatter.format(v) for v in values.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(values, indent, summarize, formatter):
    """The values of each dimension inside brackets, rows of a matrix on lines of their own
    and blocks of higher dimensions apart by blank lines."""
    if values.ndim == 0:
        return formatter.format(values.item())
    if values.ndim == 1:
        return _vector(values, indent, summarize, formatter)
    edge = _options.edgeitems
    count = values.shape[0]
    if summarize and count > 2 * edge:
        rows = ([_nested(values[i], indent + 1, summarize, formatter) for i in range(edge)]
                + ["..."]
                + [_nested(values[i], indent + 1, summarize, formatter)
                   for i in range(count - edge, count)])
    else:
        rows = [_nested(values[i], indent + 1, summarize, formatter) for i in range(count)]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _values_text(values, indent):
    if values.size == 0:
        return "[]"
    summarize = values.size > _options.threshold
    formatter = _Formatter(_summarized(values) if summarize else values)
    return _nested(values, indent, summarize, formatter)


def _with_suffixes(text, suffixes, indent):
    parts = [text]
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > _options.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


_DEFAULT_DTYPES = (np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_))


def tensor_repr(tensor):
    """``tensor([...])`` as torch prints the tensor, under the current print options."""
    prefix = "tensor("
    indent = len(prefix)
    values = tensor._data if isinstance(tensor._data, np.ndarray) else tensor._data.get()
    suffixes = []
    if tensor.device != "cpu":
        suffixes.append(f"device='{tensor.device}'")
    if values.size == 0:
        if values.ndim != 1:
            suffixes.append(f"size={tuple(values.shape)}")
        if values.dtype != _DEFAULT_DTYPES[0]:
            suffixes.append(f"dtype={values.dtype}")
        text = "[]"
    else:
        if not _options.edgeitems:
            suffixes.append(f"size={tuple(values.shape)}")
        if values.dtype not in _DEFAULT_DTYPES:
            suffixes.append(f"dtype={values.dtype}")
        text = _values_text(values, indent)
    from pyrt.autograd import _freed

    if tensor._backward not in (None, _freed):  # made by a recorded op, whose name torch
        from pyrt.anomaly_mode import name_of  # gives its grad_fn (freed by backward: lost)

        suffixes.append(f"grad_fn=<{name_of(tensor._backward)}>")
    elif tensor.requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + text, suffixes, indent)
