"""pyrt.distributions' discrete families (Bernoulli, Categorical, OneHotCategorical,
Binomial, Multinomial, Poisson, Geometric, NegativeBinomial) and the relaxed and continuous
Bernoulli/categorical ones: log_prob, mean, variance and entropy against scipy.stats (float64)
and torch.distributions (where installed) over broadcast parameter shapes; gradients of
log_prob against torch and finite differences; reparameterized gradients of the relaxed
families against finite differences of the same seeded noise; moments of 100k draws; KL
divergences against direct sums; enumerate_support, expand, shapes and argument errors."""

import numpy as np
import pytest
import scipy.stats as st
from hypothesis import given
from hypothesis import strategies as hs
from scipy import integrate
from scipy.special import expit, logsumexp

import pyrt
import pyrt.distributions as D
from tests.distribution_checks import (
    F32,
    FEW,
    needs_torch,
    shapes,
)
from tests.distribution_checks import assert_close as _close
from tests.distribution_checks import tensor32 as _t

try:
    import torch
    import torch.distributions as TD
    from torch.distributions.relaxed_bernoulli import LogitRelaxedBernoulli
    from torch.distributions.relaxed_categorical import ExpRelaxedCategorical
except ImportError:
    torch = None


def _probs(rng, shape):
    return rng.uniform(0.05, 0.95, shape).astype(F32)


# name: (constructor from (probs array, rng), frozen scipy distribution from float64 probs,
#        value sampler)
SCALAR_FAMILIES = {
    "Bernoulli": (lambda p, rng: D.Bernoulli(_t(p)), lambda p: st.bernoulli(p)),
    "Binomial": (lambda p, rng: D.Binomial(7, _t(p)), lambda p: st.binom(7, p)),
    "Poisson": (lambda p, rng: D.Poisson(_t(4 * p)), lambda p: st.poisson(4 * p)),
    "Geometric": (lambda p, rng: D.Geometric(_t(p)), lambda p: st.geom(p, loc=-1)),
    # scipy's nbinom counts failures before n successes with success probability p:
    # pyrt's (torch's) counts successes (probability probs) before total_count failures
    "NegativeBinomial": (lambda p, rng: D.NegativeBinomial(_t(2.5), _t(p)),
                         lambda p: st.nbinom(2.5, 1 - p)),
}
NO_ENTROPY = {"Poisson", "NegativeBinomial"}  # (neither has a closed form, as in torch)


@pytest.mark.parametrize("name", sorted(SCALAR_FAMILIES))
@FEW
@given(shape=shapes, seed=hs.integers(0, 2**16))
def test_scalar_families_match_scipy(name, shape, seed):
    rng = np.random.default_rng(seed)
    make, ref = SCALAR_FAMILIES[name]
    p = _probs(rng, shape)
    d = make(p, rng)
    exact = ref(p.astype(np.float64))
    assert d.batch_shape == shape and d.event_shape == ()
    values = exact.rvs(size=(3,) + shape, random_state=rng).astype(F32)
    _close(d.log_prob(_t(values)), exact.logpmf(values), rtol=1e-3, atol=1e-3)
    _close(d.mean, exact.mean(), rtol=1e-4)
    _close(d.variance, exact.var(), rtol=1e-3)
    if name not in NO_ENTROPY:
        _close(d.entropy(), exact.entropy(), rtol=1e-3, atol=1e-4)


