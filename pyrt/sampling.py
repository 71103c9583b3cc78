"""Random sampling with PyTorch's names and arguments: bernoulli, multinomial, normal, poisson
and randint_like (and the Tensor methods bernoulli, bernoulli_, multinomial, exponential_),
every draw from the generator pyrt.manual_seed seeds, so that a seeded run repeats. The
results are constants: sampling records no gradient.

multinomial draws category indices with probabilities proportional to each row's weights.
With replacement, each draw is a uniform number looked up in the row's cumulative weights.
Without, the k categories are those with the k smallest keys -log(u) / w (u uniform): the
first of exponential clocks of rates w to ring, which picks categories one after another with
probability proportional to the weights left, the definition of sampling without replacement
(Efraimidis and Spirakis); their order is the order they were drawn in.
"""

import numbers

import numpy as np

from pyrt.functional import _tensor

__all__ = ["bernoulli", "multinomial", "normal", "poisson", "randint_like"]

F32 = np.float32


def _moved(array, device):
    from pyrt.tensor import _move

    return _move(array, device)


def generator():
    """pyrt's generator (pyrt.manual_seed replaces it: looked up at each draw)."""
    from pyrt.tensor import generator

    return generator()


def _host(input, name, arg="input"):
    """A tensor's values on the host as float64, for the draws' arithmetic."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"{name}(): argument '{arg}' must be a Tensor, got "
                        f"{type(input).__name__}")
    if input._data.dtype.kind != "f":
        raise RuntimeError(f"{name}(): expected a floating-point tensor, got {input.dtype}")
    return np.asarray(_moved(input._data, "cpu"), np.float64)


def _like(values, input):
    """`values` as a float32 tensor on input's device."""
    return _tensor()(_moved(np.ascontiguousarray(values, F32), input.device))


def bernoulli(input, p=None):
    """1 with probability input (or `p`, one probability for every element), else 0: a float32
    tensor of input's shape."""
    probs = _host(input, "bernoulli")
    if p is not None:
        if isinstance(p, bool) or not isinstance(p, numbers.Real):
            raise TypeError(f"bernoulli(): argument 'p' must be a float, got {type(p).__name__}")
        probs = np.full(probs.shape, float(p))
    if not ((probs >= 0) & (probs <= 1)).all():  # (nan fails both)
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    return _like(generator().random(probs.shape) < probs, input)


