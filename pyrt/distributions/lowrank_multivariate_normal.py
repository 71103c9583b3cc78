"""The multivariate normal with a low-rank-plus-diagonal covariance W W^T + diag(D),
W = cov_factor [..., n, m], D = cov_diag [..., n]. Its log density and entropy use the
m x m capacitance matrix C = I + W^T D^-1 W: by the matrix determinant lemma
det(W W^T + D) = det(C) det(D), and by Woodbury
x^T (W W^T + D)^-1 x = x^T D^-1 x - |chol(C)^-1 W^T D^-1 x|^2, costing O(n m^2), not O(n^3)."""

import math
from typing import ClassVar

import numpy as np

import pyrt
from pyrt.distributions import constraints
from pyrt.distributions.distribution import Distribution
from pyrt.distributions.multivariate_normal import batch_mahalanobis, batch_mv
from pyrt.distributions.utils import as_float_tensor, lazy_property, standard_normal

__all__ = ["LowRankMultivariateNormal"]


def _capacitance_tril(W, D):
    """chol(I + W^T D^-1 W)."""
    m = W.shape[-1]
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    K = Wt_Dinv @ W + pyrt.eye(m, device=W.device)
    return pyrt.linalg.cholesky(K)


def _lowrank_logdet(W, D, capacitance_tril):
    """log det(W W^T + D) = 2 log det chol(C) + sum log D."""
    return (2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
            + D.log().sum(-1))


def _lowrank_mahalanobis(W, D, x, capacitance_tril):
    """x^T (W W^T + D)^-1 x by Woodbury's identity."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    Wt_Dinv_x = batch_mv(Wt_Dinv, x)
    return (x.pow(2) / D).sum(-1) - batch_mahalanobis(capacitance_tril, Wt_Dinv_x)


class LowRankMultivariateNormal(Distribution):
    """LowRankMultivariateNormal(loc, cov_factor, cov_diag): covariance
    cov_factor @ cov_factor.mT + diag(cov_diag)."""

    arg_constraints: ClassVar[dict] = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        loc = as_float_tensor(loc, "loc")
        cov_factor = as_float_tensor(cov_factor, "cov_factor")
        cov_diag = as_float_tensor(cov_diag, "cov_diag")
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape "
                             f"{event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            batch_shape = np.broadcast_shapes(tuple(loc.shape[:-1]),
                                              tuple(cov_factor.shape[:-2]),
                                              tuple(cov_diag.shape[:-1]))
        except ValueError:
            raise ValueError(f"Incompatible batch shapes: loc {tuple(loc.shape)}, cov_factor "
                             f"{tuple(cov_factor.shape)}, cov_diag {tuple(cov_diag.shape)}"
                             ) from None
        n, m = event_shape[0], cov_factor.shape[-1]
        self.loc = loc.expand(*(batch_shape + (n,)))
        self.cov_factor = cov_factor.expand(*(batch_shape + (n, m)))
        self.cov_diag = cov_diag.expand(*(batch_shape + (n,)))
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(LowRankMultivariateNormal, batch_shape, _instance,
                              shared=("_unbroadcasted_cov_factor", "_unbroadcasted_cov_diag",
                                      "_capacitance_tril"))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1)
                + self._unbroadcasted_cov_diag).expand(*(self._batch_shape
                                                         + self._event_shape))

    @lazy_property
    def covariance_matrix(self):
        W = self._unbroadcasted_cov_factor
        cov = W @ W.mT + self._unbroadcasted_cov_diag.diag_embed()
        return cov.expand(*(self._batch_shape + self._event_shape + self._event_shape))

    @lazy_property
    def scale_tril(self):
        return pyrt.linalg.cholesky(self.covariance_matrix)

    @lazy_property
    def precision_matrix(self):
        # Woodbury: (W W^T + D)^-1 = D^-1 - A^T A with A = chol(C)^-1 W^T D^-1.
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        Wt_Dinv = W.mT / D.unsqueeze(-2)
        shape = np.broadcast_shapes(tuple(self._capacitance_tril.shape[:-2]),
                                    tuple(Wt_Dinv.shape[:-2]))
        m, n = Wt_Dinv.shape[-2:]
        A = pyrt.linalg.solve_triangular(self._capacitance_tril.expand(*(shape + (m, m))),
                                         Wt_Dinv.expand(*(shape + (m, n))), upper=False)
        precision = D.reciprocal().diag_embed() - A.mT @ A
        return precision.expand(*(self._batch_shape + self._event_shape + self._event_shape))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        m = self._unbroadcasted_cov_factor.shape[-1]
        eps_W = standard_normal(tuple(shape[:-1]) + (m,), self.loc)
        eps_D = standard_normal(shape, self.loc)
        return (self.loc + batch_mv(self._unbroadcasted_cov_factor, eps_W)
                + self._unbroadcasted_cov_diag.sqrt() * eps_D)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _lowrank_mahalanobis(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                 diff, self._capacitance_tril)
        log_det = _lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                  self._capacitance_tril)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + log_det + M)

    def entropy(self):
        log_det = _lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                  self._capacitance_tril)
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        return H if tuple(H.shape) == self._batch_shape else H.expand(*self._batch_shape)
