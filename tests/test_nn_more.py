"""The activations (LeakyReLU, ELU, GELU, SiLU, Softplus, Hardtanh), losses (L1Loss,
SmoothL1Loss, HuberLoss, BCELoss, KLDivLoss), Embedding, ModuleDict and Unflatten against
torch.nn with the same inputs and weights: values, shapes, gradients of sum(out * w) for a
random w, every reduction, reprs and errors; property tests over shapes and values; small
models trained side by side with torch."""

import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.activations as A
import pyrt.embedding as E
import pyrt.loss_functions as LF
import pyrt.nn.functional as NF
from pyrt import nn, optim

torch = pytest.importorskip("torch")

F32 = np.float32
SHAPES = st.lists(st.integers(0, 5), max_size=3).map(tuple)


def rng(seed):
    return np.random.default_rng(seed)


def assert_close(got, ref, scale, rtol=2e-6, what=""):
    """Element by element, |got - ref| <= rtol * max(|ref|, scale): `scale` (broadcast) is the
    size of the terms each value was computed from, whose float32 rounding it inherits. inf
    and nan where the reference has them."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    finite = np.isfinite(ref)
    assert np.array_equal(got[~finite], ref[~finite], equal_nan=True), what
    bound = rtol * np.maximum(np.abs(ref), np.broadcast_to(scale, ref.shape))[finite]
    err = np.abs(got[finite] - ref[finite])
    assert (err <= bound).all(), f"{what}: max excess error {np.max(err - bound):.3g}"


def pair(array, requires_grad=True):
    """The same values as a pyrt tensor and a torch tensor."""
    return (pyrt.tensor(array, requires_grad=requires_grad),
            torch.tensor(np.asarray(array), requires_grad=requires_grad))


# ---- activations -----------------------------------------------------------------------------

ACTIVATIONS = [  # (function, module, keyword arguments)
    ("leaky_relu", "LeakyReLU", {}),
    ("leaky_relu", "LeakyReLU", {"negative_slope": 0.2}),
    ("leaky_relu", "LeakyReLU", {"negative_slope": -1.5}),
    ("elu", "ELU", {}),
    ("elu", "ELU", {"alpha": 0.3}),
    ("gelu", "GELU", {}),
    ("gelu", "GELU", {"approximate": "tanh"}),
    ("silu", "SiLU", {}),
    ("softplus", "Softplus", {}),
    ("softplus", "Softplus", {"beta": 2.5, "threshold": 3.0}),
    ("softplus", "Softplus", {"beta": -0.5, "threshold": 4.0}),
    ("hardtanh", "Hardtanh", {}),
    ("hardtanh", "Hardtanh", {"min_val": -0.25, "max_val": 2.0}),
]
# where the functions bend or switch: 0, the hardtanh bounds, softplus's thresholds
SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, -0.25, 2.0, 1.2, -8.0, 20.0, 30.0, -30.0], F32)


def activation_input(shape, seed, scale):
    r = rng(seed)
    x = np.array(r.standard_normal(shape) * scale, F32)  # (0-d: an array, not a scalar)
    special = r.random(shape) < 0.2
    x[special] = r.choice(SPECIAL, size=int(special.sum()))
    return x


@pytest.mark.parametrize("name,module,kwargs", ACTIVATIONS)
@settings(max_examples=15, deadline=None)
@given(shape=SHAPES, seed=st.integers(0, 2**16), scale=st.sampled_from([0.01, 1.0, 5.0, 100.0]))
def test_activations_against_torch(name, module, kwargs, shape, seed, scale):
    """Values and the gradient of sum(out * w), functional and module, as torch computes
    them: float32 results within a few units in the last place, of the value or of x (where
    PyTorch's float32 formulas cancel, as GELU's 1 + erf(x / sqrt(2)) in its left tail)."""
    x = activation_input(shape, seed, scale)
    w = rng(seed + 1).standard_normal(shape).astype(F32)
    xp, xt = pair(x)
    y = getattr(NF, name)(xp, **kwargs)
    (y * pyrt.tensor(w)).sum().backward()
    yt = getattr(torch.nn.functional, name)(xt, **kwargs)
    (yt * torch.from_numpy(w)).sum().backward()
    size = np.maximum(np.abs(x), 1)
    assert y.dtype == F32 and xp.grad.dtype == F32
    # PyTorch's GELU is 0.5 x (1 + erf(x / sqrt(2))) in float32: in the left tail the sum
    # cancels, and its error is a few units of 1 + erf, times x (pyrt's is exact there)
    assert_close(y._data, yt.detach().numpy(), size if name == "gelu" else 0.1 * size,
                 what="value")
    assert_close(xp.grad._data, xt.grad.numpy(), np.abs(w) * size, what="gradient")
    again = getattr(nn, module)(**kwargs)(pyrt.tensor(x))
    assert np.array_equal(again._data, y._data, equal_nan=True)


@pytest.mark.parametrize("name,module,kwargs", ACTIVATIONS)
def test_activation_layers_print_and_pick_slopes_as_torch(name, module, kwargs):
    """Reprs, and the gradient where the function bends (0, the bounds), exactly."""
    assert repr(getattr(nn, module)(**kwargs)) == repr(getattr(torch.nn, module)(**kwargs))
    x = np.array([0.0, -0.0, -1.0, 1.0, -0.25, 2.0, 40.0, -40.0, np.inf, -np.inf, np.nan], F32)
    xp, xt = pair(x)
    getattr(NF, name)(xp, **kwargs).sum().backward()
    getattr(torch.nn.functional, name)(xt, **kwargs).sum().backward()
    kinks = slice(0, 6)
    np.testing.assert_allclose(xp.grad._data[kinks], xt.grad.numpy()[kinks], rtol=1e-6)
    y = getattr(NF, name)(pyrt.tensor(x), **kwargs)._data
    ref = getattr(torch.nn.functional, name)(torch.from_numpy(x), **kwargs).numpy()
    if name == "gelu":
        # PyTorch's vectorised GELU gives nan at +inf on some CPUs (inf * 0.5 * (1 + erf)
        # through its SIMD erf), inf on others and in its scalar path; the limit is inf
        ref = np.where(x == np.inf, np.inf, ref)
    assert np.array_equal(np.isnan(y), np.isnan(ref)) and np.array_equal(np.isinf(y),
                                                                          np.isinf(ref))


def test_gelu_error_function_matches_the_c_library():
    """_erfc's series against math.erfc, to 1e-12 relative, and its tails."""
    z = np.concatenate([np.linspace(-12, 12, 20001), [-30.0, -3e38, 0.0]])
    ref = np.array([math.erfc(v) for v in z])
    assert np.max(np.abs(A._erfc(z) / ref - 1)) < 1e-12
    with np.errstate(invalid="ignore"):  # (inf - inf: the nan of a nan)
        tails = A._erfc(np.array([13.0, 30.0, np.inf, -np.inf, np.nan]))
    assert np.all(tails[:3] < 1e-70) and tails[3] == 2 and np.isnan(tails[4])


