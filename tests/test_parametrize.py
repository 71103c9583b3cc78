"""nn.utils.parametrize, parametrizations (orthogonal, weight_norm, spectral_norm), the
hook-based weight_norm and spectral_norm, and skip_init: against PyTorch where installed, and
against NumPy definitions in float64."""

import contextlib
import warnings
from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.nn as nn
from pyrt.nn.utils import parametrizations as P
from pyrt.nn.utils import parametrize

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")
SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)


# ---- helpers -------------------------------------------------------------------------------


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return fn(*args, **kwargs)


def _copy_from_torch(module, tmodule):
    """Load tmodule's state (parameters and buffers) into the pyrt module: equal keys."""
    state = {k: v.detach().numpy().copy() for k, v in tmodule.state_dict().items()}
    module.load_state_dict(state)


def _check_state_loads_into_torch(module, tmodule):
    sd = module.state_dict()
    assert list(sd) == list(tmodule.state_dict())
    tmodule.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in sd.items()})


def _train_both(module, tmodule, x, steps=20, lr=0.1, atol=2e-5):
    """`steps` SGD steps of the mean squared error to a fixed target on both; outputs,
    gradients and every state entry must agree after each. An RNN runs within cached():
    torch's RNN reads its weights twice per forward (a spectral norm iterates twice)."""
    opt = pyrt.optim.SGD(module.parameters(), lr=lr)
    topt = torch.optim.SGD(tmodule.parameters(), lr=lr)
    tx = torch.from_numpy(x.copy())
    target = None
    for _ in range(steps):
        rnn = isinstance(module, nn.RNN)
        with parametrize.cached() if rnn else contextlib.nullcontext():
            out = module(pyrt.tensor(x))
        with torch.nn.utils.parametrize.cached() if rnn else contextlib.nullcontext():
            tout = tmodule(tx)
        if isinstance(out, tuple):
            out, tout = out[0], tout[0]
        np.testing.assert_allclose(out._data, tout.detach().numpy(), rtol=1e-4, atol=atol)
        if target is None:
            target = np.random.default_rng(9).standard_normal(out.shape).astype(np.float32)
        opt.zero_grad()
        topt.zero_grad()
        ((out - pyrt.tensor(target)) ** 2).mean().backward()
        ((tout - torch.from_numpy(target)) ** 2).mean().backward()
        for (name, p), (tname, tp) in zip(module.named_parameters(),
                                          tmodule.named_parameters()):
            assert name == tname
            np.testing.assert_allclose(p.grad._data, tp.grad.numpy(), rtol=1e-3, atol=atol * 10,
                                       err_msg=name)
        opt.step()
        topt.step()
    for (name, value), (tname, tvalue) in zip(module.state_dict().items(),
                                              tmodule.state_dict().items()):
        assert name == tname
        np.testing.assert_allclose(value, tvalue.numpy(), rtol=1e-3, atol=atol * 10,
                                   err_msg=name)


def _pair(kind):
    """A pyrt module and a torch module of the same kind holding the same weights."""
    pyrt.manual_seed(0)
    torch.manual_seed(0)
    if kind == "linear":
        module, tmodule = nn.Linear(5, 4), torch.nn.Linear(5, 4)
        x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    elif kind == "conv":
        module, tmodule = nn.Conv2d(2, 3, 3), torch.nn.Conv2d(2, 3, 3)
        x = np.random.default_rng(0).standard_normal((2, 2, 5, 5)).astype(np.float32)
    else:
        module, tmodule = nn.RNN(3, 4), torch.nn.RNN(3, 4)
        x = np.random.default_rng(0).standard_normal((5, 2, 3)).astype(np.float32)
    _copy_from_torch(module, tmodule)
    return module, tmodule, x


WEIGHT = {"linear": "weight", "conv": "weight", "rnn": "weight_hh_l0"}


# ---- against PyTorch -----------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("kind", ["linear", "conv", "rnn"])
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization_trains_as_torch(kind, dim):
    module, tmodule, x = _pair(kind)
    P.weight_norm(module, WEIGHT[kind], dim=dim)
    torch.nn.utils.parametrizations.weight_norm(tmodule, WEIGHT[kind], dim=dim)
    assert repr(module) == repr(tmodule)
    _check_state_loads_into_torch(module, tmodule)
    _train_both(module, tmodule, x)


