"""Wishart, LKJCholesky and GeneralizedPareto (log_prob, entropy, moments and gradients
against scipy/NumPy float64 formulas and torch; seeded sample moments; every argument error),
and the transforms CatTransform, StackTransform, ReshapeTransform, SoftplusTransform,
CorrCholeskyTransform and CumulativeDistributionTransform (round trips, log |det J| against
finite-difference Jacobians, torch), with the constraints corr_cholesky, cat and stack and
their biject_to / transform_to registrations."""

import math
import warnings

import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as st
from hypothesis import given
from hypothesis import strategies as hs

import pyrt
import pyrt.distributions as D
from pyrt.distributions import constraints as C
from pyrt.distributions import transforms as T
from tests.distribution_checks import F32, FEW, assert_close, needs_torch, shapes, tensor32

try:
    import torch
    import torch.distributions as TD
except ImportError:
    torch = None


def _spd(rng, batch, n):
    a = rng.normal(size=batch + (n, n))
    return (a @ np.swapaxes(a, -1, -2) / n + np.eye(n)).astype(F32)


def _numpy(t):
    return t.detach().numpy().astype(np.float64)


def _fd_jacobian(f, x, h=1e-2):
    """The Jacobian of the flattened f (pyrt, float32) at the flat float64 vector x by central
    differences."""
    cols = []
    for i in range(x.size):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        cols.append((_numpy(f(tensor32(up))).ravel() - _numpy(f(tensor32(down))).ravel())
                    / (2 * h))
    return np.stack(cols, -1)


# GeneralizedPareto.

def _gpd_params(rng, batch):
    loc = rng.normal(size=batch).astype(F32)
    scale = rng.uniform(0.5, 2.0, size=batch).astype(F32)
    conc = rng.choice([-0.4, -0.1, 0.0, 0.2, 0.45], size=batch).astype(F32)
    return loc, scale, conc


def _gpd_values(rng, loc, scale, conc, n=3):
    u = rng.uniform(0.05, 0.95, size=(n,) + np.shape(loc))
    return st.genpareto.ppf(u, conc, loc, scale).astype(F32)


@FEW
@given(batch=shapes, seed=hs.integers(0, 2**16))
def test_generalized_pareto_matches_scipy(batch, seed):
    rng = np.random.default_rng(seed)
    loc, scale, conc = _gpd_params(rng, batch)
    x = _gpd_values(rng, loc, scale, conc)
    d = D.GeneralizedPareto(tensor32(loc), tensor32(scale), tensor32(conc))
    assert d.batch_shape == batch and d.event_shape == ()
    ref = st.genpareto(conc.astype(np.float64), loc, scale)
    assert_close(d.log_prob(tensor32(x)), ref.logpdf(x), rtol=1e-4, atol=1e-4)
    assert_close(d.cdf(tensor32(x)), ref.cdf(x), rtol=1e-4, atol=1e-5)
    assert_close(d.log_survival_function(tensor32(x)), ref.logsf(x), rtol=1e-4, atol=1e-4)
    u = rng.uniform(0.05, 0.95, size=(2,) + batch)
    assert_close(d.icdf(tensor32(u)), ref.ppf(u), rtol=1e-4, atol=1e-4)
    assert_close(d.entropy(), np.broadcast_to(ref.entropy(), batch), rtol=1e-5, atol=1e-5)
    assert_close(d.mean, ref.mean(), rtol=1e-5)
    assert_close(d.variance, np.where(conc < 0.5, ref.var(), np.nan), rtol=1e-4)
    assert_close(d.mode, loc)


def test_generalized_pareto_moments_undefined_and_support():
    d = D.GeneralizedPareto(0.0, 1.0, tensor32([0.3, 0.7, 1.5]))
    assert_close(d.mean, [1 / 0.7, 1 / 0.3, np.nan])
    assert_close(d.variance, [1 / (0.49 * 0.4), np.nan, np.nan], rtol=1e-5)
    # concentration < 0: bounded above by loc - scale / concentration
    d = D.GeneralizedPareto(1.0, 2.0, -0.5)
    assert C.is_dependent(D.GeneralizedPareto.support)
    assert_close(d.support.upper_bound, 5.0)
    assert d.support.check(tensor32(4.9)).item() and not d.support.check(tensor32(5.1)).item()
    assert math.isinf(D.GeneralizedPareto(0.0, 1.0, 0.2).support.upper_bound.item())
    # concentration -1: the uniform distribution on [loc, loc + scale]
    u = D.GeneralizedPareto(0.0, 2.0, -1.0)
    assert_close(u.log_prob(tensor32([0.0, 1.0, 2.0])), [math.log(0.5)] * 3, rtol=1e-6)


@needs_torch
@FEW
@given(batch=shapes, seed=hs.integers(0, 2**16))
def test_generalized_pareto_matches_torch_with_gradients(batch, seed):
    rng = np.random.default_rng(seed)
    params = _gpd_params(rng, batch)
    x = _gpd_values(rng, *params)
    mine = [tensor32(p, requires_grad=True) for p in params]
    theirs = [torch.tensor(p, requires_grad=True) for p in params]
    d, td = D.GeneralizedPareto(*mine), TD.GeneralizedPareto(*theirs)
    lp, tlp = d.log_prob(tensor32(x)), td.log_prob(torch.tensor(x))
    assert_close(lp, tlp.detach().numpy(), rtol=1e-4, atol=1e-4)
    lp.sum().backward()
    tlp.sum().backward()
    for m, t in zip(mine, theirs):
        assert_close(m.grad, t.grad.numpy(), rtol=1e-3, atol=1e-3)
    u = rng.uniform(0.05, 0.95, size=batch).astype(F32)
    assert_close(d.icdf(tensor32(u)), td.icdf(torch.tensor(u)).detach().numpy(),
                 rtol=1e-4, atol=1e-4)
    assert_close(d.cdf(tensor32(x)), td.cdf(torch.tensor(x)).detach().numpy(), atol=1e-5)
    assert_close(d.entropy(), td.entropy().detach().numpy(), atol=1e-5)
    assert_close(d.mean, td.mean.detach().numpy(), rtol=1e-5)
    assert_close(d.variance, td.variance.detach().numpy(), rtol=1e-4)