def test_activations_take_0d_and_strided_inputs():
    x = np.float32(-0.7)
    for name, _, kwargs in ACTIVATIONS:
        xp, xt = pair(x)
        y = getattr(NF, name)(xp, **kwargs)
        y.backward()
        yt = getattr(torch.nn.functional, name)(xt, **kwargs)
        yt.backward()
        assert y.shape == () and xp.grad.shape == ()
        assert_close(y._data, yt.detach().numpy(), 1e-7, what=name)
        assert_close(xp.grad._data, xt.grad.numpy(), 1e-7, what=name)
    base = rng(3).standard_normal((4, 6)).astype(F32)
    strided = pyrt.tensor(base)[:, ::2]  # a view, not contiguous
    y = NF.gelu(strided)
    assert y._data.flags.c_contiguous
    assert_close(y._data, torch.nn.functional.gelu(torch.from_numpy(base)[:, ::2]).numpy(), 1e-7)


def test_activation_errors_name_the_argument():
    x = pyrt.randn(3)
    for name, module, _ in ACTIVATIONS:
        with pytest.raises(TypeError, match=f"{name}: input must be a Tensor, got ndarray"):
            getattr(NF, name)(np.zeros(3, F32))
        with pytest.raises(TypeError, match=f"{name}: input must be a float32 tensor, got int64"):
            getattr(NF, name)(pyrt.tensor([1, 2]))
        with pytest.raises(TypeError, match=f"{name}: input must be a Tensor, got ndarray"):
            getattr(nn, module)()(np.zeros(3, F32))
    for module in ("ReLU", "LeakyReLU", "ELU", "SiLU", "Hardtanh"):
        assert getattr(nn, module)(inplace=False).inplace is False  # torch's argument taken
    with pytest.raises(TypeError, match="negative_slope must be a real number, got str"):
        NF.leaky_relu(x, "0.1")
    with pytest.raises(TypeError, match="negative_slope must be a real number"):
        nn.LeakyReLU(None)
    with pytest.raises(TypeError, match="alpha must be a real number"):
        nn.ELU("1")
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        NF.gelu(x, approximate="erf")
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh', got 'Tanh'"):
        nn.GELU("Tanh")
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        NF.hardtanh(x, 2.0, 1.0)
    assert np.all(NF.hardtanh(x, 0.5, 0.5)._data == 0.5)  # equal bounds: allowed, as in torch
    for bounds in ((2.0, 1.0), (1.0, 1.0)):
        with pytest.raises(ValueError, match="must be greater than min_val"):
            nn.Hardtanh(*bounds)
    with pytest.raises(ValueError, match="beta must not be 0"):
        NF.softplus(x, beta=0)
    with pytest.raises(ValueError, match="beta must not be 0"):
        nn.Softplus(beta=0.0)
    with pytest.raises(TypeError, match="threshold must be a real number"):
        nn.Softplus(threshold=None)


# ---- losses ----------------------------------------------------------------------------------

LOSSES = [  # (function, module, keyword arguments)
    ("l1_loss", "L1Loss", {}),
    ("smooth_l1_loss", "SmoothL1Loss", {}),
    ("smooth_l1_loss", "SmoothL1Loss", {"beta": 0.5}),
    ("smooth_l1_loss", "SmoothL1Loss", {"beta": 0.0}),
    ("huber_loss", "HuberLoss", {}),
    ("huber_loss", "HuberLoss", {"delta": 2.5}),
    ("binary_cross_entropy", "BCELoss", {}),
    ("kl_div", "KLDivLoss", {}),
    ("kl_div", "KLDivLoss", {"log_target": True}),
]


