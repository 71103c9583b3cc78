"""Differentiable backward formulas of the ops that select elements by order or write them at
indexed places: sort, msort and topk (and quantile, which sorts), median and nanmedian (with
and without dim), the scatter family (scatter, scatter_add, scatter_reduce with "sum",
"mean", "amax" and "amin", index_reduce through it), index_add, index_copy, index_fill,
index_put, masked_scatter, put, take, and grid_sample with respect to its input.
pyrt.double_backward registers them; its docstring says how formulas are found.

Every closure here is linear in the output gradient g, with coefficients that are piecewise
constant in the inputs (which element sorted where, which place was written, which element
equalled the maximum): away from ties, the first gradient's derivative with respect to the
inputs is zero and only its derivative with respect to g remains. Each gradient is therefore
one of three linear maps of g, recorded so that it can be differentiated again:

- a diagonal map, g times a constant mask: the closure applied to ones gives the mask;
- a gather of g at places with weights, for a source tensor: its adjoint adds the weighted
  elements back at those places (pyrt.double_backward_shapes.linear_map records the pair);
- any other linear map with its adjoint written out (sort's take_along_axis and its put,
  take's add.at and its gather, grid_sample's transposed interpolation and the interpolation).

scatter_reduce with "prod" has a first gradient that is not linear in g alone (the product
of the other elements), and grid_sample's gradient with respect to grid moves with the
interpolation weights: both still refuse create_graph=True.
"""

import numpy as np

from pyrt import functional as F
from pyrt.double_backward import CLOSURE, _const, _expand_reduced, _need, _refuse, sum_to
from pyrt.double_backward_shapes import linear_map
from pyrt.ops._checks import F32

__all__ = []


def _ones_response(node, g, env):
    """The closure applied to a gradient of ones: each diagonal map's mask, each gather's
    weights (computed once per formula call)."""
    xp = F._xp(g._data)
    ones = xp.ones(node.shape, F32)
    return ones, env[CLOSURE](ones)


def _diagonal(g, mask, ones):
    """g times the constant `mask`; g itself where the closure passed g through."""
    return g if mask is ones else F.mul(g, _const(mask))


def _part(g, env, k, adjoint):
    """Gradient k of the closure as a linear map of g, with `adjoint` as its backward."""
    closure = env[CLOSURE]
    return linear_map(g, lambda a: closure(a)[k], adjoint)


# ---- sort, topk, median, nanmedian -------------------------------------------------------------


def _taken(node, g, env):
    """sort, msort, topk: dx puts g where each value came from; its adjoint takes them."""
    xp, order, at, line = F._xp(g._data), env["order"], env["at"], env["line"]
    shape = node.shape
    return (_part(g, env, 0, lambda h: xp.take_along_axis(
        h.reshape(line.shape), order, axis=at).reshape(shape)),)


def _median_along(node, g, env):
    """median with dim: as sort, at the median's index."""
    xp, index, at, line = F._xp(g._data), env["index"], env["at"], env["line"]
    shape = node.shape
    return (_part(g, env, 0, lambda h: xp.take_along_axis(
        h.reshape(line.shape), index, axis=at).reshape(shape)),)


def _median_all(node, g, env):
    """median and nanmedian of all elements: g shared evenly among the elements equal to the
    value, a constant share of the expanded g."""
    shape = env["xd"].shape
    xp = F._xp(g._data)
    share = env[CLOSURE](xp.ones((), F32))[0]
    return (F.mul(_expand_reduced(g, shape, None), _const(share)),)


# ---- the scatter family: a diagonal map to input, a weighted gather to src --------------------


def _gathered(g, env, weights, offsets, covered, source_shape):
    """The gradient of a source whose covered elements were sent to `offsets` of the flat
    input: g gathered there times `weights`, recorded with its adjoint (the weighted elements
    added back at the places)."""
    xp = F._xp(g._data)
    size, shape = g._data.size, g.shape

    def adjoint(h):
        out = xp.zeros(size, F32)
        xp.add.at(out, offsets, h.reshape(source_shape or (1,))[covered].reshape(-1) * weights)
        return out.reshape(shape)

    return _part(g, env, 1, adjoint)


def _scatter(node, g, env):
    """scatter (of src or of a value) and scatter_reduce ("sum", "mean", "amax", "amin"; its
    masks of the elements equal to the result taken as constants)."""
    if env.get("reduce") == "prod":
        _refuse("ScatterReduceBackward0", " with reduce='prod' (its gradient is the product "
                "of the other elements, not linear in the output gradient)")
    ones, response = _ones_response(node, g, env)
    input = node._parents[0]
    dx = _diagonal(g, response[0], ones) if _need(input) else None
    if len(node._parents) == 1:
        return (dx,)
    src = node._parents[1]
    ds = None
    if _need(src):
        covered = env["covered"]
        weights = response[1].reshape(src.shape or (1,))[covered].reshape(-1)
        ds = _gathered(g, env, weights, env["offsets"], covered, src.shape)
    return dx, ds


def _along_dim(node, g, env, scale):
    """index_add and index_copy: source's slices i were sent to input's slices index[i]
    along dim; its gradient takes g's slices there (times `scale`), the adjoint adds back."""
    xp, idx, at, line = F._xp(g._data), env["idx"], env["at"], env["line"]
    ones, response = _ones_response(node, g, env)
    input, source = node._parents
    dx = _diagonal(g, response[0], ones) if _need(input) else None
    ds = None
    if _need(source):
        slices = source.shape or (1,)
        shape = node.shape

        def adjoint(h):
            out = xp.zeros(line.shape, F32)
            xp.add.at(xp.moveaxis(out, at, 0), idx,
                      xp.moveaxis(h.reshape(slices), at, 0) * F32.type(scale))
            return out.reshape(shape)

        ds = _part(g, env, 1, adjoint)
    return dx, ds


