"""pyrt.optim: SGD and Adam over several parameters and groups against a NumPy version of
PyTorch's formulas and, where PyTorch is installed, against torch.optim; PyTorch's errors for
bad hyper-parameters and parameter lists; state_dict round trips (5 + 5 steps through a saved
state = 10 steps straight, bitwise); zero_grad, closures and parameters without gradients."""

import pickle
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import nn, optim

F32 = np.float32
SHAPES = [(5, 3), (7,), (2, 3, 4)]


def rng(seed):
    return np.random.default_rng(seed)


def make_params(seed):
    r = rng(seed)
    return [nn.Parameter(r.standard_normal(shape)) for shape in SHAPES]


def set_grads(params, seed):
    r = rng(seed)
    for p in params:
        p.grad = pyrt.tensor(r.standard_normal(p.shape))


def assert_close(got, ref, rtol=1e-6, scale=0.0, what=""):
    """1e-6 relative to the largest magnitude in play: each step rounds a few times in float32
    (the kernels use FMA where PyTorch multiplies and adds), about 2**-24 per rounding."""
    ref = np.asarray(ref, np.float64)
    scale = max(scale, float(np.max(np.abs(ref), initial=0.0)))
    np.testing.assert_allclose(np.asarray(got, np.float64), ref, rtol=rtol, atol=rtol * scale,
                               err_msg=what)


# ---- NumPy references (float64) of PyTorch's update rules ------------------------------------


def sgd_reference(params, grads_per_step, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
                  nesterov=False):
    params = [p.astype(np.float64) for p in params]
    bufs = [None] * len(params)
    for grads in grads_per_step:
        for i, g in enumerate(grads):
            g = g + weight_decay * params[i]
            if momentum:
                bufs[i] = g.copy() if bufs[i] is None else momentum * bufs[i] + (
                    1 - dampening) * g
                g = g + momentum * bufs[i] if nesterov else bufs[i]
            params[i] = params[i] - lr * g
    return params


def adam_reference(params, grads_per_step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                   weight_decay=0.0):
    params = [p.astype(np.float64) for p in params]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for t, grads in enumerate(grads_per_step, start=1):
        for i, g in enumerate(grads):
            g = g + weight_decay * params[i]
            m[i] = betas[0] * m[i] + (1 - betas[0]) * g
            v[i] = betas[1] * v[i] + (1 - betas[1]) * g * g
            m_hat = m[i] / (1 - betas[0] ** t)
            v_hat = v[i] / (1 - betas[1] ** t)
            params[i] = params[i] - lr * m_hat / (np.sqrt(v_hat) + eps)
    return params


def run(opt, params, steps, seed):
    """`steps` steps with seeded random gradients; returns the gradients used."""
    used = []
    for s in range(steps):
        set_grads(params, seed + s)
        used.append([p.grad._data.astype(np.float64) for p in params])
        opt.step()
    return used


SGD_CONFIGS = [
    dict(lr=0.1),
    dict(lr=0.05, weight_decay=0.01),
    dict(lr=0.1, momentum=0.9),
    dict(lr=0.01, momentum=0.9, dampening=0.1, weight_decay=1e-4),
    dict(lr=0.05, momentum=0.5, nesterov=True),
]
ADAM_CONFIGS = [
    dict(),
    dict(lr=1e-2, betas=(0.8, 0.99), weight_decay=0.1),
    dict(lr=0.1, betas=(0.5, 0.9), eps=1e-3),
]


@pytest.mark.parametrize("cfg", SGD_CONFIGS)
def test_sgd_against_numpy(cfg):
    params = make_params(0)
    start = [p._data.copy() for p in params]
    opt = optim.SGD(params, **cfg)
    grads = run(opt, params, 10, 1)
    for p, ref in zip(params, sgd_reference(start, grads, **cfg)):
        assert_close(p._data, ref, rtol=1e-5)
    if cfg.get("momentum"):
        assert all(opt.state[p]["momentum_buffer"].dtype == F32 for p in params)
    else:
        assert not opt.state


@pytest.mark.parametrize("cfg", ADAM_CONFIGS)
def test_adam_against_numpy(cfg):
    params = make_params(2)
    start = [p._data.copy() for p in params]
    opt = optim.Adam(params, **cfg)
    grads = run(opt, params, 10, 3)
    for p, ref in zip(params, adam_reference(start, grads, **cfg)):
        assert_close(p._data, ref, rtol=1e-5, scale=cfg.get("lr", 1e-3))
    for p in params:
        state = opt.state[p]
        assert state["step"] == 10
        assert state["exp_avg"].dtype == F32 and state["exp_avg_sq"].shape == p.shape