@pytest.mark.filterwarnings("ignore:Some rows of `p` do not sum to 1.0:FutureWarning")
@FEW
@given(shape=shapes, k=hs.integers(1, 5), seed=hs.integers(0, 2**16))
def test_categorical_and_multinomial_match_numpy(shape, k, seed):
    rng = np.random.default_rng(seed)
    weights = rng.uniform(0.1, 2.0, shape + (k,)).astype(F32)
    probs = weights.astype(np.float64) / weights.sum(-1, keepdims=True)
    for d in (D.Categorical(_t(weights)), D.Categorical(logits=_t(np.log(weights)))):
        assert d.batch_shape == shape and d.event_shape == ()
        values = rng.integers(0, k, (2,) + shape)
        expected = np.log(np.take_along_axis(
            np.broadcast_to(probs, (2,) + probs.shape), values[..., None], -1)[..., 0])
        _close(d.log_prob(pyrt.tensor(values)), expected, rtol=1e-4, atol=1e-5)
        _close(d.entropy(), -(probs * np.log(probs)).sum(-1), rtol=1e-4, atol=1e-5)
        _close(d.probs, probs)
        np.testing.assert_array_equal(d.mode.numpy(), probs.argmax(-1))
        assert np.isnan(d.mean.numpy()).all() and d.mean.shape == shape
    onehot = D.OneHotCategorical(_t(weights))
    assert onehot.batch_shape == shape and onehot.event_shape == (k,)
    value = np.eye(k, dtype=F32)[rng.integers(0, k, shape)]
    _close(onehot.log_prob(_t(value)), np.log((probs * value).sum(-1)), rtol=1e-4, atol=1e-5)
    _close(onehot.variance, probs * (1 - probs))
    n = 5
    multi = D.Multinomial(n, _t(weights))
    assert multi.batch_shape == shape and multi.event_shape == (k,)
    counts = np.asarray([rng.multinomial(n, pv) for pv in probs.reshape(-1, k)]).reshape(
        probs.shape).astype(F32)
    expected = np.vectorize(lambda i: st.multinomial(n, probs.reshape(-1, k)[i]).logpmf(
        counts.reshape(-1, k)[i]))(np.arange(int(np.prod(shape)))).reshape(shape)
    _close(multi.log_prob(_t(counts)), expected, rtol=1e-4, atol=1e-4)
    entropy = np.vectorize(lambda i: st.multinomial(n, probs.reshape(-1, k)[i]).entropy())(
        np.arange(int(np.prod(shape)))).reshape(shape)
    _close(multi.entropy(), entropy, rtol=1e-4, atol=1e-4)
    _close(multi.mean, n * probs)
    _close(multi.variance, n * probs * (1 - probs))


def _torch_pair(name, p):
    """(pyrt distribution, torch distribution, leaf tensors of each) for family `name` with
    probabilities p, parameterized by logits for half the families to cover both forms."""
    mine, theirs = pyrt.tensor(p, requires_grad=True), torch.tensor(p, requires_grad=True)
    if name == "Bernoulli":
        return D.Bernoulli(mine), TD.Bernoulli(theirs), mine, theirs
    if name == "BernoulliLogits":
        return D.Bernoulli(logits=mine), TD.Bernoulli(logits=theirs), mine, theirs
    if name == "Binomial":
        return (D.Binomial(_t(np.full(p.shape, 6)), logits=mine),
                TD.Binomial(torch.full(p.shape, 6.0), logits=theirs), mine, theirs)
    if name == "Poisson":
        return D.Poisson(mine), TD.Poisson(theirs), mine, theirs
    if name == "Geometric":
        return D.Geometric(mine), TD.Geometric(theirs), mine, theirs
    if name == "GeometricLogits":
        return D.Geometric(logits=mine), TD.Geometric(logits=theirs), mine, theirs
    if name == "NegativeBinomial":
        return (D.NegativeBinomial(mine * 3, mine), TD.NegativeBinomial(theirs * 3, theirs),
                mine, theirs)
    if name == "ContinuousBernoulli":
        return D.ContinuousBernoulli(mine), TD.ContinuousBernoulli(theirs), mine, theirs
    raise AssertionError(name)


TORCH_SCALAR = ["Bernoulli", "BernoulliLogits", "Binomial", "Poisson", "Geometric",
                "GeometricLogits", "NegativeBinomial", "ContinuousBernoulli"]


