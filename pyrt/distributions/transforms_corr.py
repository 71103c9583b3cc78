"""CorrCholeskyTransform: a bijection from vectors of D (D - 1) / 2 reals onto the lower
Cholesky factors of D x D correlation matrices (lower triangular, positive diagonal, rows of
unit norm), with the row-order conversions between a lower triangle and a vector that it
uses. Exported from pyrt.distributions.transforms."""

import math

import numpy as np

import pyrt
from pyrt.distributions import constraints
from pyrt.distributions.transforms import ParameterlessTransform

__all__ = ["CorrCholeskyTransform", "tril_matrix_to_vec", "vec_to_tril_matrix"]


def _tril_mask(n, diag):
    """The n x n bool mask of the entries on or below diagonal `diag`."""
    arange = np.arange(n)
    return arange < arange[:, None] + (diag + 1)


def tril_matrix_to_vec(mat, diag=0):
    """The entries of [..., D, D] matrices on or below diagonal `diag`, in row order, as
    [..., N] vectors."""
    n = mat.shape[-1]
    if not -n <= diag < n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    flat = mat.reshape(tuple(mat.shape[:-2]) + (n * n,))
    return flat[..., np.flatnonzero(_tril_mask(n, diag))]


def vec_to_tril_matrix(vec, diag=0):
    """[..., N] vectors as [..., D, D] matrices holding them, in row order, on and below
    diagonal `diag`, and zeros elsewhere; N must fit such a triangle exactly."""
    size = vec.shape[-1]
    # D is the positive root of D^2 + (1 + 2 diag) D - |diag| (diag + 1) - 2 N = 0.
    b = 1 + 2 * diag
    n = (-b + math.sqrt(b * b + 8 * size + 4 * abs(diag) * (diag + 1))) / 2
    if abs(round(n) - n) > np.finfo(np.float32).eps:
        raise ValueError(f"The size of last dimension is {size} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    # Gather each matrix entry from the vector padded with one zero: entries outside the
    # triangle read the zero, so that the gradient reaches exactly the vector's entries.
    index = np.full(n * n, size)
    index[np.flatnonzero(_tril_mask(n, diag))] = np.arange(size)
    batch = tuple(vec.shape[:-1])
    padded = pyrt.cat([vec, vec.new_zeros(batch + (1,))], -1)
    return padded[..., index].reshape(batch + (n, n))


class CorrCholeskyTransform(ParameterlessTransform):
    """From an unconstrained vector x of D (D - 1) / 2 reals to the Cholesky factor L of a
    D x D correlation matrix. x fills the strictly lower triangle in row order; each row is
    then made of unit length by a signed stick-breaking: r = tanh(x) in (-1, 1) is the
    fraction, with sign, of the squared length left that the entry takes,
    L_ij = r_ij sqrt(1 - sum_{k<j} L_ik^2), and the diagonal takes the rest."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        eps = float(np.finfo(np.float32).eps)
        r = vec_to_tril_matrix(x.tanh().clamp(min=-1 + eps, max=1 - eps), diag=-1)
        # sqrt(1 - sum_{k<j} L_ik^2) = prod_{k<j} sqrt(1 - r_ik^2): a cumulative product
        # along the row, shifted right by one (the first entry takes the whole length).
        left = (1 - r.pow(2)).sqrt().cumprod(-1)
        n = r.shape[-1]
        ones = pyrt.ones(tuple(r.shape[:-1]) + (1,), device=x.device)
        r = r + pyrt.eye(n, device=x.device)
        return r * pyrt.cat([ones, left[..., :-1]], -1)

    def _inverse(self, y):
        # r_ij = L_ij / sqrt(1 - sum_{k<j} L_ik^2), then x = atanh(r).
        left = 1 - (y * y).cumsum(-1)
        ones = pyrt.ones(tuple(y.shape[:-1]) + (1,), device=y.device)
        left_shifted = pyrt.cat([ones, left[..., :-1]], -1)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(left_shifted, diag=-1).sqrt()
        return (t.log1p() - (-t).log1p()) / 2

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        """log |det J| of x -> the strictly lower triangle of y (the diagonal is a function
        of it): the stick-breaking term sum_{i,j<i} log(1 - sum_{k<j} L_ik^2) / 2 plus the
        tanh term sum log(1 - tanh(x)^2)."""
        left = 1 - (y * y).cumsum(-1)
        # diag=-2 picks 1 - sum_{k<=j-1} for each strictly-lower (i, j) without a shift.
        stick_breaking = 0.5 * tril_matrix_to_vec(left, diag=-2).log().sum(-1)
        softplus = pyrt.nn.functional.softplus
        tanh = -2 * (x + softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking + tanh

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        size = shape[-1]
        n = round((0.25 + 2 * size) ** 0.5 + 0.5)
        if n * (n - 1) // 2 != size:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return tuple(shape[:-1]) + (n, n)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        n = shape[-1]
        return tuple(shape[:-2]) + (n * (n - 1) // 2,)
