"""Higher-order gradients through the losses (cross_entropy and nll_loss on their general
path, binary cross-entropy with and without logits, kl_div, the composed losses), products
with zeros, cumprod, p-norms and the remaining elementwise ops: second derivatives against
PyTorch (grad with create_graph twice, in float64) and against central differences of the
ordinary first gradient; gradgradcheck; the refusals, by name."""


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import autograd
from pyrt.autograd import gradgradcheck
from tests.higher_order_checks import (
    call,
    check_against_differences,
    check_against_torch,
)

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
SETTINGS = settings(max_examples=10, deadline=None, derandomize=True)


def _nnf(lib):
    return lib.nn.functional


def _t(lib, values, dtype=None):
    """A constant of either library (float64 for torch's floats, as its inputs)."""
    a = np.asarray(values)
    if lib is torch and a.dtype.kind == "f":
        return torch.tensor(a, dtype=torch.float64)
    return lib.tensor(a)


LABELS = [0, 3, 1]
WEIGHT = [0.5, 2.0, 1.0, 1.5]
SIGNS = [[1.0, -1.0, 1.0, -1.0], [-1.0, -1.0, 1.0, 1.0], [1.0, 1.0, -1.0, 1.0]]


def _probabilities(lib, y):
    """Rows of y that sum to 1, still differentiable in y."""
    return y / y.sum(1, keepdim=True)


# name -> (f(lib, x, y) -> a scalar, shape of x, shape of y); inputs drawn in [0.5, 2]
CASES = {
    "cross_entropy_weight_smoothing": (lambda L, x, y: (
        _nnf(L).cross_entropy(x * y, _t(L, LABELS), weight=_t(L, WEIGHT))
        + _nnf(L).cross_entropy(x * x, _t(L, LABELS), label_smoothing=0.2, reduction="sum")
        + _nnf(L).cross_entropy(x * y, _t(L, [0, -100, 2]), weight=_t(L, WEIGHT),
                                label_smoothing=0.1)
        + (_nnf(L).cross_entropy(x - y, _t(L, LABELS), reduction="none") * y[:, 0]).sum()),
        (3, 4), (3, 4)),
    "cross_entropy_nd_and_probabilities": (lambda L, x, y: (
        _nnf(L).cross_entropy((x * y).reshape(1, 3, 4), _t(L, [[0, 2, 1, 2]]))
        + _nnf(L).cross_entropy(x.reshape(3, 2, 2), _t(L, [[0, 1], [1, 1], [0, 0]]),
                                label_smoothing=0.3, reduction="sum")
        + _nnf(L).cross_entropy(x * y, _probabilities(L, y))
        + _nnf(L).cross_entropy(x, _probabilities(L, y * y), weight=_t(L, WEIGHT),
                                label_smoothing=0.2, reduction="sum")), (3, 4), (3, 4)),
    "nll_loss": (lambda L, x, y: (
        _nnf(L).nll_loss(_nnf(L).log_softmax(x * y, 1), _t(L, LABELS), weight=_t(L, WEIGHT))
        + _nnf(L).nll_loss((x * x).log(), _t(L, [2, -100, 1]), reduction="sum")
        + (_nnf(L).nll_loss((x * y).reshape(1, 3, 4), _t(L, [[0, 2, 1, 2]]),
                            reduction="none") ** 2).sum()
        + _nnf(L).nll_loss(x * y, _t(L, [1, 1, 1]), ignore_index=1)), (3, 4), (3, 4)),
    "binary_cross_entropy": (lambda L, x, y: (
        _nnf(L).binary_cross_entropy((x - y).sigmoid(), (x * y).sigmoid())
        + _nnf(L).binary_cross_entropy((x * y).sigmoid(), y / 2.5, weight=_t(L, WEIGHT),
                                       reduction="sum")
        + (_nnf(L).binary_cross_entropy((x - 1).sigmoid(), (y - 1).sigmoid(),
                                        reduction="none") * x).sum()), (3, 4), (3, 4)),
    "binary_cross_entropy_with_logits": (lambda L, x, y: (
        _nnf(L).binary_cross_entropy_with_logits(x * y - 2, y / 2.5)
        + _nnf(L).binary_cross_entropy_with_logits(x - y, (x * y).sigmoid())
        + _nnf(L).binary_cross_entropy_with_logits(x * x - 2, y / 3, reduction="sum")
        + (_nnf(L).binary_cross_entropy_with_logits(x - y, y.sigmoid(), reduction="none")
           * x).sum()), (3, 4), (3, 4)),
    "kl_div": (lambda L, x, y: (
        _nnf(L).kl_div(_nnf(L).log_softmax(x * y, 1), _probabilities(L, y),
                       reduction="batchmean")
        + _nnf(L).kl_div(_nnf(L).log_softmax(x, 1), _nnf(L).log_softmax(y * x, 1),
                         reduction="sum", log_target=True)
        + (_nnf(L).kl_div(x * y, y, reduction="none") * x).sum()
        + (_nnf(L).kl_div(x, y - x, reduction="none", log_target=True) * y).sum()),
        (3, 4), (3, 4)),
    "composed_losses": (lambda L, x, y: (
        _nnf(L).soft_margin_loss(x * y - 2, _t(L, SIGNS))
        + _nnf(L).margin_ranking_loss(x * x, y * x, _t(L, SIGNS), margin=0.1) * x.sum()
        + _nnf(L).cosine_embedding_loss(x * y, y - x, _t(L, [1.0, -1.0, 1.0]), margin=-0.9)
        + _nnf(L).cosine_similarity(x * y, x - y).sum() ** 2
        + _nnf(L).poisson_nll_loss(x - y, y) + _nnf(L).poisson_nll_loss(x * y, y * 3,
                                                                         log_input=False,
                                                                         full=True)
        + _nnf(L).gaussian_nll_loss(x, y * x, y, reduction="sum")), (3, 4), (3, 4)),
    "products": (lambda L, x, y: (
        (x * y * _t(L, [[1.0, 0.0, 1.0, 1.0]])).prod(1).sum() * x.sum()
        + (x * _t(L, [[1.0], [0.0], [1.0]]) * y).prod(0).pow(2).sum()
        + (x[:2] * _t(L, [[0.0, 1.0, 0.0, 1.0], [1.0] * 4]) + y[:2]).prod() * 0.1
        + (x * _t(L, [[0.0, 1.0, 1.0, 1.0]] * 3)).prod() + (x * y).prod(1).sum()
        + ((x * y).cumprod(1) ** 2).sum()
        + ((x * _t(L, [[1.0, 0.0, 1.0, 0.0]] * 3) + y * 0.1 * 0).cumprod(1) * y).sum()
        + (x.cumprod(0) * y).sum()), (3, 4), (3, 4)),
    "norms": (lambda L, x, y: (
        (x - y).norm(3) ** 2 + ((x * y).norm(1.5, dim=1) * x[:, 0]).sum()
        + ((x - y).norm(float("inf"), dim=0) * y[0]).sum() + (x * y).norm(float("-inf")) * x.sum()
        + ((x * y).norm(4, dim=1, keepdim=True) * x).sum()), (3, 4), (3, 4)),
    "elementwise": (lambda L, x, y: (
        (x / 3).asin() * y + (y / 3).acos() * x + (x + 1).acosh() * y + (x * y / 5).atanh()
        + (x * y).log2() + x.log10() * y + (x - y).exp2() * x + x ** y + (x * y) ** 1.5
        + L.atan2(x - y, y) * x + L.hypot(x, y * x) + L.lerp(x, y * x, y / 3)
        + L.lerp(x * y, y, 0.7) ** 2 + L.addcmul(x, x, y, value=0.5) ** 2
        + L.addcdiv(x, x, y, value=2.0) ** 2).sum(), (3, 4), (3, 4)),
}


