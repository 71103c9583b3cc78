"""Transforms: invertible (or at least differentiable) maps y = f(x) with the log of the
absolute Jacobian determinant, log |dy/dx|, that TransformedDistribution needs to score
values: log p_Y(y) = log p_X(x) - log|det J_f(x)| with x = f^-1(y).

Each transform has a `domain` and `codomain` constraint, `bijective`, `sign` (for monotone
scalar maps), `event_dim` (how many rightmost dims one application couples: 0 for pointwise
maps, 1 for softmax), and `inv`, the inverse transform. With cache_size=1 a transform keeps
its latest (x, y) pair, so that scoring a value it just produced inverts exactly.
"""

import math
import weakref

import numpy as np

import pyrt
from pyrt.distributions import constraints
from pyrt.distributions.utils import broadcast_all, sum_rightmost
from pyrt.functional import _tensor

__all__ = [
    "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
    "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform",
    "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
    "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
    "SoftplusTransform", "StackTransform", "StickBreakingTransform", "TanhTransform",
    "Transform", "identity_transform",
]


class Transform:
    """The base class of transforms: subclasses define _call (x -> y), _inverse (y -> x) and
    log_abs_det_jacobian(x, y)."""

    bijective = False
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError(f"cache_size must be 0 or 1, got {cache_size!r}")
        self._cache_size = cache_size
        self._inv = None
        self._cached_x_y = None, None

    @property
    def event_dim(self):
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        """The inverse transform: inv(self(x)) == x."""
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = weakref.ref(inv)
        return inv

    @property
    def sign(self):
        """+1 or -1: whether a monotone scalar transform increases or decreases."""
        raise NotImplementedError

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x):
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y):
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        """log |dy/dx| at x (with y = self(x)), summed over the transform's event dims."""
        raise NotImplementedError

    def forward_shape(self, shape):
        """The shape of the output for an input of `shape`."""
        return shape

    def inverse_shape(self, shape):
        """The shape of the input for an output of `shape`."""
        return shape

    def __repr__(self):
        return self.__class__.__name__ + "()"


class _InverseTransform(Transform):
    """The inverse of a transform, made by `.inv`."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def with_cache(self, cache_size=1):
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self):
        return f"{self.__class__.__name__}({self._inv!r})"

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """parts[-1](...parts[1](parts[0](x))): the transforms applied in order; the empty
    composition is the identity."""

    def __init__(self, parts, cache_size=0):
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        for part in parts:
            if not isinstance(part, Transform):
                raise TypeError(f"ComposeTransform(): each part must be a Transform, got "
                                f"{type(part).__name__}")
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @property
    def domain(self):
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        # The domain's event_dim must cover every part's event_dim.
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self):
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self):
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = weakref.ref(inv)
            inv._inv = weakref.ref(self)
        return inv

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return x.new_zeros(x.shape)
        # Each part's term is summed down to the composition's event dims.
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms = []
        event_dim = self.domain.event_dim
        for part, xi, yi in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(sum_rightmost(part.log_abs_det_jacobian(xi, yi),
                                       event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return total

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        body = ",\n    ".join(repr(p) for p in self.parts)
        return f"{self.__class__.__name__}(\n    {body}\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """base_transform with `reinterpreted_batch_ndims` more rightmost dims taken as one event:
    its log_abs_det_jacobian is summed over them."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @property
    def domain(self):
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @property
    def codomain(self):
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        return self.base_transform(x)

    def _inverse(self, y):
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                             self.reinterpreted_batch_ndims)

    def __repr__(self):
        return (f"{self.__class__.__name__}({self.base_transform!r}, "
                f"{self.reinterpreted_batch_ndims})")

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)


class ParameterlessTransform(Transform):
    """A transform with no parameters: equal to every other of its class, as torch's
    ExpTransform, TanhTransform, ... compare."""

    def __eq__(self, other):
        return isinstance(other, type(self))

    __hash__ = object.__hash__

class ExpTransform(ParameterlessTransform):
    """y = exp(x)."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """y = x ** exponent, for positive x."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent, names=("exponent",))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        if not isinstance(other, PowerTransform):
            return False
        return bool((self.exponent == other.exponent).all().item())

    __hash__ = object.__hash__

    def _call(self, x):
        # x ** exponent as exp(exponent log x): the exponent is a tensor and x > 0.
        return (self.exponent * x.log()).exp()

    def _inverse(self, y):
        return (y.log() / self.exponent).exp()

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return tuple(np.broadcast_shapes(tuple(shape), tuple(self.exponent.shape)))

    inverse_shape = forward_shape


def _clipped_sigmoid(x):
    # Keep the result inside (0, 1) so that its logit stays finite.
    tiny = 1.1754943508222875e-38
    eps = 1.1920928955078125e-07
    return x.sigmoid().clamp(min=tiny, max=1.0 - eps)


