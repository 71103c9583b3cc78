"""Tensor.data as torch's: a tensor outside autograd sharing the tensor's memory, which the
older PyTorch idioms write through (weight initialisation, clipping, hand-written SGD), and
`t.data = other`, which makes t share other's memory. Checked against NumPy's arithmetic on
the same values and against torch running the same idioms."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import nn

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")


def test_data_is_a_detached_tensor_sharing_memory():
    p = nn.Parameter(pyrt.tensor([1.0, -2.0, 3.0]))
    d = p.data
    assert type(d) is pyrt.Tensor and not isinstance(d, nn.Parameter)
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert p.requires_grad  # reading .data leaves the parameter as it was
    assert np.shares_memory(np.asarray(d), np.asarray(p.detach()))
    d[1] = 5.0
    np.testing.assert_array_equal(p.detach().numpy(), [1.0, 5.0, 3.0])
    assert not (p.data * 2).requires_grad  # ops on .data are outside the graph


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 40), seed=st.integers(0, 2**16), lr=st.floats(1e-3, 1.0))
def test_hand_written_sgd_through_data_equals_numpy(n, seed, lr):
    rng = np.random.default_rng(seed)
    w0, x = rng.standard_normal((2, n)).astype(np.float32)
    w = pyrt.tensor(w0, requires_grad=True)
    (w * pyrt.tensor(x)).sum().backward()
    w.data.add_(w.grad.data, alpha=-lr)  # the gradient of sum(w * x) is x
    expected = w0 - np.float32(lr) * x
    np.testing.assert_allclose(w.detach().numpy(), expected, rtol=1e-6, atol=1e-7)
    w.data -= 1.0  # the augmented assignment writes through .data too
    np.testing.assert_allclose(w.detach().numpy(), expected - 1, rtol=1e-6, atol=1e-6)
    assert w.grad is not None and w.requires_grad and w.is_leaf


def test_assigning_data_shares_the_assigned_tensors_memory():
    p = nn.Parameter(pyrt.zeros(2, 3))
    source = pyrt.arange(4.0)
    p.data = source  # any shape, as torch allows
    assert p.shape == (4,) and p.requires_grad and isinstance(p, nn.Parameter)
    source.add_(1)
    np.testing.assert_array_equal(p.detach().numpy(), [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(TypeError, match="data must be a Tensor, not list"):
        p.data = [1.0]
    with pytest.raises(TypeError, match="not ndarray"):
        p.data = np.zeros(4, np.float32)
    np.testing.assert_array_equal(p.detach().numpy(), [1.0, 2.0, 3.0, 4.0])


def test_optimizers_and_modules_follow_an_assigned_data():
    pyrt.manual_seed(0)
    layer = nn.Linear(3, 2)
    opt = pyrt.optim.SGD(layer.parameters(), lr=0.5)
    layer.weight.data = pyrt.ones(2, 3)
    layer.bias.data.zero_()
    x = pyrt.tensor([[1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(layer(x).detach().numpy(), [[6.0, 6.0]])
    layer(x).sum().backward()
    opt.step()
    np.testing.assert_allclose(layer.weight.detach().numpy(), 1 - 0.5 * np.array([[1, 2, 3]] * 2))
    np.testing.assert_allclose(layer.bias.detach().numpy(), [-0.5, -0.5])


def test_backward_refuses_a_value_overwritten_through_data():
    # torch would use the overwritten value silently; pyrt says the gradient would be wrong
    w = pyrt.tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()
    w.data.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def idioms(lib, model, steps=3):
    """The pre-1.0 PyTorch idioms on `model`: initialisation through .data, a hand-written
    SGD step, and weight clipping as WGAN's critic does it; the losses it saw."""
    gen = np.random.default_rng(7)
    for m in model.modules():
        if isinstance(m, lib.nn.Linear):
            m.weight.data.copy_(lib.tensor(gen.standard_normal(tuple(m.weight.shape))
                                           .astype(np.float32)))
            m.weight.data.mul_(0.5)
            m.bias.data.fill_(0.1)
    x = lib.tensor(gen.standard_normal((8, 4)).astype(np.float32))
    losses = []
    for _ in range(steps):
        for p in model.parameters():
            p.grad = None
        loss = model(x).pow(2).mean()
        loss.backward()
        for p in model.parameters():
            p.data.add_(p.grad.data, alpha=-0.1)
            p.data.clamp_(-0.4, 0.4)
        losses.append(float(loss.data))
    return losses, [p.data.numpy().copy() for p in model.parameters()]


@needs_torch
def test_old_pytorch_idioms_through_data_match_torch():
    def build(lib):
        return lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.Tanh(), lib.nn.Linear(5, 1))

    ours, our_params = idioms(pyrt, build(pyrt))
    theirs, their_params = idioms(torch, build(torch))
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)
    for a, b in zip(our_params, their_params):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert max(np.abs(a).max() for a in our_params) <= 0.4