def torch_twin(params):
    torch = pytest.importorskip("torch")
    return [torch.tensor(p._data.copy(), requires_grad=True) for p in params]


def run_torch(opt, params, steps, seed):
    torch = pytest.importorskip("torch")
    for s in range(steps):
        r = rng(seed + s)
        for p in params:
            p.grad = torch.from_numpy(r.standard_normal(tuple(p.shape)).astype(F32))
        opt.step()


@settings(max_examples=12, deadline=None)
@given(lr=st.floats(1e-3, 0.5), momentum=st.sampled_from([0.0, 0.5, 0.9]),
       dampening=st.sampled_from([0.0, 0.3]), weight_decay=st.sampled_from([0.0, 1e-2]),
       nesterov=st.booleans(), seed=st.integers(0, 2**16))
def test_sgd_against_torch(lr, momentum, dampening, weight_decay, nesterov, seed):
    torch = pytest.importorskip("torch")
    if nesterov and (momentum == 0 or dampening != 0):
        nesterov = False
    cfg = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
               nesterov=nesterov)
    ours = make_params(seed)
    theirs = torch_twin(ours)
    run(optim.SGD(ours, **cfg), ours, 8, seed)
    run_torch(torch.optim.SGD(theirs, **cfg), theirs, 8, seed)
    for p, tp in zip(ours, theirs):
        assert_close(p._data, tp.detach().numpy(), rtol=1e-6, scale=lr)


@pytest.mark.parametrize("kind", ["Adam", "AdamW"])
@settings(max_examples=12, deadline=None)
@given(lr=st.floats(1e-4, 0.1), beta1=st.sampled_from([0.0, 0.5, 0.9]),
       beta2=st.sampled_from([0.9, 0.999]), eps=st.sampled_from([1e-8, 1e-4]),
       weight_decay=st.sampled_from([0.0, 0.1, 0.5]), seed=st.integers(0, 2**16))
def test_adam_against_torch(kind, lr, beta1, beta2, eps, weight_decay, seed):
    """Adam's L2 weight decay and AdamW's decoupled one."""
    torch = pytest.importorskip("torch")
    cfg = dict(lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay)
    ours = make_params(seed)
    theirs = torch_twin(ours)
    run(getattr(optim, kind)(ours, **cfg), ours, 8, seed)
    run_torch(getattr(torch.optim, kind)(theirs, **cfg), theirs, 8, seed)
    for p, tp in zip(ours, theirs):
        assert_close(p._data, tp.detach().numpy(), rtol=1e-6, scale=lr)


def test_adamw_decays_only_parameters_with_gradients():
    torch = pytest.importorskip("torch")
    ours = [pyrt.tensor(np.ones(3, np.float32), requires_grad=True) for _ in range(2)]
    theirs = [torch.ones(3, requires_grad=True) for _ in range(2)]
    ours[0].grad = pyrt.tensor(np.full(3, 0.5, np.float32))
    theirs[0].grad = torch.full((3,), 0.5)
    optim.AdamW(ours, lr=0.1, weight_decay=0.3).step()
    torch.optim.AdamW(theirs, lr=0.1, weight_decay=0.3).step()
    for p, tp in zip(ours, theirs):
        np.testing.assert_allclose(p._data, tp.detach().numpy(), rtol=1e-6)
    assert optim.AdamW(ours).defaults["weight_decay"] == 1e-2


# ---- hyper-parameter and argument errors ----------------------------------------------------

