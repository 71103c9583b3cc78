"""Layer normalisation: pyrt.ops' layer_norm and its backward against PyTorch in float64 over
shapes, normalized_shape lengths, affine options, eps values and thread counts (bitwise the
same at every count); F.layer_norm's gradients against torch.autograd and finite
differences; nn.LayerNorm against torch.nn.LayerNorm (repr, parameters, state_dict, outputs);
errors as PyTorch raises them; and the CUDA backend against the CPU (skipped without a GPU)."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.nn.functional as F
from pyrt import cuda, nn
from pyrt.ops.layer_norm import layer_norm, layer_norm_backward

try:  # the reference for the comparisons marked needs_torch; the others use NumPy's
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

THREADS = [1, 2, 4]
F32 = np.float32


def rng(seed):
    return np.random.default_rng(seed)


def torch_reference(x, normalized_shape, weight, bias, eps, dy):
    """(y, mean, invstd, dx, dweight, dbias) of layer_norm in float64, the gradients those of
    sum(y * dy); dweight and dbias None without weight or bias. Written out in NumPy: the
    closed forms torch's autograd gives (x_hat = (x - mean) * invstd per row; dx = invstd *
    (g - mean(g) - x_hat * mean(g * x_hat)) with g = dy * weight)."""
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    m = int(np.prod(normalized_shape))
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    mean = x64.mean(axis=axes, keepdims=True)
    invstd = 1 / np.sqrt(x64.var(axis=axes, keepdims=True) + eps)
    x_hat = (x64 - mean) * invstd
    w = np.ones(normalized_shape) if weight is None else weight.astype(np.float64)
    y = x_hat * w + (0.0 if bias is None else bias.astype(np.float64))
    g = dy64 * w
    dx = invstd * (g - g.mean(axis=axes, keepdims=True)
                   - x_hat * (g * x_hat).mean(axis=axes, keepdims=True)) if m else g
    lead = tuple(range(x.ndim - len(normalized_shape)))
    dw = None if weight is None else (dy64 * x_hat).sum(axis=lead)
    db = None if bias is None else dy64.sum(axis=lead)
    return y, mean.reshape(-1), invstd.reshape(-1), dx, dw, db


def assert_close_to_reference(x, normalized_shape, w, b, eps, dy, threads, ratio):
    """pyrt.ops against torch_reference. `ratio` is how far the values sit from zero in
    standard deviations: the float32 mean is off by half an ulp of it, which moves every
    centred value (as in any float32 layer norm, PyTorch's included)."""
    with pyrt.num_threads(threads):
        y, mean, invstd = layer_norm(x, normalized_shape, w, b, eps)
        dx, dw, db = layer_norm_backward(dy, x, normalized_shape, w, mean, invstd,
                                         needs_weight_grad=w is not None,
                                         needs_bias_grad=b is not None)
    ry, rmean, rinvstd, rdx, rdw, rdb = torch_reference(x, normalized_shape, w, b, eps, dy)
    m = int(np.prod(normalized_shape))
    rows = int(np.prod(x.shape[:x.ndim - len(normalized_shape)]))
    wmax = 1.0 if w is None else 1.0 + float(np.abs(w).max(initial=0))
    centring = 2**-23 * (1 + abs(ratio)) * wmax
    np.testing.assert_allclose(y, ry, rtol=1e-5, atol=1e-5 * wmax + centring)
    spread = np.abs(x.reshape(rows, m) - rmean[:, None]).max(initial=0)
    np.testing.assert_allclose(mean, rmean, rtol=1e-6, atol=1e-6 * spread + 1e-30)
    np.testing.assert_allclose(invstd, rinvstd, rtol=1e-5)
    scale = np.abs(rdx).max(initial=0)
    np.testing.assert_allclose(dx, rdx, rtol=1e-4, atol=(1e-5 + 4 * centring) * scale + 1e-7)
    rows = max(1, rows)
    if w is not None:
        assert dw.shape == w.shape
        np.testing.assert_allclose(dw, rdw, rtol=1e-5,
                                   atol=(1e-6 + centring) * np.sqrt(rows) * 4 + 1e-6)
    else:
        assert dw is None
    if b is not None:
        assert db.shape == b.shape
        np.testing.assert_allclose(db, rdb, rtol=1e-5, atol=1e-6 * np.sqrt(rows))
    else:
        assert db is None


@st.composite
def cases(draw):
    lead = draw(st.lists(st.integers(0, 9), min_size=0, max_size=2))
    norm = tuple(draw(st.lists(st.integers(1, 17), min_size=1, max_size=3)))
    wide = draw(st.sampled_from([(), (), (64,), (200,), (1000,)]))
    if wide:  # rows of whole blocks, several blocks and a partial one, many blocks
        norm = wide
    return tuple(lead) + norm, norm


@settings(max_examples=200, deadline=None, derandomize=True)
@given(case=cases(), affine=st.sampled_from(["both", "weight", "none"]),
       eps=st.sampled_from([1e-5, 1e-3, 0.1, 0.0]), threads=st.sampled_from(THREADS),
       seed=st.integers(0, 2**16), scale=st.sampled_from([0.01, 1.0, 30.0]),
       ratio=st.sampled_from([0.0, 3.0, -300.0]))
def test_forward_and_backward_match_torch(case, affine, eps, threads, seed, scale, ratio):
    shape, normalized_shape = case
    r = rng(seed)
    x = (scale * (r.standard_normal(shape) + ratio)).astype(F32)
    if eps == 0.0 and int(np.prod(normalized_shape)) == 1:
        eps = 1e-5  # a row of one value has no variance: 0 / 0 without an eps
    w = r.standard_normal(normalized_shape).astype(F32) if affine != "none" else None
    b = r.standard_normal(normalized_shape).astype(F32) if affine == "both" else None
    dy = r.standard_normal(shape).astype(F32)
    assert_close_to_reference(x, normalized_shape, w, b, eps, dy, threads, ratio)


# Wide rows (70000 values) are split into leaves of 16384; many short rows make 64 groups in
# the backward pass, their sets of four rows ending with a partial set.
@pytest.mark.parametrize("shape,normalized_shape", [((3, 70000), (70000,)),
                                                    ((2, 2, 300, 250), (300, 250)),
                                                    ((4099, 37), (37,)),
                                                    ((64, 128, 768), (768,))])
@pytest.mark.parametrize("threads", THREADS)
def test_large_shapes_match_torch(shape, normalized_shape, threads):
    r = rng(sum(shape))
    x = (r.standard_normal(shape) + 3).astype(F32)
    w = r.standard_normal(normalized_shape).astype(F32)
    b = r.standard_normal(normalized_shape).astype(F32)
    dy = r.standard_normal(shape).astype(F32)
    assert_close_to_reference(x, normalized_shape, w, b, 1e-5, dy, threads, ratio=3.0)


@pytest.mark.parametrize("shape,normalized_shape", [((64, 768), (768,)), ((4096, 40), (40,)),
                                                    ((5000, 3), (3,)), ((6, 5, 7, 9), (7, 9)),
                                                    ((5, 70000), (70000,)), ((1, 1), (1,))])
def test_results_are_bitwise_identical_across_thread_counts(shape, normalized_shape):
    r = rng(2)
    x = (r.standard_normal(shape) + 2).astype(F32)
    dy = r.standard_normal(shape).astype(F32)
    w = r.standard_normal(normalized_shape).astype(F32)
    b = r.standard_normal(normalized_shape).astype(F32)
    results = []
    for threads in (1, 2, 3, 4):
        with pyrt.num_threads(threads):
            y, mean, invstd = layer_norm(x, normalized_shape, w, b)
            results.append((y, mean, invstd,
                            *layer_norm_backward(dy, x, normalized_shape, w, mean, invstd)))
    for other in results[1:]:
        for a, b_ in zip(results[0], other):
            assert a.tobytes() == b_.tobytes()


def test_tensor_gradients_are_bitwise_identical_across_thread_counts():
    r = rng(3)
    x = r.standard_normal((512, 96)).astype(F32)
    g = r.standard_normal((512, 96)).astype(F32)
    w = r.standard_normal(96).astype(F32)
    results = []
    for threads in THREADS:
        with pyrt.num_threads(threads):
            layer = nn.LayerNorm(96)
            layer.weight.data[...] = w
            t = pyrt.tensor(x, requires_grad=True)
            y = layer(t)
            (y * pyrt.tensor(g)).sum().backward()
            results.append((y.detach().numpy(), t.grad.numpy(), layer.weight.grad.numpy(),
                            layer.bias.grad.numpy()))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert a.tobytes() == b.tobytes()


# ---- F.layer_norm on Tensors -----------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("shape,normalized_shape", [((4, 10), [10]), ((2, 3, 4, 5), (4, 5)),
                                                    ((7,), 7), ((3, 2, 6), (3, 2, 6))])
