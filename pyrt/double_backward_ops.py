"""Differentiable backward formulas of products, p-norms and the remaining elementwise ops:
prod with zeros in its input, cumprod, norm for p other than 1 and 2 (p-norms, inf, -inf),
asin, acos, acosh, atanh, log2, log10, exp2, pow with a tensor exponent, atan2, hypot, lerp and
addcmul. pyrt.double_backward registers them; its docstring says how formulas are found and
what they return.

The gradient of a product is the product of the other elements, which holds no division and
so stays exact where the input holds zeros: for a line x of n elements it is the product
along the last dim of the n x n matrix whose row k is x with its k-th element replaced by 1,
written with Tensor ops so that its own derivative is again a product of the others.
cumprod is that product over the lower-triangular matrix (row i: x_0 ... x_i, then ones),
recomputed so that its recorded backward is the formula.
"""

import math

import numpy as np

from pyrt import functional as F
from pyrt import shapes
from pyrt.double_backward import _const, _expand_reduced, _need, _refuse, sum_to

__all__ = ["POINTWISE", "others_product"]


def _prod_of(t, axis):
    from pyrt.reductions import prod

    return prod(t, axis)


def _rows_of_lines(t, axis):
    """(rows, back): Tensor t with its line along `axis` (None: all of it) last, and the
    function that lays a Tensor of that shape back out as t."""
    if axis is None:
        return F.reshape(t, (1, -1)), lambda r: F.reshape(r, t.shape)
    order = tuple(d for d in range(t.ndim) if d != axis) + (axis,)
    inverse = tuple(int(i) for i in np.argsort(order))
    moved = shapes.permute(t, order)
    return moved, lambda r: shapes.permute(r, inverse)


def _masked_lines(rows, keep):
    """[..., n, n]: each line of rows [..., n] repeated n times, 1 where `keep` ([n, n]
    bools) is False."""
    n = rows.shape[-1]
    square = shapes.expand(F.reshape(rows, rows.shape[:-1] + (1, n)), rows.shape + (n,))
    keep = keep.astype(np.float32)
    return F.add(F.mul(square, _const(keep)), _const(1.0 - keep))


def others_product(t, axis):
    """The product of the other elements of each element's line along `axis` (None: the
    whole tensor), with no division: exact at zeros."""
    rows, back = _rows_of_lines(t, axis)
    n = rows.shape[-1]
    xp = F._xp(t._data)
    others = _prod_of(_masked_lines(rows, ~xp.eye(n, dtype=bool)), -1)
    return back(others)


def _prod(node, g, env):
    """g times the product of the others: out / x where no element is 0 (cheaper), else the
    product of the others itself."""
    xd, axis = env["xd"], env["axis"]
    (x,) = node._parents
    gx = _expand_reduced(g, xd.shape, axis)
    if F._xp(xd).all(xd != 0):
        return (F.div(F.mul(gx, _expand_reduced(node, xd.shape, axis)), x),)
    return (F.mul(gx, others_product(x, axis)),)


def _cumprod(node, g, env):
    """cumprod recomputed as the product of each row of the lower-triangular matrix
    [x_0 ... x_i, 1 ... 1], and the recorded backward of that."""
    from pyrt.higher_order import gradients

    (x,) = node._parents
    at = env["at"]
    line = F.reshape(x, env["line"].shape)
    rows, back = _rows_of_lines(line, at)
    n = rows.shape[-1]
    xp = F._xp(x._data)
    products = back(_prod_of(_masked_lines(rows, xp.tril(xp.ones((n, n), dtype=bool))), -1))
    return gradients(F.reshape(products, x.shape), g, node._parents)


# ---- norm ------------------------------------------------------------------------------------


def _norm(node, g, env):
    """The p-norm for p other than 1 and 2 (double_backward has those): sign(x) |x|^(p-1)
    g / n^(p-1), 0 where n is 0; for +-inf g shared among the elements that reach the norm
    (constant weights, as the ordinary pass routes it); p = 0, a count, is refused."""
    from pyrt.double_backward import _norm as norm_one_two

    p, axis, out = env["p"], env["axis"], env["out"]
    if p in (1, 2):
        return norm_one_two(node, g, env)
    if p == 0:
        _refuse("NormBackward1", " at p=0 (the count of nonzero elements, a step function "
                "whose gradient is 0 everywhere but undefined at 0)")
    (x,) = node._parents
    xp = F._xp(out)
    kept = F._reduced_shape(x.shape, axis, keepdims=True)
    gk = F.reshape(g, kept)
    xd = x._data
    sign = _const(xp.sign(xd))
    if p in (np.inf, -np.inf):
        a = xp.abs(xd)
        ties = (a == out.reshape(kept)) | xp.isnan(a)
        share = ties / ties.sum(axis=axis, keepdims=True, dtype=np.float32)
        return (F.mul(F.mul(_expand_reduced(g, x.shape, axis), _const(share)), sign),)
    if p < 1:
        _refuse("NormBackward1", f" at p={p} (only p >= 1 has one: |x|^(p-1) is infinite "
                "at 0)")
    zero = _const((out == 0).reshape(kept))
    n = F.add(F.reshape(node, kept), zero)  # 1 where the norm is 0, its gradient then 0
    scale = F.mul(F.div(gk, F.pow(n, p - 1.0)), F.sub(1.0, zero))
    return (F.mul(F.mul(sign, F.pow(F.abs(x), p - 1.0)), scale),)


