"""Losses of class scores against classes, with PyTorch's arguments: cross_entropy (of logits)
and nll_loss (of log-probabilities, log_softmax's output).

Shapes. input is [N, C], [C] (one sample) or [N, C, d1, ..., dk] (a score per class at every
position, as in segmentation); target holds class indices of input's shape without C, or, for
cross_entropy, class probabilities of input's own shape. The classes are moved to the last
axis, so that every sample (or position) is a row of an [M, C] matrix, and the losses and
gradients are put back in the argument's shape at the end.

Class indices. With log-probabilities lp (log_softmax of the input for cross_entropy, the
input itself for nll_loss), class weights w (`weight`, default ones) and label smoothing e
(cross_entropy's `label_smoothing`), row n of class y_n loses

    l_n = (1 - e) w[y_n] (-lp[n, y_n]) + e / C sum_c w[c] (-lp[n, c]),

or 0 when y_n == ignore_index. "mean" divides the sum of the l_n by W, the weight of the rows
that count (sum of w[y_n]; their number without weights): PyTorch's weighted mean, nan when no
row counts (whose gradient is then 0). With p = softmax, the gradient of row n is

    g_n (1 - e) w[y_n] (p - onehot(y_n)) + g_n e / C (sum(w) p - w)

for cross_entropy, and -g_n w[y_n] at column y_n for nll_loss (g_n: the gradient of l_n).

Class probabilities t (cross_entropy): the target smoothed to t' = (1 - e) t + e / C, then
l_n = -sum_c w[c] t'[n, c] lp[n, c]; "mean" divides by the rows, not by weights, as PyTorch.
The gradient is g_n (p sum_c w[c] t'[n, c] - w t'[n]) for the input and -g_n (1 - e) w lp[n]
for a target that requires grad.

The fused kernel (pyrt.ops.cross_entropy: softmax, loss and gradient in one pass) runs the
commonest call, a mean over [N, C] logits of integer labels without weights or smoothing: on
the CPU while no label is ignore_index (a label outside [0, C), as the default -100 is, fails
the kernel's check and the call goes the general way, which skips it or names it), on the GPU
always (its kernel skips the rows labelled ignore_index itself). A class index outside
[0, C) that is not ignore_index is a ValueError on the CPU and gives a nan loss on the GPU,
where checking it would wait for the device.
"""

import numbers

import numpy as np

from pyrt import ops
from pyrt.autograd import _state as _grad_mode
from pyrt.functional import (
    _as_tensor,
    _backend_checks,
    _check_reduction,
    _make,
    _not_a_tensor,
    _real_number,
    _scale,
    _tensor,
    _xp,
)
from pyrt.ops._checks import F32, I64, as_i64
from pyrt.ops.softmax import cross_entropy_raw

__all__ = ["cross_entropy", "nll_loss"]

_ndarray = np.ndarray