SGD_ERRORS = [
    (dict(lr=-0.1), "Invalid learning rate: -0.1"),
    (dict(lr=0.1, momentum=-0.5), "Invalid momentum value: -0.5"),
    (dict(lr=0.1, weight_decay=-1e-4), "Invalid weight_decay value: -0.0001"),
    (dict(lr=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    (dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
     "Nesterov momentum requires a momentum and zero dampening"),
]
ADAM_ERRORS = [
    (dict(lr=-1e-3), "Invalid learning rate: -0.001"),
    (dict(eps=-1.0), "Invalid epsilon value: -1.0"),
    (dict(betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    (dict(betas=(-0.1, 0.999)), "Invalid beta parameter at index 0: -0.1"),
    (dict(betas=(0.9, 1.5)), "Invalid beta parameter at index 1: 1.5"),
    (dict(weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
]


@pytest.mark.parametrize("kind,cfg,message",
                         [("SGD", c, m) for c, m in SGD_ERRORS]
                         + [(kind, c, m) for c, m in ADAM_ERRORS for kind in ("Adam", "AdamW")])
def test_invalid_hyper_parameters(kind, cfg, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        getattr(optim, kind)(make_params(4), **cfg)


@pytest.mark.parametrize("kind,cfg", [("SGD", c) for c, _ in SGD_ERRORS]
                         + [(kind, c) for c, _ in ADAM_ERRORS for kind in ("Adam", "AdamW")])
def test_invalid_hyper_parameter_messages_match_torch(kind, cfg):
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError) as ours:
        getattr(optim, kind)(make_params(4), **cfg)
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, kind)([torch.zeros(2, requires_grad=True)], **cfg)
    assert str(ours.value) == str(theirs.value)


def test_parameter_list_errors():
    p = make_params(5)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts, but got "
                                        "Parameter"):
        optim.SGD(p[0], lr=0.1)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": set(p)}], lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors, but one of the params is "
                                        "ndarray"):
        optim.Adam([p[0]._data])
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.Adam([p[0] * 2.0])
    with pytest.raises(ValueError, match="duplicate parameters"):
        optim.Adam([p[0], p[0]])
    opt = optim.SGD(p[:2], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter "
                                         "group"):
        opt.add_param_group({"params": [p[1], p[2]]})


def test_param_groups_like_torch():
    p = make_params(6)
    model_params = (x for x in p[:2])  # any iterable, even a generator, as model.parameters()
    opt = optim.SGD([{"params": model_params}, {"params": p[2], "lr": 0.5}], lr=0.1,
                    momentum=0.9)
    assert [len(g["params"]) for g in opt.param_groups] == [2, 1]
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 0.5
    assert opt.param_groups[1]["momentum"] == 0.9 and opt.param_groups[1]["nesterov"] is False
    assert sorted(opt.param_groups[0]) == sorted(["params", "lr", "momentum", "dampening",
                                                  "weight_decay", "nesterov"])
    extra = nn.Parameter(np.ones(3))
    opt.add_param_group({"params": [extra], "weight_decay": 0.1})
    assert opt.param_groups[2]["lr"] == 0.1 and opt.param_groups[2]["weight_decay"] == 0.1
    assert "Parameter Group 2" in repr(opt) and repr(opt).startswith("SGD (")

    # each group steps with its own learning rate
    start = [x._data.copy() for x in p]
    set_grads(p, 7)
    extra.grad = None
    opt.step()
    for x, x0, lr in zip(p, start, [0.1, 0.1, 0.5]):
        assert_close(x._data, x0 - lr * x.grad._data)


def test_param_groups_keys_match_torch():
    torch = pytest.importorskip("torch")
    ours = optim.Adam(make_params(8), lr=0.01)
    theirs = torch.optim.Adam([torch.zeros(1, requires_grad=True)], lr=0.01)
    assert set(theirs.param_groups[0]) >= set(ours.param_groups[0])
    for key in ours.param_groups[0]:
        if key != "params":
            assert ours.param_groups[0][key] == theirs.param_groups[0][key], key


def test_step_skips_parameters_without_gradients_and_records_nothing():
    p = make_params(9)
    start = [x._data.copy() for x in p]
    for kind in (optim.SGD(p, lr=0.1, momentum=0.9), optim.Adam(p, lr=0.1)):
        set_grads(p[:1], 10)
        p[1].grad = p[2].grad = None
        kind.step()
        assert list(kind.state) == [p[0]]
        assert np.array_equal(p[1]._data, start[1]) and np.array_equal(p[2]._data, start[2])
        assert all(x.is_leaf and x.requires_grad for x in p)
        p[0].grad = None


def test_zero_grad():
    p = make_params(11)
    opt = optim.SGD(p, lr=0.1)
    set_grads(p, 12)
    grads = [x.grad for x in p]
    opt.zero_grad(set_to_none=False)
    assert all(x.grad is g and not g._data.any() for x, g in zip(p, grads))
    opt.zero_grad()
    assert all(x.grad is None for x in p)


def test_step_with_closure():
    w = nn.Parameter(np.array([3.0, -2.0]))
    opt = optim.SGD([w], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    with pyrt.no_grad():  # the closure records its graph anyway
        loss = opt.step(closure)
    assert loss.item() == 13.0
    assert w._data.tolist() == [1.5, -1.0]  # w - 0.25 * 2w
    assert opt.step() is None


# ---- state_dict ------------------------------------------------------------------------------


def model_and_data(seed):
    pyrt.manual_seed(seed)
    model = nn.Sequential(nn.Linear(12, 16), nn.Tanh(), nn.Linear(16, 4))
    r = rng(seed)
    data = [(r.standard_normal((8, 12)).astype(F32), r.integers(0, 4, 8)) for _ in range(10)]
    return model, data


def train(model, opt, data):
    loss_fn = nn.CrossEntropyLoss()
    for x, y in data:
        opt.zero_grad()
        loss_fn(model(pyrt.tensor(x)), pyrt.tensor(y)).backward()
        opt.step()


OPTIMIZERS = [
    (optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)),
    (optim.SGD, dict(lr=0.1)),
    (optim.Adam, dict(lr=1e-2, weight_decay=1e-2)),
    (optim.AdamW, dict(lr=1e-2, weight_decay=0.1)),
]


@pytest.mark.parametrize("make,cfg", OPTIMIZERS)
def test_state_dict_resumes_training_exactly(make, cfg):
    """5 steps, save model and optimizer, load both into fresh objects, 5 more steps:
    bitwise the same weights as 10 steps straight."""
    straight, data = model_and_data(13)
    train(straight, make(straight.parameters(), **cfg), data)

    first, _ = model_and_data(13)
    opt = make(first.parameters(), **cfg)
    train(first, opt, data[:5])
    saved = pickle.dumps((first.state_dict(), opt.state_dict()))

    resumed, _ = model_and_data(99)  # other initial weights, overwritten by the load
    resumed_opt = make(resumed.parameters(), lr=123.0)  # other hyper-parameters, likewise
    model_state, opt_state = pickle.loads(saved)
    resumed.load_state_dict(model_state)
    resumed_opt.load_state_dict(opt_state)
    assert resumed_opt.param_groups[0]["lr"] == cfg["lr"]
    train(resumed, resumed_opt, data[5:])

    for name, value in straight.state_dict().items():
        assert np.array_equal(resumed.state_dict()[name], value), name


def test_state_dict_layout_and_copies():
    model, data = model_and_data(14)
    opt = optim.Adam(model.parameters(), lr=1e-2)
    train(model, opt, data[:2])
    state = opt.state_dict()
    assert sorted(state) == ["param_groups", "state"]
    assert state["param_groups"][0]["params"] == [0, 1, 2, 3]
    assert sorted(state["state"]) == [0, 1, 2, 3]
    entry = state["state"][2]
    assert sorted(entry) == ["exp_avg", "exp_avg_sq", "step"]
    assert entry["step"] == 2 and type(entry["step"]) is int
    assert type(entry["exp_avg"]) is np.ndarray and entry["exp_avg"].shape == (4, 16)
    saved = entry["exp_avg"].copy()
    train(model, opt, data[2:3])  # the saved arrays are copies: training goes on without them
    assert np.array_equal(entry["exp_avg"], saved)
    loaded = optim.Adam(model.parameters())
    loaded.load_state_dict(state)
    entry["exp_avg"][...] = 0  # and the loaded state is a copy of the dict's arrays
    assert loaded.state[model[2].weight]["exp_avg"].any()


def test_state_dict_layout_matches_torch():
    torch = pytest.importorskip("torch")
    p = make_params(15)
    tp = torch_twin(p)
    for make, tmake in [(optim.SGD, torch.optim.SGD), (optim.Adam, torch.optim.Adam)]:
        ours = make([{"params": p[:2]}, {"params": p[2:], "lr": 0.2}], lr=0.1, momentum=0.9) \
            if make is optim.SGD else make([{"params": p[:2]}, {"params": p[2:], "lr": 0.2}])
        theirs = tmake([{"params": tp[:2]}, {"params": tp[2:], "lr": 0.2}], lr=0.1,
                       momentum=0.9) if make is optim.SGD else \
            tmake([{"params": tp[:2]}, {"params": tp[2:], "lr": 0.2}])
        run(ours, p, 1, 16)
        run_torch(theirs, tp, 1, 16)
        a, b = ours.state_dict(), theirs.state_dict()
        assert [g["params"] for g in a["param_groups"]] == [g["params"] for g in
                                                            b["param_groups"]]
        assert sorted(a["state"]) == sorted(b["state"])
        for i in a["state"]:
            assert set(a["state"][i]) <= set(b["state"][i])
            for key, value in a["state"][i].items():
                assert_close(value, np.asarray(b["state"][i][key]), what=key)


@pytest.mark.parametrize("make", [
    lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), lambda ps: optim.Adam(ps, lr=0.1),
    lambda ps: optim.AdamW(ps, lr=0.1)], ids=["SGD", "Adam", "AdamW"])
def test_state_dict_of_a_0d_parameter_resumes_training_exactly(make):
    # its state arrays are 0-d too: they must load as arrays, not as numbers like a step count
    straight = [nn.Parameter(np.array(1.5, F32)), nn.Parameter(rng(20).standard_normal(3))]
    resumed = [nn.Parameter(p._data.copy()) for p in straight]
    opt = make(straight)
    run(opt, straight, 4, 21)
    first = make(resumed)
    run(first, resumed, 2, 21)
    second = make(resumed)
    second.load_state_dict(first.state_dict())
    for p in resumed:
        assert all(np.ndim(v) == 0 if k == "step" else v.shape == p.shape
                   for k, v in second.state[p].items())
    run(second, resumed, 2, 23)  # the gradients of steps 3 and 4 above
    for a, b in zip(straight, resumed):
        np.testing.assert_array_equal(a._data, b._data)


def test_load_state_dict_errors():
    p = make_params(17)
    opt = optim.SGD([{"params": p[:2]}, {"params": p[2:]}], lr=0.1, momentum=0.9)
    run(opt, p, 1, 18)
    state = opt.state_dict()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD(p, lr=0.1).load_state_dict(state)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        optim.SGD([{"params": p[:1]}, {"params": p[1:]}], lr=0.1).load_state_dict(state)
    other = [nn.Parameter(np.zeros(x.shape[::-1])) for x in p]
    with pytest.raises(ValueError, match=r"'momentum_buffer' of parameter 0 has shape \(5, 3\), "
                                         r"expected \(3, 5\)"):
        optim.SGD([{"params": other[:2]}, {"params": other[2:]}], lr=0.1).load_state_dict(state)


@pytest.mark.parametrize("kind, change, error", [
    ("SGD", lambda s: s["param_groups"][0].update(lr=-0.1), "Invalid learning rate: -0.1"),
    ("SGD", lambda s: s["param_groups"][1].update(nesterov=True, dampening=0.5),
     "Nesterov momentum requires"),
    ("SGD", lambda s: s["state"][0].update(momentum_buffer="0"),
     "'momentum_buffer' of parameter 0 must be an array of shape"),
    ("Adam", lambda s: s["param_groups"][0].update(betas=(0.9, 1.5)),
     "Invalid beta parameter at index 1"),
    ("Adam", lambda s: s["state"][2].pop("exp_avg"), "parameter 2 lacks exp_avg"),
    ("Adam", lambda s: s["state"][1].update(step="3"),
     "'step' of parameter 1: step must be an integer"),
    ("Adam", lambda s: s["state"][1].update(step=0), "'step' of parameter 1: Invalid step"),
    ("AdamW", lambda s: s["state"][0].update(exp_avg_sq=[1.0]),
     "'exp_avg_sq' of parameter 0 must be an array"),
])
def test_a_state_that_step_could_not_use_is_refused_on_loading(kind, change, error):
    p = make_params(23)
    extra = {"momentum": 0.9} if kind == "SGD" else {}
    opt = getattr(optim, kind)([{"params": p[:2]}, {"params": p[2:]}], lr=0.1, **extra)
    run(opt, p, 2, 24)
    state = opt.state_dict()
    before = ([q._data.copy() for q in p], repr(opt.param_groups))
    change(state)
    with pytest.raises(ValueError, match=re.escape(error)):
        opt.load_state_dict(state)
    # nothing was loaded: the optimizer goes on as before
    assert repr(opt.param_groups) == before[1]
    run(opt, p, 1, 25)
    assert all(not np.array_equal(q._data, old) for q, old in zip(p, before[0]))


@pytest.mark.parametrize("kind", ["Adam", "AdamW"])
def test_a_torch_state_loads_with_its_arrays_converted_and_its_options_checked(kind):
    torch = pytest.importorskip("torch")
    p = make_params(21)
    tp = torch_twin(p)
    theirs = getattr(torch.optim, kind)(tp, lr=0.01)
    run_torch(theirs, tp, 3, 22)
    ours = getattr(optim, kind)(p, lr=0.5)
    ours.load_state_dict(theirs.state_dict())  # torch tensors, a float step, flags off
    assert ours.param_groups[0]["lr"] == 0.01 and "foreach" not in ours.param_groups[0]
    for state in ours.state.values():
        assert state["step"] == 3 and isinstance(state["step"], int)
        assert all(type(v) is np.ndarray for k, v in state.items() if k != "step")
    for q, tq in zip(p, tp):
        q._data[...] = tq.detach().numpy()
    run(ours, p, 2, 30)
    run_torch(theirs, tp, 2, 30)
    for q, tq in zip(p, tp):
        assert_close(q._data, tq.detach().numpy(), what="param")
    assert ours.state_dict()["state"]  # a state made of plain arrays again
    # AdamW's decoupled weight decay is not Adam's
    if kind == "AdamW":
        with pytest.raises(ValueError, match="decoupled_weight_decay=True, which Adam does"):
            optim.Adam(p).load_state_dict(theirs.state_dict())
    # an option pyrt does not implement, switched on, is refused rather than ignored
    tmax = torch.optim.SGD(tp, lr=0.1, momentum=0.9, maximize=True)
    with pytest.raises(ValueError, match="sets maximize=True, which SGD does not implement"):
        optim.SGD(p, lr=0.1, momentum=0.9).load_state_dict(tmax.state_dict())


# ---- learning-rate schedules -----------------------------------------------------------------

SCHEDULES = [
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[2, 5, 5, 11], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=7, eta_min=1e-3)),
    ("CosineAnnealingLR", dict(T_max=1)),
    ("LambdaLR", dict(lr_lambda=lambda epoch: 0.95 ** epoch / (1 + epoch))),
]


