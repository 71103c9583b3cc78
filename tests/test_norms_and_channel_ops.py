"""RMSNorm and F.rms_norm, channel dropout (Dropout1d/2d/3d and F.dropout1d/2d/3d) and the 1-d
adaptive pools against a NumPy reference and, where installed, PyTorch: values, gradients
(against finite differences and torch's), modules' parameters and reprs, and torch's errors
and warnings."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.nn as nn
import pyrt.nn.functional as F


def _rng(seed=0):
    return np.random.default_rng(seed)


# ---- RMSNorm -------------------------------------------------------------------------------

def _rms_reference(x, dims, weight, eps):
    axes = tuple(range(-dims, 0))
    x64 = x.astype(np.float64)
    y = x64 / np.sqrt((x64 * x64).mean(axis=axes, keepdims=True) + eps)
    return y if weight is None else y * weight


@settings(max_examples=60, deadline=None)
@given(shape=st.sampled_from([(5,), (3, 7), (2, 3, 8), (4, 2, 3, 5)]), dims=st.integers(1, 2),
       affine=st.booleans(), eps=st.sampled_from([None, 1e-6, 0.1]), seed=st.integers(0, 999))
def test_rms_norm_matches_its_formula(shape, dims, affine, eps, seed):
    dims = min(dims, len(shape))
    rng = _rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(shape[-dims:]).astype(np.float32) if affine else None
    got = F.rms_norm(pyrt.tensor(x), shape[-dims:], None if w is None else pyrt.tensor(w), eps)
    want = _rms_reference(x, dims, w, np.finfo(np.float32).eps if eps is None else eps)
    np.testing.assert_allclose(got.numpy(), want, rtol=2e-6, atol=2e-6)


def test_rms_norm_gradients_match_finite_differences():
    rng = _rng(1)
    x0 = rng.standard_normal((3, 4)).astype(np.float64)
    w0 = rng.standard_normal(4).astype(np.float64)
    g = rng.standard_normal((3, 4))
    x = pyrt.tensor(x0.astype(np.float32), requires_grad=True)
    w = pyrt.tensor(w0.astype(np.float32), requires_grad=True)
    (F.rms_norm(x, 4, w, eps=1e-3) * pyrt.tensor(g.astype(np.float32))).sum().backward()

    def loss(xv, wv):
        return float((_rms_reference(xv, 1, wv, 1e-3) * g).sum())

    h = 1e-6
    for array, grad, other in ((x0, x.grad, w0), (w0, w.grad, x0)):
        fd = np.zeros_like(array)
        for i in np.ndindex(array.shape):
            up, down = array.copy(), array.copy()
            up[i] += h
            down[i] -= h
            args_up = (up, other) if array is x0 else (other, up)
            args_down = (down, other) if array is x0 else (other, down)
            fd[i] = (loss(*args_up) - loss(*args_down)) / (2 * h)
        np.testing.assert_allclose(grad.numpy(), fd, rtol=1e-3, atol=1e-4)


def test_rms_norm_module_matches_torch():
    torch = pytest.importorskip("torch")
    rng = _rng(2)
    x = rng.standard_normal((4, 3, 6)).astype(np.float32)
    for args, kwargs in (((6,), {}), (([3, 6],), {"eps": 1e-4}),
                         ((6,), {"elementwise_affine": False})):
        ours, theirs = nn.RMSNorm(*args, **kwargs), torch.nn.RMSNorm(*args, **kwargs)
        assert repr(ours) == repr(theirs)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        if ours.weight is not None:
            w = rng.standard_normal(ours.weight.shape).astype(np.float32)
            ours.weight.data[...] = w
            with torch.no_grad():
                theirs.weight.copy_(torch.from_numpy(w))
        xo = pyrt.tensor(x, requires_grad=True)
        xt = torch.tensor(x, requires_grad=True)
        yo, yt = ours(xo), theirs(xt)
        np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        g = rng.standard_normal(x.shape).astype(np.float32)
        (yo * pyrt.tensor(g)).sum().backward()
        (yt * torch.from_numpy(g)).sum().backward()
        np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
        if ours.weight is not None:
            np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(),
                                       rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("call, message", [
    (lambda: F.rms_norm(pyrt.zeros(2, 5), [4]),
     "Given normalized_shape=[4], expected input with shape [*4], but got input of size[2, 5]"),
    (lambda: F.rms_norm(pyrt.zeros(2, 3, 4), [2, 4]),
     "Given normalized_shape=[2, 4], expected input with shape [*2, 4], but got input of "
     "size[2, 3, 4]"),
    (lambda: F.rms_norm(pyrt.zeros(2, 4), [4], pyrt.ones(3)),
     "Expected weight to be of same shape as normalized_shape, but got weight of shape [3] and "
     "normalized_shape = [4]"),
    (lambda: F.rms_norm(pyrt.zeros(2, 4), []),
     "Expected normalized_shape to be at least 1-dimensional"),
])
def test_rms_norm_errors_are_torchs(call, message):
    with pytest.raises(RuntimeError) as info:
        call()
    assert message in str(info.value)


# ---- channel dropout -----------------------------------------------------------------------

def fn_rank(fn):
    """The batched rank of each channel dropout."""
    return {F.dropout1d: 3, F.dropout2d: 4, F.dropout3d: 5}[fn]


@pytest.mark.parametrize("fn, shape", [
    (F.dropout1d, (4, 6, 9)), (F.dropout1d, (6, 9)), (F.dropout2d, (4, 6, 3, 5)),
    (F.dropout3d, (2, 5, 2, 3, 4)), (F.dropout3d, (5, 2, 3, 4))])
@pytest.mark.parametrize("p", [0.2, 0.5])
def test_channel_dropout_drops_whole_channels(fn, shape, p):
    pyrt.manual_seed(3)
    x = pyrt.tensor(_rng(3).uniform(1, 2, shape).astype(np.float32), requires_grad=True)
    y = fn(x, p)
    out, data = y.detach().numpy(), x.detach().numpy()
    # per (sample, channel) slice (channel, unbatched): all zero, or all scaled by 1 / (1 - p)
    lead = 2 if len(shape) == fn_rank(fn) else 1
    slices = out.reshape(int(np.prod(shape[:lead])), -1)
    ref = data.reshape(slices.shape)
    scale = np.float32(1) / np.float32(1 - p)
    kept = np.all(slices == ref * scale, axis=1)
    dropped = np.all(slices == 0, axis=1)
    assert np.all(kept | dropped) and kept.any() and dropped.any()
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy().reshape(slices.shape),
                                  np.where(kept[:, None], scale, 0).repeat(slices.shape[1], 1))



def test_channel_dropout_is_seeded_and_passes_through_when_not_training():
    x = pyrt.ones(8, 16, 4)
    pyrt.manual_seed(7)
    a = F.dropout1d(x, 0.5).numpy()
    pyrt.manual_seed(7)
    b = F.dropout1d(x, 0.5).numpy()
    np.testing.assert_array_equal(a, b)
    assert F.dropout1d(x, 0.5, training=False) is x
    assert F.dropout2d(pyrt.ones(2, 3, 4, 5), 0.0) is not None
    np.testing.assert_array_equal(F.dropout2d(pyrt.ones(2, 3, 4, 5), 1.0).numpy(), 0)
    layer = nn.Dropout2d(0.5)
    layer.eval()
    y = pyrt.ones(2, 3, 4, 5)
    assert layer(y) is y
    assert repr(nn.Dropout3d(0.25)) == "Dropout3d(p=0.25, inplace=False)"


def test_channel_dropout_errors_and_warnings_are_torchs():
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a "
                                           "4D input"):
        F.dropout1d(pyrt.ones(2, 3, 4, 5))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        F.dropout2d(pyrt.ones(2, 3, 4, 5), 1.5)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            F.dropout2d(pyrt.ones(5))
    with pytest.warns(UserWarning, match="dropout2d: Received a 3D input to dropout2d"):
        F.dropout2d(pyrt.ones(2, 3, 4))
    with pytest.warns(UserWarning, match="dropout3d: Received a 3-D input to dropout3d"):
        F.dropout3d(pyrt.ones(2, 3, 4))
    assert repr(nn.Dropout1d(0.5, inplace=True)) == "Dropout1d(p=0.5, inplace=True)"


# ---- 1-d adaptive pools --------------------------------------------------------------------

@pytest.mark.parametrize("shape, size", [((2, 3, 10), 3), ((3, 7), 4), ((1, 2, 8), (2,)),
                                         ((2, 2, 5), 5), ((1, 1, 9), 1)])
def test_adaptive_pools_1d_match_torch(shape, size):
    torch = pytest.importorskip("torch")
    x = _rng(4).standard_normal(shape).astype(np.float32)
    g_avg = pyrt.tensor(x, requires_grad=True)
    t_avg = torch.tensor(x, requires_grad=True)
    ours, theirs = F.adaptive_avg_pool1d(g_avg, size), torch.nn.functional.adaptive_avg_pool1d(
        t_avg, size)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6,
                               atol=1e-6)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(g_avg.grad.numpy(), t_avg.grad.numpy(), rtol=1e-6)
    g_max = pyrt.tensor(x, requires_grad=True)
    t_max = torch.tensor(x, requires_grad=True)
    (ov, oi), (tv, ti) = (nn.AdaptiveMaxPool1d(size, return_indices=True)(g_max),
                          torch.nn.AdaptiveMaxPool1d(size, return_indices=True)(t_max))
    np.testing.assert_array_equal(ov.detach().numpy(), tv.detach().numpy())
    np.testing.assert_array_equal(oi.numpy(), ti.numpy())
    ov.sum().backward()
    tv.sum().backward()
    np.testing.assert_array_equal(g_max.grad.numpy(), t_max.grad.numpy())


def test_adaptive_pools_1d_without_torch():
    x = pyrt.tensor(np.arange(12, dtype=np.float32).reshape(1, 2, 6))
    np.testing.assert_array_equal(nn.AdaptiveAvgPool1d(2)(x).numpy(),
                                  [[[1.0, 4.0], [7.0, 10.0]]])
    values, indices = F.adaptive_max_pool1d(x, 3, return_indices=True)
    np.testing.assert_array_equal(values.numpy(), [[[1.0, 3.0, 5.0], [7.0, 9.0, 11.0]]])
    np.testing.assert_array_equal(indices.numpy(), [[[1, 3, 5], [1, 3, 5]]])
    with pytest.raises(RuntimeError, match="Expected 2 to 3 dimensions, but got 4-dimensional "
                                           "tensor for argument #1 'self' \\(while checking "
                                           "arguments for adaptive_avg_pool1d\\)"):
        F.adaptive_avg_pool1d(pyrt.ones(1, 2, 3, 4), 2)
    with pytest.raises(TypeError, match="output_size must be an int"):
        F.adaptive_max_pool1d(pyrt.ones(1, 2, 3), 1.5)