def _index_add(node, g, env):
    return _along_dim(node, g, env, env["alpha"])


def _index_copy(node, g, env):
    return _along_dim(node, g, env, 1.0)


def _index_fill(node, g, env):
    """index_fill: g outside the filled slices; their sum to a value tensor."""
    ones, response = _ones_response(node, g, env)
    input = node._parents[0]
    dx = _diagonal(g, response[0], ones) if _need(input) else None
    if len(node._parents) == 1:
        return (dx,)
    filled = F._xp(g._data).broadcast_to(env["hit"], env["line"].shape).reshape(node.shape)
    return dx, F.sum(F.mul(g, _const(filled))) if _need(node._parents[1]) else None


def _index_put(node, g, env):
    """index_put: g outside the positions (everywhere with accumulate); g at them to values,
    summed back to its shape."""
    ones, response = _ones_response(node, g, env)
    input, values = node._parents
    dx = _diagonal(g, response[0], ones) if _need(input) else None
    dv = sum_to(F.index_rows(g, env["key"]), values.shape) if _need(values) else None
    return dx, dv


def _masked_scatter(node, g, env):
    """masked_scatter: g where the mask does not hold to input (summed back to its shape);
    g at the places it does to source's first elements, whose adjoint writes them back."""
    xp, places, count = F._xp(g._data), env["places"], env["count"]
    input, source = node._parents
    dx = ds = None
    if _need(input):
        dx = sum_to(F.mul(g, _const(~places)), input.shape)
    if _need(source):
        shape = node.shape

        def adjoint(h):
            out = xp.zeros(shape, F32)
            out[places] = h.reshape(-1)[:count]
            return out

        ds = _part(g, env, 1, adjoint)
    return dx, ds


def _put(node, g, env):
    """put: g outside the positions (everywhere with accumulate); g at them to source."""
    xp, places = F._xp(g._data), env["places"]
    ones, response = _ones_response(node, g, env)
    input, source = node._parents
    dx = _diagonal(g, response[0], ones) if _need(input) else None
    ds = None
    if _need(source):
        size, shape = g._data.size, node.shape

        def adjoint(h):
            out = xp.zeros(size, F32)
            xp.add.at(out, places, h.reshape(-1))
            return out.reshape(shape)

        ds = _part(g, env, 1, adjoint)
    return dx, ds


def _take(node, g, env):
    """take: g added back at the flat places; its adjoint gathers from them."""
    places, shape = env["places"], node.shape
    return (_part(g, env, 0, lambda h: h.reshape(-1)[places.reshape(-1)].reshape(shape)),)


# ---- grid_sample -------------------------------------------------------------------------------


def _grid_sample(node, g, env):
    """grid_sample with respect to input: the transposed interpolation of g, whose adjoint
    is the interpolation itself, each tap's pixels times its weights."""
    if _need(node._parents[1]):
        _refuse("GridSampleBackward0", " with respect to grid (only with respect to input)")
    xp, taps = F._xp(g._data), env["taps"]
    n, c, h, w, ho, wo = (env[k] for k in ("n", "c", "h", "w", "ho", "wo"))

    def interpolate(a):
        image, out = a.reshape(n, c, h * w), xp.zeros((n, c, ho, wo))
        for flat, weight in taps:
            values = xp.take_along_axis(image, flat.reshape(n, 1, -1), 2)
            out += values.reshape(n, c, ho, wo) * weight.reshape(n, 1, ho, wo)
        return out.astype(F32)

    return _part(g, env, 0, interpolate), None


def examples(leaf):
    """(tensor made by an op, formula for the closure it recorded) pairs."""
    from pyrt import index_writes, order_statistics, reductions, shapes
    from pyrt.grid_sample import grid_sample
    from pyrt.scatter import (
        index_add,
        index_copy,
        index_fill,
        index_put,
        scatter,
        scatter_reduce,
        take,
    )

    Tensor = F._tensor()
    x, v = leaf(3, 4), leaf(2, 4)
    index = Tensor(np.array([[1, 0, 2, 0], [0, 2, 1, 1]]))
    rows = Tensor(np.array([2, 0]))
    yield shapes.sort(x, 1)[0], _taken
    yield reductions.median(x), _median_all
    yield reductions.median(x, 1)[0], _median_along
    yield order_statistics.nanmedian(x), _median_all
    yield scatter(x, 0, index, v), _scatter
    yield scatter_reduce(x, 0, index, v, "sum"), _scatter
    yield index_add(x, 0, rows, v), _index_add
    yield index_copy(x, 0, rows, v), _index_copy
    yield index_fill(x, 0, rows, 1.0), _index_fill
    yield index_put(x, (rows,), leaf(4)), _index_put
    yield take(x, rows), _take
    yield index_writes.masked_scatter(x, Tensor(np.eye(3, 4, dtype=bool)), v), _masked_scatter
    yield index_writes.put(x, rows, leaf(2)), _put
    grid = Tensor(np.zeros((1, 2, 2, 2), F32))
    yield grid_sample(leaf(1, 1, 3, 3), grid), _grid_sample
