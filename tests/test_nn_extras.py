"""The rarer torch.nn names: fractional max pooling (pyrt/fractional_pool.py and its layers),
AdaptiveLogSoftmaxWithLoss, CrossMapLRN2d, Buffer and the uninitialized tensors, NLLLoss2d,
SyncBatchNorm, DataParallel, Container, and F.upsample*/native_channel_shuffle.

Without PyTorch: the fractional pool's windows written out by hand from Graham's sequence, the
adaptive softmax's probabilities summing to 1 and its loss read off log_prob, CrossMapLRN2d's
Lua loop in float64 and finite differences of it, SyncBatchNorm against BatchNorm2d, state and
errors. With PyTorch: outputs, indices and gradients of sum(y * g) for a random g, given the
same weights and random samples, over hypothesis shapes; reprs, state_dict keys and errors."""

import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.nn as nn
import pyrt.nn.functional as F

try:  # the reference for the comparisons marked needs_torch
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)


def normal(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def grad_of(fn, x, g):
    """pyrt's gradient of sum(fn(x) * g) with respect to x."""
    t = pyrt.tensor(x, requires_grad=True)
    fn(t).backward(pyrt.tensor(g))
    return t.grad.numpy()


# ---- fractional max pooling -------------------------------------------------------------------


def graham_starts(u, size, out, kernel):
    """Window starts of one dim, written out as PyTorch's CPU loop computes them in float32."""
    starts = []
    alpha = np.float32(size - kernel) / np.float32(out - 1) if out > 1 else None
    for i in range(out - 1):
        starts.append(int(np.float32(np.float32(i) + u) * alpha) - int(np.float32(u * alpha)))
    return starts + [size - kernel] if out > 0 else []


def fractional_reference(x, kernel, out, samples):
    """Output and indices of a 2d fractional max pool of x [N, C, H, W] by direct loops."""
    n, c, h, w = x.shape
    y = np.empty((n, c) + tuple(out), np.float32)
    idx = np.empty((n, c) + tuple(out), np.int64)
    for b in range(n):
        for ch in range(c):
            rows = graham_starts(samples[b, ch, 1], h, out[0], kernel[0])
            cols = graham_starts(samples[b, ch, 0], w, out[1], kernel[1])
            for i, r0 in enumerate(rows):
                for j, c0 in enumerate(cols):
                    window = x[b, ch, r0:r0 + kernel[0], c0:c0 + kernel[1]]
                    k = int(np.argmax(window))
                    y[b, ch, i, j] = window.flat[k]
                    idx[b, ch, i, j] = (r0 + k // kernel[1]) * w + c0 + k % kernel[1]
    return y, idx


@st.composite
def fractional_cases(draw, dims):
    spatial = [draw(st.integers(2, 9)) for _ in range(dims)]
    kernel = [draw(st.integers(1, s - 1)) for s in spatial]
    # PyTorch's 3d pool wants out + kernel <= size, the 2d one out + kernel - 1 <= size
    out = [draw(st.integers(1, s - k + (1 if dims == 2 else 0))) for s, k in zip(spatial, kernel)]
    n, c = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    return n, c, spatial, kernel, out, draw(st.integers(0, 2 ** 16))


@SETTINGS
@given(fractional_cases(2))
def test_fractional_max_pool2d_windows_follow_grahams_sequence(case):
    n, c, spatial, kernel, out, seed = case
    x = np.round(normal((n, c, *spatial), seed) * 2)  # ties: the first maximum wins
    u = np.random.default_rng(seed + 1).random((n, c, 2)).astype(np.float32)
    y, idx = F.fractional_max_pool2d(pyrt.tensor(x), kernel, out, return_indices=True,
                                     _random_samples=pyrt.tensor(u))
    want_y, want_idx = fractional_reference(x, kernel, out, u)
    np.testing.assert_array_equal(y.numpy(), want_y)
    np.testing.assert_array_equal(idx.numpy(), want_idx)
    # the gradient adds each output gradient at its index
    g = normal(want_y.shape, seed + 2)
    want_g = np.zeros(x.size, np.float32)
    flat = want_idx + (np.arange(n * c) * x[0, 0].size).reshape(n, c, 1, 1)
    np.add.at(want_g, flat.ravel(), g.ravel())
    got = grad_of(lambda t: F.fractional_max_pool2d(t, kernel, out,
                                                    _random_samples=pyrt.tensor(u)), x, g)
    np.testing.assert_allclose(got.ravel(), want_g, rtol=1e-6, atol=1e-6)


@needs_torch
@SETTINGS
@given(st.sampled_from([2, 3]).flatmap(fractional_cases), st.booleans())
def test_fractional_max_pool_matches_torch_given_the_samples(case, batched):
    n, c, spatial, kernel, out, seed = case
    dims = len(spatial)
    x = normal((n, c, *spatial), seed)
    if seed % 2:
        x = np.round(x)
    if not batched:
        x = x[0]
    u = np.random.default_rng(seed + 1).random((n, c, dims)).astype(np.float32)
    ours = F.fractional_max_pool2d if dims == 2 else F.fractional_max_pool3d
    theirs = TF.fractional_max_pool2d if dims == 2 else TF.fractional_max_pool3d
    xt = torch.tensor(x, requires_grad=True)
    yt, it = theirs(xt, kernel, out, return_indices=True, _random_samples=torch.tensor(u))
    y, i = ours(pyrt.tensor(x), kernel, out, return_indices=True,
                _random_samples=pyrt.tensor(u))
    np.testing.assert_array_equal(y.numpy(), yt.detach().numpy())
    np.testing.assert_array_equal(i.numpy(), it.numpy())
    assert i.dtype == pyrt.int64
    g = normal(tuple(yt.shape), seed + 2)
    yt.backward(torch.tensor(g))
    got = grad_of(lambda t: ours(t, kernel, out, _random_samples=pyrt.tensor(u)), x, g)
    np.testing.assert_allclose(got, xt.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_fractional_max_pool_nan_and_output_ratio():
    x = np.arange(36, dtype=np.float32).reshape(1, 1, 6, 6)
    x[0, 0, 0, :2] = np.nan  # a NaN wins over numbers, the last NaN over earlier ones
    u = pyrt.tensor(np.full((1, 1, 2), 0.5, np.float32))
    y, i = F.fractional_max_pool2d_with_indices(pyrt.tensor(x), 2, output_ratio=0.5,
                                                _random_samples=u)
    assert y.shape == (1, 1, 3, 3)  # int(6 * 0.5)
    assert np.isnan(y.numpy()[0, 0, 0, 0]) and i.numpy()[0, 0, 0, 0] == 1
    if torch is not None:
        _, want = TF.fractional_max_pool2d_with_indices(torch.tensor(x), 2, output_size=3,
                                                        _random_samples=torch.tensor(u.numpy()))
        np.testing.assert_array_equal(i.numpy(), want.numpy())
    # a window's maximum of the increasing image is its bottom-right element
    assert y.numpy()[0, 0, -1, -1] == 35 and i.numpy()[0, 0, -1, -1] == 35


def test_fractional_max_pool_of_empty_windows_is_minus_infinity():
    x = pyrt.tensor(normal((1, 2, 5, 6), 0), requires_grad=True)
    u = pyrt.tensor(np.full((1, 2, 2), 0.25, np.float32))
    y, i = F.fractional_max_pool2d(x, (0, 2), (2, 3), return_indices=True, _random_samples=u)
    assert np.all(y.detach().numpy() == -np.inf)
    np.testing.assert_array_equal(i.numpy()[0, 0], [[0, 2, 4], [30, 32, 34]])  # as PyTorch's
    y.sum().backward()
    assert not x.grad.numpy().any()


def test_fractional_max_pool_draws_from_pyrts_generator():
    x = pyrt.tensor(normal((2, 3, 9, 9), 0))
    pyrt.manual_seed(7)
    a = F.fractional_max_pool2d(x, 2, output_size=4)
    pyrt.manual_seed(7)
    b = F.fractional_max_pool2d(x, 2, output_size=4)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    layer = nn.FractionalMaxPool3d(2, output_ratio=(0.5, 0.5, 0.5))
    assert layer(pyrt.tensor(normal((1, 2, 6, 6, 6), 1))).shape == (1, 2, 3, 3, 3)


FRACTIONAL_ERRORS = [  # (input shape, args, keywords, error, message)
    ((2, 3, 5, 6), (3,), {"output_size": 4}, RuntimeError, "pool height 3 too large"),
    ((2, 3, 5, 6), (3,), {"output_size": (2, 5)}, RuntimeError, "pool width 3 too large"),
    ((2, 3, 5, 6), (3,), {}, ValueError, "requires specifying either"),
    ((2, 3, 5, 6), (3,), {"output_ratio": (0.5,) * 3}, ValueError, "single Int"),
    ((2, 3, 5, 6), (2, 2), {"_random_samples": (1, 3, 2)}, RuntimeError, "size\\(0\\)"),
    ((2, 3, 5, 6), (2, 2), {"_random_samples": (2, 2, 2)}, RuntimeError, "size\\(1\\)"),
    ((2, 3, 5, 6), (2, 2), {"_random_samples": (2, 3, 3)}, RuntimeError, "size\\(2\\)"),
    ((2, 3, 5, 6), (2, 2), {"_random_samples": (2, 3)}, RuntimeError, "3 dimensions"),
    ((1, 2, 3, 5, 6), (2, 2), {}, RuntimeError, "Expected 3D or 4D"),
    ((2, 3, 5, 6), ((2, 2, 2), 2), {}, RuntimeError, "kernel_size must either"),
    ((2, 0, 5, 6), (2, 2), {}, RuntimeError, "non-zero size for non-batch"),
    ((3, 5, 6, 7), (3, (2, 5, 5)), {}, RuntimeError, "pool width 3 too large"),
]


@pytest.mark.parametrize("shape, args, kwargs, error, match", FRACTIONAL_ERRORS)
def test_fractional_max_pool_errors_as_torch(shape, args, kwargs, error, match):
    x = normal(shape, 0)
    samples = kwargs.get("_random_samples")
    if samples is not None:
        samples = np.random.default_rng(0).random(samples).astype(np.float32)
    op = "fractional_max_pool3d" if len(shape) == 4 and len(args) == 2 and isinstance(
        args[1], tuple) and len(args[1]) == 3 else "fractional_max_pool2d"
    ours = {**kwargs, **({"_random_samples": pyrt.tensor(samples)} if samples is not None
                         else {})}
    with pytest.raises(error, match=match):
        getattr(F, op)(pyrt.tensor(x), *args, **ours)
    if torch is not None:
        theirs = {**kwargs, **({"_random_samples": torch.tensor(samples)}
                               if samples is not None else {})}
        with pytest.raises(error, match=match):
            getattr(TF, op)(torch.tensor(x), *args, **theirs)


def test_fractional_max_pool_refuses_samples_outside_the_unit_interval():
    x = pyrt.tensor(normal((1, 1, 6, 6), 0))
    with pytest.raises(ValueError, match="\\[0, 1\\)"):
        F.fractional_max_pool2d(x, 2, 3, _random_samples=pyrt.tensor(np.full((1, 1, 2), 1.5,
                                                                              np.float32)))
    with pytest.raises(TypeError, match="float32"):
        F.fractional_max_pool2d(pyrt.tensor(np.ones((1, 1, 6, 6), np.int64)), 2, 3)


@needs_torch
def test_fractional_layers_repr_state_and_errors_as_torch():
    u = normal((1, 2, 2), 0)
    for ours, theirs in [(nn.FractionalMaxPool2d(3, output_ratio=0.5),
                          torch.nn.FractionalMaxPool2d(3, output_ratio=0.5)),
                         (nn.FractionalMaxPool2d(2, 3, _random_samples=pyrt.tensor(u)),
                          torch.nn.FractionalMaxPool2d(2, 3, _random_samples=torch.tensor(u))),
                         (nn.FractionalMaxPool3d(2, (2, 3, 4)),
                          torch.nn.FractionalMaxPool3d(2, (2, 3, 4)))]:
        assert repr(ours) == repr(theirs)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        assert ours.kernel_size == theirs.kernel_size
    for args, kwargs in [((3,), {}), ((3, 2), {"output_ratio": 0.5}),
                         ((3,), {"output_ratio": 1.5})]:
        for cls in ("FractionalMaxPool2d", "FractionalMaxPool3d"):
            with pytest.raises(ValueError) as theirs:
                getattr(torch.nn, cls)(*args, **kwargs)
            with pytest.raises(ValueError, match=str(theirs.value)[:20]):
                getattr(nn, cls)(*args, **kwargs)
    with pytest.raises(ValueError, match="kernel_size must be greater than 0"):
        nn.FractionalMaxPool3d(0, 2)


# ---- AdaptiveLogSoftmaxWithLoss ---------------------------------------------------------------


def copy_weights(ours, theirs):
    ours.load_state_dict({k: pyrt.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})


def test_adaptive_softmax_probabilities_sum_to_one_and_give_the_loss():
    pyrt.manual_seed(0)
    m = nn.AdaptiveLogSoftmaxWithLoss(12, 15, [4, 9], div_value=2.0, head_bias=True)
    x = pyrt.tensor(normal((6, 12), 1))
    target = np.array([0, 3, 4, 8, 9, 14])
    table = m.log_prob(x).detach().numpy()
    assert table.shape == (6, 15)
    np.testing.assert_allclose(np.exp(table.astype(np.float64)).sum(1), 1, rtol=1e-5)
    out, loss = m(x, pyrt.tensor(target))
    np.testing.assert_allclose(out.detach().numpy(), table[np.arange(6), target], rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(loss.item(), -table[np.arange(6), target].mean(), rtol=1e-5)
    np.testing.assert_array_equal(m.predict(x).numpy(), table.argmax(1))


@needs_torch
@SETTINGS
@given(st.integers(1, 9), st.sampled_from([[3], [2, 6], [1, 4, 7]]), st.booleans(),
       st.integers(0, 2 ** 16))
def test_adaptive_softmax_matches_torch(batch, cutoffs, head_bias, seed):
    torch.manual_seed(seed)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs, div_value=2.0,
                                                 head_bias=head_bias)
    ours = nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs, div_value=2.0, head_bias=head_bias)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    copy_weights(ours, theirs)
    x = normal((batch, 8), seed)
    target = np.random.default_rng(seed).integers(0, 10, batch)
    xt = torch.tensor(x, requires_grad=True)
    out_t, loss_t = theirs(xt, torch.tensor(target))
    xp = pyrt.tensor(x, requires_grad=True)
    out, loss = ours(xp, pyrt.tensor(target))
    np.testing.assert_allclose(out.detach().numpy(), out_t.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    (loss_t + out_t.sum()).backward()
    (loss + out.sum()).backward()
    np.testing.assert_allclose(xp.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-6)
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        if q.grad is None:  # a cluster no target fell in
            assert p.grad is None
            continue
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=name)
    np.testing.assert_allclose(ours.log_prob(pyrt.tensor(x)).detach().numpy(),
                               theirs.log_prob(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(ours.predict(pyrt.tensor(x)).numpy(),
                                  theirs.predict(torch.tensor(x)).numpy())
    one, one_t = ours(pyrt.tensor(x[0]), pyrt.tensor(target[0])), theirs(
        torch.tensor(x[0]), torch.tensor(target[0]))
    assert one.output.shape == tuple(one_t.output.shape) == ()
    np.testing.assert_allclose(one.loss.item(), one_t.loss.item(), rtol=1e-5)


@needs_torch
def test_adaptive_softmax_errors_as_torch():
    for cutoffs in ([], [5, 3], [0, 4], [4, 10], [3, 3]):
        with pytest.raises(ValueError) as theirs:
            torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs)
        with pytest.raises(ValueError, match=str(theirs.value)[:30]):
            nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs)
    ours, theirs = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4]), torch.nn.AdaptiveLogSoftmaxWithLoss(
        8, 10, [4])
    x = normal((3, 8), 0)
    for xs, ts in [(x, [1, 2]), (x[0], [1, 2, 3]), (x, [[1], [2], [3]]), (x, [1, 2, 10]),
                   (x, [1, -1, 2])]:
        with pytest.raises(RuntimeError) as want:
            theirs(torch.tensor(xs), torch.tensor(ts))
        with pytest.raises(RuntimeError, match=str(want.value)[:25].replace("[", "\\[")):
            ours(pyrt.tensor(xs), pyrt.tensor(np.array(ts)))


