"""Three more programs in the idioms of their communities, written once and run with `torch`
bound to pyrt and, where installed, to PyTorch from the same initial weights and batches: a
BERT-style fine-tuning loop (a padded Transformer encoder, AdamW with two parameter groups, a
linear warmup/decay LambdaLR, gradient accumulation, clipping, no_grad evaluation), a U-Net
segmentation step (skip connections by cat, a hand-written Dice + BCE loss, interpolate where
sizes differ, Nesterov SGD) and a PPO actor-critic update (Categorical, GAE over reversed
time steps, the clipped surrogate, smooth_l1 value loss, shuffled minibatches).

Random draws the two libraries make differently (sampled actions, randperm) are drawn once
with NumPy or by pyrt's run and replayed in torch's; dropout is 0.0. Without PyTorch: losses
fall, shapes hold, and one quantity of each program is checked against NumPy in float64."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt

try:  # the reference for the comparisons marked needs_torch
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def _same_weights(ours, theirs):
    """Copy pyrt module `ours`'s parameters into torch module `theirs`, matched by name."""
    mine, yours = dict(ours.named_parameters()), dict(theirs.named_parameters())
    assert list(mine) == list(yours)
    with torch.no_grad():
        for name, q in yours.items():
            q.copy_(torch.from_numpy(mine[name].detach().numpy().copy()))


def _built_as_pyrt_built(build, seed):
    """An `init` for a torch run: the weights pyrt's run built after seeding with `seed`."""
    def init(model):
        pyrt.manual_seed(seed)
        _same_weights(build(pyrt), model)
    return init


# ---- 1. BERT-style fine-tuning of a small Transformer encoder classifier -------------------

def _bert_classifier(torch, vocab=24, d=16, heads=2, layers=2, max_len=12, classes=2):
    nn = torch.nn

    class EncoderClassifier(nn.Module):
        """Token + learned position embeddings, a padded Transformer encoder, a masked mean
        over the real tokens, then a LayerNorm'd linear head."""

        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, d, padding_idx=0)
            self.pos = nn.Parameter(torch.zeros(1, max_len, d))
            nn.init.normal_(self.pos, std=0.02)
            layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=32, dropout=0.0,
                                               batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers)
            self.LayerNorm = nn.LayerNorm(d)
            self.classifier = nn.Linear(d, classes)

        def forward(self, input_ids, padding_mask):
            x = self.embed(input_ids) + self.pos[:, :input_ids.size(1)]
            x = self.encoder(x, src_key_padding_mask=padding_mask)
            keep = (~padding_mask).unsqueeze(-1).float()
            pooled = (x * keep).sum(dim=1) / keep.sum(dim=1)
            return self.classifier(self.LayerNorm(pooled))

    return EncoderClassifier()


