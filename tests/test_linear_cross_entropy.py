"""F.linear_cross_entropy and nn.LinearCrossEntropyLoss against torch 2.13 and a NumPy
float64 formula: values and gradients over shapes, class indices and probabilities,
K-dimensional losses, bias, class weights, ignore_index, label smoothing and reductions;
the options accepted; and the errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import nn
from pyrt.nn import functional as F

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")
F32 = np.float32


def numpy_lce(x, w, b, target, cw, ignore_index, reduction, smoothing):
    """float64 reference: logits [N, C] from [N, in] rows; target class indices [N]."""
    z = x @ w.T + (0 if b is None else b)
    logp = z - z.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    c = z.shape[1]
    cw = np.ones(c) if cw is None else cw
    keep = target != ignore_index
    t = np.where(keep, target, 0)
    nll = -logp[np.arange(len(t)), t] * cw[t]
    smooth = -(logp * cw).sum(1) / c
    loss = ((1 - smoothing) * nll + smoothing * smooth) * keep
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / (cw[t] * keep).sum()


def case(seed, n, d, c):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(F32)
    w = rng.standard_normal((c, d)).astype(F32)
    b = rng.standard_normal(c).astype(F32)
    t = rng.integers(0, c, n)
    return x, w, b, t


def run(lib, x, w, b, t, **kw):
    xs = lib.tensor(x, requires_grad=True)
    ws = lib.tensor(w, requires_grad=True)
    bs = None if b is None else lib.tensor(b, requires_grad=True)
    cw = kw.pop("weight", None)
    loss = lib.nn.functional.linear_cross_entropy(
        xs, ws, lib.tensor(t), linear_bias=bs,
        weight=None if cw is None else lib.tensor(cw.astype(F32)), **kw)
    loss.sum().backward()
    grads = [xs.grad, ws.grad] + ([] if bs is None else [bs.grad])
    return loss.detach().numpy(), [g.numpy() for g in grads]


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(1, 6), d=st.integers(1, 5),
       c=st.integers(2, 6), reduction=st.sampled_from(["mean", "sum", "none"]),
       smoothing=st.sampled_from([0.0, 0.2]), weighted=st.booleans(), bias=st.booleans(),
       ignore=st.booleans())
def test_values_and_gradients_against_numpy_and_torch(seed, n, d, c, reduction, smoothing,
                                                      weighted, bias, ignore):
    x, w, b, t = case(seed, n, d, c)
    b = b if bias else None
    cw = np.random.default_rng(seed + 1).uniform(0.5, 2, c) if weighted else None
    ignore_index = int(t[0]) if ignore and n > 1 else None
    kw = dict(reduction=reduction, label_smoothing=smoothing, ignore_index=ignore_index,
              weight=cw)
    value, grads = run(pyrt, x, w, b, t, **dict(kw))
    ref = numpy_lce(x.astype(np.float64), w.astype(np.float64),
                    None if b is None else b.astype(np.float64), t, cw,
                    -100 if ignore_index is None else ignore_index, reduction, smoothing)
    np.testing.assert_allclose(value, ref, rtol=1e-4, atol=1e-5)
    if torch is not None:
        tvalue, tgrads = run(torch, x, w, b, t, **dict(kw))
        np.testing.assert_allclose(value, tvalue, rtol=1e-4, atol=1e-5)
        for g, tg in zip(grads, tgrads):
            np.testing.assert_allclose(g, tg, rtol=1e-4, atol=1e-5)


def test_gradient_of_input_by_central_differences():
    x, w, b, t = case(3, 4, 3, 5)
    _, (gx, _, _) = run(pyrt, x, w, b, t)
    x64, eps = x.astype(np.float64), 1e-6
    num = np.zeros_like(x64)
    for i in np.ndindex(x.shape):
        up, down = x64.copy(), x64.copy()
        up[i] += eps
        down[i] -= eps
        num[i] = (numpy_lce(up, w, b, t, None, -100, "mean", 0.0)
                  - numpy_lce(down, w, b, t, None, -100, "mean", 0.0)) / (2 * eps)
    np.testing.assert_allclose(gx, num, rtol=1e-3, atol=1e-5)


def test_same_as_linear_then_cross_entropy_on_the_fused_path():
    x, w, b, t = case(5, 8, 4, 6)
    value, _ = run(pyrt, x, w, b, t)
    ref = F.cross_entropy(F.linear(pyrt.tensor(x), pyrt.tensor(w), pyrt.tensor(b)),
                          pyrt.tensor(t))
    np.testing.assert_allclose(value, ref.numpy(), rtol=1e-6)


@needs_torch
@pytest.mark.parametrize("probabilities", [False, True])
def test_k_dimensional_loss_and_unbatched_input_as_torch(probabilities):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 5)).astype(F32)
    w = rng.standard_normal((4, 3, 5)).astype(F32)
    b = rng.standard_normal((4, 3)).astype(F32)
    if probabilities:
        t = rng.uniform(size=(2, 4, 3)).astype(F32)
        t /= t.sum(1, keepdims=True)
    else:
        t = rng.integers(0, 4, (2, 3))
    value, grads = run(pyrt, x, w, b, t, label_smoothing=0.1)
    tvalue, tgrads = run(torch, x, w, b, t, label_smoothing=0.1)
    np.testing.assert_allclose(value, tvalue, rtol=1e-5)
    for g, tg in zip(grads, tgrads):
        np.testing.assert_allclose(g, tg, rtol=1e-4, atol=1e-6)
    x1, w1, b1, t1 = case(8, 1, 5, 4)
    value, grads = run(pyrt, x1[0], w1, b1, np.array(t1[0]))
    tvalue, tgrads = run(torch, x1[0], w1, b1, np.array(t1[0]))
    np.testing.assert_allclose(value, tvalue, rtol=1e-5)


@needs_torch
def test_module_matches_torch_on_the_same_weights():
    pyrt.manual_seed(0)
    ours = nn.LinearCrossEntropyLoss(5, 4, out_features=(3,), bias=True, label_smoothing=0.1,
                                     reduction="sum")
    theirs = torch.nn.LinearCrossEntropyLoss(5, 4, out_features=(3,), bias=True,
                                             label_smoothing=0.1, reduction="sum")
    with torch.no_grad():
        theirs.linear.weight.copy_(torch.from_numpy(ours.linear.weight.detach().numpy()))
        theirs.linear.bias.copy_(torch.from_numpy(ours.linear.bias.detach().numpy()))
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((2, 5)).astype(F32), rng.integers(0, 4, (2, 3))
    mine, ref = ours(pyrt.tensor(x), pyrt.tensor(t)), theirs(torch.tensor(x), torch.tensor(t))
    mine.backward()
    ref.backward()
    np.testing.assert_allclose(mine.item(), ref.item(), rtol=1e-5)
    np.testing.assert_allclose(ours.linear.weight.grad.numpy(),
                               theirs.linear.weight.grad.numpy(), rtol=1e-4, atol=1e-6)
    assert repr(ours).splitlines()[1] == repr(theirs).splitlines()[1]


def test_options_are_accepted_and_give_the_reference_numbers():
    x, w, b, t = case(9, 6, 3, 5)
    plain, _ = run(pyrt, x, w, b, t)
    options = nn.LinearCrossEntropyOptions(batch_chunk_size=2, chunking_method=None)
    chunked, _ = run(pyrt, x, w, b, t, options=options)
    np.testing.assert_array_equal(plain, chunked)


def test_errors():
    x, w, _, t = (pyrt.tensor(a) for a in case(1, 2, 3, 4))
    lce = F.linear_cross_entropy
    with pytest.raises(RuntimeError, match="expected input with dimensionality 1 or 2, got 3"):
        lce(pyrt.zeros(1, 2, 3), w, t)
    with pytest.raises(RuntimeError, match="expected linear_weight with dimensionality at "
                                           "least 2, got 1"):
        lce(x, pyrt.zeros(3), t)
    with pytest.raises(RuntimeError, match="expected equal input and linear_weight last "
                                           "dimensions .in_features., got 3 and 2"):
        lce(x, pyrt.zeros(4, 2), t)
    with pytest.raises(RuntimeError, match=r"expected linear_bias shape \(4,\), got \(3,\)"):
        lce(x, w, t, linear_bias=pyrt.zeros(3))
    with pytest.raises(RuntimeError, match="requires batched input"):
        lce(pyrt.zeros(3), pyrt.zeros(4, 2, 3), pyrt.tensor(np.array(0)))
    with pytest.raises(RuntimeError, match="ignore_index cannot be specified when target "
                                           "contains probabilities"):
        lce(x, w, pyrt.zeros(2, 4), ignore_index=1)
    with pytest.raises(TypeError, match="linear_cross_entropy: target must be a Tensor, "
                                        "got list"):
        lce(x, w, [0, 1])
    with pytest.raises(TypeError, match="options must be a LinearCrossEntropyOptions or "
                                        "None, got dict"):
        lce(x, w, t, options={})
    with pytest.raises(ValueError, match="invalid acc_policy: 'fast'"):
        nn.LinearCrossEntropyOptions(acc_policy="fast")
    with pytest.raises(ValueError, match="invalid chunking_method: 'aspect_ratio:0'"):
        nn.LinearCrossEntropyOptions(chunking_method="aspect_ratio:0")
    with pytest.raises(ValueError, match="batch_chunk_size must be positive int or None, "
                                         "got 0"):
        nn.LinearCrossEntropyOptions(batch_chunk_size=0)
    with pytest.raises(RuntimeError, match=r"expected weight shape to be \(4,\), got \(3,\)"):
        nn.LinearCrossEntropyLoss(3, 4, weight=pyrt.ones(3))
    with pytest.raises(RuntimeError, match="expected label_smoothing to be in range"):
        nn.LinearCrossEntropyLoss(3, 4, label_smoothing=1.5)
