"""pyrt.distributions beyond the scalar families: MultivariateNormal and
LowRankMultivariateNormal (log_prob, entropy, moments and gradients against scipy/NumPy in
float64 and torch), kl_divergence (closed forms against numerical integration and torch),
transforms (round trips, log |det J| against finite differences), constraints, biject_to and
transform_to, Independent and TransformedDistribution."""

import numpy as np
import pytest
import scipy.integrate as si
import scipy.stats as st
from hypothesis import given
from hypothesis import strategies as hs

import pyrt
import pyrt.distributions as D
from pyrt.distributions import constraints as C
from pyrt.distributions import transforms as T
from tests.distribution_checks import (
    F32,
    FEW,
    needs_torch,
)
from tests.distribution_checks import assert_close as _close
from tests.distribution_checks import tensor32 as _t

try:
    import torch
    import torch.distributions as TD
except ImportError:
    torch = None


def _spd(rng, batch, n):
    a = rng.normal(size=batch + (n, n))
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(F32)


# MultivariateNormal and LowRankMultivariateNormal.

@FEW
@given(batch=hs.lists(hs.integers(1, 3), max_size=2).map(tuple), n=hs.integers(1, 4),
       seed=hs.integers(0, 2**16), form=hs.sampled_from(["cov", "prec", "tril"]))
def test_mvn_matches_scipy(batch, n, seed, form):
    rng = np.random.default_rng(seed)
    loc = rng.normal(size=batch + (n,)).astype(F32)
    cov = _spd(rng, batch, n)
    arg = {"cov": dict(covariance_matrix=_t(cov)),
           "prec": dict(precision_matrix=_t(np.linalg.inv(cov.astype(np.float64)))),
           "tril": dict(scale_tril=_t(np.linalg.cholesky(cov.astype(np.float64))))}[form]
    d = D.MultivariateNormal(_t(loc), **arg)
    assert d.batch_shape == batch and d.event_shape == (n,)
    x = rng.normal(size=(2,) + batch + (n,)).astype(F32)
    flat_loc, flat_cov = loc.reshape(-1, n), cov.reshape(-1, n, n).astype(np.float64)
    flat_x = x.reshape(2, -1, n)
    want = np.stack([[st.multivariate_normal(flat_loc[i], flat_cov[i]).logpdf(flat_x[s, i])
                      for i in range(len(flat_loc))] for s in range(2)]).reshape((2,) + batch)
    _close(d.log_prob(_t(x)), want, rtol=1e-3, atol=1e-3)
    ent = np.array([st.multivariate_normal(flat_loc[i], flat_cov[i]).entropy()
                    for i in range(len(flat_loc))]).reshape(batch)
    _close(d.entropy(), ent, rtol=1e-4, atol=1e-4)
    _close(d.covariance_matrix, cov, rtol=1e-3, atol=1e-3)
    _close(d.precision_matrix, np.linalg.inv(cov.astype(np.float64)), rtol=1e-3, atol=1e-4)
    _close(d.variance, np.diagonal(cov, 0, -2, -1), rtol=1e-3, atol=1e-4)
    _close(d.mean, loc)


@needs_torch
@FEW
@given(batch=hs.lists(hs.integers(1, 3), max_size=2).map(tuple), n=hs.integers(1, 4),
       m=hs.integers(1, 3), seed=hs.integers(0, 2**16))
def test_mvn_and_lowrank_gradients_match_torch(batch, n, m, seed):
    rng = np.random.default_rng(seed)
    loc = rng.normal(size=batch + (n,)).astype(F32)
    tril = np.linalg.cholesky(_spd(rng, batch, n).astype(np.float64)).astype(F32)
    W = rng.normal(size=batch + (n, m)).astype(F32)
    diag = rng.uniform(0.5, 2, batch + (n,)).astype(F32)
    x = rng.normal(size=(3,) + batch + (n,)).astype(F32)
    mine = [_t(a, True) for a in (loc, tril, W, diag)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (loc, tril, W, diag)]
    results = []
    for (lo, L, w, dg), lib in ((mine, D), (theirs, TD)):
        d = lib.MultivariateNormal(lo, scale_tril=L)
        lr = lib.LowRankMultivariateNormal(lo, w, dg)
        xv = _t(x) if lib is D else torch.tensor(x)
        outs = [d.log_prob(xv), d.entropy(), lr.log_prob(xv), lr.entropy(), lr.variance,
                lr.precision_matrix, lib.kl_divergence(d, lr), lib.kl_divergence(lr, d)]
        total = sum(o.sum() for o in outs)
        total.backward()
        results.append(outs)
    for a, b in zip(*results):
        _close(a, b.detach().numpy(), rtol=2e-3, atol=2e-3)
    for a, b in zip(mine, theirs):
        _close(a.grad, b.grad.numpy(), rtol=5e-3, atol=5e-3)


