"""Losses between an input and a target of the same shape, with PyTorch's names, arguments and
gradients: l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy (of probabilities) and
kl_div. (cross_entropy, nll_loss, binary_cross_entropy_with_logits and mse_loss, which have
fused kernels, are in pyrt.functional.)

Each loss computes the loss of every element with the array ops of the input's backend (NumPy,
or CuPy on the GPU) and reduces it as `reduction` asks (``_reduced``): "none" keeps it, "sum"
adds it up, "mean" averages it over the elements (nan for none, as in PyTorch). Backward
spreads the loss's gradient over the elements, divided as the loss was, and multiplies it by
each element's local derivatives, written beside the loss. A target that requires grad gets
its gradient too.
"""

import warnings

import numpy as np

from pyrt.activations import _float32
from pyrt.functional import (
    _as_tensor,
    _check_reduction,
    _make,
    _not_a_tensor,
    _real_number,
    _tensor,
    _xp,
)
from pyrt.ops._checks import F32
from pyrt.pointwise import sign_of

__all__ = ["binary_cross_entropy", "huber_loss", "kl_div", "l1_loss", "smooth_l1_loss"]

KL_REDUCTIONS = ("mean", "batchmean", "sum", "none")


def _operands(op, input, target):
    """(input, target) as float32 tensors of one shape on one device (a target that is not a
    Tensor, such as an array, becomes a constant one), or the error naming the argument."""
    if not isinstance(input, _tensor()):
        raise _not_a_tensor(input)
    if not isinstance(target, _tensor()):
        target = _as_tensor(target, keep_bool=False)
    if input.shape != target.shape:
        raise ValueError(f"{op}: input shape {input.shape} and target shape {target.shape} "
                         "differ")
    for t, name in ((input, "input"), (target, "target")):
        if t.data.dtype != F32:
            raise TypeError(f"{op}: {name} must be a float32 tensor, got {t.data.dtype}")
    if _xp(input.data) is not _xp(target.data):
        raise RuntimeError(f"{op}: input and target must be on the same device, got "
                           f"{input.device} and {target.device}")
    return input, target


def _reduced(losses, reduction, parents, backward, divisor=None):
    """The losses of the elements as `reduction` asks: as they are ("none"), summed ("sum"), or
    summed and divided by `divisor` (default: their number, "mean"; kl_div's "batchmean"
    passes the batch size). ``backward(ge)`` maps the gradient of each element's loss to the
    gradients of `parents`; for a reduced loss ge is g / divisor at every element."""
    xp = _xp(losses)
    losses = _float32(losses, xp)
    if reduction == "none":
        return _make(losses, parents, backward)
    if reduction == "sum":
        divisor = 1
    elif divisor is None:
        divisor = losses.size
    total = losses.sum(dtype=F32)
    # no elements to average over: nan, as PyTorch's mean of nothing
    loss = total / np.float32(divisor) if divisor else np.float32(np.nan)
    shape, per = losses.shape, np.float32(divisor or 1)
    return _make(_float32(loss, xp), parents,
                 lambda g: backward(xp.broadcast_to(g / per, shape)))


def _difference_backward(input, target, slope, xp):
    """backward for a loss of d = input - target: dloss/dinput = slope(), the derivative of the
    loss at d, and dloss/dtarget its opposite, each times the element's gradient."""
    def backward(ge):
        d_input = _float32(ge * slope(), xp)
        return (d_input if input._requires_grad else None,
                -d_input if target._requires_grad else None)

    return backward


# ---- losses of the difference input - target -------------------------------------------------


def l1_loss(input, target, *, reduction="mean"):
    """|input - target| of each element, reduced; the gradient is sign(input - target) (0
    where they are equal or either is nan, as in PyTorch)."""
    _check_reduction(reduction)
    input, target = _operands("l1_loss", input, target)
    xp = _xp(input.data)
    d = input.data - target.data
    return _reduced(xp.abs(d), reduction, (input, target),
                    _difference_backward(input, target, lambda: sign_of(xp, d), xp))


def smooth_l1_loss(input, target, *, reduction="mean", beta=1.0):
    """With d = input - target: 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta: quadratic
    near 0 and L1 beyond (beta=0 is l1_loss). The gradient is d / beta, then sign(d)."""
    _check_reduction(reduction)
    beta = _real_number(beta, "smooth_l1_loss: beta")
    if not beta >= 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        return l1_loss(input, target, reduction=reduction)
    input, target = _operands("smooth_l1_loss", input, target)
    xp = _xp(input.data)
    b = np.float32(beta)
    d = input.data - target.data
    size = xp.abs(d)
    near = size < b
    losses = xp.where(near, np.float32(0.5) * size * size / b, size - np.float32(0.5) * b)
    return _reduced(losses, reduction, (input, target), _difference_backward(
        input, target, lambda: xp.where(near, d / b, xp.sign(d)), xp))


def huber_loss(input, target, reduction="mean", delta=1.0):
    """With d = input - target: 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta): the
    squared error near 0 and delta times the absolute error beyond (smooth_l1_loss with
    beta=delta, times delta). The gradient is d, then delta sign(d)."""
    _check_reduction(reduction)
    delta = _real_number(delta, "huber_loss: delta")
    if not delta > 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    input, target = _operands("huber_loss", input, target)
    xp = _xp(input.data)
    c = np.float32(delta)
    d = input.data - target.data
    size = xp.abs(d)
    near = size < c
    losses = xp.where(near, np.float32(0.5) * size * size, c * (size - np.float32(0.5) * c))
    return _reduced(losses, reduction, (input, target), _difference_backward(
        input, target, lambda: xp.where(near, d, c * xp.sign(d)), xp))


