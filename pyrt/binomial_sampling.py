"""torch.binomial: counts of successes in `count` trials of probability `prob`, drawn from the
generator that pyrt.manual_seed seeds."""

import numpy as np

__all__ = ["binomial"]


def binomial(count, prob, generator=None):
    """Draws of Binomial(count, prob), elementwise over the broadcast of `count` and `prob`,
    two floating-point tensors; float32, outside autograd. A count that is not a
    non-negative whole number, or a probability outside [0, 1], is a ValueError."""
    from pyrt.functional import _xp
    from pyrt.tensor import Tensor, _move
    from pyrt.tensor import generator as default_generator

    for value, name in ((count, "count"), (prob, "prob")):
        if not isinstance(value, Tensor):
            raise TypeError(f"binomial(): argument '{name}' must be a Tensor, got "
                            f"{type(value).__name__}")
        if value._data.dtype.kind != "f":
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{value._data.dtype}")
    if count.device != prob.device:
        raise RuntimeError(f"binomial(): expected count and prob on the same device, got "
                           f"{count.device} and {prob.device}")
    if generator is not None and not isinstance(generator, np.random.Generator):
        raise TypeError(f"binomial(): generator must be a numpy.random.Generator or None, got "
                        f"{type(generator).__name__}")
    n = _xp(count._data).asnumpy(count._data) if count.is_cuda else count._data
    p = _xp(prob._data).asnumpy(prob._data) if prob.is_cuda else prob._data
    shape = np.broadcast_shapes(n.shape, p.shape)
    if not np.all((n >= 0) & (n == np.floor(n))):  # NaN fails both
        raise ValueError("binomial(): count must hold non-negative whole numbers")
    if not np.all((p >= 0) & (p <= 1)):
        raise ValueError("binomial(): prob must hold probabilities in [0, 1]")
    rng = default_generator() if generator is None else generator
    draws = rng.binomial(np.broadcast_to(n, shape).astype(np.int64),
                         np.broadcast_to(p, shape).astype(np.float64))
    return Tensor(_move(np.asarray(draws, np.float32), str(count.device)))
