"""A run of Linear layers (each with an optional fused activation) as one autograd op.

Sequential hands every run of two or more Linear steps to a LinearChain. Its forward is one C
call for the whole run (pyrt_linear_chain_forward) and its backward one more: on a small
network, where a layer's arithmetic costs less than calling into C, that is the difference
between a training step dominated by call overhead and one that is not. The kernels inside
are those the layers run one by one, so the numbers are bitwise the same.

The C tables (layer widths, activation codes, weight and bias pointers) are built once and
rebuilt only when a parameter's array is replaced (``load_state_dict``, ``.data = ...``).
The arrays a call makes (every layer's outputs, the parameters' gradients) are those of an
earlier call whenever nothing references those any more, as reference counts tell
(_new_outputs, _new_grads): allocating, pointing to and slicing them again was an eighth of a
small network's training step.
"""

import operator
import sys
import threading

import numpy as np

from pyrt import functional as F
from pyrt._pyrt_cffi import ffi, lib
from pyrt.ops._checks import F32, check_rc
from pyrt.ops._memory import empty

__all__ = ["LinearChain"]

_FLOATS = ffi.typeof("float[]")
_from_buffer = ffi.from_buffer
_empty = empty
_plain = F._plain
_NULL = ffi.NULL
_NAMES = ("weight", "bias")
_getitem = dict.__getitem__
_requires_grad = operator.attrgetter("_requires_grad")
_getrefcount = getattr(sys, "getrefcount", None)  # CPython's; see _counts
_is = operator.is_
_ndarray = np.ndarray


class _Tables:
    """Pointers to the parameter arrays of one set of arrays, and those arrays, kept alive."""

    __slots__ = ("biases", "keep", "weights")

    def __init__(self, weights, biases):
        self.keep = [_from_buffer(_FLOATS, w) for w in weights]
        bias_ptrs = [_NULL if b is None else _from_buffer(_FLOATS, b) for b in biases]
        self.keep += bias_ptrs
        self.weights = ffi.new("float *[]", self.keep[:len(weights)])
        self.biases = ffi.new("float *[]", bias_ptrs)


def _counts(held):
    """The reference counts of the objects `held` (a tuple) of a reuse entry: equal to those
    taken when the entry was made only while nothing else references any of them."""
    return tuple(map(_getrefcount, held))


if _getrefcount is None:  # an interpreter without reference counts: never reuse
    def _counts(held):
        return object()


def _reusable(entry):
    """Whether the arrays of a reuse entry (_new_grads, _new_outputs) may be overwritten."""
    return tuple(map(_getrefcount, entry[4])) == entry[5]


if _getrefcount is None:
    def _reusable(entry):
        return False


def _new_grads(found, wanted):
    """A buffer for the parameter gradients of one backward and its views, as a reuse entry:
    [found (what _current gave), wanted, buffer, its pointer, (buffer, views), their
    reference counts (taken by the caller, once this function's names are gone), what the
    backward returns].

    A training step drops its gradients before the next backward (zero_grad sets them to
    None), so the arrays of the last backward are usually referenced by nothing but this
    entry then, and are overwritten instead of allocated, pointed to and sliced again. The
    reference counts tell: the buffer's and every view's are those taken right after the
    entry was made (_counts) only while no one else holds them, a view of them, or a
    pointer from ffi.from_buffer; any other holder (a kept .grad, gradients accumulated
    without zero_grad, a slice) makes a fresh entry, as NumPy elides temporaries only under
    the same condition."""
    grad_size, slots = found[2], found[4]
    grads = _empty((grad_size,), F32)
    views = [grads[lo:hi].reshape(shape) for want, (lo, hi, shape) in zip(wanted, slots)
             if want]
    result = [None]  # no gradient for the input
    it = iter(views)
    result += [next(it) if want else None for want in wanted]
    return [found, wanted, grads, _from_buffer(_FLOATS, grads), (grads, *views), None, result]


