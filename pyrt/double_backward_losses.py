"""Differentiable backward formulas of the losses: cross_entropy and nll_loss on their general
path (class weights, label smoothing, ignore_index, [N, C, d1, ...] inputs, class
probabilities), binary_cross_entropy, binary_cross_entropy_with_logits (its fused mean, sum and
elements), kl_div (log_target or not), and the losses pyrt composes of differentiable ops
(soft_margin_loss, margin_ranking_loss, cosine_embedding_loss, poisson_nll_loss,
gaussian_nll_loss, cosine_similarity), whose reduction and norm clamp are identities.
pyrt.double_backward registers them; its docstring says how formulas are found and what they
return.

cross_entropy and nll_loss are recomputed with Tensor ops from the node's inputs (the rows of
log_softmax, weighed by a constant matrix that holds the picked class, the class weights, the
smoothing and the rows that count) and the recorded backward of that is the formula
(higher_order.gradients), as for a LinearChain. The elementwise losses write their gradient
directly: binary_cross_entropy's w (x - t) / max(x (1 - x), 1e-12) and w (log(1 - x) - log x),
kl_div's -t and log t + 1 - x (-exp(t) and exp(t) (t - x + 1) with log_target).
"""

import numpy as np

from pyrt import functional as F
from pyrt import shapes
from pyrt.double_backward import _const, _need, _passed, _with_slope_of, closure_vars

__all__ = ["ELEMENT_LOSSES"]


# ---- cross_entropy and nll_loss: a recomputation ---------------------------------------------


def _rows(t, classes):
    """Tensor t ([C], [N, C] or [N, C, d1, ...]) as rows [M, C], the classes moved last, as
    class_losses._Rows lays out its arrays."""
    if t.ndim == 1:
        return F.reshape(t, (1, classes))
    if t.ndim > 2:
        t = shapes.permute(t, (0,) + tuple(range(2, t.ndim)) + (1,))
    return F.reshape(t, (-1, classes))


def _reduced(losses, rows, reduction, divisor):
    """The rows' losses [M] as the op reduced them; `divisor` the mean's (0: a mean over no
    counted rows, whose gradient is 0, as the ordinary pass gives)."""
    if reduction == "none":
        return F.reshape(losses, rows.position_shape)
    total = F.sum(losses)
    if reduction == "sum":
        return total
    return F.mul(total, 1.0 / divisor if divisor else 0.0)


def _class_loss(node, env):
    """The loss of `_general` recomputed from the node's inputs with Tensor ops."""
    rows, smoothing = env["rows"], env["smoothing"]
    c = rows.classes
    input = node._parents[0]
    z = _rows(input, c)
    lp = F.log_softmax(z, 1) if env.get("logits", True) else z
    if "wt" in env:  # class probabilities
        wt = _const(env["wt"])
        if len(node._parents) > 1 and _need(node._parents[1]):
            t = F.add(F.mul(_rows(node._parents[1], c), 1.0 - smoothing), smoothing / c)
            w = env["w"]
            wt = t if w is None else F.mul(t, _const(w))
        losses = F.neg(F.sum(F.mul(lp, wt), 1))
        return _reduced(losses, rows, env["reduction"], float(env["m"]))
    # class indices: the loss of row n is sum_k lp[n, k] K[n, k], K constant
    xp = rows.xp
    m, w, picked = z.shape[0], env["w"], env["picked"]
    counted = env["counted"].astype(np.float64)
    k = xp.zeros((m, c), np.float64)
    k[xp.arange(m), picked] = -(1 - smoothing) * env["w_y"]
    if smoothing:
        spread = (xp.ones(c) if w is None else w.astype(np.float64)) * (smoothing / c)
        k -= counted[:, None] * spread[None, :]
    losses = F.sum(F.mul(lp, _const(k)), 1)
    return _reduced(losses, rows, env["reduction"], float(env["total"]))


def _class_losses(node, g, env):
    from pyrt.higher_order import gradients

    return gradients(_class_loss(node, env), g, node._parents)


# ---- binary cross-entropy with logits --------------------------------------------------------


def _bce_logits_mean(node, g, env):
    """The fused mean of a target that needs no gradient: (sigmoid(z) - t) / n, kept by the
    kernel, with the derivative of sigmoid(z) / n."""
    (z,) = node._parents
    grad = _with_slope_of(env["grad"], F.mul(F.sigmoid(z), 1.0 / max(z._data.size, 1)))
    return (F.mul(grad, g),)


