"""Bilinear and F.bilinear, ChannelShuffle and F.channel_shuffle, LocalResponseNorm and
F.local_response_norm, AlphaDropout and FeatureAlphaDropout, F.pdist, F.gumbel_softmax and
TripletMarginWithDistanceLoss: values and gradients against NumPy references of their
definitions (finite differences where the gradient has no closed form here) and, where
installed, PyTorch; the random ops' statistics, structure and seeded determinism; torch's
errors; module parameters and reprs."""

import importlib
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt.alpha_dropout import alpha_dropout, feature_alpha_dropout
from pyrt.bilinear import bilinear
from pyrt.channel_ops import channel_shuffle, local_response_norm
from pyrt.distance_losses import triplet_margin_with_distance_loss
from pyrt.functional import _dropout_mask
from pyrt.gumbel import gumbel_noise, gumbel_softmax
from pyrt.loss_functions import triplet_margin_loss
from pyrt.nn.alpha_dropout import AlphaDropout, FeatureAlphaDropout
from pyrt.nn.bilinear import Bilinear
from pyrt.nn.channel_ops import ChannelShuffle, LocalResponseNorm
from pyrt.nn.distance import CosineSimilarity, PairwiseDistance
from pyrt.nn.distance_losses import TripletMarginWithDistanceLoss
from pyrt.pdist import pdist
from pyrt.tensor import generator
from pyrt.vector_functions import cosine_similarity

try:  # the reference for the comparisons marked needs_torch; the others use NumPy's
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = TF = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

ALPHA_DROPOUT = importlib.import_module("pyrt.alpha_dropout")  # (its _dropout_mask is patched)
F32 = np.float32


def rng(seed=0):
    return np.random.default_rng(seed)


def normal(r, shape):
    return r.standard_normal(shape).astype(F32)


def leaf(array):
    return pyrt.tensor(array, requires_grad=True)


