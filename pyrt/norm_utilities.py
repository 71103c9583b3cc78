"""Norms used as utilities, with PyTorch's names and gradients: dist (the p-norm of a
difference) and renorm (sub-tensors scaled down to a largest p-norm), written with autograd's
ops.

renorm treats each index along `dim` as one sub-tensor (all the other dims together); one
whose p-norm exceeds maxnorm is multiplied by maxnorm / (norm + 1e-7), as torch does, the
others are left as they are. The gradient goes through the norm too.
"""

import numbers

from pyrt.functional import _tensor, dim_index

__all__ = ["dist", "renorm"]


def _check_float(input, name):
    if input._data.dtype.kind != "f":
        raise RuntimeError(f"{name}: Expected a floating point tensor as input. Got "
                           f"{input.dtype}")


def dist(input, other, p=2):
    """The p-norm of input - other (broadcast together): (sum |d|^p)^(1/p), the largest
    |d| for p = inf, the smallest for -inf, the count of nonzeros for 0."""
    for value, arg in ((input, "input"), (other, "other")):
        if not isinstance(value, _tensor()):
            raise TypeError(f"dist(): argument '{arg}' must be a Tensor, got "
                            f"{type(value).__name__}")
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"dist(): argument 'p' must be a number, got {type(p).__name__}")
    difference = input - other
    _check_float(difference, "norm()")
    return difference.norm(p)


def renorm(input, p, dim, maxnorm):
    """input with each sub-tensor input.select(dim, i) whose p-norm exceeds maxnorm scaled
    to have p-norm maxnorm (torch.renorm)."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"renorm(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    for value, arg in ((p, "p"), (maxnorm, "maxnorm")):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"renorm(): argument '{arg}' must be a number, got "
                            f"{type(value).__name__}")
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           f"dimensions")
    _check_float(input, "renorm")
    d = dim_index(dim, input.ndim)
    others = tuple(k for k in range(input.ndim) if k != d)
    norms = input.norm(p, dim=others, keepdim=True)
    from pyrt.tensor import where

    factor = where(norms > maxnorm, float(maxnorm) / (norms + 1e-7), norms.new_ones(()))
    return input * factor
