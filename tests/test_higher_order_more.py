"""Higher-order gradients through convolutions, pooling, normalisations, activations,
reductions, selections and difference losses: second derivatives against PyTorch (grad with
create_graph twice, in float64) and against central differences of the ordinary first
gradient; gradgradcheck; a convolutional WGAN-GP critic trained three Adam steps against
torch's; the ops still refused, by name."""

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import autograd
from pyrt.autograd import gradgradcheck
from tests.higher_order_checks import (
    check_against_differences,
    check_against_torch,
    close,
    pyrt_gradients,
    torch_gradients,
)

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
SETTINGS = settings(max_examples=10, deadline=None, derandomize=True)


def _nnf(lib):
    return lib.nn.functional


def _hardsigmoid(lib, z):
    """hardsigmoid; torch's own has no double backward, so its clamp form stands in there."""
    if lib is pyrt:
        return lib.nn.functional.hardsigmoid(z)
    return (z / 6 + 0.5).clamp(0, 1)


def _mask(lib, x):
    return x.detach() > 1.2


# name -> (f(lib, x, y) -> a scalar, shape of x, shape of y); inputs are drawn in [0.5, 2]
CASES = {
    "conv2d": (lambda L, x, w: (_nnf(L).conv2d(x, w, w[:, 0, 0, 0], stride=2, padding=1)
                                ** 2).sum(), (2, 2, 5, 5), (3, 2, 3, 3)),
    "conv2d_dilated_groups": (lambda L, x, w: (_nnf(L).conv2d(x, w, padding=2, dilation=2,
                                                              groups=2).tanh()).sum(),
                              (1, 2, 5, 4), (4, 1, 3, 2)),
    "conv_transpose2d": (lambda L, x, w: (_nnf(L).conv_transpose2d(
        x, w, w[0, :, 0, 0], stride=2, padding=1, output_padding=1) ** 2).sum(),
        (1, 2, 3, 3), (2, 3, 3, 3)),
    "conv1d": (lambda L, x, w: (_nnf(L).conv1d(x, w, padding=1) ** 2).sum(), (2, 2, 6),
               (3, 2, 3)),
    "pools": (lambda L, x, y: ((_nnf(L).max_pool2d(x * y, 2) ** 2).sum()
                               + (_nnf(L).avg_pool2d(x * y, 2, 1, 1) ** 2).sum()
                               + (_nnf(L).adaptive_avg_pool2d(x * x, 1) * 3).sum()
                               + (_nnf(L).adaptive_avg_pool2d(x * y, (3, 2)) ** 2).sum()),
              (2, 2, 4, 5), (2, 2, 4, 5)),
    "layer_norm": (lambda L, x, y: (_nnf(L).layer_norm(x * y, (4,), y[0], y[1]) ** 3).sum(),
                   (3, 4), (3, 4)),
    "group_norm": (lambda L, x, y: (_nnf(L).group_norm(x, 2, y[0, :4, 0, 0], y[0, :4, 1, 0])
                                    ** 3 * y).sum(), (2, 4, 3, 2), (2, 4, 3, 2)),
    "instance_norm": (lambda L, x, y: (_nnf(L).instance_norm(x * y, weight=y[0, :, 0, 0])
                                       ** 3).sum(), (2, 3, 2, 3), (2, 3, 2, 3)),
    "batch_norm": (lambda L, x, y: ((_nnf(L).batch_norm(x, None, None, y[0, :, 0, 0],
                                                        y[1, :, 0, 0], training=True) ** 2
                                     * y).sum()
                                    + (_nnf(L).batch_norm(x * y, x.detach()[0, :, 0, 0] * 0 + 0.9,
                                                          x.detach()[0, :, 0, 0] * 0 + 1.5,
                                                          y[0, :, 1, 1], training=False)
                                       ** 2).sum()),
                   (3, 2, 2, 2), (3, 2, 2, 2)),
    "smooth_activations": (lambda L, x, y: (
        _nnf(L).gelu(x - y) * y + _nnf(L).gelu(x - y, approximate="tanh") * x
        + _nnf(L).elu(x - y) * x + _nnf(L).selu(x - y) * y + _nnf(L).celu(x - y, 0.5) * y
        + _nnf(L).silu(x - y) * x + _nnf(L).mish(x - y) * y
        + _nnf(L).logsigmoid(x - y) * x + _nnf(L).softsign(x - y) * y
        + _nnf(L).tanhshrink(x - y) * x).sum(), (3, 4), (3, 4)),
    "piecewise_activations": (lambda L, x, y: (
        _hardsigmoid(L, 3 * (x - y)) * x * y + _nnf(L).hardswish(4 * (x - y)) * x
        + _nnf(L).leaky_relu(x - y, 0.2) * x * y + _nnf(L).softshrink(x - y, 0.3) * x
        + _nnf(L).hardshrink(x - y, 0.3) * y).sum(), (3, 4), (3, 4)),
    "floating": (lambda L, x, y: (x.sinh() * y + x.cosh() * y + (x * y).atan()
                                  + (x - y).erf() * x + (x * y).asinh() + x.rsqrt() * y
                                  + x.reciprocal() * y).sum(), (3, 4), (3, 4)),
    "extremes": (lambda L, x, y: (x * y).max() * x.min() + ((x * y).max(1)[0] ** 2).sum()
                 + ((x * y).min(0).values * y[0]).sum() + ((x * y).amax(1) ** 2).sum()
                 + (x * y).amin() ** 2 + ((x * y).amax((0, 1)) * x).sum(), (3, 4), (3, 4)),
    "prod_logsumexp": (lambda L, x, y: (x * y).prod() + ((x * y).prod(1) ** 2).sum()
                       + ((x * y).logsumexp(1) ** 2).sum() + (x * y).logsumexp((0, 1)),
                       (3, 4), (3, 4)),
    "var_std_cumsum": (lambda L, x, y: ((x * y).var(1) ** 2).sum() + (x * y).std() ** 3
                       + ((x * y).std(0) * x[0]).sum()
                       + ((x * y).cumsum(1) ** 2).sum() + ((x * x).cumsum(0) * y).sum(),
                       (3, 4), (3, 4)),
    "selections": (lambda L, x, y: (
        (L.where(_mask(L, x), x * y, x * x) ** 2).sum()
        + (L.clamp(x * y, y * 0.9, y * 1.6) ** 2).sum()
        + (L.maximum(x * y, y) ** 2).sum() + (L.minimum(x, y * y) ** 2).sum()
        + ((x * y).masked_fill(_mask(L, y), 0.0) ** 2).sum()), (3, 4), (3, 4)),
    "gathers": (lambda L, x, y: (
        ((x * y).index_select(1, L.tensor([0, 2, 2])) ** 2).sum()
        + ((x * y).gather(1, L.tensor([[0, 1], [3, 3], [2, 0]])) ** 3).sum()
        + (_nnf(L).pad(x * y, (1, 2, 0, 1)) ** 2 * 2).sum()), (3, 4), (3, 4)),
    "difference_losses": (lambda L, x, y: (
        _nnf(L).l1_loss(x * y, y) + _nnf(L).smooth_l1_loss(x * y, y, beta=0.7)
        + _nnf(L).huber_loss(x * x, y * 2, delta=0.8)
        + (_nnf(L).smooth_l1_loss(x * y, y, reduction="none") * x).sum()
        + _nnf(L).huber_loss(x, y, reduction="sum")), (3, 4), (3, 4)),
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


@pytest.mark.parametrize("name", ["conv2d", "conv_transpose2d", "pools", "layer_norm",
                                  "instance_norm", "batch_norm", "smooth_activations",
                                  "floating", "prod_logsumexp", "var_std_cumsum", "gathers",
                                  "selections"])
def test_gradgradcheck_passes(name):
    f = CASES[name][0]
    xs = [pyrt.tensor(a, requires_grad=True) for a in _inputs(name, 5)]
    assert gradgradcheck(lambda *t: f(pyrt, *t), xs, atol=2e-2, rtol=2e-2, eps=1e-3)


@needs_torch
@SETTINGS
@given(seed=st.integers(0, 1000), batch=st.integers(1, 3), stride=st.integers(1, 2),
       padding=st.integers(0, 2), dilation=st.integers(1, 2), groups=st.sampled_from([1, 2]))
def test_conv2d_second_derivatives_over_geometries(seed, batch, stride, padding, dilation,
                                                   groups):
    def f(L, x, w):
        return (_nnf(L).conv2d(x, w, stride=stride, padding=padding, dilation=dilation,
                               groups=groups) ** 2).sum()

    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal((batch, 2, 7, 6)).astype(np.float32),
              rng.standard_normal((4, 2 // groups, 3, 2)).astype(np.float32)]
    vs = [rng.standard_normal(a.shape).astype(np.float32) for a in arrays]
    first, second = pyrt_gradients(f, arrays, vs)
    t_first, t_second = torch_gradients(f, arrays, vs)
    close(first, t_first, 1e-4)
    close(second, t_second, 1e-4)


def test_third_derivative_of_an_activation_numpy():
    """d^3/dx^3 of silu(x) summed, from create_graph thrice, against the closed form."""
    a = np.array([-1.5, -0.2, 0.4, 2.0])
    x = pyrt.tensor(a.astype(np.float32), requires_grad=True)
    y = pyrt.nn.functional.silu(x).sum()
    for _ in range(2):
        (y,) = autograd.grad(y, x, create_graph=True)
        y = y.sum()
    (d3,) = autograd.grad(y, x, create_graph=True)
    s = 1 / (1 + np.exp(-a))
    # silu''' = s (1 - s) (3 - 6 s + x (1 - 6 s + 6 s^2))
    want = s * (1 - s) * (3 - 6 * s + a * (1 - 6 * s + 6 * s * s))
    np.testing.assert_allclose(d3.detach().numpy(), want, rtol=1e-4, atol=1e-5)


# ---- the convolutional WGAN-GP critic -------------------------------------------------------


def _critic(lib, norm, act=None):
    """The DCGAN-style critic. Before instance norm the second conv has no bias: the norm
    removes it, its true gradient is 0, and Adam would turn float32 noise there into steps."""
    nn = lib.nn
    make_act = act or (lambda: nn.LeakyReLU(0.2))
    instance = norm == "instance"
    normalise = nn.InstanceNorm2d(16, affine=True) if instance else nn.LayerNorm([16, 4, 4])
    return nn.Sequential(nn.Conv2d(1, 8, 4, 2, 1), make_act(),
                         nn.Conv2d(8, 16, 4, 2, 1, bias=not instance), normalise, make_act(),
                         nn.Flatten(), nn.Linear(256, 1))


def _critic_loss(lib, net, real, fake, alpha):
    """WGAN-GP's critic loss: D(fake) - D(real) + 10 (|grad D(mix)| - 1)^2."""
    mix = (alpha * real + (1 - alpha) * fake).detach().requires_grad_(True)
    (g,) = lib.autograd.grad(net(mix).sum(), mix, create_graph=True)
    penalty = ((g.reshape(g.shape[0], -1).norm(2, dim=1) - 1) ** 2).mean()
    return net(fake).mean() - net(real).mean() + 10 * penalty


@needs_torch
@pytest.mark.parametrize("norm", ["instance", "layer"])
def test_conv_critic_adam_steps_match_torch(norm):
    pyrt.manual_seed(3)
    net, ref = _critic(pyrt, norm), _critic(torch, norm)
    with torch.no_grad():
        for p, q in zip(net.parameters(), ref.parameters()):
            q.copy_(torch.tensor(p.detach().numpy()))
    opt = pyrt.optim.Adam(net.parameters(), lr=1e-3, betas=(0.5, 0.9))
    ref_opt = torch.optim.Adam(ref.parameters(), lr=1e-3, betas=(0.5, 0.9))
    rng = np.random.default_rng(4)
    for _ in range(3):
        batch = [rng.standard_normal(s).astype(np.float32) for s in
                 ((4, 1, 16, 16), (4, 1, 16, 16), (4, 1, 1, 1))]
        opt.zero_grad()
        loss = _critic_loss(pyrt, net, *(pyrt.tensor(b) for b in batch))
        loss.backward()
        opt.step()
        ref_opt.zero_grad()
        ref_loss = _critic_loss(torch, ref, *(torch.tensor(b) for b in batch))
        ref_loss.backward()
        ref_opt.step()
        np.testing.assert_allclose(float(loss.detach().numpy()), ref_loss.item(), rtol=1e-4,
                                   atol=1e-5)
    for p, q in zip(net.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4,
                                   atol=2e-5)


def test_penalty_gradient_matches_finite_differences_numpy():
    """d penalty / d (first conv's bias), recorded, against central differences of the
    penalty (no torch); SiLU for LeakyReLU, whose kinks the differences would cross."""
    pyrt.manual_seed(6)
    net = _critic(pyrt, "instance", pyrt.nn.SiLU)
    x = pyrt.tensor(np.random.default_rng(7).standard_normal((2, 1, 16, 16)).astype(
        np.float32))

    def penalty():
        mix = x.detach().requires_grad_(True)
        (g,) = autograd.grad(net(mix).sum(), mix, create_graph=True)
        return ((g.reshape(2, -1).norm(2, dim=1) - 1) ** 2).mean()

    bias = net[0].bias
    (d,) = autograd.grad(penalty(), bias)
    eps, numeric = 1e-2, []
    for i in range(bias.shape[0]):
        values = []
        for step in (eps, -eps):
            with pyrt.no_grad():
                bias[i] += step
            values.append(float(penalty().detach().numpy()))
            with pyrt.no_grad():
                bias[i] -= step
        numeric.append((values[0] - values[1]) / (2 * eps))
    np.testing.assert_allclose(d.detach().numpy(), numeric, rtol=5e-2, atol=1e-3)


# ---- what is still refused, and the table ---------------------------------------------------


@pytest.mark.parametrize("make, name", [
    (lambda t: pyrt.scatter_reduce(t, 0, pyrt.tensor([[1, 0]]), t[:1], "prod"),
     "ScatterReduceBackward0"),
    (lambda t: pyrt.nn.functional.grid_sample(t.reshape(1, 1, 2, 2), t.reshape(1, 1, 2, 2)),
     "GridSampleBackward0"),
])
def test_ops_without_a_formula_are_named(make, name):
    x = pyrt.tensor([[0.5, 1.0], [1.5, 2.0]], requires_grad=True)
    with pytest.raises(NotImplementedError, match=f"the derivative for '{name}' is not "
                                                  "implemented for create_graph=True"):
        autograd.grad(make(x).sum(), x, create_graph=True)
    assert autograd.grad(make(x).sum(), x)[0].shape == (2, 2)


def test_table_builds_quickly():
    from pyrt import double_backward

    double_backward._TABLE.clear()
    start = time.perf_counter()
    table = double_backward._table()
    assert time.perf_counter() - start < 1.0
    assert len(table) > 60
