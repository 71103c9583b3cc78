"""torch.nn.functional.gumbel_softmax: a differentiable sample of a categorical distribution
given by unnormalised log-probabilities (the Gumbel-softmax, or Concrete, relaxation).

Gumbel noise g = -log(e), e ~ Exp(1), is added to the logits; softmax((logits + g) / tau)
along `dim` is the soft sample, which tends to a one-hot vector as the temperature tau goes
to 0, and whose argmax is an exact sample of softmax(logits) at any tau (the Gumbel-max
trick). With hard=True the result is that one-hot vector, y_hard - y_soft.detach() + y_soft:
its value is the hard sample, its gradient the soft one's (the straight-through estimator).
The noise comes from pyrt's seeded generator, so pyrt.manual_seed repeats a sample.
"""

import warnings

import numpy as np

from pyrt.functional import _tensor, _xp, dim_index, softmax

__all__ = ["gumbel_softmax"]


def gumbel_noise(input):
    """Standard Gumbel draws of input's shape, dtype and device: -log(e) for e ~ Exp(1) from
    pyrt's generator, e raised to the smallest normal float32 so that the noise stays finite
    (at most 87.3)."""
    from pyrt.tensor import _move, generator

    e = generator().standard_exponential(input.shape, dtype=np.float32)
    g = -np.log(np.maximum(e, np.finfo(np.float32).tiny)).astype(input.dtype, copy=False)
    return g if isinstance(input._data, np.ndarray) else _move(g, input.device)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """A sample of the categories along `dim` of logits [*, num_features, *]: the soft
    sample softmax((logits + g) / tau), or with hard=True the one-hot vector of its argmax
    carrying the soft sample's gradient (see the module's doc). `eps` is unused (PyTorch
    warns that it is deprecated)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    if not isinstance(logits, _tensor()):
        raise TypeError(f"gumbel_softmax(): argument 'logits' must be Tensor, not "
                        f"{type(logits).__name__}")
    if logits.dtype.kind != "f":
        raise RuntimeError(f"Exponential distribution is a continuous probability "
                           f"distribution. dtype must be a floating point but you specified "
                           f"{logits.dtype}")
    dim = dim_index(dim, logits.ndim)  # checked before the noise is drawn
    noise = _tensor()(gumbel_noise(logits))
    y_soft = softmax((logits + noise) / tau, dim)
    if not hard:
        return y_soft
    y = y_soft._data
    xp = _xp(y)
    if y.ndim == 0:
        y_hard = xp.ones_like(y)
    else:
        index = xp.argmax(y, axis=dim, keepdims=True)
        positions = xp.arange(y.shape[dim]).reshape((-1,) + (1,) * (y.ndim - dim - 1))
        y_hard = (positions == index).astype(y.dtype)
    return _tensor()(y_hard) - y_soft.detach() + y_soft