def loss_case(name, kwargs, shape, seed, target_grad):
    """(input, target) for loss `name`: values and differences that land on the switches
    (equal values, |d| = beta or delta); probabilities with 0 and 1 among them for the binary
    cross-entropy; log-probabilities and probabilities (log-probabilities with log_target) for
    kl_div, no zero probability where the target's gradient is taken (d/dt t log t is -inf
    there, which torch gives as nan)."""
    r = rng(seed)
    if name == "binary_cross_entropy":
        x, t = np.array(r.random(shape)), np.array(r.random(shape))
        for a in (x, t):
            ends = r.random(shape) < 0.1
            a[ends] = r.integers(0, 2, int(ends.sum()))
        return x.astype(F32), t.astype(F32)
    if name == "kl_div":
        x = -r.exponential(2.0, shape)
        if kwargs.get("log_target"):
            return x.astype(F32), (-r.exponential(2.0, shape)).astype(F32)
        t = np.array(r.random(shape))
        if not target_grad:
            t[r.random(shape) < 0.2] = 0
        return x.astype(F32), t.astype(F32)
    x = np.array(r.standard_normal(shape) * r.choice([0.1, 1, 10]), F32)
    t = np.array(r.standard_normal(shape) * r.choice([0.1, 1, 10]), F32)
    switch = kwargs.get("beta", kwargs.get("delta", 1.0))
    ties = r.random(shape)
    t[ties < 0.1] = x[ties < 0.1]
    edge = (ties >= 0.1) & (ties < 0.2)
    t[edge] = x[edge] - F32(switch)
    return x, t


def loss_terms(name, kwargs, x, t):
    """The size of the terms each element's loss is computed from, in float64: kl_div's two
    terms cancel where t is near exp(x); the others' terms do not cancel."""
    x, t = x.astype(np.float64), t.astype(np.float64)
    if name == "kl_div" and kwargs.get("log_target"):
        return np.exp(t) * (np.abs(t) + np.abs(x))
    if name == "kl_div":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.abs(np.where(t > 0, t * np.log(t), 0)) + np.abs(t * x)
    each = getattr(torch.nn.functional, name)(torch.from_numpy(x), torch.from_numpy(t),
                                              reduction="none", **kwargs)
    return np.abs(each.numpy())


def reductions(name):
    return ["mean", "sum", "none"] + (["batchmean"] if name == "kl_div" else [])


