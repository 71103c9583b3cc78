"""Losses with PyTorch's names, arguments and gradients: between an input and a target of the
same shape, l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy (of probabilities),
kl_div, soft_margin_loss, multilabel_soft_margin_loss, hinge_embedding_loss, poisson_nll_loss
and gaussian_nll_loss; between pairs or triples of inputs, margin_ranking_loss,
cosine_embedding_loss and triplet_margin_loss; of class scores against class indices,
multi_margin_loss and multilabel_margin_loss. (cross_entropy, nll_loss,
binary_cross_entropy_with_logits and mse_loss, which have fused kernels, are in
pyrt.functional.)

Each loss computes the loss of every element with the array ops of the input's backend (NumPy,
or CuPy on the GPU) and reduces it as `reduction` asks (``_reduced``): "none" keeps it, "sum"
adds it up, "mean" averages it over the elements (nan for none, as in PyTorch). Backward
spreads the loss's gradient over the elements, divided as the loss was, and multiplies it by
each element's local derivatives, written beside the loss. A target that requires grad gets
its gradient too.

The losses that PyTorch writes as a composition of tensor ops (the margin, embedding and
likelihood losses) are written here as the same composition of pyrt's differentiable ops, so
that their gradients, broadcasting included, are those of the composition; ``_reduce`` then
reduces the tensor of losses as ``_reduced`` does.
"""

import math
import numbers
import warnings

import numpy as np

from pyrt.activations import _float32, _float_input, logsigmoid
from pyrt.functional import (
    _as_tensor,
    _check_reduction,
    _make,
    _not_a_tensor,
    _real_number,
    _tensor,
    _xp,
)
from pyrt.ops._checks import F32, I64
from pyrt.pointwise import broadcast_shape, minimum, sign_of
from pyrt.selection import where
from pyrt.vector_functions import _at_least, pairwise_distance

__all__ = ["binary_cross_entropy", "cosine_embedding_loss", "gaussian_nll_loss",
           "hinge_embedding_loss", "huber_loss", "kl_div", "l1_loss", "margin_ranking_loss",
           "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
           "poisson_nll_loss", "smooth_l1_loss", "soft_margin_loss", "triplet_margin_loss"]

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
        if t._data.dtype != F32:
            raise TypeError(f"{op}: {name} must be a float32 tensor, got {t._data.dtype}")
    if _xp(input._data) is not _xp(target._data):
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
    xp = _xp(input._data)
    d = input._data - target._data
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
    xp = _xp(input._data)
    b = np.float32(beta)
    d = input._data - target._data
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
    xp = _xp(input._data)
    c = np.float32(delta)
    d = input._data - target._data
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
    w = weight._data
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
    x, t = input._data, target._data
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
    x, t = input._data, target._data
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


# ---- losses composed of differentiable ops ---------------------------------------------------


def _tensors(op, **named):
    """The tensors of `named` (argument name -> value), or the TypeError naming the first
    that is not one."""
    Tensor = _tensor()
    for name, value in named.items():
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(value).__name__}")
    return tuple(named.values())


def _broadcast(op, *tensors):
    """PyTorch's RuntimeError unless the shapes of `tensors` broadcast together."""
    shape = ()
    for t in tensors:
        try:
            shape = broadcast_shape(shape, t.shape)
        except RuntimeError as exc:
            raise RuntimeError(f"{op}: {exc}") from None


def _reduce(losses, reduction):
    """A tensor of losses computed by differentiable ops, as `reduction` asks (see
    ``_reduced``: the mean of no losses is nan)."""
    if reduction == "none":
        return losses
    xp = _xp(losses._data)
    return _reduced(losses._data, reduction, (losses,), lambda ge: (_float32(ge, xp),))


