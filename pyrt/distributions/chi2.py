"""The chi-squared distribution: Gamma(df / 2, 1 / 2)."""

from typing import ClassVar

from pyrt.distributions import constraints
from pyrt.distributions.gamma import Gamma
from pyrt.distributions.utils import broadcast_all

__all__ = ["Chi2"]


class Chi2(Gamma):
    """Chi2(df): the sum of the squares of df standard normals (df > 0 need not be whole)."""

    arg_constraints: ClassVar[dict] = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df, names=("df",))
        super().__init__(0.5 * df, df * 0 + 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self):
        return self.concentration * 2
