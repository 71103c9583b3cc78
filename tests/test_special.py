"""pyrt.special and the special Tensor methods (lgamma, digamma, polygamma, mvlgamma, erfinv,
i0, igamma, igammac, float_power, gcd, lcm, ldexp, frexp, nextafter and their in-place forms):
values against torch.special / torch where installed and against definitions written out in
float64 (series, recurrences, the math module) where not, over many shapes and value ranges
(hypothesis) and at the edges (poles, +-1, large arguments); gradients against torch and
against central differences; the errors."""

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.special as S

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
EXAMPLES = settings(max_examples=20, deadline=None, derandomize=True)
SHAPES = st.lists(st.integers(0, 4), max_size=3).map(tuple)
SEEDS = st.integers(0, 2**31 - 1)


def uniform(shape, seed, lo, hi):
    return np.array(np.random.default_rng(seed).uniform(lo, hi, shape), np.float32)


def close(ours, expected, rtol=2e-4, atol=1e-5):
    ours = ours._data if isinstance(ours, pyrt.Tensor) else np.asarray(ours)
    if torch is not None and isinstance(expected, torch.Tensor):
        expected = expected.detach().numpy()
    np.testing.assert_allclose(np.asarray(ours, np.float64), np.asarray(expected, np.float64),
                               rtol=rtol, atol=atol, equal_nan=True)


# ---- one-argument functions: (pyrt's, torch's name, value range, differentiable) -------------

UNARY = {
    "lgamma": (pyrt.lgamma, "lgamma", (-6, 30), True),
    "digamma": (pyrt.digamma, "digamma", (0.05, 30), True),
    "polygamma1": (lambda x: pyrt.polygamma(1, x), "polygamma1", (0.05, 30), True),
    "polygamma3": (lambda x: x.polygamma(3), "polygamma3", (0.2, 30), True),
    "mvlgamma3": (lambda x: x.mvlgamma(3), "mvlgamma3", (1.05, 20), True),
    "erfinv": (pyrt.erfinv, "erfinv", (-0.999, 0.999), True),
    "i0": (pyrt.i0, "i0", (-20, 20), True),
    "i0e": (S.i0e, "special.i0e", (-50, 50), True),
    "i1": (S.i1, "special.i1", (-20, 20), True),
    "i1e": (S.i1e, "special.i1e", (-50, 50), True),
    "erfcx": (S.erfcx, "special.erfcx", (-5, 50), True),
    "ndtr": (S.ndtr, "special.ndtr", (-8, 8), True),
    "ndtri": (S.ndtri, "special.ndtri", (0.001, 0.999), True),
    "log_ndtr": (S.log_ndtr, "special.log_ndtr", (-30, 8), True),
    "entr": (S.entr, "special.entr", (0.01, 5), True),
    "gammaln": (S.gammaln, "special.gammaln", (0.1, 30), True),
    "psi": (S.psi, "special.psi", (0.1, 30), True),
    "expit": (S.expit, "special.expit", (-10, 10), True),
    "airy_ai": (S.airy_ai, "special.airy_ai", (-8, 8), False),
    "bessel_j0": (S.bessel_j0, "special.bessel_j0", (-20, 20), False),
    "bessel_j1": (S.bessel_j1, "special.bessel_j1", (-20, 20), False),
    "bessel_y0": (S.bessel_y0, "special.bessel_y0", (0.1, 20), False),
    "bessel_y1": (S.bessel_y1, "special.bessel_y1", (0.1, 20), False),
    "modified_bessel_i0": (S.modified_bessel_i0, "special.modified_bessel_i0", (-20, 20), False),
    "modified_bessel_i1": (S.modified_bessel_i1, "special.modified_bessel_i1", (-20, 20), False),
    "modified_bessel_k0": (S.modified_bessel_k0, "special.modified_bessel_k0", (0.1, 20), False),
    "modified_bessel_k1": (S.modified_bessel_k1, "special.modified_bessel_k1", (0.1, 20), False),
    "scaled_modified_bessel_k0": (S.scaled_modified_bessel_k0,
                                  "special.scaled_modified_bessel_k0", (0.1, 50), False),
    "scaled_modified_bessel_k1": (S.scaled_modified_bessel_k1,
                                  "special.scaled_modified_bessel_k1", (0.1, 50), False),
    "spherical_bessel_j0": (S.spherical_bessel_j0, "special.spherical_bessel_j0", (-20, 20),
                            False),
}