def values(t):
    """A pyrt or torch tensor's values (or an array's) as a NumPy array."""
    if isinstance(t, pyrt.Tensor):
        return np.asarray(t.data)
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def assert_close(got, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(values(got), want, rtol=rtol, atol=atol)


def finite_difference(loss, x, h=1e-6):
    """d loss / d x by central differences, in float64."""
    x = x.astype(np.float64)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        grad[i] = (loss(up) - loss(down)) / (2 * h)
    return grad


# ---- bilinear --------------------------------------------------------------------------------


def bilinear_reference(x1, x2, w, b):
    y = np.einsum("...i,oij,...j->...o", x1.astype(np.float64), w.astype(np.float64),
                  x2.astype(np.float64))
    return y if b is None else y + b


@settings(max_examples=40, deadline=None)
@given(lead=st.lists(st.integers(0, 3), max_size=3).map(tuple), in1=st.integers(1, 5),
       in2=st.integers(1, 5), out=st.integers(1, 4), with_bias=st.booleans(),
       seed=st.integers(0, 2**16))
def test_bilinear_matches_its_definition_and_gradients(lead, in1, in2, out, with_bias, seed):
    """Values x1^T A_o x2 + b_o, and the gradients of sum(y * g): g_o x1^T A_o for x2, A_o x2
    g_o for x1, x1 x2^T g_o for A_o and g_o for b_o (einsums in float64)."""
    r = rng(seed)
    x1, x2 = normal(r, lead + (in1,)), normal(r, lead + (in2,))
    w, b = normal(r, (out, in1, in2)), normal(r, (out,)) if with_bias else None
    g = normal(r, lead + (out,))
    t1, t2, tw = leaf(x1), leaf(x2), leaf(w)
    tb = None if b is None else leaf(b)
    y = bilinear(t1, t2, tw, tb)
    assert y.shape == lead + (out,)
    assert_close(y, bilinear_reference(x1, x2, w, b))
    (y * pyrt.tensor(g)).sum().backward()
    # the leading dims as one batch dim b
    x1d, x2d, gd = (a.astype(np.float64).reshape(-1, a.shape[-1]) for a in (x1, x2, g))
    wd = w.astype(np.float64)
    assert_close(t1.grad, np.einsum("bo,oij,bj->bi", gd, wd, x2d).reshape(x1.shape))
    assert_close(t2.grad, np.einsum("bo,oij,bi->bj", gd, wd, x1d).reshape(x2.shape))
    assert_close(tw.grad, np.einsum("bo,bi,bj->oij", gd, x1d, x2d))
    if tb is not None:
        assert_close(tb.grad, gd.sum(0))


@needs_torch
@pytest.mark.parametrize("lead,in1,in2,out,with_bias", [
    ((4,), 3, 5, 6, True), ((2, 3), 4, 2, 3, False), ((), 3, 4, 2, True),
    ((0,), 3, 2, 4, True), ((5,), 1, 1, 1, True), ((2, 1, 3), 6, 7, 5, True)])
def test_bilinear_matches_torch(lead, in1, in2, out, with_bias):
    r = rng(len(lead) + in1)
    arrays = [normal(r, lead + (in1,)), normal(r, lead + (in2,)), normal(r, (out, in1, in2))]
    arrays += [normal(r, (out,))] if with_bias else []
    ours = [leaf(a) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, yt = bilinear(*ours), TF.bilinear(*theirs)
    g = normal(r, yt.shape)
    (y * pyrt.tensor(g)).sum().backward()
    (yt * torch.tensor(g)).sum().backward()
    assert y.shape == tuple(yt.shape)
    assert_close(y, values(yt))
    for a, b in zip(ours, theirs):
        assert_close(a.grad, values(b.grad))


BILINEAR_ERRORS = [  # (input1 shape, input2 shape, weight shape, bias shape, error, message)
    ((1, 2, 3), (2, 5), (4, 3, 5), None, RuntimeError, "input dimensions do not match"),
    ((3, 3), (2, 5), (4, 3, 5), None, RuntimeError, "batch dimensions do not match at dim 0"),
    ((2, 4), (2, 5), (4, 3, 5), None, RuntimeError, "input1 size does not match weight size"),
    ((2, 3), (2, 4), (4, 3, 5), None, RuntimeError, "input2 size does not match weight size"),
    ((2, 3), (2, 5), (4, 3, 5), (3,), RuntimeError, "bias size does not match weight size"),
    ((2, 3), (2, 5), (4, 1), None, RuntimeError, "weight"),
    ((), (), (4, 3, 5), None, IndexError, "no dimensions"),
]


@pytest.mark.parametrize("s1,s2,sw,sb,error,message", BILINEAR_ERRORS)
def test_bilinear_refuses_what_torch_refuses(s1, s2, sw, sb, error, message):
    r = rng(1)
    args = [normal(r, s) for s in (s1, s2, sw)] + ([] if sb is None else [normal(r, sb)])
    with pytest.raises(error, match=message):
        bilinear(*(pyrt.tensor(a) for a in args))
    if torch is not None:
        with pytest.raises(error):
            TF.bilinear(*(torch.tensor(a) for a in args))
    with pytest.raises(TypeError, match="'weight' must be Tensor"):
        bilinear(pyrt.tensor(args[0]), pyrt.tensor(args[1]), args[2])


def test_bilinear_module_draws_its_parameters_as_torch_defines_them():
    """weight and then bias uniform in +-1/sqrt(in1_features) from pyrt's generator (the
    draws of init.uniform_), repeated by the same seed; forward is F.bilinear."""
    pyrt.manual_seed(7)
    m = Bilinear(9, 4, 3)
    pyrt.manual_seed(7)
    bound = 1 / math.sqrt(9)
    w = generator().uniform(-bound, bound, (3, 9, 4)).astype(F32)
    b = generator().uniform(-bound, bound, (3,)).astype(F32)
    assert np.array_equal(values(m.weight), w) and np.array_equal(values(m.bias), b)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert [name for name, _ in m.named_parameters()] == ["weight", "bias"]
    assert Bilinear(2, 3, 4, bias=False).bias is None
    r = rng(2)
    x1, x2 = normal(r, (5, 9)), normal(r, (5, 4))
    y = m(pyrt.tensor(x1), pyrt.tensor(x2))
    assert_close(y, bilinear_reference(x1, x2, w, b))
    y.sum().backward()
    assert m.weight.grad.shape == (3, 9, 4) and m.bias.grad.shape == (3,)


@pytest.mark.parametrize("args", [(0, 2, 3), (2, 0, 3), (2, 3, 0), (2, 3, -1), (2.0, 3, 4)])
def test_bilinear_module_refuses_bad_feature_counts(args):
    name = ["in1_features", "in2_features", "out_features"][
        next(i for i, v in enumerate(args) if not (isinstance(v, int) and v > 0))]
    with pytest.raises(ValueError, match=f"{name} must be > 0"):
        Bilinear(*args)


def test_bilinear_module_repr():
    assert repr(Bilinear(3, 5, 4)) == ("Bilinear(in1_features=3, in2_features=5, "
                                       "out_features=4, bias=True)")
    assert repr(Bilinear(3, 5, 4, bias=False)).endswith("bias=False)")
    if torch is not None:
        for bias in (True, False):
            assert repr(Bilinear(2, 7, 1, bias)) == repr(torch.nn.Bilinear(2, 7, 1, bias))
            assert (list(Bilinear(2, 7, 1, bias).state_dict())
                    == list(torch.nn.Bilinear(2, 7, 1, bias).state_dict()))


# ---- channel_shuffle -------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(n=st.integers(0, 3), groups=st.integers(1, 4), per_group=st.integers(0, 4),
       rest=st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple),
       seed=st.integers(0, 2**16))
def test_channel_shuffle_reads_the_group_grid_by_columns(n, groups, per_group, rest, seed):
    """Output channel i * groups + g is input channel g * per_group + i; shuffling again with
    per_group groups undoes it, and that is the gradient of sum(y * w)."""
    c = groups * per_group
    x = normal(rng(seed), (n, c) + rest)
    y = channel_shuffle(leaf(x), groups)
    want = np.empty_like(x)
    for g in range(groups):
        for i in range(per_group):
            want[:, i * groups + g] = x[:, g * per_group + i]
    assert np.array_equal(values(y), want)
    if c:
        assert np.array_equal(values(channel_shuffle(y, per_group)), x)
    t = leaf(x)
    w = normal(rng(seed + 1), x.shape)
    (channel_shuffle(t, groups) * pyrt.tensor(w)).sum().backward()
    unshuffled = values(channel_shuffle(pyrt.tensor(w), per_group)) if c else w
    assert np.array_equal(values(t.grad), unshuffled)


def test_channel_shuffle_small_example_and_integers():
    x = pyrt.tensor(np.arange(6).reshape(1, 6, 1))
    y = channel_shuffle(x, 2)
    assert y.dtype == np.int64
    assert values(y).ravel().tolist() == [0, 3, 1, 4, 2, 5]
    assert values(channel_shuffle(x, 3)).ravel().tolist() == [0, 2, 4, 1, 3, 5]