@needs_torch
@pytest.mark.parametrize("kind", ["linear", "conv", "rnn"])
def test_spectral_norm_parametrization_trains_as_torch(kind):
    module, tmodule, x = _pair(kind)
    P.spectral_norm(module, WEIGHT[kind])
    torch.nn.utils.parametrizations.spectral_norm(tmodule, WEIGHT[kind])
    _check_state_loads_into_torch(module, tmodule)
    _copy_from_torch(module, tmodule)  # the same u, v
    _train_both(module, tmodule, x, lr=0.05)
    # eval mode: no power iteration, the buffers stay
    module.eval()
    tmodule.eval()
    u = module.parametrizations[WEIGHT[kind]][0]._u._data.copy()
    out, tout = module(pyrt.tensor(x)), tmodule(torch.from_numpy(x))
    if isinstance(out, tuple):
        out, tout = out[0], tout[0]
    np.testing.assert_allclose(out._data, tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(module.parametrizations[WEIGHT[kind]][0]._u._data, u)


@needs_torch
@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_old_weight_norm_trains_as_torch(kind):
    module, tmodule, x = _pair(kind)
    _quiet(nn.utils.weight_norm, module)
    _quiet(torch.nn.utils.weight_norm, tmodule)
    assert list(module.state_dict()) == ["bias", "weight_g", "weight_v"]
    _check_state_loads_into_torch(module, tmodule)
    _train_both(module, tmodule, x)
    nn.utils.remove_weight_norm(module)
    torch.nn.utils.remove_weight_norm(tmodule)
    assert type(module._parameters) is OrderedDict
    assert isinstance(module.weight, nn.Parameter)
    np.testing.assert_allclose(module.weight._data, tmodule.weight.detach().numpy(), atol=1e-5)
    _check_state_loads_into_torch(module, tmodule)


@needs_torch
@pytest.mark.parametrize("kind", ["linear", "conv", "rnn"])
def test_old_spectral_norm_trains_as_torch(kind):
    module, tmodule, x = _pair(kind)
    nn.utils.spectral_norm(module, WEIGHT[kind])
    torch.nn.utils.spectral_norm(tmodule, WEIGHT[kind])
    _check_state_loads_into_torch(module, tmodule)
    _copy_from_torch(module, tmodule)
    _train_both(module, tmodule, x, lr=0.05)
    nn.utils.remove_spectral_norm(module, WEIGHT[kind])
    torch.nn.utils.remove_spectral_norm(tmodule, WEIGHT[kind])
    assert type(module._parameters) is OrderedDict
    np.testing.assert_allclose(getattr(module, WEIGHT[kind])._data,
                               getattr(tmodule, WEIGHT[kind]).detach().numpy(), atol=1e-5)
    # (torch's remove_spectral_norm leaves its load hook behind, which then refuses a plain
    # state dict: the keys are compared only)
    assert list(module.state_dict()) == list(tmodule.state_dict())


@needs_torch
def test_spectral_norm_sigma_and_buffers_match_torch():
    pyrt.manual_seed(1)
    torch.manual_seed(1)
    tmodule = torch.nn.Linear(6, 5)
    module = nn.Linear(6, 5)
    _copy_from_torch(module, tmodule)
    torch.nn.utils.parametrizations.spectral_norm(tmodule, n_power_iterations=3)
    P.spectral_norm(module, n_power_iterations=3)
    _copy_from_torch(module, tmodule)
    for _ in range(3):
        np.testing.assert_allclose(module.weight._data, tmodule.weight.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
        for b in ("_u", "_v"):
            np.testing.assert_allclose(getattr(module.parametrizations.weight[0], b)._data,
                                       getattr(tmodule.parametrizations.weight[0], b).numpy(),
                                       rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("shape,orth_map", [((4, 4), None), ((4, 4), "cayley"),
                                            ((5, 3), None), ((3, 5), "matrix_exp"),
                                            ((5, 3), "cayley"), ((4, 4), "householder")])
def test_orthogonal_trains_as_torch_and_stays_orthogonal(shape, orth_map):
    pyrt.manual_seed(2)
    torch.manual_seed(2)
    tmodule = torch.nn.Linear(shape[1], shape[0])
    module = nn.Linear(shape[1], shape[0])
    _copy_from_torch(module, tmodule)
    P.orthogonal(module, orthogonal_map=orth_map)
    torch.nn.utils.parametrizations.orthogonal(tmodule, orthogonal_map=orth_map)
    if shape[0] == shape[1]:  # the base comes from the same weight: no copy needed
        np.testing.assert_allclose(module.weight._data, tmodule.weight.detach().numpy(),
                                   atol=1e-5)
    _copy_from_torch(module, tmodule)
    x = np.random.default_rng(2).standard_normal((3, shape[1])).astype(np.float32)
    _train_both(module, tmodule, x, lr=0.05, atol=1e-4)
    w = module.weight._data.astype(np.float64)
    gram = w.T @ w if shape[0] >= shape[1] else w @ w.T
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-5)


@needs_torch
def test_orthogonal_householder_without_trivialization_matches_torch():
    pyrt.manual_seed(3)
    torch.manual_seed(3)
    tmodule, module = torch.nn.Linear(3, 5), nn.Linear(3, 5)
    _copy_from_torch(module, tmodule)
    P.orthogonal(module, use_trivialization=False)
    torch.nn.utils.parametrizations.orthogonal(tmodule, use_trivialization=False)
    assert list(module.state_dict()) == list(tmodule.state_dict())
    np.testing.assert_allclose(module.parametrizations.weight.original._data,
                               tmodule.parametrizations.weight.original.detach().numpy(),
                               atol=1e-5)
    np.testing.assert_allclose(module.weight._data, tmodule.weight.detach().numpy(), atol=1e-5)
    m = P.orthogonal(nn.Linear(4, 4), orthogonal_map="cayley", use_trivialization=False)
    with pytest.raises(NotImplementedError, match="not possible to assign"):
        m.weight = pyrt.eye(4)


@needs_torch
def test_remove_parametrizations_as_torch():
    for leave in (True, False):
        module, tmodule, _ = _pair("linear")
        for m, mod in ((module, P), (tmodule, torch.nn.utils.parametrizations)):
            mod.spectral_norm(m)
        _copy_from_torch(module, tmodule)
        parametrize.remove_parametrizations(module, "weight", leave_parametrized=leave)
        torch.nn.utils.parametrize.remove_parametrizations(tmodule, "weight",
                                                           leave_parametrized=leave)
        assert type(module) is nn.Linear and type(module._parameters) is OrderedDict
        assert isinstance(module.weight, nn.Parameter)
        assert [n for n, _ in module.named_parameters()] == ["bias", "weight"]
        np.testing.assert_allclose(module.weight._data, tmodule.weight.detach().numpy(),
                                   atol=1e-6)
        _check_state_loads_into_torch(module, tmodule)
    module = P.weight_norm(nn.Linear(3, 2))
    with pytest.raises(ValueError, match="sequence of tensors"):
        parametrize.remove_parametrizations(module, "weight", leave_parametrized=False)
    before = module.weight._data.copy()
    parametrize.remove_parametrizations(module, "weight")
    np.testing.assert_allclose(module.weight._data, before, rtol=1e-6)
    assert module.weight.requires_grad


# ---- register_parametrization, without PyTorch -----------------------------------------------


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).mT

    def right_inverse(self, A):
        return A.triu()


class Times(nn.Module):
    """X * c, without a right inverse: registering keeps the stored values."""

    def __init__(self, c):
        super().__init__()
        self.c = c

    def forward(self, X):
        return X * self.c


class Scale(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c

    def forward(self, X):
        return X * self.c

    def right_inverse(self, A):
        return A / self.c


def test_register_parametrization_stacks_and_assigns():
    pyrt.manual_seed(4)
    m = nn.Linear(4, 4)
    w0 = m.weight._data.copy()
    parametrize.register_parametrization(m, "weight", Symmetric())
    parametrize.register_parametrization(m, "weight", Scale(2.0))
    assert type(m).__name__ == "ParametrizedLinear"
    assert parametrize.type_before_parametrizations(m) is nn.Linear
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias")
    sym = np.triu(w0) + np.triu(w0, 1).T
    np.testing.assert_allclose(m.weight._data, 2 * sym, rtol=1e-6)
    np.testing.assert_allclose(m.parametrizations.weight.original._data, np.triu(w0))
    # layers read the parametrized tensor straight from their parameter dict
    x = pyrt.randn(3, 4)
    np.testing.assert_allclose(m(x)._data, x._data @ (2 * sym).T + m.bias._data, rtol=1e-5,
                               atol=1e-6)
    # assigning calls the right inverses, last registered first
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    a = a + a.T
    m.weight = pyrt.tensor(a)
    np.testing.assert_allclose(m.weight._data, a, rtol=1e-6)
    # gradients reach the original through both parametrizations
    m(x).sum().backward()
    g = np.ones((3, 4), np.float32).T @ x._data  # d/dW of sum(x W^T)
    gs = 2 * g
    expected = np.triu(gs) + np.tril(gs, -1).T
    np.testing.assert_allclose(m.parametrizations.weight.original.grad._data, expected,
                               rtol=1e-5, atol=1e-5)


def test_parametrized_buffer_and_errors():
    m = nn.Module()
    m.register_buffer("scale", pyrt.tensor([1.0, 2.0]))
    parametrize.register_parametrization(m, "scale", Scale(3.0))
    assert type(m._buffers).__name__ == "ComputedTensors"
    np.testing.assert_allclose(m._buffers["scale"]._data, [1.0, 2.0], rtol=1e-6)
    np.testing.assert_allclose(m.parametrizations.scale.original._data, [1 / 3, 2 / 3],
                               rtol=1e-6)
    assert not m.parametrizations.scale.original.requires_grad
    assert list(m.state_dict()) == ["parametrizations.scale.original"]
    with pytest.raises(ValueError, match="does not have a parameter"):
        parametrize.register_parametrization(nn.Linear(2, 2), "nothing", Scale(1.0))

    class Grow(nn.Module):
        def forward(self, X):
            return pyrt.cat([X, X])

    with pytest.raises(ValueError, match="may not change the shape"):
        parametrize.register_parametrization(nn.Linear(2, 2), "weight", Grow())
    with pytest.raises(ValueError, match="does not have a parametrization"):
        parametrize.remove_parametrizations(nn.Linear(2, 2), "weight")
    with pytest.raises(TypeError, match="parametrization must be"):
        parametrize.register_parametrization(nn.Linear(2, 2), "weight", lambda w: w)
    with pytest.raises(ValueError, match="no tensor to parametrize"):
        parametrize.register_parametrization(nn.Linear(2, 2, bias=False), "bias", Scale(1.0))
    # unsafe: the shape may change
    m = parametrize.register_parametrization(nn.Linear(2, 3), "weight", Grow(), unsafe=True)
    assert m.weight.shape == (6, 2)
    with pytest.raises(RuntimeError, match="Serialization"):
        import pickle

        pickle.dumps(m)


def test_cached_returns_one_tensor_per_block():
    m = P.weight_norm(nn.Linear(3, 3))
    assert m.weight is not m.weight
    with parametrize.cached():
        w = m.weight
        assert m.weight is w and m._parameters["weight"] is w
        with parametrize.cached():
            assert m.weight is w
        assert m.weight is w
    assert m.weight is not w


def test_unparametrized_modules_keep_plain_dicts_and_sequential_sees_parametrizations():
    pyrt.manual_seed(5)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3), nn.Linear(3, 2))
    x = pyrt.randn(5, 4)
    before = model(x)._data.copy()  # plans the fused steps (a LinearChain for the last two)
    for module in model.modules():
        assert type(module._parameters) is OrderedDict
        assert type(module._buffers) is OrderedDict
    parametrize.register_parametrization(model[2], "weight", Times(2.0))
    parametrize.register_parametrization(model[0], "weight", Times(0.5))
    for i in (1, 3):
        assert type(model[i]._parameters) is OrderedDict
    h = np.maximum(x._data @ (0.5 * model[0].parametrizations.weight.original._data).T
                   + model[0].bias._data, 0)
    h = h @ (2 * model[2].parametrizations.weight.original._data).T + model[2].bias._data
    expected = h @ model[3].weight._data.T + model[3].bias._data
    np.testing.assert_allclose(model(x)._data, expected, rtol=1e-5, atol=1e-5)
    parametrize.remove_parametrizations(model[2], "weight")
    parametrize.remove_parametrizations(model[0], "weight")
    assert all(type(m._parameters) is OrderedDict for m in model.modules())
    np.testing.assert_allclose(model(x)._data, expected, rtol=1e-5, atol=1e-5)
    assert not np.allclose(before, expected)