@pytest.mark.parametrize("name,module,kwargs", LOSSES)
@settings(max_examples=25, deadline=None)
@given(shape=SHAPES, seed=st.integers(0, 2**16), target_grad=st.booleans(), data=st.data())
def test_losses_against_torch(name, module, kwargs, shape, seed, target_grad, data):
    """Every reduction, module and functional form: the loss, and the gradients of the input
    and (when it requires grad) the target under a random upstream gradient, as torch.nn
    computes them; each within float32 rounding of the terms it sums."""
    reduction = data.draw(st.sampled_from(reductions(name)))
    x, t = loss_case(name, kwargs, shape, seed, target_grad)
    xp, xt = pair(x)
    tp, tt = pair(t, requires_grad=target_grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kl_div's warning on reduction="mean"
        loss = getattr(nn, module)(reduction=reduction, **kwargs)(xp, tp)
        again = getattr(NF, name)(pyrt.tensor(x), pyrt.tensor(t), reduction=reduction, **kwargs)
        ref = getattr(torch.nn.functional, name)(xt, tt, reduction=reduction, **kwargs)
    terms = loss_terms(name, kwargs, x, t)
    assert loss.shape == tuple(ref.shape) and loss.dtype == F32
    assert np.array_equal(again._data, loss._data, equal_nan=True)
    if reduction in ("none", "sum"):
        divisor = 1
    elif reduction == "batchmean":
        divisor = shape[0] if shape else 1
    else:
        divisor = math.prod(shape)
    if divisor == 0:  # the mean of nothing
        assert np.isnan(loss._data) and np.isnan(ref.detach().numpy())
    else:
        scale = terms if reduction == "none" else terms.sum() / divisor
        assert_close(loss._data, ref.detach().numpy(), scale + 1e-30, what="loss")
    g = rng(seed + 1).standard_normal(loss.shape).astype(F32)
    loss.backward(pyrt.tensor(g))
    ref.backward(torch.from_numpy(g))
    ge = np.abs(g) / max(divisor, 1)
    sizes = np.maximum(np.maximum(np.abs(x), np.abs(t)), 1)
    assert_close(xp.grad._data, xt.grad.numpy(), ge * sizes * 4, what="input gradient")
    if target_grad:
        assert_close(tp.grad._data, tt.grad.numpy(), ge * sizes * 4, what="target gradient")
    else:
        assert tp.grad is None


@pytest.mark.parametrize("name,module,kwargs", LOSSES)
@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")  # kl_div's
def test_loss_modules_print_and_check_as_torch(name, module, kwargs):
    assert repr(getattr(nn, module)(**kwargs)) == repr(getattr(torch.nn, module)(**kwargs))
    ours = getattr(nn, module)(reduction="sum", **kwargs)
    assert repr(ours) == f"{module}(reduction='sum')" and ours.reduction == "sum"
    for bad in ("average", None, "Mean"):
        with pytest.raises(ValueError, match="valid value for reduction"):
            getattr(nn, module)(reduction=bad)
        with pytest.raises(ValueError, match="valid value for reduction"):
            getattr(NF, name)(pyrt.ones(2), pyrt.ones(2), reduction=bad)
    x = pyrt.tensor([0.25, 0.5])
    with pytest.raises(TypeError, match="input must be a Tensor, got ndarray"):
        getattr(NF, name)(np.ones(2, F32), x, **kwargs)
    with pytest.raises(ValueError, match=r"input shape \(2,\) and target shape \(3,\) differ"):
        getattr(NF, name)(x, pyrt.ones(3), **kwargs)
    with pytest.raises(TypeError, match="target must be a float32 tensor, got int64"):
        getattr(NF, name)(x, pyrt.tensor([0, 1]), **kwargs)
    with pytest.raises(TypeError, match="input must be a float32 tensor, got int64"):
        getattr(NF, name)(pyrt.tensor([0, 1]), x, **kwargs)
    # a target that is not a Tensor: a constant, as in mse_loss
    assert np.array_equal(getattr(NF, name)(x, [0.5, 0.25], **kwargs)._data,
                          getattr(NF, name)(x, pyrt.tensor([0.5, 0.25]), **kwargs)._data)


def test_loss_options_are_checked_as_torch():
    x, t = pyrt.tensor([0.5, 1.0]), pyrt.tensor([0.0, 1.0])
    with pytest.raises(RuntimeError, match="does not support negative values for beta"):
        NF.smooth_l1_loss(x, t, beta=-0.5)
    for delta in (0.0, -1.0):
        with pytest.raises(RuntimeError, match="does not support non-positive values for delta"):
            NF.huber_loss(x, t, delta=delta)
    with pytest.raises(ValueError, match="SmoothL1Loss: beta must be >= 0, got -1"):
        nn.SmoothL1Loss(beta=-1)
    with pytest.raises(ValueError, match="HuberLoss: delta must be > 0, got 0"):
        nn.HuberLoss(delta=0)
    with pytest.raises(TypeError, match="delta must be a real number"):
        nn.HuberLoss("sum", "1")
    # HuberLoss takes reduction first, as in PyTorch
    assert nn.HuberLoss("sum", 2.0).reduction == "sum" and nn.HuberLoss("sum", 2.0).delta == 2.0
    with pytest.raises(TypeError):  # reduction is a keyword, as it follows torch's deprecated ones
        NF.l1_loss(x, t, "sum")
    with pytest.raises(ValueError, match="'batchmean'"):
        NF.l1_loss(x, t, reduction="batchmean")  # kl_div's alone


def test_binary_cross_entropy_ranges_clamps_and_weights_as_torch():
    for name, args in (("input", ([0.5, 1.5], [0.0, 1.0])), ("input", ([0.5, np.nan], [0, 1.0])),
                       ("input", ([-0.1, 0.5], [0, 1.0])), ("target", ([0.5, 0.5], [-1.0, 1.0]))):
        pa, pb = (pyrt.tensor(np.array(a, F32)) for a in args)
        with pytest.raises(RuntimeError, match=f"all elements of {name} should be between 0 and 1"):
            NF.binary_cross_entropy(pa, pb)
        with pytest.raises(RuntimeError, match=f"all elements of {name} should be between 0 and 1"):
            torch.nn.functional.binary_cross_entropy(*(torch.tensor(a) for a in args))
    # log(0) floored at -100: certainty that is wrong costs 100, as in torch
    x, t = np.array([0.0, 1.0, 0.0, 1.0], F32), np.array([1.0, 0.0, 0.0, 1.0], F32)
    loss = NF.binary_cross_entropy(pyrt.tensor(x), pyrt.tensor(t), reduction="none")
    assert loss.tolist() == [100.0, 100.0, 0.0, 0.0]
    # weight broadcasts to the input's shape; the module keeps it as a buffer, as torch's
    r = rng(5)
    x, t = r.random((3, 4)).astype(F32), r.random((3, 4)).astype(F32)
    w = (r.random(4) * 3).astype(F32)
    for reduction in ("mean", "sum", "none"):
        xp, xt = pair(x)
        loss = nn.BCELoss(pyrt.tensor(w), reduction=reduction)(xp, pyrt.tensor(t))
        ref = torch.nn.BCELoss(torch.from_numpy(w), reduction=reduction)(xt, torch.from_numpy(t))
        assert_close(loss._data, ref.detach().numpy(), 1e-6)
        loss.sum().backward()
        ref.sum().backward()
        assert_close(xp.grad._data, xt.grad.numpy(), 1e-6)
    module = nn.BCELoss(pyrt.tensor(w))
    assert list(module.state_dict()) == ["weight"] and list(module.parameters()) == []
    assert list(nn.BCELoss().state_dict()) == []
    with pytest.raises(RuntimeError, match=r"weight of shape \(3,\) does not broadcast"):
        NF.binary_cross_entropy(pyrt.tensor(x), pyrt.tensor(t), pyrt.ones(3))
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'weight'"):
        NF.binary_cross_entropy(pyrt.tensor(x), pyrt.tensor(t), pyrt.ones(4, requires_grad=True))
    with pytest.raises(TypeError, match="weight must be a float32 tensor, got int64"):
        NF.binary_cross_entropy(pyrt.tensor(x), pyrt.tensor(t), pyrt.tensor([1, 2, 3, 4]))


def test_kl_div_warns_and_reduces_as_torch():
    r = rng(8)
    x = torch.log_softmax(torch.from_numpy(r.standard_normal((4, 5)).astype(F32)), 1).numpy()
    t = torch.softmax(torch.from_numpy(r.standard_normal((4, 5)).astype(F32)), 1).numpy()
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        mean = NF.kl_div(pyrt.tensor(x), pyrt.tensor(t))
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        nn.KLDivLoss()(pyrt.tensor(x), pyrt.tensor(t))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning for the others
        batchmean = nn.KLDivLoss(reduction="batchmean")(pyrt.tensor(x), pyrt.tensor(t))
        total = NF.kl_div(pyrt.tensor(x), pyrt.tensor(t), reduction="sum")
        ref = torch.nn.functional.kl_div(torch.from_numpy(x), torch.from_numpy(t),
                                         reduction="batchmean")
    assert_close(batchmean._data, ref.numpy(), 1e-6)
    assert_close(batchmean._data * 4, total._data, 1e-6)
    assert_close(mean._data * 20, total._data, 1e-6)
    # the divergence of a distribution from itself is 0; a 0-d batchmean is the sum
    assert abs(float(NF.kl_div(pyrt.tensor(np.log(t)), pyrt.tensor(t), reduction="sum"))) < 1e-5
    zero_d = NF.kl_div(pyrt.tensor(F32(-1.0)), pyrt.tensor(F32(0.5)), reduction="batchmean")
    assert_close(zero_d._data, torch.nn.functional.kl_div(
        torch.tensor(-1.0), torch.tensor(0.5), reduction="batchmean").numpy(), 1e-6)
    assert np.isnan(float(NF.kl_div(pyrt.zeros(0, 3), pyrt.zeros(0, 3), reduction="batchmean")))
    with pytest.raises(ValueError, match="expected 'mean', 'batchmean', 'sum' or 'none'"):
        nn.KLDivLoss(reduction="batch")
    assert repr(nn.KLDivLoss(reduction="batchmean")) == "KLDivLoss(reduction='batchmean')"


def test_losses_of_empty_tensors_are_torchs():
    for name, _, kwargs in LOSSES:
        for reduction in reductions(name):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                xp = pyrt.zeros(0, 3, requires_grad=True)
                loss = getattr(NF, name)(xp, pyrt.zeros(0, 3), reduction=reduction, **kwargs)
                ref = getattr(torch.nn.functional, name)(torch.zeros(0, 3), torch.zeros(0, 3),
                                                         reduction=reduction, **kwargs)
            assert loss.shape == tuple(ref.shape)
            assert np.array_equal(loss._data, ref.numpy(), equal_nan=True), (name, reduction)
            loss.sum().backward()
            assert xp.grad.shape == (0, 3)


# ---- Embedding -------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(index_shape=SHAPES, rows=st.integers(1, 8), dim=st.integers(0, 4),
       padding=st.one_of(st.none(), st.integers(-8, 7)), seed=st.integers(0, 2**16))