@needs_torch
@pytest.mark.parametrize("shape,groups", [((2, 6, 3), 3), ((1, 8, 2, 3), 4), ((2, 4, 1, 2, 2), 2),
                                          ((3, 5, 2), 1), ((0, 6, 3), 2)])
def test_channel_shuffle_matches_torch(shape, groups):
    x = normal(rng(3), shape)
    want = TF.channel_shuffle(torch.tensor(x), groups).numpy()
    assert np.array_equal(values(channel_shuffle(pyrt.tensor(x), groups)), want)
    assert np.array_equal(values(ChannelShuffle(groups)(pyrt.tensor(x))), want)


@pytest.mark.parametrize("shape,groups,error,message", [
    ((2, 6), 2, RuntimeError, "expects input with > 2 dims"),
    ((6,), 2, RuntimeError, "expects input with > 2 dims"),
    ((2, 6, 3), 0, RuntimeError, "groups to divide channels in must be positive"),
    ((2, 6, 3), -2, RuntimeError, "must be positive"),
    ((2, 6, 3), 4, RuntimeError, "Got 6 channels and 4 groups"),
    ((2, 6, 3), 2.0, TypeError, "'groups'"),
])
def test_channel_shuffle_errors_as_torch(shape, groups, error, message):
    x = normal(rng(0), shape)
    with pytest.raises(error, match=message):
        channel_shuffle(pyrt.tensor(x), groups)
    with pytest.raises(error, match=message):
        ChannelShuffle(groups)(pyrt.tensor(x))
    if torch is not None:
        with pytest.raises(error):
            TF.channel_shuffle(torch.tensor(x), groups)


def test_channel_shuffle_module_repr():
    assert repr(ChannelShuffle(3)) == "ChannelShuffle(groups=3)"
    if torch is not None:
        assert repr(ChannelShuffle(5)) == repr(torch.nn.ChannelShuffle(5))


# ---- local_response_norm ---------------------------------------------------------------------


def lrn_reference(x, size, alpha, beta, k):
    """x / (k + alpha / size * sum of x^2 over channels c - size // 2 ... c + (size - 1) // 2
    that exist), in float64."""
    x = x.astype(np.float64)
    c = x.shape[1]
    window = np.zeros_like(x)
    for ch in range(c):
        lo, hi = max(0, ch - size // 2), min(c, ch + (size - 1) // 2 + 1)
        window[:, ch] = (x[:, lo:hi] ** 2).sum(axis=1)
    return x / (k + alpha * window / size) ** beta


LRN_SETTINGS = st.tuples(st.sampled_from([1e-4, 0.1, 2.0]), st.sampled_from([0.75, 0.5, 1.3]),
                         st.sampled_from([1.0, 2.0, 0.5]))


@settings(max_examples=50, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=3, max_size=5).map(tuple),
       size=st.integers(1, 7), params=LRN_SETTINGS, seed=st.integers(0, 2**16))
def test_local_response_norm_matches_its_definition(shape, size, params, seed):
    x = normal(rng(seed), shape) * 2
    y = local_response_norm(pyrt.tensor(x), size, *params)
    assert y.shape == shape and y.dtype == F32
    assert_close(y, lrn_reference(x, size, *params), rtol=2e-6, atol=1e-6)
    m = LocalResponseNorm(size, *params)
    assert np.array_equal(values(m(pyrt.tensor(x))), values(y))


@pytest.mark.parametrize("shape,size", [((2, 5, 3), 3), ((1, 4, 2, 2), 2), ((2, 3, 2), 6)])
def test_local_response_norm_gradient_matches_finite_differences(shape, size):
    r = rng(size)
    x, g = normal(r, shape), r.standard_normal(shape)
    params = (0.5, 0.75, 1.0)
    t = leaf(x)
    (local_response_norm(t, size, *params) * pyrt.tensor(g.astype(F32))).sum().backward()
    fd = finite_difference(lambda v: float((lrn_reference(v, size, *params) * g).sum()), x)
    assert_close(t.grad, fd, rtol=1e-4, atol=1e-5)


@needs_torch
@pytest.mark.parametrize("shape,size,params", [
    ((2, 6, 3), 3, {}), ((2, 6, 3, 4), 2, {"alpha": 0.1, "beta": 0.5, "k": 2.0}),
    ((1, 5, 2, 3, 2), 4, {"alpha": 1.0}), ((3, 4, 5), 9, {"alpha": 0.3, "k": 0.5}),
    ((2, 3, 2, 2, 2, 2), 1, {"alpha": 0.2})])
def test_local_response_norm_matches_torch(shape, size, params):
    r = rng(len(shape))
    x, g = normal(r, shape) * 3, normal(r, shape)
    t, tt = leaf(x), torch.tensor(x, requires_grad=True)
    y, yt = local_response_norm(t, size, **params), TF.local_response_norm(tt, size, **params)
    (y * pyrt.tensor(g)).sum().backward()
    (yt * torch.tensor(g)).sum().backward()
    assert_close(y, values(yt))
    assert_close(t.grad, values(tt.grad))
    assert_close(LocalResponseNorm(size, **params)(pyrt.tensor(x)), values(yt))