def _gpd_logpdf64(x, loc, scale, conc):
    z = (x - loc) / scale
    if conc == 0:
        return -np.log(scale) - z
    return -np.log(scale) - (1 / conc + 1) * np.log1p(conc * z)


def _gpd_icdf64(u, loc, scale, conc):
    if conc == 0:
        return loc - scale * np.log1p(-u)
    return loc + scale / conc * np.expm1(-conc * np.log1p(-u))


@pytest.mark.parametrize("conc", [-0.3, 0.25])
def test_generalized_pareto_gradients_match_finite_differences(conc):
    params = (0.3, 1.5, conc)
    mine = [pyrt.tensor(np.float32(p), requires_grad=True) for p in params]
    d = D.GeneralizedPareto(*mine)
    x, u = 1.1, 0.6
    d.log_prob(tensor32(x)).backward()
    for i, m in enumerate(mine):
        def f(*p):
            return _gpd_logpdf64(x, *p)
        fd = (f(*[p + 1e-6 * (j == i) for j, p in enumerate(params)])
              - f(*[p - 1e-6 * (j == i) for j, p in enumerate(params)])) / 2e-6
        assert_close(m.grad, fd, rtol=1e-3, atol=1e-4)
    # reparameterized samples: the gradient of icdf(u) in each parameter
    for i in range(3):
        mine = [pyrt.tensor(np.float32(p), requires_grad=True) for p in params]
        D.GeneralizedPareto(*mine).icdf(tensor32(u)).backward()
        fd = (_gpd_icdf64(u, *[p + 1e-6 * (j == i) for j, p in enumerate(params)])
              - _gpd_icdf64(u, *[p - 1e-6 * (j == i) for j, p in enumerate(params)])) / 2e-6
        assert_close(mine[i].grad, fd, rtol=1e-3, atol=1e-4)


def test_generalized_pareto_sample_moments_and_rsample_gradient():
    pyrt.manual_seed(0)
    loc, scale, conc = (pyrt.tensor(np.float32(p), requires_grad=True)
                        for p in (0.5, 2.0, 0.1))
    d = D.GeneralizedPareto(loc, scale, conc)
    assert d.has_rsample
    x = d.rsample((200_000,))
    assert x.shape == (200_000,)
    xs = _numpy(x)
    assert abs(xs.mean() - d.mean.item()) < 5 * math.sqrt(d.variance.item() / xs.size)
    assert abs(xs.var() / d.variance.item() - 1) < 0.05
    assert (xs >= 0.5).all()
    # d E[x] / d scale = 1 / (1 - c), d E[x] / d c = scale / (1 - c)^2
    x.mean().backward()
    assert abs(loc.grad.item() - 1) < 1e-5
    assert abs(scale.grad.item() - 1 / 0.9) < 0.03
    assert abs(conc.grad.item() - 2 / 0.81) < 0.15
    pyrt.manual_seed(1)
    bounded = D.GeneralizedPareto(0.0, 1.0, tensor32([-0.5, -1.0])).sample((50_000,))
    assert (_numpy(bounded) <= np.array([2.0, 1.0]) + 1e-6).all()


def test_generalized_pareto_expand_and_errors():
    d = D.GeneralizedPareto(tensor32([0.0, 1.0]), 1.0, 0.1)
    e = d.expand((3, 2))
    assert e.batch_shape == (3, 2) and e.sample((4,)).shape == (4, 3, 2)
    assert_close(e.log_prob(tensor32(2.0)), np.broadcast_to(_numpy(d.log_prob(tensor32(2.0))),
                                                            (3, 2)))
    with pytest.raises(ValueError, match="Expected parameter scale .* constraint "
                                         "GreaterThan\\(lower_bound=0.0\\)"):
        D.GeneralizedPareto(0.0, -1.0, 0.1)
    with pytest.raises(ValueError, match="Expected parameter loc"):
        D.GeneralizedPareto(math.nan, 1.0, 0.1)
    with pytest.raises(ValueError, match="Expected value argument .* to be within the support"):
        D.GeneralizedPareto(1.0, 1.0, 0.1).log_prob(tensor32(0.5))
    with pytest.raises(ValueError, match="within the support"):
        D.GeneralizedPareto(0.0, 1.0, -0.5).log_prob(tensor32(2.5))
    with pytest.raises(ValueError, match="shapes cannot be broadcast together: loc"):
        D.GeneralizedPareto(tensor32([0.0, 1.0]), tensor32([1.0, 1.0, 1.0]), 0.1)
    with pytest.raises(TypeError, match="scale must be a Tensor or a real number"):
        D.GeneralizedPareto(0.0, "1", 0.1)


# Wishart.

def _wishart_arg(form, cov):
    cov64 = cov.astype(np.float64)
    return {"cov": dict(covariance_matrix=tensor32(cov)),
            "prec": dict(precision_matrix=tensor32(np.linalg.inv(cov64))),
            "tril": dict(scale_tril=tensor32(np.linalg.cholesky(cov64)))}[form]


@pytest.mark.filterwarnings("ignore:Low df values detected")
@FEW
@given(batch=hs.lists(hs.integers(1, 3), max_size=2).map(tuple), n=hs.integers(1, 4),
       seed=hs.integers(0, 2**16), form=hs.sampled_from(["cov", "prec", "tril"]))