def test_lowrank_matches_dense_and_samples():
    rng = np.random.default_rng(1)
    loc, W = rng.normal(size=3).astype(F32), rng.normal(size=(3, 2)).astype(F32)
    diag = rng.uniform(0.5, 1.5, 3).astype(F32)
    cov = W.astype(np.float64) @ W.T + np.diag(diag)
    lr = D.LowRankMultivariateNormal(_t(loc), _t(W), _t(diag))
    x = rng.normal(size=(4, 3)).astype(F32)
    _close(lr.log_prob(_t(x)), st.multivariate_normal(loc, cov).logpdf(x), rtol=1e-4)
    _close(lr.entropy(), st.multivariate_normal(loc, cov).entropy(), rtol=1e-5)
    _close(lr.covariance_matrix, cov, rtol=1e-5)
    _close(lr.precision_matrix, np.linalg.inv(cov), rtol=1e-3, atol=1e-4)
    _close(lr.scale_tril, np.linalg.cholesky(cov), rtol=1e-4, atol=1e-5)
    pyrt.manual_seed(0)
    for d in (lr, D.MultivariateNormal(_t(loc), _t(cov))):
        s = d.sample((100_000,)).numpy().astype(np.float64)
        np.testing.assert_allclose(s.mean(0), loc, atol=0.03)
        np.testing.assert_allclose(np.cov(s.T), cov, atol=0.06)


def test_mvn_rsample_gradient():
    """d/dL of E|loc + L eps|^2 = d/dL tr(L L^T) = 2 L (lower triangle)."""
    L = _t([[1.0, 0.0], [0.5, 2.0]], True)
    pyrt.manual_seed(2)
    d = D.MultivariateNormal(pyrt.zeros(2), scale_tril=L)
    d.rsample((100_000,)).pow(2).sum(-1).mean().backward()
    np.testing.assert_allclose(np.tril(L.grad.numpy()), [[2.0, 0.0], [1.0, 4.0]], atol=0.06)


# KL divergences.

def _numeric_kl(p, q):
    """KL(p || q) = E_p[log p(X) - log q(X)] for scipy frozen distributions p, q, integrated
    over the quantiles u of p (X = p.ppf(u)), which tames heavy tails."""
    def f(u):
        x = p.ppf(u)
        return p.logpdf(x) - q.logpdf(x)

    edges = [0, 1e-6, 0.01, 0.5, 0.99, 1 - 1e-6, 1]
    return sum(si.quad(f, a, b, limit=200)[0] for a, b in zip(edges[:-1], edges[1:]))


KL_CASES = [
    (D.Normal(0.3, 1.2), D.Normal(-0.5, 0.7), st.norm(0.3, 1.2), st.norm(-0.5, 0.7)),
    (D.Uniform(0.2, 1.0), D.Uniform(0.0, 1.5), st.uniform(0.2, 0.8), st.uniform(0, 1.5)),
    (D.Laplace(0.1, 0.8), D.Laplace(-0.4, 1.5), st.laplace(0.1, 0.8), st.laplace(-0.4, 1.5)),
    (D.Exponential(1.5), D.Exponential(0.6), st.expon(scale=1 / 1.5), st.expon(scale=1 / 0.6)),
    (D.Cauchy(0.1, 0.8), D.Cauchy(-0.4, 1.5), st.cauchy(0.1, 0.8), st.cauchy(-0.4, 1.5)),
    (D.Gumbel(0.1, 0.8), D.Gumbel(-0.4, 1.5), st.gumbel_r(0.1, 0.8), st.gumbel_r(-0.4, 1.5)),
    (D.HalfNormal(0.8), D.HalfNormal(1.5), st.halfnorm(scale=0.8), st.halfnorm(scale=1.5)),
    (D.Pareto(1.5, 2.0), D.Pareto(1.0, 3.0), st.pareto(2.0, scale=1.5), st.pareto(3.0)),
    (D.LogNormal(0.2, 0.5), D.LogNormal(0.0, 0.9), st.lognorm(0.5, scale=np.exp(0.2)),
     st.lognorm(0.9)),
    (D.Uniform(0.2, 1.0), D.Normal(0.0, 1.5), st.uniform(0.2, 0.8), st.norm(0, 1.5)),
    (D.Uniform(0.2, 1.0), D.Exponential(0.5), st.uniform(0.2, 0.8), st.expon(scale=2)),
    (D.Uniform(0.2, 1.0), D.Gumbel(0.0, 1.5), st.uniform(0.2, 0.8), st.gumbel_r(0, 1.5)),
    (D.Normal(0.3, 1.2), D.Laplace(-0.5, 0.7), st.norm(0.3, 1.2), st.laplace(-0.5, 0.7)),
    (D.Normal(0.3, 1.2), D.Gumbel(-0.5, 0.7), st.norm(0.3, 1.2), st.gumbel_r(-0.5, 0.7)),
    (D.Laplace(0.3, 1.2), D.Normal(-0.5, 0.7), st.laplace(0.3, 1.2), st.norm(-0.5, 0.7)),
    (D.Exponential(1.5), D.Normal(0.5, 0.7), st.expon(scale=1 / 1.5), st.norm(0.5, 0.7)),
    (D.Exponential(1.5), D.Gumbel(0.5, 0.7), st.expon(scale=1 / 1.5), st.gumbel_r(0.5, 0.7)),
    (D.Gumbel(0.3, 1.2), D.Normal(-0.5, 0.7), st.gumbel_r(0.3, 1.2), st.norm(-0.5, 0.7)),
]