def test_embedding_against_torch(index_shape, rows, dim, padding, seed):
    """Indices of any shape, repeated ones (from a small table) summing their gradients, the
    padding row getting none: the module with weights loaded into torch's, and the functional
    form on a table whose padding row is not zero (it is looked up as it is)."""
    padding = None if padding is None else padding % (2 * rows) - rows  # in [-rows, rows)
    r = rng(seed)
    index = r.integers(0, rows, index_shape)
    w = r.standard_normal(index_shape + (dim,)).astype(F32)
    pyrt.manual_seed(seed)
    ours = nn.Embedding(rows, dim, padding_idx=padding)
    theirs = torch.nn.Embedding(rows, dim, padding_idx=padding)
    theirs.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in ours.state_dict().items()})
    y = ours(pyrt.tensor(index))
    (y * pyrt.tensor(w)).sum().backward()
    yt = theirs(torch.from_numpy(index))
    (yt * torch.from_numpy(w)).sum().backward()
    assert y.shape == index_shape + (dim,) and np.array_equal(y._data, yt.detach().numpy())
    # each row's gradient sums the rows of w of its index: rounded to the size of those
    sizes = np.zeros((rows, dim))
    np.add.at(sizes, index.reshape(-1), np.abs(w).reshape(index.size, dim))
    assert_close(ours.weight.grad._data, theirs.weight.grad.numpy(), sizes, 1e-6)
    if padding is not None:
        assert not ours.weight._data[padding].any() and not ours.weight.grad._data[padding].any()
    table = r.standard_normal((rows, dim)).astype(F32)
    tp, tt = pair(table)
    y = NF.embedding(pyrt.tensor(index), tp, padding)
    (y * pyrt.tensor(w)).sum().backward()
    yt = torch.nn.functional.embedding(torch.from_numpy(index), tt, padding)
    (yt * torch.from_numpy(w)).sum().backward()
    assert np.array_equal(y._data, yt.detach().numpy())
    assert_close(tp.grad._data, tt.grad.numpy(), sizes, 1e-6)


