"""Reductions, softmax and the fused losses on float32 CuPy arrays, with the names, arguments
and checks of pyrt/ops/reduction.py and pyrt/ops/softmax.py. Reductions and softmax are
CuPy's; the losses are one kernel each (kernels/loss.cu) whose loss stays on the device."""

import warnings

import cupy
import numpy as np

from pyrt.cuda._module import BLOCK, kernel
from pyrt.cuda.ops._checks import as_f32, as_i64, check_out, out_f32
from pyrt.ops._checks import F32, I64, axis_index
from pyrt.ops.reduction import _EMPTY_ARGMAX, _EMPTY_MAX, _axes, _result_shape, _zero_d_axis
from pyrt.ops.softmax import check_labels, check_logits, check_targets

__all__ = ["argmax", "binary_cross_entropy_with_logits", "cross_entropy", "log_softmax",
           "max", "mean", "softmax", "sum"]


def _axis(axis, ndim):
    """`axis` checked as the CPU ops check it, as a tuple of axes, or None for all (axis 0 or
    -1 of a 0-d array included, as NumPy takes them)."""
    if axis is None:
        return None
    if isinstance(axis, tuple):
        return _axes(axis, ndim)
    try:
        return (axis_index(axis, ndim),)
    except ValueError:
        _zero_d_axis(axis, ndim)
        return None


def _reduce(fn, x, axis, keepdims, out, empty_error=None):
    x = as_f32(x, "x")
    axes = _axis(axis, x.ndim)
    shape = _result_shape(x.shape, axes if axes is not None else tuple(range(x.ndim)),
                          keepdims)
    if empty_error and (x.size == 0 if axes is None else any(x.shape[a] == 0 for a in axes)):
        raise ValueError(empty_error)
    res = out_f32(out, shape)
    if out is not None:
        check_out(res, (x, "x"))
    fn(x, axis=axes, keepdims=keepdims, out=res)
    return res


def sum(x, axis=None, *, keepdims=False, out=None):
    return _reduce(cupy.sum, x, axis, keepdims, out)


def mean(x, axis=None, *, keepdims=False, out=None):
    x = as_f32(x, "x")
    axes = _axis(axis, x.ndim)
    n = x.size if axes is None else int(np.prod([x.shape[a] for a in axes]))
    if n == 0:
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)
    return _reduce(cupy.mean, x, axis, keepdims, out)


def max(x, axis=None, *, keepdims=False, out=None):
    return _reduce(cupy.max, x, axis, keepdims, out, _EMPTY_MAX)


def argmax(x, axis=None, *, keepdims=False):
    """Index of the first maximum along `axis` as int64 (the flat index when axis is None)."""
    x = as_f32(x, "x")
    a = None
    if axis is not None:
        try:
            a = axis_index(axis, x.ndim)
        except ValueError:  # axis 0 or -1 of a 0-d array: its one element, as on the CPU
            _zero_d_axis(axis, x.ndim)
    if (x.size if a is None else x.shape[a]) == 0:
        raise ValueError(_EMPTY_ARGMAX)
    res = cupy.argmax(x, axis=a).astype(I64, copy=False)
    if keepdims:
        res = res.reshape(_result_shape(x.shape, (a,) if a is not None
                                        else tuple(range(x.ndim)), True))
    return res


# ---- softmax ----------------------------------------------------------------------------

def _softmax(x, axis, out, log):
    x = as_f32(x, "x")
    res = out_f32(out, x.shape)
    if out is not None:
        check_out(res, (x, "x"))
    a = axis_index(axis, 1) if x.ndim == 0 else axis_index(axis, x.ndim)
    shifted = x - x.max(axis=a, keepdims=True)
    if log:
        cupy.subtract(shifted, cupy.log(cupy.exp(shifted).sum(axis=a, keepdims=True)), out=res)
    else:
        e = cupy.exp(shifted)
        cupy.divide(e, e.sum(axis=a, keepdims=True), out=res)
    return res


def softmax(x, axis=-1, *, out=None):
    return _softmax(x, axis, out, False)


def log_softmax(x, axis=-1, *, out=None):
    return _softmax(x, axis, out, True)


# ---- fused losses ------------------------------------------------------------------------

def cross_entropy_raw(logits, labels, return_grad, ignore_index=None):
    """Mean cross-entropy of C-contiguous float32 logits [n, c] against int64 labels [n]:
    a 0-d device array (and the gradient), one kernel launch, unchecked. The rows labelled
    ignore_index (an int; None: no label is ignored) do not count, in the mean or the
    gradient, as in PyTorch."""
    n, c = logits.shape
    loss = cupy.empty((), F32)
    grad = cupy.empty((n, c), F32) if return_grad else logits
    use_ignore = ignore_index is not None
    kernel("loss", "pyrt_cross_entropy")((1,), (BLOCK,), (
        logits, labels, loss, grad, n, c, int(return_grad), int(use_ignore),
        int(ignore_index) if use_ignore else 0))
    return (loss, grad) if return_grad else loss


def cross_entropy(logits, labels, *, return_grad=False):
    """Mean cross-entropy of softmax(logits [n, c]) against integer labels [n], and with
    return_grad its gradient (softmax(logits) - onehot) / n, in one kernel. A label outside
    [0, c) gives a nan loss: checking it here would copy the labels to the host. An empty
    batch gives nan, as on the CPU."""
    logits = as_f32(logits, "logits")
    check_logits(logits)
    labels = as_i64(labels, "labels")
    check_labels(logits, labels)
    return cross_entropy_raw(logits, labels, return_grad)


def bce_with_logits_raw(logits, targets, return_grad):
    loss = cupy.empty((), F32)
    grad = cupy.empty(logits.shape, F32) if return_grad else logits
    kernel("loss", "pyrt_bce_with_logits")((1,), (BLOCK,), (
        logits, targets, loss, grad, logits.size, int(return_grad)))
    return (loss, grad) if return_grad else loss


def binary_cross_entropy_with_logits(logits, targets, *, return_grad=False):
    """Mean binary cross-entropy of sigmoid(logits) against targets of the same shape, and
    with return_grad its gradient (sigmoid(logits) - targets) / n, in one kernel."""
    logits = as_f32(logits, "logits")
    targets = as_f32(targets, "targets")
    check_targets(logits, targets)
    return bce_with_logits_raw(logits, targets, return_grad)
