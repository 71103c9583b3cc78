"""The LKJ distribution over the lower Cholesky factors L of dim x dim correlation matrices
M = L L^T, with density proportional to det(M)^(concentration - 1) over M (Lewandowski,
Kurowicka and Joe, 2009): concentration 1 is uniform over correlation matrices, larger
values favour the identity. Samples come from the onion method; there is no
reparameterized sample."""

import math
from typing import ClassVar

import numpy as np

import pyrt
from pyrt.distributions import constraints
from pyrt.distributions.beta import Beta
from pyrt.distributions.distribution import Distribution
from pyrt.distributions.utils import broadcast_all, standard_normal, tiny

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJCholesky(dim, concentration=1.0): dim >= 2; concentration (eta) > 0, batched."""

    arg_constraints: ClassVar[dict] = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 2:
            raise ValueError("Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = int(dim)
        (self.concentration,) = broadcast_all(concentration, names=("concentration",))
        # The onion method: row i >= 1 of L is sqrt(y_i) times a uniform unit vector over its
        # i strictly-lower entries, the diagonal completing its length, with
        # y_i ~ Beta(i / 2, eta + (dim - 1 - i) / 2) (Lewandowski et al., section 3.2). Row 0
        # is e_0: its Beta draw goes unused.
        rows = np.maximum(np.arange(self.dim), 1).astype(np.float32)
        rows = pyrt.tensor(rows, device=self.concentration.device)
        marginal = self.concentration + 0.5 * (self.dim - 1)
        self._beta = Beta(0.5 * rows, marginal.unsqueeze(-1) - 0.5 * rows, validate_args=False)
        super().__init__(tuple(self.concentration.shape), (self.dim, self.dim), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = tuple(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(*batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        """The onion method, vectorized over rows: row i takes the squared length y_i off the
        diagonal, spread over a uniform direction in its i strictly-lower entries."""
        from pyrt.autograd import no_grad

        with no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = self._extended_shape(sample_shape)
            u = standard_normal(shape, self.concentration).tril(-1)
            norm = u.norm(dim=-1, keepdim=True)
            # Row 0 has no strictly-lower entries: its zero norm must not divide.
            u = u / pyrt.where(norm == 0, 1.0, norm)
            w = y.sqrt() * u
            diagonal = (1 - w.pow(2).sum(-1)).clamp(min=tiny()).sqrt()
            return w + diagonal.diag_embed()

    def log_prob(self, value):
        """sum_{i>=1} (2 (eta - 1) + dim - 1 - i) log L_ii less the log normalizer: det(M) =
        prod L_ii^2, and the Jacobian from L to M adds prod L_ii^(dim - 1 - i)."""
        if self._validate_args:
            self._validate_sample(value)
        diagonal = value.diagonal(dim1=-2, dim2=-1)[..., 1:]
        order = pyrt.tensor(np.arange(2, self.dim + 1, dtype=np.float32),
                            device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diagonal.log()).sum(-1)
        # The normalizer, page 1999 of Lewandowski et al.; their pi term is
        # dim (dim - 1) / 4 log pi, the multivariate lgamma's (dim - 1) (dim - 2) / 4 log pi.
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = alpha.lgamma() * dm1
        numerator = (alpha - 0.5).mvlgamma(dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized - (pi_constant + numerator - denominator)
