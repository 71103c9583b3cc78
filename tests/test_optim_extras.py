"""Rprop, ASGD, Adafactor, Muon, SparseAdam and pyrt.optim.swa_utils: each optimizer against
its update rule written out in float64 NumPy, and (where torch is installed) against
torch.optim trained side by side over 20 steps; state_dict round trips; torch's errors for bad
hyper-parameters; AveragedModel, SWALR and update_bn against NumPy and torch."""

import copy
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import nn, optim
from pyrt.optim import swa_utils
from pyrt.optim.muon import zeropower_via_newtonschulz

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

F32 = np.float32
SHAPES = [(5, 3), (7,), (), (2, 3, 4)]
SMALL = settings(max_examples=20, deadline=None, derandomize=True)


def rng(seed):
    return np.random.default_rng(seed)


def grads_for(shapes, seed, steps, sparse_rows=False):
    """`steps` lists of seeded float32 gradients; with sparse_rows, about half the rows of
    each are zero."""
    r = rng(seed)
    out = []
    for _ in range(steps):
        step = []
        for shape in shapes:
            g = r.standard_normal(shape).astype(F32)
            if sparse_rows and g.ndim:
                g[r.random(shape[0]) < 0.5] = 0
            step.append(g)
        out.append(step)
    return out


def initial(shapes, seed):
    r = rng(seed)
    return [r.standard_normal(shape).astype(F32) for shape in shapes]


def run_pyrt(cls, arrays, grads, **kwargs):
    params = [nn.Parameter(a.copy()) for a in arrays]
    opt = cls(params, **kwargs)
    for step in grads:
        for p, g in zip(params, step):
            p.grad = pyrt.tensor(g)
        opt.step()
    return [p._data for p in params], opt


def assert_close(got, ref, rtol=1e-5, what=""):
    """rtol relative to the largest magnitude in play (float32 rounding in orders that differ
    between implementations)."""
    ref = np.asarray(ref, np.float64)
    scale = float(np.max(np.abs(ref), initial=0.0))
    np.testing.assert_allclose(np.asarray(got, np.float64), ref, rtol=rtol, atol=rtol * scale,
                               err_msg=what)


# ---- the update rules in float64 -------------------------------------------------------------