@pytest.mark.parametrize("case", range(len(KL_CASES)))
def test_kl_matches_numerical_integration(case):
    p, q, sp, sq = KL_CASES[case]
    want = _numeric_kl(sp, sq)
    _close(D.kl_divergence(p, q), want, rtol=2e-3, atol=2e-4)


def test_kl_infinite_and_independent():
    assert np.isinf(D.kl_divergence(D.Uniform(0.0, 2.0), D.Uniform(0.5, 3.0)).item())
    assert np.isinf(D.kl_divergence(D.Normal(0.0, 1.0), D.Exponential(1.0)).item())
    _close(D.Normal(0.0, 2.0).cdf(pyrt.tensor(1.0)), st.norm(0, 2).cdf(1.0))  # 0-dim
    p = D.Independent(D.Normal(pyrt.zeros(2, 3), 1.0), 1)
    q = D.Independent(D.Normal(pyrt.ones(2, 3), 2.0), 1)
    want = 3 * _numeric_kl(st.norm(0, 1), st.norm(1, 2))
    _close(D.kl_divergence(p, q), np.full(2, want), rtol=1e-4)


def test_register_kl_dispatch():
    class MyNormal(D.Normal):
        pass

    p, q = MyNormal(0.0, 1.0), D.Normal(1.0, 1.0)
    _close(D.kl_divergence(p, q), 0.5)  # the Normal-Normal form, by MRO

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return pyrt.tensor(-1.0)

    assert D.kl_divergence(p, q).item() == -1.0
    assert D.kl_divergence(q, q).item() == 0.0
    with pytest.raises(TypeError, match="Distribution subclass"):
        D.register_kl(int, D.Normal)


@needs_torch
def test_kl_matches_torch_with_gradients():
    rng = np.random.default_rng(0)
    raw = [rng.uniform(0.5, 2, (2, 3)).astype(F32) for _ in range(4)]
    pairs = [("Normal", "Normal"), ("Laplace", "Laplace"), ("Gumbel", "Gumbel"),
             ("Normal", "Gumbel"), ("Laplace", "Normal"), ("Cauchy", "Cauchy"),
             ("HalfNormal", "HalfNormal"), ("Exponential", "Exponential"),
             ("Exponential", "Gumbel"), ("LogNormal", "LogNormal"), ("Pareto", "Pareto")]
    one = {"HalfNormal", "Exponential"}
    for pn, qn in pairs:
        mine = [_t(a, True) for a in raw]
        theirs = [torch.tensor(a, requires_grad=True) for a in raw]
        out = []
        for args, lib in ((mine, D), (theirs, TD)):
            p = getattr(lib, pn)(*args[:1 if pn in one else 2])
            q = getattr(lib, qn)(*args[2:3 if qn in one else 4])
            kl = lib.kl_divergence(p, q)
            kl.sum().backward()
            out.append(kl)
        _close(out[0], out[1].detach().numpy(), rtol=1e-4, atol=1e-5)
        for a, b in zip(mine, theirs):
            if b.grad is not None:
                _close(a.grad, b.grad.numpy(), rtol=1e-3, atol=1e-4)


