"""Programs in the style of current PyTorch training scripts, written once and run with
`torch` bound to pyrt and, where installed, to PyTorch from the same initial weights and
batches: a WGAN-GP (a gradient penalty through grad(create_graph=True)), a MAML inner step
(a gradient of a gradient step), and a classifier trained with backend switches, compile,
AdamW and OneCycleLR, autocast and a GradScaler, then saved and loaded whole."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")


def _rings(n, seed):
    """n points on two noisy rings: the 'real' data of the GAN."""
    rng = np.random.default_rng(seed)
    angle = rng.uniform(0, 2 * np.pi, n)
    radius = rng.choice([1.0, 2.0], n) + 0.05 * rng.standard_normal(n)
    return np.stack([radius * np.cos(angle), radius * np.sin(angle)], 1).astype(np.float32)


def _same_weights(ours, theirs):
    """Copy pyrt module `ours`'s parameters into torch module `theirs` (same layout)."""
    with torch.no_grad():
        for p, q in zip(ours.parameters(), theirs.parameters()):
            q.copy_(torch.from_numpy(p.detach().numpy().copy()))


def wgan_gp(torch, steps, seed, init=None, critic_steps=2, lam=10.0):
    """The WGAN-GP training loop as its reference code writes it; `torch` is the library.
    Returns the critic losses, the penalties and the generator losses."""
    nn, autograd = torch.nn, torch.autograd
    torch.manual_seed(seed)
    critic = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                           nn.Linear(16, 1))
    gen = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    if init is not None:
        init(critic, gen)
    opt_c = torch.optim.Adam(critic.parameters(), lr=1e-3, betas=(0.5, 0.9))
    opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3, betas=(0.5, 0.9))
    rng = np.random.default_rng(seed)
    c_losses, penalties, g_losses = [], [], []
    for _ in range(steps):
        for _ in range(critic_steps):
            real = torch.from_numpy(_rings(32, int(rng.integers(1 << 30))))
            z = torch.from_numpy(rng.standard_normal((32, 4)).astype(np.float32))
            fake = gen(z).detach()
            alpha = torch.from_numpy(rng.uniform(size=(32, 1)).astype(np.float32))
            mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
            grads = autograd.grad(outputs=critic(mixed).sum(), inputs=mixed,
                                  create_graph=True, retain_graph=True)[0]
            penalty = ((grads.norm(2, dim=1) - 1) ** 2).mean()
            loss_c = critic(fake).mean() - critic(real).mean() + lam * penalty
            opt_c.zero_grad()
            loss_c.backward()
            opt_c.step()
            c_losses.append(loss_c.item())
            penalties.append(penalty.item())
        z = torch.from_numpy(rng.standard_normal((32, 4)).astype(np.float32))
        loss_g = -critic(gen(z)).mean()
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
        g_losses.append(loss_g.item())
    return np.array(c_losses), np.array(penalties), np.array(g_losses)


@needs_torch
@settings(max_examples=5, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**16))
def test_wgan_gp_follows_torch_from_the_same_weights(seed):
    ours = wgan_gp(pyrt, 4, seed)

    def same(critic, gen):
        # the weights pyrt's run started from: wgan_gp seeds, then builds them
        pyrt.manual_seed(seed)
        c = pyrt.nn.Sequential(pyrt.nn.Linear(2, 16), pyrt.nn.Tanh(), pyrt.nn.Linear(16, 16),
                               pyrt.nn.Tanh(), pyrt.nn.Linear(16, 1))
        g = pyrt.nn.Sequential(pyrt.nn.Linear(4, 16), pyrt.nn.ReLU(), pyrt.nn.Linear(16, 2))
        _same_weights(c, critic)
        _same_weights(g, gen)

    theirs = wgan_gp(torch, 4, seed, init=same)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)
    assert ours[1].max() > 1e-3  # the penalty is in play


def test_wgan_gp_penalty_pulls_the_critics_gradient_norm_to_one():
    # with only the penalty to minimise, the critic's gradient norm goes to 1 (a torch-free
    # check of the second-order gradient the penalty's backward needs)
    pyrt.manual_seed(0)
    critic = pyrt.nn.Sequential(pyrt.nn.Linear(2, 16), pyrt.nn.Tanh(), pyrt.nn.Linear(16, 1))
    opt = pyrt.optim.Adam(critic.parameters(), lr=1e-2)
    x = pyrt.from_numpy(_rings(64, 0))
    before = None
    for _ in range(150):
        x.requires_grad_(True)
        g = pyrt.autograd.grad(critic(x).sum(), x, create_graph=True)[0]
        penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()
        before = penalty.item() if before is None else before
        opt.zero_grad()
        penalty.backward()
        opt.step()
    assert penalty.item() < 0.02 * before


