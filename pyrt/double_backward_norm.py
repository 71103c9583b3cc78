"""Differentiable backward formulas of the normalisations: layer_norm (and group_norm, which
runs it on rows) and batch_norm (and instance_norm, which runs it on one sample of n * c
channels), in training and in evaluation. pyrt.double_backward registers them; its docstring
says how formulas are found and what they return.

With xhat = (x - mean) * r, r = 1 / sqrt(var + eps), the statistics over `axes`, and
gx = g * weight, the gradients are

    dx = r * (gx - mean(gx) - xhat * mean(gx * xhat)),  dweight = sum(g * xhat),  dbias = sum(g)

(the sums over what weight and bias are broadcast along). xhat and r are recomputed with
Tensor ops so that their own derivatives flow back to x. The closures keep r but not eps, so
var + eps is the tensor whose value is 1 / r^2, as the kernel computed it, and whose
derivative is var's (eps is a constant): exact at every order. In evaluation the running
statistics are constants: dx = g * weight * r.
"""

from pyrt import functional as F
from pyrt.double_backward import _const, _need, _with_slope_of, sum_to

__all__ = []


def _standardised(x, axes, invstd):
    """(xhat, r): x standardised over `axes` by its own statistics, and 1 / sqrt(var + eps),
    both differentiable in x; `invstd` the array the kernel kept (one per slice)."""
    kept = F._reduced_shape(x.shape, axes, keepdims=True)
    centred = F.sub(x, F.mean(x, axes, True))
    var = F.mean(F.mul(centred, centred), axes, True)
    xp = F._xp(invstd)
    var_eps = _with_slope_of(xp.reshape(1 / (invstd.astype(xp.float64) ** 2), kept), var)
    r = F.pow(var_eps, -0.5)
    return F.mul(centred, r), r


def _input_gradient(gx, xhat, r, axes):
    mean_gx = F.mean(gx, axes, True)
    mean_gxhat = F.mean(F.mul(gx, xhat), axes, True)
    return F.mul(r, F.sub(F.sub(gx, mean_gx), F.mul(xhat, mean_gxhat)))


def _parents(node, env):
    """(input, weight or None, bias or None) of a normalisation's node, whose parents are the
    input and whichever of weight and bias were given."""
    x, rest = node._parents[0], list(node._parents[1:])
    weight = rest.pop(0) if env["weight"] is not None else None
    bias = rest.pop(0) if env["bias"] is not None else None
    return x, weight, bias


def _gradients(node, env, g, dx, xhat, weight_shape):
    """(dx, dweight, dbias) for the node's parents: the affine parts summed over what the
    weight and bias are broadcast along (`weight_shape`, the shape they broadcast as)."""
    _, weight, bias = _parents(node, env)
    out = [dx]
    if weight is not None:
        out.append(F.reshape(sum_to(F.mul(g, xhat), weight_shape), weight.shape)
                   if _need(weight) else None)
    if bias is not None:
        out.append(F.reshape(sum_to(g, weight_shape), bias.shape) if _need(bias) else None)
    return tuple(out)


def _layer_norm(node, g, env):
    x, weight, _ = _parents(node, env)
    shape = env["normalized_shape"]
    dims = 1 if isinstance(shape, int) else len(tuple(shape))
    axes = tuple(range(x.ndim - dims, x.ndim))
    weight_shape = x.shape[x.ndim - dims:]
    xhat, r = _standardised(x, axes, env["invstd"])
    dx = None
    if _need(x):
        gx = g if weight is None else F.mul(g, weight)
        dx = _input_gradient(gx, xhat, r, axes)
    return _gradients(node, env, g, dx, xhat, weight_shape)


def _batch_norm(node, g, env):
    x, weight, _ = _parents(node, env)
    axes = (0,) + tuple(range(2, x.ndim))
    per_channel = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    w = None if weight is None else F.reshape(weight, per_channel)
    gx = g if w is None else F.mul(g, w)
    if env["training"]:
        xhat, r = _standardised(x, axes, env["invstd"])
        dx = _input_gradient(gx, xhat, r, axes) if _need(x) else None
    else:  # the running statistics: constants
        r = _const(env["invstd"].reshape(per_channel))
        xhat = F.mul(F.sub(x, _const(env["mean"].reshape(per_channel))), r)
        dx = F.mul(gx, r) if _need(x) else None
    return _gradients(node, env, g, dx, xhat, per_channel)


def examples(leaf):
    """(tensor made by an op, formula for the closure it recorded) pairs."""
    from pyrt.layer_norm import layer_norm
    from pyrt.normalization import batch_norm

    x = leaf(2, 3, 4)
    yield layer_norm(x, (4,)), _layer_norm
    yield batch_norm(x, None, None, training=True), _batch_norm