# ---- elementwise functions of pointwise._floating, by name -----------------------------------

_LOG2 = math.log(2)
_LOG10 = math.log(10)


def _inverse_sqrt(t):
    return F.pow(t, -0.5)


POINTWISE = {
    "asin": lambda g, x, y: F.mul(g, _inverse_sqrt(F.sub(1.0, F.mul(x, x)))),
    "acos": lambda g, x, y: F.neg(F.mul(g, _inverse_sqrt(F.sub(1.0, F.mul(x, x))))),
    "acosh": lambda g, x, y: F.mul(g, _inverse_sqrt(F.mul(F.sub(x, 1.0), F.add(x, 1.0)))),
    "atanh": lambda g, x, y: F.div(g, F.sub(1.0, F.mul(x, x))),
    "log2": lambda g, x, y: F.div(g, F.mul(x, _LOG2)),
    "log10": lambda g, x, y: F.div(g, F.mul(x, _LOG10)),
    "exp2": lambda g, x, y: F.mul(g, F.mul(y, _LOG2)),
}


# ---- binary functions of binary_pointwise._binary, by name -----------------------------------


def _pow_tensor(a, b, y, g):
    """g b a^(b-1), 0 where b is 0; g y log a, 0 where a is 0 and b >= 0 (PyTorch's). One of
    a and b may be a number."""
    from pyrt.binary_pointwise import pow_tensor

    Tensor = F._tensor()
    ad, bd = _data(a), _data(b)
    xp = F._xp(y._data)
    da = db = None
    if isinstance(a, Tensor) and _need(a):
        live = _const(xp.broadcast_to(bd != 0, y.shape))
        lower = F.sub(b, 1.0) if isinstance(b, Tensor) else float(b) - 1.0
        da = F.mul(F.mul(g, live), F.mul(pow_tensor(a, lower), b))
    if isinstance(b, Tensor) and _need(b):
        flat = xp.broadcast_to((ad == 0) & (bd >= 0), y.shape)
        log_a = (F.log(F.add(a, _const(flat))) if isinstance(a, Tensor)
                 else _const(xp.log(xp.where(flat, 1.0, ad))))
        db = F.mul(F.mul(g, _const(~flat)), F.mul(y, log_a))
    return da, db


def _atan2(a, b, y, g):
    r2 = F.add(F.mul(a, a), F.mul(b, b))
    return F.div(F.mul(g, b), r2), F.neg(F.div(F.mul(g, a), r2))


def _hypot(a, b, y, g):
    return F.div(F.mul(g, a), y), F.div(F.mul(g, b), y)


_BINARY = {"pow_tensor": _pow_tensor, "atan2": _atan2, "hypot": _hypot}


def _data(t):
    return t._data if isinstance(t, F._tensor()) else np.float32(t)


def _binary(node, g, env):
    from pyrt.double_backward import op_name

    derivatives = env["derivatives"]
    name = derivatives.__qualname__.split(".")[0]
    formula = _BINARY.get(name)
    if formula is None:
        _refuse(op_name(derivatives))
    a, b = env["a"], env["b"]
    grads = formula(a, b, node, g)
    return tuple(sum_to(d, t.shape) if _need(t) else None
                 for t, d in zip((a, b), grads) if isinstance(t, F._tensor()))


# ---- lerp and addcmul ------------------------------------------------------------------------


def _summed_to_parents(node, grads):
    return tuple(sum_to(d, t.shape) if _need(t) else None for t, d in zip(node._parents, grads))


def _lerp(node, g, env):
    """input + weight (end - input): g (1 - weight), g weight, g (end - input)."""
    a, b = node._parents[:2]
    w = node._parents[2] if len(node._parents) > 2 else float(env["w"])
    keep = F.sub(1.0, w) if len(node._parents) > 2 else 1.0 - w
    return _summed_to_parents(node, (F.mul(g, keep), F.mul(g, w), F.mul(g, F.sub(b, a))))


def _addcmul(node, g, env):
    """input + value tensor1 tensor2: g, g value tensor2, g value tensor1."""
    _, t1, t2 = node._parents
    v = float(env["v"])
    return _summed_to_parents(node, (g, F.mul(F.mul(g, t2), v), F.mul(F.mul(g, t1), v)))


def examples(leaf):
    """(tensor made by an op, formula for the closure it recorded) pairs."""
    from pyrt import binary_pointwise, pointwise, reductions

    x, y = leaf(3, 4), leaf(3, 4)
    yield reductions.prod(x, 1), _prod
    yield reductions.cumprod(x, 1), _cumprod
    yield reductions.norm(x, 3.0, 1), _norm
    yield binary_pointwise.atan2(x, y), _binary
    yield pointwise.lerp(x, y, 0.3), _lerp
    yield pointwise.addcmul(x, x, y), _addcmul
