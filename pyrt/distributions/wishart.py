"""The Wishart distribution over p x p positive-definite matrices: the law of sum_k x_k x_k^T
for df draws x_k ~ N(0, Sigma), extended to real df > p - 1. Everything is computed from
the lower Cholesky factor L of Sigma. Samples use the Bartlett decomposition: X = L A A^T L^T
with A lower triangular, A_ii = sqrt(chi2(df - i)) and A_ij ~ N(0, 1) below the diagonal;
the chi2 draws are reparameterized, so samples carry gradients to df and to Sigma."""

import math
import warnings

import numpy as np

import pyrt
from pyrt.distributions import constraints
from pyrt.distributions.chi2 import Chi2
from pyrt.distributions.exp_family import ExponentialFamily
from pyrt.distributions.multivariate_normal import precision_to_scale_tril
from pyrt.distributions.transforms_corr import vec_to_tril_matrix
from pyrt.distributions.utils import as_float_tensor, eps, lazy_property, standard_normal

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p):
    """The multivariate digamma function: sum_{i<p} digamma(x - i / 2)."""
    offsets = pyrt.tensor(np.arange(p, dtype=np.float32) / 2, device=x.device)
    return (x.unsqueeze(-1) - offsets).digamma().sum(-1)


class Wishart(ExponentialFamily):
    """Wishart(df, covariance_matrix=None, precision_matrix=None, scale_tril=None): exactly
    one of the three matrices (Sigma, Sigma^-1 or L with Sigma = L L^T), [..., p, p], and
    df > p - 1, a number or a tensor broadcast with the matrices' batch dims. The mean is
    df Sigma."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [(name, m) for name, m in (("covariance_matrix", covariance_matrix),
                                           ("precision_matrix", precision_matrix),
                                           ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        name, param = given[0]
        param = as_float_tensor(param, name)
        if param.dim() < 2:
            raise ValueError(f"{name} must be at least two-dimensional, with optional leading "
                             "batch dimensions")
        if param.shape[-1] != param.shape[-2]:
            raise ValueError(f"{name} must be a batch of square matrices, got shape "
                             f"{tuple(param.shape)}")
        p = param.shape[-1]
        event_shape = (p, p)
        df_tensor = as_float_tensor(df, "df")
        batch_shape = tuple(np.broadcast_shapes(tuple(param.shape[:-2]),
                                                tuple(df_tensor.shape)))
        if df_tensor.device != param.device:
            df_tensor = df_tensor.to(param.device)
        self.df = df_tensor.expand(*batch_shape)
        if bool((self.df <= p - 1).any().item()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, param.expand(*(batch_shape + event_shape)))
        if bool((self.df < p).any().item()):
            warnings.warn("Low df values detected. Singular samples are highly likely to "
                          "occur for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

        if name == "scale_tril":
            self._unbroadcasted_scale_tril = param
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = pyrt.linalg.cholesky(param)
        else:
            self._unbroadcasted_scale_tril = precision_to_scale_tril(param)
        self._dist_chi2 = self._bartlett_chi2()

    def _bartlett_chi2(self):
        """Chi2(df - i) for i < p, batched as batch_shape + (p,): the squares of the
        diagonal of the Bartlett factor."""
        p = self._event_shape[-1]
        offsets = pyrt.tensor(np.arange(p, dtype=np.float32), device=self.df.device)
        return Chi2(self.df.unsqueeze(-1) - offsets, validate_args=False)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = tuple(batch_shape)
        matrix_shape = batch_shape + self._event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        new.df = self.df.expand(*batch_shape)
        for name in ("covariance_matrix", "precision_matrix", "scale_tril"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(*matrix_shape))
        super(Wishart, new).__init__(batch_shape, self._event_shape, validate_args=False)
        new._dist_chi2 = new._bartlett_chi2()
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(*(self._batch_shape + self._event_shape))

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(*(self._batch_shape + self._event_shape))

    @lazy_property
    def precision_matrix(self):
        return self._unbroadcasted_scale_tril.cholesky_inverse().expand(
            *(self._batch_shape + self._event_shape))

    def _df_matrix(self):
        return self.df.reshape(self._batch_shape + (1, 1))

    @property
    def mean(self):
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        """(df - p - 1) Sigma, NaN where df <= p + 1."""
        factor = self.df - self._event_shape[-1] - 1
        factor = pyrt.where(factor <= 0, math.nan, factor)
        return factor.reshape(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        """Var X_ij = df (Sigma_ij^2 + Sigma_ii Sigma_jj)."""
        V = self.covariance_matrix
        diag = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (V.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape):
        p = self._event_shape[-1]
        # The diagonal of A is clamped above eps so that the sample stays nonsingular.
        diagonal = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps())
        below = standard_normal(tuple(sample_shape) + self._batch_shape + (p * (p - 1) // 2,),
                                self.df)
        A = vec_to_tril_matrix(below, diag=-1) + diagonal.diag_embed()
        chol = self._unbroadcasted_scale_tril @ A
        return chol @ chol.mT

    def rsample(self, sample_shape=(), max_try_correction=None):
        """A reparameterized sample. In float32 the Bartlett product may come out singular
        (for df close to p - 1 above all): such samples are drawn again, up to
        max_try_correction (default 10) times, with a warning; one still singular after that
        is returned as it is (its log_prob may be -inf)."""
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = tuple(sample_shape) if not isinstance(sample_shape, int) \
            else (sample_shape,)
        sample = self._bartlett_sampling(sample_shape)
        is_singular = ~self.support.check(sample)
        if bool(is_singular.any().item()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                fresh = self._bartlett_sampling(sample_shape)
                sample = pyrt.where(is_singular.unsqueeze(-1).unsqueeze(-1), fresh, sample)
                is_singular = ~self.support.check(sample)
                if not bool(is_singular.any().item()):
                    break
        return sample

    def _half_log_det(self):
        """log det L = log det Sigma / 2."""
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        """-df (p log 2 / 2 + log det L) - log Gamma_p(df / 2)
        + (df - p - 1) / 2 log det X - tr(Sigma^-1 X) / 2."""
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        trace = pyrt.cholesky_solve(value, self._unbroadcasted_scale_tril).diagonal(
            dim1=-2, dim2=-1).sum(-1)
        return (-nu * (p * _LOG_2 / 2 + self._half_log_det()) - (nu / 2).mvlgamma(p)
                + (nu - p - 1) / 2 * pyrt.linalg.slogdet(value).logabsdet - trace / 2)

    def entropy(self):
        """(p + 1) (p log 2 / 2 + log det L) + log Gamma_p(df / 2)
        - (df - p - 1) / 2 psi_p(df / 2) + df p / 2."""
        nu = self.df
        p = self._event_shape[-1]
        return ((p + 1) * (p * _LOG_2 / 2 + self._half_log_det()) + (nu / 2).mvlgamma(p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)

    @property
    def _natural_params(self):
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-pyrt.linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + (y + (p + 1) / 2).mvlgamma(p))
