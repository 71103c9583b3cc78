"""The Fisher-Snedecor (F) distribution: (X1 / df1) / (X2 / df2) for independent
X1 ~ Chi2(df1), X2 ~ Chi2(df2), sampled from two reparameterized gammas."""

from typing import ClassVar

from pyrt.distributions import constraints
from pyrt.distributions.distribution import Distribution
from pyrt.distributions.gamma import Gamma, clamp_tiny
from pyrt.distributions.utils import broadcast_all

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """FisherSnedecor(df1, df2): the F distribution with df1 > 0 and df2 > 0 degrees of
    freedom."""

    arg_constraints: ClassVar[dict] = {"df1": constraints.positive,
                                       "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2, names=("df1", "df2"))
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1, validate_args=False)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2, validate_args=False)
        super().__init__(tuple(self.df1.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(FisherSnedecor, batch_shape, _instance,
                              inner=("_gamma1", "_gamma2"))

    @property
    def mean(self):
        """df2 / (df2 - 2), NaN where df2 <= 2."""
        df2 = self.df2.masked_fill(self.df2 <= 2, float("nan"))
        return df2 / (df2 - 2)

    @property
    def mode(self):
        """(df1 - 2) / df1 * df2 / (df2 + 2), NaN where df1 <= 2."""
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return mode.masked_fill(self.df1 <= 2, float("nan"))

    @property
    def variance(self):
        df2 = self.df2.masked_fill(self.df2 <= 4, float("nan"))
        return (2 * df2.pow(2) * (self.df1 + df2 - 2)
                / (self.df1 * (df2 - 2).pow(2) * (df2 - 4)))

    def rsample(self, sample_shape=()):
        x1 = self._gamma1.rsample(sample_shape)
        x2 = clamp_tiny(self._gamma2.rsample(sample_shape))
        return clamp_tiny(x1 / x2)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * value.log()
        t3 = (ct1 + ct2) * (ct3 * value).log1p()
        return t1 + t2 - t3