@needs_torch
@pytest.mark.parametrize("name", TORCH_SCALAR)
@FEW
@given(shape=shapes, seed=hs.integers(0, 2**16))
def test_scalar_families_values_and_gradients_match_torch(name, shape, seed):
    rng = np.random.default_rng(seed)
    p = _probs(rng, shape)
    if name == "ContinuousBernoulli":  # also inside the Taylor region about 1/2
        p = np.where(rng.random(shape) < 0.3, F32(0.5004), p).astype(F32)
    d, td, mine, theirs = _torch_pair(name, p)
    values = td.sample((3,)).numpy()
    lp, tlp = d.log_prob(_t(values)), td.log_prob(torch.tensor(values))
    _close(lp, tlp.detach().numpy(), rtol=1e-4, atol=1e-4)
    total, ttotal = lp.sum(), tlp.sum()
    if name not in ("Poisson", "NegativeBinomial"):
        total, ttotal = total + d.entropy().sum(), ttotal + td.entropy().sum()
        _close(d.entropy(), td.entropy().detach().numpy(), rtol=1e-4, atol=1e-4)
    total.backward()
    ttotal.backward()
    _close(mine.grad, theirs.grad.numpy(), rtol=1e-3, atol=1e-3)
    props = ("mean", "variance") if name == "ContinuousBernoulli" else ("mean", "mode",
                                                                          "variance")
    for prop in props:
        _close(getattr(d, prop), getattr(td, prop).detach().numpy(), rtol=1e-4, atol=1e-6)
    if name == "ContinuousBernoulli":
        u = rng.uniform(0.01, 0.99, shape).astype(F32)
        _close(d.cdf(_t(u)), td.cdf(torch.tensor(u)).detach().numpy(), atol=1e-5)
        _close(d.icdf(_t(u)), td.icdf(torch.tensor(u)).detach().numpy(), atol=1e-5)


