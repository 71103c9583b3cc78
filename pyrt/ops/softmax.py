"""Softmax, log-softmax and the losses built on them, for float32 arrays (PyTorch's names).

The kernels (csrc/kernels/softmax.c) work on the rows of a C-contiguous ``[rows, cols]``
array; softmax over another axis moves that axis last with a transposed copy, and moves the
result back. Losses are means computed in a fixed order: bitwise identical at any thread
count. ``cross_entropy`` and ``binary_cross_entropy_with_logits`` can return the gradient of
the loss with respect to the logits, computed in the same pass as the loss.
"""

import numpy as np

from pyrt._pyrt_cffi import ffi, lib
from pyrt.ops._checks import (
    F32,
    as_f32,
    as_i64,
    axis_index,
    check_out,
    check_rc,
    fptr,
    iptr,
    out_f32,
)
from pyrt.ops._memory import empty, in_and_result

__all__ = ["binary_cross_entropy_with_logits", "cross_entropy", "log_softmax", "softmax"]

_FLOATS = ffi.typeof("float[]")
_from_buffer = ffi.from_buffer
_empty = empty
_in_and_result = in_and_result
_ndarray = np.ndarray
_c_softmax, _EOVERLAP = lib.pyrt_softmax, lib.PYRT_EOVERLAP
_np_empty = np.empty


def _softmax(x, axis, out, log, what):
    # the common call first: a float32 ndarray and its last axis, out None or of x's shape;
    # the kernel refuses an out that meets x other than as x itself
    if type(x) is _ndarray and x.dtype is F32 and type(axis) is int and x.ndim \
            and (axis == -1 or axis == x.ndim - 1):
        try:
            px, res, pres = _in_and_result(x, out)
        except ValueError:
            pass
        else:
            cols = x.shape[-1]
            rc = _c_softmax(px, pres, x.size // cols if cols else 0, cols, log)
            if rc:
                if rc == _EOVERLAP:
                    check_out(res, (x, "x"))
                check_rc(rc, what)
            return res
    x = as_f32(x, "x")
    res = out_f32(out, x.shape)
    if out is not None:
        check_out(res, (x, "x"))  # out is x: allowed, done in place
    if x.ndim == 0:
        # a single element: the softmax of one value (axis must still be -1 or 0)
        axis_index(axis, 1, expected="an integer")
        check_rc(lib.pyrt_softmax(fptr(x), fptr(res), 1, 1, log), what)
        return res
    a = axis_index(axis, x.ndim, expected="an integer")
    cols = x.shape[a]
    rows = x.size // cols if cols else 0
    if a == x.ndim - 1:
        check_rc(lib.pyrt_softmax(fptr(x), fptr(res), rows, cols, log), what)
        return res
    # another axis: bring it last in a contiguous copy (a copy even when moving it leaves the
    # layout contiguous, as with axes of length 1), work there in place, move it back
    t = np.moveaxis(x, a, -1).copy()
    check_rc(lib.pyrt_softmax(fptr(t), fptr(t), rows, cols, log), what)
    np.copyto(res, np.moveaxis(t, -1, a))
    return res


def softmax(x, axis=-1, *, out=None):
    """exp(x) / sum(exp(x)) along `axis`, computed as exp(x - max) / sum(exp(x - max)) so
    that large values do not overflow. `out` may be `x`."""
    return _softmax(x, axis, out, 0, "softmax")


def log_softmax(x, axis=-1, *, out=None):
    """x - logsumexp(x) along `axis`, stable for large values. `out` may be `x`."""
    return _softmax(x, axis, out, 1, "log_softmax")


def cross_entropy(logits, labels, *, return_grad=False):
    """Mean over the batch of -log softmax(logits)[i, labels[i]], as a 0-d float32 array.

    logits: float32 [N, C]; labels: integer array [N] with values in [0, C).
    With return_grad, returns (loss, grad) where grad = (softmax(logits) - onehot) / N is
    d(loss)/d(logits), computed in the same pass. N == 0 gives NaN, as in PyTorch.
    """
    logits = as_f32(logits, "logits")
    check_logits(logits)
    labels = as_i64(labels, "labels")
    check_labels(logits, labels)
    return cross_entropy_raw(logits, labels, return_grad)


def check_logits(logits):
    """cross_entropy's logits must be [N, C] (the CUDA op's check too)."""
    if logits.ndim != 2:
        raise ValueError(f"logits must be 2-D [N, C], got shape {logits.shape}")


def check_labels(logits, labels):
    """cross_entropy's labels must be [N], N the rows of logits."""
    n = logits.shape[0]
    if labels.shape != (n,):
        raise ValueError(f"labels must have shape ({n},) to match logits, got {labels.shape}")


def cross_entropy_raw(logits, labels, return_grad):
    """cross_entropy without the argument checks: for internal callers holding a C-contiguous
    float32 logits [N, C] and a C-contiguous int64 labels [N] (label values are still
    checked, by the kernel)."""
    n, c = logits.shape
    loss = _np_empty((), F32)  # (a scalar: NumPy's, without _empty's size test)
    grad = _empty((n, c), F32) if return_grad else None
    rc = lib.pyrt_cross_entropy(_from_buffer(_FLOATS, logits), iptr(labels),
                                _from_buffer(_FLOATS, loss),
                                _from_buffer(_FLOATS, grad) if return_grad else ffi.NULL, n, c)
    if rc:
        if rc == lib.PYRT_EINVAL:
            bad = labels[(labels < 0) | (labels >= c)]
            raise ValueError(f"labels must be in [0, {c}), got {int(bad[0])}")
        check_rc(rc, "cross_entropy")
    return (loss, grad) if return_grad else loss


def binary_cross_entropy_with_logits(logits, targets, *, return_grad=False):
    """Mean of max(z, 0) - z * t + log(1 + exp(-|z|)) over all elements, as a 0-d float32
    array: the binary cross-entropy of sigmoid(z) against targets t, without computing the
    sigmoid's logarithm. logits and targets are float32 arrays of the same shape.
    With return_grad, returns (loss, grad) with grad = (sigmoid(z) - t) / n.
    """
    logits = as_f32(logits, "logits")
    targets = as_f32(targets, "targets")
    check_targets(logits, targets)
    return bce_with_logits_raw(logits, targets, return_grad)


def check_targets(logits, targets):
    """binary_cross_entropy_with_logits' targets must have the shape of logits."""
    if targets.shape != logits.shape:
        raise ValueError(
            f"targets must have the shape of logits {logits.shape}, got {targets.shape}"
        )


def bce_with_logits_raw(logits, targets, return_grad):
    """binary_cross_entropy_with_logits without the argument checks: for internal callers
    holding C-contiguous float32 logits and targets of one shape."""
    loss = _np_empty((), F32)  # (a scalar: NumPy's, without _empty's size test)
    grad = _empty(logits.shape, F32) if return_grad else None
    rc = lib.pyrt_bce_with_logits(_from_buffer(_FLOATS, logits), _from_buffer(_FLOATS, targets),
                                  _from_buffer(_FLOATS, loss),
                                  _from_buffer(_FLOATS, grad) if return_grad else ffi.NULL,
                                  logits.size)
    if rc:
        check_rc(rc, "binary_cross_entropy_with_logits")
    return (loss, grad) if return_grad else loss