def test_wishart_matches_scipy(batch, n, seed, form):
    rng = np.random.default_rng(seed)
    cov = _spd(rng, batch, n)
    df = (n - 1 + rng.uniform(0.5, 4.0, size=batch)).astype(F32)
    d = D.Wishart(tensor32(df), **_wishart_arg(form, cov))
    assert d.batch_shape == batch and d.event_shape == (n, n)
    flat_cov, flat_df = cov.reshape(-1, n, n).astype(np.float64), df.reshape(-1)
    refs = [st.wishart(df=float(flat_df[i]), scale=flat_cov[i]) for i in range(len(flat_df))]
    x = np.stack([_spd(rng, (), n) for _ in range(2 * len(refs))]).reshape((2,) + batch
                                                                          + (n, n))
    flat_x = x.reshape(2, -1, n, n).astype(np.float64)
    want = np.array([[r.logpdf(flat_x[s, i]) for i, r in enumerate(refs)] for s in range(2)])
    assert_close(d.log_prob(tensor32(x)), want.reshape((2,) + batch), rtol=1e-3, atol=2e-3)
    assert_close(d.entropy(), np.array([r.entropy() for r in refs]).reshape(batch),
                 rtol=1e-3, atol=2e-3)
    assert_close(d.mean, df[..., None, None] * cov, rtol=1e-4, atol=1e-4)
    diag = np.diagonal(cov, 0, -2, -1)
    assert_close(d.variance, df[..., None, None] * (cov ** 2 + diag[..., :, None]
                                                    * diag[..., None, :]), rtol=1e-4)
    mode = np.where(df > n + 1, df - n - 1, np.nan)[..., None, None] * cov
    assert_close(d.mode, mode, rtol=1e-4, atol=1e-4)
    assert_close(d.covariance_matrix, cov, rtol=1e-4, atol=1e-4)
    assert_close(d.precision_matrix, np.linalg.inv(cov.astype(np.float64)), rtol=1e-3,
                 atol=1e-3)


@needs_torch
@FEW
@given(batch=hs.lists(hs.integers(1, 3), max_size=2).map(tuple), n=hs.integers(1, 3),
       seed=hs.integers(0, 2**16))
def test_wishart_matches_torch_with_gradients(batch, n, seed):
    rng = np.random.default_rng(seed)
    cov = _spd(rng, batch, n)
    tril = np.linalg.cholesky(cov.astype(np.float64)).astype(F32)
    df = (n + rng.uniform(0.5, 4.0, size=batch)).astype(F32)
    x = np.stack([_spd(rng, batch, n) for _ in range(2)])
    mine = [tensor32(df, requires_grad=True), tensor32(tril, requires_grad=True)]
    theirs = [torch.tensor(df, requires_grad=True), torch.tensor(tril, requires_grad=True)]
    d = D.Wishart(mine[0], scale_tril=mine[1])
    td = TD.Wishart(theirs[0], scale_tril=theirs[1])
    lp, tlp = d.log_prob(tensor32(x)), td.log_prob(torch.tensor(x))
    assert_close(lp, tlp.detach().numpy(), rtol=1e-3, atol=1e-3)
    (lp.sum() + d.entropy().sum()).backward()
    (tlp.sum() + td.entropy().sum()).backward()
    for m, t in zip(mine, theirs):
        assert_close(m.grad, t.grad.numpy(), rtol=2e-3, atol=2e-3)
    for name in ("mean", "variance", "mode"):
        assert_close(getattr(d, name), getattr(td, name).detach().numpy(), rtol=1e-4,
                     atol=1e-4)


def test_wishart_log_prob_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    cov = _spd(rng, (), 3).astype(np.float64)
    x = _spd(rng, (), 3)
    df = pyrt.tensor(np.float32(4.5), requires_grad=True)
    cov_t = tensor32(cov, requires_grad=True)
    D.Wishart(df, covariance_matrix=cov_t).log_prob(tensor32(x)).backward()

    def logpdf(nu, c):
        return st.wishart(df=nu, scale=c).logpdf(x.astype(np.float64))

    h = 1e-5
    assert_close(df.grad, (logpdf(4.5 + h, cov) - logpdf(4.5 - h, cov)) / (2 * h), rtol=1e-3)
    # the gradient in a symmetric direction E: <grad, E> against the directional derivative
    E = np.zeros((3, 3))
    E[0, 1] = E[1, 0] = 1.0
    want = (logpdf(4.5, cov + h * E) - logpdf(4.5, cov - h * E)) / (2 * h)
    assert_close((_numpy(cov_t.grad) * E).sum(), want, rtol=2e-3, atol=2e-3)


def test_wishart_sample_moments_and_rsample_gradient():
    rng = np.random.default_rng(0)
    cov = _spd(rng, (), 3)
    pyrt.manual_seed(0)
    df = pyrt.tensor(np.float32(5.0), requires_grad=True)
    d = D.Wishart(df, covariance_matrix=tensor32(cov))
    assert d.has_rsample
    x = d.rsample((100_000,))
    assert x.shape == (100_000, 3, 3)
    xs = _numpy(x)
    var = _numpy(d.variance)
    assert (np.abs(xs.mean(0) - 5 * cov) < 5 * np.sqrt(var / xs.shape[0])).all()
    assert (np.abs(xs.var(0) / var - 1) < 0.06).all()
    assert C.positive_definite.check(x[:100]).all().item()
    # d E[X] / d df = Sigma
    (x.mean(0) * tensor32(np.ones((3, 3)))).sum().backward()
    assert abs(df.grad.item() / cov.sum() - 1) < 0.05
    batched = D.Wishart(tensor32([3.0, 6.0]), scale_tril=tensor32(np.eye(2)))
    assert batched.sample((7,)).shape == (7, 2, 2, 2)