# ---- CrossMapLRN2d ----------------------------------------------------------------------------


def cross_map_reference(x, size, alpha, beta, k):
    """PyTorch's CrossMapLRN2d forward: its sliding loop over the channels, in float64."""
    x = x.astype(np.float64)
    sq = x * x
    channels = x.shape[1]
    pre_pad = int((size - 1) / 2 + 1)
    scale = np.zeros_like(x)
    scale[:, 0] = sq[:, :min(pre_pad, channels)].sum(1)
    for c in range(1, channels):
        scale[:, c] = scale[:, c - 1]
        if c < channels - pre_pad + 1:
            scale[:, c] += sq[:, c + pre_pad - 1]
        if c > pre_pad:
            scale[:, c] -= sq[:, c - pre_pad]
    return x * (scale * alpha / size + k) ** -beta


@SETTINGS
@given(st.integers(1, 7), st.integers(1, 6), st.integers(0, 2 ** 16))
def test_cross_map_lrn2d_follows_the_loop_and_its_gradient(size, channels, seed):
    x = normal((2, channels, 2, 3), seed)
    layer = nn.CrossMapLRN2d(size, alpha=0.5, beta=0.6, k=1.5)
    want = cross_map_reference(x, size, 0.5, 0.6, 1.5)
    np.testing.assert_allclose(layer(pyrt.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    g = normal(x.shape, seed + 1).astype(np.float64)
    got = grad_of(layer, x, g.astype(np.float32))
    eps = 1e-6
    numeric = np.zeros(x.size)
    for i in range(x.size):
        step = np.zeros(x.size)
        step[i] = eps
        up = cross_map_reference(x + step.reshape(x.shape), size, 0.5, 0.6, 1.5)
        down = cross_map_reference(x - step.reshape(x.shape), size, 0.5, 0.6, 1.5)
        numeric[i] = ((up - down) * g).sum() / (2 * eps)
    np.testing.assert_allclose(got.ravel(), numeric, rtol=1e-3, atol=1e-4)


@needs_torch
@SETTINGS
@given(st.integers(1, 7), st.integers(1, 6), st.integers(0, 2 ** 16))
def test_cross_map_lrn2d_matches_torch(size, channels, seed):
    x = normal((2, channels, 3, 2), seed)
    ours, theirs = nn.CrossMapLRN2d(size, 1e-2, 0.75, 2), torch.nn.CrossMapLRN2d(size, 1e-2,
                                                                                   0.75, 2)
    assert repr(ours) == repr(theirs)
    np.testing.assert_allclose(ours(pyrt.tensor(x)).numpy(),
                               theirs(torch.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="Expected input to be 4D, got 3D instead"):
        ours(pyrt.tensor(x[0]))


def test_cross_map_lrn2d_is_local_response_norm_below_the_late_channel():
    # while no channel reaches pre_pad, the window is LocalResponseNorm's (odd size)
    x = pyrt.tensor(normal((2, 3, 4, 4), 0))
    np.testing.assert_allclose(nn.CrossMapLRN2d(5, 0.1, 0.75, 1.0)(x).numpy(),
                               nn.LocalResponseNorm(5, 0.1, 0.75, 1.0)(x).numpy(), rtol=1e-6)


# ---- Buffer, UninitializedParameter, UninitializedBuffer ---------------------------------------


def test_buffer_assignment_registers_a_buffer():
    m = nn.Module()
    m.kept = nn.Buffer(pyrt.ones(3))
    m.scratch = nn.Buffer(pyrt.zeros(2), persistent=False)
    m.plain = pyrt.ones(1)
    assert [name for name, _ in m.named_buffers()] == ["kept", "scratch"]
    assert list(m.state_dict()) == ["kept"]
    assert m.kept.persistent and not m.scratch.persistent
    if torch is not None:
        t = torch.nn.Module()
        t.kept = torch.nn.Buffer(torch.ones(3))
        t.scratch = torch.nn.Buffer(torch.zeros(2), persistent=False)
        assert list(t.state_dict()) == list(m.state_dict())
    m.kept = nn.Buffer(pyrt.zeros(3), persistent=False)  # assigned again: now not persistent
    assert list(m.state_dict()) == []
    assert nn.Buffer().shape == (0,)


def test_uninitialized_tensors_materialize_in_place():
    p = nn.UninitializedParameter()
    b = nn.UninitializedBuffer()
    assert isinstance(p, nn.Parameter) and isinstance(b, pyrt.Tensor)
    assert repr(p) == "<UninitializedParameter>" and repr(b) == "<UninitializedBuffer>"
    with pytest.raises(RuntimeError, match="Can't access the shape"):
        _ = p.shape
    p.materialize((2, 3))
    b.materialize(4)
    assert type(p) is nn.Parameter and p.shape == (2, 3) and p.requires_grad
    assert type(b) is pyrt.Tensor and b.shape == (4,)
    with pytest.raises(TypeError, match="float32"):
        nn.UninitializedParameter().materialize((2,), dtype="float64")


def test_lazy_layers_hold_uninitialized_placeholders_until_their_first_input():
    layer = nn.LazyBatchNorm1d()
    weight, stats = layer.weight, layer.num_batches_tracked
    assert isinstance(weight, nn.UninitializedParameter)
    assert isinstance(stats, nn.UninitializedBuffer) and stats.dtype == pyrt.int64
    layer(pyrt.tensor(normal((4, 3), 0)))
    assert type(layer.weight) is nn.Parameter and layer.weight is weight
    assert layer.weight.shape == (3,) and not isinstance(layer.weight, nn.UninitializedParameter)
    if torch is not None:
        assert isinstance(torch.nn.LazyLinear(2).weight, torch.nn.UninitializedParameter)


# ---- NLLLoss2d, Container, DataParallel, SyncBatchNorm ----------------------------------------


def test_nll_loss_2d_is_nll_loss_with_a_warning():
    x = pyrt.tensor(normal((2, 4, 3, 3), 0))
    target = pyrt.tensor(np.random.default_rng(0).integers(0, 4, (2, 3, 3)))
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
        loss = nn.NLLLoss2d(reduction="sum")
    np.testing.assert_allclose(loss(x, target).item(),
                               nn.NLLLoss(reduction="sum")(x, target).item())
    with pytest.warns(FutureWarning):
        assert nn.NLLLoss2d(reduce=False).reduction == "none"
    if torch is not None:
        with pytest.warns(FutureWarning):
            want = torch.nn.NLLLoss2d(reduction="sum")(torch.tensor(x.numpy()),
                                                       torch.tensor(target.numpy()))
        np.testing.assert_allclose(loss(x, target).item(), want.item(), rtol=1e-6)
        with pytest.warns(FutureWarning):
            assert repr(nn.NLLLoss2d()) == "NLLLoss2d()"


def test_container_holds_its_keyword_modules():
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        c = nn.Container(a=nn.Linear(2, 3), b=nn.ReLU())
    assert list(c.state_dict()) == ["a.weight", "a.bias"]
    assert [name for name, _ in c.named_children()] == ["a", "b"]


def test_data_parallel_runs_its_module():
    inner = nn.Linear(3, 2)
    wrapped = nn.DataParallel(inner, device_ids=[0], output_device=0)
    x = pyrt.tensor(normal((4, 3), 0))
    np.testing.assert_array_equal(wrapped(x).detach().numpy(), inner(x).detach().numpy())
    assert wrapped.module is inner
    assert list(wrapped.state_dict()) == ["module.weight", "module.bias"]
    with pytest.raises(TypeError, match="Module"):
        nn.DataParallel(lambda t: t)
    if torch is not None:
        theirs = torch.nn.DataParallel(torch.nn.Linear(3, 2))
        assert repr(wrapped) == repr(theirs)
        assert list(wrapped.state_dict()) == list(theirs.state_dict())


@SETTINGS
@given(st.integers(2, 6), st.booleans(), st.integers(0, 2 ** 16))
def test_sync_batch_norm_normalises_any_rank(ndim, training, seed):
    shape = (3, 4) + (2,) * (ndim - 2)
    x = normal(shape, seed) * 3 + 1
    layer = nn.SyncBatchNorm(4)
    layer.train(training)
    layer.running_mean.data[...] = 0.5
    y = layer(pyrt.tensor(x)).detach().numpy()
    axes = (0,) + tuple(range(2, ndim))
    shape_c = (1, 4) + (1,) * (ndim - 2)
    if training:
        mean, var = x.mean(axes), x.var(axes)
        want = (x - mean.reshape(shape_c)) / np.sqrt(var.reshape(shape_c) + 1e-5)
        unbiased = var * x[:, 0].size / (x[:, 0].size - 1)
        np.testing.assert_allclose(layer.running_var.numpy(), 0.9 + 0.1 * unbiased, rtol=1e-5)
    else:
        want = (x - 0.5) / np.sqrt(1 + 1e-5)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
    if torch is not None:
        theirs = torch.nn.SyncBatchNorm(4)
        assert repr(layer) == repr(theirs)
        assert list(layer.state_dict()) == list(theirs.state_dict())


def test_sync_batch_norm_conversion_keeps_weights_and_stats():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4),
                          nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)))
    model[1].running_mean.data[...] = 2.0
    model[2][1].eval()
    weight, stats = model[1].weight, model[1].running_mean
    keys = list(model.state_dict())
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert type(converted[1]) is nn.SyncBatchNorm and type(converted[2][1]) is nn.SyncBatchNorm
    assert converted[1].weight is weight and converted[1].running_mean is stats
    assert not converted[2][1].training and list(converted.state_dict()) == keys
    with pytest.raises(ValueError, match="expected at least 2D input \\(got 1D input\\)"):
        nn.SyncBatchNorm(3)(pyrt.ones(3))
    with pytest.raises(ValueError, match="one process"):
        nn.SyncBatchNorm(3, process_group=object())


