"""Running extremes and log-sum-exp along a dim, as PyTorch's cummax, cummin and
logcumsumexp, with their gradients. (The running sums and products are in
pyrt/reductions.py.)"""

from collections import namedtuple

import numpy as np

from pyrt.functional import _contiguous, _make, _tensor, _xp, dim_index
from pyrt.ops._checks import F32, I64
from pyrt.pointwise import _input_array
from pyrt.shapes import gather

__all__ = ["cummax", "cummin", "logcumsumexp"]

# what cummax and cummin return, as torch.return_types.cummax and cummin
cummax_result = namedtuple("cummax", ("values", "indices"))
cummin_result = namedtuple("cummin", ("values", "indices"))


def _running_extreme(x, dim, name, result):
    """(values, indices): the running maximum or minimum along dim and where it was last
    reached. As PyTorch's kernel, the index moves to each later element equal to the running
    value (ties take the later index) and to every NaN (which, once met, is the value from
    there on). The values are gathered at the indices, so that the gradient goes to them."""
    xd = _input_array(x, name)
    at = dim_index(dim, xd.ndim)
    xp = _xp(xd)
    line = xd.reshape(xd.shape or (1,))
    if line.shape[at] == 0:
        return result(_make(xd.copy(), (x,), lambda g: (g,), reads=False),
                      _tensor()(xp.zeros(xd.shape, I64)))
    ufunc = xp.maximum if name == "cummax" else xp.minimum
    values = ufunc.accumulate(line, axis=at)  # NaN propagates from where it appears
    # the last j <= i where x[j] equals the running value at j is the last place the
    # running value at i was reached (it only changes at such places)
    reached = line == values
    if xd.dtype.kind == "f":
        reached |= xp.isnan(line)
    steps = xp.arange(line.shape[at]).reshape((-1,) + (1,) * (line.ndim - at - 1))
    indices = xp.maximum.accumulate(xp.where(reached, steps, 0), axis=at).astype(I64)
    indices = _tensor()(_contiguous(indices.reshape(xd.shape)))
    return result(gather(x, at, indices), indices)


def cummax(x, dim):
    """(values, indices) of the running maximum along dim, as torch.cummax."""
    return _running_extreme(x, dim, "cummax", cummax_result)


def cummin(x, dim):
    """(values, indices) of the running minimum along dim, as torch.cummin."""
    return _running_extreme(x, dim, "cummin", cummin_result)


def _reverse_logcumsumexp(xp, v, at):
    """log(sum(exp(v[j])) for j >= i) along `at`, stably (logaddexp accumulated from the
    far end)."""
    return xp.flip(xp.logaddexp.accumulate(xp.flip(v, at), axis=at), at)


def logcumsumexp(x, dim):
    """log(cumsum(exp(x))) along dim, accumulated stably with logaddexp (in float64, rounded
    once). Floating point only, as in PyTorch. Element j feeds the outputs i >= j with
    slope exp(x_j - out_i): its gradient exp(x_j) * sum(g_i exp(-out_i)) is computed, as
    PyTorch does, as exp(x_j + log(sum(exp(log|g_i| - out_i)))) for the positive and the
    negative g separately, so that nothing overflows."""
    xd = _input_array(x, "logcumsumexp")
    if xd.dtype.kind != "f":
        raise NotImplementedError(f'"logcumsumexp" is not implemented for {xd.dtype} tensors: '
                                  f'it takes floating point')
    at = dim_index(dim, xd.ndim)
    xp = _xp(xd)
    line = xd.reshape(xd.shape or (1,)).astype(np.float64)
    if line.shape[at] == 0:
        return _make(xd.copy(), (x,), lambda g: (g,), reads=False)
    with np.errstate(all="ignore"):
        out = xp.logaddexp.accumulate(line, axis=at)

    def backward(g):
        wide = g.reshape(line.shape).astype(np.float64)
        with np.errstate(all="ignore"):
            positive = _reverse_logcumsumexp(xp, xp.log(xp.where(wide > 0, wide, 0)) - out, at)
            negative = _reverse_logcumsumexp(xp, xp.log(xp.where(wide < 0, -wide, 0)) - out, at)
            dx = xp.exp(positive + line) - xp.exp(negative + line)
        return (_contiguous(dx.astype(F32).reshape(xd.shape)),)

    return _make(_contiguous(out.astype(xd.dtype).reshape(xd.shape)), (x,), backward)