_OUTPUTS_KEPT = 2  # output arrays kept for reuse: a loop holds the last step's output
# Only arrays smaller than the buffer cache's blocks are kept for reuse, so that a chain holds
# a few hundred KB at most once its caller has let go: a larger array comes from the buffer
# cache (pyrt/ops/_memory.py) at little cost, and its allocation is a small part of the work
# that fills it.
_REUSE_MAX_FLOATS = lib.PYRT_BUFFER_MIN_BYTES // 4


class _Reuse(threading.local):
    """A chain's arrays to reuse, per thread: between the test of an entry's reference counts
    and the references the call then takes, another thread could pass the same test, so each
    thread reuses only the arrays of its own calls."""

    outs = ()  # entries of _new_outputs, the latest first
    grads = None  # the entry of _new_grads


def _new_outputs(m, width, n):
    """The output array of a forward of m rows, as a reuse entry: [m, the array (every
    layer's outputs), its pointer, the view of the last layer's (m x n) that the forward
    returns, (array, view), their reference counts (taken by the caller)].

    As with the gradients (_new_grads), the arrays of an earlier forward are overwritten only
    when their reference counts are those taken when the entry was made: nothing holds the
    returned output (a loop's `output = model(x)` still holds the last step's while the next
    forward runs, hence two entries), a view of it, or a backward closure that will read it."""
    out = _empty((m * width,), F32)
    y = out[out.size - m * n:].reshape(m, n)
    return [m, out, _from_buffer(_FLOATS, out), y, (out, y), None]


