"""What porting small reinforcement-learning, flow and tabular programs to pyrt needed: Adam's
and AdamW's amsgrad and maximize, from_numpy of bool and its TypeError for dtypes pyrt lacks,
load(weights_only=); and one cut-down run of each program (REINFORCE, DQN, RealNVP, tabular
regression with EMA and per-sample gradients)."""

import copy
import io
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")
nn, F, D = pyrt.nn, pyrt.nn.functional, pyrt.distributions


# ---- Adam / AdamW with amsgrad and maximize ----

def _adam_reference(p, grads, lr, betas, eps, weight_decay, amsgrad, maximize, decoupled):
    """torch.optim.Adam's update written out in float64."""
    p = p.astype(np.float64)
    m, v, v_max = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    beta1, beta2 = betas
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g.astype(np.float64)
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        v_max = np.maximum(v_max, v) if amsgrad else v
        p = p - lr / (1 - beta1 ** t) * m / (np.sqrt(v_max) / math.sqrt(1 - beta2 ** t) + eps)
    return p


def _run_adam(lib, cls, p0, grads, **kw):
    p = lib.tensor(p0.copy(), requires_grad=True)
    opt = getattr(lib.optim, cls)([p], **kw)
    for g in grads:
        p.grad = lib.tensor(g)
        opt.step()
    return p.detach().numpy(), opt


adam_cases = dict(shape=st.lists(st.integers(1, 4), min_size=0, max_size=3),
                  cls=st.sampled_from(["Adam", "AdamW"]),
                  amsgrad=st.booleans(), maximize=st.booleans(),
                  weight_decay=st.sampled_from([0.0, 0.1]), seed=st.integers(0, 2**16))


def _adam_inputs(shape, seed):
    rng = np.random.default_rng(seed)
    p0 = rng.normal(size=shape).astype(np.float32)
    # the scale of the gradients changes, so that amsgrad's maximum makes a difference
    grads = [(rng.normal(size=shape) * s).astype(np.float32) for s in (3.0, 0.1, 0.2, 2.0)]
    return p0, grads


@settings(max_examples=20, deadline=None, derandomize=True)
@given(**adam_cases)
def test_adam_amsgrad_maximize_matches_reference(shape, cls, amsgrad, maximize, weight_decay,
                                                 seed):
    p0, grads = _adam_inputs(shape, seed)
    kw = dict(lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay=weight_decay)
    mine, _ = _run_adam(pyrt, cls, p0, grads, amsgrad=amsgrad, maximize=maximize, **kw)
    ref = _adam_reference(p0, grads, amsgrad=amsgrad, maximize=maximize,
                          decoupled=cls == "AdamW", **kw)
    np.testing.assert_allclose(mine, ref, rtol=1e-5, atol=1e-6)


@needs_torch
@settings(max_examples=20, deadline=None, derandomize=True)
@given(**adam_cases)
def test_adam_amsgrad_maximize_matches_torch(shape, cls, amsgrad, maximize, weight_decay, seed):
    p0, grads = _adam_inputs(shape, seed)
    kw = dict(lr=0.05, amsgrad=amsgrad, maximize=maximize, weight_decay=weight_decay)
    mine, opt = _run_adam(pyrt, cls, p0, grads, **kw)
    theirs, topt = _run_adam(torch, cls, p0, grads, **kw)
    np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)
    state, tstate = opt.state_dict()["state"][0], topt.state_dict()["state"][0]
    names = ["exp_avg", "exp_avg_sq"] + (["max_exp_avg_sq"] if amsgrad else [])
    for name in names:
        np.testing.assert_allclose(np.asarray(state[name]), tstate[name].numpy(), rtol=1e-5,
                                   atol=1e-7)