def margin_ranking_loss(input1, input2, target, margin=0.0, *, reduction="mean"):
    """max(0, -y (x1 - x2) + margin) of each element, y = target in {1, -1}: whether x1 should
    rank above x2 (1) or below (-1). The three tensors have the same number of dims and
    broadcast together."""
    _check_reduction(reduction)
    m = _real_number(margin, "margin_ranking_loss: margin")
    input1, input2, target = _tensors("margin_ranking_loss", input1=input1, input2=input2,
                                      target=target)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.shape}, input2: {input2.shape}, "
                           f"target: {target.shape} ")
    _broadcast("margin_ranking_loss", input1, input2, target)
    return _reduce((-target * (input1 - input2) + m).clamp(min=0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, *, reduction="mean"):
    """x where the target is 1, max(0, margin - x) where it is -1 (input x: a distance, small
    for similar pairs), as PyTorch's two masks (a target of neither value adds both terms)."""
    _check_reduction(reduction)
    m = _real_number(margin, "hinge_embedding_loss: margin")
    input, target = _tensors("hinge_embedding_loss", input=input, target=target)
    _broadcast("hinge_embedding_loss", input, target)
    losses = (where(target != 1, (m - input).clamp(min=0), 0.0)
              + where(target != -1, input, 0.0))
    return _reduce(losses, reduction)


def _broadcasts_to_input(op, input, target):
    """RuntimeError unless `target` broadcasts to the shape of `input` (PyTorch writes these
    losses to a tensor of the input's shape)."""
    shape = broadcast_shape(input.shape, target.shape)
    if shape != input.shape:
        raise RuntimeError(f"{op}: output with shape {list(input.shape)} doesn't match the "
                           f"broadcast shape {list(shape)}")


def soft_margin_loss(input, target, *, reduction="mean"):
    """log(1 + exp(-y x)) of each element, y = target in {1, -1}: the logistic loss of a
    two-class score x. Computed as -logsigmoid(y x), which neither overflows nor loses the
    tail."""
    _check_reduction(reduction)
    input, target = _tensors("soft_margin_loss", input=input, target=target)
    _broadcasts_to_input("soft_margin_loss", input, target)
    if target._requires_grad:
        raise RuntimeError("The function 'soft_margin_loss' is not differentiable with respect "
                           "to argument 'target'. This input cannot have requires_grad True.")
    return _reduce(-logsigmoid(input * target), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, *, reduction="mean"):
    """For scores x [..., C] of C independent classes and targets y in {0, 1}:
    -(y logsigmoid(x) + (1 - y) logsigmoid(-x)) of each class, times `weight` (broadcast;
    default 1), averaged over the classes: one loss per sample, then reduced."""
    _check_reduction(reduction)
    input, target = _tensors("multilabel_soft_margin_loss", input=input, target=target)
    _broadcast("multilabel_soft_margin_loss", input, target)
    if input.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    losses = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        losses = losses * _tensors("multilabel_soft_margin_loss", weight=weight)[0]
    classes = input.ndim - 1
    return _reduce(losses.sum(classes) / input.shape[classes], reduction)


_COSINE_EPSILON = 1e-12  # PyTorch's floor added to each squared norm


def cosine_embedding_loss(input1, input2, target, margin=0.0, *, reduction="mean"):
    """With c the cosine of the vectors x1 and x2 (rows of [N, D] inputs, target [N]; or 1-D
    inputs, target 0-d): 1 - c where the target is 1 (the pair should point the same way),
    max(0, c - margin) where it is -1. c = x1.x2 / sqrt((|x1|^2 + 1e-12) (|x2|^2 + 1e-12)),
    as PyTorch computes it."""
    _check_reduction(reduction)
    m = _real_number(margin, "cosine_embedding_loss: margin")
    input1, input2, target = _tensors("cosine_embedding_loss", input1=input1, input2=input2,
                                      target=target)
    dim = target.ndim
    if dim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if not input1.ndim == input2.ndim == dim + 1:
        raise RuntimeError(f"{dim}D target tensor expects {dim + 1}D input tensors, but found "
                           f"inputs with sizes {list(input1.shape)} and {list(input2.shape)}.")
    dot = (input1 * input2).sum(dim)
    squares1 = (input1 * input1).sum(dim) + _COSINE_EPSILON
    squares2 = (input2 * input2).sum(dim) + _COSINE_EPSILON
    cos = dot / (squares1 * squares2).sqrt()
    losses = where(target == 1, 1 - cos, 0.0) + where(target == -1, (cos - m).clamp(min=0), 0.0)
    return _reduce(losses, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, *,
                        reduction="mean"):
    """max(0, margin + d(a, p) - d(a, n)), d the p-norm distance (pairwise_distance, with its
    eps) over the last dim: the anchor should lie nearer the positive than the negative by
    the margin (> 0). swap: d(a, n) is replaced by d(p, n) where that is smaller."""
    return triplet_loss("triplet_margin_loss", "triplet_margin_loss: margin", anchor, positive,
                        negative, lambda a, b: pairwise_distance(a, b, p, eps), margin, swap,
                        reduction)


def triplet_loss(name, margin_name, anchor, positive, negative, distance, margin, swap,
                 reduction):
    """max(0, margin + distance(a, p) - distance(a, n)) of each triple, reduced: what
    triplet_margin_loss and triplet_margin_with_distance_loss compute, with `name` and
    `margin_name` in their errors."""
    _check_reduction(reduction)
    m = _real_number(margin, margin_name)
    if m <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    anchor, positive, negative = _tensors(name, anchor=anchor, positive=positive,
                                          negative=negative)
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {anchor.ndim}D, "
                           f"positive {positive.ndim}D, and negative {negative.ndim}D inputs")
    near = distance(anchor, positive)
    far = distance(anchor, negative)
    if swap:
        far = minimum(far, distance(positive, negative))
    return _reduce((near + m - far).clamp(min=0), reduction)


