"""pyrt.distributions' continuous families: log_prob, cdf, icdf, entropy, mean, variance and
mode against scipy.stats (float64) and torch.distributions (where installed) over broadcast
parameter shapes; gradients of log_prob against finite differences of scipy's log density
and against torch; reparameterized gradients of sample means against the gradient of the
exact mean; sample moments of 100k seeded draws; batch/event shapes, expand and repr."""

import re

import numpy as np
import pytest
import scipy.stats as st
from hypothesis import given
from hypothesis import strategies as hs

import pyrt
import pyrt.distributions as D
from tests.distribution_checks import (
    F32,
    FEW,
    central_difference,
    needs_torch,
    reparameterized_draws,
)
from tests.distribution_checks import assert_close as _close
from tests.distribution_checks import tensor32 as _t

try:
    import torch
    import torch.distributions as TD
except ImportError:
    torch = None


def _real(rng, shape):
    return rng.uniform(-2, 2, shape).astype(F32)


def _pos(rng, shape):
    return rng.uniform(0.5, 2.5, shape).astype(F32)


# name: (parameter kinds, scipy frozen distribution from float64 parameters)
FAMILIES = {
    "Normal": ((_real, _pos), lambda a, b: st.norm(a, b)),
    "Uniform": ((_real, _real), lambda a, b: st.uniform(a, b - a)),
    "Laplace": ((_real, _pos), lambda a, b: st.laplace(a, b)),
    "Cauchy": ((_real, _pos), lambda a, b: st.cauchy(a, b)),
    "Exponential": ((_pos,), lambda r: st.expon(scale=1 / r)),
    "Gumbel": ((_real, _pos), lambda a, b: st.gumbel_r(a, b)),
    "LogNormal": ((_real, _pos), lambda a, b: st.lognorm(s=b, scale=np.exp(a))),
    "HalfNormal": ((_pos,), lambda s: st.halfnorm(scale=s)),
    "HalfCauchy": ((_pos,), lambda s: st.halfcauchy(scale=s)),
    "Weibull": ((_pos, _pos), lambda s, c: st.weibull_min(c, scale=s)),
    "Pareto": ((_pos, _pos), lambda s, a: st.pareto(a, scale=s)),
}
HEAVY = {"Cauchy", "HalfCauchy"}  # no finite mean or variance


def _params(name, rng, shapes):
    kinds = FAMILIES[name][0]
    params = [kind(rng, shape) for kind, shape in zip(kinds, shapes)]
    if name == "Uniform":  # high = low + a positive width
        params[1] = (params[0] + _pos(rng, shapes[1])).astype(F32)
    return params


@hs.composite
def batch_shapes(draw, n):
    """A batch shape and n parameter shapes that broadcast to it."""
    full = draw(hs.lists(hs.integers(1, 4), min_size=0, max_size=3))
    shapes = []
    for _ in range(n):
        cut = draw(hs.integers(0, len(full)))
        shapes.append(tuple(1 if draw(hs.booleans()) else s for s in full[cut:]))
    return tuple(np.broadcast_shapes(*shapes)), shapes


@pytest.mark.parametrize("name", sorted(FAMILIES))
@FEW
@given(shapes=hs.integers(1, 2).flatmap(batch_shapes), seed=hs.integers(0, 2**16))
def test_values_match_scipy(name, shapes, seed):
    rng = np.random.default_rng(seed)
    kinds, ref = FAMILIES[name]
    batch, param_shapes = shapes
    params = _params(name, rng, param_shapes[: len(kinds)] + [()] * (len(kinds) - 1))
    batch = np.broadcast_shapes(*(p.shape for p in params))
    d = getattr(D, name)(*map(_t, params))
    assert d.batch_shape == batch and d.event_shape == ()
    exact = ref(*(np.broadcast_to(p, batch).astype(np.float64) for p in params))
    values = exact.rvs(size=(2,) + batch, random_state=rng).astype(F32)
    values64 = values.astype(np.float64)
    _close(d.log_prob(_t(values)), exact.logpdf(values64), rtol=1e-3, atol=1e-3)
    _close(d.cdf(_t(values)), exact.cdf(values64), atol=5e-4)
    u = rng.uniform(0.05, 0.95, (2,) + batch).astype(F32)
    _close(d.icdf(_t(u)), exact.ppf(u.astype(np.float64)), rtol=2e-3, atol=2e-3)
    _close(d.entropy(), exact.entropy(), rtol=1e-3, atol=1e-3)
    assert d.entropy().shape == batch
    _close(d.perplexity(), np.exp(exact.entropy()), rtol=2e-3, atol=1e-3)
    if name not in HEAVY:
        _close(d.mean, exact.mean(), rtol=1e-3)
        _close(d.variance, exact.var(), rtol=2e-3, atol=1e-3)
        _close(d.stddev, exact.std(), rtol=2e-3, atol=1e-3)


