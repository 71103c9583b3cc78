"""Differentiable backward formulas of reductions, scans and gathers: max and min (whole,
along a dim, over dims), amax and amin, logsumexp, std, cumsum, index_select and
gather, and the difference losses l1_loss, smooth_l1_loss and huber_loss. pyrt.double_backward
registers them; its docstring says how formulas are found and what they return.

The extremes route g to the elements that won (shared among ties, or to the first maximum
along a dim, as the ordinary pass routes it): a constant weight per element times g spread
back over the reduced dims, so their second derivative through x is 0, as PyTorch's. The
gathers' gradients are scatters (double_backward.index_add), whose gradients gather again.
"""

from pyrt import functional as F
from pyrt.double_backward import (
    _const,
    _expand_reduced,
    _refuse,
    closure_vars,
    index_add,
)

__all__ = []


def _spread(g, shape, axis, weights):
    """g spread back over the reduced `axis` of a tensor of `shape`, times constant weights."""
    return F.mul(_expand_reduced(g, shape, axis), _const(weights))


def _max(node, g, env):
    """functional.max's three routes, the weights each gives (min is max of -x)."""
    x, axis, out = env["x"], env["axis"], env["out"]
    xd = x._data
    xp = F._xp(xd)
    if axis is None or isinstance(axis, tuple):
        kept = F._reduced_shape(x.shape, axis, keepdims=True)
        m = out.reshape(kept)
        ties = (xd == m) | (xp.isnan(xd) & xp.isnan(m))
        weights = ties / ties.sum(axis=axis, keepdims=True, dtype=xp.float32)
    else:
        from pyrt import ops

        weights = xp.zeros(x.shape, xp.float32)
        xp.put_along_axis(weights, ops.argmax(xd, axis, keepdims=True), 1.0, axis=axis)
    return (_spread(g, x.shape, axis, weights),)


def _extreme(node, g, env):
    xd, out, axis = env["xd"], env["out"], env["axis"]
    xp = F._xp(xd)
    kept = F._reduced_shape(xd.shape, axis, keepdims=True)
    ties = xd == out.reshape(kept)
    with_ties = ties / ties.sum(axis=axis, keepdims=True, dtype=xp.float32)
    return (_spread(g, xd.shape, axis, with_ties),)


def _logsumexp(node, g, env):
    """g * softmax of each reduced slice: exp(x - out), out the node itself."""
    (x,) = node._parents
    kept = env["kept"].shape
    out = F.reshape(node, kept)
    return (F.mul(F.reshape(g, kept), F.exp(F.sub(x, out))),)


def _std(node, g, env):
    """std = sqrt(var): g / (2 std), 0 where std is 0 (as the ordinary pass)."""
    flat = _const(env["out"] == 0)
    return (F.div(F.mul(g, F.sub(1.0, flat)), F.mul(F.add(node, flat), 2.0)),)


def _cumsum(node, g, env):
    """The running sum of g from the far end: the total minus the running sum, plus g."""
    at, shape = env["at"], env["line"].shape
    gl = F.reshape(g, shape)
    back = F.add(F.sub(_expand_reduced(F.sum(gl, at), shape, at), _cumsum_of(gl, at)), gl)
    return (F.reshape(back, env["xd"].shape),)


def _cumsum_of(t, at):
    from pyrt.reductions import cumsum

    return cumsum(t, at)


def _index_select(node, g, env):
    at, places, line = env["at"], env["places"], env["line"]
    (x,) = node._parents
    gathered = F.reshape(g, env["out"].shape)
    index = (slice(None),) * at + (places,)
    return (F.reshape(index_add(gathered, line.shape, index), x.shape),)


def _gather(node, g, env):
    at, places, line = env["at"], env["places"], env["line"]
    xp = F._xp(places)
    rank = places.ndim
    where = [xp.arange(n).reshape((1,) * d + (n,) + (1,) * (rank - d - 1))
             for d, n in enumerate(places.shape)]
    where[at] = places
    spread = index_add(F.reshape(g, places.shape), line.shape, tuple(where))
    return (F.reshape(spread, env["xd"].shape),)


# ---- difference losses: l1, smooth l1, huber ------------------------------------------------


def _l1_slope(d, cells):
    return _const(F._xp(cells["d"]).sign(cells["d"]))


def _smooth_l1_slope(d, cells):
    """d / beta where |d| < beta, else sign(d): the kernel's values, d / beta's slope."""
    near = cells["near"]
    return F.add(F.div(F.mul(d, _const(near)), float(cells["b"])),
                 _const(F._xp(near).sign(cells["d"]) * ~near))


def _huber_slope(d, cells):
    """d where |d| < delta, else delta sign(d)."""
    near = cells["near"]
    return F.add(F.mul(d, _const(near)),
                 _const(F._xp(near).sign(cells["d"]) * ~near * cells["c"]))


# the loss functions whose closure `slope` gives the derivative at d = input - target
_SLOPES = {"l1_loss": _l1_slope, "smooth_l1_loss": _smooth_l1_slope,
           "huber_loss": _huber_slope}


def _element_losses(node, ge, backward):
    """The gradients of input and target from ge, the gradient of each element's loss, for a
    difference loss's backward closure; other losses are refused by name."""
    from pyrt.double_backward import op_name
    from pyrt.double_backward_losses import ELEMENT_LOSSES

    owner = ELEMENT_LOSSES.get(backward.__qualname__.split(".")[0])
    if owner is not None:
        return owner(node, ge, backward)
    slope = closure_vars(backward).get("slope")
    name = slope.__qualname__.split(".")[0] if slope is not None else None
    if name not in _SLOPES:
        _refuse(op_name(slope if slope is not None else backward))
    input, target = node._parents
    d_input = F.mul(ge, _SLOPES[name](F.sub(input, target), closure_vars(slope)))
    return (d_input if input._requires_grad else None,
            F.neg(d_input) if target._requires_grad else None)


def _reduced_loss(node, g, env):
    """A reduced loss: g / divisor at every element, then the elements' backward."""
    ge = F.div(_expand_reduced(g, env["shape"], None), float(env["per"]))
    return _element_losses(node, ge, env["backward"])


def _unreduced_loss(node, g, env):
    """reduction="none": the elements' backward itself is the closure."""
    return _element_losses(node, g, node._backward)


def examples(leaf):
    """(tensor made by an op, formula for the closure it recorded) pairs."""
    from pyrt import loss_functions, reductions, shapes

    x = leaf(3, 4)
    indices = F._tensor()(F._xp(x._data).asarray([[0], [1], [2]]))
    yield F.max(x, 1), _max
    yield reductions.amax(x, 1), _extreme
    yield reductions.logsumexp(x, 1), _logsumexp
    yield x.std(), _std
    yield reductions.cumsum(x, 1), _cumsum
    yield shapes.index_select(x, 1, indices.reshape(-1)), _index_select
    yield shapes.gather(x, 1, indices), _gather
    yield loss_functions.l1_loss(x, x.detach()), _reduced_loss
    yield loss_functions.l1_loss(x, x.detach(), reduction="none"), _unreduced_loss