def _two_groups(lib, params):
    return [{"params": params[:1], "lr": 0.1}, {"params": params[1:], "lr": 0.03}]


@pytest.mark.parametrize("name,cfg", SCHEDULES, ids=[f"{n}-{i}" for i, (n, _) in
                                                     enumerate(SCHEDULES)])
def test_schedules_set_torchs_learning_rates(name, cfg):
    """30 steps of every schedule on two parameter groups: the same lrs as PyTorch's, to the
    last bit, including after a resume from state_dict halfway."""
    torch = pytest.importorskip("torch")
    ours = optim.SGD(_two_groups(pyrt, make_params(1)), lr=1.0, momentum=0.9)
    theirs = torch.optim.SGD(_two_groups(torch, torch_twin(make_params(1))), lr=1.0,
                             momentum=0.9)
    mine = getattr(optim.lr_scheduler, name)(ours, **cfg)
    ref = getattr(torch.optim.lr_scheduler, name)(theirs, **cfg)
    assert mine.get_last_lr() == ref.get_last_lr()
    for epoch in range(30):
        ours.step()
        theirs.step()
        mine.step()
        ref.step()
        assert mine.get_last_lr() == ref.get_last_lr(), epoch
        assert [g["lr"] for g in ours.param_groups] == mine.get_last_lr()
        if epoch == 14:
            saved = pickle.loads(pickle.dumps((ours.state_dict(), mine.state_dict())))
    # a fresh optimizer and schedule loaded from step 15 continue as the first did
    again = optim.SGD(_two_groups(pyrt, make_params(1)), lr=1.0, momentum=0.9)
    again.load_state_dict(saved[0])
    resumed = getattr(optim.lr_scheduler, name)(again, **cfg)
    resumed.load_state_dict(saved[1])
    twin = optim.SGD(_two_groups(pyrt, make_params(1)), lr=1.0, momentum=0.9)
    straight = getattr(optim.lr_scheduler, name)(twin, **cfg)
    for epoch in range(30):
        straight.step()
        if epoch >= 15:
            resumed.step()
            assert resumed.get_last_lr() == straight.get_last_lr()