def test_wishart_expand_and_errors():
    eye = tensor32(np.eye(2))
    d = D.Wishart(tensor32([3.0, 4.0]), covariance_matrix=eye)
    e = d.expand((3, 2))
    assert e.batch_shape == (3, 2) and e.event_shape == (2, 2)
    assert e.rsample((5,)).shape == (5, 3, 2, 2, 2)
    x = tensor32([[2.0, 0.5], [0.5, 1.0]])
    assert_close(e.log_prob(x), np.broadcast_to(_numpy(d.log_prob(x)), (3, 2)))
    assert_close(e.covariance_matrix, np.broadcast_to(np.eye(2), (3, 2, 2, 2)))
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or "
                                         "precision_matrix or scale_tril may be specified"):
        D.Wishart(3.0)
    with pytest.raises(ValueError, match="Exactly one of"):
        D.Wishart(3.0, covariance_matrix=eye, scale_tril=eye)
    with pytest.raises(ValueError, match="scale_tril must be at least two-dimensional"):
        D.Wishart(3.0, scale_tril=tensor32([1.0, 2.0]))
    with pytest.raises(ValueError, match="covariance_matrix must be a batch of square"):
        D.Wishart(3.0, covariance_matrix=tensor32(np.ones((2, 3))))
    with pytest.raises(ValueError, match=r"Value of df=1.0 expected to be greater than "
                                         r"ndim - 1 = 1."):
        D.Wishart(1.0, covariance_matrix=eye)
    with pytest.warns(UserWarning, match="Low df values detected"):
        D.Wishart(1.5, covariance_matrix=eye)
    with pytest.raises(ValueError, match="Expected parameter covariance_matrix .* "
                                         "PositiveDefinite"):
        D.Wishart(3.0, covariance_matrix=tensor32([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="Expected parameter scale_tril .* LowerCholesky"):
        D.Wishart(3.0, scale_tril=tensor32([[1.0, 1.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="to be within the support \\(PositiveDefinite"):
        d.log_prob(tensor32([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="The right-most size of value must match"):
        d.log_prob(tensor32(np.eye(3)))


def test_wishart_resamples_singular_draws():
    # df just above p - 1 makes singular float32 samples likely: they are drawn again.
    pyrt.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = D.Wishart(tensor32(2.02), covariance_matrix=tensor32(np.eye(3) * 1e-3))
        x = d.sample((2000,), )
    assert x.shape == (2000, 3, 3)
    assert C.positive_definite.check(x).float().mean().item() > 0.99


# LKJCholesky.

def _lkj_log_normalizer64(dim, eta):
    """log of the integral of det(M)^(eta - 1) over correlation matrices M: Lewandowski,
    Kurowicka and Joe (2009), the Beta-function form of their normalizing constant."""
    total = 0.0
    for k in range(1, dim):
        b = eta + (dim - k - 1) / 2
        total += (2 * eta - 2 + dim - k) * (dim - k) * math.log(2)
        total += (dim - k) * (2 * sp.gammaln(b) - sp.gammaln(2 * b))
    return total


def _lkj_logpdf64(L, eta):
    dim = L.shape[-1]
    diag = np.diagonal(L, 0, -2, -1)[..., 1:]
    order = 2 * eta - 2 + dim - np.arange(2, dim + 1)
    return (order * np.log(diag)).sum(-1) - _lkj_log_normalizer64(dim, eta)


def _corr_cholesky(rng, shape, dim):
    a = rng.normal(size=shape + (dim, dim))
    cov = a @ np.swapaxes(a, -1, -2) + np.eye(dim)
    d = np.sqrt(np.diagonal(cov, 0, -2, -1))
    return np.linalg.cholesky(cov / d[..., :, None] / d[..., None, :]).astype(F32)


@FEW
@given(dim=hs.integers(2, 5), eta=hs.floats(0.3, 4.0), seed=hs.integers(0, 2**16))
def test_lkj_log_prob_matches_formula(dim, eta, seed):
    rng = np.random.default_rng(seed)
    L = _corr_cholesky(rng, (3,), dim)
    eta_t = pyrt.tensor(np.float32(eta), requires_grad=True)
    d = D.LKJCholesky(dim, eta_t)
    assert d.batch_shape == () and d.event_shape == (dim, dim)
    lp = d.log_prob(tensor32(L))
    eta32 = float(np.float32(eta))
    assert_close(lp, _lkj_logpdf64(L.astype(np.float64), eta32), rtol=1e-4, atol=1e-3)
    lp.sum().backward()
    h = 1e-5
    fd = (_lkj_logpdf64(L.astype(np.float64), eta32 + h)
          - _lkj_logpdf64(L.astype(np.float64), eta32 - h)).sum() / (2 * h)
    assert_close(eta_t.grad, fd, rtol=1e-3, atol=1e-3)


def test_lkj_density_integrates_to_one_in_two_dims():
    # dim 2: L = [[1, 0], [r, sqrt(1 - r^2)]], one free coordinate r in (-1, 1).
    r = np.linspace(-1, 1, 20001)[1:-1]
    L = np.zeros((r.size, 2, 2), F32)
    L[:, 0, 0], L[:, 1, 0], L[:, 1, 1] = 1, r, np.sqrt(1 - r ** 2)
    for eta in (0.7, 1.0, 3.0):
        p = np.exp(_numpy(D.LKJCholesky(2, eta, validate_args=False).log_prob(tensor32(L))))
        assert abs(np.trapezoid(p, r) - 1) < 2e-3


@needs_torch
@FEW
@given(dim=hs.integers(2, 5), batch=shapes, seed=hs.integers(0, 2**16))
def test_lkj_log_prob_matches_torch_with_gradients(dim, batch, seed):
    rng = np.random.default_rng(seed)
    eta = rng.uniform(0.3, 3.0, size=batch).astype(F32)
    L = _corr_cholesky(rng, (2,) + batch, dim)
    mine, theirs = tensor32(eta, requires_grad=True), torch.tensor(eta, requires_grad=True)
    d, td = D.LKJCholesky(dim, mine), TD.LKJCholesky(dim, theirs)
    assert d.batch_shape == tuple(td.batch_shape)
    lp, tlp = d.log_prob(tensor32(L)), td.log_prob(torch.tensor(L))
    assert_close(lp, tlp.detach().numpy(), rtol=1e-4, atol=1e-3)
    lp.sum().backward()
    tlp.sum().backward()
    assert_close(mine.grad, theirs.grad.numpy(), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dim,eta", [(2, 0.5), (3, 1.0), (4, 1.0), (5, 2.5)])
def test_lkj_sample_moments(dim, eta):
    # The off-diagonal correlations are marginally 2 Beta(b, b) - 1 with
    # b = eta - 1 + dim / 2: mean 0 and variance 1 / (2 eta + dim - 1).
    pyrt.manual_seed(dim)
    n = 100_000
    L = D.LKJCholesky(dim, eta).sample((n,))
    assert L.shape == (n, dim, dim) and not L.requires_grad
    assert C.corr_cholesky.check(L[:1000]).all().item()
    M = _numpy(L @ L.mT)
    var = 1 / (2 * eta + dim - 1)
    i, j = np.tril_indices(dim, -1)
    r = M[:, i, j]
    assert (np.abs(r.mean(0)) < 5 * math.sqrt(var / n)).all()
    assert (np.abs(r.var(0) / var - 1) < 0.04).all()
    b = eta - 1 + dim / 2
    assert (np.abs((r ** 4).mean(0) / (3 * var ** 2 * (2 * b + 1) / (2 * b + 3)) - 1)
            < 0.06).all()


def test_lkj_expand_batches_and_errors():
    d = D.LKJCholesky(3, tensor32([0.5, 2.0]))
    assert d.batch_shape == (2,) and d.sample((4,)).shape == (4, 2, 3, 3)
    e = d.expand((5, 2))
    assert e.batch_shape == (5, 2) and e.sample().shape == (5, 2, 3, 3)
    L = tensor32(_corr_cholesky(np.random.default_rng(0), (), 3))
    assert_close(e.log_prob(L), np.broadcast_to(_numpy(d.log_prob(L)), (5, 2)))
    assert not d.has_rsample
    with pytest.raises(NotImplementedError):
        d.rsample()
    with pytest.raises(ValueError, match="Expected dim to be an integer greater than or equal "
                                         "to 2. Found dim=1."):
        D.LKJCholesky(1)
    with pytest.raises(ValueError, match="Found dim=2.5"):
        D.LKJCholesky(2.5)
    with pytest.raises(ValueError, match="Expected parameter concentration .* GreaterThan"):
        D.LKJCholesky(3, 0.0)
    with pytest.raises(ValueError, match="to be within the support \\(CorrCholesky"):
        D.LKJCholesky(2).log_prob(tensor32([[1.0, 0.0], [0.5, 0.5]]))


# Transforms.

def _round_trip(t, x, rtol=1e-4, atol=1e-5):
    y = t(tensor32(x))
    assert_close(t.inv(y), x, rtol=rtol, atol=atol)
    return y


@FEW
@given(batch=shapes, seed=hs.integers(0, 2**16))
def test_softplus_transform(batch, seed):
    rng = np.random.default_rng(seed)
    x = (3 * rng.normal(size=batch)).astype(F32)
    t = T.SoftplusTransform()
    y = _round_trip(t, x, rtol=1e-3, atol=1e-4)
    assert_close(y, np.logaddexp(0, x.astype(np.float64)), rtol=1e-5, atol=1e-6)
    # dy/dx = sigmoid(x), elementwise
    h = 1e-2
    fd = (_numpy(t(tensor32(x + h))) - _numpy(t(tensor32(x - h)))) / (2 * h)
    assert_close(t.log_abs_det_jacobian(tensor32(x), y), np.log(fd), rtol=1e-3, atol=1e-3)
    assert t.sign == 1 and t.bijective and t.codomain is C.positive
    big = tensor32([30.0, 80.0])
    assert_close(t(big), [30.0, 80.0]) and assert_close(t.inv(t(big)), [30.0, 80.0])


def test_cumulative_distribution_transform():
    base = D.Normal(tensor32([0.5, -1.0]), tensor32([2.0, 0.5]))
    t = T.CumulativeDistributionTransform(base)
    assert t.domain is base.support and t.codomain is C.unit_interval and t.sign == 1
    x = np.array([[0.3, -1.2], [2.0, 0.1]], F32)
    y = _round_trip(t, x, rtol=1e-3, atol=1e-4)
    assert_close(y, st.norm.cdf(x, [0.5, -1.0], [2.0, 0.5]), atol=1e-6)
    h = 1e-2
    fd = (_numpy(t(tensor32(x + h))) - _numpy(t(tensor32(x - h)))) / (2 * h)
    assert_close(t.log_abs_det_jacobian(tensor32(x), y), np.log(fd), rtol=1e-3, atol=1e-3)
    assert t.with_cache()._cache_size == 1 and t.with_cache().distribution is base
    # the gradient reaches the distribution's parameters
    loc = pyrt.tensor(np.float32(0.2), requires_grad=True)
    T.CumulativeDistributionTransform(D.Normal(loc, 1.0))(tensor32(1.0)).backward()
    assert_close(loc.grad, -st.norm.pdf(0.8), rtol=1e-4)


def test_reshape_transform():
    t = T.ReshapeTransform((2, 3), (3, 2))
    x = np.arange(24, dtype=F32).reshape(4, 2, 3)
    y = _round_trip(t, x)
    assert y.shape == (4, 3, 2)
    assert_close(y, x.reshape(4, 3, 2))
    assert_close(t.log_abs_det_jacobian(tensor32(x), y), np.zeros(4))
    assert t.forward_shape((5, 2, 3)) == (5, 3, 2) and t.inverse_shape((3, 2)) == (2, 3)
    assert t.domain.event_dim == 2 and t.codomain.event_dim == 2 and t.bijective
    flat = T.ReshapeTransform((2, 3), (6,))
    with pytest.raises(ValueError, match="Please use either .domain.event_dim"):
        flat.event_dim  # noqa: B018
    with pytest.raises(ValueError, match="in_shape, out_shape have different numbers of "
                                         "elements"):
        T.ReshapeTransform((2, 3), (5,))
    with pytest.raises(ValueError, match="Too few dimensions on input"):
        t.forward_shape((3,))
    with pytest.raises(ValueError, match=r"Shape mismatch: expected \(3, 2\) but got"):
        t.forward_shape((3, 2))
    with pytest.raises(ValueError, match="Too few dimensions on input"):
        flat.inverse_shape(())
    with pytest.raises(TypeError, match="in_shape must be a tuple of ints"):
        T.ReshapeTransform(None, (1,))


def _cat_stack_cases():
    parts = [T.ExpTransform(), T.identity_transform, T.SoftplusTransform()]
    return [
        (T.CatTransform(parts, dim=0, lengths=[1, 2, 1]), (4, 3)),
        (T.CatTransform(parts, dim=-1, lengths=[2, 1, 2]), (3, 5)),
        (T.CatTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)], dim=1), (2, 2, 3)),
        (T.StackTransform(parts, dim=0), (3, 4)),
        (T.StackTransform(parts, dim=-1), (2, 3)),
    ]


@pytest.mark.parametrize("index", range(5))
def test_cat_and_stack_transforms_round_trip_and_log_det(index):
    t, shape = _cat_stack_cases()[index]
    rng = np.random.default_rng(index)
    x = rng.normal(size=shape)
    y = _round_trip(t, x.astype(F32))
    assert y.shape == shape and t.bijective
    assert t.codomain.check(y).all().item()
    ladj = _numpy(t.log_abs_det_jacobian(tensor32(x), y))
    assert ladj.shape == shape
    # elementwise parts: the Jacobian is diagonal
    fd = np.diagonal(_fd_jacobian(lambda v: t(v.reshape(shape)), x.ravel()))
    assert_close(ladj.ravel(), np.log(np.abs(fd)), rtol=1e-3, atol=1e-3)


def test_cat_transform_with_event_dims_sums_or_joins():
    # parts of event_dim 1 along the event dim: the terms are added
    parts = [T.IndependentTransform(T.ExpTransform(), 1),
             T.IndependentTransform(T.SoftplusTransform(), 1)]
    inside = T.CatTransform(parts, dim=-1, lengths=[2, 3])
    x = np.random.default_rng(0).normal(size=(4, 5)).astype(F32)
    y = inside(tensor32(x))
    fd = np.log(np.abs(np.diagonal(_fd_jacobian(lambda v: inside(v.reshape(4, 5)),
                                                x.astype(np.float64).ravel()))))
    assert inside.event_dim == 1
    assert_close(inside.log_abs_det_jacobian(tensor32(x), y), fd.reshape(4, 5).sum(-1),
                 rtol=1e-3, atol=1e-3)
    # along a batch dim: the terms are joined
    outside = T.CatTransform(parts, dim=0, lengths=[1, 3])
    y = outside(tensor32(x))
    fd = np.log(np.abs(np.diagonal(_fd_jacobian(lambda v: outside(v.reshape(4, 5)),
                                                x.astype(np.float64).ravel()))))
    assert_close(outside.log_abs_det_jacobian(tensor32(x), y), fd.reshape(4, 5).sum(-1),
                 rtol=1e-3, atol=1e-3)


@needs_torch
def test_cat_stack_reshape_softplus_match_torch():
    rng = np.random.default_rng(1)
    cases = [
        (T.CatTransform([T.ExpTransform(), T.SoftplusTransform()], -1, [2, 1]),
         TD.transforms.CatTransform([TD.ExpTransform(), TD.SoftplusTransform()], -1, [2, 1]),
         (4, 3)),
        (T.CatTransform([T.IndependentTransform(T.ExpTransform(), 1),
                         T.IndependentTransform(T.TanhTransform(), 1)], -1, [2, 2]),
         TD.CatTransform([TD.IndependentTransform(TD.ExpTransform(), 1),
                          TD.IndependentTransform(TD.TanhTransform(), 1)], -1, [2, 2]),
         (3, 4)),
        (T.StackTransform([T.ExpTransform(), T.SigmoidTransform()], 1),
         TD.StackTransform([TD.ExpTransform(), TD.SigmoidTransform()], 1), (3, 2, 2)),
        (T.ReshapeTransform((2, 2), (4,)), TD.ReshapeTransform((2, 2), (4,)), (3, 2, 2)),
        (T.SoftplusTransform(), TD.SoftplusTransform(), (5,)),
        (T.CorrCholeskyTransform(), TD.CorrCholeskyTransform(), (2, 6)),
    ]
    for mine, theirs, shape in cases:
        x = rng.normal(size=shape).astype(F32)
        xm, xt = tensor32(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        y, ty = mine(xm), theirs(xt)
        assert_close(y, ty.detach().numpy(), rtol=1e-5, atol=1e-6)
        assert_close(mine.inv(y), theirs.inv(ty).detach().numpy(), rtol=1e-4, atol=1e-4)
        ladj, tladj = mine.log_abs_det_jacobian(xm, y), theirs.log_abs_det_jacobian(xt, ty)
        assert_close(ladj, tladj.detach().numpy(), rtol=1e-4, atol=1e-4)
        if tladj.requires_grad:
            ladj.sum().backward()
            tladj.sum().backward()
            assert_close(xm.grad, xt.grad.numpy(), rtol=1e-3, atol=1e-4)
        assert mine.forward_shape(shape) == tuple(theirs.forward_shape(shape))
        assert mine.domain.event_dim == theirs.domain.event_dim
        assert mine.codomain.event_dim == theirs.codomain.event_dim


def test_cat_and_stack_errors():
    cat = T.CatTransform([T.ExpTransform(), T.ExpTransform()], dim=0, lengths=[1, 2])
    with pytest.raises(ValueError, match=r"x.size\(0\) = 2 must equal length 3"):
        cat(tensor32([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"y.size\(0\) = 2 must equal length 3"):
        cat.inv(tensor32([1.0, 2.0]))
    with pytest.raises(ValueError, match="dim 0 out of range for x with 0 dimensions"):
        cat(tensor32(1.0))
    with pytest.raises(ValueError, match=r"lengths \(1\) must match transforms \(2\)"):
        T.CatTransform([T.ExpTransform(), T.ExpTransform()], lengths=[2])
    with pytest.raises(TypeError, match="CatTransform\\(\\): all elements of tseq must be "
                                        "Transform instances"):
        T.CatTransform([T.ExpTransform(), "exp"])
    stack = T.StackTransform([T.ExpTransform(), T.ExpTransform()], dim=1)
    with pytest.raises(ValueError, match=r"x.size\(1\) = 3 must equal len\(transforms\) 2"):
        stack(tensor32(np.ones((2, 3))))
    with pytest.raises(ValueError, match="dim 1 out of range for y with 1 dimensions"):
        stack.inv(tensor32([1.0, 2.0]))
    with pytest.raises(TypeError, match="StackTransform\\(\\): all elements of tseq"):
        T.StackTransform([1])
    cached = stack.with_cache()
    assert cached._cache_size == 1 and all(p._cache_size == 1 for p in cached.transforms)
    assert cat.with_cache().lengths == [1, 2]


def _corr_cholesky_forward64(x):
    """CorrCholeskyTransform by the loop over rows that its definition states, in float64."""
    n = round((0.25 + 2 * x.size) ** 0.5 + 0.5)
    L = np.eye(n)
    k = 0
    for i in range(1, n):
        left = 1.0
        for j in range(i):
            L[i, j] = np.tanh(x[k]) * math.sqrt(left)
            left -= L[i, j] ** 2
            k += 1
        L[i, i] = math.sqrt(left)
    return L


@FEW
@given(dim=hs.integers(2, 5), seed=hs.integers(0, 2**16))
def test_corr_cholesky_transform(dim, seed):
    rng = np.random.default_rng(seed)
    n = dim * (dim - 1) // 2
    x = rng.normal(size=(3, n))
    t = T.CorrCholeskyTransform()
    y = _round_trip(t, x.astype(F32), rtol=1e-3, atol=1e-3)
    assert y.shape == (3, dim, dim)
    assert C.corr_cholesky.check(y).all().item()
    assert_close(y, np.stack([_corr_cholesky_forward64(row) for row in x]), atol=1e-5)
    ladj = _numpy(t.log_abs_det_jacobian(tensor32(x), y))
    rows, cols = np.tril_indices(dim, -1)
    for b in range(3):
        # log |det| of x -> the strictly lower triangle of y, in row order
        J = _fd_jacobian(lambda v: t(v)[rows, cols], x[b], h=1e-3)
        assert_close(ladj[b], np.linalg.slogdet(J)[1], rtol=2e-3, atol=2e-3)
    assert t.forward_shape((3, n)) == (3, dim, dim) and t.inverse_shape((dim, dim)) == (n,)


def test_corr_cholesky_transform_shapes_and_tril_helpers():
    t = T.CorrCholeskyTransform()
    with pytest.raises(ValueError, match="Input is not a flattened lower-diagonal number"):
        t.forward_shape((4,))
    with pytest.raises(ValueError, match="Too few dimensions on input"):
        t.forward_shape(())
    with pytest.raises(ValueError, match="Input is not square"):
        t.inverse_shape((2, 3))
    with pytest.raises(ValueError, match="Too few dimensions on input"):
        t.inverse_shape((3,))
    from pyrt.distributions.transforms_corr import tril_matrix_to_vec, vec_to_tril_matrix

    v = tensor32(np.arange(1, 7), requires_grad=True)
    m = vec_to_tril_matrix(v)
    assert_close(m, [[1, 0, 0], [2, 3, 0], [4, 5, 6]])
    assert_close(tril_matrix_to_vec(m), np.arange(1, 7))
    assert_close(vec_to_tril_matrix(tensor32([1.0, 2.0, 3.0]), diag=-1),
                 [[0, 0, 0], [1, 0, 0], [2, 3, 0]])
    (m * tensor32(np.arange(9).reshape(3, 3))).sum().backward()
    assert_close(v.grad, [0, 3, 4, 6, 7, 8])
    with pytest.raises(ValueError, match="The size of last dimension is 4 which cannot be "
                                         "expressed as the lower triangular part"):
        vec_to_tril_matrix(tensor32(np.ones(4)))
    with pytest.raises(ValueError, match=r"diag \(3\) provided is outside \[-3, 2\]"):
        tril_matrix_to_vec(m, diag=3)


def test_transformed_distributions_with_the_new_transforms():
    # a Gaussian copula: the marginal cdfs of a correlated normal
    pyrt.manual_seed(0)
    L = D.LKJCholesky(2, 2.0).sample()
    copula = D.TransformedDistribution(D.MultivariateNormal(pyrt.zeros(2), scale_tril=L),
                                       [T.CumulativeDistributionTransform(D.Normal(0.0, 1.0))])
    u = copula.sample((5,))
    assert u.shape == (5, 2) and ((_numpy(u) > 0) & (_numpy(u) < 1)).all()
    z = st.norm.ppf(_numpy(u))
    cov = _numpy(L @ L.mT)
    want = st.multivariate_normal(np.zeros(2), cov).logpdf(z) - st.norm.logpdf(z).sum(-1)
    assert_close(copula.log_prob(u), want, rtol=1e-3, atol=1e-3)
    # LKJ through its bijection: scoring the unconstrained vector adds log |det J|
    lkj = D.LKJCholesky(3, 1.5)
    x = tensor32([0.3, -0.2, 0.5])
    t = D.biject_to(lkj.support)
    assert isinstance(t, T.CorrCholeskyTransform)
    assert lkj.log_prob(t(x)).shape == () and t.log_abs_det_jacobian(x, t(x)).shape == ()
    # a reshaped normal
    flat = D.TransformedDistribution(D.Normal(pyrt.zeros(2, 3), 1.0),
                                     T.ReshapeTransform((2, 3), (6,)))
    assert flat.batch_shape == () and flat.event_shape == (6,)
    v = np.linspace(-1, 1, 6).astype(F32)
    assert_close(flat.log_prob(tensor32(v)), st.norm.logpdf(v).sum(), rtol=1e-5)


def test_new_constraints():
    L = _corr_cholesky(np.random.default_rng(0), (2,), 3)
    assert C.corr_cholesky.check(tensor32(L)).all().item()
    assert C.corr_cholesky.event_dim == 2 and repr(C.corr_cholesky) == "CorrCholesky()"
    bad = L.copy()
    bad[0, 2, 2] *= 1.01
    assert _numpy(C.corr_cholesky.check(tensor32(bad))).tolist() == [False, True]
    # the tolerance on the row norms is 10 float32 eps per column
    bad[0, 2, 2] /= 1.01
    bad[1, 2] *= 1 + 2e-5
    assert _numpy(C.corr_cholesky.check(tensor32(bad))).tolist() == [True, False]
    assert not C.corr_cholesky.check(tensor32(np.triu(np.ones((2, 2))) / np.sqrt(2))).item()
    cat = C.cat([C.positive, C.real, C.unit_interval], dim=-1, lengths=[1, 2, 1])
    assert cat.event_dim == 0 and not cat.is_discrete
    assert _numpy(cat.check(tensor32([1.0, -5.0, 5.0, 0.5]))).tolist() == [1, 1, 1, 1]
    assert _numpy(cat.check(tensor32([-1.0, -5.0, 5.0, 1.5]))).tolist() == [0, 1, 1, 0]
    stack = C.stack([C.positive, C.independent(C.real, 1)], dim=-2)
    assert stack.event_dim == 2
    stack0 = C.stack([C.positive, C.boolean], dim=0)
    assert stack0.event_dim == 0 and stack0.is_discrete
    assert _numpy(stack0.check(tensor32([[1.0, -1.0], [1.0, 0.5]]))).tolist() \
        == [[True, False], [True, False]]
    with pytest.raises(ValueError, match=r"lengths \(1\) must match cseq \(2\)"):
        C.cat([C.real, C.real], lengths=[2])
    with pytest.raises(TypeError, match="cat\\(\\): all elements of cseq must be Constraint"):
        C.cat([C.real, 1])
    with pytest.raises(TypeError, match="stack\\(\\): all elements of cseq must be Constraint"):
        C.stack(["real"])
    with pytest.raises(ValueError, match="dim 1 out of range for value with 1 dimensions"):
        C.cat([C.real], dim=1).check(tensor32([1.0]))
    with pytest.raises(ValueError, match=r"value.size\(0\) = 3 must equal len\(cseq\) 2"):
        stack0.check(tensor32([1.0, 2.0, 3.0]))


def test_biject_to_and_transform_to_the_new_constraints():
    for registry in (D.biject_to, D.transform_to):
        assert isinstance(registry(C.corr_cholesky), T.CorrCholeskyTransform)
        cat = registry(C.cat([C.positive, C.real, C.interval(-1.0, 1.0)], 0, [1, 2, 1]))
        assert isinstance(cat, T.CatTransform) and cat.lengths == [1, 2, 1]
        x = tensor32([-3.0, -3.0, 3.0, 2.0])
        assert cat.codomain.check(cat(x)).all().item()
        if registry is D.biject_to:
            assert_close(cat.inv(cat(x)), [-3.0, -3.0, 3.0, 2.0], rtol=1e-3, atol=1e-3)
        stack = registry(C.stack([C.positive, C.unit_interval], dim=-1))
        assert isinstance(stack, T.StackTransform)
        assert stack.codomain.check(stack(tensor32(np.ones((3, 2))))).all().item()
    sq = tensor32(np.random.default_rng(0).normal(size=(3, 3)))
    assert C.positive_definite.check(D.transform_to(C.positive_semidefinite)(sq)).item()
    with pytest.raises(NotImplementedError, match="Cannot transform _PositiveSemidefinite"):
        D.biject_to(C.positive_semidefinite)