@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
def test_functional_gradients_match_torch(shape, normalized_shape, affine):
    """The gradients of sum(layer_norm(x) * g) with respect to x, weight and bias."""
    r = rng(4)
    dims = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    x = r.standard_normal(shape).astype(F32)
    g = r.standard_normal(shape).astype(F32)
    w = r.standard_normal(dims).astype(F32) if affine in ("both", "weight") else None
    b = r.standard_normal(dims).astype(F32) if affine in ("both", "bias") else None
    xt = pyrt.tensor(x, requires_grad=True)
    wt = None if w is None else pyrt.tensor(w, requires_grad=True)
    bt = None if b is None else pyrt.tensor(b, requires_grad=True)
    out = F.layer_norm(xt, normalized_shape, wt, bt, eps=1e-4)
    (out * pyrt.tensor(g)).sum().backward()

    xr = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    wr = None if w is None else torch.tensor(w, dtype=torch.float64, requires_grad=True)
    br = None if b is None else torch.tensor(b, dtype=torch.float64, requires_grad=True)
    ref = torch.nn.functional.layer_norm(xr, dims, wr, br, eps=1e-4)
    (ref * torch.tensor(g, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(xt.grad.numpy(), xr.grad.numpy(), rtol=1e-4, atol=1e-5)
    for mine, theirs in ((wt, wr), (bt, br)):
        if mine is not None:
            np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-4,
                                       atol=1e-5)


def test_functional_gradients_match_finite_differences():
    """Central differences of sum(layer_norm(x, w, b) * g) in float64 on the float32 kernel's
    own loss, one coordinate at a time."""
    r = rng(5)
    x = r.standard_normal((3, 5)).astype(F32)
    w = (r.standard_normal(5) + 1).astype(F32)
    b = r.standard_normal(5).astype(F32)
    g = r.standard_normal((3, 5)).astype(F32)

    def loss(xa, wa, ba):
        y, _, _ = layer_norm(xa, (5,), wa, ba, 1e-3)
        return float((y.astype(np.float64) * g).sum())

    xt, wt, bt = (pyrt.tensor(a, requires_grad=True) for a in (x, w, b))
    (F.layer_norm(xt, (5,), wt, bt, 1e-3) * pyrt.tensor(g)).sum().backward()
    h = 1e-2
    for arr, grad in ((x, xt.grad.numpy()), (w, wt.grad.numpy()), (b, bt.grad.numpy())):
        numeric = np.zeros(arr.shape)
        for idx in np.ndindex(arr.shape):
            saved = arr[idx]
            arr[idx] = saved + h
            up = loss(x, w, b)
            arr[idx] = saved - h
            down = loss(x, w, b)
            arr[idx] = saved
            numeric[idx] = (up - down) / (2 * h)
        np.testing.assert_allclose(grad, numeric, rtol=2e-2, atol=2e-3)


def test_gradient_flows_to_the_parameters_alone_when_the_input_needs_none():
    r = rng(6)
    x = pyrt.tensor(r.standard_normal((6, 4)).astype(F32))
    layer = nn.LayerNorm(4)
    layer(x).sum().backward()
    assert x.grad is None
    np.testing.assert_allclose(layer.bias.grad.numpy(), np.full(4, 6.0, F32))
    assert layer.weight.grad.shape == (4,)


def test_non_contiguous_input_matches_its_copy():
    r = rng(7)
    x = r.standard_normal((8, 6)).astype(F32).T  # [6, 8], not C-contiguous
    y, _, _ = layer_norm(x, (8,))
    y2, _, _ = layer_norm(np.ascontiguousarray(x), (8,))
    assert np.array_equal(y, y2)


def test_edge_shapes_as_torch():
    # no rows; rows of no values; one value per row (zero variance: the bias alone)
    y, mean, invstd = layer_norm(np.ones((0, 3), F32), (3,))
    assert y.shape == (0, 3) and mean.shape == (0,)
    dx, dw, db = layer_norm_backward(np.ones((0, 3), F32), np.ones((0, 3), F32), (3,),
                                     np.ones(3, F32), mean, invstd)
    assert dx.shape == (0, 3) and np.array_equal(dw, np.zeros(3)) and np.array_equal(db, dw)
    y, mean, invstd = layer_norm(np.ones((2, 0), F32), (0,))
    assert y.shape == (2, 0) and np.isnan(mean).all()
    dx, dw, db = layer_norm_backward(np.ones((2, 0), F32), np.ones((2, 0), F32), (0,),
                                     np.ones(0, F32), mean, invstd)
    assert dx.shape == (2, 0) and dw.shape == (0,) and db.shape == (0,)
    b = np.array([0.5], F32)
    y, _, _ = layer_norm(np.array([[3.0], [-2.0]], F32), (1,), np.array([2.0], F32), b)
    assert np.array_equal(y, np.full((2, 1), 0.5, F32))
    y, _, _ = layer_norm(np.full((1, 50), 7.25, F32), 50)  # a constant row: zeros
    assert np.array_equal(y, np.zeros((1, 50), F32))


@needs_torch
def test_a_non_finite_value_spoils_its_own_row_only():
    x = rng(8).standard_normal((4, 70)).astype(F32)
    x[1, 0], x[2, 33] = np.inf, np.nan  # the first value of a row (its sums' shift) too
    with np.errstate(invalid="ignore"):
        y, mean, _ = layer_norm(x, (70,))
        ref = torch.nn.functional.layer_norm(torch.from_numpy(x), (70,)).numpy()
    assert np.isnan(y[1]).all() and np.isnan(y[2]).all()
    np.testing.assert_allclose(y[[0, 3]], ref[[0, 3]], rtol=1e-5, atol=1e-5)
    assert mean[1] == np.inf and np.isnan(mean[2])


# ---- errors ----------------------------------------------------------------------------------


def _torch_error(call):
    try:
        call(torch)
    except (RuntimeError, TypeError) as e:
        return type(e), str(e)
    raise AssertionError("torch took the call")


@needs_torch
@pytest.mark.parametrize("args,kwargs", [
    (((3,),), {}),                                     # not the trailing shape
    (((2, 3, 4, 5),), {}),                             # more dims than the input
    (((),), {}),                                       # empty
    (([-4],), {}),
    (((4,),), {"weight": (3,)}),
    (((4,),), {"bias": (3,)}),
    (((4,),), {"weight": (1, 4)}),
    (((4,),), {"eps": "a"}),
    (((4,),), {"eps": None}),
    (("ab",), {}),
    ((None,), {}),
    (((4.0,),), {}),
])
def test_errors_match_torch(args, kwargs):
    """The same exception type as torch.nn.functional.layer_norm, and its message where
    PyTorch writes it in Python terms."""
    x = rng(9).standard_normal((2, 3, 4)).astype(F32)

    def call(lib):
        params = {}
        for name in ("weight", "bias"):
            if name in kwargs:
                params[name] = (torch.ones(kwargs[name]) if lib is torch
                                else pyrt.tensor(np.ones(kwargs[name], F32)))
        if "eps" in kwargs:
            params["eps"] = kwargs["eps"]
        if lib is torch:
            return torch.nn.functional.layer_norm(torch.from_numpy(x), *args, **params)
        return F.layer_norm(pyrt.tensor(x), *args, **params)

    kind, message = _torch_error(call)
    with pytest.raises(kind) as mine:
        call(pyrt)
    if kind is RuntimeError:
        assert str(mine.value) == message
    else:
        assert "normalized_shape" in str(mine.value) or "eps" in str(mine.value)


def test_errors_name_the_argument():
    x = np.ones((4, 3), F32)
    with pytest.raises(TypeError, match="x must have dtype float32"):
        layer_norm(x.astype(np.float64), (3,))
    with pytest.raises(TypeError, match="weight must have dtype float32"):
        layer_norm(x, (3,), np.ones(3))
    with pytest.raises(TypeError, match="eps"):
        layer_norm(x, (3,), eps=True)
    with pytest.raises(TypeError, match="layer_norm: weight must be a Tensor"):
        F.layer_norm(pyrt.tensor(x), (3,), np.ones(3, F32))
    with pytest.raises(ValueError, match=r"grad_output must have shape \(4, 3\)"):
        layer_norm_backward(np.ones((4, 2), F32), x, (3,), None, np.zeros(4, F32),
                            np.ones(4, F32))
    with pytest.raises(ValueError, match=r"mean must have shape \(4,\)"):
        layer_norm_backward(x, x, (3,), None, np.zeros(3, F32), np.ones(4, F32))
    with pytest.raises(RuntimeError, match="Given normalized_shape=\\[2\\]"):
        layer_norm_backward(x, x, (2,), None, np.zeros(4, F32), np.ones(4, F32))


# ---- nn.LayerNorm ----------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("args,kwargs", [((4,), {}), (([3, 4],), {"bias": False}),
                                         ((5,), {"elementwise_affine": False, "eps": 1e-3}),
                                         (((2, 3),), {"eps": 0.5}), ((0,), {}), (([],), {})])
