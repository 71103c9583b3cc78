"""Batch normalisation: pyrt.ops.batch_norm and its backward against a float64 NumPy reference
over shapes and thread counts (bitwise the same at every count), and BatchNorm1d/BatchNorm2d
against torch.nn: outputs, gradients, running statistics over several steps, evaluation mode,
the options, state_dict, and errors."""

import inspect
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.nn.functional as F
from pyrt import nn, ops

THREADS = [1, 2, 4]
F32 = np.float32


def rng(seed):
    return np.random.default_rng(seed)


def ref_batch_norm(x, weight, bias, eps):
    """(y, mean, biased var) in float64, over every dim but 1."""
    axes = (0,) + tuple(range(2, x.ndim))
    x64 = x.astype(np.float64)
    mean, var = x64.mean(axis=axes), x64.var(axis=axes)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    y = (x64 - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if weight is not None:
        y = y * weight.reshape(shape) + bias.reshape(shape)
    return y, mean, var


def ref_backward(x, dy, weight, eps):
    """(dx, dweight, dbias) in float64 of the training-mode batch norm."""
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    count = x.size // x.shape[1]
    mean, var = x64.mean(axis=axes), x64.var(axis=axes)
    invstd = 1 / np.sqrt(var + eps)
    xhat = (x64 - mean.reshape(shape)) * invstd.reshape(shape)
    db, dw = dy64.sum(axis=axes), (dy64 * xhat).sum(axis=axes)
    w = np.ones_like(mean) if weight is None else weight.astype(np.float64)
    dx = (w * invstd).reshape(shape) * (dy64 - db.reshape(shape) / count
                                         - xhat * dw.reshape(shape) / count)
    return dx, dw, db


@st.composite
def shapes(draw):
    n, c = draw(st.integers(1, 6)), draw(st.integers(1, 5))
    spatial = draw(st.sampled_from([(), (1,), (7,), (3, 4), (9, 8), (1, 1), (2, 40)]))
    if n * int(np.prod(spatial, dtype=np.int64)) < 2:
        n = 2
    return (n, c) + spatial


@settings(max_examples=150, deadline=None)
@given(shape=shapes(), affine=st.booleans(), threads=st.sampled_from(THREADS),
       seed=st.integers(0, 2**16), offset=st.sampled_from([0.0, 3.0, -1000.0]))
def test_training_forward_and_backward_match_the_reference(shape, affine, threads, seed,
                                                            offset):
    check_against_reference(shape, affine, threads, seed, offset)


# Rows of features are summed in fixed groups of rows (csrc/kernels/batch_norm.c, row_groups),
# each over spans of 4096 channels: one group, several, as many as there may be (4096 rows of
# 512: 64 groups of 64 rows), one row per group over several spans (3 x 20000, 40 x 9000), and
# fewer groups than rows where their sums would take too much memory (20 x 70000: 7 groups).
@pytest.mark.parametrize("shape", [(3, 37), (70, 16), (2, 1000), (256, 512), (5000, 17),
                                   (4096, 512), (3, 20000), (40, 9000), (20, 70000)])
@pytest.mark.parametrize("threads", THREADS)
def test_rows_of_features_match_the_reference(shape, threads):
    check_against_reference(shape, True, threads, seed=sum(shape), offset=3.0)


@pytest.mark.parametrize("row", [0, 3])
@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_rows_holding_a_non_finite_value_give_numpys_statistics(row, value):
    """Rows of features are summed in one pass about each channel's value in row 0: a
    channel holding an infinity or a NaN there, or further down, still gets the mean and
    variance of its values (inf or nan, as NumPy's), and the other channels their own."""
    x = rng(0).standard_normal((9, 5)).astype(F32)
    x[row, 2] = value
    _, mean, invstd = ops.batch_norm(x, training=True, eps=1e-5)
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(mean, x64.mean(axis=0), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(invstd, 1 / np.sqrt(x64.var(axis=0) + 1e-5), rtol=1e-4)


def check_against_reference(shape, affine, threads, seed, offset):
    r = rng(seed)
    # an offset far from zero: the variance about the mean must not cancel away
    x = (r.standard_normal(shape) + offset).astype(F32)
    c = shape[1]
    w = r.standard_normal(c).astype(F32) if affine else None
    b = r.standard_normal(c).astype(F32) if affine else None
    dy = r.standard_normal(shape).astype(F32)
    running_mean, running_var = r.standard_normal(c).astype(F32), r.random(c).astype(F32) + 0.5
    rm0, rv0 = running_mean.copy(), running_var.copy()
    with pyrt.num_threads(threads):
        y, mean, invstd = ops.batch_norm(x, running_mean, running_var, w, b, training=True,
                                         momentum=0.25, eps=1e-3)
        dx, dw, db = ops.batch_norm_backward(dy, x, w, mean, invstd, training=True)
    ry, rmean, rvar = ref_batch_norm(x, w, b, 1e-3)
    scale = 1 + abs(offset)
    np.testing.assert_allclose(y, ry, rtol=1e-4, atol=1e-4 * scale)
    np.testing.assert_allclose(mean, rmean, rtol=1e-5, atol=1e-6 * scale)
    np.testing.assert_allclose(invstd, 1 / np.sqrt(rvar + 1e-3), rtol=1e-4)
    count = x.size // c
    np.testing.assert_allclose(running_mean, 0.75 * rm0 + 0.25 * rmean, rtol=1e-5,
                               atol=1e-6 * scale)
    np.testing.assert_allclose(running_var, 0.75 * rv0 + 0.25 * rvar * count / (count - 1),
                               rtol=1e-4, atol=1e-6)
    rdx, rdw, rdb = ref_backward(x, dy, w, 1e-3)
    tol = 1e-4 * (1 + np.abs(rdx).max())
    np.testing.assert_allclose(dx, rdx, rtol=1e-3, atol=tol * scale)
    if affine:
        # the mean is a float32: its rounding (half an ulp of |mean|) moves every centred value,
        # and so dw, by up to that times sum(dy) times invstd
        rounding = np.abs(rdb) / np.sqrt(rvar + 1e-3) * np.abs(rmean) * 2**-23
        np.testing.assert_allclose(dw, rdw, rtol=1e-4, atol=1e-4 * np.sqrt(count) + rounding.max())
        np.testing.assert_allclose(db, rdb, rtol=1e-4, atol=1e-4 * np.sqrt(count))


def test_evaluation_uses_the_running_statistics():
    r = rng(1)
    x = r.standard_normal((4, 3, 5, 5)).astype(F32)
    rm, rv = r.standard_normal(3).astype(F32), r.random(3).astype(F32) + 0.5
    w, b = r.standard_normal(3).astype(F32), r.standard_normal(3).astype(F32)
    y, mean, invstd = ops.batch_norm(x, rm, rv, w, b, training=False, eps=1e-5)
    shape = (1, 3, 1, 1)
    want = ((x - rm.reshape(shape)) / np.sqrt(rv.reshape(shape) + 1e-5) * w.reshape(shape)
            + b.reshape(shape))
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    dy = r.standard_normal(x.shape).astype(F32)
    dx, dw, db = ops.batch_norm_backward(dy, x, w, mean, invstd, training=False)
    np.testing.assert_allclose(dx, dy * (w / np.sqrt(rv + 1e-5)).reshape(shape), rtol=1e-5,
                               atol=1e-6)
    xhat = (x - rm.reshape(shape)) / np.sqrt(rv.reshape(shape) + 1e-5)
    np.testing.assert_allclose(dw, (dy * xhat).sum(axis=(0, 2, 3)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db, dy.sum(axis=(0, 2, 3)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(64, 8, 28, 28), (4096, 40), (4096, 512), (40, 9000)])
def test_results_are_bitwise_identical_across_thread_counts(shape):
    r = rng(2)
    x = (r.standard_normal(shape) + 2).astype(F32)
    dy = r.standard_normal(x.shape).astype(F32)
    c = shape[1]
    w, b = r.standard_normal(c).astype(F32), r.standard_normal(c).astype(F32)
    results = []
    for threads in (1, 2, 3, 4):
        with pyrt.num_threads(threads):
            rm, rv = np.zeros(c, F32), np.ones(c, F32)
            y, mean, invstd = ops.batch_norm(x, rm, rv, w, b, training=True)
            results.append((y, mean, invstd, rm, rv,
                            *ops.batch_norm_backward(dy, x, w, mean, invstd)))
    for other in results[1:]:
        for a, b_ in zip(results[0], other):
            assert np.array_equal(a, b_)


def test_op_errors_name_the_argument():
    x = np.ones((4, 3, 2), F32)
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        ops.batch_norm(np.ones(3, F32), training=True)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        ops.batch_norm(np.ones((1, 3), F32), training=True)
    with pytest.raises(ValueError, match="running_mean and running_var are needed"):
        ops.batch_norm(x, training=False)
    with pytest.raises(ValueError, match=r"weight must have shape \(3,\)"):
        ops.batch_norm(x, weight=np.ones(2, F32), training=True)
    with pytest.raises(ValueError, match="running_var has shape"):
        ops.batch_norm(x, np.zeros(3, F32), np.ones(4, F32), training=True)
    with pytest.raises(TypeError, match="x must have dtype float32"):
        ops.batch_norm(x.astype(np.float64), training=True)
    with pytest.raises(ValueError, match="eps must be a non-negative number"):
        ops.batch_norm(x, training=True, eps=-1.0)
    with pytest.raises(TypeError, match="training must be a bool"):
        ops.batch_norm(x, training="yes")
    with pytest.raises(ValueError, match="running_mean must be C-contiguous"):
        ops.batch_norm(x, np.zeros(6, F32)[::2], np.ones(3, F32), training=True)
    with pytest.raises(ValueError, match=r"grad_output must have shape \(4, 3, 2\)"):
        ops.batch_norm_backward(np.ones((4, 3), F32), x, None, np.zeros(3, F32),
                                np.ones(3, F32))


# ---- the layers against torch.nn ------------------------------------------------------------


def _to_torch(torch, module, theirs):
    with torch.no_grad():
        for name, p in module.named_parameters():
            getattr(theirs, name).copy_(torch.from_numpy(p._data.copy()))


@pytest.mark.parametrize("layer,shape", [
    ("BatchNorm1d", (16, 5)), ("BatchNorm1d", (8, 4, 7)), ("BatchNorm2d", (6, 3, 9, 8))])
@pytest.mark.parametrize("options", [
    {}, {"momentum": None}, {"affine": False}, {"track_running_stats": False},
    {"eps": 1e-2, "momentum": 0.3}, {"bias": False}])
def test_layers_match_torch_over_training_steps_and_evaluation(layer, shape, options):
    torch = pytest.importorskip("torch")
    # torch took its keyword `bias` in 2.13: before, there is no such option, nor in the repr
    has_bias = "bias" in inspect.signature(torch.nn.BatchNorm1d.__init__).parameters
    if "bias" in options and not has_bias:
        pytest.skip(f"torch {torch.__version__}'s batch norm has no `bias` option")
    pyrt.manual_seed(0)
    ours = getattr(nn, layer)(shape[1], **options)
    theirs = getattr(torch.nn, layer)(shape[1], **options)
    mine = repr(ours) if has_bias else re.sub(r", bias=(True|False)", "", repr(ours))
    assert mine == repr(theirs)
    r = rng(3)
    for p in ours.parameters():  # not the default 1 and 0, so that both show in the gradients
        p._data[...] = r.standard_normal(shape[1])
    _to_torch(torch, ours, theirs)
    for step in range(4):
        x = (r.standard_normal(shape) * (step + 1) + step).astype(F32)
        g = r.standard_normal(shape).astype(F32)
        xp, xt = pyrt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        y, yt = ours(xp), theirs(xt)
        np.testing.assert_allclose(y._data, yt.detach().numpy(), rtol=1e-4, atol=1e-4)
        y.backward(pyrt.tensor(g))
        yt.backward(torch.from_numpy(g))
        np.testing.assert_allclose(xp.grad._data, xt.grad.numpy(), rtol=1e-3, atol=1e-4)
        for (name, p), tp in zip(ours.named_parameters(), theirs.parameters()):
            np.testing.assert_allclose(p.grad._data, tp.grad.numpy(), rtol=1e-4, atol=1e-4,
                                       err_msg=name)
            p.grad = None
            tp.grad = None
        for name, buf in ours.named_buffers():
            np.testing.assert_allclose(buf._data, getattr(theirs, name).numpy(), rtol=1e-5,
                                       atol=1e-6, err_msg=name)
    ours.eval()
    theirs.eval()
    x = r.standard_normal(shape).astype(F32)
    xp, xt = pyrt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, yt = ours(xp), theirs(xt)
    np.testing.assert_allclose(y._data, yt.detach().numpy(), rtol=1e-4, atol=1e-4)
    y.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(xp.grad._data, xt.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_state_dict_round_trip_and_torch_keys():
    torch = pytest.importorskip("torch")
    ours = nn.BatchNorm2d(3)
    ours(pyrt.randn(4, 3, 5, 5))
    state = ours.state_dict()  # arrays, as pyrt's state_dict gives them
    assert state["num_batches_tracked"].dtype == np.int64 and state["num_batches_tracked"] == 1
    theirs = torch.nn.BatchNorm2d(3)
    theirs.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()})
    again = nn.BatchNorm2d(3)
    again.load_state_dict(state)
    for name, buf in again.named_buffers():
        assert np.array_equal(buf._data, getattr(ours, name)._data)
        assert np.array_equal(buf._data, getattr(theirs, name).numpy())


def test_in_a_cnn_the_gradients_reach_every_parameter():
    pyrt.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.Flatten(), nn.Linear(4 * 6 * 6, 3), nn.BatchNorm1d(3))
    loss = nn.CrossEntropyLoss()(model(pyrt.randn(5, 1, 6, 6)), pyrt.tensor([0, 1, 2, 1, 0]))
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and np.isfinite(p.grad._data).all(), name


def test_layer_errors_as_torch():
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(3)(pyrt.randn(2, 3, 4))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(pyrt.randn(2, 3, 4, 4))
    with pytest.raises(ValueError, match="input has 2 channels"):
        nn.BatchNorm2d(3)(pyrt.randn(2, 2, 4, 4))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        nn.BatchNorm1d(3)(pyrt.randn(1, 3))
    with pytest.raises(ValueError, match="num_features must be a non-negative integer"):
        nn.BatchNorm2d(-1)
    with pytest.raises(TypeError, match="batch_norm: input must be a Tensor"):
        F.batch_norm(np.ones((2, 3), F32), None, None, training=True)
    # evaluation of a single sample is fine: the running statistics normalise it
    layer = nn.BatchNorm1d(3).eval()
    assert layer(pyrt.randn(1, 3)).shape == (1, 3)