def test_transfer_parametrizations_and_params():
    source = P.weight_norm(nn.Linear(3, 2))
    target = nn.Linear(3, 2)
    parametrize.transfer_parametrizations_and_params(source, target)
    assert parametrize.is_parametrized(target, "weight")
    assert target.parametrizations.weight.original0 is source.parametrizations.weight.original0
    np.testing.assert_allclose(target.weight._data, source.weight._data)
    assert parametrize.transfer_parametrizations_and_params(nn.Linear(1, 1), target) is target


# ---- against NumPy definitions -------------------------------------------------------------


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=2, max_size=4),
       dim=st.integers(-1, 3), seed=st.integers(0, 2**16))
def test_weight_norm_value_and_gradient_against_numpy(shape, dim, seed):
    dim = dim if dim < len(shape) else 0
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(shape).astype(np.float32) + 0.1
    r = rng.standard_normal(shape)
    m = nn.Module()
    m.weight = nn.Parameter(w)
    P.weight_norm(m, dim=dim)
    g = m.parametrizations.weight.original0
    v = m.parametrizations.weight.original1
    w64, g64 = w.astype(np.float64), g._data.astype(np.float64)
    others = tuple(d for d in range(len(shape)) if d != dim % len(shape)) if dim != -1 \
        else tuple(range(len(shape)))
    norm = np.sqrt((w64 ** 2).sum(axis=others, keepdims=dim != -1))
    np.testing.assert_allclose(g64, norm, rtol=1e-5)
    np.testing.assert_allclose(m.weight._data, w64, rtol=1e-4, atol=1e-5)
    (m.weight * pyrt.tensor(r.astype(np.float32))).sum().backward()
    # L = sum(r * g v / |v|): dL/dg = sum(r v) / |v|, dL/dv = g/|v| (r - v sum(r v) / |v|^2)
    rv = (r * w64).sum(axis=others, keepdims=dim != -1)
    np.testing.assert_allclose(g.grad._data, rv / norm, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(v.grad._data, g64 / norm * (r - w64 * rv / norm ** 2),
                               rtol=1e-3, atol=1e-4)


@SETTINGS
@given(rows=st.integers(2, 6), cols=st.integers(2, 6), seed=st.integers(0, 2**16))
def test_spectral_norm_against_numpy_power_iteration(rows, cols, seed):
    rng = np.random.default_rng(seed)
    m = nn.Linear(cols, rows)
    m.weight._data[...] = rng.standard_normal((rows, cols)).astype(np.float32)
    w = m.weight._data.astype(np.float64)
    pyrt.manual_seed(seed)
    P.spectral_norm(m, n_power_iterations=2)
    sn = m.parametrizations.weight[0]
    u, v = sn._u._data.astype(np.float64), sn._v._data.astype(np.float64)
    out = m.weight._data  # training mode: two more iterations first
    for _ in range(2):
        u = w @ v
        u /= np.linalg.norm(u)
        v = w.T @ u
        v /= np.linalg.norm(v)
    np.testing.assert_allclose(sn._u._data, u, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(sn._v._data, v, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out, w / (u @ w @ v), rtol=1e-4, atol=1e-5)
    # after 15 + 2 iterations sigma is close to the largest singular value, unless the top
    # two are close
    s = np.linalg.svd(w, compute_uv=False)
    if s[0] > 1.5 * s[1]:
        np.testing.assert_allclose(u @ w @ v, s[0], rtol=1e-3)


@SETTINGS
@given(n=st.integers(1, 5), k=st.integers(1, 5), batch=st.integers(0, 2),
       orth_map=st.sampled_from(["matrix_exp", "cayley", "householder"]),
       seed=st.integers(0, 2**16))
def test_orthogonal_maps_give_orthonormal_columns(n, k, batch, orth_map, seed):
    rng = np.random.default_rng(seed)
    shape = (2,) * batch + (n, k)
    m = nn.Module()
    m.weight = nn.Parameter(rng.standard_normal(shape).astype(np.float32))
    pyrt.manual_seed(seed)
    P.orthogonal(m, orthogonal_map=orth_map)
    opt = pyrt.optim.SGD(m.parameters(), lr=0.1)
    for _ in range(3):
        (m.weight * pyrt.tensor(rng.standard_normal(shape).astype(np.float32))).sum().backward()
        opt.step()
        opt.zero_grad()
    w = m.weight._data.astype(np.float64)
    wt = np.swapaxes(w, -1, -2)
    gram = wt @ w if n >= k else w @ wt
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(min(n, k)), gram.shape), atol=2e-5)