def test_schedules_check_their_arguments():
    opt = optim.SGD(make_params(2), lr=0.1)
    with pytest.raises(ValueError, match="step_size must be an integer >= 1"):
        optim.lr_scheduler.StepLR(opt, step_size=0)
    with pytest.raises(TypeError, match="gamma must be a real number"):
        optim.lr_scheduler.ExponentialLR(opt, gamma="0.9")
    with pytest.raises(ValueError, match="T_max must be an integer >= 1"):
        optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2.5)
    with pytest.raises(ValueError, match="milestones must be an integer >= 0"):
        optim.lr_scheduler.MultiStepLR(opt, milestones=[3, -1])
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas, but got 2"):
        optim.lr_scheduler.LambdaLR(opt, [lambda e: 1.0, lambda e: 0.5])
    with pytest.raises(TypeError, match="lr_lambda must be callable"):
        optim.lr_scheduler.LambdaLR(opt, 0.5)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        optim.lr_scheduler.StepLR([1.0], step_size=2)
    with pytest.raises(KeyError, match="initial_lr"):
        optim.lr_scheduler.StepLR(optim.SGD(make_params(2), lr=0.1), step_size=2, last_epoch=4)


def test_a_schedule_changes_the_lr_the_optimizer_steps_with():
    """The optimizer re-reads a group's lr on every step: the update after a decay is the
    decayed one."""
    p = pyrt.tensor(np.zeros(3, np.float32), requires_grad=True)
    opt = optim.SGD([p], lr=1.0)
    sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for want in (-1.0, -1.5, -1.75):
        p.grad = pyrt.tensor(np.ones(3, np.float32))
        opt.step()
        sched.step()
        np.testing.assert_array_equal(p._data, np.full(3, want, np.float32))


