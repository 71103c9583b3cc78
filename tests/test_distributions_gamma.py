"""pyrt.distributions' gamma family (Gamma, Chi2, Beta, Dirichlet, StudentT, FisherSnedecor,
Kumaraswamy, InverseGamma) and VonMises, LogisticNormal and MixtureSameFamily: log_prob, cdf,
mean, variance and entropy against scipy.stats (float64) and torch.distributions (where
installed); gradients of log_prob against torch and finite differences; the implicit
reparameterization gradients of gamma and Dirichlet draws against torch's at the same draws
and against finite differences of the inverse CDF at fixed noise; moments of 100k draws; KL
divergences against torch and numerical integration; expand, shapes and argument errors."""

import numpy as np
import pytest
import scipy.stats as st
from hypothesis import given
from hypothesis import strategies as hs
from scipy import integrate, special

import pyrt
import pyrt.distributions as D
from pyrt.distributions.gamma_sampling import beta_grad, standard_gamma_grad
from tests.distribution_checks import (
    F32,
    FEW,
    central_difference,
    needs_torch,
    reparameterized_draws,
    shapes,
)
from tests.distribution_checks import assert_close as _close
from tests.distribution_checks import tensor32 as _t

try:
    import torch
    import torch.distributions as TD
    from torch.distributions.dirichlet import _Dirichlet_backward
except ImportError:
    torch = None


def _kumaraswamy(a, b):
    """A scipy-like frozen Kumaraswamy from its closed forms."""
    class Frozen:
        def logpdf(self, x):
            return np.log(a * b) + (a - 1) * np.log(x) + (b - 1) * np.log1p(-x ** a)

        def cdf(self, x):
            return 1 - (1 - x ** a) ** b

        def moment(self, n):
            return b * special.beta(1 + n / a, b)

        def mean(self):
            return self.moment(1)

        def var(self):
            return self.moment(2) - self.moment(1) ** 2

        def entropy(self):
            return ((1 - 1 / b) + (1 - 1 / a) * (special.digamma(b + 1) + np.euler_gamma)
                    - np.log(a * b))

        def rvs(self, size, random_state):
            u = random_state.uniform(0.01, 0.99, size)
            return (1 - (1 - u) ** (1 / b)) ** (1 / a)

    return Frozen()


# name: (number of parameters, scipy frozen distribution from float64 parameters)
FAMILIES = {
    "Gamma": (2, lambda c, r: st.gamma(c, scale=1 / r)),
    "Chi2": (1, lambda df: st.chi2(df)),
    "Beta": (2, lambda a, b: st.beta(a, b)),
    "StudentT": (3, lambda df, loc, scale: st.t(df + 2, loc - 1.5, scale)),
    "FisherSnedecor": (2, lambda d1, d2: st.f(d1, d2 + 4)),
    "InverseGamma": (2, lambda c, r: st.invgamma(c + 2, scale=r)),
    "Kumaraswamy": (2, _kumaraswamy),
    "VonMises": (2, lambda loc, k: st.vonmises(k, loc - 1.5)),
}
# the parameters as the family takes them, from the positive draws the scipy lambdas take
SHIFT = {"StudentT": (lambda df, loc, scale: (df + 2, loc - 1.5, scale)),
         "FisherSnedecor": (lambda d1, d2: (d1, d2 + 4)),
         "InverseGamma": (lambda c, r: (c + 2, r)),
         "VonMises": (lambda loc, k: (loc - 1.5, k))}
NO_CDF = {"Beta", "StudentT", "FisherSnedecor", "InverseGamma", "VonMises", "Kumaraswamy"}
NO_ENTROPY = {"FisherSnedecor", "VonMises"}


def _family(name, params):
    return getattr(D, name)(*SHIFT.get(name, lambda *p: p)(*params))