@needs_torch
def test_adamw_amsgrad_state_loads_from_torch():
    rng = np.random.default_rng(0)
    p0, grads = _adam_inputs((3, 2), 1)
    theirs, topt = _run_adam(torch, "AdamW", p0, grads[:2], lr=0.01, amsgrad=True)
    saved = topt.state_dict()
    saved["state"] = {k: {n: (v.numpy() if n != "step" else int(v)) for n, v in s.items()}
                      for k, s in saved["state"].items()}
    p = pyrt.tensor(theirs.copy(), requires_grad=True)
    opt = pyrt.optim.AdamW([p], lr=0.01, amsgrad=True)
    opt.load_state_dict(saved)
    assert opt.param_groups[0]["amsgrad"] is True
    tp = topt.param_groups[0]["params"][0]
    g = rng.normal(size=(3, 2)).astype(np.float32)
    p.grad, tp.grad = pyrt.tensor(g), torch.tensor(g)
    opt.step()
    topt.step()
    np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_adam_defaults_and_state_dict_keep_the_flags():
    p = pyrt.zeros(2, requires_grad=True)
    group = pyrt.optim.Adam([p]).param_groups[0]
    assert group["amsgrad"] is False and group["maximize"] is False
    opt = pyrt.optim.AdamW([p], amsgrad=True, foreach=False, fused=None, capturable=False)
    saved = copy.deepcopy(opt.state_dict())
    assert saved["param_groups"][0]["amsgrad"] is True
    other = pyrt.optim.AdamW([p])
    other.load_state_dict(saved)
    assert other.param_groups[0]["amsgrad"] is True


@pytest.mark.parametrize("kw, error", [
    (dict(amsgrad="yes"), TypeError), (dict(maximize=1), TypeError),
    (dict(differentiable=True), ValueError), (dict(foreach="no"), TypeError),
    (dict(fused=2), TypeError)])
def test_adam_bad_options(kw, error):
    p = pyrt.zeros(2, requires_grad=True)
    for cls in (pyrt.optim.Adam, pyrt.optim.AdamW):
        with pytest.raises(error):
            cls([p], **kw)


# ---- from_numpy and load ----

def test_from_numpy_bool_shares_memory():
    a = np.array([True, False, True])
    t = pyrt.from_numpy(a)
    assert t.dtype == pyrt.bool
    a[1] = True
    assert t.tolist() == [True, True, True]


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.float16])
def test_from_numpy_refuses_missing_dtypes_with_type_error(dtype):
    with pytest.raises(TypeError, match=f"no {np.dtype(dtype)} dtype"):
        pyrt.from_numpy(np.zeros(3, dtype))
    # the conversion that the message suggests works
    assert pyrt.from_numpy(np.zeros(3, dtype).astype(np.float32)).dtype == pyrt.float32


def test_from_numpy_non_contiguous_is_value_error():
    with pytest.raises(ValueError, match="C-contiguous"):
        pyrt.from_numpy(np.zeros((3, 4), np.float32)[:, ::2])


def test_load_takes_weights_only():
    net = nn.Linear(2, 3)
    buffer = io.BytesIO()
    pyrt.save(net.state_dict(), buffer)
    for weights_only in (True, False, None):
        buffer.seek(0)
        loaded = pyrt.load(buffer, weights_only=weights_only)
        np.testing.assert_array_equal(np.asarray(loaded["weight"]), net.weight.detach().numpy())
    buffer.seek(0)
    with pytest.raises(TypeError, match="weights_only"):
        pyrt.load(buffer, weights_only="yes")


# ---- cut-down programs, pyrt only ----

