"""The spatial ops and layers of pyrt/spatial_more.py, pyrt/conv_transpose.py,
pyrt/group_norm.py and pyrt/interpolate.py (and their nn layers): conv1d, conv_transpose1d/2d,
max_pool1d/avg_pool1d, group_norm/instance_norm, interpolate, pixel_shuffle/unshuffle,
unfold/fold and the padding layers.

Against PyTorch where it is installed: outputs and the gradients of sum(y * g) for a fixed
random g, with respect to every input, over many shapes and settings (hypothesis) at 1, 2 and
4 threads; reprs, default initialisation and errors. Without PyTorch: NumPy references
written as direct loops for small cases, adjoint identities (<A x, y> = <x, A^T y>) between
the linear ops and their gradients, and finite differences."""

import contextlib
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.nn.functional as F
from pyrt import nn

try:  # the reference for the comparisons marked needs_torch; the others use NumPy's
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

THREADS = [1, 2, 4]
F32 = np.float32
SETTINGS = settings(max_examples=20, deadline=None)


def rng(seed):
    return np.random.default_rng(seed)


def normal(r, shape):
    return r.standard_normal(shape).astype(F32)


@contextlib.contextmanager
def threads(n):
    before = pyrt.set_num_threads(n)
    try:
        yield
    finally:
        pyrt.set_num_threads(before)


def assert_close(got, want, rtol=1e-4, atol=1e-5):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(float(np.abs(want).max(initial=0.0)), 1.0)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale)


def run_pyrt(fn, arrays, seed=0, grad=True):
    """(output array, gradients of sum(out * g) of every float input, g) of fn(*tensors)."""
    ts = [pyrt.tensor(a, requires_grad=grad and a.dtype == F32) for a in arrays]
    y = fn(*ts)
    g = normal(rng(seed + 1000), y.shape)
    if grad:
        (y * pyrt.tensor(g)).sum().backward()
    return y.detach().numpy(), [t.grad.numpy() if t.grad is not None else None for t in ts], g


def compare_with_torch(fn, torch_fn, arrays, n_threads=1, seed=0, rtol=1e-4):
    """fn's output and gradients against torch_fn's on the same arrays."""
    with threads(n_threads):
        y, grads, g = run_pyrt(fn, arrays, seed)
    ts = [torch.tensor(a, requires_grad=a.dtype == F32) for a in arrays]
    yt = torch_fn(*ts)
    (yt * torch.tensor(g)).sum().backward()
    assert_close(y, yt.detach().numpy(), rtol)
    for got, t in zip(grads, ts):
        if t.requires_grad:
            assert_close(got, t.grad.numpy(), rtol)


def finite_difference_check(fn, arrays, seed=0, eps=1e-2, rtol=2e-2, samples=6):
    """The gradients of sum(fn(*arrays) * g) against central differences in float64 at a few
    random positions of each input."""
    _, grads, g = run_pyrt(fn, arrays, seed)
    r = rng(seed + 7)

    def loss(values):
        y = fn(*[pyrt.tensor(v) for v in values]).numpy()
        return float((y.astype(np.float64) * g).sum())

    for i, a in enumerate(arrays):
        for _ in range(samples):
            idx = tuple(int(r.integers(0, n)) for n in a.shape)
            plus = [v.copy() for v in arrays]
            minus = [v.copy() for v in arrays]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            want = (loss(plus) - loss(minus)) / (2 * eps)
            assert abs(grads[i][idx] - want) <= rtol * max(1.0, abs(want)), (i, idx)


# ---- NumPy references (direct loops) ----------------------------------------------------------


def conv1d_loops(x, w, b, stride, padding, dilation, groups):
    n, _, length = x.shape
    k, cg, kl = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding, padding)))
    out = (length + 2 * padding - dilation * (kl - 1) - 1) // stride + 1
    y = np.zeros((n, k, out))
    per = k // groups
    for i, o, t in itertools.product(range(n), range(k), range(out)):
        grp = o // per
        for ci, j in itertools.product(range(cg), range(kl)):
            y[i, o, t] += xp[i, grp * cg + ci, t * stride + j * dilation] * w[o, ci, j]
    return y + (0 if b is None else b[None, :, None])


def conv_transpose2d_loops(x, w, b, stride, padding, output_padding, groups, dilation):
    """Each input pixel scatters its weighted kernel into the output (the definition)."""
    n, cin, h, wd = x.shape
    _, cog, kh, kw = w.shape
    oh = (h - 1) * stride - 2 * padding + dilation * (kh - 1) + output_padding + 1
    ow = (wd - 1) * stride - 2 * padding + dilation * (kw - 1) + output_padding + 1
    full = np.zeros((n, cog * groups, oh + 2 * padding + stride + dilation * kh,
                     ow + 2 * padding + stride + dilation * kw))
    per = cin // groups
    for i, ci, r, c in itertools.product(range(n), range(cin), range(h), range(wd)):
        grp = ci // per
        for co, p, q in itertools.product(range(cog), range(kh), range(kw)):
            full[i, grp * cog + co, r * stride + p * dilation, c * stride + q * dilation] += (
                x[i, ci, r, c] * w[ci, co, p, q])
    y = full[:, :, padding:padding + oh, padding:padding + ow]
    return y + (0 if b is None else b[None, :, None, None])