class SigmoidTransform(ParameterlessTransform):
    """y = 1 / (1 + exp(-x))."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def _call(self, x):
        return _clipped_sigmoid(x)

    def _inverse(self, y):
        tiny = 1.1754943508222875e-38
        eps = 1.1920928955078125e-07
        y = y.clamp(min=tiny, max=1.0 - eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        # log(s(x) (1 - s(x))) = -softplus(-x) - softplus(x)
        return -pyrt.nn.functional.softplus(-x) - pyrt.nn.functional.softplus(x)


class TanhTransform(ParameterlessTransform):
    """y = tanh(x)."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        # atanh; a cached x is the stable way back from values near +-1.
        return y.atanh()

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x)), stable for large |x|.
        return 2.0 * (math.log(2.0) - x - pyrt.nn.functional.softplus(-2.0 * x))


class SoftplusTransform(ParameterlessTransform):
    """y = log(1 + exp(x)), x itself where x > 20 (as softplus): from the reals onto the
    positive reals, gentler than exp for large x."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return pyrt.nn.functional.softplus(x)

    def _inverse(self, y):
        # x = log(exp(y) - 1) = y + log(1 - exp(-y)), which does not overflow for large y.
        return (-(-y).expm1()).log() + y

    def log_abs_det_jacobian(self, x, y):
        # dy/dx = sigmoid(x), whose log is -softplus(-x).
        return -pyrt.nn.functional.softplus(-x)


class AbsTransform(ParameterlessTransform):
    """y = |x| (not bijective: its inverse gives the non-negative root)."""

    domain = constraints.real
    codomain = constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """y = loc + scale * x, over events of `event_dim` rightmost dims."""

    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @property
    def domain(self):
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    @property
    def codomain(self):
        return self.domain

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        for a, b in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(a, _tensor()) or isinstance(b, _tensor()):
                if not bool((a == b).all().item()):
                    return False
            elif a != b:
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, _tensor()):
            return self.scale.sign()
        return 1 if self.scale > 0 else -1 if self.scale < 0 else 0

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        scale = self.scale
        if isinstance(scale, _tensor()):
            result = scale.abs().log()
        else:
            result = x * 0 + math.log(abs(scale))  # (on x's device)
        shape = tuple(x.shape)
        if self.event_dim:
            size = result.shape[: result.dim() - self.event_dim] + (-1,)
            result = result.reshape(size).sum(-1)
            shape = shape[: len(shape) - self.event_dim]
        full = np.broadcast_shapes(shape, tuple(result.shape))
        return result.expand(*full) if tuple(result.shape) != full else result

    def forward_shape(self, shape):
        return tuple(np.broadcast_shapes(tuple(shape), tuple(getattr(self.loc, "shape", ())),
                                         tuple(getattr(self.scale, "shape", ()))))

    inverse_shape = forward_shape


class SoftmaxTransform(ParameterlessTransform):
    """y = softmax(x) over the last dim: from unconstrained vectors onto the simplex. Not
    bijective (adding a constant to x leaves y alone), so it has no log_abs_det_jacobian; its
    inverse gives log(y), one of the preimages."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        return x.softmax(-1)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    inverse_shape = forward_shape


class StickBreakingTransform(ParameterlessTransform):
    """A bijection from vectors of K - 1 reals onto the K-simplex: each coordinate, shifted by
    -log(K - 1 - i) so that x = 0 maps to the uniform vector, is turned by a sigmoid into the
    fraction of the stick left that is broken off."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _offset(self, n, like):
        from pyrt.tensor import _move

        data = np.log(np.arange(n, 0, -1, dtype=np.float32))
        return _tensor()(_move(data, like.device))

    def _call(self, x):
        z = _clipped_sigmoid(x - self._offset(x.shape[-1], x))
        ones = pyrt.ones(tuple(x.shape[:-1]) + (1,), device=x.device)
        z_cumprod = (1 - z).cumprod(-1)
        return pyrt.cat([z, ones], -1) * pyrt.cat([ones, z_cumprod], -1)

    def _inverse(self, y):
        tiny = 1.1754943508222875e-38
        y_crop = y[..., :-1]
        offset = self._offset(y_crop.shape[-1], y)
        sf = (1 - y_crop.cumsum(-1)).clamp(min=tiny)
        return y_crop.log() - sf.log() + offset

    def log_abs_det_jacobian(self, x, y):
        x = x - self._offset(x.shape[-1], x)
        # log|det J| = sum_i log(z_i) + log(1 - z_i) + log(stick left before i)
        return (-x + pyrt.nn.functional.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(ParameterlessTransform):
    """From square matrices to lower-triangular ones with a positive diagonal: the strictly
    lower triangle is kept and the diagonal exponentiated. Not bijective."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(ParameterlessTransform):
    """From square matrices to positive-definite ones: L L^T with L the lower-Cholesky
    transform of x. Not bijective."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        lower = LowerCholeskyTransform()(x)
        return lower @ lower.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(pyrt.linalg.cholesky(y))


class CumulativeDistributionTransform(Transform):
    """y = distribution.cdf(x): from the distribution's support onto [0, 1], e.g. to build a
    copula from the marginals of a multivariate distribution. Its inverse is
    distribution.icdf and its log |dy/dx| the log density."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)


# The transforms of joined or reshaped events and onto correlation Cholesky factors live in
# modules of their own; they belong to this namespace, as in torch.distributions.transforms.
from pyrt.distributions.transforms_corr import CorrCholeskyTransform  # noqa: E402
from pyrt.distributions.transforms_shape import (  # noqa: E402
    CatTransform,
    ReshapeTransform,
    StackTransform,
)