def _sentences(n, seed, vocab=24, max_len=12):
    """Padded token ids (0 pads), their padding mask and labels: 1 when the low half of the
    vocabulary outnumbers the high half."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(4, max_len + 1, n)
    ids = rng.integers(1, vocab, (n, max_len))
    pad = np.arange(max_len)[None] >= lengths[:, None]
    ids[pad] = 0
    low = ((ids > 0) & (ids < vocab // 2)).sum(1)
    labels = (2 * low > lengths).astype(np.int64)
    return ids.astype(np.int64), pad, labels


def bert_finetune(torch, seed, steps=4, init=None, accum=2, micro=8):
    """A fine-tuning loop as the BERT scripts write it; `torch` is the library. Returns the
    micro-batch losses, the learning rates and the evaluation accuracy."""
    F = torch.nn.functional
    torch.manual_seed(seed)
    model = _bert_classifier(torch)
    if init is not None:
        init(model)
    no_decay = ("bias", "LayerNorm.weight", "norm1.weight", "norm2.weight")
    groups = [
        {"params": [p for n, p in model.named_parameters()
                    if not any(nd in n for nd in no_decay)], "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters()
                    if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=5e-3)
    warmup = max(1, steps // 4)

    def linear_warmup_decay(step):
        if step < warmup:
            return float(step + 1) / warmup
        return max(0.0, float(steps - step) / max(1, steps - warmup))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, linear_warmup_decay)
    ids, pad, labels = _sentences(steps * accum * micro, seed)
    losses, lrs = [], []
    model.train()
    opt.zero_grad()
    for i in range(steps * accum):
        batch = slice(i * micro, (i + 1) * micro)
        logits = model(torch.from_numpy(ids[batch]), torch.from_numpy(pad[batch]))
        loss = F.cross_entropy(logits, torch.from_numpy(labels[batch])) / accum
        loss.backward()
        losses.append(loss.item() * accum)
        if (i + 1) % accum == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            lrs.append([g["lr"] for g in opt.param_groups])
    model.eval()
    ids, pad, labels = _sentences(64, seed + 1)
    with torch.no_grad():
        logits = model(torch.from_numpy(ids), torch.from_numpy(pad))
        accuracy = (logits.argmax(dim=-1) == torch.from_numpy(labels)).float().mean().item()
    return np.array(losses), np.array(lrs), accuracy


def test_bert_finetune_learns_with_warmup_and_decay():
    losses, lrs, accuracy = bert_finetune(pyrt, 0, steps=64)
    assert np.mean(losses[-16:]) < np.mean(losses[:16]) - 0.2
    majority = max(_sentences(64, 1)[2].mean(), 1 - _sentences(64, 1)[2].mean())
    assert accuracy > majority + 0.1
    # both groups follow the schedule: up over 16 warm-up steps, then linearly down to 0
    want = [5e-3 * min((k + 2) / 16, (64 - k - 1) / 48) for k in range(64)]
    np.testing.assert_allclose(lrs, np.stack([want, want], 1), rtol=1e-12)


def test_bert_padding_leaves_the_real_tokens_alone():
    # a padded batch gives its sentences the logits they have alone, unpadded
    pyrt.manual_seed(0)
    model = _bert_classifier(pyrt).eval()
    ids, pad, _ = _sentences(4, 3)
    with pyrt.no_grad():
        batch = model(pyrt.from_numpy(ids), pyrt.from_numpy(pad)).numpy()
        for k in range(4):
            n = int((~pad[k]).sum())
            alone = model(pyrt.from_numpy(ids[k:k + 1, :n]), pyrt.from_numpy(pad[k:k + 1, :n]))
            np.testing.assert_allclose(batch[k], alone.numpy()[0], rtol=1e-5, atol=1e-5)


@needs_torch
@settings(max_examples=3, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**16))
def test_bert_finetune_follows_torch(seed):
    ours = bert_finetune(pyrt, seed)
    theirs = bert_finetune(torch, seed, init=_built_as_pyrt_built(_bert_classifier, seed))
    np.testing.assert_allclose(ours[0], theirs[0], rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12)
    assert ours[2] == theirs[2]


# ---- 2. U-Net segmentation -------------------------------------------------------------------

def _unet(torch):
    nn, F = torch.nn, torch.nn.functional

    def double_conv(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(inplace=True),
                             nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    class UNet(nn.Module):
        """Two levels: down by max-pooling, up by a transposed convolution, the encoder's
        features concatenated on; an odd input size is met by interpolating back up."""

        def __init__(self):
            super().__init__()
            self.inc = double_conv(1, 8)
            self.down = nn.Sequential(nn.MaxPool2d(2), double_conv(8, 16))
            self.up = nn.ConvTranspose2d(16, 8, kernel_size=2, stride=2)
            self.conv = double_conv(16, 8)
            self.outc = nn.Conv2d(8, 1, kernel_size=1)

        def forward(self, x):
            x1 = self.inc(x)
            u = self.up(self.down(x1))
            if u.shape[-2:] != x1.shape[-2:]:
                u = F.interpolate(u, size=x1.shape[-2:], mode="bilinear", align_corners=False)
            return self.outc(self.conv(torch.cat([x1, u], dim=1)))

    return UNet()


def dice_loss(torch, logits, target, smooth=1.0):
    """1 - the soft Dice coefficient of sigmoid(logits) and the mask, per image and channel,
    averaged."""
    probs = torch.sigmoid(logits)
    inter = (probs * target).sum(dim=(2, 3))
    union = probs.sum(dim=(2, 3)) + target.sum(dim=(2, 3))
    return 1 - ((2 * inter + smooth) / (union + smooth)).mean()


def _discs(n, seed, h=9, w=11):
    """Noisy images of one bright disc each and the disc's mask."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    cy, cx = rng.uniform(2, h - 2, n), rng.uniform(2, w - 2, n)
    r = rng.uniform(1.5, 3.0, n)
    masks = ((yy - cy[:, None, None]) ** 2 + (xx - cx[:, None, None]) ** 2
             < r[:, None, None] ** 2).astype(np.float32)
    images = masks + 0.3 * rng.standard_normal(masks.shape).astype(np.float32)
    return images[:, None].astype(np.float32), masks[:, None]