def bilinear_loops(x, oh, ow, align_corners):
    n, c, h, w = x.shape
    y = np.zeros((n, c, oh, ow))

    def source(i, size, out):
        if align_corners:
            return i * (size - 1) / (out - 1) if out > 1 else 0.0
        return max((i + 0.5) * size / out - 0.5, 0.0)

    for i, j in itertools.product(range(oh), range(ow)):
        sy, sx = source(i, h, oh), source(j, w, ow)
        y0, x0 = min(int(sy), h - 1), min(int(sx), w - 1)
        y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
        ly, lx = sy - y0, sx - x0
        y[:, :, i, j] = ((1 - ly) * ((1 - lx) * x[:, :, y0, x0] + lx * x[:, :, y0, x1])
                         + ly * ((1 - lx) * x[:, :, y1, x0] + lx * x[:, :, y1, x1]))
    return y


def unfold_loops(x, k, dilation, padding, stride):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh = (h + 2 * padding - dilation * (k - 1) - 1) // stride + 1
    ow = (w + 2 * padding - dilation * (k - 1) - 1) // stride + 1
    cols = np.zeros((n, c * k * k, oh * ow), F32)
    for ch, p, q, i, j in itertools.product(range(c), range(k), range(k), range(oh), range(ow)):
        cols[:, (ch * k + p) * k + q, i * ow + j] = xp[:, ch, i * stride + p * dilation,
                                                       j * stride + q * dilation]
    return cols


# ---- without PyTorch: loops, adjoints and finite differences ----------------------------------


@pytest.mark.parametrize("stride,padding,dilation,groups,bias", [
    (1, 0, 1, 1, True), (2, 1, 1, 2, False), (1, 2, 2, 1, True), (3, 1, 2, 4, True)])
def test_conv1d_matches_loops(stride, padding, dilation, groups, bias):
    r = rng(1)
    x, w = normal(r, (2, 4, 11)), normal(r, (8, 4 // groups, 3))
    b = normal(r, 8) if bias else None
    y = F.conv1d(pyrt.tensor(x), pyrt.tensor(w), None if b is None else pyrt.tensor(b),
                 stride, padding, dilation, groups)
    assert_close(y.numpy(), conv1d_loops(x, w, b, stride, padding, dilation, groups))


@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("stride,padding,output_padding,groups,dilation", [
    (1, 0, 0, 1, 1), (2, 1, 1, 1, 1), (3, 2, 2, 2, 1), (2, 1, 0, 1, 2), (1, 0, 1, 1, 2)])
def test_conv_transpose2d_matches_loops(stride, padding, output_padding, groups, dilation,
                                        n_threads):
    r = rng(2)
    x, w, b = normal(r, (2, 4, 3, 4)), normal(r, (4, 6 // groups, 3, 2)), normal(r, 6)
    with threads(n_threads):
        y = F.conv_transpose2d(pyrt.tensor(x), pyrt.tensor(w), pyrt.tensor(b), stride, padding,
                               output_padding, groups, dilation)
    assert_close(y.numpy(), conv_transpose2d_loops(x, w, b, stride, padding, output_padding,
                                                   groups, dilation))


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 2),
                                                             (2, 2, 2, 1)])
def test_conv_transpose2d_is_the_adjoint_of_conv2d(stride, padding, dilation, groups):
    """<conv_transpose2d(x, w), z> = <x, conv2d(z, w)>, and the input gradient of
    conv_transpose2d is conv2d of the output gradient."""
    r = rng(3)
    w = normal(r, (6, 4 // groups, 3, 3))
    z = normal(r, (2, 4, 9, 8))
    cz = F.conv2d(pyrt.tensor(z), pyrt.tensor(w), None, stride, padding, dilation, groups)
    x = normal(r, cz.shape)
    extra = tuple((n + 2 * padding - dilation * 2 - 1) % stride for n in z.shape[2:])
    y = F.conv_transpose2d(pyrt.tensor(x), pyrt.tensor(w), None, stride, padding, extra,
                           groups, dilation)
    assert y.shape == z.shape
    lhs = float((y.numpy().astype(np.float64) * z).sum())
    rhs = float((x.astype(np.float64) * cz.numpy()).sum())
    assert abs(lhs - rhs) <= 1e-4 * max(1.0, abs(lhs))
    xt = pyrt.tensor(x, requires_grad=True)
    (F.conv_transpose2d(xt, pyrt.tensor(w), None, stride, padding, extra, groups, dilation)
     * pyrt.tensor(z)).sum().backward()
    assert_close(xt.grad.numpy(), cz.numpy())


def test_conv_transpose_gradients_match_finite_differences():
    r = rng(4)
    x, w, b = normal(r, (1, 2, 3, 3)), normal(r, (2, 3, 2, 3)), normal(r, 3)
    finite_difference_check(lambda x, w, b: F.conv_transpose2d(x, w, b, 2, 1, 1), [x, w, b])
    x1, w1 = normal(r, (2, 2, 5)), normal(r, (2, 2, 3))
    finite_difference_check(lambda x, w: F.conv_transpose1d(x, w, None, 2, 1, 1, 2), [x1, w1])
    finite_difference_check(lambda x, w: F.conv1d(x, w, None, 2, 1), [x1, w1.transpose(1, 0, 2)
                                                                      .copy()])


def test_1d_pools_match_loops():
    r = rng(5)
    x = normal(r, (2, 3, 10))
    y, idx = F.max_pool1d(pyrt.tensor(x), 3, 2, 1, return_indices=True)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1)), constant_values=-np.inf)
    windows = np.stack([xp[:, :, 2 * i:2 * i + 3] for i in range(y.shape[-1])], axis=2)
    assert_close(y.numpy(), windows.max(-1))
    np.testing.assert_array_equal(idx.numpy(), np.argmax(windows, -1) + 2 * np.arange(
        y.shape[-1]) - 1)
    a = F.avg_pool1d(pyrt.tensor(x), 4, 3, 2)
    zp = np.pad(x, ((0, 0), (0, 0), (2, 2)))
    assert_close(a.numpy(), np.stack([zp[:, :, 3 * i:3 * i + 4].mean(-1)
                                      for i in range(a.shape[-1])], axis=2))
    finite_difference_check(lambda x: F.avg_pool1d(x, 3, 2, 1, count_include_pad=False), [x])


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(7, 5), (2, 3), (1, 1)])
def test_bilinear_matches_loops(align_corners, size):
    x = normal(rng(6), (2, 2, 4, 3))
    y = F.interpolate(pyrt.tensor(x), size=size, mode="bilinear", align_corners=align_corners)
    assert_close(y.numpy(), bilinear_loops(x.astype(np.float64), *size, align_corners))