# ---- F.upsample*, native_channel_shuffle ------------------------------------------------------


@pytest.mark.parametrize("name, kwargs, mode", [
    ("upsample", {"scale_factor": 2, "mode": "bilinear"}, {"mode": "bilinear"}),
    ("upsample_nearest", {"size": (5, 7)}, {"size": (5, 7), "mode": "nearest"}),
    ("upsample_bilinear", {"scale_factor": 2},
     {"scale_factor": 2, "mode": "bilinear", "align_corners": True}),
])
def test_upsample_aliases_warn_and_interpolate(name, kwargs, mode):
    x = normal((2, 3, 3, 4), 0)
    with pytest.warns(UserWarning, match=f"`nn.functional.{name}` is deprecated") as record:
        y = getattr(F, name)(pyrt.tensor(x), **kwargs)
    assert record[0].filename == __file__  # the warning points at the caller
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = F.interpolate(pyrt.tensor(x), **{"scale_factor": kwargs.get("scale_factor"),
                                                **mode})
        np.testing.assert_array_equal(y.numpy(), want.numpy())
        if torch is not None:
            theirs = getattr(TF, name)(torch.tensor(x), **kwargs)
            np.testing.assert_allclose(y.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


def test_native_channel_shuffle_is_channel_shuffle():
    x = normal((2, 6, 2, 2), 0)
    y = F.native_channel_shuffle(pyrt.tensor(x), 3).numpy()
    np.testing.assert_array_equal(y, x.reshape(2, 3, 2, 2, 2).transpose(0, 2, 1, 3, 4)
                                  .reshape(x.shape))
    if torch is not None:
        np.testing.assert_array_equal(y, TF.native_channel_shuffle(torch.tensor(x), 3).numpy())


@needs_torch
def test_new_names_exist_in_torch_and_pyrt_functional():
    import pyrt.functional as PF

    for name in ("fractional_max_pool2d", "fractional_max_pool3d_with_indices", "upsample",
                 "upsample_nearest", "upsample_bilinear", "native_channel_shuffle"):
        assert getattr(F, name) is getattr(PF, name) and name in PF.__all__
        assert hasattr(TF, name)
    for name in ("FractionalMaxPool2d", "AdaptiveLogSoftmaxWithLoss", "CrossMapLRN2d", "Buffer",
                 "UninitializedParameter", "SyncBatchNorm", "DataParallel", "NLLLoss2d"):
        assert name in nn.__all__ and hasattr(torch.nn, name)


# ---- F.conv_tbc, nn.grad ----------------------------------------------------------------------


def test_conv_tbc_is_a_time_major_convolution():
    x, w, b = normal((6, 2, 3), 0), normal((3, 3, 4), 1), normal((4,), 2)
    y = F.conv_tbc(pyrt.tensor(x), pyrt.tensor(w), pyrt.tensor(b), 1).numpy()
    padded = np.pad(x, ((1, 1), (0, 0), (0, 0))).astype(np.float64)
    want = np.stack([b + sum(padded[t + k] @ w[k] for k in range(3)) for t in range(6)])
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    assert F.conv_tbc(pyrt.tensor(x[:2]), pyrt.tensor(w), pyrt.tensor(b)).shape == (0, 2, 4)


@needs_torch
@pytest.mark.parametrize("pad", [0, 2])
def test_conv_tbc_matches_torch_with_gradients(pad):
    arrays = normal((7, 2, 3), 0), normal((3, 3, 4), 1), normal((4,), 2)
    ours = [pyrt.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, yt = F.conv_tbc(*ours, pad), torch.conv_tbc(*theirs, pad)
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    g = normal(tuple(yt.shape), 3)
    y.backward(pyrt.tensor(g))
    yt.backward(torch.tensor(g))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)
    for bad in [(normal((5, 2), 0), arrays[1], arrays[2]), (arrays[0], normal((3, 3), 0),
                                                           arrays[2]),
                (arrays[0], normal((3, 2, 4), 0), arrays[2]), (arrays[0], arrays[1],
                                                               normal((5,), 0))]:
        with pytest.raises(RuntimeError) as want:
            torch.conv_tbc(*map(torch.tensor, bad))
        with pytest.raises(RuntimeError, match=re.escape(str(want.value))):
            F.conv_tbc(*map(pyrt.tensor, bad))


@st.composite
def conv_cases(draw):
    dims = draw(st.integers(1, 3))
    groups = draw(st.integers(1, 2))
    c_in, c_out = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    stride = tuple(draw(st.integers(1, 2)) for _ in range(dims))
    padding = tuple(draw(st.integers(0, 1)) for _ in range(dims))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(dims))
    spatial = tuple(draw(st.integers(5, 7)) for _ in range(dims))
    return dims, groups, c_in, c_out, kernel, stride, padding, dilation, spatial