# Transforms.

def _numeric_ladj(f, x, h=1e-5):
    return np.log(np.abs((f(x + h) - f(x - h)) / (2 * h)))


SCALAR_TRANSFORMS = [
    (T.ExpTransform(), np.exp, (-2, 2)),
    (T.SigmoidTransform(), lambda x: 1 / (1 + np.exp(-x)), (-4, 4)),
    (T.TanhTransform(), np.tanh, (-3, 3)),
    (T.AffineTransform(0.5, -2.0), lambda x: 0.5 - 2 * x, (-3, 3)),
    (T.PowerTransform(2.5), lambda x: x ** 2.5, (0.2, 3)),
    (T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, 3.0)]),
     lambda x: 1 + 3 * np.exp(x), (-2, 2)),
    (T.ExpTransform().inv, np.log, (0.2, 3)),
]


@pytest.mark.parametrize("case", range(len(SCALAR_TRANSFORMS)))
def test_scalar_transforms(case):
    t, f, (lo, hi) = SCALAR_TRANSFORMS[case]
    x = np.linspace(lo, hi, 7)
    y = t(_t(x))
    _close(y, f(x), rtol=1e-5)
    _close(t.inv(y), x, rtol=1e-4, atol=1e-4)
    _close(t.log_abs_det_jacobian(_t(x), y), _numeric_ladj(f, x), rtol=1e-3, atol=1e-3)
    assert t.bijective and t.domain.check(_t(x)).all().item()
    assert t.codomain.check(y).all().item()
    assert t.inv.inv is t


def test_vector_transforms():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3)).astype(F32)
    sb = T.StickBreakingTransform()
    y = sb(_t(x))
    assert y.shape == (2, 4) and C.simplex.check(y).all().item()
    _close(sb.inv(y), x, atol=1e-4)
    # log|det J| of x -> y[:-1] by finite differences
    def f(v):
        return sb(_t(v)).numpy()[..., :-1].astype(np.float64)

    for row in range(2):
        J = np.stack([(f(x[row] + e) - f(x[row] - e)) / 2e-3 for e in np.eye(3) * 1e-3], -1)
        _close(sb.log_abs_det_jacobian(_t(x), y)[row], np.linalg.slogdet(J)[1], atol=5e-3)
    sm = T.SoftmaxTransform()
    _close(sm(_t(x)), np.exp(x) / np.exp(x).sum(-1, keepdims=True), rtol=1e-5)
    assert C.simplex.check(sm(_t(x))).all().item()
    _close(T.AbsTransform()(_t([-1.0, 2.0])), [1.0, 2.0])
    lc = T.LowerCholeskyTransform()(_t(rng.normal(size=(3, 3))))
    assert C.lower_cholesky.check(lc).item()
    pd = T.PositiveDefiniteTransform()(_t(rng.normal(size=(2, 3, 3))))
    assert C.positive_definite.check(pd).all().item()
    ind = T.IndependentTransform(T.ExpTransform(), 1)
    _close(ind.log_abs_det_jacobian(_t(x), ind(_t(x))), x.sum(-1), rtol=1e-5)


@needs_torch
def test_transforms_match_torch():
    x = np.linspace(-2, 2, 6).astype(F32).reshape(2, 3)
    for mine, theirs in [(T.SigmoidTransform(), TD.transforms.SigmoidTransform()),
                         (T.TanhTransform(), TD.transforms.TanhTransform()),
                         (T.StickBreakingTransform(), TD.transforms.StickBreakingTransform()),
                         (T.AffineTransform(1.0, _t([1.0, -2.0, 3.0]), event_dim=1),
                          TD.transforms.AffineTransform(1.0, torch.tensor([1.0, -2.0, 3.0]),
                                                        event_dim=1))]:
        y, ty = mine(_t(x)), theirs(torch.tensor(x))
        _close(y, ty.numpy(), rtol=1e-5, atol=1e-6)
        _close(mine.log_abs_det_jacobian(_t(x), y),
               theirs.log_abs_det_jacobian(torch.tensor(x), ty).numpy(), rtol=1e-4, atol=1e-5)