@needs_torch
@FEW
@given(shape=shapes, k=hs.integers(2, 5), seed=hs.integers(0, 2**16))
def test_categorical_families_values_and_gradients_match_torch(shape, k, seed):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=shape + (k,)).astype(F32)
    for make, tmake in ((D.Categorical, TD.Categorical),
                        (D.OneHotCategorical, TD.OneHotCategorical),
                        (lambda logits: D.Multinomial(4, logits=logits),
                         lambda logits: TD.Multinomial(4, logits=logits))):
        mine, theirs = pyrt.tensor(logits, requires_grad=True), torch.tensor(
            logits, requires_grad=True)
        d, td = make(logits=mine), tmake(logits=theirs)
        assert d.batch_shape == tuple(td.batch_shape)
        assert d.event_shape == tuple(td.event_shape)
        values = td.sample((2,))
        lp, tlp = d.log_prob(pyrt.tensor(values.numpy())), td.log_prob(values)
        _close(lp, tlp.detach().numpy(), rtol=1e-4, atol=1e-4)
        (lp.sum() + d.entropy().sum()).backward()
        (tlp.sum() + td.entropy().sum()).backward()
        _close(mine.grad, theirs.grad.numpy(), rtol=1e-3, atol=1e-4)
        _close(d.probs, td.probs.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_log_prob_gradients_match_finite_differences():
    """d log_prob / d probs (and total_count where real-valued) against central differences
    of scipy's log pmf in float64."""
    p = np.array([0.15, 0.5, 0.8], F32)
    values = np.array([1.0, 0.0, 3.0], F32)
    cases = [(lambda q: D.Geometric(q), lambda q: st.geom(q, loc=-1)),
             (lambda q: D.Binomial(5, q), lambda q: st.binom(5, q)),
             (lambda q: D.Poisson(q), lambda q: st.poisson(q)),
             (lambda q: D.NegativeBinomial(3.0, q), lambda q: st.nbinom(3.0, 1 - q))]
    for make, ref in cases:
        mine = _t(p, requires_grad=True)
        make(mine).log_prob(_t(values)).sum().backward()
        h = 1e-6
        p64 = p.astype(np.float64)
        numeric = (ref(p64 + h).logpmf(values) - ref(p64 - h).logpmf(values)) / (2 * h)
        _close(mine.grad, numeric, rtol=1e-3, atol=1e-3)


def test_sample_moments_on_100k_draws():
    pyrt.manual_seed(11)
    n = 100_000
    cases = [(D.Bernoulli(_t([0.2, 0.7])), st.bernoulli(np.array([0.2, 0.7]))),
             (D.Binomial(_t([3.0, 10.0]), _t([0.4, 0.9])),
              st.binom(np.array([3, 10]), np.array([0.4, 0.9]))),
             (D.Poisson(_t([0.5, 6.0])), st.poisson(np.array([0.5, 6.0]))),
             (D.Geometric(_t([0.3, 0.9])), st.geom(np.array([0.3, 0.9]), loc=-1)),
             (D.NegativeBinomial(_t([2.0, 0.7]), _t([0.4, 0.6])),
              st.nbinom(np.array([2.0, 0.7]), 1 - np.array([0.4, 0.6]))),
             (D.Categorical(_t([[0.2, 0.3, 0.5], [0.7, 0.2, 0.1]])),
              st.rv_discrete(values=([0, 1, 2], [0.2, 0.3, 0.5])))]
    for d, exact in cases:
        x = d.sample((n,)).numpy()
        assert x.shape == (n,) + d.batch_shape
        mean = x.mean(0)[0] if isinstance(d, D.Categorical) else x.mean(0)
        emean = exact.mean()
        sd = exact.std()
        assert np.all(np.abs(mean - emean) < 5 * sd / np.sqrt(n) + 1e-9), (d, mean, emean)
        if not isinstance(d, D.Categorical):
            assert np.all(np.abs(x.var(0) - exact.var()) < 0.05 * exact.var()), d
    freq = np.bincount(D.Categorical(_t([0.1, 0.6, 0.3])).sample((n,)).numpy(), minlength=3)
    np.testing.assert_allclose(freq / n, [0.1, 0.6, 0.3], atol=0.01)
    counts = D.Multinomial(10, _t([0.1, 0.6, 0.3])).sample((n,)).numpy()
    assert (counts.sum(-1) == 10).all()
    np.testing.assert_allclose(counts.mean(0), [1.0, 6.0, 3.0], atol=0.03)
    onehot = D.OneHotCategorical(_t([0.1, 0.6, 0.3])).sample((n,)).numpy()
    assert (onehot.sum(-1) == 1).all()
    np.testing.assert_allclose(onehot.mean(0), [0.1, 0.6, 0.3], atol=0.01)
    assert D.Categorical(_t([0.1, 0.9])).sample((3,)).dtype == pyrt.int64


def test_seeded_draws_repeat():
    def draws():
        pyrt.manual_seed(4)
        return [D.Poisson(_t([1.0, 2.0])).sample((5,)).numpy(),
                D.Categorical(_t([0.5, 0.5])).sample((5,)).numpy(),
                D.RelaxedBernoulli(0.5, _t([0.3])).rsample((5,)).detach().numpy()]

    for a, b in zip(draws(), draws()):
        np.testing.assert_array_equal(a, b)


def test_kl_divergences_match_direct_sums():
    p, q = np.array([0.2, 0.9]), np.array([0.5, 0.1])
    kl = D.kl_divergence(D.Bernoulli(_t(p)), D.Bernoulli(_t(q)))
    _close(kl, p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q)), rtol=1e-4)
    k = np.arange(0, 200)
    for make, ref in ((D.Poisson, lambda r: st.poisson(r)),
                      (D.Geometric, lambda r: st.geom(r, loc=-1))):
        a, b = np.array([0.3, 0.8]), np.array([0.6, 0.2])
        kl = D.kl_divergence(make(_t(a)), make(_t(b)))
        pa = ref(a[:, None]).pmf(k)
        direct = (pa * (ref(a[:, None]).logpmf(k) - ref(b[:, None]).logpmf(k))).sum(-1)
        _close(kl, direct, rtol=1e-4)
    kl = D.kl_divergence(D.Binomial(6, _t(p)), D.Binomial(6, _t(q)))
    k = np.arange(7)[:, None]
    pa = st.binom(6, p).pmf(k)
    _close(kl, (pa * (st.binom(6, p).logpmf(k) - st.binom(6, q).logpmf(k))).sum(0), rtol=1e-4)
    w, v = np.array([0.2, 0.3, 0.5]), np.array([0.6, 0.3, 0.1])
    _close(D.kl_divergence(D.Categorical(_t(w)), D.Categorical(_t(v))),
           (w * np.log(w / v)).sum(), rtol=1e-5)
    _close(D.kl_divergence(D.OneHotCategorical(_t(w)), D.OneHotCategorical(_t(v))),
           (w * np.log(w / v)).sum(), rtol=1e-5)
    # a category q cannot produce: infinite
    assert np.isinf(D.kl_divergence(D.Categorical(_t([0.5, 0.5])),
                                    D.Categorical(_t([1.0, 0.0]))).item())
    assert np.isinf(D.kl_divergence(D.Poisson(_t(1.0)), D.Bernoulli(_t(0.5))).item())
    kl = D.kl_divergence(D.Bernoulli(_t(p)), D.Poisson(_t(q)))
    pb = np.stack([1 - p, p])
    direct = (pb * (np.log(pb) - st.poisson(q).logpmf(np.arange(2)[:, None]))).sum(0)
    _close(kl, direct, rtol=1e-4)
    with pytest.raises(NotImplementedError, match="q.total_count > p.total_count"):
        D.kl_divergence(D.Binomial(3, _t(0.5)), D.Binomial(5, _t(0.5)))