# ---- binary cross-entropy of probabilities ---------------------------------------------------

_EPSILON = np.float32(1e-12)  # PyTorch's floor on x (1 - x) in the gradient


def _bce_weight(weight, shape, xp):
    """binary_cross_entropy's `weight` (None, or a tensor or array that broadcasts to the
    input's `shape`) as a float32 array of the backend `xp`, or None."""
    if weight is None:
        return None
    if not isinstance(weight, _tensor()):
        weight = _as_tensor(weight, keep_bool=False)
    if weight._requires_grad:
        raise RuntimeError("The function 'binary_cross_entropy' is not differentiable with "
                           "respect to argument 'weight'. This input cannot have "
                           "requires_grad True.")
    w = weight.data
    if w.dtype != F32:
        raise TypeError(f"binary_cross_entropy: weight must be a float32 tensor, got {w.dtype}")
    if _xp(w) is not xp:
        raise RuntimeError(f"binary_cross_entropy: weight must be on the input's device, got "
                           f"{weight.device}")
    try:
        return xp.broadcast_to(w, shape)
    except ValueError:
        raise RuntimeError(f"binary_cross_entropy: weight of shape {tuple(w.shape)} does not "
                           f"broadcast to the input's shape {shape}") from None


def binary_cross_entropy(input, target, weight=None, *, reduction="mean"):
    """-w (t log x + (1 - t) log(1 - x)) for probabilities x (input) and t (target) in [0, 1],
    each log floored at -100 as in PyTorch (so that x = 0 or 1 gives a finite loss), times the
    weight w of each element (`weight`, broadcast to the input's shape; default 1). The
    gradient is w (x - t) / max(x (1 - x), 1e-12) for x and w (log(1 - x) - log(x)) for t.
    Values outside [0, 1] are a RuntimeError on the CPU, as in PyTorch; on the GPU an input
    outside gives nan."""
    _check_reduction(reduction)
    input, target = _operands("binary_cross_entropy", input, target)
    x, t = input.data, target.data
    xp = _xp(x)
    if xp is np:  # (on the GPU the check would wait for the device)
        for values, name in ((x, "input"), (t, "target")):
            if not ((values >= 0) & (values <= 1)).all():  # (NaN fails both tests)
                raise RuntimeError(f"all elements of {name} should be between 0 and 1")
    w = _bce_weight(weight, x.shape, xp)
    with np.errstate(divide="ignore", invalid="ignore"):  # log(0) = -inf, floored below
        log_x = xp.maximum(xp.log(x), np.float32(-100))
        log_1mx = xp.maximum(xp.log1p(-x), np.float32(-100))
    losses = (t - 1) * log_1mx - t * log_x
    if w is not None:
        losses = losses * w

    def backward(ge):
        if w is not None:
            ge = ge * w
        d_input = d_target = None
        if input._requires_grad:
            d_input = _float32(ge * (x - t) / xp.maximum((1 - x) * x, _EPSILON), xp)
        if target._requires_grad:
            with np.errstate(divide="ignore"):  # -logit(x) is +-inf at x = 0 or 1
                d_target = _float32(ge * (xp.log1p(-x) - xp.log(x)), xp)
        return d_input, d_target

    return _reduced(losses, reduction, (input, target), backward)


# ---- Kullback-Leibler divergence -------------------------------------------------------------


def check_kl_reduction(reduction):
    if not (isinstance(reduction, str) and reduction in KL_REDUCTIONS):
        raise ValueError(f"{reduction!r} is not a valid value for reduction: expected 'mean', "
                         "'batchmean', 'sum' or 'none'")


def kl_div(input, target, *, reduction="mean", log_target=False):
    """The Kullback-Leibler divergence of input, log-probabilities (log_softmax's output),
    from target, probabilities (log-probabilities with log_target): t (log t - x) of each
    element, 0 where t = 0 (exp(t) (t - x) with log_target), reduced. reduction="batchmean"
    divides the sum by the batch size (the first dim), which gives the divergence of each
    distribution in the batch; "mean" divides by the number of elements, with PyTorch's
    warning. The gradient is -t for the input (-exp(t) with log_target), and log t + 1 - x
    for the target (exp(t) (t - x + 1) with log_target)."""
    check_kl_reduction(reduction)
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.", stacklevel=2)
    input, target = _operands("kl_div", input, target)
    x, t = input.data, target.data
    xp = _xp(x)
    if log_target:
        p = xp.exp(t)
        losses = p * (t - x)
        mass, target_slope = p, lambda: p * (t - x + 1)
    else:
        # t log t, 0 at t = 0 (PyTorch's xlogy(t, t)); nan for t < 0. log(0) and 0 * log(0),
        # masked out, must not warn: a target of probabilities often holds zeros
        with np.errstate(divide="ignore", invalid="ignore"):
            log_t = xp.log(t)
            losses = xp.where(t == 0, np.float32(0), t * log_t) - t * x
        mass, target_slope = t, lambda: log_t + 1 - x

    def backward(ge):
        d_input = _float32(-ge * mass, xp) if input._requires_grad else None
        d_target = _float32(ge * target_slope(), xp) if target._requires_grad else None
        return d_input, d_target

    divisor = None
    if reduction == "batchmean":
        reduction, divisor = "mean", (x.shape[0] if x.ndim else 1)
    return _reduced(losses, reduction, (input, target), backward, divisor)
