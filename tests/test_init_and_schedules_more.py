"""nn.init's trunc_normal_, orthogonal_, eye_, dirac_ and sparse_ (their distributions and
properties, torch's deterministic values), and the schedules CosineAnnealingWarmRestarts and
CyclicLR: their lrs and momenta equal PyTorch's to the last bit (hypothesis over settings),
state dicts round-trip, bad settings raise."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.nn.init as init
from pyrt.optim.lr_scheduler import CosineAnnealingWarmRestarts, CyclicLR

try:
    import torch
except ImportError:
    torch = None


def test_trunc_normal_matches_the_truncated_distribution():
    pyrt.manual_seed(0)
    w = pyrt.zeros(400, 500)
    init.trunc_normal_(w, mean=0.01, std=0.02, a=-0.02, b=0.05)
    v = w.numpy().astype(np.float64)
    assert v.min() >= -0.02 and v.max() <= 0.05
    # the exact mean and variance of N(mu, s^2) truncated to [a, b]
    mu, s, a, b = 0.01, 0.02, -0.02, 0.05
    alpha, beta = (a - mu) / s, (b - mu) / s
    pdf = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: (1 + math.erf(z / math.sqrt(2))) / 2  # noqa: E731
    z = cdf(beta) - cdf(alpha)
    mean = mu + s * (pdf(alpha) - pdf(beta)) / z
    var = s * s * (1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z
                   - ((pdf(alpha) - pdf(beta)) / z) ** 2)
    n = v.size
    assert abs(v.mean() - mean) < 5 * math.sqrt(var / n)
    assert abs(v.var() - var) < 0.01 * var
    pyrt.manual_seed(0)
    again = pyrt.zeros(400, 500)
    init.trunc_normal_(again, mean=0.01, std=0.02, a=-0.02, b=0.05)
    np.testing.assert_array_equal(again.numpy(), w.numpy())
    with pytest.raises(ValueError, match="too little"):
        init.trunc_normal_(pyrt.zeros(3), mean=0.0, std=1.0, a=10.0, b=11.0)
    with pytest.raises(ValueError, match="a < b"):
        init.trunc_normal_(pyrt.zeros(3), a=1.0, b=0.0)


@pytest.mark.parametrize("shape", [(4, 7), (7, 4), (6, 2, 3), (5, 5)])
def test_orthogonal(shape):
    w = pyrt.zeros(*shape)
    init.orthogonal_(w, gain=1.5)
    flat = w.numpy().reshape(shape[0], -1).astype(np.float64)
    small = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
    np.testing.assert_allclose(small, 2.25 * np.eye(len(small)), atol=1e-5)
    with pytest.raises(ValueError, match="2 or more dimensions"):
        init.orthogonal_(pyrt.zeros(3))


def test_eye_dirac_sparse():
    for shape in ((3, 5), (5, 3)):
        w = pyrt.ones(*shape)
        init.eye_(w)
        np.testing.assert_array_equal(w.numpy(), np.eye(*shape))
    for shape, groups in (((4, 2, 3), 1), ((6, 3, 3, 3), 2), ((4, 4, 1, 3, 3), 4)):
        w = pyrt.ones(*shape)
        init.dirac_(w, groups)
        if torch is not None:
            q = torch.ones(*shape)
            torch.nn.init.dirac_(q, groups)
            np.testing.assert_array_equal(w.numpy(), q.numpy())
        # a convolution with it passes min(out, in) channels of each group through
        assert w.numpy().sum() == groups * min(shape[0] // groups, shape[1])
    with pytest.raises(ValueError, match="divisible by groups"):
        init.dirac_(pyrt.zeros(3, 3, 3), 2)
    w = pyrt.zeros(20, 6)
    init.sparse_(w, 0.25, std=0.5)
    assert ((w.numpy() == 0).sum(0) >= 5).all()
    assert w.numpy().std() > 0.2


def schedule_values(lib, make, steps, optimizer="sgd", epochs=None):
    p = [lib.zeros(2, requires_grad=True)]
    opt = (lib.optim.SGD(p, lr=0.1, momentum=0.9) if optimizer == "sgd"
           else lib.optim.Adam(p, lr=0.1))
    sched = make(lib, opt)
    out = []
    for i in range(steps):
        opt.step()
        sched.step() if epochs is None else sched.step(epochs[i])
        g = opt.param_groups[0]
        out.append((g["lr"], g.get("momentum", g.get("betas", (None,))[0])))
    return out


@settings(max_examples=40, deadline=None)
@given(t0=st.integers(1, 5), mult=st.integers(1, 3), eta=st.sampled_from([0.0, 1e-3]),
       epochs=st.one_of(st.none(), st.lists(st.floats(0, 40), min_size=12, max_size=12)))
def test_warm_restarts_as_torch(t0, mult, eta, epochs):
    if torch is None:
        pytest.skip("torch is not installed")

    def make(lib, opt):
        return lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, t0, mult, eta)

    assert schedule_values(pyrt, make, 12, epochs=epochs) == schedule_values(
        torch, make, 12, epochs=epochs)


@settings(max_examples=40, deadline=None)
@given(up=st.integers(1, 5), down=st.one_of(st.none(), st.integers(0, 5)),
       mode=st.sampled_from(["triangular", "triangular2", "exp_range"]),
       optimizer=st.sampled_from(["sgd", "adam"]), momentum=st.booleans())
def test_cyclic_as_torch(up, down, mode, optimizer, momentum):
    if torch is None:
        pytest.skip("torch is not installed")

    def make(lib, opt):
        return lib.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, up, down, mode, gamma=0.95,
                                               cycle_momentum=momentum)

    assert schedule_values(pyrt, make, 15, optimizer) == schedule_values(torch, make, 15,
                                                                         optimizer)


def test_state_dicts_and_errors():
    p = [pyrt.zeros(2, requires_grad=True)]
    opt = pyrt.optim.SGD(p, lr=0.1, momentum=0.9)
    sched = CosineAnnealingWarmRestarts(opt, 3, 2)
    for _ in range(4):
        sched.step()
    state = sched.state_dict()
    other = CosineAnnealingWarmRestarts(pyrt.optim.SGD(p, lr=0.1), 3, 2)
    other.load_state_dict(state)
    assert other.T_cur == sched.T_cur and other.T_i == sched.T_i
    cyc = CyclicLR(opt, 0.01, 0.1, 2, scale_fn=lambda x: 1.0)
    assert cyc.state_dict()["scale_fn"] is None
    with pytest.raises(ValueError, match="T_0 must be an integer >= 1"):
        CosineAnnealingWarmRestarts(opt, 0)
    with pytest.raises(ValueError, match="Expected non-negative epoch"):
        sched.step(-1)
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        CyclicLR(opt, 0.01, 0.1, mode="sine")
    with pytest.raises(ValueError, match="must support momentum or beta1"):
        CyclicLR(pyrt.optim.Adagrad(p), 0.01, 0.1)
    with pytest.raises(ValueError, match="base_lr must have the same length"):
        CyclicLR(opt, [0.01, 0.02], 0.1)
