"""Differentiable backward formulas of the ops that move, copy, select or mix elements
linearly: flip, roll, repeat (tile), tril and triu, diag, diagonal, diag_embed, Tensor.unfold,
nn.functional.unfold and fold, pad in the modes reflect, replicate and circular, interpolate
(every mode), embedding (the gradient of its weight, with padding_idx and scale_grad_by_freq),
narrow, split, chunk, unbind and repeat_interleave. pyrt.double_backward registers them; its
docstring says how formulas are found and what they return.

Each of these ops is a linear map y = A x, and its backward closure is the adjoint:
dx = A^T g, an array function that does not read x. Recording the backward therefore needs
no new derivative: dx is a node of g alone whose own backward is A (the op's forward, on
arrays), and the backward of that node is A^T again. linear_map records such a pair, and its
closure's formula swaps the two, so gradients of any order alternate between the op's
forward and its ordinary backward, both the op's own kernels.
"""

import numpy as np

from pyrt import functional as F
from pyrt.double_backward import CLOSURE

__all__ = ["linear_map"]


def linear_map(g, apply, adjoint):
    """Tensor apply(g) for a linear function `apply` of arrays, recorded with `adjoint`
    (its transpose) as its backward, so that it can be differentiated again."""
    xp = F._xp(g._data)
    pair = (apply, adjoint)  # the closure keeps both, for its formula
    return F._make(xp.ascontiguousarray(apply(g._data)), (g,),
                   lambda h: (xp.ascontiguousarray(pair[1](h)),), reads=False)


def _swapped(node, h, env):
    """The formula of linear_map's closure: the map's adjoint, recorded with the map."""
    apply, adjoint = env["pair"]
    return (linear_map(h, adjoint, apply),)


def _adjoint_of(forward):
    """The formula of a linear op's closure (its adjoint A^T): linear_map of that closure,
    with forward(h, node, env), the op's A on arrays, as the backward."""

    def formula(node, g, env):
        closure = env[CLOSURE]
        return (linear_map(g, lambda a: closure(a)[0], lambda h: forward(h, node, env)),)

    formula.__name__ = forward.__name__
    return formula


# ---- the ops' forward maps A on arrays, from their closures' variables -----------------------


def _same(h, node, env):
    """Ops whose closure is its own adjoint: flip and the triangle masks."""
    return env[CLOSURE](h)[0]


def _roll(h, node, env):
    return env["rolled"](h, 1)


def _repeat(h, node, env):
    return F._xp(h).tile(h.reshape(env["base"]), env["sizes"])


def _diag_of_vector(h, node, env):
    return env["xp"].diag(h, env["k"])


def _diag_of_matrix(h, node, env):
    return env["xp"].diagonal(h, env["k"])


def _diagonal(h, node, env):
    moved = env["xp"].moveaxis(h, (env["d1"], env["d2"]), (-2, -1))
    return moved[..., env["rows"], env["cols"]]


def _diag_embed(h, node, env):
    xp = env["xp"]
    out = xp.zeros(node.shape, np.float32)
    xp.moveaxis(out, (env["d1"], env["d2"]), (-2, -1))[..., env["rows"], env["cols"]] = h
    return out


def _tensor_unfold(h, node, env):
    xp, d = env["xp"], env["d"]
    return xp.moveaxis(xp.take(h, xp.asarray(env["index"]), axis=d), d + 1, -1)


def _unfold(h, node, env):
    from pyrt.spatial_more import _im2col

    return _im2col(h, env["window"], env["blocks"])


def _fold(h, node, env):
    from pyrt.spatial_more import _col2im

    return _col2im(h, node.shape[2:], env["window"], env["blocks"])


def _pad(h, node, env):
    for axis, index in env["maps"]:
        h = env["xp"].take(h, index, axis=axis)
    return h


def _interpolate(h, node, env):
    from pyrt.interpolate import _along

    for axis, m, index in env["plans"]:
        h = F._xp(h).take(h, index, axis=axis) if index is not None else _along(h, axis, m, False)
    return h


def _embedding(h, node, env):
    """The rows of h at the looked-up indices, 0 at padding_idx and outside the table. With
    scale_grad_by_freq the closure divides each row by its count, so it is not quite the
    adjoint of the lookup: the plain lookup is taken then, as PyTorch's
    embedding_dense_double_backward does, and it makes the recorded first gradient's
    derivative the one central differences measure."""
    xp, picked, inside = env["xp"], env["picked"], env["inside"]
    keep = inside if env["padding_idx"] is None else inside & (picked != env["padding_idx"])
    return xp.take(h, picked, axis=0) * keep[..., None]


def _piece(h, node, env):
    return h[env["index"]]


def _repeat_interleave(h, node, env):
    return env["xp"].take(h.reshape(env["line"].shape), env["source"], axis=env["at"])


FORWARDS = (_same, _roll, _repeat, _diag_of_vector, _diag_of_matrix, _diagonal, _diag_embed,
            _tensor_unfold, _unfold, _fold, _pad, _interpolate, _embedding, _piece,
            _repeat_interleave)
_FORMULAS = {forward: _adjoint_of(forward) for forward in FORWARDS}


def examples(leaf):
    """(tensor made by an op, formula for the closure it recorded) pairs."""
    from pyrt import embedding, interpolate, rearrange, shapes, spatial, spatial_more, windows

    x, v, x4 = leaf(3, 4), leaf(4), leaf(1, 2, 4, 5)
    yield linear_map(v, np.negative, np.negative), _swapped
    yield shapes.flip(x, (0,)), _FORMULAS[_same]
    yield rearrange.tril(x), _FORMULAS[_same]
    yield rearrange.roll(x, 1, 1), _FORMULAS[_roll]
    yield shapes.repeat(x, (2, 1)), _FORMULAS[_repeat]
    yield rearrange.diag(v), _FORMULAS[_diag_of_vector]
    yield rearrange.diag(x), _FORMULAS[_diag_of_matrix]
    yield windows.diagonal(x), _FORMULAS[_diagonal]
    yield windows.diag_embed(x), _FORMULAS[_diag_embed]
    yield windows.unfold(x, 1, 2, 1), _FORMULAS[_tensor_unfold]
    yield spatial_more.unfold(x4, 2), _FORMULAS[_unfold]
    yield spatial_more.fold(leaf(1, 8, 4), (3, 3), 2), _FORMULAS[_fold]
    yield spatial.pad(x4, (1, 1), mode="reflect"), _FORMULAS[_pad]
    yield interpolate.interpolate(x4, scale_factor=2), _FORMULAS[_interpolate]
    indices = F._tensor()(np.array([0, 2, 1]))
    yield embedding.embedding(indices, x), _FORMULAS[_embedding]
    yield shapes.split(x, 2, 1)[0], _FORMULAS[_piece]
    yield rearrange.unbind(x)[0], _FORMULAS[_piece]
    yield rearrange.repeat_interleave(x, 2, 1), _FORMULAS[_repeat_interleave]