@needs_torch
def test_kl_divergences_match_torch():
    rng = np.random.default_rng(0)
    p, q = rng.uniform(0.05, 0.95, (2, 3, 4)).astype(F32)
    pairs = [(D.Bernoulli, TD.Bernoulli), (D.Geometric, TD.Geometric),
             (D.Poisson, TD.Poisson), (lambda x: D.Binomial(4, x), lambda x: TD.Binomial(4, x)),
             (D.Categorical, TD.Categorical), (D.OneHotCategorical, TD.OneHotCategorical)]
    for make, tmake in pairs:
        mine = _t(p, requires_grad=True)
        theirs = torch.tensor(p, requires_grad=True)
        kl = D.kl_divergence(make(mine), make(_t(q)))
        tkl = TD.kl_divergence(tmake(theirs), tmake(torch.tensor(q)))
        _close(kl, tkl.detach().numpy(), rtol=1e-4, atol=1e-5)
        kl.sum().backward()
        tkl.sum().backward()
        _close(mine.grad, theirs.grad.numpy(), rtol=1e-3, atol=1e-4)
    kl = D.kl_divergence(D.Bernoulli(_t(p)), D.Poisson(_t(q)))
    tkl = TD.kl_divergence(TD.Bernoulli(torch.tensor(p)), TD.Poisson(torch.tensor(q)))
    _close(kl, tkl.numpy(), rtol=1e-4, atol=1e-5)


def test_enumerate_support():
    d = D.Bernoulli(_t([[0.1, 0.2, 0.3]]))
    support = d.enumerate_support()
    assert support.shape == (2, 1, 3)
    np.testing.assert_array_equal(support.numpy()[:, 0, 0], [0.0, 1.0])
    assert d.enumerate_support(expand=False).shape == (2, 1, 1)
    c = D.Categorical(_t(np.ones((2, 4))))
    assert c.enumerate_support().shape == (4, 2)
    np.testing.assert_array_equal(c.enumerate_support(False).numpy()[:, 0], np.arange(4))
    b = D.Binomial(3, _t([0.2, 0.5]))
    assert b.enumerate_support().shape == (4, 2)
    np.testing.assert_array_equal(b.enumerate_support(False).numpy()[:, 0], np.arange(4))
    total = b.log_prob(b.enumerate_support()).exp().sum(0)
    _close(total, [1.0, 1.0], atol=1e-6)
    with pytest.raises(NotImplementedError, match="Inhomogeneous total count"):
        D.Binomial(_t([2.0, 3.0]), _t([0.5, 0.5])).enumerate_support()
    o = D.OneHotCategorical(_t(np.ones((2, 3))))
    support = o.enumerate_support()
    assert support.shape == (3, 2, 3)
    np.testing.assert_array_equal(support.numpy()[:, 0], np.eye(3))
    assert o.enumerate_support(expand=False).shape == (3, 1, 3)
    for dist in (d, c, b, o):
        assert dist.has_enumerate_support
    if torch is not None:
        tb = TD.Binomial(3, torch.tensor([0.2, 0.5]))
        np.testing.assert_array_equal(b.enumerate_support().numpy(),
                                      tb.enumerate_support().numpy())