_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def poisson_nll_loss(input, target, log_input=True, full=False, *, eps=1e-8,
                     reduction="mean"):
    """The negative log-likelihood of counts `target` under Poisson distributions of rate r,
    less the terms constant in r: exp(x) - t x with log_input (input x = log r), else
    r - t log(r + eps). full adds Stirling's approximation of log(t!),
    t log t - t + log(2 pi t) / 2, where t > 1."""
    _check_reduction(reduction)
    e = _real_number(eps, "poisson_nll_loss: eps")
    input, target = _tensors("poisson_nll_loss", input=input, target=target)
    _broadcast("poisson_nll_loss", input, target)
    if log_input:
        losses = input.exp() - target * input
    else:
        losses = input - target * (input + e).log()
    if full:
        large = target > 1
        # the other targets are replaced by 1 before the logs, so that log(0) never arises
        t = where(large, target, 1.0)
        stirling = t * t.log() - t + 0.5 * (t * (2 * math.pi)).log()
        losses = losses + where(large, stirling, 0.0)
    return _reduce(losses, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """The negative log-likelihood of `target` under normal distributions of mean `input` and
    variance `var`, less a constant: (log v + (x - t)^2 / v) / 2, plus log(2 pi) / 2 with
    full. var (>= 0) has the input's shape, or that shape without its last dim or with one dim
    of size 1 (one variance shared along it), or is a number. It is raised to eps where it is
    below, the gradient passing through unchanged, as PyTorch's clamp outside autograd."""
    input, target = _tensors("gaussian_nll_loss", input=input, target=target)
    _broadcast("gaussian_nll_loss", input, target)
    if isinstance(var, numbers.Real) and not isinstance(var, bool):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = _tensor()(_xp(input._data).full(input.shape, var, F32))
    else:
        (var,) = _tensors("gaussian_nll_loss", var=var)
        if bool((var._data < 0).any()):
            raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and sum(
                v for i, v in zip(input.shape, var.shape) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    _check_reduction(reduction)
    var = _at_least(var, _real_number(eps, "gaussian_nll_loss: eps"))
    d = input - target
    losses = 0.5 * (var.log() + d * d / var)
    if full:
        losses = losses + _HALF_LOG_2PI
    return _reduce(losses, reduction)


# ---- margin losses of class scores against class indices -------------------------------------


def _class_scores(op, input):
    """(scores [nframe, dim], array module) of `input`: a vector of dim class scores (one
    sample; a 0-d tensor is one score) or a matrix [nframe, dim] of them, dim > 0."""
    x, xp = _float_input(op, input)
    if not ((x.ndim == 2 and x.shape[1]) or (x.ndim == 1 and x.shape[0]) or x.ndim == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(x.shape)}")
    nframe = x.shape[0] if x.ndim == 2 else 1
    return x.reshape(nframe, x.shape[-1] if x.ndim else 1), xp


def _labels(target, xp):
    """The int64 array of `target`, a Tensor of class indices on the scores' device."""
    if not isinstance(target, _tensor()):
        raise TypeError(f"target must be a Tensor of class indices, got "
                        f"{type(target).__name__}")
    y = target._data
    if y.dtype != I64:
        raise RuntimeError(f"expected scalar type Long but found {y.dtype}")
    if _xp(y) is not xp:
        raise RuntimeError(f"target must be on the input's device, got {target.device}")
    return y


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, *, reduction="mean"):
    """The multi-class hinge loss of scores x [N, C] (or [C]) against class indices y [N]
    (or 0-d): sum over the classes j != y of max(0, margin - x[y] + x[j])^p, p 1 or 2, times
    weight[y] (default 1), divided by C, for each sample. The gradient goes to x[j] for each
    violating class and, with the opposite sign, to x[y]. A class index outside [0, C) is a
    RuntimeError on the CPU and gives nan on the GPU."""
    _check_reduction(reduction)
    if isinstance(p, bool) or p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    m = np.float32(_real_number(margin, "multi_margin_loss: margin"))
    if weight is not None:
        (weight,) = _tensors("multi_margin_loss", weight=weight)
        if weight.ndim != 1:
            raise ValueError("weight must be one-dimensional")
    x, xp = _class_scores("multi_margin_loss", input)
    nframe, dim = x.shape
    y = _labels(target, xp)
    if not (y.ndim <= 1 and y.size == nframe):
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to "
                           f"the number of input samples (batch size). Expected target size "
                           f"[{nframe}], but got {list(y.shape)}. Input has shape "
                           f"{list(input.shape)}.")
    scale = None
    if weight is not None:
        if weight.numel() != dim:
            raise RuntimeError(f"inconsistent weight size, expected {dim} but got "
                               f"{list(weight.shape)}")
        if weight._requires_grad:
            raise RuntimeError("The function 'multi_margin_loss' is not differentiable with "
                               "respect to argument 'weight'. This input cannot have "
                               "requires_grad True.")
        if weight._data.dtype != F32 or _xp(weight._data) is not xp:
            raise TypeError("multi_margin_loss: weight must be a float32 tensor on the input's "
                            "device")
    y = y.reshape(nframe)
    inside = (y >= 0) & (y < dim)
    if xp is np and not inside.all():
        raise RuntimeError("target out of range")
    y = xp.where(inside, y, 0)
    rows = xp.arange(nframe)
    # z[i, j] = margin - x[i, y_i] + x[i, j]: the amount by which class j violates the margin
    z = m - x[rows, y][:, None] + x
    active = (z > 0) & (xp.arange(dim) != y[:, None])
    h = xp.where(active, z if p == 1 else z * z, np.float32(0))
    if weight is not None:
        scale = weight._data[y][:, None]
        h = h * scale
    losses = h.sum(axis=1, dtype=F32) / np.float32(dim)
    if xp is not np:  # a class index out of range: nan, as nll_loss gives on the GPU
        losses = xp.where(inside, losses, np.float32(np.nan))
    shape = () if target.ndim == 0 else (nframe,)

    def backward(ge):
        dh = xp.where(active, np.float32(1) if p == 1 else 2 * z, np.float32(0))
        if scale is not None:
            dh = dh * scale
        dh = dh * (ge.reshape(nframe, 1) / np.float32(dim))
        dh[rows, y] -= dh.sum(axis=1)  # (active is False at y: dh[i, y_i] held 0)
        return (_float32(dh.reshape(input.shape), xp),)

    return _reduced(losses.reshape(shape), reduction, (input,), backward)


