"""cross_entropy and nll_loss with PyTorch's arguments (class weights, ignore_index,
label_smoothing, class probabilities, [C] and [N, C, d1, ...] inputs): values and gradients
against a float64 NumPy reference written from PyTorch's definitions, against finite
differences of it, and against PyTorch where installed, over many shapes and thread counts."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.nn as nn
import pyrt.nn.functional as F

F32 = np.float32
IGNORE = -100


def rng(seed):
    return np.random.default_rng(seed)


# ---- the reference: PyTorch's definitions, in float64 ----------------------------------------


def ref_rows(x, t):
    """(x, t) as rows [M, C] (t: [M] indices, or [M, C] probabilities)."""
    if x.ndim == 1:
        return x[None], t.reshape(1, -1) if t.shape == x.shape else t.reshape(1)
    if x.ndim == 2:
        return x, t
    c = x.shape[1]
    rows = np.moveaxis(x, 1, -1).reshape(-1, c)
    if t.shape == x.shape:
        return rows, np.moveaxis(t, 1, -1).reshape(-1, c)
    return rows, t.reshape(-1)


def ref_loss(x, t, weight=None, ignore_index=IGNORE, reduction="mean", smoothing=0.0,
             logits=True):
    """The loss, in float64, from the definitions row by row."""
    x, t = np.asarray(x, np.float64), np.asarray(t)
    shape = x.shape[:1] + x.shape[2:] if x.ndim > 1 else ()
    rows, target = ref_rows(x, t)
    m, c = rows.shape
    w = np.ones(c) if weight is None else np.asarray(weight, np.float64)
    if logits:
        shifted = rows - rows.max(1, keepdims=True)
        lp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    else:
        lp = rows
    losses = np.zeros(m)
    if target.ndim == 2:  # probabilities
        tt = target * (1 - smoothing) + smoothing / c
        for n in range(m):
            losses[n] = -(w * tt[n] * lp[n]).sum()
        total = m
    else:
        total = 0.0
        for n in range(m):
            y = int(target[n])
            if y == ignore_index:
                continue
            losses[n] = (1 - smoothing) * -w[y] * lp[n, y] + smoothing / c * -(w * lp[n]).sum()
            total += w[y]
    if reduction == "none":
        return losses.reshape(shape)
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / total if total else np.nan


def numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


# ---- cases -------------------------------------------------------------------------------------


@st.composite
def cases(draw):
    """A loss call: input shape, classes, target kind, weight, ignore_index, smoothing,
    reduction, seed."""
    c = draw(st.integers(1, 7))
    kind = draw(st.sampled_from(["2d", "1d", "kdim"]))
    n = draw(st.integers(0, 6)) if kind != "1d" else None
    extra = draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)) if kind == "kdim" else []
    shape = (c,) if kind == "1d" else (n, c, *extra)
    probabilities = draw(st.booleans())
    return dict(shape=shape, probabilities=probabilities,
                weighted=draw(st.booleans()),
                # (class probabilities take no ignore_index)
                ignore=IGNORE if probabilities else draw(st.sampled_from([IGNORE, 0, c - 1,
                                                                          c + 5])),
                ignored_share=draw(st.sampled_from([0.0, 0.3, 1.0])),
                smoothing=draw(st.sampled_from([0.0, 0.1, 1.0])),
                reduction=draw(st.sampled_from(["mean", "sum", "none"])),
                threads=draw(st.integers(1, 3)), seed=draw(st.integers(0, 2**16)))


def make(case):
    r = rng(case["seed"])
    shape = case["shape"]
    c = shape[0] if len(shape) == 1 else shape[1]
    x = (r.standard_normal(shape) * 3).astype(F32)
    positions = shape[:1] + shape[2:] if len(shape) > 1 else ()
    if case["probabilities"]:
        t = r.random(shape).astype(F32)
    else:
        t = r.integers(0, c, positions).astype(np.int64)
        t = np.where(r.random(positions) < case["ignored_share"], case["ignore"], t)
    w = (r.random(c) + 0.5).astype(F32) if case["weighted"] else None
    return x, np.asarray(t), w


@settings(max_examples=150, deadline=None)
@given(cases())
def test_cross_entropy_against_the_definition(case):
    x, t, w = make(case)
    kwargs = dict(ignore_index=case["ignore"], reduction=case["reduction"],
                  label_smoothing=case["smoothing"])
    with pyrt.num_threads(case["threads"]):
        xt = pyrt.tensor(x, requires_grad=True)
        loss = F.cross_entropy(xt, pyrt.tensor(t), None if w is None else pyrt.tensor(w),
                               **kwargs)
        ref = ref_loss(x, t, w, case["ignore"], case["reduction"], case["smoothing"])
        np.testing.assert_allclose(loss.detach().numpy(), ref, rtol=2e-5, atol=2e-5)
        g = rng(case["seed"] + 1).standard_normal(np.shape(ref))
        loss.backward(pyrt.tensor(g.astype(F32)))
        if np.isnan(ref).any():  # an empty mean (no row counts): zero gradients, as PyTorch
            assert not xt.grad.numpy().any()
            return
        num = numeric_grad(lambda v: (ref_loss(v, t, w, case["ignore"], case["reduction"],
                                               case["smoothing"]) * g).sum(),
                           x.astype(np.float64))
        np.testing.assert_allclose(xt.grad.numpy(), num, rtol=1e-4, atol=1e-4)


@settings(max_examples=100, deadline=None)
@given(cases())
def test_nll_loss_against_the_definition(case):
    case = dict(case, probabilities=False)
    x, t, w = make(case)
    with pyrt.num_threads(case["threads"]):
        xt = pyrt.tensor(x, requires_grad=True)
        loss = F.nll_loss(xt, t, w, ignore_index=case["ignore"], reduction=case["reduction"])
        ref = ref_loss(x, t, w, case["ignore"], case["reduction"], logits=False)
        np.testing.assert_allclose(loss.detach().numpy(), ref, rtol=2e-5, atol=2e-5)
        loss.sum().backward()
        if np.isnan(ref).any():
            assert not xt.grad.numpy().any()
            return
        num = numeric_grad(lambda v: ref_loss(v, t, w, case["ignore"], case["reduction"],
                                              logits=False).sum(), x.astype(np.float64))
        np.testing.assert_allclose(xt.grad.numpy(), num, rtol=1e-4, atol=1e-4)


@settings(max_examples=80, deadline=None)
@given(cases())
def test_against_torch(case):
    torch = pytest.importorskip("torch")
    x, t, w = make(case)
    kwargs = dict(ignore_index=case["ignore"], reduction=case["reduction"],
                  label_smoothing=case["smoothing"])
    xt = pyrt.tensor(x, requires_grad=True)
    tt = pyrt.tensor(t, requires_grad=case["probabilities"])
    loss = F.cross_entropy(xt, tt, None if w is None else pyrt.tensor(w), **kwargs)
    xr = torch.tensor(x, requires_grad=True)
    tr = torch.tensor(t, requires_grad=case["probabilities"])
    ref = torch.nn.functional.cross_entropy(xr, tr, None if w is None else torch.tensor(w),
                                            **kwargs)
    np.testing.assert_allclose(loss.detach().numpy(), ref.detach().numpy(), rtol=1e-5,
                               atol=1e-5)
    if loss.numel() == 0:
        return
    loss.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), xr.grad.numpy(), rtol=1e-4, atol=1e-5)
    if case["probabilities"]:
        np.testing.assert_allclose(tt.grad.numpy(), tr.grad.numpy(), rtol=1e-4, atol=1e-5)
    if not case["probabilities"]:
        xt.grad = None
        xr.grad = None
        lp = F.log_softmax(xt, 0 if x.ndim == 1 else 1)
        nll = F.nll_loss(lp, t, None if w is None else pyrt.tensor(w),
                         ignore_index=case["ignore"], reduction=case["reduction"])
        ref = torch.nn.functional.nll_loss(torch.log_softmax(xr, 0 if x.ndim == 1 else 1),
                                           torch.tensor(t),
                                           None if w is None else torch.tensor(w),
                                           ignore_index=case["ignore"],
                                           reduction=case["reduction"])
        np.testing.assert_allclose(nll.detach().numpy(), ref.detach().numpy(), rtol=1e-5,
                                   atol=1e-5)


def test_the_fused_path_agrees_with_the_general_one():
    """A mean over [N, C] of int64 labels runs the fused kernel; a label equal to the default
    ignore_index sends it the general way; both give the loss the definition gives."""
    r = rng(5)
    x = (r.standard_normal((64, 10)) * 2).astype(F32)
    labels = r.integers(0, 10, 64)
    fused = F.cross_entropy(pyrt.tensor(x, requires_grad=True), labels)
    general = F.cross_entropy(pyrt.tensor(x), labels, reduction="sum") / 64
    np.testing.assert_allclose(fused.detach().numpy(), general.numpy(), rtol=1e-6)
    ignored = labels.copy()
    ignored[::4] = IGNORE
    xt = pyrt.tensor(x, requires_grad=True)
    loss = F.cross_entropy(xt, ignored)
    np.testing.assert_allclose(loss.detach().numpy(), ref_loss(x, ignored), rtol=1e-5)
    loss.backward()
    assert not xt.grad.numpy()[::4].any() and xt.grad.numpy()[1::4].any()
    # an ignore_index that is a class takes the general way from the start
    ignored = np.where(labels == 3, 3, labels)
    np.testing.assert_allclose(F.cross_entropy(pyrt.tensor(x), ignored, ignore_index=3).numpy(),
                               ref_loss(x, ignored, ignore_index=3), rtol=1e-5)
    # labels of another integer dtype still take the fused kernel, with the same result
    np.testing.assert_array_equal(F.cross_entropy(pyrt.tensor(x), labels.astype(np.int32)).numpy(),
                                  fused.detach().numpy())


def test_every_row_ignored():
    """A mean over no counted row is nan with zero gradients; a sum is 0."""
    for op in (F.cross_entropy, F.nll_loss):
        x = pyrt.tensor(rng(6).standard_normal((3, 4)).astype(F32), requires_grad=True)
        loss = op(x, [IGNORE] * 3)
        assert np.isnan(float(loss))
        loss.backward()
        assert x.grad.shape == (3, 4) and not x.grad.numpy().any()
        assert float(op(x, [IGNORE] * 3, reduction="sum")) == 0.0


def test_bad_arguments_name_themselves():
    x = pyrt.randn(3, 4, requires_grad=True)
    with pytest.raises(ValueError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(x, [0, 1, 2], label_smoothing=1.5)
    with pytest.raises(TypeError, match="label_smoothing must be a real number"):
        F.cross_entropy(x, [0, 1, 2], label_smoothing="0.1")
    with pytest.raises(TypeError, match="ignore_index must be an integer"):
        F.cross_entropy(x, [0, 1, 2], ignore_index=1.5)
    with pytest.raises(TypeError, match="ignore_index must be an integer"):
        nn.NLLLoss(ignore_index=True)
    with pytest.raises(ValueError, match=r"weight must hold one value for each of the 4 "
                                         r"classes, got shape \(3,\)"):
        F.cross_entropy(x, [0, 1, 2], pyrt.ones(3))
    with pytest.raises(TypeError, match="weight must be a float32 tensor"):
        F.nll_loss(x, [0, 1, 2], pyrt.tensor(np.ones(4, np.int64)))
    with pytest.raises(RuntimeError, match="not differentiable with respect to weight"):
        F.cross_entropy(x, [0, 1, 2], pyrt.ones(4, requires_grad=True))
    with pytest.raises(ValueError, match=r"target must have shape \(3, 2\)"):
        F.cross_entropy(pyrt.randn(3, 4, 2), [0, 1, 2])
    with pytest.raises(TypeError, match=r"class probabilities \(float32\) of the input's shape"):
        F.cross_entropy(x, pyrt.rand(3, 5))
    with pytest.raises(ValueError, match="ignore_index is not supported with class "
                                         "probabilities"):
        F.cross_entropy(x, pyrt.rand(3, 4), ignore_index=0)
    with pytest.raises(ValueError, match="at least one class"):
        F.cross_entropy(pyrt.randn(3, 0), [0, 1, 2])
    with pytest.raises(ValueError, match=r"got 9"):
        F.cross_entropy(pyrt.randn(2, 4, 3), [[0, 1, 9], [0, 1, 2]])
    with pytest.raises(TypeError, match="input must be a Tensor"):
        F.cross_entropy(np.zeros((3, 4), F32), [0, 1, 2], label_smoothing=0.1)


def test_modules():
    """The modules keep their settings, the weight as a buffer, and say what differs from
    the defaults."""
    w = pyrt.tensor(np.array([1.0, 2.0, 0.5], F32))
    ce = nn.CrossEntropyLoss(w, ignore_index=1, label_smoothing=0.2, reduction="sum")
    assert repr(ce) == "CrossEntropyLoss(reduction='sum', ignore_index=1, label_smoothing=0.2)"
    assert list(ce.state_dict()) == ["weight"]
    assert repr(nn.NLLLoss()) == "NLLLoss()" and nn.NLLLoss().state_dict() == {}
    with pytest.raises(ValueError, match="label_smoothing"):
        nn.CrossEntropyLoss(label_smoothing=-0.1)
    x = rng(7).standard_normal((5, 3)).astype(F32)
    t = np.array([0, 1, 2, 1, 0])
    np.testing.assert_allclose(ce(pyrt.tensor(x), t).numpy(),
                               ref_loss(x, t, w.numpy(), 1, "sum", 0.2), rtol=1e-5)
    lp = F.log_softmax(pyrt.tensor(x), 1)
    np.testing.assert_allclose(nn.NLLLoss(w, ignore_index=1)(lp, t).numpy(),
                               ref_loss(x, t, w.numpy(), 1), rtol=1e-5)