def test_shapes_expand_and_repr():
    for dist in (D.Bernoulli(_t(0.3)), D.Binomial(4, _t(0.3)), D.Poisson(_t(2.0)),
                 D.Geometric(_t(0.3)), D.NegativeBinomial(_t(2.0), _t(0.3)),
                 D.Geometric(logits=_t(0.3)), D.ContinuousBernoulli(_t(0.3)),
                 D.Bernoulli(logits=_t(0.3)), D.RelaxedBernoulli(0.5, _t(0.3)),
                 D.LogitRelaxedBernoulli(0.5, logits=_t(0.3))):
        big = dist.expand((2, 3))
        assert type(big) is type(dist) and big.batch_shape == (2, 3)
        assert big.sample((4,)).shape == (4, 2, 3)
        assert big.log_prob(dist.sample()).shape == (2, 3)
    for dist in (D.Categorical(_t([0.2, 0.8])), D.OneHotCategorical(_t([0.2, 0.8])),
                 D.Multinomial(3, _t([0.2, 0.8])),
                 D.RelaxedOneHotCategorical(0.5, _t([0.2, 0.8])),
                 D.ExpRelaxedCategorical(0.5, _t([0.2, 0.8])),
                 D.OneHotCategoricalStraightThrough(_t([0.2, 0.8]))):
        big = dist.expand((2, 3))
        assert type(big) is type(dist) and big.batch_shape == (2, 3)
        assert big.event_shape == dist.event_shape
        assert big.sample((4,)).shape == (4, 2, 3) + dist.event_shape
        assert big.log_prob(dist.sample()).shape == (2, 3)
    assert repr(D.Bernoulli(_t([0.2, 0.8]))) == "Bernoulli(probs: (2,))"
    assert repr(D.Poisson(_t(2.0))) == "Poisson(rate: 2.0)"
    assert repr(D.Binomial(3, logits=_t([0.0, 1.0]))) == \
        "Binomial(total_count: (2,), logits: (2,))"
    assert repr(D.Categorical(_t([0.5, 0.5]))) == "Categorical(probs: (2,))"