def _inputs(name, seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.5, 2.0, shape).astype(np.float32) for shape in CASES[name][1:]]


@needs_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivatives_match_torch(name):
    check_against_torch(CASES[name][0], lambda seed: _inputs(name, seed))


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivatives_match_finite_differences(name):
    check_against_differences(CASES[name][0], lambda seed: _inputs(name, seed), eps=1e-3,
                              tol=5e-2)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradgradcheck_passes(name):
    f = CASES[name][0]
    xs = [pyrt.tensor(a, requires_grad=True) for a in _inputs(name, 5)]
    assert gradgradcheck(lambda *t: call(f, pyrt, t), xs, atol=3e-2, rtol=3e-2, eps=1e-3)


@pytest.mark.parametrize("p, detail", [(0, "at p=0"), (0.5, "at p=0.5 \\(only p >= 1")])
def test_norm_orders_without_a_formula_are_refused(p, detail):
    x = pyrt.tensor([[0.5, 1.0], [1.5, 2.0]], requires_grad=True)
    with pytest.raises(NotImplementedError, match="the derivative for 'NormBackward1' is not "
                                                  f"implemented for create_graph=True: .*{detail}"):
        autograd.grad(x.norm(p), x, create_graph=True)
    assert autograd.grad(x.norm(p), x)[0].shape == (2, 2)


@SETTINGS
@given(seed=st.integers(0, 1000), n=st.integers(1, 5), zeros=st.integers(0, 3))
def test_prod_and_cumprod_with_zeros_numpy(seed, n, zeros):
    """The Hessian of sum(cumprod(x)) + prod(x) with zeros in x, recorded, against the
    closed form: d2 prod / dx_j dx_k = the product of the elements other than j and k."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.5, 2.0, n)
    a[rng.choice(n, min(zeros, n), replace=False)] = 0.0
    x = pyrt.tensor(a.astype(np.float32), requires_grad=True)
    (g,) = autograd.grad(x.cumprod(0).sum() + x.prod(), x, create_graph=True)
    rows = [autograd.grad(g[j], x, retain_graph=True, allow_unused=True,
                          materialize_grads=True)[0].detach().numpy() for j in range(n)]
    want = np.zeros((n, n))
    for j in range(n):
        for k in range(n):
            if j != k:
                for i in range(max(j, k), n + 1):  # cumprod's products up to i, then prod
                    want[j, k] += np.prod([a[m] for m in range(min(i + 1, n))
                                           if m not in (j, k)])
    np.testing.assert_allclose(np.array(rows), want, rtol=1e-5, atol=1e-5)