def test_reinforce_corridor_learns():
    """REINFORCE with Categorical's log_prob and entropy on a 5-cell corridor: the episodes
    get shorter."""
    pyrt.manual_seed(0)
    n = 5
    policy = nn.Sequential(nn.Linear(n, 16), nn.ReLU(), nn.Linear(16, 2), nn.Softmax(dim=1))
    opt = pyrt.optim.Adam(policy.parameters(), lr=3e-2)
    lengths = []
    for _ in range(40):
        pos, log_probs, entropies, rewards = 0, [], [], []
        while pos < n - 1 and len(rewards) < 30:
            m = D.Categorical(policy(pyrt.eye(n)[pos].unsqueeze(0)))
            action = m.sample()
            log_probs.append(m.log_prob(action))
            entropies.append(m.entropy())
            pos = max(0, pos + (1 if action.item() == 1 else -1))
            rewards.append(1.0 if pos == n - 1 else -0.01)
        returns = pyrt.tensor(np.cumsum(rewards[::-1])[::-1].copy())
        returns = (returns - returns.mean()) / (returns.std() + 1e-6) if len(rewards) > 1 \
            else returns
        loss = -(pyrt.cat(log_probs) * returns).sum() - 0.01 * pyrt.stack(entropies).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        lengths.append(len(rewards))
    # n - 1 steps is the shortest episode
    assert np.mean(lengths[-10:]) < np.mean(lengths[:10]) - 1
    assert np.mean(lengths[-10:]) <= n


def test_dqn_update_matches_recorded_behaviour():
    """DQN steps on fixed transitions: gather, smooth_l1_loss, a deep-copied target network
    kept by soft updates through load_state_dict, AdamW(amsgrad=True)."""
    random.seed(0)
    pyrt.manual_seed(0)
    rng = np.random.default_rng(0)
    states = rng.normal(size=(64, 4)).astype(np.float32)
    next_states = rng.normal(size=(64, 4)).astype(np.float32)
    actions = rng.integers(0, 2, size=(64, 1))
    rewards = (states[:, 0] > 0).astype(np.float32) * (actions[:, 0] == 1)
    done = rng.uniform(size=64) < 0.3
    policy = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
    target = copy.deepcopy(policy)
    target.load_state_dict(policy.state_dict())
    opt = pyrt.optim.AdamW(policy.parameters(), lr=1e-2, amsgrad=True)
    final_s = pyrt.tensor(states[done])
    final_a, final_r = pyrt.tensor(actions[done]), pyrt.tensor(rewards[done]).unsqueeze(1)

    def terminal_error():  # on final transitions the target is the reward alone
        with pyrt.no_grad():
            return (policy(final_s).gather(1, final_a) - final_r).abs().mean().item()

    start_error, losses = terminal_error(), []
    for _ in range(60):
        idx = random.sample(range(64), 32)
        s, a, r = pyrt.tensor(states[idx]), pyrt.tensor(actions[idx]), pyrt.tensor(rewards[idx])
        mask = pyrt.tensor(~done[idx])
        q = policy(s).gather(1, a)
        next_values = pyrt.zeros(32)
        with pyrt.no_grad():
            next_values[mask] = target(pyrt.tensor(next_states[idx])[mask]).max(1).values
        loss = F.smooth_l1_loss(q, (r + 0.5 * next_values).unsqueeze(1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_value_(policy.parameters(), 100)
        opt.step()
        t_sd, p_sd = target.state_dict(), policy.state_dict()
        target.load_state_dict({k: p_sd[k] * 0.1 + t_sd[k] * 0.9 for k in p_sd})
        losses.append(loss.item())
    assert terminal_error() < 0.75 * start_error
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10])
    # the target network trails the policy network but has moved off its start
    assert not np.allclose(target.state_dict()["0.weight"], policy.state_dict()["0.weight"])