def test_local_response_norm_edge_cases_and_errors():
    empty = pyrt.tensor(np.zeros((0, 4, 3), F32))
    assert local_response_norm(empty, 2) is empty
    ints = pyrt.tensor(np.arange(12).reshape(1, 6, 2))
    y = local_response_norm(ints, 3, alpha=0.5)
    assert y.dtype == F32
    assert_close(y, lrn_reference(np.arange(12.0).reshape(1, 6, 2), 3, 0.5, 0.75, 1.0))
    x = pyrt.tensor(np.ones((2, 6), F32))
    with pytest.raises(ValueError, match=r"Expected 3D or higher dimensionality input \(got 2"):
        local_response_norm(x, 2)
    x3 = pyrt.tensor(np.ones((2, 6, 3), F32))
    for size in (0, -1):
        with pytest.raises(RuntimeError, match="size must be greater than zero"):
            local_response_norm(x3, size)
    with pytest.raises(TypeError, match="size"):
        local_response_norm(x3, 2.5)
    with pytest.raises(TypeError, match="alpha"):
        local_response_norm(x3, 2, alpha="big")
    with pytest.raises(TypeError, match="'input' must be Tensor"):
        local_response_norm(np.ones((2, 6, 3), F32), 2)
    if torch is not None:
        with pytest.raises(ValueError):
            TF.local_response_norm(torch.ones(2, 6), 2)
        with pytest.raises(RuntimeError):
            TF.local_response_norm(torch.ones(2, 6, 3), 0)


def test_local_response_norm_module_repr():
    assert repr(LocalResponseNorm(3)) == "LocalResponseNorm(3, alpha=0.0001, beta=0.75, k=1.0)"
    if torch is not None:
        for args in ((3,), (2, 1e-3, 0.5, 2), (5, 0.1, 1.0, 0.5)):
            assert repr(LocalResponseNorm(*args)) == repr(torch.nn.LocalResponseNorm(*args))


# ---- alpha_dropout and feature_alpha_dropout -------------------------------------------------


# SELU's negative saturation, -scale * alpha, from the constants of Klambauer et al. (2017)
SELU_SATURATION = -1.0507009873554804934193349852946 * 1.6732632423543772848170429916717


def alpha_constants(p):
    """(a, kept shift, dropped value): a kept unit becomes a x + shift, a dropped one the
    saturation value mapped by the same affine map, a alpha' + shift."""
    a = 1 / math.sqrt((1 - p) * (1 + p * SELU_SATURATION ** 2))
    shift = -a * SELU_SATURATION * p
    return a, shift, a * SELU_SATURATION + shift


def drawn_keep(seed, shape, p):
    """The mask that the ops draw after pyrt.manual_seed(seed)."""
    pyrt.manual_seed(seed)
    return _dropout_mask(pyrt.tensor(np.zeros(1, F32)), shape, p) != 0


@pytest.mark.parametrize("fn", [alpha_dropout, feature_alpha_dropout])
def test_alpha_dropout_is_the_identity_unless_training_with_p_above_0(fn):
    x = pyrt.tensor(normal(rng(0), (3, 4, 2)))
    assert fn(x) is x  # training=False by default, as in PyTorch
    assert fn(x, 0.5, False) is x and fn(x, 0.0, True) is x
    empty = pyrt.tensor(np.zeros((0, 3), F32))
    assert fn(empty, 0.5, True) is empty
    one = pyrt.tensor(np.zeros(5, F32))
    assert feature_alpha_dropout(one, 0.5, False) is one


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout_maps_kept_and_dropped_units_by_the_formula(p, feature):
    """With the mask drawn after the same seed: kept units a x + a alpha p, dropped ones
    a alpha (p - 1), the gradient a on kept units and 0 on dropped ones; whole (sample,
    channel) slices for the feature variant."""
    shape = (4, 6, 3, 2)
    x = normal(rng(1), shape)
    mask_shape = shape[:2] + (1, 1) if feature else shape
    keep = np.broadcast_to(drawn_keep(11, mask_shape, p), shape)
    pyrt.manual_seed(11)
    t = leaf(x)
    fn = feature_alpha_dropout if feature else alpha_dropout
    y = fn(t, p, True)
    a, shift, dropped = alpha_constants(p)
    assert_close(y, np.where(keep, a * x.astype(np.float64) + shift, dropped), rtol=1e-6)
    y.sum().backward()
    assert_close(t.grad, np.where(keep, a, 0.0), rtol=1e-6)
    assert 0 < keep.mean() < 1


@pytest.mark.parametrize("p", [0.2, 0.5, 0.8])
def test_alpha_dropout_keeps_zero_mean_and_unit_variance(p):
    """On a standard normal input: mean 0 and variance 1 kept (to the sampling error of
    4e5 draws), a fraction p of the units dropped."""
    x = normal(rng(2), (400_000,))
    pyrt.manual_seed(3)
    y = values(alpha_dropout(pyrt.tensor(x), p, True)).astype(np.float64)
    assert abs(y.mean()) < 0.01 and abs(y.std() - 1) < 0.01
    dropped = alpha_constants(p)[2]
    assert abs(np.mean(np.isclose(y, dropped, rtol=0, atol=1e-6)) - p) < 0.005


def test_feature_alpha_dropout_drops_whole_channels_and_keeps_the_moments():
    x = normal(rng(4), (2000, 50, 4))
    pyrt.manual_seed(5)
    y = values(feature_alpha_dropout(pyrt.tensor(x), 0.3, True)).astype(np.float64)
    dropped = np.isclose(y, alpha_constants(0.3)[2], rtol=0, atol=1e-6)
    assert np.all(dropped.all(axis=2) | ~dropped.any(axis=2))
    assert abs(dropped.all(axis=2).mean() - 0.3) < 0.01
    assert abs(y.mean()) < 0.01 and abs(y.std() - 1) < 0.01