@SETTINGS
@given(conv_cases(), st.integers(0, 2 ** 16))
def test_nn_grad_is_the_convolutions_own_gradient(case, seed):
    dims, groups, c_in, c_out, kernel, stride, padding, dilation, spatial = case
    x = normal((2, c_in) + spatial, seed)
    w = normal((c_out, c_in // groups) + kernel, seed + 1)
    conv = getattr(F, f"conv{dims}d")
    xt, wt = pyrt.tensor(x, requires_grad=True), pyrt.tensor(w, requires_grad=True)
    y = conv(xt, wt, None, stride, padding, dilation, groups)
    g = normal(y.shape, seed + 2)
    y.backward(pyrt.tensor(g))
    grad_x = getattr(nn.grad, f"conv{dims}d_input")(x.shape, pyrt.tensor(w), pyrt.tensor(g),
                                                     stride, padding, dilation, groups)
    grad_w = getattr(nn.grad, f"conv{dims}d_weight")(pyrt.tensor(x), w.shape, pyrt.tensor(g),
                                                      stride, padding, dilation, groups)
    np.testing.assert_allclose(grad_x.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(grad_w.numpy(), wt.grad.numpy(), rtol=1e-4, atol=1e-4)
    if torch is not None:
        want = getattr(torch.nn.grad, f"conv{dims}d_weight")(
            torch.tensor(x), w.shape, torch.tensor(g), stride, padding, dilation, groups)
        np.testing.assert_allclose(grad_w.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)
        assert F.grad is nn.grad and TF.grad is torch.nn.grad


def test_nn_grad_refuses_sizes_of_another_convolution():
    w, g = pyrt.tensor(normal((2, 3, 3), 0)), pyrt.tensor(normal((1, 2, 4), 1))
    with pytest.raises(RuntimeError, match="does not match"):
        nn.grad.conv1d_input((1, 3, 9), w, g)
    with pytest.raises(RuntimeError, match="one convolution"):
        nn.grad.conv1d_weight(pyrt.tensor(normal((1, 3, 6), 0)), (2, 4, 3), g)