def test_nearest_and_area_match_numpy():
    x = normal(rng(7), (1, 2, 3, 4))
    y = F.interpolate(pyrt.tensor(x), scale_factor=2)
    np.testing.assert_array_equal(y.numpy(), x.repeat(2, axis=2).repeat(2, axis=3))
    y = F.interpolate(pyrt.tensor(x), size=(5, 3), mode="nearest-exact")
    rows, cols = np.floor((np.arange(5) + 0.5) * 3 / 5), np.floor((np.arange(3) + 0.5) * 4 / 3)
    np.testing.assert_array_equal(y.numpy(), x[:, :, rows.astype(int)][:, :, :, cols.astype(int)])
    x = normal(rng(8), (1, 2, 4, 6))
    y = F.interpolate(pyrt.tensor(x), size=(2, 3), mode="area")
    assert_close(y.numpy(), x.reshape(1, 2, 2, 2, 3, 2).mean(axis=(3, 5)))


@pytest.mark.parametrize("mode,shape,kwargs", [
    ("nearest", (1, 2, 3, 4), {"size": (5, 7)}),
    ("bilinear", (1, 2, 3, 4), {"scale_factor": 1.7}),
    ("bilinear", (1, 1, 5, 4), {"size": (3, 6), "align_corners": True}),
    ("linear", (2, 2, 5), {"size": 8}),
    ("trilinear", (1, 1, 2, 3, 3), {"size": (3, 2, 4)}),
])
def test_interpolate_gradient_is_the_adjoint(mode, shape, kwargs):
    """interpolate is linear: its gradient A^T g satisfies <A x, g> = <x, A^T g>."""
    x = normal(rng(9), shape)
    y, (dx,), g = run_pyrt(lambda t: F.interpolate(t, mode=mode, **kwargs), [x])
    assert abs((y.astype(np.float64) * g).sum() - (x.astype(np.float64) * dx).sum()) < 1e-4 * max(
        1.0, float(np.abs(y * g).sum()))


