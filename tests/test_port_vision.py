"""Vision programs in the style of PyTorch's examples (an MNIST CNN, a small ResNet with
augmentation, a DCGAN, a convolutional VAE), cut down to a few steps on synthetic data, and
pyrt.Generator, which their seeded augmentation and loaders need."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.nn as nn
import pyrt.nn.functional as F

try:
    import torch
except ImportError:
    torch = None

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)
shapes = st.lists(st.integers(0, 5), min_size=1, max_size=3).map(tuple)


# ---- pyrt.Generator ---------------------------------------------------------------------------

@SETTINGS
@given(shape=shapes, seed=st.integers(0, 2**32))
def test_generator_draws_repeat_and_match_pcg64(shape, seed):
    g = pyrt.Generator().manual_seed(seed)
    ref = np.random.default_rng(seed)
    np.testing.assert_array_equal(pyrt.rand(*shape, generator=g).numpy(),
                                  ref.random(shape, dtype=np.float32))
    np.testing.assert_array_equal(pyrt.randn(shape, generator=g).numpy(),
                                  ref.standard_normal(shape, dtype=np.float32))
    np.testing.assert_array_equal(pyrt.randint(2, 9, shape, generator=g).numpy(),
                                  ref.integers(2, 9, shape, dtype=np.int64))
    np.testing.assert_array_equal(pyrt.randperm(7, generator=g).numpy(), ref.permutation(7))


def test_generator_leaves_the_global_generator_alone():
    pyrt.manual_seed(3)
    expected = pyrt.rand(4).numpy()
    pyrt.manual_seed(3)
    g = pyrt.Generator().manual_seed(3)
    pyrt.rand(10, generator=g)
    np.testing.assert_array_equal(pyrt.rand(4).numpy(), expected)
    # the default generator is pyrt.manual_seed's
    pyrt.default_generator.manual_seed(5)
    first = pyrt.rand(3, generator=pyrt.default_generator).numpy()
    pyrt.manual_seed(5)
    np.testing.assert_array_equal(pyrt.rand(3).numpy(), first)
    assert pyrt.default_generator.initial_seed() == 5


def test_generator_state_round_trip_and_seeds():
    g = pyrt.Generator()
    assert g.initial_seed() == 67280421310721 and g.device == pyrt.device("cpu")
    assert g.manual_seed(11) is g and g.initial_seed() == 11
    pyrt.rand(3, generator=g)
    state = g.get_state()
    a = pyrt.randn(5, generator=g).numpy()
    other = pyrt.Generator().set_state(state)
    np.testing.assert_array_equal(pyrt.randn(5, generator=other).numpy(), a)
    assert other.initial_seed() == 11
    s = g.seed()
    assert g.initial_seed() == s
    # a generator's state and pyrt's are the same layout
    pyrt.set_rng_state(state)
    np.testing.assert_array_equal(pyrt.randn(5).numpy(), a)


def test_generator_errors():
    g = pyrt.Generator()
    with pytest.raises(TypeError, match="rand\\(\\): argument 'generator' must be a pyrt"):
        pyrt.rand(2, generator=np.random.default_rng(0))
    with pytest.raises(TypeError, match="randperm\\(\\): argument 'generator'"):
        pyrt.randperm(3, generator=1)
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        g.manual_seed(-1)
    with pytest.raises(TypeError, match="set_state\\(\\): new_state must be a uint8"):
        g.set_state(pyrt.zeros(40))


def test_dataloader_and_random_split_take_a_generator():
    ds = pyrt.utils.data.TensorDataset(pyrt.arange(20))

    def order(seed):
        loader = pyrt.utils.data.DataLoader(ds, batch_size=5, shuffle=True,
                                            generator=pyrt.Generator().manual_seed(seed))
        return [int(v) for (b,) in loader for v in b]

    assert order(1) == order(1) != order(2)
    assert sorted(order(1)) == list(range(20))
    parts = pyrt.utils.data.random_split(range(10), [4, 6],
                                         generator=pyrt.Generator().manual_seed(0))
    assert list(parts[0].indices) == np.random.default_rng(0).permutation(10)[:4].tolist()


@pytest.mark.skipif(torch is None, reason="PyTorch not installed")
def test_generator_signatures_match_torch():
    for lib in (torch, pyrt):
        g = lib.Generator().manual_seed(0)
        assert g.initial_seed() == 0
        assert tuple(lib.rand(2, 3, generator=g).shape) == (2, 3)
        assert tuple(lib.randn((4,), generator=g).shape) == (4,)
        assert lib.randint(0, 5, (3,), generator=g).dtype == lib.int64
        assert sorted(lib.randperm(6, generator=g).tolist()) == list(range(6))


# ---- the programs, cut down --------------------------------------------------------------------

def _blobs(n, shape, seed, classes=10):
    rng = np.random.default_rng(seed)
    protos = rng.standard_normal((classes, *shape)).astype(np.float32)
    y = rng.integers(0, classes, n)
    x = protos[y] + 0.5 * rng.standard_normal((n, *shape)).astype(np.float32)
    return pyrt.from_numpy(x), pyrt.from_numpy(y)


def test_mnist_example_trains_and_round_trips_state_dict(tmp_path):
    pyrt.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.25),
                          nn.Flatten(), nn.Linear(4 * 5 * 5, 10), nn.LogSoftmax(dim=1))
    x, y = _blobs(64, (1, 12, 12), 0)
    loader = pyrt.utils.data.DataLoader(pyrt.utils.data.TensorDataset(x, y), batch_size=16,
                                        shuffle=True, generator=pyrt.Generator().manual_seed(0))
    optimizer = pyrt.optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = pyrt.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)

    def evaluate(m):
        m.eval()
        with pyrt.no_grad():
            out = m(x)
            loss = F.nll_loss(out, y, reduction="sum").item() / len(x)
            correct = out.argmax(dim=1, keepdim=True).eq(y.view(-1, 1)).sum().item()
        return loss, correct

    before = evaluate(model)[0]
    for _ in range(3):
        model.train()
        for data, target in loader:
            optimizer.zero_grad()
            F.nll_loss(model(data), target).backward()
            optimizer.step()
        scheduler.step()
    loss, correct = evaluate(model)
    assert loss < 0.8 * before and correct > 32
    assert scheduler.get_last_lr()[0] == pytest.approx(0.7 ** 3)
    pyrt.save(model.state_dict(), tmp_path / "mnist_cnn.pt")
    copy = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.25),
                         nn.Flatten(), nn.Linear(4 * 5 * 5, 10), nn.LogSoftmax(dim=1))
    copy.load_state_dict(pyrt.load(tmp_path / "mnist_cnn.pt"))
    assert evaluate(copy) == (loss, correct)


class _Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        return F.relu(out)


def _augment(x, gen, padding=2):
    n, _, h, w = x.shape
    flip = pyrt.rand(n, generator=gen) < 0.5
    x = pyrt.where(flip[:, None, None, None], x.flip(3), x)
    padded = F.pad(x, (padding,) * 4, mode="reflect")
    i, j = pyrt.randint(0, 2 * padding + 1, (2,), generator=gen).tolist()
    return padded[:, :, i:i + h, j:j + w].contiguous()


def test_resnet_example_with_augmentation_trains():
    pyrt.manual_seed(0)
    gen = pyrt.Generator().manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
                          nn.ReLU(), _Block(8, 8, 1), _Block(8, 16, 2),
                          nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(16, 4))
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
    x, y = _blobs(64, (3, 8, 8), 1, classes=4)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = pyrt.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4,
                               nesterov=True)
    scheduler = pyrt.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=24)
    losses = []
    for step in range(24):
        idx = pyrt.arange(step * 16, step * 16 + 16) % 64
        optimizer.zero_grad(set_to_none=True)
        loss = criterion(model(_augment(x[idx], gen)), y[idx])
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    assert np.mean(losses[-4:]) < np.mean(losses[:4])
    assert model[1].num_batches_tracked.item() == 24
    model.eval()
    with pyrt.inference_mode():
        assert (model(x).argmax(1) == y).float().mean().item() > 0.5


def test_dcgan_example_trains_both_players():
    pyrt.manual_seed(999)
    nz = 8
    net_g = nn.Sequential(nn.ConvTranspose2d(nz, 16, 4, 1, 0, bias=False), nn.BatchNorm2d(16),
                          nn.ReLU(True), nn.ConvTranspose2d(16, 1, 4, 2, 1, bias=False),
                          nn.Tanh())
    net_d = nn.Sequential(nn.Conv2d(1, 8, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
                          nn.Conv2d(8, 1, 4, 1, 0, bias=False), nn.Sigmoid())
    criterion = nn.BCELoss()
    opt_d = pyrt.optim.Adam(net_d.parameters(), lr=2e-3, betas=(0.5, 0.999))
    opt_g = pyrt.optim.Adam(net_g.parameters(), lr=2e-3, betas=(0.5, 0.999))
    gen = pyrt.Generator().manual_seed(1)
    yy, xx = np.mgrid[0:8, 0:8]
    real = pyrt.from_numpy((np.exp(-((xx - 3.5) ** 2 + (yy - 3.5) ** 2) / 4.0) * 2 - 1)
                           .astype(np.float32)[None, None].repeat(16, 0))
    d_real = []
    for _ in range(10):
        net_d.zero_grad()
        label = pyrt.full((16,), 1.0, dtype=pyrt.float)
        output = net_d(real).view(-1)
        criterion(output, label).backward()
        d_real.append(output.mean().item())
        fake = net_g(pyrt.randn(16, nz, 1, 1, generator=gen))
        label.fill_(0.0)
        criterion(net_d(fake.detach()).view(-1), label).backward()
        opt_d.step()
        net_g.zero_grad()
        label.fill_(1.0)
        err_g = criterion(net_d(fake).view(-1), label)
        err_g.backward()
        assert net_g[0].weight.grad is not None
        opt_g.step()
    assert d_real[-1] > d_real[0] + 0.05  # the discriminator learns the real images
    with pyrt.no_grad():
        assert tuple(net_g(pyrt.randn(4, nz, 1, 1)).shape) == (4, 1, 8, 8)


def test_conv_vae_example_loss_goes_down():
    pyrt.manual_seed(1)
    enc = nn.Sequential(nn.Conv2d(1, 8, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten())
    fc_mu, fc_logvar = nn.Linear(8 * 4 * 4, 4), nn.Linear(8 * 4 * 4, 4)
    dec = nn.Sequential(nn.Linear(4, 8 * 4 * 4), nn.ReLU(), nn.Unflatten(1, (8, 4, 4)),
                        nn.ConvTranspose2d(8, 1, 3, stride=2, padding=1, output_padding=1))
    params = [p for m in (enc, fc_mu, fc_logvar, dec) for p in m.parameters()]
    optimizer = pyrt.optim.Adam(params, lr=3e-3)
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:8, 0:8]
    centres = rng.uniform(2, 6, (2, 32, 1, 1))
    x = pyrt.from_numpy(np.exp(-((xx - centres[0]) ** 2 + (yy - centres[1]) ** 2) / 3.0)
                        .astype(np.float32)[:, None])
    losses = []
    for _ in range(25):
        optimizer.zero_grad()
        h = enc(x)
        mu, logvar = fc_mu(h), fc_logvar(h)
        z = mu + pyrt.randn_like(mu) * pyrt.exp(0.5 * logvar)
        recon = pyrt.sigmoid(dec(z))
        bce = F.binary_cross_entropy(recon.view(-1, 64), x.view(-1, 64), reduction="sum")
        kld = -0.5 * pyrt.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = bce + kld
        loss.backward()
        optimizer.step()
        losses.append(loss.item() / len(x))
    assert kld.item() >= 0
    assert np.mean(losses[-5:]) < 0.9 * np.mean(losses[:5])