def unet_train(torch, seed, steps=4, init=None):
    """Segmentation training steps; `torch` is the library. Returns the losses and the output
    shape."""
    F = torch.nn.functional
    torch.manual_seed(seed)
    model = _unet(torch)
    if init is not None:
        init(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                          weight_decay=1e-4)
    images, masks = _discs(8 * steps, seed)
    losses = []
    model.train()
    for step in range(steps):
        x = torch.from_numpy(images[step * 8:(step + 1) * 8])
        y = torch.from_numpy(masks[step * 8:(step + 1) * 8])
        logits = model(x)
        loss = F.binary_cross_entropy_with_logits(logits, y) + dice_loss(torch, logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses), tuple(logits.shape)


def test_unet_segmentation_loss_falls():
    losses, shape = unet_train(pyrt, 0, steps=20)
    assert shape == (8, 1, 9, 11)
    assert np.mean(losses[-4:]) < np.mean(losses[:4]) - 0.2


@settings(max_examples=10, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**16))
def test_dice_loss_and_its_gradient_match_numpy(seed):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((2, 1, 4, 5)).astype(np.float32)
    target = (rng.uniform(size=(2, 1, 4, 5)) < 0.4).astype(np.float32)
    t = pyrt.from_numpy(logits).requires_grad_(True)
    loss = dice_loss(pyrt, t, pyrt.from_numpy(target))
    loss.backward()

    def reference(z):
        p = 1 / (1 + np.exp(-z))
        inter, union = (p * target).sum((2, 3)), p.sum((2, 3)) + target.sum((2, 3))
        return 1 - ((2 * inter + 1) / (union + 1)).mean()

    z = logits.astype(np.float64)
    np.testing.assert_allclose(loss.item(), reference(z), rtol=1e-5)
    # central differences, one logit at a time
    eps, grad = 1e-6, np.zeros_like(z)
    for i in np.ndindex(z.shape):
        up, down = z.copy(), z.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (reference(up) - reference(down)) / (2 * eps)
    np.testing.assert_allclose(t.grad.numpy(), grad, rtol=1e-3, atol=1e-6)


@needs_torch
@settings(max_examples=3, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**16))
def test_unet_train_follows_torch(seed):
    ours = unet_train(pyrt, seed)
    theirs = unet_train(torch, seed, init=_built_as_pyrt_built(_unet, seed))
    np.testing.assert_allclose(ours[0], theirs[0], rtol=2e-4, atol=2e-5)
    assert ours[1] == theirs[1]


# ---- 3. PPO actor-critic ---------------------------------------------------------------------

def _actor_critic(torch, obs=4, actions=3, hidden=32):
    nn = torch.nn

    class ActorCritic(nn.Module):
        """A shared tanh trunk with a policy head (logits) and a value head."""

        def __init__(self):
            super().__init__()
            self.trunk = nn.Sequential(nn.Linear(obs, hidden), nn.Tanh(),
                                       nn.Linear(hidden, hidden), nn.Tanh())
            self.actor = nn.Linear(hidden, actions)
            self.critic = nn.Linear(hidden, 1)

        def forward(self, x):
            h = self.trunk(x)
            return self.actor(h), self.critic(h).squeeze(-1)

    return ActorCritic()


