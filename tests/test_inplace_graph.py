"""In-place ops on tensors with history, recorded as PyTorch records them: sequences of them
against the same ops written out of place (the reference everywhere) and against PyTorch where
installed; a ResNet block (out += identity, ReLU(inplace=True)) against torch's; and the
refusals: a leaf that requires grad, and a tensor a recorded op has already read."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt

try:
    import torch
except ImportError:
    torch = None

F32 = np.float32
SHAPE = (3, 4)


def arrays(seed):
    r = np.random.default_rng(seed)
    return [r.standard_normal(SHAPE).astype(F32) for _ in range(4)]


# each step: (in-place form, out-of-place form) on the running tensor h, the constant c, the
# weight w (requires grad) and a mask; the same lambdas run on pyrt's and torch's tensors
STEPS = {
    "add_ c": (lambda h, c, w, m: h.add_(c), lambda h, c, w, m: h + c),
    "sub_ w alpha": (lambda h, c, w, m: h.sub_(w, alpha=0.5), lambda h, c, w, m: h - w * 0.5),
    "mul_ w": (lambda h, c, w, m: h.mul_(w), lambda h, c, w, m: h * w),
    "mul_ 2": (lambda h, c, w, m: h.mul_(2.0), lambda h, c, w, m: h * 2.0),
    "div_ 3": (lambda h, c, w, m: h.div_(3.0), lambda h, c, w, m: h / 3.0),
    "+= w": (lambda h, c, w, m: h.__iadd__(w), lambda h, c, w, m: h + w),
    "*= c": (lambda h, c, w, m: h.__imul__(c), lambda h, c, w, m: h * c),
    "clamp_": (lambda h, c, w, m: h.clamp_(-1.0, 1.5), lambda h, c, w, m: h.clamp(-1.0, 1.5)),
    "tanh_": (lambda h, c, w, m: h.tanh_(), lambda h, c, w, m: h.tanh()),
    "sigmoid_": (lambda h, c, w, m: h.sigmoid_(), lambda h, c, w, m: h.sigmoid()),
    "masked_fill_": (lambda h, c, w, m: h.masked_fill_(m, 0.25),
                     lambda h, c, w, m: h.masked_fill(m, 0.25)),
}


def _setitem(h, value):
    h[1:, :2] = value
    return h


def _set_out_of_place(lib, h, value):
    keep = np.ones(SHAPE, F32)
    keep[1:, :2] = 0.0
    return h * lib.tensor(keep) + _placed(lib, value)


def _placed(lib, value):
    """value at [1:, :2] of a zero tensor, differentiably: a product with a selector."""
    # rows 1, 2 and columns 0, 1: select = E_rows @ value @ E_cols
    rows = lib.tensor(np.eye(3, dtype=F32)[:, 1:])  # [3, 2]
    cols = lib.tensor(np.eye(4, dtype=F32)[:2])  # [2, 4]
    return rows @ value @ cols


def run(lib, names, seed, in_place):
    x, c, w, m = arrays(seed)
    leaf = lib.tensor(x, requires_grad=True)
    weight = lib.tensor(w, requires_grad=True)
    constant = lib.tensor(c)
    mask = lib.tensor(m > 0.5)
    h = leaf * 1.5
    for name in names:
        if name == "setitem w":
            value = weight[:2, :2] * 1.0
            h = _setitem(h, value) if in_place else _set_out_of_place(lib, h, value)
            continue
        form = STEPS[name][0 if in_place else 1]
        result = form(h, constant, weight, mask)
        if in_place:
            assert result is h
        h = result
    g = np.random.default_rng(seed + 1).standard_normal(SHAPE).astype(F32)
    (h * lib.tensor(g)).sum().backward()
    return [np.asarray(h.detach().numpy()), np.asarray(leaf.grad.numpy()),
            np.asarray(weight.grad.numpy()) if weight.grad is not None else np.zeros(SHAPE, F32)]


NAMES = sorted(STEPS) + ["setitem w"]


@settings(max_examples=60, deadline=None)
@given(names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=5),
       seed=st.integers(0, 2**16))
def test_sequences_of_in_place_ops_against_the_out_of_place_ones(names, seed):
    ours = run(pyrt, names, seed, True)
    reference = run(pyrt, names, seed, False)
    for a, b in zip(ours, reference):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=5),
       seed=st.integers(0, 2**16))
def test_sequences_of_in_place_ops_against_torch(names, seed):
    if torch is None:
        pytest.skip("torch is not installed")
    try:
        theirs = run(torch, names, seed, True)
    except RuntimeError as error:  # PyTorch refuses an op whose saved value was overwritten
        assert "modified by an inplace operation" in str(error)
        return
    for a, b in zip(run(pyrt, names, seed, True), theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_a_resnet_block_with_out_plus_identity():
    """torchvision's BasicBlock: conv, batch norm, ReLU(inplace=True), conv, batch norm,
    out += identity, ReLU(inplace=True): outputs and every gradient as PyTorch's."""
    if torch is None:
        pytest.skip("torch is not installed")

    def block(lib):
        class Block(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = lib.nn.Conv2d(4, 4, 3, padding=1, bias=False)
                self.bn1 = lib.nn.BatchNorm2d(4)
                self.relu = lib.nn.ReLU(inplace=True)
                self.conv2 = lib.nn.Conv2d(4, 4, 3, padding=1, bias=False)
                self.bn2 = lib.nn.BatchNorm2d(4)

            def forward(self, x):
                identity = x
                out = self.relu(self.bn1(self.conv1(x)))
                out = self.bn2(self.conv2(out))
                out += identity
                return self.relu(out)

        return Block()

    torch.manual_seed(0)
    theirs = block(torch)
    ours = block(pyrt)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(5).standard_normal((2, 4, 6, 6)).astype(F32)
    xp, xt = pyrt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yp, yt = ours(xp), theirs(xt)
    g = np.random.default_rng(6).standard_normal(yt.shape).astype(F32)
    yp.backward(pyrt.tensor(g))
    yt.backward(torch.tensor(g))
    np.testing.assert_allclose(yp.detach().numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(xp.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-4)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-4,
                                   err_msg=name)


def test_refusals_and_what_stays_allowed():
    w = pyrt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w.add_(1.0)
    h = w * 2.0
    kept = h.exp()  # reads h
    with pytest.raises(RuntimeError, match="already read is not supported"):
        h.mul_(3.0)
    np.testing.assert_array_equal(h.detach().numpy(), [2.0, 4.0])  # nothing written
    kept.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2.0 * np.exp([2.0, 4.0]), rtol=1e-6)
    # after a write, the tensor's new history may take further writes and be read
    h2 = w * 1.0
    h2.add_(1.0)
    h2.mul_(h2.detach())
    assert h2.requires_grad
    # an alias made with detach() before the write keeps the old values
    h3 = w * 1.0
    alias = h3.detach()
    h3.add_(10.0)
    np.testing.assert_array_equal(alias.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(h3.detach().numpy(), [11.0, 12.0])