def test_group_and_instance_norm_match_numpy_and_finite_differences():
    r = rng(10)
    x, w, b = normal(r, (2, 6, 3, 2)), normal(r, 6), normal(r, 6)
    y = F.group_norm(pyrt.tensor(x), 3, pyrt.tensor(w), pyrt.tensor(b), 1e-5)
    groups = x.astype(np.float64).reshape(2, 3, -1)
    ref = ((groups - groups.mean(-1, keepdims=True))
           / np.sqrt(groups.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    assert_close(y.numpy(), ref * w[:, None, None] + b[:, None, None])
    finite_difference_check(lambda x, w, b: F.group_norm(x, 2, w, b), [x, w, b], eps=1e-3)
    y = F.instance_norm(pyrt.tensor(x))
    flat = x.astype(np.float64).reshape(2, 6, -1)
    ref = (flat - flat.mean(-1, keepdims=True)) / np.sqrt(flat.var(-1, keepdims=True) + 1e-5)
    assert_close(y.numpy(), ref.reshape(x.shape))
    finite_difference_check(lambda x, w: F.instance_norm(x, weight=w), [x, w], eps=1e-3)


def test_instance_norm_running_stats_average_the_samples():
    x = normal(rng(11), (3, 2, 5))
    mean, var = pyrt.zeros(2), pyrt.ones(2)
    F.instance_norm(pyrt.tensor(x), mean, var, momentum=0.5)
    x64 = x.astype(np.float64)
    assert_close(mean.numpy(), 0.5 * x64.mean(-1).mean(0))
    assert_close(var.numpy(), 0.5 + 0.5 * x64.var(-1, ddof=1).mean(0))
    m = nn.InstanceNorm1d(2, track_running_stats=True)
    m(pyrt.tensor(x))
    m.eval()
    ref = (x64 - m.running_mean.numpy()[:, None]) / np.sqrt(m.running_var.numpy()[:, None]
                                                             + 1e-5)
    assert_close(m(pyrt.tensor(x)).numpy(), ref)


def test_pixel_shuffle_matches_loops_and_unshuffle_undoes_it():
    x = normal(rng(12), (2, 8, 3, 2))
    y = F.pixel_shuffle(pyrt.tensor(x), 2).numpy()
    assert y.shape == (2, 2, 6, 4)
    for c, i, j in itertools.product(range(2), range(2), range(2)):
        np.testing.assert_array_equal(y[:, c, i::2, j::2], x[:, c * 4 + i * 2 + j])
    np.testing.assert_array_equal(F.pixel_unshuffle(pyrt.tensor(y), 2).numpy(), x)
    _, (dx,), g = run_pyrt(lambda t: F.pixel_shuffle(t, 2), [x])
    np.testing.assert_array_equal(dx, F.pixel_unshuffle(pyrt.tensor(g), 2).numpy())


@pytest.mark.parametrize("k,dilation,padding,stride", [(2, 1, 0, 1), (3, 2, 1, 2), (2, 1, 1, 3)])
def test_unfold_matches_loops_and_fold_is_its_adjoint(k, dilation, padding, stride):
    r = rng(13)
    x = normal(r, (2, 3, 6, 7))
    cols = F.unfold(pyrt.tensor(x), k, dilation, padding, stride).numpy()
    np.testing.assert_array_equal(cols, unfold_loops(x, k, dilation, padding, stride))
    c = normal(r, cols.shape)
    folded = F.fold(pyrt.tensor(c), (6, 7), k, dilation, padding, stride).numpy()
    lhs = (cols.astype(np.float64) * c).sum()
    assert abs(lhs - (x.astype(np.float64) * folded).sum()) < 1e-4 * max(1.0, abs(lhs))
    _, (dx,), g = run_pyrt(lambda t: F.unfold(t, k, dilation, padding, stride), [x])
    assert_close(dx, F.fold(pyrt.tensor(g), (6, 7), k, dilation, padding, stride).numpy())


def test_padding_layers_pad_as_f_pad():
    x = normal(rng(14), (1, 2, 3, 4))
    t = pyrt.tensor(x)
    np.testing.assert_array_equal(nn.ZeroPad2d((1, 2, 0, 1))(t).numpy(),
                                  np.pad(x, ((0, 0), (0, 0), (0, 1), (1, 2))))
    np.testing.assert_array_equal(nn.ConstantPad1d(2, 3.5)(t).numpy(),
                                  np.pad(x, ((0, 0), (0, 0), (0, 0), (2, 2)),
                                         constant_values=3.5))
    np.testing.assert_array_equal(nn.ReflectionPad2d(2)(t).numpy(),
                                  np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)), mode="reflect"))
    np.testing.assert_array_equal(nn.ReplicationPad1d((1, 3))(t).numpy(),
                                  np.pad(x, ((0, 0), (0, 0), (0, 0), (1, 3)), mode="edge"))
    np.testing.assert_array_equal(nn.CircularPad2d(1)(t).numpy(),
                                  np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="wrap"))


def test_layers_initialise_and_shape_as_pytorch_documents():
    pyrt.manual_seed(0)
    m = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, groups=2)
    assert m.weight.shape == (4, 3, 3, 3) and m.bias.shape == (6,)
    bound = 1 / np.sqrt(3 * 9)  # fan_in: weight.size(1) * kernel size
    assert 0.8 * bound < np.abs(m.weight._data).max() <= bound
    assert np.abs(m.bias._data).max() <= bound
    x = pyrt.tensor(normal(rng(15), (2, 4, 5, 5)))
    assert m(x).shape == (2, 6, 9, 9)
    assert m(x, output_size=(10, 10)).shape == (2, 6, 10, 10)
    with pytest.raises(ValueError, match="valid sizes range from"):
        m(x, output_size=(12, 12))
    c = nn.Conv1d(4, 6, 3, padding="same", padding_mode="circular", bias=False)
    assert c.weight.shape == (6, 4, 3) and c.bias is None
    assert c(pyrt.tensor(normal(rng(16), (2, 4, 7)))).shape == (2, 6, 7)
    g = nn.GroupNorm(2, 4)
    assert np.all(g.weight._data == 1) and np.all(g.bias._data == 0)
    assert nn.InstanceNorm2d(3).weight is None
    with pytest.raises(ValueError, match="divisible by num_groups"):
        nn.GroupNorm(3, 4)


def test_ops_on_unbatched_inputs_match_the_batched_ones():
    r = rng(17)
    x, w = normal(r, (4, 9)), normal(r, (6, 4, 3))
    batched = F.conv1d(pyrt.tensor(x[None]), pyrt.tensor(w), None, 2).numpy()[0]
    np.testing.assert_array_equal(F.conv1d(pyrt.tensor(x), pyrt.tensor(w), None, 2).numpy(),
                                  batched)
    np.testing.assert_array_equal(F.max_pool1d(pyrt.tensor(x), 2).numpy(),
                                  F.max_pool1d(pyrt.tensor(x[None]), 2).numpy()[0])
    x2, w2 = normal(r, (4, 3, 3)), normal(r, (4, 2, 2, 2))
    np.testing.assert_array_equal(
        F.conv_transpose2d(pyrt.tensor(x2), pyrt.tensor(w2), None, 2).numpy(),
        F.conv_transpose2d(pyrt.tensor(x2[None]), pyrt.tensor(w2), None, 2).numpy()[0])


# ---- against PyTorch --------------------------------------------------------------------------


@needs_torch
@SETTINGS
@given(n=st.integers(1, 3), groups=st.sampled_from([1, 2]), cin=st.integers(1, 3),
       cout=st.integers(1, 3), length=st.integers(1, 12), k=st.integers(1, 4),
       stride=st.integers(1, 3), padding=st.integers(0, 2), dilation=st.integers(1, 2),
       bias=st.booleans(), n_threads=st.sampled_from(THREADS), seed=st.integers(0, 2**16))