def gae(torch, rewards, values, dones, next_value, next_done, gamma=0.99, lam=0.95):
    """Generalized advantage estimates [T, N], as CleanRL writes them: a Python loop over
    reversed time steps, each step's estimate feeding the one before."""
    advantages = torch.zeros_like(rewards)
    last = 0
    for t in reversed(range(rewards.shape[0])):
        if t == rewards.shape[0] - 1:
            not_done, next_values = 1.0 - next_done, next_value
        else:
            not_done, next_values = 1.0 - dones[t + 1], values[t + 1]
        delta = rewards[t] + gamma * next_values * not_done - values[t]
        advantages[t] = last = delta + gamma * lam * not_done * last
    return advantages


def ppo_train(torch, seed, iterations=2, perms=None, init=None, T=16, N=4, epochs=3,
              minibatches=4, clip=0.2, lr=2.5e-3):
    """Rollouts in a contextual bandit (reward 1 for picking the argmax of the first three
    observations, episodes of 5 steps) and PPO updates; `torch` is the library. Actions are
    drawn by NumPy from the policy's probabilities; the minibatch orders come from
    torch.randperm unless `perms` replays another run's. Returns the losses, the mean rewards,
    the advantages of the first rollout, that rollout's data, and the orders used."""
    F, Categorical = torch.nn.functional, torch.distributions.Categorical
    torch.manual_seed(seed)
    model = _actor_critic(torch)
    if init is not None:
        init(model)
    opt = torch.optim.Adam(model.parameters(), lr=lr, eps=1e-5)
    rng = np.random.default_rng(seed)
    replay = iter(perms) if perms is not None else None
    perms_used, losses, mean_rewards, first = [], [], [], None
    obs = rng.standard_normal((N, 4)).astype(np.float32)
    done = np.zeros(N, np.float32)
    clock = 0
    for _ in range(iterations):
        b_obs = torch.zeros(T, N, 4)
        b_actions = torch.zeros(T, N, dtype=torch.int64)
        b_logprobs, rewards, dones, values = (torch.zeros(T, N) for _ in range(4))
        for t in range(T):
            b_obs[t] = torch.from_numpy(obs)
            dones[t] = torch.from_numpy(done)
            with torch.no_grad():
                logits, value = model(b_obs[t])
                dist = Categorical(logits=logits)
                cdf = dist.probs.cumsum(-1).numpy()
                action = torch.from_numpy((cdf < rng.uniform(size=(N, 1))).sum(-1).clip(0, 2))
                b_logprobs[t] = dist.log_prob(action)
            b_actions[t], values[t] = action, value
            reward = (action.numpy() == obs[:, :3].argmax(-1)).astype(np.float32)
            rewards[t] = torch.from_numpy(reward)
            clock += 1
            done = np.full(N, float(clock % 5 == 0), np.float32)
            obs = rng.standard_normal((N, 4)).astype(np.float32)
        with torch.no_grad():
            next_value = model(torch.from_numpy(obs))[1]
            advantages = gae(torch, rewards, values, dones, next_value, torch.from_numpy(done))
            returns = advantages + values
        if first is None:
            first = tuple(a.numpy().copy() for a in (rewards, values, dones, next_value,
                                                      torch.from_numpy(done), advantages))
        mean_rewards.append(rewards.mean().item())
        flat = (b_obs.reshape(-1, 4), b_actions.reshape(-1), b_logprobs.reshape(-1),
                advantages.reshape(-1), returns.reshape(-1))
        size = T * N // minibatches
        for _ in range(epochs):
            perm = torch.randperm(T * N) if replay is None else torch.from_numpy(next(replay))
            perms_used.append(perm.numpy().copy())
            for start in range(0, T * N, size):
                mb = perm[start:start + size]
                mb_obs, mb_actions, mb_logprobs, mb_adv, mb_returns = (a[mb] for a in flat)
                logits, new_value = model(mb_obs)
                dist = Categorical(logits=logits)
                ratio = (dist.log_prob(mb_actions) - mb_logprobs).exp()
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = -torch.min(ratio * mb_adv,
                                     torch.clamp(ratio, 1 - clip, 1 + clip) * mb_adv).mean()
                v_loss = F.smooth_l1_loss(new_value, mb_returns)
                loss = pg_loss + 0.5 * v_loss - 0.01 * dist.entropy().mean()
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
                opt.step()
                losses.append(loss.item())
    return np.array(losses), np.array(mean_rewards), first, perms_used