def maml_step(torch, seed, inner_lr=0.1):
    """One MAML meta-gradient for a 1-16-1 regression net: adapt on a support set with one
    differentiable SGD step, take the query loss of the adapted weights, and return the
    meta-gradients of the initial weights (second-order: through the inner gradient)."""
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    w1 = torch.from_numpy(rng.standard_normal((16, 1)).astype(np.float32)).requires_grad_(True)
    b1 = torch.from_numpy(rng.standard_normal(16).astype(np.float32) * 0.1).requires_grad_(True)
    w2 = torch.from_numpy(rng.standard_normal((1, 16)).astype(np.float32) * 0.3)
    w2.requires_grad_(True)
    params = [w1, b1, w2]
    amp, phase = rng.uniform(0.5, 2.0), rng.uniform(0, np.pi)
    xs = rng.uniform(-3, 3, (10, 1)).astype(np.float32)
    xq = rng.uniform(-3, 3, (10, 1)).astype(np.float32)
    ys, yq = (amp * np.sin(xs + phase)).astype(np.float32), (amp * np.sin(xq + phase)).astype(
        np.float32)

    def net(x, p):
        return torch.nn.functional.linear(torch.tanh(torch.nn.functional.linear(x, p[0], p[1])),
                                          p[2])

    support = torch.nn.functional.mse_loss(net(torch.from_numpy(xs), params),
                                           torch.from_numpy(ys))
    grads = torch.autograd.grad(support, params, create_graph=True)
    adapted = [p - inner_lr * g for p, g in zip(params, grads)]
    query = torch.nn.functional.mse_loss(net(torch.from_numpy(xq), adapted), torch.from_numpy(yq))
    query.backward()
    return [p.grad.detach().numpy().copy() for p in params], query.item()


@needs_torch
@settings(max_examples=10, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**16))
def test_maml_meta_gradient_equals_torchs(seed):
    ours, q_ours = maml_step(pyrt, seed)
    theirs, q_theirs = maml_step(torch, seed)
    np.testing.assert_allclose(q_ours, q_theirs, rtol=1e-5)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)


def test_maml_meta_gradient_is_second_order():
    # a first-order approximation (the inner gradient held constant) differs: the recorded
    # inner gradient is what carries the second-order term
    grads, _ = maml_step(pyrt, 3)
    original = pyrt.autograd.grad

    def detached_grad(*args, **kwargs):
        return tuple(g.detach() for g in original(*args, **kwargs))

    pyrt.autograd.grad = detached_grad
    try:
        first_order, _ = maml_step(pyrt, 3)
    finally:
        pyrt.autograd.grad = original
    assert max(np.abs(a - b).max() for a, b in zip(grads, first_order)) > 1e-4


def _classifier(torch):
    return torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.GELU(), torch.nn.Dropout(0.0),
                               torch.nn.Linear(32, 3))


def modern_classifier(torch, tmp_path, seed, amp=False, steps=12, init=None):
    """A classifier trained the way current scripts write it: backend switches, a compiled
    model, AdamW with OneCycleLR, autocast and a GradScaler, clipping of the unscaled
    gradients, label smoothing, then the whole model saved and loaded back. Returns the
    losses, the scales, the logits of the trained model and those of the loaded one."""
    torch.backends.cudnn.benchmark = True
    torch.set_float32_matmul_precision("high")
    torch.manual_seed(seed)
    model = _classifier(torch)
    if init is not None:
        init(model)
    model = torch.compile(model) if torch is pyrt else model
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((3, 8)).astype(np.float32) * 2
    labels = rng.integers(0, 3, 256)
    images = (centres[labels] + rng.standard_normal((256, 8)).astype(np.float32))
    data = torch.utils.data.TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))
    loader = torch.utils.data.DataLoader(data, batch_size=64, shuffle=False, drop_last=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=steps)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10)
    losses, scales = [], []
    step = 0
    while step < steps:
        for x, y in loader:
            if step == steps:
                break
            x, y = x.to("cpu", non_blocking=True), y.to("cpu", non_blocking=True)
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=amp):
                loss = torch.nn.functional.cross_entropy(model(x), y, label_smoothing=0.1)
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            scaler.step(opt)
            scaler.update()
            sched.step()
            losses.append(loss.item())
            scales.append(scaler.get_scale())
            step += 1
    model.eval()
    torch.save(model, tmp_path / f"{torch.__name__}.pt")
    loaded = torch.load(tmp_path / f"{torch.__name__}.pt", weights_only=False)
    x = torch.from_numpy(images[:16])
    with torch.no_grad():
        out, again = model(x), loaded(x)
    torch.testing.assert_close(again, out)
    return np.array(losses), scales, out.numpy(), again.numpy()


def test_modern_classifier_script_runs_and_its_saved_model_reloads(tmp_path):
    losses, scales, out, again = modern_classifier(pyrt, tmp_path, 0)
    assert losses[-1] < losses[0] - 0.2
    assert scales == [2.0 ** 10] * len(scales)  # finite gradients: no backoff, no growth yet
    np.testing.assert_array_equal(out, again)
    # pyrt's autocast computes in float32: the same run with it enabled is bitwise the same
    losses_amp, _, out_amp, _ = modern_classifier(pyrt, tmp_path, 0, amp=True)
    np.testing.assert_array_equal(losses_amp, losses)
    np.testing.assert_array_equal(out_amp, out)


@needs_torch
def test_modern_classifier_script_follows_torch(tmp_path):
    # torch's autocast would compute in bfloat16: compared with it off (pyrt's is float32)
    ours = modern_classifier(pyrt, tmp_path, 1)

    def same(model):  # the weights pyrt's run started from
        pyrt.manual_seed(1)
        _same_weights(_classifier(pyrt), model)

    theirs = modern_classifier(torch, tmp_path, 1, init=same)
    assert ours[1] == theirs[1]
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-4, atol=1e-5)