def torch_function(name):
    if name.startswith("polygamma"):
        return lambda t: torch.polygamma(int(name[-1]), t)
    if name.startswith("mvlgamma"):
        return lambda t: torch.mvlgamma(t, int(name[-1]))
    target = torch
    for part in name.split("."):
        target = getattr(target, part)
    return target


@needs_torch
@pytest.mark.parametrize("name", sorted(UNARY))
@EXAMPLES
@given(shape=SHAPES, seed=SEEDS)
def test_unary_values_and_gradients_match_torch(name, shape, seed):
    ours, theirs, (lo, hi), differentiable = UNARY[name]
    x = uniform(shape, seed, lo, hi)
    if name == "lgamma":
        x[np.abs(x - np.round(x)) < 0.05] += 0.1  # off the poles, where float32 torch drifts
    a = pyrt.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    y, ty = ours(a), torch_function(theirs)(t)
    assert y.shape == tuple(ty.shape) and y.dtype == pyrt.float32
    close(y, ty, rtol=2e-4 if name != "erfcx" else 1e-3)
    if not differentiable:
        assert not y.requires_grad and not ty.requires_grad
        return
    w = uniform(shape, seed + 1, -1, 1)
    (y * pyrt.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    close(a.grad, t.grad, rtol=2e-4, atol=1e-5)


# float64 references of the differentiable ones, written out without torch or scipy
def _polygamma_series(n, x):
    # (-1)^(n+1) n! sum_k (x + k)^-(n+1), the tail past N by Euler-Maclaurin
    k = np.arange(2000.0)
    big = x + 2000.0
    total = np.sum((x + k) ** -(n + 1)) + big ** -n / n + 0.5 * big ** -(n + 1) \
        + (n + 1) / 12 * big ** -(n + 2)
    return (-1) ** (n + 1) * math.factorial(n) * total


def _bessel_i(order, x):
    k = np.arange(60.0)
    lg = np.array([math.lgamma(j + 1) + math.lgamma(j + order + 1) for j in k])
    return float(np.sum(np.exp((2 * k + order) * np.log(abs(x) / 2 + 1e-300) - lg))) \
        * (np.sign(x) if order else 1.0)


def _ndtr(x):
    return 0.5 * math.erfc(-x / math.sqrt(2))


DEFINITIONS = {
    "lgamma": (math.lgamma, (0.1, 30)),
    "digamma": (lambda x: (math.lgamma(x + 1e-5) - math.lgamma(x - 1e-5)) / 2e-5, (0.5, 30)),
    "polygamma1": (lambda x: _polygamma_series(1, x), (0.1, 30)),
    "polygamma3": (lambda x: _polygamma_series(3, x), (0.2, 30)),
    "mvlgamma3": (lambda x: 1.5 * math.log(math.pi) + sum(math.lgamma(x - j / 2)
                                                         for j in range(3)), (1.05, 20)),
    "i0": (lambda x: _bessel_i(0, x), (-20, 20)),
    "i0e": (lambda x: _bessel_i(0, x) * math.exp(-abs(x)), (-20, 20)),
    "i1": (lambda x: _bessel_i(1, x), (-20, 20)),
    "i1e": (lambda x: _bessel_i(1, x) * math.exp(-abs(x)), (-20, 20)),
    "erfcx": (lambda x: math.exp(x * x) * math.erfc(x), (-3, 8)),
    "ndtr": (_ndtr, (-8, 8)),
    "log_ndtr": (lambda x: math.log(_ndtr(x)), (-20, 8)),
    "entr": (lambda x: -x * math.log(x), (0.01, 5)),
}


@pytest.mark.parametrize("name", sorted(DEFINITIONS))
@EXAMPLES
@given(shape=SHAPES, seed=SEEDS)
def test_unary_values_and_gradients_match_float64_definitions(name, shape, seed):
    """Values against the definition at the float32 inputs; gradients against its central
    differences."""
    f, (lo, hi) = DEFINITIONS[name]
    x = uniform(shape, seed, lo, hi)
    a = pyrt.tensor(x, requires_grad=True)
    y = UNARY[name][0](a)
    reference, x64 = np.vectorize(f, otypes=[np.float64]), x.astype(np.float64)
    close(y, reference(x64), rtol=1e-5, atol=1e-6)
    y.sum().backward()
    h = 1e-4 if name != "digamma" else 1e-3
    fd = (reference(x64 + h) - reference(x64 - h)) / (2 * h)
    close(a.grad, fd, rtol=2e-5 if name != "digamma" else 1e-4, atol=1e-6)


@EXAMPLES
@given(shape=SHAPES, seed=SEEDS)
def test_inverses_undo_their_functions(shape, seed):
    """erfinv and ndtri against math.erf and ndtr, their gradients against the inverse's."""
    p = uniform(shape, seed, -0.99, 0.99)
    a = pyrt.tensor(p, requires_grad=True)
    y = pyrt.erfinv(a)
    close(np.vectorize(math.erf, otypes=[float])(y._data.astype(np.float64)), p, rtol=1e-5,
          atol=1e-6)
    y.sum().backward()
    close(a.grad, math.sqrt(math.pi) / 2 * np.exp(y._data.astype(np.float64) ** 2), rtol=1e-5)
    q = (p + 1) / 2
    z = S.ndtri(pyrt.tensor(q))
    close(np.vectorize(_ndtr, otypes=[float])(z._data.astype(np.float64)), q, rtol=1e-5,
          atol=1e-6)


# ---- the edges -----------------------------------------------------------------------------

INF, NAN = math.inf, math.nan
EDGES = {
    # poles of lgamma and digamma at 0 and the negative integers; -0 gives digamma +inf
    "lgamma": ([0.0, -0.0, -1.0, -2.0, -50.0, 1.0, 2.0, INF, -INF, NAN, 1e30, 3e38],
               [INF, INF, INF, INF, INF, 0.0, 0.0, INF, INF, NAN, 6.807755e31, INF]),
    "digamma": ([0.0, -0.0, -1.0, -2.0, INF, -INF, 1.0, 1e30],
                [-INF, INF, NAN, NAN, INF, NAN, -0.5772157, 69.07755]),
    "erfinv": ([1.0, -1.0, 1.5, -1.5, 0.0, NAN], [INF, -INF, NAN, NAN, 0.0, NAN]),
    "i0": ([0.0, 80.0, -80.0, 100.0, INF], [1.0, 2.4751785e33, 2.4751785e33, INF, NAN]),  # as torch
    "ndtri": ([0.0, 1.0, 0.5, -0.5], [-INF, INF, 0.0, NAN]),
    "log_ndtr": ([-100.0, 0.0, 100.0], [-5005.524, -0.6931472, 0.0]),
    "entr": ([0.0, -1.0, 1.0], [0.0, -INF, 0.0]),
    "i1e": ([0.0, 1e6, -1e6], [0.0, 3.989422e-4, -3.989422e-4]),
}


@pytest.mark.parametrize("name", sorted(EDGES))
def test_edge_values(name):
    x, expected = EDGES[name]
    y = UNARY[name][0](pyrt.tensor(np.array(x, np.float32)))
    close(y, expected, rtol=1e-5, atol=0)
    if torch is not None:
        close(y, torch_function(UNARY[name][1])(torch.tensor(x, dtype=torch.float32)),
              rtol=1e-4, atol=0)


def test_edge_gradients():
    x = pyrt.tensor([0.0, -1.0, 0.5], requires_grad=True)
    S.entr(x).sum().backward()  # -(1 + log x): inf at 0, nan below
    close(x.grad, [INF, NAN, -(1 + math.log(0.5))])
    for f in (S.i1, S.i1e):  # 1/2 at 0
        x = pyrt.tensor([0.0], requires_grad=True)
        f(x).sum().backward()
        close(x.grad, [0.5])


@needs_torch
def test_polygamma_and_mvlgamma_off_the_usual_domain_match_torch():
    """polygamma at negative non-integers; mvlgamma below (p - 1) / 2, which torch computes
    without refusing (the sum of lgammas, inf at a pole)."""
    x = np.array([-2.5, -0.3, -7.2], np.float32)
    for n in (1, 2, 3):
        close(pyrt.polygamma(n, pyrt.tensor(x)), torch.polygamma(n, torch.tensor(x)), rtol=1e-3)
    x = np.array([0.4, 2.0, -3.0, -2.2, 0.7], np.float32)
    for p in (1, 2, 4):
        close(pyrt.mvlgamma(pyrt.tensor(x), p), torch.mvlgamma(torch.tensor(x), p), rtol=1e-4)


@needs_torch
def test_integer_and_bool_inputs_give_float32_as_torch():
    i = np.array([0, 1, 4, -2])
    for name in ("lgamma", "digamma", "erfinv", "i0", "i1e", "bessel_j0", "ndtri", "entr"):
        y = UNARY[name][0](pyrt.tensor(i))
        assert y.dtype == pyrt.float32
        close(y, torch_function(UNARY[name][1])(torch.tensor(i)), rtol=1e-4)
    b = np.array([True, False])
    close(S.expit(pyrt.tensor(b)), torch.special.expit(torch.tensor(b)))
    close(pyrt.lgamma(pyrt.tensor(b)), torch.lgamma(torch.tensor(b)))


# ---- two-argument functions ----------------------------------------------------------------

def _pairs(shape, seed, lo_a, hi_a, lo_b, hi_b):
    """Operands of two broadcastable shapes: `shape`, and `shape` with some sizes 1."""
    r = np.random.default_rng(seed)
    other = tuple(1 if r.random() < 0.5 else n for n in shape)
    return uniform(shape, seed, lo_a, hi_a), uniform(other, seed + 2, lo_b, hi_b)


@needs_torch
@pytest.mark.parametrize("name", ["gammainc", "gammaincc", "xlog1py", "zeta", "xlogy"])
@EXAMPLES
@given(shape=SHAPES, seed=SEEDS, zeros=st.booleans())
def test_binary_special_functions_match_torch(name, shape, seed, zeros):
    """Values and gradients, the operands broadcast; xlogy and xlog1py also with zeros in
    their first argument (0 however the second is)."""
    ranges = {"gammainc": (0.1, 10, 0.0, 20), "gammaincc": (0.1, 10, 0.0, 20),
              "xlog1py": (-3, 3, -0.9, 10), "zeta": (1.1, 10, 0.5, 10), "xlogy": (-3, 3, 0.1, 5)}
    a, b = _pairs(shape, seed, *ranges[name])
    first_differentiable = name in ("xlog1py", "xlogy")
    if zeros and first_differentiable:
        a[np.random.default_rng(seed).random(a.shape) < 0.3] = 0
    pa = pyrt.tensor(a, requires_grad=first_differentiable)
    ta = torch.tensor(a, requires_grad=first_differentiable)
    pb, tb = pyrt.tensor(b, requires_grad=True), torch.tensor(b, requires_grad=True)
    y, ty = getattr(S, name)(pa, pb), getattr(torch.special, name)(ta, tb)
    close(y, ty, rtol=1e-3, atol=1e-5)
    w = uniform(y.shape, seed + 3, -1, 1)
    (y * pyrt.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    if first_differentiable:  # (torch has no derivative for the others' first argument)
        close(pa.grad, ta.grad, rtol=1e-3, atol=1e-4)
    close(pb.grad, tb.grad, rtol=5e-4, atol=1e-5)


@EXAMPLES
@given(shape=SHAPES, seed=SEEDS)
def test_binary_special_functions_match_float64_definitions(shape, seed):
    """igamma at integer a (1 - exp(-x) sum_{k<a} x^k / k!), zeta as its series, xlog1py as
    x log1p(y); the gradients for the second argument against central differences."""
    a = np.random.default_rng(seed).integers(1, 6, shape).astype(np.float32)
    x = uniform(shape, seed + 1, 0.0, 12)

    def lower(a, x):
        return 1 - math.exp(-x) * sum(x ** k / math.factorial(k) for k in range(int(a)))

    def hurwitz(s, q):
        k = np.arange(4000.0)
        return float(np.sum((q + k) ** -s) + (q + 4000) ** (1 - s) / (s - 1)
                     + 0.5 * (q + 4000) ** -s)

    cases = [(pyrt.igamma, lower, a, x), (pyrt.igammac, lambda a, x: 1 - lower(a, x), a, x),
             (S.zeta, hurwitz, a + 1.5, x + 0.5),
             (S.xlog1py, lambda u, v: u * math.log1p(v), a - 3, x - 0.5)]
    for f, ref, u, v in cases:
        pv = pyrt.tensor(v, requires_grad=True)
        y = f(pyrt.tensor(u), pv)
        refv = np.vectorize(ref, otypes=[np.float64])
        u64, v64 = u.astype(np.float64), v.astype(np.float64)
        close(y, refv(u64, v64), rtol=1e-5, atol=1e-6)
        y.sum().backward()
        close(pv.grad, (refv(u64, v64 + 1e-4) - refv(u64, v64 - 1e-4)) / 2e-4,
              rtol=2e-5, atol=1e-6)


def test_binary_numbers_and_edges():
    x = pyrt.tensor([0.0, 1.0, 2.0])
    close(S.xlog1py(0.0, pyrt.tensor([-1.0, NAN, 3.0])), [0.0, NAN, 0.0])
    close(S.xlog1py(x, 1.0), np.array([0, 1, 2]) * math.log(2))
    close(S.zeta(2.0, pyrt.tensor([1.0])), [math.pi ** 2 / 6], rtol=1e-6)
    close(S.zeta(pyrt.tensor([1.0, 0.5]), 1.0), [INF, NAN])
    close(pyrt.igamma(pyrt.tensor([1.0, 2.0]), pyrt.tensor([0.0, INF])), [0.0, 1.0])


# ---- orthogonal polynomials ----------------------------------------------------------------

def _recurrence(first, step):
    """P_n(x) for P_0 = 1, P_1 = first(x), P_(k+1) = step(k, x, P_k, P_(k-1)); 0 for n < 0."""
    def evaluate(n, x):
        if n < 0:
            return 0.0
        previous, current = 1.0, first(x)
        if n == 0:
            return previous
        for k in range(1, n):
            previous, current = current, step(k, x, current, previous)
        return current

    return evaluate


def _chebyshev(first):
    return _recurrence(first, lambda k, x, p, q: 2 * x * p - q)


POLYNOMIALS = {
    "chebyshev_polynomial_t": _chebyshev(lambda x: x),
    "chebyshev_polynomial_u": _chebyshev(lambda x: 2 * x),
    "chebyshev_polynomial_v": _chebyshev(lambda x: 2 * x - 1),
    "chebyshev_polynomial_w": _chebyshev(lambda x: 2 * x + 1),
    "hermite_polynomial_h": _recurrence(lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - 2 * k * q),
    "hermite_polynomial_he": _recurrence(lambda x: x, lambda k, x, p, q: x * p - k * q),
    "laguerre_polynomial_l": _recurrence(lambda x: 1 - x, lambda k, x, p, q:
                                         ((2 * k + 1 - x) * p - k * q) / (k + 1)),
    "legendre_polynomial_p": _recurrence(lambda x: x, lambda k, x, p, q:
                                         ((2 * k + 1) * x * p - k * q) / (k + 1)),
}
for _kind in "tuvw":
    POLYNOMIALS[f"shifted_chebyshev_polynomial_{_kind}"] = (
        lambda n, x, f=POLYNOMIALS[f"chebyshev_polynomial_{_kind}"]: f(n, 2 * x - 1))


@pytest.mark.parametrize("name", sorted(POLYNOMIALS))
@EXAMPLES
@given(shape=SHAPES, seed=SEEDS)
def test_orthogonal_polynomials(name, shape, seed):
    """Against the three-term recurrences in float64 and against torch; n from -2 to 12,
    some as float32 (truncated), x in [-1.5, 1.5]; the result never requires grad."""
    x = uniform(shape, seed, -1.5, 1.5)
    n = np.random.default_rng(seed).integers(-2, 13, shape)
    px = pyrt.tensor(x, requires_grad=True)
    y = getattr(S, name)(px, pyrt.tensor(n))
    assert y.dtype == pyrt.float32 and not y.requires_grad
    reference = np.vectorize(POLYNOMIALS[name], otypes=[np.float64])
    close(y, reference(n, x.astype(np.float64)), rtol=1e-5, atol=1e-4)
    truncated = getattr(S, name)(px, pyrt.tensor(n + np.float32(0.5)))
    # n + 0.5 truncates to n, and to 0 (not -1) for n = -1, as PyTorch casts it
    close(truncated, reference(np.trunc(n + 0.5).astype(int), x.astype(np.float64)),
          rtol=1e-5, atol=1e-4)
    close(getattr(S, name)(0.5, pyrt.tensor(n)), reference(n, 0.5), rtol=1e-5, atol=1e-4)
    if torch is not None:
        close(y, getattr(torch.special, name)(torch.tensor(x), torch.tensor(n)), rtol=1e-3,
              atol=1e-3)
        close(getattr(S, name)(px, 3), getattr(torch.special, name)(torch.tensor(x), 3),
              rtol=1e-3, atol=1e-3)


# ---- float_power, ldexp, frexp, nextafter, gcd, lcm -----------------------------------------

@EXAMPLES
@given(shape=SHAPES, seed=SEEDS)
def test_number_functions_against_definitions(shape, seed):
    r = np.random.default_rng(seed)
    x = uniform(shape, seed, 0.1, 4)
    e = uniform(shape, seed + 1, -3, 3)
    px, pe = pyrt.tensor(x, requires_grad=True), pyrt.tensor(e, requires_grad=True)
    y = pyrt.float_power(px, pe)
    x64, e64 = x.astype(np.float64), e.astype(np.float64)
    close(y, x64 ** e64, rtol=1e-6, atol=0)
    y.sum().backward()
    close(px.grad, e64 * x64 ** (e64 - 1), rtol=1e-5, atol=1e-6)
    close(pe.grad, x64 ** e64 * np.log(x64), rtol=1e-5, atol=1e-6)
    close(pyrt.float_power(2, pyrt.tensor(e)), 2.0 ** e64, rtol=1e-6)
    close(pyrt.tensor(x).float_power(2), x64 ** 2, rtol=1e-6)

    k = r.integers(-10, 10, shape)
    close(pyrt.ldexp(pyrt.tensor(x), pyrt.tensor(k)), np.ldexp(x, k), rtol=0, atol=0)
    s = x * np.where(r.random(shape) < 0.5, -1, 1).astype(np.float32)
    mantissa, exponent = pyrt.frexp(pyrt.tensor(s))
    m, ex = np.frexp(s)
    assert exponent.dtype == pyrt.int64 and mantissa.dtype == pyrt.float32
    close(mantissa, m, rtol=0, atol=0)
    close(exponent, ex, rtol=0, atol=0)
    close(pyrt.nextafter(pyrt.tensor(x), pyrt.tensor(e)), np.nextafter(x, e), rtol=0, atol=0)

    a, b = r.integers(-50, 50, shape), r.integers(-50, 50, shape)
    close(pyrt.gcd(pyrt.tensor(a), pyrt.tensor(b)), np.vectorize(math.gcd, otypes=[int])(a, b),
          rtol=0, atol=0)
    lcm = np.vectorize(lambda u, v: abs(u * v) // math.gcd(u, v) if u and v else 0,
                       otypes=[int])(a, b)
    assert pyrt.lcm(pyrt.tensor(a), pyrt.tensor(b)).dtype == pyrt.int64
    close(pyrt.lcm(pyrt.tensor(a), pyrt.tensor(b)), lcm, rtol=0, atol=0)


@needs_torch
@pytest.mark.filterwarnings("ignore:grad and param do not obey")
@EXAMPLES
@given(shape=SHAPES, seed=SEEDS)
def test_number_functions_match_torch(shape, seed):
    r = np.random.default_rng(seed)
    x = uniform(shape, seed, -4, 4)
    x[r.random(shape) < 0.2] = 0
    e = np.array(np.round(uniform(shape, seed + 1, -3, 3) * 2) / 2, np.float32)
    e[r.random(shape) < 0.2] = 0
    px, pe = pyrt.tensor(x, requires_grad=True), pyrt.tensor(e, requires_grad=True)
    tx, te = torch.tensor(x, requires_grad=True), torch.tensor(e, requires_grad=True)
    y, ty = pyrt.float_power(px, pe), torch.float_power(tx, te)
    close(y, ty, rtol=1e-5, atol=0)
    w = uniform(shape, seed + 2, -1, 1)
    finite = np.isfinite(ty.detach().numpy()).all()
    if finite:
        (y * pyrt.tensor(w)).sum().backward()
        (ty * torch.tensor(w, dtype=torch.float64)).sum().backward()
        close(px.grad, tx.grad, rtol=1e-4, atol=1e-5)
        close(pe.grad, te.grad, rtol=1e-4, atol=1e-5)

    px, pe = pyrt.tensor(x, requires_grad=True), pyrt.tensor(e, requires_grad=True)
    tx, te = torch.tensor(x, requires_grad=True), torch.tensor(e, requires_grad=True)
    for ours, theirs in ((pyrt.ldexp(px, pe), torch.ldexp(tx, te)),
                         (pyrt.nextafter(px, pe), torch.nextafter(tx, te)),
                         (pyrt.frexp(px).mantissa, torch.frexp(tx).mantissa)):
        close(ours, theirs, rtol=1e-6, atol=0)
        (ours * pyrt.tensor(w)).sum().backward()
        (theirs * torch.tensor(w)).sum().backward()
        close(px.grad, tx.grad, rtol=1e-5, atol=1e-6)
        if te.grad is not None:
            close(pe.grad, te.grad, rtol=1e-5, atol=1e-6)
    close(pyrt.frexp(pyrt.tensor(x)).exponent, torch.frexp(torch.tensor(x)).exponent, rtol=0)

    a, b = r.integers(-99, 99, shape), r.integers(-99, 99, (1,) * len(shape))
    for name in ("gcd", "lcm"):
        close(getattr(pyrt, name)(pyrt.tensor(a), pyrt.tensor(b)),
              getattr(torch, name)(torch.tensor(a), torch.tensor(b)), rtol=0, atol=0)


def test_frexp_and_nextafter_edges():
    m, e = pyrt.frexp(pyrt.tensor([0.0, INF, NAN, -3.0, 1e-45]))  # 1e-45: 2^-149, subnormal
    close(m, [0.0, INF, NAN, -0.75, 0.5])
    close(e, [0, 0, 0, 2, -148], rtol=0, atol=0)
    close(pyrt.nextafter(pyrt.tensor([0.0, 1.0]), pyrt.tensor([1.0, 1.0])), [2.0 ** -149, 1.0],
          rtol=0.01, atol=0)


# ---- in-place forms ------------------------------------------------------------------------

IN_PLACE = [
    ("lgamma_", (), "lgamma"), ("digamma_", (), "digamma"), ("polygamma_", (2,), "polygamma"),
    ("mvlgamma_", (2,), "mvlgamma"), ("erfinv_", (), "erfinv"), ("i0_", (), "i0"),
    ("igamma_", ("other",), "igamma"), ("igammac_", ("other",), "igammac"),
    ("float_power_", ("other",), "float_power"), ("ldexp_", ("other",), "ldexp"),
    ("nextafter_", ("other",), "nextafter"),
]


@pytest.mark.parametrize("method,args,plain", IN_PLACE)
def test_in_place_forms(method, args, plain):
    x = uniform((2, 3), 7, 0.6, 0.9)
    other = pyrt.tensor(uniform((3,), 8, 0.5, 2))
    args = tuple(other if a == "other" else a for a in args)
    if plain == "polygamma":
        expected = pyrt.polygamma(2, pyrt.tensor(x))
    else:
        expected = getattr(pyrt.tensor(x), plain)(*args)
    t = pyrt.tensor(x)
    assert getattr(t, method)(*args) is t
    close(t, expected, rtol=0, atol=0)
    # in a graph: the gradient flows through the in-place op as through the plain one
    leaf = pyrt.tensor(x, requires_grad=True)
    y = leaf * 1.0
    getattr(y, method)(*args)
    if plain in ("igamma", "igammac"):  # no derivative for input, as in torch
        with pytest.raises(NotImplementedError, match="derivative"):
            y.sum().backward()
        return
    y.sum().backward()
    reference = pyrt.tensor(x, requires_grad=True)
    if plain == "polygamma":
        pyrt.polygamma(2, reference).sum().backward()
    else:
        getattr(reference, plain)(*args).sum().backward()
    close(leaf.grad, reference.grad, rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="can't be cast"):
        getattr(pyrt.tensor([1, 2, 3]), method)(*args)


def test_integer_in_place_forms():
    a = pyrt.tensor([4, 6, 0])
    assert a.gcd_(pyrt.tensor([6, 4, 5])) is a
    close(a, [2, 2, 5], rtol=0, atol=0)
    a.lcm_(pyrt.tensor([3, 3, 0]))
    close(a, [6, 6, 0], rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="shape"):
        pyrt.tensor([4, 6]).gcd_(pyrt.tensor([[1], [2]]))


# ---- the namespace and its reuse of pyrt's ops ---------------------------------------------

@needs_torch
def test_reused_functions_match_torch():
    x = uniform((3, 4), 3, -0.9, 0.9)
    p, t = pyrt.tensor(x), torch.tensor(x)
    for name in ("erf", "erfc", "exp2", "expm1", "log1p", "expit", "sinc"):
        close(getattr(S, name)(p), getattr(torch.special, name)(t), rtol=1e-5, atol=1e-6)
    close(S.logit(p.abs(), eps=0.1), torch.special.logit(t.abs(), eps=0.1), rtol=1e-5)
    close(S.round(p, decimals=1), torch.special.round(t, decimals=1))
    close(S.softmax(p, 1), torch.special.softmax(t, 1), rtol=1e-5)
    close(S.log_softmax(p, dim=0, dtype=pyrt.float32), torch.special.log_softmax(t, 0),
          rtol=1e-5)
    close(S.logsumexp(p, 1, keepdim=True), torch.special.logsumexp(t, 1, keepdim=True))
    close(S.xlogy(p, p.abs()), torch.special.xlogy(t, t.abs()), rtol=1e-5, atol=1e-6)
    close(S.multigammaln(p + 3, 2), torch.special.multigammaln(t + 3, 2), rtol=1e-5)
    close(S.gammaincc(p + 1, p + 2), torch.special.gammaincc(t + 1, t + 2), rtol=1e-5)


@needs_torch
def test_namespace_covers_torch_special():
    """Every torch.special function is in pyrt.special (torch's module helpers aside)."""
    helpers = {"Tensor", "common_args", "multi_dim_common", "torch"}
    names = {n for n in dir(torch.special) if not n.startswith("_")} - helpers
    assert names <= set(S.__all__)
    assert all(callable(getattr(S, n)) for n in S.__all__)
    for name in ("lgamma", "digamma", "polygamma", "mvlgamma", "erfinv", "i0", "igamma",
                 "igammac", "float_power", "gcd", "lcm", "ldexp", "frexp", "nextafter"):
        assert hasattr(torch, name) and name in pyrt.__all__ and hasattr(pyrt.Tensor, name)
    assert "special" in pyrt.__all__ and pyrt.special is S


def test_importing_pyrt_does_not_import_scipy():
    code = "import sys, pyrt, pyrt.special; assert 'scipy' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# ---- errors --------------------------------------------------------------------------------

def test_errors():
    x = pyrt.tensor([1.5, 2.0])
    i = pyrt.tensor([4, 6])
    with pytest.raises(TypeError, match="input"):
        S.gammaln([1.0])
    with pytest.raises(TypeError, match="input"):
        pyrt.lgamma(np.ones(2))
    with pytest.raises(RuntimeError, match="negative n"):
        pyrt.polygamma(-1, x)
    with pytest.raises(TypeError, match="'n' must be int"):
        x.polygamma(1.5)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        pyrt.mvlgamma(x, 0)
    with pytest.raises(TypeError, match="'p' must be int"):
        S.multigammaln(x, 2.0)
    with pytest.raises(NotImplementedError, match="int64"):
        pyrt.igamma(i, i)
    with pytest.raises(TypeError):
        pyrt.igamma(x, 2.0)
    with pytest.raises(TypeError, match="Tensor"):
        S.zeta(2.0, 3.0)
    with pytest.raises(NotImplementedError, match="float32"):
        pyrt.gcd(i, x)
    with pytest.raises(NotImplementedError, match="bool"):
        pyrt.lcm(pyrt.tensor([True]), pyrt.tensor([True]))
    with pytest.raises(TypeError, match="other"):
        pyrt.gcd(i, 3)
    with pytest.raises(RuntimeError, match="floating-point"):
        pyrt.frexp(i)
    with pytest.raises(NotImplementedError, match="int64"):
        pyrt.nextafter(i, i)
    with pytest.raises(NotImplementedError, match="bool"):
        pyrt.ldexp(x, pyrt.tensor([True, False]))
    with pytest.raises(TypeError, match="float64"):
        S.softmax(x, 0, dtype=np.dtype(np.float64))
    with pytest.raises(TypeError, match="dim"):
        S.log_softmax(x, None)
    with pytest.raises(RuntimeError, match="size"):
        pyrt.igamma(pyrt.tensor([1.0, 2.0, 3.0]), x)


def test_missing_derivatives_raise_as_torch():
    a = pyrt.tensor([1.5, 2.5], requires_grad=True)
    b = pyrt.tensor([0.5, 3.0], requires_grad=True)
    for f, what in ((pyrt.igamma, "igamma: input"), (pyrt.igammac, "igammac: input"),
                    (S.zeta, "zeta")):
        with pytest.raises(NotImplementedError, match=f"derivative for '{what}'"):
            f(a, b).sum().backward()
    for f in (S.bessel_j0, S.airy_ai, S.scaled_modified_bessel_k1):
        assert not f(a).requires_grad
    assert not S.hermite_polynomial_h(a, b).requires_grad
    assert not pyrt.frexp(a).exponent.requires_grad