def test_orthogonal_and_spectral_norm_errors():
    with pytest.raises(ValueError, match="matrix or batch"):
        P.orthogonal(nn.Linear(3, 3), "bias")
    with pytest.raises(ValueError, match="has to be one of"):
        P.orthogonal(nn.Linear(3, 3), orthogonal_map="qr")
    with pytest.raises(ValueError, match="no parameter or buffer"):
        P.orthogonal(nn.Linear(3, 3), "nothing")
    with pytest.raises(ValueError, match="n_power_iterations"):
        P.spectral_norm(nn.Linear(3, 3), n_power_iterations=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        P.spectral_norm(nn.Linear(3, 3), dim=2)
    with pytest.raises(ValueError, match="n_power_iterations"):
        nn.utils.spectral_norm(nn.Linear(3, 3), n_power_iterations=0)
    m = nn.utils.spectral_norm(nn.Linear(3, 3))
    with pytest.raises(RuntimeError, match="two spectral_norm hooks"):
        nn.utils.spectral_norm(m)
    with pytest.raises(ValueError, match="not found"):
        nn.utils.remove_weight_norm(m)
    m = _quiet(nn.utils.weight_norm, nn.Linear(3, 3))
    with pytest.raises(RuntimeError, match="two weight_norm hooks"):
        _quiet(nn.utils.weight_norm, m)
    with pytest.raises(ValueError, match="not found"):
        nn.utils.remove_spectral_norm(m)
    with pytest.raises(ValueError, match="no parameter named"):
        _quiet(nn.utils.weight_norm, nn.Linear(3, 3), "nothing")
    with pytest.warns(FutureWarning, match="deprecated"):
        nn.utils.weight_norm(nn.Linear(2, 2))
    # a 1-D weight is simply normalized
    m = nn.Module()
    m.weight = nn.Parameter(np.array([3.0, 4.0], np.float32))
    P.spectral_norm(m)
    np.testing.assert_allclose(m.weight._data, [0.6, 0.8], rtol=1e-6)


def test_old_spectral_norm_updates_only_in_training():
    m = nn.utils.spectral_norm(nn.Linear(4, 3))
    x = pyrt.randn(2, 4)
    u = m.weight_u._data.copy()
    m(x)
    assert not np.allclose(m.weight_u._data, u)
    m.eval()
    u = m.weight_u._data.copy()
    m(x)
    np.testing.assert_array_equal(m.weight_u._data, u)
    w = m.weight_orig._data.astype(np.float64)
    uu, vv = m.weight_u._data.astype(np.float64), m.weight_v._data.astype(np.float64)
    np.testing.assert_allclose(m.weight._data, w / (uu @ w @ vv), rtol=1e-5)


def test_skip_init():
    pyrt.manual_seed(7)
    state = pyrt.get_rng_state()._data.copy()
    m = nn.utils.skip_init(nn.Linear, 5, out_features=2)
    assert isinstance(m, nn.Linear) and m.weight.shape == (2, 5)
    np.testing.assert_array_equal(pyrt.get_rng_state()._data, state)
    with pytest.raises(RuntimeError, match="Expected a Module"):
        nn.utils.skip_init(int)


def test_deepcopy_of_parametrized_modules_is_independent():
    import copy

    x = pyrt.randn(2, 3)
    for make in (lambda: P.weight_norm(nn.Linear(3, 2)),
                 lambda: nn.utils.spectral_norm(nn.Linear(3, 2))):
        m = make()
        c = copy.deepcopy(m)
        assert type(c) is type(m) and c._parameters.module is c
        m.eval()
        c.eval()
        np.testing.assert_allclose(c(x)._data, m(x)._data)
        for p in c.parameters():
            p._data[...] = 0
        assert np.abs(m(x)._data - m.bias._data).max() > 0