def test_embedding_scatter_adds_repeated_indices():
    """By hand: index 2 read three times collects three rows of gradient; the padding row
    none, though it is read."""
    weight = pyrt.tensor(np.arange(12, dtype=F32).reshape(4, 3), requires_grad=True)
    index = pyrt.tensor([[2, 0, 2], [3, 2, 1]])
    y = NF.embedding(index, weight, padding_idx=1)
    assert y._data[1, 2].tolist() == [3.0, 4.0, 5.0]  # the padding row, looked up as it is
    assert y._data[0, 0].tolist() == [6.0, 7.0, 8.0]
    index._data[0, 0] = 3  # a later write to the indices does not move the gradient
    y.sum().backward()
    assert weight.grad._data[:, 0].tolist() == [1.0, 0.0, 3.0, 1.0]
    assert NF.embedding(pyrt.tensor(1), weight).shape == (3,)  # a 0-d index: one row


def test_embedding_init_state_and_repr_match_torch():
    pyrt.manual_seed(11)
    a = nn.Embedding(300, 200, padding_idx=-1)
    pyrt.manual_seed(11)
    b = nn.Embedding(300, 200, padding_idx=-1)
    assert np.array_equal(a.weight._data, b.weight._data)  # seeded
    assert isinstance(a.weight, nn.Parameter) and a.weight.requires_grad
    assert a.padding_idx == 299 and not a.weight._data[299].any()
    values = a.weight._data[:299]
    assert abs(values.mean()) < 0.01 and abs(values.std() - 1) < 0.01  # N(0, 1)
    theirs = torch.nn.Embedding(300, 200, padding_idx=-1)
    assert list(a.state_dict()) == list(theirs.state_dict()) == ["weight"]
    assert repr(a) == repr(theirs) == "Embedding(300, 200, padding_idx=299)"
    for args in ((5, 3), (0, 4), (5, 0), (7, 2, 0)):
        assert repr(nn.Embedding(*args)) == repr(torch.nn.Embedding(*args))
    model = nn.Sequential(OrderedDict(embed=nn.Embedding(5, 3), fc=nn.Linear(3, 2)))
    assert list(model.state_dict()) == list(torch.nn.Sequential(OrderedDict(
        embed=torch.nn.Embedding(5, 3), fc=torch.nn.Linear(3, 2))).state_dict())


def test_embedding_errors():
    weight = pyrt.randn(5, 3)
    with pytest.raises(IndexError, match="index out of range in self: input holds 5"):
        NF.embedding(pyrt.tensor([1, 5]), weight)
    with pytest.raises(IndexError, match="input holds -1"):
        nn.Embedding(5, 3)(pyrt.tensor([[1, -1]]))
    with pytest.raises(TypeError, match="input must have an integer dtype, got float32"):
        NF.embedding(pyrt.tensor([1.0, 2.0]), weight)
    with pytest.raises(TypeError, match="input must have an integer dtype, got bool"):
        NF.embedding(pyrt.tensor([True]), weight)
    with pytest.raises(TypeError, match="embedding: input must be a Tensor"):
        NF.embedding(np.array([1, 2]), weight)
    with pytest.raises(TypeError, match="embedding: input must be a Tensor, got list"):
        nn.Embedding(5, 3)([1, 2])
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        NF.embedding(pyrt.tensor([1]), pyrt.randn(5))
    with pytest.raises(TypeError, match="weight must have dtype float32, got int64"):
        NF.embedding(pyrt.tensor([1]), pyrt.tensor([[1, 2]]))
    for padding in (5, -6):
        with pytest.raises(ValueError, match="Padding_idx must be within num_embeddings"):
            NF.embedding(pyrt.tensor([1]), weight, padding_idx=padding)
        with pytest.raises(ValueError, match="Padding_idx must be within num_embeddings"):
            nn.Embedding(5, 3, padding_idx=padding)
    with pytest.raises(TypeError, match="padding_idx must be an int or None, got float"):
        nn.Embedding(5, 3, padding_idx=1.0)
    with pytest.raises(ValueError, match="num_embeddings must be >= 0, got -1"):
        nn.Embedding(-1, 3)
    with pytest.raises(TypeError, match="embedding_dim must be an int, got float"):
        nn.Embedding(5, 3.0)
    for option in ({"sparse": True},):
        name = next(iter(option))
        with pytest.raises(ValueError, match=f"{name}=.* is not supported"):
            nn.Embedding(5, 3, **option)
        with pytest.raises(ValueError, match=f"{name}=.* is not supported"):
            NF.embedding(pyrt.tensor([1]), weight, **option)


# ---- ModuleDict ------------------------------------------------------------------------------


def _module_dict(lib):
    """The same edits to a ModuleDict of `lib` (pyrt.nn or torch.nn), inside a model."""

    class Model(lib.Module):
        def __init__(self):
            super().__init__()
            self.blocks = lib.ModuleDict({"fc": lib.Linear(3, 4), "act": lib.ReLU()})
            self.blocks["out"] = lib.Linear(4, 2)
            self.blocks.update([("norm", lib.Identity()), ("fc", lib.Linear(3, 4))])
            self.blocks.update(OrderedDict(tail=lib.Tanh()))
            self.blocks.update(lib.ModuleDict({"extra": lib.Linear(2, 2)}))
            self.popped = self.blocks.pop("act")
            del self.blocks["norm"]

        def forward(self, x):
            return self.blocks["tail"](self.blocks.out(self.blocks["fc"](x)))

    return Model()