def ref_rprop(p, grads, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    p = p.astype(np.float64)
    prev, size = np.zeros_like(p), np.full_like(p, lr)
    for g in grads:
        g = -g.astype(np.float64) if maximize else g.astype(np.float64)
        d = g * prev
        size = np.clip(size * np.where(d > 0, etas[1], np.where(d < 0, etas[0], 1.0)),
                       *step_sizes)
        g = np.where(d < 0, 0.0, g)
        p = p - np.sign(g) * size
        prev = g
    return p


def ref_asgd(p, grads, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
             maximize=False):
    p = p.astype(np.float64)
    eta, mu, ax = lr, 1.0, np.zeros_like(p)
    for t, g in enumerate(grads, 1):
        g = -g.astype(np.float64) if maximize else g.astype(np.float64)
        g = g + weight_decay * p
        p = p * (1 - lambd * eta) - eta * g
        ax = ax + mu * (p - ax)
        eta = lr / (1 + lambd * lr * t) ** alpha
        mu = 1 / max(1, t - t0)
    return p, ax


def ref_adafactor(p, grads, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                  weight_decay=0.0, maximize=False):
    p = p.astype(np.float64)
    eps1 = float(np.finfo(F32).eps) if eps[0] is None else eps[0]
    rms = lambda x: math.sqrt(np.mean(x * x)) if x.size else 0.0  # noqa: E731
    row = col = var = None
    for t, g in enumerate(grads, 1):
        g = -g.astype(np.float64) if maximize else g.astype(np.float64)
        w = t ** beta2_decay
        alpha = max(eps[1], rms(p)) * min(lr, 1 / math.sqrt(t))
        p = p * (1 - lr * weight_decay)
        if p.ndim > 1:
            if row is None:
                row = np.zeros(p.shape[:-1] + (1,))
                col = np.zeros(p.shape[:-2] + (1,) + p.shape[-1:])
            row = row + w * ((g * g).mean(axis=-1, keepdims=True) - row)
            col = col + w * ((g * g).mean(axis=-2, keepdims=True) - col)
            v = row * col / np.maximum(row.mean(axis=-2, keepdims=True), eps1)
        else:
            var = np.zeros_like(p) if var is None else var
            var = var + w * (g * g - var)
            v = var
        u = g / np.sqrt(np.maximum(v, eps1 * eps1))
        p = p - alpha / max(1.0, rms(u) / d) * u
    return p


def ref_sparse_adam(p, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
    p = p.astype(np.float64)
    m, v = np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(grads, 1):
        g = -g.astype(np.float64) if maximize else g.astype(np.float64)
        rows = g.reshape(len(g), -1).any(axis=1) if g.ndim else g != 0
        m[rows] = betas[0] * m[rows] + (1 - betas[0]) * g[rows]
        v[rows] = betas[1] * v[rows] + (1 - betas[1]) * g[rows] ** 2
        size = lr * math.sqrt(1 - betas[1] ** t) / (1 - betas[0] ** t)
        p[rows] -= size * m[rows] / (np.sqrt(v[rows]) + eps)
    return p


def ref_newton_schulz(g, coefficients=(3.4445, -4.7750, 2.0315), steps=5, eps=1e-7):
    a, b, c = coefficients
    x = g.astype(np.float64)
    tall = x.shape[0] > x.shape[1]
    x = x.T if tall else x
    x = x / max(np.linalg.norm(x), eps)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if tall else x


def ref_muon(p, grads, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True):
    p = p.astype(np.float64)
    buf = np.zeros_like(p)
    scale = math.sqrt(max(1, p.shape[0] / p.shape[1]))
    for g in grads:
        g = g.astype(np.float64)
        buf = momentum * buf + (1 - momentum) * g
        u = g + momentum * (buf - g) if nesterov else buf
        p = p * (1 - lr * weight_decay) - lr * scale * ref_newton_schulz(u)
    return p


REFERENCES = {
    "Rprop": [({}, ref_rprop),
              ({"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2), "maximize": True},
               ref_rprop)],
    "ASGD": [({}, lambda p, g, **k: ref_asgd(p, g, **k)[0]),
             ({"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 4, "weight_decay": 0.1,
               "maximize": True}, lambda p, g, **k: ref_asgd(p, g, **k)[0])],
    "Adafactor": [({}, ref_adafactor),
                  # (lr above 1 / sqrt(t) from step 5: the relative step size rho takes over)
                  ({"lr": 0.5, "beta2_decay": -0.5, "eps": (1e-6, 1e-2), "d": 1.5,
                    "weight_decay": 0.1, "maximize": True}, ref_adafactor)],
    "SparseAdam": [({}, ref_sparse_adam),
                   ({"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6, "maximize": True},
                    ref_sparse_adam)],
}
CASES = [(name, i) for name, cases in REFERENCES.items() for i in range(len(cases))]

shapes_st = st.lists(st.lists(st.integers(1, 5), min_size=0, max_size=3).map(tuple),
                     min_size=1, max_size=3)


@pytest.mark.parametrize("name,case", CASES)
@SMALL
@given(shapes=shapes_st, seed=st.integers(0, 2**16))
def test_matches_float64_rule(name, case, shapes, seed):
    kwargs, reference = REFERENCES[name][case]
    arrays = initial(shapes, seed)
    grads = grads_for(shapes, seed + 1, 20, sparse_rows=name == "SparseAdam")
    got, _ = run_pyrt(getattr(optim, name), arrays, grads, **kwargs)
    for i, (p, a) in enumerate(zip(got, arrays)):
        ref = reference(a, [g[i] for g in grads], **kwargs)
        # Rprop moves by signs: float32 and float64 agree but for the step sizes' rounding
        assert_close(p, ref, rtol=1e-4, what=f"{name} {kwargs} shape {a.shape}")


def test_asgd_keeps_the_average_of_iterates():
    arrays = initial([(4, 3)], 3)
    grads = grads_for([(4, 3)], 4, 12)
    kwargs = {"lr": 0.1, "t0": 5, "lambd": 0.001}
    _, opt = run_pyrt(optim.ASGD, arrays, grads, **kwargs)
    _, ax = ref_asgd(arrays[0], [g[0] for g in grads], **kwargs)
    state = next(iter(opt.state.values()))
    assert_close(state["ax"], ax, rtol=1e-5)
    assert state["step"] == 12 and isinstance(state["eta"], float)


def test_adafactor_factors_matrices_only():
    params = [nn.Parameter(np.ones(shape, F32)) for shape in [(4, 5), (3, 4, 5), (5,), ()]]
    opt = optim.Adafactor(params)
    for p in params:
        p.grad = pyrt.tensor(np.full(p.shape, 0.5, F32))
    opt.step()
    s = [opt.state[p] for p in params]
    assert s[0]["row_var"].shape == (4, 1) and s[0]["col_var"].shape == (1, 5)
    assert s[1]["row_var"].shape == (3, 4, 1) and s[1]["col_var"].shape == (3, 1, 5)
    assert "variance" not in s[0] and "row_var" not in s[2]
    assert s[2]["variance"].shape == (5,) and s[3]["variance"].shape == ()


@SMALL
@given(rows=st.integers(1, 12), cols=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_newton_schulz_matches_float64(rows, cols, seed):
    g = rng(seed).standard_normal((rows, cols)).astype(F32)
    got = zeropower_via_newtonschulz(g, (3.4445, -4.7750, 2.0315), 5, 1e-7)
    assert got.dtype == F32 and got.shape == g.shape
    assert_close(got, ref_newton_schulz(g), rtol=1e-4)


def test_newton_schulz_orthogonalises():
    g = rng(0).standard_normal((16, 8)).astype(F32)
    # the exact iteration (a, b, c) = (15/8, -10/8, 3/8) converges to U V^T
    got = zeropower_via_newtonschulz(g, (15 / 8, -10 / 8, 3 / 8), 30, 1e-7)
    u, _, vt = np.linalg.svd(g.astype(np.float64), full_matrices=False)
    assert_close(got, u @ vt, rtol=1e-3)
    # the default quintic: singular values only near 1, quickly
    s = np.linalg.svd(zeropower_via_newtonschulz(g, (3.4445, -4.7750, 2.0315), 5, 1e-7),
                      compute_uv=False)
    assert np.all((s > 0.5) & (s < 1.5))


@pytest.mark.parametrize("kwargs", [{}, {"lr": 0.02, "nesterov": False, "weight_decay": 0.0}])
def test_muon_matches_float64_rule(kwargs):
    shapes = [(5, 3), (4, 6)]
    arrays = initial(shapes, 7)
    grads = grads_for(shapes, 8, 20)
    got, _ = run_pyrt(optim.Muon, arrays, grads, **kwargs)
    for i, (p, a) in enumerate(zip(got, arrays)):
        assert_close(p, ref_muon(a, [g[i] for g in grads], **kwargs), rtol=1e-5)


def test_sparse_adam_leaves_untouched_rows():
    p = nn.Parameter(rng(0).standard_normal((6, 3)).astype(F32))
    before = p._data.copy()
    opt = optim.SparseAdam([p], lr=0.1)
    g = np.zeros((6, 3), F32)
    g[[1, 4]] = 1.0
    g[2, 0] = -2.0
    p.grad = pyrt.tensor(g)
    opt.step()
    untouched = [0, 3, 5]
    np.testing.assert_array_equal(p._data[untouched], before[untouched])
    assert np.all(opt.state[p]["exp_avg"][untouched] == 0)
    assert np.all(p._data[[1, 4]] != before[[1, 4]]) and p._data[2, 0] != before[2, 0]
    p.grad = pyrt.tensor(np.zeros((6, 3), F32))  # no row: nothing moves, the step counts
    opt.step()
    assert opt.state[p]["step"] == 2


# ---- state_dict round trips ------------------------------------------------------------------

ROUND_TRIPS = [
    ("Rprop", {"lr": 0.03, "maximize": True}, SHAPES),
    ("ASGD", {"lr": 0.05, "t0": 3, "weight_decay": 0.01}, SHAPES),
    ("Adafactor", {"weight_decay": 0.05}, SHAPES),
    ("SparseAdam", {"lr": 0.01}, [(5, 3), (7,), (2, 3, 4)]),
    ("Muon", {"lr": 0.02}, [(5, 3), (4, 6)]),
]


@pytest.mark.parametrize("name,kwargs,shapes", ROUND_TRIPS)
def test_state_dict_round_trip(name, kwargs, shapes):
    """5 steps, save, 5 more steps in a fresh optimizer loaded with the saved state (through
    pickle) = 10 steps straight, to the bit."""
    cls = getattr(optim, name)
    arrays = initial(shapes, 11)
    grads = grads_for(shapes, 12, 10, sparse_rows=name == "SparseAdam")
    straight, _ = run_pyrt(cls, arrays, grads, **kwargs)
    half, opt = run_pyrt(cls, arrays, grads[:5], **kwargs)
    saved = pickle.loads(pickle.dumps(opt.state_dict()))
    params = [nn.Parameter(a.copy()) for a in half]
    resumed = cls(params, **kwargs)
    resumed.load_state_dict(saved)
    for step in grads[5:]:
        for p, g in zip(params, step):
            p.grad = pyrt.tensor(g)
        resumed.step()
    for p, ref in zip(params, straight):
        np.testing.assert_array_equal(p._data, ref)


def test_adafactor_refuses_a_bad_factored_state():
    p = nn.Parameter(np.ones((4, 5), F32))
    opt = optim.Adafactor([p])
    p.grad = pyrt.tensor(np.ones((4, 5), F32))
    opt.step()
    saved = opt.state_dict()
    saved["state"][0]["row_var"] = np.zeros((4, 5), F32)
    before = opt.state[p]["row_var"].copy()
    with pytest.raises(ValueError, match="row_var.*shape"):
        opt.load_state_dict(saved)
    np.testing.assert_array_equal(opt.state[p]["row_var"], before)  # left as it was
    del saved["state"][0]["row_var"]
    with pytest.raises(ValueError, match="lacks row_var"):
        opt.load_state_dict(saved)


def test_asgd_refuses_a_bad_loaded_eta():
    p = nn.Parameter(np.ones(3, F32))
    opt = optim.ASGD([p])
    p.grad = pyrt.tensor(np.ones(3, F32))
    opt.step()
    saved = opt.state_dict()
    saved["state"][0]["eta"] = "fast"
    with pytest.raises(ValueError, match="eta"):
        opt.load_state_dict(saved)


# ---- hyper-parameters --------------------------------------------------------------------------

BAD = [
    ("Rprop", {"lr": -1.0}, "Invalid learning rate"),
    ("Rprop", {"etas": (1.5, 1.2)}, "Invalid eta values"),
    ("Rprop", {"etas": (0.5, 0.9)}, "Invalid eta values"),
    ("ASGD", {"lr": -0.1}, "Invalid learning rate"),
    ("ASGD", {"weight_decay": -0.1}, "Invalid weight_decay value"),
    ("Adafactor", {"lr": -0.1}, "Learning rate should be >= 0"),
    ("Adafactor", {"beta2_decay": 0.5}, "beta2_decay should be <= 0"),
    ("Adafactor", {"eps": (-1.0, 1e-3)}, "epsilon1 should be >= 0"),
    ("Adafactor", {"eps": (None, -1e-3)}, "epsilon2 should be >= 0"),
    ("Adafactor", {"d": 0.5}, "Clipping threshold d should be >= 1"),
    ("Adafactor", {"weight_decay": -1.0}, "weight_decay should be >= 0"),
    ("SparseAdam", {"lr": 0.0}, "Invalid learning rate"),
    ("SparseAdam", {"eps": 0.0}, "Invalid epsilon value"),
    ("SparseAdam", {"betas": (1.0, 0.999)}, "Invalid beta parameter at index 0"),
    ("SparseAdam", {"betas": (0.9, -0.1)}, "Invalid beta parameter at index 1"),
    ("Muon", {"lr": -1.0}, "Learning rate should be >= 0"),
    ("Muon", {"momentum": -0.5}, "momentum should be >= 0"),
    ("Muon", {"weight_decay": -0.5}, "weight decay should be >= 0"),
    ("Muon", {"adjust_lr_fn": "sqrt"}, "Adjust learning rate function sqrt is not supported"),
]


@pytest.mark.parametrize("name,kwargs,message", BAD)
def test_bad_hyperparameters_raise_as_torch(name, kwargs, message):
    with pytest.raises(ValueError, match=message):
        getattr(optim, name)([nn.Parameter(np.ones((2, 2), F32))], **kwargs)
    if torch is not None:
        with pytest.raises(ValueError, match=message):
            getattr(torch.optim, name)([torch.ones(2, 2, requires_grad=True)], **kwargs)


def test_bad_options_and_params():
    p = nn.Parameter(np.ones((2, 2), F32))
    with pytest.raises(ValueError, match="differentiable=True is not supported"):
        optim.Rprop([p], differentiable=True)
    with pytest.raises(TypeError, match="maximize must be a bool"):
        optim.ASGD([p], maximize="yes")
    optim.Rprop([p], foreach=True, capturable=True)  # accepted: they change nothing here
    optim.Adafactor([p], foreach=False)
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        optim.Muon([p, nn.Parameter(np.ones(3, F32))])
    with pytest.raises(ValueError, match="less than 100"):
        optim.Muon([p], ns_steps=100)
    with pytest.raises(ValueError, match="exactly 3 values"):
        optim.Muon([p], ns_coefficients=(1.0, 2.0))
    with pytest.raises(TypeError, match="etas must be a pair"):
        optim.Rprop([p], etas=0.5)
    opt = optim.Rprop([p])
    opt.param_groups[0]["lr"] = -1.0  # checked again at the step, before any write
    p.grad = pyrt.tensor(np.ones((2, 2), F32))
    with pytest.raises(ValueError, match="Invalid learning rate"):
        opt.step()
    np.testing.assert_array_equal(p._data, np.ones((2, 2), F32))


# ---- against torch -----------------------------------------------------------------------------

TORCH_SETTINGS = [
    ("Rprop", {}),
    ("Rprop", {"lr": 0.003, "etas": (0.4, 1.3), "step_sizes": (1e-5, 0.05)}),
    ("Rprop", {"lr": 0.001, "maximize": True}),
    ("ASGD", {}),
    ("ASGD", {"lr": 0.05, "lambd": 1e-3, "alpha": 0.6, "t0": 5, "weight_decay": 0.05}),
    ("ASGD", {"lr": 0.02, "weight_decay": 0.01, "maximize": True}),
    ("Adafactor", {}),
    ("Adafactor", {"lr": 0.02, "beta2_decay": -0.6, "eps": (1e-5, 1e-2), "d": 2.0,
                   "weight_decay": 0.05}),
    ("Adafactor", {"lr": 0.005, "weight_decay": 0.01, "maximize": True}),
]


def twin_models(seed):
    pyrt.manual_seed(seed)
    ours = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
    theirs = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    with torch.no_grad():
        for p, tp in zip(ours.parameters(), theirs.parameters(), strict=True):
            tp.copy_(torch.from_numpy(p._data.copy()))
    return ours, theirs


def batches(seed, steps):
    r = rng(seed)
    teacher = r.standard_normal((6, 3))
    xs = [r.standard_normal((10, 6)) for _ in range(steps)]
    return [(x.astype(F32), np.tanh(x @ teacher).astype(F32)) for x in xs]


def train_side_by_side(ours, theirs, opt, topt, data):
    losses, ref = [], []
    for x, y in data:
        def closure(x=x, y=y):
            opt.zero_grad()
            loss = nn.functional.mse_loss(ours(pyrt.tensor(x)), pyrt.tensor(y))
            loss.backward()
            return loss

        def torch_closure(x=x, y=y):
            topt.zero_grad()
            loss = torch.nn.functional.mse_loss(theirs(torch.from_numpy(x)), torch.from_numpy(y))
            loss.backward()
            return loss

        losses.append(opt.step(closure).item())
        ref.append(topt.step(torch_closure).item())
    return losses, ref


@needs_torch
@pytest.mark.parametrize("name,kwargs", TORCH_SETTINGS)
def test_trains_as_torch(name, kwargs):
    ours, theirs = twin_models(len(kwargs))
    data = batches(5, 20)
    opt = getattr(optim, name)(ours.parameters(), **kwargs)
    topt = getattr(torch.optim, name)(theirs.parameters(), **kwargs)
    losses, ref = train_side_by_side(ours, theirs, opt, topt, data)
    assert_close(losses, ref, what="losses")
    for p, tp in zip(ours.parameters(), theirs.parameters()):
        assert_close(p._data, tp.detach().numpy(), what=name)
    if not kwargs.get("maximize"):
        assert losses[-1] < losses[0]


def torch_run(cls, arrays, grads, sparse=False, **kwargs):
    params = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    opt = cls(params, **kwargs)
    for step in grads:
        for p, g in zip(params, step):
            g = torch.from_numpy(g.copy())
            p.grad = g.to_sparse(sparse_dim=1) if sparse else g
        opt.step()
    return [p.detach().numpy() for p in params], opt


@needs_torch
@pytest.mark.parametrize("name,case", CASES)
def test_random_gradients_as_torch(name, case):
    """Every rank (0-d, vectors, matrices, 3-d with factored moments); SparseAdam against
    torch's with the same gradients in sparse form (the rows with a nonzero element)."""
    kwargs = REFERENCES[name][case][0]
    shapes = SHAPES if name != "SparseAdam" else [(6, 3), (7,), (4, 2, 3)]
    arrays = initial(shapes, 21)
    grads = grads_for(shapes, 22, 20, sparse_rows=name == "SparseAdam")
    got, _ = run_pyrt(getattr(optim, name), arrays, grads, **kwargs)
    ref, _ = torch_run(getattr(torch.optim, name), arrays, grads, sparse=name == "SparseAdam",
                       **kwargs)
    for p, r in zip(got, ref):
        assert_close(p, r, what=f"{name} {p.shape}")


@needs_torch
@pytest.mark.parametrize("name,kwargs,shapes", ROUND_TRIPS[:4])
def test_loads_torch_state(name, kwargs, shapes):
    """torch's state_dict after 5 steps, loaded into pyrt: the next 5 steps agree."""
    arrays = initial(shapes, 31)
    grads = grads_for(shapes, 32, 10, sparse_rows=name == "SparseAdam")
    sparse = name == "SparseAdam"
    half, topt = torch_run(getattr(torch.optim, name), arrays, grads[:5], sparse, **kwargs)
    params = [nn.Parameter(a.copy()) for a in half]
    opt = getattr(optim, name)(params, **kwargs)
    opt.load_state_dict(topt.state_dict())
    for step in grads[5:]:
        for p, g in zip(params, step):
            p.grad = pyrt.tensor(g)
        opt.step()
    ref, _ = torch_run(getattr(torch.optim, name), arrays, grads, sparse, **kwargs)
    for p, r in zip(params, ref):
        assert_close(p._data, r, what=name)


@needs_torch
@pytest.mark.parametrize("kwargs", [{}, {"lr": 0.02, "nesterov": False, "weight_decay": 0.0,
                                         "adjust_lr_fn": "match_rms_adamw"}])
def test_muon_as_torch(kwargs):
    """torch orthogonalises in bfloat16, pyrt in float32: the parameters agree to bfloat16's
    rounding of the updates, and the updates themselves to about 1e-2."""
    shapes = [(5, 3), (4, 6), (8, 8)]
    arrays = initial(shapes, 41)
    grads = grads_for(shapes, 42, 20)
    got, _ = run_pyrt(optim.Muon, arrays, grads, **kwargs)
    ref, _ = torch_run(torch.optim.Muon, arrays, grads, **kwargs)
    for p, r, a in zip(got, ref, arrays):
        moved, ref_moved = p - a, r - a
        assert_close(moved, ref_moved, rtol=3e-2, what="Muon's total update")


# ---- swa_utils ---------------------------------------------------------------------------------


def bn_model():
    return nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5), nn.ReLU(), nn.Linear(5, 2))


def snapshots(model, count, seed):
    """`count` perturbed states of model's parameters and buffers, applied one after another
    (the yielded model is the same object each time)."""
    r = rng(seed)
    for _ in range(count):
        for p in model.parameters():
            p._data[...] = r.standard_normal(p.shape).astype(F32)
        bn = model[1]
        bn.running_mean._data[...] = r.standard_normal(5).astype(F32)
        bn.running_var._data[...] = r.random(5).astype(F32) + 0.5
        bn.num_batches_tracked._data[...] += 3
        yield model


def test_averaged_model_swa_equals_the_mean():
    model = bn_model()
    swa = swa_utils.AveragedModel(model)
    seen = []
    for m in snapshots(model, 5, 0):
        swa.update_parameters(m)
        seen.append([p._data.copy() for p in m.parameters()])
    assert int(swa.n_averaged._data) == 5
    for i, p in enumerate(swa.module.parameters()):
        assert_close(p._data, np.mean([s[i] for s in seen], axis=0), rtol=1e-6)
    # the buffers are copied, not averaged
    np.testing.assert_array_equal(swa.module[1].running_mean._data, model[1].running_mean._data)
    assert swa.module[0].weight is not model[0].weight
    x = pyrt.tensor(rng(1).standard_normal((3, 4)).astype(F32))
    swa.eval()
    swa.module.eval()
    assert_close(swa(x)._data, swa.module(x)._data)


def test_averaged_model_ema_and_buffers():
    model = bn_model()
    decay = 0.8
    ema = swa_utils.AveragedModel(model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(decay),
                                  use_buffers=True)
    single = swa_utils.AveragedModel(model, avg_fn=swa_utils.get_ema_avg_fn(decay))
    expected = None
    for m in snapshots(model, 4, 2):
        ema.update_parameters(m)
        single.update_parameters(m)
        now = [p._data.astype(np.float64) for p in m.parameters()] + [
            m[1].running_mean._data.astype(np.float64)]
        expected = now if expected is None else [decay * e + (1 - decay) * c
                                                 for e, c in zip(expected, now)]
    got = list(ema.module.parameters()) + [ema.module[1].running_mean]
    for g, e in zip(got, expected):
        assert_close(g._data, e, rtol=1e-5)
    for g, e in zip(single.module.parameters(), expected):
        assert_close(g._data, e, rtol=1e-5)
    assert ema.module[1].num_batches_tracked._data.dtype == np.int64


def test_averaging_function_errors():
    with pytest.raises(ValueError, match="Invalid decay value"):
        swa_utils.get_ema_multi_avg_fn(1.5)
    with pytest.raises(ValueError, match="Invalid decay value"):
        swa_utils.get_ema_avg_fn(-0.1)
    model = bn_model()
    with pytest.raises(ValueError, match="Only one of avg_fn and multi_avg_fn"):
        swa_utils.AveragedModel(model, avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())
    swa = swa_utils.AveragedModel(model, multi_avg_fn=swa_utils.get_swa_multi_avg_fn(),
                                  use_buffers=True)
    swa.update_parameters(model)
    with pytest.raises(RuntimeError, match="integer tensors"):
        swa.update_parameters(model)


def twin_bn_models():
    ours = bn_model()
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.BatchNorm1d(5),
                                 torch.nn.ReLU(), torch.nn.Linear(5, 2))
    return ours, theirs


def copy_into_torch(ours, theirs):
    with torch.no_grad():
        for p, tp in zip(ours.parameters(), theirs.parameters(), strict=True):
            tp.copy_(torch.from_numpy(p._data.copy()))
        for b, tb in zip(ours.buffers(), theirs.buffers(), strict=True):
            tb.copy_(torch.from_numpy(np.array(b._data)))


@needs_torch
@pytest.mark.parametrize("kind", ["swa", "ema_multi", "ema", "swa_multi", "ema_buffers"])
def test_averaged_model_as_torch(kind):
    fns = {"swa": {}, "ema_multi": {"multi_avg_fn": "get_ema_multi_avg_fn"},
           "ema": {"avg_fn": "get_ema_avg_fn"},
           "swa_multi": {"multi_avg_fn": "get_swa_multi_avg_fn"},
           "ema_buffers": {"multi_avg_fn": "get_ema_multi_avg_fn", "use_buffers": True}}[kind]
    def make(module, lib):
        kwargs = {k: (getattr(lib, v)(0.7) if "ema" in v else getattr(lib, v)())
                  if isinstance(v, str) else v for k, v in fns.items()}
        return lib.AveragedModel(module, **kwargs)

    ours, theirs = twin_bn_models()
    copy_into_torch(ours, theirs)
    avg, tavg = make(ours, swa_utils), make(theirs, torch.optim.swa_utils)
    for m in snapshots(ours, 6, 3):
        copy_into_torch(m, theirs)
        avg.update_parameters(m)
        tavg.update_parameters(theirs)
    for (name, t), (tname, tt) in zip(avg.state_dict().items(), tavg.state_dict().items()):
        assert name == tname
        assert_close(np.array(t._data), tt.numpy(), rtol=1e-6, what=name)


@needs_torch
@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 1, 3, 10])
@pytest.mark.parametrize("swa_lr", [0.05, [0.05, 0.5]])
def test_swalr_as_torch(strategy, anneal_epochs, swa_lr):
    """The lrs to the last bit, with changes to the lr between steps as another schedule
    makes them."""
    p = nn.Parameter(np.ones(2, F32))
    q = nn.Parameter(np.ones(2, F32))
    tp, tq = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    opt = optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.3}], lr=0.1)
    topt = torch.optim.SGD([{"params": [tp]}, {"params": [tq], "lr": 0.3}], lr=0.1)
    sched = swa_utils.SWALR(opt, swa_lr, anneal_epochs=anneal_epochs, anneal_strategy=strategy)
    tsched = torch.optim.swa_utils.SWALR(topt, swa_lr, anneal_epochs=anneal_epochs,
                                         anneal_strategy=strategy)
    assert sched.get_last_lr() == tsched.get_last_lr()
    for i in range(15):
        topt.step()
        if i == 6:
            opt.param_groups[0]["lr"] *= 0.5
            topt.param_groups[0]["lr"] *= 0.5
        sched.step()
        tsched.step()
        assert [g["lr"] for g in opt.param_groups] == [g["lr"] for g in topt.param_groups]
        assert sched.get_last_lr() == tsched.get_last_lr()