def test_module_matches_torch(args, kwargs):
    mine, theirs = nn.LayerNorm(*args, **kwargs), torch.nn.LayerNorm(*args, **kwargs)
    assert repr(mine) == repr(theirs)
    assert mine.normalized_shape == theirs.normalized_shape
    assert list(mine.state_dict()) == list(theirs.state_dict())
    for (name, p), (tname, tp) in zip(mine.named_parameters(), theirs.named_parameters(),
                                      strict=True):
        assert name == tname and p.shape == tuple(tp.shape)
        np.testing.assert_array_equal(p.detach().numpy(), tp.detach().numpy())


@needs_torch
@pytest.mark.parametrize("elementwise_affine,bias", [(True, True), (True, False),
                                                     (False, True)])
def test_module_forward_and_gradients_match_torch(elementwise_affine, bias):
    r = rng(10)
    x = (r.standard_normal((5, 3, 6, 4)) * 2 + 1).astype(F32)
    g = r.standard_normal(x.shape).astype(F32)
    mine = nn.LayerNorm((6, 4), eps=1e-4, elementwise_affine=elementwise_affine, bias=bias)
    theirs = torch.nn.LayerNorm((6, 4), eps=1e-4, elementwise_affine=elementwise_affine,
                                bias=bias)
    if elementwise_affine:  # not the initial ones and zeros: their gradients differ
        state = {k: r.standard_normal((6, 4)).astype(F32) for k in mine.state_dict()}
        mine.load_state_dict({k: pyrt.tensor(v) for k, v in state.items()})
        theirs.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    xt, xr = pyrt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, yr = mine(xt), theirs(xr)
    (y * pyrt.tensor(g)).sum().backward()
    (yr * torch.from_numpy(g)).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), yr.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(xt.grad.numpy(), xr.grad.numpy(), rtol=1e-4, atol=1e-5)
    for p, tp in zip(mine.parameters(), theirs.parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_module_trains_and_round_trips_its_state(tmp_path):
    r = rng(11)
    layer = nn.LayerNorm(8)
    opt = pyrt.optim.SGD(layer.parameters(), lr=0.1)
    x = pyrt.tensor(r.standard_normal((16, 8)).astype(F32))
    target = pyrt.tensor(r.standard_normal((16, 8)).astype(F32))
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = F.mse_loss(layer(x), target)
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
    assert losses[-1] < losses[0]
    path = tmp_path / "ln.pt"
    pyrt.save(layer.state_dict(), path)
    other = nn.LayerNorm(8)
    other.load_state_dict(pyrt.load(path))
    assert np.array_equal(other(x).detach().numpy(), layer(x).detach().numpy())
    layer.reset_parameters()
    assert np.array_equal(layer.weight.detach().numpy(), np.ones(8, F32))
    assert np.array_equal(layer.bias.detach().numpy(), np.zeros(8, F32))


def test_module_errors():
    with pytest.raises(RuntimeError, match=re.escape("negative dimension -1: [-1]")):
        nn.LayerNorm(-1)
    with pytest.raises(TypeError):
        nn.LayerNorm(4.0)
    with pytest.raises(TypeError, match="eps"):
        nn.LayerNorm(4, eps="small")
    with pytest.raises(RuntimeError, match=re.escape("expected input with shape [*, 4]")):
        nn.LayerNorm(4)(pyrt.tensor(np.ones((2, 3), F32)))
    with pytest.raises(RuntimeError, match="at least 1-dimensional"):
        nn.LayerNorm([])(pyrt.tensor(np.ones(3, F32)))
    with pytest.raises(TypeError, match="layer_norm: input must be a Tensor, got ndarray"):
        nn.LayerNorm(3)(np.ones((2, 3), F32))
    assert "LayerNorm" in nn.__all__ and "layer_norm" in F.__all__


# ---- CUDA ------------------------------------------------------------------------------------


@pytest.mark.skipif(not cuda.is_available(), reason=f"no CUDA device: {cuda._probe()[1]}")
@pytest.mark.parametrize("shape,normalized_shape", [((16, 32), (32,)), ((4, 3, 5, 6), (5, 6)),
                                                    ((3, 70000), (70000,)), ((0, 4), (4,))])
def test_cuda_matches_cpu(shape, normalized_shape):
    """Outputs and every gradient of the module on the GPU against the same module on the
    CPU, and mixed devices refused as PyTorch refuses them."""
    import cupy

    cuda.require()
    r = rng(12)
    x = (r.standard_normal(shape) + 2).astype(F32)
    g = r.standard_normal(shape).astype(F32)
    state = {"weight": r.standard_normal(normalized_shape).astype(F32),
             "bias": r.standard_normal(normalized_shape).astype(F32)}
    results = []
    for device in ("cpu", "cuda"):
        layer = nn.LayerNorm(normalized_shape)
        layer.load_state_dict({k: pyrt.tensor(v) for k, v in state.items()})
        layer = layer.to(device)
        t = pyrt.tensor(x, requires_grad=True, device=device)
        y = layer(t)
        (y * pyrt.tensor(g, device=device)).sum().backward()
        results.append([a.data for a in (y, t.grad, layer.weight.grad, layer.bias.grad)])
    for d, h in zip(results[1], results[0]):
        assert isinstance(d, cupy.ndarray)
        np.testing.assert_allclose(cupy.asnumpy(d), h, rtol=1e-4, atol=1e-4)
    with pytest.raises(RuntimeError, match="cpu"):
        layer(pyrt.tensor(x))