def test_conv1d_matches_torch(n, groups, cin, cout, length, k, stride, padding, dilation, bias,
                              n_threads, seed):
    cin, cout = cin * groups, cout * groups
    if length + 2 * padding < dilation * (k - 1) + 1:
        return
    r = rng(seed)
    arrays = [normal(r, (n, cin, length)), normal(r, (cout, cin // groups, k))]
    if bias:
        arrays.append(normal(r, cout))
    args = (stride, padding, dilation, groups)
    compare_with_torch(lambda x, w, b=None: F.conv1d(x, w, b, *args),
                       lambda x, w, b=None: torch.nn.functional.conv1d(x, w, b, *args),
                       arrays, n_threads, seed)


@needs_torch
@pytest.mark.parametrize("padding", ["same", "valid"])
def test_conv1d_string_padding_matches_torch(padding):
    r = rng(20)
    arrays = [normal(r, (2, 4, 9)), normal(r, (6, 2, 4)), normal(r, 6)]
    compare_with_torch(lambda x, w, b: F.conv1d(x, w, b, 1, padding, 2, 2),
                       lambda x, w, b: torch.nn.functional.conv1d(x, w, b, 1, padding, 2, 2),
                       arrays)


@needs_torch
@SETTINGS
@given(n=st.integers(1, 2), groups=st.sampled_from([1, 2]), cin=st.integers(1, 3),
       cout=st.integers(1, 3), h=st.integers(1, 6), w=st.integers(1, 6), kh=st.integers(1, 3),
       kw=st.integers(1, 3), stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       padding=st.tuples(st.integers(0, 2), st.integers(0, 2)),
       dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       output_padding=st.tuples(st.integers(0, 2), st.integers(0, 2)), bias=st.booleans(),
       n_threads=st.sampled_from(THREADS), seed=st.integers(0, 2**16))
def test_conv_transpose2d_matches_torch(n, groups, cin, cout, h, w, kh, kw, stride, padding,
                                        dilation, output_padding, bias, n_threads, seed):
    cin, cout = cin * groups, cout * groups
    output_padding = tuple(min(op, max(s, d) - 1)
                           for op, s, d in zip(output_padding, stride, dilation))
    out = [(i - 1) * s - 2 * p + d * (k - 1) + op + 1 for i, s, p, d, k, op in zip(
        (h, w), stride, padding, dilation, (kh, kw), output_padding)]
    if min(out) < 1:
        return
    r = rng(seed)
    arrays = [normal(r, (n, cin, h, w)), normal(r, (cin, cout // groups, kh, kw))]
    if bias:
        arrays.append(normal(r, cout))
    args = (stride, padding, output_padding, groups, dilation)
    compare_with_torch(lambda x, w, b=None: F.conv_transpose2d(x, w, b, *args),
                       lambda x, w, b=None: torch.nn.functional.conv_transpose2d(x, w, b, *args),
                       arrays, n_threads, seed)


@needs_torch
@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("stride,padding,output_padding,groups,dilation", [
    (1, 0, 0, 1, 1), (2, 1, 1, 2, 1), (3, 2, 1, 1, 2), (1, 1, 1, 1, 3)])
def test_conv_transpose1d_matches_torch(stride, padding, output_padding, groups, dilation,
                                        n_threads):
    r = rng(21)
    arrays = [normal(r, (2, 4, 7)), normal(r, (4, 6 // groups, 3)), normal(r, 6)]
    args = (stride, padding, output_padding, groups, dilation)
    compare_with_torch(lambda x, w, b: F.conv_transpose1d(x, w, b, *args),
                       lambda x, w, b: torch.nn.functional.conv_transpose1d(x, w, b, *args),
                       arrays, n_threads)


@needs_torch
@SETTINGS
@given(length=st.integers(1, 12), k=st.integers(1, 4), stride=st.one_of(st.none(),
       st.integers(1, 3)), padding=st.integers(0, 2), dilation=st.integers(1, 2),
       ceil_mode=st.booleans(), count_include_pad=st.booleans(),
       n_threads=st.sampled_from(THREADS), seed=st.integers(0, 2**16))
def test_1d_pools_match_torch(length, k, stride, padding, dilation, ceil_mode,
                              count_include_pad, n_threads, seed):
    padding = min(padding, k // 2)
    x = normal(rng(seed), (2, 3, length))
    args = (k, stride, padding, dilation, ceil_mode)
    if length + 2 * padding >= dilation * (k - 1) + 1 and not (
            F.max_pool1d(pyrt.tensor(x), *args, return_indices=True)[1].numpy() == -1).any():
        # (a window of padding alone, which a dilation can leave, has index -1 in pyrt; torch
        # gives it an index outside the input and its backward pass writes there)
        compare_with_torch(lambda t: F.max_pool1d(t, *args),
                           lambda t: torch.nn.functional.max_pool1d(t, *args), [x], n_threads)
        _, idx = F.max_pool1d(pyrt.tensor(x), *args, return_indices=True)
        _, want = torch.nn.functional.max_pool1d(torch.tensor(x), *args, return_indices=True)
        np.testing.assert_array_equal(idx.numpy(), want.numpy())
    if length + 2 * padding >= k:
        args = (k, stride, padding, ceil_mode, count_include_pad)
        compare_with_torch(lambda t: F.avg_pool1d(t, *args),
                           lambda t: torch.nn.functional.avg_pool1d(t, *args), [x], n_threads)


@needs_torch
@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("shape,groups,affine", [((2, 6, 5), 3, True), ((3, 4, 3, 3), 1, True),
                                                 ((2, 4, 2, 3), 4, False), ((1, 8), 2, True)])
def test_group_norm_matches_torch(shape, groups, affine, n_threads):
    r = rng(22)
    arrays = [normal(r, shape) * 3 + 1]
    if affine:
        arrays += [normal(r, shape[1]), normal(r, shape[1])]
    compare_with_torch(lambda x, w=None, b=None: F.group_norm(x, groups, w, b, 1e-4),
                       lambda x, w=None, b=None: torch.nn.functional.group_norm(x, groups, w, b,
                                                                                1e-4),
                       arrays, n_threads)


@needs_torch
@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("shape", [(2, 3, 5), (3, 2, 4, 3)])
def test_instance_norm_matches_torch(shape, n_threads):
    r = rng(23)
    arrays = [normal(r, shape), normal(r, shape[1]), normal(r, shape[1])]
    compare_with_torch(lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
                       lambda x, w, b: torch.nn.functional.instance_norm(x, weight=w, bias=b),
                       arrays, n_threads)
    layer, reference = (nn.InstanceNorm1d, torch.nn.InstanceNorm1d) if len(shape) == 3 else (
        nn.InstanceNorm2d, torch.nn.InstanceNorm2d)
    m, t = layer(shape[1], momentum=0.3, track_running_stats=True), reference(
        shape[1], momentum=0.3, track_running_stats=True)
    for _ in range(2):
        x = normal(r, shape)
        assert_close(m(pyrt.tensor(x)).numpy(), t(torch.tensor(x)).detach().numpy())
    assert_close(m.running_mean.numpy(), t.running_mean.numpy())
    assert_close(m.running_var.numpy(), t.running_var.numpy())
    m.eval()
    t.eval()
    x = normal(r, shape[1:])  # (and an unbatched input)
    assert_close(m(pyrt.tensor(x)).numpy(), t(torch.tensor(x)).detach().numpy())


INTERPOLATIONS = [
    ((2, 3, 5, 7), {"size": (9, 4), "mode": "bilinear"}),
    ((2, 3, 5, 7), {"scale_factor": 2.5, "mode": "bilinear", "align_corners": True}),
    ((2, 3, 5, 7), {"scale_factor": (1.7, 0.6), "mode": "bilinear"}),
    ((1, 2, 6, 6), {"size": 3, "mode": "bilinear", "align_corners": False}),
    ((2, 3, 5, 7), {"size": (10, 14)}),
    ((2, 3, 5, 7), {"scale_factor": 1.3}),
    ((2, 3, 7, 5), {"size": (3, 11)}),
    ((2, 3, 6, 7), {"size": (4, 3), "mode": "nearest-exact"}),
    ((2, 3, 6, 7), {"scale_factor": 0.7, "mode": "nearest-exact"}),
    ((2, 3, 9), {"size": 4, "mode": "linear"}),
    ((2, 3, 9), {"scale_factor": 3.3, "mode": "linear", "recompute_scale_factor": True}),
    ((2, 3, 4), {"size": 7, "mode": "linear", "align_corners": True}),
    ((2, 3, 9), {"size": 13}),
    ((2, 3, 8, 9), {"size": (3, 4), "mode": "area"}),
    ((2, 3, 9), {"scale_factor": 0.5, "mode": "area"}),
    ((1, 2, 3, 4, 3), {"size": (2, 5, 4), "mode": "trilinear"}),
    ((1, 2, 3, 4, 3), {"scale_factor": 2}),
    ((1, 1, 3, 3), {"size": (1, 1), "mode": "bilinear", "align_corners": True}),
]


@needs_torch
@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("shape,kwargs", INTERPOLATIONS)
def test_interpolate_matches_torch(shape, kwargs, n_threads):
    x = normal(rng(24), shape)
    compare_with_torch(lambda t: F.interpolate(t, **kwargs),
                       lambda t: torch.nn.functional.interpolate(t, **kwargs), [x], n_threads)


@needs_torch
@SETTINGS
@given(h=st.integers(1, 9), w=st.integers(1, 9), oh=st.integers(1, 12), ow=st.integers(1, 12),
       mode=st.sampled_from(["nearest", "nearest-exact", "bilinear", "bilinear-corners"]),
       seed=st.integers(0, 2**16))
def test_interpolate_sizes_match_torch(h, w, oh, ow, mode, seed):
    options = {"mode": "bilinear", "align_corners": True} if mode == "bilinear-corners" else {
        "mode": mode}
    x = normal(rng(seed), (1, 2, h, w))
    compare_with_torch(lambda t: F.interpolate(t, (oh, ow), **options),
                       lambda t: torch.nn.functional.interpolate(t, (oh, ow), **options), [x])


@needs_torch
def test_shuffles_fold_and_unfold_match_torch():
    r = rng(25)
    TF = torch.nn.functional
    compare_with_torch(lambda t: F.pixel_shuffle(t, 3), lambda t: TF.pixel_shuffle(t, 3),
                       [normal(r, (2, 1, 18, 2, 3))])
    compare_with_torch(lambda t: F.pixel_unshuffle(t, 2), lambda t: TF.pixel_unshuffle(t, 2),
                       [normal(r, (3, 4, 6))])
    for args in [(2,), ((2, 3), (1, 2), 1, (2, 1)), (3, 1, 2, 3)]:
        compare_with_torch(lambda t, a=args: F.unfold(t, *a), lambda t, a=args: TF.unfold(t, *a),
                           [normal(r, (2, 3, 6, 7))])
    compare_with_torch(lambda t: F.unfold(t, 2), lambda t: TF.unfold(t, 2),
                       [normal(r, (3, 4, 5))])
    # (columns of 3 channels of 2x3 blocks, 2 x 2 of them; of 2 channels of 2x2, 5 x 5)
    for args, shape in [(((4, 5), (2, 3), 1, 0, (2, 2)), (2, 18, 4)),
                        (((5, 5), 2, 2, 1, 1), (2, 8, 25))]:
        compare_with_torch(lambda t, a=args: F.fold(t, *a), lambda t, a=args: TF.fold(t, *a),
                           [normal(r, shape)])


@needs_torch
def test_layers_match_torch_with_the_same_parameters():
    r = rng(26)
    pairs = [
        (nn.Conv1d(4, 6, 3, 2, 1, groups=2), torch.nn.Conv1d(4, 6, 3, 2, 1, groups=2),
         (2, 4, 9)),
        (nn.Conv1d(4, 6, 4, padding="same", padding_mode="reflect", dilation=2),
         torch.nn.Conv1d(4, 6, 4, padding="same", padding_mode="reflect", dilation=2), (2, 4, 9)),
        (nn.ConvTranspose2d(4, 6, (3, 2), 2, 1, 1, groups=2, dilation=(1, 2)),
         torch.nn.ConvTranspose2d(4, 6, (3, 2), 2, 1, 1, groups=2, dilation=(1, 2)),
         (2, 4, 3, 5)),
        (nn.ConvTranspose1d(3, 2, 4, 3, bias=False), torch.nn.ConvTranspose1d(3, 2, 4, 3,
                                                                              bias=False),
         (2, 3, 5)),
        (nn.GroupNorm(2, 6), torch.nn.GroupNorm(2, 6), (2, 6, 4)),
        (nn.InstanceNorm2d(3, affine=True), torch.nn.InstanceNorm2d(3, affine=True),
         (2, 3, 4, 4)),
        (nn.Upsample(scale_factor=2, mode="bilinear"),
         torch.nn.Upsample(scale_factor=2, mode="bilinear"), (1, 2, 3, 3)),
        (nn.UpsamplingBilinear2d((5, 4)), torch.nn.UpsamplingBilinear2d((5, 4)), (1, 2, 3, 3)),
        (nn.UpsamplingNearest2d(scale_factor=3), torch.nn.UpsamplingNearest2d(scale_factor=3),
         (1, 2, 3, 3)),
        (nn.PixelShuffle(2), torch.nn.PixelShuffle(2), (1, 8, 2, 3)),
        (nn.PixelUnshuffle(2), torch.nn.PixelUnshuffle(2), (1, 2, 4, 6)),
        (nn.MaxPool1d(3, 2, 1), torch.nn.MaxPool1d(3, 2, 1), (2, 3, 8)),
        (nn.AvgPool1d(3, 2, 1, count_include_pad=False),
         torch.nn.AvgPool1d(3, 2, 1, count_include_pad=False), (2, 3, 8)),
        (nn.Unfold(2, padding=1), torch.nn.Unfold(2, padding=1), (2, 3, 4, 4)),
        (nn.Fold((3, 3), 2), torch.nn.Fold((3, 3), 2), (2, 8, 4)),
        (nn.ZeroPad1d((1, 2)), torch.nn.ZeroPad1d((1, 2)), (2, 3, 4)),
        (nn.ZeroPad2d((1, 2, 0, 3)), torch.nn.ZeroPad2d((1, 2, 0, 3)), (2, 3, 4, 4)),
        (nn.ConstantPad1d(2, 3.5), torch.nn.ConstantPad1d(2, 3.5), (2, 3, 4)),
        (nn.ConstantPad2d((1, 0, 2, 1), -1.0), torch.nn.ConstantPad2d((1, 0, 2, 1), -1.0),
         (2, 3, 4, 4)),
        (nn.ReflectionPad1d(2), torch.nn.ReflectionPad1d(2), (2, 3, 4)),
        (nn.ReflectionPad2d((1, 2, 3, 0)), torch.nn.ReflectionPad2d((1, 2, 3, 0)), (2, 3, 4, 4)),
        (nn.ReplicationPad1d((3, 1)), torch.nn.ReplicationPad1d((3, 1)), (2, 3, 4)),
        (nn.ReplicationPad2d(2), torch.nn.ReplicationPad2d(2), (2, 3, 4, 4)),
        (nn.CircularPad1d(2), torch.nn.CircularPad1d(2), (2, 3, 4)),
        (nn.CircularPad2d((1, 2, 2, 1)), torch.nn.CircularPad2d((1, 2, 2, 1)), (2, 3, 4, 4)),
    ]
    for ours, theirs, shape in pairs:
        assert repr(ours) == repr(theirs)
        for name, p in theirs.named_parameters():
            getattr(ours, name)._data[...] = p.detach().numpy()
        x = normal(r, shape)
        compare_with_torch(ours, theirs, [x])
        for name, p in theirs.named_parameters():
            assert_close(getattr(ours, name).grad.numpy(), p.grad.numpy())


@needs_torch
def test_default_reprs_match_torch():
    for ours, theirs in [
        (nn.Conv1d(2, 4, (3,), 2, 1, bias=False), torch.nn.Conv1d(2, 4, (3,), 2, 1, bias=False)),
        (nn.ConvTranspose2d(4, 6, 3, 2, 1, 1, groups=2, dilation=2, bias=False),
         torch.nn.ConvTranspose2d(4, 6, 3, 2, 1, 1, groups=2, dilation=2, bias=False)),
        (nn.ConvTranspose1d(2, 3, 4), torch.nn.ConvTranspose1d(2, 3, 4)),
        (nn.GroupNorm(2, 4, affine=False), torch.nn.GroupNorm(2, 4, affine=False)),
        (nn.InstanceNorm1d(3, track_running_stats=True),
         torch.nn.InstanceNorm1d(3, track_running_stats=True)),
        (nn.Upsample(size=(3, 4), mode="bilinear"), torch.nn.Upsample(size=(3, 4),
                                                                      mode="bilinear")),
        (nn.MaxPool1d(3), torch.nn.MaxPool1d(3)),
        (nn.AvgPool1d(3), torch.nn.AvgPool1d(3)),
    ]:
        assert repr(ours) == repr(theirs)
        assert sorted(n for n, _ in ours.named_parameters()) == sorted(
            n for n, _ in theirs.named_parameters())
        assert sorted(n for n, _ in ours.named_buffers()) == sorted(
            n for n, _ in theirs.named_buffers())


def _errors():
    """(pyrt call, torch call) pairs that raise: the same exception type is expected."""
    def both(name, *shapes_and_args, **kwargs):
        *shapes, args = shapes_and_args
        arrays = [np.zeros(s, F32) for s in shapes]

        def ours():
            return getattr(F, name)(*[pyrt.tensor(a) for a in arrays], *args, **kwargs)

        def theirs():
            return getattr(torch.nn.functional, name)(*[torch.tensor(a) for a in arrays], *args,
                                                      **kwargs)
        return pytest.param(ours, theirs, id=f"{name}{shapes}{args}{kwargs}")

    return [
        both("conv1d", (1, 2, 3, 4), (1, 2, 3), ()),
        both("conv1d", (1, 2, 3), (1, 2, 3, 3), ()),
        both("conv1d", (1, 2, 5), (1, 2, 3), (2, "same")),
        both("conv_transpose2d", (1, 2, 3, 3), (2, 2, 3, 3), (None, 1, 3)),
        both("conv_transpose2d", (1, 3, 3, 3), (2, 2, 3, 3), ()),
        both("conv_transpose2d", (1, 2, 3, 3), (2, 2, 3, 3), (None, 1, 0, 1)),
        both("conv_transpose2d", (1, 2, 3, 3), (2, 2, 3, 3), (None, 2, 0, 2)),
        both("conv_transpose2d", (1, 3, 3, 3), (3, 2, 3, 3), (None, 1, 0, 0, 2)),
        both("conv_transpose2d", (2, 3, 3), (2, 2, 3), ()),
        both("conv_transpose1d", (1, 2, 3, 3), (2, 2, 3), ()),
        both("max_pool1d", (2, 3, 4, 5), (2,)),
        both("max_pool1d", (1, 3, 4), (2, 1, 2)),
        both("avg_pool1d", (2, 3, 4, 5), (2,)),
        both("group_norm", (2, 5, 3), (2,)),
        both("group_norm", (2,), (1,)),
        pytest.param(
            lambda: F.group_norm(pyrt.zeros(2, 4, 3), 2, pyrt.ones(3)),
            lambda: torch.nn.functional.group_norm(torch.zeros(2, 4, 3), 2, torch.ones(3)),
            id="group_norm weight of another size"),
        both("group_norm", (1, 2, 1), (2,)),
        both("instance_norm", (2, 4, 1), ()),
        both("instance_norm", (2, 4, 3), (), use_input_stats=False),
        both("interpolate", (1, 2, 3), (), size=(2, 2)),
        both("interpolate", (1, 2, 3), (), size=2, scale_factor=2.0),
        both("interpolate", (1, 2, 3), ()),
        both("interpolate", (1, 2, 3), (), size=2, align_corners=True),
        both("interpolate", (1, 2, 3), (), size=2, mode="bilinear"),
        both("interpolate", (1, 2, 3, 3), (), size=2, mode="linear"),
        both("interpolate", (1, 2, 3, 3), (), size=2, mode="cubic"),
        both("interpolate", (1, 2, 3, 3), (), scale_factor=0.1),
        both("interpolate", (2, 3), (), size=2),
        both("pixel_shuffle", (2, 3), (2,)),
        both("pixel_shuffle", (1, 5, 2, 2), (2,)),
        both("pixel_shuffle", (1, 4, 2, 2), (0,)),
        both("pixel_shuffle", (1, 4, 2, 2), (2.0,)),
        both("pixel_unshuffle", (1, 4, 3, 2), (2,)),
        both("unfold", (1, 1, 2, 2), (3,)),
        both("fold", (2, 2, 3, 4), ((3, 3), 2)),
        both("fold", (2, 5, 4), ((3, 3), 2)),
        both("fold", (2, 4, 3), ((3, 3), 2)),
    ]


@needs_torch
@pytest.mark.parametrize("ours,theirs", _errors() if torch is not None else [])
def test_errors_are_raised_as_torch_raises_them(ours, theirs):
    with pytest.raises(Exception) as want:
        theirs()
    with pytest.raises(want.type):
        ours()