def test_swalr_reaches_swa_lr_and_saves():
    p = nn.Parameter(np.ones(2, F32))
    opt = optim.SGD([p], lr=1.0)
    sched = swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=4, anneal_strategy="linear")
    lrs = []
    for _ in range(6):
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    assert_close(lrs, [0.775, 0.55, 0.325, 0.1, 0.1, 0.1], rtol=1e-12)
    saved = sched.state_dict()
    assert "anneal_func" not in saved and "optimizer" not in saved
    opt2 = optim.SGD([nn.Parameter(np.ones(2, F32))], lr=1.0)
    other = swa_utils.SWALR(opt2, swa_lr=0.1, anneal_strategy="cos")
    other.load_state_dict(copy.deepcopy(saved))
    assert other.anneal_func(0.5) == 0.5 and other._anneal_strategy == "linear"
    with pytest.raises(ValueError, match="anneal_strategy must be one of"):
        swa_utils.SWALR(opt, 0.1, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        swa_utils.SWALR(opt, 0.1, anneal_epochs=-1)
    with pytest.raises(ValueError, match="swa_lr must have the same length"):
        swa_utils.SWALR(opt, [0.1, 0.2])


def loader(seed, batches=4):
    r = rng(seed)
    return [(pyrt.tensor(r.standard_normal((8, 4)).astype(F32) * 2 + 1), None)
            for _ in range(batches)]


def test_update_bn_is_the_average_of_batch_statistics():
    model = nn.Sequential(nn.BatchNorm1d(4))
    model.eval()
    bn = model[0]
    bn.momentum = 0.3
    data = loader(0)
    swa_utils.update_bn(data, model)
    xs = [x._data.astype(np.float64) for x, _ in data]
    assert_close(bn.running_mean._data, np.mean([x.mean(axis=0) for x in xs], axis=0), rtol=1e-5)
    assert_close(bn.running_var._data, np.mean([x.var(axis=0, ddof=1) for x in xs], axis=0),
                 rtol=1e-5)
    assert int(bn.num_batches_tracked._data) == 4
    assert bn.momentum == 0.3 and not model.training
    swa_utils.update_bn(data, nn.Sequential(nn.Linear(4, 2)))  # no BatchNorm: nothing to do


@needs_torch
def test_update_bn_as_torch():
    ours, theirs = twin_bn_models()
    copy_into_torch(ours, theirs)
    data = loader(1, 5)
    swa = swa_utils.AveragedModel(ours)
    tswa = torch.optim.swa_utils.AveragedModel(theirs)
    swa.update_parameters(ours)
    tswa.update_parameters(theirs)
    swa_utils.update_bn([x for x, _ in data], swa)
    torch.optim.swa_utils.update_bn([torch.from_numpy(x._data.copy()) for x, _ in data], tswa)
    bn, tbn = swa.module[1], tswa.module[1]
    assert_close(bn.running_mean._data, tbn.running_mean.numpy())
    assert_close(bn.running_var._data, tbn.running_var.numpy())
    assert int(bn.num_batches_tracked._data) == int(tbn.num_batches_tracked)
