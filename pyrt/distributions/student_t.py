"""Student's t distribution, sampled as loc + scale X / sqrt(Z / df) for X standard normal
and Z ~ Chi2(df) (so that samples are reparameterized in all three parameters)."""

import math
from typing import ClassVar

from pyrt.distributions import constraints
from pyrt.distributions.chi2 import Chi2
from pyrt.distributions.distribution import Distribution
from pyrt.distributions.utils import broadcast_all, standard_normal

__all__ = ["StudentT"]


class StudentT(Distribution):
    """StudentT(df, loc=0.0, scale=1.0): density proportional to
    (1 + ((x - loc) / scale)^2 / df)^(-(df + 1) / 2)."""

    arg_constraints: ClassVar[dict] = {"df": constraints.positive, "loc": constraints.real,
                                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        """loc, NaN where df <= 1."""
        return self.loc.masked_fill(self.df <= 1, float("nan"))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        """scale^2 df / (df - 2) for df > 2, infinite for 1 < df <= 2, NaN for df <= 1."""
        df = self.df
        big = df > 2
        m = self.scale.pow(2) * df / (df - 2).masked_fill(~big, 1.0)
        m = m.masked_fill((df <= 2) & (df > 1), math.inf)
        return m.masked_fill(df <= 1, float("nan"))

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale,
                                                      names=("df", "loc", "scale"))
        self._chi2 = Chi2(self.df, validate_args=False)
        super().__init__(tuple(self.df.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(StudentT, batch_shape, _instance, inner=("_chi2",))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = standard_normal(shape, self.df)
        z = self._chi2.rsample(sample_shape)
        y = x * (z / self.df).rsqrt()
        return self.loc + self.scale * y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + (0.5 * self.df).lgamma() - (0.5 * (self.df + 1.0)).lgamma())
        return -0.5 * (self.df + 1.0) * (y.pow(2) / self.df).log1p() - z

    def entropy(self):
        df = self.df
        lbeta = (0.5 * df).lgamma() + math.lgamma(0.5) - (0.5 * (df + 1)).lgamma()
        return (self.scale.log() + 0.5 * (df + 1) * ((0.5 * (df + 1)).digamma()
                                                     - (0.5 * df).digamma())
                + 0.5 * df.log() + lbeta)