def _index(value, name):
    """An integer argument (ignore_index), bools refused."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    return int(value)


def _class_weight(op, weight, classes, xp):
    """`weight` (None, or C floats) as a float32 array of the backend `xp`, or None."""
    if weight is None:
        return None
    if not isinstance(weight, _tensor()):
        weight = _as_tensor(weight, keep_bool=False)
    if weight._requires_grad:
        raise RuntimeError(f"{op}: the loss is not differentiable with respect to weight: it "
                           "cannot require grad")
    w = weight._data
    if w.dtype != F32:
        raise TypeError(f"{op}: weight must be a float32 tensor, got {w.dtype}")
    if _xp(w) is not xp:
        raise RuntimeError(f"{op}: weight must be on the input's device, got {weight.device}")
    if w.shape != (classes,):
        raise ValueError(f"{op}: weight must hold one value for each of the {classes} classes, "
                         f"got shape {tuple(w.shape)}")
    return w


class _Rows:
    """A loss's input and target as rows [M, C], and the way back to their shapes."""

    def __init__(self, op, input, target, probabilities_allowed):
        Tensor = _tensor()
        if not isinstance(input, Tensor):
            raise _not_a_tensor(input)
        as_f32, as_i64 = _backend_checks(input._data)
        z = as_f32(input._data, "input")
        if z.ndim == 0:
            raise ValueError(f"{op}: input must be [C], [N, C] or [N, C, d1, ...], got a 0-d "
                             "tensor")
        self.shape = z.shape
        self.xp = xp = _xp(z)
        axis = 0 if z.ndim == 1 else 1
        self.classes = c = z.shape[axis]
        if c == 0:
            raise ValueError(f"{op}: input must have at least one class, got shape {z.shape}")
        self.target = target if isinstance(target, Tensor) else None
        t = target._data if isinstance(target, Tensor) else target
        if t is None or isinstance(t, (str, bytes, dict)):
            raise TypeError(f"{op}: target must be a tensor of class indices, got "
                            f"{type(t).__name__}")
        if xp is np:
            t = np.asarray(t)
        elif not hasattr(t, "dtype"):  # not a device array: the backend's check names it
            t = as_i64(t, "target")
        # the positions, each a row: the classes moved last
        self.position_shape = z.shape[:axis] + z.shape[axis + 1:]
        self.z = z.reshape(1, c) if z.ndim == 1 else (
            z if z.ndim == 2 else xp.ascontiguousarray(xp.moveaxis(z, 1, -1)).reshape(-1, c))
        self.probabilities = t.dtype.kind == "f" and t.shape == z.shape
        if self.probabilities and probabilities_allowed:
            t = as_f32(t, "target")
            self.t = t.reshape(1, c) if t.ndim == 1 else (
                t if t.ndim == 2 else xp.ascontiguousarray(xp.moveaxis(t, 1, -1)).reshape(-1, c))
            return
        if t.dtype.kind not in "iu":
            expected = (f"class indices (an integer dtype) of shape {self.position_shape}, or "
                        f"class probabilities (float32) of the input's shape {z.shape}"
                        if probabilities_allowed
                        else f"class indices (an integer dtype) of shape {self.position_shape}")
            raise TypeError(f"{op}: target must hold {expected}; got {t.dtype} of shape "
                            f"{tuple(t.shape)}")
        if t.shape != self.position_shape:
            raise ValueError(f"{op}: target must have shape {self.position_shape} to match "
                             f"input {z.shape}, got {tuple(t.shape)}")
        self.labels = as_i64(t, "target").reshape(-1)

    def back(self, grad):
        """A gradient of the rows in the input's shape."""
        if len(self.shape) <= 2:
            return grad.reshape(self.shape)
        xp = self.xp
        n, c = self.shape[0], self.classes
        return xp.ascontiguousarray(xp.moveaxis(grad.reshape(n, *self.shape[2:], c), -1, 1))


def _reduce(rows, losses, reduction, total):
    """The losses of the rows reduced: kept in the positions' shape, summed, or divided by
    `total` (nan when it is 0)."""
    xp = rows.xp
    if reduction == "none":
        return losses.reshape(rows.position_shape)
    s = losses.sum(dtype=F32)
    if reduction == "sum":
        return xp.asarray(s, dtype=F32)
    with np.errstate(invalid="ignore", divide="ignore"):
        return xp.asarray(s / total, dtype=F32)


def _row_gradient(rows, g, reduction, total):
    """The gradient of each row's loss, [M] (or a scalar), from the gradient g of the reduced
    loss; 0 where `total` is 0 (a mean over no counted rows)."""
    xp = rows.xp
    if reduction == "none":
        return g.reshape(-1).astype(F32, copy=False)
    if reduction == "sum":
        return g.astype(F32, copy=False)
    with np.errstate(invalid="ignore", divide="ignore"):
        return xp.where(total > 0, g / total, xp.float32(0)).astype(F32, copy=False)