def multilabel_margin_loss(input, target, *, reduction="mean"):
    """The multi-label hinge loss of scores x [N, C] (or [C]) against target [N, C] (or [C]):
    each row of the target lists the sample's classes, ended by the first -1 (or the row's
    end). For each listed class j and each class i not listed, max(0, 1 - (x[j] - x[i])),
    summed and divided by C, per sample. The pairs are formed at once, an [N, C, C] array: the
    loss suits tens or hundreds of classes, not many thousands. A class index outside
    [-1, C) is a RuntimeError on the CPU and gives nan on the GPU."""
    _check_reduction(reduction)
    x, xp = _class_scores("multilabel_margin_loss", input)
    nframe, dim = x.shape
    y = _labels(target, xp)
    if not ((input.ndim <= 1 and y.ndim <= 1 and y.size == dim)
            or (input.ndim == 2 and y.shape == x.shape)):
        raise RuntimeError(f"inconsistent target size: {list(y.shape)} for input of size: "
                           f"{list(input.shape)}")
    y = y.reshape(nframe, dim)
    inside = ((y >= -1) & (y < dim)).all(axis=1)
    if xp is np and not inside.all():
        raise RuntimeError("argument #2 'target' is out of range")
    # the listed slots: those before the first -1 of each row
    listed = xp.cumsum(y == -1, axis=1) == 0
    classes = xp.where(listed & (y >= 0) & (y < dim), y, 0)
    # one_hot[i, s, c]: slot s of row i lists class c
    one_hot = (classes[:, :, None] == xp.arange(dim)) & listed[:, :, None]
    is_target = one_hot.any(axis=1)
    picked = xp.take_along_axis(x, classes, axis=1)
    # z[i, s, c] = 1 - x[i, class of slot s] + x[i, c], for a listed slot and an unlisted c
    z = 1 - picked[:, :, None] + x[:, None, :]
    active = listed[:, :, None] & ~is_target[:, None, :] & (z > 0)
    losses = xp.where(active, z, np.float32(0)).sum(axis=(1, 2), dtype=F32) / np.float32(dim)
    if xp is not np:  # a class index out of range: nan, as nll_loss gives on the GPU
        losses = xp.where(inside, losses, np.float32(np.nan))
    shape = () if input.ndim <= 1 else (nframe,)

    def backward(ge):
        dz = active * (ge.reshape(nframe, 1, 1) / np.float32(dim))
        # +dz to each unlisted class c, -dz to the class of each slot s
        dx = dz.sum(axis=1) - (dz.sum(axis=2)[:, :, None] * one_hot).sum(axis=1)
        return (_float32(dx.reshape(input.shape), xp),)

    return _reduced(losses.reshape(shape), reduction, (input,), backward)