@needs_torch
@pytest.mark.parametrize("name", sorted(FAMILIES))
@FEW
@given(shapes=hs.integers(1, 2).flatmap(batch_shapes), seed=hs.integers(0, 2**16))
def test_values_and_gradients_match_torch(name, shapes, seed):
    rng = np.random.default_rng(seed)
    kinds, ref = FAMILIES[name]
    params = _params(name, rng, shapes[1][: len(kinds)] + [()] * (len(kinds) - 1))
    batch = np.broadcast_shapes(*(p.shape for p in params))
    mine = [pyrt.tensor(p, requires_grad=True) for p in params]
    theirs = [torch.tensor(p, requires_grad=True) for p in params]
    d, td = getattr(D, name)(*mine), getattr(TD, name)(*theirs)
    values = ref(*(np.broadcast_to(p, batch).astype(np.float64) for p in params)).rvs(
        size=(3,) + batch, random_state=rng).astype(F32)
    lp, tlp = d.log_prob(_t(values)), td.log_prob(torch.tensor(values))
    _close(lp.detach(), tlp.detach().numpy(), rtol=1e-4, atol=1e-4)
    (lp.sum() + d.entropy().sum()).backward()
    (tlp.sum() + td.entropy().sum()).backward()
    for m, t in zip(mine, theirs):
        _close(m.grad, t.grad.numpy(), rtol=1e-3, atol=1e-3)
    _close(d.cdf(_t(values)).detach(), td.cdf(torch.tensor(values)).detach().numpy(),
           atol=1e-5)
    u = rng.uniform(0.05, 0.95, batch).astype(F32)
    _close(d.icdf(_t(u)).detach(), td.icdf(torch.tensor(u)).detach().numpy(), rtol=1e-4)
    for prop in ("mean", "mode", "variance", "stddev"):
        _close(getattr(d, prop).detach(), getattr(td, prop).detach().numpy(), rtol=1e-4)
    assert re.findall(r"\w+: ", repr(d)) == re.findall(r"\w+: ", repr(td))


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_log_prob_gradients_match_finite_differences(name):
    rng = np.random.default_rng(3)
    kinds, ref = FAMILIES[name]
    params = _params(name, rng, [(3,)] * len(kinds))
    values = ref(*(p.astype(np.float64) for p in params)).rvs(random_state=rng).astype(F32)
    mine = [pyrt.tensor(p, requires_grad=True) for p in params]
    getattr(D, name)(*mine).log_prob(_t(values)).sum().backward()
    params64 = [p.astype(np.float64) for p in params]
    for i, m in enumerate(mine):
        numeric = central_difference(lambda *q: ref(*q).logpdf(values), params64, i, 1e-6)
        _close(m.grad, numeric, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("name", sorted(set(FAMILIES) - HEAVY))
def test_sample_moments_and_reparameterized_gradients(name):
    """100k draws: their mean and variance within a few standard errors of the exact ones,
    and the gradient of their mean with respect to the parameters (through rsample) near the
    gradient of the exact mean (central differences of scipy's mean)."""
    kinds, ref = FAMILIES[name]
    params = {"Pareto": [1.5, 4.5], "Weibull": [1.5, 2.0]}.get(
        name, [0.3, 1.3][: len(kinds)] if name != "Exponential" else [1.7])
    if name == "Uniform":
        params = [0.3, 1.9]
    exact = ref(*params)
    n = 100_000
    mine, x = reparameterized_draws(name, params, seed=5, n=n)
    sd = float(exact.std())
    assert abs(float(x.mean().item()) - exact.mean()) < 5 * sd / np.sqrt(n)
    kurt = float(exact.stats(moments="k")) + 3
    var_se = sd**2 * np.sqrt((kurt - 1) / n)
    assert abs(float(x.var().item()) - exact.var()) < 6 * var_se + 1e-4
    x.mean().backward()
    for i, m in enumerate(mine):
        numeric = central_difference(lambda *q: ref(*q).mean(), params, i, 1e-5)
        assert abs(float(m.grad.item()) - numeric) < 0.03 * (1 + abs(numeric)), (i, numeric)


def test_seeded_draws_repeat_and_sample_has_no_gradient():
    loc = pyrt.tensor([0.0, 1.0], requires_grad=True)
    d = D.Normal(loc, 2.0)

    def draws():
        pyrt.manual_seed(123)
        return [d.sample((4,)).numpy(), D.Gumbel(0.0, 1.0).sample((3,)).numpy(),
                D.MultivariateNormal(pyrt.zeros(2), pyrt.eye(2)).sample((2,)).numpy()]

    for a, b in zip(draws(), draws()):
        np.testing.assert_array_equal(a, b)
    assert not d.sample((4,)).requires_grad
    assert d.rsample((4,)).requires_grad
    assert d.sample((2, 3)).shape == (2, 3, 2)


def test_shapes_expand_and_broadcasting():
    d = D.Normal(pyrt.zeros(3, 1), pyrt.ones(4))
    assert d.batch_shape == (3, 4) and d.event_shape == ()
    assert d.sample((5,)).shape == (5, 3, 4)
    assert d.log_prob(pyrt.zeros(4)).shape == (3, 4)
    e = d.expand((2, 3, 4))
    assert type(e) is D.Normal and e.batch_shape == (2, 3, 4)
    assert e.sample().shape == (2, 3, 4)
    for dist in (D.Gumbel(0.0, 1.0), D.LogNormal(0.0, 1.0), D.Weibull(1.0, 2.0),
                 D.Pareto(1.0, 2.0), D.HalfNormal(1.0), D.Uniform(0.0, 1.0),
                 D.Exponential(1.0), D.Laplace(0.0, 1.0), D.Cauchy(0.0, 1.0)):
        big = dist.expand((2, 3))
        assert type(big) is type(dist) and big.batch_shape == (2, 3)
        assert big.sample((4,)).shape == (4, 2, 3)
        assert big.log_prob(dist.sample()).shape == (2, 3)
    mvn = D.MultivariateNormal(pyrt.zeros(3), scale_tril=pyrt.eye(3)).expand((2,))
    assert mvn.batch_shape == (2,) and mvn.event_shape == (3,)
    assert mvn.sample((4,)).shape == (4, 2, 3) and mvn.entropy().shape == (2,)
    ind = D.Independent(D.Normal(pyrt.zeros(2, 3), 1.0), 1)
    assert ind.batch_shape == (2,) and ind.event_shape == (3,)
    assert ind.expand((5, 2)).batch_shape == (5, 2)
    _close(ind.log_prob(pyrt.zeros(2, 3)), np.full(2, 3 * st.norm.logpdf(0)))


def test_repr():
    assert repr(D.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"
    assert repr(D.Normal(pyrt.zeros(2), 1.0)) == "Normal(loc: (2,), scale: (2,))"
    assert repr(D.Exponential(2.0)) == "Exponential(rate: 2.0)"
    assert repr(D.Independent(D.Normal(pyrt.zeros(2), 1.0), 1)) == \
        "Independent(Normal(loc: (2,), scale: (2,)), 1)"
    assert repr(D.constraints.interval(0, 1)) == "Interval(lower_bound=0, upper_bound=1)"
    assert repr(D.constraints.positive) == "GreaterThan(lower_bound=0.0)"


def test_validate_args_errors():
    with pytest.raises(ValueError, match="Expected parameter scale .* to satisfy the "
                                         "constraint GreaterThan"):
        D.Normal(0.0, -1.0)
    D.Normal(0.0, -1.0, validate_args=False)  # not checked
    with pytest.raises(ValueError, match="Uniform is not defined when low>= high"):
        D.Uniform(1.0, 1.0)
    with pytest.raises(ValueError, match="Expected value argument .* to be within the support"):
        D.Exponential(1.0).log_prob(pyrt.tensor(-1.0))
    with pytest.raises(ValueError, match="to be within the support"):
        D.Pareto(2.0, 1.0).log_prob(pyrt.tensor(1.0))
    with pytest.raises(ValueError, match="must be a Tensor"):
        D.Normal(0.0, 1.0).log_prob(0.5)
    with pytest.raises(ValueError, match="not broadcastable"):
        D.Normal(pyrt.zeros(3), 1.0).log_prob(pyrt.zeros(2))
    with pytest.raises(TypeError, match="loc must be a Tensor or a real number"):
        D.Normal("a", 1.0)
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix"):
        D.MultivariateNormal(pyrt.zeros(2))
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix"):
        D.MultivariateNormal(pyrt.zeros(2), pyrt.eye(2), scale_tril=pyrt.eye(2))
    with pytest.raises(ValueError, match="loc must be at least one-dimensional"):
        D.MultivariateNormal(pyrt.tensor(0.0), pyrt.eye(1))
    with pytest.raises(ValueError, match="positive_definite|PositiveDefinite"):
        D.MultivariateNormal(pyrt.zeros(2), pyrt.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="LowerCholesky"):
        D.MultivariateNormal(pyrt.zeros(2), scale_tril=pyrt.tensor([[1.0, 1.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="cov_diag must be a batch of vectors"):
        D.LowRankMultivariateNormal(pyrt.zeros(2), pyrt.ones(2, 1), pyrt.ones(3))
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims"):
        D.Independent(D.Normal(pyrt.zeros(2), 1.0), 2)
    with pytest.raises(NotImplementedError, match="No KL"):
        D.kl_divergence(D.Cauchy(0.0, 1.0), D.Normal(0.0, 1.0))
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")