def _index_losses(op, rows, lp, w, ignore_index, smoothing):
    """Each row's loss against class indices, and what the gradient needs: (losses, picked,
    w_y, counted, bad); w_y is 0 for the rows that do not count."""
    xp, labels, c = rows.xp, rows.labels, rows.classes
    counted = labels != ignore_index
    inside = (labels >= 0) & (labels < c)
    bad = counted & ~inside
    if xp is np and bad.any():
        raise ValueError(f"{op}: target must hold class indices in [0, {c}) or ignore_index "
                         f"({ignore_index}), got {int(labels[bad][0])}")
    picked = xp.where(inside, labels, 0)
    w_y = (w[picked] if w is not None else xp.ones(labels.shape, F32)) * counted
    w_y = w_y.astype(F32, copy=False)
    m = labels.shape[0]
    losses = -lp[xp.arange(m), picked] * w_y
    if smoothing:
        spread = -(lp * w).sum(1, dtype=F32) if w is not None else -lp.sum(1, dtype=F32)
        losses = np.float32(1 - smoothing) * losses + np.float32(smoothing / c) * (
            spread * counted)
    if xp is not np:  # a class index out of range: nan, as the fused kernel gives
        losses = xp.where(bad, xp.float32(xp.nan), losses)
    return losses.astype(F32, copy=False), picked, w_y, counted, bad


def _general(op, input, target, weight, ignore_index, reduction, smoothing, logits):
    """Either loss, any shape, weights, ignore_index and smoothing (the module docstring's
    formulas); `logits`: the input holds logits (cross_entropy), not log-probabilities."""
    rows = _Rows(op, input, target, probabilities_allowed=logits)
    xp, c = rows.xp, rows.classes
    w = _class_weight(op, weight, c, xp)
    lp = ops.log_softmax(rows.z, 1) if logits else rows.z
    m = rows.z.shape[0]
    if rows.probabilities:
        if ignore_index != -100:
            raise ValueError(f"{op}: ignore_index is not supported with class probabilities "
                             f"(a float target of the input's shape), got {ignore_index}")
        t = rows.t
        if smoothing:
            t = (np.float32(1 - smoothing) * t + np.float32(smoothing / c)).astype(F32)
        wt = t * w if w is not None else t
        losses = -(lp * wt).sum(1, dtype=F32)
        total = np.float32(m)
        loss = _reduce(rows, losses, reduction, total)

        def backward(g):
            # (the mean's divisor is a count known here, not an array: m rows, any of them)
            gr = (g.reshape(-1, 1) if reduction == "none"
                  else g / total if reduction == "mean" and m else g).astype(F32, copy=False)
            d_input = d_target = None
            if input._requires_grad:
                p = xp.exp(lp)
                d_input = rows.back(((p * wt.sum(1, keepdims=True, dtype=F32) - wt) * gr)
                                    .astype(F32, copy=False))
            if rows.target is not None and rows.target._requires_grad:
                lw = lp * w if w is not None else lp
                d_target = rows.back((np.float32(-(1 - smoothing)) * lw * gr)
                                     .astype(F32, copy=False))
            return d_input, d_target

        parents = (input, rows.target) if rows.target is not None else (input,)
        return _make(loss, parents, backward)

    losses, picked, w_y, counted, bad = _index_losses(op, rows, lp, w, ignore_index, smoothing)
    total = w_y.sum(dtype=F32)
    loss = _reduce(rows, losses, reduction, total)

    def backward(g):
        gr = _row_gradient(rows, g, reduction, total)
        coef = (gr * w_y).astype(F32, copy=False)
        at = (xp.arange(m), picked)
        if logits:
            grad = xp.exp(lp)
            if smoothing:
                keep = np.float32(1 - smoothing) * coef
                spread = (np.float32(smoothing / c) * gr * counted).astype(F32).reshape(-1, 1)
                total_w = w.sum(dtype=F32) if w is not None else np.float32(c)
                grad = grad * (keep.reshape(-1, 1) + spread * total_w)
                grad[at] -= keep
                grad -= spread * (w if w is not None else np.float32(1))
            else:
                grad *= coef.reshape(-1, 1)
                grad[at] -= coef
        else:
            grad = xp.zeros((m, c), F32)
            grad[at] = -coef
        if xp is not np:  # a class index out of range: nan, as its loss is
            grad = xp.where(bad.reshape(-1, 1), xp.float32(xp.nan), grad)
        return (rows.back(grad.astype(F32, copy=False)),)

    return _make(loss, (input,), backward)