@pytest.mark.parametrize("fn", [alpha_dropout, feature_alpha_dropout])
def test_alpha_dropout_repeats_under_the_same_seed(fn):
    x = pyrt.tensor(normal(rng(6), (8, 5, 3)))
    pyrt.manual_seed(21)
    first = values(fn(x, 0.4, True))
    pyrt.manual_seed(21)
    again = values(fn(x, 0.4, True))
    other = values(fn(x, 0.4, True))  # the generator moved on
    assert np.array_equal(first, again) and not np.array_equal(first, other)


def test_alpha_dropout_with_p_1_is_input_times_zero():
    x = np.array([[1.0, -2.0, np.nan]], F32)
    for fn in (alpha_dropout, feature_alpha_dropout):
        t = leaf(x)
        y = fn(t, 1.0, True)
        assert np.array_equal(values(y), x * 0, equal_nan=True)
        y.sum().backward()
        assert np.array_equal(values(t.grad), np.zeros_like(x))
    if torch is not None:
        want = TF.alpha_dropout(torch.tensor(x), 1.0, True).numpy()
        assert np.array_equal(values(alpha_dropout(pyrt.tensor(x), 1.0, True)), want,
                              equal_nan=True)


@needs_torch
@pytest.mark.parametrize("p", [0.05, 0.3, 0.7])
@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout_matches_torch_given_torchs_mask(monkeypatch, p, feature):
    """torch's mask (read from the gradient it gives x, a * keep) fed to pyrt's op in place
    of its own draw: the same values and gradients as torch's op."""
    shape = (5, 4, 3)
    x = normal(rng(7), shape) * 2
    torch.manual_seed(8)
    xt = torch.tensor(x, requires_grad=True)
    torch_fn = TF.feature_alpha_dropout if feature else TF.alpha_dropout
    yt = torch_fn(xt, p, True)
    yt.sum().backward()
    keep = values(xt.grad) != 0
    if feature:
        keep = keep[:, :, :1]

    def torch_mask(input, mask_shape, p_):
        assert mask_shape == keep.shape and p_ == p
        return keep.astype(F32) / F32(1 - p)

    monkeypatch.setattr(ALPHA_DROPOUT, "_dropout_mask", torch_mask)
    t = leaf(x)
    y = (feature_alpha_dropout if feature else alpha_dropout)(t, p, True)
    y.sum().backward()
    assert_close(y, values(yt), rtol=1e-6, atol=1e-6)
    assert np.array_equal(values(t.grad), values(xt.grad))


def test_alpha_dropout_errors():
    x = pyrt.tensor(np.ones((2, 3), F32))
    for fn in (alpha_dropout, feature_alpha_dropout):
        for p in (-0.1, 1.5, True):
            with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
                fn(x, p, True)
        with pytest.raises(TypeError, match="Tensor"):
            fn(np.ones(3, F32), 0.5, True)
        with pytest.raises(TypeError, match="float32"):
            fn(pyrt.tensor(np.arange(6).reshape(2, 3)), 0.5, True)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        feature_alpha_dropout(pyrt.tensor(np.ones(5, F32)), 0.5, True)
    if torch is not None:
        with pytest.raises(RuntimeError):
            TF.feature_alpha_dropout(torch.ones(5), 0.5, True)
        with pytest.raises(ValueError):
            TF.alpha_dropout(torch.ones(5), 1.5, True)


@pytest.mark.parametrize("module,fn", [(AlphaDropout, alpha_dropout),
                                       (FeatureAlphaDropout, feature_alpha_dropout)])
def test_alpha_dropout_modules(module, fn):
    """Dropping in training mode as the function does (same seed), the identity in eval
    mode; p checked, reprs as torch's."""
    x = pyrt.tensor(normal(rng(9), (6, 4, 3)))
    m = module(0.25)
    pyrt.manual_seed(1)
    y = m(x)
    pyrt.manual_seed(1)
    assert np.array_equal(values(y), values(fn(x, 0.25, True)))
    assert not np.array_equal(values(y), values(x))
    assert m.eval()(x) is x
    with pytest.raises(ValueError, match="dropout probability"):
        module(1.5)
    assert repr(module()) == f"{module.__name__}(p=0.5, inplace=False)"
    assert repr(module(0.5, inplace=True)) == f"{module.__name__}(p=0.5, inplace=True)"
    if torch is not None:
        name = module.__name__
        assert repr(module(0.2)) == repr(getattr(torch.nn, name)(0.2))


# ---- pdist -----------------------------------------------------------------------------------


P_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf]


def pdist_reference(x, p):
    """The p-norm distance of every pair of rows i < j, in row-major order, in float64."""
    x = x.astype(np.float64)
    out = []
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            d = np.abs(x[i] - x[j])
            if p == 0:
                out.append(np.count_nonzero(d))
            elif p == math.inf:
                out.append(d.max(initial=0.0))
            else:
                out.append((d ** p).sum() ** (1 / p))
    return np.array(out, np.float64)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 6), m=st.integers(0, 5), p=st.sampled_from(P_VALUES),
       seed=st.integers(0, 2**16))