def test_adamax_nadam_radam_adadelta_follow_their_formulas():
    """Without PyTorch: two steps of each against its update written out in float64."""
    p0 = np.array([0.5, -1.0, 2.0], np.float32)
    grads = [np.array([0.1, -0.2, 0.3]), np.array([-0.05, 0.4, 0.2])]
    lr, b1, b2, eps = 0.1, 0.9, 0.99, 1e-8

    def by_hand(kind):
        p, m, v, u, mu_product = p0.astype(np.float64), 0.0, 0.0, 0.0, 1.0
        for t, g in enumerate(grads, 1):
            if kind == "Adadelta":  # v: square_avg, u: acc_delta; rho 0.9, eps 1e-6
                v = 0.9 * v + 0.1 * g * g
                d = np.sqrt(u + 1e-6) / np.sqrt(v + 1e-6) * g
                u = 0.9 * u + 0.1 * d * d
                p = p - lr * d
                continue
            m = b1 * m + (1 - b1) * g
            if kind == "Adamax":
                u = np.maximum(b2 * u, np.abs(g) + eps)
                p = p - lr / (1 - b1 ** t) * m / u
                continue
            v = b2 * v + (1 - b2) * g * g
            if kind == "NAdam":
                mu = b1 * (1 - 0.5 * 0.96 ** (t * 4e-3))
                mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * 4e-3))
                mu_product *= mu
                d = np.sqrt(v / (1 - b2 ** t)) + eps
                p = p - lr * (1 - mu) / (1 - mu_product) * g / d \
                    - lr * mu_next / (1 - mu_product * mu_next) * m / d
            else:  # RAdam: rho_t stays below 5 for these two steps: momentum alone
                p = p - lr * m / (1 - b1 ** t)
        return p

    for kind, cfg in (("Adadelta", {"lr": lr}), ("Adamax", {"lr": lr, "betas": (b1, b2)}),
                      ("NAdam", {"lr": lr, "betas": (b1, b2)}),
                      ("RAdam", {"lr": lr, "betas": (b1, b2)})):
        param = nn.Parameter(p0.copy())
        opt = getattr(optim, kind)([param], **cfg)
        for g in grads:
            param.grad = pyrt.tensor(g.astype(np.float32))
            opt.step()
        np.testing.assert_allclose(param._data, by_hand(kind), rtol=1e-5, atol=1e-6,
                                   err_msg=kind)
        assert opt.state[param]["step"] == 2


