"""The activations (ReLU6, Hardsigmoid, Hardswish, Mish, SELU, CELU, PReLU, RReLU, Softsign,
Tanhshrink, Softshrink, Hardshrink, Threshold, GLU, LogSigmoid, Softmin, Softmax2d), the
margin, embedding and likelihood losses, CosineSimilarity and PairwiseDistance, ParameterList
and ParameterDict, and parameters_to_vector / vector_to_parameters.

Every function is checked against a NumPy closed form computed in float64, and its gradient
against central differences of its own forward, so that the file tests something without
PyTorch; where PyTorch is installed, values, gradients of sum(out * w) for a random w, every
reduction, edge values, reprs and errors are compared with torch's too."""

import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.nn.functional as NF
from pyrt import nn
from pyrt.nn.utils import parameters_to_vector, vector_to_parameters

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

F32 = np.float32
SHAPES = st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple)
REDUCTIONS = ("mean", "sum", "none")


def rng(seed):
    return np.random.default_rng(seed)


def assert_close(got, ref, scale, rtol=1e-5, what=""):
    """Element by element, |got - ref| <= rtol * max(|ref|, scale), `scale` (broadcast) the
    size of the terms the value was computed from; nan and inf where the reference has them."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    finite = np.isfinite(ref)
    assert np.array_equal(got[~finite], ref[~finite], equal_nan=True), what
    bound = rtol * np.maximum(np.abs(ref), np.broadcast_to(scale, ref.shape))[finite]
    err = np.abs(got[finite] - ref[finite])
    assert (err <= bound).all(), f"{what}: max excess error {np.max(err - bound):.3g}"


def numeric_grad(f, arrays, index, points, h=1e-2):
    """Central differences of the scalar f(*arrays) (float32 tensors) in arrays[index] at
    `points` (flat indices), computed in float64 from float32 evaluations."""
    out = []
    for k in points:
        values = []
        for step in (h, -h):
            moved = [a.copy() for a in arrays]
            moved[index].reshape(-1)[k] += step
            values.append(float(f(*[pyrt.tensor(a) for a in moved]).item()))
        out.append((values[0] - values[1]) / (2 * h))
    return np.array(out)


def check_grad_fd(f, arrays, index=0, rtol=2e-2, seed=0):
    """The gradient of f(*arrays) in arrays[index] against central differences at up to six
    elements."""
    tensors = [pyrt.tensor(a, requires_grad=(i == index)) for i, a in enumerate(arrays)]
    f(*tensors).backward()
    grad = tensors[index].grad.numpy().reshape(-1)
    size = arrays[index].size
    points = rng(seed).choice(size, min(size, 6), replace=False)
    fd = numeric_grad(f, arrays, index, points)
    assert_close(grad[points], fd, 1.0, rtol=rtol, what="finite differences")


# ---- activations: NumPy closed forms (float64) -----------------------------------------------

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _softplus(x):
    return np.logaddexp(0, x)


REFERENCES = {  # name -> (kwargs, closed form)
    "relu6": ({}, lambda x: np.clip(x, 0, 6)),
    "hardsigmoid": ({}, lambda x: np.clip(x + 3, 0, 6) / 6),
    "hardswish": ({}, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "mish": ({}, lambda x: x * np.tanh(_softplus(x))),
    "selu": ({}, lambda x: SELU_SCALE * np.where(x > 0, x,
                                                 SELU_ALPHA * np.expm1(np.minimum(x, 0)))),
    "celu": ({"alpha": 0.7}, lambda x: np.where(x > 0, x, 0.7 * np.expm1(np.minimum(x, 0) / 0.7))),
    "softsign": ({}, lambda x: x / (1 + np.abs(x))),
    "tanhshrink": ({}, lambda x: x - np.tanh(x)),
    "softshrink": ({"lambd": 0.4}, lambda x: np.where(x > 0.4, x - 0.4,
                                                      np.where(x < -0.4, x + 0.4, 0))),
    "hardshrink": ({"lambd": 0.4}, lambda x: np.where(np.abs(x) > 0.4, x, 0)),
    "threshold": ({"threshold": 0.3, "value": -2.0}, lambda x: np.where(x > 0.3, x, -2.0)),
    "logsigmoid": ({}, lambda x: -_softplus(-x)),
    "rrelu": ({}, lambda x: np.where(x > 0, x, x * (1 / 8 + 1 / 3) / 2)),
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_activation_matches_closed_form_and_finite_differences(name):
    kwargs, reference = REFERENCES[name]
    x = (rng(1).standard_normal((4, 7)) * 4).astype(F32)
    y = getattr(NF, name)(pyrt.tensor(x), **kwargs)
    assert y.dtype == pyrt.float32 and y.shape == x.shape
    assert_close(y.numpy(), reference(x.astype(np.float64)), np.abs(x), rtol=2e-6, what=name)
    w = rng(2).standard_normal(x.shape).astype(F32)
    check_grad_fd(lambda t: (getattr(NF, name)(t, **kwargs) * pyrt.tensor(w)).sum(), [x])


def test_stable_tails_far_out():
    """logsigmoid, mish, selu, celu and softsign stay finite and accurate where a naive
    formula overflows or cancels."""
    x = np.array([-1e4, -100, -80, -30, 30, 80, 100, 1e4], F32)
    x64 = x.astype(np.float64)
    # float32's subnormals (below 1.2e-38) hold fewer digits: compared absolutely there
    TINY = 1e-37
    assert_close(NF.logsigmoid(pyrt.tensor(x)).numpy(), -_softplus(-x64), TINY, rtol=1e-6)
    assert_close(NF.mish(pyrt.tensor(x)).numpy(), x64 * np.tanh(_softplus(x64)), TINY, rtol=1e-6)
    assert_close(NF.selu(pyrt.tensor(x)).numpy(), REFERENCES["selu"][1](x64), TINY, rtol=1e-6)
    assert_close(NF.celu(pyrt.tensor(x), 0.5).numpy(),
                 np.where(x64 > 0, x64, 0.5 * np.expm1(np.minimum(x64, 0) / 0.5)), TINY, rtol=1e-6)
    t = pyrt.tensor(x, requires_grad=True)
    NF.logsigmoid(t).sum().backward()
    assert_close(t.grad.numpy(), np.exp(-_softplus(x64)), TINY, rtol=1e-6)
    # near 0, x - tanh(x) ~ x^3 / 3: no digits lost
    small = np.array([1e-3, -2e-2], F32)
    assert_close(NF.tanhshrink(pyrt.tensor(small)).numpy(),
                 small.astype(np.float64) - np.tanh(small.astype(np.float64)), 0, rtol=1e-5)


def test_glu_prelu_softmin_closed_forms():
    x = rng(3).standard_normal((3, 4, 2)).astype(F32)
    a, b = x[:, :2].astype(np.float64), x[:, 2:].astype(np.float64)
    assert_close(NF.glu(pyrt.tensor(x), 1).numpy(), a / (1 + np.exp(-b)), 1e-3, rtol=2e-6)
    check_grad_fd(lambda t: (NF.glu(t, 1) ** 2).sum(), [x])
    w = np.array([0.1, -0.5, 2.0, 0.3], F32)
    x64 = x.astype(np.float64)
    ref = np.where(x64 > 0, x64, w[None, :, None] * x64)
    assert_close(NF.prelu(pyrt.tensor(x), pyrt.tensor(w)).numpy(), ref, 1e-3, rtol=2e-6)
    check_grad_fd(lambda t, u: (NF.prelu(t, u) ** 2).sum(), [x, w], index=1)
    check_grad_fd(lambda t, u: (NF.prelu(t, u) ** 2).sum(), [x, w], index=0)
    e = np.exp(-x64 + x64.min(axis=2, keepdims=True))
    assert_close(NF.softmin(pyrt.tensor(x), dim=2).numpy(), e / e.sum(axis=2, keepdims=True),
                 1e-3, rtol=2e-6)


# ---- activations against torch -----------------------------------------------------------------

TORCH_ACTIVATIONS = [  # (pyrt.nn.functional name, keyword arguments)
    ("relu6", {}), ("hardsigmoid", {}), ("hardswish", {}), ("mish", {}), ("selu", {}),
    ("celu", {}), ("celu", {"alpha": 0.3}), ("celu", {"alpha": -1.5}), ("softsign", {}),
    ("tanhshrink", {}), ("softshrink", {}), ("softshrink", {"lambd": 2.0}), ("hardshrink", {}),
    ("hardshrink", {"lambd": 1.5}), ("threshold", {"threshold": 0.5, "value": 7.0}),
    ("logsigmoid", {}), ("rrelu", {}), ("rrelu", {"lower": 0.05, "upper": 0.7}),
]
EDGES = np.array([0.0, -0.0, 1e-6, -1e-6, 0.5, -0.5, 1, -1, 2, -2, 3, -3, 6, -6, 20, -20, 30,
                  -30, 88, -88, 100, -100, 1e4, -1e4], F32)
# where PyTorch's gradient at nan is a number (its branch tests fail at nan), ours matches
NAN_GRADIENT_AS_TORCH = {"relu6", "hardsigmoid", "hardswish", "selu", "celu", "softshrink",
                         "hardshrink", "threshold", "rrelu"}


def _torch_activation(name, t, kwargs):
    return getattr(TF, name)(t, **kwargs)


def _compare_activation(name, kwargs, x, w, grad_scale=1.0):
    xp = pyrt.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    yp = getattr(NF, name)(xp, **kwargs)
    yt = _torch_activation(name, xt, kwargs)
    scale = np.abs(x) if yt.shape == xt.shape else np.abs(x).max(initial=0)
    assert_close(yp.detach().numpy(), yt.detach().numpy(), scale, what=f"{name} value")
    (yp * pyrt.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    assert_close(xp.grad.numpy(), xt.grad.numpy(), grad_scale * np.abs(w).max(initial=0),
                 what=f"{name} grad")


@needs_torch
@pytest.mark.parametrize(("name", "kwargs"), TORCH_ACTIVATIONS)
def test_activation_edges_against_torch(name, kwargs):
    x = EDGES
    if name == "softsign":  # PyTorch's gradient of its composition cancels far out
        x = x[np.abs(x) < 1e3]
    _compare_activation(name, kwargs, x, rng(4).standard_normal(x.shape).astype(F32))
    nan = pyrt.tensor(np.array([np.nan], F32), requires_grad=True)
    tnan = torch.tensor([np.nan], requires_grad=True)
    y = getattr(NF, name)(nan, **kwargs)
    assert np.isnan(y.detach().numpy()).all() == torch.isnan(
        _torch_activation(name, tnan, kwargs)).all().item()
    if name in NAN_GRADIENT_AS_TORCH:
        y.sum().backward()
        _torch_activation(name, tnan, kwargs).sum().backward()
        assert np.array_equal(nan.grad.numpy(), tnan.grad.numpy(), equal_nan=True)


@needs_torch
@settings(max_examples=12, deadline=None)
@given(shape=SHAPES, seed=st.integers(0, 2**16), which=st.integers(0, len(TORCH_ACTIVATIONS) - 1))
def test_activation_shapes_against_torch(shape, seed, which):
    name, kwargs = TORCH_ACTIVATIONS[which]
    g = rng(seed)
    x = (g.standard_normal(shape) * 5).astype(F32)
    _compare_activation(name, kwargs, x, g.standard_normal(shape).astype(F32))


@needs_torch
@settings(max_examples=10, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple),
       seed=st.integers(0, 2**16), dim=st.integers(-4, 3))
def test_glu_softmin_against_torch(shape, seed, dim):
    g = rng(seed)
    dim = dim % len(shape)
    shape = shape[:dim] + (2 * shape[dim],) + shape[dim + 1:]
    x = g.standard_normal(shape).astype(F32)
    for name, kw in (("glu", {"dim": dim}), ("softmin", {"dim": dim})):
        out_shape = getattr(TF, name)(torch.tensor(x), **kw).shape
        _compare_activation(name, kw, x, g.standard_normal(out_shape).astype(F32))


def _compare_prelu(x, w, seed=5):
    xp, wp = pyrt.tensor(x, requires_grad=True), pyrt.tensor(w, requires_grad=True)
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    yp, yt = NF.prelu(xp, wp), TF.prelu(xt, wt)
    assert_close(yp.detach().numpy(), yt.detach().numpy(), np.abs(x))
    g = rng(seed).standard_normal(x.shape).astype(F32)
    (yp * pyrt.tensor(g)).sum().backward()
    (yt * torch.tensor(g)).sum().backward()
    assert_close(xp.grad.numpy(), xt.grad.numpy(), 1.0)
    assert_close(wp.grad.numpy(), wt.grad.numpy(), np.abs(x * g).sum(), what="weight grad")


@needs_torch
@pytest.mark.parametrize(("shape", "wshape"), [
    ((2, 3, 4, 5), (3,)), ((2, 3, 4, 5), (1,)), ((2, 3, 4, 5), ()), ((4, 3), (3,)),
    ((6,), (1,)), ((), ()), ((0, 3), (3,)), ((2, 3, 5), (3,)),
])
def test_prelu_against_torch(shape, wshape):
    g = rng(6)
    x = g.standard_normal(shape).astype(F32)
    if x.size:
        x.reshape(-1)[0] = 0.0  # the kink: gradient a, as in PyTorch
    _compare_prelu(x, g.uniform(-1, 1, wshape).astype(F32))


@needs_torch
def test_prelu_module_trains_as_torch():
    x = rng(7).standard_normal((5, 3, 2)).astype(F32)
    mine, theirs = nn.PReLU(3, init=0.1), torch.nn.PReLU(3, init=0.1)
    assert_close(mine.weight.detach().numpy(), theirs.weight.detach().numpy(), 0)
    assert [n for n, _ in mine.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    (mine(pyrt.tensor(x)) ** 2).sum().backward()
    (theirs(torch.tensor(x)) ** 2).sum().backward()
    assert_close(mine.weight.grad.numpy(), theirs.weight.grad.numpy(), 1.0)
    assert list(mine.state_dict()) == list(theirs.state_dict()) == ["weight"]


def test_rrelu_training_draws_seeded_slopes():
    x = np.linspace(-4, 4, 401, dtype=F32)
    pyrt.manual_seed(11)
    t = pyrt.tensor(x, requires_grad=True)
    y = NF.rrelu(t, 0.1, 0.3, training=True)
    y.sum().backward()
    y = y.detach().numpy()
    negative = x < 0
    slopes = y[negative] / x[negative]
    assert ((slopes >= 0.1) & (slopes <= 0.3)).all()
    assert np.unique(slopes).size > 100  # one draw per element
    assert np.array_equal(y[x > 0], x[x > 0])
    assert_close(t.grad.numpy()[negative], slopes, 1.0, rtol=1e-6)  # the same slopes
    assert (t.grad.numpy()[x > 0] == 1).all()
    pyrt.manual_seed(11)
    again = NF.rrelu(pyrt.tensor(x), 0.1, 0.3, training=True).numpy()
    assert np.array_equal(again, y)
    pyrt.manual_seed(12)
    assert not np.array_equal(NF.rrelu(pyrt.tensor(x), 0.1, 0.3, training=True).numpy(), y)
    module = nn.RReLU(0.1, 0.3)
    module.eval()
    assert_close(module(pyrt.tensor(x)).numpy(), np.where(x > 0, x, 0.2 * x), 1e-6, rtol=1e-6)


def test_softmax2d_and_softmin_modules():
    x = rng(8).standard_normal((2, 3, 4, 5)).astype(F32)
    e = np.exp(x.astype(np.float64))
    assert_close(nn.Softmax2d()(pyrt.tensor(x)).numpy(), e / e.sum(axis=1, keepdims=True), 1e-3)
    assert_close(nn.Softmax2d()(pyrt.tensor(x[0])).numpy(),
                 e[0] / e[0].sum(axis=0, keepdims=True), 1e-3)
    with pytest.raises(ValueError, match="expected input to be 3D or 4D, got 2D"):
        nn.Softmax2d()(pyrt.tensor(x[0, 0]))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        y = nn.Softmin()(pyrt.tensor(x))  # 4-D: dim 1
    e = np.exp(-x.astype(np.float64))
    assert_close(y.numpy(), e / e.sum(axis=1, keepdims=True), 1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.Softmin(dim=-1)(pyrt.tensor(x))


ACTIVATION_MODULES = [  # (class name, constructor arguments, functional name, its kwargs)
    ("ReLU6", {}, "relu6", {}), ("Hardsigmoid", {}, "hardsigmoid", {}),
    ("Hardswish", {}, "hardswish", {}), ("Mish", {}, "mish", {}), ("SELU", {}, "selu", {}),
    ("CELU", {"alpha": 0.5}, "celu", {"alpha": 0.5}), ("Softsign", {}, "softsign", {}),
    ("Tanhshrink", {}, "tanhshrink", {}), ("Softshrink", {"lambd": 0.3}, "softshrink",
                                           {"lambd": 0.3}),
    ("Hardshrink", {"lambd": 0.3}, "hardshrink", {"lambd": 0.3}),
    ("Threshold", {"threshold": 0.1, "value": 20}, "threshold",
     {"threshold": 0.1, "value": 20}),
    ("LogSigmoid", {}, "logsigmoid", {}), ("GLU", {"dim": 0}, "glu", {"dim": 0}),
    ("Softmin", {"dim": 1}, "softmin", {"dim": 1}),
    ("RReLU", {"lower": 0.2, "upper": 0.4}, "rrelu", {"lower": 0.2, "upper": 0.4}),
]


@pytest.mark.parametrize(("cls", "args", "fn", "fkwargs"), ACTIVATION_MODULES)
def test_activation_modules_call_their_functions(cls, args, fn, fkwargs):
    x = rng(9).standard_normal((4, 6)).astype(F32)
    module = getattr(nn, cls)(**args)
    if cls == "RReLU":
        module.eval()
    expected = getattr(NF, fn)(pyrt.tensor(x), **fkwargs).numpy()
    assert np.array_equal(module(pyrt.tensor(x)).numpy(), expected)
    with pytest.raises(TypeError, match="Tensor"):
        module(x)


@needs_torch
@pytest.mark.parametrize(("cls", "args", "fn", "fkwargs"), ACTIVATION_MODULES)
def test_activation_module_reprs_match_torch(cls, args, fn, fkwargs):
    assert repr(getattr(nn, cls)(**args)) == repr(getattr(torch.nn, cls)(**args))


@needs_torch
def test_more_reprs_match_torch():
    for cls, args in [("PReLU", {}), ("PReLU", {"num_parameters": 4}), ("Softmax2d", {}),
                      ("Softmin", {}), ("CELU", {}), ("RReLU", {}), ("Softshrink", {}),
                      ("CosineSimilarity", {}), ("PairwiseDistance", {"p": 1.0}),
                      ("MarginRankingLoss", {}), ("HingeEmbeddingLoss", {}),
                      ("SoftMarginLoss", {}), ("MultiLabelSoftMarginLoss", {}),
                      ("CosineEmbeddingLoss", {}), ("TripletMarginLoss", {}),
                      ("PoissonNLLLoss", {}), ("GaussianNLLLoss", {}), ("MultiMarginLoss", {}),
                      ("MultiLabelMarginLoss", {})]:
        assert repr(getattr(nn, cls)(**args)) == repr(getattr(torch.nn, cls)(**args)), cls


def test_inplace_is_a_setting_of_the_activations():
    for cls in ("ReLU6", "Hardsigmoid", "Hardswish", "Mish", "SELU", "CELU", "RReLU"):
        assert getattr(nn, cls)().inplace is False
        assert getattr(nn, cls)(inplace=True).inplace is True
    assert nn.Threshold(0.0, 1.0, inplace=True).inplace is True
    with pytest.raises(TypeError, match="inplace must be a bool, got str"):
        nn.SELU(inplace="yes")


ACTIVATION_ERRORS = [  # (pyrt call, torch call or None, exception type, message pattern)
    (lambda F, T: F.celu(T(np.ones(2, F32)), alpha=0.0), RuntimeError, "alpha cannot be 0"),
    (lambda F, T: F.rrelu(T(np.ones(2, F32)), 0.5, 0.2, training=True), RuntimeError,
     "Lower bound should be less than or equal"),
    (lambda F, T: F.softshrink(T(np.ones(2, F32)), -1.0), RuntimeError, "lambda must be in"),
    (lambda F, T: F.glu(T(np.ones((3, 5), F32))), RuntimeError,
     "Halving dimension must be even, but dimension 1 is size 5"),
    (lambda F, T: F.glu(T(np.float32(1.0))), RuntimeError, "glu does not support scalars"),
    (lambda F, T: F.glu(T(np.ones((3, 4), F32)), dim=2), IndexError, "Dimension out of range"),
    (lambda F, T: F.prelu(T(np.ones((3, 4), F32)), T(np.ones(3, F32))), RuntimeError,
     "Mismatch of parameter numbers and input channel size"),
    (lambda F, T: F.prelu(T(np.ones((3, 4), F32)), T(np.ones((2, 2), F32))), RuntimeError,
     "Expected `weight` to be a scalar or 1D tensor"),
    (lambda F, T: F.prelu(T(np.float32(1.0)), T(np.ones(4, F32))), RuntimeError,
     "Not allow zero-dim input tensor"),
]


@pytest.mark.parametrize(("call", "exc", "pattern"), ACTIVATION_ERRORS)
def test_activation_errors(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call(NF, pyrt.tensor)
    if torch is not None:
        with pytest.raises(exc, match=pattern):
            call(TF, lambda a: torch.tensor(np.asarray(a)))


def test_activation_argument_types():
    x = pyrt.tensor(np.ones(2, F32))
    with pytest.raises(TypeError, match="alpha"):
        NF.celu(x, alpha="1")
    with pytest.raises(TypeError, match="input must be a Tensor"):
        NF.mish(np.ones(2, F32))
    with pytest.raises(TypeError, match="float32"):
        NF.selu(pyrt.tensor(np.ones(2, np.int64)))
    with pytest.raises(ValueError, match="num_parameters"):
        nn.PReLU(0)
    with pytest.raises(TypeError, match="threshold"):
        nn.Threshold(None, 1.0)


# ---- losses: NumPy closed forms ----------------------------------------------------------------


def _reduce64(losses, reduction):
    return {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction](losses)


def _sign(g, shape):
    return np.where(g.random(shape) < 0.5, -1.0, 1.0).astype(F32)


def _cases(g):
    """(name, float32 arrays (input first), integer arrays appended, kwargs, NumPy form of the
    unreduced loss in float64)."""
    n, c = 5, 4
    x1, x2, x3 = (g.standard_normal((n, c)).astype(F32) for _ in range(3))
    y = _sign(g, (n,))
    yy = _sign(g, (n, c))
    counts = g.poisson(2.0, (n, c)).astype(F32)
    var = g.uniform(0.1, 2.0, (n, c)).astype(F32)
    labels = g.integers(0, c, n)
    multi = np.array([[0, 3, -1, 1], [1, -1, 2, 2], [3, 2, 1, 0], [-1, 0, 0, 0], [2, 2, -1, 3]])
    wc = g.uniform(0.5, 2.0, c).astype(F32)

    def cosine(a, b):
        return (a * b).sum(1) / np.sqrt(((a * a).sum(1) + 1e-12) * ((b * b).sum(1) + 1e-12))

    def dist(a, b, p):
        return (np.abs(a - b + 1e-6) ** p).sum(-1) ** (1 / p)

    def multi_margin(x, t, p, margin, w):
        z = margin - x[np.arange(n), t][:, None] + x
        z[np.arange(n), t] = 0
        return (np.maximum(z, 0) ** p * w[t][:, None]).sum(1) / c

    def multilabel_margin(x, t):
        out = np.zeros(n)
        for i in range(n):
            listed = []
            for k in t[i]:
                if k < 0:
                    break
                listed.append(k)
            for j in listed:
                for k in range(c):
                    if k not in listed:
                        out[i] += max(0.0, 1 - (x[i, j] - x[i, k]))
        return out / c

    lg = -np.log1p(np.exp(-x1.astype(np.float64)))
    return [
        ("margin_ranking_loss", [x1[:, 0], x2[:, 0], y], {"margin": 0.3},
         lambda a, b, t: np.maximum(0, -t * (a - b) + 0.3)),
        ("hinge_embedding_loss", [x1, yy], {"margin": 0.5},
         lambda a, t: np.where(t == 1, a, np.maximum(0, 0.5 - a))),
        ("soft_margin_loss", [x1, yy], {}, lambda a, t: np.log1p(np.exp(-t * a))),
        ("multilabel_soft_margin_loss", [x1, (yy > 0).astype(F32)], {},
         lambda a, t: -(t * lg + (1 - t) * (lg - a)).mean(1)),
        ("cosine_embedding_loss", [x1, x2, y], {"margin": 0.2},
         lambda a, b, t: np.where(t == 1, 1 - cosine(a, b), np.maximum(0, cosine(a, b) - 0.2))),
        ("triplet_margin_loss", [x1, x2, x3], {"margin": 0.7, "p": 1.5},
         lambda a, p, q: np.maximum(0, 0.7 + dist(a, p, 1.5) - dist(a, q, 1.5))),
        ("triplet_margin_loss", [x1, x2, x3], {"swap": True},
         lambda a, p, q: np.maximum(0, 1 + dist(a, p, 2) - np.minimum(dist(a, q, 2),
                                                                      dist(p, q, 2)))),
        ("poisson_nll_loss", [x1, counts], {}, lambda a, t: np.exp(a) - t * a),
        ("poisson_nll_loss", [np.abs(x1) + 0.1, counts], {"log_input": False, "full": True},
         lambda a, t: a - t * np.log(a + 1e-8) + np.where(
             t > 1, t * np.log(np.maximum(t, 1)) - t + 0.5 * np.log(2 * np.pi * np.maximum(t, 1)),
             0)),
        ("gaussian_nll_loss", [x1, x2, var], {"full": True},
         lambda a, t, v: 0.5 * (np.log(v) + (a - t) ** 2 / v) + 0.5 * np.log(2 * np.pi)),
        ("gaussian_nll_loss", [x1, x2, var[:, 0]], {},
         lambda a, t, v: 0.5 * (np.log(v[:, None]) + (a - t) ** 2 / v[:, None])),
        ("multi_margin_loss", [x1, labels], {},
         lambda a, t: multi_margin(a, t, 1, 1.0, np.ones(c))),
        ("multi_margin_loss", [x1, labels], {"p": 2, "margin": 0.8, "weight": wc},
         lambda a, t: multi_margin(a, t, 2, 0.8, wc)),
        ("multilabel_margin_loss", [x1, multi], {}, multilabel_margin),
    ]


def _call(name, arrays, kwargs, reduction, requires_grad=False):
    tensors = [pyrt.tensor(a, requires_grad=requires_grad and a.dtype == F32 and i == 0)
               for i, a in enumerate(arrays)]
    kw = {k: pyrt.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    return tensors, getattr(NF, name)(*tensors, **kw, reduction=reduction)


@pytest.mark.parametrize("case", range(14))
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_loss_matches_closed_form(case, reduction):
    name, arrays, kwargs, form = _cases(rng(20))[case]
    ref = _reduce64(form(*[a.astype(np.float64) if a.dtype == F32 else a for a in arrays]),
                    reduction)
    _, out = _call(name, arrays, kwargs, reduction)
    assert out.dtype == pyrt.float32
    assert_close(out.numpy(), ref, 1.0, rtol=1e-5, what=name)


@pytest.mark.parametrize("case", range(14))
def test_loss_gradient_matches_finite_differences(case):
    name, arrays, kwargs, _ = _cases(rng(21))[case]
    kw = {k: pyrt.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    check_grad_fd(lambda *t: getattr(NF, name)(*t, **kw, reduction="sum"), arrays, seed=case)


# ---- losses against torch ----------------------------------------------------------------------


def _compare_loss(name, arrays, kwargs, reduction, seed=0):
    # PyTorch refuses soft_margin_loss's target gradient, and poisson_nll_loss's full=True
    # gives nan for it (the log of the masked targets); the others are compared
    refused = name == "soft_margin_loss" or (name == "poisson_nll_loss" and kwargs.get("full"))
    grads = [a.dtype == F32 and not (i == 1 and refused) for i, a in enumerate(arrays)]
    mine = [pyrt.tensor(a, requires_grad=r) for a, r in zip(arrays, grads)]
    theirs = [torch.tensor(a, requires_grad=r) for a, r in zip(arrays, grads)]
    kp = {k: pyrt.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    kt = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    yp = getattr(NF, name)(*mine, **kp, reduction=reduction)
    yt = getattr(TF, name)(*theirs, **kt, reduction=reduction)
    scale = max(1.0, float(np.abs(yt.detach().numpy()).max(initial=0)))
    assert_close(yp.detach().numpy(), yt.detach().numpy(), scale, what=f"{name} value")
    w = rng(seed).standard_normal(tuple(yt.shape)).astype(F32)
    (yp * pyrt.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    for i, (p, t) in enumerate(zip(mine, theirs)):
        if t.requires_grad:
            if t.grad is None:  # an operand that only selects (a target of signs)
                assert p.grad is None or not p.grad.numpy().any(), f"{name} grad {i}"
                continue
            ref = t.grad.numpy()
            gscale = max(0.1, float(np.abs(ref).max(initial=0)))
            if name == "cosine_embedding_loss":
                # its gradient is a difference of terms of size |w| / |x| that cancel to about
                # zero when the rows are nearly parallel (always so for one column)
                norms = np.linalg.norm(arrays[i].reshape(-1, arrays[i].shape[-1]), axis=-1)
                gscale = max(gscale, float(np.abs(w).max() / max(norms.min(), 1e-3)))
            assert_close(p.grad.numpy(), ref, gscale, what=f"{name} grad {i}")


@needs_torch
@pytest.mark.parametrize("case", range(14))
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_loss_against_torch(case, reduction):
    name, arrays, kwargs, _ = _cases(rng(22))[case]
    _compare_loss(name, arrays, kwargs, reduction, seed=case)


@needs_torch
@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 6), c=st.integers(1, 5), seed=st.integers(0, 2**16),
       reduction=st.sampled_from(REDUCTIONS))
def test_losses_over_shapes_against_torch(n, c, seed, reduction):
    g = rng(seed)
    x1, x2, x3 = (g.standard_normal((n, c)).astype(F32) for _ in range(3))
    yy = _sign(g, (n, c))
    labels = g.integers(0, c, n)
    multi = np.where(g.random((n, c)) < 0.3, -1, g.integers(0, c, (n, c)))
    for name, arrays, kwargs in [
        ("margin_ranking_loss", [x1, x2, yy], {"margin": 0.1}),
        ("hinge_embedding_loss", [x1, yy], {}),
        ("soft_margin_loss", [x1, yy], {}),
        ("multilabel_soft_margin_loss", [x1, (yy > 0).astype(F32)], {}),
        ("cosine_embedding_loss", [x1, x2, yy[:, 0]], {}),
        ("triplet_margin_loss", [x1, x2, x3], {"p": 1.0, "swap": True}),
        ("poisson_nll_loss", [x1, np.abs(x2) * 3], {"full": True}),
        ("gaussian_nll_loss", [x1, x2, np.abs(x3) + 0.05], {}),
        ("gaussian_nll_loss", [x1, x2, np.abs(x3[:, :1]) + 0.05], {"full": True}),
        ("multi_margin_loss", [x1, labels], {"p": 2}),
        ("multilabel_margin_loss", [x1, multi], {}),
    ]:
        _compare_loss(name, arrays, kwargs, reduction, seed)


@needs_torch
def test_losses_of_one_sample_and_empty_batches_against_torch():
    g = rng(23)
    x, v = g.standard_normal(4).astype(F32), g.standard_normal(4).astype(F32)
    for reduction in REDUCTIONS:
        _compare_loss("multi_margin_loss", [x, np.array(2)], {}, reduction)
        _compare_loss("multi_margin_loss", [x, np.array([1])], {}, reduction)
        _compare_loss("multilabel_margin_loss", [x, np.array([0, 3, -1, 1])], {}, reduction)
        _compare_loss("cosine_embedding_loss", [x, v, np.array(-1, F32)], {"margin": -0.5},
                      reduction)
        empty = np.zeros((0, 3), F32)
        for name, arrays in [("soft_margin_loss", [empty, empty]),
                             ("hinge_embedding_loss", [empty, empty]),
                             ("poisson_nll_loss", [empty, empty])]:
            mine = getattr(NF, name)(*[pyrt.tensor(a) for a in arrays], reduction=reduction)
            theirs = getattr(TF, name)(*[torch.tensor(a) for a in arrays], reduction=reduction)
            assert mine.shape == tuple(theirs.shape)
            assert np.array_equal(mine.numpy(), theirs.numpy(), equal_nan=True), name
        # PyTorch's multi_margin_loss of no samples returns an uninitialised value; pyrt's is
        # that of the other losses: nothing, 0 or nan
        out = NF.multi_margin_loss(pyrt.tensor(empty), pyrt.tensor(np.zeros(0, np.int64)),
                                   reduction=reduction)
        expected = {"none": np.zeros(0, F32), "sum": np.float32(0), "mean": np.float32(np.nan)}
        assert np.array_equal(out.numpy(), expected[reduction], equal_nan=True)


@needs_torch
def test_loss_edge_values_against_torch():
    big = np.array([0.0, 1e-6, -3.0, 15.0, -15.0, 40.0, -40.0], F32)
    ones = np.ones_like(big)
    for reduction in REDUCTIONS:
        _compare_loss("hinge_embedding_loss", [big, np.where(big > 0, 1, -1).astype(F32)], {},
                      reduction)
        _compare_loss("margin_ranking_loss", [big, big[::-1].copy(), ones], {}, reduction)
        _compare_loss("poisson_nll_loss", [big[:5], np.arange(5, dtype=F32)], {"full": True},
                      reduction)
        # PyTorch's soft margin overflows to inf past exp(88); agreed below that
        _compare_loss("soft_margin_loss", [big, -ones], {}, reduction)
        _compare_loss("gaussian_nll_loss", [big, ones, np.array([0, 1e-9, 1, 2, 3, 4, 5], F32)],
                      {"eps": 1e-3}, reduction)
    # far out the logistic loss is the margin itself, where log1p(exp(100)) would be inf
    out = NF.soft_margin_loss(pyrt.tensor(np.array([-100.0, 100.0], F32)),
                              pyrt.tensor(np.ones(2, F32)), reduction="none")
    assert_close(out.numpy(), [100.0, math.exp(-100.0)], 1e-37, rtol=1e-6)  # (a subnormal)


@needs_torch
def test_loss_modules_against_torch():
    g = rng(24)
    x1, x2, x3 = (g.standard_normal((5, 4)).astype(F32) for _ in range(3))
    y = _sign(g, (5,))
    labels = g.integers(0, 4, 5)
    w = g.uniform(0.5, 2, 4).astype(F32)
    cases = [
        ("MarginRankingLoss", {"margin": 0.2}, [x1[:, 0], x2[:, 0], y]),
        ("HingeEmbeddingLoss", {"margin": 2.0}, [x1, np.sign(x2)]),
        ("SoftMarginLoss", {}, [x1, np.sign(x2)]),
        ("MultiLabelSoftMarginLoss", {"weight": w}, [x1, (x2 > 0).astype(F32)]),
        ("CosineEmbeddingLoss", {"margin": 0.1}, [x1, x2, y]),
        ("TripletMarginLoss", {"margin": 0.5, "p": 3.0, "swap": True}, [x1, x2, x3]),
        ("PoissonNLLLoss", {"log_input": False, "eps": 1e-3}, [np.abs(x1), np.abs(x2)]),
        ("GaussianNLLLoss", {"full": True, "eps": 1e-2}, [x1, x2, np.abs(x3)]),
        ("MultiMarginLoss", {"p": 2, "margin": 0.5, "weight": w}, [x1, labels]),
        ("MultiLabelMarginLoss", {}, [x1, np.where(x2 > 0.5, -1, labels[:, None])]),
        ("CosineSimilarity", {"dim": 0}, [x1, x2]),
        ("PairwiseDistance", {"p": 1.0, "keepdim": True}, [x1, x2]),
    ]
    for cls, kwargs, arrays in cases:
        for reduction in (("mean", "none") if cls.endswith("Loss") else (None,)):
            extra = {} if reduction is None else {"reduction": reduction}
            kp = {k: pyrt.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
            kt = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
            mine = getattr(nn, cls)(**kp, **extra)
            theirs = getattr(torch.nn, cls)(**kt, **extra)
            grads = [i == 0 for i in range(len(arrays))]
            tp = [pyrt.tensor(a, requires_grad=r) for a, r in zip(arrays, grads)]
            tt = [torch.tensor(a, requires_grad=r) for a, r in zip(arrays, grads)]
            yp, yt = mine(*tp), theirs(*tt)
            assert_close(yp.detach().numpy(), yt.detach().numpy(), 1.0, what=cls)
            yp.sum().backward()
            yt.sum().backward()
            assert_close(tp[0].grad.numpy(), tt[0].grad.numpy(), 1e-2, what=cls)
        if "weight" in kwargs:
            assert list(mine.state_dict()) == list(theirs.state_dict()) == ["weight"]


LOSS_ERRORS = [  # (call given (F, T), exception type, message pattern); T makes a tensor
    (lambda F, T: F.margin_ranking_loss(T([1.0, 2]), T([[1.0], [2]]), T([1.0, 1])),
     RuntimeError, "All input tensors should have same dimension"),
    (lambda F, T: F.margin_ranking_loss(T([1.0, 2]), T([1.0, 2, 3]), T([1.0, 1])),
     RuntimeError, "must match the size"),
    (lambda F, T: F.hinge_embedding_loss(T([1.0, 2]), T([1.0, 2, 3])), RuntimeError,
     "must match the size"),
    (lambda F, T: F.soft_margin_loss(T([[1.0], [2]]), T([1.0, 2])), RuntimeError,
     "doesn't match the broadcast shape"),
    (lambda F, T: F.multilabel_soft_margin_loss(T([[1.0, 2]]), T([[1.0, 2, 3]])), RuntimeError,
     "must match the size"),
    (lambda F, T: F.cosine_embedding_loss(T([[1.0]]), T([[1.0]]), T([[1.0]])), RuntimeError,
     "0D or 1D target tensor expected"),
    (lambda F, T: F.cosine_embedding_loss(T([1.0]), T([[1.0]]), T([1.0])), RuntimeError,
     "1D target tensor expects 2D input tensors"),
    (lambda F, T: F.triplet_margin_loss(T([[1.0]]), T([[1.0]]), T([1.0])), RuntimeError,
     "expected to have the same number of dimensions"),
    (lambda F, T: F.triplet_margin_loss(T([[1.0]]), T([[1.0]]), T([[1.0]]), margin=-1),
     ValueError, "margin must be greater than 0"),
    (lambda F, T: F.poisson_nll_loss(T([1.0, 2]), T([1.0, 2, 3])), RuntimeError,
     "must match the size"),
    (lambda F, T: F.gaussian_nll_loss(T([[1.0, 2]]), T([[1.0, 2]]), T([1.0, 2, 3])),
     ValueError, "var is of incorrect size"),
    (lambda F, T: F.gaussian_nll_loss(T([1.0, 2]), T([1.0, 2]), T([1.0, -2])), ValueError,
     "var has negative entry"),
    (lambda F, T: F.gaussian_nll_loss(T([1.0, 2]), T([1.0, 2]), -0.5), ValueError,
     "var has negative entry"),
    (lambda F, T: F.multi_margin_loss(T([[1.0, 2]]), T([0]), p=3), ValueError,
     "only p == 1 and p == 2 supported"),
    (lambda F, T: F.multi_margin_loss(T([[1.0, 2]]), T([0, 1])), RuntimeError,
     "target tensor should be 1-D with size equal to the number of input samples"),
    (lambda F, T: F.multi_margin_loss(T([[1.0, 2]]), T([2])), RuntimeError,
     "target out of range"),
    (lambda F, T: F.multi_margin_loss(T([[1.0, 2]]), T([1.0])), RuntimeError,
     "expected scalar type Long"),
    (lambda F, T: F.multi_margin_loss(T([[1.0, 2]]), T([0]), weight=T([1.0, 2, 3])),
     RuntimeError, "inconsistent weight size"),
    (lambda F, T: F.multi_margin_loss(T([[1.0, 2]]), T([0]), weight=T([[1.0, 2]])),
     ValueError, "weight must be one-dimensional"),
    (lambda F, T: F.multilabel_margin_loss(T([[1.0, 2]]), T([0, 1])), RuntimeError,
     "inconsistent target size"),
    (lambda F, T: F.multilabel_margin_loss(T([[1.0, 2]]), T([[0, 2]])), RuntimeError,
     "'target' is out of range"),
    (lambda F, T: F.multilabel_margin_loss(T(np.zeros((2, 0), F32)), T(np.zeros((2, 0),
                                                                                 np.int64))),
     RuntimeError, "Expected non-empty vector or matrix"),
]


@pytest.mark.parametrize(("call", "exc", "pattern"), LOSS_ERRORS)
def test_loss_errors(call, exc, pattern):
    def mine(a):
        a = np.asarray(a)
        return pyrt.tensor(a.astype(F32) if a.dtype == np.float64 else a)

    with pytest.raises(exc, match=pattern):
        call(NF, mine)
    if torch is not None:
        with pytest.raises(exc, match=pattern):
            call(TF, lambda a: torch.tensor(np.asarray(mine(a).numpy())))


@pytest.mark.parametrize("case", range(14))
def test_bad_reduction_is_a_value_error(case):
    name, arrays, kwargs, _ = _cases(rng(25))[case]
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        _call(name, arrays, kwargs, "average")


def test_target_gradients_and_refusals():
    x = pyrt.tensor(np.array([0.5, -1.0], F32))
    y = pyrt.tensor(np.array([1.0, -1.0], F32), requires_grad=True)
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument "
                                           "'target'"):
        NF.soft_margin_loss(x, y)
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument "
                                           "'weight'"):
        NF.multi_margin_loss(pyrt.tensor(np.ones((1, 2), F32)), pyrt.tensor(np.array([0])),
                             weight=pyrt.tensor(np.ones(2, F32), requires_grad=True))
    # the composed losses pass a gradient to every float operand: d/dt of the gaussian loss
    t = np.array([0.3, 2.0], F32)
    check_grad_fd(lambda a, b, v: NF.gaussian_nll_loss(a, b, v, reduction="sum"),
                  [np.array([1.0, -1.0], F32), t, np.array([0.5, 2.0], F32)], index=1)
    check_grad_fd(lambda a, b, v: NF.gaussian_nll_loss(a, b, v, reduction="sum"),
                  [np.array([1.0, -1.0], F32), t, np.array([0.5, 2.0], F32)], index=2)


def test_loss_module_arguments():
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        nn.TripletMarginLoss(margin=0.0)
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        nn.PoissonNLLLoss(reduction="avg")
    with pytest.raises(TypeError):
        nn.GaussianNLLLoss(True)  # keyword-only, as in PyTorch
    assert repr(nn.SoftMarginLoss(reduction="sum")) == "SoftMarginLoss(reduction='sum')"


# ---- parameter containers ----------------------------------------------------------------------


class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.plist = nn.ParameterList([nn.Parameter(np.ones((2, 3))),
                                       pyrt.tensor(np.zeros(3, F32))])
        self.pdict = nn.ParameterDict({"b": nn.Parameter(np.ones(2)),
                                       "a": pyrt.tensor(np.zeros(1, F32))})


def test_parameter_list_registers_and_indexes():
    m = Holder()
    plist = m.plist
    assert len(plist) == 2
    assert all(isinstance(p, nn.Parameter) for p in plist)
    assert plist[1].requires_grad
    assert plist[-1] is plist[1]
    with pytest.raises(IndexError, match="index 2 is out of range"):
        plist[2]
    with pytest.raises(TypeError, match="integers or slices"):
        plist["0"]
    plist.append(nn.Parameter(np.full(4, 2.0)))
    plist.extend([nn.Parameter(np.ones(1))])
    plist += [pyrt.tensor(np.ones(5, F32))]
    assert [tuple(p.shape) for p in plist] == [(2, 3), (3,), (4,), (1,), (5,)]
    assert [tuple(p.shape) for p in plist[1:4:2]] == [(3,), (1,)]
    assert isinstance(plist[1:], nn.ParameterList)
    replacement = nn.Parameter(np.zeros(7))
    plist[0] = replacement
    assert plist[0] is replacement
    with pytest.raises(TypeError, match="extend should be called with an iterable"):
        plist.extend(pyrt.tensor(np.ones(2, F32)))
    names = [n for n, _ in m.named_parameters()]
    assert names == ["plist.0", "plist.1", "plist.2", "plist.3", "plist.4", "pdict.a", "pdict.b"]
    assert list(m.state_dict()) == names
    assert sum(p.numel() for p in m.parameters()) == 7 + 3 + 4 + 1 + 5 + 1 + 2
    with pytest.raises(RuntimeError, match="ParameterList should not be called"):
        plist(1)


def test_parameter_dict_behaves_as_a_dict():
    pdict = Holder().pdict
    assert list(pdict) == ["a", "b"]  # a plain dict is taken in sorted order, as in PyTorch
    assert "a" in pdict and "c" not in pdict
    pdict["c"] = pyrt.tensor(np.ones(3, F32))
    assert isinstance(pdict["c"], nn.Parameter)
    pdict.update(OrderedDict([("z", nn.Parameter(np.ones(1))), ("y", nn.Parameter(np.ones(1)))]))
    pdict.update([("x", nn.Parameter(np.ones(1)))])
    assert list(pdict.keys()) == ["a", "b", "c", "z", "y", "x"]
    assert [k for k, _ in pdict.items()] == list(pdict)
    assert len(list(pdict.values())) == len(pdict) == 6
    assert pdict.pop("z").shape == (1,)
    assert pdict.popitem()[0] == "x"
    assert pdict.get("nothing") is None
    assert pdict.setdefault("d", pyrt.tensor(np.ones(2, F32))).shape == (2,)
    del pdict["d"]
    assert list(pdict) == ["a", "b", "c", "y"]
    assert [n for n, _ in pdict.named_parameters()] == ["a", "b", "c", "y"]
    copied = pdict.copy()
    assert list(copied) == list(pdict) and copied["a"] is pdict["a"]
    merged = pdict | {"w": nn.Parameter(np.ones(1))}
    assert list(merged)[-1] == "w" and "w" not in pdict
    with pytest.raises(KeyError):
        pdict["missing"]
    with pytest.raises(TypeError, match="cannot be used as a key as it is not a string"):
        pdict[1] = nn.Parameter(np.ones(1))
    with pytest.raises(KeyError, match="already exists"):
        pdict["keys"] = nn.Parameter(np.ones(1))  # would hide the method
    with pytest.raises(ValueError, match="has length 3; 2 is required"):
        pdict.update([("a", 1, 2)])
    pdict.clear()
    assert len(pdict) == 0 and list(pdict.parameters()) == []
    with pytest.raises(RuntimeError, match="ParameterDict should not be called"):
        pdict()


def test_parameter_containers_train_and_load():
    m = Holder()
    state = {k: v + 1 for k, v in m.state_dict().items()}
    m.load_state_dict(state)
    assert np.array_equal(m.plist[0].detach().numpy(), np.full((2, 3), 2, F32))
    loss = m.plist[0].sum() + m.pdict["b"].sum()
    loss.backward()
    assert np.array_equal(m.plist[0].grad.numpy(), np.ones((2, 3), F32))
    opt = pyrt.optim.SGD(m.parameters(), lr=0.5)
    opt.step()
    assert np.array_equal(m.pdict["b"].detach().numpy(), np.full(2, 1.5, F32))


@needs_torch
def test_parameter_container_reprs_match_torch():
    def both(make):
        return (make(nn, lambda *s: nn.Parameter(np.ones(s, F32))),
                make(torch.nn, lambda *s: torch.nn.Parameter(torch.ones(s))))

    for make in (lambda m, P: m.ParameterList([P(2, 3), P(3)]),
                 lambda m, P: m.ParameterList([P(4)]),
                 lambda m, P: m.ParameterList(),
                 lambda m, P: m.ParameterDict(OrderedDict([("w", P(2, 3)), ("b", P(3))]))):
        mine, theirs = both(make)
        # PyTorch names the dtype of a ParameterDict's entries by their legacy tensor type
        assert repr(mine) == repr(theirs).replace("torch.FloatTensor", "pyrt.float32").replace(
            "torch.", "pyrt.")


# ---- parameters as one vector ------------------------------------------------------------------


def test_parameters_to_vector_and_back():
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    params = list(model.parameters())
    vec = parameters_to_vector(model.parameters())
    expected = np.concatenate([p.detach().numpy().reshape(-1) for p in params])
    assert vec.shape == (11,) and np.array_equal(vec.detach().numpy(), expected)
    (vec * pyrt.tensor(np.arange(11, dtype=F32))).sum().backward()
    assert np.array_equal(params[0].grad.numpy().reshape(-1), np.arange(6, dtype=F32))
    assert np.array_equal(params[3].grad.numpy(), np.array([10], F32))
    new = pyrt.tensor(np.arange(11, dtype=F32) * 2)
    vector_to_parameters(new, model.parameters())
    assert np.array_equal(params[1].detach().numpy(), np.array([12, 14], F32))
    assert params[0].shape == (2, 3)
    new.data[0] = -1.0  # the parameters are views of the vector, as in PyTorch
    assert params[0].detach().numpy()[0, 0] == -1.0
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        vector_to_parameters(np.zeros(11, F32), model.parameters())
    with pytest.raises(RuntimeError, match="is invalid for input of size"):
        vector_to_parameters(pyrt.tensor(np.zeros(10, F32)), model.parameters())
    assert params[3].detach().numpy()[0] == 20.0  # unchanged by the refused call
    with pytest.raises(RuntimeError, match="expected a non-empty list"):
        parameters_to_vector([])


@needs_torch
def test_parameters_to_vector_matches_torch():
    arrays = [rng(30).standard_normal(s).astype(F32) for s in [(2, 3), (4,), (1, 1, 2)]]
    mine = parameters_to_vector([nn.Parameter(a) for a in arrays])
    theirs = torch.nn.utils.parameters_to_vector(
        [torch.nn.Parameter(torch.tensor(a)) for a in arrays])
    assert np.array_equal(mine.detach().numpy(), theirs.detach().numpy())
