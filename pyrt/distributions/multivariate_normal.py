"""The multivariate normal distribution, parameterized by its mean and one of covariance,
precision or the lower Cholesky factor of the covariance. Everything is computed from that
factor L (covariance = L L^T): samples are loc + L eps, and the log density needs only
triangular solves and the log of L's diagonal."""

import math
from typing import ClassVar

import numpy as np

import pyrt
from pyrt.distributions import constraints
from pyrt.distributions.distribution import Distribution
from pyrt.distributions.utils import as_float_tensor, lazy_property, standard_normal

__all__ = ["MultivariateNormal"]


def batch_mv(bmat, bvec):
    """Matrix-vector products over broadcast batch dims: [..., n, m] x [..., m] -> [..., n]."""
    return (bmat @ bvec.unsqueeze(-1)).squeeze(-1)


def batch_mahalanobis(bL, bx):
    """x^T (L L^T)^-1 x = |L^-1 x|^2 for lower-triangular L [..., n, n] and x [..., n], their
    batch dims broadcast."""
    shape = np.broadcast_shapes(tuple(bL.shape[:-2]), tuple(bx.shape[:-1]))
    n = bx.shape[-1]
    L = bL.expand(*(shape + (n, n)))
    x = bx.expand(*(shape + (n,)))
    solution = pyrt.linalg.solve_triangular(L, x.unsqueeze(-1), upper=False).squeeze(-1)
    return solution.pow(2).sum(-1)


def precision_to_scale_tril(P):
    """The lower Cholesky factor of P^-1 without inverting P. Reversing P's rows and columns
    (J P J, J the exchange matrix) and factoring J P J = Lf Lf^T gives P = U U^T with
    U = J Lf J upper triangular; then P^-1 = U^-T U^-1, and L = U^-T is lower triangular:
    the solution of U^T L = I."""
    Lf = pyrt.linalg.cholesky(P.flip((-2, -1)))
    L_inv = Lf.flip((-2, -1)).mT
    eye = pyrt.eye(P.shape[-1], device=P.device).expand(*P.shape)
    return pyrt.linalg.solve_triangular(L_inv, eye, upper=False)


class MultivariateNormal(Distribution):
    """MultivariateNormal(loc, covariance_matrix=None, precision_matrix=None, scale_tril=None):
    exactly one of the three matrices, [..., n, n], with loc [..., n]."""

    arg_constraints: ClassVar[dict] = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        loc = as_float_tensor(loc, "loc")
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) \
                + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        if scale_tril is not None:
            matrix, name = as_float_tensor(scale_tril, "scale_tril"), "scale_tril"
        elif covariance_matrix is not None:
            matrix, name = as_float_tensor(covariance_matrix, "covariance_matrix"), \
                "covariance_matrix"
        else:
            matrix, name = as_float_tensor(precision_matrix, "precision_matrix"), \
                "precision_matrix"
        if matrix.dim() < 2:
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if matrix.shape[-1] != matrix.shape[-2] or matrix.shape[-1] != loc.shape[-1]:
            raise ValueError(f"{name} must be a batch of {loc.shape[-1]} x {loc.shape[-1]} "
                             f"matrices to match loc of shape {tuple(loc.shape)}, got "
                             f"{tuple(matrix.shape)}")
        batch_shape = np.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        n = loc.shape[-1]
        setattr(self, name, matrix.expand(*(batch_shape + (n, n))))
        self.loc = loc.expand(*(batch_shape + (n,)))
        super().__init__(batch_shape, (n,), validate_args=validate_args)

        if scale_tril is not None:
            self._unbroadcasted_scale_tril = matrix
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = pyrt.linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = precision_to_scale_tril(matrix)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(MultivariateNormal, batch_shape, _instance,
                              shared=("_unbroadcasted_scale_tril",))

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(
            *(self._batch_shape + self._event_shape + self._event_shape))

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(*(self._batch_shape + self._event_shape + self._event_shape))

    @lazy_property
    def precision_matrix(self):
        return self._unbroadcasted_scale_tril.cholesky_inverse().expand(
            *(self._batch_shape + self._event_shape + self._event_shape))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            *(self._batch_shape + self._event_shape))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = standard_normal(shape, self.loc)
        return self.loc + batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        """-(n log(2 pi) + |L^-1 (value - loc)|^2) / 2 - log det L."""
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + M) - self._half_log_det()

    def entropy(self):
        """n (1 + log(2 pi)) / 2 + log det L."""
        n = self._event_shape[0]
        H = 0.5 * n * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return H if tuple(H.shape) == self._batch_shape else H.expand(*self._batch_shape)