def test_validate_args_errors():
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified"):
        D.Bernoulli()
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified"):
        D.Categorical(_t([0.5, 0.5]), _t([0.0, 0.0]))
    with pytest.raises(ValueError, match="Expected parameter probs .* UnitInterval|Interval"):
        D.Bernoulli(_t(1.5))
    D.Bernoulli(_t(1.5), validate_args=False)
    with pytest.raises(ValueError, match="Expected parameter rate"):
        D.Poisson(_t(-1.0))
    with pytest.raises(ValueError, match="to be positive"):
        D.Geometric(_t(0.0))
    with pytest.raises(ValueError, match="Expected parameter total_count"):
        D.Binomial(_t(2.5), _t(0.5))
    with pytest.raises(ValueError, match="Expected parameter probs"):
        D.NegativeBinomial(_t(2.0), _t(1.0))
    with pytest.raises(ValueError, match="must be at least one-dimensional"):
        D.Categorical(_t(0.5))
    with pytest.raises(ValueError, match="Expected parameter probs .* Simplex"):
        D.Categorical(_t([-0.5, 1.5]))
    with pytest.raises(NotImplementedError, match="inhomogeneous total_count"):
        D.Multinomial(2.5, _t([0.5, 0.5]))
    with pytest.raises(ValueError, match="to be within the support"):
        D.Bernoulli(_t(0.5)).log_prob(_t(0.5))
    with pytest.raises(ValueError, match="to be within the support"):
        D.Binomial(3, _t(0.5)).log_prob(_t(4.0))
    with pytest.raises(ValueError, match="to be within the support"):
        D.Categorical(_t([0.5, 0.5])).log_prob(pyrt.tensor([2]))
    with pytest.raises(ValueError, match="to be within the support"):
        D.Poisson(_t(1.0)).log_prob(_t(1.5))
    with pytest.raises(ValueError, match="to be within the support"):
        D.OneHotCategorical(_t([0.5, 0.5])).log_prob(_t([1.0, 1.0]))
    with pytest.raises(ValueError, match="to be within the support"):
        D.Multinomial(2, _t([0.5, 0.5])).log_prob(_t([2.0, 1.0]))
    with pytest.raises(ValueError, match="The parameter probs has invalid values"):
        D.ContinuousBernoulli(_t(1.5), validate_args=True)
    with pytest.raises(TypeError, match="probs must be a Tensor or a real number"):
        D.Bernoulli("x")


def _relaxed_draw(make, seed, p, shape=(3,)):
    pyrt.manual_seed(seed)
    return make(p).rsample(shape)


@pytest.mark.parametrize("which", ["RelaxedBernoulli", "LogitRelaxedBernoulli",
                                   "RelaxedOneHotCategorical", "ExpRelaxedCategorical",
                                   "ContinuousBernoulli"])
def test_reparameterized_gradients_match_fixed_noise_finite_differences(which):
    """The seeded draws use the same noise for nearby parameters, so central differences of
    the draws in float32 (with a wide step) estimate the pathwise gradient."""
    categorical = which in ("RelaxedOneHotCategorical", "ExpRelaxedCategorical")
    p = np.array([0.2, 0.3, 0.5] if categorical else [0.3, 0.6, 0.8], np.float64)

    def make(x):
        if which == "ContinuousBernoulli":
            return D.ContinuousBernoulli(x)
        return getattr(D, which)(_t(0.7), x)

    mine = _t(p, requires_grad=True)
    weights = np.array([1.0, -2.0, 0.5], F32)
    draws = _relaxed_draw(make, 9, mine)
    assert draws.requires_grad
    (draws * _t(weights)).sum().backward()
    h = 1e-3
    numeric = np.zeros(3)
    for i in range(3):
        up, down = p.copy(), p.copy()
        up[i] += h
        down[i] -= h
        f_up = (_relaxed_draw(make, 9, _t(up)).numpy().astype(np.float64) * weights).sum()
        f_down = (_relaxed_draw(make, 9, _t(down)).numpy().astype(np.float64) * weights).sum()
        numeric[i] = (f_up - f_down) / (2 * h)
    if categorical:  # probs are normalized: only the gradient off the ones direction counts
        numeric -= numeric.mean()
        grad = mine.grad.numpy() - mine.grad.numpy().mean()
    else:
        grad = mine.grad.numpy()
    np.testing.assert_allclose(grad, numeric, rtol=2e-2, atol=2e-2)