def test_composed_schedules_follow_their_formulas():
    """Without PyTorch: a warm-up by ConstantLR then PolynomialLR decay (SequentialLR, the
    decay starting at its own step 0), and ConstantLR chained with ExponentialLR, against
    the formulas."""
    opt = optim.SGD(make_params(2), lr=0.8)
    seq = optim.lr_scheduler.SequentialLR(opt, [
        optim.lr_scheduler.ConstantLR(opt, factor=0.25, total_iters=3),
        optim.lr_scheduler.PolynomialLR(opt, total_iters=4, power=2.0)], milestones=[3])
    lrs = [seq.get_last_lr()[0]]
    for _ in range(8):
        opt.step()
        seq.step()
        lrs.append(opt.param_groups[0]["lr"])
    want = [0.2] * 3 + [0.8 * (1 - min(t, 4) / 4) ** 2 for t in range(6)]
    np.testing.assert_allclose(lrs, want, rtol=1e-12, atol=1e-15)
    opt = optim.SGD(make_params(2), lr=1.0)
    chain = optim.lr_scheduler.ChainedScheduler([
        optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2),
        optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)])
    lrs = [chain.get_last_lr()[0]]
    for _ in range(5):
        opt.step()
        chain.step()
        lrs.append(chain.get_last_lr()[0])
    want = [(0.5 if t < 2 else 1.0) * 0.9 ** t for t in range(6)]
    np.testing.assert_allclose(lrs, want, rtol=1e-12)