def _check_smoothing(label_smoothing):
    smoothing = _real_number(label_smoothing, "label_smoothing")
    if not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0, got "
                         f"{label_smoothing}")
    return smoothing


def cross_entropy(input, target, weight=None, *, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0):
    """Cross-entropy of softmax(input), logits [N, C] ([C], [N, C, d1, ...]), against target:
    class indices [N] ([], [N, d1, ...]) or class probabilities of input's shape. `weight`
    (C floats) weighs each class, rows whose index is `ignore_index` do not count, and
    `label_smoothing` mixes the target with the uniform distribution; the loss of each row is
    averaged (reduction="mean", weighted by the classes' weights), summed ("sum") or kept
    ("none"). The formulas are in the module docstring."""
    # the commonest call first, its arguments' types compared exactly (the general checks,
    # through numbers' abstract classes, took longer than the fused kernel's call)
    if (reduction == "mean" and weight is None and type(ignore_index) is int
            and type(label_smoothing) is float and label_smoothing == 0.0):
        fused = _fused(input, target, ignore_index)
        if fused is not None:
            return fused
    _check_reduction(reduction)
    ignore_index = _index(ignore_index, "ignore_index")
    smoothing = _check_smoothing(label_smoothing)
    return _general("cross_entropy", input, target, weight, ignore_index, reduction, smoothing,
                    logits=True)


def _fused(logits, target, ignore_index):
    """The mean cross-entropy of [N, C] logits against N labels by the fused kernel, or None
    where it does not apply (other shapes; on the CPU a label that is ignore_index)."""
    Tensor = _tensor()
    labels = target._data if isinstance(target, Tensor) else target
    try:
        z = logits._data
        need = logits._requires_grad and _grad_mode.enabled
    except AttributeError:
        raise _not_a_tensor(logits) from None
    if type(z) is _ndarray:
        if type(labels) is not _ndarray:
            labels = np.asarray(labels)
        if labels.dtype is not I64 and labels.dtype.kind in "iu":
            labels = as_i64(labels, "target")
        if not (z.dtype is F32 and z.ndim == 2 and z.flags.c_contiguous
                and labels.dtype is I64 and labels.flags.c_contiguous
                and labels.shape == z.shape[:1]) or 0 <= ignore_index < z.shape[1]:
            return None
        try:
            out = cross_entropy_raw(z, labels, need)
        except ValueError:  # a label outside [0, C): ignore_index, or one to name
            return None
    elif type(z).__module__.startswith("cupy"):
        if type(labels) is type(z) and labels.dtype != I64 and labels.dtype.kind in "iu":
            labels = labels.astype(I64)
        if not (z.ndim == 2 and z.dtype == F32 and z.flags.c_contiguous and z.shape[1] > 0
                and type(labels) is type(z) and labels.dtype == I64
                and labels.flags.c_contiguous and labels.shape == z.shape[:1]):
            return None
        from pyrt.cuda.ops.reduction import cross_entropy_raw as device_cross_entropy

        out = device_cross_entropy(z, labels, need, ignore_index)
    else:
        return None
    if need:
        loss, grad = out
        return _make(loss, (logits,), lambda g: (_scale(grad, g),))
    return _make(out, (logits,), None)


def nll_loss(input, target, weight=None, *, ignore_index=-100, reduction="mean"):
    """The negative log-likelihood of target, class indices [N] ([], [N, d1, ...]), under
    input, log-probabilities [N, C] ([C], [N, C, d1, ...]): -weight[y] input[n, y] for each
    row n of class y, 0 for the rows whose class is `ignore_index`, averaged (weighted by the
    classes' weights), summed or kept. log_softmax then nll_loss is cross_entropy in two
    steps."""
    _check_reduction(reduction)
    ignore_index = _index(ignore_index, "ignore_index")
    return _general("nll_loss", input, target, weight, ignore_index, reduction, 0.0,
                    logits=False)
