"""Transforms that reshape events or act on parts of them: ReshapeTransform (a new event
shape, unit Jacobian), CatTransform (one transform per consecutive slice along a dim, as
torch.cat joins them) and StackTransform (one transform per index along a dim, as
torch.stack joins them). Exported from pyrt.distributions.transforms."""

import numpy as np

import pyrt
from pyrt.distributions import constraints
from pyrt.distributions.transforms import Transform
from pyrt.distributions.utils import sum_rightmost

__all__ = ["CatTransform", "ReshapeTransform", "StackTransform"]


def _size_tuple(shape, name):
    try:
        return tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"{name} must be a tuple of ints, got {type(shape).__name__}") from None


class ReshapeTransform(Transform):
    """Reshapes the rightmost dims of x from `in_shape` to `out_shape` (as Tensor.reshape;
    both hold the same number of elements). Its Jacobian is a permutation: log |det J| = 0."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape = _size_tuple(in_shape, "in_shape")
        self.out_shape = _size_tuple(out_shape, "out_shape")
        if int(np.prod(self.in_shape)) != int(np.prod(self.out_shape)):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch_shape = tuple(x.shape[: x.dim() - len(self.in_shape)])
        return x.reshape(batch_shape + self.out_shape)

    def _inverse(self, y):
        batch_shape = tuple(y.shape[: y.dim() - len(self.out_shape)])
        return y.reshape(batch_shape + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(tuple(x.shape[: x.dim() - len(self.in_shape)]))

    def forward_shape(self, shape):
        return self._swap_event(tuple(shape), self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._swap_event(tuple(shape), self.out_shape, self.in_shape)

    @staticmethod
    def _swap_event(shape, old, new):
        if len(shape) < len(old):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(old)
        if shape[cut:] != old:
            raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {old}")
        return shape[:cut] + new

    def __repr__(self):
        return f"{self.__class__.__name__}({self.in_shape}, {self.out_shape})"


def _check_parts(tseq, name):
    tseq = list(tseq)
    if not all(isinstance(t, Transform) for t in tseq):
        raise TypeError(f"{name}(): all elements of tseq must be Transform instances")
    return tseq


def _check_size(dim, t, size, what, name):
    """Checks that `dim` indexes tensor `t` (called `name`) and that t.size(dim) == size."""
    if not -t.dim() <= dim < t.dim():
        raise ValueError(f"dim {dim} out of range for {name} with {t.dim()} dimensions")
    if t.shape[dim] != size:
        raise ValueError(f"{name}.size({dim}) = {t.shape[dim]} must equal {what} {size}")


class CatTransform(Transform):
    """Applies tseq[i] to the i-th of consecutive slices of `lengths` (default: 1 each) along
    `dim`, and joins the results as torch.cat does."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        tseq = _check_parts(tseq, "CatTransform")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = tseq
        self.lengths = [1] * len(tseq) if lengths is None else [int(n) for n in lengths]
        if len(self.lengths) != len(self.transforms):
            raise ValueError(f"lengths ({len(self.lengths)}) must match transforms "
                             f"({len(self.transforms)})")
        self.dim = dim

    @property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self):
        """The size along dim that x must have: the sum of lengths."""
        return sum(self.lengths)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _slices(self, t):
        start = 0
        for length in self.lengths:
            yield t.narrow(self.dim, start, length)
            start += length

    def _call(self, x):
        _check_size(self.dim, x, self.length, "length", "x")
        return pyrt.cat([t(xi) for t, xi in zip(self.transforms, self._slices(x))], self.dim)

    def _inverse(self, y):
        _check_size(self.dim, y, self.length, "length", "y")
        return pyrt.cat([t.inv(yi) for t, yi in zip(self.transforms, self._slices(y))],
                        self.dim)

    def log_abs_det_jacobian(self, x, y):
        _check_size(self.dim, x, self.length, "length", "x")
        _check_size(self.dim, y, self.length, "length", "y")
        event_dim = self.event_dim
        terms = []
        for t, xi, yi in zip(self.transforms, self._slices(x), self._slices(y)):
            terms.append(sum_rightmost(t.log_abs_det_jacobian(xi, yi), event_dim - t.event_dim))
        # A dim left of the event dims survives in the terms: join them along it; a dim
        # inside the event was summed away: add them.
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + event_dim
        if dim < 0:
            return pyrt.cat(terms, dim)
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return total

    def __repr__(self):
        return (f"{self.__class__.__name__}({self.transforms!r}, dim={self.dim}, "
                f"lengths={self.lengths})")


class StackTransform(Transform):
    """Applies tseq[i] to x.select(dim, i) and stacks the results along `dim`, as torch.stack
    does; x.size(dim) must equal len(tseq)."""

    def __init__(self, tseq, dim=0, cache_size=0):
        tseq = _check_parts(tseq, "StackTransform")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = tseq
        self.dim = dim

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, t, name):
        _check_size(self.dim, t, len(self.transforms), "len(transforms)", name)
        return [t.select(self.dim, i) for i in range(t.shape[self.dim])]

    def _call(self, x):
        return pyrt.stack([t(xi) for t, xi in zip(self.transforms, self._slices(x, "x"))],
                          self.dim)

    def _inverse(self, y):
        return pyrt.stack([t.inv(yi) for t, yi in zip(self.transforms, self._slices(y, "y"))],
                          self.dim)

    def log_abs_det_jacobian(self, x, y):
        xs, ys = self._slices(x, "x"), self._slices(y, "y")
        return pyrt.stack([t.log_abs_det_jacobian(xi, yi)
                           for t, xi, yi in zip(self.transforms, xs, ys)], self.dim)

    def __repr__(self):
        return f"{self.__class__.__name__}({self.transforms!r}, dim={self.dim})"