@needs_torch
@FEW
@given(shape=shapes, seed=hs.integers(0, 2**16))
def test_relaxed_log_prob_matches_torch(shape, seed):
    rng = np.random.default_rng(seed)
    p = _probs(rng, shape)
    temperature = F32(rng.uniform(0.3, 2.0))
    mine, theirs = _t(p, requires_grad=True), torch.tensor(p, requires_grad=True)
    for make, tmake in ((D.RelaxedBernoulli, TD.RelaxedBernoulli),
                        (D.LogitRelaxedBernoulli, LogitRelaxedBernoulli)):
        d, td = make(_t(temperature), mine), tmake(torch.tensor(temperature), theirs)
        values = td.sample((2,))
        lp, tlp = d.log_prob(pyrt.tensor(values.numpy())), td.log_prob(values)
        _close(lp, tlp.detach().numpy(), rtol=1e-3, atol=1e-3)
        lp.sum().backward()
        tlp.sum().backward()
        _close(mine.grad, theirs.grad.numpy(), rtol=1e-3, atol=1e-3)
    logits = rng.normal(size=shape + (3,)).astype(F32)
    for make, tmake in ((D.RelaxedOneHotCategorical, TD.RelaxedOneHotCategorical),
                        (D.ExpRelaxedCategorical, ExpRelaxedCategorical)):
        d = make(_t(temperature), logits=_t(logits))
        td = tmake(torch.tensor(temperature), logits=torch.tensor(logits))
        values = td.sample((2,))
        _close(d.log_prob(pyrt.tensor(values.numpy())), td.log_prob(values).numpy(),
               rtol=1e-3, atol=1e-3)
        assert d.rsample((2,)).shape == tuple(td.rsample((2,)).shape)


def test_relaxed_samples_and_straight_through():
    pyrt.manual_seed(2)
    n = 100_000
    x = D.RelaxedBernoulli(0.05, _t([0.3, 0.8])).sample((n,)).numpy()
    assert ((x >= 0) & (x <= 1)).all()
    np.testing.assert_allclose(x.mean(0), [0.3, 0.8], atol=0.01)  # nearly Bernoulli
    y = D.RelaxedOneHotCategorical(0.05, _t([0.1, 0.6, 0.3])).sample((n,)).numpy()
    np.testing.assert_allclose(y.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(y.mean(0), [0.1, 0.6, 0.3], atol=0.01)
    probs = _t([0.1, 0.6, 0.3], requires_grad=True)
    st_dist = D.OneHotCategoricalStraightThrough(probs)
    draw = st_dist.rsample((5,))
    assert set(np.unique(draw.detach().numpy())) <= {0.0, 1.0}
    (draw * _t([1.0, 2.0, 3.0])).sum().backward()
    # the gradient for probs of sum(probs - probs.detach()) weighted, through the
    # normalization probs / sum(probs) (sum 1): 5 (w - <w, probs>)
    w = np.array([1.0, 2.0, 3.0])
    _close(probs.grad, 5 * (w - w @ np.array([0.1, 0.6, 0.3])), rtol=1e-5)


def test_continuous_bernoulli_matches_integration():
    for p in (0.1, 0.4995, 0.75):
        d = D.ContinuousBernoulli(_t(p))

        def density(x, d=d):
            return float(d.log_prob(_t(x)).exp().item())

        assert abs(integrate.quad(density, 0, 1)[0] - 1) < 1e-4
        mean = integrate.quad(lambda x: x * density(x), 0, 1)[0]
        _close(d.mean, mean, atol=1e-4)
        # (inside the Taylor region the cdf is taken as uniform: off by 2e-4)
        _close(d.cdf(_t(0.3)), integrate.quad(density, 0, 0.3)[0], atol=5e-4)
        _close(d.icdf(d.cdf(_t(0.3))), 0.3, atol=1e-4)


def test_bernoulli_logits_and_probs_agree():
    logits = np.array([-3.0, 0.0, 2.5], F32)
    a, b = D.Bernoulli(logits=_t(logits)), D.Bernoulli(_t(expit(logits)))
    _close(a.probs, b.probs, rtol=1e-6)
    _close(a.logits, b.logits, rtol=1e-4, atol=1e-5)
    _close(a.entropy(), b.entropy(), rtol=1e-5)
    c = D.Categorical(logits=_t([1.0, 2.0, 3.0]))
    _close(c.logits, np.array([1.0, 2.0, 3.0]) - logsumexp([1.0, 2.0, 3.0]), rtol=1e-6)