def multinomial(input, num_samples, replacement=False):
    """num_samples category indices drawn from each row of weights: input [C] or [N, C] of
    non-negative, finite weights with a positive sum per row; int64 [num_samples] or
    [N, num_samples]. Without replacement no row gives a category twice, so num_samples may
    not exceed C; the categories of zero weight come last, once those of nonzero weight are
    all drawn, as in PyTorch."""
    w = _host(input, "multinomial")
    if w.ndim not in (1, 2):
        raise RuntimeError(f"prob_dist must be 1 or 2 dim, got {w.ndim}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, numbers.Integral):
        raise TypeError(f"multinomial(): argument 'num_samples' must be an int, got "
                        f"{type(num_samples).__name__}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    rows = w.reshape(-1, w.shape[-1])
    c = rows.shape[1]
    if not np.isfinite(rows).all() or (rows < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if c == 0 or (rows.size and (rows.sum(1) <= 0).any()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    g = generator()
    if replacement:
        cdf = np.cumsum(rows, 1)
        u = g.random((rows.shape[0], num_samples)) * cdf[:, -1:]
        out = np.stack([np.searchsorted(cdf[i], u[i], side="right") for i in range(len(rows))])
        out = np.minimum(out, c - 1)  # (a draw on the last cumulative sum itself)
    else:
        if num_samples > c:
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                               "replacement")
        with np.errstate(divide="ignore"):
            keys = -np.log1p(-g.random(rows.shape)) / rows  # inf where the weight is 0
        out = np.argsort(keys, axis=1, kind="stable")[:, :num_samples]
    out = out.astype(np.int64).reshape(w.shape[:-1] + (num_samples,))
    return _tensor()(_moved(out, input.device))


def normal(mean, std=1.0, size=None):
    """Normal numbers of means `mean` and standard deviations `std`: each a tensor (broadcast
    together) or a number; with two numbers, a float32 tensor of `size`."""
    Tensor = _tensor()
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    for value, name in ((mean, "mean"), (std, "std")):
        if not isinstance(value, Tensor) and (isinstance(value, bool)
                                              or not isinstance(value, numbers.Real)):
            raise TypeError(f"normal(): argument '{name}' must be a Tensor or a float, got "
                            f"{type(value).__name__}")
    if not tensors:
        if size is None:
            raise TypeError("normal(): with a number for both mean and std, size is required")
        m, s, device = float(mean), float(std), "cpu"
        shape = tuple(size)
    else:
        if size is not None:
            raise TypeError("normal(): size is taken only with numbers for mean and std")
        m = _host(mean, "normal", "mean") if isinstance(mean, Tensor) else float(mean)
        s = _host(std, "normal", "std") if isinstance(std, Tensor) else float(std)
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
        device = tensors[0].device
    if not (np.asarray(s) >= 0).all():
        raise RuntimeError(f"normal expects all elements of std >= 0.0, got {np.min(s)}")
    draw = generator().standard_normal(shape) * s + m
    return Tensor(_moved(np.ascontiguousarray(draw, F32), device))


def poisson(input):
    """Counts drawn from Poisson distributions of rates input (>= 0), as float32."""
    rates = _host(input, "poisson")
    if not (rates >= 0).all():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return _like(generator().poisson(rates), input)


def randint_like(input, low=0, high=None, *, dtype=None, device=None):
    """Integers drawn uniformly from [low, high) in a tensor of input's shape (its dtype and
    device unless given): ``randint_like(input, high)`` or ``randint_like(input, low, high)``."""
    from pyrt.tensor import randint

    if not isinstance(input, _tensor()):
        raise TypeError(f"randint_like(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    if high is None:
        low, high = 0, low
    return randint(low, high, input.shape, dtype=input._data.dtype if dtype is None else dtype,
                   device=input.device if device is None else device)


def bernoulli_(self, p=0.5):
    """Each element set to 1 with probability p (a number, or a tensor of probabilities that
    broadcasts to self), else 0, in place."""
    Tensor = _tensor()
    probs = _host(p, "bernoulli_", "p") if isinstance(p, Tensor) else p
    if not isinstance(p, Tensor) and (isinstance(p, bool) or not isinstance(p, numbers.Real)):
        raise TypeError(f"bernoulli_(): argument 'p' must be a float or a Tensor, got "
                        f"{type(p).__name__}")
    probs = np.broadcast_to(probs, self.shape)
    if not ((probs >= 0) & (probs <= 1)).all():
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    self._check_in_place()
    drawn = generator().random(self.shape) < probs
    return self._fill_drawn(drawn.astype(self._draw_dtype()))


def exponential_(self, lambd=1.0):
    """Every element drawn from the exponential distribution of rate lambd, in place."""
    self._check_random_fill("exponential_", lambd)
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return self._fill_drawn(generator().exponential(1.0 / lambd, self.shape)
                            .astype(self._draw_dtype()))



# ---- random_, cauchy_, log_normal_, geometric_ -----------------------------------------------

def _integer_bound(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"random_(): argument '{name}' must be int, not "
                        f"{type(value).__name__}")
    return int(value)


def random_(self, *bounds, **named):
    """Every element drawn uniformly from the integers of [from, to), in place:
    ``random_()`` over [0, 2^24] for float32 (every integer float32 holds exactly), [0, 2^63 -
    1] for int64, {0, 1} for bool; ``random_(to)`` over [0, to); ``random_(from, to)`` over
    [from, to), to=None meaning up to those largest values ("from" is passed by keyword as
    ``**{"from": 0}``, as with torch)."""
    if set(named) - {"from", "to"} or len(bounds) + len(named) > 2:
        raise TypeError("random_() takes random_(), random_(to) or random_(from, to)")
    if len(bounds) == 1 and not named:
        low, high = 0, bounds[0]
    else:
        low = named.get("from", bounds[0] if bounds else 0)
        high = named.get("to", bounds[1] if len(bounds) > 1 else None)
    dtype = self._data.dtype
    if dtype.kind == "b":
        top = 1
    elif dtype.kind == "f":
        top = 2 ** (np.finfo(dtype).nmant + 1)  # 2^24 for float32: its integers are exact
    else:
        top = int(np.iinfo(dtype).max)
    low = _integer_bound(low, "from")
    last = top if high is None else _integer_bound(high, "to") - 1
    if low > last:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                           f"from={low} >= to={last + 1}")
    if dtype.kind == "b" and (low < 0 or last > 1):
        raise RuntimeError(f"{'from' if low < 0 else 'to - 1'} is out of bounds for bool")
    self._check_in_place()
    drawn = generator().integers(low, last, size=self.shape, dtype=np.int64, endpoint=True)
    return self._fill_drawn(drawn)


def cauchy_(self, median=0.0, sigma=1.0):
    """Every element drawn from the Cauchy distribution of `median` and scale `sigma`,
    median + sigma * tan(pi * (u - 1/2)) for u uniform in [0, 1), in place."""
    if self._data.dtype.kind != "f":
        raise RuntimeError(f"Cauchy distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified {self.dtype}")
    self._check_random_fill("cauchy_", median, sigma)
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    u = generator().random(self.shape)
    return self._fill_drawn(median + sigma * np.tan(np.pi * (u - 0.5)))


def log_normal_(self, mean=1.0, std=2.0):
    """Every element drawn as exp(v), v from N(mean, std^2), in place."""
    self._check_random_fill("log_normal_", mean, std)
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    return self._fill_drawn(np.exp(generator().standard_normal(self.shape) * std + mean))


def geometric_(self, p):
    """Every element drawn as the number of Bernoulli(p) trials up to and including the first
    success (1, 2, ...), in place; self may be floating point or int64."""
    if self._data.dtype.kind == "b":
        raise NotImplementedError("geometric_(): not implemented for a bool tensor")
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"geometric_(): argument 'p' must be a float, got {type(p).__name__}")
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    self._check_in_place()
    return self._fill_drawn(generator().geometric(p, self.shape))