def test_ppo_gae_matches_a_numpy_loop():
    _, _, (rewards, values, dones, next_value, next_done, advantages), _ = ppo_train(pyrt, 0, 1)
    r, v, d = (a.astype(np.float64) for a in (rewards, values, dones))
    want, last = np.zeros_like(r), 0.0
    for t in range(len(r) - 1, -1, -1):
        nv, nd = (next_value, next_done) if t == len(r) - 1 else (v[t + 1], d[t + 1])
        delta = r[t] + 0.99 * nv * (1 - nd) - v[t]
        want[t] = last = delta + 0.99 * 0.95 * (1 - nd) * last
    np.testing.assert_allclose(advantages, want, rtol=1e-5, atol=1e-5)
    assert d.any() and not d.all()  # episodes end inside the rollout


def test_ppo_policy_improves():
    losses, mean_rewards, _, perms = ppo_train(pyrt, 0, iterations=12)
    assert len(losses) == 12 * 3 * 4
    assert all(sorted(p.tolist()) == list(range(64)) for p in perms)
    assert np.mean(mean_rewards[-3:]) > np.mean(mean_rewards[:3]) + 0.15


@needs_torch
@settings(max_examples=3, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**16))
def test_ppo_update_follows_torch(seed):
    ours = ppo_train(pyrt, seed)
    theirs = ppo_train(torch, seed, perms=ours[3], init=_built_as_pyrt_built(_actor_critic, seed))
    np.testing.assert_allclose(ours[0], theirs[0], rtol=2e-4, atol=2e-5)
    np.testing.assert_array_equal(ours[1], theirs[1])
    for a, b in zip(ours[2], theirs[2]):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)


# ---- what the programs' communities also write: fixes found on the way ----------------------

def _np_weighted_bce(z, t, w, pw):
    """-w [pw t log sigmoid(z) + (1 - t) log(1 - sigmoid(z))] in float64."""
    z, t = z.astype(np.float64), t.astype(np.float64)
    log_p, log_not_p = -np.logaddexp(0, -z), -np.logaddexp(0, z)
    return -w * (pw * t * log_p + (1 - t) * log_not_p)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), seed=st.integers(0, 99),
       reduction=st.sampled_from(["mean", "sum", "none"]), weighted=st.booleans())
def test_bce_with_logits_pos_weight_matches_numpy(shape, seed, reduction, weighted):
    # the U-Net scripts' class balancing: F.binary_cross_entropy_with_logits(pos_weight=...)
    rng = np.random.default_rng(seed)
    z = (rng.standard_normal(shape) * 3).astype(np.float32)
    t = rng.uniform(size=shape).astype(np.float32)
    pw = rng.uniform(0.5, 3.0, shape[-1]).astype(np.float32)
    w = rng.uniform(0.5, 2.0, shape).astype(np.float32) if weighted else None
    x = pyrt.from_numpy(z).requires_grad_(True)
    out = pyrt.nn.functional.binary_cross_entropy_with_logits(
        x, pyrt.from_numpy(t), None if w is None else pyrt.from_numpy(w),
        reduction=reduction, pos_weight=pyrt.from_numpy(pw))
    elements = _np_weighted_bce(z, t, 1.0 if w is None else w, pw)
    want = {"mean": elements.mean(), "sum": elements.sum(), "none": elements}[reduction]
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-5, atol=1e-6)
    out.sum().backward()
    # d/dz of -w [pw t log s + (1 - t) log(1 - s)] = w [(pw t + 1 - t) s - pw t]
    s = 1 / (1 + np.exp(-z.astype(np.float64)))
    grad = (1.0 if w is None else w) * ((pw * t + 1 - t) * s - pw * t)
    grad = grad / elements.size if reduction == "mean" else grad
    np.testing.assert_allclose(x.grad.numpy(), grad, rtol=1e-4, atol=1e-6)