def test_pdist_matches_its_definition(n, m, p, seed):
    x = normal(rng(seed), (n, m))
    x[rng(seed + 1).random((n, m)) < 0.2] = 0  # zero differences for p = 0
    y = pdist(pyrt.tensor(x), p)
    assert y.shape == (n * (n - 1) // 2,) and y.dtype == F32
    assert_close(y, pdist_reference(x, p), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("p", [0.5, 1.0, 1.5, 2.0, 3.0, math.inf])
def test_pdist_gradient_matches_finite_differences(p):
    """Rows spread apart, so that no difference is near 0 and no maximum is tied."""
    r = rng(int(10 * p) if p != math.inf else 99)
    x = (normal(r, (5, 4)) + 3 * np.arange(5, dtype=F32)[:, None]).astype(F32)
    g = r.standard_normal(10)
    t = leaf(x)
    (pdist(t, p) * pyrt.tensor(g.astype(F32))).sum().backward()
    fd = finite_difference(lambda v: float((pdist_reference(v, p) * g).sum()), x)
    assert_close(t.grad, fd, rtol=1e-4, atol=1e-5)


def test_pdist_gradient_where_distances_vanish_or_tie():
    """Equal rows have distance 0 and pass no gradient (no nan) for every p; p = 0 passes
    none anywhere; p < 1 none along a zero difference; at p = inf every coordinate reaching
    the maximum gets the full gradient, as PyTorch's."""
    x = np.array([[1.0, 2.0], [1.0, 2.0], [3.0, -1.0]], F32)
    for p in P_VALUES:
        t = leaf(x)
        y = pdist(t, p)
        assert values(y)[0] == 0
        y[0].backward()
        assert np.array_equal(values(t.grad), np.zeros_like(x)), p
    t = leaf(x)
    pdist(t, 0.0).sum().backward()
    assert np.array_equal(values(t.grad), np.zeros_like(x))
    t = leaf(np.array([[1.0, 2.0], [1.0, 5.0]], F32))  # a zero difference: |d|^(p - 1) = inf
    pdist(t, 0.5).sum().backward()
    assert np.array_equal(values(t.grad)[:, 0], [0, 0]) and np.all(values(t.grad)[:, 1] != 0)
    t = leaf(np.array([[0.0, 0.0], [2.0, -2.0]], F32))
    pdist(t, math.inf).sum().backward()
    assert np.array_equal(values(t.grad), np.array([[-1.0, 1.0], [1.0, -1.0]], F32))


@needs_torch
@pytest.mark.parametrize("p", P_VALUES + [0.25, 7.0])
def test_pdist_matches_torch(p):
    r = rng(5)
    x = normal(r, (7, 4))
    x[3] = x[1]  # a zero distance
    x[5, 0] = x[2, 0]  # a zero difference
    x[6] = x[0] + np.array([2, -2, 1, 0.5], F32)  # a tie at p = inf
    g = normal(r, (21,))
    t, tt = leaf(x), torch.tensor(x, requires_grad=True)
    y, yt = pdist(t, p), TF.pdist(tt, p)
    (y * pyrt.tensor(g)).sum().backward()
    (yt * torch.tensor(g)).sum().backward()
    assert_close(y, values(yt), rtol=2e-6)
    assert_close(t.grad, values(tt.grad), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(1, 4), (0, 3), (3, 0)])
def test_pdist_of_no_pairs_or_no_columns(shape):
    t = leaf(np.ones(shape, F32))
    y = pdist(t)
    n = shape[0]
    assert y.shape == (n * (n - 1) // 2,) and not values(y).any()
    if torch is not None:
        assert tuple(TF.pdist(torch.ones(shape)).shape) == y.shape


@pytest.mark.parametrize("array,p,error,message", [
    (np.ones((2, 3, 4), F32), 2, RuntimeError, "pdist only supports 2D tensors, got: 3D"),
    (np.ones(3, F32), 2, RuntimeError, "got: 1D"),
    (np.ones((3, 4), F32), -1, RuntimeError, "non-negative p values"),
    (np.ones((3, 4), F32), math.nan, RuntimeError, "non-negative p values"),
    (np.arange(6).reshape(3, 2), 2, RuntimeError, "floating-point dtypes"),
    (np.ones((3, 4), F32), "fro", TypeError, "'p'"),
])
def test_pdist_errors_as_torch(array, p, error, message):
    with pytest.raises(error, match=message):
        pdist(pyrt.tensor(array), p)
    if torch is not None:
        with pytest.raises(error):
            TF.pdist(torch.tensor(array), p)
    with pytest.raises(TypeError, match="'input'"):
        pdist(array, 2)


# ---- gumbel_softmax --------------------------------------------------------------------------


def softmax_reference(z, axis):
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def drawn_noise(seed, shape):
    pyrt.manual_seed(seed)
    return values(pyrt.tensor(gumbel_noise(pyrt.tensor(np.zeros(shape, F32)))))


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
       tau=st.sampled_from([0.1, 0.5, 1, 2.0]), seed=st.integers(0, 2**16), data=st.data())
def test_gumbel_softmax_is_the_softmax_of_the_perturbed_logits(shape, tau, seed, data):
    """With the noise drawn after the same seed: softmax((logits + g) / tau) along dim, a
    distribution; hard=True gives the one-hot vector of its argmax."""
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    logits = normal(rng(seed), shape)
    g = drawn_noise(seed, shape).astype(np.float64)
    want = softmax_reference((logits + g) / tau, dim)
    pyrt.manual_seed(seed)
    soft = values(gumbel_softmax(pyrt.tensor(logits), tau, dim=dim))
    assert_close(soft, want, rtol=1e-5, atol=1e-6)
    assert_close(soft.sum(axis=dim), np.ones(np.delete(shape, dim % len(shape))), rtol=1e-5)
    pyrt.manual_seed(seed)
    hard = values(gumbel_softmax(pyrt.tensor(logits), tau, hard=True, dim=dim))
    one_hot = np.moveaxis(np.eye(shape[dim])[np.argmax(want, axis=dim)], -1, dim)
    assert_close(hard, one_hot, rtol=0, atol=1e-6)


def test_gumbel_softmax_gradients():
    """The soft sample's gradient is softmax's at the perturbed logits, over tau (against
    finite differences); the hard sample passes the same gradient through."""
    r = rng(12)
    logits, w, tau = normal(r, (3, 5)), r.standard_normal((3, 5)), 0.7
    g = drawn_noise(4, logits.shape).astype(np.float64)
    grads = []
    for hard in (False, True):
        t = leaf(logits)
        pyrt.manual_seed(4)
        (gumbel_softmax(t, tau, hard) * pyrt.tensor(w.astype(F32))).sum().backward()
        grads.append(values(t.grad))
    fd = finite_difference(lambda v: float((softmax_reference((v + g) / tau, -1) * w).sum()),
                           logits)
    assert_close(grads[0], fd, rtol=1e-4, atol=1e-5)
    assert_close(grads[1], grads[0], rtol=1e-6, atol=1e-7)


def test_gumbel_noise_is_standard_gumbel_and_hard_samples_follow_the_softmax():
    """The noise's mean is Euler's constant and its variance pi^2 / 6; by the Gumbel-max
    trick the hard samples' frequencies are softmax(logits), whatever tau."""
    pyrt.manual_seed(0)
    noise = gumbel_noise(pyrt.tensor(np.zeros(400_000, F32))).astype(np.float64)
    assert abs(noise.mean() - 0.5772156649) < 0.01
    assert abs(noise.var() - math.pi ** 2 / 6) < 0.02
    assert np.isfinite(noise).all()
    logits = np.array([1.0, 0.0, -1.0, 2.0], F32)
    probs = softmax_reference(logits.astype(np.float64), 0)
    batch = pyrt.tensor(np.tile(logits, (50_000, 1)))
    for tau in (0.3, 3.0):
        hard = values(gumbel_softmax(batch, tau, hard=True))
        assert np.abs(hard.mean(axis=0) - probs).max() < 0.01


def test_gumbel_softmax_repeats_under_the_same_seed():
    logits = pyrt.tensor(normal(rng(1), (4, 6)))
    pyrt.manual_seed(3)
    first = values(gumbel_softmax(logits))
    pyrt.manual_seed(3)
    again = values(gumbel_softmax(logits))
    assert np.array_equal(first, again)
    assert not np.array_equal(first, values(gumbel_softmax(logits)))


@needs_torch
@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_gumbel_softmax_matches_torch_given_the_same_noise(monkeypatch, hard, dim):
    """torch's F.gumbel_softmax with its Exp(1) draws replaced by pyrt's (after the same
    seed): the same values and gradients."""
    shape = (3, 4, 5)
    logits = normal(rng(2), shape)
    pyrt.manual_seed(6)
    exponentials = generator().standard_exponential(shape, dtype=np.float32)
    monkeypatch.setattr(torch.Tensor, "exponential_",
                        lambda self: self.copy_(torch.from_numpy(exponentials)))
    tt = torch.tensor(logits, requires_grad=True)
    yt = TF.gumbel_softmax(tt, 0.8, hard, dim=dim)
    pyrt.manual_seed(6)
    t = leaf(logits)
    y = gumbel_softmax(t, 0.8, hard, dim=dim)
    w = normal(rng(3), shape)
    (y * pyrt.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    assert_close(y, values(yt), rtol=1e-5, atol=1e-6)
    assert_close(t.grad, values(tt.grad), rtol=1e-5, atol=1e-6)


def test_gumbel_softmax_errors_and_warning():
    logits = pyrt.tensor(np.zeros((2, 3), F32))
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        gumbel_softmax(logits, eps=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gumbel_softmax(logits)
    with pytest.raises(IndexError, match="Dimension out of range"):
        gumbel_softmax(logits, dim=2)
    with pytest.raises(RuntimeError, match="dtype must be a floating point"):
        gumbel_softmax(pyrt.tensor(np.arange(4)))
    with pytest.raises(TypeError, match="'logits'"):
        gumbel_softmax(np.zeros(3, F32))
    scalar = gumbel_softmax(pyrt.tensor(np.float32(0.3)), hard=True)
    assert scalar.shape == () and values(scalar) == 1


# ---- triplet_margin_with_distance_loss -------------------------------------------------------


def l2_distance(a, b, eps=1e-6):
    return np.sqrt(((a - b + eps) ** 2).sum(axis=-1))


def cosine_distance_np(a, b):
    return 1 - (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def triplet_reference(a, p, n, distance, margin, swap, reduction):
    a, p, n = (v.astype(np.float64) for v in (a, p, n))
    far = distance(a, n)
    if swap:
        far = np.minimum(far, distance(p, n))
    loss = np.maximum(margin + distance(a, p) - far, 0)
    return {"none": loss, "sum": loss.sum(), "mean": loss.mean()}[reduction]


def cosine_distance(a, b):
    return 1 - cosine_similarity(a, b, dim=-1)


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(1, 6), features=st.integers(1, 5), margin=st.sampled_from([0.1, 1, 3.0]),
       swap=st.booleans(), reduction=st.sampled_from(["mean", "sum", "none"]),
       cosine=st.booleans(), seed=st.integers(0, 2**16))
def test_triplet_with_distance_matches_its_definition(batch, features, margin, swap, reduction,
                                                      cosine, seed):
    r = rng(seed)
    a, p, n = (normal(r, (batch, features)) for _ in range(3))
    fn, ref = (cosine_distance, cosine_distance_np) if cosine else (None, l2_distance)
    got = triplet_margin_with_distance_loss(pyrt.tensor(a), pyrt.tensor(p), pyrt.tensor(n),
                                            distance_function=fn, margin=margin, swap=swap,
                                            reduction=reduction)
    assert_close(got, triplet_reference(a, p, n, ref, margin, swap, reduction), rtol=1e-5,
                 atol=1e-5)
    module = TripletMarginWithDistanceLoss(distance_function=fn, margin=margin, swap=swap,
                                           reduction=reduction)
    assert np.array_equal(values(module(pyrt.tensor(a), pyrt.tensor(p), pyrt.tensor(n))),
                          values(got))


def test_triplet_with_distance_defaults_to_the_triplet_margin_loss():
    r = rng(3)
    arrays = [normal(r, (6, 4)) for _ in range(3)]
    grads = []
    for fn in (triplet_margin_with_distance_loss, triplet_margin_loss):
        tensors = [leaf(x) for x in arrays]
        kwargs = {"swap": True, "margin": 0.5}
        loss = fn(*tensors, **kwargs)
        loss.backward()
        grads.append((values(loss), [values(t.grad) for t in tensors]))
    assert np.array_equal(grads[0][0], grads[1][0])
    for mine, theirs in zip(grads[0][1], grads[1][1]):
        assert np.array_equal(mine, theirs)


@needs_torch
@pytest.mark.parametrize("distance", ["default", "cosine", "l1_module"])
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_triplet_with_distance_matches_torch(distance, swap, reduction):
    r = rng(4)
    arrays = [normal(r, (5, 6)) for _ in range(3)]
    ours, theirs = {
        "default": (None, None),
        "cosine": (cosine_distance, lambda a, b: 1 - TF.cosine_similarity(a, b, dim=-1)),
        "l1_module": (PairwiseDistance(p=1.0), torch.nn.PairwiseDistance(p=1.0)),
    }[distance]
    tensors = [leaf(x) for x in arrays]
    torch_tensors = [torch.tensor(x, requires_grad=True) for x in arrays]
    loss = TripletMarginWithDistanceLoss(distance_function=ours, margin=0.7, swap=swap,
                                         reduction=reduction)(*tensors)
    want = torch.nn.TripletMarginWithDistanceLoss(distance_function=theirs, margin=0.7,
                                                  swap=swap, reduction=reduction)(*torch_tensors)
    g = normal(r, tuple(want.shape))
    (loss * pyrt.tensor(g)).sum().backward()
    (want * torch.tensor(g)).sum().backward()
    assert_close(loss, values(want), rtol=1e-5, atol=1e-6)
    for t, tt in zip(tensors, torch_tensors):
        assert_close(t.grad, values(tt.grad), rtol=1e-5, atol=1e-6)


def test_triplet_with_distance_errors():
    a = pyrt.tensor(np.ones((3, 4), F32))
    for margin in (0, -1.0):
        with pytest.raises(ValueError, match="margin must be greater than 0"):
            triplet_margin_with_distance_loss(a, a, a, margin=margin)
        with pytest.raises(ValueError, match="expected margin to be greater than 0"):
            TripletMarginWithDistanceLoss(margin=margin)
    with pytest.raises(ValueError, match="reduction"):
        triplet_margin_with_distance_loss(a, a, a, reduction="avg")
    with pytest.raises(ValueError, match="reduction"):
        TripletMarginWithDistanceLoss(reduction="avg")
    with pytest.raises(RuntimeError, match="anchor 2D, positive 2D, and negative 1D"):
        triplet_margin_with_distance_loss(a, a, pyrt.tensor(np.ones(4, F32)))
    with pytest.raises(TypeError, match="negative must be a Tensor"):
        triplet_margin_with_distance_loss(a, a, np.ones((3, 4), F32))
    with pytest.raises(TypeError):
        triplet_margin_with_distance_loss(a, a, a, 1.0)  # the options are keyword-only
    if torch is not None:
        t = torch.ones(3, 4)
        with pytest.raises(ValueError):
            TF.triplet_margin_with_distance_loss(t, t, t, margin=0)
        with pytest.raises(RuntimeError):
            TF.triplet_margin_with_distance_loss(t, t, torch.ones(4))


def test_triplet_with_distance_module_registers_its_distance_and_prints_as_torch():
    default = TripletMarginWithDistanceLoss()
    assert isinstance(default.distance_function, PairwiseDistance)
    assert [name for name, _ in default.named_children()] == ["distance_function"]
    plain = TripletMarginWithDistanceLoss(distance_function=cosine_distance, swap=True)
    assert list(plain.named_children()) == []
    assert repr(default) == ("TripletMarginWithDistanceLoss(\n"
                             "  (distance_function): PairwiseDistance()\n)")
    assert repr(plain) == "TripletMarginWithDistanceLoss()"
    if torch is not None:
        assert repr(default) == repr(torch.nn.TripletMarginWithDistanceLoss())
        assert (repr(TripletMarginWithDistanceLoss(distance_function=CosineSimilarity()))
                == repr(torch.nn.TripletMarginWithDistanceLoss(
                    distance_function=torch.nn.CosineSimilarity())))
        assert repr(plain) == repr(torch.nn.TripletMarginWithDistanceLoss(
            distance_function=lambda a, b: a, swap=True))