def test_biject_to_and_transform_to():
    x = _t(np.linspace(-3, 3, 8))
    for c in (C.real, C.positive, C.greater_than(2.0), C.less_than(-1.0),
              C.interval(-1.0, 3.0), C.unit_interval, C.nonnegative):
        for registry in (D.biject_to, D.transform_to):
            t = registry(c)
            assert c.check(t(x)).all().item(), (c, registry)
            _close(t.inv(t(x)), x.numpy(), atol=2e-4)
    v = _t(np.random.default_rng(0).normal(size=(2, 3)))
    assert C.simplex.check(D.biject_to(C.simplex)(v)).all().item()
    assert D.biject_to(C.simplex)(v).shape == (2, 4)
    assert C.simplex.check(D.transform_to(C.simplex)(v)).all().item()
    sq = _t(np.random.default_rng(1).normal(size=(3, 3)))
    assert C.lower_cholesky.check(D.transform_to(C.lower_cholesky)(sq)).item()
    assert C.positive_definite.check(D.transform_to(C.positive_definite)(sq)).item()
    ind = D.biject_to(C.independent(C.positive, 1))
    assert isinstance(ind, T.IndependentTransform)
    with pytest.raises(NotImplementedError, match="Cannot transform"):
        D.biject_to(C.boolean)


def test_constraints_check():
    v = _t([-1.0, 0.0, 0.5, 1.0, float("nan")])
    np.testing.assert_array_equal(C.real.check(v).numpy(), [1, 1, 1, 1, 0])
    np.testing.assert_array_equal(C.positive.check(v).numpy(), [0, 0, 1, 1, 0])
    np.testing.assert_array_equal(C.nonnegative.check(v).numpy(), [0, 1, 1, 1, 0])
    np.testing.assert_array_equal(C.unit_interval.check(v).numpy(), [0, 1, 1, 1, 0])
    np.testing.assert_array_equal(C.half_open_interval(0, 1).check(v).numpy(), [0, 1, 1, 0, 0])
    np.testing.assert_array_equal(C.greater_than(0.5).check(v).numpy(), [0, 0, 0, 1, 0])
    np.testing.assert_array_equal(C.boolean.check(v).numpy(), [0, 1, 0, 1, 0])
    np.testing.assert_array_equal(C.nonnegative_integer.check(v).numpy(), [0, 1, 0, 1, 0])
    assert C.simplex.check(_t([[0.2, 0.8], [0.5, 0.6]])).numpy().tolist() == [True, False]
    assert C.real_vector.check(_t([[0.0, float("nan")], [1.0, 2.0]])).numpy().tolist() == \
        [False, True]
    assert C.independent(C.positive, 1).event_dim == 1
    assert C.lower_cholesky.check(_t([[1.0, 0.0], [2.0, 1.0]])).item()
    assert not C.lower_cholesky.check(_t([[1.0, 0.0], [2.0, -1.0]])).item()
    assert not C.positive_definite.check(_t([[1.0, 2.0], [2.0, 1.0]])).item()
    assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
    with pytest.raises(ValueError, match="dependent"):
        C.dependent.check(v)


def test_exponential_family_entropy():
    """The generic entropy (from the log normalizer and its autograd gradient) agrees with
    the closed forms."""
    for d in (D.Normal(_t([0.3, -1.0]), _t([0.5, 2.0])), D.Exponential(_t([0.5, 3.0]))):
        _close(D.ExponentialFamily.entropy(d), d.entropy().numpy(), rtol=1e-5)


def test_transformed_distribution():
    base = D.Normal(_t([0.2, -0.3]), _t([1.0, 0.5]))
    d = D.TransformedDistribution(base, [T.AffineTransform(1.0, 2.0), T.ExpTransform()])
    x = np.array([0.5, 3.0], F32)
    want = st.lognorm(s=[2.0, 1.0], scale=np.exp([1.4, 0.4])).logpdf(x)
    _close(d.log_prob(_t(x)), want, rtol=1e-4)
    _close(d.cdf(_t(x)), st.lognorm(s=[2.0, 1.0], scale=np.exp([1.4, 0.4])).cdf(x), rtol=1e-4)
    assert d.batch_shape == (2,) and d.sample((3,)).shape == (3, 2)
    assert d.has_rsample and d.support.check(d.sample()).all().item()
    flipped = D.TransformedDistribution(D.Uniform(0.0, 1.0), T.AffineTransform(0.0, -1.0))
    _close(flipped.cdf(_t(-0.25)), 0.75)
    vec = D.TransformedDistribution(D.Normal(pyrt.zeros(3), 1.0), T.StickBreakingTransform())
    assert vec.batch_shape == () and vec.event_shape == (4,)
    assert vec.log_prob(vec.sample()).shape == ()
    with pytest.raises(TypeError, match="Transform"):
        D.TransformedDistribution(base, "exp")