def test_realnvp_flow_fits_and_inverts():
    """Affine coupling layers under MultivariateNormal: the negative log-likelihood falls and
    the inverse undoes the forward pass."""
    pyrt.manual_seed(0)
    rng = np.random.default_rng(0)

    class Coupling(nn.Module):
        def __init__(self, mask):
            super().__init__()
            self.register_buffer("mask", mask)
            self.s = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2), nn.Tanh())
            self.t = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 2))

        def forward(self, x):
            xm = x * self.mask
            s, t = self.s(xm) * (1 - self.mask), self.t(xm) * (1 - self.mask)
            return xm + (1 - self.mask) * (x * pyrt.exp(s) + t), s.sum(dim=1)

        def inverse(self, z):
            zm = z * self.mask
            s, t = self.s(zm) * (1 - self.mask), self.t(zm) * (1 - self.mask)
            return zm + (1 - self.mask) * ((z - t) * pyrt.exp(-s))

    layers = nn.ModuleList([Coupling(pyrt.tensor([i % 2, 1 - i % 2], dtype=pyrt.float32))
                            for i in range(4)])
    prior = D.MultivariateNormal(pyrt.zeros(2), pyrt.eye(2))
    opt = pyrt.optim.Adam(layers.parameters(), lr=1e-2)

    def forward(x):
        log_det = pyrt.zeros(x.shape[0])
        for layer in layers:
            x, ld = layer(x)
            log_det = log_det + ld
        return x, log_det

    losses = []
    for _ in range(40):
        x = pyrt.tensor(rng.normal(size=(128, 2)) * [2.0, 0.3] + [1.0, -1.0])
        z, log_det = forward(x)
        loss = -(prior.log_prob(z) + log_det).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.5
    with pyrt.no_grad():
        x = pyrt.tensor(rng.normal(size=(16, 2)))
        z, _ = forward(x)
        for layer in reversed(layers):
            z = layer.inverse(z)
        assert (z - x).abs().max().item() < 1e-5


def test_tabular_ema_early_stopping_and_per_sample_grads():
    """AdamW with OneCycleLR, an EMA of the weights (AveragedModel) validated each epoch,
    early stopping; then per-sample gradients by vmap(grad(functional_call)) equal to a loop
    of backward passes."""
    pyrt.manual_seed(0)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(256, 6)).astype(np.float32)
    y = (X @ rng.normal(size=6) + 0.1 * rng.normal(size=256)).astype(np.float32)[:, None]
    Xtr, ytr, Xva, yva = map(pyrt.from_numpy, (X[:200], y[:200], X[200:], y[200:]))
    model = nn.Sequential(nn.Linear(6, 32, bias=False), nn.BatchNorm1d(32), nn.GELU(),
                          nn.Linear(32, 1))
    swa = pyrt.optim.swa_utils
    ema = swa.AveragedModel(model, multi_avg_fn=swa.get_ema_multi_avg_fn(0.8))
    opt = pyrt.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    sched = pyrt.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-2, epochs=20, steps_per_epoch=4)
    best, best_state, bad, vals = float("inf"), None, 0, []
    for _ in range(20):
        model.train()
        perm = rng.permutation(200)
        for i in range(0, 200, 50):
            idx = pyrt.from_numpy(perm[i:i + 50])
            loss = F.mse_loss(model(Xtr[idx]), ytr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            ema.update_parameters(model)
        ema.eval()
        with pyrt.inference_mode():
            vals.append(F.mse_loss(ema(Xva), yva).item())
        if vals[-1] < best - 1e-4:
            best, bad, best_state = vals[-1], 0, copy.deepcopy(ema.module.state_dict())
        else:
            bad += 1
            if bad >= 3:
                break
    assert best < 0.3 * vals[0]
    final = copy.deepcopy(model)
    final.load_state_dict(best_state)
    final.eval()
    func = pyrt.func
    params = {k: v.detach() for k, v in final.named_parameters()}
    buffers = {k: v.detach() for k, v in final.named_buffers()}

    def sample_loss(p, b, x, t):
        return F.mse_loss(func.functional_call(final, (p, b), (x.unsqueeze(0),)), t.unsqueeze(0))

    grads = func.vmap(func.grad(sample_loss), in_dims=(None, None, 0, 0))(
        params, buffers, Xva[:8], yva[:8])
    for i in range(8):
        final.zero_grad()
        F.mse_loss(final(Xva[i:i + 1]), yva[i:i + 1]).backward()
        for name, p in final.named_parameters():
            np.testing.assert_allclose(grads[name][i].numpy(), p.grad.numpy(), rtol=1e-4,
                                       atol=1e-5)