@pytest.mark.parametrize("name", sorted(FAMILIES))
@FEW
@given(shape=shapes, seed=hs.integers(0, 2**16))
def test_values_match_scipy(name, shape, seed):
    rng = np.random.default_rng(seed)
    n, ref = FAMILIES[name]
    params = [rng.uniform(0.5, 3.0, shape if i == 0 else shape[len(shape) // 2:]).astype(F32)
              for i in range(n)]
    d = _family(name, [_t(p) for p in params])
    assert d.batch_shape == shape and d.event_shape == ()
    exact = ref(*(np.broadcast_to(p, shape).astype(np.float64) for p in params))
    values = np.asarray(exact.rvs(size=(2,) + shape, random_state=rng), F32)
    _close(d.log_prob(_t(values)), exact.logpdf(values.astype(np.float64)), rtol=1e-3,
           atol=1e-3)
    if name not in NO_CDF:
        _close(d.cdf(_t(values)), exact.cdf(values.astype(np.float64)), atol=1e-4)
    if name not in NO_ENTROPY:
        _close(d.entropy(), exact.entropy(), rtol=1e-3, atol=1e-3)
    if name != "VonMises":
        _close(d.mean, exact.mean(), rtol=1e-3)
        _close(d.variance, exact.var(), rtol=2e-3, atol=1e-4)


def _torch_family(name, params):
    shifted = SHIFT.get(name, lambda *p: p)(*params)
    return getattr(TD, name)(*shifted)


@needs_torch
@pytest.mark.parametrize("name", sorted(FAMILIES))
@FEW
@given(shape=shapes, seed=hs.integers(0, 2**16))
def test_values_and_gradients_match_torch(name, shape, seed):
    rng = np.random.default_rng(seed)
    n, _ = FAMILIES[name]
    params = [rng.uniform(0.5, 3.0, shape).astype(F32) for _ in range(n)]
    mine = [pyrt.tensor(p, requires_grad=True) for p in params]
    theirs = [torch.tensor(p, requires_grad=True) for p in params]
    d, td = _family(name, mine), _torch_family(name, theirs)
    values = td.sample((3,))
    lp, tlp = d.log_prob(pyrt.tensor(values.numpy())), td.log_prob(values)
    _close(lp, tlp.detach().numpy(), rtol=1e-4, atol=1e-4)
    total, ttotal = lp.sum(), tlp.sum()
    if name not in NO_ENTROPY:
        total, ttotal = total + d.entropy().sum(), ttotal + td.entropy().sum()
    total.backward()
    ttotal.backward()
    for m, t in zip(mine, theirs):
        _close(m.grad, t.grad.numpy(), rtol=1e-3, atol=1e-3)
    for prop in ("mean", "variance") + (() if name == "Kumaraswamy" else ("mode",)):
        _close(getattr(d, prop), getattr(td, prop).detach().numpy(), rtol=1e-4, atol=1e-5)
    if name in ("Gamma", "Chi2"):
        _close(d.cdf(pyrt.tensor(values.numpy())), td.cdf(values).detach().numpy(), atol=1e-5)


@FEW
@given(shape=shapes, k=hs.integers(2, 4), seed=hs.integers(0, 2**16))
def test_dirichlet_matches_scipy(shape, k, seed):
    rng = np.random.default_rng(seed)
    alpha = rng.uniform(0.5, 3.0, shape + (k,)).astype(F32)
    d = D.Dirichlet(_t(alpha))
    assert d.batch_shape == shape and d.event_shape == (k,)
    flat = alpha.reshape(-1, k).astype(np.float64)
    x = np.stack([rng.dirichlet(a) for a in flat]).astype(F32)
    x = np.clip(x, 1e-4, None)
    x = x / x.sum(-1, keepdims=True)
    lp = [st.dirichlet(a).logpdf(v.astype(np.float64) / v.astype(np.float64).sum())
          for a, v in zip(flat, x)]
    _close(d.log_prob(_t(x.reshape(alpha.shape))), np.reshape(lp, shape), rtol=1e-3,
           atol=1e-3)
    _close(d.entropy(), np.reshape([st.dirichlet(a).entropy() for a in flat], shape),
           rtol=1e-4, atol=1e-4)
    _close(d.mean, alpha / alpha.sum(-1, keepdims=True), rtol=1e-5)
    _close(d.variance, np.reshape([st.dirichlet(a).var() for a in flat], alpha.shape),
           rtol=1e-4)


@needs_torch
@FEW
@given(shape=shapes, k=hs.integers(2, 4), seed=hs.integers(0, 2**16))
def test_dirichlet_matches_torch(shape, k, seed):
    rng = np.random.default_rng(seed)
    alpha = rng.uniform(0.3, 3.0, shape + (k,)).astype(F32)
    mine, theirs = _t(alpha, requires_grad=True), torch.tensor(alpha, requires_grad=True)
    d, td = D.Dirichlet(mine), TD.Dirichlet(theirs)
    values = td.sample((2,))
    lp, tlp = d.log_prob(pyrt.tensor(values.numpy())), td.log_prob(values)
    _close(lp, tlp.detach().numpy(), rtol=1e-4, atol=1e-3)
    (lp.sum() + d.entropy().sum()).backward()
    (tlp.sum() + td.entropy().sum()).backward()
    _close(mine.grad, theirs.grad.numpy(), rtol=1e-3, atol=1e-3)
    for prop in ("mean", "mode", "variance"):
        _close(getattr(d, prop), getattr(td, prop).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_standard_gamma_gradient_matches_fixed_noise_finite_differences():
    """d x / d alpha at x = F^-1(u; alpha) for fixed u, by central differences of scipy's
    inverse of the regularized incomplete gamma function."""
    alpha = np.array([0.05, 0.3, 1.0, 2.5, 10.0, 80.0])
    for u in (1e-4, 0.1, 0.5, 0.9, 0.9999):
        x = special.gammaincinv(alpha, u)
        h = 1e-6 * alpha
        numeric = (special.gammaincinv(alpha + h, u) - special.gammaincinv(alpha - h, u)) / (
            2 * h)
        np.testing.assert_allclose(standard_gamma_grad(x, alpha), numeric, rtol=1e-5)
    a, b = np.array([0.4, 1.5, 3.0]), np.array([2.0, 0.7, 3.0])
    for u in (0.01, 0.5, 0.99):
        x = special.betaincinv(a, b, u)
        h = 1e-6 * a
        numeric = (special.betaincinv(a + h, b, u) - special.betaincinv(a - h, b, u)) / (2 * h)
        np.testing.assert_allclose(beta_grad(x, a, b), numeric, rtol=1e-5)


def test_rsample_gradients_through_the_distributions():
    """Gamma: x / rate and d x / d concentration from standard_gamma_grad; checked through
    autograd on seeded draws, whose values are then fed to the reference."""
    pyrt.manual_seed(3)
    c, r = _t([0.4, 2.0, 7.0], requires_grad=True), _t([1.5, 0.5, 2.0], requires_grad=True)
    x = D.Gamma(c, r).rsample((4,))
    weights = np.arange(12, dtype=F32).reshape(4, 3) - 5
    (x * _t(weights)).sum().backward()
    xs = x.detach().numpy().astype(np.float64)
    c64, r64 = np.array([0.4, 2.0, 7.0]), np.array([1.5, 0.5, 2.0])
    dx_dc = standard_gamma_grad(xs * r64, c64) / r64
    _close(c.grad, (weights * dx_dc).sum(0), rtol=1e-4)
    _close(r.grad, (weights * -xs / r64).sum(0), rtol=1e-4)


@needs_torch
def test_rsample_gradients_match_torch_at_the_same_draws():
    pyrt.manual_seed(0)
    alpha = np.array([0.2, 0.9, 3.0, 25.0], F32)
    mine = _t(alpha, requires_grad=True)
    x = D.Gamma(mine, 1.0).rsample((500,))
    x.sum().backward()
    expected = torch._standard_gamma_grad(torch.tensor(alpha).expand(500, 4),
                                          torch.tensor(x.detach().numpy())).sum(0)
    _close(mine.grad, expected.numpy(), rtol=2e-3)
    # Dirichlet (and Beta through it): torch's backward at pyrt's draws
    conc = np.array([[0.3, 1.0, 2.5], [4.0, 0.8, 1.2]], F32)
    mine = _t(conc, requires_grad=True)
    x = D.Dirichlet(mine).rsample((200,))
    g = np.random.default_rng(1).normal(size=(200, 2, 3)).astype(F32)
    (x * _t(g)).sum().backward()
    expected = _Dirichlet_backward(torch.tensor(x.detach().numpy()).double(),
                                   torch.tensor(conc).double().expand(200, 2, 3),
                                   torch.tensor(g).double()).sum(0)
    _close(mine.grad, expected.numpy(), rtol=2e-3, atol=1e-3)
    a, b = _t([0.5, 2.0], requires_grad=True), _t([1.5, 0.7], requires_grad=True)
    x = D.Beta(a, b).rsample((300,))
    x.sum().backward()
    x2 = torch.tensor(x.detach().numpy()).double()
    conc = torch.tensor([[0.5, 1.5], [2.0, 0.7]]).double().expand(300, 2, 2)
    grad = _Dirichlet_backward(torch.stack([x2, 1 - x2], -1), conc,
                               torch.tensor([1.0, 0.0]).double().expand(300, 2, 2)).sum(0)
    _close(a.grad, grad[:, 0].numpy(), rtol=2e-3, atol=1e-3)
    _close(b.grad, grad[:, 1].numpy(), rtol=2e-3, atol=1e-3)


# name: (parameters, scipy reference) for the moments of 100k reparameterized draws
MOMENTS = {
    "Gamma": ([0.7, 2.0], lambda c, r: st.gamma(c, scale=1 / r)),
    "Chi2": ([3.0], lambda df: st.chi2(df)),
    "Beta": ([0.6, 2.0], lambda a, b: st.beta(a, b)),
    "StudentT": ([6.0, 0.5, 2.0], lambda df, loc, s: st.t(df, loc, s)),
    "FisherSnedecor": ([5.0, 12.0], lambda a, b: st.f(a, b)),
    "InverseGamma": ([5.0, 2.0], lambda c, r: st.invgamma(c, scale=r)),
    "Kumaraswamy": ([2.0, 3.0], lambda a, b: _kumaraswamy(a, b)),
}


@pytest.mark.parametrize("name", sorted(MOMENTS))
def test_sample_moments_and_mean_gradients(name):
    """100k reparameterized draws: mean and variance near the exact ones, and the gradients
    of their first and second moments near those of the exact moments (central
    differences)."""
    params, ref = MOMENTS[name]
    exact = ref(*params)
    n = 100_000
    mine, x = reparameterized_draws(name, params, seed=7, n=n)
    sd = float(np.sqrt(exact.var()))
    assert abs(float(x.mean().item()) - exact.mean()) < 5 * sd / np.sqrt(n)
    assert abs(float(x.var().item()) - exact.var()) < 0.05 * exact.var()
    x.mean().backward(retain_graph=True)
    first = [float(m.grad.item()) for m in mine]
    for m in mine:
        m.grad = None
    x.pow(2).mean().backward()
    second = [float(m.grad.item()) for m in mine]
    for i in range(len(mine)):
        numeric = central_difference(lambda *q: ref(*q).mean(), params, i, 1e-5)
        assert abs(first[i] - numeric) < 0.03 * (1 + abs(numeric)), (i, numeric)
        # the second moment, mean^2 + variance: its gradient needs the noise's dependence on
        # every parameter (StudentT's chi-squared part depends on df alone)
        numeric = central_difference(lambda *q: ref(*q).mean() ** 2 + ref(*q).var(), params,
                                     i, 1e-5)
        assert abs(second[i] - numeric) < 0.05 * (1 + abs(numeric)), (i, numeric)


def test_dirichlet_samples_and_von_mises_samples():
    pyrt.manual_seed(1)
    alpha = np.array([0.5, 2.0, 3.5])
    x = D.Dirichlet(_t(alpha)).sample((100_000,)).numpy()
    np.testing.assert_allclose(x.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(x.mean(0), alpha / alpha.sum(), atol=0.003)
    np.testing.assert_allclose(x.var(0), st.dirichlet(alpha).var(), rtol=0.03)
    v = D.VonMises(_t([1.0, -2.5]), _t([0.5, 4.0])).sample((100_000,)).numpy()
    assert v.min() >= -np.pi and v.max() < np.pi
    np.testing.assert_allclose(np.angle(np.exp(1j * v).mean(0)), [1.0, -2.5], atol=0.02)
    circular_variance = 1 - np.abs(np.exp(1j * v).mean(0))
    _close(D.VonMises(_t([1.0, -2.5]), _t([0.5, 4.0])).variance, circular_variance, atol=0.01)


@needs_torch
def test_kl_divergences_match_torch():
    rng = np.random.default_rng(0)
    a, b, c, e = (rng.uniform(0.5, 3.0, (2, 3)).astype(F32) for _ in range(4))
    u = rng.uniform(0.1, 0.4, (2, 3)).astype(F32)
    pairs = [
        (lambda m: D.Gamma(m, _t(b)), lambda t: TD.Gamma(t, torch.tensor(b)),
         D.Gamma(_t(c), _t(e)), TD.Gamma(torch.tensor(c), torch.tensor(e))),
        (lambda m: D.Beta(m, _t(b)), lambda t: TD.Beta(t, torch.tensor(b)),
         D.Beta(_t(c), _t(e)), TD.Beta(torch.tensor(c), torch.tensor(e))),
        (lambda m: D.Dirichlet(m), lambda t: TD.Dirichlet(t),
         D.Dirichlet(_t(c)), TD.Dirichlet(torch.tensor(c))),
        (lambda m: D.Gamma(m, _t(b)), lambda t: TD.Gamma(t, torch.tensor(b)),
         D.Normal(_t(c), _t(e)), TD.Normal(torch.tensor(c), torch.tensor(e))),
        (lambda m: D.Gamma(m, _t(b)), lambda t: TD.Gamma(t, torch.tensor(b)),
         D.Exponential(_t(c)), TD.Exponential(torch.tensor(c))),
        (lambda m: D.Gamma(m, _t(b)), lambda t: TD.Gamma(t, torch.tensor(b)),
         D.Gumbel(_t(c), _t(e)), TD.Gumbel(torch.tensor(c), torch.tensor(e))),
        (lambda m: D.Beta(m, _t(b)), lambda t: TD.Beta(t, torch.tensor(b)),
         D.Gamma(_t(c), _t(e)), TD.Gamma(torch.tensor(c), torch.tensor(e))),
        (lambda m: D.Beta(m, _t(b)), lambda t: TD.Beta(t, torch.tensor(b)),
         D.Normal(_t(c), _t(e)), TD.Normal(torch.tensor(c), torch.tensor(e))),
        (lambda m: D.Beta(m, _t(b)), lambda t: TD.Beta(t, torch.tensor(b)),
         D.Exponential(_t(c)), TD.Exponential(torch.tensor(c))),
        (lambda m: D.Beta(m, _t(b)), lambda t: TD.Beta(t, torch.tensor(b)),
         D.Uniform(_t(-u), _t(1 + u)), TD.Uniform(torch.tensor(-u), torch.tensor(1 + u))),
        (lambda m: D.Exponential(m), lambda t: TD.Exponential(t),
         D.Gamma(_t(c), _t(e)), TD.Gamma(torch.tensor(c), torch.tensor(e))),
        (lambda m: D.Uniform(_t(u), _t(u) + m / 10),
         lambda t: TD.Uniform(torch.tensor(u), torch.tensor(u) + t / 10),
         D.Beta(_t(c), _t(e)), TD.Beta(torch.tensor(c), torch.tensor(e))),
        (lambda m: D.Uniform(_t(u), _t(u) + m),
         lambda t: TD.Uniform(torch.tensor(u), torch.tensor(u) + t),
         D.Gamma(_t(c), _t(e)), TD.Gamma(torch.tensor(c), torch.tensor(e))),
        (lambda m: D.Pareto(_t(u), m + 1), lambda t: TD.Pareto(torch.tensor(u), t + 1),
         D.Gamma(_t(c), _t(e)), TD.Gamma(torch.tensor(c), torch.tensor(e))),
    ]
    for make, tmake, q, tq in pairs:
        mine, theirs = _t(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        kl, tkl = D.kl_divergence(make(mine), q), TD.kl_divergence(tmake(theirs), tq)
        _close(kl, tkl.detach().numpy(), rtol=1e-4, atol=1e-4)
        kl.sum().backward()
        tkl.sum().backward()
        _close(mine.grad, theirs.grad.numpy(), rtol=1e-3, atol=1e-4)
    for p, q in ((D.Gamma(_t(a), _t(b)), D.Beta(_t(c), _t(e))),
                 (D.Normal(_t(a), _t(b)), D.Gamma(_t(c), _t(e))),
                 (D.Exponential(_t(a)), D.Beta(_t(c), _t(e))),
                 (D.Beta(_t(a), _t(b)), D.Pareto(_t(c), _t(e)))):
        assert np.isinf(D.kl_divergence(p, q).numpy()).all()


def test_kl_divergences_match_integration():
    cases = [(D.Gamma(_t(2.0), _t(1.5)), D.Gamma(_t(0.8), _t(0.5)),
              st.gamma(2.0, scale=1 / 1.5), st.gamma(0.8, scale=2.0), (0, np.inf)),
             (D.Beta(_t(2.0), _t(3.0)), D.Beta(_t(1.5), _t(0.8)),
              st.beta(2.0, 3.0), st.beta(1.5, 0.8), (0, 1)),
             (D.Gamma(_t(3.0), _t(2.0)), D.Normal(_t(1.0), _t(0.7)),
              st.gamma(3.0, scale=0.5), st.norm(1.0, 0.7), (0, np.inf)),
             (D.Beta(_t(2.0), _t(3.0)), D.Gamma(_t(1.5), _t(2.0)),
              st.beta(2.0, 3.0), st.gamma(1.5, scale=0.5), (0, 1))]
    for p, q, sp, sq, (lo, hi) in cases:
        direct = integrate.quad(lambda x, sp=sp, sq=sq: sp.pdf(x) * (sp.logpdf(x)
                                                                     - sq.logpdf(x)), lo, hi)
        _close(D.kl_divergence(p, q), direct[0], rtol=1e-4, atol=1e-5)
    alpha, beta = np.array([1.5, 0.7, 2.0]), np.array([0.9, 2.0, 1.1])
    mc = st.dirichlet(alpha).rvs(200_000, random_state=np.random.default_rng(0))
    mc = (st.dirichlet(alpha).logpdf(mc.T) - st.dirichlet(beta).logpdf(mc.T)).mean()
    _close(D.kl_divergence(D.Dirichlet(_t(alpha)), D.Dirichlet(_t(beta))), mc, atol=0.01)


def test_mixture_same_family():
    weights = np.array([[0.3, 0.7], [0.5, 0.5]], F32)
    loc, scale = np.array([[-1.0, 2.0], [0.0, 1.0]], F32), np.array([[1.0, 0.5], [2.0, 0.3]],
                                                                     F32)
    mix = D.MixtureSameFamily(D.Categorical(_t(weights)), D.Normal(_t(loc), _t(scale)))
    assert mix.batch_shape == (2,) and mix.event_shape == ()
    x = np.array([[0.5, -0.2], [1.5, 3.0], [-2.0, 0.0]], F32)
    density = (weights * st.norm(loc, scale).pdf(x[..., None])).sum(-1)
    _close(mix.log_prob(_t(x)), np.log(density), rtol=1e-5)
    _close(mix.cdf(_t(x)), (weights * st.norm(loc, scale).cdf(x[..., None])).sum(-1), atol=1e-6)
    mean = (weights * loc).sum(-1)
    _close(mix.mean, mean)
    _close(mix.variance, (weights * (scale ** 2 + loc ** 2)).sum(-1) - mean ** 2, rtol=1e-5)
    pyrt.manual_seed(3)
    draws = mix.sample((100_000,)).numpy()
    assert draws.shape == (100_000, 2)
    np.testing.assert_allclose(draws.mean(0), mean, atol=0.03)
    big = mix.expand((3, 2))
    assert big.batch_shape == (3, 2) and big.sample((4,)).shape == (4, 3, 2)
    events = D.MixtureSameFamily(D.Categorical(_t([0.4, 0.6])),
                                 D.Independent(D.Normal(_t(loc), 1.0), 1))
    assert events.batch_shape == () and events.event_shape == (2,)
    assert events.sample((5,)).shape == (5, 2)
    expected = np.log((np.array([0.4, 0.6]) * np.exp(
        st.norm(loc, 1.0).logpdf(x[0]).sum(-1))).sum())
    _close(events.log_prob(_t(x[0])), expected, rtol=1e-5)
    with pytest.raises(TypeError, match="Categorical"):
        D.MixtureSameFamily(D.Normal(0.0, 1.0), D.Normal(_t(loc), 1.0))
    with pytest.raises(ValueError, match="does not equal"):
        D.MixtureSameFamily(D.Categorical(_t([0.2, 0.3, 0.5])), D.Normal(_t(loc), 1.0))
    if torch is not None:
        tmix = TD.MixtureSameFamily(TD.Categorical(torch.tensor(weights)),
                                    TD.Normal(torch.tensor(loc), torch.tensor(scale)))
        _close(mix.log_prob(_t(x)), tmix.log_prob(torch.tensor(x)).numpy(), rtol=1e-5)


def test_logistic_normal():
    loc, scale = np.array([0.3, -0.5], F32), np.array([1.0, 0.6], F32)
    d = D.LogisticNormal(_t(loc), _t(scale))
    assert d.batch_shape == () and d.event_shape == (3,)
    pyrt.manual_seed(0)
    x = d.rsample((4,))
    np.testing.assert_allclose(x.detach().numpy().sum(-1), 1.0, atol=1e-6)
    # the density of the stick-breaking map of a normal: change of variables written out
    # (y_i = z_i prod_{j<i} (1 - z_j), z_i = sigmoid(x_i - log(K - 1 - i)), K = 3)
    v = x.detach().numpy().astype(np.float64)[..., :-1]
    rest = 1 - np.cumsum(v, -1)
    z = v / (rest + v)
    normal = np.log(z / (1 - z)) + np.log([2.0, 1.0])
    log_jacobian = (np.log(v) + np.log1p(-z)).sum(-1)
    expected = st.norm(loc, scale).logpdf(normal).sum(-1) - log_jacobian
    _close(d.log_prob(x.detach()), expected, rtol=1e-4, atol=1e-4)
    if torch is not None:
        td = TD.LogisticNormal(torch.tensor(loc), torch.tensor(scale))
        _close(d.log_prob(x.detach()), td.log_prob(torch.tensor(x.detach().numpy())).numpy(),
               rtol=1e-4, atol=1e-4)


def test_shapes_expand_and_repr():
    for dist in (D.Gamma(_t(2.0), _t(1.0)), D.Chi2(_t(3.0)), D.Beta(_t(2.0), _t(1.0)),
                 D.StudentT(_t(3.0)), D.FisherSnedecor(_t(3.0), _t(4.0)),
                 D.Kumaraswamy(_t(2.0), _t(1.0)), D.InverseGamma(_t(2.0), _t(1.0)),
                 D.VonMises(_t(0.0), _t(1.0))):
        big = dist.expand((2, 3))
        assert type(big) is type(dist) and big.batch_shape == (2, 3)
        assert big.sample((4,)).shape == (4, 2, 3)
        assert big.log_prob(dist.sample()).shape == (2, 3)
        if dist.has_rsample:
            assert big.rsample((4,)).shape == (4, 2, 3)
    d = D.Dirichlet(_t(np.ones((3, 4)))).expand((2, 3))
    assert d.batch_shape == (2, 3) and d.event_shape == (4,)
    assert d.rsample((5,)).shape == (5, 2, 3, 4)
    assert repr(D.Gamma(_t(2.0), _t(1.0))) == "Gamma(concentration: 2.0, rate: 1.0)"
    assert repr(D.Dirichlet(_t([1.0, 2.0]))) == "Dirichlet(concentration: (2,))"
    assert D.Chi2(_t([2.0, 4.0])).df.numpy().tolist() == [2.0, 4.0]


def test_validate_args_errors():
    with pytest.raises(ValueError, match="Expected parameter concentration"):
        D.Gamma(_t(-1.0), _t(1.0))
    with pytest.raises(ValueError, match="Expected parameter rate"):
        D.Gamma(_t(1.0), _t(0.0))
    with pytest.raises(ValueError, match="Expected parameter df"):
        D.Chi2(_t(-2.0))
    with pytest.raises(ValueError, match="Expected parameter concentration"):
        D.Dirichlet(_t([1.0, -1.0]))
    with pytest.raises(ValueError, match="must be at least one-dimensional"):
        D.Dirichlet(_t(1.0))
    with pytest.raises(ValueError, match="Expected parameter concentration1"):
        D.Kumaraswamy(_t(-1.0), _t(1.0))
    with pytest.raises(ValueError, match="Expected parameter scale"):
        D.StudentT(_t(1.0), 0.0, -1.0)
    with pytest.raises(ValueError, match="to be within the support"):
        D.Gamma(_t(1.0), _t(1.0)).log_prob(_t(-1.0))
    with pytest.raises(ValueError, match="to be within the support"):
        D.Beta(_t(1.0), _t(1.0)).log_prob(_t(1.5))
    with pytest.raises(ValueError, match="to be within the support"):
        D.Dirichlet(_t([1.0, 1.0])).log_prob(_t([0.7, 0.7]))
    with pytest.raises(TypeError, match="concentration must be a Tensor or a real number"):
        D.Gamma("a", 1.0)
    with pytest.raises(NotImplementedError):
        D.FisherSnedecor(_t(1.0), _t(1.0)).entropy()


def test_modes_are_the_density_maxima():
    grid = np.linspace(1e-4, 1 - 1e-4, 200_001)
    for a, b in ((2.0, 3.0), (1.5, 1.2), (4.0, 1.0)):
        density = np.log(a * b) + (a - 1) * np.log(grid) + (b - 1) * np.log1p(-grid ** a)
        _close(D.Kumaraswamy(_t(a), _t(b)).mode, grid[density.argmax()], atol=1e-4)
        _close(D.Beta(_t(a), _t(b)).mode, grid[st.beta(a, b).logpdf(grid).argmax()],
               atol=1e-4)
    assert np.isnan(D.Kumaraswamy(_t(0.5), _t(2.0)).mode.item())
    _close(D.Gamma(_t(3.0), _t(2.0)).mode, 1.0)
    _close(D.InverseGamma(_t(3.0), _t(2.0)).mode, 0.5)