def test_module_dict_behaves_as_torchs():
    pyrt.manual_seed(4)
    ours, theirs = _module_dict(nn), _module_dict(torch.nn)
    d, td = ours.blocks, theirs.blocks
    assert list(d) == list(td) == ["fc", "out", "tail", "extra"]  # a replaced key keeps its place
    assert list(d.keys()) == list(td.keys()) and len(d) == len(td) == 4
    assert [type(m).__name__ for m in d.values()] == [type(m).__name__ for m in td.values()]
    assert [k for k, _ in d.items()] == list(d)
    assert "fc" in d and "act" not in d and "norm" not in d and 3 not in d
    assert d.fc is d["fc"] and isinstance(ours.popped, nn.ReLU)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert repr(ours) == repr(theirs)
    theirs.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in ours.state_dict().items()})
    x = rng(9).standard_normal((5, 3)).astype(F32)
    np.testing.assert_allclose(ours(pyrt.tensor(x))._data,
                               theirs(torch.from_numpy(x)).detach().numpy(), rtol=1e-5)
    assert len(list(ours.parameters())) == 6  # fc, out, extra: weight and bias each
    d.clear()
    assert len(d) == 0 and list(ours.parameters()) == [] and not list(ours.state_dict())
    assert len(nn.ModuleDict()) == 0
    for lib in (nn, torch.nn):  # a mapping's order is kept, not sorted
        d = lib.ModuleDict({"z": lib.ReLU(), "b": lib.Tanh()})
        d.update({"y": lib.ReLU(), "a": lib.Tanh()})
        assert list(d) == ["z", "b", "y", "a"]


@pytest.mark.parametrize("side", ["pyrt", "torch"])
def test_module_dict_errors_are_torchs(side):
    lib, ones = (nn, pyrt.ones) if side == "pyrt" else (torch.nn, torch.ones)
    d = lib.ModuleDict({"a": lib.ReLU()})
    cases = [
        (TypeError, lambda: d.__setitem__(1, lib.ReLU())),  # a key that is not a string
        (KeyError, lambda: d.__setitem__("a.b", lib.ReLU())),  # a dot
        (KeyError, lambda: d.__setitem__("keys", lib.ReLU())),  # an attribute's name
        (TypeError, lambda: d.__setitem__("b", 3)),  # not a module
        (KeyError, lambda: d["missing"]),
        (KeyError, lambda: d.pop("missing")),
        (KeyError, lambda: d.__delitem__("missing")),
        (TypeError, lambda: d.update(5)),
        (TypeError, lambda: d.update([5])),
        (ValueError, lambda: d.update([("a",)])),
        (NotImplementedError, lambda: d(ones(1))),
    ]
    for error, call in cases:
        with pytest.raises(error):
            call()
    assert list(d) == ["a"]


def test_module_dict_errors_say_what_was_expected():
    with pytest.raises(TypeError, match="iterable of key/module pairs, but got int"):
        nn.ModuleDict(5)
    with pytest.raises(TypeError, match="element #1 should be Iterable; is int"):
        nn.ModuleDict([("a", nn.ReLU()), 7])
    with pytest.raises(ValueError, match="element #0 has length 3; 2 is required"):
        nn.ModuleDict([("a", nn.ReLU(), 1)])


# ---- Unflatten -------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(lead=SHAPES, parts=st.lists(st.integers(0, 4), min_size=1, max_size=3),
       infer=st.booleans(), data=st.data())
def test_unflatten_against_torch(lead, parts, infer, data):
    """Splitting dim `dim` of [*lead, prod(parts), *trail] into parts (one given as -1, where
    that is not ambiguous): the shape and values of torch's, the gradient reshaped back."""
    at = data.draw(st.integers(0, len(lead)))
    shape = lead[:at] + (math.prod(parts),) + lead[at:]
    dim = data.draw(st.sampled_from([at, at - len(shape)]))
    sizes = list(parts)
    if infer and math.prod(parts[1:]) != 0:
        sizes[0] = -1
    sizes = tuple(sizes) if data.draw(st.booleans()) else sizes
    x = rng(len(shape)).standard_normal(shape).astype(F32)
    xp, xt = pair(x)
    y = nn.Unflatten(dim, sizes)(xp)
    yt = torch.nn.Unflatten(dim, sizes)(xt)
    assert y.shape == tuple(yt.shape) and np.array_equal(y._data, yt.detach().numpy())
    w = rng(1).standard_normal(y.shape).astype(F32)
    (y * pyrt.tensor(w)).sum().backward()
    assert np.array_equal(xp.grad._data, w.reshape(shape))
    assert repr(nn.Unflatten(dim, sizes)) == repr(torch.nn.Unflatten(dim, sizes))