def test_bce_with_logits_loss_module_keeps_weights_as_buffers():
    pw = pyrt.tensor([2.0, 0.5])
    loss = pyrt.nn.BCEWithLogitsLoss(pos_weight=pw)
    assert loss.pos_weight is pw and loss.weight is None
    assert list(loss.state_dict()) == ["pos_weight"]
    z, t = pyrt.tensor([[0.3, -1.0]]), pyrt.tensor([[1.0, 1.0]])
    np.testing.assert_allclose(loss(z, t).item(), _np_weighted_bce(z.numpy(), t.numpy(), 1.0,
                                                                   pw.numpy()).mean(), rtol=1e-6)
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        pyrt.nn.functional.binary_cross_entropy_with_logits(z, t, reduction="avg",
                                                            pos_weight=pw)


@needs_torch
def test_bce_with_logits_weights_match_torch():
    rng = np.random.default_rng(0)
    z, t = rng.standard_normal((3, 4)).astype(np.float32), rng.uniform(size=(3, 4))
    w, pw = rng.uniform(size=(3, 1)), rng.uniform(0.5, 3, 4)
    results = []
    for lib in (pyrt, torch):
        x = lib.from_numpy(z).requires_grad_(True)
        loss = lib.nn.BCEWithLogitsLoss(weight=lib.tensor(w, dtype=lib.float32),
                                        pos_weight=lib.tensor(pw, dtype=lib.float32))
        out = loss(x, lib.tensor(t, dtype=lib.float32))
        out.backward()
        results.append((out.item(), x.grad.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5, atol=1e-7)


def test_module_to_takes_torchs_forms():
    # model.to(device=device, memory_format=torch.channels_last), model.to(x), model.to(dtype)
    model = pyrt.nn.Conv2d(2, 3, 3)
    weight = model.weight
    for args, kwargs in [((), {"memory_format": pyrt.channels_last}),
                         (("cpu",), {"non_blocking": True}), ((pyrt.float32,), {}),
                         (("cpu", pyrt.float32), {}), ((pyrt.ones(1),), {}),
                         ((), {"device": "cpu", "dtype": pyrt.float32})]:
        assert model.to(*args, **kwargs) is model
    assert model.weight is weight and model.weight.dtype == pyrt.float32


def test_module_to_errors():
    model = pyrt.nn.Linear(2, 2)
    with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
        model.to(pyrt.int64)
    with pytest.raises(NotImplementedError, match="float32 parameters only"):
        model.to(dtype=pyrt.float64)
    with pytest.raises(TypeError, match="argument 'memory_format' must be pyrt.memory_format"):
        model.to(memory_format="channels_last")
    with pytest.raises(TypeError, match="device given twice"):
        model.to("cpu", device="cpu")
    with pytest.raises(TypeError, match="at most 2 positional arguments"):
        model.to("cpu", pyrt.float32, True)
    with pytest.raises(ValueError, match="device must be 'cpu' or 'cuda'"):
        model.to("tpu")


def test_rmsprop_takes_torchs_step_options():
    # the U-Net reference trains with RMSprop(..., foreach=True)
    p = pyrt.nn.Parameter(pyrt.tensor([1.0, -2.0]))
    opt = pyrt.optim.RMSprop([p], lr=0.01, weight_decay=1e-8, momentum=0.9, foreach=True,
                             capturable=False, differentiable=False, maximize=False)
    (p * p).sum().backward()
    opt.step()
    # first step: v = 0.01 g^2, buf = g / (sqrt(v) + eps), p -= lr buf
    g = 2 * np.array([1.0, -2.0]) * (1 + 1e-8)
    want = np.array([1.0, -2.0]) - 0.01 * g / (np.sqrt(0.01 * g * g) + 1e-8)
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-6)


def test_rmsprop_option_errors():
    params = [pyrt.nn.Parameter(pyrt.ones(1))]
    with pytest.raises(ValueError, match="maximize=True is not supported"):
        pyrt.optim.RMSprop(params, maximize=True)
    with pytest.raises(ValueError, match="differentiable=True is not supported"):
        pyrt.optim.RMSprop(params, differentiable=True)
    with pytest.raises(TypeError, match="foreach must be a bool"):
        pyrt.optim.RMSprop(params, foreach="yes")
