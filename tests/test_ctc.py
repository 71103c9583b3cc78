"""ctc_loss and nn.CTCLoss: the loss against the sum over every alignment, enumerated; the
gradient through log_softmax against finite differences; both against PyTorch where installed
(hypothesis over lengths, target layouts, blanks, reductions and zero_infinity); errors."""

import itertools

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

F32 = np.float32


def log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def enumerated_nll(lp, target, blank):
    """-log of the summed probability of every path over the frames of lp [T, C] that
    collapses (repeats merged, then blanks removed) to `target`."""
    t, c = lp.shape
    total = 0.0
    for path in itertools.product(range(c), repeat=t):
        merged = [k for i, k in enumerate(path) if i == 0 or k != path[i - 1]]
        if [k for k in merged if k != blank] == list(target):
            total += np.exp(sum(lp[i, k] for i, k in enumerate(path)))
    return -np.log(total) if total > 0 else np.inf


@settings(max_examples=40, deadline=None)
@given(t=st.integers(1, 5), c=st.integers(2, 4), n=st.integers(1, 3), blank_last=st.booleans(),
       seed=st.integers(0, 2**16))
def test_against_every_alignment(t, c, n, blank_last, seed):
    r = np.random.default_rng(seed)
    blank = c - 1 if blank_last else 0
    lp = log_softmax(r.standard_normal((t, n, c)))
    in_len = r.integers(0, t + 1, n)
    labels = [k for k in range(c) if k != blank]
    targets = [list(r.choice(labels, r.integers(0, 3))) for _ in range(n)]
    width = max(1, max(len(y) for y in targets))
    padded = np.array([y + [labels[0]] * (width - len(y)) for y in targets], np.int64)
    lengths = np.array([len(y) for y in targets])
    loss = F.ctc_loss(pyrt.tensor(lp.astype(F32)), pyrt.tensor(padded), in_len, lengths, blank,
                      "none")
    want = [enumerated_nll(lp[:in_len[i], i], targets[i], blank) for i in range(n)]
    np.testing.assert_allclose(loss.numpy(), want, rtol=1e-4, atol=1e-5)
    # the concatenated layout gives the same
    flat = pyrt.tensor(np.array([k for y in targets for k in y], np.int64))
    np.testing.assert_array_equal(
        F.ctc_loss(pyrt.tensor(lp.astype(F32)), flat, in_len, lengths, blank, "none").numpy(),
        loss.numpy())


def test_gradient_through_log_softmax_against_finite_differences():
    r = np.random.default_rng(3)
    z = r.standard_normal((6, 2, 4))
    targets, in_len, lengths = np.array([[1, 2, 2], [3, 1, 0]]), np.array([6, 4]), [3, 2]
    zt = pyrt.tensor(z.astype(F32), requires_grad=True)
    loss = F.ctc_loss(F.log_softmax(zt, 2), pyrt.tensor(targets), in_len, lengths)
    loss.backward()

    def value(v):
        return float(F.ctc_loss(pyrt.tensor(log_softmax(v).astype(F32)), pyrt.tensor(targets),
                                in_len, lengths))

    for index in np.ndindex(z.shape):
        up, down = z.copy(), z.copy()
        up[index] += 1e-3
        down[index] -= 1e-3
        numeric = (value(up) - value(down)) / 2e-3
        assert abs(zt.grad.numpy()[index] - numeric) <= 2e-3 + 1e-2 * abs(numeric), index
    assert not zt.grad.numpy()[4:, 1].any()  # frames past the second input's length


@settings(max_examples=60, deadline=None)
@given(t=st.integers(1, 12), n=st.integers(1, 4), c=st.integers(2, 7),
       reduction=st.sampled_from(["none", "sum", "mean"]), zero_infinity=st.booleans(),
       concatenated=st.booleans(), seed=st.integers(0, 2**16))
def test_against_torch(t, n, c, reduction, zero_infinity, concatenated, seed):
    if torch is None:
        pytest.skip("torch is not installed")
    r = np.random.default_rng(seed)
    blank = int(r.integers(0, c))
    lp = log_softmax(r.standard_normal((t, n, c))).astype(F32)
    in_len = r.integers(0, t + 1, n)
    lengths = r.integers(0, max(1, t // 2) + 2, n)  # some too long to align: infinite
    labels = np.array([k for k in range(c) if k != blank])
    padded = labels[r.integers(0, len(labels), (n, max(1, lengths.max())))]
    flat = np.concatenate([padded[i, :lengths[i]] for i in range(n)])
    targets = flat if concatenated else padded
    ours = pyrt.tensor(lp, requires_grad=True)
    theirs = torch.tensor(lp, requires_grad=True)
    a = F.ctc_loss(ours, pyrt.tensor(targets), in_len, lengths, blank, reduction,
                   zero_infinity)
    b = torch.nn.functional.ctc_loss(theirs, torch.tensor(targets), torch.tensor(in_len),
                                     torch.tensor(lengths), blank, reduction, zero_infinity)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4, atol=1e-4)
    if np.isfinite(b.detach().numpy()).all():
        a.sum().backward()
        b.sum().backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-4,
                                   atol=1e-4)


def test_module_unbatched_and_errors():
    r = np.random.default_rng(4)
    lp = pyrt.tensor(log_softmax(r.standard_normal((5, 3))).astype(F32), requires_grad=True)
    loss = nn.CTCLoss(blank=2)(lp, pyrt.tensor([0, 1]), 5, 2)
    assert loss.shape == ()
    np.testing.assert_allclose(float(loss), enumerated_nll(lp.detach().numpy(), [0, 1], 2) / 2,
                               rtol=1e-5)
    loss.backward()
    assert lp.grad.shape == (5, 3)
    assert repr(nn.CTCLoss(reduction="sum")) == "CTCLoss(reduction='sum')"
    x = pyrt.tensor(np.zeros((4, 1, 3), F32))
    with pytest.raises(ValueError, match=r"blank must be a class index in \[0, 3\)"):
        F.ctc_loss(x, pyrt.tensor([[1]]), [4], [1], blank=3)
    with pytest.raises(ValueError, match="other than the blank 0"):
        F.ctc_loss(x, pyrt.tensor([[0]]), [4], [1])
    with pytest.raises(RuntimeError, match="input_lengths must be in"):
        F.ctc_loss(x, pyrt.tensor([[1]]), [5], [1])
    with pytest.raises(RuntimeError, match="target lengths add up to"):
        F.ctc_loss(x, pyrt.tensor([1, 2]), [4], [1])
    with pytest.raises(ValueError, match="one integer per sample"):
        F.ctc_loss(x, pyrt.tensor([[1]]), [4, 4], [1])
    with pytest.raises(TypeError, match="float32"):
        F.ctc_loss(pyrt.tensor(np.zeros((4, 1, 3), np.int64)), pyrt.tensor([[1]]), [4], [1])
    with pytest.raises(ValueError, match="valid value for reduction"):
        nn.CTCLoss(reduction="avg")