@pytest.mark.parametrize("name,cfg", SCHEDULES[:5], ids=[n for n, _ in SCHEDULES[:5]])
def test_a_schedule_resumed_with_last_epoch_goes_on_as_torchs(name, cfg):
    """Built again with last_epoch on an optimizer that holds initial_lr: the lrs stay, and
    the next steps are torch's."""
    torch = pytest.importorskip("torch")
    ours = optim.SGD(_two_groups(pyrt, make_params(1)), lr=1.0)
    theirs = torch.optim.SGD(_two_groups(torch, torch_twin(make_params(1))), lr=1.0)
    for opt, lib in ((ours, optim.lr_scheduler), (theirs, torch.optim.lr_scheduler)):
        sched = getattr(lib, name)(opt, **cfg)
        for _ in range(3):
            opt.step()
            sched.step()
    mine = getattr(optim.lr_scheduler, name)(ours, last_epoch=3, **cfg)
    ref = getattr(torch.optim.lr_scheduler, name)(theirs, last_epoch=3, **cfg)
    assert mine.get_last_lr() == ref.get_last_lr()
    for _ in range(10):
        mine.step()
        ref.step()
        assert mine.get_last_lr() == ref.get_last_lr()


def test_schedules_refuse_groups_added_after_them():
    opt = optim.SGD(make_params(2)[:1], lr=0.1)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2)
    opt.add_param_group({"params": make_params(3)[1:], "lr": 1.0})
    with pytest.raises(ValueError, match="2 parameter groups, but the schedule was built for 1"):
        sched.step()


class _Warmup:
    """An lr factor with state, as a callable object: LambdaLR saves its attributes."""

    def __init__(self, steps):
        self.steps = steps

    def __call__(self, epoch):
        return min(1.0, (epoch + 1) / self.steps)


def test_lambda_lr_saves_callable_objects_as_torch():
    torch = pytest.importorskip("torch")
    opt = optim.SGD(make_params(2), lr=0.1)
    sched = optim.lr_scheduler.LambdaLR(opt, _Warmup(4))
    sched.step()
    state = sched.state_dict()
    assert state["lr_lambdas"] == [{"steps": 4}]
    other = optim.lr_scheduler.LambdaLR(optim.SGD(make_params(2), lr=0.1), _Warmup(9))
    other.load_state_dict(state)
    assert other.lr_lambdas[0].steps == 4 and other.last_epoch == 1
    plain = optim.lr_scheduler.LambdaLR(opt, lambda e: 0.5)
    assert plain.state_dict()["lr_lambdas"] == [None]
    # torch's state of a LambdaLR loads, and ours into torch's
    topt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    tsched = torch.optim.lr_scheduler.LambdaLR(topt, _Warmup(6))
    tsched.step()
    other.load_state_dict(tsched.state_dict())
    assert other.lr_lambdas[0].steps == 6
    other.step()
    tsched.load_state_dict(sched.state_dict())
    assert tsched.lr_lambdas[0].steps == 4


def test_adamw_checks_every_group_before_it_decays_any():
    p = make_params(2)
    opt = optim.AdamW([{"params": p[:1]}, {"params": p[1:]}], lr=0.1, weight_decay=0.5)
    for q in p:
        q.grad = pyrt.tensor(np.ones(q.shape, np.float32))
    before = [q._data.copy() for q in p]
    opt.param_groups[1]["lr"] = -1.0
    with pytest.raises(ValueError, match="Invalid learning rate"):
        opt.step()
    for q, b in zip(p, before):
        np.testing.assert_array_equal(q._data, b)