def _bce_logits_gradients(z, t, ge):
    """d/dz = ge (sigmoid(z) - t), d/dt = -ge z."""
    return (F.mul(ge, F.sub(F.sigmoid(z), t)) if _need(z) else None,
            F.neg(F.mul(ge, z)) if t is not None and _need(t) else None)


def _bce_logits_target(node, g, env):
    """The fused mean with a target that requires grad: g / n at every element."""
    z, t = node._parents
    ge = F.mul(shapes.expand(g, z.shape), 1.0 / env["n"])
    return _bce_logits_gradients(z, t, ge)


def _bce_logits_elements(node, g, env):
    z, t = node._parents[0], node._parents[1] if len(node._parents) > 1 else None
    if t is None:
        t = _const(env["t"])
    return _bce_logits_gradients(z, t, g)[:len(node._parents)]


def _zeros_of_nothing(node, g, env):
    """The sum of no elements: zero gradients, constants."""
    return tuple(_const(F._xp(g._data).zeros(t.shape, np.float32)) for t in node._parents)


# ---- elementwise losses: the gradient of each element's loss ge -------------------------------


def _bce(node, ge, backward):
    """-w (t log x + (1 - t) log(1 - x)): w (x - t) / max(x (1 - x), 1e-12) for x,
    w (log(1 - x) - log x) for t."""
    w = closure_vars(backward)["w"]
    x, t = node._parents
    if w is not None:
        ge = F.mul(ge, _const(w))
    d_input = d_target = None
    if _need(x):
        d_input = F.div(F.mul(ge, F.sub(x, t)),
                        F.clamp(F.mul(x, F.sub(1.0, x)), 1e-12, None))
    if _need(t):
        from pyrt.pointwise import log1p

        d_target = F.mul(ge, F.sub(log1p(F.neg(x)), F.log(x)))
    return d_input, d_target


def _kl_div(node, ge, backward):
    """t (log t - x): -t for x, log t + 1 - x for t; with log_target exp(t) (t - x):
    -exp(t) for x, exp(t) (t - x + 1) for t."""
    x, t = node._parents
    log_target = "p" in closure_vars(closure_vars(backward)["target_slope"])
    mass = F.exp(t) if log_target else t
    d_input = F.neg(F.mul(ge, mass)) if _need(x) else None
    d_target = None
    if _need(t):
        slope = (F.mul(mass, F.add(F.sub(t, x), 1.0)) if log_target
                 else F.sub(F.add(F.log(t), 1.0), x))
        d_target = F.mul(ge, slope)
    return d_input, d_target


def _composed(node, ge, backward):
    """loss_functions._reduce: the losses' tensor itself is the input."""
    return (ge,)


# the elementwise losses by the function that made their backward closure; the difference
# losses (l1, smooth l1, huber) are double_backward_reductions' own
ELEMENT_LOSSES = {
    "binary_cross_entropy": _bce,
    "kl_div": _kl_div,
    "_reduce": _composed,
}


def examples(leaf):
    """(tensor made by an op, formula for the closure it recorded) pairs."""
    from pyrt import loss_functions
    from pyrt.double_backward_reductions import _unreduced_loss
    from pyrt.vector_functions import _at_least

    x = leaf(3, 4)
    Tensor = F._tensor()
    probabilities = Tensor(np.full((3, 4), 0.25, np.float32))
    yield F.binary_cross_entropy_with_logits(x, probabilities), _bce_logits_mean
    yield F.binary_cross_entropy_with_logits(x, leaf(3, 4)), _bce_logits_target
    yield F.binary_cross_entropy_with_logits(x, probabilities, reduction="none"), \
        _bce_logits_elements
    yield loss_functions.binary_cross_entropy(F.sigmoid(x), probabilities,
                                              reduction="none"), _unreduced_loss
    yield loss_functions.kl_div(x, probabilities, reduction="none"), _unreduced_loss
    yield _at_least(x, 1e-8), _passed


def found():
    """(function, closure name, formula) of closures found by name."""
    from pyrt import class_losses

    return ((class_losses._general, "backward", _class_losses),
            (F._summed, "<lambda>", _zeros_of_nothing))