class LinearChain:
    """Linear modules ``layers`` with activations ``acts`` (None, "relu", "sigmoid" or "tanh"
    after each), applied in turn to a 2-D batch."""

    def __init__(self, layers, acts):
        self.layers = tuple(layers)
        self.steps = tuple(zip(self.layers, acts))  # for running the layers one by one
        dims = [self.layers[0].in_features] + [layer.out_features for layer in self.layers]
        self.dims = tuple(dims)
        self._width = sum(dims[1:])  # floats of the outputs of all layers, per row
        self._reuse_rows = _REUSE_MAX_FLOATS // max(self._width, 1)  # batches kept for reuse
        self._dims = ffi.new("int64_t[]", dims)
        self._acts = ffi.new("int[]", [F._ACT_CODES[act] for act in acts])
        # each layer's parameter dict twice, beside _NAMES: weight, bias, weight, bias, ...
        self._dicts = [layer._parameters for layer in self.layers for _ in _NAMES]
        self._names = _NAMES * len(self.layers)
        self._cached = None  # (the parameters, their arrays, what _current found for them)
        self._needs = {}  # requires_grad flags of the parameters -> C table of needs
        self._reuse = _Reuse()  # arrays of earlier calls, to overwrite (_new_outputs)

    def _current(self):
        """(biases, C tables, size of all parameter gradients, the parameters, where each
        one's gradient lies) for the layers' parameters now, or None if one no longer fits
        the chain (a weight replaced by one of another shape, an array that is not plain
        float32). The checks and the C tables are redone only when a parameter or its array
        was replaced since the last call."""
        # the same objects as last time? (map and all run in C: this is on every call)
        params = list(map(_getitem, self._dicts, self._names))
        arrays = [p._data for p in params if p is not None]
        cached = self._cached
        if (cached is not None and all(map(_is, params, cached[0]))
                and all(map(_is, arrays, cached[1]))):
            return cached[2]
        weights, biases = params[0::2], params[1::2]
        for w, b, k, n in zip(weights, biases, self.dims, self.dims[1:]):
            if not (_plain(w._data) and w._data.shape == (n, k)):
                return None
            if b is not None and not (_plain(b._data) and b._data.shape == (n,)):
                return None
        tables = _Tables([w._data for w in weights],
                         [None if b is None else b._data for b in biases])
        # the parameters in the order of the C gradient layout, and where each one's
        # gradient lies in it
        present = tuple(p for p in params if p is not None)
        slots, at = [], 0
        for p in present:
            slots.append((at, at + p._data.size, p._data.shape))
            at += p._data.size
        found = (biases, tables, at, present, tuple(slots), at <= _REUSE_MAX_FLOATS)
        self._needs = {}
        self._cached = (params, arrays, found)
        return found

    def __call__(self, x):
        """The chain applied to Tensor x [batch, in_features], or None when the layers must
        run one by one (an input or parameter the fused kernel does not take as it is; the
        layers then raise the errors a user expects)."""
        xd = x._data
        # (_plain inline: this runs on every call)
        if not (type(xd) is _ndarray and xd.dtype is F32 and xd.flags.c_contiguous
                and xd.ndim == 2 and xd.shape[1] == self.dims[0]):
            return None
        found = self._current()
        if found is None:
            return None
        biases, tables, grad_size, params, slots, reuse_grads = found
        layers, m = len(biases), xd.shape[0]
        # the outputs of all layers (the backward needs them): an array of an earlier call
        # that nothing references any more, or a new one
        reuse = self._reuse
        if m > self._reuse_rows:
            entry = _new_outputs(m, self._width, self.dims[-1])  # not kept
        else:
            for entry in reuse.outs:
                if entry[0] == m and _reusable(entry):
                    break
            else:
                entry = _new_outputs(m, self._width, self.dims[-1])
                entry[5] = _counts(entry[4])
                reuse.outs = (entry,) + reuse.outs[:_OUTPUTS_KEPT - 1]
        out, pout, y = entry[1], entry[2], entry[3]
        px = _from_buffer(_FLOATS, xd)
        rc = lib.pyrt_linear_chain_forward(layers, self._dims, m, tables.weights, tables.biases,
                                           self._acts, px, pout)
        if rc:
            check_rc(rc, "linear")

        def backward(g):
            # a reference to `out` for as long as this closure lives: the forward must not
            # reuse the array while a backward may still read it
            outputs = out  # noqa: F841
            if not (type(g) is _ndarray and g.dtype is F32 and g.flags.c_contiguous):
                g = np.ascontiguousarray(g, F32)
            wanted = tuple(map(_requires_grad, params))
            needs = self._needs.get(wanted)
            if needs is None:
                needs = self._needs[wanted] = self._needs_table(wanted, biases)
            x_grad = x._requires_grad
            if x_grad or not reuse_grads:
                grads = _empty((grad_size + (xd.size if x_grad else 0),), F32)
                dx = grads[grad_size:].reshape(xd.shape) if x_grad else None
                pgrads = _from_buffer(_FLOATS, grads)
                pdx = _NULL if dx is None else _from_buffer(_FLOATS, dx)
                result = [dx] + [grads[lo:hi].reshape(shape) if want else None
                                 for want, (lo, hi, shape) in zip(wanted, slots)]
            else:
                reuse = self._reuse.grads
                if (reuse is None or reuse[0] is not found or reuse[1] != wanted
                        or not _reusable(reuse)):
                    reuse = self._reuse.grads = _new_grads(found, wanted)
                    reuse[5] = _counts(reuse[4])
                pgrads, pdx, result = reuse[3], _NULL, reuse[6]
            rc = lib.pyrt_linear_chain_backward(
                layers, self._dims, m, tables.weights, tables.biases, self._acts, needs, px,
                pout, _from_buffer(_FLOATS, g), pgrads, pdx)
            if rc:
                check_rc(rc, "linear backward")
            return result

        return F._make(y, (x,) + params, backward)

    @staticmethod
    def _needs_table(wanted, biases):
        """needs[l] for the C backward: bit 1 the weight gradient, bit 2 the bias gradient;
        `wanted` holds requires_grad of each parameter, weight then bias (if any), by layer."""
        needs, i = [], 0
        for b in biases:
            flags = 1 if wanted[i] else 0
            i += 1
            if b is not None:
                flags |= 2 if wanted[i] else 0
                i += 1
            needs.append(flags)
        return ffi.new("int[]", needs)