def test_unflatten_errors():
    x = pyrt.zeros(4, 6)
    with pytest.raises(TypeError, match="unflattened_size must be a tuple of ints, but found type "
                                        "int"):
        nn.Unflatten(1, 3)
    with pytest.raises(TypeError, match="found element of type str at pos 1"):
        nn.Unflatten(1, (2, "a"))
    with pytest.raises(TypeError, match="found element of type float at pos 0"):
        nn.Unflatten(1, [3.0, 2])
    with pytest.raises(TypeError, match="dim must be an int, got float"):
        nn.Unflatten(1.0, (3, 2))
    with pytest.raises(ValueError, match="must be non-empty"):
        nn.Unflatten(1, ())
    with pytest.raises(ValueError, match="may hold one -1"):
        nn.Unflatten(1, (-1, -1))
    with pytest.raises(ValueError, match="sizes >= 0 or -1, got -2 at pos 1"):
        nn.Unflatten(1, (2, -2))
    for sizes in ((4, 2), (-1, 4), (0, 6)):
        with pytest.raises(RuntimeError, match=r"don't multiply up to the size of dim 1 \(6\)"):
            nn.Unflatten(1, sizes)(x)
        with pytest.raises(RuntimeError, match="don't multiply up"):
            torch.nn.Unflatten(1, sizes)(torch.zeros(4, 6))
    with pytest.raises(RuntimeError, match="ambiguous"):
        nn.Unflatten(1, (0, -1))(pyrt.zeros(4, 0))
    with pytest.raises(IndexError, match="Dimension out of range"):
        nn.Unflatten(2, (2, 3))(x)
    with pytest.raises(RuntimeError, match="tensor has no dimensions"):
        nn.Unflatten(0, (1,))(pyrt.tensor(5.0))
    with pytest.raises(TypeError, match="input must be a pyrt Tensor"):
        nn.Unflatten(1, (2, 3))(np.zeros((4, 6), F32))


# ---- names -----------------------------------------------------------------------------------

NEW_LAYERS = ["LeakyReLU", "ELU", "GELU", "SiLU", "Softplus", "Hardtanh", "L1Loss",
              "SmoothL1Loss", "HuberLoss", "BCELoss", "KLDivLoss", "Embedding", "ModuleDict",
              "Unflatten"]
NEW_FUNCTIONS = {A: ["leaky_relu", "elu", "gelu", "silu", "softplus", "hardtanh", "relu6",
                     "hardsigmoid", "hardswish", "mish", "selu", "celu", "prelu", "rrelu",
                     "softsign", "tanhshrink", "softshrink", "hardshrink", "threshold", "glu",
                     "logsigmoid", "softmin", "elu_", "leaky_relu_", "hardtanh_", "selu_",
                     "celu_", "rrelu_", "threshold_"],
                 LF: ["l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                      "kl_div", "margin_ranking_loss", "hinge_embedding_loss",
                      "soft_margin_loss", "multilabel_soft_margin_loss", "cosine_embedding_loss",
                      "triplet_margin_loss", "poisson_nll_loss", "gaussian_nll_loss",
                      "multi_margin_loss", "multilabel_margin_loss"],
                 E: ["embedding"]}


def test_new_names_are_exported_under_torchs_names():
    for name in NEW_LAYERS:
        assert name in nn.__all__ and hasattr(torch.nn, name)
        assert getattr(nn, name).__name__ == name
    for module, names in NEW_FUNCTIONS.items():
        assert sorted(module.__all__) == sorted(names)
        for name in names:
            assert name in NF.__all__ and getattr(NF, name) is getattr(module, name)
            assert hasattr(torch.nn.functional, name)
    assert all(hasattr(torch.nn.functional, name) for name in NF.__all__)
    assert all(hasattr(torch.nn, name) for name in nn.__all__
               if name not in ("functional", "init", "utils"))


# ---- training --------------------------------------------------------------------------------


def _token_model(lib, act):
    """Token -> embedding -> hidden layer with activation `act` -> one output."""
    return lib.Sequential(lib.Embedding(12, 6), lib.Linear(6, 16), getattr(lib, act)(),
                          lib.Linear(16, 1), lib.Flatten(0))


@pytest.mark.parametrize("act,loss", [("GELU", "HuberLoss"), ("SiLU", "SmoothL1Loss"),
                                      ("LeakyReLU", "L1Loss"), ("ELU", "BCELoss"),
                                      ("Softplus", "HuberLoss"), ("Hardtanh", "BCELoss")])
def test_new_layers_train_as_torchs(act, loss):
    """40 SGD steps from the same weights on the same batches of tokens, pyrt beside torch:
    the losses agree to float32 rounding, and fall."""
    pyrt.manual_seed(21)
    ours, theirs = _token_model(nn, act), _token_model(torch.nn, act)
    theirs.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in ours.state_dict().items()})
    r = rng(22)
    value = r.random(12).astype(F32)  # what each token should give
    sides = [(ours, nn, pyrt.tensor, optim.SGD(ours.parameters(), lr=0.2), []),
             (theirs, torch.nn, torch.from_numpy, torch.optim.SGD(theirs.parameters(), lr=0.2),
              [])]
    for _ in range(40):
        tokens = r.integers(0, 12, 16)
        for model, lib, wrap, opt, losses in sides:
            out = model(wrap(tokens))
            if loss == "BCELoss":
                out = out.sigmoid()
            loss_value = getattr(lib, loss)()(out, wrap(value[tokens]))
            opt.zero_grad()
            loss_value.backward()
            opt.step()
            losses.append(float(loss_value.item()))
    ours_losses, torch_losses = sides[0][4], sides[1][4]
    np.testing.assert_allclose(ours_losses, torch_losses, rtol=2e-4)
    assert np.mean(ours_losses[-5:]) < 0.8 * np.mean(ours_losses[:5])
